//! How a command ends: the error type every stage returns, the `Failure` kind
//! each error and each failed check maps to, and the one exit code per kind.
//!
//! Exit codes are part of okp's interface (docs/exit-codes.md): scripts and CI
//! branch on them, so a kind never changes its code. A command that ran to the
//! end returns an `Outcome`; one that could not run returns an `Error`; both
//! reach `main` as a `Failure` with its `code()`.
//!
//! Not here: the wording of messages on stderr (`out`).

use std::path::PathBuf;

/// Why a command did not succeed. Each kind has exactly one exit code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The patch set no longer fits upstream: an anchor drifted, a port does not carry over. Exit 1.
    Drift,
    /// A check ran and said no: a scenario, a compile, a bundle's signature, a pre-check, a red state,
    /// a change that did not converge in time. Exit 1.
    CheckFailed,
    /// The input was refused before anything changed: flags, data files, versions, trees. Exit 2.
    BadInput,
    /// Something outside okp failed: mvn or Maven Central, git, a compiler, a transport command, a
    /// cluster that does not answer, the file system (disk full, read-only). Exit 3.
    External,
    /// Ctrl-C or SIGTERM. Exit 130, as a shell reports SIGINT.
    Interrupted,
}

impl Failure {
    /// The process exit code of this kind.
    pub const fn code(self) -> i32 {
        match self {
            Failure::Drift | Failure::CheckFailed => 1,
            Failure::BadInput => 2,
            Failure::External => 3,
            Failure::Interrupted => 130,
        }
    }

    /// Every kind, for the documentation test.
    pub const ALL: [Failure; 5] =
        [Failure::Drift, Failure::CheckFailed, Failure::BadInput, Failure::External, Failure::Interrupted];

    /// The kind a bundle script (install.sh, rollback.sh) meant by its exit status: 2 refused with
    /// nothing changed, 3 a step failed; any other non-zero status is a failed step too.
    pub fn of_script_status(code: Option<i32>) -> Option<Failure> {
        match code {
            Some(0) => None,
            Some(2) => Some(Failure::BadInput),
            _ => Some(Failure::External),
        }
    }
}

/// How a command that ran to the end came out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Outcome {
    Done,
    Failed(Failure),
}

impl Outcome {
    /// `Done` when `ok`, else a failed check.
    pub fn check(ok: bool) -> Outcome {
        if ok {
            Outcome::Done
        } else {
            Outcome::Failed(Failure::CheckFailed)
        }
    }

    /// `Done` when `ok`, else drift.
    pub fn drift_unless(ok: bool) -> Outcome {
        if ok {
            Outcome::Done
        } else {
            Outcome::Failed(Failure::Drift)
        }
    }

    /// The exit code: 0 for done.
    pub fn code(self) -> i32 {
        match self {
            Outcome::Done => 0,
            Outcome::Failed(f) => f.code(),
        }
    }

    /// The worse of two outcomes (for runs over many targets): the higher exit code.
    pub fn worst(self, other: Outcome) -> Outcome {
        if other.code() > self.code() {
            other
        } else {
            self
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A data file (versions.yaml, anchors.yaml, edits.yaml, a nodes file) is malformed or inconsistent.
    #[error("{file}:{line}:{col}: {msg}")]
    Manifest { file: String, line: usize, col: usize, msg: String },

    #[error("{0}")]
    Usage(String),

    #[error("unknown Kafka release {version}; supported releases: {supported}")]
    UnknownRelease { version: String, supported: String },

    /// `path` is shown through `escape::one_line`: a file name may hold any byte but `/`.
    #[error("{}: {msg}", crate::escape::one_line(&path.to_string_lossy()))]
    Tree { path: PathBuf, msg: String },

    /// A file okp wrote carries a `schema` this okp does not read (written by another okp), or
    /// none where one is required. `found` is the value as written (None: no `schema` field).
    #[error("{}: {}; {remedy}", crate::escape::one_line(&path.to_string_lossy()), schema_problem(found.as_deref(), *reads))]
    UnknownSchema { path: PathBuf, found: Option<String>, reads: u32, remedy: &'static str },

    #[error("{0}")]
    Source(String),

    /// Maven Central answered that an artifact does not exist (a release without a sources jar).
    #[error("not published on Maven Central: {0}")]
    NotPublished(String),

    /// Maven Central (through the mvn client), git, a compiler or another tool failed or could not be reached.
    #[error("{0}")]
    External(String),

    /// okp's test harness could not set up or drive a cluster it started (a KRaft cluster without
    /// an id, a tool the release lacks, a runtime classpath it cannot use): nothing the user typed
    /// is wrong, so not bad input. Exit 3.
    #[error("{0}")]
    Harness(String),

    /// Anchors no longer hold, found while doing something else (a build): drift, exit 1.
    #[error("{0}")]
    Drift(String),

    /// A check failed while doing something else (a compile inside `okp verify`): exit 1.
    #[error("{0}")]
    Check(String),

    /// The user stopped the command (Ctrl-C, SIGTERM).
    #[error("interrupted")]
    Interrupted,

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The failure kind this error is.
    pub fn failure(&self) -> Failure {
        match self {
            Error::External(_) | Error::Harness(_) => Failure::External,
            Error::Drift(_) => Failure::Drift,
            Error::Check(_) => Failure::CheckFailed,
            Error::Interrupted => Failure::Interrupted,
            Error::Io { source, .. } if is_system_failure(source) => Failure::External,
            _ => Failure::BadInput,
        }
    }

    /// The process exit code of this error.
    pub fn exit_code(&self) -> i32 {
        self.failure().code()
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}

fn schema_problem(found: Option<&str>, reads: u32) -> String {
    match found.map(crate::escape::one_line) {
        Some(f) => format!("schema {f} is not one this okp reads (it reads schema {reads})"),
        None => format!("has no `schema` field (this okp reads schema {reads})"),
    }
}

/// An I/O error that says the machine failed rather than the input was wrong:
/// a full disk or quota, a read-only file system, a device error. A missing or
/// unreadable file the user named stays bad input.
fn is_system_failure(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    const EIO: i32 = 5;
    const ENOSPC: i32 = 28;
    const EROFS: i32 = 30;
    const EDQUOT: i32 = 122;
    matches!(e.raw_os_error(), Some(EIO | ENOSPC | EROFS | EDQUOT))
        || matches!(
            e.kind(),
            K::StorageFull | K::QuotaExceeded | K::ReadOnlyFilesystem | K::TimedOut | K::OutOfMemory | K::WriteZero
        )
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_code() {
        let codes: Vec<i32> = Failure::ALL.iter().map(|f| f.code()).collect();
        assert_eq!(codes, [1, 1, 2, 3, 130]);
        assert_eq!(Outcome::Done.code(), 0);
        assert_eq!(Outcome::check(false).worst(Outcome::Failed(Failure::External)).code(), 3);
    }

    #[test]
    fn a_path_cannot_forge_a_line_or_a_colour() {
        let planted = PathBuf::from("tree/x\n{\"action\":\"promote\"}\x1b[31m.scala");
        let e = Error::Tree { path: planted.clone(), msg: "not a regular file".into() }.to_string();
        assert_eq!(e, "tree/x\\n{\"action\":\"promote\"}\\x1b[31m.scala: not a regular file");
        let e = Error::UnknownSchema { path: planted, found: Some("9\n9".into()), reads: 1, remedy: "r" }.to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(!e.chars().any(char::is_control), "{e:?}");
    }

    #[test]
    fn io_errors_split_by_cause() {
        let full = Error::io("cannot write x", std::io::Error::from_raw_os_error(28));
        assert_eq!(full.exit_code(), 3);
        let missing = Error::io("cannot read x", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(missing.exit_code(), 2);
        assert_eq!(Error::Interrupted.exit_code(), 130);
        assert_eq!(Error::Harness("the KRaft cluster has no id".into()).exit_code(), 3);
        assert_eq!(Failure::of_script_status(Some(2)), Some(Failure::BadInput));
        assert_eq!(Failure::of_script_status(Some(9)), Some(Failure::External));
    }
}
