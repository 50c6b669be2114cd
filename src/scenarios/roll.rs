//! ROLL: adoption without downtime, with the artifact an operator deploys.
//! Every node of a patched run starts from its own Kafka home with the signed
//! bundle installed (cluster/homes.rs); ROLL rolls it off and on again, one
//! node at a time with a controlled restart. First the cluster before adoption:
//! every node stopped at once, put back on the release's own jars and started
//! (no observer named); then, with a producer and a consumer running through
//! all of it (okp's OkpSoakClient: idempotent acks=all, and read_committed),
//! `okp install` rolling, the observer named, `okp rollback` rolling. Each node
//! stays down until writes have been acked without it; at the end the producer
//! has 0 errors and the consumer has read every acked record once, at the
//! offset it was acked at.
//! It runs last and leaves the cluster on the release's jars.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{Ctx, Flavor, ScenarioResult};
use crate::cluster::client::{self, Client, Said};
use crate::cluster::homes;
use crate::cluster::node::Role;
use crate::cluster::OBSERVER;
use crate::error::Result;

const PRIMARIES: [i32; 3] = [1, 2, 3];
/// The producer sends one record every this many milliseconds (50 a second).
const SEND_MS: u64 = 20;
/// Acks that must arrive with a node down (or the observer just named) before the roll goes on.
pub(super) const ACKS_IN_WINDOW: usize = 25;
/// How long the roll waits for them.
const WINDOW_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Install,
    Rollback,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Install => "install",
            Action::Rollback => "rollback",
        }
    }
}

pub fn roll(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    if x.flavor == Flavor::Upstream || x.c.bundle.is_none() {
        o.check("ROLL needs a patched run (the bundle installed in every node's home)", false, "none here");
        return Ok(());
    }
    let controllers = x.c.controllers();
    let brokers: Vec<i32> = x.c.nodes.iter().filter(|n| n.role == Role::Broker).map(|n| n.id).collect();
    // Upgrades go controllers first, downgrades brokers first.
    let up: Vec<i32> = controllers.iter().chain(&brokers).copied().collect();
    let down: Vec<i32> = brokers.iter().chain(&controllers).copied().collect();
    let all = x.c.kafka_nodes();

    // 0. Before adoption there is no observer: 4 is an ordinary follower.
    x.c.set_observers(&all, "")?;
    let t = x.lag() + x.ttl() + Duration::from_secs(20);
    x.wait(o, "obs", t, "no observer named: 4 joins the ISR", "unnamed_seconds", |s| s.in_isr(OBSERVER))?;

    // 1. The cluster before adoption: every node back on the release's jars, all at once (the
    //    state the operator starts from is set up here, not proven; step 4 proves a rolling
    //    rollback under writes).
    let secs = cold_start_on_release_jars(x, o, &down, &up)?;
    o.fact("cold_start_seconds", secs);
    let traffic = Traffic::start(x, "ROLL")?;
    let (acks, secs) = traffic.acks_since(0);
    o.check(
        "before adoption: the producer's acks=all writes are acked and the consumer runs",
        acks >= ACKS_IN_WINDOW,
        format!("{acks} acks in {secs:.1} s"),
    );
    // 2. Adoption: okp install, one node at a time, writes in every state.
    let secs = roll_through(x, o, &traffic, &up, Action::Install, "install")?;
    o.fact("install_seconds", secs);
    x.wait(
        o,
        "obs",
        t,
        "installed everywhere, no observer named yet: 4 still in the ISR",
        "installed_isr_seconds",
        |s| s.in_isr(OBSERVER),
    )?;
    // 3. Name the observer.
    x.c.set_observers(&all, "4\n")?;
    x.wait(o, "obs", t, "observer named: 4 leaves the ISR, a primary leads", "named_seconds", |s| {
        !s.in_isr(OBSERVER) && s.leader.is_some_and(|l| l != OBSERVER)
    })?;
    let (acks, secs) = traffic.acks_since(traffic.ms());
    o.check(
        "observer named: acks=all writes go on without it",
        acks >= ACKS_IN_WINDOW,
        format!("{acks} acks in {secs:.1} s"),
    );
    // 4. Rolling rollback with the observer named: back on the release's jars the file is ignored.
    let secs = roll_through(x, o, &traffic, &down, Action::Rollback, "rollback")?;
    o.fact("rollback_seconds", secs);
    x.wait(
        o,
        "obs",
        t,
        "rolled back everywhere: the release ignores observer.ids, 4 rejoins the ISR",
        "rejoin_seconds",
        |s| s.in_isr(OBSERVER),
    )?;
    traffic.finish(x, o, "roll_traffic");
    x.read_back(o, "ROLL", &[])?;
    Ok(())
}

/// Every node killed, `okp rollback` on each home, every node started again (controllers first);
/// done when the primaries are back in obs's ISR. Returns its seconds.
fn cold_start_on_release_jars(x: &mut Ctx, o: &mut ScenarioResult, down: &[i32], up: &[i32]) -> Result<f64> {
    let t0 = std::time::Instant::now();
    let mut failed = Vec::new();
    for &id in down {
        x.c.kill9(id);
    }
    let want = expected_digests(x, Action::Rollback);
    for &id in down {
        let name = x.c.node(id).name.clone();
        let Some(home) = x.c.node(id).home.clone() else {
            failed.push(format!("{name}: no Kafka home"));
            continue;
        };
        let ran = x.c.okp_on_home(Action::Rollback.word(), &home)?;
        if !ran.ok() {
            failed.push(format!("{name}: okp rollback exit {}: {}", ran.rc, ran.stderr.trim()));
        }
        let have = homes::replaced_jar_digests(&x.c.rt, &home);
        x.c.journal.note(&format!("{name} jars after okp rollback: {have:?}"));
        if have != want {
            failed.push(format!("{name}: jars {have:?}, expected {want:?}"));
        }
    }
    for &id in up {
        x.c.start_node(id)?;
    }
    for &id in up {
        x.c.wait_node_ready(id)?;
    }
    let t = x.lag() + Duration::from_secs(60);
    let (s, _) = x.c.wait_state("obs", t, |s| PRIMARIES.iter().all(|p| s.in_isr(*p)), |_| {})?;
    if s.is_none() {
        failed.push(format!("the primaries were not all in obs's ISR within {:.0} s of the start", t.as_secs_f64()));
    }
    let secs = super::round(t0.elapsed().as_secs_f64());
    o.check(
        &format!(
            "the cluster before adoption: {} nodes stopped, okp rollback on each home, started on the release's jars",
            down.len()
        ),
        failed.is_empty(),
        if failed.is_empty() { format!("{secs:.1} s") } else { failed.join("; ") },
    );
    Ok(secs)
}

/// One rolling pass of `action` over `order`, `traffic` running; returns its seconds. Each node
/// stays down until the producer has had `ACKS_IN_WINDOW` acks without it.
fn roll_through(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    traffic: &Traffic,
    order: &[i32],
    action: Action,
    label: &str,
) -> Result<f64> {
    let t0 = Instant::now();
    let mut failed = Vec::new();
    let mut windows = Vec::new();
    let want = expected_digests(x, action);
    for &id in order {
        let name = x.c.node(id).name.clone();
        let Some(home) = x.c.node(id).home.clone() else {
            failed.push(format!("{name}: no Kafka home"));
            continue;
        };
        x.c.stop(id);
        let down = traffic.ms();
        let ran = x.c.okp_on_home(action.word(), &home)?;
        if !ran.ok() {
            failed.push(format!("{name}: okp {} exit {}: {}", action.word(), ran.rc, ran.stderr.trim()));
        }
        let have = homes::replaced_jar_digests(&x.c.rt, &home);
        x.c.journal.note(&format!("{name} jars after okp {}: {have:?}", action.word()));
        if have != want {
            failed.push(format!("{name}: jars {have:?}, expected {want:?}"));
        }
        // Writes go on while the node is down.
        let (acks, secs) = traffic.acks_since(down);
        x.c.journal.note(&format!("{name} down: {acks} acks=all writes acked in {secs:.1} s"));
        windows.push(format!("{name} {acks} in {secs:.1} s"));
        if acks < ACKS_IN_WINDOW {
            failed.push(format!("{name} down: {acks} acks within {:.0} s", WINDOW_TIMEOUT.as_secs_f64()));
        }
        x.c.restart(id)?;
        let t = x.lag() + Duration::from_secs(60);
        let (s, _) = x.c.wait_state(
            "obs",
            t,
            &|s: &crate::cluster::tools::PartitionState| PRIMARIES.iter().all(|p| s.in_isr(*p)),
            |_| {},
        )?;
        if s.is_none() {
            failed.push(format!(
                "after {name}'s restart the primaries were not all in the ISR within {:.0} s",
                t.as_secs_f64()
            ));
        }
    }
    let secs = super::round(t0.elapsed().as_secs_f64());
    o.fact(&format!("{label}_acks_while_down"), &windows);
    o.check(
        &format!(
            "rolling {label} over {} nodes, each down until {ACKS_IN_WINDOW} acks=all writes were acked without it",
            order.len()
        ),
        failed.is_empty(),
        if failed.is_empty() {
            format!("{secs:.1} s; acks while down: {}", windows.join(", "))
        } else {
            failed.join("; ")
        },
    );
    Ok(secs)
}

/// The producer and the consumer that run through a roll (ROLL, UPGRADE): okp's OkpSoakClient,
/// one idempotent acks=all record every `SEND_MS` to obs's partition 0, and a read_committed
/// reader of partition 0 from offset 0 (assign mode, no group).
pub(super) struct Traffic {
    t0: Instant,
    producer: Client,
    consumer: Client,
    /// The producer's records are `<name>-live-000000`, `<name>-live-000001`, …
    producer_name: String,
}

impl Traffic {
    /// Starts both clients; `name` (the scenario's id) names their records and processes.
    pub(super) fn start(x: &mut Ctx, name: &str) -> Result<Traffic> {
        let t0 = Instant::now();
        let boot = x.c.bootstrap(&[]);
        let producer_name = format!("{name}-live");
        let consume: Vec<String> = ["consume", &boot, "obs", &format!("{name}-rc")].map(String::from).to_vec();
        let lower = name.to_ascii_lowercase();
        let consumer = x.c.spawn_okp_client(&format!("{lower}-consumer"), &consume, t0)?;
        let produce: Vec<String> =
            ["produce", &boot, "obs", &producer_name, "true", &SEND_MS.to_string()].map(String::from).to_vec();
        let producer = x.c.spawn_okp_client(&format!("{lower}-producer"), &produce, t0)?;
        Ok(Traffic { t0, producer, consumer, producer_name })
    }

    /// The producer's ack latencies (ms, as it measured them) of the acks that arrived in
    /// [`from`, `to`) ms since the start, sorted.
    pub(super) fn latencies(&self, from: u64, to: u64) -> Vec<f64> {
        let mut ms: Vec<f64> = self
            .producer
            .lines_from(0)
            .iter()
            .filter(|l| l.t_ms >= from && l.t_ms < to)
            .filter_map(|l| match client::parse(&l.text) {
                Some(Said::Ack { micros: Some(us), .. }) => Some(us as f64 / 1000.0),
                _ => None,
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms
    }

    /// Acks that arrived in [`from`, `to`) ms since the start.
    pub(super) fn acks_between(&self, from: u64, to: u64) -> usize {
        self.producer.count_since("ack", from).saturating_sub(self.producer.count_since("ack", to))
    }

    pub(super) fn ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// Waits up to `WINDOW_TIMEOUT` for `ACKS_IN_WINDOW` acks that arrived at or after `since`
    /// (ms); the acks counted and the seconds waited.
    pub(super) fn acks_since(&self, since: u64) -> (usize, f64) {
        let t = Instant::now();
        loop {
            let acks = self.producer.count_since("ack", since);
            if acks >= ACKS_IN_WINDOW || t.elapsed() > WINDOW_TIMEOUT {
                return (acks, t.elapsed().as_secs_f64());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the producer (everything in flight answered), lets the consumer catch up with the
    /// last ack, stops it, and judges both; the acked records join the scenario's ledger.
    pub(super) fn finish(self, x: &mut Ctx, o: &mut ScenarioResult, fact: &str) {
        let Traffic { producer, consumer, producer_name, .. } = self;
        let (sent_lines, producer_done) = producer.stop(Duration::from_secs(60));
        let (mut acked, mut errors, mut notes) = (Vec::new(), Vec::new(), Vec::new());
        for l in &sent_lines {
            match client::parse(&l.text) {
                Some(Said::Ack { value, offset, .. }) => acked.push((value, offset)),
                Some(Said::Err { value, error }) => errors.push(format!("{value}: {error}")),
                Some(Said::Note(n)) => notes.push(n),
                _ => {}
            }
        }
        let last = acked.iter().map(|(_, off)| *off).max().unwrap_or(-1);
        let t = Instant::now();
        while consumer.last_read_offset().unwrap_or(-1) < last && t.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let (read_lines, consumer_done) = consumer.stop(Duration::from_secs(30));
        let mut at: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        let mut sessions = 0;
        for l in &read_lines {
            match client::parse(&l.text) {
                Some(Said::Read { offset, value, session, .. }) => {
                    at.entry(offset).or_default().push(value);
                    sessions = sessions.max(session + 1);
                }
                Some(Said::Note(n)) => notes.push(format!("consumer: {n}")),
                _ => {}
            }
        }
        let mut offsets_of: BTreeMap<&str, usize> = BTreeMap::new();
        for values in at.values() {
            for v in
                values.iter().filter(|v| v.strip_prefix(producer_name.as_str()).is_some_and(|r| r.starts_with('-')))
            {
                *offsets_of.entry(v.as_str()).or_default() += 1;
            }
        }
        let missing = acked.iter().filter(|(_, off)| !at.contains_key(off)).count();
        let misplaced = acked.iter().filter(|(v, off)| at.get(off).is_some_and(|vs| vs.iter().any(|r| r != v))).count();
        let reread = at.values().filter(|vs| vs.len() > 1).count();
        let duplicated = offsets_of.values().filter(|n| **n > 1).count();
        x.sent += acked.len() + errors.len();
        x.ledger.extend(acked.iter().map(|(v, _)| v.clone()));
        o.fact(
            fact,
            serde_json::json!({
                "acked": acked.len(), "errors": errors.len(), "notes": notes,
                "read": read_lines.len(), "consumer_sessions": sessions, "last_acked_offset": last,
                "missing": missing, "misplaced": misplaced, "reread": reread, "duplicated": duplicated,
            }),
        );
        x.c.journal.note(&format!(
            "{fact}: {} acked, {} errors, notes {notes:?}; consumer read {} lines in {sessions} session(s)",
            acked.len(),
            errors.len(),
            read_lines.len()
        ));
        o.check(
            "the producer ran through the whole roll: every acks=all write acked, 0 errors, never made anew",
            errors.is_empty() && notes.iter().all(|n| n.starts_with("consumer:")) && producer_done && !acked.is_empty(),
            format!(
                "{} acked, {} errors{}{}",
                acked.len(),
                errors.len(),
                errors.first().map(|e| format!(" (first: {e})")).unwrap_or_default(),
                if producer_done { "" } else { "; it did not finish by itself" }
            ),
        );
        o.check(
            "the read_committed consumer read every acked record once, at the offset it was acked at",
            missing == 0 && misplaced == 0 && reread == 0 && duplicated == 0 && consumer_done,
            format!(
                "{} acked; missing {missing}, at another offset {misplaced}, an offset read twice {reread}, a value at two offsets {duplicated}{}",
                acked.len(),
                if consumer_done { "" } else { "; the consumer did not finish by itself" }
            ),
        );
    }
}

/// The jars a home holds after `action`: the bundle's after install, Maven Central's after rollback.
fn expected_digests(x: &Ctx, action: Action) -> Vec<(String, String)> {
    x.c.rt
        .swapped
        .iter()
        .map(|(up, _, patched_sha)| {
            let name = up.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let digest = match action {
                Action::Install => patched_sha.clone(),
                Action::Rollback => crate::fsx::read::read_regular(up, crate::fsx::read::MAX_JAR)
                    .map(|b| crate::hash::sha256(&b))
                    .unwrap_or_default(),
            };
            (name, digest)
        })
        .collect()
}
