//! `okp diff`: opens both sides, compares them at every anchor, prints, and
//! with --write adds the new release to versions.yaml or writes the porting
//! worksheet.
//!
//! Not here: the comparison (`port`), its layouts (`port::render`), the
//! writes (`port::write`).

use std::path::{Path, PathBuf};

use crate::cli::DiffArgs;
use crate::error::{Error, Failure, Outcome, Result};
use crate::model::{Model, Origin, EMBEDDED_ANCHORS};
use crate::out::sh_word;
use crate::port::{self, render, Side};
use crate::source::{SourceTree, Spec};
use crate::version::KafkaVersion;
use crate::workspace::{DataFiles, Workspace};

pub fn run(files: &DataFiles, args: DiffArgs) -> Result<Outcome> {
    let versions_file = files.versions.clone().unwrap_or_else(|| PathBuf::from("versions.yaml"));
    // --write edits a versions.yaml: diff against that same file's matrix.
    let ws = if args.write && files.versions.is_none() {
        let model = Model::load(Some(&versions_file), files.anchors.as_deref())?;
        Workspace::with_model(model, files.clone())
    } else {
        Workspace::load(files)?
    };
    let model = &ws.model;
    let (old_tree, from) = open(&ws, &args, "from", args.from, &args.from_source, &args.from_rev)?;
    let (new_tree, to) = open(&ws, &args, "to", args.to, &args.to_source, &args.to_rev)?;
    let from = from.ok_or_else(|| {
        Error::Usage(format!("{} does not say which release it is; pass --from V1", old_tree.describe()))
    })?;
    let rules = model.matrix.require(from)?;
    let (anchor_list, _) = port::patch_set(&model.anchors, rules, from);
    let watched = port::watched_files(&anchor_list, &port::guards(&model.anchors, rules, from));
    let old = port::read_files(old_tree.as_ref(), &watched)?;
    let new = port::read_files(new_tree.as_ref(), &watched)?;
    let mut report = port::report(
        &model.anchors,
        rules,
        Side { version: Some(from), source: old_tree.describe() },
        Side { version: to, source: new_tree.describe() },
        &old,
        &new,
    )?;
    if let (Some(repo), Some(r1), Some(r2)) = (&args.git, &args.from_rev, &args.to_rev) {
        let files: Vec<String> = report.files.iter().map(|f| f.file.clone()).collect();
        let mut commits = port::commits_touching(repo, r1, r2, &files)?;
        for f in &mut report.files {
            f.commits = commits.remove(&f.file);
        }
    }
    crate::out::print(&render::render(&report, args.format, args.color.enabled()))?;
    let outcome = if args.write {
        let anchors_origin = match &files.anchors {
            Some(p) => Origin::new(p.display().to_string(), read(p)?),
            None => Origin::new("anchors.yaml (embedded)", EMBEDDED_ANCHORS),
        };
        let worksheet = args
            .worksheet
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("porting-{}-{}.md", report.from.label(), report.to.label())));
        let rerun = rerun_line(files, &args, &report.from.label(), &report.to.label());
        port::write::write(
            &report,
            new_tree.as_ref(),
            &ws.maven,
            &port::write::Targets { versions: versions_file, anchors: anchors_origin, worksheet, rerun },
        )?
    } else {
        Outcome::drift_unless(report.verdict != port::Verdict::Drift)
    };
    Ok(if args.strict && outcome == Outcome::Done && report.verdict != port::Verdict::CarriesOver {
        Outcome::Failed(Failure::Drift)
    } else {
        outcome
    })
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
    words.push("--write".into());
    words.extend(args.worksheet.as_ref().map(|w| pair("--worksheet", &path(w))).into_iter().flatten());
    words.join(" ")
}

fn read(p: &Path) -> Result<String> {
    std::fs::read_to_string(p).map_err(|e| Error::io(format!("cannot read {}", p.display()), e))
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
