//! One okp install or rollback at a time per Kafka installation: an exclusive
//! `flock` on `<kafka>/.okp-observer.lock`, taken without waiting. A second
//! okp is refused at once (exit 2) with the holder's pid, which the holder
//! writes into the file. The kernel drops the lock when its holder dies, so a
//! killed okp leaves no stale lock, only a file the next holder reuses.
//!
//! The bundle scripts okp runs inherit the lock (`inherit`), so it is held
//! until they have finished too, even if okp itself is killed. The holder
//! removes the file when it is done (after checking that the path is still
//! its file), so a finished install or rollback leaves the installation as it
//! found it. Not here: the scripts' own checks; running a script by hand
//! (`sh install.sh`) takes no lock.

use std::path::Path;

use crate::error::{Error, Result};
use crate::fsx::{FileLock, LockRefusal, NotALockFile};

pub const LOCK_NAME: &str = ".okp-observer.lock";

/// A held lock; dropping it removes the file and releases the lock.
pub struct HomeLock {
    lock: FileLock,
}

/// Takes the lock of `home` or says who holds it.
pub fn lock(home: &Path) -> Result<HomeLock> {
    let path = home.join(LOCK_NAME);
    let not_ours = |what: &str| Error::Tree {
        path: path.clone(),
        msg: format!("{what}, not okp's lock file; nothing was changed: remove it if no okp is running"),
    };
    match crate::fsx::lock_file(&path, false, &mut |_| {})? {
        Ok(lock) => Ok(HomeLock { lock }),
        Err(LockRefusal::Not(NotALockFile::Symlink)) => Err(not_ours("a symbolic link")),
        Err(LockRefusal::Not(NotALockFile::NotRegular)) => Err(not_ours("not a regular file")),
        Err(LockRefusal::Gone) => Err(Error::Tree {
            path: home.to_path_buf(),
            msg: "the installation's directory went away while okp locked it; nothing was changed".into(),
        }),
        Err(LockRefusal::Held(pid)) => {
            let holder = match pid.parse::<i32>() {
                Ok(pid) if alive(pid) => format!("pid {pid}"),
                Ok(pid) => format!("pid {pid}, gone: a script it started still runs"),
                Err(_) => "pid not yet written".into(),
            };
            Err(Error::Tree {
                path: home.to_path_buf(),
                msg: format!(
                    "another okp install or rollback ({holder}) is changing this installation (it holds {LOCK_NAME}); nothing was changed: run again when it has finished"
                ),
            })
        }
    }
}

/// Whether a process `pid` exists (EPERM: it does, and is someone else's).
pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 checks for existence and sends nothing.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH))
}

impl HomeLock {
    /// Lets the processes okp starts from now on inherit the lock (clears
    /// close-on-exec), so it outlives okp while they run.
    pub fn inherit(&self) -> Result<()> {
        // SAFETY: fcntl on a descriptor this lock owns.
        if unsafe { libc::fcntl(self.lock.raw_fd(), libc::F_SETFD, 0) } != 0 {
            return Err(Error::io("cannot pass the lock to the script", std::io::Error::last_os_error()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_and_the_file_goes_with_the_lock() {
        let home = tempfile::tempdir().unwrap();
        let first = lock(home.path()).unwrap();
        let text = std::fs::read_to_string(home.path().join(LOCK_NAME)).unwrap();
        assert_eq!(text, format!("{}\n", std::process::id()));
        // flock locks belong to open file descriptions: a second open in the same process conflicts too.
        let e = lock(home.path()).err().unwrap().to_string();
        assert!(e.contains(&format!("(pid {})", std::process::id())), "{e}");
        drop(first);
        assert!(!home.path().join(LOCK_NAME).exists());
        // A stale file (its holder was killed) is taken over.
        std::fs::write(home.path().join(LOCK_NAME), "999999999\n").unwrap();
        let again = lock(home.path()).unwrap();
        drop(again);
        assert!(!home.path().join(LOCK_NAME).exists());
        // Something planted at the lock's path is not followed or read.
        std::os::unix::fs::symlink("/etc/passwd", home.path().join(LOCK_NAME)).unwrap();
        assert!(lock(home.path()).err().unwrap().to_string().contains("a symbolic link"));
    }
}
