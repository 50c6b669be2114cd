//! `okp playground`: a local patched cluster to try observers by hand. The machinery of `okp
//! verify` (and of the tests' hidden `okp dev-cluster`) made first class: ZooKeeper (or three
//! KRaft controllers) and brokers 1–4 on 127.0.0.1, broker 4 the observer of topic `demo`
//! (1:2:3:4, min.insync.replicas=2), in the foreground. It prints the bootstrap address, writes
//! a nodes file and wrappers for the release's own console producer, consumer and kafka-topics,
//! prints the next commands to try, and on Ctrl-C (SIGINT or SIGTERM) stops every process it
//! started and removes its directory.
//!
//! Not here: the cluster (`cluster`), the observers commands it suggests (`observers`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::tools::Tool;
use crate::cluster::{Cluster, Timers};
use crate::error::{Error, Failure, Outcome, Result};
use crate::model::{Layers, Mode, Release};
use crate::out::sh_word;
use crate::workspace::Workspace;

/// The topic the playground makes: broker 4 an observer of it.
pub const TOPIC: &str = "demo";

/// Ctrl-C / SIGTERM: before the cluster is up, every process is killed at once and the start
/// unwinds with `Error::Interrupted` (the directory okp made removed); once it is up, the
/// foreground loop stops it in order.
pub fn run(ws: &Workspace, release: Release, mode: Mode, dir: Option<PathBuf>) -> Result<Outcome> {
    crate::cluster::node::install_interrupt_handler();
    let (dir, made) = match dir {
        Some(d) => {
            if d.exists() && std::fs::read_dir(&d).map(|mut e| e.next().is_some()).unwrap_or(true) {
                return Err(Error::Usage(format!("--dir {}: exists and is not empty", d.display())));
            }
            std::fs::create_dir_all(&d).map_err(|e| Error::io(format!("cannot create {}", d.display()), e))?;
            (d, true)
        }
        None => {
            let d = tempfile::Builder::new()
                .prefix("okp-playground-")
                .tempdir()
                .map_err(|e| Error::io("cannot create the playground's directory", e))?
                .keep();
            (d, true)
        }
    };
    let t0 = Instant::now();
    crate::out::note(format!(
        "playground: Kafka {} ({mode}) with the observer patch set, in {}",
        release.version,
        dir.display()
    ));
    let started = (|| {
        let build = crate::verify::patched_jars(ws, &release, mode, &Layers::all(), None)?;
        let rt = Runtime::assemble(&ws.maven, release.version, Some(&build))?;
        let journal = Journal::new(&dir.join("journal"), &dir);
        let timers = Timers { lag_ms: 10_000, session_ms: 6_000 };
        // The exporter on every node; Prometheus with okp's alerts too where it is installed.
        let monitoring = if crate::monitoring::prom::unavailable().is_none() {
            crate::cluster::Monitoring::Prometheus
        } else {
            crate::cluster::Monitoring::Exporter
        };
        Cluster::up_with(
            mode,
            rt,
            timers,
            &dir.join("cluster"),
            None,
            journal,
            crate::cluster::Homes::Shared,
            monitoring,
        )
    })();
    let mut c = match started {
        Ok(c) => c,
        Err(_) if crate::cluster::node::interrupted() => {
            if made {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(Error::Interrupted);
        }
        Err(e) => {
            crate::out::note(format!("playground: the cluster did not start; its logs are in {}", dir.display()));
            return Err(e);
        }
    };
    crate::cluster::node::stop_in_order_on_interrupt();
    // The topic, the nodes file, the tools and the guide; a failure (or Ctrl-C) here stops the
    // cluster before it is returned.
    let shown = (|| -> Result<()> {
        let outs = c.create_topics(&[(TOPIC, "1:2:3:4", &["min.insync.replicas=2"])])?;
        if let Some(o) = outs.iter().find(|o| !o.ok()) {
            return Err(Error::External(format!("creating topic {TOPIC} failed (rc {}): {}", o.rc, o.stderr.trim())));
        }
        let (s, _) = c.wait_state(TOPIC, Duration::from_secs(60), |s| s.leader.is_some(), |_| {})?;
        if s.is_none() {
            return Err(Error::External(format!("topic {TOPIC} has no leader 60 s after its creation")));
        }
        let bootstrap = c.bootstrap(&[]);
        let nodes = dir.join("nodes.yaml");
        crate::fsx::write_atomic(&nodes, nodes_yaml(&c).as_bytes())?;
        let bin = dir.join("bin");
        write_tools(&c, &bin)?;
        let text = guide(&bootstrap, &nodes, &bin, t0.elapsed().as_secs_f64(), &monitoring_guide(&c));
        crate::out::print(&text)?;
        let _ = std::io::stdout().flush();
        Ok(())
    })();
    if let Err(e) = shown {
        c.down();
        if crate::cluster::node::interrupted() {
            drop(c);
            if made {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(Error::Interrupted);
        }
        return Err(e);
    }
    // The foreground: the cluster until Ctrl-C; a node that dies is said once.
    let mut said_dead = std::collections::BTreeSet::new();
    while !crate::cluster::node::interrupted() {
        std::thread::sleep(Duration::from_millis(200));
        for id in c.kafka_nodes() {
            if !c.node_mut(id).is_running() && said_dead.insert(id) {
                crate::out::note(format!(
                    "playground: {} has exited; its log: {}",
                    c.node(id).name,
                    c.node(id).log_path().display()
                ));
            }
        }
    }
    c.down();
    drop(c);
    if made {
        let _ = std::fs::remove_dir_all(&dir);
    }
    crate::out::note(format!("playground: stopped; {} removed", dir.display()));
    Ok(Outcome::Failed(Failure::Interrupted))
}

/// Every node's observer.ids, for `okp observers --nodes`.
fn nodes_yaml(c: &Cluster) -> String {
    let mut s = String::from("# okp playground: every node's observer.ids (local files).\nnodes:\n");
    for id in c.kafka_nodes() {
        let n = c.node(id);
        let role = if n.role == crate::cluster::node::Role::Controller { "controller" } else { "broker" };
        s.push_str(&format!("  - {{id: {id}, role: {role}, path: {}}}\n", n.observer_file().display()));
    }
    s
}

/// `bin/kafka-console-producer.sh`, `kafka-console-consumer.sh`, `kafka-topics.sh`: the release's
/// own tool classes on the cluster's classpath, as the distribution's scripts would run them.
fn write_tools(c: &Cluster, bin: &Path) -> Result<()> {
    for (name, tool) in [
        ("kafka-console-producer.sh", Tool::Producer),
        ("kafka-console-consumer.sh", Tool::Consumer),
        ("kafka-topics.sh", Tool::Topics),
    ] {
        let class = c.tools.class(tool)?;
        let script = format!(
            "#!/bin/sh\n# okp playground: the release's own {} ({class}), as the distribution's bin/{name} runs it.\nCLASSPATH={} exec {} -Xmx256m -Dlog4j.configuration=file:/dev/null -Dlog4j2.configurationFile=/dev/null {class} \"$@\"\n",
            tool.label(),
            sh_word(&c.rt.classpath_string()),
            sh_word(&c.rt.java.display().to_string()),
        );
        let path = bin.join(name);
        crate::fsx::write_executable(&path, script.as_bytes())?;
    }
    Ok(())
}

/// What the playground prints once it is up: where it is and what to try next.
pub fn guide(bootstrap: &str, nodes: &Path, bin: &Path, secs: f64, metrics: &str) -> String {
    let first = bootstrap.split(',').next().unwrap_or(bootstrap);
    let n = nodes.display();
    let b = bin.display();
    format!(
        "okp playground up in {secs:.0} s: brokers 1-4, broker 4 is an observer of topic {TOPIC} (replicas 1,2,3,4; min.insync.replicas=2)\n\
         \n  bootstrap   {bootstrap}\n  nodes file  {n}\n\
         \nTry:\n\
         \x20 okp observers status  --bootstrap {first} --nodes {n} --topic {TOPIC}\n\
         \x20 {b}/kafka-console-producer.sh --bootstrap-server {first} --topic {TOPIC} --producer-property acks=all\n\
         \x20 {b}/kafka-console-consumer.sh --bootstrap-server {first} --topic {TOPIC} --from-beginning\n\
         \x20 okp observers promote --broker 4 --bootstrap {first} --nodes {n}   # 4 joins the ISR\n\
         \x20 okp observers demote  --broker 4 --bootstrap {first} --nodes {n}   # 4 leaves it again\n\
         {metrics}\nCtrl-C stops every process and removes the directory.\n"
    )
}

/// The metrics URLs of every node's exporter, and Prometheus's when it runs.
pub fn monitoring_guide(c: &Cluster) -> String {
    let mut s = String::from("\nMetrics (the JMX exporter with okp's rules, docs/monitoring.md):\n");
    for t in c.exporter_targets() {
        s.push_str(&format!("  {:<13} http://127.0.0.1:{}/metrics\n", t.node, t.port));
    }
    match c.prom() {
        Some(p) => s.push_str(&format!(
            "  Prometheus    http://127.0.0.1:{}  (okp's alerts: /alerts; try the query okp_partition_observer_lag)\n",
            p.port
        )),
        None => s.push_str(&format!(
            "  Prometheus is not installed ({}): `apt install prometheus prometheus-node-exporter` and start again to have it here\n",
            crate::monitoring::prom::PROMETHEUS
        )),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_names_the_bootstrap_the_nodes_file_and_every_next_command() {
        let g = guide(
            "127.0.0.1:20001,127.0.0.1:20002",
            Path::new("/p/nodes.yaml"),
            Path::new("/p/bin"),
            41.2,
            "\nMetrics: x\n",
        );
        for want in [
            "bootstrap   127.0.0.1:20001,127.0.0.1:20002",
            "okp observers status  --bootstrap 127.0.0.1:20001 --nodes /p/nodes.yaml --topic demo",
            "okp observers promote --broker 4 --bootstrap 127.0.0.1:20001 --nodes /p/nodes.yaml",
            "okp observers demote  --broker 4",
            "/p/bin/kafka-console-producer.sh --bootstrap-server 127.0.0.1:20001 --topic demo",
            "/p/bin/kafka-console-consumer.sh --bootstrap-server 127.0.0.1:20001 --topic demo --from-beginning",
            "Ctrl-C stops every process",
        ] {
            assert!(g.contains(want), "{want}\n{g}");
        }
    }
}
