//! `okp dev-cluster` (hidden): a patched cluster, as `okp verify` starts it,
//! kept up for integration tests of tools that work on a live cluster (`okp
//! observers`). It writes a state file (bootstrap, ports, pids, each node's
//! observer.ids, and a nodes file for `--nodes`) once every topic has a
//! leader, then takes one command per stdin line and answers one line
//! (`ok …` or `error …`): `kill N`, `start N`, `freeze N`, `thaw N`,
//! `produce TOPIC COUNT`, `down`. End of input stops the cluster too, so a
//! test that dies takes its cluster with it.
//!
//! Not for operators: it proves nothing by itself (that is `okp verify`).

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, Timers};
use crate::error::{Error, Outcome, Result};
use crate::model::{Layers, Mode, Release};
use crate::workspace::Workspace;

/// `NAME=ASSIGNMENT[,CONFIG=VALUE...]` → (name, assignment, configs).
fn topic_spec(s: &str) -> Result<(String, String, Vec<String>)> {
    let (name, rest) = s
        .split_once('=')
        .ok_or_else(|| Error::Usage(format!("--topic {s}: expected NAME=ASSIGNMENT[,CONFIG=VALUE...]")))?;
    let mut parts = rest.split(',');
    let assignment = parts.next().unwrap_or_default().to_string();
    Ok((name.to_string(), assignment, parts.map(str::to_string).collect()))
}

pub fn hold(
    ws: &Workspace,
    release: Release,
    mode: Mode,
    timers: Timers,
    extra: &[String],
    state: &Path,
) -> Result<Outcome> {
    let extra: Vec<(String, String, Vec<String>)> = extra.iter().map(|s| topic_spec(s)).collect::<Result<_>>()?;
    let build = crate::verify::patched_jars(ws, &release, mode, &Layers::all(), None)?;
    let rt = Runtime::assemble(&ws.maven, release.version, Some(&build))?;
    let run_dir = tempfile::Builder::new()
        .prefix("okp-dev-cluster-")
        .tempdir()
        .map_err(|e| Error::io("cannot create the run directory", e))?
        .keep();
    let journal = Journal::new(&run_dir.join("journal"), &run_dir);
    crate::out::note(format!("dev-cluster: run directory {}", run_dir.display()));
    let mut c = Cluster::up(mode, rt, timers, &run_dir, None, journal, crate::cluster::Homes::Shared)?;
    let mut topics: Vec<(&str, &str, Vec<&str>)> =
        crate::scenarios::TOPICS.iter().map(|(t, a, cfg)| (*t, *a, cfg.to_vec())).collect();
    topics.extend(extra.iter().map(|(t, a, cfg)| (t.as_str(), a.as_str(), cfg.iter().map(String::as_str).collect())));
    let specs: Vec<(&str, &str, &[&str])> = topics.iter().map(|(t, a, cfg)| (*t, *a, &cfg[..])).collect();
    for ((t, _, _), out) in specs.iter().zip(c.create_topics(&specs)?) {
        if !out.ok() {
            c.down();
            return Err(Error::External(format!(
                "creating topic {t} failed (rc {}): {}",
                out.rc,
                out.stderr.lines().last().unwrap_or("")
            )));
        }
    }
    for (t, _, _) in &specs {
        let t0 = Instant::now();
        while c.probe_state(t).is_none_or(|s| s.leader.is_none()) {
            if t0.elapsed() > Duration::from_secs(60) {
                c.down();
                return Err(Error::External(format!("topic {t} has no leader 60 s after creation")));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    write_state(&mut c, &release, state)?;
    reply("ready");
    let mut seq = 0;
    let mut failed = false;
    // Commands come from stdin on a thread of their own, so Ctrl-C or SIGTERM (every process
    // already stopped by the handler) ends the loop while no command arrives.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    loop {
        let line = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if crate::cluster::node::interrupted() {
                    c.down();
                    return Err(Error::Interrupted);
                }
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"down") {
            break;
        }
        seq += 1;
        // One line per answer, whatever the error holds (a log tail).
        reply(&command(&mut c, &words, seq).unwrap_or_else(|e| {
            failed = true;
            format!("error {}", e.to_string().replace('\n', " | "))
        }));
    }
    c.down();
    drop(c);
    if failed {
        crate::out::note(format!(
            "dev-cluster: a command failed; run directory (node logs) kept at {}",
            run_dir.display()
        ));
    } else {
        let _ = std::fs::remove_dir_all(&run_dir);
    }
    Ok(Outcome::Done)
}

fn reply(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
    let _ = out.flush();
}

fn command(c: &mut Cluster, words: &[&str], seq: u32) -> Result<String> {
    let node = |w: Option<&&str>| -> Result<i32> {
        let id = w.and_then(|s| s.parse::<i32>().ok()).ok_or_else(|| Error::Usage("expected a node id".into()))?;
        if c.kafka_nodes().contains(&id) {
            Ok(id)
        } else {
            Err(Error::Usage(format!("no node {id}")))
        }
    };
    match words {
        [verb @ ("kill" | "freeze" | "thaw"), _] => {
            let id = node(words.get(1))?;
            match *verb {
                "kill" => c.kill9(id),
                "freeze" => c.freeze(id),
                _ => c.thaw(id),
            }
            Ok("ok".into())
        }
        ["start", _] => {
            let id = node(words.get(1))?;
            Ok(format!("ok ready in {:.1} s", c.restart(id)?))
        }
        ["produce", topic, n] => {
            let n: usize = n.parse().map_err(|_| Error::Usage(format!("not a count: {n}")))?;
            let p = c.produce(topic, &format!("dev{seq}"), n, &[])?;
            Ok(format!("ok acked={} errors={} rc={}", p.values.len(), p.errors, p.rc))
        }
        _ => Err(Error::Usage(format!(
            "unknown command `{}` (kill N, start N, freeze N, thaw N, produce TOPIC COUNT, down)",
            words.join(" ")
        ))),
    }
}

/// cluster.json and, beside it, nodes.yaml (every node's observer.ids, for `--nodes`).
fn write_state(c: &mut Cluster, release: &Release, state: &Path) -> Result<()> {
    let mut nodes = String::from("nodes:\n");
    let mut list = Vec::new();
    for id in c.kafka_nodes() {
        let n = c.node(id);
        let role = if n.role == crate::cluster::node::Role::Controller { "controller" } else { "broker" };
        nodes.push_str(&format!("  - {{id: {id}, role: {role}, path: '{}'}}\n", n.observer_file().display()));
        list.push(serde_json::json!({"id": id, "role": role, "port": n.port, "pid": n.pid(), "observer_file": n.observer_file(), "dir": n.dir}));
    }
    let nodes_file = state.with_file_name("nodes.yaml");
    crate::fsx::write_atomic(&nodes_file, nodes.as_bytes())?;
    let boot = c.bootstrap(&[]);
    let v = serde_json::json!({
        "release": release.version.to_string(),
        "mode": c.mode,
        "bootstrap": boot,
        "run_dir": c.run_dir,
        "nodes_file": nodes_file,
        "nodes": list,
    });
    crate::fsx::write_atomic(state, (serde_json::to_string_pretty(&v).unwrap_or_default() + "\n").as_bytes())
}
