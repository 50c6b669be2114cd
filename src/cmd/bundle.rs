//! `okp keygen`, `bundle`, `verify-bundle`, `install`, `rollback`.
//!
//! Not here: keys and signatures (`bundle::sign`), the checks
//! (`bundle::verify`), making a bundle (`bundle::make`).

use crate::bundle::{self as lib, Pins, ScriptFlags, Trust};
use crate::cli::{BundleArgs, InstallArgs, KeygenArgs, PinArgs, ReleaseSourceArgs, RollbackArgs, VerifyBundleArgs};
use crate::error::{Outcome, Result};
use crate::source::{SourceTree, Spec};
use crate::workspace::Workspace;

pub fn keygen(a: KeygenArgs) -> Result<Outcome> {
    lib::keygen(&a.out, a.unencrypted)
}

pub fn bundle(ws: &Workspace, a: BundleArgs) -> Result<Outcome> {
    let source = release_source(ws, &a.sources)?;
    lib::bundle(ws, &a.build, a.target, &a.key, a.out.as_deref(), a.gpg_sign.as_deref(), source.as_deref())
}

/// The tree `--tree`/`--git --rev` name, opened, if any.
fn release_source(ws: &Workspace, a: &ReleaseSourceArgs) -> Result<Option<Box<dyn SourceTree>>> {
    match (&a.tree, &a.git.repo, &a.git.rev) {
        (Some(d), _, _) => Ok(Some(ws.open(Spec::Dir(d))?)),
        (None, Some(repo), Some(rev)) => Ok(Some(ws.open(Spec::Git { repo, rev })?)),
        _ => Ok(None),
    }
}

pub fn verify_bundle(ws: &Workspace, a: VerifyBundleArgs) -> Result<Outcome> {
    let source = release_source(ws, &a.sources)?;
    lib::verify_bundle(ws, &a.file, &a.pubkey, super::json(a.format), &pins(a.pins), source.as_deref())
}

pub fn install(ws: &Workspace, a: InstallArgs) -> Result<Outcome> {
    let flags = ScriptFlags {
        dry_run: a.dry_run,
        ignore_arch: a.ignore_arch,
        accept_local_jars: a.accept_local_jars,
        force: false,
    };
    let pins = pins(a.pins);
    let trust = Trust { pubkey: a.pubkey.as_deref(), allow_unverified: a.allow_unverified, pins: &pins };
    let source = release_source(ws, &a.sources)?;
    lib::install(ws, &a.bundle, &a.kafka_home, &trust, &flags, source.as_deref())
}

fn pins(a: PinArgs) -> Pins {
    Pins {
        not_before: a.not_before,
        min_okp_version: a.min_okp_version,
        patch_set: a.patch_set,
        require_attestations: a.require_attestations,
    }
}

pub fn rollback(a: RollbackArgs) -> Result<Outcome> {
    let flags = ScriptFlags { dry_run: a.dry_run, ignore_arch: false, accept_local_jars: false, force: a.force };
    lib::rollback(&a.kafka_home, &flags)
}
