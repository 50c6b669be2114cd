//! A bundle's standard attestations, for supply-chain tools that read neither MANIFEST.json
//! nor minisign: `provenance.intoto.jsonl` (SLSA provenance in an in-toto statement, in a DSSE
//! envelope signed with the bundle's own Ed25519 key) and `sbom.cdx.json` (a CycloneDX 1.6
//! SBOM of the jars, with the release's artifact as each jar's ancestor and okp's edits as
//! its patches). Both are files of the bundle like any other, so MANIFEST.json lists them and
//! the minisign signature covers them; both are reproducible, so the bundle stays so.
//!
//! `okp verify-bundle` checks them against the archive: the envelope's signature with the key
//! given, its subjects against the jars' bytes, its parameters against the manifest; the SBOM's
//! hashes against the jars' bytes and its purls against the release and the artifacts. A bundle
//! made before okp wrote them has neither, and still verifies.
//!
//! `derive` goes further, once the jars are re-derived (`rederive`): it makes both documents again
//! from the jars' bytes and okp's own data, and every field must be what okp writes.
//!
//! Not here: the keys (`sign`), the other files (`layout`), the verification report (`verify`).

pub mod derive;
mod dsse;
mod edits;
mod provenance;
mod sbom;

use std::collections::BTreeMap;

use minisign::PublicKey;

pub use edits::{edits, Edits};

use super::archive::{File, MODE_FILE};
use super::layout::Inputs;
use super::manifest::Manifest;
use super::sign::{self, Ed25519Signer};

pub const PROVENANCE_FILE: &str = "provenance.intoto.jsonl";
pub const SBOM_FILE: &str = "sbom.cdx.json";

/// The purl of a Maven coordinate `group:artifact:version[:classifier]`
/// (`pkg:maven/group/artifact@version[?classifier=…]`); none for anything else, or for names
/// a purl would have to percent-encode (no Maven Central coordinate okp reads has one).
pub fn maven_purl(coordinate: &str) -> Option<String> {
    let parts: Vec<&str> = coordinate.split(':').collect();
    let plain = |s: &&str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !parts.iter().all(plain) {
        return None;
    }
    match parts.as_slice() {
        [g, a, v] => Some(format!("pkg:maven/{g}/{a}@{v}")),
        [g, a, v, c] => Some(format!("pkg:maven/{g}/{a}@{v}?classifier={c}")),
        _ => None,
    }
}

/// What a check found wrong, each naming the field.
#[derive(Default)]
pub struct Problems(Vec<String>);

impl Problems {
    pub fn push(&mut self, p: String) {
        self.0.push(p);
    }

    /// A field that must hold `want`.
    pub fn same(&mut self, field: &str, found: &str, want: &str) {
        if found != want {
            self.0.push(format!("{field} is {found:?}, expected {want:?}"));
        }
    }

    fn outcome(self, file: &str, ok: String) -> Result<String, String> {
        if self.0.is_empty() {
            Ok(ok)
        } else {
            Err(self.0.iter().map(|p| format!("{file}: {p}")).collect::<Vec<_>>().join("; "))
        }
    }
}

/// The two files for the bundle `i` describes, signed by `signer`; `mtime` is the bundle's
/// SOURCE_DATE_EPOCH (0: unset, and then the SBOM carries no timestamp).
pub fn files(i: &Inputs, edits: &Edits, signer: &Ed25519Signer, mtime: u64) -> Vec<File> {
    let statement = serde_json::to_vec(&provenance::statement(i)).unwrap_or_default();
    let envelope = dsse::Envelope::sign(provenance::PAYLOAD_TYPE, &statement, &signer.key_id, |pae| signer.sign(pae));
    let timestamp = (mtime > 0).then(|| super::pins::Timestamp(mtime).to_string());
    vec![
        File {
            path: PROVENANCE_FILE.into(),
            mode: MODE_FILE,
            bytes: (serde_json::to_string(&envelope).unwrap_or_default() + "\n").into_bytes(),
        },
        File { path: SBOM_FILE.into(), mode: MODE_FILE, bytes: sbom::bom(i, edits, timestamp).into_bytes() },
    ]
}

/// One verification check: its name, whether it is about authenticity, and its result.
pub type Check = (&'static str, bool, Result<String, String>);

/// Checks the attestations among `files` (the bundle's, as read) against the manifest and the
/// jars' bytes; the envelope's signature with `pk` when given.
pub fn check(files: &[File], m: &Manifest, pk: Option<&PublicKey>) -> Vec<Check> {
    let find = |path: &str| files.iter().find(|f| f.path == path);
    let (prov, bom) = (find(PROVENANCE_FILE), find(SBOM_FILE));
    if prov.is_none() && bom.is_none() {
        return vec![(
            "attestations",
            false,
            Ok(format!(
                "none: no {PROVENANCE_FILE} nor {SBOM_FILE} (a bundle made by okp {} before it wrote them)",
                m.okp_version
            )),
        )];
    }
    let jars: BTreeMap<String, String> = m
        .jars
        .iter()
        .map(|j| (j.path.clone(), find(&j.path).map(|f| crate::hash::sha256(&f.bytes)).unwrap_or_default()))
        .collect();
    let mut checks = Vec::new();
    match prov {
        None => checks.push(("provenance", false, Err(format!("no {PROVENANCE_FILE}, though {SBOM_FILE} is there")))),
        Some(f) => checks.extend(check_provenance(&f.bytes, m, &jars, pk)),
    }
    let sbom = match bom.map(|f| std::str::from_utf8(&f.bytes)) {
        None => Err(format!("no {SBOM_FILE}, though {PROVENANCE_FILE} is there")),
        Some(Err(_)) => Err(format!("{SBOM_FILE}: not UTF-8 text")),
        Some(Ok(text)) => {
            let mut p = Problems::default();
            sbom::check(text, m, &jars, &mut p);
            p.outcome(
                SBOM_FILE,
                format!("CycloneDX {}: {} jars, their hashes and purls match", sbom::SPEC_VERSION, jars.len()),
            )
        }
    };
    checks.push(("sbom", false, sbom));
    checks
}

/// The envelope (its signature: an authenticity check) and the statement inside it.
fn check_provenance(bytes: &[u8], m: &Manifest, jars: &BTreeMap<String, String>, pk: Option<&PublicKey>) -> Vec<Check> {
    let fail = |e: String| vec![("provenance", false, Err(format!("{PROVENANCE_FILE}: {e}")))];
    let line = match bytes.strip_suffix(b"\n") {
        Some(l) if !l.contains(&b'\n') => l,
        _ => return fail("not one JSON line ending in a newline".into()),
    };
    let envelope: dsse::Envelope = match serde_json::from_slice(line) {
        Ok(e) => e,
        Err(e) => return fail(format!("not a DSSE envelope: {e}")),
    };
    let signature = match pk {
        None => Ok("not checked: no public key given".to_string()),
        Some(pk) => {
            let keyid = sign::public_key_id(pk);
            envelope
                .verify(&keyid, |pae, sig| sign::ed25519_verify(pk, pae, sig))
                .map(|_| format!("good Ed25519 signature by key {keyid} over the DSSE envelope"))
                .map_err(|e| format!("{PROVENANCE_FILE}: {e}"))
        }
    };
    let mut p = Problems::default();
    p.same("payloadType", &envelope.payload_type, provenance::PAYLOAD_TYPE);
    match envelope.payload().and_then(|b| serde_json::from_slice(&b).map_err(|e| format!("payload: {e}"))) {
        Ok(statement) => provenance::check(&statement, m, jars, &mut p),
        Err(e) => p.push(e),
    }
    let ok = format!(
        "in-toto statement, SLSA provenance v1: {} jars, release, mode, layers, patch set, target match",
        jars.len()
    );
    vec![("provenance", false, p.outcome(PROVENANCE_FILE, ok)), ("dsse signature", true, signature)]
}

#[cfg(test)]
mod tests;
