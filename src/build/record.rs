//! okp-build.json: what a build produced and from what, beside the jars in a
//! build's output directory. The splice backend writes it (`BuildRecord::write`);
//! `okp bundle`, `okp verify --jars`, verify's jar cache and the cluster runtime
//! read it (`BuildRecord::read`), nothing else.
//!
//! Schema 1. A record without a `schema` field (written before the field
//! existed, by this same struct) is read as schema 1: its fields mean what
//! they mean in schema 1, and refusing it would only make users rebuild jars
//! that are fine. Any other number is refused ("rebuild with okp build"); in
//! verify's cache under ~/.m2/repository/okp-verify-jars/ a refused record is
//! a miss and the jars are built anew.
//!
//! The `provenance` inside carries its own schema (`proof::Provenance`): a
//! proof of a schema this okp does not know does not pass, so `okp verify
//! --jars` refuses it and verify's cache builds anew.
//!
//! Not here: producing the jars (`splice`), the proofs (`proof`), checking the
//! record against the jars for a bundle (`bundle::make`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::jar::SpliceReport;
use super::proof::Provenance;
use super::recheck::{self, ClaimedJar, Claims, Rechecked};
use crate::error::{Error, Result};
use crate::hash::sha256;
use crate::model::{Layer, Mode};
use crate::schema::{Absent, Schema};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

pub const FILE_NAME: &str = "okp-build.json";

/// The largest patched jar okp reads from a build directory (kafka_2.13 is about 7 MB).
pub const MAX_JAR: u64 = 256 << 20;

/// One file name component made of the characters a jar name needs, so it can stand unquoted in
/// the install script and in a path, and never leaves the directory it is read from.
pub fn plain_file_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('.') && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The schema this okp writes and reads.
pub const SCHEMA: Schema = Schema {
    current: 1,
    absent: Absent::ReadAsCurrent,
    remedy: "it was written by another okp; rebuild the jars with `okp build` (or use the okp that built them)",
};

/// okp-build.json, schema 1.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BuildRecord {
    /// 1 (records written before the field existed are read as 1: `SCHEMA`).
    pub schema: u32,
    pub okp_version: String,
    pub release: KafkaVersion,
    pub mode: Mode,
    pub family: String,
    pub patch_set_hash: String,
    /// The layers built in (`core`, `metrics`); records written before layers existed hold core only.
    #[serde(default = "crate::model::anchors::core_only")]
    pub layers: Vec<Layer>,
    pub backend: String,
    pub compilers: BTreeMap<String, String>,
    /// Repository paths recompiled (our new files and the edited upstream files).
    pub sources: Vec<String>,
    pub jars: Vec<JarResult>,
    #[serde(default)]
    pub seconds: BTreeMap<String, f64>,
    /// Where the sources came from and the proofs that the jars are the release plus our edits
    /// (with its own `schema`: `proof::Provenance::passed` requires the one this okp writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Box<Provenance>>,
    /// Where the upstream sources came from (the tree's `describe()`); empty in records written before.
    #[serde(default)]
    pub source: String,
}

/// One patched jar of a build.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JarResult {
    pub module: String,
    /// The Maven coordinate (`group:artifact:version`) of the upstream jar this one is a copy of.
    pub upstream: String,
    pub upstream_sha256: String,
    pub path: PathBuf,
    pub sha256: String,
    pub splice: SpliceReport,
}

impl BuildRecord {
    /// Puts each patched jar in place of its upstream twin (found by Maven's file name,
    /// `artifact-version.jar`) in `classpath`; `what` names the classpath in errors. Returns
    /// (upstream jar, patched jar, sha256 of the patched jar) per jar.
    pub fn swap_into(&self, classpath: &mut [PathBuf], what: &str) -> Result<Vec<(PathBuf, PathBuf, String)>> {
        let mut swapped = Vec::new();
        for jar in &self.jars {
            let file = match jar.upstream.split(':').collect::<Vec<_>>().as_slice() {
                [_, a, v] => format!("{a}-{v}.jar"),
                _ => jar.upstream.clone(),
            };
            let slot = classpath.iter().position(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == file));
            let Some(slot) = slot else {
                return Err(crate::error::Error::Source(format!(
                    "patched {} has no upstream twin {} on {what}",
                    jar.path.display(),
                    jar.upstream
                )));
            };
            if !jar.path.is_file() {
                return Err(crate::error::Error::Usage(format!(
                    "{}: named in okp-build.json but missing",
                    jar.path.display()
                )));
            }
            swapped.push((classpath[slot].clone(), jar.path.clone(), jar.sha256.clone()));
            classpath[slot] = jar.path.clone();
        }
        Ok(swapped)
    }

    /// Whether the jars carry a passing provenance proof (`proof::Provenance::passed`): what
    /// `okp verify --jars`, verify's cache and `okp bundle` require.
    pub fn proven(&self) -> bool {
        self.provenance.as_ref().is_some_and(|p| p.passed())
    }

    /// Each jar of the record, read from `dir` by its plain file name (never the record's `path`,
    /// which could name any file), through the guarded reader, and checked against the sha256
    /// the record holds.
    pub fn read_jars(&self, dir: &Path) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for j in &self.jars {
            let name = &j.splice.jar;
            if !plain_file_name(name) {
                return Err(Error::Tree {
                    path: dir.join(FILE_NAME),
                    msg: format!("jar `{}` is not a plain jar file name", crate::escape::one_line(name)),
                });
            }
            let path = dir.join(name);
            let bytes =
                crate::fsx::read::read_regular(&path, MAX_JAR).map_err(|e| e.into_error(&path, "patched jar"))?;
            let got = sha256(&bytes);
            if got != j.sha256 {
                return Err(Error::Check(format!(
                    "{}: sha256 {got}, but {FILE_NAME} records {}: the jar changed after the build",
                    path.display(),
                    crate::escape::one_line(&j.sha256)
                )));
            }
            out.push(bytes);
        }
        Ok(out)
    }

    /// Re-derives what the record says of the jars `bytes` (in the record's order, as `read_jars`
    /// gives them) from their bytes and okp's own data (`recheck`); `dir` names the record.
    pub fn recheck(
        &self,
        ws: &Workspace,
        dir: &Path,
        bytes: &[Vec<u8>],
        source: Option<&dyn crate::source::SourceTree>,
    ) -> Result<Rechecked> {
        let claims = Claims {
            what: dir.join(FILE_NAME).display().to_string(),
            release: self.release,
            mode: self.mode,
            layers: &self.layers,
            family: &self.family,
            patch_set_hash: &self.patch_set_hash,
            provenance: self.provenance.as_deref(),
            jars: self
                .jars
                .iter()
                .zip(bytes)
                .map(|(j, b)| ClaimedJar {
                    file_name: &j.splice.jar,
                    module: &j.module,
                    upstream: &j.upstream,
                    upstream_sha256: &j.upstream_sha256,
                    bytes: b,
                    replaced: &j.splice.replaced,
                    added: &j.splice.added,
                    removed: &j.splice.removed,
                })
                .collect(),
            ours_by_content: None,
        };
        recheck::recheck(ws, &claims, source)
    }

    /// Reads the jars beside the record and re-derives them (`read_jars`, `recheck`): what every
    /// consumer of a build directory calls before it uses the jars.
    pub fn read_and_recheck(
        &self,
        ws: &Workspace,
        dir: &Path,
        source: Option<&dyn crate::source::SourceTree>,
    ) -> Result<(Vec<Vec<u8>>, Rechecked)> {
        let bytes = self.read_jars(dir)?;
        let r = self.recheck(ws, dir, &bytes, source)?;
        Ok((bytes, r))
    }

    /// The record of the build output directory `dir`. Each jar's `path` is where its plain file
    /// name puts it in `dir`, whatever the file says (a record moved with its jars still reads,
    /// and one cannot point a consumer at a file elsewhere).
    pub fn read(dir: &Path) -> Result<BuildRecord> {
        let mut rec: BuildRecord = SCHEMA.read(
            &dir.join(FILE_NAME),
            "an okp build record",
            "is it a directory written by `okp build --version V --mode M --out DIR`?",
        )?;
        for j in rec.jars.iter_mut().filter(|j| plain_file_name(&j.splice.jar)) {
            j.path = dir.join(&j.splice.jar);
        }
        Ok(rec)
    }

    /// Writes the record into the build output directory `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        crate::schema::write(&dir.join(FILE_NAME), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BuildRecord {
        let h = |c: char| c.to_string().repeat(64);
        BuildRecord {
            schema: SCHEMA.current,
            okp_version: "0.1.0".into(),
            release: KafkaVersion::new(3, 9, 2),
            mode: Mode::Kraft,
            family: "f3.7".into(),
            patch_set_hash: h('a'),
            layers: vec![Layer::Core, Layer::Metrics],
            backend: "splice".into(),
            compilers: [("javac".to_string(), "javac 17.0.15 --release 11".to_string())].into(),
            sources: vec!["core/src/main/scala/kafka/cluster/Partition.scala".into()],
            jars: vec![JarResult {
                module: "core".into(),
                upstream: "org.apache.kafka:kafka_2.13:3.9.2".into(),
                upstream_sha256: h('b'),
                path: "/tmp/out/kafka_2.13-3.9.2.jar".into(),
                sha256: h('c'),
                splice: SpliceReport {
                    jar: "kafka_2.13-3.9.2.jar".into(),
                    replaced: vec!["kafka/cluster/Partition.class".into()],
                    added: vec!["kafka/observer/ObserverIds.class".into()],
                    removed: vec![],
                    unchanged: 4242,
                },
            }],
            seconds: [("prepare".to_string(), 1.25)].into(),
            provenance: Some(Box::new(Provenance { schema: Provenance::SCHEMA, ..Provenance::default() })),
            source: "Maven Central release 3.9.2 (sources jars)".into(),
        }
    }

    #[test]
    fn serialized_form() {
        insta::assert_snapshot!(crate::schema::to_json(&sample()));
    }

    #[test]
    fn writes_and_reads_back() {
        let d = tempfile::tempdir().unwrap();
        sample().write(d.path()).unwrap();
        let back = BuildRecord::read(d.path()).unwrap();
        // Each jar's path is where its file name puts it in the directory read, whatever the file said.
        let mut want = sample();
        want.jars[0].path = d.path().join("kafka_2.13-3.9.2.jar");
        assert_eq!(serde_json::to_value(back).unwrap(), serde_json::to_value(want).unwrap());
    }

    #[test]
    fn a_record_without_schema_reads_as_schema_1() {
        let d = tempfile::tempdir().unwrap();
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("schema");
        v.as_object_mut().unwrap().remove("layers");
        std::fs::write(d.path().join(FILE_NAME), v.to_string()).unwrap();
        let r = BuildRecord::read(d.path()).unwrap();
        assert_eq!((r.schema, r.layers), (1, vec![Layer::Core]));
    }

    #[test]
    fn an_unknown_schema_is_refused_naming_the_file_and_the_schema() {
        let e = crate::schema::testing::assert_refused(&sample(), FILE_NAME, 7, BuildRecord::read);
        assert!(e.contains("okp build"), "{e}");
    }

    #[test]
    fn release_and_mode_are_typed() {
        let d = tempfile::tempdir().unwrap();
        let text = crate::schema::to_json(&sample()).replacen("\"3.9.2\"", "\"3.9\"", 1);
        std::fs::write(d.path().join(FILE_NAME), text).unwrap();
        let e = BuildRecord::read(d.path()).unwrap_err().to_string();
        assert!(e.contains("not an okp build record of schema 1") && e.contains("not a Kafka release number"), "{e}");
    }
}
