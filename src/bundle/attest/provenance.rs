//! `provenance.intoto.jsonl`: an in-toto Statement v1 whose subjects are the bundle's jars and
//! whose predicate is SLSA Provenance v1 (<https://slsa.dev/spec/v1.0/provenance>), in a DSSE
//! envelope signed with the bundle's key, on one line (the JSON Lines form `cosign` and
//! `slsa-verifier` read).
//!
//! What the predicate says, and why:
//! - `buildType` `https://okp.dev/buildtypes/splice/v1`: okp's splice backend (the patched
//!   units compiled against the release's classpath and swapped into copies of the release's
//!   jars; docs/building.md). The URI names the backend and this layout of the parameters.
//! - `externalParameters`: what the user chose, each checked against MANIFEST.json by
//!   `okp verify-bundle`: release, mode, layers, patch-set hash, target.
//! - `internalParameters`: what okp chose: the backend, the family, the compilers with their
//!   options as okp-build.json records them.
//! - `resolvedDependencies`: the release's jars and sources jars (purl + sha256), every upstream
//!   file compiled (path + sha256, and the tree it was read from: a git revision, a directory or
//!   the sources jars, as the build recorded it), the Scala compiler (purl + sha256 of its jar) and
//!   javac (its version; a JDK has no digest okp recorded).
//! - `runDetails`: the builder, okp and its version. No times and no invocation id: the bundle
//!   is byte-reproducible, and the signature is deterministic Ed25519, so the envelope is too.
//!
//! Not here: the envelope (`dsse`), the keys (`sign`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{maven_purl, Problems};
use crate::bundle::layout::Inputs;
use crate::bundle::manifest::Manifest;
use crate::model::Layer;

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://slsa.dev/provenance/v1";
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const BUILDER_ID: &str = "https://okp.dev/builder/okp";

/// The build type of a backend: `https://okp.dev/buildtypes/<backend>/v1`.
pub fn build_type(backend: &str) -> String {
    format!("https://okp.dev/buildtypes/{backend}/v1")
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub type_: String,
    pub subject: Vec<ResourceDescriptor>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Predicate,
}

/// in-toto's ResourceDescriptor: at least one of `uri`, `digest`, `content` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceDescriptor {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub digest: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Predicate {
    pub build_definition: BuildDefinition,
    pub run_details: RunDetails,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildDefinition {
    pub build_type: String,
    pub external_parameters: ExternalParameters,
    pub internal_parameters: InternalParameters,
    pub resolved_dependencies: Vec<ResourceDescriptor>,
}

/// What the user asked for; the names are MANIFEST.json's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExternalParameters {
    pub release: String,
    pub mode: String,
    pub layers: Vec<Layer>,
    pub patch_set_hash: String,
    pub target: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InternalParameters {
    pub backend: String,
    pub family: String,
    /// okp-build.json's `compilers`: each compiler with the options it ran with.
    pub compilers: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunDetails {
    pub builder: Builder,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Builder {
    pub id: String,
    pub version: BTreeMap<String, String>,
}

fn sha256_digest(hex: &str) -> BTreeMap<String, String> {
    [("sha256".to_string(), hex.to_string())].into()
}

/// The statement about the jars of `i`.
pub fn statement(i: &Inputs) -> Statement {
    let subject = i
        .jars
        .iter()
        .map(|j| ResourceDescriptor {
            name: Some(format!("libs/{}", j.file_name)),
            digest: sha256_digest(&crate::hash::sha256(&j.bytes)),
            ..Default::default()
        })
        .collect();
    let mut deps: Vec<ResourceDescriptor> = Vec::new();
    let artifact = |a: &crate::bundle::manifest::Artifact| ResourceDescriptor {
        name: Some(a.coordinate.clone()),
        uri: maven_purl(&a.coordinate),
        digest: sha256_digest(&a.sha256),
        ..Default::default()
    };
    deps.extend(i.jars.iter().map(|j| artifact(&j.upstream)));
    deps.extend(i.sources.values().map(artifact));
    if let Some(p) = &i.provenance {
        for s in &p.sources {
            // Our own files (no upstream digest) are the patch set, named by its hash.
            if let Some(up) = &s.upstream_sha256 {
                deps.push(ResourceDescriptor {
                    name: Some(s.path.clone()),
                    digest: sha256_digest(up),
                    annotations: [("tree".to_string(), p.tree.clone())].into(),
                    ..Default::default()
                });
            }
        }
        // `scala-compiler`: "group:artifact:version sha256 HEX"; `javac`: "javac 17.0.15".
        for (name, value) in &p.compilers {
            let words: Vec<&str> = value.split(' ').collect();
            match (name.as_str(), words.as_slice()) {
                ("scala-compiler", [coordinate, "sha256", hex]) => deps.push(ResourceDescriptor {
                    name: Some(coordinate.to_string()),
                    uri: maven_purl(coordinate),
                    digest: sha256_digest(hex),
                    ..Default::default()
                }),
                ("javac", ["javac", version]) => deps.push(ResourceDescriptor {
                    name: Some("javac".into()),
                    uri: Some(format!("pkg:generic/javac@{version}")),
                    annotations: [("recorded".to_string(), value.clone())].into(),
                    ..Default::default()
                }),
                _ => {}
            }
        }
    }
    Statement {
        type_: STATEMENT_TYPE.into(),
        subject,
        predicate_type: PREDICATE_TYPE.into(),
        predicate: Predicate {
            build_definition: BuildDefinition {
                build_type: build_type(&i.build.backend),
                external_parameters: ExternalParameters {
                    release: i.id.release.to_string(),
                    mode: i.id.mode.to_string(),
                    layers: i.layers.clone(),
                    patch_set_hash: i.patch_set_hash.clone(),
                    target: i.id.target.to_string(),
                },
                internal_parameters: InternalParameters {
                    backend: i.build.backend.clone(),
                    family: i.family.clone(),
                    compilers: i.build.compilers.clone(),
                },
                resolved_dependencies: deps,
            },
            run_details: RunDetails {
                builder: Builder {
                    id: BUILDER_ID.into(),
                    version: [("okp".to_string(), env!("CARGO_PKG_VERSION").to_string())].into(),
                },
            },
        },
    }
}

/// Checks a statement against the manifest and the jars' own bytes (`jars`: path → sha256 of
/// the bytes in the archive). Each problem names the field.
pub fn check(s: &Statement, m: &Manifest, jars: &BTreeMap<String, String>, p: &mut Problems) {
    p.same("_type", &s.type_, STATEMENT_TYPE);
    p.same("predicateType", &s.predicate_type, PREDICATE_TYPE);
    let subjects: BTreeMap<String, String> = s
        .subject
        .iter()
        .map(|d| (d.name.clone().unwrap_or_default(), d.digest.get("sha256").cloned().unwrap_or_default()))
        .collect();
    if subjects.len() != s.subject.len() {
        p.push("subject: a jar is named twice".into());
    }
    for (path, sha) in jars {
        match subjects.get(path) {
            None => p.push(format!("subject: no {path}, which the bundle ships")),
            Some(h) if h != sha => p.push(format!("subject {path}: sha256 {h}, the jar in the bundle is {sha}")),
            Some(_) => {}
        }
    }
    for path in subjects.keys().filter(|k| !jars.contains_key(*k)) {
        p.push(format!("subject: {path} is not a jar the bundle ships"));
    }
    let b = &s.predicate.build_definition;
    p.same("predicate.buildDefinition.buildType", &b.build_type, &build_type(&m.build.backend));
    let e = &b.external_parameters;
    let x = "predicate.buildDefinition.externalParameters";
    p.same(&format!("{x}.release"), &e.release, &m.release);
    p.same(&format!("{x}.mode"), &e.mode, &m.mode);
    p.same(&format!("{x}.target"), &e.target, &m.target);
    p.same(&format!("{x}.patch_set_hash"), &e.patch_set_hash, &m.patch_set_hash);
    let names = |l: &[Layer]| l.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(",");
    p.same(&format!("{x}.layers"), &names(&e.layers), &names(&m.layers));
    for j in &m.jars {
        let found = b
            .resolved_dependencies
            .iter()
            .any(|d| d.uri == maven_purl(&j.upstream.coordinate) && d.digest.get("sha256") == Some(&j.upstream.sha256));
        if !found {
            p.push(format!(
                "predicate.buildDefinition.resolvedDependencies: no {} with sha256 {} (the release jar of {})",
                j.upstream.coordinate, j.upstream.sha256, j.path
            ));
        }
    }
    let builder = &s.predicate.run_details.builder;
    p.same("predicate.runDetails.builder.id", &builder.id, BUILDER_ID);
    p.same(
        "predicate.runDetails.builder.version.okp",
        builder.version.get("okp").map(String::as_str).unwrap_or("(none)"),
        &m.okp_version,
    );
}
