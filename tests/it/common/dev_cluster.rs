//! A patched cluster for a test, started by the hidden `okp dev-cluster` (okp
//! verify's machinery) and driven over its stdin (`kill N`, `start N`,
//! `freeze N`, `thaw N`, `produce TOPIC COUNT`); it stops when dropped. Shared
//! by the integration tests of `okp observers` (tests/it/observers.rs,
//! tests/it/observers_watch.rs), through `common::dev_cluster`.
//!
//! Only one okp cluster may run on a machine at a time: run these tests under
//! `flock /tmp/okp-cluster.lock`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

pub struct DevCluster {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub dir: tempfile::TempDir,
    pub bootstrap: String,
}

impl DevCluster {
    pub fn up(version: &str, mode: &str, topics: &[&str]) -> DevCluster {
        let dir = tempfile::tempdir().unwrap();
        let bin = assert_cmd::cargo::cargo_bin("okp");
        let mut cmd = std::process::Command::new(bin);
        cmd.env("OKP_NO_DAEMON", "1");
        cmd.args(["dev-cluster", "--version", version, "--mode", mode, "--state"]).arg(dir.path().join("cluster.json"));
        for t in topics {
            cmd.args(["--topic", t]);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "dev-cluster did not come up");
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("cluster.json")).unwrap()).unwrap();
        let bootstrap = state["bootstrap"].as_str().unwrap().to_string();
        DevCluster { child, stdin, stdout, dir, bootstrap }
    }

    pub fn nodes_file(&self) -> PathBuf {
        self.dir.path().join("nodes.yaml")
    }

    pub fn send(&mut self, command: &str) -> String {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(line.starts_with("ok"), "{command}: {line}");
        line.trim().to_string()
    }

    /// Every node's observer.ids, path → bytes.
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        let text = std::fs::read_to_string(self.nodes_file()).unwrap();
        text.lines()
            .filter_map(|l| l.split("path: '").nth(1))
            .map(|p| p.trim_end_matches("'}").to_string())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect()
    }

    pub fn okp(&self, args: &[&str]) -> std::process::Output {
        let mut c = crate::common::okp();
        c.args(["observers"]).args(args).args(["--bootstrap", &self.bootstrap]);
        c.output().unwrap()
    }

    /// The replicas of `topic` as `status --format json` reports them (observers per the nodes' files).
    pub fn status(&self, topic: &str) -> serde_json::Value {
        self.try_status(topic).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `status`, or what okp said when it could not answer (exit 2 or 3).
    fn try_status(&self, topic: &str) -> Result<serde_json::Value, String> {
        let o =
            self.okp(&["status", "--format", "json", "--topic", topic, "--nodes", self.nodes_file().to_str().unwrap()]);
        if o.status.code() == Some(0) || o.status.code() == Some(1) {
            Ok(serde_json::from_str(&crate::common::stdout(&o)).unwrap())
        } else {
            Err(format!("exit {:?}: {}", o.status.code(), crate::common::stderr(&o)))
        }
    }

    /// Waits (≤ 60 s) until the replicas of `topic` satisfy `pred`. While brokers restart, a
    /// broker that has not yet had the cluster's metadata may answer that the topic does not
    /// exist: such an answer is waited out like any other state, and shown if it is the last.
    pub fn wait(&self, topic: &str, what: &str, pred: impl Fn(&[serde_json::Value]) -> bool) {
        let t0 = Instant::now();
        loop {
            let s = self.try_status(topic);
            if let Ok(s) = &s {
                if pred(s["replicas"].as_array().unwrap()) {
                    return;
                }
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "{topic}: not {what} within 60 s: {s:#?}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for DevCluster {
    fn drop(&mut self) {
        // End of input stops the cluster; kill only if it does not stop.
        self.stdin.take();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.child.kill();
    }
}

pub fn replica(rows: &[serde_json::Value], id: i64) -> &serde_json::Value {
    rows.iter().find(|r| r["replica"] == id).unwrap()
}

pub fn in_isr(rows: &[serde_json::Value], id: i64) -> bool {
    replica(rows, id)["in_isr"] == true
}

pub fn leader(rows: &[serde_json::Value]) -> Option<i64> {
    rows.iter().find(|r| r["is_leader"] == true).and_then(|r| r["replica"].as_i64())
}

pub fn unchanged(before: &[(String, Vec<u8>)], c: &DevCluster, what: &str) {
    assert_eq!(before, c.files().as_slice(), "{what}: an observer.ids file changed");
}

pub fn all_files_say(c: &DevCluster, want: &str) {
    for (p, b) in c.files() {
        assert_eq!(String::from_utf8_lossy(&b), want, "{p}");
    }
}
