//! `okp install` and `okp rollback`: what okp adds around the bundle's own
//! POSIX sh scripts, which hold every rule about the Kafka installation (the
//! same scripts an operator runs by hand without okp).
//!
//! okp adds: verification of the bundle before anything is unpacked (pins
//! included, never waived); one okp at a time per installation (`lock`); a
//! staging directory named after okp's pid, so one that a killed install left
//! behind is removed by the next install or rollback (`sweep_staging`);
//! SIGINT/SIGTERM/SIGHUP forwarded to the script, then the staging removed;
//! a sentinel that stops the script when okp dies without a word (SIGKILL);
//! and for rollback, okp's own embedded rollback.sh, never the copy found in
//! the installation (anyone who can write there could have replaced it).
//! Not here: the checks themselves (`verify`, `rederive`), the scripts (`files/`).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use super::archive;
use super::layout;
use super::lock::{self, HomeLock};
use super::ondisk;
use super::rederive::{self, Trust};
use super::verify::{self, Verification};
use crate::error::{Error, Failure, Outcome, Result};
use crate::workspace::Workspace;

/// Flags passed through to install.sh / rollback.sh.
pub struct ScriptFlags {
    pub dry_run: bool,
    pub ignore_arch: bool,
    pub accept_local_jars: bool,
    pub force: bool,
}

impl ScriptFlags {
    fn args(&self) -> Vec<&'static str> {
        [
            (self.dry_run, "--dry-run"),
            (self.ignore_arch, "--ignore-arch"),
            (self.accept_local_jars, "--accept-local-jars"),
            (self.force, "--force"),
        ]
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
        .collect()
    }
}

/// Whether verification lets the bundle be installed; `Err` is the refusal.
fn admit(o: &Verification, file: &str, allow_unverified: bool) -> std::result::Result<(), String> {
    if !o.pins_hold() {
        return Err(format!("okp: refusing to install {file}: it fails a pin (see `pins` above); --allow-unverified does not waive pins"));
    }
    if !o.jars_hold() {
        return Err(format!("okp: refusing to install {file}: its jars are not what its manifest says, re-derived from their bytes (see `jars` above); nothing waives this"));
    }
    match (o.verified(), allow_unverified, o.integral()) {
        (true, _, _) | (false, true, true) => Ok(()),
        (false, true, false) => Err(format!("okp: refusing to install {file}: it is damaged or unsafe to unpack (--allow-unverified waives only the signature and checksum files)")),
        (false, false, _) => Err(format!("okp: refusing to install {file}: it does not verify (--allow-unverified installs a well-formed bundle without a valid signature)")),
    }
}

/// The pid of the script okp is running (0: none), for the interrupt handler.
static SCRIPT_PID: AtomicI32 = AtomicI32::new(0);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// From here on, SIGINT, SIGTERM and SIGHUP do not kill okp: they are passed
/// to the running script's process group as SIGTERM, and okp cleans up once
/// the script has exited.
fn forward_interrupts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            INTERRUPTED.store(true, Ordering::SeqCst);
            let pid = SCRIPT_PID.load(Ordering::SeqCst);
            if pid > 0 {
                // SAFETY: kill(2) to the group of a child this process started and has not yet reaped.
                unsafe { libc::kill(-pid, libc::SIGTERM) };
            }
        });
    });
}

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// A bundle script: a file (install.sh in the staging directory) or okp's own text.
enum Script<'a> {
    File(&'a Path),
    Text(&'a str),
}

/// Runs a bundle script with `sh`; its exit status is okp's (0 done, 2 refused, 3 a step failed).
fn run_script(script: Script, flags: &ScriptFlags, kafka_home: &Path, lock: Option<&HomeLock>) -> Result<Outcome> {
    let mut cmd = Command::new("sh");
    let shown = match script {
        Script::File(p) => {
            cmd.arg(p);
            p.display().to_string()
        }
        // `sh -c TEXT NAME ARGS...`: NAME is the script's $0; nothing is written to disk.
        Script::Text(text) => {
            cmd.arg("-c").arg(text).arg("rollback.sh");
            "okp's rollback.sh".into()
        }
    };
    // Its own process group: a Ctrl-C reaches the script only through okp, which
    // passes it on to every process of the script (cp, mv) and then cleans up.
    cmd.args(flags.args()).arg(kafka_home).process_group(0);
    if let Some(l) = lock {
        l.inherit()?;
    }
    if interrupted() {
        return Ok(Outcome::Failed(Failure::Interrupted));
    }
    let mut child = cmd.spawn().map_err(|e| Error::External(format!("cannot run sh {shown}: {e}")))?;
    SCRIPT_PID.store(child.id() as i32, Ordering::SeqCst);
    // A signal between the check above and the store: the handler saw no script to pass it to.
    if interrupted() {
        // SAFETY: kill(2) to the group of the child just started and not yet reaped.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) };
    }
    let sentinel = Sentinel::start(child.id() as i32);
    let status = child.wait();
    SCRIPT_PID.store(0, Ordering::SeqCst);
    sentinel.done();
    let status = status.map_err(|e| Error::External(format!("cannot wait for sh {shown}: {e}")))?;
    if interrupted() {
        return Ok(Outcome::Failed(Failure::Interrupted));
    }
    Ok(match Failure::of_script_status(status.code()) {
        None => Outcome::Done,
        Some(f) => Outcome::Failed(f),
    })
}

/// Stops a script whose okp died without a word (SIGKILL, the OOM killer): no handler of okp's
/// runs then, and the script, in a process group of its own, would go on changing the
/// installation with nobody to report it. A small `sh` in a group of its own reads a pipe only
/// okp holds open: at its end without okp's `done` line (okp is gone), it sends SIGTERM to the
/// script's whole group, as okp forwards an interrupt, and the next install or rollback
/// finishes or undoes what was left. Best effort: without it (sh could not start) okp runs as
/// before.
struct Sentinel(Option<(std::process::Child, std::process::ChildStdin)>);

impl Sentinel {
    fn start(script_group: i32) -> Sentinel {
        let spawned = Command::new("sh")
            .arg("-c")
            .arg("read -r said; [ \"$said\" = done ] || kill -TERM -\"$1\" 2>/dev/null; exit 0")
            .arg("okp-install-sentinel")
            .arg(script_group.to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn();
        Sentinel(spawned.ok().and_then(|mut c| c.stdin.take().map(|i| (c, i))))
    }

    /// The script has ended: the sentinel leaves without a signal.
    fn done(self) {
        use std::io::Write;
        if let Some((mut child, mut said)) = self.0 {
            let _ = said.write_all(b"done\n");
            drop(said);
            let _ = child.wait();
        }
    }
}

/// What the scripts check first: without these there is nothing to lock, and
/// the script refuses (exit 2) before writing anything.
fn looks_like_kafka(home: &Path) -> bool {
    home.join("bin/kafka-run-class.sh").is_file() && home.join("libs").is_dir()
}

/// The lock, unless this run writes nothing (a dry run, or not a Kafka installation).
fn lock_unless_read_only(home: &Path, flags: &ScriptFlags) -> Result<Option<HomeLock>> {
    if flags.dry_run || !looks_like_kafka(home) {
        return Ok(None);
    }
    lock::lock(home).map(Some)
}

const STAGING_PREFIX: &str = "okp-install-";

/// The pid in a staging directory's name (`okp-install-<pid>-<random>`).
fn staging_pid(name: &str) -> Option<i32> {
    name.strip_prefix(STAGING_PREFIX)?.split_once('-')?.0.parse().ok()
}

/// Removes the staging directories in `tmp` that installs killed before they
/// could clean up left behind: ours (same uid), named after a pid that is gone.
pub fn sweep_staging(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else { return };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = staging_pid(&name) else { continue };
        let p = e.path();
        // symlink_metadata: a link planted under such a name is never followed.
        let ours = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && !lock::alive(pid) && std::fs::remove_dir_all(&p).is_ok() {
            crate::out::note(format!("removed {}, left by an okp install (pid {pid}) that was killed", p.display()));
        }
    }
}

/// A private directory for the unpacked bundle, named after this process.
fn staging() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("{STAGING_PREFIX}{}-", std::process::id()))
        .tempdir()
        .map_err(|e| Error::io("cannot create a staging directory", e))
}

/// `okp install`: verify, lock, unpack into a private directory, run the bundle's install.sh.
pub fn install(
    ws: &Workspace,
    file: &Path,
    kafka_home: &Path,
    trust: &Trust,
    flags: &ScriptFlags,
    source: Option<&dyn crate::source::SourceTree>,
) -> Result<Outcome> {
    // From the first moment: a SIGINT okp inherited as ignored (a background job of a shell) or one
    // that comes while the bundle is checked stops the install before anything changes.
    forward_interrupts();
    let d = ondisk::read(file)?;
    // The same verification as verify-bundle's, the jars re-derived from their bytes included.
    let o = rederive::verify(ws, &d, trust, source)?;
    crate::out::block(&verify::render(&o, &d.file_name));
    if let Err(refusal) = admit(&o, &d.file_name, trust.allow_unverified) {
        crate::out::block(&format!("{refusal}\n"));
        return Ok(Outcome::Failed(Failure::CheckFailed));
    }
    if !o.verified() {
        crate::out::note(format!(
            "warning: installing {} WITHOUT a verified signature (--allow-unverified)",
            d.file_name
        ));
    }
    let Some((unpacked, _, _)) = o.content else {
        return Err(Error::External("a bundle that passed verification has no content (a defect in okp)".into()));
    };
    if interrupted() {
        return Ok(Outcome::Failed(Failure::Interrupted));
    }
    let lock = lock_unless_read_only(kafka_home, flags)?;
    sweep_staging(&std::env::temp_dir());
    let staging = staging()?;
    let root = archive::extract(&unpacked, staging.path())
        .map_err(|e| Error::io(format!("cannot unpack into {}", staging.path().display()), e))?;
    let code = run_script(Script::File(&root.join("install.sh")), flags, kafka_home, lock.as_ref())?;
    if code == Outcome::Failed(Failure::Interrupted) {
        crate::out::note("interrupted; run the same install again to finish it, or roll back");
    }
    Ok(code)
}

/// `okp rollback`: okp's own rollback.sh (which reads only the install record), under the lock.
pub fn rollback(kafka_home: &Path, flags: &ScriptFlags) -> Result<Outcome> {
    let lock = lock_unless_read_only(kafka_home, flags)?;
    forward_interrupts();
    sweep_staging(&std::env::temp_dir());
    run_script(Script::Text(&layout::rollback_script()), flags, kafka_home, lock.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::verify::{Check, Status};

    #[test]
    fn a_failed_pin_is_never_waived() {
        let check = |check, status| Check { check, status, detail: String::new(), authenticity: true };
        let o =
            Verification { checks: vec![check("signature", Status::Ok), check("pins", Status::Failed)], content: None };
        for waive in [false, true] {
            assert!(admit(&o, "b.tar.gz", waive).unwrap_err().contains("it fails a pin"), "waived: {waive}");
        }
        let o = Verification { checks: vec![check("signature", Status::Failed)], content: None };
        assert!(admit(&o, "b.tar.gz", false).unwrap_err().contains("it does not verify"));
        assert!(admit(&o, "b.tar.gz", true).unwrap_err().contains("damaged or unsafe"));
    }

    #[test]
    fn staging_directories_of_dead_installs_are_swept_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join("okp-install-999999999-abc");
        let live = tmp.path().join(format!("okp-install-{}-abc", std::process::id()));
        let other = tmp.path().join("okp-install-abc");
        let file = tmp.path().join("okp-install-999999998-file");
        let target = tempfile::tempdir().unwrap();
        std::fs::write(target.path().join("keep"), "x").unwrap();
        let link = tmp.path().join("okp-install-999999997-link");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("install.sh"), "").unwrap();
        }
        std::fs::write(&file, "").unwrap();
        std::os::unix::fs::symlink(target.path(), &link).unwrap();
        sweep_staging(tmp.path());
        assert!(!dead.exists(), "a dead install's staging is removed");
        assert!(live.exists() && other.exists() && file.exists() && link.exists());
        assert!(target.path().join("keep").exists(), "a link is not followed");
        assert_eq!(staging_pid("okp-install-12-x"), Some(12));
    }
}
