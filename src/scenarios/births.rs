//! CREATE: the first second of a partition's life, under real clients. Round after round,
//! librdkafka (confluent-kafka, `okp_births.py`; once as configured in the report, once with one
//! request in flight) and the Java producer (`OkpBirths.java`) each
//! create a handful of topics in one CreateTopics call (RF 3 and 4, the observer listed first
//! and last, no observer, and the observer made a full replica by a topic rule) and produce to
//! every partition from the first moment: once CreateTopics has returned, or right after it was
//! sent. Every delivery report is kept with the partition and offset it was acked at; after the
//! round every replica's log is read off its data directory (`cluster::segments`) and every
//! acked record must sit at its acked offset on every replica, once.
//!
//! A loss is classified, not only counted: when a partition's log starts at a producer
//! sequence above 0, the records before it were never written (the broker took a later request
//! of a producer it had no state for, KAFKA-15591); an acked record among them is a client
//! that reported them delivered anyway. Any other loss, a record at another offset, a duplicate
//! or replicas that differ fail the scenario. A round that loses a record keeps the librdkafka
//! debug log and the brokers' state-change lines of its topics.
//!
//! Not here: the clients' line protocol (their sources), reading segments (`cluster::segments`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{Ctx, ScenarioResult};
use crate::cluster::client::{Client, Line, BIRTHS_CLASS, BIRTHS_PY};
use crate::cluster::segments::{self, Record};
use crate::cluster::BROKERS;
use crate::error::{Error, Result};

/// The topics of one client's round: a name prefix (`cf` topics are full replicas of broker 4
/// under the rules file) and one replica list per partition.
const LAYOUTS: &[(&str, &str, &[&[i32]])] = &[
    ("cr", "rf4, observer last and first", &[&[1, 2, 3, 4], &[4, 2, 3, 1]]),
    ("cr", "rf3, observer last and first", &[&[1, 2, 4], &[4, 1, 2]]),
    ("cr", "rf3, no observer", &[&[1, 2, 3], &[2, 3, 1]]),
    ("cf", "rf4, cf-: 4 full while the rule is in force", &[&[1, 2, 3, 4], &[4, 2, 3, 1]]),
    ("cf", "rf3, cf-: 4 full while the rule is in force", &[&[2, 3, 4], &[4, 3, 2]]),
];
/// observer.ids in the second half of the rounds: 4 observes every topic but the `cf-` ones.
const RULES: &str = "4\nprefix:cf- observers=none\n";
/// Records per partition and round, 10 ms apart: half a second of writes from the first one.
const RECORDS: u32 = 50;
/// How long a round's clients may take to answer for every record.
const ROUND_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the replicas of a round's partitions get to hold the same log.
const CATCH_UP: Duration = Duration::from_secs(30);

/// The Python with confluent-kafka: OKP_PYTHON, else the virtualenv scripts/setup.sh makes.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("OKP_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".local/share/okp/venv/bin/python")
}

/// Why CREATE cannot run here, if it cannot: no Python with confluent-kafka.
pub fn unavailable() -> Option<String> {
    let py = python();
    let ok =
        Command::new(&py).args(["-c", "import confluent_kafka"]).output().map(|o| o.status.success()).unwrap_or(false);
    (!ok).then(|| {
        format!(
            "CREATE needs Python with confluent-kafka (librdkafka) at {} (OKP_PYTHON to choose another): \
             run scripts/setup.sh",
            py.display()
        )
    })
}

/// One acknowledged or failed record, as its client reported it.
#[derive(Debug, Clone)]
struct Report {
    value: String,
    partition: u32,
    /// The delivery report said delivered.
    acked: bool,
    /// The offset it was acked at; None for a failure, or a success reported without an
    /// offset (librdkafka's for records it takes as written because a later request was).
    offset: Option<i64>,
    error: Option<String>,
}

/// What one partition of one round came to.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Birth {
    pub topic: String,
    pub partition: u32,
    pub client: String,
    pub when: String,
    pub rules: bool,
    pub layout: String,
    pub acked: usize,
    /// Of `acked`, reported delivered without an offset.
    pub acked_without_offset: usize,
    pub errors: usize,
    /// Acked records at their acked offset on no replica.
    pub lost: Vec<String>,
    /// Of `lost`, those before the log's first sequence (KAFKA-15591's pattern).
    pub lost_before_first_sequence: usize,
    /// The log's first producer sequence when it is above 0 (the first requests never written).
    pub first_sequence: Option<i32>,
    /// Acked records found at another offset than the acked one.
    pub misplaced: Vec<String>,
    pub duplicates: Vec<String>,
    /// Replicas whose log differs from the longest one's after the catch-up wait.
    pub diverged: Vec<i32>,
    pub replicas: Vec<i32>,
    /// What the client's own log says of the lost records (librdkafka's IMPLICITACK lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub client_says: Vec<String>,
}

impl Birth {
    fn other_losses(&self) -> usize {
        self.lost.len() - self.lost_before_first_sequence
    }

    fn clean(&self) -> bool {
        self.other_losses() == 0 && self.misplaced.is_empty() && self.duplicates.is_empty() && self.diverged.is_empty()
    }
}

/// The partition index a value names (`TAG-K-T-P-SEQ`): its record index in that partition.
fn index_of(value: &str) -> Option<i32> {
    value.rsplit('-').next()?.parse().ok()
}

/// Judges one partition: `reports` of its client, `logs` each replica's records.
fn judge(mut b: Birth, reports: &[&Report], logs: &BTreeMap<i32, Vec<Record>>) -> Birth {
    let longest = logs.values().max_by_key(|r| r.len()).cloned().unwrap_or_default();
    b.diverged = logs
        .iter()
        .filter(|(_, r)| {
            r.len() != longest.len() || r.iter().zip(&longest).any(|(a, b)| a.offset != b.offset || a.value != b.value)
        })
        .map(|(id, _)| *id)
        .collect();
    let data: Vec<&Record> = longest.iter().filter(|r| !r.control).collect();
    b.first_sequence = data.first().map(|r| r.sequence).filter(|s| *s > 0);
    let mut at: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for r in &data {
        if let Some(v) = &r.value {
            at.entry(v.as_str()).or_default().push(r.offset);
        }
    }
    b.duplicates = at.iter().filter(|(_, o)| o.len() > 1).map(|(v, _)| v.to_string()).collect();
    b.errors = reports.iter().filter(|r| !r.acked).count();
    for r in reports.iter().filter(|r| r.acked) {
        b.acked += 1;
        b.acked_without_offset += usize::from(r.offset.is_none());
        let acked_at = r.offset.map_or("acked without an offset".to_string(), |o| format!("acked at {o}"));
        match (at.get(r.value.as_str()), r.offset) {
            (Some(offsets), Some(offset)) if !offsets.contains(&offset) => {
                b.misplaced.push(format!("{} {acked_at}", r.value));
            }
            (Some(_), _) => {}
            (None, _) => {
                if b.first_sequence.zip(index_of(&r.value)).is_some_and(|(first, i)| i < first) {
                    b.lost_before_first_sequence += 1;
                }
                b.lost.push(format!("{} {acked_at}", r.value));
            }
        }
    }
    b
}

/// A client of the scenario and the topics it created this round.
struct Side {
    tag: &'static str,
    client: Client,
    /// The first of its lines this round.
    from: usize,
    /// Where a librdkafka client writes each round's debug log (`round-K.log`).
    debug: Option<PathBuf>,
}

impl Side {
    /// Waits until the client printed a line starting with `prefix` (at or after its `from`-th
    /// line); None when it did not in `timeout`, or exited.
    fn wait_for(&mut self, prefix: &str, timeout: Duration) -> Option<Vec<Line>> {
        let t0 = Instant::now();
        loop {
            let lines = self.client.lines_from(self.from);
            if lines.iter().any(|l| l.text.starts_with(prefix)) {
                return Some(lines);
            }
            if t0.elapsed() > timeout || crate::cluster::node::interrupted() || !self.client.alive() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn topic_name(prefix: &str, tag: &str, round: u32, i: usize) -> String {
    format!("{prefix}-{tag}-{round}-{i}")
}

fn spec(name: &str, parts: &[&[i32]]) -> String {
    let parts: Vec<String> = parts.iter().map(|p| p.iter().map(i32::to_string).collect::<Vec<_>>().join(",")).collect();
    format!("{name}={}", parts.join("|"))
}

fn reports_of(lines: &[Line]) -> (Vec<(String, Report)>, Vec<String>) {
    let mut reports = Vec::new();
    let mut other = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.text.split('\t').collect();
        match f.as_slice() {
            ["ack", topic, p, o, v, _] => {
                if let (Ok(p), Ok(o)) = (p.parse(), o.parse::<i64>()) {
                    let offset = (o >= 0).then_some(o);
                    reports.push((
                        topic.to_string(),
                        Report { value: v.to_string(), partition: p, acked: true, offset, error: None },
                    ));
                }
            }
            ["err", topic, p, v, e, _] => {
                if let Ok(p) = p.parse() {
                    reports.push((
                        topic.to_string(),
                        Report {
                            value: v.to_string(),
                            partition: p,
                            acked: false,
                            offset: None,
                            error: Some(e.to_string()),
                        },
                    ));
                }
            }
            ["created", _, _, _, status] if status.starts_with("error") => other.push(l.text.clone()),
            ["note", ..] => other.push(l.text.clone()),
            _ => {}
        }
    }
    (reports, other)
}

/// Each replica's records of `topic`-`p`: the brokers holding its directory.
fn replica_logs(x: &Ctx, topic: &str, p: u32) -> Result<BTreeMap<i32, Vec<Record>>> {
    let mut logs = BTreeMap::new();
    for id in BROKERS {
        let dir = segments::partition_dir(&x.c.node(id).dir.join("data"), topic, p);
        if dir.is_dir() {
            logs.insert(id, segments::read_partition(&dir)?);
        }
    }
    Ok(logs)
}

/// Waits until every replica of `topic`-`p` holds the same records, and as many as `acked` needs.
fn settled_logs(x: &Ctx, topic: &str, p: u32, min_len: usize) -> Result<BTreeMap<i32, Vec<Record>>> {
    let t0 = Instant::now();
    loop {
        let logs = replica_logs(x, topic, p)?;
        let lens: BTreeSet<usize> = logs.values().map(Vec::len).collect();
        let same = lens.len() == 1 && lens.iter().next().is_some_and(|n| *n >= min_len);
        if same || t0.elapsed() > CATCH_UP {
            return Ok(logs);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Totals over births, keyed by what they share.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Tally {
    pub partitions: usize,
    pub acked: usize,
    pub acked_without_offset: usize,
    pub errors: usize,
    pub lost: usize,
    pub lost_before_first_sequence: usize,
    pub partitions_starting_above_sequence_0: usize,
    pub misplaced: usize,
    pub duplicates: usize,
    pub diverged: usize,
}

impl Tally {
    /// The totals of `births`.
    fn of(births: &[Birth]) -> Tally {
        births.iter().fold(Tally::default(), |mut t, b| {
            t.add(b);
            t
        })
    }

    fn add(&mut self, b: &Birth) {
        self.partitions += 1;
        self.acked += b.acked;
        self.acked_without_offset += b.acked_without_offset;
        self.errors += b.errors;
        self.lost += b.lost.len();
        self.lost_before_first_sequence += b.lost_before_first_sequence;
        self.partitions_starting_above_sequence_0 += usize::from(b.first_sequence.is_some());
        self.misplaced += b.misplaced.len();
        self.duplicates += b.duplicates.len();
        self.diverged += usize::from(!b.diverged.is_empty());
    }
}

pub fn create(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    if let Some(why) = unavailable() {
        return Err(Error::External(why));
    }
    sequence_rule(x, o)?;
    // A producer's Metadata request for a topic not yet created would create it (one partition,
    // the broker's defaults) and race the round's CreateTopics: the Java producer asks so on
    // every request (librdkafka is told not to). Off for the rounds, back after them.
    roll_brokers(x, &["auto.create.topics.enable=false"])?;
    let outcome = rounds_of(x, o);
    roll_brokers(x, &[])?;
    outcome
}

/// Every broker stopped and started again, one at a time, with `overrides` in its
/// server.properties; then the shared topics' preferred leaders elected again, so the next
/// scenario finds the leaders it expects.
fn roll_brokers(x: &mut Ctx, overrides: &[&str]) -> Result<()> {
    for id in BROKERS {
        x.c.set_server_overrides(id, overrides)?;
        x.c.stop(id);
        x.c.restart(id)?;
    }
    for (topic, _, _) in super::TOPICS {
        let _ = x.c.elect(topic, "PREFERRED", &[]);
    }
    Ok(())
}

fn rounds_of(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let rounds = x.tuning.create_rounds.max(2);
    let dir = x.c.run_dir.join("births");
    let script = dir.join("okp_births.py");
    crate::fsx::create_dir(&dir)?;
    crate::fsx::write_atomic(&script, BIRTHS_PY.as_bytes())?;
    let evidence = x.c.journal.dir().join("CREATE-losses");
    let bootstrap = x.c.bootstrap(&[]);
    let t0 = Instant::now();

    // librdkafka as the report ran it, and with one request in flight (the mitigation
    // docs/contract.md names: a refused request is retried before a later one is sent).
    let mut sides = Vec::new();
    for (tag, name, conf) in
        [("r", "librdkafka", None), ("m", "librdkafka-inflight1", Some("max.in.flight.requests.per.connection=1"))]
    {
        let debug = dir.join(format!("debug-{name}"));
        crate::fsx::create_dir(&debug)?;
        let mut py = Command::new(python());
        py.arg(&script).arg(&bootstrap).arg(&debug).arg(tag).args(conf).env("PYTHONUNBUFFERED", "1");
        let client = Client::spawn_command(&format!("births-{name}"), py, &dir.join(format!("{name}.err")), t0)?;
        sides.push(Side { tag, client, from: 0, debug: Some(debug) });
    }
    let classes = x.c.okp_client_classes()?;
    let mut java = Command::new(&x.c.rt.java);
    java.env("CLASSPATH", format!("{}:{}", x.c.tools.classpath, classes.display()))
        .env_remove("JAVA_TOOL_OPTIONS")
        .args(&x.c.tools.jvm)
        .arg(BIRTHS_CLASS)
        .arg(&bootstrap)
        .arg(&dir);
    let java = Client::spawn_command("births-java", java, &dir.join("java.err"), t0)?;
    sides.push(Side { tag: "j", client: java, from: 0, debug: None });
    for s in &mut sides {
        let hello = s.wait_for("hello", Duration::from_secs(90)).ok_or_else(|| {
            Error::External(format!("the {} births client did not start within 90 s (or exited)", s.client.name))
        })?;
        if let Some(l) = hello.iter().find(|l| l.text.starts_with("hello")) {
            let f: Vec<&str> = l.text.split('\t').collect();
            o.fact(&format!("client_{}", s.client.name.trim_start_matches("births-")), f[2..].join(" "));
            x.c.journal.note(&format!("births client {}: {}", s.client.name, l.text.replace('\t', " ")));
        }
    }

    let mut births: Vec<Birth> = Vec::new();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut problems: Vec<String> = Vec::new();
    let mut created_failures = 0usize;
    let mut rules = false;
    let all = x.c.kafka_nodes();
    for round in 1..=rounds {
        crate::cluster::node::check_interrupt()?;
        if !rules && round > rounds / 2 {
            x.c.set_observers(&all, RULES)?;
            x.settle_observers();
            rules = true;
            x.c.journal.note(&format!("round {round}: observer.ids on every node now {RULES:?}"));
        }
        let when = if round % 2 == 1 { "after" } else { "before" };
        let t_round = Instant::now();
        let born_before = births.len();
        let mut round_topics: Vec<(usize, String, usize)> = Vec::new();
        for (si, s) in sides.iter_mut().enumerate() {
            s.from = s.client.printed();
            let mut specs = Vec::new();
            for (i, (prefix, _, parts)) in LAYOUTS.iter().enumerate() {
                let name = topic_name(prefix, s.tag, round, i);
                specs.push(spec(&name, parts));
                round_topics.push((si, name, i));
            }
            s.client.send(&format!("round\t{round}\t{when}\t{RECORDS}\t{}", specs.join("\t")))?;
        }
        let mut lines: Vec<Vec<Line>> = Vec::new();
        for s in &mut sides {
            let got = s.wait_for(&format!("end\t{round}\t"), ROUND_TIMEOUT).ok_or_else(|| {
                Error::External(format!(
                    "round {round}: the {} births client did not answer for every record within {} s, or exited \
                     (its stderr is in the run directory's births/)",
                    s.client.name,
                    ROUND_TIMEOUT.as_secs()
                ))
            })?;
            lines.push(got);
        }
        let mut round_lost = false;
        for (si, s) in sides.iter().enumerate() {
            let (reports, other) = reports_of(&lines[si]);
            for l in &other {
                if l.starts_with("created") {
                    created_failures += 1;
                }
                x.c.journal.note(&format!("round {round} {}: {}", s.client.name, l.replace('\t', " ")));
            }
            for (_, name, li) in round_topics.iter().filter(|(i, _, _)| *i == si) {
                let (prefix, layout, parts) = LAYOUTS[*li];
                for p in 0..parts.len() as u32 {
                    let mine: Vec<&Report> =
                        reports.iter().filter(|(t, r)| t == name && r.partition == p).map(|(_, r)| r).collect();
                    let acked = mine.iter().filter(|r| r.acked).count();
                    let logs = settled_logs(x, name, p, acked)?;
                    let b = judge(
                        Birth {
                            topic: name.clone(),
                            partition: p,
                            client: s.client.name.trim_start_matches("births-").to_string(),
                            when: when.to_string(),
                            rules: rules && prefix == "cf",
                            layout: layout.to_string(),
                            replicas: logs.keys().copied().collect(),
                            ..Birth::default()
                        },
                        &mine,
                        &logs,
                    );
                    let mut b = b;
                    if let (false, Some(debug)) = (b.lost.is_empty(), &s.debug) {
                        b.client_says = implicit_acks(&debug.join(format!("round-{round}.log")), name, p);
                    }
                    let key = format!("{} {when} {}", b.client, if rules { "rules" } else { "ids" });
                    tallies.entry(key).or_default().add(&b);
                    if !b.lost.is_empty() || b.first_sequence.is_some() || !b.clean() {
                        let first_errors: Vec<String> = mine
                            .iter()
                            .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.value)))
                            .take(3)
                            .collect();
                        x.c.journal.note(&format!(
                            "round {round} {name}-{p} ({}, {layout}, produce {when} CreateTopics returned): acked {}, errors {}, \
                             log starts at sequence {:?}, lost {:?} ({} before the first sequence), misplaced {:?}, \
                             duplicates {:?}, replicas differing {:?}; first errors {first_errors:?}; the client's log: {:?}",
                            b.client,
                            b.acked,
                            b.errors,
                            b.first_sequence,
                            b.lost,
                            b.lost_before_first_sequence,
                            b.misplaced,
                            b.duplicates,
                            b.diverged,
                            b.client_says
                        ));
                    }
                    if !b.clean() {
                        problems.push(format!("{name}-{p}"));
                    }
                    round_lost |= !b.lost.is_empty() || !b.clean();
                    births.push(b);
                }
            }
        }
        let this = Tally::of(&births[born_before..]);
        x.c.journal.note(&format!(
            "round {round} (produce {when} CreateTopics returned, observer.ids {}): {} partitions, acked {}, errors {}, \
             logs starting above sequence 0: {}, lost {}; {:.1} s",
            if rules { "with the rule" } else { "4" },
            this.partitions,
            this.acked,
            this.errors,
            this.partitions_starting_above_sequence_0,
            this.lost,
            t_round.elapsed().as_secs_f64()
        ));
        let debug_logs: Vec<(String, PathBuf)> = sides
            .iter()
            .filter_map(|s| Some((s.client.name.clone(), s.debug.as_ref()?.join(format!("round-{round}.log")))))
            .collect();
        if round_lost {
            let lost_topics: Vec<String> = births[born_before..]
                .iter()
                .filter(|b| !b.lost.is_empty() || !b.clean())
                .map(|b| b.topic.clone())
                .collect();
            keep_round(x, round, &lost_topics, &debug_logs, &evidence);
        } else {
            for (_, log) in &debug_logs {
                let _ = std::fs::remove_file(log);
            }
        }
        for (si, s) in sides.iter_mut().enumerate() {
            let names: Vec<&str> =
                round_topics.iter().filter(|(i, _, _)| *i == si).map(|(_, n, _)| n.as_str()).collect();
            s.from = s.client.printed();
            s.client.send(&format!("delete\t{}", names.join("\t")))?;
        }
        for s in &mut sides {
            match s.wait_for("delete", Duration::from_secs(90)) {
                Some(l) if l.iter().any(|l| l.text.starts_with("deleted")) => {}
                other => x.c.journal.note(&format!(
                    "round {round}: {} could not delete its topics: {:?}",
                    s.client.name,
                    other.and_then(|l| l.last().map(|l| l.text.clone()))
                )),
            }
        }
        if round % 10 == 0 || round == rounds {
            let lost: usize = births.iter().map(|b| b.lost.len()).sum();
            crate::out::note(format!(
                "verify: CREATE round {round}/{rounds}: {} partitions born, {lost} acked records lost so far ({:.0} s)",
                births.len(),
                t0.elapsed().as_secs_f64()
            ));
        }
    }
    for s in sides {
        let (_, done) = s.client.stop(Duration::from_secs(30));
        if !done {
            x.c.journal.note("a births client did not end by itself after its stdin closed (killed)");
        }
    }
    if rules {
        x.c.set_observers(&all, "4\n")?;
    }

    let total = Tally::of(&births);
    o.fact("rounds", rounds);
    o.fact("records_per_partition", RECORDS);
    o.fact("totals", &total);
    o.fact("by_client_when_file", &tallies);
    o.fact("seconds", super::round(t0.elapsed().as_secs_f64()));
    o.fact(
        "partitions_starting_above_sequence_0",
        births
            .iter()
            .filter(|b| b.first_sequence.is_some())
            .map(|b| format!("{}-{}", b.topic, b.partition))
            .collect::<Vec<_>>(),
    );
    write_births(&evidence, &births)?;
    o.check(
        "every topic created as asked (CreateTopics answered ok for each)",
        created_failures == 0,
        format!("{created_failures} CreateTopics failures over {rounds} rounds"),
    );
    o.check(
        &format!("{} partitions born under librdkafka and Java producers (idempotent, acks=all): every acked record at its acked offset on every replica, once, except KAFKA-15591's (below)", total.partitions),
        problems.is_empty(),
        format!(
            "acked {}, errors {}, lost {} ({} before a log's first sequence), misplaced {}, duplicated {}, partitions whose replicas differ {}; {}",
            total.acked,
            total.errors,
            total.lost,
            total.lost_before_first_sequence,
            total.misplaced,
            total.duplicates,
            total.diverged,
            if problems.is_empty() { "none outside the pattern".to_string() } else { format!("not clean: {}", problems.join(", ")) }
        ),
    );
    x.c.journal.note(&format!(
        "KAFKA-15591 (upstream, fixed in Kafka 4.5): {} partitions' logs start above sequence 0 (their first requests were refused, \
         a later one taken); {} acked records lost that way (a client that reported them delivered). Not the patch's: \
         the same pattern is counted on upstream jars.",
        total.partitions_starting_above_sequence_0, total.lost_before_first_sequence
    ));
    Ok(())
}

/// KAFKA-15591's broker half, reproduced without a client: on a new partition, a fresh idempotent
/// producer's first batch at sequence 5 (as a request sent after a refused one arrives), then
/// the batch at sequence 0 (that refused request, retried). Up to Kafka 4.4 the first is taken
/// at offset 0 (no producer state: any first sequence is taken, KIP-360) and the second refused
/// with OUT_OF_ORDER_SEQUENCE_NUMBER (45): records 0–4 can never be written. Recorded as facts,
/// not asserted: it is the release's rule, the same on upstream and patched jars.
fn sequence_rule(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    const TOPIC: &str = "cz-sequence-rule";
    let out = x.c.create_topic(TOPIC, "1:2:3", &["min.insync.replicas=2"])?;
    if !out.ok() {
        return Err(Error::External(format!(
            "creating {TOPIC} failed: {}",
            super::last_line(&out.stdout, &out.stderr)
        )));
    }
    let state = x.wait(
        o,
        TOPIC,
        Duration::from_secs(30),
        &format!("{TOPIC} has a leader"),
        "sequence_rule_leader_seconds",
        |s| s.leader.is_some(),
    )?;
    let Some(leader) = state.and_then(|s| s.leader) else { return Ok(()) };
    let port = x.c.broker_port(leader);
    let answers = (|| {
        let mut probe = crate::wire::Probe::connect(port).ok_or("no connection")?;
        // COORDINATOR_LOAD_IN_PROGRESS (14) and COORDINATOR_NOT_AVAILABLE (15) while the broker's
        // producer id block or coordinator comes up after the rolls: asked again, as a client does.
        let mut tries = 0;
        let (id, epoch) = loop {
            tries += 1;
            match probe.init_producer_id() {
                Some(Ok(p)) => break p,
                Some(Err(14 | 15)) if tries < 30 => std::thread::sleep(Duration::from_millis(500)),
                Some(Err(code)) => return Err(format!("InitProducerId: error {code} (try {tries})")),
                None => return Err("InitProducerId: no answer, or no version okp speaks".to_string()),
            }
        };
        let later = probe
            .produce(TOPIC, 0, &segments::encode_batch(id, epoch, 5, &["cz-5", "cz-6"]), 10_000)
            .ok_or("Produce at sequence 5: no answer, or no version okp speaks")?;
        let retried = probe
            .produce(TOPIC, 0, &segments::encode_batch(id, epoch, 0, &["cz-0"]), 10_000)
            .ok_or("Produce at sequence 0: no answer")?;
        Ok::<_, String>((id, later, retried))
    })();
    let show = |a: Result<i64, i16>| match a {
        Ok(offset) => format!("taken at offset {offset}"),
        Err(45) => "refused: OUT_OF_ORDER_SEQUENCE_NUMBER (45)".to_string(),
        Err(code) => format!("refused: error {code}"),
    };
    match answers {
        Ok((id, later, retried)) => {
            o.fact("sequence_rule_first_batch_at_sequence_5", show(later));
            o.fact("sequence_rule_then_sequence_0", show(retried));
            x.c.journal.note(&format!(
                "KAFKA-15591's broker rule on this release: producer {id}'s first batch to the new {TOPIC}-0 at sequence 5: {}; \
                 then its batch at sequence 0: {} (leader {leader}, raw Produce from okp's probe)",
                show(later),
                show(retried)
            ));
        }
        Err(why) => {
            x.c.journal.note(&format!("the raw Produce to {TOPIC} on broker {leader}: {why}; the rule is not recorded"))
        }
    }
    let _ = x.c.delete_topic(TOPIC);
    Ok(())
}

/// librdkafka's lines of `topic` [`p`] that say it took records as delivered because a later
/// request was (`IMPLICITACK`), and the errors its first requests got (`MSGSET … error`).
fn implicit_acks(debug_log: &Path, topic: &str, p: u32) -> Vec<String> {
    let text = crate::fsx::read::lossy_text(debug_log, crate::fsx::read::MAX_TEXT);
    let needle = format!("{topic} [{p}]");
    text.lines()
        .filter(|l| l.contains(&needle) && (l.contains("IMPLICITACK") || (l.contains("MSGSET") && l.contains("error"))))
        .map(|l| l.split_once(" [thrd:").map_or(l, |(_, rest)| rest).chars().take(300).collect())
        .take(6)
        .collect()
}

/// A losing round's librdkafka debug log and the brokers' lines naming its losing topics, kept
/// in the evidence.
fn keep_round(x: &Ctx, round: u32, topics: &[String], debug_logs: &[(String, PathBuf)], evidence: &Path) {
    let dest = evidence.join(format!("round-{round}"));
    if crate::fsx::create_dir(&dest).is_err() {
        return;
    }
    for (client, log) in debug_logs {
        if log.is_file() {
            let _ = std::fs::copy(log, dest.join(format!("{}-debug.log", client.trim_start_matches("births-"))));
        }
    }
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let lines = x.c.grep_logs(&names);
    let _ = crate::fsx::write_atomic(&dest.join("brokers.log"), lines.join("\n").as_bytes());
}

/// Every partition that was not plain (a loss, a sequence gap, a difference) as one JSON file.
fn write_births(evidence: &Path, births: &[Birth]) -> Result<()> {
    let notable: Vec<&Birth> =
        births.iter().filter(|b| !b.lost.is_empty() || b.first_sequence.is_some() || !b.clean()).collect();
    if notable.is_empty() {
        return Ok(());
    }
    crate::fsx::create_dir(evidence)?;
    let text = serde_json::to_string_pretty(&notable).map_err(|e| Error::External(format!("births.json: {e}")))?;
    crate::fsx::write_atomic(&evidence.join("births.json"), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::segments::parse_segment;
    use crate::cluster::segments::tests::batch;

    fn ack(v: &str, o: i64) -> Report {
        Report { value: v.into(), partition: 0, acked: true, offset: (o >= 0).then_some(o), error: None }
    }

    fn logs(ids: &[i32], seg: &[u8]) -> BTreeMap<i32, Vec<Record>> {
        ids.iter().map(|id| (*id, parse_segment(seg).unwrap())).collect()
    }

    /// The report of issue 44: the first two records acked, the log starting at the third
    /// record's sequence (a later request taken first). Both losses are KAFKA-15591's.
    #[test]
    fn acked_records_before_the_logs_first_sequence_are_that_pattern() {
        let seg = batch(0, 77, 2, &[Some("r-1-0-0-000002"), Some("r-1-0-0-000003")], 0);
        let reports =
            [ack("r-1-0-0-000000", -1), ack("r-1-0-0-000001", -1), ack("r-1-0-0-000002", 0), ack("r-1-0-0-000003", 1)];
        let refs: Vec<&Report> = reports.iter().collect();
        let b = judge(Birth::default(), &refs, &logs(&[1, 2, 3, 4], &seg));
        assert_eq!(b.first_sequence, Some(2));
        assert_eq!((b.lost.len(), b.lost_before_first_sequence, b.other_losses()), (2, 2, 0));
        assert_eq!(b.acked_without_offset, 2);
        assert!(b.lost[0].ends_with("acked without an offset"), "{:?}", b.lost);
        assert!(b.clean(), "{b:?}");
    }

    /// A loss after the first sequence, a record at another offset, a duplicate and a replica
    /// that lacks records are each not clean.
    #[test]
    fn every_other_difference_fails() {
        let seg = batch(0, 77, 0, &[Some("j-1-0-0-000000"), Some("j-1-0-0-000001"), Some("j-1-0-0-000001")], 0);
        let reports = [ack("j-1-0-0-000000", 0), ack("j-1-0-0-000001", 2), ack("j-1-0-0-000005", 3)];
        let refs: Vec<&Report> = reports.iter().collect();
        let mut l = logs(&[1, 2], &seg);
        l.insert(4, parse_segment(&batch(0, 77, 0, &[Some("j-1-0-0-000000")], 0)).unwrap());
        let b = judge(Birth::default(), &refs, &l);
        assert_eq!(b.first_sequence, None);
        assert_eq!(b.other_losses(), 1, "{b:?}");
        assert!(b.misplaced.is_empty(), "000001 is at offsets 1 and 2, so acked at 2 is there");
        assert_eq!(b.duplicates, vec!["j-1-0-0-000001".to_string()]);
        assert_eq!(b.diverged, vec![4]);
        assert!(!b.clean());
        let moved = [ack("j-1-0-0-000000", 1)];
        let b = judge(Birth::default(), &moved.iter().collect::<Vec<_>>(), &logs(&[1], &seg));
        assert_eq!(b.misplaced.len(), 1);
    }

    /// The lines of the issue's mechanism as librdkafka 2.16 logs them, picked for one partition.
    #[test]
    fn the_client_log_lines_of_a_loss_are_picked_by_partition() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("round-11.log");
        std::fs::write(
            &log,
            "1.0 MSGSET [rdkafka#producer-12] [thrd:127.0.0.1:28782/2]: cr-r-11-0 [1]: MessageSet with 2 message(s) (MsgId 1, BaseSeq 0) encountered error: Broker: Unknown topic or partition (actions Refresh,MsgNotPersisted)\n\
             1.1 MSGSET [rdkafka#producer-12] [thrd:127.0.0.1:28781/1]: cr-r-11-0 [0]: MessageSet with 2 message(s) encountered error: x\n\
             1.2 IMPLICITACK [rdkafka#producer-12] [thrd:127.0.0.1:28782/2]: cr-r-11-0 [1] 2 message(s) implicitly acked by subsequent batch success (msgids 1..2, last acked 8)\n",
        )
        .unwrap();
        let got = implicit_acks(&log, "cr-r-11-0", 1);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[1].contains("implicitly acked") && got[1].starts_with("127.0.0.1:28782/2]"));
        assert!(implicit_acks(&dir.path().join("none.log"), "t", 0).is_empty());
    }

    #[test]
    fn specs_and_reports_round_trip() {
        assert_eq!(spec("cr-r-1-0", &[&[1, 2, 3, 4], &[4, 2, 3, 1]]), "cr-r-1-0=1,2,3,4|4,2,3,1");
        assert_eq!(index_of("r-12-3-1-000042"), Some(42));
        let lines: Vec<Line> = [
            "ack\tt\t1\t7\tr-1-0-1-000003\t120",
            "ack\tt\t0\t-1\tr-1-0-0-000001\t121",
            "err\tt\t0\tr-1-0-0-000000\tKafkaError _MSG_TIMED_OUT\t15001",
            "created\t1\tt\t30\terror TopicExistsException: x",
            "garbage",
        ]
        .iter()
        .map(|t| Line { t_ms: 0, text: t.to_string() })
        .collect();
        let (reports, other) = reports_of(&lines);
        assert_eq!(reports.len(), 3);
        assert_eq!((reports[0].1.partition, reports[0].1.offset), (1, Some(7)));
        assert!(reports[1].1.acked && reports[1].1.offset.is_none(), "a success without an offset is an ack");
        assert!(!reports[2].1.acked && reports[2].1.error.is_some());
        assert_eq!(other.len(), 1);
    }
}
