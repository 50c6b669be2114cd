//! One server process of a test cluster (ZooKeeper, controller or broker):
//! start it, wait for its readiness line, stop, kill, freeze and thaw it.
//!
//! Every JVM runs in its own process group, and its pid sits in a process-wide
//! registry until it has been reaped, so the Ctrl-C handler (and Drop) can
//! stop everything okp started. Not for tool calls: see tools.rs.
//!
//! Ctrl-C and SIGTERM do not end the process from here: the handler stops every registered
//! process and raises a flag; from then on a start, a tool call or a wait returns
//! `Error::Interrupted`, which the command returns to `main` (exit 130).

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Process groups okp started and has not reaped yet.
static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Whether Ctrl-C or SIGTERM arrived (with `install_interrupt_handler`).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C only raises the flag, the command stopping its processes in order itself
/// (`stop_in_order_on_interrupt`).
static IN_ORDER: AtomicBool = AtomicBool::new(false);

/// From now on Ctrl-C or SIGTERM raises the flag and kills nothing: the command polls
/// `interrupted()` and stops its processes in order (the playground, once its cluster is up).
pub fn stop_in_order_on_interrupt() {
    IN_ORDER.store(true, Ordering::SeqCst);
}

/// Registers a process group okp started. One started after an interrupt (it raced the
/// handler's sweep) is killed at once.
pub fn register(pid: i32) {
    if let Ok(mut l) = LIVE.lock() {
        l.insert(pid);
    }
    if interrupted() && !IN_ORDER.load(Ordering::SeqCst) {
        kill_all_registered();
    }
}

/// Whether the run was interrupted (Ctrl-C or SIGTERM after `install_interrupt_handler`).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// `Err(Error::Interrupted)` once the run was interrupted: what every start, tool call and wait
/// checks, so the command unwinds to `main` and exits 130.
pub fn check_interrupt() -> Result<()> {
    if interrupted() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

pub fn unregister(pid: i32) {
    if let Ok(mut l) = LIVE.lock() {
        l.remove(&pid);
    }
}

fn signal_group(pid: i32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group okp created for this child.
    unsafe {
        libc::kill(-pid, sig);
    }
}

/// Kills every live process group okp started (Ctrl-C, a panic, a failed run).
/// SIGCONT first: a frozen JVM would otherwise sit stopped forever.
pub fn kill_all_registered() {
    let pids: Vec<i32> = LIVE.lock().map(|l| l.iter().copied().collect()).unwrap_or_default();
    for pid in pids {
        signal_group(pid, libc::SIGCONT);
        signal_group(pid, libc::SIGKILL);
    }
}

/// Installs the Ctrl-C / SIGTERM handler once: raise the flag (`check_interrupt`) and kill what
/// we started; the command then unwinds with `Error::Interrupted`.
pub fn install_interrupt_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if !INTERRUPTED.swap(true, Ordering::SeqCst) {
                crate::out::block("\n");
                crate::out::note("interrupted: stopping every process this run started");
            }
            if !IN_ORDER.load(Ordering::SeqCst) {
                kill_all_registered();
            }
        });
    });
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    ZooKeeper,
    Controller,
    Broker,
}

pub struct Node {
    pub name: String,
    pub role: Role,
    /// Kafka node id (broker.id / node.id); 0 for ZooKeeper.
    pub id: i32,
    pub port: u16,
    pub dir: PathBuf,
    /// The full command line (java, flags, class, config), without the classpath value.
    pub argv: Vec<String>,
    /// JVM flags put before `argv` at the next start (the servers' class-data-sharing archive).
    pub jvm_extra: Vec<String>,
    pub env: Vec<(String, String)>,
    child: Option<Child>,
    frozen: bool,
    /// Byte offset of stdout.log at the last start: readiness is looked for after it.
    log_mark: u64,
    pub starts: u32,
    /// When the node was last killed with -9 (its ZooKeeper session outlives it).
    pub killed_at: Option<Instant>,
    /// The node's own Kafka home (`libs/` is its classpath); None: the shared runtime classpath.
    pub home: Option<PathBuf>,
}

impl Node {
    pub fn new(
        name: &str,
        role: Role,
        id: i32,
        port: u16,
        dir: PathBuf,
        argv: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Node {
        Node {
            name: name.to_string(),
            role,
            id,
            port,
            dir,
            argv,
            jvm_extra: Vec::new(),
            env,
            child: None,
            frozen: false,
            log_mark: 0,
            starts: 0,
            killed_at: None,
            home: None,
        }
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("stdout.log")
    }

    pub fn observer_file(&self) -> PathBuf {
        self.dir.join("observer.ids")
    }

    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Starts the process (stdout and stderr appended to stdout.log). Does not wait.
    pub fn start(&mut self, java: &Path, classpath: &str) -> Result<()> {
        check_interrupt()?;
        if self.is_running() {
            return Ok(());
        }
        let log = self.log_path();
        let out = crate::fsx::open_append(&log).map_err(|e| Error::io(format!("cannot open {}", log.display()), e))?;
        self.log_mark = out.metadata().map(|m| m.len()).unwrap_or(0);
        let err = out.try_clone().map_err(|e| Error::io("cannot duplicate a log handle", e))?;
        let mut cmd = Command::new(java);
        // The classpath travels in the environment, so `ps` and the evidence stay readable.
        cmd.env("CLASSPATH", classpath);
        cmd.env_remove("KAFKA_OBSERVER_BROKER_IDS")
            .env_remove("KAFKA_OBSERVER_IDS_FILE")
            .env_remove("JAVA_TOOL_OPTIONS");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.args(&self.jvm_extra)
            .args(&self.argv)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd
            .spawn()
            .map_err(|e| Error::External(format!("cannot start {} with {} ({e})", self.name, java.display())))?;
        register(child.id() as i32);
        self.child = Some(child);
        self.frozen = false;
        self.starts += 1;
        Ok(())
    }

    /// Waits until `marker` appears in the log written since the last start.
    pub fn wait_ready(&mut self, marker: &str, timeout: Duration) -> Result<Duration> {
        let t0 = Instant::now();
        loop {
            check_interrupt()?;
            if self.log_since_start().contains(marker) {
                return Ok(t0.elapsed());
            }
            if !self.is_running() {
                return Err(Error::External(format!(
                    "{} exited before it was ready; last lines of {}:\n{}",
                    self.name,
                    self.log_path().display(),
                    self.tail(25)
                )));
            }
            if t0.elapsed() > timeout {
                return Err(Error::External(format!(
                    "{} was not ready within {:.0} s (no `{marker}` in {}); last lines:\n{}",
                    self.name,
                    timeout.as_secs_f64(),
                    self.log_path().display(),
                    self.tail(25)
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log_since_start(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = crate::fsx::read::open_regular(&self.log_path(), crate::fsx::read::MAX_LOG) {
            if f.seek(SeekFrom::Start(self.log_mark)).is_ok() {
                let mut b = Vec::new();
                let _ = f.take(crate::fsx::read::MAX_LOG).read_to_end(&mut b);
                s = String::from_utf8_lossy(&b).into_owned();
            }
        }
        s
    }

    pub fn whole_log(&self) -> String {
        crate::fsx::read::lossy_text(&self.log_path(), crate::fsx::read::MAX_LOG)
    }

    pub fn tail(&self, n: usize) -> String {
        let text = self.whole_log();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// kill -9 of the whole process group, then reap it.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            self.killed_at = Some(Instant::now());
            let pid = c.id() as i32;
            signal_group(pid, libc::SIGCONT);
            signal_group(pid, libc::SIGKILL);
            let _ = c.wait();
            unregister(pid);
        }
        self.frozen = false;
    }

    /// Graceful stop: SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if let Some(mut c) = self.child.take() {
            let pid = c.id() as i32;
            signal_group(pid, libc::SIGCONT);
            signal_group(pid, libc::SIGTERM);
            let t0 = Instant::now();
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if t0.elapsed() > grace => {
                        signal_group(pid, libc::SIGKILL);
                        let _ = c.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
            unregister(pid);
        }
        self.frozen = false;
    }

    /// SIGSTOP: the process keeps its sockets but answers nothing.
    pub fn freeze(&mut self) {
        if let Some(pid) = self.pid() {
            signal_group(pid, libc::SIGSTOP);
            self.frozen = true;
        }
    }

    pub fn thaw(&mut self) {
        if let Some(pid) = self.pid() {
            signal_group(pid, libc::SIGCONT);
        }
        self.frozen = false;
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
    }
}
