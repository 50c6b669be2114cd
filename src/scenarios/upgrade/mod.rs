//! UPGRADE: a patched cluster of release A with observers rolled, node by node, to patched
//! release B under an idempotent acks=all producer and a read_committed consumer, the way an
//! operator does it (`plan`): each node stopped, given B's Kafka home with B's signed bundle
//! installed by `okp install`, started; KRaft controllers first; in the middle, with releases
//! mixed, `okp observers status`, a promotion and a demotion, and one broker rolled back to A and
//! forward again; then the finalisation (ZooKeeper: the protocol pin lifted in a second roll;
//! KRaft: metadata.version raised with B's kafka-features), and a last status.
//!
//! Broker 4 is observed two ways at once: the cluster-wide id makes it an observer of `obs`, a
//! topic rule makes it a full replica of `ufull`. After every step: 4 outside obs's ISR and
//! leading nothing there (watched), inside ufull's ISR, the primaries back in obs's ISR, acks
//! going on while the node was down. At the end: 0 producer errors, every acked record read
//! once at the offset it was acked at, the observer's copy of obs byte-identical to the leader's.
//! It runs alone (`--upgrade-to B`) and leaves the cluster on B.

mod plan;

pub use plan::{level, plan, refuse, runbook, Finalize, Step};

use std::time::{Duration, Instant};

use super::roll::{Traffic, ACKS_IN_WINDOW};
use super::{round, Ctx, Flavor, ScenarioResult};
use crate::cluster::node::Role;
use crate::cluster::tools::{PartitionState, Tool};
use crate::cluster::OBSERVER;
use crate::error::Result;
use crate::model::Mode;
use crate::version::KafkaVersion;

/// The topic 4 fully replicates by a topic rule while it observes `obs` by the cluster-wide id.
const FULL: &str = "ufull";
const RULES: &str = "4\ntopic:ufull observers=none\n";
/// The observer promoted: no cluster-wide id, the rule unchanged.
const PROMOTED: &str = "topic:ufull observers=none\n";
/// The topic created while releases are mixed, the observer listed first.
const MIXED: &str = "umixed";
const PRIMARIES: [i32; 3] = [1, 2, 3];
/// The producer's first acks left out of the latency baseline (ms since it started).
pub(super) const BASELINE_FROM_MS: u64 = 5_000;
/// How long obs is watched after each step for 4 in its ISR or leading.
const HOLD: Duration = Duration::from_secs(2);

pub fn upgrade(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    if x.c.next.is_none() {
        o.check("UPGRADE needs a release to roll to (okp verify --upgrade-to VERSION)", false, "none given");
        return Ok(());
    }
    if x.flavor == Flavor::Upstream || x.c.bundle.is_none() {
        o.check("UPGRADE needs a patched run (the bundle installed in every node's home)", false, "none here");
        return Ok(());
    }

    let all = x.c.kafka_nodes();
    x.c.set_observers(&all, RULES)?;
    x.settle_observers();
    let out = x.c.create_topic(FULL, "1:2:4", &["min.insync.replicas=2"])?;
    o.check(
        "topic ufull created on 1:2:4 with `4` and `topic:ufull observers=none`",
        out.ok(),
        format!("rc {}", out.rc),
    );
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.wait(o, FULL, t, "before the roll: 4 in ufull's ISR (a full replica by its rule)", "full_join_seconds", |s| {
        s.in_isr(OBSERVER)
    })?;
    x.wait(o, "obs", t, "before the roll: 4 outside obs's ISR (an observer)", "observer_out_seconds", |s| {
        !s.in_isr(OBSERVER) && PRIMARIES.iter().all(|p| s.in_isr(*p))
    })?;

    if x.c.mode == Mode::Kraft {
        o.fact(
            "controllers",
            if x.tuning.upstream_controllers { "B's own jars (negative control)" } else { "patched" },
        );
    }
    let traffic = Traffic::start(x, "UPGRADE")?;
    let (acks, secs) = traffic.acks_since(0);
    o.check(
        &format!("before the roll, all on {}: acks=all writes acked and the consumer runs", x.c.rt.version),
        acks >= ACKS_IN_WINDOW,
        format!("{acks} acks in {secs:.1} s"),
    );
    // The baseline: ten seconds of acks on A alone, after the producer's first five (its
    // connections and the JVM's warm-up would otherwise make the p99).
    std::thread::sleep(Duration::from_millis(BASELINE_FROM_MS + 10_000u64.saturating_sub(traffic.ms())));
    let roll_from = traffic.ms();

    let mut phases = Vec::new();
    o.fact("from", x.c.rt.version.to_string());
    let b = roll_every_hop(x, o, &traffic, &mut phases)?;
    o.fact("to", b.to_string());
    let roll_to = traffic.ms();
    o.fact("phases", &phases);

    latency_fact(x, o, &traffic, roll_from, roll_to);
    traffic.finish(x, o, "upgrade_traffic");
    x.read_back(o, "UPGRADE", &[])?;
    let leader = x.state("obs")?.leader.unwrap_or(1);
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, leader, "obs", Duration::from_secs(45));
    o.check(
        &format!("on {b}: observer 4's copy of obs is byte-identical to leader {leader}'s"),
        same,
        format!("{secs:.1} s"),
    );
    // Leave the cluster as the suite expects: observer.ids `4`, ufull gone.
    let deleted = x.c.delete_topic_and_wait(FULL, Duration::from_secs(60)).unwrap_or(false);
    o.check("clean-up: topic ufull deleted", deleted, "");
    x.c.set_observers(&all, "4\n")?;
    Ok(())
}

/// Every hop of `--upgrade-to` in turn (each release adopted as the cluster's own before the
/// next hop), `traffic` running throughout; the last release.
pub(super) fn roll_every_hop(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    traffic: &Traffic,
    phases: &mut Vec<serde_json::Value>,
) -> Result<KafkaVersion> {
    loop {
        let b = roll(x, o, traffic, phases)?;
        if !x.c.adopt_next() {
            return Ok(b);
        }
    }
}

/// One hop, A (the cluster's release) → B (`Cluster::next`), every step of `plan` with the
/// invariants after each; its phases appended to `phases`. Returns B.
pub(super) fn roll(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    traffic: &Traffic,
    phases: &mut Vec<serde_json::Value>,
) -> Result<KafkaVersion> {
    let Some(b) = x.c.next.as_ref().map(|n| n.version()) else {
        return Err(crate::error::Error::Harness("no release to roll to".into()));
    };
    let a = x.c.rt.version;
    let mode = x.c.mode;
    let controllers = x.c.controllers();
    let brokers: Vec<i32> = x.c.nodes.iter().filter(|n| n.role == Role::Broker).map(|n| n.id).collect();
    let steps = plan(mode, a, b, &controllers, &brokers);
    x.c.journal.note(&runbook(mode, a, b, &steps, &controllers));

    let roll_from = traffic.ms();
    let mut failed_steps = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let label = format!("step {} ({})", i + 1, show(step));
        x.c.journal.note(&format!("UPGRADE {label}"));
        let t0 = Instant::now();
        let from_ms = traffic.ms();
        let problems = run_step(x, o, traffic, step, a, b)?;
        let held = invariants(x)?;
        let lag = observer_lag(x);
        let releases: Vec<String> =
            x.c.kafka_nodes().iter().map(|&id| format!("{id}:{}", x.c.release_of(id))).collect();
        let secs = round(t0.elapsed().as_secs_f64());
        let acks = traffic.acks_between(from_ms, traffic.ms());
        phases.push(serde_json::json!({
            "hop": format!("{a} → {b}"), "step": show(step), "seconds": secs, "acks": acks, "observer_lag": lag,
            "releases": releases.join(" "), "problems": problems, "obs_watch": held,
        }));
        let ok = problems.is_empty() && held.is_empty();
        if !ok {
            failed_steps
                .push(format!("{label}: {}", problems.iter().chain(&held).cloned().collect::<Vec<_>>().join("; ")));
        }
        x.c.journal.note(&format!(
            "UPGRADE {label} done in {secs:.1} s: {acks} acks, observer lag {lag:?}, {}; {}",
            releases.join(" "),
            if ok { "every check held".to_string() } else { format!("FAILED: {problems:?} {held:?}") }
        ));
    }
    let roll_to = traffic.ms();
    o.check(
        &format!(
            "every step of the roll {a} → {b} ({} steps): 4 never in obs's ISR nor leading it (watched {:.0} s after each), in ufull's ISR, the primaries in obs's ISR, writes acked while each node was down",
            steps.len(),
            HOLD.as_secs_f64()
        ),
        failed_steps.is_empty(),
        if failed_steps.is_empty() {
            format!("{:.1} s in all", (roll_to - roll_from) as f64 / 1000.0)
        } else {
            failed_steps.join(" | ")
        },
    );
    let on_b: Vec<i32> = x.c.kafka_nodes().into_iter().filter(|&id| x.c.release_of(id) == b).collect();
    o.check(
        &format!("every node runs {b} at the end"),
        on_b.len() == x.c.kafka_nodes().len(),
        format!("{} of {} nodes", on_b.len(), x.c.kafka_nodes().len()),
    );
    Ok(b)
}

/// The producer's ack latency before `from` (after its first `BASELINE_FROM_MS`) and in
/// [`from`, `to`), as fact `producer_latency_ms` and a journal line.
pub(super) fn latency_fact(x: &mut Ctx, o: &mut ScenarioResult, traffic: &Traffic, from: u64, to: u64) {
    let before = traffic.latencies(BASELINE_FROM_MS, from);
    let during = traffic.latencies(from, to);
    o.fact(
        "producer_latency_ms",
        serde_json::json!({
            "before": {"acks": before.len(), "p50": pct(&before, 50.0), "p99": pct(&before, 99.0), "max": before.last()},
            "during": {"acks": during.len(), "p50": pct(&during, 50.0), "p99": pct(&during, 99.0), "max": during.last()},
        }),
    );
    x.c.journal.note(&format!(
        "producer ack latency before: p50 {:?} ms p99 {:?} ms over {} acks; during: p50 {:?} ms p99 {:?} ms over {}",
        pct(&before, 50.0),
        pct(&before, 99.0),
        before.len(),
        pct(&during, 50.0),
        pct(&during, 99.0),
        during.len()
    ));
}

/// One step; what went wrong in it (empty: nothing).
fn run_step(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    traffic: &Traffic,
    step: &Step,
    a: KafkaVersion,
    b: KafkaVersion,
) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    match step {
        Step::Upgrade(id) | Step::Downgrade(id) => {
            let id = *id;
            let name = x.c.node(id).name.clone();
            x.c.stop(id);
            let down = traffic.ms();
            if matches!(step, Step::Upgrade(_)) {
                if x.c.mode == Mode::Zk {
                    x.c.set_server_overrides(id, &[&format!("inter.broker.protocol.version={}", level(a))])?;
                }
                // The negative control: B's controllers on B's own jars, the brokers patched.
                let bare = x.tuning.upstream_controllers && x.c.node(id).role == Role::Controller;
                let have = x.c.move_to_next(id, !bare)?;
                let want = expected_next_digests(x);
                x.c.journal.note(&format!("{name}'s {b} home: {have:?}"));
                if have != want && !bare {
                    problems.push(format!("{name}: {b} home jars {have:?}, expected {want:?}"));
                }
            } else {
                x.c.move_back(id)?;
            }
            let (acks, secs) = traffic.acks_since(down);
            x.c.journal.note(&format!("{name} down: {acks} acks=all writes acked in {secs:.1} s"));
            if acks < ACKS_IN_WINDOW {
                problems.push(format!("{name} down: {acks} acks in {secs:.0} s"));
            }
            x.c.restart(id)?;
        }
        Step::Status => {
            let (code, text) = status(x)?;
            if code != Some(0) {
                problems
                    .push(format!("okp observers status exit {code:?}: {}", text.lines().last().unwrap_or("").trim()));
            }
        }
        Step::PromoteDemote => {
            problems.extend(promote_then_demote(x, o, "mixed", "with releases mixed")?);
            x.settle_observers();
            mixed_create(x, o, a, b)?;
        }
        Step::Finalize(Finalize::Protocol { from, to }) => {
            let brokers: Vec<i32> = x.c.nodes.iter().filter(|n| n.role == Role::Broker).map(|n| n.id).collect();
            for id in brokers {
                let name = x.c.node(id).name.clone();
                x.c.stop(id);
                let down = traffic.ms();
                x.c.set_server_overrides(id, &[])?;
                let (acks, secs) = traffic.acks_since(down);
                if acks < ACKS_IN_WINDOW {
                    problems.push(format!("{name} down: {acks} acks in {secs:.0} s"));
                }
                x.c.restart(id)?;
                let t = x.lag() + Duration::from_secs(60);
                let (s, _) =
                    x.c.wait_state("obs", t, |s: &PartitionState| PRIMARIES.iter().all(|p| s.in_isr(*p)), |_| {})?;
                if s.is_none() {
                    problems.push(format!(
                        "after {name}'s restart without the pin the primaries were not all in obs's ISR"
                    ));
                }
            }
            x.c.journal
                .note(&format!("inter.broker.protocol.version {from} → {to} (the default of {b}) on every broker"));
        }
        Step::Finalize(Finalize::Metadata { from, to }) => {
            let before = features(x, &["describe"])?;
            let mut out = features(x, &["upgrade", "--release-version", to])?;
            if !out.0 && (out.1.contains("release-version") || out.1.contains("unrecognized")) {
                out = features(x, &["upgrade", "--metadata", to])?;
            }
            let after = features(x, &["describe"])?;
            let level = finalized_metadata(&after.1);
            o.fact("metadata_version", serde_json::json!({"before": finalized_metadata(&before.1), "after": level}));
            if !out.0 || !level.as_deref().is_some_and(|l| l.starts_with(to.as_str())) {
                problems.push(format!(
                    "metadata.version {from} → {to}: the tool {} and describe reads {level:?}",
                    if out.0 { "exited 0" } else { "failed" }
                ));
            }
        }
        Step::Finalize(Finalize::Nothing { level }) => {
            let now = features(x, &["describe"])?;
            o.fact("metadata_version", serde_json::json!({"unchanged": finalized_metadata(&now.1), "level": level}));
        }
    }
    Ok(problems)
}

/// The observer promoted (every node's observer.ids without the cluster-wide id: 4 joins obs's
/// ISR) and demoted again (it leaves it, a primary leads); the seconds of each as facts
/// `<fact>_promote_seconds` and `<fact>_demote_seconds`. What went wrong, said `when`.
pub(super) fn promote_then_demote(x: &mut Ctx, o: &mut ScenarioResult, fact: &str, when: &str) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let all = x.c.kafka_nodes();
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.c.set_observers(&all, PROMOTED)?;
    let (s, secs) = x.c.wait_state("obs", t, |s: &PartitionState| s.in_isr(OBSERVER), |_| {})?;
    o.fact(&format!("{fact}_promote_seconds"), round(secs));
    if s.is_none() {
        problems.push(format!("promoted {when}: 4 not in obs's ISR within {:.0} s", t.as_secs_f64()));
    }
    x.c.set_observers(&all, RULES)?;
    let (s, secs) = x.c.wait_state(
        "obs",
        t,
        |s: &PartitionState| !s.in_isr(OBSERVER) && s.leader.is_some_and(|l| l != OBSERVER),
        |_| {},
    )?;
    o.fact(&format!("{fact}_demote_seconds"), round(secs));
    if s.is_none() {
        problems.push(format!("demoted {when}: 4 still in obs's ISR after {:.0} s", t.as_secs_f64()));
    }
    Ok(problems)
}

/// With releases mixed (B's controllers, half the brokers on B): a topic created on 4,1,2, the
/// observer listed first, then a preferred election. The controller that decides (B's in KRaft)
/// must keep 4 out of its ISR and leadership; the negative control (B's controllers on B's own
/// jars) must show 4 leading or in the ISR. A check either way; the topic deleted.
fn mixed_create(x: &mut Ctx, o: &mut ScenarioResult, a: KafkaVersion, b: KafkaVersion) -> Result<()> {
    let out = x.c.create_topic(MIXED, "4:1:2", &["min.insync.replicas=2"])?;
    let mut seen = Vec::new();
    let (s, secs) = x.c.wait_state(MIXED, Duration::from_secs(30), |s: &PartitionState| s.leader.is_some(), |_| {})?;
    let after_create = s.map(|s| s.show());
    for (polls, v) in x.c.watch_all(&[MIXED], HOLD + HOLD, |s| s.leader == Some(OBSERVER) || s.in_isr(OBSERVER))? {
        seen.extend(v.into_iter().map(|p| format!("created: {p}")));
        x.c.journal.note(&format!("{MIXED} after its creation: {polls} polls"));
    }
    let elect = x.c.elect(MIXED, "preferred", &[])?;
    for (_, v) in x.c.watch_all(&[MIXED], HOLD + HOLD, |s| s.leader == Some(OBSERVER) || s.in_isr(OBSERVER))? {
        seen.extend(v.into_iter().map(|p| format!("after a preferred election: {p}")));
    }
    let end = x.state(MIXED)?;
    o.fact(
        &format!("mixed_create_{a}_to_{b}"),
        serde_json::json!({
            "rc": out.rc, "leader_seconds": round(secs), "after_create": after_create,
            "preferred_election": super::last_line(&elect.stdout, &elect.stderr), "end": end.show(),
            "observer_led_or_in_isr": seen.len(),
        }),
    );
    let held = out.ok() && after_create.is_some() && seen.is_empty();
    let detail = if seen.is_empty() {
        format!("{} ({:.1} s); after a preferred election: {}", after_create.unwrap_or_default(), secs, end.show())
    } else {
        super::polls_summary(&seen)
    };
    if x.tuning.upstream_controllers {
        o.check(
            &format!("negative control, {a} → {b} mixed: with B's own jars on the controllers, 4 leads or is in the ISR of a topic created with it listed first"),
            !seen.is_empty(),
            if seen.is_empty() { format!("it did not: the control failed; {detail}") } else { detail },
        );
    } else {
        o.check(
            &format!("{a} → {b} mixed: a topic created on 4,1,2 (4 listed first) and a preferred election: 4 outside its ISR, not leading"),
            held,
            detail,
        );
    }
    let deleted = x.c.delete_topic_and_wait(MIXED, Duration::from_secs(60)).unwrap_or(false);
    if !deleted {
        x.c.journal.note(&format!("{MIXED} not deleted within 60 s"));
    }
    Ok(())
}

/// After a step: the primaries back in obs's ISR and 4 back in ufull's (waited), then obs
/// watched for `HOLD`: 4 never in its ISR nor leading. What broke (empty: nothing).
pub(super) fn invariants(x: &mut Ctx) -> Result<Vec<String>> {
    let mut broke = Vec::new();
    let t = x.lag() + x.ttl() + Duration::from_secs(60);
    let (s, _) = x.c.wait_state("obs", t, |s: &PartitionState| PRIMARIES.iter().all(|p| s.in_isr(*p)), |_| {})?;
    if s.is_none() {
        broke.push(format!("the primaries not all in obs's ISR within {:.0} s", t.as_secs_f64()));
    }
    let (f, _) = x.c.wait_state(FULL, t, |s: &PartitionState| s.in_isr(OBSERVER), |_| {})?;
    if f.is_none() {
        broke.push(format!("4 not in ufull's ISR within {:.0} s", t.as_secs_f64()));
    }
    let seen = x.c.watch_all(&["obs"], HOLD, |s| s.in_isr(OBSERVER) || s.leader == Some(OBSERVER))?;
    for (polls, bad) in seen {
        if polls == 0 {
            broke.push("obs: no poll answered".into());
        } else if !bad.is_empty() {
            broke.push(format!(
                "obs: 4 in the ISR or leading in {} of {polls} polls: {}",
                bad.len(),
                super::polls_summary(&bad)
            ));
        }
    }
    Ok(broke)
}

/// obs's high watermark minus observer 4's log end offset (None when either is unreadable;
/// negative when 4 holds records beyond the high watermark, which it may: the HW waits for no
/// observer, but the observer fetches what the leader has).
fn observer_lag(x: &mut Ctx) -> Option<i64> {
    let hw = x.c.probe_hw("obs")?;
    let leo = x.c.probe_leo(OBSERVER, "obs")?;
    Some(hw - leo)
}

/// `okp observers status` over every node's observer.ids: its exit code and output (journaled).
fn status(x: &mut Ctx) -> Result<(Option<i32>, String)> {
    let nodes = x.c.journal.dir().join("UPGRADE-nodes.yaml");
    x.write_nodes_file(&nodes)?;
    let boot = x.c.bootstrap(&[]);
    let args: Vec<String> = ["observers", "status", "--bootstrap", &boot, "--nodes"]
        .iter()
        .map(|s| s.to_string())
        .chain([nodes.display().to_string()])
        .collect();
    let (code, text, _) = super::topic::run_okp(x, &args)?;
    Ok((code, text))
}

/// B's kafka-features with `args` after `--bootstrap-server`: whether it exited 0, and its output.
fn features(x: &mut Ctx, args: &[&str]) -> Result<(bool, String)> {
    let boot = x.c.bootstrap(&[]);
    let mut argv = vec!["--bootstrap-server".to_string(), boot];
    argv.extend(args.iter().map(|s| s.to_string()));
    let Some(next) = x.c.next.as_mut() else { return Ok((false, "no next release".into())) };
    let out = next.tools.run(Tool::Features, &argv, None, Duration::from_secs(120))?;
    x.c.journal.tool(&format!("kafka-features {}", args.join(" ")), &out);
    Ok((out.ok(), format!("{}\n{}", out.stdout, out.stderr)))
}

/// metadata.version's finalized level in kafka-features' describe output.
fn finalized_metadata(describe: &str) -> Option<String> {
    let line = describe.lines().find(|l| l.contains("Feature: metadata.version"))?;
    let at = line.find("FinalizedVersionLevel:")? + "FinalizedVersionLevel:".len();
    line[at..].split_whitespace().next().map(str::to_string)
}

/// The sha256 of each jar B's bundle replaces, as B's build made it.
fn expected_next_digests(x: &Ctx) -> Vec<(String, String)> {
    let Some(next) = x.c.next.as_ref() else { return Vec::new() };
    next.rt
        .swapped
        .iter()
        .map(|(up, _, sha)| (up.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), sha.clone()))
        .collect()
}

fn show(step: &Step) -> String {
    match step {
        Step::Upgrade(id) => format!("upgrade {id}"),
        Step::Downgrade(id) => format!("roll {id} back"),
        Step::Status => "status".into(),
        Step::PromoteDemote => "promote and demote 4".into(),
        Step::Finalize(Finalize::Protocol { to, .. }) => format!("finalise: inter.broker.protocol.version {to}"),
        Step::Finalize(Finalize::Metadata { to, .. }) => format!("finalise: metadata.version {to}"),
        Step::Finalize(Finalize::Nothing { .. }) => "finalise: nothing to raise".into(),
    }
}

/// The `q`th percentile of `sorted` (nearest rank), rounded to 0.01 ms.
fn pct(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(round(sorted[rank.clamp(1, sorted.len()) - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finalized_metadata_level_is_read_from_describe() {
        let out = "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: 9\n\
                   Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.0-IV3\tFinalizedVersionLevel: 3.9-IV0\tEpoch: 9\n";
        assert_eq!(finalized_metadata(out).as_deref(), Some("3.9-IV0"));
        assert_eq!(finalized_metadata("nothing"), None);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(pct(&v, 50.0), Some(50.0));
        assert_eq!(pct(&v, 99.0), Some(99.0));
        assert_eq!(pct(&[3.0], 99.0), Some(3.0));
        assert_eq!(pct(&[], 50.0), None);
    }
}
