//! `okp bench scale`: how the patch's cost grows with the number of partitions. The same
//! four-broker cluster started from the release's own jars (`upstream`) and from the patched jars
//! (`patched`: broker 4 the observer, and topic rules in every node's observer.ids), alternated by
//! round as `bench broker` does (A B, B A, …; `--control` runs upstream on both sides for the A/A
//! band), one fresh cluster per (size, round, flavor). Each size is N partitions over N/10
//! topics, replicas `a,b,c,4` with the leader `a` turning over brokers 1–3, so the replica sets
//! are the same in both flavors: broker 4 is the observer when patched, a fourth follower
//! upstream. Measured from the cluster's own signals:
//!
//! - `create_s`: one CreateTopics (okp's wire probe, in chunks) until every broker's own Metadata
//!   lists all N partitions with a leader;
//! - `failover_s`: kill -9 of the active controller (KRaft: the quorum's leader as
//!   kafka-metadata-quorum names it; ZooKeeper: the controller broker) until a CreateTopics
//!   succeeds again (ZooKeeper mode: that includes the session timeout, then the new controller
//!   loading every topic);
//! - `fail_leaders_s`: kill -9 of a broker leading a third of the partitions until every
//!   broker's Metadata gives each partition it led another leader (the session timeout included);
//! - `restart_ready_s` / `restart_log_s`: its restart until its readiness line, from okp's
//!   spawn and from its own log's first line;
//! - `rejoin_isr_s`: from the restart until it is in the ISR of every partition it hosts on every
//!   broker's Metadata (the observer is never in an ISR, by design: its partitions are counted
//!   apart, `observer_outside_isr`);
//! - `controller_cpu_s_per_1k`: the active controller JVM's utime+stime (/proc/PID/stat) over the
//!   kill and the rejoin, per 1000 partition changes (each hosted partition changes twice);
//! - `idle_brokers_cpu_pct` / `idle_controller_cpu_pct`: the same counters over a quiet window
//!   after creation (brokers summed; percent of one core).
//!
//! Writes DIR/scale.json (every sample, after every cluster), DIR/summary.md, one PNG per metric
//! (size on x, both flavors' medians) and one journal per cluster. Not a test: nothing judges a time.
//!
//! Not here: the cluster's processes and tools (`cluster`), the charts' drawing (`plot`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{compare, order, Compared, Flavor};
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, BROKERS, OBSERVER};
use crate::error::{Error, Outcome, Result};
use crate::model::{Mode, Release};
use crate::wire::{PartitionState, Probe};
use crate::workspace::Workspace;

/// The topic rules written after the cluster-wide `4` on every node of every cluster (upstream
/// ignores them). The scale topics resolve through the last one: each topic misses the exact
/// rule, the prefix and the first regex before the second regex names broker 4, so every lookup
/// walks the whole precedence.
pub const RULES: &str = "topic:audit observers=none\nprefix:ledger- observers=1,2\nregex:dr-.* observers=3\nregex:scale-[0-9]+ observers=4\n";

/// Topic names of the sizes (`scale-00000`, …) and of the failover's one topic.
const PREFIX: &str = "scale-";
const FAILOVER_TOPIC: &str = "okp-failover";
/// Topics per CreateTopics request.
const CHUNK: usize = 50;
const NOT_CONTROLLER: i16 = 41;
const TOPIC_ALREADY_EXISTS: i16 = 36;

pub struct Options {
    pub release: Release,
    pub mode: Mode,
    /// Total partitions of each size, in the order run.
    pub sizes: Vec<u32>,
    /// Clusters of each flavor per size.
    pub rounds: u32,
    pub per_topic: u32,
    /// The quiet window the idle CPU is measured over.
    pub idle: Duration,
    pub out: PathBuf,
    /// A/A: the second flavor runs the upstream jars too (labelled `patched` in the samples).
    pub control: bool,
    pub base_port: Option<u16>,
    /// Every server's `-Xmx` (brokers hosting thousands of partitions outgrow okp's usual 320m).
    pub heap: String,
}

/// The metrics, in the summary's order: name, unit, what it is.
pub const METRICS: &[(&str, &str, &str)] = &[
    ("create_s", "s", "create N partitions until every broker lists all with a leader"),
    ("failover_s", "s", "kill -9 the active controller until a CreateTopics succeeds"),
    ("fail_leaders_s", "s", "kill -9 a broker until every partition it led has a new leader"),
    ("restart_ready_s", "s", "its restart until its readiness line (okp's spawn to the line)"),
    ("restart_log_s", "s", "its restart, its log's first line to the readiness line"),
    ("rejoin_isr_s", "s", "its restart until it is in every ISR it belongs to"),
    ("controller_cpu_s_per_1k", "CPU s", "active controller's CPU over kill + rejoin, per 1k partition changes"),
    ("idle_brokers_cpu_pct", "% core", "brokers 1-4's CPU over the quiet window, summed"),
    ("idle_controller_cpu_pct", "% core", "the active controller's CPU over the quiet window"),
];

#[derive(Clone, Debug, serde::Serialize)]
struct Sample {
    size: u32,
    round: u32,
    flavor: Flavor,
    metric: &'static str,
    /// NaN (null in scale.json) when the measurement did not complete; left out of the medians.
    value: f64,
}

/// What one cluster showed beside its metrics.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct ClusterNote {
    size: u32,
    round: u32,
    flavor: Option<Flavor>,
    topics: usize,
    /// The controller killed by the failover, the broker killed by the failure.
    controller_killed: Option<i32>,
    broker_killed: Option<i32>,
    /// Partitions the killed broker led, and hosted.
    led: usize,
    hosted: usize,
    /// Partitions with broker 4 a replica but not in the ISR at the end (patched: every one, by
    /// design; upstream: none once caught up).
    observer_outside_isr: Option<usize>,
    /// CreateTopics answers other than success, by error code.
    create_errors: BTreeMap<i16, u32>,
    /// What did not complete, in words.
    problems: Vec<String>,
    seconds: f64,
}

/// The partitions of a size: `size` partitions over topics of `per_topic` (the last one may be
/// smaller), partition g (counting over all topics) on replicas `a, b, c, 4` with `a` =
/// 1, 2, 3 in turn: each of brokers 1–3 leads a third, broker 4 is last in every set.
fn layout(size: u32, per_topic: u32) -> Vec<(String, Vec<Vec<i32>>)> {
    let per_topic = per_topic.max(1);
    let mut topics = Vec::new();
    let mut g = 0u32;
    let mut t = 0u32;
    while g < size {
        let n = per_topic.min(size - g);
        let parts = (0..n)
            .map(|j| {
                let a = ((g + j) % 3) as i32;
                vec![a + 1, (a + 1) % 3 + 1, (a + 2) % 3 + 1, OBSERVER]
            })
            .collect();
        topics.push((format!("{PREFIX}{t:05}"), parts));
        g += n;
        t += 1;
    }
    topics
}

type Key = (String, i32);
type View = BTreeMap<Key, PartitionState>;

/// The ISR a settled partition has: every replica, less the observer in a patched cluster.
fn settled(s: &PartitionState, observer: Option<i32>) -> bool {
    s.leader.is_some() && s.replicas.iter().all(|r| Some(*r) == observer || s.isr.contains(r))
}

/// Of `keys`, those whose leader in `view` is none or still `victim` (missing counts as not moved).
fn not_moved(view: &View, keys: &BTreeSet<Key>, victim: i32) -> usize {
    keys.iter().filter(|k| view.get(*k).is_none_or(|s| s.leader.is_none() || s.leader == Some(victim))).count()
}

/// Of `keys`, those whose ISR in `view` does not hold `id`.
fn not_in_isr(view: &View, keys: &BTreeSet<Key>, id: i32) -> usize {
    keys.iter().filter(|k| view.get(*k).is_none_or(|s| !s.isr.contains(&id))).count()
}

/// Partitions with `observer` a replica but outside the ISR.
fn outside_isr(view: &View, observer: i32) -> usize {
    view.values().filter(|s| s.replicas.contains(&observer) && !s.isr.contains(&observer)).count()
}

/// utime + stime, in clock ticks, from the text of /proc/PID/stat (fields 14 and 15; the command
/// name in parentheses may hold spaces, so fields are counted after its last `)`).
fn stat_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Process `pid`'s CPU seconds so far.
fn cpu_secs(pid: i32) -> Option<f64> {
    let text = crate::fsx::read::read_optional_text(Path::new(&format!("/proc/{pid}/stat")), 4096).ok()??;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some(stat_ticks(&text)? as f64 / if hz > 0 { hz as f64 } else { 100.0 })
}

/// Seconds since midnight of a log line's `[YYYY-MM-DD HH:MM:SS,mmm]` stamp (the servers' pattern).
fn stamp_secs(line: &str) -> Option<f64> {
    let s = line.strip_prefix('[')?.get(..23)?;
    let (h, m, sec, ms) = (s.get(11..13)?, s.get(14..16)?, s.get(17..19)?, s.get(20..23)?);
    let n = |x: &str| x.parse::<f64>().ok();
    Some(n(h)? * 3600.0 + n(m)? * 60.0 + n(sec)? + n(ms)? / 1000.0)
}

/// From a start's log: seconds from its first stamped line to the first line with `marker`.
fn startup_secs(log: &str, marker: &str) -> Option<f64> {
    let first = log.lines().find_map(stamp_secs)?;
    let ready = log.lines().find(|l| l.contains(marker)).and_then(stamp_secs)?;
    Some(if ready < first { ready + 86_400.0 - first } else { ready - first })
}

/// Whether `s` is a heap size the JVM's -Xmx takes, and nothing else on its command line: digits
/// and one unit.
fn heap_size(s: &str) -> bool {
    let (digits, unit) = s.split_at(s.len().saturating_sub(1));
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && matches!(unit, "k" | "m" | "g" | "K" | "M" | "G")
}

/// The machine's load averages, as /proc/loadavg has them.
fn loadavg() -> String {
    crate::fsx::read::read_optional_text(Path::new("/proc/loadavg"), 256)
        .ok()
        .flatten()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub fn scale(ws: &Workspace, opts: Options) -> Result<Outcome> {
    if opts.rounds == 0 || opts.sizes.is_empty() || opts.sizes.contains(&0) || opts.per_topic == 0 {
        return Err(Error::Usage("--rounds, --per-topic and every --sizes value must be > 0".into()));
    }
    if !heap_size(&opts.heap) {
        return Err(Error::Usage(format!(
            "--heap {}: a JVM heap size is digits and k, m or g (512m, 1g)",
            crate::escape::one_line(&opts.heap)
        )));
    }
    let version = opts.release.version;
    let (build, java_version) = super::prepare(ws, &opts.release, opts.mode, &opts.out)?;
    let t0 = Instant::now();
    let load_before = loadavg();
    let mut samples: Vec<Sample> = Vec::new();
    let mut notes: Vec<ClusterNote> = Vec::new();
    let record = |samples: &[Sample], notes: &[ClusterNote], complete: bool, load_after: &str| {
        serde_json::json!({
            "schema": 1,
            "okp_version": env!("CARGO_PKG_VERSION"),
            "release": version.to_string(),
            "mode": opts.mode,
            "java": java_version,
            "patch_set_hash": build.patch_set_hash,
            "sizes": opts.sizes,
            "rounds": opts.rounds,
            "per_topic": opts.per_topic,
            "layout": "replicas a,b,c,4 with a = 1,2,3 in turn; broker 4 the observer when patched",
            "rules": RULES,
            "idle_seconds": opts.idle.as_secs(),
            "server_heap": format!("-Xmx{}", opts.heap),
            "control": opts.control,
            "complete": complete,
            "loadavg_before": load_before,
            "loadavg_after": load_after,
            "seconds": crate::scenarios::round(t0.elapsed().as_secs_f64()),
            "clusters": notes,
            "samples": samples,
        })
    };
    for &size in &opts.sizes {
        for round in 1..=opts.rounds {
            for flavor in order(round) {
                let rt = super::runtime(ws, &build, flavor, opts.control)?;
                crate::out::note(format!(
                    "bench scale {version} {}: {size} partitions, round {round}, {} (load {})",
                    opts.mode,
                    flavor.word(),
                    loadavg()
                ));
                let (s, n) = one_cluster(&opts, rt, size, round, flavor)?;
                for p in &n.problems {
                    crate::out::note(format!("  {p}"));
                }
                samples.extend(s);
                notes.push(n);
                let json = serde_json::to_string_pretty(&record(&samples, &notes, false, "")).unwrap_or_default();
                crate::fsx::write_atomic(&opts.out.join("scale.json"), (json + "\n").as_bytes())?;
            }
        }
    }
    let load_after = loadavg();
    let json = serde_json::to_string_pretty(&record(&samples, &notes, true, &load_after)).unwrap_or_default();
    crate::fsx::write_atomic(&opts.out.join("scale.json"), (json + "\n").as_bytes())?;
    let ratios = summarise(&samples, &opts.sizes);
    let md = summary_md(&opts, &ratios, &notes, t0.elapsed().as_secs_f64(), (&load_before, &load_after));
    crate::fsx::write_atomic(&opts.out.join("summary.md"), md.as_bytes())?;
    plots(&opts, &ratios)?;
    crate::out::print(&md)?;
    crate::out::note(format!("bench scale: written to {}", opts.out.display()));
    Ok(Outcome::Done)
}

/// Starts one cluster, measures it, takes it down. A measurement that does not complete leaves a
/// NaN sample and a problem in the note; only a cluster that cannot start ends the run.
fn one_cluster(
    opts: &Options,
    rt: Runtime,
    size: u32,
    round: u32,
    flavor: Flavor,
) -> Result<(Vec<Sample>, ClusterNote)> {
    let (run_dir, journal, timers) =
        super::cluster_dirs("okp-scale-", &opts.out, &format!("{size}-{round}-{}", flavor.word()))?;
    let t0 = Instant::now();
    let mut c = Cluster::up_sized(
        opts.mode,
        rt,
        timers,
        run_dir.path(),
        opts.base_port,
        journal,
        crate::cluster::Homes::Shared,
        crate::cluster::Monitoring::Off,
        Some(&opts.heap),
    )?;
    let observer = (flavor == Flavor::Patched && !opts.control).then_some(OBSERVER);
    let mut m = Measure { c: &mut c, size, round, flavor, observer, samples: Vec::new(), note: ClusterNote::default() };
    m.note.size = size;
    m.note.round = round;
    m.note.flavor = Some(flavor);
    let result = m.run(opts);
    if let Err(e) = &result {
        m.note.problems.push(format!("stopped early: {e}"));
    }
    let (mut samples, mut note) = (std::mem::take(&mut m.samples), std::mem::take(&mut m.note));
    c.down();
    drop(c);
    note.seconds = crate::scenarios::round(t0.elapsed().as_secs_f64());
    // Every metric has a sample, NaN when it was not reached, so the record says what is missing.
    for &(metric, _, _) in METRICS {
        if !samples.iter().any(|s| s.metric == metric) {
            samples.push(Sample { size, round, flavor, metric, value: f64::NAN });
        }
    }
    match result {
        Err(Error::Interrupted) => Err(Error::Interrupted),
        _ => Ok((samples, note)),
    }
}

struct Measure<'a> {
    c: &'a mut Cluster,
    size: u32,
    round: u32,
    flavor: Flavor,
    /// The observer, in a patched cluster.
    observer: Option<i32>,
    samples: Vec<Sample>,
    note: ClusterNote,
}

impl Measure<'_> {
    fn put(&mut self, metric: &'static str, value: f64) {
        self.c.journal.note(&format!("metric {metric} = {value:.3}"));
        let (size, round, flavor) = (self.size, self.round, self.flavor);
        self.samples.push(Sample { size, round, flavor, metric, value: crate::scenarios::round(value) });
    }

    fn problem(&mut self, what: String) {
        self.c.journal.note(&format!("problem: {what}"));
        self.note.problems.push(what);
    }

    fn run(&mut self, opts: &Options) -> Result<()> {
        let nodes = self.c.kafka_nodes();
        self.c.set_observers(&nodes, &format!("{OBSERVER}\n{RULES}"))?;
        std::thread::sleep(crate::cluster::OBSERVER_IDS_TTL + Duration::from_secs(1));
        let topics = layout(self.size, opts.per_topic);
        self.note.topics = topics.len();
        let keys: BTreeSet<Key> =
            topics.iter().flat_map(|(t, ps)| (0..ps.len() as i32).map(move |i| (t.clone(), i))).collect();
        self.create(&topics, &keys)?;
        self.idle(opts.idle)?;
        self.failover()?;
        self.broker_failure()?;
        let view = self.view_of_first();
        self.note.observer_outside_isr = view.map(|v| outside_isr(&v, OBSERVER));
        Ok(())
    }

    /// Each running broker's own view of the scale topics (None: it did not answer), but `skip`.
    fn views(&mut self, skip: Option<i32>) -> Vec<(i32, Option<View>)> {
        let mut out = Vec::new();
        for id in BROKERS {
            if Some(id) == skip || !self.c.node_mut(id).is_running() {
                continue;
            }
            let port = self.c.broker_port(id);
            let view = Probe::connect(port).and_then(|mut p| {
                p.set_timeout(Duration::from_secs(15))?;
                let m = p.metadata(None)?;
                Some(
                    m.partitions
                        .into_iter()
                        .filter(|x| x.topic.starts_with(PREFIX))
                        .map(|x| ((x.topic, x.index), x.state))
                        .collect::<View>(),
                )
            });
            out.push((id, view));
        }
        out
    }

    fn view_of_first(&mut self) -> Option<View> {
        self.views(None).into_iter().find_map(|(_, v)| v)
    }

    /// Polls every running broker but `skip` until `left` is 0 on each one's view; the seconds
    /// since `t0`, or None at `timeout` (journaled with what each view still lacked).
    fn wait_all(
        &mut self,
        what: &str,
        skip: Option<i32>,
        t0: Instant,
        timeout: Duration,
        left: impl Fn(&View) -> usize,
    ) -> Result<Option<f64>> {
        loop {
            crate::cluster::node::check_interrupt()?;
            let views = self.views(skip);
            let counts: Vec<(i32, Option<usize>)> = views.iter().map(|(id, v)| (*id, v.as_ref().map(&left))).collect();
            if !counts.is_empty() && counts.iter().all(|(_, n)| *n == Some(0)) {
                let s = t0.elapsed().as_secs_f64();
                self.c.journal.note(&format!("{what}: on every running broker after {s:.2} s"));
                return Ok(Some(s));
            }
            if t0.elapsed() > timeout {
                self.c.journal.note(&format!(
                    "{what}: not within {:.0} s; still missing per broker: {counts:?}",
                    timeout.as_secs_f64()
                ));
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Where a CreateTopics goes: ZooKeeper mode, the controller (as broker `ask`'s Metadata
    /// names it); KRaft, broker `ask` itself (it forwards). None when no broker answers.
    fn create_target(&mut self, skip: Option<i32>) -> Option<u16> {
        for id in BROKERS {
            if Some(id) == skip || !self.c.node_mut(id).is_running() {
                continue;
            }
            let port = self.c.broker_port(id);
            if self.c.mode == Mode::Kraft {
                return Some(port);
            }
            let ctl = Probe::connect(port).and_then(|mut p| p.metadata(Some(&[])))?.controller_id;
            if BROKERS.contains(&ctl) && Some(ctl) != skip && self.c.node_mut(ctl).is_running() {
                return Some(self.c.broker_port(ctl));
            }
        }
        None
    }

    fn create(&mut self, topics: &[(String, Vec<Vec<i32>>)], keys: &BTreeSet<Key>) -> Result<()> {
        let t0 = Instant::now();
        let timeout = Duration::from_secs(120 + u64::from(self.size) / 20);
        for chunk in topics.chunks(CHUNK) {
            let mut pending: Vec<(String, Vec<Vec<i32>>)> = chunk.to_vec();
            while !pending.is_empty() {
                crate::cluster::node::check_interrupt()?;
                if t0.elapsed() > timeout {
                    self.problem(format!("{} topics not created within {:.0} s", pending.len(), timeout.as_secs_f64()));
                    break;
                }
                let answer = self.create_target(None).and_then(|port| {
                    let mut p = Probe::connect(port)?;
                    p.set_timeout(Duration::from_secs(90))?;
                    p.create_topics(&pending, 60_000)
                });
                let Some(answer) = answer else {
                    std::thread::sleep(Duration::from_millis(500));
                    continue;
                };
                let mut again = BTreeSet::new();
                for (name, code) in answer {
                    if code != 0 && code != TOPIC_ALREADY_EXISTS {
                        *self.note.create_errors.entry(code).or_default() += 1;
                    }
                    // Not the controller (it moved): ask the new one. Any other error is the
                    // cluster's answer, left to the wait below to show.
                    if code == NOT_CONTROLLER {
                        again.insert(name);
                    }
                }
                pending.retain(|(n, _)| again.contains(n));
            }
        }
        let sent = t0.elapsed().as_secs_f64();
        self.c.journal.note(&format!("CreateTopics of {} topics answered after {sent:.2} s", topics.len()));
        let n = keys.len();
        let created = self.wait_all("every partition listed with a leader", None, t0, timeout, |v| {
            n - keys.iter().filter(|k| v.get(*k).is_some_and(|s| s.leader.is_some())).count()
        })?;
        match created {
            Some(s) => self.put("create_s", s),
            None => {
                self.problem("not every partition was listed with a leader by every broker".into());
                return Err(Error::External("topic creation did not complete".into()));
            }
        }
        self.settle("after creation")
    }

    /// Waits until every partition's ISR holds every replica but the observer (patched).
    fn settle(&mut self, when: &str) -> Result<()> {
        let observer = self.observer;
        let ok = self.wait_all(&format!("settled ({when})"), None, Instant::now(), Duration::from_secs(300), |v| {
            v.values().filter(|s| !settled(s, observer)).count()
        })?;
        if ok.is_none() {
            self.problem(format!("not settled {when}: a replica stayed out of the ISR"));
        }
        Ok(())
    }

    /// The active controller's node id (KRaft: the quorum's leader; ZooKeeper: the controller broker).
    fn active_controller(&mut self) -> Result<Option<i32>> {
        if self.c.mode == Mode::Kraft {
            return self.c.active_controller();
        }
        for id in BROKERS {
            if !self.c.node_mut(id).is_running() {
                continue;
            }
            let ctl = Probe::connect(self.c.broker_port(id)).and_then(|mut p| p.metadata(Some(&[])));
            if let Some(m) = ctl.filter(|m| BROKERS.contains(&m.controller_id)) {
                return Ok(Some(m.controller_id));
            }
        }
        Ok(None)
    }

    fn pid(&mut self, id: i32) -> Option<i32> {
        self.c.node(id).pid()
    }

    fn idle(&mut self, window: Duration) -> Result<()> {
        std::thread::sleep(Duration::from_secs(3));
        let ctl = self.active_controller()?;
        let pids: Vec<Option<i32>> = BROKERS.iter().map(|id| self.pid(*id)).collect();
        let ctl_pid = ctl.and_then(|id| self.pid(id));
        let sum = |pids: &[Option<i32>]| pids.iter().map(|p| p.and_then(cpu_secs)).sum::<Option<f64>>();
        let (b0, c0) = (sum(&pids), ctl_pid.and_then(cpu_secs));
        let t0 = Instant::now();
        std::thread::sleep(window);
        let secs = t0.elapsed().as_secs_f64();
        let (b1, c1) = (sum(&pids), ctl_pid.and_then(cpu_secs));
        self.c.journal.note(&format!("quiet window of {secs:.1} s, active controller {ctl:?}"));
        if let (Some(a), Some(b)) = (b0, b1) {
            self.put("idle_brokers_cpu_pct", 100.0 * (b - a) / secs);
        }
        if let (Some(a), Some(b)) = (c0, c1) {
            self.put("idle_controller_cpu_pct", 100.0 * (b - a) / secs);
        }
        Ok(())
    }

    /// A CreateTopics of one partition on `replicas`, through `skip`-less brokers: true when it
    /// succeeded (or an earlier attempt had).
    fn try_create_one(&mut self, skip: Option<i32>, replicas: &[i32]) -> bool {
        let Some(port) = self.create_target(skip) else { return false };
        let answer = Probe::connect(port).and_then(|mut p| {
            p.set_timeout(Duration::from_secs(10))?;
            p.create_topics(&[(FAILOVER_TOPIC.to_string(), vec![replicas.to_vec()])], 5000)
        });
        answer.is_some_and(|a| a.iter().all(|(_, code)| *code == 0 || *code == TOPIC_ALREADY_EXISTS))
    }

    fn failover(&mut self) -> Result<()> {
        let Some(ctl) = self.active_controller()? else {
            self.problem("no active controller found for the failover".into());
            return Ok(());
        };
        self.note.controller_killed = Some(ctl);
        let skip = (self.c.mode == Mode::Zk).then_some(ctl);
        let replicas: Vec<i32> = BROKERS.iter().copied().filter(|b| Some(*b) != skip).take(3).collect();
        self.c.kill9(ctl);
        let t0 = Instant::now();
        let mut done = None;
        while t0.elapsed() < Duration::from_secs(180) {
            crate::cluster::node::check_interrupt()?;
            if self.try_create_one(skip, &replicas) {
                done = Some(t0.elapsed().as_secs_f64());
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        match done {
            Some(s) => self.put("failover_s", s),
            None => self.problem(format!("no CreateTopics succeeded within 180 s of killing node {ctl}")),
        }
        // Back to a whole cluster before the broker failure.
        self.c.restart(ctl)?;
        self.settle("after the controller's restart")
    }

    fn broker_failure(&mut self) -> Result<()> {
        // Broker 2 leads a third; in ZooKeeper mode, not the controller (that was the failover).
        let ctl = self.active_controller()?;
        let victim = if self.c.mode == Mode::Zk && ctl == Some(2) { 3 } else { 2 };
        self.note.broker_killed = Some(victim);
        let Some(view) = self.views(Some(victim)).into_iter().find_map(|(_, v)| v) else {
            self.problem("no broker answered Metadata before the broker failure".into());
            return Ok(());
        };
        let led: BTreeSet<Key> =
            view.iter().filter(|(_, s)| s.leader == Some(victim)).map(|(k, _)| k.clone()).collect();
        let hosted: BTreeSet<Key> =
            view.iter().filter(|(_, s)| s.replicas.contains(&victim)).map(|(k, _)| k.clone()).collect();
        self.note.led = led.len();
        self.note.hosted = hosted.len();
        let ctl_pid = ctl.and_then(|id| self.pid(id));
        let cpu0 = ctl_pid.and_then(cpu_secs);
        self.c.journal.note(&format!(
            "kill -9 broker {victim}: it leads {} and hosts {} partitions; active controller {ctl:?}",
            led.len(),
            hosted.len()
        ));
        self.c.kill9(victim);
        let t0 = Instant::now();
        let moved = self.wait_all(
            "every partition the killed broker led has another leader",
            Some(victim),
            t0,
            Duration::from_secs(300),
            |v| not_moved(v, &led, victim),
        )?;
        match moved {
            Some(s) => self.put("fail_leaders_s", s),
            None => self.problem(format!("partitions broker {victim} led kept no leader or it within 300 s")),
        }
        // ZooKeeper mode: its ephemeral registration outlives it by the session timeout, and a
        // start before that is fatal; the restart's clock starts after that wait.
        if self.c.mode == Mode::Zk {
            let session = Duration::from_millis(self.c.timers.session_ms + 1000);
            if let Some(since) = self.c.node(victim).killed_at.map(|t| t.elapsed()) {
                std::thread::sleep(session.saturating_sub(since));
            }
        }
        let t1 = Instant::now();
        self.c.start_node(victim)?;
        let marker = self.c.ready_marker(victim);
        self.c.node_mut(victim).wait_ready(marker, Duration::from_secs(600))?;
        let ready = t1.elapsed();
        self.put("restart_ready_s", ready.as_secs_f64());
        match startup_secs(&self.c.node(victim).log_since_start(), marker) {
            Some(s) => self.put("restart_log_s", s),
            None => self.problem(format!("broker {victim}'s log has no stamped first line or readiness line")),
        }
        let back = self.wait_all(
            "the restarted broker is in every ISR it belongs to",
            None,
            t1,
            ready + Duration::from_secs(300),
            |v| not_in_isr(v, &hosted, victim),
        )?;
        match back {
            Some(s) => self.put("rejoin_isr_s", s),
            None => self.problem(format!("broker {victim} not back in every ISR within 300 s of its readiness")),
        }
        let cpu1 = ctl_pid.and_then(cpu_secs);
        let still = ctl == self.active_controller()?;
        match (cpu0, cpu1, still) {
            (Some(a), Some(b), true) if !hosted.is_empty() && back.is_some() => {
                self.put("controller_cpu_s_per_1k", (b - a) / (2.0 * hosted.len() as f64 / 1000.0))
            }
            _ => self.problem(format!(
                "no controller CPU figure (controller {ctl:?} still active: {still}, counters {cpu0:?} {cpu1:?})"
            )),
        }
        Ok(())
    }
}

/// One metric at one size, both flavors compared.
#[derive(Clone, Debug, serde::Serialize)]
struct Ratio {
    size: u32,
    metric: &'static str,
    #[serde(flatten)]
    v: Compared,
}

fn summarise(samples: &[Sample], sizes: &[u32]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for &(metric, _, _) in METRICS {
        for &size in sizes {
            let of = |f: Flavor| -> BTreeMap<u32, f64> {
                samples
                    .iter()
                    .filter(|s| s.size == size && s.metric == metric && s.flavor == f && s.value.is_finite())
                    .map(|s| (s.round, s.value))
                    .collect()
            };
            out.push(Ratio { size, metric, v: compare(&of(Flavor::Upstream), &of(Flavor::Patched)) });
        }
    }
    out
}

fn flavor_names(control: bool) -> (&'static str, &'static str) {
    if control {
        ("upstream (A)", "upstream (B)")
    } else {
        ("upstream", "patched")
    }
}

fn summary_md(opts: &Options, ratios: &[Ratio], notes: &[ClusterNote], secs: f64, load: (&str, &str)) -> String {
    let sizes: Vec<String> = opts.sizes.iter().map(|s| s.to_string()).collect();
    let mut s = format!(
        "# okp bench scale {} {}\n\nSizes {} partitions ({} per topic, replicas a,b,c,4 with the leader a = 1,2,3 in \
         turn); {} rounds per size (upstream then patched in odd rounds, patched then upstream in even ones; a fresh \
         cluster each: {}, 4 brokers, heap -Xmx{} each, session timeout 6 s). Wall time {:.0} s; load average \
         (1/5/15 min) {} at the start, {} at the end, on a machine others share. Ratios are patched/upstream of the \
         medians over the rounds; the spread is the per-round ratios' min..max.\n\n",
        opts.release.version,
        opts.mode,
        sizes.join(", "),
        opts.per_topic,
        opts.rounds,
        if opts.mode == Mode::Kraft { "3 KRaft controllers" } else { "1 ZooKeeper" },
        opts.heap,
        secs,
        load.0,
        load.1,
    );
    if opts.control {
        s.push_str(
            "**A/A control** (`--control`): the clusters labelled `patched` ran the release's upstream jars too, so \
             every ratio below is upstream/upstream: its spread is this machine's noise for these settings.\n\n",
        );
    } else {
        s.push_str(
            "Patched: broker 4 is the observer of every partition (never in an ISR); upstream: a fourth follower.\n\n",
        );
    }
    let rules: Vec<&str> = RULES.lines().collect();
    s.push_str(&format!(
        "observer.ids on every node of every cluster (upstream ignores it): `{OBSERVER}` then the rules `{}`.\n\n",
        rules.join("`; `")
    ));
    s.push_str("| metric | size | upstream | patched | patched/upstream | spread |\n|---|---|---|---|---|---|\n");
    for r in ratios {
        s.push_str(&format!(
            "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3}..{:.3} |\n",
            r.metric, r.size, r.v.upstream, r.v.patched, r.v.ratio, r.v.ratio_min, r.v.ratio_max
        ));
    }
    s.push_str("\nMetrics:\n\n");
    for (m, unit, what) in METRICS {
        s.push_str(&format!("- `{m}` ({unit}): {what}.\n"));
    }
    s.push_str(
        "\nPer cluster: the killed controller and broker, what the broker led and hosted, and the partitions whose \
         broker 4 replica is outside the ISR at the end (the observer's, excluded from `rejoin_isr_s` by design):\n\n\
         | size | round | flavor | controller killed | broker killed | led | hosted | broker 4 outside ISR | CreateTopics errors | s |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let (a, b) = flavor_names(opts.control);
    for n in notes {
        let show = |x: Option<i32>| x.map_or("-".to_string(), |v| v.to_string());
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:?} | {:.0} |\n",
            n.size,
            n.round,
            if n.flavor == Some(Flavor::Upstream) { a } else { b },
            show(n.controller_killed),
            show(n.broker_killed),
            n.led,
            n.hosted,
            n.observer_outside_isr.map_or("-".into(), |v| v.to_string()),
            n.create_errors,
            n.seconds
        ));
    }
    let problems: Vec<String> = notes
        .iter()
        .flat_map(|n| n.problems.iter().map(move |p| format!("- {} round {} {:?}: {p}", n.size, n.round, n.flavor)))
        .collect();
    if !problems.is_empty() {
        s.push_str(&format!(
            "\nWhat did not complete (NaN samples, left out of the medians):\n\n{}\n",
            problems.join("\n")
        ));
    }
    s.push_str("\nEvery sample: scale.json; plots: <metric>.png; each cluster's commands and output: journal/<size>-<round>-<flavor>/.\n");
    s
}

/// One PNG per metric: size on x, each flavor's median.
fn plots(opts: &Options, ratios: &[Ratio]) -> Result<()> {
    let (a, b) = flavor_names(opts.control);
    let span = opts.sizes.iter().max().copied().unwrap_or(1) as f64
        / opts.sizes.iter().min().copied().unwrap_or(1).max(1) as f64;
    for &(metric, unit, what) in METRICS {
        let series = |name: &str, get: fn(&Ratio) -> f64| crate::plot::Series {
            name: name.into(),
            points: ratios.iter().filter(|r| r.metric == metric).map(|r| (f64::from(r.size), get(r))).collect(),
            right_axis: false,
        };
        crate::plot::write_png(
            &opts.out.join(format!("{metric}.png")),
            &crate::plot::Chart {
                title: format!("{} {}: {what}", opts.release.version, opts.mode),
                x_label: "partitions".into(),
                y_label: format!("{metric} ({unit}), median over {} rounds", opts.rounds),
                y2_label: None,
                series: vec![series(a, |r| r.v.upstream), series(b, |r| r.v.patched)],
                log_x: span >= 4.0,
            },
        )?;
    }
    Ok(())
}

/// The default evidence directory of a run.
pub fn default_out(release: &Release, mode: Mode, control: bool) -> PathBuf {
    let suffix = if control { "-control" } else { "" };
    Path::new("evidence").join("bench").join("scale").join(format!("{}-{mode}{suffix}", release.version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_spreads_leaders_over_brokers_1_to_3_with_broker_4_last_everywhere() {
        let t = layout(95, 10);
        assert_eq!(t.len(), 10);
        assert_eq!(t[0].0, "scale-00000");
        assert_eq!(t[9].1.len(), 5, "the last topic holds the rest");
        let all: Vec<&Vec<i32>> = t.iter().flat_map(|(_, ps)| ps).collect();
        assert_eq!(all.len(), 95);
        let mut leaders = BTreeMap::new();
        for r in &all {
            assert_eq!(r.len(), 4);
            assert_eq!(r[3], OBSERVER);
            let mut s = r[..3].to_vec();
            s.sort();
            assert_eq!(s, vec![1, 2, 3], "{r:?}");
            *leaders.entry(r[0]).or_insert(0) += 1;
        }
        assert_eq!(leaders, BTreeMap::from([(1, 32), (2, 32), (3, 31)]));
    }

    #[test]
    fn the_rules_read_as_the_registries_read_them_and_send_scale_topics_to_broker_4() {
        let text = format!("{OBSERVER}\n{RULES}");
        let rules = crate::observers::idfile::rules(&text).unwrap();
        assert_eq!(rules.each().len(), 4);
        assert_eq!(crate::observers::idfile::parse(&text), BTreeSet::from([OBSERVER]));
        let shown = rules.each().into_iter().map(|(t, _)| t).collect::<Vec<_>>().join(";");
        assert!(shown.contains("regex:scale-[0-9]+=4"), "{shown}");
    }

    fn st(leader: Option<i32>, replicas: &[i32], isr: &[i32]) -> PartitionState {
        PartitionState { leader, replicas: replicas.to_vec(), isr: isr.to_vec(), elr: vec![] }
    }

    #[test]
    fn views_count_what_is_still_missing() {
        let k = |t: &str, p| (t.to_string(), p);
        let view: View = BTreeMap::from([
            (k("a", 0), st(Some(1), &[2, 1, 3, 4], &[1, 3])),
            (k("a", 1), st(Some(2), &[2, 3, 1, 4], &[2, 3, 1])),
            (k("b", 0), st(None, &[2, 1, 3, 4], &[2])),
        ]);
        let led: BTreeSet<Key> = [k("a", 0), k("a", 1), k("b", 0), k("gone", 0)].into();
        // a-1 still on 2, b-0 without a leader, gone-0 not listed: three not moved.
        assert_eq!(not_moved(&view, &led, 2), 3);
        assert_eq!(not_in_isr(&view, &led, 2), 2, "a-0 lacks 2; gone-0 is not listed");
        assert_eq!(outside_isr(&view, 4), 3);
        assert!(settled(&st(Some(1), &[1, 2, 3, 4], &[1, 2, 3]), Some(4)));
        assert!(!settled(&st(Some(1), &[1, 2, 3, 4], &[1, 2, 3]), None));
        assert!(!settled(&st(None, &[1, 2, 3, 4], &[1, 2, 3, 4]), None));
    }

    #[test]
    fn a_heap_size_is_digits_and_a_unit() {
        assert!(heap_size("1g") && heap_size("512m") && heap_size("2048M"));
        for bad in ["", "g", "1", "1gb", "-1g", "1g -Dx=y", "1.5g"] {
            assert!(!heap_size(bad), "{bad:?}");
        }
    }

    #[test]
    fn reads_cpu_ticks_and_log_stamps() {
        let stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 40 0 5 0 0";
        assert_eq!(stat_ticks(stat), Some(1290));
        assert_eq!(stat_ticks("garbage"), None);
        let log = "OpenJDK warning\n[2026-12-06 23:59:59,500] INFO starting (kafka.Kafka)\n\
                   [2026-12-07 00:00:02,750] INFO Kafka Server started (kafka.server.KafkaRaftServer)\n";
        assert_eq!(startup_secs(log, "Kafka Server started"), Some(3.25));
        assert_eq!(startup_secs(log, "never"), None);
    }

    #[test]
    fn ratios_per_size_leave_out_what_did_not_complete() {
        let s = |size, round, flavor, value| Sample { size, round, flavor, metric: "create_s", value };
        let samples = vec![
            s(1000, 1, Flavor::Upstream, 10.0),
            s(1000, 1, Flavor::Patched, 11.0),
            s(1000, 2, Flavor::Patched, 9.0),
            s(1000, 2, Flavor::Upstream, 10.0),
            s(5000, 1, Flavor::Upstream, 40.0),
            s(5000, 1, Flavor::Patched, f64::NAN),
        ];
        let r = summarise(&samples, &[1000, 5000]);
        let at = |size| r.iter().find(|r| r.metric == "create_s" && r.size == size).unwrap();
        let (a, b) = (at(1000).v, at(5000).v);
        assert_eq!((a.upstream, a.patched, a.ratio), (10.0, 10.0, 1.0));
        assert!((a.ratio_min - 0.9).abs() < 1e-9 && (a.ratio_max - 1.1).abs() < 1e-9);
        assert!(b.patched.is_nan() && b.ratio.is_nan());
        assert_eq!(r.len(), METRICS.len() * 2);
    }
}
