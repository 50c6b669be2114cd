//! One run: the jars, the runtime, a cluster per lane, the suite on each, teardown, the record.
//!
//! Not here: the page layouts (`render`, `matrix`), where the evidence goes (`publish`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::jars::patched_jars;
use super::plan::{pairs, placement, run_name};
use super::publish::{write, write_evidence};
use super::record::{self, RunRecord, RunVerdict, SwappedJar};
use super::render::{summary_page, terminal_table};
use super::Options;
use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, Timers};
use crate::error::{Error, Outcome as Exit, Result};
use crate::model::Mode;
use crate::scenarios::{self, Flavor, Outcome, Scenario};
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, opts: Options) -> Result<Exit> {
    let t_suite = Instant::now();
    let maven = &ws.maven;
    let version = opts.release.version;
    let name = run_name(&version.to_string(), opts.mode, opts.flavor);
    let mut seconds: BTreeMap<String, f64> = BTreeMap::new();

    // 1. The jars under test.
    let t = Instant::now();
    let build = match opts.flavor {
        Flavor::Upstream => None,
        Flavor::Patched => Some(patched_jars(ws, &opts.release, opts.mode, &opts.layers, opts.jars.as_deref())?),
    };
    seconds.insert("jars".into(), scenarios::round(t.elapsed().as_secs_f64()));

    // 2. The runtime: the release's classpath with the patched jars swapped in.
    let t = Instant::now();
    let rt = Runtime::assemble(maven, version, build.as_ref())?;
    seconds.insert("classpath".into(), scenarios::round(t.elapsed().as_secs_f64()));

    // The lanes, and each one's port block when --base-port names the first: checked before
    // anything is written.
    let mut plan = scenarios::lanes(&opts.scenarios, opts.lanes, opts.mode);
    if plan.is_empty() {
        plan.push(Vec::new());
    }
    let lanes = plan.len();
    let base_ports: Vec<Option<u16>> = (0..lanes as u16)
        .map(|i| match opts.base_port {
            None => Ok(None),
            Some(b) => b
                .checked_add(crate::cluster::PORT_BLOCK * i)
                .filter(|base| base.checked_add(crate::cluster::PORT_BLOCK - 1).is_some())
                .map(Some)
                .ok_or_else(|| Error::Usage(format!("--base-port {b}: lane {}'s ports would pass port 65535", i + 1))),
        })
        .collect::<Result<_>>()?;

    let run_dir = tempfile::Builder::new()
        .prefix(&format!("okp-verify-{name}-"))
        .tempdir()
        .map_err(|e| Error::io("cannot create the run directory", e))?
        .keep();
    let staging = run_dir.join("evidence");
    eprintln!("okp: verify {name}: run directory {}", run_dir.display());

    // 3. The clusters, one per lane, each with the shared topics; started at once.
    let t = Instant::now();
    // A patched run installs the signed bundle okp ships into a Kafka home per node.
    let (bundle, bundling) = match opts.flavor {
        Flavor::Patched => {
            let (b, log) = crate::cluster::homes::make_bundle(&rt, &ws.files, &run_dir.join("bundle"))?;
            (Some(b), log)
        }
        Flavor::Upstream => (None, Vec::new()),
    };
    let t_journal = Instant::now();
    let mut started: Vec<Result<Cluster>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..lanes)
            .map(|i| {
                let lane = LaneStart {
                    lane: i + 1,
                    mode: opts.mode,
                    rt: rt.clone(),
                    timers: opts.timers.clone(),
                    dir: if i == 0 { run_dir.clone() } else { run_dir.join(format!("lane-{}", i + 1)) },
                    base_port: base_ports[i],
                    journal: Journal::for_lane(&staging, &run_dir, i + 1, t_journal),
                    bundle: bundle.clone(),
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
    seconds.insert("cluster_up".into(), scenarios::round(t.elapsed().as_secs_f64()));
    if let Some(i) = started.iter().position(|r| r.is_err()) {
        // Every cluster that did start is stopped (Drop) before the error goes up.
        let e = started.swap_remove(i).err().unwrap_or_else(|| Error::External("a lane did not start".into()));
        drop(started);
        eprintln!("okp: verify {name}: set-up failed; logs kept in {}", run_dir.display());
        return Err(e);
    }
    let mut clusters: Vec<Cluster> = started.into_iter().flatten().collect();
    let rss_after_start = lane_keyed(clusters.iter_mut().map(|c| c.rss()).collect());

    // 4. The suite: each lane's scenarios on its own cluster, the lanes at once.
    let t = Instant::now();
    let flavor = opts.flavor;
    let per_lane: Vec<(Vec<Outcome>, f64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = clusters
            .iter_mut()
            .zip(&plan)
            .enumerate()
            .map(|(i, (c, selected))| {
                let lane = (lanes > 1).then_some(i as u8 + 1);
                let h = scope.spawn(move || {
                    let t = Instant::now();
                    let o = scenarios::run_suite(c, flavor, selected, lane);
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
    seconds.insert("scenarios".into(), scenarios::round(t.elapsed().as_secs_f64()));
    // An interrupted run writes no evidence: its clusters stop (Drop) on the way to exit 130.
    crate::cluster::node::check_interrupt()?;
    let lane_records: Vec<record::Lane> = if lanes > 1 {
        per_lane
            .iter()
            .zip(&plan)
            .zip(&clusters)
            .enumerate()
            .map(|(i, (((_, secs), selected), c))| record::Lane {
                lane: i as u8 + 1,
                scenarios: selected.iter().map(|s| s.id.to_string()).collect(),
                base_port: c.base_port,
                cluster_id: c.cluster_id.clone(),
                seconds: *secs,
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut outcomes: Vec<Outcome> = per_lane.into_iter().flat_map(|(o, _)| o).collect();
    let order = |id: &str| scenarios::SCENARIOS.iter().position(|s| s.id == id).unwrap_or(usize::MAX);
    outcomes.sort_by_key(|o| order(&o.id));
    let needles = ["OBSERVER AUDIT", "Observer broker ids changed", "Cannot read observer ids", "observer ids"];
    let mut audit = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        let lines = c.grep_logs(&needles);
        audit.extend(lines.into_iter().map(|l| if i == 0 { l } else { format!("lane {}: {l}", i + 1) }));
    }
    let rss_end = lane_keyed(clusters.iter_mut().map(|c| c.rss()).collect());
    let t = Instant::now();
    std::thread::scope(|scope| {
        for (i, c) in clusters.iter_mut().enumerate() {
            scope.spawn(move || {
                let (stem, title) = crate::cluster::journal::lane_section("teardown", "teardown", i + 1);
                c.journal.begin(&stem, &title);
                c.down();
            });
        }
    });
    seconds.insert("teardown".into(), scenarios::round(t.elapsed().as_secs_f64()));
    seconds.insert("total".into(), scenarios::round(t_suite.elapsed().as_secs_f64()));
    let cluster = &clusters[0];

    // 5. Verdict and evidence.
    let verdict = Verdict::of(opts.flavor, &outcomes).verdict();
    let file_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let record = RunRecord {
        schema: record::SCHEMA.current,
        okp_version: env!("CARGO_PKG_VERSION").to_string(),
        written_utc: crate::report::utc_now(),
        release: version,
        mode: opts.mode,
        family: opts.release.family.clone(),
        flavor: opts.flavor,
        verdict,
        java: cluster.rt.java_version.clone(),
        patch_set_hash: build.as_ref().map(|b| b.patch_set_hash.clone()),
        layers: build.as_ref().map(|b| b.layers.clone()),
        jars: cluster
            .rt
            .swapped
            .iter()
            .map(|(up, p, sha)| SwappedJar { upstream: file_name(up), patched: file_name(p), sha256: sha.clone() })
            .collect(),
        classpath_jars: cluster.rt.classpath.len(),
        logging_added: cluster.rt.added.clone(),
        classpath_left_out: cluster.rt.left_out.clone(),
        tool_classes: cluster
            .tools
            .classes
            .iter()
            .map(|(t, (c, jar))| (t.label().to_string(), format!("{c} ({jar})")))
            .collect(),
        timers: opts.timers,
        cluster_id: cluster.cluster_id.clone(),
        rss_mib_after_start: rss_after_start,
        rss_mib_at_end: rss_end,
        seconds,
        lanes: lane_records,
        scenarios: outcomes,
    };
    let summary = summary_page(&record);
    record.write(&staging)?;
    write(&staging.join("summary.md"), &summary)?;
    let run_str = run_dir.display().to_string();
    write(&staging.join("observer-audit.txt"), &(audit.join("\n").replace(&run_str, "$RUN") + "\n"))?;
    let ids: Vec<&str> = opts.scenarios.iter().map(|s| s.id).collect();
    let dest =
        write_evidence(&staging, &opts.evidence, &placement(&name, opts.flavor, &ids), &pairs(&ws.model.matrix))?;
    drop(clusters);

    if verdict.ok() && !opts.keep {
        let _ = std::fs::remove_dir_all(&run_dir);
    } else {
        eprintln!("okp: verify {name}: run directory (node logs) kept at {}", run_dir.display());
    }
    if opts.json {
        crate::out::print(&crate::schema::to_json(&record))?;
    } else {
        crate::out::print(&terminal_table(&name, &record, &dest))?;
    }
    Ok(Exit::check(verdict.ok()))
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
}

/// Starts one lane's cluster and creates the shared topics, each with a leader.
fn start_lane(l: LaneStart, bundling: &[crate::cluster::homes::Ran]) -> Result<Cluster> {
    let homes = crate::cluster::Homes::PerNode(l.bundle);
    std::fs::create_dir_all(&l.dir).map_err(|e| Error::io(format!("cannot create {}", l.dir.display()), e))?;
    let mut cluster = Cluster::up(l.mode, l.rt, l.timers, &l.dir, l.base_port, l.journal, homes)?;
    if !bundling.is_empty() {
        cluster.journal.note("the bundle installed above was made before the cluster, with:");
        for ran in bundling {
            cluster.journal_okp(ran);
        }
    }
    let outs = cluster.create_topics(scenarios::TOPICS)?;
    for ((topic, _, _), out) in scenarios::TOPICS.iter().zip(&outs) {
        if !out.ok() {
            return Err(Error::External(format!(
                "lane {}: creating topic {topic} failed (rc {}): {}",
                l.lane,
                out.rc,
                out.stderr.lines().last().unwrap_or("")
            )));
        }
    }
    // Every partition has a leader before the first scenario.
    for (topic, _, _) in scenarios::TOPICS {
        let (s, _) = cluster.wait_state(topic, Duration::from_secs(30), |s| s.leader.is_some(), |_| {})?;
        if s.is_none() {
            return Err(Error::External(format!("lane {}: topic {topic} has no leader 30 s after creation", l.lane)));
        }
    }
    Ok(cluster)
}

/// Outcomes for the scenarios of a lane whose thread panicked: each failed, so the verdict
/// cannot pass on scenarios that never reported.
fn lane_panicked(selected: &[&'static Scenario], lane: Option<u8>) -> Vec<Outcome> {
    selected
        .iter()
        .map(|s| Outcome {
            error: Some("okp's thread for this lane panicked; the node logs are in the run directory".into()),
            ..Outcome::of(s, format!("{}.txt", s.id), lane)
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

pub struct Verdict {
    flavor: Flavor,
    failed: Vec<String>,
    gates_not_failed: Vec<String>,
}

impl Verdict {
    fn of(flavor: Flavor, outcomes: &[Outcome]) -> Verdict {
        Verdict {
            flavor,
            failed: outcomes.iter().filter(|o| !o.pass).map(|o| o.id.clone()).collect(),
            gates_not_failed: outcomes.iter().filter(|o| o.gate && o.pass).map(|o| o.id.clone()).collect(),
        }
    }

    /// Patched: every scenario passed. Upstream (negative control): every gate scenario failed.
    fn verdict(&self) -> RunVerdict {
        match self.flavor {
            Flavor::Patched if self.failed.is_empty() => RunVerdict::Pass,
            Flavor::Patched => RunVerdict::Fail,
            Flavor::Upstream if self.gates_not_failed.is_empty() => RunVerdict::ControlHeld,
            Flavor::Upstream => RunVerdict::ControlFailed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
