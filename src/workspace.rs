//! What a command works with, built once per command and only by the commands
//! that need it: the model (versions.yaml, anchors.yaml), the patch set with its
//! layers (loaded on first use, then shared), the Maven client and the source
//! opener.
//!
//! Not here: flags (`cli`), what a command does with these (`cmd`), loading and
//! validating each file (`model`, `patchset`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::Result;
use crate::maven::Maven;
use crate::model::{Model, Release};
use crate::patchset::PatchSet;
use crate::source::{self, SourceTree, Spec};
use crate::version::KafkaVersion;

/// The data files a command was pointed at (`--versions`, `--anchors`, `--patches`); `None` is the
/// copy embedded in the binary.
#[derive(Clone, Debug, Default)]
pub struct DataFiles {
    pub versions: Option<PathBuf>,
    pub anchors: Option<PathBuf>,
    pub patches: Option<PathBuf>,
}

pub struct Workspace {
    pub model: Model,
    pub maven: Maven,
    pub files: DataFiles,
    patch_set: OnceLock<PatchSet>,
}

impl Workspace {
    /// Loads and validates the model; the patch set waits for its first use.
    pub fn load(files: &DataFiles) -> Result<Workspace> {
        let model = Model::load(files.versions.as_deref(), files.anchors.as_deref())?;
        Workspace::with_model(model, files.clone())
    }

    pub fn with_model(model: Model, files: DataFiles) -> Result<Workspace> {
        Ok(Workspace { model, maven: Maven::from_env()?, files, patch_set: OnceLock::new() })
    }

    /// The patch set (edits.yaml and our sources), loaded and checked against the model once.
    pub fn patch_set(&self) -> Result<&PatchSet> {
        if let Some(ps) = self.patch_set.get() {
            return Ok(ps);
        }
        let ps = PatchSet::load(self.files.patches.as_deref(), &self.model)?;
        Ok(self.patch_set.get_or_init(|| ps))
    }

    /// The patches directory the command was given, if any.
    pub fn patches_dir(&self) -> Option<&Path> {
        self.files.patches.as_deref()
    }

    /// A release of the matrix, or an error listing the supported ones.
    pub fn release(&self, v: KafkaVersion) -> Result<&Release> {
        self.model.matrix.require(v)
    }

    /// Opens a source tree (see `source::open`).
    pub fn open(&self, spec: Spec<'_>) -> Result<Box<dyn SourceTree>> {
        source::open(spec, &self.model.matrix, &self.maven)
    }
}
