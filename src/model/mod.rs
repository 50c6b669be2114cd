//! The data okp is driven by: the release matrix (versions.yaml) and the
//! anchor manifest (anchors.yaml). Loaded and validated once; everything
//! downstream trusts these types. `yaml` reads and parses every YAML input
//! okp takes, with its caps.
//!
//! Not here: reading upstream sources (see `source`) or matching (see `anchor`).

pub mod anchors;
pub mod confine;
pub mod guards;
pub mod versions;
pub mod yaml;

use crate::error::Error;

pub use anchors::{Anchor, AnchorSet, Layer, Layers, Pattern};
pub use guards::Guard;
pub use versions::{Coordinate, Matrix, Mode, ModeDefault, Pair, PairFilter, Release};

/// Where a data file came from, for error messages.
#[derive(Clone, Debug)]
pub struct Origin {
    pub name: String,
    pub text: String,
}

impl Origin {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Origin { name: name.into(), text: text.into() }
    }

    /// An error about the entry whose text contains `needle` (the first line
    /// holding it, searched from `after`), so a validation error points at the
    /// offending entry even though it is found after parsing.
    pub fn error_at(&self, needle: &str, msg: impl Into<String>) -> Error {
        let (line, col) = self.locate(needle).unwrap_or((1, 1));
        Error::Manifest { file: self.name.clone(), line, col, msg: msg.into() }
    }

    pub fn locate(&self, needle: &str) -> Option<(usize, usize)> {
        self.text.lines().enumerate().find_map(|(i, l)| l.find(needle).map(|c| (i + 1, c + 1)))
    }

    /// `error_at`, searching only from the first line that starts with `section` (e.g. `guards:`),
    /// so an entry is found in its own section even when another section holds the same text.
    pub fn error_in_section(&self, section: &str, needle: &str, msg: impl Into<String>) -> Error {
        let start = self.text.lines().position(|l| l.starts_with(section)).unwrap_or(0);
        let (line, col) = self
            .text
            .lines()
            .enumerate()
            .skip(start)
            .find_map(|(i, l)| l.find(needle).map(|c| (i + 1, c + 1)))
            .unwrap_or((1, 1));
        Error::Manifest { file: self.name.clone(), line, col, msg: msg.into() }
    }
}

/// The embedded copies, so `okp` works from any directory on a fresh machine.
pub const EMBEDDED_VERSIONS: &str = include_str!("../../versions.yaml");
pub const EMBEDDED_ANCHORS: &str = include_str!("../../anchors.yaml");

/// The matrix and anchors together, cross-validated.
#[derive(Debug)]
pub struct Model {
    pub matrix: Matrix,
    pub anchors: AnchorSet,
}

impl Model {
    /// Loads the files given, or the embedded copies.
    pub fn load(versions: Option<&std::path::Path>, anchors: Option<&std::path::Path>) -> Result<Model, Error> {
        let read = |p: Option<&std::path::Path>, embedded: &str, name: &str| -> Result<Origin, Error> {
            match p {
                Some(p) => yaml::read(p, yaml::Input::Data),
                None => Ok(Origin::new(format!("{name} (embedded)"), embedded)),
            }
        };
        let vo = read(versions, EMBEDDED_VERSIONS, "versions.yaml")?;
        let ao = read(anchors, EMBEDDED_ANCHORS, "anchors.yaml")?;
        let matrix = Matrix::parse(&vo)?;
        let anchors = AnchorSet::parse(&ao)?;
        anchors.check_coverage(&matrix, &ao)?;
        Ok(Model { matrix, anchors })
    }
}
