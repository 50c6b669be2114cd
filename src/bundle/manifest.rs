//! MANIFEST.json, the bundle's versioned description of itself.
//!
//! The schema is strict (`deny_unknown_fields`, `schema: "okp-bundle/1"`): a
//! manifest okp cannot fully understand fails verification instead of being
//! half-read. A change of meaning gets a new schema string. `validate` checks
//! what serde cannot: the typed values, hashes, paths, and that the parts agree.
//!
//! Not here: the build record a bundle is made from (`build::record`), laying
//! the files out (`layout`), checking a bundle's bytes (`verify`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::archive;
use super::target::{NativeLib, Target};
use crate::model::{Layer, Mode};
use crate::version::KafkaVersion;

pub const SCHEMA: &str = "okp-bundle/1";
pub const FILE_NAME: &str = "MANIFEST.json";

/// The words every bundle carries about what it is (the Apache trademark policy:
/// a modified build is never called "Apache Kafka").
pub const PRODUCT: &str = "okp observer build of Apache Kafka: a modified build, not an Apache Kafka release";

/// What a bundle is: the triple its name, trusted comment and manifest all state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub release: KafkaVersion,
    pub mode: Mode,
    pub target: Target,
}

impl Identity {
    /// `okp-observer-<release>-<mode>-<target>`: the top directory and file stem.
    pub fn name(&self) -> String {
        format!("okp-observer-{}-{}-{}", self.release, self.mode, self.target)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub schema: String,
    pub name: String,
    pub product: String,
    pub okp_version: String,
    pub release: String,
    pub mode: String,
    pub target: String,
    pub family: String,
    pub patch_set_hash: String,
    /// The layers of the patch set the jars carry (`core`, `metrics`); absent in bundles made before layers existed (core).
    #[serde(default = "crate::model::anchors::core_only", skip_serializing_if = "is_core_only")]
    pub layers: Vec<Layer>,
    /// True when nothing in the bundle is native code (the jars are JVM bytecode).
    pub architecture_independent: bool,
    /// Native libraries found (each checked to be an ELF object for `target`).
    pub native_libraries: Vec<NativeLib>,
    pub upstream: Upstream,
    pub build: Build,
    /// The build's provenance proofs as okp-build.json records them (`build::proof::Provenance`,
    /// with its own schema): where the sources came from, the sha256 of every file compiled,
    /// the compilers, source ≡ release, and the patch delta with `changed_members` per class.
    /// Absent in bundles made before okp recorded it (they still verify).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Box<crate::build::proof::Provenance>>,
    pub jars: Vec<Jar>,
    /// Every file of the bundle except this manifest, by path below the top directory.
    pub files: BTreeMap<String, FileInfo>,
}

/// The identity of the upstream sources the build read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    pub project: String,
    /// Source module -> its Maven Central sources jar.
    pub sources: BTreeMap<String, Artifact>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub coordinate: String,
    pub sha256: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    pub backend: String,
    pub compilers: BTreeMap<String, String>,
    /// Repository paths recompiled: our new files and the upstream files edited.
    pub recompiled_sources: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jar {
    pub path: String,
    pub module: String,
    /// The Maven Central jar this one is a patched copy of.
    pub upstream: Artifact,
    pub sha256: String,
    pub replaced: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileInfo {
    pub sha256: String,
    pub size: u64,
    /// Permission bits in octal: "0644" or "0755".
    pub mode: String,
}

pub fn mode_string(mode: u32) -> String {
    format!("{mode:04o}")
}

pub use crate::hash::is_sha256;

fn is_core_only(l: &[Layer]) -> bool {
    l == [Layer::Core]
}

impl Manifest {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Parses and validates. Errors are sentences, one per problem. The schema is read
    /// first: a manifest of another okp is refused for its schema, not for a field this
    /// okp does not know.
    pub fn parse(bytes: &[u8]) -> Result<(Manifest, Identity), Vec<String>> {
        #[derive(Deserialize)]
        struct Head {
            schema: Option<serde_json::Value>,
        }
        if let Ok(Head { schema }) = serde_json::from_slice::<Head>(bytes) {
            if schema.as_ref().and_then(|s| s.as_str()) != Some(SCHEMA) {
                let found = schema.map(|s| s.to_string()).unwrap_or_else(|| "(none)".into());
                return Err(vec![format!(
                    "{FILE_NAME}: schema {found} is not {SCHEMA}, the one this okp reads (a bundle from another okp?)"
                )]);
            }
        }
        if let Some(k) = crate::schema::duplicate_key(bytes) {
            return Err(vec![format!(
                "{FILE_NAME}: the key {k:?} appears twice in one object (refused: it could mean two things)"
            )]);
        }
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| vec![format!("{FILE_NAME}: {e}")])?;
        let id = m.validate()?;
        Ok((m, id))
    }

    /// The typed identity, or every way the manifest is inconsistent.
    pub fn validate(&self) -> Result<Identity, Vec<String>> {
        let mut p = Vec::new();
        if self.schema != SCHEMA {
            p.push(format!("schema `{}` is not {SCHEMA} (a bundle from a newer okp?)", self.schema));
        }
        if self.product != PRODUCT {
            p.push(format!("product must read `{PRODUCT}`"));
        }
        let release = self.release.parse::<KafkaVersion>().map_err(|e| p.push(format!("release: {e}"))).ok();
        let mode = self.mode.parse::<Mode>().map_err(|e| p.push(format!("mode: {e}"))).ok();
        let target = self.target.parse::<Target>().map_err(|e| p.push(format!("target: {e}"))).ok();
        if target.is_some_and(|t| t.as_str() != self.target) {
            p.push(format!("target `{}` is not spelt canonically", self.target));
        }
        if !is_sha256(&self.patch_set_hash) {
            p.push("patch_set_hash is not a sha256".into());
        }
        if !self.layers.contains(&Layer::Core) {
            p.push(format!("layers {:?}: must hold core", self.layers));
        }
        if self.architecture_independent != self.native_libraries.is_empty() {
            p.push("architecture_independent contradicts native_libraries".into());
        }
        for (path, f) in &self.files {
            if let Err(e) = archive::check_path(&format!("top/{path}")) {
                p.push(format!("files: {e}"));
            }
            if path == FILE_NAME {
                p.push(format!("files: lists {FILE_NAME} itself"));
            }
            if !is_sha256(&f.sha256) {
                p.push(format!("files: {path}: sha256 is not a sha256"));
            }
            if f.mode != mode_string(archive::MODE_FILE) && f.mode != mode_string(archive::MODE_EXEC) {
                p.push(format!("files: {path}: mode {} is neither 0644 nor 0755", f.mode));
            }
        }
        for j in &self.jars {
            match self.files.get(&j.path) {
                Some(f) if f.sha256 == j.sha256 => {}
                _ => p.push(format!("jars: {} is not in files with sha256 {}", j.path, j.sha256)),
            }
            if !is_sha256(&j.upstream.sha256) {
                p.push(format!("jars: {}: upstream sha256 is not a sha256", j.path));
            }
        }
        if self.jars.is_empty() {
            p.push("jars: none".into());
        }
        if self.provenance.as_ref().is_some_and(|p| !p.passed()) {
            p.push("provenance: the build's proofs did not pass (a bundle okp would not have made)".into());
        }
        for (module, a) in &self.upstream.sources {
            if !is_sha256(&a.sha256) {
                p.push(format!("upstream.sources.{module}: sha256 is not a sha256"));
            }
        }
        for lib in &self.native_libraries {
            if target.is_some_and(|t| t.elf_machine() != lib.elf_machine) {
                p.push(format!(
                    "native_libraries: {} is for ELF machine {}, not {}",
                    lib.path, lib.elf_machine, self.target
                ));
            }
        }
        match (release, mode, target) {
            (Some(release), Some(mode), Some(target)) if p.is_empty() => {
                let id = Identity { release, mode, target };
                if self.name != id.name() {
                    return Err(vec![format!(
                        "name `{}` does not match release, mode and target ({})",
                        self.name,
                        id.name()
                    )]);
                }
                Ok(id)
            }
            _ => Err(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let h = "a".repeat(64);
        let mut files = BTreeMap::new();
        files.insert(
            "libs/kafka_2.13-3.9.2.jar".to_string(),
            FileInfo { sha256: h.clone(), size: 3, mode: "0644".into() },
        );
        Manifest {
            schema: SCHEMA.into(),
            name: "okp-observer-3.9.2-kraft-linux-x86_64".into(),
            product: PRODUCT.into(),
            okp_version: "0.1.0".into(),
            release: "3.9.2".into(),
            mode: "kraft".into(),
            target: "linux-x86_64".into(),
            family: "f3.7".into(),
            patch_set_hash: h.clone(),
            layers: crate::model::anchors::core_only(),
            architecture_independent: true,
            native_libraries: vec![],
            upstream: Upstream { project: "Apache Kafka".into(), sources: BTreeMap::new() },
            build: Build { backend: "splice".into(), compilers: BTreeMap::new(), recompiled_sources: vec![] },
            provenance: None,
            jars: vec![Jar {
                path: "libs/kafka_2.13-3.9.2.jar".into(),
                module: "core".into(),
                upstream: Artifact { coordinate: "org.apache.kafka:kafka_2.13:3.9.2".into(), sha256: h.clone() },
                sha256: h,
                replaced: vec![],
                added: vec![],
                removed: vec![],
            }],
            files,
        }
    }

    #[test]
    fn a_consistent_manifest_round_trips() {
        let m = sample();
        let (back, id) = Manifest::parse(m.to_json().as_bytes()).unwrap();
        assert_eq!(back, m);
        assert_eq!(id.name(), m.name);
    }

    #[test]
    fn inconsistencies_are_named() {
        type Alter = fn(&mut Manifest);
        let cases: Vec<(Alter, &str)> = vec![
            (|m| m.schema = "okp-bundle/2".into(), "schema"),
            (|m| m.release = "3.9".into(), "release"),
            (|m| m.target = "amd64".into(), "canonically"),
            (|m| m.name = "okp-observer-3.9.2-zk-linux-x86_64".into(), "name"),
            (|m| m.architecture_independent = false, "architecture_independent"),
            (|m| m.jars[0].sha256 = "b".repeat(64), "jars"),
            (|m| m.patch_set_hash = "xyz".into(), "patch_set_hash"),
            (|m| m.product = "Apache Kafka".into(), "product"),
            (
                |m| {
                    m.files.insert("../evil".into(), FileInfo { sha256: "a".repeat(64), size: 0, mode: "0644".into() });
                },
                "climbs",
            ),
            (
                |m| {
                    m.files.insert("x".into(), FileInfo { sha256: "a".repeat(64), size: 0, mode: "4755".into() });
                },
                "mode",
            ),
        ];
        for (alter, word) in cases {
            let mut m = sample();
            alter(&mut m);
            let e = m.validate().unwrap_err();
            assert!(e.iter().any(|x| x.contains(word)), "expected `{word}` in {e:?}");
        }
        let unknown = sample().to_json().replacen("{", "{\n  \"extra\": 1,", 1);
        assert!(Manifest::parse(unknown.as_bytes()).unwrap_err()[0].contains("unknown field"));
    }

    #[test]
    fn serialized_form() {
        insta::assert_snapshot!(sample().to_json());
    }

    /// A manifest of another schema is refused for its schema, even when it also carries
    /// fields this okp does not know.
    #[test]
    fn an_unknown_schema_is_refused_naming_the_file_and_the_schema() {
        let newer = sample().to_json().replacen(SCHEMA, "okp-bundle/2", 1).replacen("{", "{\n  \"extra\": 1,", 1);
        let e = Manifest::parse(newer.as_bytes()).unwrap_err();
        assert_eq!(
            e,
            ["MANIFEST.json: schema \"okp-bundle/2\" is not okp-bundle/1, the one this okp reads (a bundle from another okp?)"]
        );
        let none = sample().to_json().replacen(&format!("\"schema\": \"{SCHEMA}\","), "", 1);
        assert!(Manifest::parse(none.as_bytes()).unwrap_err()[0].contains("schema (none) is not okp-bundle/1"));
    }
}
