//! A Kafka source tree on disk: a checkout, or a tree okp laid out.

use std::path::{Path, PathBuf};

use super::{declared_from, SourceTree, MARKER, MAX_SOURCE_FILE};
use crate::error::{Error, Result};

pub struct DirTree {
    root: PathBuf,
}

impl DirTree {
    /// Opens `root`, refusing anything that is not a Kafka source tree.
    pub fn open(root: &Path) -> Result<DirTree> {
        let meta = std::fs::metadata(root)
            .map_err(|e| Error::Tree { path: root.to_path_buf(), msg: format!("cannot open: {e}") })?;
        if !meta.is_dir() {
            return Err(Error::Tree { path: root.to_path_buf(), msg: "is not a directory".into() });
        }
        let has = |p: &str| root.join(p).exists();
        let gradle_kafka = has("gradle.properties") && has("core") && (has("settings.gradle") || has("build.gradle"));
        if !gradle_kafka && !has(MARKER) {
            return Err(Error::Tree {
                path: root.to_path_buf(),
                msg: format!(
                    "is not a Kafka source tree: expected a checkout (gradle.properties, settings.gradle and core/) or a tree laid out by `okp sources` ({MARKER})"
                ),
            });
        }
        Ok(DirTree { root: root.to_path_buf() })
    }
}

impl SourceTree for DirTree {
    fn describe(&self) -> String {
        format!("directory {}", self.root.display())
    }

    fn declared_version(&self) -> Result<Option<String>> {
        declared_from(|p| self.read(p))
    }

    /// A file of the tree through the guarded reader: a regular file of at most `MAX_SOURCE_FILE`
    /// bytes, never a FIFO or a device, and never through a symbolic link that leaves the tree.
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let p = self.root.join(path);
        if std::fs::symlink_metadata(&p).is_err() {
            return Ok(None);
        }
        let inside = match (p.canonicalize(), self.root.canonicalize()) {
            (Ok(c), Ok(r)) => c.starts_with(&r),
            _ => false,
        };
        if !inside {
            return Err(Error::Tree {
                path: p,
                msg: "a symlink that leaves the tree (or leads nowhere): okp reads a tree's own files only".into(),
            });
        }
        match crate::fsx::read::read_regular(&p, MAX_SOURCE_FILE) {
            Ok(b) => Ok(Some(b)),
            Err(crate::fsx::read::ReadError::Missing) => Ok(None),
            Err(e) => Err(e.into_error(&p, "source file")),
        }
    }

    fn files_under(&self, dir: &str) -> Result<Vec<String>> {
        fn walk(root: &Path, d: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
            for e in std::fs::read_dir(d)? {
                let e = e?;
                // The entry itself, never what a link points at: a linked directory is not walked.
                if e.file_type()?.is_dir() {
                    walk(root, &e.path(), out)?;
                } else {
                    let p = e.path();
                    out.push(p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned());
                }
            }
            Ok(())
        }
        let start = self.root.join(dir);
        let mut out = Vec::new();
        if std::fs::symlink_metadata(&start).is_ok_and(|m| m.is_dir()) {
            walk(&self.root, &start, &mut out).map_err(|e| Error::io(format!("cannot list {}", start.display()), e))?;
        }
        out.sort();
        Ok(out)
    }
}
