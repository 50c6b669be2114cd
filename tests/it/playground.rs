//! `okp playground` as a person uses it: started in the foreground, it prints the bootstrap
//! address, the nodes file and the next commands; the printed `okp observers status` works on it
//! and shows broker 4 an observer of `demo`; SIGINT stops it with exit 130, leaving no process of
//! it running and its directory removed.
//!
//! Ignored in the main test run (a cluster costs a minute of its time budget); ci/okp-hosts.yml
//! runs it with `--ignored`.

use crate::common::*;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
#[ignore = "starts a cluster: run by ci/okp-hosts.yml with --ignored"]
fn the_playground_prints_what_to_try_and_ctrl_c_leaves_nothing_running() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("pg");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("okp"))
        .args(["playground", "--version", "3.9.2", "--dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut text = String::new();
    let t0 = Instant::now();
    for l in lines.by_ref() {
        let l = l.unwrap();
        text.push_str(&l);
        text.push('\n');
        if l.starts_with("Ctrl-C stops") || t0.elapsed() > Duration::from_secs(600) {
            break;
        }
    }
    eprintln!("{text}");
    let boot = text.lines().find_map(|l| l.trim().strip_prefix("bootstrap")).unwrap().trim().to_string();
    let first = boot.split(',').next().unwrap();
    let nodes = dir.join("nodes.yaml");
    assert!(text.contains(&format!("okp observers promote --broker 4 --bootstrap {first} --nodes {}", nodes.display())));
    assert!(text.contains("kafka-console-producer.sh") && text.contains("kafka-console-consumer.sh"));
    // The printed status command, as printed.
    let o = okp()
        .args(["observers", "status", "--bootstrap", first, "--nodes"])
        .arg(&nodes)
        .args(["--topic", "demo", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r4 = v["replicas"].as_array().unwrap().iter().find(|r| r["replica"] == 4).unwrap().clone();
    assert_eq!((r4["role"].as_str(), r4["in_isr"].as_bool()), (Some("observer"), Some(false)), "{r4}");
    // The metrics URLs it printed: broker 1's exporter serves the observer gauges; Prometheus
    // (installed by scripts/setup.sh) scrapes every node's.
    let url_port = |name: &str| -> u16 {
        let l = text.lines().find(|l| l.trim_start().starts_with(name) && l.contains("http://127.0.0.1:")).unwrap();
        let rest = l.split("http://127.0.0.1:").nth(1).unwrap();
        rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let body = okp::monitoring::prom::get(url_port("broker-1"), "/metrics").unwrap();
    assert!(body.contains("okp_broker_observer_set_size 1.0"), "{body}");
    if okp::monitoring::prom::unavailable().is_none() {
        let port = url_port("Prometheus");
        let t0 = Instant::now();
        loop {
            let q = okp::monitoring::prom::get(port, "/api/v1/query?query=okp_broker_observer_set_size")
                .unwrap_or_default();
            if q.matches("\"__name__\"").count() == 4 {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "Prometheus did not scrape the 4 brokers: {q}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    // The console producer and consumer it wrote run the release's own tools against it.
    let bin = dir.join("bin");
    let mut p = Command::new(bin.join("kafka-console-producer.sh"))
        .args(["--bootstrap-server", first, "--topic", "demo", "--producer-property", "acks=all"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        p.stdin.take().unwrap().write_all(b"hello from the playground test\n").unwrap();
    }
    let out = p.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(bin.join("kafka-console-consumer.sh"))
        .args([
            "--bootstrap-server",
            first,
            "--topic",
            "demo",
            "--from-beginning",
            "--max-messages",
            "1",
            "--timeout-ms",
            "60000",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hello from the playground test"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Ctrl-C: exit 130, nothing of it left.
    // SAFETY: SIGINT to the okp child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "the playground did not stop within 120 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status.code(), Some(130));
    assert!(!dir.exists(), "{} removed", dir.display());
    let left = Command::new("pgrep").args(["-f", &dir.display().to_string()]).output().unwrap();
    assert!(left.stdout.is_empty(), "still running: {}", String::from_utf8_lossy(&left.stdout));
}

/// Ctrl-C while the cluster starts: every process okp started is killed at once, the command
/// unwinds (no `process::exit` inside the library) with exit 130, and the directory it made is gone.
#[test]
#[ignore = "starts a cluster: run by ci/okp-hosts.yml with --ignored"]
fn ctrl_c_while_starting_exits_130_and_leaves_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("pg");
    let child = Command::new(assert_cmd::cargo::cargo_bin("okp"))
        .args(["playground", "--version", "3.9.2", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first JVM of the cluster: its node directory appears under DIR/cluster.
    let t0 = Instant::now();
    while !dir.join("cluster").exists() {
        assert!(t0.elapsed() < Duration::from_secs(300), "the playground never began to start its cluster");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: SIGINT to the okp child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: stopping every process this run started"), "{err}");
    assert!(!dir.exists(), "{} removed", dir.display());
    let left = Command::new("pgrep").args(["-f", &dir.display().to_string()]).output().unwrap();
    assert!(left.stdout.is_empty(), "still running: {}", String::from_utf8_lossy(&left.stdout));
}
