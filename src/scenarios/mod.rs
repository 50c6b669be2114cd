//! The scenario suite okp verify runs on a live cluster: the reference
//! implementation's S1–S8 plus the initial-ISR, latency, transaction,
//! demotion and reassignment checks. Each scenario asserts with numbers (`Check`s) and records
//! facts and timings; each leaves the cluster as it found it: every node up,
//! observer.ids = `4` everywhere, broker 4 outside every ISR.
//!
//! Not here: processes and tools (cluster/), the report (verify.rs).

mod auto;
mod births;
mod elections;
mod failures;
mod hosts;
mod metrics;
mod migrate;
mod mm2;
pub mod prom;
mod promotion;
mod reassign;
mod roll;
mod topic;
mod topic_watch;
mod topology;
pub mod upgrade;
pub mod wan;
mod write_path;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::cluster::tools::PartitionState;
use crate::cluster::{Cluster, Produced, OBSERVER};
use crate::error::{Error, Result};
use crate::model::Mode;

/// Whether the jars under test carry the patch set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    Patched,
    /// Unpatched upstream jars of the same release: the negative control.
    Upstream,
}

impl Flavor {
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Patched => "patched",
            Flavor::Upstream => "upstream",
        }
    }
}

pub struct Scenario {
    pub id: &'static str,
    pub title: &'static str,
    /// A gate scenario must fail on upstream jars: it is what tells the two apart.
    pub gate: bool,
    run: fn(&mut Ctx, &mut ScenarioResult) -> Result<()>,
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario { id: "INIT", title: "observer absent from the initial ISR; acks=all writes; observer log identical", gate: true, run: write_path::init },
    Scenario { id: "LAT", title: "acks=all latency with the observer present, and with it frozen (HW gate)", gate: true, run: write_path::latency },
    Scenario { id: "S1", title: "leader crash", gate: false, run: failures::s1_leader_crash },
    Scenario { id: "S2", title: "ISR follower crash", gate: false, run: failures::s2_follower_crash },
    Scenario { id: "S3", title: "observer crash while producing; logs byte-identical after restart", gate: false, run: failures::s3_observer_crash },
    Scenario { id: "TXN", title: "transactional topic: read_committed view and batches identical on the observer", gate: false, run: write_path::transactions },
    Scenario { id: "S5", title: "promotion of a lagging observer (HW never moves backwards)", gate: false, run: promotion::s5_lagging_promotion },
    Scenario { id: "DEM", title: "live promotion and demotion of a follower", gate: false, run: promotion::demotion },
    Scenario { id: "STALE", title: "an observer the ISR still names when its leader dies (demoted on every node but the leader, then the leader killed) is never elected", gate: false, run: failures::stale_isr_election },
    Scenario { id: "AUTO", title: "auto-promotion watchdog: two primaries down → the caught-up observer promoted, acks=all goes on; back → demoted after the cooldown and a double confirmation", gate: false, run: auto::auto },
    Scenario { id: "S6", title: "observer.ids inconsistent across nodes", gate: false, run: promotion::s6_inconsistent },
    Scenario { id: "S7", title: "observer.ids garbage, unreadable, deleted: set frozen, writes continue", gate: false, run: promotion::s7_bad_file },
    Scenario { id: "S8", title: "controller failover: the new controller still filters the initial ISR and refuses observer leaders", gate: false, run: failures::s8_controller_failover },
    Scenario { id: "MULTI", title: "two observers of one partition (rf5, min.insync.replicas=3): neither in the ISR nor leading; min.insync counts primaries; promote one, the other stays out; HW waits for neither", gate: false, run: topology::multi },
    Scenario { id: "FFO", title: "fetch from the observer (KIP-392): a consumer of its rack reads from it, only up to the HW, read_committed exact; frozen observer: never uncommitted data", gate: false, run: topology::ffo },
    Scenario { id: "S4", title: "all primaries down: no observer leader even with unclean election; promote, elect, serve", gate: true, run: failures::s4_all_primaries_down },
    Scenario { id: "MET", title: "metrics layer: JMX gauges in steady state, with a lagging observer, during a demotion, with an observer stuck in the ISR", gate: false, run: metrics::met },
    // Opt-in (`--scenarios PROM` or `--prometheus`): okp's alert rules on a live Prometheus scraping the JMX exporter.
    Scenario { id: "PROM", title: "Prometheus alerts on a live cluster: silent in steady state; each condition (observer lagging, a primary out of the ISR, an observer in the ISR, sets or files that disagree, a malformed file, a rule with no live broker, a set emptied, the status job stale or unreachable) fires its alert within its for: and resolves; every dashboard query answers; promtool agrees offline", gate: false, run: prom::prom_scenario },
    // ---- edge: reassignment (docs/contract.md#reassignment) ----
    Scenario { id: "REASSIGN", title: "reassignment under acks=all load: observer-only targets refused; the observer added (never in the ISR, whole log), primary 3 moved out and back, the observer removed", gate: true, run: reassign::reassign },
    Scenario { id: "TOPIC", title: "observers per topic: 4 observes tobs and fully replicates tfull by one rule; acks=all on tobs does not wait for 4 frozen, tfull does (as upstream); the rules swapped live; an exact rule wins over a prefix rule", gate: true, run: topic::topic },
    // Edges: elections and leader balance (docs/contract.md). Last: it restarts the nodes that can be controller, twice.
    Scenario { id: "PREF", title: "preferred election of an observer leader keeps a leader; auto rebalance with an observer first: no leader change, imbalance 0", gate: true, run: elections::pref },
    // Opt-in (`--scenarios CREATE`, `--create-rounds N`): the first second of a partition's life under librdkafka and Java producers.
    Scenario { id: "CREATE", title: "topics created round after round and written from the first moment by librdkafka and Java idempotent acks=all producers: every acked record at its acked offset on every replica, once", gate: false, run: births::create },
    // Opt-in (`--scenarios HOSTS`): its own cluster on separate hosts (network namespaces, sshd), operated over ssh and Ansible.
    Scenario { id: "HOSTS", title: "separate hosts over real ssh: an Ansible roll of the bundle under acks=all writes (a damaged jar on one host rolled back); promote, demote, watch over ssh; a host down, unreachable, frozen, stalled, re-keyed, read-only: each named in bounded time, every observer.ids as before", gate: false, run: hosts::hosts },
    // Opt-in (`--scenarios WAN`, `--wan-rtt`, `--wan-bandwidth`): its own cluster in two regions behind a WAN link.
    Scenario { id: "WAN", title: "two regions behind a real WAN link (delay and bandwidth cap, measured): acks=all latency with no remote replica, a remote observer, a remote ISR follower side by side; the high watermark never waits for the observer; its lag under a saturating load drains; KIP-392 keeps a region-b consumer's reads off the link; region b lost unnoticed; region a lost: the watchdog promotes the observer across the link and writes resume", gate: false, run: wan::wan },
    // Opt-in (`--scenarios MM2`, WAN's link flags): WAN's control group, MirrorMaker 2 to a second cluster in region b.
    Scenario { id: "MM2", title: "WAN's control group: the same regions and link, the source topic copied to region b twice, by okp's observer and by MirrorMaker 2 to a second cluster; the same kill -9 of the MM2 worker (in its offset-flush window) and of the observer: duplicates, acked records missing, offsets against the source's, an aborted transaction under read_committed, where a consumer group resumes on each copy", gate: false, run: mm2::mm2 },
    Scenario { id: "ROLL", title: "rolling adoption with the shipped bundle: back to the release's jars, okp install one node at a time under acks=all writes, observer named, okp rollback rolling; runs last", gate: false, run: roll::roll },
    // Opt-in and alone (`--migrate`): the ZooKeeper cluster taken to KRaft, left there.
    Scenario { id: "MIGRATE", title: "ZooKeeper → KRaft migration under acks=all writes (controllers in migration mode, brokers to dual-write, brokers to KRaft, finalised, ZooKeeper stopped): the observer never in an ISR it observes nor leading in any phase, the KRaft controller deciding in the dual-write window, nothing lost", gate: false, run: migrate::migrate },
    // Opt-in and alone (`--upgrade-to B`): the cluster rolled to another release, left there.
    Scenario { id: "UPGRADE", title: "rolling upgrade to patched release B under acks=all writes (controllers first; status, promote, demote and one rollback with releases mixed; finalised): the observer never in an ISR it observes nor leading, a full replica where its rule says, nothing lost", gate: false, run: upgrade::upgrade },
];

/// A scenario's typical wall time in seconds on this project's 2-core machine, in `mode`, on two
/// lanes (KRaft: the 2026-12-02 run with the servers' class-data-sharing archive and the resident
/// tool JVMs, 351 s; ZooKeeper: the split that gave 373 s, as the one computed from that run's own
/// timings put PREF and ROLL in one lane and gave 418 s): what `lanes` balances. Only the split
/// depends on it.
fn typical_seconds(id: &str, mode: Mode) -> u32 {
    // (id, ZooKeeper, KRaft)
    const TYPICAL: [(&str, u32, u32); 28] = [
        ("PROM", 240, 240),
        ("MM2", 300, 320),
        ("WAN", 300, 330),
        ("HOSTS", 300, 330),
        ("MIGRATE", 200, 200),
        ("UPGRADE", 300, 330),
        ("CREATE", 90, 90),
        ("TOPIC", 125, 155),
        ("ROLL", 70, 117),
        ("PREF", 65, 71),
        ("REASSIGN", 82, 64),
        ("MET", 50, 33),
        ("S4", 44, 38),
        ("MULTI", 44, 45),
        ("AUTO", 32, 28),
        ("FFO", 35, 34),
        ("S7", 40, 34),
        ("S6", 27, 22),
        ("STALE", 25, 15),
        ("S1", 17, 10),
        ("S8", 17, 9),
        ("S2", 14, 9),
        ("S5", 14, 16),
        ("DEM", 14, 14),
        ("S3", 14, 9),
        ("LAT", 12, 9),
        ("INIT", 12, 8),
        ("TXN", 8, 9),
    ];
    TYPICAL.iter().find(|(x, _, _)| *x == id).map_or(8, |&(_, zk, kraft)| if mode == Mode::Kraft { kraft } else { zk })
}

/// Splits `selected` into at most `lanes` lanes, each run on a cluster of its own at the same
/// time: the longest scenario first to the lane with the least work so far (ties: the lower
/// lane), then each lane in suite order. The same selection always gives the same lanes. ROLL,
/// which moves its cluster's nodes onto the release's jars and back, stays last in its lane.
pub fn lanes(selected: &[&'static Scenario], lanes: usize, mode: Mode) -> Vec<Vec<&'static Scenario>> {
    let lanes = lanes.max(1);
    let order = |s: &Scenario| SCENARIOS.iter().position(|x| x.id == s.id).unwrap_or(usize::MAX);
    let mut by_cost: Vec<&'static Scenario> = selected.to_vec();
    by_cost.sort_by_key(|s| (std::cmp::Reverse(typical_seconds(s.id, mode)), order(s)));
    let mut out: Vec<(u32, Vec<&'static Scenario>)> = vec![(0, Vec::new()); lanes];
    for s in by_cost {
        let i = (0..lanes).min_by_key(|&i| (out[i].0, i)).unwrap_or(0);
        out[i].0 += typical_seconds(s.id, mode);
        out[i].1.push(s);
    }
    let mut out: Vec<Vec<&'static Scenario>> = out.into_iter().map(|(_, l)| l).filter(|l| !l.is_empty()).collect();
    for l in &mut out {
        l.sort_by_key(|s| order(s));
    }
    out
}

/// Scenarios a run takes only when `--scenarios` names them: HOSTS builds a cluster of its own
/// on separate hosts and takes about five minutes, as long as a whole pair's suite; CREATE needs
/// confluent-kafka's Python and is sized by `--create-rounds` (a stress run takes thousands);
/// UPGRADE needs a second release (`--upgrade-to`) and leaves the cluster on it.
pub const OPT_IN: &[&str] = &["HOSTS", "CREATE", "UPGRADE", "MIGRATE", "PROM", "WAN", "MM2"];

/// Scenarios whose runs have a page of their own rather than a column of the release × scenario
/// page: UPGRADE's run is a hop between two releases, MIGRATE's one between two modes
/// (evidence/upgrade/UPGRADE.md), WAN's and MM2's a release over a given link (evidence/wan/WAN.md).
pub const OWN_PAGE: &[&str] = &["UPGRADE", "MIGRATE", "WAN", "MM2"];

/// The suite a run of `flavor` takes when `--scenarios` names none: every scenario but the
/// opt-in ones (an upstream run: the gates only). What "the whole suite" means in the evidence.
pub fn default_suite(flavor: Flavor) -> impl Iterator<Item = &'static Scenario> {
    SCENARIOS.iter().filter(move |s| (s.gate || flavor == Flavor::Patched) && !OPT_IN.contains(&s.id))
}

/// Why scenario `id` cannot run on this machine, if it cannot (HOSTS: namespaces, sshd, root;
/// CREATE: confluent-kafka).
pub fn unavailable(id: &str) -> Option<String> {
    match id {
        "HOSTS" => crate::hosts::available().err(),
        "CREATE" => births::unavailable(),
        "PROM" => prom::unavailable(),
        "WAN" => wan::unavailable(),
        "MM2" => mm2::unavailable(),
        _ => None,
    }
}

/// The sizes of the scenarios that take one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// CREATE's rounds: each creates 5 topics (10 partitions) per client and writes 50 records to each.
    pub create_rounds: u32,
    /// MIGRATE's negative control: the KRaft controllers on the release's own jars.
    pub upstream_controllers: bool,
    /// MIGRATE rolls back to ZooKeeper from dual-write with KRaft brokers instead of finalising.
    pub migrate_back: bool,
    /// Every cluster monitored (`--prometheus`, or PROM selected): the JMX exporter in each node
    /// and a Prometheus server scraping them.
    pub prometheus: bool,
    /// WAN's link (`--wan-rtt`, `--wan-bandwidth`); None: `wan::DEFAULT_LINK`.
    pub wan: Option<crate::hosts::wan::Link>,
    /// MM2's worker with exactly-once source support (`--mm2-exactly-once`).
    pub mm2_exactly_once: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            create_rounds: 20,
            upstream_controllers: false,
            migrate_back: false,
            prometheus: false,
            wan: None,
            mm2_exactly_once: false,
        }
    }
}

/// Scenarios that need an optional layer of the patch set in the jars.
pub fn needs_layer(id: &str) -> Option<crate::model::Layer> {
    (id == "MET" || id == "PROM").then_some(crate::model::Layer::Metrics)
}

pub fn by_id(id: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.id.eq_ignore_ascii_case(id))
}

/// The topics every scenario shares, created once before the first scenario
/// (assignment, configs). Broker 4 is the observer in each.
pub const TOPICS: &[(&str, &str, &[&str])] = &[
    ("obs", "1:2:3:4", &["min.insync.replicas=2", "unclean.leader.election.enable=true"]),
    ("rf3", "1:2:4", &["min.insync.replicas=2"]),
    ("tx", "2:3:1:4", &["min.insync.replicas=2"]),
    ("lat", "1:2:3:4", &["min.insync.replicas=2"]),
    ("lag", "1:2:3:4", &["min.insync.replicas=2"]),
];

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    pub name: String,
    pub pass: bool,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioResult {
    pub id: String,
    pub title: String,
    pub gate: bool,
    pub pass: bool,
    pub seconds: f64,
    pub checks: Vec<Check>,
    pub facts: BTreeMap<String, serde_json::Value>,
    pub error: Option<String>,
    /// The journal file of this scenario, relative to the run's evidence directory.
    pub evidence: String,
    /// The lane (cluster) it ran on, in a run of more than one lane; absent in a one-lane run
    /// (every run written before lanes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<u8>,
}

impl ScenarioResult {
    /// A scenario's outcome before it runs: not passed, no checks, its journal `evidence`.
    pub fn of(s: &Scenario, evidence: String, lane: Option<u8>) -> ScenarioResult {
        ScenarioResult {
            id: s.id.into(),
            title: s.title.into(),
            gate: s.gate,
            pass: false,
            seconds: 0.0,
            checks: Vec::new(),
            facts: BTreeMap::new(),
            error: None,
            evidence,
            lane,
        }
    }

    pub fn check(&mut self, name: &str, pass: bool, detail: impl Into<String>) -> bool {
        self.checks.push(Check { name: name.to_string(), pass, detail: detail.into() });
        pass
    }

    pub fn fact(&mut self, name: &str, v: impl serde::Serialize) {
        self.facts.insert(name.to_string(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null));
    }
}

/// What a scenario works with: the cluster and the ledger of acknowledged
/// records of topic `obs` (every one must be readable at every read-back).
pub struct Ctx<'a> {
    pub c: &'a mut Cluster,
    pub flavor: Flavor,
    pub ledger: Vec<String>,
    /// Records ever sent to `obs`, acknowledged or not (how many to read back).
    pub sent: usize,
    /// This is the last scenario on this cluster (it is torn down next): a scenario may leave
    /// out what it does only to hand the next one its cluster as it found it.
    pub last: bool,
    pub tuning: Tuning,
}

impl Ctx<'_> {
    /// Waits until every node has read the last observer.ids change: the hooks' cache TTL (and a
    /// second) since the last edit. Before anything whose outcome depends on the new set (a topic
    /// created right after an edit would otherwise get its initial ISR and first expansions from
    /// nodes still holding the old one).
    pub fn settle_observers(&mut self) {
        if let Some(left) =
            self.c.since_observers_changed().and_then(|since| (self.ttl() + Duration::from_secs(1)).checked_sub(since))
        {
            self.c.journal.note(&format!(
                "waiting {:.1} s: every node reads the last observer.ids change within its cache TTL ({} s)",
                left.as_secs_f64(),
                self.ttl().as_secs()
            ));
            std::thread::sleep(left);
        }
    }

    pub fn lag(&self) -> Duration {
        Duration::from_millis(self.c.timers.lag_ms)
    }

    pub fn session(&self) -> Duration {
        Duration::from_millis(self.c.timers.session_ms)
    }

    /// How long a hook takes, at most, to see an edited observer.ids (its cache TTL is 5 s).
    pub fn ttl(&self) -> Duration {
        crate::cluster::OBSERVER_IDS_TTL
    }

    /// Partition 0 of `topic` as every broker that answers has it (`Cluster::probe_agreed`), asked
    /// for up to 5 s while their views differ; then the release's describe decides.
    pub fn state(&mut self, topic: &str) -> Result<PartitionState> {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Some((s, by)) = self.c.probe_agreed(topic) {
                self.c.note_agreed("state", topic, &s, &by);
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        self.c.journal.note(&format!("{topic}: the brokers' views differ after 5 s; the release's describe decides"));
        self.c.describe(topic)?.ok_or_else(|| Error::External(format!("describe of {topic} printed no partition 0")))
    }

    /// Produces `n` records to `obs`, journals the outcome, and records what was acked.
    pub fn produce_obs(&mut self, o: &mut ScenarioResult, tag: &str, n: usize, exclude: &[i32]) -> Result<Produced> {
        let p = self.c.produce("obs", tag, n, exclude)?;
        self.sent += p.sent;
        self.ledger.extend(p.values.iter().cloned());
        o.check(
            &format!("{tag}: {n} records acked with acks=all, 0 errors"),
            p.all_acked(),
            format!("sent {}, errors {}, rc {}", p.sent, p.errors, p.rc),
        );
        Ok(p)
    }

    /// Reads `obs` back from the earliest offset: every acked record must be there, once.
    pub fn read_back(&mut self, o: &mut ScenarioResult, label: &str, exclude: &[i32]) -> Result<bool> {
        let got = self.c.consume("obs", self.sent, false, exclude)?;
        self.judge_read_back(o, label, got)
    }

    /// `read_back` with okp's group-less reader, for a cluster where the group coordinator may
    /// be offline (every primary down): what is proven is the leader serving the records, not
    /// the group coordinator's availability.
    pub fn read_back_without_group(&mut self, o: &mut ScenarioResult, label: &str, exclude: &[i32]) -> Result<bool> {
        let got = self.c.consume_without_group("obs", self.sent, exclude)?;
        self.judge_read_back(o, label, got)
    }

    fn judge_read_back(&mut self, o: &mut ScenarioResult, label: &str, got: Vec<String>) -> Result<bool> {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for v in &got {
            *seen.entry(v.as_str()).or_default() += 1;
        }
        let missing = self.ledger.iter().filter(|v| !seen.contains_key(v.as_str())).count();
        let dups = seen.values().filter(|n| **n > 1).count();
        o.fact(
            &format!("{label}_read_back"),
            serde_json::json!({"acked": self.ledger.len(), "read": got.len(), "missing": missing, "duplicated": dups}),
        );
        Ok(o.check(
            &format!("{label}: every acked record read back (zero loss, no duplicates)"),
            missing == 0 && dups == 0,
            format!("acked {}, read {}, missing {missing}, duplicated {dups}", self.ledger.len(), got.len()),
        ))
    }

    /// Watches `topic` for `hold`, failing the check if `bad` is ever true.
    pub fn hold(
        &mut self,
        o: &mut ScenarioResult,
        topic: &str,
        hold: Duration,
        name: &str,
        bad: impl Fn(&PartitionState) -> bool,
    ) -> Result<bool> {
        let held = self.hold_all(o, &[topic], hold, |_| name.to_string(), bad)?;
        Ok(held.iter().all(|h| *h))
    }

    /// `hold` over several topics in one watch of `hold` (`Cluster::watch_all`): one check per
    /// topic, named by `name`; whether each held.
    pub fn hold_all(
        &mut self,
        o: &mut ScenarioResult,
        topics: &[&str],
        hold: Duration,
        name: impl Fn(&str) -> String,
        bad: impl Fn(&PartitionState) -> bool,
    ) -> Result<Vec<bool>> {
        let seen = self.c.watch_all(topics, hold, bad)?;
        Ok(topics
            .iter()
            .zip(seen)
            .map(|(topic, (polls, violations))| {
                let detail = match violations.as_slice() {
                    [] => format!("held for {:.1} s over {polls} polls", hold.as_secs_f64()),
                    [one] => format!("1 of {polls} polls: {one}"),
                    [first, .., last] => {
                        format!("{} of {polls} polls; first {first}; last {last}", violations.len())
                    }
                };
                o.check(&name(topic), violations.is_empty() && polls > 0, detail)
            })
            .collect())
    }

    /// Waits until `pred` holds for `topic`; records the time as fact `fact`.
    pub fn wait(
        &mut self,
        o: &mut ScenarioResult,
        topic: &str,
        timeout: Duration,
        name: &str,
        fact: &str,
        pred: impl Fn(&PartitionState) -> bool,
    ) -> Result<Option<PartitionState>> {
        let (s, secs) = self.c.wait_state(topic, timeout, &pred, |_| {})?;
        o.fact(fact, round(secs));
        o.check(
            name,
            s.is_some(),
            match &s {
                Some(s) => format!("after {secs:.1} s: {}", s.show()),
                None => format!("not within {:.0} s", timeout.as_secs_f64()),
            },
        );
        Ok(s)
    }

    /// Writes `path`, a nodes file naming every node's observer.ids (role and path), for okp's
    /// own `observers` commands run against this cluster.
    pub fn write_nodes_file(&self, path: &std::path::Path) -> Result<()> {
        let mut text = String::from("nodes:\n");
        for id in self.c.kafka_nodes() {
            let role = if self.c.controllers().contains(&id) { "controller" } else { "broker" };
            text.push_str(&format!(
                "  - {{id: {id}, role: {role}, path: '{}'}}\n",
                self.c.node(id).observer_file().display()
            ));
        }
        crate::fsx::write_atomic(path, text.as_bytes())
    }

    /// Observer files back to `4` everywhere, and broker 4 out of the ISR of `topic`.
    pub fn restore_observer(&mut self, o: &mut ScenarioResult, topic: &str) -> Result<()> {
        let all = self.c.kafka_nodes();
        self.c.set_observers(&all, "4\n")?;
        if self.flavor == Flavor::Patched {
            let t = self.lag() + self.ttl() + Duration::from_secs(20);
            self.wait(
                o,
                topic,
                t,
                "restored: broker 4 is an observer again (out of the ISR)",
                "restore_seconds",
                |s| !s.in_isr(OBSERVER),
            )?;
        }
        Ok(())
    }
}

/// "N polls; first …; last …" for the states that broke an invariant (empty when none did).
pub fn polls_summary(bad: &[String]) -> String {
    match bad {
        [] => String::new(),
        [one] => format!("1 poll: {one}"),
        [first, .., last] => format!("{} polls; first {first}; last {last}", bad.len()),
    }
}

/// The last line of a tool's output that says something (no blank line, no stack frame), cut to 200 chars.
pub fn last_line(stdout: &str, stderr: &str) -> String {
    let text = format!("{stdout}\n{stderr}");
    text.lines()
        .rfind(|l| !l.trim().is_empty() && !l.starts_with('\t') && !l.trim_start().starts_with("at "))
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// Whether a leader election tool run elected: exit 0 and no "could not be elected". 3.7.0's
/// kafka-leader-election exits 0 even when it prints `AdminCommandFailedException: 1 replica(s)
/// could not be elected` (3.7.1 exits 1), so the exit code alone would read a refusal as success.
pub fn elected(out: &crate::cluster::tools::Output) -> bool {
    out.ok() && !format!("{}\n{}", out.stdout, out.stderr).contains("could not be elected")
}

pub fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Runs the selected scenarios in suite order on a cluster whose topics exist; `lane` names the
/// lane in a run of several (its outcomes and its lines on stderr say which).
pub fn run_suite(
    c: &mut Cluster,
    flavor: Flavor,
    selected: &[&'static Scenario],
    lane: Option<u8>,
    tuning: Tuning,
) -> Vec<ScenarioResult> {
    let tag = lane.map(|l| format!("[lane {l}] ")).unwrap_or_default();
    let mut ctx = Ctx { c, flavor, ledger: Vec::new(), sent: 0, last: false, tuning };
    let mut outcomes = Vec::new();
    let run: Vec<&Scenario> = SCENARIOS.iter().filter(|s| selected.iter().any(|x| x.id == s.id)).collect();
    for (i, s) in run.iter().enumerate() {
        // Ctrl-C: every process is stopped; the command returns Error::Interrupted.
        if crate::cluster::node::interrupted() {
            break;
        }
        ctx.last = i + 1 == run.len();
        let stem = s.id.to_string();
        ctx.c.journal.begin(&stem, &format!("{} — {}", s.id, s.title));
        let mut o = ScenarioResult::of(s, ctx.c.journal.current().to_string(), lane);
        crate::out::note(format!("verify: {tag}{} {} …", s.id, s.title));
        let t0 = Instant::now();
        // Every scenario starts on a cluster where every node has read the last observer.ids
        // change (the one before may have just put the file back) and whose controller knows
        // every running broker.
        ctx.settle_observers();
        let t_known = Instant::now();
        if let Some(ids) = ctx.c.wait_brokers_known(Duration::from_secs(30)) {
            ctx.c.journal.note(&format!(
                "every running broker lists brokers {ids:?} alive, and the same topics ({:.1} s)",
                t_known.elapsed().as_secs_f64()
            ));
        }
        let alerts_from = ctx.c.prom().map(|p| p.now());
        let mut r = (s.run)(&mut ctx, &mut o);
        if r.is_ok() {
            r = cross_check(ctx.c, &mut o);
        }
        // A monitored run (`--prometheus`): okp's alerts that fired while this scenario ran,
        // each explained by a condition the scenario makes (PROM judges its own).
        if let (Some(from), Some(p)) = (alerts_from, ctx.c.prom()) {
            prom::judge_alerts(s.id, p, from, &mut o);
        }
        // Cut short by Ctrl-C: no verdict on it (the run writes no evidence).
        if crate::cluster::node::interrupted() {
            ctx.c.journal.note(&format!("{} interrupted after {:.1} s", s.id, t0.elapsed().as_secs_f64()));
            break;
        }
        o.seconds = round(t0.elapsed().as_secs_f64());
        if let Err(e) = r {
            o.error = Some(e.to_string());
        }
        o.pass = o.error.is_none() && !o.checks.is_empty() && o.checks.iter().all(|c| c.pass);
        for ch in &o.checks {
            ctx.c.journal.note(&format!("CHECK {} {} — {}", if ch.pass { "PASS" } else { "FAIL" }, ch.name, ch.detail));
        }
        if let Some(e) = &o.error {
            ctx.c.journal.note(&format!("ERROR {e}"));
        }
        ctx.c.journal.note(&format!("{} {} in {:.1} s", s.id, if o.pass { "PASSED" } else { "FAILED" }, o.seconds));
        crate::out::note(format!(
            "verify: {tag}{} {} in {:.1} s",
            s.id,
            if o.pass { "passed" } else { "FAILED" },
            o.seconds
        ));
        // A scenario that errored may have left nodes down: bring them back for the next one.
        if o.error.is_some() {
            recover(ctx.c);
        }
        outcomes.push(o);
    }
    outcomes
}

/// After each scenario, okp's reading of the brokers' metadata (which every wait decides on:
/// `Cluster::wait_state`) against the release's own describe of every topic: on the shared
/// topics, leader, replicas and ISR must be the same. Asked up to three times, a second apart,
/// while a change settles.
fn cross_check(c: &mut Cluster, o: &mut ScenarioResult) -> Result<()> {
    const NAME: &str =
        "okp's metadata probe and the release's describe agree on the shared topics (leader, replicas, ISR)";
    let mut detail = String::new();
    for attempt in 1..=3 {
        if attempt > 1 {
            std::thread::sleep(Duration::from_secs(1));
        }
        let described = c.describe_all()?;
        let mut differ = Vec::new();
        for (topic, _, _) in TOPICS {
            let theirs = described.iter().find(|(t, p, _)| t == topic && *p == 0).map(|(_, _, s)| s.clone());
            let ours = c.probe_agreed(topic).map(|(s, _)| s);
            let same = match (&theirs, &ours) {
                (Some(a), Some(b)) => {
                    a.leader == b.leader && a.replicas == b.replicas && sorted(&a.isr) == sorted(&b.isr)
                }
                _ => false,
            };
            if !same {
                let show = |s: &Option<PartitionState>| s.as_ref().map(|s| s.show()).unwrap_or_else(|| "none".into());
                differ.push(format!("{topic}: describe {}, probe {}", show(&theirs), show(&ours)));
            }
        }
        if differ.is_empty() {
            o.check(NAME, true, format!("{} topics, attempt {attempt}", TOPICS.len()));
            return Ok(());
        }
        detail = differ.join("; ");
    }
    o.check(NAME, false, detail);
    Ok(())
}

fn sorted(ids: &[i32]) -> Vec<i32> {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v
}

/// Best effort after an error: thaw and start every node, observer files back to `4`.
fn recover(c: &mut Cluster) {
    let ids = c.kafka_nodes();
    for id in &ids {
        c.node_mut(*id).thaw();
    }
    let _ = c.set_observers(&ids, "4\n");
    for id in &ids {
        if !c.node_mut(*id).is_running() {
            let _ = c.restart(*id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::tools::Output;

    fn out(rc: i32, stdout: &str, stderr: &str) -> Output {
        Output { argv: Vec::new(), rc, stdout: stdout.into(), stderr: stderr.into(), secs: 1.0, timed_out: false }
    }

    fn ids(lanes: &[Vec<&'static Scenario>]) -> Vec<Vec<&'static str>> {
        lanes.iter().map(|l| l.iter().map(|s| s.id).collect()).collect()
    }

    /// Every selected scenario runs in exactly one lane, each lane in suite order, the same
    /// selection always splits the same way, and no lane is empty.
    #[test]
    fn lanes_cover_the_selection_once_in_suite_order() {
        let all: Vec<&'static Scenario> = SCENARIOS.iter().collect();
        for mode in [Mode::Zk, Mode::Kraft] {
            for n in 1..=4 {
                let plan = lanes(&all, n, mode);
                assert_eq!(plan.len(), n);
                let mut seen: Vec<&str> = plan.iter().flatten().map(|s| s.id).collect();
                seen.sort_unstable();
                let mut want: Vec<&str> = SCENARIOS.iter().map(|s| s.id).collect();
                want.sort_unstable();
                assert_eq!(seen, want, "{n} lanes");
                for l in &plan {
                    let pos: Vec<usize> =
                        l.iter().map(|s| SCENARIOS.iter().position(|x| x.id == s.id).unwrap()).collect();
                    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{:?} not in suite order", ids(&plan));
                }
                assert_eq!(ids(&plan), ids(&lanes(&all, n, mode)));
            }
        }
        assert_eq!(ids(&lanes(&all, 1, Mode::Zk)), vec![SCENARIOS.iter().map(|s| s.id).collect::<Vec<_>>()]);
        // Fewer scenarios than lanes: no empty lane.
        let two: Vec<&'static Scenario> = ["S1", "S2"].iter().filter_map(|id| by_id(id)).collect();
        assert_eq!(ids(&lanes(&two, 4, Mode::Zk)), vec![vec!["S1"], vec!["S2"]]);
        assert!(lanes(&[], 2, Mode::Zk).is_empty());
    }

    /// Two lanes split the whole suite's typical time within the longest scenario of each other.
    #[test]
    fn two_lanes_balance_the_suite() {
        let all: Vec<&'static Scenario> = SCENARIOS.iter().collect();
        for mode in [Mode::Zk, Mode::Kraft] {
            let plan = lanes(&all, 2, mode);
            let sum = |l: &Vec<&'static Scenario>| l.iter().map(|s| typical_seconds(s.id, mode)).sum::<u32>();
            let (a, b) = (sum(&plan[0]), sum(&plan[1]));
            let longest = all.iter().map(|s| typical_seconds(s.id, mode)).max().unwrap();
            assert!(a.abs_diff(b) <= longest, "{mode}: {a} s and {b} s: {:?}", ids(&plan));
        }
    }

    /// 3.7.0's election tool exits 0 on a refused election; the text says what happened.
    #[test]
    fn an_election_counts_only_when_the_tool_exits_0_and_names_no_failure() {
        assert!(elected(&out(0, "Successfully completed leader election (UNCLEAN) for partitions obs-0\n", "")));
        let refused = "Error completing leader election (UNCLEAN) for partition: obs-0: \
                       org.apache.kafka.common.errors.EligibleLeadersNotAvailableException\n\
                       Exception in thread \"main\" org.apache.kafka.server.common.AdminCommandFailedException: \
                       1 replica(s) could not be elected\n";
        assert!(!elected(&out(0, "", refused)), "3.7.0: exit 0, failure in the text");
        assert!(!elected(&out(1, "", refused)), "3.7.1 and later: exit 1");
        assert!(!elected(&out(1, "", "")));
        let mut timed_out = out(0, "", "");
        timed_out.timed_out = true;
        assert!(!elected(&timed_out));
    }
}
