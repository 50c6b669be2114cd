//! One run, stage by stage: the lanes (`plan`), the jars under test (`jars`), the release's
//! runtime, a cluster per lane started at once, the suite on each at once, teardown, then the
//! record of it all, its pages (`render`) and its place in the evidence directory (`publish`).
//!
//! Not here: processes and tools (cluster/), what is asserted (scenarios/), the page layouts
//! (`render`, `matrix`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::jars::patched_jars_from;
use super::plan::{self, placement, run_name, LanePlan};
use super::publish::{self, write_evidence};
use super::record::{self, RunRecord, RunVerdict, SwappedJar};
use super::render::terminal_table;
use super::Options;
use crate::build::record::BuildRecord;
use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, Timers};
use crate::error::{Error, Outcome, Result};
use crate::model::{Mode, PairFilter};
use crate::scenarios::{self, Flavor, Scenario, ScenarioResult};
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, opts: Options) -> Result<Outcome> {
    let t_suite = Instant::now();
    let hops: String = opts.upgrade_to.iter().map(|b| format!("-to-{}", b.version)).collect();
    let name = if opts.migrate {
        format!(
            "{}-zk-to-kraft{}{}{hops}",
            opts.release.version,
            if opts.tuning.migrate_back { "-and-back" } else { "" },
            if opts.tuning.upstream_controllers { "-upstream-controllers" } else { "" }
        )
    } else if !opts.upgrade_to.is_empty() {
        // HOSTS with --upgrade-to: the Ansible upgrade play on the hosts, a record of its own.
        let hosts = if opts.scenarios.iter().any(|s| s.id == "HOSTS") { "-hosts" } else { "" };
        format!(
            "{}{hops}-{}{hosts}{}",
            opts.release.version,
            opts.mode,
            if opts.tuning.upstream_controllers { "-upstream-controllers" } else { "" }
        )
    } else {
        run_name(&opts.release.version.to_string(), opts.mode, opts.flavor)
    };
    // MIGRATE: the KRaft jar set (core with the ZooKeeper-controller hooks, and metadata) on a
    // cluster that starts in ZooKeeper mode.
    let jars_mode = if opts.migrate { Mode::Kraft } else { opts.mode };
    let mut seconds: BTreeMap<String, f64> = BTreeMap::new();

    // 1. The lanes, and each one's port block when --base-port names the first: checked before
    // anything is built or written.
    let lanes = plan::lanes(&opts.scenarios, opts.lanes, opts.mode, opts.base_port)?;

    // 2. The jars under test.
    let build = timed(&mut seconds, "jars", || match opts.flavor {
        Flavor::Upstream => Ok(None),
        Flavor::Patched => patched_jars_from(
            ws,
            &opts.release,
            jars_mode,
            &opts.layers,
            opts.jars.as_deref(),
            opts.jars_source.as_ref(),
        )
        .map(Some),
    })?;

    // 3. The runtime: the release's classpath with the patched jars swapped in.
    let rt = timed(&mut seconds, "classpath", || Runtime::assemble(&ws.maven, opts.release.version, build.as_ref()))?;
    // UPGRADE: the release the cluster is rolled to, patched the same way, on its own classpath.
    let hop_mode = if opts.migrate { Mode::Kraft } else { opts.mode };
    let nexts: Vec<(BuildRecord, Runtime)> = timed(&mut seconds, "next_release", || -> Result<_> {
        opts.upgrade_to
            .iter()
            .map(|b| {
                let build = patched_jars_from(ws, b, hop_mode, &opts.layers, None, None)?;
                let rt = Runtime::assemble(&ws.maven, b.version, Some(&build))?;
                Ok((build, rt))
            })
            .collect()
    })?;

    let (run_dir, staging) = publish::run_dir("verify", &name)?;

    // 4. The clusters, one per lane, each with the shared topics; started at once.
    let mut clusters =
        timed(&mut seconds, "cluster_up", || start_clusters(ws, &opts, &name, &rt, &lanes, &run_dir, &staging))?;
    if !nexts.is_empty() {
        timed(&mut seconds, "next_bundle", || -> Result<()> {
            for (_, rt_b) in &nexts {
                prepare_next(ws, &mut clusters[0], rt_b.clone(), &run_dir)?;
            }
            Ok(())
        })?;
    }
    let rss_after_start = lane_keyed(clusters.iter_mut().map(|c| c.rss()).collect());

    // 5. The suite: each lane's scenarios on its own cluster, the lanes at once.
    let (outcomes, lane_records) =
        timed(&mut seconds, "scenarios", || run_lanes(&mut clusters, &lanes, opts.flavor, opts.tuning));
    // An interrupted run writes no evidence: its clusters stop (Drop) on the way to exit 130.
    crate::cluster::node::check_interrupt()?;
    let audit = audit_lines(&clusters);
    let rss_at_end = lane_keyed(clusters.iter_mut().map(|c| c.rss()).collect());
    timed(&mut seconds, "teardown", || teardown(&mut clusters));
    seconds.insert("total".into(), scenarios::round(t_suite.elapsed().as_secs_f64()));

    // 6. The record, its pages, and its place in the evidence directory.
    let measured = Measured { seconds, rss_after_start, rss_at_end, lanes: lane_records, outcomes };
    let mut record = record_of(&opts, build.as_ref(), &clusters[0], measured);
    record.upgrade_to = opts
        .upgrade_to
        .iter()
        .zip(&nexts)
        .map(|(b, (build_b, rt_b))| record::UpgradeTo {
            release: b.version,
            family: b.family.clone(),
            patch_set_hash: build_b.patch_set_hash.clone(),
            jars: swapped_jars(rt_b),
        })
        .collect();
    let verdict = record.verdict;
    publish::stage(&staging, &record, &audit, &run_dir)?;
    let ids: Vec<&str> = opts.scenarios.iter().map(|s| s.id).collect();
    let dest = if !opts.upgrade_to.is_empty() || opts.migrate {
        publish::write_upgrade_evidence(&staging, &opts.evidence, &name)?
    } else if ids == ["WAN"] || ids == ["MM2"] {
        let link = opts.tuning.wan.unwrap_or(scenarios::wan::DEFAULT_LINK);
        let run = match (ids == ["MM2"], opts.tuning.mm2_exactly_once) {
            (true, true) => format!("{name}-mm2eos"),
            (true, false) => format!("{name}-mm2"),
            _ => name.clone(),
        };
        publish::write_wan_evidence(&staging, &opts.evidence, &super::wan_page::dir_name(&run, link))?
    } else {
        write_evidence(
            &staging,
            &opts.evidence,
            &placement(&name, opts.flavor, &ids),
            &ws.model.matrix.pairs(PairFilter::default()),
        )?
    };
    drop(clusters);

    if verdict.ok() && !opts.keep {
        let _ = std::fs::remove_dir_all(&run_dir);
    } else {
        crate::out::note(format!("verify {name}: run directory (node logs) kept at {}", run_dir.display()));
    }
    if opts.json {
        crate::out::print(&crate::schema::to_json(&record))?;
    } else {
        crate::out::print(&terminal_table(&name, &record, &dest))?;
    }
    Ok(Outcome::check(verdict.ok()))
}

/// Runs one phase of the run and records its wall time under `phase` in run.json's `seconds`.
fn timed<T>(seconds: &mut BTreeMap<String, f64>, phase: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    seconds.insert(phase.into(), scenarios::round(t.elapsed().as_secs_f64()));
    out
}

/// Starts every lane's cluster at once; a patched run first makes the bundle each node installs.
/// When one lane fails, every cluster that did start is stopped (Drop) before the error goes up.
fn start_clusters(
    ws: &Workspace,
    opts: &Options,
    name: &str,
    rt: &Runtime,
    lanes: &[LanePlan],
    run_dir: &Path,
    staging: &Path,
) -> Result<Vec<Cluster>> {
    // A patched run installs the signed bundle okp ships into a Kafka home per node.
    let (bundle, bundling) = match opts.flavor {
        Flavor::Patched => {
            let source_args: Vec<String> = match &opts.jars_source {
                Some(super::JarsSource::Tree(d)) => vec!["--tree".into(), d.display().to_string()],
                Some(super::JarsSource::Git { repo, rev }) => {
                    vec!["--git".into(), repo.display().to_string(), "--rev".into(), rev.clone()]
                }
                None => Vec::new(),
            };
            let (b, log) = crate::cluster::homes::make_bundle(rt, &ws.files, &run_dir.join("bundle"), &source_args)?;
            (Some(b), log)
        }
        Flavor::Upstream => (None, Vec::new()),
    };
    let t_journal = Instant::now();
    let mut started: Vec<Result<Cluster>> = std::thread::scope(|scope| {
        let handles: Vec<_> = lanes
            .iter()
            .enumerate()
            .map(|(i, plan)| {
                let lane = LaneStart {
                    lane: i + 1,
                    mode: opts.mode,
                    rt: rt.clone(),
                    timers: opts.timers.clone(),
                    dir: if i == 0 { run_dir.to_path_buf() } else { run_dir.join(format!("lane-{}", i + 1)) },
                    base_port: plan.base_port,
                    journal: Journal::for_lane(staging, run_dir, i + 1, t_journal),
                    bundle: bundle.clone(),
                    monitoring: if opts.tuning.prometheus {
                        crate::cluster::Monitoring::Prometheus
                    } else {
                        crate::cluster::Monitoring::Off
                    },
                };
                let bundling = &bundling;
                scope.spawn(move || start_lane(lane, bundling))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::External("a lane's start-up panicked".into()))))
            .collect()
    });
    if let Some(i) = started.iter().position(|r| r.is_err()) {
        let e = started.swap_remove(i).err().unwrap_or_else(|| Error::External("a lane did not start".into()));
        drop(started);
        crate::out::note(format!("verify {name}: set-up failed; logs kept in {}", run_dir.display()));
        return Err(e);
    }
    Ok(started.into_iter().flatten().collect())
}

/// Each lane's scenarios on its own cluster, the lanes at once: the outcomes in suite order, and
/// for a run of several lanes what each lane ran (a one-lane run records none, as before lanes).
fn run_lanes(
    clusters: &mut [Cluster],
    lanes: &[LanePlan],
    flavor: Flavor,
    tuning: scenarios::Tuning,
) -> (Vec<ScenarioResult>, Vec<record::Lane>) {
    let several = lanes.len() > 1;
    let per_lane: Vec<(Vec<ScenarioResult>, f64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = clusters
            .iter_mut()
            .zip(lanes)
            .enumerate()
            .map(|(i, (c, plan))| {
                let lane = several.then_some(i as u8 + 1);
                let selected = &plan.scenarios;
                let h = scope.spawn(move || {
                    let t = Instant::now();
                    let o = scenarios::run_suite(c, flavor, selected, lane, tuning);
                    (o, scenarios::round(t.elapsed().as_secs_f64()))
                });
                (h, selected, lane)
            })
            .collect();
        handles
            .into_iter()
            .map(|(h, selected, lane)| h.join().unwrap_or_else(|_| (lane_panicked(selected, lane), 0.0)))
            .collect()
    });
    let lane_records: Vec<record::Lane> = if several {
        per_lane
            .iter()
            .zip(lanes)
            .zip(clusters.iter())
            .enumerate()
            .map(|(i, (((_, secs), plan), c))| record::Lane {
                lane: i as u8 + 1,
                scenarios: plan.scenarios.iter().map(|s| s.id.to_string()).collect(),
                base_port: c.base_port,
                cluster_id: c.cluster_id.clone(),
                seconds: *secs,
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut outcomes: Vec<ScenarioResult> = per_lane.into_iter().flat_map(|(o, _)| o).collect();
    let order = |id: &str| scenarios::SCENARIOS.iter().position(|s| s.id == id).unwrap_or(usize::MAX);
    outcomes.sort_by_key(|o| order(&o.id));
    (outcomes, lane_records)
}

/// Every observer-set line the nodes logged; lane N's lines start `lane N: `.
fn audit_lines(clusters: &[Cluster]) -> Vec<String> {
    let needles = ["OBSERVER AUDIT", "Observer broker ids changed", "Cannot read observer ids", "observer ids"];
    let mut audit = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        let lines = c.grep_logs(&needles);
        audit.extend(lines.into_iter().map(|l| if i == 0 { l } else { format!("lane {}: {l}", i + 1) }));
    }
    audit
}

/// Stops every lane's cluster at once, each journaled in its own teardown section.
fn teardown(clusters: &mut [Cluster]) {
    std::thread::scope(|scope| {
        for (i, c) in clusters.iter_mut().enumerate() {
            scope.spawn(move || {
                let (stem, title) = crate::cluster::journal::lane_section("teardown", "teardown", i + 1);
                c.journal.begin(&stem, &title);
                c.down();
            });
        }
    });
}

/// What the run measured, for its record.
struct Measured {
    seconds: BTreeMap<String, f64>,
    rss_after_start: BTreeMap<String, u64>,
    rss_at_end: BTreeMap<String, u64>,
    lanes: Vec<record::Lane>,
    outcomes: Vec<ScenarioResult>,
}

/// run.json of the run: what ran (lane 1's cluster names the runtime and tools, the same on every
/// lane), what it measured, and the verdict.
fn record_of(opts: &Options, build: Option<&BuildRecord>, cluster: &Cluster, m: Measured) -> RunRecord {
    RunRecord {
        schema: record::SCHEMA.current,
        okp_version: env!("CARGO_PKG_VERSION").to_string(),
        written_utc: crate::report::utc_now(),
        release: opts.release.version,
        mode: opts.mode,
        family: opts.release.family.clone(),
        flavor: opts.flavor,
        verdict: verdict(opts.flavor, &m.outcomes),
        java: cluster.rt.java_version.clone(),
        patch_set_hash: build.map(|b| b.patch_set_hash.clone()),
        layers: build.map(|b| b.layers.clone()),
        jars: swapped_jars(&cluster.rt),
        classpath_jars: cluster.rt.classpath.len(),
        logging_added: cluster.rt.added.clone(),
        classpath_left_out: cluster.rt.left_out.clone(),
        tool_classes: cluster
            .tools
            .classes
            .iter()
            .map(|(t, (c, jar))| (t.label().to_string(), format!("{c} ({jar})")))
            .collect(),
        timers: opts.timers.clone(),
        cluster_id: cluster.cluster_id.clone(),
        rss_mib_after_start: m.rss_after_start,
        rss_mib_at_end: m.rss_at_end,
        seconds: m.seconds,
        lanes: m.lanes,
        scenarios: m.outcomes,
        upgrade_to: Vec::new(),
    }
}

/// The patched jars swapped into `rt`'s classpath, for a record.
fn swapped_jars(rt: &Runtime) -> Vec<SwappedJar> {
    let file_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    rt.swapped
        .iter()
        .map(|(up, p, sha)| SwappedJar { upstream: file_name(up), patched: file_name(p), sha256: sha.clone() })
        .collect()
}

/// UPGRADE: B's signed bundle made as A's was (`okp keygen`, `okp bundle`), and B's logging and
/// tools, handed to the one cluster (`Cluster::next`).
fn prepare_next(ws: &Workspace, c: &mut Cluster, rt: Runtime, run_dir: &Path) -> Result<()> {
    let v = rt.version;
    let (bundle, log) = crate::cluster::homes::make_bundle(&rt, &ws.files, &run_dir.join(format!("bundle-{v}")), &[])?;
    c.journal.note(&format!("the bundle of {v}, which UPGRADE installs into each node's {v} home, made with:"));
    for ran in &log {
        c.journal_okp(ran);
    }
    let next = crate::cluster::next::Next::prepare(rt, bundle, &run_dir.join(format!("next-{v}")))?;
    // The first release to roll to is `next`; the ones after it wait in `later`.
    if c.next.is_none() {
        c.next = Some(next);
    } else {
        c.later.push_back(next);
    }
    Ok(())
}

/// Patched: every scenario passed. Upstream (the negative control): every gate scenario failed;
/// an upstream run of no gate scenario (CREATE beside its patched run) is judged as a patched
/// run is, under a verdict of its own, so it never reads as a negative control that held.
fn verdict(flavor: Flavor, outcomes: &[ScenarioResult]) -> RunVerdict {
    match flavor {
        Flavor::Patched if outcomes.iter().all(|o| o.pass) => RunVerdict::Pass,
        Flavor::Patched => RunVerdict::Fail,
        Flavor::Upstream if !outcomes.iter().any(|o| o.gate) => {
            if outcomes.iter().all(|o| o.pass) {
                RunVerdict::UpstreamPass
            } else {
                RunVerdict::UpstreamFail
            }
        }
        Flavor::Upstream if outcomes.iter().all(|o| !(o.gate && o.pass)) => RunVerdict::ControlHeld,
        Flavor::Upstream => RunVerdict::ControlFailed,
    }
}

/// What one lane's cluster starts from.
struct LaneStart {
    lane: usize,
    mode: Mode,
    rt: Runtime,
    timers: Timers,
    /// The lane's run directory: the run's own for lane 1, `lane-N/` below it for the others.
    dir: PathBuf,
    /// `--base-port` plus the blocks of the lanes before it (None: a free block).
    base_port: Option<u16>,
    journal: Journal,
    bundle: Option<crate::cluster::homes::Bundle>,
    /// The JMX exporter in every node and a Prometheus server (`--prometheus`, PROM).
    monitoring: crate::cluster::Monitoring,
}

/// A kafka-topics `--create` that failed only because the topic exists (TopicExistsException).
fn created_by_a_retry(out: &crate::cluster::tools::Output) -> bool {
    out.rc == 1 && (out.stdout.contains("TopicExistsException") || out.stderr.contains("TopicExistsException"))
}

/// `replicas` is the one partition's `--replica-assignment` (`1:2:4`), in its order.
fn assignment_is(replicas: &[i32], assignment: &str) -> bool {
    assignment
        .split(':')
        .map(str::parse::<i32>)
        .collect::<std::result::Result<Vec<_>, _>>()
        .is_ok_and(|asked| asked == replicas)
}

/// Starts one lane's cluster and creates the shared topics, each with a leader.
fn start_lane(l: LaneStart, bundling: &[crate::cluster::homes::Ran]) -> Result<Cluster> {
    let homes = crate::cluster::Homes::PerNode(l.bundle);
    std::fs::create_dir_all(&l.dir).map_err(|e| Error::io(format!("cannot create {}", l.dir.display()), e))?;
    let mut cluster = Cluster::up_with(l.mode, l.rt, l.timers, &l.dir, l.base_port, l.journal, homes, l.monitoring)?;
    if !bundling.is_empty() {
        cluster.journal.note("the bundle installed above was made before the cluster, with:");
        for ran in bundling {
            cluster.journal_okp(ran);
        }
    }
    let outs = cluster.create_topics(scenarios::TOPICS)?;
    // A create whose first request timed out on a loaded machine is retried by the admin client,
    // and the retry answers "already exists" for the topic its first request made: taken as
    // created, once the topic shows exactly the assignment asked for (below).
    let mut retried = Vec::new();
    for ((topic, _, _), out) in scenarios::TOPICS.iter().zip(&outs) {
        if !out.ok() {
            if created_by_a_retry(out) {
                cluster.journal.note(&format!(
                    "topic {topic}: the tool's retry found it already there (its first request made it); \
                     its assignment is checked below"
                ));
                retried.push(*topic);
                continue;
            }
            return Err(Error::External(format!(
                "lane {}: creating topic {topic} failed (rc {}): {}",
                l.lane,
                out.rc,
                out.stderr.lines().last().unwrap_or("")
            )));
        }
    }
    // Every partition has a leader before the first scenario.
    for (topic, assignment, _) in scenarios::TOPICS {
        let (s, _) = cluster.wait_state(topic, Duration::from_secs(30), |s| s.leader.is_some(), |_| {})?;
        let Some(s) = s else {
            return Err(Error::External(format!("lane {}: topic {topic} has no leader 30 s after creation", l.lane)));
        };
        if retried.contains(topic) && !assignment_is(&s.replicas, assignment) {
            return Err(Error::External(format!(
                "lane {}: topic {topic} was there before okp created it, with replicas {:?} where okp asks for {assignment}",
                l.lane, s.replicas
            )));
        }
    }
    Ok(cluster)
}

/// Outcomes for the scenarios of a lane whose thread panicked: each failed, so the verdict
/// cannot pass on scenarios that never reported.
fn lane_panicked(selected: &[&'static Scenario], lane: Option<u8>) -> Vec<ScenarioResult> {
    selected
        .iter()
        .map(|s| ScenarioResult {
            error: Some("okp's thread for this lane panicked; the node logs are in the run directory".into()),
            ..ScenarioResult::of(s, format!("{}.txt", s.id), lane)
        })
        .collect()
}

/// The lanes' per-process maps as one: lane 1's keys as they are, lane N's as `lane-N/<key>`.
fn lane_keyed(maps: Vec<BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (i, m) in maps.into_iter().enumerate() {
        for (k, v) in m {
            out.insert(if i == 0 { k } else { format!("lane-{}/{k}", i + 1) }, v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only "the topic exists" counts as a create made by a retried request, and only the exact
    /// assignment asked for, in its order, is taken for the topic okp created.
    #[test]
    fn a_retried_create_is_taken_only_as_exists_and_with_the_asked_assignment() {
        let out = |rc: i32, stdout: &str, stderr: &str| crate::cluster::tools::Output {
            argv: vec![],
            rc,
            stdout: stdout.into(),
            stderr: stderr.into(),
            secs: 0.0,
            timed_out: false,
        };
        let exists = "[..] ERROR org.apache.kafka.common.errors.TopicExistsException: Topic 'rf3' already exists.";
        assert!(created_by_a_retry(&out(
            1,
            "Error while executing topic command : Topic 'rf3' already exists.",
            exists
        )));
        assert!(!created_by_a_retry(&out(1, "", "org.apache.kafka.common.errors.TimeoutException: timed out")));
        assert!(!created_by_a_retry(&out(0, "Created topic rf3.", "")));
        assert!(assignment_is(&[1, 2, 4], "1:2:4"));
        assert!(!assignment_is(&[2, 1, 4], "1:2:4"));
        assert!(!assignment_is(&[1, 2], "1:2:4"));
        assert!(!assignment_is(&[1, 2, 4], "1:2:x"));
        assert!(!assignment_is(&[], ""));
    }

    /// Lane 1's processes keep their names; lane N's are `lane-N/<name>`, so no lane hides another's.
    #[test]
    fn the_lanes_rss_maps_are_kept_apart() {
        let m = |k: &str, v: u64| BTreeMap::from([(k.to_string(), v)]);
        let joined = lane_keyed(vec![m("broker-1", 100), m("broker-1", 200), m("c101", 7)]);
        assert_eq!(joined.get("broker-1"), Some(&100));
        assert_eq!(joined.get("lane-2/broker-1"), Some(&200));
        assert_eq!(joined.get("lane-3/c101"), Some(&7));
        assert_eq!(joined.len(), 3);
    }

    /// A negative control holds only when every gate failed; a patched run passes only when all passed.
    #[test]
    fn the_verdict_of_each_flavor() {
        let o = |id: &str, gate: bool, pass: bool| ScenarioResult {
            gate,
            pass,
            ..ScenarioResult::of(scenarios::by_id(id).unwrap(), format!("{id}.txt"), None)
        };
        assert_eq!(verdict(Flavor::Patched, &[o("INIT", true, true), o("S1", false, true)]), RunVerdict::Pass);
        assert_eq!(verdict(Flavor::Patched, &[o("INIT", true, true), o("S1", false, false)]), RunVerdict::Fail);
        assert_eq!(verdict(Flavor::Upstream, &[o("INIT", true, false), o("S1", false, true)]), RunVerdict::ControlHeld);
        assert_eq!(
            verdict(Flavor::Upstream, &[o("INIT", true, true), o("S4", true, false)]),
            RunVerdict::ControlFailed
        );
        // No gate: not a negative control; its scenarios' own verdicts decide.
        assert_eq!(verdict(Flavor::Upstream, &[o("CREATE", false, true)]), RunVerdict::UpstreamPass);
        assert_eq!(verdict(Flavor::Upstream, &[o("CREATE", false, false)]), RunVerdict::UpstreamFail);
        assert!(RunVerdict::UpstreamPass.ok() && !RunVerdict::UpstreamFail.ok());
    }
}
