//! The release's own command-line tools, run as JVMs on the release's
//! classpath: which class each tool is in this release, running it with a
//! timeout, and parsing the outputs the scenarios assert on.
//!
//! Tool classes moved between packages from release to release (3.7, 3.8,
//! 4.0, 4.3). Nothing here hard-codes a range: each tool has an ordered list of
//! candidate classes, resolved once per run against the classpath's jar index.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{client, node};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    Server,
    ZooKeeper,
    ZooKeeperShell,
    Storage,
    Topics,
    Producer,
    Consumer,
    Elect,
    Offsets,
    Dump,
    Quorum,
    Perf,
    Jmx,
    Reassign,
    Features,
}

impl Tool {
    pub const ALL: [Tool; 15] = [
        Tool::Server,
        Tool::ZooKeeper,
        Tool::ZooKeeperShell,
        Tool::Storage,
        Tool::Topics,
        Tool::Producer,
        Tool::Consumer,
        Tool::Elect,
        Tool::Offsets,
        Tool::Dump,
        Tool::Quorum,
        Tool::Perf,
        Tool::Jmx,
        Tool::Reassign,
        Tool::Features,
    ];

    /// Candidate classes, newest home first.
    fn candidates(self) -> &'static [&'static str] {
        match self {
            Tool::Server => &["kafka.Kafka"],
            Tool::ZooKeeper => &["org.apache.zookeeper.server.ZooKeeperServerMain"],
            Tool::ZooKeeperShell => {
                &["org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka", "org.apache.zookeeper.ZooKeeperMain"]
            }
            Tool::Storage => &["kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool"],
            Tool::Topics => &["org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"],
            Tool::Producer => &["org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"],
            Tool::Consumer => &["org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"],
            Tool::Elect => &["org.apache.kafka.tools.LeaderElectionCommand", "kafka.admin.LeaderElectionCommand"],
            Tool::Offsets => &["org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"],
            Tool::Dump => &["org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"],
            Tool::Quorum => &["org.apache.kafka.tools.MetadataQuorumCommand", "kafka.admin.MetadataQuorumCommand"],
            Tool::Perf => &["org.apache.kafka.tools.ProducerPerformance"],
            Tool::Jmx => &["org.apache.kafka.tools.JmxTool", "kafka.tools.JmxTool"],
            Tool::Reassign => {
                &["org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "kafka.admin.ReassignPartitionsCommand"]
            }
            Tool::Features => &["org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand"],
        }
    }

    /// Short admin calls that run in the lane's resident tool JVM (resident.rs) when it has one:
    /// each reads no stdin and ends by itself. Producers, consumers and the servers keep a JVM
    /// of their own (a console producer reports failed sends in its shutdown hook).
    pub fn resident(self) -> bool {
        matches!(
            self,
            Tool::Topics | Tool::Elect | Tool::Offsets | Tool::Dump | Tool::Quorum | Tool::Jmx | Tool::Reassign
        )
    }

    pub fn label(self) -> &'static str {
        match self {
            Tool::Server => "server",
            Tool::ZooKeeper => "zookeeper",
            Tool::ZooKeeperShell => "zookeeper-shell",
            Tool::Storage => "storage",
            Tool::Topics => "topics",
            Tool::Producer => "console-producer",
            Tool::Consumer => "console-consumer",
            Tool::Elect => "leader-election",
            Tool::Offsets => "get-offsets",
            Tool::Dump => "dump-log",
            Tool::Quorum => "metadata-quorum",
            Tool::Perf => "producer-perf",
            Tool::Jmx => "jmx-tool",
            Tool::Reassign => "reassign-partitions",
            Tool::Features => "features",
        }
    }
}

/// Tool → (class, jar it was found in), for the tools this release has.
pub fn resolve(index: &BTreeMap<String, String>) -> BTreeMap<Tool, (String, String)> {
    let mut out = BTreeMap::new();
    for t in Tool::ALL {
        if let Some((c, jar)) = t.candidates().iter().find_map(|c| index.get(*c).map(|j| (c.to_string(), j.clone()))) {
            out.insert(t, (c, jar));
        }
    }
    out
}

#[derive(Debug, Clone)]
pub struct Output {
    pub argv: Vec<String>,
    pub rc: i32,
    pub stdout: String,
    pub stderr: String,
    pub secs: f64,
    pub timed_out: bool,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.rc == 0 && !self.timed_out
    }
}

/// A tool JVM started in the background (a producer while a broker is killed).
pub struct Running {
    argv: Vec<String>,
    child: Child,
    out: PathBuf,
    err: PathBuf,
    t0: Instant,
}

pub struct Runner {
    pub java: PathBuf,
    pub classpath: String,
    pub jvm: Vec<String>,
    pub classes: BTreeMap<Tool, (String, String)>,
    pub scratch: PathBuf,
    seq: u32,
    /// okp's compiled Java classes, once the cluster has them: resident calls are on.
    pub resident_classes: Option<PathBuf>,
    resident: Option<super::resident::Resident>,
    /// Resident JVMs started so far (each one's stderr file is numbered by it).
    residents: u32,
}

impl Runner {
    pub fn new(
        java: PathBuf,
        classpath: String,
        jvm: Vec<String>,
        classes: BTreeMap<Tool, (String, String)>,
        scratch: PathBuf,
    ) -> Runner {
        Runner { java, classpath, jvm, classes, scratch, seq: 0, resident_classes: None, resident: None, residents: 0 }
    }

    pub fn class(&self, t: Tool) -> Result<&str> {
        self.classes.get(&t).map(|(c, _)| c.as_str()).ok_or_else(|| {
            Error::Harness(format!("this release has no {} tool (looked for {})", t.label(), t.candidates().join(", ")))
        })
    }

    pub fn spawn(&mut self, t: Tool, args: &[String], stdin: Option<&Path>) -> Result<Running> {
        let class = self.class(t)?.to_string();
        self.spawn_class(&class, None, args, stdin)
    }

    /// Runs `class` with the release's classpath, `extra` (a directory of okp's own classes)
    /// appended, and the tools' JVM options.
    pub fn run_class(&mut self, class: &str, extra: &Path, args: &[String], timeout: Duration) -> Result<Output> {
        let out = self.spawn_class(class, Some(extra), args, None)?.finish(timeout);
        node::check_interrupt()?;
        Ok(out)
    }

    fn spawn_class(
        &mut self,
        class: &str,
        extra: Option<&Path>,
        args: &[String],
        stdin: Option<&Path>,
    ) -> Result<Running> {
        node::check_interrupt()?;
        let class = class.to_string();
        let classpath = match extra {
            Some(dir) => format!("{}:{}", self.classpath, dir.display()),
            None => self.classpath.clone(),
        };
        self.seq += 1;
        let out = self.scratch.join(format!("tool-{:04}.out", self.seq));
        let err = self.scratch.join(format!("tool-{:04}.err", self.seq));
        let fo = File::create(&out).map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
        let fe = File::create(&err).map_err(|e| Error::io(format!("cannot create {}", err.display()), e))?;
        let input = match stdin {
            Some(p) => Stdio::from(
                crate::fsx::read::open_regular(p, crate::fsx::read::MAX_TEXT)
                    .map_err(|e| e.into_error(p, "tool's input"))?,
            ),
            None => Stdio::null(),
        };
        let mut argv: Vec<String> = vec!["java".into()];
        argv.extend(self.jvm.iter().cloned());
        argv.push(class);
        argv.extend(args.iter().cloned());
        let mut cmd = Command::new(&self.java);
        cmd.env("CLASSPATH", &classpath).env_remove("JAVA_TOOL_OPTIONS");
        cmd.args(&argv[1..]).stdin(input).stdout(fo).stderr(fe).process_group(0);
        let child = cmd.spawn().map_err(|e| Error::External(format!("cannot run {} ({e})", self.java.display())))?;
        node::register(child.id() as i32);
        Ok(Running { argv, child, out, err, t0: Instant::now() })
    }

    /// Runs tool `t` once per entry of `calls`, in order, in one JVM: okp's `OkpToolBatch` (its
    /// classes in `extra`) calls the tool's own main for each and catches its exit. One `Output`
    /// per call, its argv the batch JVM's with that call's arguments.
    pub fn batch(&mut self, t: Tool, extra: &Path, calls: &[Vec<String>], timeout: Duration) -> Result<Vec<Output>> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let class = self.class(t)?.to_string();
        let mut a = vec![class];
        for (i, call) in calls.iter().enumerate() {
            if i > 0 {
                a.push(client::BATCH_NEXT.to_string());
            }
            a.extend(call.iter().cloned());
        }
        let out = self.spawn_class(client::BATCH_CLASS, Some(extra), &a, None)?.finish(timeout);
        node::check_interrupt()?;
        Ok(split_batch(&out, calls))
    }

    /// Runs tool `t` (in the resident JVM when it may) and waits for it, killing it at `timeout`.
    /// A call the interrupt cut short is `Error::Interrupted`, not a tool's failure.
    pub fn run(&mut self, t: Tool, args: &[String], stdin: Option<&Path>, timeout: Duration) -> Result<Output> {
        node::check_interrupt()?;
        let resident = if stdin.is_none() && t.resident() { self.resident_classes.clone() } else { None };
        let out = match resident {
            Some(classes) => {
                let class = self.class(t)?.to_string();
                self.run_resident(&classes, &class, args, timeout)
            }
            None => self.spawn(t, args, stdin)?.finish(timeout),
        };
        node::check_interrupt()?;
        Ok(out)
    }

    /// Ends the resident tool JVM, if there is one (the cluster's teardown).
    pub fn stop_resident(&mut self) {
        self.resident = None;
    }

    /// One call in the resident tool JVM (started here when there is none). Its argv, as the
    /// journal shows it: the resident JVM's command line, then the tool's class and arguments.
    fn run_resident(&mut self, classes: &Path, class: &str, args: &[String], timeout: Duration) -> Output {
        let t0 = Instant::now();
        let mut argv: Vec<String> = vec!["java".into()];
        argv.extend(self.jvm.iter().cloned());
        argv.extend([client::BATCH_CLASS.to_string(), super::resident::SERVE.to_string(), class.to_string()]);
        argv.extend(args.iter().cloned());
        let failed = |rc: i32, why: String, timed_out: bool| Output {
            argv: argv.clone(),
            rc,
            stdout: String::new(),
            stderr: format!("okp: {why}\n"),
            secs: t0.elapsed().as_secs_f64(),
            timed_out,
        };
        if self.resident.as_ref().is_some_and(|r| r.calls >= super::resident::MAX_CALLS) {
            self.resident = None;
        }
        if self.resident.is_none() {
            self.residents += 1;
            let err = self.scratch.join(format!("resident-{:02}.err", self.residents));
            match super::resident::Resident::start(&self.java, &self.jvm, &self.classpath, classes, err) {
                Ok(r) => self.resident = Some(r),
                Err(e) => return failed(-1, format!("cannot start the resident tool JVM: {e}"), false),
            }
        }
        let Some(r) = self.resident.as_mut() else { return failed(-1, "no resident tool JVM".into(), false) };
        match r.call(class, args, timeout) {
            Ok(a) => Output {
                argv,
                rc: a.rc,
                stdout: a.stdout,
                stderr: a.stderr,
                secs: t0.elapsed().as_secs_f64(),
                timed_out: false,
            },
            Err(f) => {
                // The JVM is in an unknown state: end it; the next call starts a new one.
                self.resident = None;
                failed(if f.timed_out { -9 } else { -1 }, f.why, f.timed_out)
            }
        }
    }
}

impl Running {
    /// Waits for the tool, killing it at `timeout`.
    pub fn finish(mut self, timeout: Duration) -> Output {
        let pid = self.child.id() as i32;
        let mut timed_out = false;
        let rc = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.code().unwrap_or(-1),
                Ok(None) if self.t0.elapsed() > timeout => {
                    // SAFETY: signals the tool's own process group.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                    }
                    let _ = self.child.wait();
                    timed_out = true;
                    break -9;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break -1,
            }
        };
        node::unregister(pid);
        let read = |p: &Path| crate::fsx::read::lossy_text(p, crate::fsx::read::MAX_TEXT);
        let out = Output {
            argv: self.argv.clone(),
            rc,
            stdout: read(&self.out),
            stderr: read(&self.err),
            secs: self.t0.elapsed().as_secs_f64(),
            timed_out,
        };
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.err);
        out
    }
}

/// One batch JVM's output cut into its calls' (`Runner::batch`): each call's lines are those
/// before its `okp-batch-end INDEX RC MILLIS` line, on stdout and on stderr. A call without that
/// line (the JVM died or timed out first) gets the JVM's exit code (-1 if it was 0) and what was
/// left of its output.
fn split_batch(out: &Output, calls: &[Vec<String>]) -> Vec<Output> {
    fn sections(text: &str) -> Vec<(String, Option<(i32, f64)>)> {
        let mut found = Vec::new();
        let mut cur = String::new();
        for line in text.lines() {
            if let Some(end) = line.strip_prefix(client::BATCH_END) {
                let f: Vec<&str> = end.split('\t').collect();
                let rc = f.get(1).and_then(|r| r.parse().ok()).unwrap_or(-1);
                let secs = f.get(2).and_then(|m| m.parse::<f64>().ok()).unwrap_or(0.0) / 1000.0;
                found.push((std::mem::take(&mut cur), Some((rc, secs))));
            } else {
                cur.push_str(line);
                cur.push('\n');
            }
        }
        found.push((cur, None));
        found
    }
    let (stdout, stderr) = (sections(&out.stdout), sections(&out.stderr));
    let appended = calls.iter().map(Vec::len).sum::<usize>() + calls.len().saturating_sub(1);
    let prefix = out.argv.len().saturating_sub(appended);
    let failed = if out.rc == 0 { -1 } else { out.rc };
    let mut done = false;
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let mut argv = out.argv[..prefix.min(out.argv.len())].to_vec();
            argv.extend(call.iter().cloned());
            let (text, end) = stdout.get(i).cloned().unwrap_or_default();
            let err = stderr.get(i).map(|(t, _)| t.clone()).unwrap_or_default();
            // Only the first call without an end line gets the output left over.
            let (text, err) = if end.is_none() && std::mem::replace(&mut done, true) {
                (String::new(), String::new())
            } else {
                (text, err)
            };
            let (rc, secs) = end.unwrap_or((failed, out.secs));
            Output { argv, rc, stdout: text, stderr: err, secs, timed_out: end.is_none() && out.timed_out }
        })
        .collect()
}

pub use crate::wire::PartitionState;

mod parse;
pub use parse::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::args;

    fn batch_output(rc: i32, stdout: &str, stderr: &str, calls: &[Vec<String>]) -> Output {
        let mut argv: Vec<String> =
            ["java", "-Xmx128m", client::BATCH_CLASS, "kafka.tools.StorageTool"].map(String::from).to_vec();
        for (i, c) in calls.iter().enumerate() {
            if i > 0 {
                argv.push(client::BATCH_NEXT.into());
            }
            argv.extend(c.iter().cloned());
        }
        Output { argv, rc, stdout: stdout.into(), stderr: stderr.into(), secs: 9.0, timed_out: false }
    }

    #[test]
    fn a_batch_is_cut_into_its_calls_with_their_own_exit_codes() {
        let calls = vec![args(&["format", "-c", "a"]), args(&["format", "-c", "b"])];
        let out = batch_output(
            0,
            "one\nokp-batch-end\t0\t0\t1500\ntwo\nokp-batch-end\t1\t1\t20\n",
            "w1\nokp-batch-end\t0\t0\t1500\nbad b\nokp-batch-end\t1\t1\t20\n",
            &calls,
        );
        let got = split_batch(&out, &calls);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].argv,
            ["java", "-Xmx128m", client::BATCH_CLASS, "kafka.tools.StorageTool", "format", "-c", "a"]
        );
        assert_eq!((got[0].rc, got[0].stdout.as_str(), got[0].stderr.as_str(), got[0].secs), (0, "one\n", "w1\n", 1.5));
        assert_eq!(got[1].argv.last().map(String::as_str), Some("b"));
        assert_eq!((got[1].rc, got[1].stdout.as_str(), got[1].stderr.as_str()), (1, "two\n", "bad b\n"));
        assert!(got[0].ok() && !got[1].ok());
    }

    #[test]
    fn a_batch_that_died_fails_every_call_it_did_not_finish() {
        let calls = vec![args(&["a"]), args(&["b"]), args(&["c"])];
        // The JVM exits 0 after the first call without the others' end lines: they fail anyway.
        let got = split_batch(&batch_output(0, "x\nokp-batch-end\t0\t0\t5\nhalf\n", "", &calls), &calls);
        assert_eq!(got.iter().map(|o| o.rc).collect::<Vec<_>>(), [0, -1, -1]);
        assert_eq!((got[1].stdout.as_str(), got[2].stdout.as_str()), ("half\n", ""));
        let got = split_batch(&batch_output(137, "", "", &calls), &calls);
        assert!(got.iter().all(|o| o.rc == 137 && !o.ok()));
    }
}
