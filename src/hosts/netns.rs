//! The few system calls the hosts need: a thread moved into a host's network namespace (its
//! sockets and the processes it starts are that host's), a command run with a deadline, the
//! processes of a namespace, and signals to process groups.
//!
//! Not here: which namespaces a run has (`hosts`).

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

pub fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group the hosts module started.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// Runs `f` on a thread of its own whose network namespace is `ns` (`/run/netns/<ns>`): the
/// sockets it opens and the processes it starts are in that host's network. The rest of the
/// process is not moved.
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> Result<T> {
    let path = format!("/run/netns/{ns}");
    let file = crate::fsx::read::open_input(Path::new(&path), 0, "network namespace")?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: setns(2) on an open namespace file; CLONE_NEWNET moves only this thread.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(Error::io(format!("cannot enter {path}"), std::io::Error::last_os_error()));
                }
                Ok(f())
            })
            .join()
            .unwrap_or_else(|_| Err(Error::External(format!("a thread in namespace {ns} panicked"))))
    })
}

/// `program argv…` to its end or to `timeout` (then its process group is killed): (exit code,
/// stdout, stderr), the code None when killed.
pub fn output_within(program: &str, argv: &[String], timeout: Duration) -> Result<(Option<i32>, String, String)> {
    let mut child = Command::new(program)
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| Error::External(format!("cannot run {program} ({e})")))?;
    let pgid = child.id() as i32;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let o = std::thread::spawn(move || crate::fsx::read::pipe_text(&mut out, crate::fsx::read::MAX_LOG));
    let e = std::thread::spawn(move || crate::fsx::read::pipe_text(&mut err, crate::fsx::read::MAX_LOG));
    let t0 = Instant::now();
    let code = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s.code(),
            Ok(None) if t0.elapsed() >= timeout => {
                signal_group(pgid, libc::SIGKILL);
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Error::io(format!("waiting for {program}"), e)),
        }
    };
    signal_group(pgid, libc::SIGKILL);
    Ok((code, o.join().unwrap_or_default(), e.join().unwrap_or_default()))
}

/// Whether something in namespace `ns` listens on TCP `port`, IPv4 or IPv6 (`ss` is not needed: /proc).
pub fn listening(ns: &str, port: u16) -> bool {
    // A JVM listens on an IPv6 socket (an IPv4-mapped address), which only /proc/net/tcp6 lists.
    let Ok(out) = Command::new("ip").args(["netns", "exec", ns, "cat", "/proc/net/tcp", "/proc/net/tcp6"]).output()
    else {
        return false;
    };
    let want = format!(":{port:04X}");
    String::from_utf8_lossy(&out.stdout).lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1].ends_with(&want) && f[3] == "0A"
    })
}

/// Kills every process in namespace `ns` (SIGCONT first: a frozen one would stay stopped),
/// and waits up to 5 s until none is left.
pub fn kill_all_in(ns: &str) {
    let pids = || -> Vec<i32> {
        Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default()
    };
    let t0 = Instant::now();
    loop {
        let left = pids();
        if left.is_empty() || t0.elapsed() > Duration::from_secs(5) {
            return;
        }
        for pid in left {
            // SAFETY: kill(2) of a process that `ip netns pids` found in this run's namespace.
            unsafe {
                libc::kill(pid, libc::SIGCONT);
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
