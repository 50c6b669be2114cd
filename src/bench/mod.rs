//! `okp bench broker`: what the patch costs a broker on its hot path. Identical
//! clusters started from the release's own jars (`upstream`) and from the
//! patched jars (`patched`), alternately in one run (upstream, patched,
//! upstream, patched, …: a drift in the machine's load falls on both alike),
//! each measured with the release's ProducerPerformance at acks=all:
//!
//! - `rf3-rate` / `rf3-max`: a topic on brokers 1, 2, 3 (no observer), at a
//!   fixed rate and at the most the producer gets through;
//! - `rf4-rate` / `rf4-max`: a topic on brokers 1, 2, 3, 4. Broker 4 is an
//!   observer in the patched cluster and a fourth ISR member upstream: the
//!   ratio is what an observer costs next to a plain fourth replica;
//! - `rf4-frozen`: the rf4 topic at the fixed rate with broker 4 stopped
//!   (SIGSTOP). Patched, acks=all never waits for it (the HW gate): its p99
//!   is compared with the same cluster's `rf3-rate` p99. Upstream, the leader
//!   waits until replica.lag.time.max.ms drops the frozen replica.
//!
//! Writes DIR/bench.json (every sample, the medians and ratios), DIR/summary.md
//! and one journal per cluster (every command and its output). Not a test:
//! nothing here judges a time; the numbers go to docs/benchmarks.md.

pub mod scale;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::build::record::BuildRecord;
use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::tools::{parse_perf, Tool};
use crate::cluster::{Cluster, Timers};
use crate::error::{Error, Outcome, Result};
use crate::model::{Layers, Mode, Release};
use crate::workspace::Workspace;

/// The broker that is the observer in the patched cluster.
const FOURTH: i32 = 4;

pub struct Options {
    pub release: Release,
    pub mode: Mode,
    /// Clusters of each flavor (the run starts 2 × rounds clusters).
    pub rounds: u32,
    /// Records per fixed-rate measurement, and the rate (records/s).
    pub rate_records: u64,
    pub rate: u64,
    /// Records per max-throughput measurement.
    pub max_records: u64,
    pub record_size: u64,
    pub out: PathBuf,
    /// A/A: the second flavor runs the upstream jars too (labelled `patched` in the samples).
    pub control: bool,
    /// Topic rules written after the cluster-wide `4` on every node of every cluster (`--rules`).
    pub rules: Option<String>,
}

/// Reads a `--rules` file: topic rules only (the registries' own reading, `idfile::rules`), at
/// least one, no cluster-wide id (the observer stays broker 4).
pub fn rules_file(path: &std::path::Path) -> Result<String> {
    // Read as the registries read observer.ids: one byte, one character.
    let bytes = crate::fsx::read::read_regular(path, crate::fsx::read::MAX_TEXT)
        .map_err(|e| e.into_error(path, "rules file"))?;
    let text = crate::observers::idfile::text_of(&bytes);
    let bad = |why: String| Error::Usage(format!("{}: {why}", path.display()));
    let rules = crate::observers::idfile::rules(&text).map_err(bad)?;
    if rules.is_empty() {
        return Err(bad("no topic rule in it (a line `topic:NAME|prefix:P|regex:R observers=LIST`)".into()));
    }
    let ids = crate::observers::idfile::parse(&text);
    if !ids.is_empty() {
        return Err(bad(format!(
            "cluster-wide ids {ids:?} in it: only topic rules here (the bench's observer stays broker {FOURTH})"
        )));
    }
    Ok(text)
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Flavor {
    Upstream,
    Patched,
}

impl Flavor {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Flavor::Upstream => "upstream",
            Flavor::Patched => "patched",
        }
    }
}

/// (case, topic, fixed rate?, broker 4 frozen?)
const CASES: &[(&str, &str, bool, bool)] = &[
    ("rf3-rate", "bench3", true, false),
    ("rf3-max", "bench3", false, false),
    ("rf4-rate", "bench4", true, false),
    ("rf4-max", "bench4", false, false),
    ("rf4-frozen", "bench4", true, true),
];

#[derive(Clone, Debug, serde::Serialize)]
struct Sample {
    round: u32,
    flavor: Flavor,
    case: &'static str,
    /// The producer's exit code; a sample with a non-zero one is kept but not summarised.
    rc: i32,
    records: u64,
    records_per_sec: f64,
    avg_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
}

/// The flavors of round `round` in the order they run: upstream first in odd rounds, patched
/// first in even ones (A B, B A, A B, …), so a drift of the machine over the run (a warming
/// page cache, a neighbour's load fading) favours neither flavor across a pair of rounds.
pub(crate) fn order(round: u32) -> [Flavor; 2] {
    if round % 2 == 1 {
        [Flavor::Upstream, Flavor::Patched]
    } else {
        [Flavor::Patched, Flavor::Upstream]
    }
}

/// One metric of one case: the median per flavor over the rounds, patched/upstream, and the
/// spread of the per-round ratios (round i patched over round i upstream).
#[derive(Clone, Debug, serde::Serialize)]
struct Ratio {
    case: &'static str,
    metric: &'static str,
    #[serde(flatten)]
    v: Compared,
}

/// One metric's values of both flavors, compared: the medians over the rounds, patched/upstream,
/// and the spread (min, max) of the per-round ratios (round i patched over round i upstream).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub(crate) struct Compared {
    pub upstream: f64,
    pub patched: f64,
    pub ratio: f64,
    pub ratio_min: f64,
    pub ratio_max: f64,
}

/// `Compared` of the values by round of the upstream (`a`) and patched (`b`) clusters.
pub(crate) fn compare(a: &BTreeMap<u32, f64>, b: &BTreeMap<u32, f64>) -> Compared {
    let per_round: Vec<f64> = a.iter().filter_map(|(r, x)| b.get(r).filter(|_| *x > 0.0).map(|y| y / x)).collect();
    let (ua, pb) = (median(a.values().copied().collect()), median(b.values().copied().collect()));
    Compared {
        upstream: ua,
        patched: pb,
        ratio: if ua > 0.0 { pb / ua } else { f64::NAN },
        ratio_min: per_round.iter().copied().fold(f64::NAN, f64::min),
        ratio_max: per_round.iter().copied().fold(f64::NAN, f64::max),
    }
}

/// What every benchmark does before its first cluster: the output directory (a path that cannot
/// be one fails before any build or cluster), the patched jars (refused without a passing
/// provenance proof) and the JVM's version.
pub(crate) fn prepare(ws: &Workspace, release: &Release, mode: Mode, out: &Path) -> Result<(BuildRecord, String)> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
    let build = crate::verify::patched_jars(ws, release, mode, &Layers::core(), None)?;
    if !build.proven() {
        return Err(Error::Usage(format!(
            "the patched {} {mode} jars carry no passing provenance proof: not benchmarked",
            release.version
        )));
    }
    let java_version = Runtime::assemble(&ws.maven, release.version, Some(&build))?.java_version;
    Ok((build, java_version))
}

/// The runtime of a `flavor` cluster: the patched jars for `patched`, unless `control` (A/A).
pub(crate) fn runtime(ws: &Workspace, build: &BuildRecord, flavor: Flavor, control: bool) -> Result<Runtime> {
    let patched = flavor == Flavor::Patched && !control;
    Runtime::assemble(&ws.maven, build.release, patched.then_some(build))
}

pub fn broker(ws: &Workspace, opts: Options) -> Result<Outcome> {
    if opts.rounds == 0 || opts.rate == 0 || opts.rate_records == 0 || opts.max_records == 0 || opts.record_size == 0 {
        return Err(Error::Usage(
            "--rounds, --rate, --rate-records, --max-records and --record-size must be > 0".into(),
        ));
    }
    let version = opts.release.version;
    let (build, java_version) = prepare(ws, &opts.release, opts.mode, &opts.out)?;
    let t0 = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    for round in 1..=opts.rounds {
        for flavor in order(round) {
            let rt = runtime(ws, &build, flavor, opts.control)?;
            crate::out::note(format!("bench broker {version} {}: round {round}, {}", opts.mode, flavor.word()));
            samples.extend(one_cluster(&opts, rt, round, flavor)?);
        }
    }
    let ratios = summarise(&samples);
    let record = serde_json::json!({
        "schema": 1,
        "okp_version": env!("CARGO_PKG_VERSION"),
        "release": version.to_string(),
        "mode": opts.mode,
        "java": java_version,
        "patch_set_hash": build.patch_set_hash,
        "rounds": opts.rounds,
        "rate": opts.rate,
        "rate_records": opts.rate_records,
        "max_records": opts.max_records,
        "record_size": opts.record_size,
        "producer": "acks=all linger.ms=0 enable.idempotence=false, bootstrap brokers 1-3",
        "control": opts.control,
        "rules": opts.rules,
        "seconds": crate::scenarios::round(t0.elapsed().as_secs_f64()),
        "samples": samples,
        "ratios": ratios,
    });
    let json = serde_json::to_string_pretty(&record).unwrap_or_default() + "\n";
    crate::fsx::write_atomic(&opts.out.join("bench.json"), json.as_bytes())?;
    let md = summary_md(&opts, &samples, &ratios, t0.elapsed().as_secs_f64());
    crate::fsx::write_atomic(&opts.out.join("summary.md"), md.as_bytes())?;
    crate::out::print(&md)?;
    crate::out::note(format!("bench broker: written to {}", opts.out.display()));
    Ok(Outcome::Done)
}

/// A benchmark cluster's run directory (`prefix…` under the temporary directory) and its journal,
/// `out/journal/<name>` written afresh; the benchmarks' timers.
pub(crate) fn cluster_dirs(prefix: &str, out: &Path, name: &str) -> Result<(tempfile::TempDir, Journal, Timers)> {
    let run_dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| Error::io("cannot create the run directory", e))?;
    let journal_dir = out.join("journal").join(name);
    let _ = std::fs::remove_dir_all(&journal_dir);
    let journal = Journal::new(&journal_dir, run_dir.path());
    Ok((run_dir, journal, Timers { lag_ms: 10_000, session_ms: 6_000 }))
}

/// Starts one cluster, runs every case once (after a warm-up per topic), and takes it down.
fn one_cluster(opts: &Options, rt: Runtime, round: u32, flavor: Flavor) -> Result<Vec<Sample>> {
    let (run_dir, journal, timers) = cluster_dirs("okp-bench-", &opts.out, &format!("{round}-{}", flavor.word()))?;
    let mut c = Cluster::up(opts.mode, rt, timers, run_dir.path(), None, journal, crate::cluster::Homes::Shared)?;
    let result = with_rules(&mut c, opts).and_then(|()| measure(&mut c, opts, round, flavor));
    c.down();
    drop(c);
    result
}

/// `--rules`: the rules after the cluster-wide `4` on every node, then one cache TTL and a second,
/// so every registry has read them before the first record.
fn with_rules(c: &mut Cluster, opts: &Options) -> Result<()> {
    let Some(rules) = &opts.rules else { return Ok(()) };
    let nodes = c.kafka_nodes();
    c.set_observers(&nodes, &format!("{FOURTH}\n{rules}"))?;
    std::thread::sleep(Duration::from_secs(6));
    Ok(())
}

fn measure(c: &mut Cluster, opts: &Options, round: u32, flavor: Flavor) -> Result<Vec<Sample>> {
    let topics: &[(&str, &str, &[&str])] =
        &[("bench3", "1:2:3", &["min.insync.replicas=2"]), ("bench4", "1:2:3:4", &["min.insync.replicas=2"])];
    for ((t, _, _), out) in topics.iter().zip(c.create_topics(topics)?) {
        if !out.ok() {
            return Err(Error::External(format!("creating topic {t} failed (rc {}): {}", out.rc, out.stderr.trim())));
        }
    }
    for (t, _, _) in topics {
        let (s, _) = c.wait_state(t, Duration::from_secs(60), |s| s.leader.is_some(), |_| {})?;
        if s.is_none() {
            return Err(Error::External(format!("topic {t} has no leader 60 s after creation")));
        }
    }
    let boot = c.bootstrap(&[FOURTH]);
    let perf = |c: &mut Cluster, topic: &str, n: u64, rate: Option<u64>| {
        let rate = rate.map(|r| r.to_string()).unwrap_or_else(|| "-1".into());
        let args: Vec<String> = [
            "--topic",
            topic,
            "--num-records",
            &n.to_string(),
            "--throughput",
            &rate,
            "--record-size",
            &opts.record_size.to_string(),
            "--producer-props",
            &format!("bootstrap.servers={boot}"),
            "acks=all",
            "linger.ms=0",
            "enable.idempotence=false",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        c.tool(Tool::Perf, &args, None, Duration::from_secs(300))
    };
    // Warm-up: the brokers' and the producer's JIT, every topic's first segment.
    for (t, _, _) in topics {
        perf(c, t, opts.rate_records.min(5000), Some(opts.rate))?;
    }
    let mut samples = Vec::new();
    for &(case, topic, fixed, frozen) in CASES {
        if frozen {
            c.freeze(FOURTH);
        }
        let out = perf(c, topic, if fixed { opts.rate_records } else { opts.max_records }, fixed.then_some(opts.rate));
        if frozen {
            c.thaw(FOURTH);
        }
        let out = out?;
        let p = parse_perf(&out.stdout).unwrap_or_default();
        samples.push(Sample {
            round,
            flavor,
            case,
            rc: if p.records == 0 { out.rc.max(1) } else { out.rc },
            records: p.records,
            records_per_sec: p.records_per_sec,
            avg_ms: p.avg_ms,
            p50_ms: p.p50_ms,
            p99_ms: p.p99_ms,
            p999_ms: p.p999_ms,
            max_ms: p.max_ms,
        });
        if frozen {
            // Let the thawed broker catch up before the cluster goes down (its log is not judged).
            std::thread::sleep(Duration::from_secs(2));
        }
    }
    Ok(samples)
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A metric's name and how to read it from a sample.
type Metric = (&'static str, fn(&Sample) -> f64);

const METRICS: &[Metric] = &[
    ("records_per_sec", |s| s.records_per_sec),
    ("p50_ms", |s| s.p50_ms),
    ("p99_ms", |s| s.p99_ms),
    ("p999_ms", |s| s.p999_ms),
];

fn summarise(samples: &[Sample]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for &(case, _, _, _) in CASES {
        for &(metric, get) in METRICS {
            let of = |f: Flavor| -> BTreeMap<u32, f64> {
                samples
                    .iter()
                    .filter(|s| s.case == case && s.flavor == f && s.rc == 0)
                    .map(|s| (s.round, get(s)))
                    .collect()
            };
            out.push(Ratio { case, metric, v: compare(&of(Flavor::Upstream), &of(Flavor::Patched)) });
        }
    }
    out
}

fn summary_md(opts: &Options, samples: &[Sample], ratios: &[Ratio], secs: f64) -> String {
    let mut s = format!(
        "# okp bench broker {} {}\n\n{} rounds (upstream then patched in odd rounds, patched then upstream in even ones; a fresh cluster each), ProducerPerformance \
         acks=all, {}-byte records: fixed rate {} records/s × {} records, max throughput {} records. Wall time {:.0} s. \
         Ratios are patched/upstream of the medians over the rounds; the spread is the per-round ratios' min..max.\n\n",
        opts.release.version,
        opts.mode,
        opts.rounds,
        opts.record_size,
        opts.rate,
        opts.rate_records,
        opts.max_records,
        secs
    );
    if opts.control {
        s.push_str(
            "**A/A control** (`--control`): the clusters labelled `patched` ran the release's upstream jars too, so \
             every ratio below is upstream/upstream: its spread is this machine's noise for these settings, the band \
             a patched/upstream ratio must be read against.\n\n",
        );
    }
    if let Some(rules) = &opts.rules {
        let shown: Vec<&str> = rules.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        s.push_str(&format!(
            "**Topic rules** (`--rules`) after the cluster-wide `{FOURTH}` on every node of every cluster (upstream \
             ignores them): `{}`.\n\n",
            shown.join("`; `")
        ));
    }
    s.push_str("| case | metric | upstream | patched | patched/upstream | spread |\n|---|---|---|---|---|---|\n");
    for r in ratios {
        s.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:.3} | {:.3}..{:.3} |\n",
            r.case, r.metric, r.v.upstream, r.v.patched, r.v.ratio, r.v.ratio_min, r.v.ratio_max
        ));
    }
    // The HW gate in numbers: the patched cluster's frozen-observer p99 against its own no-observer p99.
    let p99 = |case: &str| {
        median(
            samples
                .iter()
                .filter(|x| x.case == case && x.flavor == Flavor::Patched && x.rc == 0)
                .map(|x| x.p99_ms)
                .collect(),
        )
    };
    let (frozen, plain) = (p99("rf4-frozen"), p99("rf3-rate"));
    if opts.control {
        s.push_str(&format!(
            "\nA/A control: no cluster had an observer, so rf4-frozen is upstream's frozen fourth ISR member on both \
             sides (p99 {frozen:.1} ms against {plain:.1} ms on rf3): it shows what the HW gate spares, not the gate.\n"
        ));
    } else {
        s.push_str(&format!(
            "\nPatched, observer frozen: acks=all p99 {frozen:.1} ms on the rf4 topic against {plain:.1} ms on the rf3 topic \
             (no observer): ratio {:.3}.\n",
            frozen / plain
        ));
    }
    let failed: Vec<String> = samples
        .iter()
        .filter(|x| x.rc != 0)
        .map(|x| format!("round {} {} {} (rc {})", x.round, x.flavor.word(), x.case, x.rc))
        .collect();
    if !failed.is_empty() {
        s.push_str(&format!("\nSamples left out (the producer failed): {}.\n", failed.join(", ")));
    }
    s.push_str("\nEvery sample: bench.json; each cluster's commands and output: journal/<round>-<flavor>/.\n");
    s
}

/// The default evidence directory of a run.
pub fn default_out(release: &Release, mode: Mode, control: bool, rules: bool) -> PathBuf {
    let suffix = match (control, rules) {
        (true, true) => "-rules-control",
        (true, false) => "-control",
        (false, true) => "-rules",
        (false, false) => "",
    };
    Path::new("evidence").join("bench").join("broker").join(format!("{}-{mode}{suffix}", release.version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_which_flavor_runs_first() {
        assert_eq!(order(1), [Flavor::Upstream, Flavor::Patched]);
        assert_eq!(order(2), [Flavor::Patched, Flavor::Upstream]);
        assert_eq!(order(3), order(1));
    }

    #[test]
    fn ratios_are_of_medians_and_the_spread_of_rounds() {
        let s = |round, flavor, rps: f64| Sample {
            round,
            flavor,
            case: "rf3-rate",
            rc: 0,
            records: 1,
            records_per_sec: rps,
            avg_ms: 1.0,
            p50_ms: 1.0,
            p99_ms: 2.0,
            p999_ms: 3.0,
            max_ms: 4.0,
        };
        let samples = vec![
            s(1, Flavor::Upstream, 100.0),
            s(1, Flavor::Patched, 98.0),
            s(2, Flavor::Upstream, 110.0),
            s(2, Flavor::Patched, 110.0),
            s(3, Flavor::Upstream, 90.0),
            s(3, Flavor::Patched, 99.0),
        ];
        let r = summarise(&samples);
        let t = r.iter().find(|r| r.case == "rf3-rate" && r.metric == "records_per_sec").unwrap();
        assert_eq!((t.v.upstream, t.v.patched), (100.0, 99.0));
        assert!((t.v.ratio - 0.99).abs() < 1e-9);
        assert!((t.v.ratio_min - 0.98).abs() < 1e-9 && (t.v.ratio_max - 1.1).abs() < 1e-9);
        // A failed sample is left out of the medians.
        let mut bad = samples.clone();
        bad[1].rc = 1;
        let r = summarise(&bad);
        let t = r.iter().find(|r| r.case == "rf3-rate" && r.metric == "records_per_sec").unwrap();
        assert_eq!(t.v.patched, 104.5);
    }
}
