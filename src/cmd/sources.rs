//! `okp sources`: a release's sources from its Maven Central sources jars,
//! laid out as a tree (all of them, or only the hooked files).
//!
//! Not here: reading the jars (`source::ReleaseTree`), the atomic lay-out
//! (`source::lay_out`).

use crate::cli::SourcesArgs;
use crate::error::{Outcome, Result};
use crate::source::ReleaseTree;
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, a: SourcesArgs) -> Result<Outcome> {
    let version = a.version;
    crate::source::refuse_non_empty(&a.out)?;
    let coords = ws.model.matrix.coordinates_for(version)?;
    if let Some(r) = ws.model.matrix.get(version) {
        r.require_sources_jar("okp sources needs them; a git checkout of the release has the same files")?;
    }
    let tree = ReleaseTree::open(&ws.maven, &version.to_string(), &coords)?;
    let mut files = tree.files()?;
    if a.hooked {
        let rules = ws.model.matrix.rules_for(version)?;
        // The files the anchors touch and the guarded files (what okp diff compares).
        let anchors = &ws.model.anchors;
        let wanted: std::collections::BTreeSet<&str> = rules
            .modes
            .iter()
            .flat_map(|&m| anchors.applicable(rules, version, m))
            .map(|an| an.file.as_str())
            .chain(anchors.guards_for(rules, version).into_iter().map(|g| g.file.as_str()))
            .collect();
        // And what the splice build's scalac reads besides them (core's Java sources, …), so that a
        // hooked tree builds the jars the sources jars build.
        let units: Vec<&str> = wanted.iter().copied().collect();
        files.retain(|(p, _)| {
            wanted.contains(p.as_str()) || crate::build::splice::scalac_reads(version, &units, p.as_str())
        });
    }
    let marker = serde_json::json!({
        "release": version.to_string(),
        "written_by": format!("okp {}", env!("CARGO_PKG_VERSION")),
        "sources": tree.coordinates(),
    });
    let n =
        crate::source::lay_out(&a.out, &files, &(serde_json::to_string_pretty(&marker).unwrap_or_default() + "\n"))?;
    crate::out::note(format!("wrote {n} files of Kafka {version} to {}", a.out.display()));
    Ok(Outcome::Done)
}
