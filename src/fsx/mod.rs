//! The bottom floor for files. Reads of anything a user or another process put in okp's way go
//! through `read` (regular files only, a cap, no blocking open). Writes are all or nothing: a
//! temporary file beside the target, then a rename, so a reader sees the old bytes or the new
//! ones, never half.
//!
//! Also the small file primitives every stage shares: `create_dir`, `is_regular_file`, the
//! per-process `staging` name of a file published by rename and the sweep of stale ones, the
//! lock (`lock_file`) and the append-only log (`open_append`); one entry of a jar read within a
//! cap (`zip_entry`).
//!
//! Not here: multi-file transactions with a journal (`tx`), trees laid out
//! from archives (`source`, `bundle::archive`).

pub mod read;
pub mod zip_entry;

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// creating the directory when missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(path, bytes, None)
}

/// `write_atomic` of a script: executable (0755) from the moment it appears under `path`.
pub fn write_executable(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(path, bytes, Some(0o755))
}

/// `write_atomic` of a secret: readable and writable by its owner only (0600) from the moment it
/// appears under `path`.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(path, bytes, Some(0o600))
}

fn write_atomic_mode(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(format!("cannot write in {}", dir.display()), e))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(format!("cannot set the mode of {}", path.display()), e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(format!("cannot write {}", path.display()), e.error))?;
    Ok(())
}

/// Creates `dir` and its parents when missing (`mkdir -p`), with okp's error naming the directory.
pub fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))
}

/// A regular file at `path` itself: not a symbolic link (which could point anywhere), not a FIFO
/// (a JVM that maps it would hang), not a directory.
pub fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// A number no other call in this process gets: with the pid it names a staging file or
/// directory private to one call, since the lanes of a run are threads of one process.
pub fn unique() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Where one call writes a new `target` that a rename publishes whole (`NAME.PID.N.tmp` beside
/// it, N from `unique`): private to the call, so neither two okp processes nor two lanes of one
/// ever write one file. Each call answers a new name; keep it for the rename.
pub fn staging(target: &Path) -> std::path::PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.{}.tmp", std::process::id(), unique()));
    target.with_file_name(name)
}

/// Removes the staging files of `target` left by an okp that was killed while writing it
/// (`NAME.PID.tmp` of `staging`, or `NAME.PID.N.tmp`, whose PID no longer runs).
pub fn sweep_stale_staging(target: &Path) {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name().and_then(|n| n.to_str())) else { return };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(name)).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let Some(pid) = rest.strip_suffix(".tmp").and_then(|r| r.split('.').next()).and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// An exclusive `flock` on a lock file, held until dropped. The holder writes its pid into the
/// file and removes the file when done (if the path is still its file), so a finished holder
/// leaves nothing behind; the kernel drops the lock of a killed holder, whose file the next holder
/// reuses. Used for a directory okp writes as a whole (`lock_dir`) and a Kafka installation okp
/// installs into (`bundle::lock`).
pub struct FileLock {
    file: std::fs::File,
    path: std::path::PathBuf,
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Why a lock file could not be used, before any locking: the caller words the error.
pub enum NotALockFile {
    Symlink,
    NotRegular,
}

/// How many times `lock_file` starts again on a lock file its holder removed as it was taken.
const LOCK_ROUNDS: usize = 100;

/// flock(2) on `file`, again when a signal interrupts it: Ok(false) when `nonblocking` and another
/// process holds the lock.
fn flock(file: &std::fs::File, nonblocking: bool) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let op = if nonblocking { libc::LOCK_EX | libc::LOCK_NB } else { libc::LOCK_EX };
    loop {
        // SAFETY: flock on a descriptor the caller owns for the duration of the call; no memory is shared.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) if nonblocking => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// The pid text the holder of `file`'s lock wrote. It writes it right after taking the lock, so an
/// empty file gets a moment (200 ms at most) before it counts as "not written".
fn holder_pid(mut file: &std::fs::File) -> String {
    use std::io::{Read, Seek};
    for _ in 0..20 {
        let mut pid = String::new();
        let _ = file.rewind().and_then(|_| file.take(32).read_to_string(&mut pid));
        if !pid.trim().is_empty() {
            return pid.trim().to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    String::new()
}

/// Takes the lock on `path` (created if missing). With `wait`, blocks while another holds it and
/// calls `waiting` once with the holder's pid text first; without, returns `Ok(Err(Held(pid text)))`
/// at once. A symbolic link or a non-regular file at `path` is refused before any locking, and
/// nothing at `path` is ever followed, read past 32 bytes or waited on (O_NOFOLLOW, O_NONBLOCK).
/// This is okp's one `flock`: every lock okp takes (a tree's `.okp/lock`, an installation's
/// `.okp-observer.lock`, the watchdog's `STATE.lock`, a build's `--out`) is taken here.
pub fn lock_file(
    path: &Path,
    wait: bool,
    waiting: &mut dyn FnMut(&str),
) -> Result<std::result::Result<FileLock, LockRefusal>> {
    use std::io::Seek;
    use std::os::unix::fs::OpenOptionsExt;
    let mut noted = false;
    for _ in 0..LOCK_ROUNDS {
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(Err(LockRefusal::Not(NotALockFile::Symlink))),
            // O_NONBLOCK on a FIFO no one reads fails at once (ENXIO) instead of waiting for a reader.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                return Ok(Err(LockRefusal::Not(NotALockFile::NotRegular)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Err(LockRefusal::Gone)),
            Err(e) => return Err(Error::io(format!("cannot open the lock file {}", path.display()), e)),
        };
        let meta = file.metadata().map_err(|e| Error::io(format!("cannot stat {}", path.display()), e))?;
        if !meta.is_file() {
            return Ok(Err(LockRefusal::Not(NotALockFile::NotRegular)));
        }
        let lock_err = |e| Error::io(format!("cannot lock {}", path.display()), e);
        if !flock(&file, true).map_err(lock_err)? {
            let pid = holder_pid(&file);
            if !wait {
                return Ok(Err(LockRefusal::Held(pid)));
            }
            if !noted {
                waiting(&pid);
                noted = true;
            }
            // Blocks until the holder releases or dies.
            flock(&file, false).map_err(lock_err)?;
        }
        // The holder before us removes the file on its way out: a lock on a file no one else will
        // open is no lock. Start again on the file the path names now.
        match std::fs::symlink_metadata(path) {
            Ok(now) if same_file(&now, &meta) => {}
            _ => continue,
        }
        file.set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        return Ok(Ok(FileLock { file, path: path.to_path_buf() }));
    }
    Err(Error::Tree {
        path: path.to_path_buf(),
        msg: "kept being replaced while okp tried to lock it; try again".into(),
    })
}

/// fsync of a directory (after a rename into it, so the new name survives a crash). Opened as a
/// directory only (O_DIRECTORY) and never waited on, so whatever else sits at `dir` is refused.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(dir)?
        .sync_all()
}

/// Opens a log for appending, creating it (0644) when missing: never through a symbolic link at
/// `path`, never a FIFO or a device (refused as "not a regular file"), never blocking.
pub fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => std::io::Error::other("a symbolic link: refused (okp appends to its own file only)"),
            // O_NONBLOCK on a FIFO no one reads: refused at once instead of waiting for a reader.
            Some(libc::ENXIO) => std::io::Error::other("a FIFO, not a regular file: refused"),
            _ => e,
        })?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file: refused"));
    }
    Ok(f)
}

/// Why `lock_file` did not take the lock.
pub enum LockRefusal {
    /// Another process holds it (the pid it wrote, as text, possibly empty).
    Held(String),
    Not(NotALockFile),
    /// The directory that should hold the lock file is not there (its last holder may have
    /// removed it on the way out: a caller that made it can make it again and retry).
    Gone,
}

impl FileLock {
    /// The lock file's descriptor (to pass the lock to a child process).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Removed while still held, and only if the path is still this file.
        if let (Ok(now), Ok(ours)) = (std::fs::symlink_metadata(&self.path), self.file.metadata()) {
            if same_file(&now, &ours) {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Takes `dir/name`'s lock for a directory okp writes as a whole (a build's `--out`, verify's
/// cached jars): a second okp waits for the first (one note naming the holder's pid) instead of
/// both writing the same `work/` and jars.
pub fn lock_dir(dir: &Path, name: &str) -> Result<FileLock> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let path = dir.join(name);
    let mut note = |pid: &str| {
        crate::out::note(format!(
            "waiting for another okp (pid {}) writing {} to finish",
            if pid.is_empty() { "unknown" } else { pid },
            dir.display()
        ))
    };
    match lock_file(&path, true, &mut note)? {
        Ok(l) => Ok(l),
        Err(LockRefusal::Not(NotALockFile::Symlink)) => {
            Err(Error::Tree { path, msg: "a symbolic link, not okp's lock file".into() })
        }
        Err(LockRefusal::Gone) => {
            Err(Error::Tree { path, msg: "its directory was removed while okp locked it".into() })
        }
        Err(_) => Err(Error::Tree { path, msg: "not a regular file, so not okp's lock file".into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_published_executable_and_replaces_the_old_one() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("bin/run");
        write_atomic(&p, b"old\n").unwrap();
        write_executable(&p, b"#!/bin/sh\nexit 0\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"#!/bin/sh\nexit 0\n");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o755);
        assert_eq!(std::fs::read_dir(t.path().join("bin")).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn only_a_regular_file_itself_counts() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("a.jsa");
        let link = t.path().join("b.jsa");
        assert!(!is_regular_file(&file));
        std::fs::write(&file, b"x").unwrap();
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(is_regular_file(&file));
        assert!(!is_regular_file(&link));
        assert!(!is_regular_file(t.path()));
    }

    #[test]
    fn staging_files_of_dead_processes_are_swept_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("kafka-server-4.3.1-x.jsa");
        let (first, second) = (staging(&target), staging(&target));
        assert_ne!(first, second, "each call stages in a file of its own");
        for s in [&first, &second] {
            let name = s.file_name().unwrap().to_str().unwrap();
            let rest = name.strip_prefix(&format!("kafka-server-4.3.1-x.jsa.{}.", std::process::id())).unwrap();
            assert!(rest.strip_suffix(".tmp").unwrap().parse::<u64>().is_ok(), "{name}");
        }
        let dead = t.path().join("kafka-server-4.3.1-x.jsa.999999999.0.tmp");
        let live = t.path().join(format!("kafka-server-4.3.1-x.jsa.{}.0.tmp", std::process::id()));
        let other = t.path().join("kafka-tools-4.3.1-x.jsa.999999999.0.tmp");
        let dead_plain = t.path().join("kafka-server-4.3.1-x.jsa.999999999.tmp");
        for f in [&target, &dead, &live, &other, &dead_plain] {
            std::fs::write(f, b"x").unwrap();
        }
        sweep_stale_staging(&target);
        assert!(!dead.exists() && !dead_plain.exists());
        assert!(target.exists() && live.exists() && other.exists());
    }

    #[test]
    fn a_second_holder_waits_for_the_first() {
        let d = tempfile::tempdir().unwrap();
        let first = lock_dir(d.path(), ".lock").unwrap();
        let dir = d.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _second = lock_dir(&dir, ".lock").unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "the second waits");
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10)).expect("then takes it");
        t.join().unwrap();
        assert!(!d.path().join(".lock").exists(), "the last holder removes the file");
        // Not a regular file, or a link: refused.
        std::fs::create_dir(d.path().join("dirlock")).unwrap();
        assert!(lock_dir(d.path(), "dirlock").is_err());
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("link")).unwrap();
        assert!(lock_dir(d.path(), "link").err().unwrap().to_string().contains("symbolic link"));
    }
}
