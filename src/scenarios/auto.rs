//! AUTO: the opt-in auto-promotion watchdog (`okp observers watch`, run as
//! an operator runs it: this okp binary, `--once`, local observer.ids files)
//! on the verify cluster. Two primaries of `obs` (1:2:3:4,
//! min.insync.replicas=2) die: a dry run traces the promotion and writes
//! nothing; a scan promotes the caught-up observer 4 and acks=all writes go
//! on; the primaries come back: inside the cooldown the demotion is refused,
//! after it 4 is demoted once the condition has cleared twice. Not a gate:
//! the watchdog is a tool around the patch set, not part of it.
//!
//! Not here: the watchdog's rules one by one (src/observers/watch, its unit
//! tests, tests/it/observers_watch.rs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{Ctx, ScenarioResult};
use crate::cluster::OBSERVER;
use crate::error::{Error, Result};

/// The watchdog's files for this run, beside the journal.
pub(super) struct Files {
    pub(super) nodes: PathBuf,
    pub(super) state: PathBuf,
    pub(super) audit: PathBuf,
}

fn audit_lines(audit: &Path) -> Vec<serde_json::Value> {
    crate::fsx::read::lossy_text(audit, crate::fsx::read::MAX_LOG)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `okp observers watch --enable --once …`: the exit code and the audit lines it added (journaled).
pub(super) fn watch(x: &mut Ctx, f: &Files, extra: &[&str]) -> Result<(Option<i32>, Vec<serde_json::Value>)> {
    let okp = crate::cluster::homes::okp_binary()?;
    let before = audit_lines(&f.audit).len();
    let boot = x.c.bootstrap(&[]);
    let mut args: Vec<String> =
        ["observers", "watch", "--enable", "--once", "--bootstrap", &boot].map(String::from).to_vec();
    for (flag, p) in [("--nodes", &f.nodes), ("--state", &f.state), ("--audit-log", &f.audit)] {
        args.push(flag.into());
        args.push(p.display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let t0 = Instant::now();
    let out = Command::new(&okp).args(&args).output().map_err(|e| Error::io("cannot run okp observers watch", e))?;
    let added = audit_lines(&f.audit).split_off(before);
    let mut note =
        format!("$ okp {}\n  (rc={:?}, {:.2} s)\n", args.join(" "), out.status.code(), t0.elapsed().as_secs_f64());
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        note.push_str(&format!("  | {l}\n"));
    }
    for l in &added {
        note.push_str(&format!("  audit {l}\n"));
    }
    x.c.journal.note(note.trim_end());
    Ok((out.status.code(), added))
}

/// The decisions among `lines` about partition `part`, as `action` or `action/outcome`.
pub(super) fn about(lines: &[serde_json::Value], part: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["partitions"].as_array().is_some_and(|ps| ps.iter().any(|p| p["partition"] == part)))
        .map(|l| match l["outcome"].as_str() {
            Some(o) => format!("{}/{o}", l["action"].as_str().unwrap_or("?")),
            None => l["action"].as_str().unwrap_or("?").to_string(),
        })
        .collect()
}

pub fn auto(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let dir = x.c.journal.dir().join("AUTO-watch");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let f = Files { nodes: dir.join("nodes.yaml"), state: dir.join("state.json"), audit: dir.join("audit.log") };
    let all = x.c.kafka_nodes();
    x.write_nodes_file(&f.nodes)?;
    let files = |x: &Ctx| -> Vec<String> {
        all.iter()
            .map(|id| crate::fsx::read::lossy_text(&x.c.node(*id).observer_file(), crate::fsx::read::MAX_TEXT))
            .collect()
    };
    let lag = x.lag() + x.ttl() + Duration::from_secs(30);

    // Two primaries down: the ISR of obs falls below min.insync.replicas=2.
    let t_kill = Instant::now();
    x.c.kill9(2);
    x.c.kill9(3);
    x.wait(
        o,
        "obs",
        lag,
        "primaries 2 and 3 killed: ISR of obs below min.insync.replicas",
        "isr_shrink_seconds",
        |s| !s.in_isr(2) && !s.in_isr(3) && s.leader.is_some(),
    )?;

    let before = files(x);
    let (rc, l) = watch(x, &f, &["--dry-run"])?;
    o.check(
        "--dry-run: the promotion of 4 for obs-0 traced, no observer.ids changed, no state",
        rc == Some(0) && about(&l, "obs-0") == ["promote/dry-run"] && files(x) == before && !f.state.exists(),
        format!("rc {rc:?}, obs-0 decisions {:?}", about(&l, "obs-0")),
    );

    let (rc, l) = watch(x, &f, &[])?;
    o.fact("kill_to_promoted_seconds", super::round(t_kill.elapsed().as_secs_f64()));
    o.check(
        "a scan promotes the caught-up observer 4: every node's observer.ids empties, the audit says done",
        rc == Some(0)
            && about(&l, "obs-0") == ["promote/decided", "promote/done"]
            && files(x).iter().all(|s| s.is_empty()),
        format!("rc {rc:?}, obs-0 decisions {:?}, files {:?}", about(&l, "obs-0"), files(x)),
    );
    x.wait(o, "obs", lag, "4 is in the ISR of obs", "promoted_in_isr_seconds", |s| s.in_isr(OBSERVER))?;
    x.produce_obs(o, "AUTO-promoted", 200, &[2, 3])?;

    // The primaries back: the demotion is wanted, but the cooldown refuses it.
    x.c.restart(2)?;
    x.c.restart(3)?;
    let t_back = Instant::now();
    x.wait(o, "obs", lag, "primaries 2 and 3 back in the ISR", "primaries_back_seconds", |s| {
        s.in_isr(2) && s.in_isr(3)
    })?;
    let before = files(x);
    // The demotion is wanted only once no partition the policy watches is under its
    // min.insync.replicas any more (the internal topics' too, which catch up after obs): scan
    // until the watchdog wants it (a scan that wants nothing changes nothing), at most 30 s.
    let refused_in = |l: &[serde_json::Value]| {
        l.iter().any(|d| {
            d["action"] == "refuse"
                && d["broker"] == OBSERVER
                && d["reason"].as_str().is_some_and(|r| r.contains("cooldown"))
        })
    };
    let t_scan = Instant::now();
    let (mut rc, mut l) = watch(x, &f, &[])?;
    while !refused_in(&l) && rc == Some(0) && t_scan.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_secs(1));
        (rc, l) = watch(x, &f, &[])?;
    }
    let refused = refused_in(&l);
    o.check(
        "inside the cooldown (300 s) the demotion of 4 is refused, nothing changes",
        rc == Some(0) && refused && files(x) == before,
        format!("rc {rc:?}, lines {:?}", l.iter().map(|d| d["action"].clone()).collect::<Vec<_>>()),
    );
    let (rc, l) = watch(x, &f, &["--cooldown", "1", "--confirm-interval", "5"])?;
    o.fact("back_to_demoted_seconds", super::round(t_back.elapsed().as_secs_f64()));
    let demoted = l.iter().find(|d| d["action"] == "demote" && d["outcome"] == "done");
    o.check(
        "past the cooldown, cleared twice 5 s apart: 4 demoted, observer.ids = 4 on every node",
        rc == Some(0)
            && demoted.is_some_and(|d| d["reason"].as_str().is_some_and(|r| r.ends_with("confirmed again 5 s later")))
            && files(x).iter().all(|s| s == "4\n"),
        format!("rc {rc:?}, demote line {demoted:?}, files {:?}", files(x)),
    );
    x.wait(o, "obs", lag, "4 leaves the ISR of obs, leader unchanged", "demoted_out_of_isr_seconds", |s| {
        !s.in_isr(OBSERVER) && s.leader.is_some_and(|l| l != OBSERVER)
    })?;
    x.produce_obs(o, "AUTO-after", 200, &[])?;
    x.read_back(o, "AUTO", &[])?;
    x.restore_observer(o, "obs")?;
    Ok(())
}
