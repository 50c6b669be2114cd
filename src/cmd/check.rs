//! `okp check-anchors`: one tree (a checkout, a git revision, a release's
//! sources jars), or every release of the matrix against its sources jars.
//!
//! Not here: matching (`anchor`, `check`), the report's layouts (`report`).

use crate::check::{self, Report};
use crate::cli::CheckArgs;
use crate::error::{Error, Outcome, Result};
use crate::model::{Coordinate, Layers, Release};
use crate::report::{self, Format};
use crate::source::{ReleaseTree, Spec};
use crate::workspace::Workspace;

const NO_SOURCES_HINT: &str = "check-anchors reads a checkout instead with --source DIR or --git REPO --rev REV";

pub fn run(ws: &Workspace, args: CheckArgs) -> Result<Outcome> {
    let model = &ws.model;
    let layers = if args.layers.is_empty() { Layers::all() } else { Layers::with(&args.layers) };
    let spec = match (&args.source, &args.git.repo, args.release) {
        (Some(dir), _, _) => Some(Spec::Dir(dir)),
        (_, Some(repo), _) => Some(Spec::Git { repo, rev: args.git.rev.as_deref().unwrap_or("HEAD") }),
        (_, _, Some(version)) => Some(Spec::Release { version, hint: NO_SOURCES_HINT }),
        _ => None,
    };
    let mut report = Report::default();
    match spec {
        Some(spec) => {
            let tree = ws.open(spec)?;
            let tree_version = crate::source::release_of(tree.as_ref(), args.version)?;
            let range_version = args.version.unwrap_or(tree_version);
            let rules = model.matrix.rules_for(range_version)?;
            let modes = rules.modes_for(args.mode.mode)?;
            let mut targets = check::check_tree(&model.anchors, rules, range_version, &modes, &layers, tree.as_ref())?;
            for t in &mut targets {
                t.release = tree_version;
                t.rules_from = (rules.version != tree_version).then_some(rules.version);
            }
            report.targets = targets;
        }
        None => {
            let releases: Vec<&Release> = match args.version {
                Some(v) => {
                    let r = ws.release(v)?;
                    r.require_sources_jar(NO_SOURCES_HINT)?;
                    vec![r]
                }
                None => model.matrix.releases.iter().filter(|r| args.mode.mode.is_none_or(|m| r.supports(m))).collect(),
            };
            // One mvn run for everything a cold cache lacks. When Maven Central lacks one of them,
            // each release fetches its own below, so only that release is skipped.
            let wanted: Vec<(Coordinate, Option<&str>)> = releases
                .iter()
                .filter(|r| r.no_sources_jar.is_none())
                .flat_map(|r| r.sources.values().map(|c| (c.clone(), Some("sources"))))
                .collect();
            match ws.maven.ensure(&wanted) {
                Err(Error::NotPublished(_)) | Ok(_) => {}
                Err(e) => return Err(e),
            }
            for r in releases {
                let modes = r.modes_for(args.mode.mode)?;
                let tree = match &r.no_sources_jar {
                    Some(why) => Err(why.clone()),
                    None => match ReleaseTree::open(&ws.maven, &r.version.to_string(), &r.sources) {
                        Ok(tree) => Ok(tree),
                        Err(Error::NotPublished(m)) => Err(format!(
                            "Maven Central has no sources jar ({m}) and versions.yaml does not mark the release \
                             no_sources_jar: mark it, and check a checkout with --source or --git"
                        )),
                        Err(e) => return Err(e),
                    },
                };
                match tree {
                    Ok(tree) => {
                        report.targets.extend(check::check_tree(&model.anchors, r, r.version, &modes, &layers, &tree)?)
                    }
                    Err(why) => {
                        crate::out::note(format!("check-anchors: {} skipped: {why}", r.version));
                        report.targets.extend(modes.iter().map(|&m| check::skipped(r, m, &why)));
                    }
                }
            }
        }
    }
    crate::out::print(&report::check_report(&report, args.format, args.verbose))?;
    if let Some(dir) = &args.evidence {
        let stamp = format!("okp {} check-anchors, written {}\n\n", env!("CARGO_PKG_VERSION"), report::utc_now());
        let table = report::check_report(&report, Format::Table, true);
        crate::fsx::write_atomic(&dir.join("check-anchors.txt"), format!("{stamp}{table}").as_bytes())?;
        crate::fsx::write_atomic(
            &dir.join("check-anchors.json"),
            report::check_report(&report, Format::Json, false).as_bytes(),
        )?;
        crate::out::note(format!("evidence written to {}", dir.display()));
    }
    Ok(Outcome::drift_unless(report.ok()))
}
