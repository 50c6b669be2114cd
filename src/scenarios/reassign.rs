//! REASSIGN: the reassignment edge of the contract (docs/contract.md#reassignment), driven with
//! the release's own kafka-reassign-partitions on a topic `ra` created on brokers 1,2,3. A
//! reassignment onto observers only is refused; adding the observer (`1,2,3,4`) completes
//! without it ever joining the ISR, and it then holds the whole log; primary 3 moved out and
//! back completes once 3 is in the ISR, the observer staying a replica (the cluster has no
//! broker 5 to move 3 to); removing the observer completes as upstream. Every step runs under
//! a rate-limited acks=all producer, and after each the consumer reads exactly what was acked.
//!
//! Not here: the hooks (patches/edits.yaml), the tool's class per release (cluster/tools.rs).

use std::time::{Duration, Instant};

use super::{round, Ctx, Flavor, ScenarioResult};
use crate::cluster::tools::{parse_perf, parse_reassign_status, PartitionState, ReassignStatus, Running, Tool};
use crate::cluster::{args, OBSERVER};
use crate::error::Result;
use crate::model::Mode;

const TOPIC: &str = "ra";
/// Records written before the observer is added, so it has a log to copy (about 3 MB).
const PREFILL: usize = 30_000;
/// Each step's producer: 2000 records at 200 a second, 10 s of acks=all writes.
const STEP_RECORDS: usize = 2_000;
const STEP_RATE: usize = 200;
/// How long a reassignment may take before the step fails.
const COMPLETE_WITHIN: Duration = Duration::from_secs(60);

/// One reassignment step: its target and what the scenario calls it in checks and facts.
struct Step {
    label: &'static str,
    target: &'static [i32],
    what: &'static str,
}

const ADD: Step = Step { label: "add", target: &[1, 2, 3, 4], what: "the observer added (1,2,3 → 1,2,3,4)" };
const MOVE_OUT: Step =
    Step { label: "move_out", target: &[1, 2, 4], what: "primary 3 moved out, the observer staying (→ 1,2,4)" };
const MOVE_BACK: Step =
    Step {
        label: "move_back", target: &[1, 2, 3, 4], what: "primary 3 moved back, the observer staying (→ 1,2,3,4)"
    };
const REMOVE: Step = Step { label: "remove", target: &[1, 2, 3], what: "the observer removed (→ 1,2,3)" };

pub fn reassign(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let created = x.c.create_topic(TOPIC, "1:2:3", &["min.insync.replicas=2"])?;
    o.check("topic ra created on brokers 1,2,3", created.ok(), format!("rc {}", created.rc));
    let healthy = |s: &PartitionState| s.leader == Some(1) && s.isr.len() == 3;
    if x.wait(o, TOPIC, Duration::from_secs(30), "ra: leader 1, ISR 1,2,3", "create_seconds", healthy)?.is_none() {
        return Ok(());
    }
    let mut acked = prefill(x, o)?;

    if x.flavor == Flavor::Patched {
        refuse_observers_only(x, o)?;
    } else {
        // Upstream would accept it and move ra onto broker 4 alone.
        o.fact("refusal", "not run on upstream jars: upstream accepts a reassignment onto broker 4 alone");
    }

    for step in [ADD, MOVE_OUT, MOVE_BACK, REMOVE] {
        let Some(done) = run_step(x, o, &step, &mut acked)? else {
            return Ok(());
        };
        match step.label {
            "add" => whole_log(x, o, OBSERVER, done)?,
            "move_back" => whole_log(x, o, 3, done)?,
            "remove" => observer_replica_deleted(x, o)?,
            _ => {}
        }
    }
    if x.c.mode == Mode::Zk {
        // A reassignment that completes without phase A must still move each adding replica
        // through NewReplica before OnlineReplica (the zk-reassignment-start-observer edit).
        let failed: Vec<String> =
            x.c.grep_logs(&["state change of replica"])
                .into_iter()
                .filter(|l| l.contains("failed") && l.contains(&format!("{TOPIC}-0")))
                .collect();
        o.check(
            "the ZooKeeper controller logged no failed replica state change for ra-0",
            failed.is_empty(),
            failed.first().cloned().unwrap_or_else(|| "none".into()),
        );
    }
    Ok(())
}

/// A reassignment whose targets are all observers is refused, and nothing changes.
fn refuse_observers_only(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let out = x.c.reassign(TOPIC, &[OBSERVER], "--execute")?;
    let said = format!("{}\n{}", out.stdout, out.stderr);
    let line = said.lines().find(|l| l.contains("is an observer")).unwrap_or("").trim().to_string();
    o.fact("refusal_message", &line);
    o.check(
        "a reassignment of ra onto broker 4 alone is refused, naming the observer",
        !out.ok() && !line.is_empty(),
        format!("rc {}: {}", out.rc, if line.is_empty() { last_line(&said) } else { line.clone() }),
    );
    let verify = x.c.reassign(TOPIC, &[OBSERVER], "--verify")?;
    let status = parse_reassign_status(&verify.stdout, TOPIC, 0);
    let s = x.state(TOPIC)?;
    o.check(
        "after the refusal: no reassignment in progress, replicas still 1,2,3",
        status != Some(ReassignStatus::InProgress) && s.replicas == [1, 2, 3],
        format!("--verify {status:?}; {}", s.show()),
    );
    if x.c.mode == Mode::Zk {
        refuse_through_znode(x, o)?;
    }
    Ok(())
}

/// ZooKeeper mode's other entry point: the same reassignment written to /admin/reassign_partitions
/// (what `kafka-reassign-partitions --zookeeper` did up to 2.8). The controller refuses it, removes
/// it from the znode and logs why; nothing changes.
fn refuse_through_znode(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    const ZNODE: &str = "/admin/reassign_partitions";
    let json = format!(
        "{{\"version\":1,\"partitions\":[{{\"topic\":\"{TOPIC}\",\"partition\":0,\"replicas\":[{OBSERVER}]}}]}}"
    );
    let before = x.c.grep_logs(&["Failed reassignment through zk"]).len();
    let created = x.c.zk(&["create", ZNODE, &json])?;
    o.check(&format!("{ZNODE} written with ra onto broker 4 alone"), created.ok(), format!("rc {}", created.rc));
    let t0 = Instant::now();
    let mut gone = false;
    while !gone && t0.elapsed() < Duration::from_secs(30) {
        let got = x.c.zk(&["get", ZNODE])?;
        // "Node does not exist: …" (ZooKeeper 3.6 on); 3.5's shell (Kafka 2.7, 2.8) prints the NoNodeException.
        let said = format!("{}{}", got.stdout, got.stderr);
        gone = said.contains("does not exist") || said.contains("KeeperErrorCode = NoNode");
    }
    o.fact("znode_refusal_seconds", round(t0.elapsed().as_secs_f64()));
    let logged: Vec<String> = x.c.grep_logs(&["Failed reassignment through zk"]).into_iter().skip(before).collect();
    let named = logged.iter().find(|l| l.contains("is an observer")).cloned();
    o.check(
        &format!("the controller refuses it: {ZNODE} removed, the refusal logged naming the observer"),
        gone && named.is_some(),
        match &named {
            Some(l) => {
                format!("after {:.1} s: {}", t0.elapsed().as_secs_f64(), l.chars().take(300).collect::<String>())
            }
            None => format!("znode removed: {gone}; {} new refusal lines, none naming the observer", logged.len()),
        },
    );
    let s = x.state(TOPIC)?;
    o.check("after the znode refusal: replicas still 1,2,3", s.replicas == [1, 2, 3], s.show());
    Ok(())
}

/// Runs one step under a producer: --execute, --verify until complete, the observer watched
/// throughout and for a lag period after. Returns the instant the step completed.
fn run_step(x: &mut Ctx, o: &mut ScenarioResult, step: &Step, acked: &mut usize) -> Result<Option<Instant>> {
    let tag = step.label;
    let boot = x.c.bootstrap(&[]);
    let producer = x.c.tools.spawn(Tool::Perf, &perf_args(&boot, STEP_RECORDS, STEP_RATE), None)?;
    x.c.journal.note(&format!("{tag}: producer started ({STEP_RECORDS} records at {STEP_RATE}/s, acks=all)"));
    std::thread::sleep(Duration::from_secs(2));
    let t0 = Instant::now();
    let exec = x.c.reassign(TOPIC, step.target, "--execute")?;
    o.fact(&format!("{tag}_execute_seconds"), round(exec.secs));
    o.check(&format!("{tag}: {} accepted (--execute)", step.what), exec.ok(), format!("rc {}", exec.rc));
    let (done, mut in_isr, last_status) =
        await_reassignment(x, TOPIC, step.target, t0, COMPLETE_WITHIN, |s| s.in_isr(OBSERVER))?;
    let secs = t0.elapsed().as_secs_f64();
    // How far behind each target was when the reassignment was seen complete: an observer target
    // may still be copying the log (it is not waited for); every other one is in the ISR.
    let mut leo = serde_json::Map::new();
    for b in [1, 2, 3, OBSERVER].into_iter().filter(|b| step.target.contains(b)) {
        leo.insert(b.to_string(), serde_json::json!(x.c.probe_leo(b, TOPIC)));
    }
    o.fact(&format!("{tag}_log_end_offsets_at_completion"), leo);
    o.fact(&format!("{tag}_complete_seconds"), done.map(|_| round(secs)));
    o.check(
        &format!("{tag}: the reassignment completes (--verify)"),
        done.is_some(),
        match done {
            Some(_) => format!("{secs:.1} s after --execute"),
            None => format!("not within {:.0} s; last --verify: {last_status:?}", COMPLETE_WITHIN.as_secs_f64()),
        },
    );
    // The observer stays out of the ISR for a lag period after completion, too.
    let (polls, after) = x.c.watch(TOPIC, x.lag() + Duration::from_secs(2), |s| s.in_isr(OBSERVER))?;
    in_isr.extend(after);
    o.check(
        &format!("{tag}: broker 4 never in the ISR, during the reassignment and a lag period after"),
        in_isr.is_empty(),
        if in_isr.is_empty() { format!("{polls} polls after completion") } else { super::polls_summary(&in_isr) },
    );
    let s = x.state(TOPIC)?;
    o.fact(&format!("{tag}_state"), s.show());
    let mut want = step.target.to_vec();
    want.sort_unstable();
    let mut have = s.replicas.clone();
    have.sort_unstable();
    o.check(&format!("{tag}: replicas are the target"), have == want, s.show());
    let primaries: Vec<i32> = step.target.iter().copied().filter(|r| *r != OBSERVER).collect();
    o.check(
        &format!("{tag}: every primary of the target is in the ISR"),
        primaries.iter().all(|p| s.in_isr(*p)),
        s.show(),
    );
    *acked += finish_producer(x, o, tag, producer, STEP_RECORDS, true)?;
    count_matches(x, o, tag, *acked)?;
    Ok(done)
}

/// Polls the reassignment of partition 0 of `topic` to `target` (submitted at `t0`) until
/// `--verify` says complete or `within` has passed since `t0`, probing four times between two
/// `--verify`s: when it completed (None: not within), every probe `bad` held for (`+S s STATE`),
/// and the last `--verify` status.
pub(super) fn await_reassignment(
    x: &mut Ctx,
    topic: &str,
    target: &[i32],
    t0: Instant,
    within: Duration,
    bad: impl Fn(&PartitionState) -> bool,
) -> Result<(Option<Instant>, Vec<String>, Option<ReassignStatus>)> {
    let mut seen = Vec::new();
    let mut last_status = None;
    while t0.elapsed() < within {
        for _ in 0..4 {
            if let Some(s) = x.c.probe_state(topic) {
                if bad(&s) {
                    seen.push(format!("+{:.1}s {}", t0.elapsed().as_secs_f64(), s.show()));
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let verify = x.c.reassign(topic, target, "--verify")?;
        last_status = parse_reassign_status(&verify.stdout, topic, 0);
        if last_status == Some(ReassignStatus::Complete) {
            return Ok((Some(Instant::now()), seen, last_status));
        }
    }
    Ok((None, seen, last_status))
}

/// The records written before any reassignment, unthrottled; returns how many were acked.
fn prefill(x: &mut Ctx, o: &mut ScenarioResult) -> Result<usize> {
    let boot = x.c.bootstrap(&[]);
    let producer = x.c.tools.spawn(Tool::Perf, &perf_args(&boot, PREFILL, 0), None)?;
    let acked = finish_producer(x, o, "prefill", producer, PREFILL, false)?;
    count_matches(x, o, "prefill", acked)?;
    Ok(acked)
}

/// ProducerPerformance with acks=all to `ra`; rate 0 means unthrottled.
fn perf_args(boot: &str, n: usize, rate: usize) -> Vec<String> {
    let props = format!("bootstrap.servers={boot}");
    let rate = if rate == 0 { "-1".to_string() } else { rate.to_string() };
    args(&[
        "--topic",
        TOPIC,
        "--num-records",
        &n.to_string(),
        "--throughput",
        &rate,
        "--record-size",
        "100",
        "--producer-props",
        &props,
        "acks=all",
        "linger.ms=5",
    ])
}

/// Waits for a producer, journals it, and checks every record acked and, for a rate-limited one
/// (`paced`: its latency is the broker's, not a send queue's), no write stalled; returns how many
/// were acked (all `n`, or 0 when any failed).
fn finish_producer(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    tag: &str,
    producer: Running,
    n: usize,
    paced: bool,
) -> Result<usize> {
    let out = producer.finish(Duration::from_secs(120));
    x.c.journal.tool(Tool::Perf.label(), &out);
    let p = parse_perf(&out.stdout);
    // ProducerPerformance prints each failed send's stack trace; 2.x also counts it as sent.
    let errors = out.stderr.lines().filter(|l| l.contains("Exception")).count();
    let all = out.ok() && errors == 0 && p.as_ref().is_some_and(|p| p.records == n as u64);
    o.fact(&format!("{tag}_producer"), &p);
    o.check(
        &format!("{tag}: {n} records acked with acks=all, 0 errors"),
        all,
        format!("rc {}, {errors} exception lines, {p:?}", out.rc),
    );
    // The 99.9th percentile, not the maximum: the slowest record is the first, which also waits
    // for the producer's start-up (metadata, producer id); a stall of the partition delays every
    // record sent during it, at 200/s dozens per 100 ms.
    if paced {
        let limit = x.c.timers.lag_ms as f64;
        o.check(
            &format!("{tag}: writes never stalled (p99.9 acks=all latency < {limit:.0} ms, replica.lag.time.max.ms)"),
            p.as_ref().is_some_and(|p| p.p999_ms < limit),
            p.as_ref()
                .map(|p| {
                    format!("p50 {} ms, p99 {} ms, p99.9 {} ms, max {} ms", p.p50_ms, p.p99_ms, p.p999_ms, p.max_ms)
                })
                .unwrap_or_default(),
        );
    }
    Ok(if all { n } else { 0 })
}

/// Nothing lost, nothing doubled: the consumer reads exactly the acked count, and the end
/// offset equals it.
fn count_matches(x: &mut Ctx, o: &mut ScenarioResult, tag: &str, acked: usize) -> Result<()> {
    let read = x.c.consume(TOPIC, acked, false, &[])?.len();
    let end = x.c.end_offset(TOPIC, &[])?;
    o.fact(&format!("{tag}_read_back"), serde_json::json!({"acked": acked, "read": read, "end_offset": end}));
    o.check(
        &format!("{tag}: the consumer reads every acked record, and the end offset equals the acked count"),
        read == acked && end == Some(acked as i64),
        format!("acked {acked}, read {read}, end offset {end:?}"),
    );
    Ok(())
}

/// `broker` holds the whole log once the step is done: its log end offset equals the leader's
/// (okp's probe), then its segment equals the leader's byte for byte.
fn whole_log(x: &mut Ctx, o: &mut ScenarioResult, broker: i32, done: Instant) -> Result<()> {
    let leader = x.state(TOPIC)?.leader.unwrap_or(1);
    let t0 = Instant::now();
    let mut last = (None, None);
    while t0.elapsed() < Duration::from_secs(30) {
        last = (x.c.probe_leo(leader, TOPIC), x.c.probe_leo(broker, TOPIC));
        if last.0.is_some() && last.0 == last.1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // The producer stopped before this check, so equal offsets mean the whole log.
    o.fact(&format!("broker{broker}_whole_log_checked_seconds_after_completion"), round(done.elapsed().as_secs_f64()));
    o.check(
        &format!("broker {broker}'s log end offset equals leader {leader}'s"),
        last.0.is_some() && last.0 == last.1,
        format!("leader {:?}, broker {broker} {:?}", last.0, last.1),
    );
    let (same, secs) = x.c.wait_replica_identical(broker, leader, TOPIC, Duration::from_secs(20));
    o.check(
        &format!("broker {broker}'s segment is byte-identical to the leader's"),
        same,
        format!(
            "after {secs:.1} s: {:?} vs {:?}",
            x.c.segment_digest(leader, TOPIC),
            x.c.segment_digest(broker, TOPIC)
        ),
    );
    Ok(())
}

/// Removing the observer works as upstream: its replica of ra is deleted from its disk.
fn observer_replica_deleted(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let dir = x.c.node(OBSERVER).dir.join("data").join(format!("{TOPIC}-0"));
    let t0 = Instant::now();
    while dir.exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(250));
    }
    o.check(
        "remove: broker 4 deleted its replica of ra",
        !dir.exists(),
        format!("{} after {:.1} s", if dir.exists() { "still there" } else { "gone" }, t0.elapsed().as_secs_f64()),
    );
    Ok(())
}

fn last_line(s: &str) -> String {
    s.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
}
