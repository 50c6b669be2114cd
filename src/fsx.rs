//! File writes that are all or nothing: a temporary file beside the target,
//! then a rename, so a reader sees the old bytes or the new ones, never half.
//!
//! Not here: multi-file transactions with a journal (`tx`), trees laid out
//! from archives (`source`, `bundle::archive`).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// creating the directory when missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(format!("cannot write in {}", dir.display()), e))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    tmp.persist(path).map_err(|e| Error::io(format!("cannot write {}", path.display()), e.error))?;
    Ok(())
}
