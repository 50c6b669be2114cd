//! okp's own Java client, `OkpSoakClient.java` (embedded), compiled with the run's JDK against
//! the release's runtime classpath: the soak's continuous clients, run as long-lived producer and
//! consumer JVMs whose stdout lines (every ack, every error, every record read) are collected
//! with the time they arrived. Closing a client's stdin stops it; it answers everything in
//! flight and prints `done`.
//!
//! `okp verify` also runs its one-shot `read` (no group id) through `Cluster::consume_without_group`.
//!
//! Not here: what the lines mean for the history (`soak::run`), the checker (`soak`).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cluster::node;
use crate::error::{Error, Result};

const SOURCE: &str = include_str!("OkpSoakClient.java");
pub const CLASS: &str = "okp.soak.OkpSoakClient";
/// The release's own tool, run several times in one JVM (`Runner::batch`).
const BATCH_SOURCE: &str = include_str!("OkpToolBatch.java");
pub const BATCH_CLASS: &str = "okp.soak.OkpToolBatch";
/// What `BATCH_CLASS` prints after each call: `okp-batch-end INDEX RC MILLIS`.
pub const BATCH_END: &str = "okp-batch-end\t";
/// Separates the calls of one batch on its command line.
pub const BATCH_NEXT: &str = "--okp-next-call";
/// The CREATE scenario's Java client (`scenarios::births`); its librdkafka twin is `BIRTHS_PY`.
const BIRTHS_SOURCE: &str = include_str!("OkpBirths.java");
pub const BIRTHS_CLASS: &str = "okp.soak.OkpBirths";
/// The CREATE scenario's librdkafka client, run with the Python that has confluent-kafka.
pub const BIRTHS_PY: &str = include_str!("okp_births.py");

/// A digest of okp's Java sources: with the release and the JDK, what their compiled classes
/// depend on (the cache key of `Cluster::okp_client_classes`).
pub fn sources_digest() -> String {
    crate::hash::sha256(format!("{SOURCE}\0{BATCH_SOURCE}\0{BIRTHS_SOURCE}").as_bytes())
}

/// One line a client printed, with the milliseconds since the soak began when okp read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub t_ms: u64,
    pub text: String,
}

/// Compiles the client into `dir/classes` with the `javac` beside `java`; returns the class
/// directory. Kafka's client API used there exists unchanged in every release okp supports.
pub fn compile(java: &Path, classpath: &str, dir: &Path) -> Result<PathBuf> {
    let javac = java.with_file_name("javac");
    let src = dir.join("src");
    let classes = dir.join("classes");
    for d in [&src, &classes] {
        crate::fsx::create_dir(d)?;
    }
    let mut files = Vec::new();
    for (name, text) in
        [("OkpSoakClient.java", SOURCE), ("OkpToolBatch.java", BATCH_SOURCE), ("OkpBirths.java", BIRTHS_SOURCE)]
    {
        let file = src.join(name);
        crate::fsx::write_atomic(&file, text.as_bytes())?;
        files.push(file);
    }
    let out = Command::new(&javac)
        .arg("-proc:none")
        .arg("-nowarn")
        .arg("-cp")
        .arg(classpath)
        .arg("-d")
        .arg(&classes)
        .args(&files)
        .env_remove("JAVA_TOOL_OPTIONS")
        .output()
        .map_err(|e| Error::External(format!("cannot run {} ({e})", javac.display())))?;
    if !out.status.success() {
        return Err(Error::External(format!(
            "compiling okp's Java client and tool batch against the release's classpath failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(classes)
}

/// A running client JVM and the lines it has printed so far.
pub struct Client {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Arc<Mutex<Vec<Line>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Client {
    /// Starts `java [jvm] -cp CLASSPATH:classes OkpSoakClient args…`, stderr to `stderr_file`.
    pub fn spawn(
        name: &str,
        java: &Path,
        jvm: &[String],
        classpath: &str,
        args: &[String],
        stderr_file: &Path,
        t0: Instant,
    ) -> Result<Client> {
        let mut cmd = Command::new(java);
        cmd.env("CLASSPATH", classpath).env_remove("JAVA_TOOL_OPTIONS").args(jvm).arg(CLASS).args(args);
        Client::spawn_command(name, cmd, stderr_file, t0)
    }

    /// Starts `cmd` (any program speaking this line protocol: okp's Java classes, or the CREATE
    /// scenario's librdkafka client) in a process group of its own, stdout collected line by
    /// line, stderr to `stderr_file`.
    pub fn spawn_command(name: &str, mut cmd: Command, stderr_file: &Path, t0: Instant) -> Result<Client> {
        let err = std::fs::File::create(stderr_file)
            .map_err(|e| Error::io(format!("cannot create {}", stderr_file.display()), e))?;
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .process_group(0)
            .spawn()
            .map_err(|e| Error::External(format!("cannot run {program} ({e})")))?;
        node::register(child.id() as i32);
        let lines: Arc<Mutex<Vec<Line>>> = Arc::default();
        let stdout = child.stdout.take();
        let sink = Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            let Some(out) = stdout else { return };
            for l in BufReader::new(out).lines() {
                let Ok(text) = l else { break };
                let t_ms = t0.elapsed().as_millis() as u64;
                if let Ok(mut v) = sink.lock() {
                    v.push(Line { t_ms, text });
                }
            }
        });
        let stdin = child.stdin.take();
        Ok(Client { name: name.to_string(), child, stdin, lines, reader: Some(reader) })
    }

    /// Writes one command line to the client's stdin.
    pub fn send(&mut self, line: &str) -> Result<()> {
        use std::io::Write;
        let stdin = self.stdin.as_mut().ok_or_else(|| Error::External(format!("{}: stdin is closed", self.name)))?;
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .map_err(|e| Error::External(format!("{}: cannot write a command ({e}); has it exited?", self.name)))
    }

    /// How many lines the client has printed so far.
    pub fn printed(&self) -> usize {
        self.lines.lock().map(|v| v.len()).unwrap_or(0)
    }

    /// The lines from the `from`-th on.
    pub fn lines_from(&self, from: usize) -> Vec<Line> {
        self.lines.lock().map(|v| v.get(from..).map(<[Line]>::to_vec).unwrap_or_default()).unwrap_or_default()
    }

    /// Whether the client is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last `read` offset seen so far (consumers), if any.
    pub fn last_read_offset(&self) -> Option<i64> {
        let v = self.lines.lock().ok()?;
        v.iter().rev().find_map(|l| {
            let mut f = l.text.split('\t');
            (f.next() == Some("read")).then(|| f.nth(2)?.parse().ok()).flatten()
        })
    }

    /// How many lines of `kind` (`ack`, `err`, `read`, `note`) arrived at or after `t_ms`.
    pub fn count_since(&self, kind: &str, t_ms: u64) -> usize {
        let Ok(v) = self.lines.lock() else { return 0 };
        v.iter().filter(|l| l.t_ms >= t_ms && l.text.split('\t').next() == Some(kind)).count()
    }

    /// Closes stdin and waits up to `timeout` for `done` and the exit; kills the JVM after that.
    /// Returns every line, and whether the client finished by itself.
    pub fn stop(mut self, timeout: Duration) -> (Vec<Line>, bool) {
        drop(self.stdin.take());
        let t = Instant::now();
        let pid = self.child.id() as i32;
        let finished = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.success(),
                Ok(None) if t.elapsed() > timeout => {
                    // SAFETY: signals the client's own process group.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                    }
                    let _ = self.child.wait();
                    break false;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(_) => break false,
            }
        };
        node::unregister(pid);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let lines = self.lines.lock().map(|v| v.clone()).unwrap_or_default();
        let done = finished && lines.last().is_some_and(|l| l.text == "done");
        (lines, done)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let pid = self.child.id() as i32;
            // SAFETY: as in `stop`.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
            let _ = self.child.wait();
            node::unregister(pid);
        }
    }
}

/// What one client line says, for the history.
#[derive(Clone, Debug, PartialEq)]
pub enum Said {
    /// `micros`: from send() to the acknowledgement, as the producer measured it (None from a
    /// client that does not say: the librdkafka one, or a line written before it was added).
    Ack {
        value: String,
        partition: i32,
        offset: i64,
        micros: Option<u64>,
    },
    Err {
        value: String,
        error: String,
    },
    Read {
        session: u32,
        partition: i32,
        offset: i64,
        value: String,
    },
    Note(String),
    Done,
}

/// Parses one line; None for anything else (a line okp cannot read is left out of the history
/// and counted by the caller).
pub fn parse(text: &str) -> Option<Said> {
    let f: Vec<&str> = text.split('\t').collect();
    match f.as_slice() {
        ["ack", _seq, value, p, o] => Some(Said::Ack {
            value: value.to_string(),
            partition: p.parse().ok()?,
            offset: o.parse().ok()?,
            micros: None,
        }),
        ["ack", _seq, value, p, o, us] => Some(Said::Ack {
            value: value.to_string(),
            partition: p.parse().ok()?,
            offset: o.parse().ok()?,
            micros: Some(us.parse().ok()?),
        }),
        ["err", _seq, value, error] => Some(Said::Err { value: value.to_string(), error: error.to_string() }),
        ["read", s, p, o, value] => Some(Said::Read {
            session: s.parse().ok()?,
            partition: p.parse().ok()?,
            offset: o.parse().ok()?,
            value: value.to_string(),
        }),
        ["note", text] => Some(Said::Note(text.to_string())),
        ["done"] => Some(Said::Done),
        _ => None,
    }
}

impl crate::cluster::Cluster {
    /// okp's own Java classes (`OkpSoakClient`, `OkpToolBatch`), compiled against the release's
    /// classpath once per (release, JDK, sources) and kept in the Maven cache (compiled beside
    /// it in a staging directory of this call's own, then renamed into place, so a kill, a
    /// second okp or a second lane leaves either nothing or all of it); in the run directory
    /// when the cache cannot be written. Their directory.
    pub fn okp_client_classes(&mut self) -> Result<PathBuf> {
        let complete = |classes: &Path| {
            [CLASS, BATCH_CLASS, BIRTHS_CLASS]
                .iter()
                .all(|c| classes.join(format!("{}.class", c.replace('.', "/"))).is_file())
        };
        let key = crate::hash::sha256(
            format!("{}\0{}\0{}", self.rt.version, self.rt.java_version, sources_digest()).as_bytes(),
        );
        let name = format!("{}-{}", self.rt.version, &key[..16]);
        let cache = self.rt.client_cache.clone();
        let dir = cache.join(&name);
        if complete(&dir.join("classes")) {
            return Ok(dir.join("classes"));
        }
        let local = self.run_dir.join("okp-client");
        if crate::fsx::create_dir(&cache).is_err() {
            if !complete(&local.join("classes")) {
                compile(&self.rt.java, &self.tools.classpath, &local)?;
            }
            return Ok(local.join("classes"));
        }
        // Private to this call: the lanes of one run are threads of one process, and two of them
        // compiling at once in one staging directory removed each other's sources (3.7.2 kraft,
        // 2026-12-04: `file not found: .../OkpSoakClient.java`).
        let staging = cache.join(format!(".{name}.tmp.{}.{}", std::process::id(), crate::fsx::unique()));
        let _ = std::fs::remove_dir_all(&staging);
        if let Err(e) = compile(&self.rt.java, &self.tools.classpath, &staging) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
        if std::fs::rename(&staging, &dir).is_err() {
            // Another okp put it there first (or the cache is damaged): theirs if whole.
            let _ = std::fs::remove_dir_all(&staging);
            if !complete(&dir.join("classes")) {
                return Err(Error::External(format!(
                    "{} is there but incomplete: delete it and run again",
                    dir.display()
                )));
            }
        }
        self.journal.note(&format!("okp's Java classes compiled into {}", dir.display()));
        Ok(dir.join("classes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_kind_parses_and_nothing_else_does() {
        assert_eq!(
            parse("ack\t3\tpi-000003\t0\t41"),
            Some(Said::Ack { value: "pi-000003".into(), partition: 0, offset: 41, micros: None })
        );
        assert_eq!(
            parse("ack\t3\tpi-000003\t0\t41\t2310"),
            Some(Said::Ack { value: "pi-000003".into(), partition: 0, offset: 41, micros: Some(2310) })
        );
        assert_eq!(parse("ack\t3\tpi-000003\t0\t41\t-5"), None);
        assert_eq!(
            parse("err\t4\tpi-000004\torg.apache.kafka.common.errors.TimeoutException: x"),
            Some(Said::Err {
                value: "pi-000004".into(),
                error: "org.apache.kafka.common.errors.TimeoutException: x".into()
            })
        );
        assert_eq!(
            parse("read\t1\t0\t41\tpi-000003"),
            Some(Said::Read { session: 1, partition: 0, offset: 41, value: "pi-000003".into() })
        );
        assert_eq!(parse("done"), Some(Said::Done));
        assert_eq!(parse("note\tnew producer"), Some(Said::Note("new producer".into())));
        for bad in ["", "ack\t3\tv\t0", "ack\t3\tv\tzero\t1", "read\tx\t0\t1\tv", "SLF4J: oops", "done\textra"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_embedded_source_declares_the_class_okp_runs() {
        assert!(SOURCE.contains("package okp.soak;") && SOURCE.contains("public final class OkpSoakClient"));
    }
}
