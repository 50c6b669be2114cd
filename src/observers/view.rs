//! What the cluster says about its replicas, read with okp's Kafka-protocol
//! probe (no JVM): per partition its leader, replicas, ISR, high watermark and
//! each live replica's own log end offset (ListOffsets with Kafka's
//! DEBUGGING_REPLICA_ID, which a follower answers from its local log), and
//! `okp observers status` built from that: one row per replica with the
//! fields of a replica-status tool.
//!
//! Which replicas are observers cannot be asked of a broker (the patch set adds
//! no API), so it comes from the observer.ids files the nodes read, or from
//! the command line; the output names its source.

use std::collections::{BTreeMap, BTreeSet};

use super::idfile;
use crate::error::{Error, Result};
use crate::wire::{self as probe, Probe};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Part {
    pub topic: String,
    pub partition: i32,
    pub leader: Option<i32>,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// The leader's high watermark (None: no leader, or it did not answer).
    pub high_watermark: Option<i64>,
    /// Each replica's own log end offset; absent: the broker is down or did not answer.
    pub leo: BTreeMap<i32, i64>,
    /// min.insync.replicas of the topic (DescribeConfigs), when asked for.
    pub min_insync: Option<i32>,
}

impl Part {
    pub fn name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// The offset lag is measured against: the leader's LEO, or with no leader
    /// the highest LEO among the replicas that answered.
    pub fn reference_leo(&self) -> Option<i64> {
        match self.leader {
            Some(l) => self.leo.get(&l).copied(),
            None => self.leo.values().copied().max(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The cluster's id as Metadata names it (the watchdog binds its state file to it).
    pub cluster_id: Option<String>,
    /// Registered (live) brokers: id → host:port.
    pub brokers: BTreeMap<i32, String>,
    /// The same brokers' broker.rack (None: unset): what a topic rule's `rack:NAME` items match.
    pub racks: idfile::RackView,
    pub partitions: Vec<Part>,
}

impl Snapshot {
    pub fn live(&self, id: i32) -> bool {
        self.brokers.contains_key(&id)
    }
}

/// What to read beyond Metadata.
#[derive(Debug, Clone, Copy)]
pub struct Depth {
    pub offsets: bool,
    pub min_insync: bool,
}

/// The first bootstrap server that answers Metadata.
pub(crate) fn metadata(bootstrap: &[String], topic: Option<&str>) -> Result<(probe::Metadata, String)> {
    let one: Vec<&str> = topic.into_iter().collect();
    let topics = topic.map(|_| &one[..]);
    for b in bootstrap {
        if let Some(m) = Probe::connect_to(b).and_then(|mut p| p.metadata(topics)) {
            return Ok((m, b.clone()));
        }
    }
    Err(Error::External(format!(
        "no bootstrap server answered a Metadata request (tried {}); okp speaks PLAINTEXT only",
        bootstrap.iter().map(|b| crate::escape::one_line(b)).collect::<Vec<_>>().join(", ")
    )))
}

/// Reads the cluster: Metadata from the first answering bootstrap server, then
/// (with `depth.offsets`) every live replica's LEO — leaders first, so a
/// follower sampled later never shows a lag the leader had not reached yet —
/// and the leaders' high watermarks.
pub fn snapshot(bootstrap: &[String], topic: Option<&str>, depth: Depth) -> Result<Snapshot> {
    let (m, via) = metadata(bootstrap, topic)?;
    if let Some(t) = topic {
        if let Some((_, code)) = m.topic_errors.iter().find(|(n, _)| n == t) {
            let why = if *code == 3 { "it does not exist".to_string() } else { format!("Kafka error code {code}") };
            return Err(Error::Usage(format!("topic {t}: {why} (asked {via})")));
        }
    }
    let brokers: BTreeMap<i32, String> = m.brokers.iter().map(|b| (b.id, format!("{}:{}", b.host, b.port))).collect();
    let racks: idfile::RackView = m.brokers.iter().map(|b| (b.id, b.rack.clone())).collect();
    let mut parts: Vec<Part> = m
        .partitions
        .into_iter()
        .map(|p| Part {
            topic: p.topic,
            partition: p.index,
            leader: p.state.leader,
            replicas: p.state.replicas,
            isr: p.state.isr,
            high_watermark: None,
            leo: BTreeMap::new(),
            min_insync: None,
        })
        .collect();
    parts.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    if depth.offsets {
        for leaders_pass in [true, false] {
            for (id, addr) in &brokers {
                let keys: Vec<(String, i32)> = parts
                    .iter()
                    .filter(|p| p.replicas.contains(id) && (p.leader == Some(*id)) == leaders_pass)
                    .map(|p| (p.topic.clone(), p.partition))
                    .collect();
                if keys.is_empty() {
                    continue;
                }
                let Some(mut pr) = Probe::connect_to(addr) else { continue };
                let leos = pr.latest_offsets(probe::DEBUGGING, &keys).unwrap_or_default();
                let hws = if leaders_pass {
                    pr.latest_offsets(probe::CONSUMER, &keys).unwrap_or_default()
                } else {
                    BTreeMap::new()
                };
                for p in parts.iter_mut() {
                    let k = (p.topic.clone(), p.partition);
                    if let Some(Ok(o)) = leos.get(&k) {
                        p.leo.insert(*id, *o);
                    }
                    if let Some(Ok(h)) = hws.get(&k) {
                        p.high_watermark = Some(*h);
                    }
                }
            }
        }
    }
    if depth.min_insync {
        let topics: BTreeSet<&str> = parts.iter().map(|p| p.topic.as_str()).collect();
        let topics: Vec<&str> = topics.into_iter().collect();
        let mut found = None;
        for b in std::iter::once(&via).chain(brokers.values()) {
            if let Some(v) = Probe::connect_to(b).and_then(|mut p| p.topic_config(&topics, "min.insync.replicas")) {
                found = Some(v);
                break;
            }
        }
        let values = found
            .ok_or_else(|| Error::External("no broker answered DescribeConfigs for min.insync.replicas".into()))?;
        for p in parts.iter_mut() {
            p.min_insync = values.get(&p.topic).and_then(|v| v.parse().ok());
        }
    }
    Ok(Snapshot { cluster_id: m.cluster_id, brokers, racks, partitions: parts })
}

/// `node: `4x`, `banana`` when `text` has tokens the registries ignore (each as
/// `idfile::shown_token`), at most 8 named.
fn ignored_in(node: &str, text: &str) -> Option<String> {
    const SHOWN: usize = 8;
    let t = idfile::ignored(text);
    if t.is_empty() {
        return None;
    }
    let mut named: Vec<String> = t.iter().take(SHOWN).map(|x| idfile::shown_token(x)).collect();
    if t.len() > SHOWN {
        named.push(format!("and {} more", t.len() - SHOWN));
    }
    Some(format!("{node}: {}", named.join(", ")))
}

/// The observer ids and where they came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ObserverSet {
    /// None: nobody said (no files, no --observers), so `is_observer` is unknown.
    pub ids: Option<BTreeSet<i32>>,
    pub source: String,
    /// Nodes whose file names another set than the others (empty when all agree).
    pub disagreeing: Vec<String>,
    /// Per file, the tokens its readers ignore (`broker 1: 4x`): a red state,
    /// since a typo for an id reads as "not an observer" on that node.
    pub ignored: Vec<String>,
    /// The topic rules in force, canonical (`topic:audit=7;prefix:ledger=7`), one entry per
    /// distinct text among the files; empty when no file has a rule.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topic_rules: Vec<String>,
    /// Per file, its first malformed rule (`broker 1: line 2, column 23: …`): a red state, as the
    /// node's registries keep their last good set, which okp cannot see.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<String>,
    /// Each file's cluster-wide ids and rules, to answer per topic.
    #[serde(skip)]
    files: Vec<(BTreeSet<i32>, idfile::Rules)>,
    /// Where the set came from: what `files_read` and `from_nodes` answer.
    #[serde(skip)]
    origin: Origin,
    /// The nodes `disagreeing` describes, by name alone (`broker 1 (/etc/kafka/observer.ids)`).
    #[serde(skip)]
    disagreeing_nodes: Vec<String>,
    /// Every token of every file that is neither an id nor a comment (`ignored` names at most 8).
    #[serde(skip)]
    ignored_tokens: usize,
}

/// Where an `ObserverSet` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Every node's own file.
    Nodes,
    /// One file (`--observers-file`).
    File,
    /// The command line (`--observers`), or nobody.
    Given,
}

impl ObserverSet {
    /// From each node's file: the union (any node that believes an id is an
    /// observer keeps it out of an ISR or a leadership), with every
    /// disagreement named.
    pub fn from_files(files: &[(String, String)]) -> ObserverSet {
        let mut malformed = Vec::new();
        let read: Vec<(&str, BTreeSet<i32>, idfile::Rules)> = files
            .iter()
            .map(|(n, t)| {
                let rules = idfile::rules(t).unwrap_or_else(|e| {
                    malformed.push(format!("{n}: {}", crate::escape::one_line(&e)));
                    idfile::Rules::default()
                });
                (n.as_str(), idfile::parse(t), rules)
            })
            .collect();
        let union: BTreeSet<i32> = read.iter().flat_map(|(_, s, _)| s.iter().copied()).collect();
        let first_rules = read.first().map(|r| r.2.clone()).unwrap_or_default();
        let disagree: Vec<&(&str, BTreeSet<i32>, idfile::Rules)> =
            read.iter().filter(|(_, s, r)| *s != union || *r != first_rules).collect();
        let disagreeing: Vec<String> = disagree
            .iter()
            .map(|(n, s, r)| {
                if r.is_empty() {
                    format!("{n}: {}", idfile::show(s))
                } else {
                    format!("{n}: {} {}", idfile::show(s), r.shown())
                }
            })
            .collect();
        let disagreeing_nodes: Vec<String> = disagree.iter().map(|(n, _, _)| n.to_string()).collect();
        let agree =
            if disagreeing.is_empty() { "all agree".to_string() } else { format!("{} disagree", disagreeing.len()) };
        let mut topic_rules: Vec<String> = read.iter().filter(|r| !r.2.is_empty()).map(|r| r.2.shown()).collect();
        topic_rules.dedup();
        ObserverSet {
            ids: Some(union),
            source: format!("observer.ids of {} nodes ({agree})", read.len()),
            disagreeing,
            ignored: files.iter().filter_map(|(n, t)| ignored_in(n, t)).collect(),
            topic_rules,
            malformed,
            disagreeing_nodes,
            files: read.into_iter().map(|(_, s, r)| (s, r)).collect(),
            origin: Origin::Nodes,
            ignored_tokens: files.iter().map(|(_, t)| idfile::ignored(t).len()).sum(),
        }
    }

    /// One file (`--observers-file`), named by `source`.
    pub fn from_file(source: String, text: &str) -> ObserverSet {
        let mut set = ObserverSet::from_files(&[(source.clone(), text.to_string())]);
        set.source = source;
        set.origin = Origin::File;
        set
    }

    /// Nobody said which replicas are observers, or the command line did.
    pub fn given(ids: Option<BTreeSet<i32>>, source: String) -> ObserverSet {
        let files = ids.iter().map(|s| (s.clone(), idfile::Rules::default())).collect();
        ObserverSet {
            ids,
            source,
            disagreeing: vec![],
            ignored: vec![],
            topic_rules: vec![],
            malformed: vec![],
            files,
            origin: Origin::Given,
            disagreeing_nodes: vec![],
            ignored_tokens: 0,
        }
    }

    /// How many observer.ids files were read: every node's, one (`--observers-file`), or none.
    pub fn files_read(&self) -> usize {
        match self.origin {
            Origin::Nodes => self.files.len(),
            Origin::File => 1,
            Origin::Given => 0,
        }
    }

    /// Whether the set is every node's own file, so that whether they agree means something.
    pub fn from_nodes(&self) -> bool {
        self.origin == Origin::Nodes
    }

    /// The names of the nodes whose file names another set or other rules than the others.
    pub fn disagreeing_nodes(&self) -> &[String] {
        &self.disagreeing_nodes
    }

    /// How many tokens the files hold that are neither ids nor comments.
    pub fn ignored_tokens(&self) -> usize {
        self.ignored_tokens
    }

    /// Every distinct topic rule among the files (a rule two files write differently is two),
    /// by its canonical text (`topic:audit=rack:dr`).
    pub fn each_rule(&self) -> BTreeMap<String, idfile::Observers> {
        self.files.iter().flat_map(|(_, r)| r.each().into_iter().map(|(t, o)| (t, o.clone()))).collect()
    }

    /// The first file's topic rules: every file's when they agree (`disagreeing` is empty).
    pub fn rules(&self) -> idfile::Rules {
        self.files.first().map(|f| f.1.clone()).unwrap_or_default()
    }

    /// Whether `status` must report red for the files themselves.
    pub fn files_red(&self) -> bool {
        !self.ignored.is_empty() || !self.malformed.is_empty()
    }

    /// Whether `id` is an observer of `topic` on some node (its rule there, or that node's
    /// cluster-wide ids): any node that believes so keeps it out of the ISR. A rule's `rack:NAME`
    /// items match by `racks` (the cluster's brokers and their broker.rack); a broker not in it
    /// has an unknown rack, which any rack item holds (the registries fail safe). None when nobody
    /// said.
    pub fn is_observer_of(&self, topic: &str, id: i32, racks: &idfile::RackView) -> Option<bool> {
        self.ids.as_ref()?;
        Some(self.files.iter().any(|(ids, rules)| match rules.resolve(topic) {
            Some(s) => s.contains(id, racks),
            None => ids.contains(&id),
        }))
    }

    /// Whether some node makes `id` an observer of `topic` by id (the topic's rule's ids, or the
    /// cluster-wide ids where no rule names the topic), rack items aside.
    fn observer_by_id(&self, topic: &str, id: i32) -> bool {
        self.files.iter().any(|(ids, rules)| match rules.resolve(topic) {
            Some(s) => s.ids.contains(&id),
            None => ids.contains(&id),
        })
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ReplicaRow {
    pub topic: String,
    pub partition: i32,
    pub replica: i32,
    pub role: &'static str,
    pub is_leader: bool,
    pub is_observer: Option<bool>,
    pub in_isr: bool,
    pub live: bool,
    pub log_end_offset: Option<i64>,
    pub high_watermark: Option<i64>,
    pub lag: Option<i64>,
    pub caught_up: Option<bool>,
    /// Red states: `observer-in-isr`, `observer-leads`.
    pub flags: Vec<&'static str>,
}

/// One row per replica; `max_lag` is the lag still counted as caught up.
pub fn rows(snap: &Snapshot, observers: &ObserverSet, max_lag: i64) -> Vec<ReplicaRow> {
    let mut out = Vec::new();
    for p in &snap.partitions {
        let reference = p.reference_leo();
        for &r in &p.replicas {
            let is_leader = p.leader == Some(r);
            let in_isr = p.isr.contains(&r);
            let mut is_observer = observers.is_observer_of(&p.topic, r, &snap.racks);
            // A replica Metadata does not list (a broker that is down) has no known rack. When only
            // a rack item would make it an observer, status cannot tell: the registries hold it
            // one (failing safe), but it may be a primary whose ISR has not shrunk yet, and
            // flagging it `observer-in-isr` would raise a false alarm for every broker that stops.
            if is_observer == Some(true) && !snap.racks.contains_key(&r) && !observers.observer_by_id(&p.topic, r) {
                is_observer = None;
            }
            let live = snap.live(r);
            let leo = p.leo.get(&r).copied();
            let lag = match (reference, leo) {
                (Some(a), Some(b)) => Some((a - b).max(0)),
                _ => None,
            };
            let role = match (is_leader, live, in_isr, is_observer) {
                (true, _, _, _) => "leader",
                (_, false, _, _) => "down",
                (_, _, true, _) => "isr",
                (_, _, _, Some(true)) => "observer",
                _ => "out-of-sync",
            };
            let mut flags = Vec::new();
            if is_observer == Some(true) && in_isr {
                flags.push("observer-in-isr");
            }
            if is_observer == Some(true) && is_leader {
                flags.push("observer-leads");
            }
            out.push(ReplicaRow {
                topic: p.topic.clone(),
                partition: p.partition,
                replica: r,
                role,
                is_leader,
                is_observer,
                in_isr,
                live,
                log_end_offset: leo,
                high_watermark: p.high_watermark,
                lag,
                caught_up: lag.map(|l| l <= max_lag),
                flags,
            });
        }
    }
    out
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

pub fn table(rows: &[ReplicaRow], observers: &ObserverSet, color: bool) -> String {
    let mut s = format!(
        "observers: {} from {}\n",
        observers.ids.as_ref().map(idfile::show).unwrap_or_else(|| "unknown".into()),
        observers.source
    );
    for d in &observers.disagreeing {
        s.push_str(&format!("  disagrees: {d}\n"));
    }
    for d in &observers.ignored {
        s.push_str(&format!("  ignored tokens: {d}\n"));
    }
    for r in &observers.topic_rules {
        s.push_str(&format!("  topic rules: {}\n", crate::escape::one_line(r)));
    }
    for d in &observers.malformed {
        s.push_str(&format!("  malformed rule: {d}\n"));
    }
    s.push('\n');
    let head = [
        "TOPIC",
        "PARTITION",
        "REPLICA",
        "ROLE",
        "LEADER",
        "OBSERVER",
        "IN-ISR",
        "LIVE",
        "LEO",
        "HW",
        "LAG",
        "CAUGHT-UP",
        "FLAGS",
    ];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    for r in rows {
        cells.push(vec![
            r.topic.clone(),
            r.partition.to_string(),
            r.replica.to_string(),
            r.role.to_string(),
            yes(r.is_leader).into(),
            r.is_observer.map(|b| yes(b).to_string()).unwrap_or_else(|| "?".into()),
            yes(r.in_isr).into(),
            yes(r.live).into(),
            opt(r.log_end_offset),
            opt(r.high_watermark),
            opt(r.lag),
            r.caught_up.map(|b| yes(b).to_string()).unwrap_or_else(|| "-".into()),
            r.flags.join(","),
        ]);
    }
    let widths: Vec<usize> = (0..head.len()).map(|i| cells.iter().map(|c| c[i].len()).max().unwrap_or(0)).collect();
    for c in &cells {
        let line: Vec<String> = c.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect();
        let line = line.join("  ").trim_end().to_string();
        if color && !c[12].is_empty() && c[0] != "TOPIC" {
            s.push_str(&format!("\x1b[31m{line}\x1b[0m\n"));
        } else {
            s.push_str(&line);
            s.push('\n');
        }
    }
    let red: Vec<String> = rows
        .iter()
        .filter(|r| !r.flags.is_empty())
        .map(|r| format!("{}-{} replica {}: {}", r.topic, r.partition, r.replica, r.flags.join(", ")))
        .collect();
    if !observers.malformed.is_empty() {
        s.push_str(&format!(
            "\nred state: a topic rule in observer.ids is malformed ({}); that node's brokers and controllers keep their last good ids and rules (frozen) until it is fixed, which okp cannot see. The rule format is in docs/observer-ids.md.\n",
            observers.malformed.join("; ")
        ));
    }
    if !observers.ignored.is_empty() {
        s.push_str(&format!(
            "\nred state: observer.ids holds tokens that are neither ids nor comments ({}); every node ignores them, so a typo for an id (`4x`, `4;5`) leaves that broker a normal replica on that node. Fix the file: ids separated by commas or whitespace, `#` for comments.\n",
            observers.ignored.join("; ")
        ));
    }
    if !red.is_empty() {
        s.push_str(&format!(
            "\n{} red state(s): an observer inside an ISR or leading (expected only for up to replica.lag.time.max.ms + 5 s after a demotion, or after a deliberate unclean promotion):\n  {}\n",
            red.len(),
            red.join("\n  ")
        ));
    }
    s
}

/// The red states `status` counts: each flagged row, each file with ignored tokens, each file
/// with a malformed rule.
pub fn red_states(rows: &[ReplicaRow], observers: &ObserverSet) -> usize {
    rows.iter().filter(|r| !r.flags.is_empty()).count() + observers.ignored.len() + observers.malformed.len()
}

pub fn json(rows: &[ReplicaRow], observers: &ObserverSet, max_lag: i64) -> String {
    let v = serde_json::json!({
        "schema": "okp-observers-status/1",
        "observers": observers,
        "caught_up_max_lag": max_lag,
        "replicas": rows,
        "red_states": red_states(rows, observers),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn part(topic: &str, leader: Option<i32>, replicas: &[i32], isr: &[i32], leo: &[(i32, i64)]) -> Part {
        Part {
            topic: topic.into(),
            partition: 0,
            leader,
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            high_watermark: leader.map(|_| 100),
            leo: leo.iter().copied().collect(),
            min_insync: Some(2),
        }
    }

    #[test]
    fn rows_carry_role_lag_and_red_flags() {
        let snap = Snapshot {
            cluster_id: None,
            brokers: [1, 2, 4].iter().map(|i| (*i, format!("h:{i}"))).collect(),
            racks: [1, 2, 4].iter().map(|i| (*i, None)).collect(),
            partitions: vec![part("obs", Some(1), &[1, 2, 3, 4], &[1, 2, 4], &[(1, 100), (2, 100), (4, 97)])],
        };
        let obs = ObserverSet::from_files(&[("b1".into(), "4\n".into()), ("b2".into(), "4".into())]);
        let r = rows(&snap, &obs, 0);
        let by = |id: i32| r.iter().find(|x| x.replica == id).unwrap();
        assert_eq!((by(1).role, by(1).lag, by(1).caught_up), ("leader", Some(0), Some(true)));
        assert_eq!((by(3).role, by(3).lag), ("down", None));
        assert_eq!(
            (by(4).role, by(4).lag, by(4).caught_up, by(4).flags.clone()),
            ("isr", Some(3), Some(false), vec!["observer-in-isr"])
        );
        assert_eq!(rows(&snap, &obs, 5).iter().find(|x| x.replica == 4).unwrap().caught_up, Some(true));
        let t = table(&r, &obs, false);
        assert!(t.contains("1 red state(s)") && t.contains("obs-0 replica 4: observer-in-isr"), "{t}");
        let unknown = ObserverSet::given(None, "nothing".into());
        assert!(rows(&snap, &unknown, 0).iter().all(|x| x.is_observer.is_none() && x.flags.is_empty()));
    }

    #[test]
    fn files_that_disagree_are_named() {
        let s = ObserverSet::from_files(&[("broker 1".into(), "4".into()), ("controller 101".into(), "".into())]);
        assert_eq!(s.ids, Some([4].into()));
        assert_eq!(s.disagreeing, vec!["controller 101: []".to_string()]);
        assert!(!s.files_red());
    }

    #[test]
    fn a_token_that_is_not_an_id_is_a_red_state() {
        // The soak's finding: `4x` reads as "no observers" on that node, which on a
        // ZooKeeper-mode leader lets broker 4 into the ISR.
        let s =
            ObserverSet::from_files(&[("broker 1".into(), "4x # typo\n".into()), ("broker 2".into(), "4\n".into())]);
        assert_eq!(s.ignored, vec!["broker 1: `4x`".to_string()]);
        assert!(s.files_red());
        let snap = Snapshot { cluster_id: None, brokers: BTreeMap::new(), racks: BTreeMap::new(), partitions: vec![] };
        let t = table(&rows(&snap, &s, 0), &s, false);
        assert!(
            t.contains("ignored tokens: broker 1: `4x`") && t.contains("red state: observer.ids holds tokens"),
            "{t}"
        );
        let j: serde_json::Value = serde_json::from_str(&json(&[], &s, 0)).unwrap();
        assert_eq!(j["red_states"], 1);
        assert_eq!(j["observers"]["ignored"][0], "broker 1: `4x`");
        let hostile = ObserverSet::from_files(&[("b1".into(), format!("\x1b[2J{} a b c d e f g h i", "9".repeat(60)))]);
        assert_eq!(
            hostile.ignored,
            vec![format!("b1: `\\x1b[2J{}…`, `a`, `b`, `c`, `d`, `e`, `f`, `g`, and 2 more", "9".repeat(36))]
        );
        let one = ObserverSet::from_file("file /etc/kafka/observer.ids".into(), "banana 4");
        assert_eq!(
            (one.ids, one.ignored),
            (Some([4].into()), vec!["file /etc/kafka/observer.ids: `banana`".to_string()])
        );
    }

    #[test]
    fn topic_rules_decide_per_topic_and_a_malformed_one_is_red() {
        let snap = Snapshot {
            cluster_id: None,
            brokers: [1, 2, 4].iter().map(|i| (*i, format!("h:{i}"))).collect(),
            racks: [1, 2, 4].iter().map(|i| (*i, None)).collect(),
            partitions: vec![
                part("tobs", Some(1), &[1, 2, 4], &[1, 2], &[]),
                part("tfull", Some(1), &[1, 2, 4], &[1, 2, 4], &[]),
            ],
        };
        let text = "4\ntopic:tfull observers=none\n";
        let obs = ObserverSet::from_files(&[("b1".into(), text.into()), ("b2".into(), text.into())]);
        assert_eq!(obs.topic_rules, vec!["topic:tfull=none".to_string()]);
        assert_eq!(
            (obs.is_observer_of("tobs", 4, &snap.racks), obs.is_observer_of("tfull", 4, &snap.racks)),
            (Some(true), Some(false))
        );
        let r = rows(&snap, &obs, 0);
        let role =
            |t: &str| r.iter().find(|x| x.topic == t && x.replica == 4).map(|x| (x.role, x.flags.clone())).unwrap();
        assert_eq!(role("tobs"), ("observer", vec![]));
        assert_eq!(role("tfull"), ("isr", vec![]), "a full replica of tfull by its rule: no red state");
        assert!(table(&r, &obs, false).contains("topic rules: topic:tfull=none"));
        // A node without the rule keeps 4 an observer of tfull: okp takes the union, and names it.
        let split = ObserverSet::from_files(&[("b1".into(), text.into()), ("b2".into(), "4\n".into())]);
        assert_eq!(split.is_observer_of("tfull", 4, &snap.racks), Some(true));
        assert_eq!(split.disagreeing, vec!["b2: [4]".to_string()]);
        let bad = ObserverSet::from_files(&[("b1".into(), "4\ntopic:tfull observers=none,4\n".into())]);
        assert!(
            bad.files_red() && bad.malformed[0].starts_with("b1: line 2, column 23: not a broker id"),
            "{:?}",
            bad.malformed
        );
        assert!(table(&[], &bad, false).contains("red state: a topic rule in observer.ids is malformed"));
        let j: serde_json::Value = serde_json::from_str(&json(&[], &bad, 0)).unwrap();
        assert_eq!(j["red_states"], 1);
    }

    #[test]
    fn a_rack_item_names_the_brokers_of_that_rack_and_any_of_unknown_rack() {
        // audit keeps its observers in rack dr: broker 7 is there, 8 sets no broker.rack, 9 is a
        // replica the Metadata response does not list (down), so its rack is unknown.
        let snap = Snapshot {
            cluster_id: None,
            brokers: [1, 2, 7, 8].iter().map(|i| (*i, format!("h:{i}"))).collect(),
            racks: [(1, Some("east")), (2, Some("east")), (7, Some("dr")), (8, None)]
                .into_iter()
                .map(|(i, r)| (i, r.map(str::to_string)))
                .collect(),
            partitions: vec![
                part("audit", Some(1), &[1, 2, 7, 8, 9], &[1, 2, 7, 8, 9], &[]),
                part("orders", Some(1), &[1, 2, 7], &[1, 2, 7], &[]),
                part("ledger", Some(1), &[1, 9], &[1, 9], &[]),
            ],
        };
        let text = "topic:audit observers=rack:dr # DR\ntopic:ledger observers=9\n";
        let obs = ObserverSet::from_files(&[("b1".into(), text.into()), ("b2".into(), text.into())]);
        assert_eq!(obs.topic_rules, vec!["topic:audit=rack:dr;topic:ledger=9".to_string()]);
        let r = rows(&snap, &obs, 0);
        let of = |t: &str, id: i32| {
            r.iter()
                .find(|x| x.topic == t && x.replica == id)
                .map(|x| (x.role, x.is_observer, x.flags.clone()))
                .unwrap()
        };
        assert_eq!(of("audit", 7), ("isr", Some(true), vec!["observer-in-isr"]), "in rack dr");
        assert_eq!(of("audit", 8), ("isr", Some(false), vec![]), "no broker.rack: no rack item matches it");
        assert_eq!(
            of("audit", 9),
            ("down", None, vec![]),
            "down, still in the ISR, its rack unknown: only a rack item would make it an observer, so status cannot tell"
        );
        assert_eq!(
            of("ledger", 9),
            ("down", Some(true), vec!["observer-in-isr"]),
            "down but an observer by id: an observer in the ISR all the same"
        );
        assert_eq!(of("audit", 2), ("isr", Some(false), vec![]));
        assert_eq!(of("orders", 7), ("isr", Some(false), vec![]), "no rule for orders and no cluster-wide ids");
        let t = table(&r, &obs, false);
        assert!(
            t.contains("topic rules: topic:audit=rack:dr;topic:ledger=9")
                && t.contains("audit-0 replica 7: observer-in-isr")
                && !t.contains("audit-0 replica 9"),
            "{t}"
        );
    }
}
