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

/// Fills `buf` from the kernel's random source (getrandom(2): no file to open, nothing to block
/// once the pool is initialised at boot).
pub fn random_bytes(buf: &mut [u8]) -> crate::error::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: the kernel writes at most `buf.len() - filled` bytes into the unfilled tail of `buf`.
        let n = unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(crate::error::Error::io("cannot read random bytes (getrandom)", e));
        }
        filled += n as usize;
    }
    Ok(())
}

/// True when `s` is 64 lower-case hex digits, as `sha256` writes them.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
