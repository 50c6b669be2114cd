//! The bundle and its sidecars as found on disk, read once, each through the
//! bounded regular-file reader: the bundle up to `readfile::MAX_BUNDLE`, each
//! sidecar up to `readfile::MAX_SIDECAR`. A sidecar that is absent is "not
//! checked"; one that is present but cannot be read (a FIFO, a directory, too
//! large, not text) fails its check. Not here: the checks (`verify`).

use std::path::{Path, PathBuf};

use super::pins::Pins;
use super::sign;
use super::verify::{self, Sidecar};
use crate::error::Result;
use crate::fsx::read::{self as readfile, MAX_BUNDLE, MAX_SIDECAR};

/// What lies beside the bundle under one name: absent, unreadable (why), or its text.
type Found = std::result::Result<Option<String>, String>;

pub struct OnDisk {
    pub file_name: String,
    pub bytes: Vec<u8>,
    minisig: Found,
    sha256: Found,
    sha512: Found,
}

pub fn read(file: &Path) -> Result<OnDisk> {
    let bytes = readfile::read_regular(file, MAX_BUNDLE).map_err(|e| e.into_error(file, "bundle"))?;
    let file_name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let beside =
        |ext: &str| readfile::read_optional_text(&PathBuf::from(format!("{}.{ext}", file.display())), MAX_SIDECAR);
    Ok(OnDisk { minisig: beside("minisig"), sha256: beside("sha256"), sha512: beside("sha512"), file_name, bytes })
}

fn sidecar(f: &Found) -> Sidecar<'_> {
    match f {
        Ok(None) => Sidecar::Absent,
        Ok(Some(text)) => Sidecar::Text(text),
        Err(why) => Sidecar::Unreadable(why),
    }
}

impl OnDisk {
    /// Runs every check; `read_unauthenticated` as in `verify::Inputs`.
    pub fn verify(
        &self,
        pubkey: Option<&str>,
        pins: &Pins,
        read_unauthenticated: bool,
    ) -> Result<verify::Verification> {
        let pk = pubkey.map(sign::load_public).transpose()?;
        Ok(verify::verify(&verify::Inputs {
            file_name: &self.file_name,
            bundle: &self.bytes,
            pubkey: pk.as_ref(),
            minisig: sidecar(&self.minisig),
            sha256_file: sidecar(&self.sha256),
            sha512_file: sidecar(&self.sha512),
            pins,
            read_unauthenticated,
        }))
    }
}
