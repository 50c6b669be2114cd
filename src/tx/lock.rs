//! One okp at a time per tree: `<tree>/.okp/lock`, held with flock(2) (`fsx::lock_file`) for
//! as long as a command works on the tree, and holding the holder's pid for
//! the message another okp prints when it finds the lock taken.
//!
//! A second command refuses at once (it does not wait): the caller can
//! retry, and a script learns about the collision instead of queueing
//! behind it. The flock is what counts, not the file: the kernel drops it
//! when its holder exits, however it exits, so a killed okp's lock is free
//! without anyone cleaning up. Before the lock file, `.okp/.gitignore` (`*`)
//! is created, so the directory never shows up in `git status`; the holder
//! removes the lock file before letting go, and when a command leaves a tree
//! that carries no patch set, `.gitignore` and `.okp/` too; a newcomer that
//! locked a file that was removed meanwhile starts again with the new one.
//!
//! Not here: what the holder does with the tree (see `tx`).

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fsx::{FileLock, LockRefusal, NotALockFile};
use crate::model::confine::STATE_DIR;

/// The files that may be in `.okp/` when the tree carries no patch set.
const LOCK: &str = "lock";
const GITIGNORE: &str = ".gitignore";

/// A held lock; dropping it lets go (and tidies `.okp/` away when it is otherwise empty).
pub struct Lock {
    /// The flock (`fsx::lock_file`); dropping it removes the lock file, then lets go.
    lock: Option<FileLock>,
    dir: PathBuf,
}

impl Lock {
    /// Takes the lock of the tree at `root`, or refuses at once naming the holder.
    pub fn acquire(root: &Path) -> Result<Lock> {
        let dir = root.join(STATE_DIR);
        let path = dir.join(LOCK);
        // Each round ends with the lock, a refusal, or `.okp/` removed by its last holder as we took it.
        for _ in 0..100 {
            state_dir(&dir)?;
            match crate::fsx::lock_file(&path, false, &mut |_| {})? {
                Ok(lock) => return Ok(Lock { lock: Some(lock), dir }),
                // The holder removed .okp/ as it finished: start again.
                Err(LockRefusal::Gone) => continue,
                Err(LockRefusal::Not(NotALockFile::Symlink)) => {
                    return Err(Error::Tree { path, msg: "is a symlink; okp will not follow it".into() })
                }
                Err(LockRefusal::Not(NotALockFile::NotRegular)) => {
                    return Err(Error::Tree { path, msg: "is not a regular file; okp will not use it".into() })
                }
                Err(LockRefusal::Held(pid)) => {
                    let pid = pid.parse::<u32>().map_or("unknown".to_string(), |p| p.to_string());
                    return Err(Error::Tree {
                        path: root.to_path_buf(),
                        msg: format!("another okp (pid {pid}) is working on this tree; try again when it has finished"),
                    });
                }
            }
        }
        Err(Error::Tree { path, msg: "kept being replaced while okp tried to lock it; try again".into() })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let only_ours = std::fs::read_dir(&self.dir)
            .map(|rd| rd.flatten().all(|e| e.file_name() == LOCK || e.file_name() == GITIGNORE))
            .unwrap_or(false);
        if only_ours {
            // .gitignore goes first, while the lock is still linked and held, so no
            // newcomer's .gitignore is removed; the lock file goes before the flock.
            let _ = std::fs::remove_file(self.dir.join(GITIGNORE));
            let _ = std::fs::remove_file(self.dir.join(LOCK));
            let _ = std::fs::remove_dir(&self.dir);
        }
        // The FileLock removes the lock file if it is still there and still its own, then lets go.
        drop(self.lock.take());
    }
}

/// `.okp/` as a plain directory holding `.gitignore`, made if missing; a
/// symlink or anything else in its place is refused.
fn state_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::Tree {
                path: dir.to_path_buf(),
                msg: "is a symlink; okp keeps its state in a plain directory and will not follow it".into(),
            })
        }
        Ok(m) if !m.is_dir() => {
            return Err(Error::Tree {
                path: dir.to_path_buf(),
                msg: "is not a directory; okp keeps its state there".into(),
            })
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(format!("cannot create {}", dir.display()), e)),
        },
        Err(e) => return Err(Error::io(format!("cannot look at {}", dir.display()), e)),
    }
    // Made whole before the lock file exists; its content is checked again under the lock.
    let gi = dir.join(GITIGNORE);
    match OpenOptions::new().write(true).create_new(true).mode(0o644).open(&gi) {
        Ok(mut f) => std::io::Write::write_all(&mut f, b"*\n")
            .map_err(|e| Error::io(format!("cannot write {}", gi.display()), e)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        // .okp/ went with its last holder: the next round makes it again.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("cannot create {}", gi.display()), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_dropped_and_an_empty_okp_goes() {
        let t = tempfile::tempdir().unwrap();
        let a = Lock::acquire(t.path()).unwrap();
        let pid = std::fs::read_to_string(t.path().join(".okp/lock")).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        assert_eq!(std::fs::read_to_string(t.path().join(".okp/.gitignore")).unwrap(), "*\n");
        // flock locks belong to the open file, so a second open in this process conflicts too.
        let e = Lock::acquire(t.path()).err().unwrap().to_string();
        assert!(e.contains(&format!("another okp (pid {}) is working on this tree", std::process::id())), "{e}");
        drop(a);
        assert!(!t.path().join(".okp").exists());
        // A child another test forks at this moment holds a copy of the descriptor until its exec
        // closes it (close-on-exec), and with it the flock: allow it that moment.
        let soon = || {
            (0..100).find_map(|_| {
                Lock::acquire(t.path()).ok().or_else(|| {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    None
                })
            })
        };
        let b = soon().expect("free again after the drop");
        std::fs::write(t.path().join(".okp/state.json"), "{}").unwrap();
        drop(b);
        assert!(t.path().join(".okp/state.json").exists(), "a tree with state keeps its .okp/");
        assert!(!t.path().join(".okp/lock").exists(), "the lock file goes with its holder");
        drop(soon().expect("free again after the drop"));
    }

    #[test]
    fn a_symlinked_state_dir_or_lock_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("tree");
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, tree.join(".okp")).unwrap();
        let e = Lock::acquire(&tree).err().unwrap().to_string();
        assert!(e.contains(".okp: is a symlink"), "{e}");
        std::fs::remove_file(tree.join(".okp")).unwrap();
        std::fs::create_dir(tree.join(".okp")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("victim"), tree.join(".okp/lock")).unwrap();
        let e = Lock::acquire(&tree).err().unwrap().to_string();
        assert!(e.contains("lock: is a symlink"), "{e}");
        assert!(!elsewhere.join("victim").exists());
        std::fs::remove_file(tree.join(".okp/lock")).unwrap();
        let fifo = std::process::Command::new("mkfifo").arg(tree.join(".okp/lock")).status().unwrap();
        assert!(fifo.success());
        let e = Lock::acquire(&tree).err().unwrap().to_string();
        assert!(e.contains("lock: is not a regular file"), "{e}");
    }
}
