//! `okp verify`: build (or take) the patched jars of one release and mode,
//! start a real cluster on loopback from Maven Central artifacts, run the
//! scenario suite, and write the evidence: the journal of every command,
//! run.json with every number, a summary page per run and one matrix page
//! over every run in the evidence directory.
//!
//! Not here: processes and tools (cluster/), what is asserted (scenarios/).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::build::splice::{self, BuildRecord};
use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, Timers};
use crate::error::{Error, Outcome as Exit, Result};
use crate::model::{Layers, Mode, Release};
use crate::scenarios::{self, Flavor, Outcome, Scenario};
use crate::workspace::Workspace;

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

    let run_dir = tempfile::Builder::new()
        .prefix(&format!("okp-verify-{name}-"))
        .tempdir()
        .map_err(|e| Error::io("cannot create the run directory", e))?
        .keep();
    let staging = run_dir.join("evidence");
    let journal = Journal::new(&staging, &run_dir);
    eprintln!("okp: verify {name}: run directory {}", run_dir.display());

    // 3. The cluster and the shared topics.
    let t = Instant::now();
    let mut cluster = match Cluster::up(opts.mode, rt, opts.timers.clone(), &run_dir, opts.base_port, journal) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("okp: verify {name}: the cluster did not start; logs kept in {}", run_dir.display());
            return Err(e);
        }
    };
    let setup = (|| -> Result<()> {
        let outs = cluster.create_topics(scenarios::TOPICS)?;
        for ((topic, _, _), out) in scenarios::TOPICS.iter().zip(&outs) {
            if !out.ok() {
                return Err(Error::External(format!(
                    "creating topic {topic} failed (rc {}): {}",
                    out.rc,
                    out.stderr.lines().last().unwrap_or("")
                )));
            }
        }
        // Every partition has a leader before the first scenario.
        for (topic, _, _) in scenarios::TOPICS {
            let (s, _) = cluster.wait_state(topic, Duration::from_secs(30), |s| s.leader.is_some(), |_| {})?;
            if s.is_none() {
                return Err(Error::External(format!("topic {topic} has no leader 30 s after creation")));
            }
        }
        Ok(())
    })();
    seconds.insert("cluster_up".into(), scenarios::round(t.elapsed().as_secs_f64()));
    if let Err(e) = setup {
        cluster.down();
        eprintln!("okp: verify {name}: set-up failed; logs kept in {}", run_dir.display());
        return Err(e);
    }
    let rss_after_start = cluster.rss();

    // 4. The suite.
    let t = Instant::now();
    let outcomes = scenarios::run_suite(&mut cluster, opts.flavor, &opts.scenarios);
    seconds.insert("scenarios".into(), scenarios::round(t.elapsed().as_secs_f64()));
    let audit = cluster.grep_logs(&[
        "OBSERVER AUDIT",
        "Observer broker ids changed",
        "Cannot read observer ids",
        "observer ids",
    ]);
    let rss_end = cluster.rss();
    let t = Instant::now();
    cluster.journal.begin("teardown", "teardown");
    cluster.down();
    seconds.insert("teardown".into(), scenarios::round(t.elapsed().as_secs_f64()));
    seconds.insert("total".into(), scenarios::round(t_suite.elapsed().as_secs_f64()));

    // 5. Verdict and evidence.
    let verdict = Verdict::of(opts.flavor, &outcomes);
    let record = serde_json::json!({
        "okp_version": env!("CARGO_PKG_VERSION"),
        "written_utc": crate::report::utc_now(),
        "release": version.to_string(),
        "mode": opts.mode,
        "family": opts.release.family,
        "flavor": opts.flavor,
        "verdict": verdict.word(),
        "java": cluster.rt.java_version,
        "patch_set_hash": build.as_ref().map(|b| b.patch_set_hash.clone()),
        "layers": build.as_ref().map(|b| b.layers.clone()),
        "jars": cluster.rt.swapped.iter().map(|(up, p, sha)| serde_json::json!({
            "upstream": up.file_name().map(|n| n.to_string_lossy().into_owned()),
            "patched": p.file_name().map(|n| n.to_string_lossy().into_owned()),
            "sha256": sha,
        })).collect::<Vec<_>>(),
        "classpath_jars": cluster.rt.classpath.len(),
        "logging_added": cluster.rt.added,
        "tool_classes": cluster.tools.classes.iter().map(|(t, (c, jar))| (t.label().to_string(), format!("{c} ({jar})"))).collect::<BTreeMap<_, _>>(),
        "timers": opts.timers,
        "cluster_id": cluster.cluster_id,
        "rss_mib_after_start": rss_after_start,
        "rss_mib_at_end": rss_end,
        "seconds": seconds,
        "scenarios": outcomes,
    });
    let summary = summary_page(&record, &outcomes);
    let staging = cluster.journal.dir().to_path_buf();
    write(&staging.join("run.json"), &(serde_json::to_string_pretty(&record).unwrap_or_default() + "\n"))?;
    write(&staging.join("summary.md"), &summary)?;
    let run_str = run_dir.display().to_string();
    write(&staging.join("observer-audit.txt"), &(audit.join("\n").replace(&run_str, "$RUN") + "\n"))?;
    let dest = opts.evidence.join(&name);
    publish(&staging, &dest)?;
    write_matrix(&opts.evidence)?;
    drop(cluster);

    if verdict.ok() && !opts.keep {
        let _ = std::fs::remove_dir_all(&run_dir);
    } else {
        eprintln!("okp: verify {name}: run directory (node logs) kept at {}", run_dir.display());
    }
    if opts.json {
        crate::out::print(&(serde_json::to_string_pretty(&record).unwrap_or_default() + "\n"))?;
    } else {
        crate::out::print(&terminal_table(&name, &outcomes, &seconds, &verdict, &dest))?;
    }
    Ok(Exit::check(verdict.ok()))
}

/// The okp-build.json of an `okp build` output directory.
pub fn read_build_record(dir: &Path) -> Result<BuildRecord> {
    let p = dir.join("okp-build.json");
    let text = std::fs::read_to_string(&p)
        .map_err(|e| Error::io(format!("cannot read {} (is it an `okp build` output?)", p.display()), e))?;
    serde_json::from_str(&text).map_err(|e| Error::Usage(format!("{}: not an okp build record: {e}", p.display())))
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
        let rec = read_build_record(dir)?;
        if rec.release != release.version.to_string() || rec.mode != mode.as_str() {
            return Err(Error::Usage(format!(
                "{}: built for {} {}, not {} {}",
                dir.display(),
                rec.release,
                rec.mode,
                release.version,
                mode
            )));
        }
        return Ok(rec);
    }
    let hash = ws.patch_set()?.effective(&ws.model, release, release.version, mode, layers).hash;
    let dir = ws.maven.repo_local.join("okp-verify-jars").join(format!("{}-{}-{}", release.version, mode, &hash[..16]));
    if let Ok(rec) = read_build_record(&dir) {
        if rec.patch_set_hash == hash && rec.jars.iter().all(|j| j.path.is_file()) {
            eprintln!("okp: verify: patched jars from the cache {}", dir.display());
            return Ok(rec);
        }
    }
    eprintln!("okp: verify: building the patched jars of {} {} (splice)", release.version, mode);
    match splice::splice(ws, release, mode, layers, &dir)? {
        splice::SpliceOutcome::Built(rec) => Ok(rec),
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
    fn ok(&self) -> bool {
        match self.flavor {
            Flavor::Patched => self.failed.is_empty(),
            Flavor::Upstream => self.gates_not_failed.is_empty(),
        }
    }

    fn word(&self) -> &'static str {
        match (self.flavor, self.ok()) {
            (Flavor::Patched, true) => "pass",
            (Flavor::Patched, false) => "fail",
            (Flavor::Upstream, true) => "negative control: gates failed as expected",
            (Flavor::Upstream, false) => "negative control FAILED: a gate passed on upstream jars",
        }
    }
}

fn terminal_table(
    name: &str,
    outcomes: &[Outcome],
    seconds: &BTreeMap<String, f64>,
    verdict: &Verdict,
    dest: &Path,
) -> String {
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
        verdict.word(),
        dest.display()
    ));
    s
}

fn summary_page(record: &serde_json::Value, outcomes: &[Outcome]) -> String {
    let g = |k: &str| {
        record.get(k).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default()
    };
    let mut s = format!(
        "# okp verify {} {} ({})\n\nWritten by okp {} at {} UTC. Verdict: **{}**. Java: {}.\n\n",
        g("release"),
        g("mode"),
        g("flavor"),
        g("okp_version"),
        g("written_utc"),
        g("verdict"),
        g("java")
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

/// Replaces `dest` with `staging` as one rename (the old run goes only once the new one is complete).
fn publish(staging: &Path, dest: &Path) -> Result<()> {
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
        }
    }
    Ok(())
}

fn write(p: &Path, text: &str) -> Result<()> {
    std::fs::write(p, text).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))
}

/// evidence/VERIFY.md: release × scenario over every run.json in the evidence
/// directory, each cell linking to that scenario's journal.
pub fn write_matrix(evidence: &Path) -> Result<()> {
    let mut runs: Vec<(String, serde_json::Value)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(evidence) {
        for e in rd.flatten() {
            let p = e.path().join("run.json");
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if let Ok(text) = std::fs::read_to_string(&p) {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                    runs.push((name, v));
                }
            }
        }
    }
    runs.sort_by_key(|(n, v)| {
        let ver =
            v.get("release").and_then(|r| r.as_str()).and_then(|r| r.parse::<crate::version::KafkaVersion>().ok());
        (ver, n.clone())
    });
    let ids: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.id).collect();
    let mut s = String::from("# okp verify: release × scenario\n\nWritten by `okp verify` after every run, from the `run.json` files in this directory. ");
    let gates: Vec<&str> = scenarios::SCENARIOS.iter().filter(|s| s.gate).map(|s| s.id).collect();
    s.push_str(&format!("Each cell links to the scenario's journal (every command and its output). `-upstream` rows are negative controls on unpatched jars: their gate scenarios ({}) are expected to FAIL.\n\n", gates.join(", ")));
    s.push_str(&format!(
        "| run | verdict | seconds | {} |\n|---|---|---|{}\n",
        ids.join(" | "),
        "---|".repeat(ids.len())
    ));
    for (name, v) in &runs {
        let verdict = v.get("verdict").and_then(|x| x.as_str()).unwrap_or("?");
        let total = v.pointer("/seconds/total").and_then(|x| x.as_f64()).unwrap_or(0.0);
        let mut cells = Vec::new();
        for id in &ids {
            let o = v
                .get("scenarios")
                .and_then(|a| a.as_array())
                .and_then(|a| a.iter().find(|o| o.get("id").and_then(|x| x.as_str()) == Some(id)));
            cells.push(match o {
                Some(o) => {
                    let pass = o.get("pass").and_then(|x| x.as_bool()).unwrap_or(false);
                    let file = o.get("evidence").and_then(|x| x.as_str()).unwrap_or("");
                    let secs = o.get("seconds").and_then(|x| x.as_f64()).unwrap_or(0.0);
                    format!("[{} {:.0}s]({name}/{file})", if pass { "pass" } else { "FAIL" }, secs)
                }
                None => "–".into(),
            });
        }
        s.push_str(&format!("| [{name}]({name}/summary.md) | {verdict} | {total:.0} | {} |\n", cells.join(" | ")));
    }
    let p = evidence.join("VERIFY.md");
    std::fs::create_dir_all(evidence).map_err(|e| Error::io(format!("cannot create {}", evidence.display()), e))?;
    crate::fsx::write_atomic(&p, s.as_bytes())
}
