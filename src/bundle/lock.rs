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

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub const LOCK_NAME: &str = ".okp-observer.lock";

/// A held lock; dropping it removes the file and releases the lock.
pub struct HomeLock {
    file: File,
    path: PathBuf,
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Takes the lock of `home` or says who holds it.
pub fn lock(home: &Path) -> Result<HomeLock> {
    let path = home.join(LOCK_NAME);
    let not_ours = |what: &str| Error::Tree {
        path: path.clone(),
        msg: format!("{what}, not okp's lock file; nothing was changed: remove it if no okp is running"),
    };
    loop {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => not_ours("a symbolic link"),
                _ => Error::io(format!("cannot open the lock file {}", path.display()), e),
            })?;
        let meta = file.metadata().map_err(|e| Error::io(format!("cannot stat {}", path.display()), e))?;
        if !meta.is_file() {
            return Err(not_ours("not a regular file"));
        }
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(Error::io(format!("cannot lock {}", path.display()), e));
            }
            let mut text = String::new();
            let _ = (&file).take(32).read_to_string(&mut text);
            let holder = match text.trim().parse::<i32>() {
                Ok(pid) if alive(pid) => format!("pid {pid}"),
                Ok(pid) => format!("pid {pid}, gone: a script it started still runs"),
                Err(_) => "pid not yet written".into(),
            };
            return Err(Error::Tree {
                path: home.to_path_buf(),
                msg: format!(
                    "another okp install or rollback ({holder}) is changing this installation (it holds {LOCK_NAME}); nothing was changed: run again when it has finished"
                ),
            });
        }
        // The previous holder may have removed the file between our open and our
        // flock: then we hold a lock on a file no one else will open. Start again.
        match std::fs::symlink_metadata(&path) {
            Ok(now) if same_file(&now, &meta) => {}
            _ => continue,
        }
        file.set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        return Ok(HomeLock { file, path });
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
        if unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
            return Err(Error::io("cannot pass the lock to the script", std::io::Error::last_os_error()));
        }
        Ok(())
    }
}

impl Drop for HomeLock {
    fn drop(&mut self) {
        // Remove the file while still holding the lock, and only if it is ours.
        if let (Ok(now), Ok(ours)) = (std::fs::symlink_metadata(&self.path), self.file.metadata()) {
            if same_file(&now, &ours) {
                let _ = std::fs::remove_file(&self.path);
            }
        }
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
