//! `okp diff`: opens both sides, compares them at every anchor, prints, and
//! with --write adds the new release to versions.yaml or writes the porting
//! worksheet.
//!
//! Not here: the comparison (`diff`), its layouts (`diff::render`), the
//! writes (`diff::write`).

use std::path::{Path, PathBuf};

use crate::cli::DiffArgs;
use crate::diff::{self, binary, render, DiffReport, Side};
use crate::error::{Error, Failure, Outcome, Result};
use crate::model::{Model, Origin, EMBEDDED_ANCHORS};
use crate::out::sh_word;
use crate::source::{SourceTree, Spec};
use crate::version::KafkaVersion;
use crate::workspace::{DataFiles, Workspace};

pub fn run(files: &DataFiles, args: DiffArgs) -> Result<Outcome> {
    let versions_file = files.versions.clone().unwrap_or_else(|| PathBuf::from("versions.yaml"));
    // --write edits a versions.yaml: diff against that same file's matrix.
    let ws = if args.write && files.versions.is_none() {
        let model = Model::load(Some(&versions_file), files.anchors.as_deref())?;
        Workspace::with_model(model, files.clone())?
    } else {
        Workspace::load(files)?
    };
    let model = &ws.model;
    let (old_tree, from) = open(&ws, &args, "from", args.from, &args.from_source, &args.from_rev)?;
    let from = from.ok_or_else(|| {
        Error::Usage(format!("{} does not say which release it is; pass --from V1", old_tree.describe()))
    })?;
    let rules = model.matrix.require(from)?;
    let (anchor_list, _) = diff::patch_set(&model.anchors, rules, from);
    let guard_list = diff::guards(&model.anchors, rules, from);
    let watched = diff::watched_files(&anchor_list, &guard_list);
    let old = diff::read_files(old_tree.as_ref(), &watched)?;
    // The new side: the tree named, else the release's sources jars where Maven Central has them,
    // else nothing but its jars.
    let named = args.to_source.is_some() || args.to_rev.is_some();
    let (new_tree, to) = match args.to {
        Some(v) if !named && !has_sources_jar(&ws, v)? => (None, Some(v)),
        _ => {
            let (t, v) = open(&ws, &args, "to", args.to, &args.to_source, &args.to_rev)?;
            (Some(t), v)
        }
    };
    let to_sources_jar = match (&new_tree, to) {
        (Some(t), _) if t.is_release_sources_jar() => true,
        (_, Some(v)) => has_sources_jar(&ws, v)?,
        (_, None) => false,
    };
    let binary = if args.binary || !to_sources_jar {
        let v2 = to.ok_or_else(|| {
            Error::Usage("comparing the releases' jars needs the new release's number: pass --to V2".into())
        })?;
        Some(binary_report(&ws, from, v2, &anchor_list, &guard_list, &watched, &old)?)
    } else {
        None
    };
    let from_side = Side { version: Some(from), source: old_tree.describe(), declared: None };
    let mut report = match (&new_tree, binary) {
        (Some(tree), b) => {
            let new = diff::read_files(tree.as_ref(), &watched)?;
            let declared = if tree.is_release_sources_jar() { None } else { tree.declared_version()? };
            let to_side = Side { version: to, source: tree.describe(), declared: declared.clone() };
            let r = diff::report(&model.anchors, rules, from_side, to_side, &old, &new)?;
            match b {
                Some((mut b, release)) => {
                    if !tree.is_release_sources_jar() {
                        let (old_release, new_release) = release;
                        b.source_check = Some(binary::check_source(
                            tree.describe(),
                            declared,
                            &old,
                            &new,
                            &old_release,
                            &new_release,
                        ));
                    }
                    r.with_binary(b)
                }
                None => r,
            }
        }
        (None, Some((b, _))) => {
            let to_side = Side {
                version: to,
                source: format!("the jars of {} on Maven Central (no sources jar)", b.to_jars.join(", ")),
                declared: None,
            };
            DiffReport::from_bytecode(&model.anchors, rules, from_side, to_side, b)
        }
        (None, None) => unreachable!("a new release without sources jars is always compared by its jars"),
    };
    if let (Some(repo), Some(r1), Some(r2)) = (&args.git, &args.from_rev, &args.to_rev) {
        let files: Vec<String> = report.files.iter().map(|f| f.file.clone()).collect();
        let mut commits = diff::commits_touching(repo, r1, r2, &files)?;
        for f in &mut report.files {
            f.commits = commits.remove(&f.file);
        }
    }
    crate::out::print(&render::render(&report, args.format, args.color.enabled()))?;
    if let Some(dir) = &args.evidence {
        write_evidence(dir, &report, files, &args)?;
    }
    let outcome = if args.write {
        let Some(tree) = &new_tree else {
            return Err(Error::Usage(format!(
                "--write needs a source of {} to check its anchors in: Maven Central has no sources jar of it; \
                 pass --git REPO --to-rev TAG (the release tag) or --to-source DIR",
                report.to.label()
            )));
        };
        let anchors_origin = match &files.anchors {
            Some(p) => Origin::new(p.display().to_string(), read(p)?),
            None => Origin::new("anchors.yaml (embedded)", EMBEDDED_ANCHORS),
        };
        let worksheet = args
            .worksheet
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("porting-{}-{}.md", report.from.label(), report.to.label())));
        let rerun = rerun_line(files, &args, &report.from.label(), &report.to.label());
        let read_from = diff::write::read_from(&report, tree.as_ref(), args.accept_version_mismatch)?;
        diff::write::write(
            &report,
            tree.as_ref(),
            &ws.maven,
            &read_from,
            &diff::write::Targets { versions: versions_file, anchors: anchors_origin, worksheet, rerun },
        )?
    } else {
        Outcome::drift_unless(report.verdict != diff::Verdict::Drift)
    };
    Ok(if args.strict && outcome == Outcome::Done && report.verdict != diff::Verdict::CarriesOver {
        Outcome::Failed(Failure::Drift)
    } else {
        outcome
    })
}

/// Whether Maven Central has sources jars of release `v`: versions.yaml's `no_sources_jar` says so
/// for a listed release; an unlisted one is asked (a cached jar answers without mvn).
fn has_sources_jar(ws: &Workspace, v: KafkaVersion) -> Result<bool> {
    if let Some(r) = ws.model.matrix.get(v) {
        return Ok(r.no_sources_jar.is_none());
    }
    let wanted: Vec<_> = ws.model.matrix.coordinates_for(v)?.into_values().map(|c| (c, Some("sources"))).collect();
    match ws.maven.ensure(&wanted) {
        Ok(_) => Ok(true),
        Err(Error::NotPublished(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The jars of release `v` for the modules of `files` (module directory -> (coordinate, path)).
fn jars_of(
    ws: &Workspace,
    v: KafkaVersion,
    files: &std::collections::BTreeSet<String>,
) -> Result<std::collections::BTreeMap<String, (String, PathBuf)>> {
    let coords = ws.model.matrix.coordinates_for(v)?;
    let wanted: Vec<(String, crate::model::Coordinate)> =
        coords.into_iter().filter(|(dir, _)| files.iter().any(|f| f.split('/').next() == Some(dir.as_str()))).collect();
    let items: Vec<_> = wanted.iter().map(|(_, c)| (c.clone(), None)).collect();
    let paths = ws.maven.ensure(&items).map_err(|e| match e {
        Error::NotPublished(m) => {
            Error::Usage(format!("release {v} has no jars on Maven Central either ({m}): there is nothing to compare"))
        }
        e => e,
    })?;
    Ok(wanted.into_iter().zip(paths).map(|((dir, c), p)| (dir, (c.to_string(), p))).collect())
}

type Releases = (binary::Release, binary::Release);

/// The bytecode comparison of `from`'s and `to`'s jars at the patch set of `from`.
fn binary_report(
    ws: &Workspace,
    from: KafkaVersion,
    to: KafkaVersion,
    anchors: &[&crate::model::Anchor],
    guards: &[&crate::model::Guard],
    watched: &std::collections::BTreeSet<String>,
    old: &diff::Files,
) -> Result<(binary::BinaryReport, Releases)> {
    let (old_release, not_compared) = binary::read_release(Some(from), &jars_of(ws, from, watched)?, watched)?;
    let (new_release, _) = binary::read_release(Some(to), &jars_of(ws, to, watched)?, watched)?;
    let b = binary::report(anchors, guards, old, &old_release, &new_release, not_compared)?;
    Ok((b, (old_release, new_release)))
}

/// `--evidence DIR`: the report as markdown (stamped) and json, named after the two releases.
fn write_evidence(dir: &Path, report: &DiffReport, files: &DataFiles, args: &DiffArgs) -> Result<()> {
    let basis = match report.basis {
        diff::Basis::Sources => "",
        diff::Basis::Bytecode => "-bytecode",
        diff::Basis::SourcesAndBytecode => "-tree-and-bytecode",
    };
    let name = format!("diff-{}-{}{basis}", report.from.label(), report.to.label());
    let mut line = rerun_line(files, args, &report.from.label(), &report.to.label());
    line = line.replace(" --write", "");
    let stamp = format!("Written by okp {} on {} (`{line}`).\n\n", env!("CARGO_PKG_VERSION"), crate::report::utc_now());
    let md = render::render(report, render::DiffFormat::Markdown, false);
    crate::fsx::write_atomic(&dir.join(format!("{name}.md")), format!("{stamp}{md}").as_bytes())?;
    let json = render::render(report, render::DiffFormat::Json, false);
    crate::fsx::write_atomic(&dir.join(format!("{name}.json")), json.as_bytes())?;
    crate::out::note(format!("evidence written to {}", dir.join(&name).display()));
    Ok(())
}

/// The command line that runs this `okp diff --write` again: the same data files, the same source
/// flags, the two releases the report compared. The worksheet prints it to run as written.
fn rerun_line(files: &DataFiles, args: &DiffArgs, from: &str, to: &str) -> String {
    let pair = |name: &str, value: &str| [name.to_string(), sh_word(value)];
    let path = |p: &PathBuf| p.display().to_string();
    let mut words = vec!["okp".to_string()];
    for (name, p) in [("--versions", &files.versions), ("--anchors", &files.anchors), ("--patches", &files.patches)] {
        words.extend(p.as_ref().map(|p| pair(name, &path(p))).into_iter().flatten());
    }
    words.push("diff".into());
    words.extend(pair("--from", from).into_iter().chain(pair("--to", to)));
    for (name, p) in [("--from-source", &args.from_source), ("--to-source", &args.to_source), ("--git", &args.git)] {
        words.extend(p.as_ref().map(|p| pair(name, &path(p))).into_iter().flatten());
    }
    for (name, rev) in [("--from-rev", &args.from_rev), ("--to-rev", &args.to_rev)] {
        words.extend(rev.as_deref().map(|r| pair(name, r)).into_iter().flatten());
    }
    for (flag, on) in [("--binary", args.binary), ("--accept-version-mismatch", args.accept_version_mismatch)] {
        if on {
            words.push(flag.into());
        }
    }
    words.push("--write".into());
    words.extend(args.worksheet.as_ref().map(|w| pair("--worksheet", &path(w))).into_iter().flatten());
    words.join(" ")
}

fn read(p: &Path) -> Result<String> {
    crate::fsx::read::text(p, crate::fsx::read::MAX_TEXT, "file")
}

/// One side of the diff: a checkout, a git revision, or a release's sources jars.
fn open(
    ws: &Workspace,
    args: &DiffArgs,
    which: &str,
    version: Option<KafkaVersion>,
    dir: &Option<PathBuf>,
    rev: &Option<String>,
) -> Result<(Box<dyn SourceTree>, Option<KafkaVersion>)> {
    let spec = match (dir, rev, &args.git) {
        (Some(d), _, _) => Spec::Dir(d),
        (_, Some(r), Some(repo)) => Spec::Git { repo, rev: r },
        _ => {
            let v = version.ok_or_else(|| {
                Error::Usage(format!(
                    "say which release to diff {which}: --{which} V, --{which}-source DIR or --git REPO --{which}-rev REV"
                ))
            })?;
            let hint =
                format!("okp diff reads a checkout instead with --{which}-source DIR or --git REPO --{which}-rev REV");
            return Ok((ws.open(Spec::Release { version: v, hint: &hint })?, Some(v)));
        }
    };
    let tree = ws.open(spec)?;
    let declared = tree.declared_version()?.and_then(|d| d.parse::<KafkaVersion>().ok());
    Ok((tree, version.or(declared)))
}
