//! Changing observer.ids on a live cluster: promotion of a lagging observer
//! (S5), live promotion and demotion (DEM), inconsistent files across nodes
//! (S6) and bad files (S7).

use std::time::{Duration, Instant};

use super::{round, Ctx, ScenarioResult};
use crate::cluster::tools::{parse_perf, Tool};
use crate::cluster::{args, OBSERVER};
use crate::error::Result;
use crate::model::Mode;

/// S5: the observer misses 30 000 records, then restarts and is promoted at
/// once. It joins the ISR only once caught up; the HW never goes backwards.
pub fn s5_lagging_promotion(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    x.c.kill9(OBSERVER);
    let boot = x.c.bootstrap(&[OBSERVER]);
    let props = format!("bootstrap.servers={boot}");
    let a = args(&[
        "--topic",
        "lag",
        "--num-records",
        "30000",
        "--throughput",
        "-1",
        "--record-size",
        "100",
        "--producer-props",
        &props,
        "acks=all",
        "batch.size=16384",
        "linger.ms=5",
    ]);
    let out = x.c.tool(Tool::Perf, &a, None, Duration::from_secs(120))?;
    let p = parse_perf(&out.stdout);
    o.check(
        "30 000 records acked while the observer is down",
        out.ok() && p.as_ref().is_some_and(|p| p.records == 30000),
        format!("rc {} {p:?}", out.rc),
    );
    x.c.start_node(OBSERVER)?;
    let t0 = Instant::now();
    let all = x.c.kafka_nodes();
    x.c.set_observers(&all, "")?;
    // Sample the HW from the leader every 200 ms (okp's ListOffsets probe) until 4 is in the ISR.
    let mut hw: Vec<(f64, i64)> = Vec::new();
    let mut joined = None;
    while t0.elapsed() < Duration::from_secs(90) {
        if !x.c.node_mut(OBSERVER).is_running() {
            return Err(crate::error::Error::External(format!(
                "broker 4 exited after its restart; last lines:\n{}",
                x.c.node(OBSERVER).tail(15)
            )));
        }
        if let Some(h) = x.c.probe_hw("lag") {
            if hw.last().is_none_or(|(_, last)| *last != h) {
                hw.push((round(t0.elapsed().as_secs_f64()), h));
            }
        }
        if x.c.probe_state("lag").is_some_and(|s| s.in_isr(OBSERVER)) {
            joined = Some(t0.elapsed().as_secs_f64());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // The probe asked one broker; the release's describe may ask another whose metadata is a
    // moment behind (CI, 4.3.1 kraft: the describe 0.7 s after the probe still had ISR 1,2,3).
    x.wait(o, "lag", Duration::from_secs(10), "describe confirms 4 in the ISR of lag", "confirm_seconds", |s| {
        s.in_isr(OBSERVER)
    })?;
    let regressions: Vec<String> =
        hw.windows(2).filter(|w| w[1].1 < w[0].1).map(|w| format!("{} → {} at +{}s", w[0].1, w[1].1, w[1].0)).collect();
    o.fact("hw_samples", &hw);
    o.fact("restart_to_isr_seconds", joined.map(round));
    o.check(
        "the promoted observer joins the ISR",
        joined.is_some(),
        format!("{:?} s after its restart", joined.map(round)),
    );
    o.check(
        "the high watermark never moved backwards",
        regressions.is_empty() && !hw.is_empty(),
        format!("{} distinct values sampled every 200 ms; {}", hw.len(), regressions.join("; ")),
    );
    let s = x.state("lag")?;
    let leader = s.leader.unwrap_or(1);
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, leader, "lag", Duration::from_secs(20));
    o.check("after joining, its log equals the leader's", same, format!("after {secs:.1} s"));
    x.restore_observer(o, "lag")?;
    Ok(())
}

/// DEM: on a healthy topic, promote 4 (it joins the ISR), then demote it
/// again (it leaves the ISR through the native shrink); both timed.
pub fn demotion(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let all = x.c.kafka_nodes();
    x.c.set_observers(&all, "")?;
    let t = x.lag() + x.ttl() + Duration::from_secs(20);
    x.wait(o, "obs", t, "promotion: 4 joins the ISR", "promotion_seconds", |s| s.in_isr(OBSERVER))?;
    x.produce_obs(o, "DEM", 200, &[])?;
    x.c.set_observers(&all, "4\n")?;
    x.wait(o, "obs", t, "demotion: 4 leaves the ISR, leader unchanged", "demotion_seconds", |s| {
        !s.in_isr(OBSERVER) && s.leader.is_some_and(|l| l != OBSERVER)
    })?;
    x.produce_obs(o, "DEM-after", 200, &[])?;
    x.read_back(o, "DEM", &[])?;
    Ok(())
}

/// S6: observer.ids differs between nodes. KRaft: brokers promote 4 but the
/// controllers do not; the controllers must reject every AlterPartition that
/// adds 4 (INELIGIBLE_REPLICA) and the committed ISR must not change. ZK: only
/// the partition leader's file decides; promoting 4 elsewhere changes nothing.
pub fn s6_inconsistent(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let s = x.state("obs")?;
    let leader = s.leader.unwrap_or(1);
    let (first, second): (Vec<i32>, Vec<i32>) = if x.c.mode == Mode::Kraft {
        (x.c.kafka_nodes().into_iter().filter(|i| *i < 100).collect(), x.c.controllers())
    } else {
        (x.c.kafka_nodes().into_iter().filter(|i| *i != leader).collect(), vec![leader])
    };
    let rejections_before = x.c.grep_logs(&["ineligible"]).iter().filter(|l| l.contains("observer")).count();
    x.c.set_observers(&first, "")?;
    let what = if x.c.mode == Mode::Kraft {
        "brokers promote 4, controllers do not"
    } else {
        "every node but the leader promotes 4"
    };
    x.hold(
        o,
        "obs",
        x.ttl() + x.lag() + Duration::from_secs(7),
        &format!("{what}: 4 never enters the committed ISR"),
        |s| s.in_isr(OBSERVER),
    )?;
    if x.c.mode == Mode::Kraft {
        let lines: Vec<String> =
            x.c.grep_logs(&["ineligible"]).into_iter().filter(|l| l.contains("observer")).collect();
        let new = lines.len().saturating_sub(rejections_before);
        o.fact("controller_rejections", new);
        o.check(
            "the controllers logged AlterPartition rejections naming 4 as an ineligible observer",
            new > 0,
            lines
                .last()
                .map(|l| format!("{new} lines; last: {}", l.chars().take(240).collect::<String>()))
                .unwrap_or_else(|| "none".into()),
        );
    }
    x.c.set_observers(&second, "")?;
    x.wait(
        o,
        "obs",
        x.ttl() + x.lag() + Duration::from_secs(20),
        "once every node agrees, 4 joins the ISR",
        "join_after_alignment_seconds",
        |s| s.in_isr(OBSERVER),
    )?;
    x.restore_observer(o, "obs")?;
    Ok(())
}

/// S7: observer.ids becomes garbage, unreadable (a directory: root ignores
/// file modes), then is deleted. Each time the set stays as it was (4 is an
/// observer), no process dies, and acks=all writes continue.
pub fn s7_bad_file(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let all = x.c.kafka_nodes();
    let hold = x.ttl() + Duration::from_secs(4);
    // Garbage: tokens that are not ids are ignored, so `4` still parses.
    x.c.set_observers(&all, "banana,4 %%@@!!\n# an operator's comment\n")?;
    x.hold(o, "obs", hold, "garbage file: 4 stays out of the ISR", |s| s.in_isr(OBSERVER))?;
    x.produce_obs(o, "S7-garbage", 200, &[])?;
    // Unreadable.
    let warn_before = x.c.grep_logs(&["Cannot read observer ids"]).len();
    for id in &all {
        let p = x.c.node(*id).observer_file();
        let _ = std::fs::remove_file(&p);
        std::fs::create_dir_all(&p)
            .map_err(|e| crate::error::Error::io(format!("cannot create {}", p.display()), e))?;
    }
    x.c.journal.note("observer.ids replaced by a directory on every node (unreadable)");
    x.hold(o, "obs", hold, "unreadable file: 4 stays out of the ISR", |s| s.in_isr(OBSERVER))?;
    x.produce_obs(o, "S7-unreadable", 200, &[])?;
    let warns = x.c.grep_logs(&["Cannot read observer ids"]);
    o.fact("read_failure_warnings", warns.len() - warn_before.min(warns.len()));
    o.check(
        "the read failure is logged as a WARN naming the file",
        warns.len() > warn_before,
        warns.last().cloned().unwrap_or_default(),
    );
    // Deleted.
    for id in &all {
        let p = x.c.node(*id).observer_file();
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }
    let freezes_before =
        x.c.grep_logs(&["OBSERVER AUDIT"])
            .iter()
            .filter(|l| l.contains("event=freeze") && l.contains("source=frozen:file-missing"))
            .count();
    x.c.journal.note("observer.ids deleted on every node");
    x.hold(o, "obs", hold, "deleted file: the set stays frozen, 4 stays out of the ISR", |s| s.in_isr(OBSERVER))?;
    let freezes: Vec<String> =
        x.c.grep_logs(&["OBSERVER AUDIT"])
            .into_iter()
            .filter(|l| l.contains("event=freeze") && l.contains("source=frozen:file-missing"))
            .collect();
    o.fact("audit_freeze_lines", freezes.len().saturating_sub(freezes_before));
    o.check(
        "an OBSERVER AUDIT event=freeze line (source=frozen:file-missing) is logged",
        freezes.len() > freezes_before,
        freezes.last().cloned().unwrap_or_default(),
    );
    x.produce_obs(o, "S7-deleted", 200, &[])?;
    let mut dead = Vec::new();
    for id in &all {
        if !x.c.node_mut(*id).is_running() {
            dead.push(*id);
        }
    }
    o.check("every node kept running", dead.is_empty(), format!("{dead:?}"));
    x.read_back(o, "S7", &[])?;
    let unfreezes_before = x.c.grep_logs(&["OBSERVER AUDIT"]).iter().filter(|l| l.contains("event=unfreeze")).count();
    x.restore_observer(o, "obs")?;
    // A hook reads the file again within the TTL; wait for the audit line rather than sleeping.
    let t0 = Instant::now();
    let mut unfreezes = 0;
    while t0.elapsed() < x.ttl() + Duration::from_secs(10) {
        unfreezes = x.c.grep_logs(&["OBSERVER AUDIT"]).iter().filter(|l| l.contains("event=unfreeze")).count();
        if unfreezes > unfreezes_before {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    o.check(
        "restoring the file logs OBSERVER AUDIT event=unfreeze",
        unfreezes > unfreezes_before,
        format!("{} new unfreeze lines", unfreezes - unfreezes_before.min(unfreezes)),
    );
    Ok(())
}
