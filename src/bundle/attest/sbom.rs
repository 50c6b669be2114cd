//! `sbom.cdx.json`: a CycloneDX 1.6 SBOM (<https://cyclonedx.org/docs/1.6/json/>) of the bundle,
//! for the component inventories supply-chain teams load.
//!
//! - `metadata.component`: the bundle (an application, `okp-observer-<V>-<mode>-<target>`);
//!   `metadata.tools`: okp and its version.
//! - `components`: the jars shipped, each a library of group `org.apache.kafka` at the
//!   release's version with the SHA-256 of the shipped bytes. Its purl is the release's
//!   (`pkg:maven/org.apache.kafka/<artifact>@<V>`, so the release's advisories still match it)
//!   with the qualifier `okp-patch-set=<hash>` saying it is not the Maven Central artifact.
//! - `pedigree.ancestors`: that Maven Central artifact (purl, SHA-256); `pedigree.patches`: one
//!   `unofficial` patch per hook whose edits are in the jar's module, with the hook's unified
//!   diff against the release's file and the hook as the `enhancement` it resolves, then one
//!   per new file of the patch set; `pedigree.notes` names the patch-set hash.
//! - `serialNumber`: a UUIDv8 (RFC 9562's name-based form over SHA-256) of the document itself,
//!   so the same bundle gives the same SBOM; `metadata.timestamp` only when SOURCE_DATE_EPOCH
//!   is set (it is that time).
//!
//! Not here: the diffs themselves (`edits`).

use serde::{Deserialize, Serialize};

use super::edits::{Edits, HookPatch};
use super::{maven_purl, Problems};
use crate::bundle::layout::Inputs;
use crate::bundle::manifest::Manifest;

pub const SPEC_VERSION: &str = "1.6";
const PLACEHOLDER_SERIAL: &str = "urn:uuid:00000000-0000-0000-0000-000000000000";
/// The purl qualifier that tells the shipped jar from the release's.
pub const QUALIFIER: &str = "okp-patch-set";
const LICENSE: &str = "Apache-2.0";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bom {
    pub bom_format: String,
    pub spec_version: String,
    pub serial_number: String,
    pub version: u32,
    pub metadata: Metadata,
    pub components: Vec<Component>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    pub tools: Tools,
    pub component: Component,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tools {
    pub components: Vec<Component>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Component {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(rename = "bom-ref", default, skip_serializing_if = "Option::is_none")]
    pub bom_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<Hash>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub licenses: Vec<LicenseChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pedigree: Option<Pedigree>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hash {
    pub alg: String,
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LicenseChoice {
    pub license: License,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct License {
    pub id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pedigree {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ancestors: Vec<Component>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Patch {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<Diff>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolves: Vec<Issue>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub text: Attachment,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub content_type: String,
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    #[serde(rename = "type")]
    pub type_: String,
    pub id: String,
    pub name: String,
    pub description: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    #[serde(rename = "ref")]
    pub ref_: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

fn sha256(hex: &str) -> Vec<Hash> {
    vec![Hash { alg: "SHA-256".into(), content: hex.into() }]
}

fn apache() -> Vec<LicenseChoice> {
    vec![LicenseChoice { license: License { id: LICENSE.into() } }]
}

/// The purl of a shipped jar: the release's, with the patch set as a qualifier.
pub fn shipped_purl(upstream_coordinate: &str, patch_set_hash: &str) -> Option<String> {
    maven_purl(upstream_coordinate).map(|p| format!("{p}?{QUALIFIER}={patch_set_hash}"))
}

/// A library component of a Maven coordinate `group:artifact:version`.
fn library(coordinate: &str, purl: Option<String>, sha: &str) -> Component {
    let mut parts = coordinate.splitn(3, ':');
    let (group, name, version) = (parts.next(), parts.next().unwrap_or(coordinate), parts.next());
    Component {
        type_: "library".into(),
        group: group.map(str::to_string),
        name: name.into(),
        version: version.map(str::to_string),
        hashes: sha256(sha),
        licenses: apache(),
        purl,
        ..Default::default()
    }
}

fn patch(h: &HookPatch) -> Patch {
    Patch {
        type_: "unofficial".into(),
        diff: h
            .diff
            .as_ref()
            .map(|d| Diff { text: Attachment { content_type: "text/x-diff".into(), content: d.clone() } }),
        resolves: h
            .hook
            .iter()
            .chain(&h.also)
            .map(|k| Issue {
                type_: "enhancement".into(),
                id: k.id.clone(),
                name: k.site.clone(),
                description: k.rule.clone(),
            })
            .collect(),
    }
}

/// The SBOM of the bundle `i` describes, with `edits` as each jar's patches; `timestamp`
/// (RFC 3339) only when reproducible.
pub fn bom(i: &Inputs, edits: &Edits, timestamp: Option<String>) -> String {
    let name = i.id.name();
    let release = i.id.release.to_string();
    let okp = env!("CARGO_PKG_VERSION");
    let components: Vec<Component> = i
        .jars
        .iter()
        .map(|j| {
            let mut notes = format!(
                "A modified build of {}, made by okp {okp} with the observer-replica patch set {} (layers {}): \
                 the classes that patch set changes, recompiled and put in a copy of the Maven Central jar \
                 named in ancestors; every other entry is that jar's. MANIFEST.json lists the classes \
                 replaced, added and removed.",
                j.upstream.coordinate,
                i.patch_set_hash,
                i.layers.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("+"),
            );
            if let Some(why) = &edits.without_diffs {
                notes.push_str(&format!(" The patches carry no diff: {why}."));
            }
            Component {
                bom_ref: Some(format!("libs/{}", j.file_name)),
                pedigree: Some(Pedigree {
                    ancestors: vec![library(
                        &j.upstream.coordinate,
                        maven_purl(&j.upstream.coordinate),
                        &j.upstream.sha256,
                    )],
                    patches: edits.patches.iter().filter(|p| p.module == j.module).map(patch).collect(),
                    notes: Some(notes),
                }),
                ..library(
                    &j.upstream.coordinate,
                    shipped_purl(&j.upstream.coordinate, &i.patch_set_hash),
                    &crate::hash::sha256(&j.bytes),
                )
            }
        })
        .collect();
    let bom = Bom {
        bom_format: "CycloneDX".into(),
        spec_version: SPEC_VERSION.into(),
        serial_number: PLACEHOLDER_SERIAL.into(),
        version: 1,
        metadata: Metadata {
            timestamp,
            tools: Tools {
                components: vec![Component {
                    type_: "application".into(),
                    name: "okp".into(),
                    version: Some(okp.into()),
                    ..Default::default()
                }],
            },
            component: Component {
                type_: "application".into(),
                bom_ref: Some(name.clone()),
                name: name.clone(),
                version: Some(release),
                description: Some(crate::bundle::manifest::PRODUCT.into()),
                ..Default::default()
            },
        },
        dependencies: vec![Dependency {
            ref_: name,
            depends_on: components.iter().filter_map(|c| c.bom_ref.clone()).collect(),
        }],
        components,
    };
    let text = serde_json::to_string_pretty(&bom).unwrap_or_default() + "\n";
    text.replacen(PLACEHOLDER_SERIAL, &serial_of(&text), 1)
}

/// `urn:uuid:` of a UUIDv8 made of the document's SHA-256 with its serial number set to the
/// placeholder (RFC 9562 B.2: version 8, variant 10).
fn serial_of(text_with_placeholder: &str) -> String {
    use sha2::Digest;
    let mut b: [u8; 16] = sha2::Sha256::digest(text_with_placeholder.as_bytes())[..16].try_into().unwrap_or([0; 16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::hash::hex(&b);
    format!("urn:uuid:{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// Checks the SBOM's text against the manifest and the jars' own bytes (`jars`: path → sha256).
pub fn check(text: &str, m: &Manifest, jars: &std::collections::BTreeMap<String, String>, p: &mut Problems) {
    let bom: Bom = match serde_json::from_str(text) {
        Ok(b) => b,
        Err(e) => return p.push(format!("not a CycloneDX document okp reads: {e}")),
    };
    p.same("bomFormat", &bom.bom_format, "CycloneDX");
    p.same("specVersion", &bom.spec_version, SPEC_VERSION);
    let serial = serial_of(&text.replacen(&bom.serial_number, PLACEHOLDER_SERIAL, 1));
    p.same("serialNumber", &bom.serial_number, &serial);
    p.same("metadata.component.name", &bom.metadata.component.name, &m.name);
    p.same("metadata.component.version", bom.metadata.component.version.as_deref().unwrap_or(""), &m.release);
    if bom.components.len() != m.jars.len() {
        p.push(format!("components: {} of them, the bundle ships {} jars", bom.components.len(), m.jars.len()));
    }
    for j in &m.jars {
        let Some(purl) = shipped_purl(&j.upstream.coordinate, &m.patch_set_hash) else {
            p.push(format!("{}: upstream {} is not a Maven coordinate", j.path, j.upstream.coordinate));
            continue;
        };
        let found: Vec<&Component> = bom.components.iter().filter(|c| c.bom_ref.as_deref() == Some(&j.path)).collect();
        let [c] = found.as_slice() else {
            p.push(format!("components: {} components with bom-ref {}, expected one", found.len(), j.path));
            continue;
        };
        let at = format!("components[{}]", j.path);
        p.same(&format!("{at}.purl"), c.purl.as_deref().unwrap_or("(none)"), &purl);
        p.same(&format!("{at}.version"), c.version.as_deref().unwrap_or("(none)"), &m.release);
        let actual = jars.get(&j.path).map(String::as_str).unwrap_or("(not in the bundle)");
        p.same(&format!("{at}.hashes[SHA-256]"), &sha_of(&c.hashes), actual);
        let pedigree = c.pedigree.clone().unwrap_or_default();
        let upstream = maven_purl(&j.upstream.coordinate);
        match pedigree.ancestors.as_slice() {
            [a] => {
                p.same(
                    &format!("{at}.pedigree.ancestors[0].purl"),
                    &a.purl.clone().unwrap_or_default(),
                    &upstream.unwrap_or_default(),
                );
                p.same(&format!("{at}.pedigree.ancestors[0].hashes[SHA-256]"), &sha_of(&a.hashes), &j.upstream.sha256);
            }
            other => p.push(format!("{at}.pedigree.ancestors: {} of them, expected the release's jar", other.len())),
        }
        if pedigree.patches.is_empty() {
            p.push(format!("{at}.pedigree.patches: none, but the jar carries okp's edits"));
        }
        if !pedigree.notes.unwrap_or_default().contains(&m.patch_set_hash) {
            p.push(format!("{at}.pedigree.notes: does not name the patch set {}", m.patch_set_hash));
        }
    }
}

fn sha_of(hashes: &[Hash]) -> String {
    let found: Vec<&str> = hashes.iter().filter(|h| h.alg == "SHA-256").map(|h| h.content.as_str()).collect();
    match found.as_slice() {
        [one] => one.to_string(),
        _ => format!("({} SHA-256 values)", found.len()),
    }
}
