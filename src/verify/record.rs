//! run.json: every number of one `okp verify` run, in the run's evidence
//! directory. `verify::run` makes it and prints it for `--format json`,
//! `verify::publish::stage` writes it (`RunRecord::write`); the VERIFY.md matrix
//! reads every one of an evidence directory (`RunRecord::read`), nothing else.
//!
//! Schema 1. A run.json without a `schema` field (every run written before the
//! field existed, such as those under evidence/) was written by this same
//! structure and is read as schema 1. Any other number is refused; the matrix
//! leaves such a run out and says so on the page and on stderr.
//!
//! Not here: running the suite and deciding the verdict (`verify::run`), what a
//! scenario records (`scenarios::ScenarioResult`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::cluster::Timers;
use crate::error::Result;
use crate::model::{Layer, Mode};
use crate::scenarios::{Flavor, ScenarioResult};
use crate::schema::{Absent, Schema};
use crate::version::KafkaVersion;

pub const FILE_NAME: &str = "run.json";

/// The schema this okp writes and reads.
pub const SCHEMA: Schema = Schema {
    current: 1,
    absent: Absent::ReadAsCurrent,
    remedy: "it was written by another okp; run `okp verify` again to replace it",
};

/// run.json, schema 1.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// 1 (runs written before the field existed are read as 1: `SCHEMA`).
    pub schema: u32,
    pub okp_version: String,
    /// When the run ended, `YYYY-MM-DDTHH:MM:SSZ`.
    pub written_utc: String,
    pub release: KafkaVersion,
    pub mode: Mode,
    pub family: String,
    pub flavor: Flavor,
    pub verdict: RunVerdict,
    /// The first line of `java -version`.
    pub java: String,
    /// The patch set of the jars under test (None for upstream jars).
    pub patch_set_hash: Option<String>,
    /// The layers of the jars under test (None for upstream jars).
    pub layers: Option<Vec<Layer>>,
    /// The patched jars swapped into the runtime classpath.
    pub jars: Vec<SwappedJar>,
    pub classpath_jars: usize,
    /// Artifacts added to the release's POM classpath (a logging binding).
    pub logging_added: Vec<String>,
    /// Kafka Connect artifacts left out of the runtime classpath because Maven Central as
    /// reached lacked them (none, as in every run before this field, when absent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classpath_left_out: Vec<String>,
    /// Tool -> `class (jar)` it ran as.
    pub tool_classes: BTreeMap<String, String>,
    pub timers: Timers,
    /// The KRaft cluster id (None in ZooKeeper mode).
    pub cluster_id: Option<String>,
    pub rss_mib_after_start: BTreeMap<String, u64>,
    pub rss_mib_at_end: BTreeMap<String, u64>,
    /// Wall time per stage (`jars`, `classpath`, `cluster_up`, `scenarios`, `teardown`, `total`).
    pub seconds: BTreeMap<String, f64>,
    /// The lanes of a run of more than one (each a cluster of its own, run at the same time);
    /// empty, and absent from the file, for a one-lane run (every run written before lanes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<Lane>,
    pub scenarios: Vec<ScenarioResult>,
    /// An UPGRADE run (`--upgrade-to`): the releases the cluster was rolled to, in turn, and their
    /// jars; absent from every other run.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "one_or_many")]
    pub upgrade_to: Vec<UpgradeTo>,
}

/// `upgrade_to` as a list, or as the one object the first UPGRADE runs wrote (2026-12-05).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<UpgradeTo>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Either {
        Many(Vec<UpgradeTo>),
        One(UpgradeTo),
    }
    Ok(match <Option<Either> as serde::Deserialize>::deserialize(d)? {
        None => Vec::new(),
        Some(Either::Many(v)) => v,
        Some(Either::One(u)) => vec![u],
    })
}

/// A release an UPGRADE run rolled its cluster to.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UpgradeTo {
    pub release: KafkaVersion,
    pub family: String,
    pub patch_set_hash: String,
    pub jars: Vec<SwappedJar>,
}

/// One lane of a run: its scenarios (suite order), its cluster's ports and id, and its wall time.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Lane {
    pub lane: u8,
    pub scenarios: Vec<String>,
    /// The first port of the lane's block.
    pub base_port: u16,
    /// The lane's KRaft cluster id (None in ZooKeeper mode).
    pub cluster_id: Option<String>,
    /// Wall time of the lane's scenarios.
    pub seconds: f64,
}

/// A patched jar in place of its upstream twin, by file name.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SwappedJar {
    pub upstream: String,
    pub patched: String,
    pub sha256: String,
}

/// A run's verdict, written as its sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunVerdict {
    /// Patched jars: every scenario passed.
    Pass,
    /// Patched jars: some scenario failed.
    Fail,
    /// Upstream jars (negative control): every gate scenario failed, as it must.
    ControlHeld,
    /// Upstream jars: a gate scenario passed, so it does not tell patched from upstream.
    ControlFailed,
    /// Upstream jars and no gate scenario (an opt-in scenario run on the release's own jars, e.g.
    /// CREATE beside its patched run): every scenario passed.
    UpstreamPass,
    /// Upstream jars and no gate scenario: a scenario failed.
    UpstreamFail,
}

impl RunVerdict {
    const ALL: [RunVerdict; 6] = [
        RunVerdict::Pass,
        RunVerdict::Fail,
        RunVerdict::ControlHeld,
        RunVerdict::ControlFailed,
        RunVerdict::UpstreamPass,
        RunVerdict::UpstreamFail,
    ];

    pub fn word(self) -> &'static str {
        match self {
            RunVerdict::Pass => "pass",
            RunVerdict::Fail => "fail",
            RunVerdict::ControlHeld => "negative control: gates failed as expected",
            RunVerdict::ControlFailed => "negative control FAILED: a gate passed on upstream jars",
            RunVerdict::UpstreamPass => "upstream jars, no gate scenario: every scenario passed",
            RunVerdict::UpstreamFail => "upstream jars, no gate scenario: a scenario FAILED",
        }
    }

    pub fn ok(self) -> bool {
        matches!(self, RunVerdict::Pass | RunVerdict::ControlHeld | RunVerdict::UpstreamPass)
    }
}

impl serde::Serialize for RunVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.word())
    }
}

impl<'de> serde::Deserialize<'de> for RunVerdict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let w = std::borrow::Cow::<str>::deserialize(d)?;
        RunVerdict::ALL
            .into_iter()
            .find(|v| v.word() == w)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown verdict `{w}`")))
    }
}

impl RunRecord {
    /// The run.json of the run evidence directory `dir`.
    pub fn read(dir: &Path) -> Result<RunRecord> {
        SCHEMA.read(&dir.join(FILE_NAME), "an okp verify run record", "is it a run directory of `okp verify`?")
    }

    /// Writes run.json into the run evidence directory `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        crate::schema::write(&dir.join(FILE_NAME), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::Check;
    use crate::verify::{record, tests::evidence};

    fn sample() -> RunRecord {
        let outcome = ScenarioResult {
            id: "INIT".into(),
            title: "observer absent from the initial ISR".into(),
            gate: true,
            pass: true,
            seconds: 8.79,
            checks: vec![Check { name: "end offset of obs is 1000".into(), pass: true, detail: "Some(1000)".into() }],
            facts: [("obs_batches".to_string(), serde_json::json!(6))].into(),
            error: None,
            evidence: "INIT.txt".into(),
            lane: None,
        };
        RunRecord {
            schema: SCHEMA.current,
            okp_version: "0.1.0".into(),
            written_utc: "2026-11-30T03:25:55Z".into(),
            release: KafkaVersion::new(3, 9, 2),
            mode: Mode::Kraft,
            family: "f3.7".into(),
            flavor: Flavor::Patched,
            verdict: RunVerdict::Pass,
            java: "openjdk version \"17.0.15\" 2025-04-15".into(),
            patch_set_hash: Some("a".repeat(64)),
            layers: Some(vec![Layer::Core]),
            jars: vec![SwappedJar {
                upstream: "kafka_2.13-3.9.2.jar".into(),
                patched: "kafka_2.13-3.9.2.jar".into(),
                sha256: "b".repeat(64),
            }],
            classpath_jars: 72,
            logging_added: vec![],
            classpath_left_out: vec![],
            tool_classes: [("topics".to_string(), "kafka.admin.TopicCommand (kafka_2.13-3.9.2.jar)".to_string())]
                .into(),
            timers: Timers { lag_ms: 3000, session_ms: 4000 },
            cluster_id: Some("MkU3OEVBNTcwNTJENDM2Qk".into()),
            rss_mib_after_start: [("broker-1".to_string(), 125)].into(),
            rss_mib_at_end: [("broker-1".to_string(), 134)].into(),
            seconds: [("total".to_string(), 278.62)].into(),
            lanes: Vec::new(),
            upgrade_to: Vec::new(),
            scenarios: vec![outcome],
        }
    }

    #[test]
    fn serialized_form() {
        insta::assert_snapshot!(crate::schema::to_json(&sample()));
    }

    #[test]
    fn writes_and_reads_back() {
        assert_eq!(crate::schema::testing::round_trip(&sample(), RunRecord::write, RunRecord::read), sample());
    }

    #[test]
    fn an_unknown_schema_is_refused_naming_the_file_and_the_schema() {
        let e = crate::schema::testing::assert_refused(&sample(), FILE_NAME, 2, RunRecord::read);
        assert!(e.contains("okp verify"), "{e}");
    }

    /// Every run.json under evidence/ (the older ones written before the `schema` field) reads as schema 1,
    /// and the typed record keeps every value of the file: nothing is dropped on the way.
    #[test]
    fn the_evidence_runs_read_as_schema_1_and_lose_nothing() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence");
        let mut dirs = vec![root.clone(), root.join("met-cluster")];
        let mut seen = 0;
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let run = e.path();
                if !run.join(FILE_NAME).is_file() {
                    continue;
                }
                let rec = RunRecord::read(&run).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(rec.schema, 1);
                let mut file: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(run.join(FILE_NAME)).unwrap()).unwrap();
                // Runs written before the field existed read as schema 1; newer ones carry it.
                match file.get("schema") {
                    None => file["schema"] = 1.into(),
                    Some(n) => assert_eq!(n, 1, "{}", run.display()),
                }
                assert_eq!(serde_json::to_value(&rec).unwrap(), file, "{}", run.display());
                seen += 1;
            }
        }
        assert!(seen >= 40, "only {seen} evidence runs found");
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
}
