//! `okp build`: one release and mode (splice, from the release's sources jars
//! or from a tree or git revision given; or Gradle in a checkout), or the whole
//! matrix with `--all`.
//!
//! Not here: compiling and splicing (`build::splice`), Gradle (`build::gradle`).

use std::path::PathBuf;

use crate::build::{gradle, splice};
use crate::cli::{Backend, BuildArgs};
use crate::error::{Error, Failure, Outcome, Result};
use crate::model::{Layers, Mode, ModeDefault, Release};
use crate::out::note;
use crate::report;
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
    let upstream = match (&args.tree, &args.git) {
        (Some(dir), _) => Some(ws.open(Spec::Dir(dir))?),
        (None, Some(repo)) => Some(ws.open(Spec::Git { repo, rev: args.rev.as_deref().unwrap_or("HEAD") })?),
        (None, None) => None,
    };
    let backend = args.backend.unwrap_or(if args.source.is_some() { Backend::Gradle } else { Backend::Splice });
    let version = match (&args.source, &upstream, args.version) {
        (Some(dir), _, v) => crate::source::release_of(&DirTree::open(dir)?, v)?,
        (None, Some(tree), v) => release_of_upstream(tree.as_ref(), v)?,
        (None, None, Some(v)) => v,
        (None, None, None) => return Err(Error::Usage(WHICH_RELEASE.into())),
    };
    let release = ws.release(version)?;
    let mode = release.mode_for(args.mode, ModeDefault::Ask)?;
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
            if !args.layers.is_empty() {
                return Err(Error::Usage(
                    "--layer belongs to `okp apply` when building a checkout with Gradle: the checkout already \
                     carries the layers it was patched with"
                        .into(),
                ));
            }
            match gradle::build(&root, release, mode, &out, args.progress)? {
                gradle::Outcome::Built(jars) => {
                    for j in &jars {
                        note(format!("built {}", j.display()));
                    }
                    Ok(Outcome::Done)
                }
                gradle::Outcome::Failed { task, tail, log } => {
                    eprintln!("{tail}");
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
            splice_one(ws, release, mode, &Layers::with(&args.layers), tree.as_ref(), &out)
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
) -> Result<Outcome> {
    match splice::splice(ws, release, mode, layers, tree, out)? {
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
            eprintln!("{}", f.output.trim_end());
            note(format!("the {} compile failed: {}", f.module, f.command));
            Ok(Outcome::Failed(Failure::CheckFailed))
        }
    }
}

/// `--all`: splice-compile every (release, mode) of the matrix and print the result matrix.
fn all(ws: &Workspace, args: &BuildArgs) -> Result<Outcome> {
    let releases: Vec<&Release> = ws
        .model
        .matrix
        .releases
        .iter()
        .filter(|r| !args.reference || r.reference)
        .filter(|r| args.mode.is_none_or(|m| r.supports(m)))
        .collect();
    let base = args.out.clone().unwrap_or_else(|| PathBuf::from("okp-out"));
    let scratch = if args.check {
        Some(tempfile::tempdir().map_err(|e| Error::io("cannot create a scratch directory", e))?)
    } else {
        None
    };
    let root = scratch.as_ref().map(|t| t.path().to_path_buf()).unwrap_or_else(|| base.clone());
    let mut rows = Vec::new();
    let mut failed = 0;
    for r in releases {
        for m in r.modes_for(args.mode)? {
            let out = root.join(format!("{}-{m}", r.version));
            let t = std::time::Instant::now();
            let result = match &r.no_sources_jar {
                Some(_) => "skipped: no sources jar on Maven Central".to_string(),
                None => match splice::splice(
                    ws,
                    r,
                    m,
                    &Layers::with(&args.layers),
                    splice::release_sources(ws, r)?.as_ref(),
                    &out,
                )? {
                    splice::SpliceOutcome::Built(rec) => {
                        let n: usize = rec
                            .jars
                            .iter()
                            .map(|j| j.splice.replaced.len() + j.splice.added.len() + j.splice.removed.len())
                            .sum();
                        format!(
                            "ok ({n} classes changed in {})",
                            rec.jars.iter().map(|j| j.splice.jar.clone()).collect::<Vec<_>>().join(", ")
                        )
                    }
                    splice::SpliceOutcome::CompileFailed(f) => {
                        failed += 1;
                        note(format!("{} {m}: {} compile failed:\n{}", r.version, f.module, f.output));
                        format!("COMPILE FAILED ({})", f.module)
                    }
                },
            };
            let secs = t.elapsed().as_secs_f64();
            note(format!("{} {m}: {result} in {secs:.1}s", r.version));
            rows.push(serde_json::json!({"release": r.version, "mode": m, "family": r.family, "result": result, "seconds": (secs * 10.0).round() / 10.0}));
        }
    }
    let mut table = format!("{:<8} {:<6} {:<6} {:>7}  {}\n", "release", "mode", "family", "seconds", "result");
    for row in &rows {
        table.push_str(&format!(
            "{:<8} {:<6} {:<6} {:>7}  {}\n",
            row["release"].as_str().unwrap_or_default(),
            row["mode"].as_str().unwrap_or_default(),
            row["family"].as_str().unwrap_or_default(),
            row["seconds"],
            row["result"].as_str().unwrap_or_default()
        ));
    }
    table.push_str(&format!("\n{} (release, mode) builds, {failed} failed\n", rows.len()));
    crate::out::print(&table)?;
    let json = serde_json::to_string_pretty(
        &serde_json::json!({"okp_version": env!("CARGO_PKG_VERSION"), "written_at": report::utc_now(), "builds": rows}),
    )
    .unwrap_or_default();
    crate::fsx::write_atomic(&base.join("build-matrix.json"), (json + "\n").as_bytes())?;
    Ok(Outcome::check(failed == 0))
}
