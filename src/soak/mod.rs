//! The soak's pure half: the seeded fault schedule and the checker over a
//! journaled history (Jepsen's shape: operations and faults recorded as they
//! happen, judged afterwards). Same seed, same duration → same schedule; the
//! checker verifies what the observer contract and Kafka's own promises say
//! must hold across overlapping faults:
//!
//! - no acknowledged record lost (unless an unclean election, the operator's
//!   explicit choice of data loss, came before the loss: then it is reported
//!   as accepted, not as a violation);
//! - no two different records at one (partition, offset), no record of an
//!   idempotent producer at two offsets, and an acknowledged record at the
//!   offset its acknowledgement gave;
//! - each consumer's offsets strictly increase per partition (within one
//!   consumer session);
//! - the observer never leads and is never in the ISR unless promoted at that
//!   time;
//! - the high watermark never moves backwards;
//! - every process alive, or restarted, at the end.
//!
//! A violation names the seed and the shortest fault window before it (the
//! last fault that started before the violation, to the violation).
//!
//! Not here: driving the cluster and recording the history (`run`), the
//! scenario suite (`scenarios`).

pub mod run;

use std::collections::{BTreeMap, BTreeSet};

/// A soak's length as given on the command line: `600`, `600s`, `10m`, `1h`.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let t = text.trim();
    let (n, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let n: u64 = n.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        _ => return None,
    };
    (secs > 0).then(|| std::time::Duration::from_secs(secs))
}

use crate::schema::{Absent, Schema};

/// The history file's schema (soak-history.json).
pub const SCHEMA: Schema = Schema {
    current: 1,
    absent: Absent::Refused,
    remedy: "it was written by another okp; run the soak again with this okp",
};

/// A fault the schedule can inject.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Fault {
    /// kill -9, restarted after `hold_ms`.
    Kill {
        node: String,
    },
    /// SIGSTOP, SIGCONT after `hold_ms`.
    Pause {
        node: String,
    },
    /// observer.ids edited on every node: `promoted` true makes the observer a full replica.
    ObserverIds {
        promoted: bool,
    },
    /// observer.ids replaced by garbage on one node (the node keeps its last good set).
    ObserverIdsGarbage {
        node: String,
    },
    /// observer.ids deleted on one node (the node keeps its last good set).
    ObserverIdsDeleted {
        node: String,
    },
    PreferredElection,
    /// The operator's explicit choice of data loss.
    UncleanElection,
    /// A reassignment that adds (`add`) or removes the observer from the replicas.
    Reassign {
        add: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScheduledFault {
    pub at_ms: u64,
    pub hold_ms: u64,
    pub fault: Fault,
}

/// splitmix64: a tiny, well-known generator, so a seed means the same schedule on every
/// platform and every okp version that keeps this function.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The fault schedule of `seed` over `duration_ms` for a cluster of these `nodes`: one fault
/// every 10–40 s, held 2–15 s. `unclean` allows unclean elections (the contract's explicit
/// data-loss choice), so only a soak that asks for them gets them.
pub fn schedule(seed: u64, duration_ms: u64, nodes: &[&str], unclean: bool) -> Vec<ScheduledFault> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    let mut t = 10_000 + rng.below(20_000);
    while t + 15_000 < duration_ms {
        let node = || nodes[(rng_pick(seed, t) % nodes.len() as u64) as usize].to_string();
        let kinds = if unclean { 7 } else { 6 };
        let fault = match rng.below(kinds) {
            0 => Fault::Kill { node: node() },
            1 => Fault::Pause { node: node() },
            2 => Fault::ObserverIds { promoted: rng.below(2) == 0 },
            // Garbage or no file at all, by a bit of the pick that does not choose the node.
            3 if (rng_pick(seed, t) >> 40) & 1 == 1 => Fault::ObserverIdsDeleted { node: node() },
            3 => Fault::ObserverIdsGarbage { node: node() },
            4 => Fault::PreferredElection,
            5 => Fault::Reassign { add: rng.below(2) == 0 },
            _ => Fault::UncleanElection,
        };
        out.push(ScheduledFault { at_ms: t, hold_ms: 2_000 + rng.below(13_000), fault });
        t += 10_000 + rng.below(30_000);
    }
    out
}

/// The node a fault at `t` picks: a function of the seed and the time only.
fn rng_pick(seed: u64, t: u64) -> u64 {
    Rng(seed ^ t.rotate_left(17)).next()
}

/// One thing that happened, at `t_ms` since the soak began.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "event")]
pub enum Event {
    /// A send and its outcome: `acked` with the partition and offset the broker gave.
    Send {
        t_ms: u64,
        producer: String,
        idempotent: bool,
        value: String,
        acked: bool,
        partition: i32,
        offset: Option<i64>,
    },
    /// A record a read_committed consumer read; `session` changes when the consumer restarts.
    Read { t_ms: u64, consumer: String, session: u32, partition: i32, offset: i64, value: String },
    /// A fault began (`end_ms` when it was healed).
    Fault { t_ms: u64, end_ms: Option<u64>, fault: Fault },
    /// The observer's role changed (observer.ids took effect everywhere).
    Promoted { t_ms: u64, broker: i32, promoted: bool },
    /// A sample of a partition's state from the controller / leader.
    State {
        t_ms: u64,
        partition: i32,
        leader: Option<i32>,
        isr: Vec<i32>,
        high_watermark: i64,
        /// The assignment (a reassignment in progress shows both sides); empty in histories
        /// written before it was recorded.
        #[serde(default)]
        replicas: Vec<i32>,
    },
    /// A process at the end of the soak.
    Process { t_ms: u64, node: String, alive: bool },
}

impl Event {
    pub fn t_ms(&self) -> u64 {
        match self {
            Event::Send { t_ms, .. }
            | Event::Read { t_ms, .. }
            | Event::Fault { t_ms, .. }
            | Event::Promoted { t_ms, .. }
            | Event::State { t_ms, .. }
            | Event::Process { t_ms, .. } => *t_ms,
        }
    }
}

/// soak-history.json: what a soak recorded, schema 1.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct History {
    pub schema: u32,
    pub seed: u64,
    pub duration_ms: u64,
    pub observer: i32,
    pub events: Vec<Event>,
}

/// The history's file in a soak's evidence: gzip-compressed JSON, one event per line inside
/// (`zcat history.json.gz | grep '"fault"'`). A 30-minute soak has some 25 000 events.
pub const HISTORY_FILE: &str = "history.json.gz";

/// The largest uncompressed history okp reads back (a 30-minute soak's is a few MB).
const MAX_HISTORY: u64 = 256 << 20;

impl History {
    /// The JSON text: the same object `serde_json` reads, each event on a line of its own.
    pub fn to_text(&self) -> String {
        let head = format!(
            "{{\"schema\":{},\"seed\":{},\"duration_ms\":{},\"observer\":{},\"events\":[",
            self.schema, self.seed, self.duration_ms, self.observer
        );
        let events: Vec<String> = self.events.iter().map(|e| serde_json::to_string(e).unwrap_or_default()).collect();
        format!("{head}\n{}\n]}}\n", events.join(",\n"))
    }

    /// Writes `HISTORY_FILE` into `dir` atomically.
    pub fn write(&self, dir: &std::path::Path) -> crate::error::Result<std::path::PathBuf> {
        use std::io::Write;
        let path = dir.join(HISTORY_FILE);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let bytes = gz.write_all(self.to_text().as_bytes()).and_then(|()| gz.finish());
        let bytes = bytes.map_err(|e| crate::error::Error::io("cannot compress the soak history", e))?;
        crate::fsx::write_atomic(&path, &bytes)?;
        Ok(path)
    }

    /// Reads a history written by `write` (or its uncompressed JSON), refusing another schema.
    pub fn read(path: &std::path::Path) -> crate::error::Result<History> {
        use std::io::Read;
        let raw = crate::schema::read_file(path)?;
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(raw.as_slice()).take(MAX_HISTORY + 1).read_to_end(&mut out).map_err(|e| {
                crate::error::Error::Tree { path: path.to_path_buf(), msg: format!("is not gzip data: {e}") }
            })?;
            if out.len() as u64 > MAX_HISTORY {
                return Err(crate::error::Error::Tree {
                    path: path.to_path_buf(),
                    msg: format!("holds over {} MiB of history, more than any soak writes", MAX_HISTORY >> 20),
                });
            }
            out
        } else {
            raw
        };
        SCHEMA.parse(path, &bytes, "an okp soak history")
    }
}

/// What the checker found wrong, with the time it became visible.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Violation {
    Lost {
        value: String,
    },
    TwoRecordsAtOneOffset {
        partition: i32,
        offset: i64,
        values: (String, String),
    },
    Duplicated {
        value: String,
        offsets: (i64, i64),
    },
    /// The broker acknowledged `value` at `offset`, and a read found another record there.
    NotAtAckedOffset {
        value: String,
        partition: i32,
        offset: i64,
        found: String,
    },
    OffsetsWentBack {
        consumer: String,
        partition: i32,
        from: i64,
        to: i64,
    },
    ObserverLeader {
        partition: i32,
    },
    ObserverInIsr {
        partition: i32,
        isr: Vec<i32>,
    },
    HighWatermarkBack {
        partition: i32,
        from: i64,
        to: i64,
    },
    ProcessDown {
        node: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub t_ms: u64,
    pub violation: Violation,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub violations: Vec<Finding>,
    /// Acknowledged records lost after an unclean election: the operator's explicit choice.
    pub accepted_losses: Vec<String>,
    /// Other consequences of an unclean election (offsets reused, a consumer sent back, the HW
    /// going back): accepted for the same reason, listed.
    pub accepted: Vec<Finding>,
    pub acked: usize,
    pub read: usize,
    pub faults: usize,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Checks a history against every rule of the module header.
pub fn check(h: &History) -> Verdict {
    let end = h.events.iter().map(Event::t_ms).max().unwrap_or(0);
    // Unclean elections: the operator's explicit choice of data loss. What they cause (acked
    // records gone, offsets reused by other records, a consumer sent back, the HW going back) is
    // listed as accepted, never as a violation; everything else is checked as always.
    let unclean: Vec<u64> = h
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Fault { t_ms, fault: Fault::UncleanElection, .. } => Some(*t_ms),
            _ => None,
        })
        .collect();
    let mut j = Judge { unclean: &unclean, violations: Vec::new(), accepted: Vec::new() };

    // Reads: what sits at each offset (the latest read wins: after an unclean election the
    // final read is the log as it now is), where each value was read, each consumer's last offset.
    let mut at: BTreeMap<(i32, i64), &str> = BTreeMap::new();
    let mut offsets_of: BTreeMap<&str, BTreeSet<(i32, i64)>> = BTreeMap::new();
    let mut last: BTreeMap<(&str, u32, i32), i64> = BTreeMap::new();
    let mut read = 0;
    for e in &h.events {
        let Event::Read { t_ms, consumer, session, partition, offset, value } = e else { continue };
        read += 1;
        if let Some(other) = at.insert((*partition, *offset), value) {
            if other != value.as_str() {
                let values = (other.to_string(), value.clone());
                j.unless_unclean_before(
                    *t_ms,
                    Violation::TwoRecordsAtOneOffset { partition: *partition, offset: *offset, values },
                );
            }
        }
        offsets_of.entry(value).or_default().insert((*partition, *offset));
        if let Some(prev) = last.insert((consumer, *session, *partition), *offset) {
            if *offset <= prev {
                let (consumer, partition) = (consumer.clone(), *partition);
                j.unless_unclean_before(
                    *t_ms,
                    Violation::OffsetsWentBack { consumer, partition, from: prev, to: *offset },
                );
            }
        }
    }

    // Sends: every acked value read back, at the offset its ack gave; an idempotent producer's
    // value at one offset only. A loss is accepted when an unclean election came after the send.
    let mut accepted_losses = Vec::new();
    let mut acked = 0;
    for e in &h.events {
        let Event::Send { t_ms, idempotent, value, acked: true, partition, offset: acked_at, .. } = e else { continue };
        acked += 1;
        let unclean_after = unclean.iter().any(|u| u >= t_ms);
        let elsewhere = acked_at.filter(|o| at.get(&(*partition, *o)).is_some_and(|v| *v != value.as_str()));
        match (offsets_of.get(value.as_str()), elsewhere) {
            (None, _) | (Some(_), Some(_)) if unclean_after => accepted_losses.push(value.clone()),
            (None, _) => j.violation(end, Violation::Lost { value: value.clone() }),
            (Some(_), Some(offset)) => {
                let found = at.get(&(*partition, offset)).map(|v| v.to_string()).unwrap_or_default();
                let value = value.clone();
                j.violation(end, Violation::NotAtAckedOffset { value, partition: *partition, offset, found });
            }
            (Some(o), None) if *idempotent && o.len() > 1 => {
                let mut it = o.iter();
                let (a, b) = (it.next().map_or(0, |x| x.1), it.next().map_or(0, |x| x.1));
                j.violation(*t_ms, Violation::Duplicated { value: value.clone(), offsets: (a, b) });
            }
            _ => {}
        }
    }

    // States: the observer's role at each sample (never excused, unclean or not), the HW per partition.
    let mut promoted = false;
    let mut hw: BTreeMap<i32, i64> = BTreeMap::new();
    for e in &h.events {
        match e {
            Event::Promoted { broker, promoted: p, .. } if *broker == h.observer => promoted = *p,
            Event::State { t_ms, partition, leader, isr, high_watermark, .. } => {
                if !promoted && *leader == Some(h.observer) {
                    j.violation(*t_ms, Violation::ObserverLeader { partition: *partition });
                }
                if !promoted && isr.contains(&h.observer) {
                    j.violation(*t_ms, Violation::ObserverInIsr { partition: *partition, isr: isr.clone() });
                }
                if let Some(prev) = hw.insert(*partition, *high_watermark) {
                    if *high_watermark < prev {
                        let (partition, to) = (*partition, *high_watermark);
                        j.unless_unclean_before(*t_ms, Violation::HighWatermarkBack { partition, from: prev, to });
                    }
                }
            }
            Event::Process { t_ms, node, alive: false } => {
                j.violation(*t_ms, Violation::ProcessDown { node: node.clone() })
            }
            _ => {}
        }
    }
    let faults = h.events.iter().filter(|e| matches!(e, Event::Fault { .. })).count();
    let Judge { mut violations, accepted, .. } = j;
    violations.sort_by(|a, b| (a.t_ms, &a.violation).cmp(&(b.t_ms, &b.violation)));
    Verdict { violations, accepted_losses, accepted, acked, read, faults }
}

/// Where a finding goes: a violation, or accepted when an unclean election came before it.
struct Judge<'a> {
    unclean: &'a [u64],
    violations: Vec<Finding>,
    accepted: Vec<Finding>,
}

impl Judge<'_> {
    fn violation(&mut self, t_ms: u64, violation: Violation) {
        self.violations.push(Finding { t_ms, violation });
    }

    fn unless_unclean_before(&mut self, t_ms: u64, violation: Violation) {
        if self.unclean.iter().any(|u| *u <= t_ms) {
            self.accepted.push(Finding { t_ms, violation });
        } else {
            self.violation(t_ms, violation);
        }
    }
}

/// The shortest fault window before the first violation: from the start of the last fault
/// that began at or before it, to the violation. None when no fault came before it.
pub fn shortest_window(h: &History, verdict: &Verdict) -> Option<(u64, u64, Fault)> {
    let first = verdict.violations.first()?;
    h.events
        .iter()
        .filter_map(|e| match e {
            Event::Fault { t_ms, fault, .. } if *t_ms <= first.t_ms => Some((*t_ms, first.t_ms, fault.clone())),
            _ => None,
        })
        .max_by_key(|(t, _, _)| *t)
}

/// The lines a failing soak prints: the seed to replay, the window, each violation.
pub fn report(h: &History, verdict: &Verdict) -> String {
    let mut s = format!(
        "soak seed {}: {} acked, {} read, {} faults; {}\n",
        h.seed,
        verdict.acked,
        verdict.read,
        verdict.faults,
        if verdict.ok() { "every rule held" } else { "VIOLATED" }
    );
    if !verdict.accepted_losses.is_empty() {
        s.push_str(&format!(
            "  {} acked records lost after an unclean election (the operator's explicit choice)\n",
            verdict.accepted_losses.len()
        ));
    }
    if !verdict.accepted.is_empty() {
        s.push_str(&format!(
            "  {} more consequences of an unclean election accepted (the operator's explicit choice), e.g. {:?}\n",
            verdict.accepted.len(),
            verdict.accepted[0].violation
        ));
    }
    for f in &verdict.violations {
        s.push_str(&format!("  at {:.1} s: {:?}\n", f.t_ms as f64 / 1000.0, f.violation));
    }
    if let Some((from, to, fault)) = shortest_window(h, verdict) {
        s.push_str(&format!(
            "  shortest fault window: {:.1} s .. {:.1} s, after {fault:?}; replay with --seed {}\n",
            from as f64 / 1000.0,
            to as f64 / 1000.0,
            h.seed
        ));
    } else if !verdict.ok() {
        s.push_str(&format!("  no fault before the first violation; replay with --seed {}\n", h.seed));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &[&str] = &["broker-1", "broker-2", "broker-3", "broker-4", "controller-101"];

    fn send(t: u64, v: &str, offset: i64) -> Event {
        Event::Send {
            t_ms: t,
            producer: "p1".into(),
            idempotent: true,
            value: v.into(),
            acked: true,
            partition: 0,
            offset: Some(offset),
        }
    }
    fn read(t: u64, offset: i64, v: &str) -> Event {
        Event::Read { t_ms: t, consumer: "c1".into(), session: 0, partition: 0, offset, value: v.into() }
    }
    fn state(t: u64, leader: i32, isr: &[i32], hw: i64) -> Event {
        Event::State {
            t_ms: t,
            partition: 0,
            leader: Some(leader),
            isr: isr.to_vec(),
            high_watermark: hw,
            replicas: vec![1, 2, 3, 4],
        }
    }

    /// A clean run: 3 records, a leader kill in between, reads in order, HW rising, all alive.
    fn clean() -> History {
        let events = vec![
            state(0, 1, &[1, 2, 3], 0),
            send(100, "a", 0),
            send(200, "b", 1),
            Event::Fault { t_ms: 1_000, end_ms: Some(3_000), fault: Fault::Kill { node: "broker-1".into() } },
            state(1_500, 2, &[2, 3], 2),
            send(2_000, "c", 2),
            state(4_000, 2, &[1, 2, 3], 3),
            read(5_000, 0, "a"),
            read(5_001, 1, "b"),
            read(5_002, 2, "c"),
            Event::Process { t_ms: 6_000, node: "broker-1".into(), alive: true },
        ];
        History { schema: 1, seed: 7, duration_ms: 6_000, observer: 4, events }
    }

    fn violations(h: &History) -> Vec<Violation> {
        check(h).violations.into_iter().map(|f| f.violation).collect()
    }

    #[test]
    fn a_clean_history_passes() {
        let v = check(&clean());
        assert!(v.ok(), "{}", report(&clean(), &v));
        assert_eq!((v.acked, v.read, v.faults), (3, 3, 1));
    }

    #[test]
    fn an_acked_record_missing_is_caught_and_the_window_named() {
        let mut h = clean();
        h.events.retain(|e| !matches!(e, Event::Read { value, .. } if value == "b"));
        assert_eq!(violations(&h), vec![Violation::Lost { value: "b".into() }]);
        let text = report(&h, &check(&h));
        assert!(text.contains("replay with --seed 7") && text.contains("shortest fault window: 1.0 s"), "{text}");
    }

    #[test]
    fn a_loss_after_an_unclean_election_is_accepted_as_the_operators_choice() {
        let mut h = clean();
        h.events.retain(|e| !matches!(e, Event::Read { value, .. } if value == "b"));
        h.events.push(Event::Fault { t_ms: 3_500, end_ms: None, fault: Fault::UncleanElection });
        let v = check(&h);
        assert!(v.ok(), "{:?}", v.violations);
        assert_eq!(v.accepted_losses, vec!["b".to_string()]);
    }

    /// An unclean election's consequences are accepted, and only after it: the consumer read
    /// "b" at 1 before it, the new leader's log has "x" at 1, the consumer was sent back to 0,
    /// the HW went back; the observer leading is still a violation.
    #[test]
    fn an_unclean_elections_consequences_are_accepted_only_after_it_and_never_an_observer_leader() {
        let base = || {
            let mut h = clean();
            h.events.truncate(7); // up to the states; reads below
            h.events.extend([read(3_000, 0, "a"), read(3_001, 1, "b")]);
            h.events.push(Event::Fault { t_ms: 3_500, end_ms: None, fault: Fault::UncleanElection });
            h.events.extend([
                state(3_600, 3, &[3], 1),
                read(3_700, 0, "a"),
                read(3_701, 1, "x"),
                read(5_000, 2, "c"),
                Event::Process { t_ms: 6_000, node: "broker-1".into(), alive: true },
            ]);
            h.events.sort_by_key(Event::t_ms);
            h
        };
        let v = check(&base());
        assert!(v.ok(), "{:?}", v.violations);
        assert_eq!(v.accepted_losses, vec!["b".to_string()]);
        let kinds: Vec<&Violation> = v.accepted.iter().map(|f| &f.violation).collect();
        assert!(kinds.iter().any(|k| matches!(k, Violation::TwoRecordsAtOneOffset { offset: 1, .. })), "{kinds:?}");
        assert!(kinds.iter().any(|k| matches!(k, Violation::OffsetsWentBack { to: 0, .. })), "{kinds:?}");
        assert!(kinds.iter().any(|k| matches!(k, Violation::HighWatermarkBack { from: 2, to: 1, .. })), "{kinds:?}");
        // Without the unclean election the same history is three violations.
        let mut h = base();
        h.events.retain(|e| !matches!(e, Event::Fault { fault: Fault::UncleanElection, .. }));
        assert!(check(&h).violations.len() >= 3, "{:?}", check(&h).violations);
        // The observer leading after an unclean election is never excused.
        let mut h = base();
        h.events.push(state(3_800, 4, &[4], 1));
        h.events.sort_by_key(Event::t_ms);
        assert!(violations(&h).contains(&Violation::ObserverLeader { partition: 0 }), "{:?}", violations(&h));
    }

    #[test]
    fn a_duplicate_is_caught() {
        let mut h = clean();
        h.events.push(read(5_003, 3, "b"));
        assert_eq!(violations(&h), vec![Violation::Duplicated { value: "b".into(), offsets: (1, 3) }]);
        // Two records at one offset, and a consumer going back, are caught too.
        let mut h = clean();
        h.events.push(Event::Read {
            t_ms: 5_010,
            consumer: "c2".into(),
            session: 0,
            partition: 0,
            offset: 1,
            value: "x".into(),
        });
        h.events.push(read(5_020, 1, "b"));
        let v = violations(&h);
        assert!(v.iter().any(|x| matches!(x, Violation::TwoRecordsAtOneOffset { offset: 1, .. })), "{v:?}");
        assert!(
            v.contains(&Violation::OffsetsWentBack { consumer: "c1".into(), partition: 0, from: 2, to: 1 }),
            "{v:?}"
        );
    }

    #[test]
    fn a_record_away_from_its_acknowledged_offset_is_caught() {
        let mut h = clean();
        h.events[8] = read(5_001, 1, "z");
        h.events.push(read(5_003, 3, "b"));
        assert_eq!(
            violations(&h),
            vec![Violation::NotAtAckedOffset { value: "b".into(), partition: 0, offset: 1, found: "z".into() }]
        );
    }

    #[test]
    fn a_regressing_high_watermark_is_caught() {
        let mut h = clean();
        h.events.insert(6, state(3_000, 2, &[2, 3], 1));
        assert_eq!(violations(&h), vec![Violation::HighWatermarkBack { partition: 0, from: 2, to: 1 }]);
    }

    #[test]
    fn an_observer_in_the_isr_or_leading_is_caught_unless_promoted_then() {
        let mut h = clean();
        h.events.push(state(5_500, 2, &[2, 3, 4], 3));
        h.events.push(state(5_600, 4, &[4], 3));
        assert_eq!(
            violations(&h),
            vec![
                Violation::ObserverInIsr { partition: 0, isr: vec![2, 3, 4] },
                Violation::ObserverLeader { partition: 0 },
                Violation::ObserverInIsr { partition: 0, isr: vec![4] },
            ]
        );
        let mut h = clean();
        h.events.push(Event::Promoted { t_ms: 5_400, broker: 4, promoted: true });
        h.events.push(state(5_500, 2, &[2, 3, 4], 3));
        h.events.push(state(5_600, 4, &[4], 3));
        h.events.push(Event::Promoted { t_ms: 5_700, broker: 4, promoted: false });
        h.events.push(state(5_800, 2, &[2, 3, 4], 3));
        assert_eq!(violations(&h), vec![Violation::ObserverInIsr { partition: 0, isr: vec![2, 3, 4] }]);
    }

    #[test]
    fn a_process_down_at_the_end_is_caught() {
        let mut h = clean();
        h.events.push(Event::Process { t_ms: 6_000, node: "broker-3".into(), alive: false });
        assert_eq!(violations(&h), vec![Violation::ProcessDown { node: "broker-3".into() }]);
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let a = schedule(42, 600_000, NODES, false);
        assert_eq!(a, schedule(42, 600_000, NODES, false));
        assert_ne!(a, schedule(43, 600_000, NODES, false));
        assert!(a.len() >= 10, "{} faults in 10 minutes", a.len());
        assert!(a.iter().all(|f| f.fault != Fault::UncleanElection), "unclean elections only when asked for");
        assert!(a.windows(2).all(|w| w[0].at_ms < w[1].at_ms));
        assert!(schedule(42, 6_000_000, NODES, true).iter().any(|f| f.fault == Fault::UncleanElection));
        // Every kind of fault shows up in a long enough schedule.
        let long = schedule(42, 6_000_000, NODES, false);
        for kind in [
            "kill",
            "pause",
            "observer-ids",
            "observer-ids-garbage",
            "observer-ids-deleted",
            "preferred-election",
            "reassign",
        ] {
            assert!(
                long.iter().any(|f| serde_json::to_value(&f.fault).unwrap()["kind"] == kind),
                "no {kind} in 100 minutes"
            );
        }
    }

    #[test]
    fn durations_parse_in_seconds_minutes_and_hours() {
        assert_eq!(parse_duration("180"), Some(std::time::Duration::from_secs(180)));
        assert_eq!(parse_duration("10m"), Some(std::time::Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Some(std::time::Duration::from_secs(3600)));
        for bad in ["", "0", "10x", "m", "-5s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_history_round_trips_as_json() {
        let h = clean();
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(serde_json::from_str::<History>(&text).unwrap(), h);
        assert!(text.contains("\"event\":\"send\""), "{text}");
    }

    #[test]
    fn the_history_file_reads_back_and_refuses_what_it_is_not() {
        let d = tempfile::tempdir().unwrap();
        let h = clean();
        let p = h.write(d.path()).unwrap();
        assert_eq!(p, d.path().join(HISTORY_FILE));
        assert_eq!(History::read(&p).unwrap(), h);
        // One event per line inside, so the uncompressed text greps.
        assert_eq!(h.to_text().lines().count(), h.events.len() + 2);
        // The uncompressed JSON reads too.
        let plain = d.path().join("history.json");
        std::fs::write(&plain, h.to_text()).unwrap();
        assert_eq!(History::read(&plain).unwrap(), h);
        // Another schema, no schema, broken gzip, a FIFO: refused with the file named.
        let mut other = h.clone();
        other.schema = 2;
        std::fs::write(&plain, other.to_text()).unwrap();
        let e = History::read(&plain).unwrap_err().to_string();
        assert!(e.contains("history.json") && e.contains('2'), "{e}");
        std::fs::write(&plain, "{\"seed\":1,\"duration_ms\":1,\"observer\":4,\"events\":[]}").unwrap();
        assert!(History::read(&plain).is_err());
        std::fs::write(&plain, [0x1f, 0x8b, 0, 1, 2, 3]).unwrap();
        let e = History::read(&plain).unwrap_err().to_string();
        assert!(e.contains("history.json") && e.contains("gzip"), "{e}");
        let fifo = d.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let e = History::read(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
