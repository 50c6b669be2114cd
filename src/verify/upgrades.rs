//! evidence/upgrade/UPGRADE.md: one row per UPGRADE run (`okp verify --version A --upgrade-to B`),
//! written from the run.json files under evidence/upgrade/ after every such run and by
//! `okp verify --merge`: the hop, its verdict, its steps and time, what the producer and the
//! consumer saw, the producer's latency before and during the roll; the migrations
//! (`--migrate`) and the Ansible upgrade plays on separate hosts (`--scenarios HOSTS
//! --upgrade-to B`) in sections of their own.
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
        (a.release, a.upgrade_to.iter().map(|u| u.release).collect::<Vec<_>>(), a.mode).cmp(&(
            b.release,
            b.upgrade_to.iter().map(|u| u.release).collect::<Vec<_>>(),
            b.mode,
        ))
    });
    crate::fsx::write_atomic(&dir.join(PAGE), page(&runs).as_bytes())
}

fn page(runs: &[(String, RunRecord)]) -> String {
    let mut s = String::from(
        "# okp verify: a patched cluster through its life (rolling upgrades, ZooKeeper → KRaft)\n\nWritten by `okp verify` after every UPGRADE and MIGRATE run, from the `run.json` files in this directory (docs/upgrade.md). \
         Each run starts a patched cluster with observer 4 (cluster-wide id, and a topic rule making it a full replica of `ufull`) under an idempotent acks=all producer and a read_committed consumer, \
         and checks after every step that 4 is never in obs's ISR nor leading it, is in ufull's ISR, and that writes were acknowledged while each node was down. \
         Latency: the producer's own send-to-ack time before the first step and during the steps (MIGRATE's includes broker 1, obs's leader, killed with -9 in the dual-write window: a leader failover).\n\n\
         ## Rolling upgrades (`--upgrade-to B`)\n\n\
         Every node rolled from patched A to patched B in the order docs/upgrade.md gives (KRaft controllers first), with a status read, a promotion, a demotion, a topic created with the observer listed first (and a preferred election) and one rollback while releases are mixed, then finalised. \
         A row whose controllers run B's own jars is the negative control: the topic created while releases are mixed must show the observer leading or in its ISR.\n\n\
         | hop | mode | B's controllers | verdict | steps | roll | topic created mixed | acked | errors | missing / misplaced / duplicated | p99 before → during | observer copy | journal |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut upgrades = 0;
    for (name, r) in runs {
        let Some(o) = r.scenarios.iter().find(|o| o.id == "UPGRADE") else { continue };
        upgrades += 1;
        let to = r.upgrade_to.iter().map(|u| u.release.to_string()).collect::<Vec<_>>().join(" → ");
        let c = Cells::of(o, "upgrade_traffic");
        let controllers = if r.mode == crate::model::Mode::Zk {
            "(ZooKeeper mode)"
        } else {
            o.facts.get("controllers").and_then(|v| v.as_str()).unwrap_or("patched")
        };
        s.push_str(&format!(
            "| {} → {to} | {} | {controllers} | {} | {} | {:.0} s | {} | {} | {} | {} | {} | {} | [{}]({name}/{}) |\n",
            r.release,
            r.mode,
            c.verdict,
            c.steps,
            c.seconds,
            mixed_cell(o),
            c.acked,
            c.errors,
            c.lost,
            c.p99,
            c.identical,
            o.id,
            o.evidence,
        ));
    }
    if upgrades == 0 {
        s.push_str("| no run yet |||||||||||\n");
    }
    s.push_str(
        "\n## ZooKeeper → KRaft (`--migrate`)\n\n\
         KRaft controllers added in migration mode, brokers rolled into migration mode (dual-write), a promotion, a demotion, an unclean election and reassignments (onto the observer alone; a primary added with the observer listed first, then a preferred election) decided by the KRaft controller while brokers still speak ZooKeeper, brokers rolled to KRaft, controllers finalised, ZooKeeper stopped. \
         A row whose controllers run the release's own jars is the negative control: its dual-write window must show the observer leading or in an ISR.\n\n\
         | run | KRaft controllers | verdict | phases | time | dual-write window | acked | errors | missing / misplaced / duplicated | p99 before → during | observer copy | journal |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut migrations = 0;
    for (name, r) in runs {
        let Some(o) = r.scenarios.iter().find(|o| o.id == "MIGRATE") else { continue };
        migrations += 1;
        let c = Cells::of(o, "migrate_traffic");
        let controllers = o.facts.get("controllers").and_then(|v| v.as_str()).unwrap_or("?");
        let window = o
            .checks
            .iter()
            .find(|c| c.name.starts_with("dual-write window") || c.name.starts_with("negative control: with"))
            .map_or("?".to_string(), |c| {
                format!("{}: {}", if c.pass { "as expected" } else { "NOT as expected" }, c.detail.replace('|', "/"))
            });
        // The life of one cluster: the migration, then each release rolled to.
        let life: String = r.upgrade_to.iter().map(|u| format!(" → {}", u.release)).collect();
        let back = if o.checks.iter().any(|c| c.name.starts_with("rolled back")) {
            " → KRaft → back to ZooKeeper"
        } else {
            " → KRaft"
        };
        s.push_str(&format!(
            "| {} ZooKeeper{back}{life} | {controllers} | {} | {} | {:.0} s | {window} | {} | {} | {} | {} | {} | [{}]({name}/{}) |\n",
            r.release, c.verdict, c.steps, c.seconds, c.acked, c.errors, c.lost, c.p99, c.identical, o.id, o.evidence,
        ));
    }
    if migrations == 0 {
        s.push_str("| no run yet ||||||||||||\n");
    }
    s.push_str(
        "\n## With Ansible on separate hosts (`--scenarios HOSTS --upgrade-to B`)\n\n\
         HOSTS' hosts (network namespaces with sshd, docs/hosts.md) rolled A → B by the real ansible-playbook running contrib/ansible/upgrade.yml (controllers first, B's home beside A's behind a link) under acks=all writes.\n\n\
         | hop | mode | verdict | checks | acked during the play | journal |\n|---|---|---|---|---|---|\n",
    );
    let mut plays = 0;
    for (name, r) in runs {
        let Some(o) = r.scenarios.iter().find(|o| o.id == "HOSTS") else { continue };
        plays += 1;
        let to = r.upgrade_to.iter().map(|u| u.release.to_string()).collect::<Vec<_>>().join(" → ");
        let passed = o.checks.iter().filter(|c| c.pass).count();
        let acked = o
            .checks
            .iter()
            .find(|c| c.name.starts_with("acks=all writes through the upgrade"))
            .map_or("?".to_string(), |c| c.detail.replace('|', "/"));
        s.push_str(&format!(
            "| {} → {to} | {} | {} | {passed}/{} | {acked} | [{}]({name}/{}) |\n",
            r.release,
            r.mode,
            if o.pass { "pass" } else { "FAIL" },
            o.checks.len(),
            o.id,
            o.evidence,
        ));
    }
    if plays == 0 {
        s.push_str("| no run yet ||||||\n");
    }
    s
}

/// What the topic created while releases were mixed showed, per hop: each check's verdict
/// against what the run expects; runs recorded before the probe existed (2026-12-05) have none.
fn mixed_cell(o: &crate::scenarios::ScenarioResult) -> String {
    let said: Vec<&str> = o
        .checks
        .iter()
        .filter(|c| c.name.contains(" mixed: a topic created") || c.name.starts_with("negative control, "))
        .map(|c| if c.pass { "as expected" } else { "NOT as expected" })
        .collect();
    if said.is_empty() {
        "not run (recorded before it existed)".into()
    } else {
        said.join(", ")
    }
}

/// The cells an UPGRADE or MIGRATE row shares, from its outcome.
struct Cells {
    verdict: &'static str,
    steps: usize,
    seconds: f64,
    acked: String,
    errors: String,
    lost: String,
    p99: String,
    identical: &'static str,
}

impl Cells {
    fn of(o: &crate::scenarios::ScenarioResult, traffic: &str) -> Cells {
        let f = |k: &str| o.facts.get(k).cloned().unwrap_or(serde_json::Value::Null);
        let phases = f("phases");
        let t = f(traffic);
        let n = |v: &serde_json::Value| v.as_u64().map_or("?".to_string(), |x| x.to_string());
        let lat = f("producer_latency_ms");
        let ms = |v: &serde_json::Value| v.as_f64().map_or("?".to_string(), |x| format!("{x:.1} ms"));
        Cells {
            verdict: if o.pass { "pass" } else { "FAIL" },
            steps: phases.as_array().map_or(0, Vec::len),
            seconds: phases.as_array().map_or(0.0, |p| p.iter().filter_map(|x| x["seconds"].as_f64()).sum()),
            acked: n(&t["acked"]),
            errors: n(&t["errors"]),
            lost: format!("{} / {} / {}", n(&t["missing"]), n(&t["misplaced"]), n(&t["duplicated"])),
            p99: format!("{} → {}", ms(&lat["before"]["p99"]), ms(&lat["during"]["p99"])),
            identical: o.checks.iter().find(|c| c.name.contains("byte-identical")).map_or("?", |c| {
                if c.pass {
                    "identical"
                } else {
                    "DIFFERS"
                }
            }),
        }
    }
}
