//! A Kafka source tree on disk: a checkout, or a tree okp laid out.

use std::path::{Path, PathBuf};

use super::{declared_from, SourceTree, MARKER};
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

    fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let p = self.root.join(path);
        match std::fs::read(&p) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(format!("cannot read {}", p.display()), e)),
        }
    }
}
