//! `okp build`: one release and mode (splice, from the release's sources jars
//! or from a tree or git revision given; or Gradle in a checkout), or the whole
//! matrix with `--all`.
//!
//! Not here: compiling and splicing (`build::splice`), Gradle (`build::gradle`),
//! the `--all` loop and build-matrix.json (`build::matrix`).

use std::path::PathBuf;

use crate::build::{gradle, matrix, splice};
use crate::cli::{Backend, BuildArgs, ListFormat};
use crate::error::{Error, Failure, Outcome, Result};
use crate::model::{Layers, Mode, ModeDefault, PairFilter, Release};
use crate::out::note;
use crate::source::{DirTree, SourceTree, Spec};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

const WHICH_RELEASE: &str = "pass --version V (splice from Maven Central), --tree DIR or --git REPO --rev REV \
     (splice from those sources) or --source DIR (Gradle in a checkout)";

pub fn run(ws: &Workspace, args: BuildArgs) -> Result<Outcome> {
    if args.all {
        return all(ws, &args);
    }
    // The splice backend's upstream sources when not the release's sources jars.
    let upstream = match (&args.sources.tree, &args.sources.git.repo) {
        (Some(dir), _) => Some(ws.open(Spec::Dir(dir))?),
        (None, Some(repo)) => {
            Some(ws.open(Spec::Git { repo, rev: args.sources.git.rev.as_deref().unwrap_or("HEAD") })?)
        }
        (None, None) => None,
    };
    let backend = args.backend.unwrap_or(if args.source.is_some() { Backend::Gradle } else { Backend::Splice });
    let version = match (&args.source, &upstream, args.release.version) {
        (Some(dir), _, v) => crate::source::release_of(&DirTree::open(dir)?, v)?,
        (None, Some(tree), v) => release_of_upstream(tree.as_ref(), v)?,
        (None, None, Some(v)) => v,
        (None, None, None) => return Err(Error::Usage(WHICH_RELEASE.into())),
    };
    let release = ws.release(version)?;
    let mode = release.mode_for(args.release.mode, ModeDefault::Ask)?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("okp-out").join(format!("{version}-{mode}")));
    match backend {
        Backend::Gradle if upstream.is_some() => Err(Error::Usage(
            "--tree and --git feed the splice backend; the gradle backend builds the checkout given with --source DIR"
                .into(),
        )),
        Backend::Gradle => {
            let root = args
                .source
                .clone()
                .ok_or_else(|| Error::Usage("the gradle backend needs --source DIR (a patched checkout)".into()))?;
            if !args.layer.layers.is_empty() {
                return Err(Error::Usage(
                    "--layer belongs to `okp apply` when building a checkout with Gradle: the checkout already \
                     carries the layers it was patched with"
                        .into(),
                ));
            }
            match gradle::build(&root, release, mode, &out, args.progress)? {
                gradle::GradleResult::Built(jars) => {
                    for j in &jars {
                        note(format!("built {}", j.display()));
                    }
                    Ok(Outcome::Done)
                }
                gradle::GradleResult::Failed { task, tail, log } => {
                    crate::out::block(&format!("{tail}\n"));
                    note(format!(
                        "gradle failed{}; full log: {}",
                        task.map(|t| format!(" in task {t}")).unwrap_or_default(),
                        log.display()
                    ));
                    Ok(Outcome::Failed(Failure::CheckFailed))
                }
            }
        }
        Backend::Splice => {
            let tree = match upstream {
                Some(t) => t,
                None => splice::release_sources(ws, release)?,
            };
            note(format!("upstream sources: {}", tree.describe()));
            splice_one(ws, release, mode, &Layers::with(&args.layer.layers), tree.as_ref(), &out, args.allow_modified)
        }
    }
}

/// The release a `--tree`/`--git` tree is: `flag` when given, else what the tree declares. A tree
/// that declares another final release is refused: its files would be compiled into `flag`'s jars.
fn release_of_upstream(tree: &dyn SourceTree, flag: Option<KafkaVersion>) -> Result<KafkaVersion> {
    let declared = tree.declared_version()?.and_then(|d| d.parse::<KafkaVersion>().ok());
    match (declared, flag) {
        (Some(d), Some(v)) if d != v => Err(Error::Usage(format!(
            "{} declares release {d}, not {v}: the splice build compiles the tree's files into {v}'s jars, so \
             they must be {v}'s sources",
            tree.describe()
        ))),
        _ => crate::source::release_of(tree, flag),
    }
}

fn splice_one(
    ws: &Workspace,
    release: &Release,
    mode: Mode,
    layers: &Layers,
    tree: &dyn SourceTree,
    out: &std::path::Path,
    allow_modified: bool,
) -> Result<Outcome> {
    match splice::splice(ws, release, mode, layers, tree, out, allow_modified)? {
        splice::SpliceOutcome::Built(rec) => {
            for j in &rec.jars {
                note(format!(
                    "{}: {} classes replaced, {} added, {} removed, {} entries unchanged; sha256 {}",
                    j.path.display(),
                    j.splice.replaced.len(),
                    j.splice.added.len(),
                    j.splice.removed.len(),
                    j.splice.unchanged,
                    j.sha256
                ));
            }
            note(format!("record: {}", out.join("okp-build.json").display()));
            Ok(Outcome::Done)
        }
        splice::SpliceOutcome::CompileFailed(f) => {
            crate::out::block(&format!("{}\n", f.output.trim_end()));
            note(format!("the {} compile failed: {}", f.module, f.command));
            Ok(Outcome::Failed(Failure::CheckFailed))
        }
    }
}

/// `--all`: splice-compile every (release, mode) of the matrix, print the table, write build-matrix.json.
fn all(ws: &Workspace, args: &BuildArgs) -> Result<Outcome> {
    // The releases of the pairs taken (a release without sources jars too: its row says skipped);
    // build::matrix builds each in `args.release.mode`, or in every mode it has.
    let pairs =
        ws.model.matrix.pairs(PairFilter { reference: args.reference, mode: args.release.mode, sources: false });
    let releases: Vec<&Release> =
        ws.model.matrix.releases.iter().filter(|r| pairs.iter().any(|p| p.release == r.version)).collect();
    let base = args.out.clone().unwrap_or_else(|| PathBuf::from("okp-out"));
    let scratch = if args.check {
        Some(tempfile::tempdir().map_err(|e| Error::io("cannot create a scratch directory", e))?)
    } else {
        None
    };
    let root = scratch.as_ref().map(|t| t.path().to_path_buf()).unwrap_or_else(|| base.clone());
    let m = matrix::matrix(ws, &releases, args.release.mode, &Layers::with(&args.layer.layers), &root)?;
    crate::out::print(&m.render_table())?;
    m.write(&base)?;
    Ok(Outcome::check(m.failed() == 0))
}

/// `okp compare-builds A B`: class by class, after normalisation.
pub fn compare(a: crate::cli::CompareBuildsArgs) -> Result<Outcome> {
    for p in [&a.a, &a.b] {
        if !p.exists() {
            return Err(Error::Usage(format!("{}: no such jar or directory", p.display())));
        }
    }
    let c = crate::build::compare::compare(&a.a, &a.b)?;
    if a.format == ListFormat::Json {
        crate::out::print(&crate::schema::to_json(&c))?;
    } else {
        crate::out::print(&crate::build::compare::render(&c))?;
    }
    Ok(Outcome::check(c.agrees()))
}
