//! Where upstream Kafka sources come from, behind one interface: a directory
//! (a checkout), a git revision read straight from the object database, or a
//! release's sources jars from Maven Central.
//!
//! Not here: deciding what to read (see `check`) or downloading (see `maven`).

mod dir;
mod git;
mod release;

pub use dir::DirTree;
pub use git::GitTree;
pub use release::ReleaseTree;

use std::path::Path;

use crate::error::{Error, Result};
use crate::maven::Maven;
use crate::model::Matrix;
use crate::version::KafkaVersion;

/// Name of the marker file okp writes into a tree it laid out from a
/// release's sources jars (there is no gradle.properties in those jars).
pub const MARKER: &str = ".okp-source.json";

/// A read-only view of one Kafka source tree at one version.
pub trait SourceTree {
    /// For reports: what this tree is, e.g. `git /src/kafka at 3.9.2 (1a2b3c4d)`.
    fn describe(&self) -> String;
    /// The version string the tree declares (gradle.properties `version=`),
    /// which may be a snapshot; `None` when the tree does not say.
    fn declared_version(&self) -> Result<Option<String>>;
    /// Bytes of a repository-relative file, or `None` when the tree has no such file.
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>>;
    /// Whether this tree is a release's own published sources jars (the provenance proof is
    /// lenient only there: any other tree must reproduce the release or be refused).
    fn is_release_sources_jar(&self) -> bool {
        false
    }
    /// Every file below the repository directory `dir` (repository paths, sorted), for comparing a
    /// tree with a release's sources jars; empty when there is no such directory.
    fn files_under(&self, dir: &str) -> Result<Vec<String>>;
    /// For a git revision: whether it names a tag, a branch or a bare commit (what a port record
    /// says it read: a release tag or a branch snapshot).
    fn rev_kind(&self) -> Option<RevKind> {
        None
    }
}

/// What the revision a git tree was opened at names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevKind {
    Tag,
    Branch,
    Commit,
}

impl RevKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            RevKind::Tag => "tag",
            RevKind::Branch => "branch",
            RevKind::Commit => "commit",
        }
    }
}

/// The largest source file okp reads from a tree (Kafka's largest is under 300 KB).
pub const MAX_SOURCE_FILE: u64 = 8 << 20;

/// The files of `tree` that are not the release's own sources (`release`, its sources jars) in
/// the modules those jars cover, leaving out `compiled` (the files a splice build compiles, which
/// its proofs judge): each as `path (why)`. A fork's changes there never reach the spliced jars.
pub fn differences_from_release(
    tree: &dyn SourceTree,
    release: &ReleaseTree,
    compiled: &[&str],
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut theirs = std::collections::BTreeSet::new();
    for (path, bytes) in release.files()? {
        theirs.insert(path.clone());
        if compiled.contains(&path.as_str()) {
            continue;
        }
        // A file the tree lacks is no change: the release's own class is what the jar keeps (a tree
        // of the hooked files alone, `okp sources --hooked`, builds).
        match tree.read(&path)? {
            Some(b) if b != bytes => out.push(format!("{path} (differs)")),
            _ => {}
        }
    }
    for module in release.modules() {
        for root in ["src/main/scala", "src/main/java"] {
            for path in tree.files_under(&format!("{module}/{root}"))? {
                let source = path.ends_with(".scala") || path.ends_with(".java");
                if source && !theirs.contains(&path) && !compiled.contains(&path.as_str()) {
                    out.push(format!("{path} (not in the release)"));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Where a command reads upstream sources from, as its flags said.
#[derive(Clone, Copy, Debug)]
pub enum Spec<'a> {
    /// A checkout or a tree laid out by `okp sources` (`--source DIR`).
    Dir(&'a Path),
    /// A revision of a git repository, read from its object database (`--git REPO --rev REV`).
    Git { repo: &'a Path, rev: &'a str },
    /// A release's sources jars from Maven Central. `hint` names the flags that read a checkout
    /// instead, for the message when Maven Central has no sources jar of it.
    Release { version: KafkaVersion, hint: &'a str },
}

/// Opens the tree `spec` names: the one place that knows a release may have no sources jar.
pub fn open(spec: Spec<'_>, matrix: &Matrix, maven: &Maven) -> Result<Box<dyn SourceTree>> {
    match spec {
        Spec::Dir(d) => Ok(Box::new(DirTree::open(d)?)),
        Spec::Git { repo, rev } => Ok(Box::new(GitTree::open(repo, rev)?)),
        Spec::Release { version, hint } => {
            if let Some(r) = matrix.get(version) {
                r.require_sources_jar(hint)?;
            }
            let coords = matrix.coordinates_for(version)?;
            let tree = ReleaseTree::open(maven, &version.to_string(), &coords).map_err(|e| match e {
                Error::NotPublished(m) => Error::Usage(format!(
                    "release {version} has no sources jar: not published on Maven Central: {m}; {hint}"
                )),
                e => e,
            })?;
            Ok(Box::new(tree))
        }
    }
}

/// The release a tree is: `flag` when given (noting a mismatch with what the tree declares), else
/// what the tree declares, which must be a final release.
pub fn release_of(tree: &dyn SourceTree, flag: Option<KafkaVersion>) -> Result<KafkaVersion> {
    let declared = tree.declared_version()?;
    match (flag, declared) {
        (Some(v), Some(d)) => {
            if d != v.to_string() {
                crate::out::note(format!(
                    "note: {} declares version {d}; checking it against the anchors of {v}",
                    tree.describe()
                ));
            }
            Ok(d.parse().unwrap_or(v))
        }
        (Some(v), None) => Ok(v),
        (None, Some(d)) => d.parse().map_err(|_| {
            Error::Usage(format!(
                "{} declares version {d}, which is not a final release; pass --version to choose the anchors to check",
                tree.describe()
            ))
        }),
        (None, None) => Err(Error::Usage(format!(
            "{} does not say which release it is (no gradle.properties version=); pass --version",
            tree.describe()
        ))),
    }
}

/// Refuses an output directory that exists and is not empty.
pub fn refuse_non_empty(out: &Path) -> Result<()> {
    if out.exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(Error::Tree { path: out.to_path_buf(), msg: "already exists and is not empty".into() });
    }
    Ok(())
}

const STAGING_PREFIX: &str = ".okp-sources-";

/// Removes the staging directories that `okp sources` runs killed before they could clean up left
/// in `dir`: ours (same uid), named `.okp-sources-<pid>-…` after a pid that no longer runs.
fn sweep_staging(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) =
            name.strip_prefix(STAGING_PREFIX).and_then(|r| r.split_once('-')).and_then(|(p, _)| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let p = e.path();
        let ours = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if gone && ours && std::fs::remove_dir_all(&p).is_ok() {
            crate::out::note(format!(
                "removed {}, left by an okp sources run (pid {pid}) that was killed",
                p.display()
            ));
        }
    }
}

/// Lays `files` (repository-relative path, bytes) out as a tree at `out` with okp's `marker`,
/// atomically: built in a staging directory beside `out`, then renamed into place. Each path must
/// stay inside the tree. Returns the number of files written.
pub fn lay_out(out: &Path, files: &[(String, Vec<u8>)], marker: &str) -> Result<usize> {
    refuse_non_empty(out)?;
    for (path, _) in files {
        let p = Path::new(path);
        let inside = !path.is_empty() && p.components().all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            return Err(Error::Source(format!("{}: a source path leaves the tree: {path:?}", out.display())));
        }
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
    sweep_staging(parent);
    let staging = tempfile::Builder::new()
        .prefix(&format!("{STAGING_PREFIX}{}-", std::process::id()))
        .tempdir_in(parent)
        .map_err(|e| Error::io(format!("cannot create a staging directory in {}", parent.display()), e))?;
    for (path, bytes) in files {
        let p = staging.path().join(path);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::io(format!("cannot create {}", d.display()), e))?;
        }
        std::fs::write(&p, bytes).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
    }
    std::fs::write(staging.path().join(MARKER), marker).map_err(|e| Error::io("cannot write the source marker", e))?;
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| Error::io(format!("cannot replace empty {}", out.display()), e))?;
    }
    // The staging directory is removed on every error above; from here it becomes `out`.
    let staged = staging.keep();
    std::fs::rename(&staged, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        Error::io(format!("cannot move the laid-out tree to {}", out.display()), e)
    })?;
    Ok(files.len())
}

/// The `version=` value of a gradle.properties file.
pub fn version_from_gradle_properties(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = l.strip_prefix("version")?.trim_start();
        let v = rest.strip_prefix('=')?.trim();
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The `release` value of okp's marker file.
pub fn version_from_marker(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("release")?.as_str().map(str::to_string)
}

/// Version a tree declares, from gradle.properties or okp's marker.
fn declared_from(read: impl Fn(&str) -> Result<Option<Vec<u8>>>) -> Result<Option<String>> {
    if let Some(b) = read("gradle.properties")? {
        return Ok(version_from_gradle_properties(&String::from_utf8_lossy(&b)));
    }
    if let Some(b) = read(MARKER)? {
        return Ok(version_from_marker(&String::from_utf8_lossy(&b)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gradle_version() {
        let t = "group=org.apache.kafka\n# comment\nversion=3.9.2\nscalaVersion=2.13.15\n";
        assert_eq!(version_from_gradle_properties(t).as_deref(), Some("3.9.2"));
        assert_eq!(version_from_gradle_properties("versionX=1\n"), None);
        assert_eq!(version_from_gradle_properties("version = 4.1.0-SNAPSHOT").as_deref(), Some("4.1.0-SNAPSHOT"));
    }
}
