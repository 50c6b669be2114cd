//! `okp unit-tests`: Kafka's own unit tests of the hooked classes, from the
//! release's `-test.jar`s on Maven Central, run four times with the JUnit
//! console launcher: on the release's jars, on the patched jars with no
//! observer, on the patched jars with observers configured
//! (`KAFKA_OBSERVER_BROKER_IDS`, the observer file absent), and on the patched
//! jars with the same observers from a topic rule (`regex:.* observers=IDS` in
//! the observer file, no `KAFKA_OBSERVER_BROKER_IDS`), where every test must end
//! as it does with observers. One JVM at a time, one per class, in its own
//! process group, killed at the class's time limit. The evidence goes to
//! `<evidence>/unit/<release>-<mode>/`: unit.json, summary.md, classpath.txt
//! (each jar with its sha256), the rules configuration's observer file, the
//! JUnit XML of every class and configuration, and unexplained.yaml when a
//! change is not explained or a test ends otherwise under rules.
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
    self as record, ClassRow, Config, Counts, Flaky, LogSeen, RegistryLog, RulesRun, TestOutcome, UnitRecord,
    UnitVerdict,
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

/// The `rules` configuration's observer file, in the run's evidence directory.
pub const RULES_FILE: &str = "observer-rules.ids";

/// The WARN a registry logs when it cannot read its observer file (docs/observer-ids.md).
const READ_WARN: &str = "Cannot read observer ids file";

/// The registries' audit lines (docs/observer-ids.md, "Audit log format").
const AUDIT: &str = "OBSERVER AUDIT";

/// What SLF4J (1.7 and 2.x alike) prints when it finds no logging backend and drops every line.
const NOP_LOGGER: &str = "no-operation (NOP) logger";

/// The `rules` configuration's observer file for `ids` (comma-separated): what it is, then one
/// topic rule giving every topic those observers. No cluster-wide ids.
pub fn rules_file_text(ids: &str) -> String {
    format!(
        "# okp unit-tests, configuration `rules`: KAFKA_OBSERVER_IDS_FILE names this file and KAFKA_OBSERVER_BROKER_IDS is unset. Its one topic rule gives every topic the observers the `observers` configuration sets cluster-wide, so every test must end as it does there.\nregex:.* observers={}\n",
        if ids.is_empty() { "none" } else { ids }
    )
}

/// The `rules=` field of the audit line a registry writes after reading `rules_file_text(ids)`:
/// the ids ascending.
pub fn audit_rules(ids: &[u32]) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let list = if sorted.is_empty() {
        "none".to_string()
    } else {
        sorted.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
    };
    format!("regex:.*={list}")
}

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
    // Never created: "no observer file" in every configuration but `rules`, whatever /opt/kafka holds.
    let absent_file = work.path().join("no-observer-file").join("observer.ids");
    let observers = family.observers.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    // The `rules` configuration's file, in the run's own directory (published with the evidence).
    let rules_file = staging.join(RULES_FILE);
    let rules_text = rules_file_text(&observers);
    write(&rules_file, &rules_text)?;
    let mut rules_run =
        RulesRun { file: rules_text, audit_rules: audit_rules(&family.observers), registry_log: Vec::new() };
    // Per configuration: the observer file the registries are pointed at, and the env ids.
    let setup = |config: Config| -> (&Path, Option<&str>) {
        match config {
            Config::Upstream | Config::Patched => (&absent_file, None),
            Config::Observers => (&absent_file, Some(observers.as_str())),
            Config::Rules => (&rules_file, None),
        }
    };
    let mut seconds = BTreeMap::new();
    let mut outcomes: BTreeMap<Config, Outcomes> = BTreeMap::new();
    let mut counts: BTreeMap<String, BTreeMap<Config, Counts>> = BTreeMap::new();
    for config in Config::ALL {
        let t = Instant::now();
        let cp = if config == Config::Upstream { &upstream_cp } else { &patched_cp };
        let mut all: Outcomes = BTreeMap::new();
        for class in classes.iter().filter(|c| present.contains(&c.class)) {
            let reports = staging.join("junit").join(config.word()).join(class.simple_name());
            let (observer_file, env_ids) = setup(config);
            let jvm = Jvm { java: &java, launcher: &launcher, classpath: cp, family: &family, observer_file };
            crate::out::note(format!("unit-tests {v} {}: {} {}", opts.mode, config.word(), class.class));
            let ran = jvm.run_class(&class.class, &reports, env_ids, opts.class_timeout, &work.path().join("logs"))?;
            if config == Config::Rules {
                let (lines, nop) = registry_lines(&ran.log)?;
                rules_run.registry_log.push(registry_log(
                    &class.class,
                    &lines,
                    &rules_file,
                    &rules_run.audit_rules,
                    work.path(),
                    nop,
                ));
            }
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
        let (observer_file, env_ids) = setup(config);
        let jvm = Jvm { java: &java, launcher: &launcher, classpath: cp, family: &family, observer_file };
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
    let all_flaky = apply_retries(&staging.join("junit"), &mut outcomes)?;
    seconds.insert("retries".into(), crate::scenarios::round(t.elapsed().as_secs_f64()));
    let empty = BTreeMap::new();
    let get = |c: Config| outcomes.get(&c).unwrap_or(&empty);
    let j = judge::judge(
        &family,
        get(Config::Upstream),
        get(Config::Patched),
        get(Config::Observers),
        Some(get(Config::Rules)),
    );
    seconds.insert("total".into(), crate::scenarios::round(t_total.elapsed().as_secs_f64()));
    let mut record = UnitRecord {
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
        verdict: verdict(&j, Some(&rules_run)),
        classes: classes
            .iter()
            .map(|c| ClassRow { class: c.class.clone(), runs: counts.get(&c.class).cloned() })
            .collect(),
        regressions: j.regressions,
        changes: j.changes,
        not_comparable: j.not_comparable,
        unused_expectations: j.unused_expectations,
        flaky: Vec::new(),
        rules_flaky: Vec::new(),
        seconds,
        rules_differences: j.rules_differences,
        rules: Some(rules_run),
    };
    record.set_flaky(all_flaky);
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
    // A record of a three-configuration run has no `rules` reports to read.
    for &config in record.configs() {
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
    record.set_flaky(apply_retries(&dest.join("junit"), &mut outcomes)?);
    let empty = BTreeMap::new();
    let get = |c: Config| outcomes.get(&c).unwrap_or(&empty);
    let rules = record.rules.is_some().then(|| get(Config::Rules));
    let j = judge::judge(family, get(Config::Upstream), get(Config::Patched), get(Config::Observers), rules);
    // The registries' log lines are not kept: what the run found of them stands.
    record.verdict = verdict(&j, record.rules.as_ref());
    record.rules_differences = j.rules_differences;
    record.regressions = j.regressions;
    record.changes = j.changes;
    record.not_comparable = j.not_comparable;
    record.unused_expectations = j.unused_expectations;
    finish(&record, dest, dest, json, pairs)?;
    Ok(Outcome::check(record.verdict == UnitVerdict::Pass))
}

/// Pass: no regression, every change explained, every test under `rules` as under `observers`, and
/// no class's log showing the rules file not read.
fn verdict(j: &judge::Judgement, rules: Option<&RulesRun>) -> UnitVerdict {
    if j.ok() && rules.is_none_or(|r| r.wrong().next().is_none()) {
        UnitVerdict::Pass
    } else {
        UnitVerdict::Fail
    }
}

/// The registries' lines in a test JVM's output (`log`): their audit lines and the WARN of a read
/// that failed; and whether SLF4J said it drops every line (no backend). Read line by line: a log
/// can be large (a test jar's log configuration at DEBUG).
fn registry_lines(log: &Path) -> Result<(Vec<String>, bool)> {
    use std::io::BufRead;
    let f = crate::fsx::read::open_input(log, crate::fsx::read::MAX_LOG, "test JVM output")?;
    let mut r = std::io::BufReader::new(f);
    let mut out = Vec::new();
    let mut nop = false;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).map_err(|e| Error::io(format!("cannot read {}", log.display()), e))?;
        if n == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buf);
        if line.contains(AUDIT) || line.contains(READ_WARN) {
            out.push(line.trim_end().to_string());
        }
        nop |= line.contains(NOP_LOGGER);
    }
    Ok((out, nop))
}

/// How many of a class's registry lines unit.json keeps, and how long each may be.
const KEPT_LINES: usize = 4;
const KEPT_CHARS: usize = 400;

/// What the `rules` configuration's JVM of `class` logged of the registries (`lines`, from
/// `registry_lines`): read, when every line is an audit line of the rules file with its rule;
/// wrong, when one is the WARN of a failed read or an audit line of another source or rules;
/// not logged, when there is none. `run_dir` is written `$RUN` in the lines kept.
fn registry_log(
    class: &str,
    lines: &[String],
    rules_file: &Path,
    audit_rules: &str,
    run_dir: &Path,
    nop_logger: bool,
) -> RegistryLog {
    let source = format!("source=file:{}", rules_file.display());
    let rules = format!("rules={audit_rules}");
    let good = |l: &str| {
        let words: Vec<&str> = l.split_whitespace().collect();
        l.contains(AUDIT)
            && !l.contains(READ_WARN)
            && words.contains(&source.as_str())
            && words.contains(&rules.as_str())
    };
    let seen = if lines.is_empty() {
        LogSeen::NotLogged
    } else if lines.iter().all(|l| good(l)) {
        LogSeen::Read
    } else {
        LogSeen::Wrong
    };
    let run = run_dir.display().to_string();
    // The lines that say most first: a wrong one, then the rest in order.
    let mut kept: Vec<&String> = lines.iter().filter(|l| !good(l)).chain(lines.iter().filter(|l| good(l))).collect();
    kept.truncate(KEPT_LINES);
    RegistryLog {
        class: class.to_string(),
        seen,
        lines: kept.iter().map(|l| l.replace(&run, "$RUN").chars().take(KEPT_CHARS).collect()).collect(),
        nop_logger,
    }
}

/// Where the `n`th re-run of `method` writes its reports, beside the class's own.
/// The name is a report's (a display name may hold any character): only `[A-Za-z0-9_$]` reach
/// the path, the rest become `_`.
fn retry_dir(n: u32, method: &str) -> String {
    let safe: String =
        method.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' }).collect();
    format!("retry-{n}-{safe}")
}

/// What a flaky test's re-run did: `passed on re-run N`, or how it failed there.
fn rerun(f: &Flaky) -> String {
    match &f.then {
        None => format!("passed on re-run {}", f.retry),
        Some(o) => format!("failed on re-run {} as in the other configuration: {}{}", f.retry, o.word(), message(o)),
    }
}

/// Reads every re-run's reports (`junit/<config>/<Class>/retry-<n>-<method>/`) and replaces a
/// failed outcome by the pass a re-run reported, listing each such test as flaky. The run and
/// `--rejudge` both go through here, so a rejudged record says what the run said.
fn apply_retries(junit_root: &Path, outcomes: &mut BTreeMap<Config, Outcomes>) -> Result<Vec<Flaky>> {
    let mut flaky = Vec::new();
    let mut failed_again = Vec::new();
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
                        then: None,
                    });
                    all.insert(case.test, TestOutcome::Pass);
                } else if !case.outcome.passed() {
                    failed_again.push((config, n, case.test, case.outcome));
                }
            }
        }
    }
    // A test failing under `observers` and `rules` in two ways (a hang either of two timeouts of
    // the test reports first) ends alike when a re-run of one side failed as the other side did.
    for (config, n, test, outcome) in failed_again {
        let other = match config {
            Config::Observers => Config::Rules,
            Config::Rules => Config::Observers,
            _ => continue,
        };
        let (Some(mine), Some(theirs)) =
            (outcomes.get(&config).and_then(|o| o.get(&test)), outcomes.get(&other).and_then(|o| o.get(&test)))
        else {
            continue;
        };
        if mine.word() != theirs.word() && outcome.word() == theirs.word() {
            flaky.push(Flaky {
                test: test.clone(),
                config,
                first: mine.clone(),
                retry: n,
                then: Some(outcome.clone()),
            });
            outcomes.entry(config).or_default().insert(test, outcome);
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

/// The per-class table: pass/fail/skip per configuration (`rules`: `–` in a record of a
/// three-configuration run, which the opening paragraph says).
fn class_table(record: &UnitRecord) -> String {
    let mut s =
        String::from("| class | upstream | patched | observers | rules | seconds |\n|---|---|---|---|---|---|\n");
    for row in &record.classes {
        match &row.runs {
            None => s.push_str(&format!("| {} | not in this release | | | | |\n", row.class)),
            Some(r) => {
                let secs: f64 = r.values().map(|c| c.seconds).sum();
                s.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {secs:.0} |\n",
                    row.class,
                    cell(r.get(&Config::Upstream)),
                    cell(r.get(&Config::Patched)),
                    cell(r.get(&Config::Observers)),
                    cell(r.get(&Config::Rules))
                ));
            }
        }
    }
    s
}

/// Passed/failed/skipped over every class, per configuration.
fn totals(record: &UnitRecord, config: Config) -> Option<Counts> {
    let mut t: Option<Counts> = None;
    for c in record.classes.iter().filter_map(|r| r.runs.as_ref()?.get(&config)) {
        let t = t.get_or_insert_with(Counts::default);
        t.passed += c.passed;
        t.failed += c.failed;
        t.skipped += c.skipped;
        t.seconds += c.seconds;
        t.timed_out |= c.timed_out;
    }
    t
}

/// The opening paragraph's account of the configurations.
fn configurations_paragraph(r: &UnitRecord) -> String {
    let ids = r.observers.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let three = format!(
        "`upstream` (the release's jars), `patched` (no observer file, no `KAFKA_OBSERVER_BROKER_IDS`), `observers` (`KAFKA_OBSERVER_BROKER_IDS={ids}`, no observer file)"
    );
    match &r.rules {
        None => format!(
            "Kafka's own unit tests of the hooked classes, three times: {three}. A three-configuration run: written before the `rules` configuration (observers from a topic rule) existed, so its `rules` column is empty and no test was compared under rules."
        ),
        Some(rules) => format!(
            "Kafka's own unit tests of the hooked classes, four times: {three}, and `rules` (patched jars, no `KAFKA_OBSERVER_BROKER_IDS`, `KAFKA_OBSERVER_IDS_FILE` naming `{RULES_FILE}` in the run's directory, no cluster-wide ids in it, only one topic rule giving every topic those observers). The file reads:\n\n```\n{}```\n\nEvery test must end under `rules` as it ends under `observers` (pass, skip, or the same kind of failure): both give every topic the same observers, one through a topic rule, the other cluster-wide.",
            rules.file
        ),
    }
}

/// What the `rules` configuration's JVMs logged of the registries reading its file.
fn registry_paragraph(rules: &RulesRun) -> String {
    let of = |seen: LogSeen| -> Vec<&RegistryLog> { rules.registry_log.iter().filter(|l| l.seen == seen).collect() };
    let names = |ls: &[&RegistryLog]| {
        ls.iter()
            .map(|l| format!("`{}`", l.class.rsplit('.').next().unwrap_or(&l.class)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        "\n## The registries reading the rules file\n\nA registry that reads the file logs `OBSERVER AUDIT ... source=file:$RUN/evidence/{RULES_FILE} ... rules={}` at INFO; one that cannot logs a WARN (`{READ_WARN} ...`). Each class's JVM output was searched for both.\n\n",
        rules.audit_rules
    );
    let read = of(LogSeen::Read);
    if !read.is_empty() {
        s.push_str(&format!("- read, the audit line in the log ({}): {}\n", read.len(), names(&read)));
        if let Some(line) = read.iter().flat_map(|l| &l.lines).next() {
            s.push_str(&format!("  e.g. `{line}`\n"));
        }
    }
    let silent = of(LogSeen::NotLogged);
    if !silent.is_empty() {
        let (nop, other): (Vec<&RegistryLog>, Vec<&RegistryLog>) = silent.iter().partition(|l| l.nop_logger);
        s.push_str(&format!("- **not captured** ({}): the read cannot be asserted from the logs.", silent.len()));
        if !nop.is_empty() {
            s.push_str(&format!(
                " {} JVMs said SLF4J found no logging backend (`Defaulting to no-operation (NOP) logger implementation`): the unit-test classpath (the release's runtime POM dependencies, the test libraries, the test jars) has `slf4j-api` and no binding, and the registries log through SLF4J, so their audit lines and WARNs are dropped (here, and in `patched` and `observers`, which run on the same classpath): {}.",
                nop.len(),
                names(&nop)
            ));
        }
        if !other.is_empty() {
            s.push_str(&format!(
                " In {} no registry line and no SLF4J notice showed (a log configuration keeping the registries out): {}.",
                other.len(),
                names(&other)
            ));
        }
        s.push_str(" okp adds no logging backend to the tests' classpath: that would change what the tests run on.\n");
    }
    let wrong = of(LogSeen::Wrong);
    if !wrong.is_empty() {
        s.push_str(&format!("- **not read as written** ({}), the run fails:\n", wrong.len()));
        for l in wrong {
            s.push_str(&format!(
                "  - `{}`: {}\n",
                l.class,
                l.lines.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join("; ")
            ));
        }
    }
    s.push_str("\nWhat the outcomes say instead: with `KAFKA_OBSERVER_BROKER_IDS` unset and no cluster-wide id in the file, a registry that did not read the file has no observers (as in `patched`); a test whose outcome changes with observers (the changes above) and ends under `rules` as under `observers` met them through the file's rule.\n");
    s
}

fn summary_page(r: &UnitRecord) -> String {
    let total = r.seconds.get("total").copied().unwrap_or(0.0);
    let mut s = format!(
        "# okp unit-tests {} {}\n\nWritten by okp {} at {} UTC. Verdict: **{}**. Java: {}. Family {} (unit-tests.yaml), launcher {}, patch set {}.\n\n",
        r.release, r.mode, r.okp_version, r.written_utc, r.verdict.word(), r.java, r.family, r.launcher, &r.patch_set_hash[..r.patch_set_hash.len().min(16)]
    );
    s.push_str(&configurations_paragraph(r));
    s.push_str(&format!(
        "\n\nCells: passed/failed/skipped. Each class ran in its own JVM, limit {} s. Wall time {total:.0} s.\n\n",
        r.class_timeout_s
    ));
    s.push_str(&class_table(r));
    let all: Vec<String> =
        r.configs().iter().filter_map(|c| totals(r, *c).map(|t| format!("{} {}", c.word(), cell(Some(&t))))).collect();
    s.push_str(&format!("\nIn all: {}.\n", all.join(", ")));
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
    if r.all_flaky().next().is_some() {
        s.push_str(&format!(
            "\n## Flaky: failed, then passed when run again alone in the same configuration (or, under `observers` or `rules`, failed as in the other): {}\n\n| test | configuration | first outcome | re-run |\n|---|---|---|---|\n",
            r.all_flaky().count()
        ));
        for f in r.all_flaky() {
            s.push_str(&format!(
                "| `{}` | {} | {}{} | {} |\n",
                f.test,
                f.config.word(),
                f.first.word(),
                message(&f.first).replace('|', "\\|"),
                rerun(f).replace('|', "\\|")
            ));
        }
    }
    if r.rules.is_some() {
        s.push_str(&format!(
            "\n## Rules ≠ observers (a test ending otherwise under `rules` than under `observers`; nothing explains one): {}\n\n",
            r.rules_differences.len()
        ));
        if !r.rules_differences.is_empty() {
            s.push_str(
                "| test | observers | rules | message under rules | message under observers |\n|---|---|---|---|---|\n",
            );
            for d in &r.rules_differences {
                s.push_str(&format!(
                    "| `{}` | {} | {} | {} | {} |\n",
                    d.test,
                    d.observers.word(),
                    d.rules.word(),
                    message(&d.rules).trim_start_matches(": ").replace('|', "\\|"),
                    message(&d.observers).trim_start_matches(": ").replace('|', "\\|")
                ));
            }
        }
    }
    if let Some(rules) = &r.rules {
        s.push_str(&registry_paragraph(rules));
    }
    if !r.unused_expectations.is_empty() {
        s.push_str(&format!(
            "\nExpected changes that did not happen (stale after a patch-set change?): {}\n",
            r.unused_expectations.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    s.push_str(&format!(
        "\nFiles: `unit.json` (every outcome that differs), `classpath.txt` (each jar and its sha256), {}`junit/<configuration>/<class>/` (the launcher's XML reports).\n",
        if r.rules.is_some() { format!("`{RULES_FILE}` (the `rules` configuration's observer file), ") } else { String::new() }
    ));
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
    let mut out = String::new();
    if !s.is_empty() {
        out = format!(
            "# Changes with observers configured that unit-tests.yaml does not explain ({} {}, family {}).\n# Decide the contract rule of each, then paste into the family's `expected:` and run\n# `okp unit-tests --version {} --mode {} --rejudge`.\n{s}",
            r.release, r.mode, r.family, r.release, r.mode
        );
    }
    if !r.rules_differences.is_empty() {
        // Comments: no expected entry explains these, so there is nothing to paste.
        out.push_str(&format!(
            "# Tests that end otherwise under `rules` (the observer file's `regex:.* observers=...` rule) than under\n# `observers` (the same ids in KAFKA_OBSERVER_BROKER_IDS) ({} {}, family {}). No rule of unit-tests.yaml\n# explains one: both configurations give every topic the same observers, so each is a difference between\n# the registries' rule resolution and their cluster-wide ids, to report and fix.\n",
            r.release, r.mode, r.family
        ));
        for d in &r.rules_differences {
            out.push_str(&format!(
                "#   - test: {}\n#     observers: \"{}{}\"\n#     rules: \"{}{}\"\n",
                d.test,
                d.observers.word(),
                message(&d.observers).replace('"', "'"),
                d.rules.word(),
                message(&d.rules).replace('"', "'")
            ));
        }
    }
    out
}

fn terminal_table(r: &UnitRecord, dest: &Path) -> String {
    let mut s = format!("okp unit-tests {} {}\n\n", r.release, r.mode);
    s.push_str(&format!(
        "{:<58} {:>14} {:>14} {:>14} {:>14}\n",
        "class (passed/failed/skipped)", "upstream", "patched", "observers", "rules"
    ));
    for row in &r.classes {
        match &row.runs {
            None => s.push_str(&format!("{:<58} not in this release\n", row.class)),
            Some(x) => s.push_str(&format!(
                "{:<58} {:>14} {:>14} {:>14} {:>14}\n",
                row.class,
                cell(x.get(&Config::Upstream)),
                cell(x.get(&Config::Patched)),
                cell(x.get(&Config::Observers)),
                cell(x.get(&Config::Rules))
            )),
        }
    }
    let t = |c: Config| totals(r, c).map_or_else(|| "–".to_string(), |t| cell(Some(&t)));
    s.push_str(&format!(
        "{:<58} {:>14} {:>14} {:>14} {:>14}\n",
        "in all",
        t(Config::Upstream),
        t(Config::Patched),
        t(Config::Observers),
        t(Config::Rules)
    ));
    let unexplained = r.changes.iter().filter(|c| c.rule.is_none()).count();
    let rules = match &r.rules {
        None => "not run (a three-configuration record)".to_string(),
        Some(rules) => {
            let count = |seen: LogSeen| rules.registry_log.iter().filter(|l| l.seen == seen).count();
            format!(
                "{} tests ending otherwise than with observers; the file's read in the registries' log lines: {} classes read, {} not captured, {} wrong",
                r.rules_differences.len(),
                count(LogSeen::Read),
                count(LogSeen::NotLogged),
                count(LogSeen::Wrong)
            )
        }
    };
    s.push_str(&format!(
        "\nregressions: {}\nchanges with observers: {} ({} explained, {} unexplained, {} to review)\nrules: {rules}\nwall time: {:.0} s\nverdict: {}\nevidence: {}\n",
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
    for f in r.all_flaky() {
        s.push_str(&format!(
            "  FLAKY {} ({}): {}{}; {}\n",
            f.test,
            f.config.word(),
            f.first.word(),
            message(&f.first),
            rerun(f)
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
    for d in &r.rules_differences {
        s.push_str(&format!(
            "  RULES != OBSERVERS {}: observers {}{}; rules {}{}\n",
            d.test,
            d.observers.word(),
            message(&d.observers),
            d.rules.word(),
            message(&d.rules)
        ));
    }
    for l in r.rules.iter().flat_map(|x| x.wrong()) {
        s.push_str(&format!("  RULES FILE NOT READ ({}): {}\n", l.class, l.lines.join(" | ")));
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

    /// 3.2.3 zk, 2026-12-04: PartitionLockTest's blocked shrink surfaces as the test's own
    /// timeout or the fetch thread's, whichever fires first, under `observers` one way and under
    /// `rules` the other. A re-run of `observers` that fails as `rules` did ends them alike
    /// (listed as flaky, with how the re-run failed); a re-run that fails as before changes nothing.
    #[test]
    fn a_failure_of_another_kind_ends_alike_when_a_re_run_fails_as_the_other_side() {
        use crate::verify::unit_record::Kind;
        let t = tempfile::tempdir().unwrap();
        let class = t.path().join("observers").join("QuorumControllerTest");
        std::fs::create_dir_all(class.join(retry_dir(1, "testA"))).unwrap();
        std::fs::create_dir_all(class.join(retry_dir(1, "testB"))).unwrap();
        std::fs::write(class.join(retry_dir(1, "testA")).join("TEST-r.xml"), report(&[("testA()", false)])).unwrap();
        std::fs::write(class.join(retry_dir(1, "testB")).join("TEST-r.xml"), report(&[("testB()", false)])).unwrap();
        let timeout =
            TestOutcome::Fail { kind: Kind::Timeout, exception: "j.u.c.TimeoutException".into(), message: "".into() };
        let exception = TestOutcome::Fail { kind: Kind::Exception, exception: "x".into(), message: "resign".into() };
        let assertion = TestOutcome::Fail { kind: Kind::Assertion, exception: "a".into(), message: "m".into() };
        let (a, b) = ("QuorumControllerTest.testA()".to_string(), "QuorumControllerTest.testB()".to_string());
        let mut outcomes: BTreeMap<Config, Outcomes> = BTreeMap::new();
        outcomes.insert(Config::Observers, [(a.clone(), timeout.clone()), (b.clone(), timeout.clone())].into());
        outcomes.insert(Config::Rules, [(a.clone(), exception.clone()), (b.clone(), assertion.clone())].into());
        let flaky = apply_retries(t.path(), &mut outcomes).unwrap();
        assert_eq!(flaky.len(), 1, "{flaky:?}");
        assert_eq!(
            (flaky[0].test.as_str(), flaky[0].config, &flaky[0].first),
            (a.as_str(), Config::Observers, &timeout)
        );
        assert_eq!(flaky[0].then.as_ref().map(TestOutcome::word), Some(exception.word()));
        assert_eq!(outcomes[&Config::Observers][&a].word(), outcomes[&Config::Rules][&a].word(), "alike now");
        assert_eq!(outcomes[&Config::Observers][&b], timeout, "its re-run failed as before, not as rules did");
        assert!(rerun(&flaky[0]).starts_with("failed on re-run 1 as in the other configuration: fail (exception)"));
    }

    #[test]
    fn the_rules_file_holds_one_rule_and_no_cluster_wide_ids() {
        let text = rules_file_text("2,102,424242");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("# okp unit-tests, configuration `rules`"), "{text}");
        assert_eq!(lines[1], "regex:.* observers=2,102,424242");
        assert!(text.is_ascii(), "the registries read the file as ISO-8859-1");
        assert_eq!(audit_rules(&[424242, 2, 102, 2]), "regex:.*=2,102,424242");
    }

    #[test]
    fn a_class_log_shows_the_rules_file_read_not_logged_or_wrong() {
        let run = Path::new("/tmp/okp-unit-3.9.2-zk-abc");
        let file = run.join("evidence").join(RULES_FILE);
        let audit = "regex:.*=2,102,424242";
        let line = |source: &str, rules: &str| {
            format!("[2026-12-05 10:00:00,000] INFO OBSERVER AUDIT registry=broker node=- event=initial source={source} before=[] after=[] added=[] removed=[] epochMs=1 rules={rules} (kafka.observer.ObserverIds:235)")
        };
        let good = line(&format!("file:{}", file.display()), audit);
        let l = registry_log("k.PartitionTest", std::slice::from_ref(&good), &file, audit, run, false);
        assert_eq!(l.seen, LogSeen::Read);
        assert!(l.lines[0].contains("source=file:$RUN/evidence/observer-rules.ids"), "{:?}", l.lines);
        let l = registry_log("k.PartitionTest", &[], &file, audit, run, true);
        assert_eq!((l.seen, l.nop_logger), (LogSeen::NotLogged, true));
        // Ids from the env, another rule, or a failed read: not the file read as written.
        let warn = format!(
            "[2026-12-05 10:00:00,000] WARN Cannot read observer ids file {} (it does not exist); no good read yet and env KAFKA_OBSERVER_BROKER_IDS is unset, so no observers (kafka.observer.ObserverIds:215)",
            file.display()
        );
        for bad in [
            line("env:KAFKA_OBSERVER_BROKER_IDS", audit),
            line(&format!("file:{}", file.display()), "regex:.*=2"),
            warn,
        ] {
            let l = registry_log("k.PartitionTest", &[good.clone(), bad.clone()], &file, audit, run, true);
            assert_eq!(l.seen, LogSeen::Wrong, "{bad}");
            assert_eq!(l.lines[0], bad.replace(&run.display().to_string(), "$RUN"), "the wrong line first");
        }
    }

    #[test]
    fn the_registry_lines_and_the_nop_notice_are_picked_from_a_jvm_log() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("rules-k.PartitionTest.log");
        std::fs::write(
            &log,
            b"SLF4J: Failed to load class \"org.slf4j.impl.StaticLoggerBinder\".\nSLF4J: Defaulting to no-operation (NOP) logger implementation\n\xff binary \xfe\n[d] INFO OBSERVER AUDIT registry=broker event=initial   \nother\n",
        )
        .unwrap();
        let (lines, nop) = registry_lines(&log).unwrap();
        assert_eq!((lines, nop), (vec!["[d] INFO OBSERVER AUDIT registry=broker event=initial".to_string()], true));
        std::fs::write(&log, "SLF4J(W): No SLF4J providers were found.\n").unwrap();
        assert_eq!(registry_lines(&log).unwrap(), (vec![], false));
    }

    fn four_configuration_record() -> UnitRecord {
        let mut r = crate::verify::unit_record::tests::sample();
        r.verdict = UnitVerdict::Fail;
        r.rules_differences = vec![record::RulesDifference {
            test: "ReplicaTest.t()".into(),
            observers: TestOutcome::Pass,
            rules: TestOutcome::Fail {
                kind: record::Kind::Assertion,
                exception: "org.opentest4j.AssertionFailedError".into(),
                message: "expected: <Set(101, 102)> but was: <Set(101)>".into(),
            },
        }];
        r
    }

    #[test]
    fn the_summary_shows_the_rules_column_file_and_differences() {
        let r = four_configuration_record();
        let page = summary_page(&r);
        assert!(page.contains("four times:"), "{page}");
        assert!(page.contains("```\n# okp unit-tests\nregex:.* observers=2,102,424242\n```"), "{page}");
        assert!(page.contains("| class | upstream | patched | observers | rules | seconds |"), "{page}");
        assert!(page.contains("| kafka.cluster.ReplicaTest | 3/0/0 | 3/0/0 | 3/0/0 | 3/0/0 | 0 |"), "{page}");
        assert!(page.contains("In all: upstream 3/0/0, patched 3/0/0, observers 3/0/0, rules 3/0/0."), "{page}");
        assert!(page.contains("## Rules ≠ observers"), "{page}");
        assert!(
            page.contains("| `ReplicaTest.t()` | pass | fail (assertion) | AssertionFailedError: expected"),
            "{page}"
        );
        assert!(
            page.contains("- **not captured** (1): the read cannot be asserted from the logs. 1 JVMs said SLF4J"),
            "{page}"
        );
        let y = unexplained_yaml(&r);
        assert!(y.contains("#   - test: ReplicaTest.t()\n#     observers: \"pass\"\n#     rules: \"fail (assertion): AssertionFailedError"), "{y}");
        let table = terminal_table(&r, Path::new("evidence/unit/3.9.2-zk"));
        assert!(
            table.contains("RULES != OBSERVERS ReplicaTest.t(): observers pass; rules fail (assertion)"),
            "{table}"
        );
    }

    #[test]
    fn an_old_record_renders_as_a_three_configuration_run() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(record::FILE_NAME), record::tests::THREE_CONFIGURATIONS).unwrap();
        let r = UnitRecord::read(d.path()).unwrap();
        let page = summary_page(&r);
        assert!(page.contains("three times:") && page.contains("A three-configuration run"), "{page}");
        assert!(page.contains("| kafka.cluster.PartitionTest | 85/0/0 | 85/0/0 | 68/17/0 | – |"), "{page}");
        assert!(page.contains("In all: upstream 85/0/0, patched 85/0/0, observers 68/17/0."), "{page}");
        assert!(!page.contains("Rules ≠ observers") && !page.contains(RULES_FILE), "{page}");
        assert!(terminal_table(&r, d.path()).contains("rules: not run (a three-configuration record)"));
        assert_eq!(unexplained_yaml(&r), "");
    }
}
