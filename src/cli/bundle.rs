//! The flags of the bundle commands: keygen, bundle, verify-bundle, install, rollback, and the
//! anti-replay pins the verifying ones share.
//!
//! Not here: signing, verifying or installing (`bundle`).

use std::path::PathBuf;

use clap::Args;

use super::{ListFormat, ReleaseSourceArgs};

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Path prefix of the two files to create (never overwritten).
    #[arg(long, value_name = "PREFIX")]
    pub out: PathBuf,
    /// No password on the secret key (for CI secret stores).
    #[arg(long)]
    pub unencrypted: bool,
}

#[derive(Args, Debug)]
pub struct BundleArgs {
    /// A directory written by `okp build --version V --mode M --out DIR`.
    #[arg(long, value_name = "DIR")]
    pub build: PathBuf,
    /// linux-x86_64 or linux-aarch64 (also x86_64, amd64, aarch64, arm64, linux/arm64, ...).
    #[arg(long, value_name = "TARGET")]
    pub target: crate::bundle::Target,
    /// The minisign secret key to sign with (see `okp keygen`).
    #[arg(long, value_name = "SECKEY")]
    pub key: PathBuf,
    /// Where the bundle and its sidecars go (default: the build directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also sign with gpg, as this key, into a detached .asc (the Apache convention).
    #[arg(long, value_name = "KEYID")]
    pub gpg_sign: Option<String>,
    #[command(flatten)]
    pub sources: ReleaseSourceArgs,
}

/// Anti-replay pins, checked against the bundle's signed trusted comment (docs/bundles-safety.md).
#[derive(Args, Debug)]
pub struct PinArgs {
    /// Refuse a bundle signed before this time: YYYY-MM-DD (midnight UTC), YYYY-MM-DDTHH:MM:SSZ or @SECONDS.
    #[arg(long, value_name = "DATE")]
    pub not_before: Option<crate::bundle::Timestamp>,
    /// Refuse a bundle made by an okp older than this version (X.Y.Z).
    #[arg(long, value_name = "X.Y.Z")]
    pub min_okp_version: Option<crate::bundle::OkpVersion>,
    /// Refuse a bundle of any other patch set (its sha256, 64 hex digits).
    #[arg(long, value_name = "HASH")]
    pub patch_set: Option<crate::bundle::PatchSet>,
    /// Refuse a bundle without its attestations (provenance.intoto.jsonl, sbom.cdx.json), as
    /// bundles made before okp wrote them are.
    #[arg(long)]
    pub require_attestations: bool,
}

#[derive(Args, Debug)]
pub struct VerifyBundleArgs {
    /// The bundle (.tar.gz); its .minisig, .sha256 and .sha512 are read from beside it.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The minisign public key: a .pub file, or its base64 line (RW...).
    #[arg(long, value_name = "KEY")]
    pub pubkey: String,
    #[command(flatten)]
    pub pins: PinArgs,
    /// The output: a table for people, or json for programs.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    #[command(flatten)]
    pub sources: ReleaseSourceArgs,
}

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The bundle (.tar.gz).
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,
    /// The Kafka installation (the directory holding bin/ and libs/).
    #[arg(long, value_name = "DIR")]
    pub kafka_home: PathBuf,
    /// The minisign public key the bundle must be signed with.
    #[arg(long, value_name = "KEY", required_unless_present = "allow_unverified")]
    pub pubkey: Option<String>,
    /// Install a well-formed bundle whose signature or checksum files do not verify.
    #[arg(long)]
    pub allow_unverified: bool,
    /// Say what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Install although this machine is not the bundle's target (the jars are architecture-independent).
    #[arg(long)]
    pub ignore_arch: bool,
    /// Accept installed jars that are not byte-identical to Maven Central's (your own build of the release).
    #[arg(long)]
    pub accept_local_jars: bool,
    #[command(flatten)]
    pub pins: PinArgs,
    #[command(flatten)]
    pub sources: ReleaseSourceArgs,
}

#[derive(Args, Debug)]
pub struct RollbackArgs {
    /// The Kafka installation the bundle was installed in (the directory holding bin/ and libs/).
    #[arg(long, value_name = "DIR")]
    pub kafka_home: PathBuf,
    /// Say what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Restore even jars that changed after the install.
    #[arg(long)]
    pub force: bool,
}
