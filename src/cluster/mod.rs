//! A local Kafka cluster of real processes on 127.0.0.1 for one release and
//! mode: ZooKeeper plus brokers 1–4, or controllers 101–103 plus brokers 1–4.
//! Broker 4 is the observer. Each node has its own directory (config, data,
//! stdout.log, observer.ids), so scenarios can give nodes different files.
//!
//! The cluster owns every process it starts and stops them all in `down`, in
//! Drop, and from the Ctrl-C handler (`node`: the run then unwinds with
//! `Error::Interrupted`, exit 130). The typed helpers here (describe,
//! produce, consume, …) run the release's own tools and write each command and
//! its output to the run's journal, which becomes the evidence.
//!
//! The one `Cluster` is built here (`up`); its methods live in files by concern:
//! - `lifecycle`: start, readiness, restart, stop, kill, freeze, extra brokers, `down`
//! - `config`: each node's directory, server.properties, command line, observer.ids
//! - `ports`: the claimed port block and each node's ports
//! - `cds`: class-data sharing for the tool and server JVMs
//! - `probes`: okp's own Kafka-protocol reads (metadata, high watermark, log end offset)
//! - `waits`: polling until a partition state holds, watching that one never shows
//! - `admin`: the release's admin tools (topics, describe, elect, reassign, JMX, ZooKeeper shell)
//! - `records`: produce and consume through the console tools and okp's own client
//! - `inspect`: segments byte for byte, server logs, resident memory
//! - `next`: a second release on the same cluster, node by node (UPGRADE)
//! - `migration`: ZooKeeper → KRaft on the running cluster (MIGRATE)
//!
//! Beside them, the parts that are not `Cluster` methods: one process (`node`), the tool runner
//! (`tools`, `resident`), okp's Java client (`client`), the journal (`journal`), the runtime
//! classpath (`runtime`), per-node Kafka homes (`homes`), the servers' CDS archive (`server_cds`).
//!
//! Not here: what a scenario asserts (`scenarios`), files' primitives (`fsx`).

mod admin;
mod cds;
pub mod client;
mod config;
pub mod homes;
mod inspect;
pub mod journal;
mod lifecycle;
pub mod migration;
mod monitor;
pub mod next;
pub mod node;
mod ports;
mod probes;
mod records;
pub mod resident;
pub mod runtime;
pub mod segments;
pub mod server_cds;
pub mod tools;
mod waits;

pub(crate) use lifecycle::cluster_id;
pub use ports::{PortBlock, PORT_BLOCK};
pub use records::Produced;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::model::Mode;
use journal::Journal;
use node::{Node, Role};
use runtime::Runtime;
use tools::Runner;

pub const OBSERVER: i32 = 4;
/// KIP-392's rack-aware selector, in every release from 2.4 on.
pub const RACK_SELECTOR: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";

/// The rack of broker `id` in okp verify's clusters: each broker has its own.
pub fn rack_of(id: i32) -> String {
    format!("r{id}")
}
pub const BROKERS: [i32; 4] = [1, 2, 3, 4];

/// How long a node may go on using the observer set it read before it reads observer.ids again:
/// the hooks' cache TTL.
pub const OBSERVER_IDS_TTL: Duration = Duration::from_secs(5);

/// The servers' heap, collector and compiler: small JVMs that start fast. Part of the key of
/// the servers' class-data-sharing archive, which is dumped with the same flags.
pub const SERVER_HEAP_GC: [&str; 4] = ["-Xms64m", "-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"];

fn server_heap_gc() -> Vec<String> {
    SERVER_HEAP_GC.iter().map(|f| f.to_string()).collect()
}

pub const CONTROLLERS: [i32; 3] = [101, 102, 103];

/// Shortened timers, so a suite takes minutes (all configurable from the CLI).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Timers {
    /// replica.lag.time.max.ms
    pub lag_ms: u64,
    /// zookeeper.session.timeout.ms / broker.session.timeout.ms
    pub session_ms: u64,
}

pub struct Cluster {
    pub mode: Mode,
    pub rt: Runtime,
    pub timers: Timers,
    pub run_dir: PathBuf,
    pub base_port: u16,
    pub nodes: Vec<Node>,
    pub tools: Runner,
    pub journal: Journal,
    server_jvm: Vec<String>,
    pub cluster_id: Option<String>,
    /// Held for the cluster's life, so no other cluster (of this okp or another) takes the block.
    _ports: PortBlock,
    /// The bundle installed into every node's home (a patched run on per-node homes).
    pub bundle: Option<homes::Bundle>,
    server_cds: cds::ServerCds,
    /// When okp last wrote or deleted an observer.ids file.
    pub observers_changed_at: Option<Instant>,
    /// The release the UPGRADE scenario rolls the nodes to, and which run it now.
    pub next: Option<next::Next>,
    /// The releases after `next`, in the order UPGRADE rolls to them (`--upgrade-to B,C,…`).
    pub later: std::collections::VecDeque<next::Next>,
    /// A ZooKeeper → KRaft migration under way (MIGRATE).
    pub migration: Option<migration::Migration>,
    /// The JMX exporter in every node and a Prometheus server scraping them (`--prometheus`).
    pub monitor: Option<Monitor>,
}

/// How a cluster is watched (docs/monitoring.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Monitoring {
    Off,
    /// The JMX exporter in every broker and KRaft controller.
    Exporter,
    /// The exporter, and a Prometheus server with okp's alert rules scraping it (node_exporter
    /// serving `okp observers status --format prometheus` beside it).
    Prometheus,
}

/// A monitored cluster: the exporter agent's jar and rules, and, once the nodes are up, the
/// Prometheus server that scrapes them (docs/monitoring.md).
pub struct Monitor {
    pub jar: PathBuf,
    pub rules: PathBuf,
    pub prom: Option<crate::monitoring::prom::Prom>,
    /// The timers the alert rules were rendered for.
    pub timers: crate::monitoring::alerts::Timers,
}

/// Where the nodes' jars come from.
pub enum Homes {
    /// One classpath for every node: the runtime's (the dev cluster).
    Shared,
    /// A Kafka home per node with the release's jars, and the bundle installed when given.
    PerNode(Option<homes::Bundle>),
}

impl Cluster {
    /// Configures and starts the whole cluster, waiting until every node is ready.
    pub fn up(
        mode: Mode,
        rt: Runtime,
        timers: Timers,
        run_dir: &Path,
        base_port: Option<u16>,
        journal: Journal,
        homes: Homes,
    ) -> Result<Cluster> {
        Cluster::up_with(mode, rt, timers, run_dir, base_port, journal, homes, Monitoring::Off)
    }

    /// `up`, with the JMX exporter in every node as `monitoring` asks, and a Prometheus server
    /// scraping them with okp's alert rules (rendered for these timers), started once they are up.
    #[allow(clippy::too_many_arguments)]
    pub fn up_with(
        mode: Mode,
        rt: Runtime,
        timers: Timers,
        run_dir: &Path,
        base_port: Option<u16>,
        journal: Journal,
        homes: Homes,
        monitoring: Monitoring,
    ) -> Result<Cluster> {
        Cluster::up_sized(mode, rt, timers, run_dir, base_port, journal, homes, monitoring, None)
    }

    /// `up_with`, the servers' heap ceiling `-Xmx<heap>` in place of `SERVER_HEAP_GC`'s when given
    /// (`okp bench scale`: thousands of partitions outgrow the small default). The servers'
    /// class-data-sharing archive stays keyed and dumped with the default flags.
    #[allow(clippy::too_many_arguments)]
    pub fn up_sized(
        mode: Mode,
        rt: Runtime,
        timers: Timers,
        run_dir: &Path,
        base_port: Option<u16>,
        journal: Journal,
        homes: Homes,
        monitoring: Monitoring,
        heap: Option<&str>,
    ) -> Result<Cluster> {
        node::install_interrupt_handler();
        let ports = ports::free_port_block(base_port)?;
        let base_port = ports.base;
        let (server_log, tool_log) = rt.write_logging(run_dir)?;
        let mut server_jvm = server_heap_gc();
        if let Some(heap) = heap {
            server_jvm.retain(|f| !f.starts_with("-Xmx"));
            server_jvm.push(format!("-Xmx{heap}"));
        }
        server_jvm.extend(["-Djava.awt.headless=true".to_string(), server_log]);
        let mut tool_jvm = tool_jvm(&rt, tool_log);
        if let Some((archive, false)) = &rt.tool_cds {
            tool_jvm.push(crate::jvm::cds::archive_flag(archive));
        }
        let index = rt.class_index()?;
        let classes = tools::resolve(&index);
        let scratch = run_dir.join("tools");
        crate::fsx::create_dir(&scratch)?;
        let runner = Runner::new(rt.java.clone(), rt.classpath_string(), tool_jvm, classes, scratch);
        let mut c = Cluster {
            mode,
            rt,
            timers,
            run_dir: run_dir.to_path_buf(),
            base_port,
            nodes: Vec::new(),
            tools: runner,
            journal,
            server_jvm,
            cluster_id: None,
            _ports: ports,
            bundle: None,
            server_cds: cds::ServerCds::Off,
            observers_changed_at: None,
            next: None,
            later: std::collections::VecDeque::new(),
            migration: None,
            monitor: None,
        };
        if monitoring != Monitoring::Off {
            c.set_up_monitor()?;
        }
        c.configure()?;
        c.plan_server_cds();
        if let Homes::PerNode(bundle) = homes {
            c.bundle = bundle;
            c.lay_out_homes()?;
        }
        let t0 = Instant::now();
        c.start_all()?;
        c.train_tool_cds();
        c.dump_server_cds();
        c.start_resident_tools();
        if monitoring == Monitoring::Prometheus {
            c.start_prometheus()?;
        }
        c.journal.note(&format!(
            "cluster up in {:.1} s (ports {}..{})",
            t0.elapsed().as_secs_f64(),
            base_port,
            base_port + PORT_BLOCK - 1
        ));
        Ok(c)
    }

    /// Every node that reads an observer.ids file (brokers, and KRaft controllers).
    pub fn kafka_nodes(&self) -> Vec<i32> {
        self.nodes.iter().filter(|n| n.role != Role::ZooKeeper).map(|n| n.id).collect()
    }

    pub fn controllers(&self) -> Vec<i32> {
        self.nodes.iter().filter(|n| n.role == Role::Controller).map(|n| n.id).collect()
    }

    fn node_mut_by_role(&mut self, role: Role) -> Result<&mut Node> {
        self.nodes.iter_mut().find(|n| n.role == role).ok_or_else(|| Error::Harness(format!("no {role:?} node")))
    }

    pub fn node(&self, id: i32) -> &Node {
        self.nodes.iter().find(|n| n.id == id && n.role != Role::ZooKeeper).expect("node ids are fixed by the topology")
    }

    pub fn node_mut(&mut self, id: i32) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id && n.role != Role::ZooKeeper)
            .expect("node ids are fixed by the topology")
    }
}

/// The tools' JVM flags on `rt`'s classpath, `tool_log` its logging flag (no class-data-sharing
/// archive: the caller adds its own).
pub(crate) fn tool_jvm(rt: &Runtime, tool_log: String) -> Vec<String> {
    let mut jvm: Vec<String> = vec![
        "-Xms16m".into(),
        "-Xmx128m".into(),
        "-XX:+UseSerialGC".into(),
        "-XX:TieredStopAtLevel=1".into(),
        "-Xshare:auto".into(),
        // The JVM's own warnings (an archive it cannot map, …) go to stderr: a tool's stdout is
        // its result (records a consumer read), and one warning line there miscounted them.
        "-Xlog:disable".into(),
        "-Xlog:all=warning:stderr".into(),
        tool_log,
    ];
    if rt.logging == runtime::Logging::Log4j2 {
        // log4j 2 stops logging in its own shutdown hook unless a servlet API is on the classpath
        // (it then takes the JVM for a web container). A console producer closes in its shutdown
        // hook and reports failed sends there, so without this a classpath without Connect's
        // jars (jakarta.servlet-api among them: 4.0.1) printed none of them.
        jvm.push("-Dlog4j2.shutdownHookEnabled=false".into());
    }
    jvm
}

pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}
