//! Writing a plan into a tree so that the tree ends either fully patched or
//! untouched, also when the process dies midway, and putting the pristine
//! bytes back on revert.
//!
//! How: okp keeps its state in `<tree>/.okp/`. Before touching a file it
//! saves the pristine copy (`pristine/<path>`) and a journal naming every
//! file; each file is then replaced by write-to-temp + fsync + rename;
//! writing `state.json` is the commit point, after which the journal goes.
//! Any okp command that finds a journal first finishes the story: an apply
//! that never committed is rolled back, a revert is rolled forward. Either
//! way the tree is pristine or fully patched, never half.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::apply::Plan;
use crate::error::{Error, Result};
use crate::model::Mode;
use crate::schema::{Absent, Schema};
use crate::version::KafkaVersion;

pub const STATE_DIR: &str = ".okp";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FileState {
    pub path: String,
    /// The file did not exist before apply.
    pub created: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_sha256: Option<String>,
    pub after_sha256: String,
}

/// `.okp/state.json`'s schema: 1, required (every state.json okp wrote has it).
pub const STATE_SCHEMA: Schema = Schema {
    current: 1,
    absent: Absent::Refused,
    remedy: "another okp wrote it, or it is damaged: revert the tree with the okp that patched it \
             (the pristine copies are in .okp/pristine/)",
};

/// What `.okp/state.json` records about an applied patch set.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: u32,
    pub txn: String,
    pub okp_version: String,
    pub release: KafkaVersion,
    pub mode: Mode,
    pub family: String,
    pub patch_set_hash: String,
    /// The layers applied (`core`, `core+metrics`); empty in states written before layers existed (core).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub layers: String,
    pub files: Vec<FileState>,
    /// Directories apply created (deepest last), removed on revert when empty.
    pub created_dirs: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum JournalOp {
    Apply,
    Revert,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Journal {
    op: JournalOp,
    txn: String,
    files: Vec<FileState>,
    created_dirs: Vec<String>,
}

pub use crate::hash::sha256;

/// A tree okp writes to, with the failure-injection hook tests use.
pub struct Tx {
    root: PathBuf,
    /// OKP_TEST_ABORT_AFTER=N: abort the process after N durable steps, as a
    /// kill would, so tests can prove recovery from every point.
    abort_after: Option<u64>,
    steps: u64,
}

impl Tx {
    pub fn new(root: &Path) -> Tx {
        let abort_after = std::env::var("OKP_TEST_ABORT_AFTER").ok().and_then(|v| v.parse().ok());
        Tx { root: root.to_path_buf(), abort_after, steps: 0 }
    }

    fn dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    fn step(&mut self) {
        self.steps += 1;
        if self.abort_after == Some(self.steps) {
            eprintln!("okp: OKP_TEST_ABORT_AFTER={} reached: aborting", self.steps);
            std::process::abort();
        }
    }

    /// Replaces `path` by `bytes` atomically (temp file in the same
    /// directory, fsync, rename), keeping the old file's permissions.
    fn write(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.okp-tmp"));
        let io = |what: &str, e| Error::io(format!("cannot {what} {}", path.display()), e);
        {
            let mut f = std::fs::File::create(&tmp).map_err(|e| io("write a temporary file for", e))?;
            f.write_all(bytes).map_err(|e| io("write", e))?;
            if let Ok(meta) = std::fs::metadata(path) {
                let _ = f.set_permissions(meta.permissions());
            }
            f.sync_all().map_err(|e| io("sync", e))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| io("replace", e))?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        self.step();
        Ok(())
    }

    fn remove(&mut self, path: &Path) -> Result<()> {
        match std::fs::remove_file(path) {
            Ok(()) => {
                self.step();
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("cannot remove {}", path.display()), e)),
        }
    }

    fn state_path(&self) -> PathBuf {
        self.dir().join("state.json")
    }

    fn journal_path(&self) -> PathBuf {
        self.dir().join("journal.json")
    }

    fn pristine(&self, rel: &str) -> PathBuf {
        self.dir().join("pristine").join(rel)
    }

    /// The applied state, if any. A damaged file is an error that changes nothing.
    pub fn state(&self) -> Result<Option<State>> {
        let p = self.state_path();
        match std::fs::read(&p) {
            Ok(b) => {
                STATE_SCHEMA.check(&p, &b)?;
                serde_json::from_slice(&b).map(Some).map_err(|e| {
                    Error::Usage(format!(
                        "{} is damaged ({e}); okp will not guess what was applied. The pristine copies are in {}",
                        p.display(),
                        self.dir().join("pristine").display()
                    ))
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(format!("cannot read {}", p.display()), e)),
        }
    }

    /// Finishes an interrupted apply (roll back) or revert (roll forward).
    /// Returns a sentence saying what it did, or None when there was nothing to do.
    pub fn recover(&mut self) -> Result<Option<String>> {
        let jp = self.journal_path();
        let bytes = match std::fs::read(&jp) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // An apply that died while saving pristine copies, before its
                // journal, touched no tree file: drop its leftovers.
                let stale = self.dir().join("pristine");
                if stale.exists() && !self.state_path().exists() {
                    std::fs::remove_dir_all(&stale)
                        .map_err(|e| Error::io(format!("cannot remove {}", stale.display()), e))?;
                    let _ = std::fs::remove_file(self.dir().join(".gitignore"));
                    let _ = std::fs::remove_dir(self.dir());
                    return Ok(Some("removed the leftovers of an apply that stopped before changing any file".into()));
                }
                return Ok(None);
            }
            Err(e) => return Err(Error::io(format!("cannot read {}", jp.display()), e)),
        };
        let j: Journal = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Usage(format!(
                "{} is damaged ({e}); restore the files from {} by hand",
                jp.display(),
                self.dir().join("pristine").display()
            ))
        })?;
        let committed = matches!(self.state(), Ok(Some(s)) if s.txn == j.txn);
        let msg = match (&j.op, committed) {
            // The pristine copies stay: revert needs them.
            (JournalOp::Apply, true) => "finished an apply that had committed".to_string(),
            (JournalOp::Apply, false) | (JournalOp::Revert, _) => {
                self.restore(&j.files, &j.created_dirs)?;
                self.remove(&self.state_path())?;
                self.cleanup_pristine(&j.files)?;
                match j.op {
                    JournalOp::Apply => {
                        format!("rolled back an interrupted apply ({} files restored to pristine)", j.files.len())
                    }
                    JournalOp::Revert => {
                        format!("finished an interrupted revert ({} files restored to pristine)", j.files.len())
                    }
                }
            }
        };
        self.remove(&jp)?;
        Ok(Some(msg))
    }

    /// Puts every file back as it was before apply.
    fn restore(&mut self, files: &[FileState], created_dirs: &[String]) -> Result<()> {
        for f in files {
            let target = self.root.join(&f.path);
            if f.created {
                self.remove(&target)?;
            } else {
                let p = self.pristine(&f.path);
                match std::fs::read(&p) {
                    Ok(b) => {
                        if f.before_sha256.as_deref().is_some_and(|h| h != sha256(&b)) {
                            return Err(Error::Usage(format!(
                                "{} does not hold the pristine bytes recorded for {}; restore by hand",
                                p.display(),
                                f.path
                            )));
                        }
                        self.write(&target, &b)?
                    }
                    // Journals are written after every pristine copy is saved, so a
                    // missing copy was already restored and cleaned up by an earlier,
                    // interrupted recovery: the file must hold the pristine bytes.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        let now = std::fs::read(&target).ok().map(|b| sha256(&b));
                        if now.is_none() || now != f.before_sha256 {
                            return Err(Error::Usage(format!(
                                "the pristine copy of {} is missing from {} and the file is not pristine; restore it by hand",
                                f.path,
                                self.dir().join("pristine").display()
                            )));
                        }
                    }
                    Err(e) => return Err(Error::io(format!("cannot read {}", p.display()), e)),
                }
            }
        }
        for d in created_dirs.iter().rev() {
            let _ = std::fs::remove_dir(self.root.join(d));
        }
        Ok(())
    }

    fn cleanup_pristine(&mut self, files: &[FileState]) -> Result<()> {
        for f in files.iter().filter(|f| !f.created) {
            self.remove(&self.pristine(&f.path))?;
        }
        let _ = std::fs::remove_dir_all(self.dir().join("pristine"));
        Ok(())
    }

    /// Checks everything that could make a write fail, before writing anything.
    pub fn preflight(&self, plan: &Plan) -> Result<()> {
        for c in &plan.changes {
            let p = self.root.join(&c.path);
            if c.before.is_some() {
                let meta = std::fs::metadata(&p).map_err(|e| Error::io(format!("cannot stat {}", p.display()), e))?;
                if meta.permissions().readonly() {
                    return Err(Error::Tree {
                        path: p,
                        msg: "is read-only; okp will not replace it (nothing was changed)".into(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Applies `plan`; `state` is what to record (its `files` are filled in here).
    pub fn apply(&mut self, plan: &Plan, mut state: State) -> Result<State> {
        let txn = format!(
            "{:x}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
        );
        state.txn = txn.clone();
        state.files = plan
            .changes
            .iter()
            .map(|c| FileState {
                path: c.path.clone(),
                created: c.before.is_none(),
                before_sha256: c.before.as_deref().map(sha256),
                after_sha256: sha256(&c.after),
            })
            .collect();
        let mut dirs = Vec::new();
        for c in plan.changes.iter().filter(|c| c.before.is_none()) {
            let mut missing = Vec::new();
            let mut d = Path::new(&c.path).parent();
            while let Some(p) = d.filter(|p| !p.as_os_str().is_empty()) {
                if self.root.join(p).exists() {
                    break;
                }
                missing.push(p.to_string_lossy().into_owned());
                d = p.parent();
            }
            // Two new files may share a new directory: create (and later remove) it once.
            for m in missing.into_iter().rev() {
                if !dirs.contains(&m) {
                    dirs.push(m);
                }
            }
        }
        state.created_dirs = dirs.clone();

        let sd = self.dir();
        std::fs::create_dir_all(sd.join("pristine"))
            .map_err(|e| Error::io(format!("cannot create {}", sd.display()), e))?;
        // okp's own files never show up as changes in a git work tree.
        self.write(&sd.join(".gitignore"), b"*\n")?;
        for c in &plan.changes {
            if let Some(b) = &c.before {
                let p = self.pristine(&c.path);
                std::fs::create_dir_all(p.parent().unwrap_or(&sd))
                    .map_err(|e| Error::io(format!("cannot create a directory for {}", p.display()), e))?;
                self.write(&p, b)?;
            }
        }
        let journal = Journal { op: JournalOp::Apply, txn, files: state.files.clone(), created_dirs: dirs.clone() };
        self.write(&self.journal_path(), &serde_json::to_vec_pretty(&journal).unwrap_or_default())?;
        for d in &dirs {
            std::fs::create_dir(self.root.join(d)).map_err(|e| Error::io(format!("cannot create {d}"), e))?;
        }
        for c in &plan.changes {
            self.write(&self.root.join(&c.path), &c.after)?;
        }
        self.write(&self.state_path(), &serde_json::to_vec_pretty(&state).unwrap_or_default())?;
        self.remove(&self.journal_path())?;
        Ok(state)
    }

    /// Restores the pristine bytes. Refuses when a patched file changed since
    /// apply, unless `force` (then those changes are discarded).
    pub fn revert(&mut self, state: &State, force: bool) -> Result<usize> {
        if !force {
            let mut changed = Vec::new();
            for f in &state.files {
                match std::fs::read(self.root.join(&f.path)) {
                    Ok(b) if sha256(&b) == f.after_sha256 => {}
                    _ => changed.push(f.path.clone()),
                }
            }
            if !changed.is_empty() {
                return Err(Error::Usage(format!(
                    "these files changed since okp applied the patch set, so reverting would lose those changes: {} (use --force to discard them)",
                    changed.join(", ")
                )));
            }
        }
        let journal = Journal {
            op: JournalOp::Revert,
            txn: state.txn.clone(),
            files: state.files.clone(),
            created_dirs: state.created_dirs.clone(),
        };
        self.write(&self.journal_path(), &serde_json::to_vec_pretty(&journal).unwrap_or_default())?;
        self.restore(&state.files, &state.created_dirs)?;
        self.remove(&self.state_path())?;
        self.cleanup_pristine(&state.files)?;
        self.remove(&self.journal_path())?;
        let _ = std::fs::remove_file(self.dir().join(".gitignore"));
        let _ = std::fs::remove_dir(self.dir());
        Ok(state.files.len())
    }
}
