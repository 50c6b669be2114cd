//! A lane's resident tool JVM: okp's `OkpToolBatch --okp-serve` on the release's classpath,
//! which runs the release's short admin tools (kafka-topics, kafka-leader-election, …) one call
//! after another in one JVM. Each call is the tool's own main with its own arguments, its exit
//! caught and its stdout and stderr captured apart, as in a JVM of its own; what is saved is the
//! JVM start (about a second of CPU per call on this project's machine).
//!
//! A call that times out, or a JVM that dies or answers garbage, ends that JVM: the call fails
//! (it is never run twice: a tool call can have effects), and the next call starts a new JVM.
//! After `MAX_CALLS` calls the JVM is replaced, so threads a tool leaves behind cannot pile up.
//!
//! Not here: which tools run here and the fallback to one JVM per call (tools.rs), the Java side
//! (OkpToolBatch.java).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::{client, node};
use crate::error::{Error, Result};

/// Calls one JVM serves before it is replaced.
pub const MAX_CALLS: u32 = 64;
/// The flag that makes `OkpToolBatch` serve calls from stdin.
pub const SERVE: &str = "--okp-serve";
/// The answer line's prefix: `okp-serve-end RC MILLIS OUT ERR`.
const END: &str = "okp-serve-end\t";

pub struct Resident {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    pid: i32,
    pub calls: u32,
    /// The JVM's own stderr (what no call captured: JVM warnings, a crash).
    err: PathBuf,
}

/// How one call ended.
pub struct Answer {
    pub rc: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Why a call has no answer; the JVM is gone after it.
pub struct Failed {
    pub timed_out: bool,
    pub why: String,
}

fn b64(s: &str) -> String {
    <ct_codecs::Base64 as ct_codecs::Encoder>::encode_to_string(s.as_bytes()).unwrap_or_default()
}

fn unb64(s: &str) -> Option<String> {
    <ct_codecs::Base64 as ct_codecs::Decoder>::decode_to_vec(s, None)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The request line of one call: `CALL`, then the class and each argument in base64.
pub fn request(class: &str, args: &[String]) -> String {
    let mut line = String::from("CALL\t");
    line.push_str(&b64(class));
    for a in args {
        line.push('\t');
        line.push_str(&b64(a));
    }
    line.push('\n');
    line
}

/// An answer line read back: (rc, stdout, stderr); None when it is not one.
pub fn parse_answer(line: &str) -> Option<Answer> {
    let f: Vec<&str> = line.strip_prefix(END)?.trim_end_matches('\n').split('\t').collect();
    let [rc, _millis, out, err] = f[..] else { return None };
    Some(Answer { rc: rc.parse().ok()?, stdout: unb64(out)?, stderr: unb64(err)? })
}

impl Resident {
    /// Starts the JVM: `java` with `jvm` flags, the release's `classpath` plus okp's `classes`.
    pub fn start(java: &Path, jvm: &[String], classpath: &str, classes: &Path, err: PathBuf) -> Result<Resident> {
        let fe = std::fs::File::create(&err).map_err(|e| Error::io(format!("cannot create {}", err.display()), e))?;
        let mut cmd = Command::new(java);
        cmd.env("CLASSPATH", format!("{classpath}:{}", classes.display()))
            .env_remove("JAVA_TOOL_OPTIONS")
            .args(jvm)
            .arg(client::BATCH_CLASS)
            .arg(SERVE)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fe)
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::External(format!("cannot start the tool JVM with {} ({e})", java.display())))?;
        let pid = child.id() as i32;
        node::register(pid);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            node::unregister(pid);
            return Err(Error::External("the tool JVM has no stdin or stdout".into()));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Resident { child, stdin, lines, pid, calls: 0, err })
    }

    /// One call of `class`'s main with `args`, waiting at most `timeout` for its answer.
    pub fn call(&mut self, class: &str, args: &[String], timeout: Duration) -> std::result::Result<Answer, Failed> {
        self.calls += 1;
        let t0 = Instant::now();
        if let Err(e) = self.stdin.write_all(request(class, args).as_bytes()).and_then(|_| self.stdin.flush()) {
            return Err(Failed { timed_out: false, why: format!("cannot write to the tool JVM ({e}){}", self.tail()) });
        }
        loop {
            let left = timeout.saturating_sub(t0.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(END) => {
                    return parse_answer(&line).ok_or_else(|| Failed {
                        timed_out: false,
                        why: format!("the tool JVM answered a line okp cannot read: {line:.200}"),
                    })
                }
                // Anything else on the JVM's own stdout is not a call's output: skip it.
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(Failed {
                        timed_out: true,
                        why: format!("no answer within {:.0} s", timeout.as_secs_f64()),
                    })
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                    return Err(Failed {
                        timed_out: false,
                        why: format!("the tool JVM ended during the call ({status}){}", self.tail()),
                    });
                }
            }
        }
    }

    /// The last lines of the JVM's own stderr, for an error message.
    fn tail(&self) -> String {
        let text = crate::fsx::read::lossy_text(&self.err, crate::fsx::read::MAX_TEXT);
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends:\n{tail}")
        }
    }

    /// Ends the JVM and its process group.
    pub fn kill(&mut self) {
        // SAFETY: kill(2) of the process group okp created for this JVM.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
        node::unregister(self.pid);
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_carries_every_argument_whatever_it_holds() {
        let args = vec!["--topic".to_string(), "a\tb\nc d".to_string(), String::new(), "ü".to_string()];
        let line = request("org.X", &args);
        assert!(line.ends_with('\n'));
        let f: Vec<&str> = line.trim_end().split('\t').collect();
        assert_eq!(f[0], "CALL");
        assert_eq!(unb64(f[1]).unwrap(), "org.X");
        let back: Vec<String> = f[2..].iter().map(|x| unb64(x).unwrap()).collect();
        assert_eq!(back, args);
    }

    #[test]
    fn answers_are_read_or_refused() {
        let a = parse_answer(&format!("okp-serve-end\t3\t12\t{}\t{}", b64("out\n"), b64(""))).unwrap();
        assert_eq!((a.rc, a.stdout.as_str(), a.stderr.as_str()), (3, "out\n", ""));
        assert!(parse_answer("okp-serve-end\t0\t1\tnot base64!\t").is_none());
        assert!(parse_answer("okp-serve-end\tx\t1\t\t").is_none());
        assert!(parse_answer("okp-serve-end\t0\t1\t").is_none());
        assert!(parse_answer("something else").is_none());
    }
}
