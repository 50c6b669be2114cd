//! The one verification `okp verify-bundle` and `okp install` both run, so the two cannot drift:
//! every check of `verify` over the bundle as read, then, for a bundle whose content passed them,
//! its jars re-derived from their bytes with okp's own data (`build::recheck`) as one more
//! integrity check, `jars`. A signature says who made a bundle, not that its jars are the release
//! plus okp's edits: a bundle re-signed with the release key after a jar was changed verifies
//! everything else, and fails here, with the same finding under either command (exit 1). Then the
//! attestations, made again from what the re-check derived (`attest::derive`): `attested fields`.
//!
//! Not here: the in-memory checks (`verify`), the re-derivation itself (`build::recheck`),
//! installing (`install`).

use super::archive::Unpacked;
use super::manifest::{self, Identity, Manifest};
use super::ondisk::OnDisk;
use super::pins::Pins;
use super::verify::{Check, Status, Verification, JARS};

/// The check of the attestations re-derived (`attest::derive`).
pub const ATTESTED: &str = "attested fields";
use crate::build::recheck::{ClaimedJar, Claims, Rechecked};
use crate::error::{Error, Result};
use crate::source::SourceTree;
use crate::workspace::Workspace;

/// What a bundle must prove: to verify-bundle, or before it is installed.
pub struct Trust<'a> {
    /// The minisign public key (a file, or the base64 line).
    pub pubkey: Option<&'a str>,
    /// Install a well-formed bundle whose signature or checksums do not verify.
    pub allow_unverified: bool,
    /// Checked against the signature; never waived.
    pub pins: &'a Pins,
}

/// Verifies the bundle `d` as `trust` asks, and re-derives its jars when its content is
/// well-formed (the archive is read only when authenticity holds or is waived). A finding of the
/// re-derivation is a failed `jars` check; what keeps it from running at all (Maven Central
/// unreachable, a release without sources jar and no `source`) is the error.
pub fn verify(ws: &Workspace, d: &OnDisk, trust: &Trust, source: Option<&dyn SourceTree>) -> Result<Verification> {
    let mut o = d.verify(trust.pubkey, trust.pins, trust.allow_unverified)?;
    if !o.integral() {
        return Ok(o);
    }
    let Some((unpacked, m, id)) = &o.content else { return Ok(o) };
    let facts = match recheck(ws, &d.file_name, unpacked, m, id, source) {
        Ok(facts) => facts,
        Err(Error::Check(finding)) => {
            o.checks.push(Check { check: JARS, status: Status::Failed, detail: finding, authenticity: false });
            return Ok(o);
        }
        Err(e) => return Err(e),
    };
    o.checks.push(Check { check: JARS, status: Status::Ok, detail: facts.summary(), authenticity: false });
    // The attestations made again from what the re-check derived: every field must be okp's.
    let derived = match super::attest::derive::check(ws, &unpacked.files, m, id, &facts) {
        Ok(r) => r,
        Err(Error::Check(finding)) => Some(Err(finding)),
        Err(e) => return Err(e),
    };
    if let Some(r) = derived {
        let (status, detail) = match r {
            Ok(s) => (Status::Ok, s),
            Err(s) => (Status::Failed, s),
        };
        o.checks.push(Check { check: ATTESTED, status, detail, authenticity: false });
    }
    Ok(o)
}

/// Re-derives what the manifest of `file_name` says of its jars from their bytes and okp's own data
/// (`build::recheck`), as `okp bundle` did when it made the bundle.
fn recheck(
    ws: &Workspace,
    file_name: &str,
    unpacked: &Unpacked,
    m: &Manifest,
    id: &Identity,
    source: Option<&dyn SourceTree>,
) -> Result<Rechecked> {
    let what = format!("{} of {file_name}", manifest::FILE_NAME);
    let mut jars = Vec::new();
    for j in &m.jars {
        let file = unpacked
            .files
            .iter()
            .find(|f| f.path == j.path)
            .ok_or_else(|| Error::Check(format!("{what}: jars: {} is not in the bundle", j.path)))?;
        let file_name = j.path.rsplit('/').next().unwrap_or(&j.path);
        jars.push(ClaimedJar {
            file_name,
            module: &j.module,
            upstream: &j.upstream.coordinate,
            upstream_sha256: &j.upstream.sha256,
            bytes: &file.bytes,
            replaced: &j.replaced,
            added: &j.added,
            removed: &j.removed,
        });
    }
    let claims = Claims {
        what: what.clone(),
        release: id.release,
        mode: id.mode,
        layers: &m.layers,
        family: &m.family,
        patch_set_hash: &m.patch_set_hash,
        provenance: m.provenance.as_deref(),
        jars,
        ours_by_content: Some(&|release, tree, module, files| {
            crate::build::splice::compile_ours(ws, release, tree, module, files)
        }),
    };
    crate::build::recheck::recheck(ws, &claims, source)
}
