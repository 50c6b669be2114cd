//! evidence/upgrade/UPGRADE.md: one row per UPGRADE run (`okp verify --version A --upgrade-to B`),
//! written from the run.json files under evidence/upgrade/ after every such run and by
//! `okp verify --merge`: the hop, its verdict, its steps and time, what the producer and the
//! consumer saw, the producer's latency before and during the roll.
//!
//! Not here: the run (`run`), the release × scenario page (`matrix`).

use std::path::Path;

use super::record::RunRecord;
use crate::error::{Error, Result};

/// The subdirectory of the evidence directory that holds the UPGRADE runs.
pub const DIR: &str = "upgrade";
pub const PAGE: &str = "UPGRADE.md";

/// Writes `dir`/UPGRADE.md from every run directory in `dir` (sorted by hop).
pub fn write_page(dir: &Path) -> Result<()> {
    let mut runs: Vec<(String, RunRecord)> = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(format!("cannot read {}", dir.display()), e))?.flatten() {
        let p = e.path();
        if p.join(super::record::FILE_NAME).is_file() {
            runs.push((e.file_name().to_string_lossy().into_owned(), RunRecord::read(&p)?));
        }
    }
    runs.sort_by(|(_, a), (_, b)| {
        (a.release, a.upgrade_to.as_ref().map(|u| u.release), a.mode).cmp(&(
            b.release,
            b.upgrade_to.as_ref().map(|u| u.release),
            b.mode,
        ))
    });
    crate::fsx::write_atomic(&dir.join(PAGE), page(&runs).as_bytes())
}

fn page(runs: &[(String, RunRecord)]) -> String {
    let mut s = String::from(
        "# okp verify --upgrade-to: rolling upgrades of a patched cluster\n\nWritten by `okp verify` after every UPGRADE run, from the `run.json` files in this directory. \
         Each run starts a patched cluster of release A with observer 4 (cluster-wide id, and a topic rule making it a full replica of `ufull`), \
         rolls every node to patched release B under an idempotent acks=all producer and a read_committed consumer in the order docs/upgrade.md gives, \
         with a status read, a promotion, a demotion and one rollback while releases are mixed, then finalises. \
         Latency: the producer's own send-to-ack time, before the roll and during it.\n\n\
         | hop | mode | verdict | steps | roll | acked | errors | missing / misplaced / duplicated | p99 before → during | observer copy | journal |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (name, r) in runs {
        let Some(o) = r.scenarios.iter().find(|o| o.id == "UPGRADE") else { continue };
        let to = r.upgrade_to.as_ref().map(|u| u.release.to_string()).unwrap_or_else(|| "?".into());
        let f = |k: &str| o.facts.get(k).cloned().unwrap_or(serde_json::Value::Null);
        let phases = f("phases");
        let steps = phases.as_array().map_or(0, Vec::len);
        let roll: f64 = phases.as_array().map_or(0.0, |p| p.iter().filter_map(|x| x["seconds"].as_f64()).sum());
        let t = f("upgrade_traffic");
        let n = |v: &serde_json::Value| v.as_u64().map_or("?".to_string(), |x| x.to_string());
        let lat = f("producer_latency_ms");
        let ms = |v: &serde_json::Value| v.as_f64().map_or("?".to_string(), |x| format!("{x:.1} ms"));
        let identical = o.checks.iter().find(|c| c.name.contains("byte-identical")).map_or("?", |c| if c.pass { "identical" } else { "DIFFERS" });
        s.push_str(&format!(
            "| {} → {to} | {} | {} | {steps} | {roll:.0} s | {} | {} | {} / {} / {} | {} → {} | {identical} | [{}]({name}/{}) |\n",
            r.release,
            r.mode,
            if o.pass { "pass" } else { "FAIL" },
            n(&t["acked"]),
            n(&t["errors"]),
            n(&t["missing"]),
            n(&t["misplaced"]),
            n(&t["duplicated"]),
            ms(&lat["before"]["p99"]),
            ms(&lat["during"]["p99"]),
            o.id,
            o.evidence,
        ));
    }
    if runs.is_empty() {
        s.push_str("\nNo run yet.\n");
    }
    s
}
