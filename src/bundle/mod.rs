//! Bundles: what okp ships to a platform team. One signed, reproducible
//! `.tar.gz` per (release, mode, target) holding the patched jars, install and
//! rollback scripts, the observer.ids template, NOTICE/LICENSE, operator docs
//! and a versioned MANIFEST.json; sha256/sha512 sidecars, a minisign signature
//! and optionally a gpg `.asc` beside it.
//!
//! The commands here are thin edges (`keygen`, `bundle`, `verify-bundle`,
//! `install`, `rollback`); the work is in the submodules:
//! `target` (platforms, native-code check), `archive` (reproducible tar.gz,
//! safe reading), `manifest` (schema), `layout` (the files, pure), `sign`
//! (keys, signatures), `attest` (the in-toto provenance and the CycloneDX
//! SBOM inside each bundle), `pins` (anti-replay), `ondisk` (the bundle and its sidecars as read), `verify`
//! (every check, in memory), `rederive` (those checks plus the jars re-derived from their bytes: the one
//! verification verify-bundle and install share), `make` (the pipeline that writes a bundle),
//! `lock` (one okp per Kafka installation), `install` (install and rollback).
//!
//! Install and rollback run the bundle's own POSIX sh scripts, so an operator
//! without okp gets exactly the same behaviour; okp adds verification before
//! anything is unpacked, a lock, and cleanup (docs/bundles-safety.md).

mod archive;
mod attest;
mod install;
mod layout;
mod lock;
mod make;
mod manifest;
mod ondisk;
mod pins;
mod rederive;
mod sign;
mod target;
mod verify;

use std::path::Path;

pub use install::ScriptFlags;
pub use pins::{OkpVersion, PatchSet, Pins, Timestamp};
pub use rederive::Trust;
pub use target::Target;

use crate::error::{Outcome, Result};
use crate::out::print;
use crate::workspace::Workspace;

/// `okp keygen`: writes PREFIX.key and PREFIX.pub; prints the public key only.
pub fn keygen(prefix: &Path, unencrypted: bool) -> Result<Outcome> {
    let k = sign::keygen(prefix, unencrypted)?;
    print(&k.public_box)?;
    crate::out::note(format!(
        "key {} written: secret {} (mode 0600{}), public {}",
        k.id,
        k.secret.display(),
        if unencrypted { ", NOT encrypted: keep it in a CI secret store" } else { ", encrypted with your password" },
        k.public.display()
    ));
    Ok(Outcome::Done)
}

/// `okp bundle`.
pub fn bundle(
    ws: &Workspace,
    build_dir: &Path,
    target: Target,
    key: &Path,
    out: Option<&Path>,
    gpg_key: Option<&str>,
    source: Option<&dyn crate::source::SourceTree>,
) -> Result<Outcome> {
    let out = out.unwrap_or(build_dir);
    let t = std::time::Instant::now();
    let made = make::make(ws, &make::Options { build_dir, target, key, out, gpg_key, source })?;
    print(&format!("{}\n", made.bundle.display()))?;
    for s in &made.sidecars {
        crate::out::note(format!("wrote {}", s.display()));
    }
    crate::out::note(format!(
        "{} ({} bytes, {} files, patch set {}, {}) in {:.1}s",
        made.bundle.display(),
        made.size,
        made.manifest.files.len() + 1,
        &made.manifest.patch_set_hash[..12],
        if made.manifest.architecture_independent {
            "architecture-independent"
        } else {
            "with native code for the target"
        },
        t.elapsed().as_secs_f64()
    ));
    Ok(Outcome::Done)
}

/// `okp verify-bundle`: exit 0 when verified, 1 when not; the jars re-derived from their bytes as
/// install does (`rederive`).
pub fn verify_bundle(
    ws: &Workspace,
    file: &Path,
    pubkey: &str,
    json: bool,
    pins: &Pins,
    source: Option<&dyn crate::source::SourceTree>,
) -> Result<Outcome> {
    let d = ondisk::read(file)?;
    let o = rederive::verify(ws, &d, &Trust { pubkey: Some(pubkey), allow_unverified: false, pins }, source)?;
    if json {
        let v = serde_json::json!({
            "bundle": d.file_name,
            "verified": o.verified(),
            "checks": o.checks,
            "manifest": o.content.as_ref().map(|(_, m, _)| m),
        });
        print(&(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"))?;
    } else {
        print(&verify::render(&o, &d.file_name))?;
    }
    Ok(Outcome::check(o.verified()))
}

/// `okp install`: verify, then run the bundle's install.sh (see `install`).
pub fn install(
    ws: &Workspace,
    file: &Path,
    kafka_home: &Path,
    trust: &Trust<'_>,
    flags: &ScriptFlags,
    source: Option<&dyn crate::source::SourceTree>,
) -> Result<Outcome> {
    install::install(ws, file, kafka_home, trust, flags, source)
}

/// `okp rollback`: okp's own rollback.sh, which reads what install recorded.
pub fn rollback(kafka_home: &Path, flags: &ScriptFlags) -> Result<Outcome> {
    install::rollback(kafka_home, flags)
}
