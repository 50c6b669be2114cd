//! Digests as okp writes them everywhere: lower-case hex sha256.
//!
//! Not here: what is hashed (patch-set hash: `patchset`; jar and file hashes:
//! their writers).

use sha2::{Digest, Sha256};

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of `b`, lower-case hex.
pub fn sha256(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// True when `s` is 64 lower-case hex digits, as `sha256` writes them.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
