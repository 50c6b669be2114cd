//! The write path with a healthy cluster: initial ISR at creation, acks=all
//! writes and the observer's byte-identical copy, latency (and the HW gate
//! with the observer frozen), transactions.

use std::time::{Duration, Instant};

use super::{round, Ctx, Flavor, ScenarioResult, TOPICS};
use crate::cluster::tools::{parse_perf, Tool};
use crate::cluster::{args, OBSERVER};
use crate::error::Result;

/// INIT: every topic was created with broker 4 assigned; 4 must be outside
/// the ISR and not the leader, yet host a byte-identical copy of the log.
pub fn init(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    for (topic, assignment, _) in TOPICS {
        let s = x.state(topic)?;
        o.fact(&format!("{topic}_initial"), s.show());
        o.check(
            &format!("{topic} ({assignment}): broker 4 assigned, not in the initial ISR, not leader"),
            s.replicas.contains(&OBSERVER) && !s.in_isr(OBSERVER) && s.leader != Some(OBSERVER) && s.leader.is_some(),
            s.show(),
        );
    }
    x.produce_obs(o, "INIT", 1000, &[])?;
    x.read_back(o, "INIT", &[])?;
    let end = x.c.end_offset("obs", &[])?;
    o.check("end offset of obs is 1000", end == Some(1000), format!("{end:?}"));
    let leader = x.state("obs")?.leader.unwrap_or(1);
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, leader, "obs", Duration::from_secs(20));
    o.fact("observer_identical_after_seconds", round(secs));
    o.check(
        "observer's segment of obs is byte-identical to the leader's",
        same,
        format!(
            "leader {leader}, {:?} vs {:?} after {secs:.1} s",
            x.c.segment_digest(leader, "obs"),
            x.c.segment_digest(OBSERVER, "obs")
        ),
    );
    let a = x.c.dump_batches(leader, "obs")?;
    let b = x.c.dump_batches(OBSERVER, "obs")?;
    o.fact("obs_batches", a.len());
    o.check(
        "dump-log: batches (offsets, producer ids, sequences, CRCs) equal on leader and observer",
        !a.is_empty() && a == b,
        format!("{} vs {} batch lines", a.len(), b.len()),
    );
    Ok(())
}

/// LAT: ProducerPerformance with acks=all, first with every broker healthy,
/// then with the observer frozen (SIGSTOP) while its records flow: a patched
/// leader never waits for the observer, so p99 stays far below
/// replica.lag.time.max.ms.
/// ProducerPerformance's arguments: `n` records of 100 bytes to `topic` at `rate`/s with
/// acks=all, bootstrapped from every broker but 4. Not idempotent: an idempotent producer (the
/// default from 3.0) first asks the least loaded broker for a producer id, and that may be the
/// frozen observer, still in the metadata until its session expires: a 30 s request timeout that
/// says nothing about the HW (seen on 4.1.2).
pub(super) fn perf_args(x: &mut Ctx, topic: &str, n: &str, rate: &str) -> Vec<String> {
    let props = format!("bootstrap.servers={}", x.c.bootstrap(&[OBSERVER]));
    args(&[
        "--topic",
        topic,
        "--num-records",
        n,
        "--throughput",
        rate,
        "--record-size",
        "100",
        "--producer-props",
        &props,
        "acks=all",
        "linger.ms=0",
        "enable.idempotence=false",
    ])
}

/// 600 records to `topic` at 100/s with acks=all, broker 4 frozen once 20 of them are
/// acknowledged and thawed when the producer ends: the producer's outcome, its summary, and
/// when 4 was frozen (seconds after the producer's start; None: nothing flowed within 60 s).
///
/// The producer first, the freeze once its records reach the high watermark: a leader counts
/// a frozen follower's lag from its last fetch, so a producer that starts late (a loaded
/// machine) would meet a stall already mostly over, and upstream jars could pass the gate
/// (evidence/findings/lat-upstream-pass-under-load). Now the stall, when there is one,
/// falls on the records after the freeze: at 100/s for 6 s, most of the 600.
pub(super) fn produce_while_frozen(
    x: &mut Ctx,
    topic: &str,
) -> Result<(crate::cluster::tools::Output, Option<crate::cluster::tools::PerfSummary>, Option<f64>)> {
    let base = x.c.probe_hw(topic).unwrap_or(0);
    let perf = perf_args(x, topic, "600", "100");
    let running = x.c.spawn_tool(Tool::Perf, &perf)?;
    let t0 = Instant::now();
    let mut flowing = None;
    while t0.elapsed() < Duration::from_secs(60) {
        if x.c.probe_hw(topic).is_some_and(|h| h >= base + 20) {
            flowing = Some(t0.elapsed().as_secs_f64());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    x.c.freeze(OBSERVER);
    x.c.journal.note(&format!(
        "broker 4 frozen {}",
        flowing.map_or("after 60 s with no 20 records acknowledged".into(), |s| format!(
            "{s:.1} s after the producer's start, once 20 of its records to {topic} were acknowledged"
        ))
    ));
    let frozen = x.c.finish_tool(Tool::Perf, running, Duration::from_secs(90));
    x.c.thaw(OBSERVER);
    let f = parse_perf(&frozen.stdout);
    Ok((frozen, f, flowing))
}

pub fn latency(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let perf = perf_args(x, "lat", "300", "100");
    let healthy = x.c.tool(Tool::Perf, &perf, None, Duration::from_secs(60))?;
    let h = parse_perf(&healthy.stdout);
    o.fact("healthy", &h);
    o.check(
        "300 records with acks=all, observer present",
        healthy.ok() && h.as_ref().is_some_and(|p| p.records == 300),
        format!("rc {} {:?}", healthy.rc, h),
    );
    let (frozen, f, flowing) = produce_while_frozen(x, "lat")?;
    o.fact("observer_frozen", &f);
    o.fact("frozen_after_seconds", flowing.map(round));
    let limit = x.c.timers.lag_ms as f64 / 3.0;
    o.check(
        "600 records with acks=all, observer frozen once they flow",
        flowing.is_some() && frozen.ok() && f.as_ref().is_some_and(|p| p.records == 600),
        format!(
            "rc {} {:?}, frozen {}",
            frozen.rc,
            f,
            flowing.map_or("with no records acknowledged".into(), |s| format!("{s:.1} s after the start"))
        ),
    );
    o.check(
        &format!("HW gate: p99 with the observer frozen < {limit:.0} ms (a third of replica.lag.time.max.ms)"),
        f.as_ref().is_some_and(|p| p.p99_ms < limit),
        f.as_ref()
            .map(|p| format!("p50 {} ms, p99 {} ms, max {} ms", p.p50_ms, p.p99_ms, p.max_ms))
            .unwrap_or_else(|| "no summary".into()),
    );
    let leader = x.state("lat")?.leader.unwrap_or(1);
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, leader, "lat", Duration::from_secs(45));
    o.fact("observer_caught_up_after_thaw_seconds", round(secs));
    o.check("after thaw the observer catches up (segments identical)", same, format!("{secs:.1} s"));
    if x.flavor == Flavor::Patched {
        let s = x.state("lat")?;
        o.check("broker 4 still outside the ISR of lat", !s.in_isr(OBSERVER), s.show());
    }
    Ok(())
}

/// TXN: transactional writes (ProducerPerformance, commits every 200 ms); the
/// read_committed view has every record, and the observer holds the same
/// batches, control batches included.
pub fn transactions(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let boot = x.c.bootstrap(&[]);
    let props = format!("bootstrap.servers={boot}");
    let a = args(&[
        "--topic",
        "tx",
        "--num-records",
        "2000",
        "--throughput",
        "-1",
        "--record-size",
        "50",
        "--transactional-id",
        "okp-verify-tx",
        "--transaction-duration-ms",
        "200",
        "--producer-props",
        &props,
        "acks=all",
    ]);
    let out = x.c.tool(Tool::Perf, &a, None, Duration::from_secs(120))?;
    let p = parse_perf(&out.stdout);
    o.check(
        "2000 transactional records committed",
        out.ok() && p.as_ref().is_some_and(|p| p.records == 2000),
        format!("rc {} {:?}", out.rc, p),
    );
    let committed = x.c.consume("tx", 2000, true, &[])?;
    o.fact("read_committed_records", committed.len());
    o.check("read_committed reads all 2000 records", committed.len() == 2000, format!("{} records", committed.len()));
    let leader = x.state("tx")?.leader.unwrap_or(2);
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, leader, "tx", Duration::from_secs(20));
    o.check(
        "observer's segment of tx is byte-identical to the leader's",
        same,
        format!("leader {leader}, after {secs:.1} s"),
    );
    let la = x.c.dump_batches(leader, "tx")?;
    let lb = x.c.dump_batches(OBSERVER, "tx")?;
    let controls = la.iter().filter(|l| l.contains("isControl: true")).count();
    o.fact("batches", la.len());
    o.fact("control_batches", controls);
    o.check(
        "dump-log: the same batches on the observer, control batches (commit markers) included",
        !la.is_empty() && la == lb && controls > 0,
        format!("{} vs {} batch lines, {controls} control batches", la.len(), lb.len()),
    );
    Ok(())
}
