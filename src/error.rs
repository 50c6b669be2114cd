//! The error type every command returns, and the exit code each kind maps to.
//!
//! Exit codes are part of okp's interface (README "Exit codes"): scripts and CI
//! branch on them, so a kind never changes its code.

use std::path::PathBuf;

/// Exit status when every check passed.
pub const EXIT_OK: i32 = 0;
/// Exit status when a check ran and found a problem (anchor drift).
pub const EXIT_DRIFT: i32 = 1;
/// Exit status for bad input: flags, files, versions, trees.
pub const EXIT_INPUT: i32 = 2;
/// Exit status when an external tool or service failed (mvn, Maven Central, git).
pub const EXIT_EXTERNAL: i32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A data file (versions.yaml, anchors.yaml) is malformed or inconsistent.
    #[error("{file}:{line}:{col}: {msg}")]
    Manifest { file: String, line: usize, col: usize, msg: String },

    #[error("{0}")]
    Usage(String),

    #[error("unknown Kafka release {version}; supported releases: {supported}")]
    UnknownRelease { version: String, supported: String },

    #[error("{path}: {msg}")]
    Tree { path: PathBuf, msg: String },

    #[error("{0}")]
    Source(String),

    /// Maven Central (through the mvn client) could not be reached or refused.
    #[error("{0}")]
    External(String),

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::External(_) => EXIT_EXTERNAL,
            _ => EXIT_INPUT,
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
