//! `okp verify`: build (or take) the patched jars of one release and mode,
//! start a real cluster on loopback from Maven Central artifacts, run the
//! scenario suite, and write the evidence: the journal of every command,
//! run.json with every number, a summary page per run and one matrix page
//! over every run in the evidence directory.
//!
//! Not here: processes and tools (cluster/), what is asserted (scenarios/),
//! run.json's schema (`record`).

pub mod record;
pub mod unit;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::build::record::BuildRecord;
use crate::build::splice;
use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, Timers};
use crate::error::{Error, Outcome as Exit, Result};
use crate::model::{Layers, Matrix, Mode, Release};
use crate::scenarios::{self, Flavor, Outcome, Scenario};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;
use record::{RunRecord, RunVerdict, SwappedJar};

/// The subdirectory of the evidence directory that holds partial runs (fewer scenarios than the suite).
pub const PARTIAL_DIR: &str = "partial";

/// One (release, mode) of versions.yaml, as VERIFY.md lists it whether or not it was run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub release: KafkaVersion,
    pub mode: Mode,
    /// Maven Central has its sources jars, so `okp verify` can build its patched jars.
    pub sources: bool,
}

/// Every (release, mode) of the matrix, in versions.yaml's order.
pub fn pairs(matrix: &Matrix) -> Vec<Pair> {
    matrix
        .releases
        .iter()
        .flat_map(|r| {
            r.modes.iter().map(move |m| Pair { release: r.version, mode: *m, sources: r.no_sources_jar.is_none() })
        })
        .collect()
}

/// Where a run's evidence goes, relative to the evidence directory. A run of the whole suite
/// of its flavor replaces `<name>/`; a run of fewer scenarios (`--scenarios`, or `--layer core`
/// which leaves MET out) goes to `partial/<name>-<what it ran>/`, so re-checking one scenario
/// never replaces a full run's journals, and VERIFY.md keeps the full run. `<what it ran>` is
/// the ids it ran (`S4`, `S4-S7`), or `without-` the ids it left out when that is shorter.
pub fn placement(name: &str, flavor: Flavor, selected: &[&str]) -> PathBuf {
    let has = |id: &str| selected.iter().any(|s| s.eq_ignore_ascii_case(id));
    let full: Vec<&str> = scenarios::default_suite(flavor).map(|s| s.id).collect();
    let missing: Vec<&str> = full.iter().copied().filter(|id| !has(id)).collect();
    if missing.is_empty() {
        return PathBuf::from(name);
    }
    let ran: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.id).filter(|id| has(id)).collect();
    let what = if ran.len() <= missing.len() { ran.join("-") } else { format!("without-{}", missing.join("-")) };
    Path::new(PARTIAL_DIR).join(format!("{name}-{what}"))
}

pub struct Options {
    pub release: Release,
    pub mode: Mode,
    pub flavor: Flavor,
    pub jars: Option<PathBuf>,
    /// Layers of the patched build (ignored with --upstream).
    pub layers: Layers,
    pub scenarios: Vec<&'static Scenario>,
    pub timers: Timers,
    pub evidence: PathBuf,
    pub keep: bool,
    pub base_port: Option<u16>,
    pub json: bool,
    /// How many clusters share the suite (each runs its lane's scenarios at the same time).
    pub lanes: usize,
}

/// The run's identity in the evidence directory: `<release>-<mode>[-upstream]`.
pub fn run_name(release: &str, mode: Mode, flavor: Flavor) -> String {
    match flavor {
        Flavor::Patched => format!("{release}-{mode}"),
        Flavor::Upstream => format!("{release}-{mode}-upstream"),
    }
}

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

/// Patched jars: `--jars DIR` (a build's output), else a splice build cached
/// per release, mode and patch-set hash (a changed patch set builds anew).
pub fn patched_jars(
    ws: &Workspace,
    release: &Release,
    mode: Mode,
    layers: &Layers,
    jars: Option<&Path>,
) -> Result<BuildRecord> {
    if let Some(dir) = jars {
        let rec = BuildRecord::read(dir)?;
        if rec.release != release.version || rec.mode != mode {
            return Err(Error::Usage(format!(
                "{}: built for {} {}, not {} {}",
                dir.display(),
                rec.release,
                rec.mode,
                release.version,
                mode
            )));
        }
        if !rec.proven() {
            return Err(Error::Check(format!(
                "{}: okp-build.json holds no passing provenance proof, so nothing shows these jars are the \
                 release plus exactly our edits; build them again with this okp",
                dir.display()
            )));
        }
        let (_, facts) = rec.read_and_recheck(ws, dir, None)?;
        facts.note("verify: ");
        return Ok(rec);
    }
    let hash = ws.patch_set()?.effective(&ws.model, release, release.version, mode, layers).hash;
    let dir = ws.maven.repo_local.join("okp-verify-jars").join(format!("{}-{}-{}", release.version, mode, &hash[..16]));
    // A record this okp cannot read (another schema, damaged) is a miss: the jars are built anew;
    // so is one without a passing provenance proof, or whose jars' bytes do not show what it says.
    match BuildRecord::read(&dir) {
        Ok(rec) if rec.patch_set_hash == hash && rec.proven() => match rec.read_and_recheck(ws, &dir, None) {
            Ok((_, facts)) => {
                crate::out::note(format!("verify: patched jars from the cache {}", dir.display()));
                facts.note("verify: ");
                return Ok(rec);
            }
            Err(e) => crate::out::note(format!("verify: cached jars not used ({e})")),
        },
        Err(e) if dir.exists() => eprintln!("okp: verify: cached jars not used ({e})"),
        _ => {}
    }
    eprintln!("okp: verify: building the patched jars of {} {} (splice)", release.version, mode);
    let upstream = splice::release_sources(ws, release)?;
    match splice::splice(ws, release, mode, layers, upstream.as_ref(), &dir, false)? {
        splice::SpliceOutcome::Built(rec) => Ok(*rec),
        splice::SpliceOutcome::CompileFailed(f) => {
            Err(Error::Check(format!("the {} build failed to compile {}:\n{}", release.version, f.module, f.output)))
        }
    }
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

fn terminal_table(name: &str, record: &RunRecord, dest: &Path) -> String {
    let (outcomes, seconds) = (&record.scenarios, &record.seconds);
    let mut s =
        format!("okp verify {name}\n\n{:<5} {:<6} {:>8}  {:>6}  {}\n", "id", "result", "seconds", "checks", "scenario");
    for o in outcomes {
        let passed = o.checks.iter().filter(|c| c.pass).count();
        s.push_str(&format!(
            "{:<5} {:<6} {:>8.1}  {:>6}  {}\n",
            o.id,
            if o.pass { "pass" } else { "FAIL" },
            o.seconds,
            format!("{passed}/{}", o.checks.len()),
            o.title
        ));
        for c in o.checks.iter().filter(|c| !c.pass) {
            s.push_str(&format!("      FAIL {} — {}\n", c.name, c.detail));
        }
        if let Some(e) = &o.error {
            s.push_str(&format!("      ERROR {e}\n"));
        }
    }
    let t = |k: &str| seconds.get(k).copied().unwrap_or(0.0);
    s.push_str(&format!(
        "\nwall time: {:.1} s total (jars {:.1}, classpath {:.1}, cluster up {:.1}, scenarios {:.1}, teardown {:.1})\nverdict: {}\nevidence: {}\n",
        t("total"),
        t("jars"),
        t("classpath"),
        t("cluster_up"),
        t("scenarios"),
        t("teardown"),
        record.verdict.word(),
        dest.display()
    ));
    s
}

fn summary_page(record: &RunRecord) -> String {
    let outcomes = &record.scenarios;
    let mut s = format!(
        "# okp verify {} {} ({})\n\nWritten by okp {} at {} UTC. Verdict: **{}**. Java: {}.\n\n",
        record.release,
        record.mode,
        record.flavor.as_str(),
        record.okp_version,
        record.written_utc,
        record.verdict.word(),
        record.java
    );
    s.push_str("Raw evidence: `run.json` (every number), one journal per scenario (each command and its output), `setup.txt`, `observer-audit.txt`.\n\n");
    s.push_str("| id | result | seconds | scenario | journal |\n|---|---|---|---|---|\n");
    for o in outcomes {
        s.push_str(&format!(
            "| {} | {} | {:.1} | {} | [{}]({}) |\n",
            o.id,
            if o.pass { "pass" } else { "**FAIL**" },
            o.seconds,
            o.title,
            o.evidence,
            o.evidence
        ));
    }
    for o in outcomes {
        s.push_str(&format!("\n## {} — {}\n\n", o.id, o.title));
        for c in &o.checks {
            s.push_str(&format!(
                "- {} {} — {}\n",
                if c.pass { "PASS" } else { "**FAIL**" },
                c.name,
                c.detail.replace('|', "\\|")
            ));
        }
        if let Some(e) = &o.error {
            s.push_str(&format!("- **ERROR** {e}\n"));
        }
    }
    s
}

/// Publishes a run's `staging` directory as `evidence/<at>` (see `placement`) and writes the
/// VERIFY.md pages: the partial runs' own page when `at` is under `partial/`, and the main
/// page over the whole matrix of `pairs`. Runs of one okp (`--all --jobs N`) take turns here,
/// so each page is read and written whole.
pub fn write_evidence(staging: &Path, evidence: &Path, at: &Path, pairs: &[Pair]) -> Result<PathBuf> {
    static PAGES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = PAGES.lock().unwrap_or_else(|e| e.into_inner());
    let dest = evidence.join(at);
    publish(staging, &dest)?;
    if at.starts_with(PARTIAL_DIR) {
        write_matrix(&evidence.join(PARTIAL_DIR), None)?;
    }
    write_matrix(evidence, Some(pairs))?;
    Ok(dest)
}

/// Replaces `dest` with `staging` as one rename (the old run goes only once the new one is complete).
pub(crate) fn publish(staging: &Path, dest: &Path) -> Result<()> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
    let tmp = parent.join(format!(
        ".{}.new-{}",
        dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(staging, &tmp)?;
    let old = parent.join(format!(
        ".{}.old-{}",
        dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    if dest.exists() {
        std::fs::rename(dest, &old).map_err(|e| Error::io(format!("cannot move {} aside", dest.display()), e))?;
    }
    std::fs::rename(&tmp, dest).map_err(|e| Error::io(format!("cannot write {}", dest.display()), e))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(format!("cannot create {}", to.display()), e))?;
    let entries = std::fs::read_dir(from).map_err(|e| Error::io(format!("cannot read {}", from.display()), e))?;
    for e in entries.flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))
                .map_err(|er| Error::io(format!("cannot copy {}", e.path().display()), er))?;
        } else if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()))?;
        }
    }
    Ok(())
}

fn write(p: &Path, text: &str) -> Result<()> {
    std::fs::write(p, text).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))
}

/// What `evidence` holds for one (release, mode), for `okp releases`: a passing patched run (the
/// full run `<release>-<mode>/`, else the newest passing partial run `partial/<release>-<mode>-…/`)
/// and a passing provenance proof (`build/proof/<release>-<mode>.json`), as paths relative to it.
pub fn pair_evidence(evidence: &Path, release: KafkaVersion, mode: Mode) -> crate::releases::PairEvidence {
    let name = run_name(&release.to_string(), mode, Flavor::Patched);
    let passed = |dir: &Path| RunRecord::read(dir).is_ok_and(|r| r.verdict.ok() && r.flavor == Flavor::Patched);
    let run = if passed(&evidence.join(&name)) {
        Some(format!("{name}/"))
    } else {
        // The widest partial run, as VERIFY.md shows it.
        let mut partial: Vec<((usize, String), String)> = std::fs::read_dir(evidence.join(PARTIAL_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let dir = e.file_name().to_string_lossy().into_owned();
                let r = RunRecord::read(&e.path()).ok()?;
                let ours = r.release == release && r.mode == mode && r.flavor == Flavor::Patched && r.verdict.ok();
                ours.then(|| ((r.scenarios.len(), r.written_utc), format!("{PARTIAL_DIR}/{dir}/")))
            })
            .collect();
        partial.sort();
        partial.pop().map(|(_, d)| d)
    };
    let rel = format!("{PROOF_DIR}/{name}.json");
    let proof = crate::schema::read_file(&evidence.join(&rel))
        .ok()
        .and_then(|b| serde_json::from_slice::<crate::build::proof::Provenance>(&b).ok())
        .filter(|p| p.passed())
        .map(|_| rel);
    crate::releases::PairEvidence { run, proof }
}

/// evidence/VERIFY.md: release × scenario over every run.json in the evidence
/// directory, each cell linking to that scenario's journal. With `pairs`, every
/// (release, mode) of the matrix has a row, and one without a patched run here
/// says `not run` (it claims nothing). A run.json okp cannot read (another
/// schema, damaged) is left out of the table and named below it and on stderr.
pub fn write_matrix(evidence: &Path, pairs: Option<&[Pair]>) -> Result<()> {
    let mut runs: Vec<(String, RunRecord)> = Vec::new();
    let mut left_out: Vec<(String, String)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(evidence) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !e.path().join(record::FILE_NAME).is_file() {
                continue;
            }
            match RunRecord::read(&e.path()) {
                Ok(r) => runs.push((name, r)),
                Err(err) => {
                    crate::out::note(format!("verify: VERIFY.md leaves out {err}"));
                    let why = match err {
                        Error::UnknownSchema { found: Some(found), reads, .. } => {
                            format!("schema {found}, and this okp reads schema {reads}")
                        }
                        Error::Tree { msg, .. } => msg,
                        other => other.to_string(),
                    };
                    left_out.push((name, why));
                }
            }
        }
    }
    // The main page: a pair (and flavor) with no run of the whole suite shows its widest partial
    // run instead, marked as such, rather than `not run`.
    let partials = if pairs.is_some() { partial_runs(&evidence.join(PARTIAL_DIR)) } else { Vec::new() };
    if pairs.is_some() {
        for (name, r) in partials.clone() {
            let full = |x: &RunRecord| x.release == r.release && x.mode == r.mode && x.flavor == r.flavor;
            if runs.iter().any(|(n, x)| !n.starts_with(PARTIAL_DIR) && full(x)) {
                continue;
            }
            match runs.iter().position(|(_, x)| full(x)) {
                Some(i)
                    if (runs[i].1.scenarios.len(), &runs[i].1.written_utc) >= (r.scenarios.len(), &r.written_utc) => {}
                Some(i) => runs[i] = (name, r),
                None => runs.push((name, r)),
            }
        }
    }
    runs.sort_by(|(a, x), (b, y)| (x.release, a).cmp(&(y.release, b)));
    left_out.sort();
    let p = evidence.join("VERIFY.md");
    std::fs::create_dir_all(evidence).map_err(|e| Error::io(format!("cannot create {}", evidence.display()), e))?;
    let labels: Vec<String> = runs.iter().map(|(n, r)| row_label(n, r)).collect();
    let unit: BTreeMap<String, String> =
        labels.iter().filter_map(|l| Some((l.clone(), unit::matrix_cell(evidence, l)?))).collect();
    // The proof column covers every pair of the matrix, run here or not.
    let mut names: Vec<String> = labels.clone();
    names.extend(pairs.unwrap_or_default().iter().map(|p| run_name(&p.release.to_string(), p.mode, Flavor::Patched)));
    let proof: BTreeMap<String, String> =
        names.iter().filter_map(|name| Some((name.clone(), proof_cell(evidence, name)?))).collect();
    let partial = evidence.join(PARTIAL_DIR).join("VERIFY.md").is_file();
    let columns = [Column { header: "proof", cells: proof }, Column { header: "unit", cells: unit }];
    let bytecode = bytecode_verdicts(evidence);
    crate::fsx::write_atomic(
        &p,
        matrix_page(&runs, &partials, &left_out, pairs, partial, &columns, &bytecode).as_bytes(),
    )
}

/// A row's name on the main page: the run's directory, or for a partial run standing in for its
/// pair, the pair's run name.
fn row_label(name: &str, r: &RunRecord) -> String {
    if name.starts_with(PARTIAL_DIR) {
        run_name(&r.release.to_string(), r.mode, r.flavor)
    } else {
        name.to_string()
    }
}

/// The runs under `dir` (the partial runs' directory), as `partial/<dir name>`; unreadable ones
/// are left to that directory's own page, which names them.
fn partial_runs(dir: &Path) -> Vec<(String, RunRecord)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, RunRecord)> = rd
        .flatten()
        .filter(|e| e.path().join(record::FILE_NAME).is_file())
        .filter_map(|e| {
            let r = RunRecord::read(&e.path()).ok()?;
            Some((format!("{PARTIAL_DIR}/{}", e.file_name().to_string_lossy()), r))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A column of VERIFY.md between `seconds` and the scenarios, left out when no row has a cell.
struct Column {
    header: &'static str,
    cells: BTreeMap<String, String>,
}

/// Where `scripts/proof-evidence.sh` keeps each pair's provenance proofs, below the evidence directory.
const PROOF_DIR: &str = "build/proof";

/// The proof column's cell of `run` (`3.9.2-zk`): its build's provenance proofs, where
/// `build/proof/<run>.json` holds them (okp's own provenance.json of a splice build).
fn proof_cell(evidence: &Path, run: &str) -> Option<String> {
    let rel = format!("{PROOF_DIR}/{run}.json");
    let path = evidence.join(&rel);
    if !path.is_file() {
        return None;
    }
    let read = crate::schema::read_file(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<crate::build::proof::Provenance>(&b).ok());
    Some(match read {
        Some(p) if p.passed() => format!("[proved]({rel})"),
        Some(_) => format!("[NOT proved]({rel})"),
        None => format!("[unreadable]({rel})"),
    })
}

/// The VERIFY.md page of `runs` (name, record), of the runs `left_out` (name, why), and,
/// with `pairs`, of the matrix's pairs that have no patched run here.
/// `columns`: the proof and unit-tests columns (a cell per row name, where there is one).
/// The cell of scenario `id` for a row whose own run did not run it: from the newest other
/// partial run of the same pair and flavor that did, marked `†`; None when no run did.
fn filled_cell(row: &str, r: &RunRecord, id: &str, partials: &[(String, RunRecord)]) -> Option<(bool, String)> {
    let (name, o) = partials
        .iter()
        .filter(|(n, x)| n != row && x.release == r.release && x.mode == r.mode && x.flavor == r.flavor)
        .filter_map(|(n, x)| Some((n, x, x.scenarios.iter().find(|o| o.id == id)?)))
        .max_by(|a, b| a.1.written_utc.cmp(&b.1.written_utc).then(a.0.cmp(b.0)))
        .map(|(n, _, o)| (n, o))?;
    let word = if o.pass { "pass" } else { "FAIL" };
    Some((o.pass, format!("[{word} {:.0}s †]({name}/{})", o.seconds, o.evidence)))
}

/// Where `okp diff --binary --evidence` put a release's verdict from its own jars
/// (`releases/diff-V1-V2-bytecode.{md,json}`): release -> (verdict, the markdown's path).
pub fn bytecode_verdicts(evidence: &Path) -> BTreeMap<KafkaVersion, (String, String)> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(evidence.join(RELEASES_DIR)) else { return out };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix("-bytecode.json").filter(|s| !s.ends_with("-tree-and")) else { continue };
        let Ok(bytes) = crate::schema::read_file(&e.path()) else { continue };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else { continue };
        let to = v["to"]["version"].as_str().and_then(|t| t.parse::<KafkaVersion>().ok());
        if let (Some(to), Some(verdict)) = (to, v["verdict"].as_str()) {
            let verdict = match verdict {
                "carries-over-review" => "carries over with review".to_string(),
                v => v.replace('-', " "),
            };
            out.insert(to, (verdict, format!("{RELEASES_DIR}/{stem}-bytecode.md")));
        }
    }
    out
}

/// Where `okp releases --report` and `okp diff --evidence` keep the releases' reports, below the
/// evidence directory.
const RELEASES_DIR: &str = "releases";

fn matrix_page(
    runs: &[(String, RunRecord)],
    partials: &[(String, RunRecord)],
    left_out: &[(String, String)],
    pairs: Option<&[Pair]>,
    partial: bool,
    columns: &[Column],
    bytecode: &BTreeMap<KafkaVersion, (String, String)>,
) -> String {
    let columns: Vec<&Column> = columns.iter().filter(|c| !c.cells.is_empty()).collect();
    let extra = |name: &str| -> String {
        columns.iter().map(|c| format!("{} | ", c.cells.get(name).map_or("–", String::as_str))).collect()
    };
    let ids: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.id).collect();
    let mut s = String::from("# okp verify: release × scenario\n\nWritten by `okp verify` after every run, from the `run.json` files in this directory. ");
    let gates: Vec<&str> = scenarios::SCENARIOS.iter().filter(|s| s.gate).map(|s| s.id).collect();
    s.push_str(&format!("Each cell links to the scenario's journal (every command and its output). `-upstream` rows are negative controls on unpatched jars: their gate scenarios ({}) are expected to FAIL.\n\n", gates.join(", ")));
    s.push_str(&format!("Opt-in scenarios ({}: `okp verify --scenarios ID`, docs/hosts.md) are no part of the suite a row is counted against; their cells come from partial runs (†).\n\n", scenarios::OPT_IN.join(", ")));
    if columns.iter().any(|c| c.header == "proof") {
        s.push_str(&format!("The `proof` column is the provenance proof of an `okp build` of the same release and mode (`{PROOF_DIR}/<pair>.json`, okp's provenance.json, written by `scripts/proof-evidence.sh`): the patch delta passed, and the sources compiled give the release's own classes, nothing forgiven beyond the release's named exceptions ([summary]({PROOF_DIR}/summary.md)).\n\n"));
    }
    if columns.iter().any(|c| c.header == "unit") {
        s.push_str("The `unit` column is `okp unit-tests` on the same release and mode: Kafka's own unit tests of the hooked classes on upstream jars, patched jars, and patched jars with observers ([evidence/unit](unit/)).\n\n");
    }
    // Rows: every run, then (with `pairs`) each pair with no patched run, sorted together by release.
    let mut rows: Vec<(KafkaVersion, String, String)> = Vec::new();
    for (name, r) in runs {
        // A partial run standing in for a pair's missing full run: labelled by its pair, marked.
        let label = row_label(name, r);
        let total = r.seconds.get("total").copied().unwrap_or(0.0);
        // Cells the row's run did not run come from the pair's other partial runs (main page only).
        let (mut filled, mut filled_failed) = (0, 0);
        let cells: Vec<String> = ids
            .iter()
            .map(|id| match r.scenarios.iter().find(|o| o.id == *id) {
                Some(o) => {
                    format!("[{} {:.0}s]({name}/{})", if o.pass { "pass" } else { "FAIL" }, o.seconds, o.evidence)
                }
                None => match filled_cell(name, r, id, partials) {
                    // An opt-in scenario (HOSTS) is no part of the suite a row is counted against.
                    Some((_, cell)) if scenarios::OPT_IN.contains(id) => cell,
                    Some((pass, cell)) => {
                        filled += 1;
                        filled_failed += usize::from(!pass);
                        cell
                    }
                    None => "–".into(),
                },
            })
            .collect();
        // A row of fewer scenarios than today's suite says so: a partial run, or a run of the
        // whole suite as it was before scenarios were added to it; cells from other runs say so.
        let suite = scenarios::default_suite(r.flavor).count();
        let ran = r.scenarios.iter().filter(|o| !scenarios::OPT_IN.contains(&o.id.as_str())).count();
        let shown = ran + filled;
        let mut notes = Vec::new();
        if name.starts_with(PARTIAL_DIR) {
            notes.push("partial".to_string());
        } else if pairs.is_some() && ran < suite {
            notes.push(format!("an older suite of {ran}"));
        }
        if filled > 0 {
            notes.push(format!("+{filled} from partial runs †"));
        }
        if filled_failed > 0 {
            notes.push(format!("{filled_failed} of those FAILED"));
        }
        if pairs.is_some() && (name.starts_with(PARTIAL_DIR) || filled > 0 || ran < suite) {
            notes.push(format!("{shown} of {suite} shown"));
        }
        let verdict = if notes.is_empty() {
            r.verdict.word().to_string()
        } else {
            format!("{} ({})", r.verdict.word(), notes.join("; "))
        };
        let row = format!(
            "| [{label}]({name}/summary.md) | {verdict} | {total:.0} | {}{} |\n",
            extra(&label),
            cells.join(" | ")
        );
        rows.push((r.release, label, row));
    }
    if let Some(pairs) = pairs {
        let run = |p: &Pair| {
            runs.iter().any(|(_, r)| r.release == p.release && r.mode == p.mode && r.flavor == Flavor::Patched)
        };
        let with_sources = pairs.iter().filter(|p| p.sources).count();
        let proven: Vec<&RunRecord> = runs.iter().map(|(_, r)| r).filter(|r| r.flavor == Flavor::Patched).collect();
        let passed = proven.iter().filter(|r| r.verdict == RunVerdict::Pass).count();
        let partial_only =
            runs.iter().filter(|(n, r)| n.starts_with(PARTIAL_DIR) && r.flavor == Flavor::Patched).count();
        s.push_str(&format!(
            "The matrix: {} (release, mode) pairs in versions.yaml, {with_sources} with sources jars. {} have a patched run here ({passed} pass; {partial_only} of them only a partial run, marked `partial` with how many of the suite's scenarios it ran); a pair marked `not run` has no evidence here and claims nothing.\n\n",
            pairs.len(),
            proven.len()
        ));
        for p in pairs.iter().filter(|p| !run(p)) {
            let name = run_name(&p.release.to_string(), p.mode, Flavor::Patched);
            let why = match (p.sources, bytecode.get(&p.release)) {
                (true, _) => "not run".to_string(),
                (false, None) => "not run (no sources jar on Maven Central)".to_string(),
                (false, Some((verdict, link))) => format!(
                    "not run (no sources jar on Maven Central: not built; its own jars against the release before: [{verdict}]({link}))"
                ),
            };
            let row = format!("| {name} | {why} | | {}{} |\n", extra(&name), vec!["–"; ids.len()].join(" | "));
            rows.push((p.release, name, row));
        }
    }
    rows.sort_by(|(a, x, _), (b, y, _)| (a, x).cmp(&(b, y)));
    s.push_str(&format!(
        "| run | verdict | seconds | {}{} |\n|---|---|---|{}{}\n",
        columns.iter().map(|c| format!("{} | ", c.header)).collect::<String>(),
        ids.join(" | "),
        "---|".repeat(columns.len()),
        "---|".repeat(ids.len())
    ));
    for (_, _, row) in &rows {
        s.push_str(row);
    }
    if rows.iter().any(|(_, _, row)| row.contains(" †](")) {
        s.push_str("\nA cell marked † is from a partial run of the same pair and flavor (the newest that ran that scenario; the link is its journal), filling a scenario the row's own run did not run.\n");
    }
    if partial {
        s.push_str(&format!(
            "\nPartial runs (fewer scenarios than the suite) are kept apart and never replace a run above: [{PARTIAL_DIR}/VERIFY.md]({PARTIAL_DIR}/VERIFY.md).\n"
        ));
    }
    if !left_out.is_empty() {
        s.push_str("\nLeft out: runs whose `run.json` this okp cannot read.\n\n");
        for (name, why) in left_out {
            s.push_str(&format!("- [{name}]({name}/{}): {why}\n", record::FILE_NAME));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence")
    }

    /// Copies the run.json files of `from`'s runs (and of its partial runs), and the unit.json files
    /// of its unit runs, into a fresh evidence directory.
    fn runs_of(from: &Path) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let copy = |from: &Path, to: &Path, file: &str| {
            for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
                let run = e.path().join(file);
                if run.is_file() {
                    std::fs::create_dir_all(to.join(e.file_name())).unwrap();
                    std::fs::copy(&run, to.join(e.file_name()).join(file)).unwrap();
                }
            }
        };
        copy(from, t.path(), record::FILE_NAME);
        copy(&from.join(PARTIAL_DIR), &t.path().join(PARTIAL_DIR), record::FILE_NAME);
        copy(&from.join("unit"), &t.path().join("unit"), unit::record::FILE_NAME);
        for dir in [PROOF_DIR, RELEASES_DIR] {
            for e in std::fs::read_dir(from.join(dir)).into_iter().flatten().flatten() {
                if e.path().extension().is_some_and(|x| x == "json") {
                    std::fs::create_dir_all(t.path().join(dir)).unwrap();
                    std::fs::copy(e.path(), t.path().join(dir).join(e.file_name())).unwrap();
                }
            }
        }
        t
    }

    #[test]
    fn the_proof_column_links_each_pairs_provenance_proof_run_or_not() {
        let t = runs_of(&evidence());
        // Without the partial runs, which would stand in for 2.7.0 zk's missing full run.
        let _ = std::fs::remove_dir_all(t.path().join(PARTIAL_DIR));
        write_matrix(t.path(), Some(&matrix_pairs())).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| run | verdict | seconds | proof | unit | INIT"), "{page}");
        let row =
            |start: &str| page.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {page}"));
        assert!(row("| [3.9.2-zk]").contains("| [proved](build/proof/3.9.2-zk.json) |"), "{page}");
        assert!(row("| 2.7.0-zk | not run").contains("| [proved](build/proof/2.7.0-zk.json) |"), "{page}");
        assert!(row("| [3.1.2-zk]").contains("| [proved](build/proof/3.1.2-zk.json) |"), "{page}");
        assert!(row("| 4.4.0-kraft |").contains("| – | – |"), "no proof, no unit run: {page}");
        // Damaged or not a proof: said so, never a pass.
        std::fs::write(t.path().join(PROOF_DIR).join("3.9.2-zk.json"), "{").unwrap();
        write_matrix(t.path(), Some(&matrix_pairs())).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| [unreadable](build/proof/3.9.2-zk.json) |"), "{page}");
    }

    #[test]
    fn the_unit_column_shows_a_unit_run_and_only_then() {
        let t = runs_of(&evidence());
        let _ = std::fs::remove_dir_all(t.path().join("unit"));
        let _ = std::fs::remove_dir_all(t.path().join(PROOF_DIR));
        write_matrix(t.path(), None).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(!page.contains("| unit |"), "{page}");
        let dir = t.path().join("unit").join("3.9.2-zk");
        std::fs::create_dir_all(&dir).unwrap();
        unit::record::tests::sample().write(&dir).unwrap();
        write_matrix(t.path(), None).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| run | verdict | seconds | unit | INIT"), "{page}");
        assert!(page.contains("| [pass 3 tests, 0 regr., 0 changes](unit/3.9.2-zk/summary.md) |"), "{page}");
        let other = page.lines().find(|l| l.starts_with("| [3.9.2-kraft]")).unwrap();
        assert!(other.contains(" | – | [pass"), "a run without a unit run has an empty cell: {other}");
    }

    fn matrix_pairs() -> Vec<Pair> {
        pairs(&crate::model::Model::load(None, None).unwrap().matrix)
    }

    /// The typed reader gives the same pages as the run.json files under evidence/ were published with
    /// (`okp verify --merge` writes them again after a change to the page or the scenario list).
    #[test]
    fn the_evidence_pages_come_out_the_same_from_the_typed_records() {
        let all = matrix_pairs();
        for dir in [evidence(), evidence().join("met-cluster")] {
            let t = runs_of(&dir);
            if t.path().join(PARTIAL_DIR).is_dir() {
                write_matrix(&t.path().join(PARTIAL_DIR), None).unwrap();
                let want = std::fs::read_to_string(dir.join(PARTIAL_DIR).join("VERIFY.md")).unwrap();
                assert_eq!(std::fs::read_to_string(t.path().join(PARTIAL_DIR).join("VERIFY.md")).unwrap(), want);
            }
            write_matrix(t.path(), Some(&all)).unwrap();
            let want = std::fs::read_to_string(dir.join("VERIFY.md")).unwrap();
            assert_eq!(std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap(), want, "{}", dir.display());
            for e in std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.path().join("summary.md").is_file()) {
                let rec = RunRecord::read(&e.path()).unwrap();
                let want = std::fs::read_to_string(e.path().join("summary.md")).unwrap();
                assert_eq!(summary_page(&rec), want, "{}", e.path().display());
            }
        }
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

    /// A run of several lanes says which lane ran each scenario; a one-lane run's file has neither
    /// field, like every run written before lanes, and both read back the same.
    #[test]
    fn lanes_are_written_only_for_a_run_of_several_and_read_back() {
        // MET's cluster runs under evidence/met-cluster/ were written before lanes.
        let older = evidence().join("met-cluster").join("2.7.2-zk");
        let text = std::fs::read_to_string(older.join(record::FILE_NAME)).unwrap();
        assert!(!text.contains("\"lane"), "an older run names no lane");
        let mut r = RunRecord::read(&older).unwrap();
        assert!(r.lanes.is_empty() && r.scenarios.iter().all(|o| o.lane.is_none()));
        let one = serde_json::to_string(&r).unwrap();
        assert!(!one.contains("\"lanes\"") && !one.contains("\"lane\""), "a one-lane run names no lane");
        r.lanes = vec![record::Lane {
            lane: 2,
            scenarios: vec!["S1".into()],
            base_port: 20017,
            cluster_id: None,
            seconds: 1.5,
        }];
        r.scenarios[0].lane = Some(2);
        let two = serde_json::to_string(&r).unwrap();
        assert!(two.contains("\"lanes\"") && two.contains("\"lane\":2"), "{two}");
        assert_eq!(serde_json::from_str::<RunRecord>(&two).unwrap(), r);
    }

    #[test]
    fn a_run_of_an_unknown_schema_is_left_out_and_named() {
        let t = runs_of(&evidence());
        let run = t.path().join("3.9.2-zk").join(record::FILE_NAME);
        // Runs written since the schema field was added name it first; older ones lack it.
        let text = std::fs::read_to_string(&run).unwrap();
        let text = if text.contains("\"schema\": 1,") {
            text.replacen("\"schema\": 1,", "\"schema\": 2,", 1)
        } else {
            text.replacen('{', "{\n  \"schema\": 2,", 1)
        };
        std::fs::write(&run, text).unwrap();
        write_matrix(t.path(), None).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(!page.contains("| [3.9.2-zk](3.9.2-zk/summary.md)"), "{page}");
        assert!(page.contains("| [3.9.2-kraft](3.9.2-kraft/summary.md)"), "{page}");
        assert!(page.contains("- [3.9.2-zk](3.9.2-zk/run.json): schema 2, and this okp reads schema 1\n"), "{page}");
    }

    #[test]
    fn a_run_of_fewer_scenarios_than_the_suite_is_placed_apart() {
        let all: Vec<&str> = scenarios::default_suite(Flavor::Patched).map(|s| s.id).collect();
        assert_eq!(placement("4.3.1-kraft", Flavor::Patched, &all), Path::new("4.3.1-kraft"));
        assert_eq!(placement("3.9.2-zk", Flavor::Patched, &["HOSTS"]), Path::new("partial/3.9.2-zk-HOSTS"));
        assert_eq!(placement("4.3.1-kraft", Flavor::Patched, &["S4"]), Path::new("partial/4.3.1-kraft-S4"));
        assert_eq!(placement("4.3.1-kraft", Flavor::Patched, &["s7", "S4"]), Path::new("partial/4.3.1-kraft-S7-S4"));
        let core: Vec<&str> = all.iter().copied().filter(|id| *id != "MET").collect();
        assert_eq!(placement("3.9.2-zk", Flavor::Patched, &core), Path::new("partial/3.9.2-zk-without-MET"));
        let gates: Vec<&str> = scenarios::SCENARIOS.iter().filter(|s| s.gate).map(|s| s.id).collect();
        assert_eq!(placement("3.9.2-zk-upstream", Flavor::Upstream, &gates), Path::new("3.9.2-zk-upstream"));
        assert_eq!(
            placement("3.9.2-zk-upstream", Flavor::Upstream, &["INIT"]),
            Path::new("partial/3.9.2-zk-upstream-INIT")
        );
    }

    /// The reported bug: `okp verify --version 4.3.1 --mode kraft --scenarios S4` in the
    /// repository replaced evidence/4.3.1-kraft/ with a one-journal run. Now the full run's
    /// files and its VERIFY.md row stay as they were, and the partial run has its own page.
    #[test]
    fn a_pair_with_only_partial_runs_shows_its_widest_marked_partial() {
        let t = tempfile::tempdir().unwrap();
        let pairs = matrix_pairs();
        let full = RunRecord::read(&evidence().join("4.3.1-kraft")).unwrap();
        let v430: KafkaVersion = "4.3.0".parse().unwrap();
        for ids in [&["S4"][..], &["S4", "S7"][..]] {
            let staging = tempfile::tempdir().unwrap();
            let mut rec = full.clone();
            rec.release = v430;
            rec.scenarios.retain(|o| ids.contains(&o.id.as_str()));
            rec.write(staging.path()).unwrap();
            let at = placement("4.3.0-kraft", Flavor::Patched, ids);
            write_evidence(staging.path(), t.path(), &at, &pairs).unwrap();
        }
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        let row = page.lines().find(|l| l.starts_with("| [4.3.0-kraft]")).unwrap_or_else(|| panic!("{page}"));
        let suite = scenarios::default_suite(Flavor::Patched).count();
        assert!(
            row.starts_with(&format!(
                "| [4.3.0-kraft](partial/4.3.0-kraft-S7-S4/summary.md) | pass (partial; 2 of {suite} shown) |"
            )),
            "{row}"
        );
        assert!(row.contains("](partial/4.3.0-kraft-S7-S4/S4.txt)"), "{row}");
        assert!(!page.contains("| 4.3.0-kraft | not run"), "{page}");
        assert!(page.contains("1 of them only a partial run"), "{page}");
    }

    #[test]
    fn cells_a_run_did_not_run_come_from_the_pairs_partial_runs_marked() {
        let t = tempfile::tempdir().unwrap();
        let pairs = matrix_pairs();
        let full = RunRecord::read(&evidence().join("4.3.1-kraft")).unwrap();
        let mut base = full.clone();
        base.scenarios.retain(|o| o.id != "S7");
        base.write(&t.path().join("4.3.1-kraft")).unwrap();
        // Two partial runs of S7: the newer one fills the cell; a failing one is counted.
        for (dir, when, pass) in
            [("4.3.1-kraft-S7-old", "2026-01-01T00:00:00Z", true), ("4.3.1-kraft-S7", "2026-02-01T00:00:00Z", false)]
        {
            let mut rec = full.clone();
            rec.written_utc = when.into();
            rec.scenarios.retain(|o| o.id == "S7");
            rec.scenarios[0].pass = pass;
            rec.write(&t.path().join(PARTIAL_DIR).join(dir)).unwrap();
        }
        write_matrix(t.path(), Some(&pairs)).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        let row = page.lines().find(|l| l.starts_with("| [4.3.1-kraft]")).unwrap_or_else(|| panic!("{page}"));
        let s7 = full.scenarios.iter().find(|o| o.id == "S7").map(|o| o.seconds).unwrap_or_default();
        assert!(row.contains(&format!("[FAIL {s7:.0}s †](partial/4.3.1-kraft-S7/S7.txt)")), "{row}");
        let (ran, suite) = (base.scenarios.len(), scenarios::default_suite(Flavor::Patched).count());
        assert!(
            row.contains(&format!(
                "| pass (an older suite of {ran}; +1 from partial runs †; 1 of those FAILED; {} of {suite} shown) |",
                ran + 1
            )),
            "{row}"
        );
        assert!(page.contains("A cell marked † is from a partial run"), "{page}");
        // The partial page itself fills nothing.
        let partial = std::fs::read_to_string(t.path().join(PARTIAL_DIR).join("VERIFY.md")).unwrap_or_default();
        assert!(!partial.contains('†'), "{partial}");
    }

    #[test]
    fn a_partial_run_leaves_the_full_run_and_its_row_alone() {
        let t = runs_of(&evidence());
        let full = evidence().join("4.3.1-kraft");
        copy_dir(&full, &t.path().join("4.3.1-kraft")).unwrap();
        let pairs = matrix_pairs();
        write_matrix(t.path(), Some(&pairs)).unwrap();
        let page_before = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();

        for id in ["S4", "S7"] {
            let staging = tempfile::tempdir().unwrap();
            let mut rec = RunRecord::read(&full).unwrap();
            rec.scenarios.retain(|o| o.id == id);
            rec.write(staging.path()).unwrap();
            std::fs::write(staging.path().join(format!("{id}.txt")), "the partial run's journal\n").unwrap();
            let at = placement("4.3.1-kraft", Flavor::Patched, &[id]);
            let dest = write_evidence(staging.path(), t.path(), &at, &pairs).unwrap();
            assert_eq!(dest, t.path().join(format!("partial/4.3.1-kraft-{id}")));
            assert!(dest.join(format!("{id}.txt")).is_file());
        }

        // Every file of the full run is still there, byte for byte.
        let mut n = 0;
        for e in std::fs::read_dir(&full).unwrap().flatten().filter(|e| e.path().is_file()) {
            let kept = std::fs::read(t.path().join("4.3.1-kraft").join(e.file_name())).unwrap();
            assert_eq!(kept, std::fs::read(e.path()).unwrap(), "{:?} changed", e.file_name());
            n += 1;
        }
        assert!(n >= 13, "{n} files in the full run");
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert_eq!(
            page,
            format!("{page_before}\nPartial runs (fewer scenarios than the suite) are kept apart and never replace a run above: [partial/VERIFY.md](partial/VERIFY.md).\n")
        );
        let partial = std::fs::read_to_string(t.path().join("partial/VERIFY.md")).unwrap();
        for id in ["S4", "S7"] {
            assert!(
                partial.contains(&format!("| [4.3.1-kraft-{id}](4.3.1-kraft-{id}/summary.md) | pass |")),
                "{partial}"
            );
        }
        assert!(!partial.contains("not run"), "the partial page claims no matrix: {partial}");
    }

    #[test]
    fn the_matrix_page_lists_every_pair_and_claims_nothing_for_one_not_run() {
        let t = runs_of(&evidence());
        std::fs::remove_dir_all(t.path().join("3.9.2-zk")).unwrap();
        // Partial runs would stand in for their pairs (tested above): without them, a pair with
        // no run claims nothing.
        let _ = std::fs::remove_dir_all(t.path().join(PARTIAL_DIR));
        write_matrix(t.path(), Some(&matrix_pairs())).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| 3.9.2-zk | not run | | [proved](build/proof/3.9.2-zk.json) | – |"), "{page}");
        assert!(page.contains("| 3.4.0-zk | not run | |"), "{page}");
        assert!(page.contains("| 4.2.2-kraft | not run (no sources jar on Maven Central"), "{page}");
        assert!(page.contains("| [3.9.2-kraft](3.9.2-kraft/summary.md) | pass"), "{page}");
        // The negative control of 3.9.2 zk is no patched run: it does not make the pair count as run.
        assert!(page.contains("| [3.9.2-zk-upstream](3.9.2-zk-upstream/summary.md) |"), "{page}");
        let rows = page.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| run ")).count();
        let controls = std::fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with("-upstream"))
            .count();
        assert!(controls >= 2);
        assert_eq!(rows, matrix_pairs().len() + controls, "every pair once, plus the negative controls: {page}");
    }
}
