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
//! (keys, signatures), `pins` (anti-replay), `readfile` (bounded reads of
//! regular files), `ondisk` (the bundle and its sidecars as read), `verify`
//! (every check, in memory), `make` (the pipeline that writes a bundle).
//!
//! Install and rollback run the bundle's own POSIX sh scripts, so an operator
//! without okp gets exactly the same behaviour; okp adds verification before
//! anything is unpacked.

mod archive;
mod layout;
mod make;
mod manifest;
mod ondisk;
mod pins;
mod readfile;
mod sign;
mod target;
mod verify;

use std::path::Path;
use std::process::Command;

#[allow(unused_imports)] // the flags --not-before, --min-okp-version, --patch-set are wired by the CLI restructure
pub use pins::{OkpVersion, PatchSet, Pins, Timestamp};
pub use target::Target;

use crate::cli::print;
use crate::error::{Error, Result, EXIT_DRIFT, EXIT_EXTERNAL, EXIT_OK};
use crate::model::Model;

/// `okp keygen`: writes PREFIX.key and PREFIX.pub; prints the public key only.
pub fn keygen(prefix: &Path, unencrypted: bool) -> Result<i32> {
    let k = sign::keygen(prefix, unencrypted)?;
    print(&k.public_box)?;
    eprintln!(
        "okp: key {} written: secret {} (mode 0600{}), public {}",
        k.id,
        k.secret.display(),
        if unencrypted { ", NOT encrypted: keep it in a CI secret store" } else { ", encrypted with your password" },
        k.public.display()
    );
    Ok(EXIT_OK)
}

/// `okp bundle`.
pub fn bundle(
    model: &Model,
    build_dir: &Path,
    target: Target,
    key: &Path,
    out: Option<&Path>,
    gpg_key: Option<&str>,
) -> Result<i32> {
    let out = out.unwrap_or(build_dir);
    let t = std::time::Instant::now();
    let made = make::make(model, &make::Options { build_dir, target, key, out, gpg_key })?;
    print(&format!("{}\n", made.bundle.display()))?;
    for s in &made.sidecars {
        eprintln!("okp: wrote {}", s.display());
    }
    eprintln!(
        "okp: {} ({} bytes, {} files, patch set {}, {}) in {:.1}s",
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
    );
    Ok(EXIT_OK)
}

/// `okp verify-bundle`: exit 0 when verified, 1 when not.
pub fn verify_bundle(file: &Path, pubkey: &str, json: bool) -> Result<i32> {
    verify_bundle_pinned(file, pubkey, json, &Pins::default())
}

/// `okp verify-bundle` with pins: a bundle failing one is not verified (exit 1).
pub fn verify_bundle_pinned(file: &Path, pubkey: &str, json: bool, pins: &Pins) -> Result<i32> {
    let d = ondisk::read(file)?;
    let o = d.verify(Some(pubkey), pins, false)?;
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
    Ok(if o.verified() { EXIT_OK } else { EXIT_DRIFT })
}

/// Flags passed through to install.sh / rollback.sh.
pub struct ScriptFlags {
    pub dry_run: bool,
    pub ignore_arch: bool,
    pub accept_local_jars: bool,
    pub force: bool,
}

impl ScriptFlags {
    fn args(&self) -> Vec<&'static str> {
        [
            (self.dry_run, "--dry-run"),
            (self.ignore_arch, "--ignore-arch"),
            (self.accept_local_jars, "--accept-local-jars"),
            (self.force, "--force"),
        ]
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
        .collect()
    }
}

/// Runs a bundle script with `sh`; its exit status is okp's (0, 2, 3).
fn run_script(script: &Path, flags: &ScriptFlags, kafka_home: &Path) -> Result<i32> {
    let status = Command::new("sh")
        .arg(script)
        .args(flags.args())
        .arg(kafka_home)
        .status()
        .map_err(|e| Error::External(format!("cannot run sh {}: {e}", script.display())))?;
    Ok(match status.code() {
        Some(c @ (0 | 2 | 3)) => c,
        _ => EXIT_EXTERNAL,
    })
}

/// `okp install`: verify, unpack into a private directory, run the bundle's install.sh.
pub fn install(
    file: &Path,
    kafka_home: &Path,
    pubkey: Option<&str>,
    allow_unverified: bool,
    flags: &ScriptFlags,
) -> Result<i32> {
    let d = ondisk::read(file)?;
    let o = d.verify(pubkey, &Pins::default(), allow_unverified)?;
    eprint!("{}", verify::render(&o, &d.file_name));
    if !o.pins_hold() {
        eprintln!(
            "okp: refusing to install {}: it fails a pin (see `pins` above); --allow-unverified does not waive pins",
            d.file_name
        );
        return Ok(EXIT_DRIFT);
    }
    let (verified, integral) = (o.verified(), o.integral());
    let content = match o.content {
        Some(c) if verified || (allow_unverified && integral) => c,
        _ if allow_unverified => {
            eprintln!("okp: refusing to install {}: it is damaged or unsafe to unpack (--allow-unverified waives only the signature and checksum files)", d.file_name);
            return Ok(EXIT_DRIFT);
        }
        _ => {
            eprintln!("okp: refusing to install {}: it does not verify (--allow-unverified installs a well-formed bundle without a valid signature)", d.file_name);
            return Ok(EXIT_DRIFT);
        }
    };
    if !verified {
        eprintln!("okp: warning: installing {} WITHOUT a verified signature (--allow-unverified)", d.file_name);
    }
    let (unpacked, _, _) = content;
    let staging = tempfile::Builder::new()
        .prefix("okp-install-")
        .tempdir()
        .map_err(|e| Error::io("cannot create a staging directory", e))?;
    let root = archive::extract(&unpacked, staging.path())
        .map_err(|e| Error::io(format!("cannot unpack into {}", staging.path().display()), e))?;
    run_script(&root.join("install.sh"), flags, kafka_home)
}

/// `okp rollback`: the rollback.sh that install left in the installation, or
/// okp's own copy of the same script when that one is gone.
pub fn rollback(kafka_home: &Path, flags: &ScriptFlags) -> Result<i32> {
    let kept = kafka_home.join(".okp-observer").join("rollback.sh");
    if kept.is_file() {
        return run_script(&kept, flags, kafka_home);
    }
    let mut tmp = tempfile::Builder::new()
        .prefix("okp-rollback-")
        .suffix(".sh")
        .tempfile()
        .map_err(|e| Error::io("cannot create a temporary file", e))?;
    std::io::Write::write_all(&mut tmp, layout::rollback_script().as_bytes())
        .map_err(|e| Error::io("cannot write the rollback script", e))?;
    run_script(tmp.path(), flags, kafka_home)
}
