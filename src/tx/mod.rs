//! Writing a plan into a tree so that the tree ends either fully patched or
//! untouched, also when the process dies midway or a write fails, and
//! putting the pristine bytes back on revert.
//!
//! How: okp keeps its state in `<tree>/.okp/`. Every command first takes the
//! tree's lock (`lock`), so two okp never work on one tree at once. Before
//! touching a file, apply makes sure it can (`preflight`: every directory
//! writable, room on every filesystem), saves the pristine copy
//! (`pristine/<path>`) and a journal naming every file; each file is then
//! replaced by write-to-temp + fsync + rename; writing `state.json` is the
//! commit point, after which the journal goes. A write that fails rolls the
//! apply back before okp exits. Any okp command that finds a journal first
//! finishes the story, under the lock: an apply that never committed is
//! rolled back, a revert is rolled forward, and the temp files the
//! interrupted command left are removed. Either way the tree is pristine or
//! fully patched, never half. Whatever okp reads back from `.okp/` is
//! validated, its paths confined to the tree, before okp acts on it
//! (`record`). docs/apply-safety.md tells the same story for users.
//!
//! Not here: what to write (see `apply`), the rule for paths (see `model::confine`).

mod lock;
mod preflight;
mod record;

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::apply::Plan;
use crate::error::{Error, Result};
use crate::model::confine::confine;
pub use crate::model::confine::STATE_DIR;
use preflight::Need;
pub use record::{FileState, State};
use record::{Journal, JournalOp};

pub use crate::hash::sha256;

/// Where okp stages the bytes of `path`: `.<name>.okp-tmp` beside it. The
/// sweep removes these names (and the preflight probe's), and no others.
fn tmp_path(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!(".{name}.okp-tmp"))
}

fn is_tmp_name(name: &str) -> bool {
    name.len() > ".x.okp-tmp".len() - 1 && name.starts_with('.') && name.ends_with(".okp-tmp")
}

/// Test hooks, each a stand-in for an event a test cannot cause on demand.
#[derive(Default)]
struct Faults {
    /// OKP_TEST_ABORT_AFTER=N: abort the process after N durable steps, as a
    /// kill would, so tests can prove recovery from every point.
    abort_after: Option<u64>,
    /// OKP_TEST_ABORT_IN_WRITE=N: abort while the N-th file write has its
    /// bytes in the temp file, before the rename (a kill mid-write).
    abort_in_write: Option<u64>,
    /// OKP_TEST_ENOSPC_AT_WRITE=N: the N-th file write fails with ENOSPC after
    /// half its bytes reached the temp file (a disk filling up mid-apply).
    enospc_at_write: Option<u64>,
}

impl Faults {
    fn from_env() -> Faults {
        let n = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
        Faults {
            abort_after: n("OKP_TEST_ABORT_AFTER"),
            abort_in_write: n("OKP_TEST_ABORT_IN_WRITE"),
            enospc_at_write: n("OKP_TEST_ENOSPC_AT_WRITE"),
        }
    }
}

/// What finishing an interrupted command did.
enum Finished {
    Leftovers,
    CommittedApply,
    RolledBack(usize),
    RevertedForward(usize),
}

/// A tree okp works on, with its lock held.
pub struct Tx {
    root: PathBuf,
    /// None only for a tree okp cannot write to, opened to be read (see `open_to_read`).
    lock: Option<lock::Lock>,
    faults: Faults,
    steps: u64,
    writes: u64,
}

impl Tx {
    /// Takes the tree's lock, or refuses at once when another okp holds it.
    pub fn open(root: &Path) -> Result<Tx> {
        Tx::open_with(root, false)
    }

    /// Like `open`, except that a tree okp cannot write to at all (a
    /// read-only mount, a checkout it may not write in) is opened without the
    /// lock: it can be read, and an interrupted command in it is refused, not finished.
    pub fn open_to_read(root: &Path) -> Result<Tx> {
        Tx::open_with(root, true)
    }

    fn open_with(root: &Path, read_only_is_fine: bool) -> Result<Tx> {
        let mut tx = Tx { root: root.to_path_buf(), lock: None, faults: Faults::from_env(), steps: 0, writes: 0 };
        match lock::Lock::acquire(root) {
            Ok(l) => tx.lock = Some(l),
            Err(Error::Io { source, .. })
                if read_only_is_fine
                    && matches!(source.raw_os_error(), Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM)) =>
            {
                return Ok(tx)
            }
            Err(e) => return Err(e),
        }
        // okp's own files never show up as changes in a git work tree.
        let gi = tx.dir().join(".gitignore");
        if crate::fsx::read::input_if_any(&gi, 64, ".gitignore").ok().flatten().as_deref() != Some(b"*\n") {
            tx.write(&gi, b"*\n", None)?;
        }
        Ok(tx)
    }

    fn dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    fn step(&mut self) {
        self.steps += 1;
        if self.faults.abort_after == Some(self.steps) {
            crate::out::note(format!("OKP_TEST_ABORT_AFTER={} reached: aborting", self.steps));
            std::process::abort();
        }
    }

    /// Replaces `path` by `bytes` atomically (temp file in the same
    /// directory, fsync, rename) with the permissions `mode_of` has, if it
    /// exists. A failed write removes its temp file.
    fn write(&mut self, path: &Path, bytes: &[u8], mode_of: Option<&Path>) -> Result<()> {
        self.writes += 1;
        let tmp = tmp_path(path);
        if let Err(e) = self.stage(&tmp, bytes, mode_of).and_then(|()| std::fs::rename(&tmp, path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(format!("cannot write {}", path.display()), e));
        }
        sync_dir(path.parent());
        self.step();
        Ok(())
    }

    fn stage(&self, tmp: &Path, bytes: &[u8], mode_of: Option<&Path>) -> std::io::Result<()> {
        let mut f =
            OpenOptions::new().write(true).create(true).truncate(true).custom_flags(libc::O_NOFOLLOW).open(tmp)?;
        if let Some(meta) = mode_of.and_then(|p| std::fs::metadata(p).ok()) {
            let _ = f.set_permissions(meta.permissions());
        }
        if self.faults.enospc_at_write == Some(self.writes) {
            f.write_all(&bytes[..bytes.len() / 2])?;
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        if self.faults.abort_in_write == Some(self.writes) {
            crate::out::note(format!("OKP_TEST_ABORT_IN_WRITE={} reached: aborting", self.writes));
            std::process::abort();
        }
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

    fn pristine(&self, rel: &str) -> PathBuf {
        self.dir().join("pristine").join(rel)
    }

    /// The applied state, if any, validated. A damaged file is an error that changes nothing.
    pub fn state(&self) -> Result<Option<State>> {
        record::read_state(&self.root)
    }

    /// Finishes an interrupted apply (roll back) or revert (roll forward) and
    /// removes the temp files it left. Returns a sentence saying what it did,
    /// or None when there was nothing to do.
    pub fn recover(&mut self) -> Result<Option<String>> {
        Ok(self.finish()?.map(|f| match f {
            Finished::Leftovers => "removed the leftovers of an apply that stopped before changing any file".into(),
            Finished::CommittedApply => "finished an apply that had committed".into(),
            Finished::RolledBack(n) => format!("rolled back an interrupted apply ({n} files restored to pristine)"),
            Finished::RevertedForward(n) => {
                format!("finished an interrupted revert ({n} files restored to pristine)")
            }
        }))
    }

    fn finish(&mut self) -> Result<Option<Finished>> {
        if self.lock.is_none() {
            // Recovery never runs without the lock.
            if record::journal_path(&self.root).exists() {
                return Err(Error::Tree {
                    path: self.root.clone(),
                    msg: "an interrupted okp command left its journal here, but okp cannot lock this tree (it is not writable), so it will not finish that command; make the tree writable and run `okp status`".into(),
                });
            }
            return Ok(None);
        }
        self.sweep_state_dir()?;
        let Some(j) = record::read_journal(&self.root)? else {
            // An apply that stopped while saving pristine copies, before its
            // journal, touched no tree file: drop its leftovers.
            let stale = self.dir().join("pristine");
            if stale.exists() && !record::state_path(&self.root).exists() {
                std::fs::remove_dir_all(&stale)
                    .map_err(|e| Error::io(format!("cannot remove {}", stale.display()), e))?;
                return Ok(Some(Finished::Leftovers));
            }
            return Ok(None);
        };
        self.sweep_tree(j.files.iter().map(|f| f.path.as_str()))?;
        let committed = self.state()?.is_some_and(|s| s.txn == j.txn);
        let done = match (j.op, committed) {
            // The pristine copies stay: revert needs them.
            (JournalOp::Apply, true) => Finished::CommittedApply,
            (op, _) => {
                self.restore(&j.files, &j.created_dirs)?;
                self.remove(&record::state_path(&self.root))?;
                self.cleanup_pristine(&j.files)?;
                match op {
                    JournalOp::Apply => Finished::RolledBack(j.files.len()),
                    JournalOp::Revert => Finished::RevertedForward(j.files.len()),
                }
            }
        };
        self.remove(&record::journal_path(&self.root))?;
        Ok(Some(done))
    }

    /// Removes every okp temp file under `.okp/` (nobody else writes there).
    fn sweep_state_dir(&self) -> Result<()> {
        fn walk(d: &Path) -> std::io::Result<()> {
            for e in std::fs::read_dir(d)? {
                let e = e?;
                let ft = e.file_type()?;
                if ft.is_dir() {
                    walk(&e.path())?;
                } else if is_tmp_name(&e.file_name().to_string_lossy()) {
                    std::fs::remove_file(e.path())?;
                }
            }
            Ok(())
        }
        walk(&self.dir())
            .map_err(|e| Error::io(format!("cannot clean up okp's temp files in {}", self.dir().display()), e))
    }

    /// Removes the temp files okp names when writing `paths` (tree-relative,
    /// already confined), and the preflight probe beside them.
    fn sweep_tree<'a>(&self, paths: impl Iterator<Item = &'a str>) -> Result<()> {
        for p in paths {
            let target = self.root.join(p);
            let probe = target.parent().map(|d| d.join(preflight::PROBE));
            for t in [Some(tmp_path(&target)), probe].into_iter().flatten() {
                match std::fs::symlink_metadata(&t) {
                    Ok(m) if !m.is_dir() => std::fs::remove_file(&t)
                        .map_err(|e| Error::io(format!("cannot remove okp's temp file {}", t.display()), e))?,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Puts every file back as it was before apply.
    fn restore(&mut self, files: &[FileState], created_dirs: &[String]) -> Result<()> {
        for f in files {
            let target = self.root.join(&f.path);
            if f.created {
                self.remove(&target)?;
                continue;
            }
            let p = self.pristine(&f.path);
            match crate::fsx::read::input_if_any(&p, crate::fsx::read::MAX_SOURCE, "pristine copy")? {
                Some(b) => {
                    if f.before_sha256.as_deref().is_some_and(|h| h != sha256(&b)) {
                        return Err(Error::Usage(format!(
                            "{} does not hold the pristine bytes recorded for {}; restore by hand",
                            p.display(),
                            f.path
                        )));
                    }
                    self.put_back(&p, &target, &b)?
                }
                // Journals are written after every pristine copy is saved, so a
                // missing copy was already put back by an earlier, interrupted
                // recovery: the file must hold the pristine bytes.
                None => {
                    let now = crate::fsx::read::input_if_any(&target, crate::fsx::read::MAX_SOURCE, "source file")?
                        .map(|b| sha256(&b));
                    if now.is_none() || now != f.before_sha256 {
                        return Err(Error::Usage(format!(
                            "the pristine copy of {} is missing from {} and the file is not pristine; restore it by hand",
                            f.path,
                            self.dir().join("pristine").display()
                        )));
                    }
                }
            }
        }
        for d in created_dirs.iter().rev() {
            let _ = std::fs::remove_dir(self.root.join(d));
        }
        Ok(())
    }

    /// Moves the pristine copy back over `target`. A rename needs no free
    /// space, so a full disk does not stop a roll-back; across filesystems
    /// (a mount inside the tree) the bytes are written instead.
    fn put_back(&mut self, copy: &Path, target: &Path, bytes: &[u8]) -> Result<()> {
        match std::fs::rename(copy, target) {
            Ok(()) => {
                sync_dir(target.parent());
                sync_dir(copy.parent());
                self.step();
                Ok(())
            }
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => self.write(target, bytes, Some(target)),
            Err(e) => Err(Error::io(format!("cannot put {} back from {}", target.display(), copy.display()), e)),
        }
    }

    fn cleanup_pristine(&mut self, files: &[FileState]) -> Result<()> {
        for f in files.iter().filter(|f| !f.created) {
            self.remove(&self.pristine(&f.path))?;
        }
        let _ = std::fs::remove_dir_all(self.dir().join("pristine"));
        Ok(())
    }

    /// The tree path of each change, confined to the tree (and its pristine copy to `.okp/pristine/`).
    fn targets(&self, plan: &Plan) -> Result<Vec<PathBuf>> {
        let refuse = |p: &str, why| Error::Tree {
            path: self.root.clone(),
            msg: format!("the patch set's file {p:?} {why}; nothing was changed"),
        };
        let mut out = Vec::with_capacity(plan.changes.len());
        for c in &plan.changes {
            out.push(confine(&c.path, Some(&self.root)).map_err(|why| refuse(&c.path, why))?);
            if c.before.is_some() {
                confine(&format!("pristine/{}", c.path), Some(&self.dir())).map_err(|why| refuse(&c.path, why))?;
            }
        }
        Ok(out)
    }

    /// Checks everything that could make a write fail, before writing
    /// anything: paths, okp's temp files from an earlier run, read-only
    /// files, unwritable directories, room on each filesystem.
    pub fn preflight(&self, plan: &Plan) -> Result<()> {
        let targets = self.targets(plan)?;
        self.sweep_tree(plan.changes.iter().map(|c| c.path.as_str()))?;
        for (c, p) in plan.changes.iter().zip(&targets) {
            if c.before.is_some() {
                let meta = std::fs::metadata(p).map_err(|e| Error::io(format!("cannot stat {}", p.display()), e))?;
                if meta.permissions().readonly() {
                    return Err(Error::Tree {
                        path: p.clone(),
                        msg: "is read-only; okp will not replace it (nothing was changed)".into(),
                    });
                }
            }
        }
        let blocks = |n: usize| (n as u64).div_ceil(4096) * 4096;
        let copies = plan.changes.iter().filter_map(|c| c.before.as_ref());
        // Pristine copies, their directories, the journal and the state (each written through a temp file).
        let mut needs = vec![Need {
            dir: self.dir(),
            bytes: copies.clone().map(|b| blocks(b.len())).sum::<u64>() + 4 * blocks(600 * plan.changes.len()),
            inodes: 2 * copies.count() as u64 + 8,
        }];
        for (c, p) in plan.changes.iter().zip(&targets) {
            // The nearest existing directory: the file's, or the one okp creates new directories in.
            let dir = existing_ancestor(p.parent().unwrap_or(&self.root));
            let depth = p.parent().map(|d| d.components().count() - dir.components().count()).unwrap_or(0) as u64;
            needs.push(Need { dir, bytes: blocks(c.after.len()), inodes: 1 + depth });
        }
        let mut dirs: Vec<PathBuf> = needs.iter().map(|n| n.dir.clone()).collect();
        dirs.sort();
        dirs.dedup();
        preflight::writable(&dirs)?;
        preflight::room(&needs)
    }

    /// Applies `plan`; `state` is what to record (its `files` are filled in
    /// here). A failure after the first write is rolled back before returning.
    pub fn apply(&mut self, plan: &Plan, mut state: State) -> Result<State> {
        self.targets(plan)?;
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
        let journal = Journal {
            schema: record::SCHEMA,
            op: JournalOp::Apply,
            txn,
            files: state.files.clone(),
            created_dirs: dirs,
        };
        match self.apply_steps(plan, &state, &journal) {
            Ok(()) => Ok(state),
            Err(e) => Err(self.roll_back(e)),
        }
    }

    fn apply_steps(&mut self, plan: &Plan, state: &State, journal: &Journal) -> Result<()> {
        let pd = self.dir().join("pristine");
        std::fs::create_dir_all(&pd).map_err(|e| Error::io(format!("cannot create {}", pd.display()), e))?;
        for c in &plan.changes {
            if let Some(b) = &c.before {
                let p = self.pristine(&c.path);
                let parent = p.parent().unwrap_or(&pd);
                std::fs::create_dir_all(parent)
                    .map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
                self.write(&p, b, Some(&self.root.join(&c.path)))?;
            }
        }
        self.write(&record::journal_path(&self.root), &record::to_bytes(journal), None)?;
        for d in &journal.created_dirs {
            let p = self.root.join(d);
            std::fs::create_dir(&p).map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
        }
        for c in &plan.changes {
            let p = self.root.join(&c.path);
            self.write(&p, &c.after, Some(&p))?;
        }
        self.write(&record::state_path(&self.root), &record::to_bytes(state), None)?;
        self.remove(&record::journal_path(&self.root))
    }

    /// Rolls a failed apply back at once (the same path as recovery) and says so in the error.
    fn roll_back(&mut self, e: Error) -> Error {
        let note = match self.finish() {
            Ok(Some(Finished::CommittedApply)) => {
                "okp had already recorded the patch set as applied, so the tree is fully patched".to_string()
            }
            Ok(_) => "okp rolled back what it had written: nothing was changed".to_string(),
            Err(e2) => {
                format!("rolling back failed too ({e2}); the next okp command on this tree finishes the roll-back")
            }
        };
        match e {
            Error::Io { context, source } => Error::Io { context: format!("{context} ({note})"), source },
            Error::Tree { path, msg } => Error::Tree { path, msg: format!("{msg}; {note}") },
            Error::Usage(m) => Error::Usage(format!("{m}; {note}")),
            other => other,
        }
    }

    /// Restores the pristine bytes. Refuses when a patched file changed since
    /// apply, unless `force` (then those changes are discarded).
    pub fn revert(&mut self, state: &State, force: bool) -> Result<usize> {
        if !force {
            let mut changed = Vec::new();
            for f in &state.files {
                match crate::fsx::read::input(&self.root.join(&f.path), crate::fsx::read::MAX_SOURCE, "source file") {
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
        // A revert that cannot finish does not start.
        let mut dirs: Vec<PathBuf> = state
            .files
            .iter()
            .map(|f| existing_ancestor(self.root.join(&f.path).parent().unwrap_or(&self.root)))
            .collect();
        dirs.push(self.dir());
        dirs.sort();
        dirs.dedup();
        preflight::writable(&dirs)?;
        let journal = Journal {
            schema: record::SCHEMA,
            op: JournalOp::Revert,
            txn: state.txn.clone(),
            files: state.files.clone(),
            created_dirs: state.created_dirs.clone(),
        };
        self.write(&record::journal_path(&self.root), &record::to_bytes(&journal), None)?;
        self.restore(&state.files, &state.created_dirs)?;
        self.remove(&record::state_path(&self.root))?;
        self.cleanup_pristine(&state.files)?;
        self.remove(&record::journal_path(&self.root))?;
        // `.okp/` itself goes with the lock, when nothing but the lock is left in it.
        Ok(state.files.len())
    }
}

/// `dir`, or its nearest ancestor that exists.
fn existing_ancestor(dir: &Path) -> PathBuf {
    dir.ancestors().find(|a| a.exists()).unwrap_or(dir).to_path_buf()
}

fn sync_dir(dir: Option<&Path>) {
    if let Some(d) = dir {
        let _ = crate::fsx::sync_dir(d);
    }
}
