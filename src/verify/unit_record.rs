//! unit.json: one `okp unit-tests` run of a (release, mode), in
//! `evidence/unit/<release>-<mode>/`. `unit_tests::run` writes it
//! (`UnitRecord::write`); the VERIFY.md matrix reads it for its unit column
//! (`UnitRecord::read`), and so does `okp unit-tests --rejudge`.
//!
//! Schema 1. A unit.json without a `schema` field is refused (there never was
//! one without it); any other number is refused naming the file and the number.
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

/// The three configurations, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Config {
    /// The release's own jars.
    Upstream,
    /// Patched jars; no observer file, no `KAFKA_OBSERVER_BROKER_IDS`.
    Patched,
    /// Patched jars with `KAFKA_OBSERVER_BROKER_IDS` set to the family's observers.
    Observers,
}

impl Config {
    pub const ALL: [Config; 3] = [Config::Upstream, Config::Patched, Config::Observers];

    pub fn word(self) -> &'static str {
        match self {
            Config::Upstream => "upstream",
            Config::Patched => "patched",
            Config::Observers => "observers",
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
    /// outcome is replaced by the pass before judging; each is listed, never hidden).
    #[serde(default)]
    pub flaky: Vec<Flaky>,
    /// Wall time per configuration and `total`.
    pub seconds: BTreeMap<String, f64>,
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

/// One test class over the three configurations (`None`: the release has no such class).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClassRow {
    pub class: String,
    pub runs: Option<BTreeMap<Config, Counts>>,
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

/// A test that failed in `config` and passed on a re-run of its method there (`retry`: which one).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flaky {
    pub test: String,
    pub config: Config,
    pub first: TestOutcome,
    pub retry: u32,
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
            seconds: BTreeMap::new(),
        }
    }

    #[test]
    fn writes_and_reads_back() {
        assert_eq!(crate::schema::testing::round_trip(&sample(), UnitRecord::write, UnitRecord::read), sample());
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
