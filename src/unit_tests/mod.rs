//! `okp unit-tests`: Kafka's own unit tests of the hooked classes, from the
//! release's `-test.jar`s on Maven Central, run three times with the JUnit
//! console launcher: on the release's jars, on the patched jars with no
//! observer, and on the patched jars with observers configured
//! (`KAFKA_OBSERVER_BROKER_IDS`, the observer file absent). One JVM at a time,
//! one per class, in its own process group, killed at the class's time limit.
//! The evidence goes to `<evidence>/unit/<release>-<mode>/`: unit.json,
//! summary.md, classpath.txt (each jar with its sha256), the JUnit XML of every
//! class and configuration, and unexplained.yaml when a change is not explained.
//!
//! Not here: which classes and libraries (`data`, unit-tests.yaml), the
//! verdicts (`judge`), the patched jars (`verify::jars`).

pub mod data;
pub mod judge;
pub mod junit;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::node;
use crate::error::{Error, Outcome, Result};
use crate::jvm::jdk::java_bin;
use crate::model::{Coordinate, Layers, Mode, Release};
use crate::verify::unit_record::{
    self as record, ClassRow, Config, Counts, Flaky, TestOutcome, UnitRecord, UnitVerdict,
};
use crate::workspace::Workspace;
use data::{Family, TestClass, UnitData};
use judge::Outcomes;

/// The launcher's main class (junit-platform-console-standalone).
const LAUNCHER_MAIN: &str = "org.junit.platform.console.ConsoleLauncher";

/// How often a test that fails where it must not (a regression, or an unexplained change) is run
/// again alone, in the configuration where it failed, before its failure stands.
const RETRIES: u32 = 2;

/// At most this many failures are run again in one run.
const MAX_RETRIED: usize = 20;

pub struct Options {
    pub release: Release,
    pub mode: Mode,
    pub data: UnitData,
    /// Only these classes (simple or full names); empty: every class of the family and mode.
    pub classes: Vec<String>,
    /// Patched jars from `okp build` instead of the patched-jar cache (`verify::jars`).
    pub jars: Option<PathBuf>,
    pub class_timeout: Duration,
    /// The evidence root; the run goes to `<evidence>/unit/<release>-<mode>/`.
    pub evidence: PathBuf,
    /// Judge the JUnit XML already in the evidence directory again (after editing the
    /// expected changes) instead of running the tests.
    pub rejudge: bool,
    pub json: bool,
}

/// The run's directory under the evidence root.
pub fn run_dir(evidence: &Path, release: &str, mode: Mode) -> PathBuf {
    evidence.join("unit").join(format!("{release}-{mode}"))
}

/// The classes of `family` in `mode`, narrowed to `only` (refusing a name the family does not run).
pub fn select<'a>(family: &'a Family, mode: Mode, only: &[String]) -> Result<Vec<&'a TestClass>> {
    let all = family.classes_for(mode);
    if only.is_empty() {
        return Ok(all);
    }
    let mut out = Vec::new();
    for name in only {
        let c = all.iter().find(|c| c.class == *name || c.simple_name() == name).ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|c| c.simple_name()).collect();
            Error::Usage(format!(
                "`{name}` is not a test class family {} runs in {mode} mode; it runs: {}",
                family.name,
                known.join(", ")
            ))
        })?;
        out.push(*c);
    }
    Ok(out)
}

pub fn run(ws: &Workspace, opts: Options) -> Result<Outcome> {
    let t_total = Instant::now();
    let v = opts.release.version;
    let family = opts.data.family(v)?.clone();
    let classes = select(&family, opts.mode, &opts.classes)?;
    let dest = run_dir(&opts.evidence, &v.to_string(), opts.mode);
    if opts.rejudge {
        return rejudge(&family, &dest, opts.json, &ws.model.matrix.pairs(crate::model::PairFilter::default()));
    }
    node::install_interrupt_handler();
    let kafka = |a: &str| Coordinate { group: "org.apache.kafka".into(), artifact: a.into(), version: v.to_string() };

    // 1. The release's test jars: a release that publishes none is refused before anything runs.
    let test_jars: Vec<(Coordinate, Option<&str>)> =
        family.test_jars.iter().map(|a| (kafka(a), Some("test"))).collect();
    ws.maven.ensure(&test_jars).map_err(|e| match e {
        Error::NotPublished(m) => Error::NotPublished(format!("{v} has no test jar for its unit tests: {m}")),
        other => other,
    })?;
    let launcher = ws.maven.ensure(&[(opts.data.launcher.clone(), None)])?.remove(0);

    // 2. The classpath: the runtime of the family's artifacts, the test libraries, the test jars.
    let mut deps: Vec<(Coordinate, Option<&str>)> = family.runtime.iter().map(|a| (kafka(a), None)).collect();
    deps.extend(family.libraries.iter().map(|c| (c.clone(), None)));
    deps.extend(test_jars.iter().cloned());
    let upstream_cp = ws.maven.classpath_with(&deps, &format!("okp-unit-{v}-{}", family.name))?;

    // 3. The patched jars (core layer: the contract) in place of their upstream twins.
    if opts.jars.is_none() {
        opts.release
            .require_sources_jar("okp unit-tests builds its patched jars from those sources (or pass --jars)")?;
    }
    let build = crate::verify::patched_jars(ws, &opts.release, opts.mode, &Layers::with(&[]), opts.jars.as_deref())?;
    let mut patched_cp = upstream_cp.clone();
    build.swap_into(&mut patched_cp, "the unit-test classpath")?;

    // 4. Which classes this release has.
    let present = classes_present(&upstream_cp, &classes)?;
    let java = java_bin("java");
    let java_version = Command::new(&java)
        .arg("-version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or_default().to_string())
        .map_err(|e| {
            Error::External(format!("cannot run {} ({e}); okp unit-tests needs a JDK (set JAVA_HOME)", java.display()))
        })?;

    let work = tempfile::Builder::new()
        .prefix(&format!("okp-unit-{v}-{}-", opts.mode))
        .tempdir()
        .map_err(|e| Error::io("cannot create the run directory", e))?;
    let staging = work.path().join("evidence");
    // Never created: "no observer file" in every configuration, whatever /opt/kafka holds.
    let absent_file = work.path().join("no-observer-file").join("observer.ids");
    let observers = family.observers.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let mut seconds = BTreeMap::new();
    let mut outcomes: BTreeMap<Config, Outcomes> = BTreeMap::new();
    let mut counts: BTreeMap<String, BTreeMap<Config, Counts>> = BTreeMap::new();
    for config in Config::ALL {
        let t = Instant::now();
        let cp = if config == Config::Upstream { &upstream_cp } else { &patched_cp };
        let mut all: Outcomes = BTreeMap::new();
        for class in classes.iter().filter(|c| present.contains(&c.class)) {
            let reports = staging.join("junit").join(config.word()).join(class.simple_name());
            let env_ids = (config == Config::Observers).then_some(observers.as_str());
            let jvm =
                Jvm { java: &java, launcher: &launcher, classpath: cp, family: &family, observer_file: &absent_file };
            crate::out::note(format!("unit-tests {v} {}: {} {}", opts.mode, config.word(), class.class));
            let ran = jvm.run_class(&class.class, &reports, env_ids, opts.class_timeout, &work.path().join("logs"))?;
            let mut c = Counts {
                seconds: crate::scenarios::round(ran.seconds),
                timed_out: ran.timed_out,
                ..Default::default()
            };
            let mut cases = junit::read_dir(&reports).unwrap_or_default();
            if ran.timed_out {
                // The launcher writes its report at the end: a killed JVM leaves none. Every test the
                // upstream run of this class reported counts as failed by timeout.
                let msg = format!("the class's JVM was killed at its {} s limit", opts.class_timeout.as_secs());
                let prefix = format!("{}.", class.simple_name());
                let known: Vec<String> = outcomes
                    .get(&Config::Upstream)
                    .map(|o| o.keys().filter(|k| k.starts_with(&prefix)).cloned().collect())
                    .unwrap_or_default();
                write(&reports.join(junit::KILLED_REPORT), &junit::killed_report(&class.class, &known, &msg))?;
                cases = junit::read_dir(&reports)?;
            } else if cases.is_empty() {
                return Err(Error::Check(format!(
                    "{} ({}) reported no test case (exit {}); the launcher's output: {}",
                    class.class,
                    config.word(),
                    ran.rc,
                    ran.log.display()
                )));
            }
            for case in cases {
                match case.outcome {
                    TestOutcome::Pass => c.passed += 1,
                    TestOutcome::Skip => c.skipped += 1,
                    TestOutcome::Fail { .. } => c.failed += 1,
                }
                all.insert(case.test, case.outcome);
            }
            strip_properties(&reports)?;
            counts.entry(class.class.clone()).or_default().insert(config, c);
        }
        seconds.insert(config.word().to_string(), crate::scenarios::round(t.elapsed().as_secs_f64()));
        outcomes.insert(config, all);
    }
    // 5. A failure where none may be is run again alone (a flaky upstream test must not read as
    // a regression); a pass on a re-run replaces it, and the test is listed as flaky.
    let t = Instant::now();
    let mut wanted = judge::to_retry(&family, &outcomes);
    // Regression candidates first; past MAX_RETRIED a failure stands as it is (a family with many
    // unexplained changes, such as a new release's first run, would otherwise re-run each twice).
    wanted.sort_by_key(|(c, _)| *c != Config::Patched);
    if wanted.len() > MAX_RETRIED {
        crate::out::note(format!(
            "unit-tests {v} {}: {} failures to run again, the first {MAX_RETRIED} are",
            opts.mode,
            wanted.len()
        ));
        wanted.truncate(MAX_RETRIED);
    }
    for (config, test) in wanted {
        let Some(class) = classes.iter().find(|c| test.starts_with(&format!("{}.", c.simple_name()))) else {
            continue;
        };
        let method = test[class.simple_name().len() + 1..].split('(').next().unwrap_or_default().to_string();
        let cp = if config == Config::Upstream { &upstream_cp } else { &patched_cp };
        let env_ids = (config == Config::Observers).then_some(observers.as_str());
        let jvm = Jvm { java: &java, launcher: &launcher, classpath: cp, family: &family, observer_file: &absent_file };
        for n in 1..=RETRIES {
            let reports =
                staging.join("junit").join(config.word()).join(class.simple_name()).join(retry_dir(n, &method));
            crate::out::note(format!(
                "unit-tests {v} {}: {} {test} again ({n} of {RETRIES})",
                opts.mode,
                config.word()
            ));
            let selector = format!("--select-method={}#{method}", class.class);
            jvm.run(&selector, &reports, env_ids, opts.class_timeout, &work.path().join("logs"))?;
            strip_properties(&reports)?;
            let passed =
                junit::read_dir(&reports).unwrap_or_default().iter().any(|c| c.test == test && c.outcome.passed());
            if passed {
                break;
            }
        }
    }
    let flaky = apply_retries(&staging.join("junit"), &mut outcomes)?;
    seconds.insert("retries".into(), crate::scenarios::round(t.elapsed().as_secs_f64()));
    let empty = BTreeMap::new();
    let get = |c: Config| outcomes.get(&c).unwrap_or(&empty);
    let j = judge::judge(&family, get(Config::Upstream), get(Config::Patched), get(Config::Observers));
    seconds.insert("total".into(), crate::scenarios::round(t_total.elapsed().as_secs_f64()));
    let record = UnitRecord {
        schema: record::SCHEMA.current,
        okp_version: env!("CARGO_PKG_VERSION").to_string(),
        written_utc: crate::report::utc_now(),
        release: v,
        mode: opts.mode,
        family: family.name.clone(),
        java: java_version,
        launcher: opts.data.launcher.to_string(),
        observers: family.observers.clone(),
        patch_set_hash: build.patch_set_hash.clone(),
        class_timeout_s: opts.class_timeout.as_secs(),
        verdict: if j.ok() { UnitVerdict::Pass } else { UnitVerdict::Fail },
        classes: classes
            .iter()
            .map(|c| ClassRow { class: c.class.clone(), runs: counts.get(&c.class).cloned() })
            .collect(),
        regressions: j.regressions,
        changes: j.changes,
        not_comparable: j.not_comparable,
        unused_expectations: j.unused_expectations,
        flaky,
        seconds,
    };
    write(
        &staging.join("classpath.txt"),
        &classpath_listing(&ws.maven.repo_local, &launcher, &upstream_cp, &patched_cp)?,
    )?;
    finish(&record, &staging, &dest, opts.json, &ws.model.matrix.pairs(crate::model::PairFilter::default()))?;
    Ok(Outcome::check(record.verdict == UnitVerdict::Pass))
}

/// Writes the record, summary and unexplained list into `staging`, publishes it as `dest`,
/// regenerates VERIFY.md, and prints the table (or the record).
fn finish(record: &UnitRecord, staging: &Path, dest: &Path, json: bool, pairs: &[crate::verify::Pair]) -> Result<()> {
    std::fs::create_dir_all(staging).map_err(|e| Error::io(format!("cannot create {}", staging.display()), e))?;
    record.write(staging)?;
    write(&staging.join("summary.md"), &summary_page(record))?;
    let unexplained = unexplained_yaml(record);
    let path = staging.join("unexplained.yaml");
    if unexplained.is_empty() {
        let _ = std::fs::remove_file(&path);
    } else {
        write(&path, &unexplained)?;
    }
    if staging != dest {
        crate::verify::publish(staging, dest)?;
    }
    let evidence = dest.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    crate::verify::write_matrix(evidence, Some(pairs))?;
    if json {
        crate::out::print(&crate::schema::to_json(record))?;
    } else {
        crate::out::print(&terminal_table(record, dest))?;
    }
    Ok(())
}

/// `--rejudge`: the XML already in `dest`, judged against the current expected changes.
fn rejudge(family: &Family, dest: &Path, json: bool, pairs: &[crate::verify::Pair]) -> Result<Outcome> {
    let mut record = UnitRecord::read(dest)?;
    if record.family != family.name {
        return Err(Error::Usage(format!(
            "{}: was run with family {}, and unit-tests.yaml now gives {}: run it again instead",
            dest.display(),
            record.family,
            family.name
        )));
    }
    let mut outcomes: BTreeMap<Config, Outcomes> = BTreeMap::new();
    for config in Config::ALL {
        let dir = dest.join("junit").join(config.word());
        let mut all = Outcomes::new();
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                for case in junit::read_dir(&e.path())? {
                    all.insert(case.test, case.outcome);
                }
            }
        }
        outcomes.insert(config, all);
    }
    record.flaky = apply_retries(&dest.join("junit"), &mut outcomes)?;
    let empty = BTreeMap::new();
    let get = |c: Config| outcomes.get(&c).unwrap_or(&empty);
    let j = judge::judge(family, get(Config::Upstream), get(Config::Patched), get(Config::Observers));
    record.verdict = if j.ok() { UnitVerdict::Pass } else { UnitVerdict::Fail };
    record.regressions = j.regressions;
    record.changes = j.changes;
    record.not_comparable = j.not_comparable;
    record.unused_expectations = j.unused_expectations;
    finish(&record, dest, dest, json, pairs)?;
    Ok(Outcome::check(record.verdict == UnitVerdict::Pass))
}

/// Where the `n`th re-run of `method` writes its reports, beside the class's own.
/// The name is a report's (a display name may hold any character): only `[A-Za-z0-9_$]` reach
/// the path, the rest become `_`.
fn retry_dir(n: u32, method: &str) -> String {
    let safe: String =
        method.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect();
    format!("retry-{n}-{safe}")
}

/// Reads every re-run's reports (`junit/<config>/<Class>/retry-<n>-<method>/`) and replaces a
/// failed outcome by the pass a re-run reported, listing each such test as flaky. The run and
/// `--rejudge` both go through here, so a rejudged record says what the run said.
fn apply_retries(junit_root: &Path, outcomes: &mut BTreeMap<Config, Outcomes>) -> Result<Vec<Flaky>> {
    let mut flaky = Vec::new();
    for config in Config::ALL {
        let Ok(classes) = std::fs::read_dir(junit_root.join(config.word())) else { continue };
        let mut retries: Vec<(u32, PathBuf)> = Vec::new();
        for class in classes.flatten() {
            let Ok(sub) = std::fs::read_dir(class.path()) else { continue };
            for e in sub.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let n = name.strip_prefix("retry-").and_then(|r| r.split('-').next()).and_then(|n| n.parse().ok());
                if let (Some(n), true) = (n, e.path().is_dir()) {
                    retries.push((n, e.path()));
                }
            }
        }
        retries.sort();
        let all = outcomes.entry(config).or_default();
        for (n, dir) in retries {
            for case in junit::read_dir(&dir)? {
                let first = all.get(&case.test).cloned();
                if case.outcome.passed() && first.as_ref().is_some_and(|o| !o.passed()) {
                    flaky.push(Flaky {
                        test: case.test.clone(),
                        config,
                        first: first.unwrap_or(TestOutcome::Skip),
                        retry: n,
                    });
                    all.insert(case.test, TestOutcome::Pass);
                }
            }
        }
    }
    Ok(flaky)
}

/// Which of `classes` the classpath holds (a release may not have them all).
fn classes_present(cp: &[PathBuf], classes: &[&TestClass]) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for jar in cp.iter().filter(|p| p.to_string_lossy().ends_with("-test.jar")) {
        let bytes = crate::fsx::read::input(jar, crate::fsx::read::MAX_JAR, "test jar")?;
        let z = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| Error::Source(format!("{}: not a jar ({e})", jar.display())))?;
        for c in classes {
            let entry = format!("{}.class", c.class.replace('.', "/"));
            if z.index_for_name(&entry).is_some() && !found.contains(&c.class) {
                found.push(c.class.clone());
            }
        }
    }
    Ok(found)
}

struct Jvm<'a> {
    java: &'a Path,
    launcher: &'a Path,
    classpath: &'a [PathBuf],
    family: &'a Family,
    observer_file: &'a Path,
}

struct Ran {
    rc: i32,
    timed_out: bool,
    seconds: f64,
    log: PathBuf,
}

impl Jvm<'_> {
    /// One class in one JVM (under `nice`, its own process group), killed with its group at `limit`.
    fn run_class(
        &self,
        class: &str,
        reports: &Path,
        observers: Option<&str>,
        limit: Duration,
        logs: &Path,
    ) -> Result<Ran> {
        self.run(&format!("--select-class={class}"), reports, observers, limit, logs)
    }

    /// The launcher with one selector (`--select-class=…`, `--select-method=…#…`), as `run_class`.
    fn run(
        &self,
        selector: &str,
        reports: &Path,
        observers: Option<&str>,
        limit: Duration,
        logs: &Path,
    ) -> Result<Ran> {
        std::fs::create_dir_all(reports).map_err(|e| Error::io(format!("cannot create {}", reports.display()), e))?;
        std::fs::create_dir_all(logs).map_err(|e| Error::io(format!("cannot create {}", logs.display()), e))?;
        let mut cp = vec![self.launcher.to_path_buf()];
        cp.extend(self.classpath.iter().cloned());
        let cp = std::env::join_paths(&cp).map_err(|e| Error::Source(format!("classpath: {e}")))?;
        let log = logs.join(format!(
            "{}-{}.log",
            reports.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            selector.split_once('=').map(|(_, s)| s).unwrap_or(selector).replace(['#', '/'], "-")
        ));
        let out = std::fs::File::create(&log).map_err(|e| Error::io(format!("cannot create {}", log.display()), e))?;
        let err = out.try_clone().map_err(|e| Error::io(format!("cannot open {}", log.display()), e))?;
        let mut cmd = Command::new("nice");
        cmd.arg(self.java).arg("-XX:+UseSerialGC").arg("-Xmx1g");
        cmd.args(&self.family.jvm_args);
        cmd.arg("-cp").arg(&cp).arg(LAUNCHER_MAIN).arg("execute").arg("--disable-banner").arg("--details=none");
        cmd.arg(format!("--reports-dir={}", reports.display())).arg(selector);
        cmd.env_remove("KAFKA_OBSERVER_BROKER_IDS").env_remove("JAVA_TOOL_OPTIONS");
        cmd.env("KAFKA_OBSERVER_IDS_FILE", self.observer_file);
        if let Some(ids) = observers {
            cmd.env("KAFKA_OBSERVER_BROKER_IDS", ids);
        }
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let t0 = Instant::now();
        let mut child =
            cmd.spawn().map_err(|e| Error::External(format!("cannot run nice {} ({e})", self.java.display())))?;
        let pid = child.id() as i32;
        node::register(pid);
        let (rc, timed_out) = loop {
            match child.try_wait() {
                Ok(Some(s)) => break (s.code().unwrap_or(-1), false),
                Ok(None) if t0.elapsed() > limit => {
                    // SAFETY: signals the JVM's own process group, which it leads.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                    }
                    let _ = child.wait();
                    break (-9, true);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(200)),
                Err(e) => return Err(Error::io("cannot wait for the test JVM", e)),
            }
        };
        node::unregister(pid);
        node::check_interrupt()?;
        Ok(Ran { rc, timed_out, seconds: t0.elapsed().as_secs_f64(), log })
    }
}

/// The reports keep their test cases; the `<properties>` block (the JVM's system properties,
/// the machine's paths) goes, as classpath.txt says what ran.
fn strip_properties(dir: &Path) -> Result<()> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Ok(()) };
    for e in rd.flatten() {
        let p = e.path();
        let text = crate::fsx::read::text(&p, crate::fsx::read::MAX_TEXT, "test report")?;
        let cut = match (text.find("<properties>"), text.find("</properties>")) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &text[..a], text[b + "</properties>".len()..].trim_start()),
            _ => text,
        };
        if cut.contains("<testcase") {
            write(&p, &cut)?;
        } else {
            // The launcher writes one report per engine; an engine that ran nothing says nothing.
            let _ = std::fs::remove_file(&p);
        }
    }
    Ok(())
}

fn classpath_listing(repo: &Path, launcher: &Path, upstream: &[PathBuf], patched: &[PathBuf]) -> Result<String> {
    let mut s = String::from("# The unit-test classpath, in order. upstream/patched: which configurations use the jar;\n# paths under the Maven local repository are relative to it.\n");
    let show =
        |p: &Path| p.strip_prefix(repo).map(|r| r.display().to_string()).unwrap_or_else(|_| p.display().to_string());
    let mut rows: Vec<(&Path, &str)> = vec![(launcher, "both")];
    for p in upstream {
        rows.push((p, if patched.contains(p) { "both" } else { "upstream" }));
    }
    for p in patched.iter().filter(|p| !upstream.contains(p)) {
        rows.push((p, "patched"));
    }
    for (p, which) in rows {
        let bytes = crate::fsx::read::input(p, crate::fsx::read::MAX_JAR, "classpath file")?;
        s.push_str(&format!("{}  {:<8}  {}\n", crate::hash::sha256(&bytes), which, show(p)));
    }
    Ok(s)
}

fn write(p: &Path, text: &str) -> Result<()> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(format!("cannot create {}", d.display()), e))?;
    }
    crate::fsx::write_atomic(p, text.as_bytes())
}

fn cell(c: Option<&Counts>) -> String {
    match c {
        None => "–".into(),
        Some(c) => format!("{}/{}/{}{}", c.passed, c.failed, c.skipped, if c.timed_out { " (killed)" } else { "" }),
    }
}

/// The per-class table: pass/fail/skip per configuration.
fn class_table(record: &UnitRecord) -> String {
    let mut s = String::from("| class | upstream | patched | observers | seconds |\n|---|---|---|---|---|\n");
    for row in &record.classes {
        match &row.runs {
            None => s.push_str(&format!("| {} | not in this release | | | |\n", row.class)),
            Some(r) => {
                let secs: f64 = r.values().map(|c| c.seconds).sum();
                s.push_str(&format!(
                    "| {} | {} | {} | {} | {secs:.0} |\n",
                    row.class,
                    cell(r.get(&Config::Upstream)),
                    cell(r.get(&Config::Patched)),
                    cell(r.get(&Config::Observers))
                ));
            }
        }
    }
    s
}

fn summary_page(r: &UnitRecord) -> String {
    let total = r.seconds.get("total").copied().unwrap_or(0.0);
    let mut s = format!(
        "# okp unit-tests {} {}\n\nWritten by okp {} at {} UTC. Verdict: **{}**. Java: {}. Family {} (unit-tests.yaml), launcher {}, patch set {}.\n\n",
        r.release, r.mode, r.okp_version, r.written_utc, r.verdict.word(), r.java, r.family, r.launcher, &r.patch_set_hash[..r.patch_set_hash.len().min(16)]
    );
    s.push_str(&format!(
        "Kafka's own unit tests of the hooked classes, three times: `upstream` (the release's jars), `patched` (no observer file, no `KAFKA_OBSERVER_BROKER_IDS`), `observers` (`KAFKA_OBSERVER_BROKER_IDS={}`). Cells: passed/failed/skipped. Each class ran in its own JVM, limit {} s. Wall time {total:.0} s.\n\n",
        r.observers.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(","),
        r.class_timeout_s
    ));
    s.push_str(&class_table(r));
    s.push_str(&format!(
        "\n## Regressions (pass upstream, not patched without observers): {}\n\n",
        r.regressions.len()
    ));
    for g in &r.regressions {
        s.push_str(&format!(
            "- `{}`: upstream {}, patched {}{}\n",
            g.test,
            g.upstream.word(),
            g.patched.word(),
            message(&g.patched)
        ));
    }
    s.push_str(&format!("\n## Changes with observers configured: {}\n\n", r.changes.len()));
    if !r.changes.is_empty() {
        s.push_str("| test | patched | observers | message | explained by | review |\n|---|---|---|---|---|---|\n");
        for c in &r.changes {
            s.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                c.test,
                c.patched.word(),
                c.observers.word(),
                message(&c.observers).trim_start_matches(": ").replace('|', "\\|"),
                match (&c.rule, &c.why) {
                    (Some(rule), Some(why)) => format!("{rule}: {}", why.replace('|', "\\|")),
                    _ => "**unexplained**".into(),
                },
                if c.review { "yes" } else { "" }
            ));
        }
    }
    if !r.not_comparable.is_empty() {
        s.push_str(&format!(
            "\nNot comparable (the test does not pass on upstream jars, so its outcome says nothing about the patch set): {}\n",
            r.not_comparable
                .iter()
                .map(|c| format!("`{}` ({} -> {})", c.test, c.patched.word(), c.observers.word()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !r.flaky.is_empty() {
        s.push_str(&format!(
            "\n## Flaky: failed, then passed when run again alone in the same configuration: {}\n\n| test | configuration | first outcome | passed on re-run |\n|---|---|---|---|\n",
            r.flaky.len()
        ));
        for f in &r.flaky {
            s.push_str(&format!(
                "| `{}` | {} | {}{} | {} |\n",
                f.test,
                f.config.word(),
                f.first.word(),
                message(&f.first).replace('|', "\\|"),
                f.retry
            ));
        }
    }
    if !r.unused_expectations.is_empty() {
        s.push_str(&format!(
            "\nExpected changes that did not happen (stale after a patch-set change?): {}\n",
            r.unused_expectations.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    s.push_str("\nFiles: `unit.json` (every outcome that differs), `classpath.txt` (each jar and its sha256), `junit/<configuration>/<class>/` (the launcher's XML reports).\n");
    s
}

fn message(o: &TestOutcome) -> String {
    match o {
        TestOutcome::Fail { exception, message, .. } => {
            let simple = exception.rsplit('.').next().unwrap_or(exception);
            format!(": {simple}: {}", message.replace('\n', " "))
        }
        _ => String::new(),
    }
}

/// The unexplained changes as expected-list entries to complete (`rule`, `why`) and paste into
/// the family's `expected:` in unit-tests.yaml.
fn unexplained_yaml(r: &UnitRecord) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut s = String::new();
    for c in r.changes.iter().filter(|c| c.rule.is_none()) {
        let base = c.test.split('(').next().unwrap_or(&c.test).to_string();
        if seen.contains(&base) {
            continue;
        }
        seen.push(base.clone());
        s.push_str(&format!(
            "      - test: {base}\n        rule: TODO  # one of: {}\n        why: \"TODO ({} -> {}{})\"\n",
            data::RULES.join(", "),
            c.patched.word(),
            c.observers.word(),
            message(&c.observers).replace('"', "'")
        ));
    }
    if s.is_empty() {
        return s;
    }
    format!(
        "# Changes with observers configured that unit-tests.yaml does not explain ({} {}, family {}).\n# Decide the contract rule of each, then paste into the family's `expected:` and run\n# `okp unit-tests --version {} --mode {} --rejudge`.\n{s}",
        r.release, r.mode, r.family, r.release, r.mode
    )
}

fn terminal_table(r: &UnitRecord, dest: &Path) -> String {
    let mut s = format!("okp unit-tests {} {}\n\n", r.release, r.mode);
    s.push_str(&format!(
        "{:<58} {:>14} {:>14} {:>14}\n",
        "class (passed/failed/skipped)", "upstream", "patched", "observers"
    ));
    for row in &r.classes {
        match &row.runs {
            None => s.push_str(&format!("{:<58} not in this release\n", row.class)),
            Some(x) => s.push_str(&format!(
                "{:<58} {:>14} {:>14} {:>14}\n",
                row.class,
                cell(x.get(&Config::Upstream)),
                cell(x.get(&Config::Patched)),
                cell(x.get(&Config::Observers))
            )),
        }
    }
    let unexplained = r.changes.iter().filter(|c| c.rule.is_none()).count();
    s.push_str(&format!(
        "\nregressions: {}\nchanges with observers: {} ({} explained, {} unexplained, {} to review)\nwall time: {:.0} s\nverdict: {}\nevidence: {}\n",
        r.regressions.len(),
        r.changes.len(),
        r.changes.len() - unexplained,
        unexplained,
        r.changes.iter().filter(|c| c.review).count(),
        r.seconds.get("total").copied().unwrap_or(0.0),
        r.verdict.word(),
        dest.display()
    ));
    for g in &r.regressions {
        s.push_str(&format!("  REGRESSION {}: {}{}\n", g.test, g.patched.word(), message(&g.patched)));
    }
    for f in &r.flaky {
        s.push_str(&format!(
            "  FLAKY {} ({}): {}{}; passed on re-run {}\n",
            f.test,
            f.config.word(),
            f.first.word(),
            message(&f.first),
            f.retry
        ));
    }
    for c in r.changes.iter().filter(|c| c.rule.is_none()) {
        s.push_str(&format!(
            "  UNEXPLAINED {}: {} -> {}{}\n",
            c.test,
            c.patched.word(),
            c.observers.word(),
            message(&c.observers)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(cases: &[(&str, bool)]) -> String {
        let mut s = String::from("<?xml version=\"1.0\"?>\n<testsuite name=\"JUnit Jupiter\">\n");
        for (name, pass) in cases {
            if *pass {
                s.push_str(&format!("<testcase name=\"{name}\" classname=\"k.QuorumControllerTest\"/>\n"));
            } else {
                s.push_str(&format!("<testcase name=\"{name}\" classname=\"k.QuorumControllerTest\"><error message=\"resign\" type=\"x.FaultHandlerException\"/></testcase>\n"));
            }
        }
        s + "</testsuite>\n"
    }

    #[test]
    fn a_pass_on_a_re_run_replaces_the_failure_and_is_listed_as_flaky() {
        let t = tempfile::tempdir().unwrap();
        let class = t.path().join("patched").join("QuorumControllerTest");
        std::fs::create_dir_all(class.join(retry_dir(1, "testA"))).unwrap();
        std::fs::create_dir_all(class.join(retry_dir(2, "testA"))).unwrap();
        std::fs::create_dir_all(class.join(retry_dir(1, "testB"))).unwrap();
        std::fs::write(class.join(retry_dir(1, "testA")).join("TEST-r.xml"), report(&[("testA()", false)])).unwrap();
        std::fs::write(class.join(retry_dir(2, "testA")).join("TEST-r.xml"), report(&[("testA()", true)])).unwrap();
        std::fs::write(class.join(retry_dir(1, "testB")).join("TEST-r.xml"), report(&[("testB()", false)])).unwrap();
        let fail = TestOutcome::Fail {
            kind: crate::verify::unit_record::Kind::Exception,
            exception: "x".into(),
            message: "resign".into(),
        };
        let mut outcomes: BTreeMap<Config, Outcomes> = BTreeMap::new();
        outcomes.insert(
            Config::Patched,
            [
                ("QuorumControllerTest.testA()".to_string(), fail.clone()),
                ("QuorumControllerTest.testB()".to_string(), fail),
            ]
            .into(),
        );
        let flaky = apply_retries(t.path(), &mut outcomes).unwrap();
        assert_eq!(flaky.len(), 1, "{flaky:?}");
        assert_eq!(
            (flaky[0].test.as_str(), flaky[0].config, flaky[0].retry),
            ("QuorumControllerTest.testA()", Config::Patched, 2)
        );
        assert!(outcomes[&Config::Patched]["QuorumControllerTest.testA()"].passed());
        assert!(!outcomes[&Config::Patched]["QuorumControllerTest.testB()"].passed(), "failed twice: it stands");
        // A display name cannot lead the reports out of the class's directory.
        assert_eq!(retry_dir(1, "../../etc/x y"), "retry-1-______etc_x_y");
    }
}
