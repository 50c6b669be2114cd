//! unit.json: one `okp unit-tests` run of a (release, mode), in
//! `evidence/unit/<release>-<mode>/`. `unit_tests::run` writes it
//! (`UnitRecord::write`); the VERIFY.md matrix reads it for its unit column
//! (`UnitRecord::read`), and so does `okp unit-tests --rejudge`.
//!
//! Schema 1. A unit.json without a `schema` field is refused (there never was
//! one without it); any other number is refused naming the file and the number.
//! The fourth configuration, `rules`, came within schema 1 as new optional
//! fields only (`rules`, `rules_differences`, `rules_flaky`, and `rules` beside
//! each class's `runs`), never as a new key where an older okp expects one of
//! three: a record without them is a three-configuration run, read as such,
//! and an okp older than `rules` reads a four-configuration record as one.
//!
//! Not here: the verdicts (`judge`), the summary page and the run (`unit_tests`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Result;
use crate::model::Mode;
use crate::schema::{Absent, Schema};
use crate::version::KafkaVersion;

pub const FILE_NAME: &str = "unit.json";

/// How a test that did not pass failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An `AssertionError` (JUnit, opentest4j, Mockito verification): the test's expectation.
    Assertion,
    /// Any other exception: machinery the change must not break, flagged for review.
    Exception,
    /// A timeout (`TimeoutException`, a JUnit timeout, or the class's JVM killed at its time limit).
    Timeout,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Assertion => "assertion",
            Kind::Exception => "exception",
            Kind::Timeout => "timeout",
        }
    }
}

/// One test's outcome in one configuration.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum TestOutcome {
    Pass,
    Skip,
    Fail {
        kind: Kind,
        /// The exception's class.
        exception: String,
        /// Its message's first line, at most 300 characters.
        message: String,
    },
}

impl TestOutcome {
    pub fn word(&self) -> String {
        match self {
            TestOutcome::Pass => "pass".into(),
            TestOutcome::Skip => "skip".into(),
            TestOutcome::Fail { kind, .. } => format!("fail ({})", kind.word()),
        }
    }

    pub fn passed(&self) -> bool {
        *self == TestOutcome::Pass
    }
}

pub const SCHEMA: Schema = Schema {
    current: 1,
    absent: Absent::Refused,
    remedy: "it was written by another okp; run `okp unit-tests` again to replace it",
};

/// The four configurations, in the order they run (a record written before `Rules` existed has
/// the first three).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Config {
    /// The release's own jars.
    Upstream,
    /// Patched jars; no observer file, no `KAFKA_OBSERVER_BROKER_IDS`.
    Patched,
    /// Patched jars with `KAFKA_OBSERVER_BROKER_IDS` set to the family's observers.
    Observers,
    /// Patched jars with `KAFKA_OBSERVER_IDS_FILE` naming a file of one topic rule,
    /// `regex:.* observers=` the family's observers, and no `KAFKA_OBSERVER_BROKER_IDS`: every
    /// topic gets, through its rule, the observers `Observers` gives through the env. Each test's
    /// outcome must be its outcome there.
    Rules,
}

impl Config {
    pub const ALL: [Config; 4] = [Config::Upstream, Config::Patched, Config::Observers, Config::Rules];

    pub fn word(self) -> &'static str {
        match self {
            Config::Upstream => "upstream",
            Config::Patched => "patched",
            Config::Observers => "observers",
            Config::Rules => "rules",
        }
    }
}

/// unit.json, schema 1.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UnitRecord {
    pub schema: u32,
    pub okp_version: String,
    /// When the run ended, `YYYY-MM-DDTHH:MM:SSZ`.
    pub written_utc: String,
    pub release: KafkaVersion,
    pub mode: Mode,
    /// The unit-tests.yaml family.
    pub family: String,
    /// The first line of `java -version`.
    pub java: String,
    /// The JUnit console launcher, `group:artifact:version`.
    pub launcher: String,
    /// `KAFKA_OBSERVER_BROKER_IDS` of the observers configuration.
    pub observers: Vec<u32>,
    /// The patch set of the patched jars.
    pub patch_set_hash: String,
    /// Each class's time limit, seconds.
    pub class_timeout_s: u64,
    /// `pass`: no regression and every change explained; `fail` otherwise.
    pub verdict: UnitVerdict,
    pub classes: Vec<ClassRow>,
    pub regressions: Vec<Regression>,
    pub changes: Vec<Change>,
    /// Changes of tests that do not pass upstream (not judged).
    #[serde(default)]
    pub not_comparable: Vec<Change>,
    /// Expected entries no change matched.
    pub unused_expectations: Vec<String>,
    /// Tests that failed in a configuration and passed when run again alone there (their first
    /// outcome is replaced by the pass before judging; each is listed, never hidden): upstream,
    /// patched, observers.
    #[serde(default)]
    pub flaky: Vec<Flaky>,
    /// The same for the `rules` configuration (apart from `flaky`, whose `config` an okp older than
    /// `rules` reads as one of three).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules_flaky: Vec<Flaky>,
    /// Wall time per configuration and `total`.
    pub seconds: BTreeMap<String, f64>,
    /// The `rules` configuration: its observer file and what the registries logged of reading it.
    /// None: a three-configuration run (written before `rules` existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<RulesRun>,
    /// Tests whose outcome under `rules` differs from their outcome under `observers`: each fails
    /// the run (nothing explains them; the two configurations give every topic the same observers).
    #[serde(default)]
    pub rules_differences: Vec<RulesDifference>,
}

/// The `rules` configuration of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RulesRun {
    /// The observer file's text (its path: `observer-rules.ids` in the run's evidence directory).
    pub file: String,
    /// The `rules=` field of the audit line of a registry that read the file: `regex:.*=IDS`.
    pub audit_rules: String,
    /// Per class run in it: what the test JVM's output shows of the registries reading the file.
    pub registry_log: Vec<RegistryLog>,
}

impl RulesRun {
    /// The classes whose log shows the file not read (a failed read, or ids from elsewhere).
    pub fn wrong(&self) -> impl Iterator<Item = &RegistryLog> {
        self.registry_log.iter().filter(|l| l.seen == LogSeen::Wrong)
    }
}

/// What one class's JVM logged of the registries (`kafka.observer.ObserverIds`,
/// `org.apache.kafka.controller.ObserverReplicas`) in the `rules` configuration.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RegistryLog {
    pub class: String,
    pub seen: LogSeen,
    /// The registries' lines (audit lines and the WARN of a failed read), the run directory
    /// written `$RUN`; the first few.
    #[serde(default)]
    pub lines: Vec<String>,
    /// The JVM said SLF4J found no logging backend and discards every line
    /// (`Defaulting to no-operation (NOP) logger implementation`): the registries log through
    /// SLF4J, so neither their audit line nor a WARN can show in this output.
    #[serde(default)]
    pub nop_logger: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogSeen {
    /// Audit lines with `source=file:<the rules file>` and `rules=regex:.*=IDS`, and no other
    /// line of the registries.
    Read,
    /// No line of the registries in the JVM's output: their logs are not captured (no SLF4J
    /// backend on the unit-test classpath, `nop_logger`, or a log configuration keeping them
    /// out). The read is not visible there.
    NotLogged,
    /// A WARN that the file could not be read, or an audit line of another source or other rules:
    /// the run fails.
    Wrong,
}

impl LogSeen {
    pub fn word(self) -> &'static str {
        match self {
            LogSeen::Read => "read",
            LogSeen::NotLogged => "not logged",
            LogSeen::Wrong => "wrong",
        }
    }
}

/// A test whose outcome under `rules` is not its outcome under `observers`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RulesDifference {
    pub test: String,
    pub observers: TestOutcome,
    pub rules: TestOutcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitVerdict {
    Pass,
    Fail,
}

impl UnitVerdict {
    pub fn word(self) -> &'static str {
        match self {
            UnitVerdict::Pass => "pass",
            UnitVerdict::Fail => "fail",
        }
    }
}

/// One test class over the configurations (`None`: the release has no such class).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(from = "ClassRowForm", into = "ClassRowForm")]
pub struct ClassRow {
    pub class: String,
    pub runs: Option<BTreeMap<Config, Counts>>,
}

/// A `ClassRow` as unit.json holds it: the `rules` configuration's counts beside `runs`, not in
/// it, so that an okp written before `rules` (whose `runs` has three keys) still reads the record.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct ClassRowForm {
    class: String,
    runs: Option<BTreeMap<Config, Counts>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rules: Option<Counts>,
}

impl From<ClassRowForm> for ClassRow {
    fn from(f: ClassRowForm) -> ClassRow {
        let runs = f.runs.map(|mut m| {
            if let Some(r) = f.rules {
                m.insert(Config::Rules, r);
            }
            m
        });
        ClassRow { class: f.class, runs }
    }
}

impl From<ClassRow> for ClassRowForm {
    fn from(r: ClassRow) -> ClassRowForm {
        let mut runs = r.runs;
        let rules = runs.as_mut().and_then(|m| m.remove(&Config::Rules));
        ClassRowForm { class: r.class, runs, rules }
    }
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub seconds: f64,
    /// The JVM was killed at the class's time limit (its tests count as failed by timeout).
    pub timed_out: bool,
}

/// A test that failed in `config` and passed on a re-run of its method there (`retry`: which one),
/// or, with `then`, failed otherwise on that re-run, as it failed in the configuration it is
/// compared with (`observers` and `rules`: one hang that either of two timeouts of the test
/// reports first).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flaky {
    pub test: String,
    pub config: Config,
    pub first: TestOutcome,
    pub retry: u32,
    /// The re-run's failure; None: it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<TestOutcome>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Regression {
    pub test: String,
    pub upstream: TestOutcome,
    pub patched: TestOutcome,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    pub test: String,
    pub patched: TestOutcome,
    pub observers: TestOutcome,
    /// The contract rule that explains it (unit-tests.yaml), None: unexplained.
    pub rule: Option<String>,
    pub why: Option<String>,
    /// An exception or a timeout with observers: read it even when a rule explains it.
    pub review: bool,
}

impl UnitRecord {
    /// Every flaky test, of every configuration.
    pub fn all_flaky(&self) -> impl Iterator<Item = &Flaky> {
        self.flaky.iter().chain(&self.rules_flaky)
    }

    /// Sets `flaky` and `rules_flaky` from the flaky tests of every configuration.
    pub fn set_flaky(&mut self, all: Vec<Flaky>) {
        (self.rules_flaky, self.flaky) = all.into_iter().partition(|f| f.config == Config::Rules);
    }

    /// The configurations this record's run went through: four, or three for a record written
    /// before the `rules` configuration.
    pub fn configs(&self) -> &'static [Config] {
        if self.rules.is_some() {
            &Config::ALL
        } else {
            &Config::ALL[..3]
        }
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        crate::schema::write(&dir.join(FILE_NAME), self)
    }

    pub fn read(dir: &Path) -> Result<UnitRecord> {
        SCHEMA.read(&dir.join(FILE_NAME), "an okp unit-tests record", "run `okp unit-tests` first")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> UnitRecord {
        UnitRecord {
            schema: 1,
            okp_version: "0.1.0".into(),
            written_utc: "2026-11-30T21:00:00Z".into(),
            release: "3.9.2".parse().unwrap(),
            mode: Mode::Zk,
            family: "u3.7".into(),
            java: "openjdk version \"17\"".into(),
            launcher: "org.junit.platform:junit-platform-console-standalone:1.11.4".into(),
            observers: vec![2, 102, 424242],
            patch_set_hash: "ab".into(),
            class_timeout_s: 600,
            verdict: UnitVerdict::Pass,
            classes: vec![ClassRow {
                class: "kafka.cluster.ReplicaTest".into(),
                runs: Some(Config::ALL.iter().map(|c| (*c, Counts { passed: 3, ..Default::default() })).collect()),
            }],
            regressions: vec![],
            changes: vec![],
            not_comparable: vec![],
            unused_expectations: vec![],
            flaky: vec![],
            rules_flaky: vec![],
            seconds: BTreeMap::new(),
            rules: Some(RulesRun {
                file: "# okp unit-tests\nregex:.* observers=2,102,424242\n".into(),
                audit_rules: "regex:.*=2,102,424242".into(),
                registry_log: vec![RegistryLog {
                    class: "kafka.cluster.ReplicaTest".into(),
                    seen: LogSeen::NotLogged,
                    lines: vec![],
                    nop_logger: true,
                }],
            }),
            rules_differences: vec![],
        }
    }

    /// A record of a three-configuration run, as okp wrote it before the `rules` configuration
    /// (evidence/unit/3.9.2-zk/unit.json of 2026-12-04, cut down to one class and one change).
    pub(crate) const THREE_CONFIGURATIONS: &str = r#"{
  "schema": 1,
  "okp_version": "0.1.0",
  "written_utc": "2026-12-04T11:11:13Z",
  "release": "3.9.2",
  "mode": "zk",
  "family": "u3.7",
  "java": "openjdk version \"17.0.15\" 2025-04-15",
  "launcher": "org.junit.platform:junit-platform-console-standalone:1.11.4",
  "observers": [2, 102, 424242],
  "patch_set_hash": "c3f4e80c6b644f6e",
  "class_timeout_s": 900,
  "verdict": "pass",
  "classes": [
    {
      "class": "kafka.cluster.PartitionTest",
      "runs": {
        "upstream": {"passed": 85, "failed": 0, "skipped": 0, "seconds": 17.1, "timed_out": false},
        "patched": {"passed": 85, "failed": 0, "skipped": 0, "seconds": 17.9, "timed_out": false},
        "observers": {"passed": 68, "failed": 17, "skipped": 0, "seconds": 18.0, "timed_out": false}
      }
    }
  ],
  "regressions": [],
  "changes": [
    {
      "test": "PartitionTest.testIsrExpansion()",
      "patched": {"outcome": "pass"},
      "observers": {"outcome": "fail", "kind": "assertion", "exception": "org.opentest4j.AssertionFailedError", "message": "expected: <0> but was: <1>"},
      "rule": "rule 1",
      "why": "follower 102 is an observer",
      "review": false
    }
  ],
  "not_comparable": [],
  "unused_expectations": [],
  "flaky": [],
  "seconds": {"observers": 70.0, "patched": 68.0, "retries": 0.0, "total": 220.0, "upstream": 72.0}
}
"#;

    #[test]
    fn writes_and_reads_back() {
        assert_eq!(crate::schema::testing::round_trip(&sample(), UnitRecord::write, UnitRecord::read), sample());
    }

    #[test]
    fn a_record_without_rules_is_a_three_configuration_run_and_round_trips() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(FILE_NAME), THREE_CONFIGURATIONS).unwrap();
        let r = UnitRecord::read(d.path()).unwrap();
        assert_eq!((r.rules.as_ref(), r.rules_differences.len()), (None, 0));
        assert_eq!(r.configs(), [Config::Upstream, Config::Patched, Config::Observers]);
        assert_eq!(r.classes[0].runs.as_ref().unwrap().len(), 3);
        // Written again, it reads back the same, still without a `rules` entry.
        assert_eq!(crate::schema::testing::round_trip(&r, UnitRecord::write, UnitRecord::read), r);
        let text = crate::schema::to_json(&r);
        assert!(!text.contains("\"rules\":"), "{text}");
        assert_eq!(sample().configs(), Config::ALL);
    }

    /// What an okp written before the `rules` configuration reads: `runs` keyed by three
    /// configurations and `flaky[].config` one of them, other fields ignored.
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct OlderReader {
        classes: Vec<OlderRow>,
        flaky: Vec<OlderFlaky>,
    }
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct OlderRow {
        runs: Option<BTreeMap<OlderConfig, Counts>>,
    }
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct OlderFlaky {
        config: OlderConfig,
    }
    #[derive(serde::Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    #[serde(rename_all = "lowercase")]
    enum OlderConfig {
        Upstream,
        Patched,
        Observers,
    }

    #[test]
    fn a_four_configuration_record_reads_in_an_older_okp_and_back_in_this_one() {
        let mut r = sample();
        let flake =
            |config| Flaky { test: "ReplicaTest.t()".into(), config, first: TestOutcome::Skip, retry: 1, then: None };
        r.set_flaky(vec![flake(Config::Patched), flake(Config::Rules)]);
        assert_eq!((r.flaky.len(), r.rules_flaky.len(), r.all_flaky().count()), (1, 1, 2));
        let text = crate::schema::to_json(&r);
        let older: OlderReader = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(older.classes[0].runs.as_ref().unwrap().len(), 3);
        assert_eq!(older.flaky.len(), 1);
        let back = crate::schema::testing::round_trip(&r, UnitRecord::write, UnitRecord::read);
        assert_eq!(back, r);
        assert_eq!(back.classes[0].runs.as_ref().unwrap()[&Config::Rules].passed, 3);
    }

    #[test]
    fn an_unknown_schema_is_refused() {
        let e = crate::schema::testing::assert_refused(&sample(), FILE_NAME, 2, UnitRecord::read);
        assert!(e.contains("run `okp unit-tests` again"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let text = crate::schema::to_json(&sample()).replacen("\"schema\": 1,", "", 1);
        std::fs::write(d.path().join(FILE_NAME), text).unwrap();
        assert!(UnitRecord::read(d.path()).unwrap_err().to_string().contains("has no `schema` field"));
    }
}
