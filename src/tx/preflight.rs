//! Before the first write: can okp write in every directory it will write
//! in, and does every filesystem it writes to have room for what it will put
//! there? Either "no" is found while the tree is still untouched.
//!
//! Writability is tried, not guessed from permission bits (root, ACLs,
//! read-only mounts and quotas all lie to the bits): an unnamed O_TMPFILE
//! file is made in each directory, which leaves nothing behind even when okp
//! is killed right then; where a filesystem has no O_TMPFILE, a named probe
//! in okp's temp-file naming (`.okp-probe.okp-tmp`) is made and removed.
//! Room is statvfs(3)'s space and inodes available to unprivileged users.
//!
//! Not here: which directories and how many bytes (see `tx`).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The probe's name where O_TMPFILE is not supported; the sweep removes it.
pub const PROBE: &str = ".okp-probe.okp-tmp";

/// Room okp keeps free on every filesystem it writes to, beyond its estimate
/// (block rounding, directory blocks, the journal growing a line).
pub const MARGIN: u64 = 1 << 20;

/// What a command will put on the filesystem of `dir`, an existing directory.
#[derive(Debug, Clone)]
pub struct Need {
    pub dir: PathBuf,
    pub bytes: u64,
    pub inodes: u64,
}

/// Tries a temporary file in each directory; the first that refuses is the error.
pub fn writable(dirs: &[PathBuf]) -> Result<()> {
    for d in dirs {
        probe(d).map_err(|e| not_writable(d, e))?;
    }
    Ok(())
}

/// A directory that refused the probe. One okp may not write in (permissions, an ACL, an immutable
/// directory) is the environment failing, as a read-only or full filesystem is (exit 3,
/// docs/exit-codes.md); anything else (the directory vanished) keeps its I/O kind.
fn not_writable(d: &Path, e: std::io::Error) -> Error {
    let context = format!(
        "cannot write in {} (okp tries every directory before changing anything; nothing was changed)",
        d.display()
    );
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => Error::External(format!("{context}: {e}")),
        _ => Error::io(context, e),
    }
}

fn probe(dir: &Path) -> std::io::Result<()> {
    let unnamed = OpenOptions::new().write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir);
    match unnamed {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)) => {
            let p = dir.join(PROBE);
            let _ = std::fs::remove_file(&p);
            OpenOptions::new().write(true).create_new(true).mode(0o600).open(&p)?;
            std::fs::remove_file(&p)
        }
        Err(e) => Err(e),
    }
}

/// Sums the needs per filesystem and compares each sum (plus [`MARGIN`]) with what is available.
pub fn room(needs: &[Need]) -> Result<()> {
    let mut per_fs: BTreeMap<u64, Need> = BTreeMap::new();
    for n in needs {
        let dev =
            std::fs::metadata(&n.dir).map_err(|e| Error::io(format!("cannot stat {}", n.dir.display()), e))?.dev();
        let e = per_fs.entry(dev).or_insert_with(|| Need { dir: n.dir.clone(), bytes: MARGIN, inodes: 0 });
        e.bytes += n.bytes;
        e.inodes += n.inodes;
    }
    for n in per_fs.values() {
        let (bytes, inodes) =
            available(&n.dir).map_err(|e| Error::io(format!("cannot statvfs {}", n.dir.display()), e))?;
        let short = if bytes < n.bytes {
            Some(format!("{} bytes are needed (the patched files, the pristine copies and a margin of {MARGIN}), {bytes} are free", n.bytes))
        } else if inodes.is_some_and(|i| i < n.inodes) {
            Some(format!("{} new files are needed, {} inodes are free", n.inodes, inodes.unwrap_or(0)))
        } else {
            None
        };
        if let Some(short) = short {
            return Err(Error::io(
                format!("not enough room on the filesystem of {}: {short}; nothing was changed", n.dir.display()),
                std::io::Error::from_raw_os_error(libc::ENOSPC),
            ));
        }
    }
    Ok(())
}

/// Bytes and inodes (None when the filesystem does not count them) free for unprivileged users.
fn available(dir: &Path) -> std::io::Result<(u64, Option<u64>)> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // the field types differ between libc targets
    let bytes = (s.f_bavail as u64).saturating_mul(s.f_frsize as u64);
    #[allow(clippy::unnecessary_cast)]
    let inodes = (s.f_files != 0).then_some(s.f_favail as u64);
    Ok((bytes, inodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_directory_passes_and_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        writable(&[t.path().to_path_buf()]).unwrap();
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
        let e = writable(&[t.path().join("missing")]).unwrap_err().to_string();
        assert!(e.contains("cannot write in") && e.contains("missing"), "{e}");
    }

    /// docs/exit-codes.md: a directory okp may not write in is the environment failing (3), like
    /// a read-only or full filesystem; root cannot be refused by permission bits, so the mapping
    /// is tested on the errors the probe meets.
    #[test]
    fn a_directory_okp_may_not_write_in_is_an_environment_failure() {
        let d = Path::new("/src/kafka/core");
        for (errno, code) in
            [(libc::EACCES, 3), (libc::EPERM, 3), (libc::EROFS, 3), (libc::ENOSPC, 3), (libc::ENOENT, 2)]
        {
            let e = not_writable(d, std::io::Error::from_raw_os_error(errno));
            assert_eq!(e.exit_code(), code, "errno {errno}: {e}");
            assert!(e.to_string().contains("cannot write in /src/kafka/core"), "{e}");
            assert!(e.to_string().contains("nothing was changed"), "{e}");
        }
    }

    #[test]
    fn room_is_counted_per_filesystem_with_the_margin() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().to_path_buf();
        room(&[Need { dir: d.clone(), bytes: 10, inodes: 1 }]).unwrap();
        let e = room(&[Need { dir: d.clone(), bytes: u64::MAX / 2, inodes: 1 }]).unwrap_err().to_string();
        assert!(e.contains("not enough room") && e.contains("No space left on device"), "{e}");
        // Two halves of too much on one filesystem are too much together.
        let (free, _) = available(&d).unwrap();
        let half = Need { dir: d.clone(), bytes: free / 2 + 1, inodes: 0 };
        assert!(room(&[half.clone(), half]).is_err());
    }
}
