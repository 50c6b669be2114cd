//! A local Kafka cluster of real processes on 127.0.0.1 for one release and
//! mode: ZooKeeper plus brokers 1–4, or controllers 101–103 plus brokers 1–4.
//! Broker 4 is the observer. Each node has its own directory (config, data,
//! stdout.log, observer.ids), so scenarios can give nodes different files.
//!
//! The cluster owns every process it starts and stops them all in `down`, in
//! Drop, and from the Ctrl-C handler. The typed helpers here (describe,
//! produce, consume, …) run the release's own tools and write each command and
//! its output to the run's journal, which becomes the evidence.

pub mod client;
pub mod homes;
pub mod journal;
pub mod node;
pub mod resident;
pub mod runtime;
pub mod server_cds;
pub mod tools;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::model::Mode;
use journal::Journal;
use node::{Node, Role};
use runtime::Runtime;
use tools::{Output, PartitionState, Runner, Tool};

pub const OBSERVER: i32 = 4;
/// KIP-392's rack-aware selector, in every release from 2.4 on.
pub const RACK_SELECTOR: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";

/// The rack of broker `id` in okp verify's clusters: each broker has its own.
/// A KRaft cluster id from 16 random bytes (URL-safe base64, as Kafka's `Uuid`), or None for
/// one that starts with '-' and would be read as an option on the storage tool's command line.
pub(crate) fn cluster_id(raw: [u8; 16]) -> Result<Option<String>> {
    let id = <ct_codecs::Base64UrlSafeNoPadding as ct_codecs::Encoder>::encode_to_string(raw)
        .map_err(|e| Error::Source(format!("cluster id: {e}")))?;
    Ok((!id.starts_with('-')).then_some(id))
}

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

/// Where the servers' class-data-sharing archive stands in this cluster.
enum ServerCds {
    /// None for this runtime (server_cds.rs; the reason was journaled).
    Off,
    /// Servers start with the archive.
    Using,
    /// `nodes` write the classes they load to `lists` during the cluster's start.
    Training { lists: Vec<(i32, PathBuf)> },
    /// The archive is being dumped from those lists.
    Dumping(std::thread::JoinHandle<Result<server_cds::Dumped>>),
    /// Another lane of this run dumps it: taken up once it is there.
    Waiting,
}

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
    server_cds: ServerCds,
    /// When okp last wrote or deleted an observer.ids file.
    pub observers_changed_at: Option<Instant>,
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
        node::install_interrupt_handler();
        let ports = free_port_block(base_port)?;
        let base_port = ports.base;
        let (server_log, tool_log) = rt.write_logging(run_dir)?;
        let mut server_jvm = server_heap_gc();
        server_jvm.extend(["-Djava.awt.headless=true".to_string(), server_log]);
        let tool_jvm = vec![
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
        let mut tool_jvm = tool_jvm;
        if rt.logging == runtime::Logging::Log4j2 {
            // log4j 2 stops logging in its own shutdown hook unless a servlet API is on the classpath
            // (it then takes the JVM for a web container). A console producer closes in its shutdown
            // hook and reports failed sends there, so without this a classpath without Connect's
            // jars (jakarta.servlet-api among them: 4.0.1) printed none of them.
            tool_jvm.push("-Dlog4j2.shutdownHookEnabled=false".into());
        }
        if let Some((archive, false)) = &rt.tool_cds {
            tool_jvm.push(format!("-XX:SharedArchiveFile={}", archive.display()));
        }
        let index = rt.class_index()?;
        let classes = tools::resolve(&index);
        let scratch = run_dir.join("tools");
        std::fs::create_dir_all(&scratch).map_err(|e| Error::io(format!("cannot create {}", scratch.display()), e))?;
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
            server_cds: ServerCds::Off,
            observers_changed_at: None,
        };
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
        c.journal.note(&format!(
            "cluster up in {:.1} s (ports {}..{})",
            t0.elapsed().as_secs_f64(),
            base_port,
            base_port + PORT_BLOCK - 1
        ));
        Ok(c)
    }

    /// On the first run with this classpath: one tool call that dumps the
    /// classes it loaded into a CDS archive, which every later tool JVM maps
    /// (tool start-up dominates a suite's wall time).
    fn train_tool_cds(&mut self) {
        let Some((archive, true)) = self.rt.tool_cds.clone() else { return };
        let staging = crate::build::splice::cds_staging(&archive);
        let boot = self.bootstrap(&[]);
        self.tools.jvm.push(format!("-XX:ArchiveClassesAtExit={}", staging.display()));
        let out = self.tools.run(
            Tool::Topics,
            &args(&["--bootstrap-server", &boot, "--list"]),
            None,
            Duration::from_secs(60),
        );
        self.tools.jvm.pop();
        if out.is_ok_and(|o| o.ok()) && std::fs::rename(&staging, &archive).is_ok() {
            self.tools.jvm.push(format!("-XX:SharedArchiveFile={}", archive.display()));
            self.journal.note(&format!("tool JVMs now map the class-data-sharing archive {}", archive.display()));
        } else {
            let _ = std::fs::remove_file(&staging);
        }
    }

    /// Before the first start: map the servers' archive when it is there; else have the first
    /// broker (and in KRaft the first controller) list the classes they load, unless another
    /// lane of this run does.
    fn plan_server_cds(&mut self) {
        let plan = match &self.rt.server_cds {
            Ok(plan) => plan.clone(),
            Err(why) => {
                self.journal.note(&format!("servers: the release's classpath order; {why}"));
                return;
            }
        };
        if !plan.last.is_empty() {
            let names: Vec<String> =
                plan.last.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
            self.journal.note(&format!(
                "servers: the jars the bundle replaces come last on the classpath ({}); none of their classes or resources is in another jar",
                names.join(", ")
            ));
        }
        self.server_cds = if plan.ready() {
            self.journal.note(&format!("servers map the class-data-sharing archive {}", plan.archive.display()));
            ServerCds::Using
        } else if server_cds::claim(&plan.archive) {
            let mut lists = Vec::new();
            for id in [BROKERS[0], CONTROLLERS[0]] {
                if self.nodes.iter().any(|n| n.id == id && n.role != Role::ZooKeeper) {
                    lists.push((id, self.run_dir.join(format!("cds-{}.classlist", self.node(id).name))));
                }
            }
            ServerCds::Training { lists }
        } else {
            ServerCds::Waiting
        };
    }

    /// After the start: dump the servers' archive from the class lists, in the background.
    fn dump_server_cds(&mut self) {
        let (ServerCds::Training { lists }, Ok(plan)) = (&self.server_cds, &self.rt.server_cds) else { return };
        let lists: Vec<PathBuf> = lists.iter().map(|(_, p)| p.clone()).collect();
        let (java, plan, scratch) = (self.rt.java.clone(), plan.clone(), self.run_dir.clone());
        let jvm = server_heap_gc();
        self.journal.note(&format!(
            "servers: dumping the class-data-sharing archive {} from {} in the background",
            plan.archive.display(),
            lists.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
        self.server_cds = ServerCds::Dumping(std::thread::spawn(move || {
            let r = server_cds::dump(&java, &jvm, &plan, &lists, &scratch);
            server_cds::release(&plan.archive);
            r
        }));
    }

    /// The JVM flags of `id`'s next start for class-data sharing, taking up an archive that has
    /// been dumped since the last start.
    fn server_cds_flags(&mut self, id: Option<i32>) -> Vec<String> {
        let Ok(plan) = self.rt.server_cds.clone() else { return Vec::new() };
        match std::mem::replace(&mut self.server_cds, ServerCds::Off) {
            ServerCds::Dumping(h) if h.is_finished() => match h.join() {
                Ok(Ok(d)) => {
                    self.journal.note(&format!(
                        "servers: dumped {} classes into {} in {:.1} s; servers started from now on map it",
                        d.classes,
                        plan.archive.display(),
                        d.seconds
                    ));
                    self.server_cds = ServerCds::Using;
                }
                Ok(Err(e)) => self.journal.note(&format!("servers: no class-data-sharing archive: {e}")),
                Err(_) => self.journal.note("servers: the archive's dump panicked; no class-data-sharing archive"),
            },
            ServerCds::Waiting if plan.ready() => {
                self.journal.note(&format!("servers map the class-data-sharing archive {}", plan.archive.display()));
                self.server_cds = ServerCds::Using;
            }
            other => self.server_cds = other,
        }
        match &self.server_cds {
            ServerCds::Using => plan.flags(),
            ServerCds::Training { lists } => lists
                .iter()
                .filter(|(node, _)| Some(*node) == id)
                .map(|(_, list)| format!("-XX:DumpLoadedClassList={}", list.display()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// From here on the short admin tools run in a resident tool JVM (resident.rs), unless
    /// OKP_TOOL_JVM_PER_CALL is set or okp's Java classes cannot be had.
    fn start_resident_tools(&mut self) {
        if std::env::var_os("OKP_TOOL_JVM_PER_CALL").is_some() {
            self.journal.note("tools: one JVM per call (OKP_TOOL_JVM_PER_CALL)");
            return;
        }
        match self.okp_client_classes() {
            Ok(classes) => {
                self.journal.note(&format!(
                    "tools: the short admin calls ({}) run from here on in the lane's resident tool JVM, {} calls each, journaled as `java … {} {} CLASS ARGS`",
                    Tool::ALL.iter().filter(|t| t.resident()).map(|t| t.label()).collect::<Vec<_>>().join(", "),
                    resident::MAX_CALLS,
                    client::BATCH_CLASS,
                    resident::SERVE
                ));
                self.tools.resident_classes = Some(classes);
            }
            Err(e) => self.journal.note(&format!("tools: one JVM per call (okp's Java classes: {e})")),
        }
    }

    pub fn broker_port(&self, id: i32) -> u16 {
        match id {
            // MULTI's fifth broker: base+9 is free in the block (JMX ends at base+8, controllers start at base+11).
            5 => self.base_port + 9,
            _ => self.base_port + id as u16,
        }
    }

    /// A node's JMX port (registry and RMI server both), bound to 127.0.0.1,
    /// inside the block `free_port_block` reserved: brokers base+5..base+8,
    /// KRaft controllers base+14..base+16.
    pub fn jmx_port(&self, id: i32) -> u16 {
        if CONTROLLERS.contains(&id) {
            self.base_port + 14 + (id - CONTROLLERS[0]) as u16
        } else {
            self.base_port + 4 + id as u16
        }
    }

    /// JVM flags that open JMX on 127.0.0.1 only, without authentication: what
    /// JmxTool reads (MET from the brokers, PREF from the controllers).
    fn jmx_flags(&self, id: i32) -> Vec<String> {
        let port = self.jmx_port(id);
        vec![
            "-Dcom.sun.management.jmxremote=true".to_string(),
            format!("-Dcom.sun.management.jmxremote.port={port}"),
            format!("-Dcom.sun.management.jmxremote.rmi.port={port}"),
            "-Dcom.sun.management.jmxremote.host=127.0.0.1".to_string(),
            "-Djava.rmi.server.hostname=127.0.0.1".to_string(),
            "-Dcom.sun.management.jmxremote.authenticate=false".to_string(),
            "-Dcom.sun.management.jmxremote.ssl=false".to_string(),
        ]
    }

    fn controller_port(&self, id: i32) -> u16 {
        self.base_port + 10 + (id - 100) as u16
    }

    fn configure(&mut self) -> Result<()> {
        let server_class = self.tools.class(Tool::Server)?.to_string();
        let voters = self.voters();
        let mut nodes = Vec::new();
        if self.mode == Mode::Zk {
            let dir = self.run_dir.join("zk");
            mkdir(&dir.join("data"))?;
            let cfg = format!(
                "dataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\ntickTime=500\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n",
                dir.join("data").display(),
                self.base_port
            );
            write(&dir.join("zoo.cfg"), &cfg)?;
            let zk_class = self.tools.class(Tool::ZooKeeper)?.to_string();
            let argv = self.server_argv(&zk_class, &dir.join("zoo.cfg"));
            nodes.push(Node::new("zk", Role::ZooKeeper, 0, self.base_port, dir, argv, vec![]));
        } else {
            for id in CONTROLLERS {
                let dir = self.run_dir.join(format!("c{id}"));
                mkdir(&dir.join("data"))?;
                let port = self.controller_port(id);
                let props = format!(
                    "process.roles=controller\nnode.id={id}\ncontroller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT\nlisteners=CONTROLLER://127.0.0.1:{port}\nlog.dirs={}\nnum.io.threads=2\nnum.network.threads=2\nbackground.threads=2\nbroker.session.timeout.ms={}\nbroker.heartbeat.interval.ms=1000\n",
                    dir.join("data").display(),
                    self.timers.session_ms
                );
                write(&dir.join("server.properties"), &props)?;
                let mut argv = self.server_argv(&server_class, &dir.join("server.properties"));
                argv.splice(0..0, self.jmx_flags(id));
                let env = vec![("KAFKA_OBSERVER_IDS_FILE".to_string(), dir.join("observer.ids").display().to_string())];
                nodes.push(Node::new(&format!("controller-{id}"), Role::Controller, id, port, dir, argv, env));
            }
        }
        for id in BROKERS {
            nodes.push(self.broker_node(id, &server_class, &voters)?);
        }
        self.nodes = nodes;
        let all: Vec<i32> = self.kafka_nodes();
        self.set_observers(&all, "4\n")?;
        let listing: Vec<String> =
            self.nodes.iter().map(|n| format!("{} port {} dir {}", n.name, n.port, n.dir.display())).collect();
        self.journal.note(&format!("nodes:\n  {}", listing.join("\n  ")));
        Ok(())
    }

    /// The node of broker `id`: its directory, server.properties and command line.
    fn broker_node(&self, id: i32, server_class: &str, voters: &str) -> Result<Node> {
        let dir = self.run_dir.join(format!("b{id}"));
        mkdir(&dir.join("data"))?;
        let port = self.broker_port(id);
        let mut props = String::new();
        if self.mode == Mode::Zk {
            props.push_str(&format!(
                "broker.id={id}\nzookeeper.connect=127.0.0.1:{}\nzookeeper.session.timeout.ms={}\n",
                self.base_port, self.timers.session_ms
            ));
        } else {
            props.push_str(&format!(
                "process.roles=broker\nnode.id={id}\ncontroller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\ninter.broker.listener.name=PLAINTEXT\nbroker.session.timeout.ms={}\nbroker.heartbeat.interval.ms=1000\n",
                self.timers.session_ms
            ));
        }
        // Every broker in a rack of its own, and the leader picks a replica of the client's
        // rack for a consumer that names one (KIP-392): what the FFO scenario reads through.
        props.push_str(&format!("broker.rack={}\nreplica.selector.class={RACK_SELECTOR}\n", rack_of(id)));
        props.push_str(&format!(
            "listeners=PLAINTEXT://127.0.0.1:{port}\nadvertised.listeners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={}\n",
            dir.join("data").display()
        ));
        props.push_str(&format!(
            "num.partitions=1\ndefault.replication.factor=3\noffsets.topic.replication.factor=3\noffsets.topic.num.partitions=4\ntransaction.state.log.replication.factor=3\ntransaction.state.log.min.isr=2\ntransaction.state.log.num.partitions=4\ngroup.initial.rebalance.delay.ms=0\nauto.leader.rebalance.enable=false\nreplica.lag.time.max.ms={}\nreplica.fetch.wait.max.ms=200\nnum.network.threads=2\nnum.io.threads=2\nnum.replica.fetchers=1\nbackground.threads=2\nnum.recovery.threads.per.data.dir=1\nlog.cleaner.enable=false\nlog.flush.offset.checkpoint.interval.ms=1000\n",
            self.timers.lag_ms
        ));
        write(&dir.join("server.properties"), &props)?;
        let mut argv = self.server_argv(server_class, &dir.join("server.properties"));
        // JMX on loopback only (MET); the extra broker of MULTI has no port of its own for it.
        if BROKERS.contains(&id) {
            argv.splice(0..0, self.jmx_flags(id));
        }
        let env = vec![("KAFKA_OBSERVER_IDS_FILE".to_string(), dir.join("observer.ids").display().to_string())];
        Ok(Node::new(&format!("broker-{id}"), Role::Broker, id, port, dir, argv, env))
    }

    /// Adds broker `id` (beyond the fixed four: MULTI's fifth replica) with observer.ids
    /// `observers`, starts it and waits until it is ready.
    pub fn add_broker(&mut self, id: i32, observers: &str) -> Result<f64> {
        let server_class = self.tools.class(Tool::Server)?.to_string();
        let voters = self.voters();
        let node = self.broker_node(id, &server_class, &voters)?;
        self.journal.note(&format!("adding {} port {} dir {}", node.name, node.port, node.dir.display()));
        self.nodes.push(node);
        self.set_observers(&[id], observers)?;
        if self.mode == Mode::Kraft {
            let id_str = self.cluster_id.clone().ok_or_else(|| Error::Source("the KRaft cluster has no id".into()))?;
            let cfg = self.node(id).dir.join("server.properties").display().to_string();
            let out = self.tools.run(
                Tool::Storage,
                &["format".into(), "-t".into(), id_str, "-c".into(), cfg],
                None,
                Duration::from_secs(120),
            )?;
            self.journal.tool(&format!("format {}", self.node(id).name), &out);
            if !out.ok() {
                return Err(Error::External(format!("formatting broker {id} failed (rc {})", out.rc)));
            }
        }
        // Like every other node: its own Kafka home, with the bundle installed.
        if self.nodes.iter().any(|n| n.home.is_some()) {
            self.lay_out_home(id)?;
        }
        self.restart(id)
    }

    /// Stops broker `id` (SIGTERM, then -9) and forgets it.
    pub fn remove_broker(&mut self, id: i32) {
        self.node_mut(id).stop(Duration::from_secs(30));
        self.journal.note(&format!("stopped and removed {}", self.node(id).name));
        self.nodes.retain(|n| n.id != id || n.role == Role::ZooKeeper);
    }

    fn voters(&self) -> String {
        CONTROLLERS
            .iter()
            .map(|id| format!("{id}@127.0.0.1:{}", self.controller_port(*id)))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn server_argv(&self, class: &str, config: &Path) -> Vec<String> {
        let mut a = self.server_jvm.clone();
        a.push(class.to_string());
        a.push(config.display().to_string());
        a
    }

    /// Every node that reads an observer.ids file (brokers, and KRaft controllers).
    pub fn kafka_nodes(&self) -> Vec<i32> {
        self.nodes.iter().filter(|n| n.role != Role::ZooKeeper).map(|n| n.id).collect()
    }

    pub fn controllers(&self) -> Vec<i32> {
        self.nodes.iter().filter(|n| n.role == Role::Controller).map(|n| n.id).collect()
    }

    fn ready_marker(&self, role: Role) -> &'static str {
        match (role, self.mode) {
            (Role::ZooKeeper, _) => "binding to port",
            (_, Mode::Zk) => "] started (kafka.server.KafkaServer)",
            (_, Mode::Kraft) => "Kafka Server started",
        }
    }

    fn start_all(&mut self) -> Result<()> {
        if self.mode == Mode::Kraft {
            self.format_storage()?;
        } else {
            let cp = self.rt.server_classpath_string();
            let java = self.rt.java.clone();
            let flags = self.server_cds_flags(None);
            let zk = self.node_mut_by_role(Role::ZooKeeper)?;
            zk.jvm_extra = flags;
            zk.start(&java, &cp)?;
            let port = zk.port;
            let t0 = Instant::now();
            while TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_millis(200))
                .is_err()
            {
                if t0.elapsed() > Duration::from_secs(30) {
                    let zk = self.node_mut_by_role(Role::ZooKeeper)?;
                    return Err(Error::External(format!(
                        "ZooKeeper did not listen on 127.0.0.1:{port} within 30 s; last lines:\n{}",
                        zk.tail(20)
                    )));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(Duration::from_millis(300));
            let zk = self.node_mut_by_role(Role::ZooKeeper)?;
            if !zk.is_running() {
                return Err(Error::External(format!(
                    "ZooKeeper exited right after start; last lines:\n{}",
                    zk.tail(20)
                )));
            }
        }
        let ids: Vec<i32> = self.kafka_nodes();
        for id in &ids {
            self.start_node(*id)?;
        }
        for id in &ids {
            self.wait_node_ready(*id)?;
        }
        Ok(())
    }

    fn format_storage(&mut self) -> Result<()> {
        // One in 64 random ids starts with '-', which kafka-storage's argument parser takes for
        // an option ("--cluster-id/-t: expected one argument"); Kafka's own Uuid.randomUuid()
        // draws again in that case, and so does okp.
        let id = loop {
            let mut raw = [0u8; 16];
            getrandom(&mut raw)?;
            if let Some(id) = cluster_id(raw)? {
                break id;
            }
        };
        self.cluster_id = Some(id.clone());
        let names: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let calls: Vec<Vec<String>> = self
            .nodes
            .iter()
            .map(|n| args(&["format", "-t", &id, "-c", &n.dir.join("server.properties").display().to_string()]))
            .collect();
        let outs =
            self.tool_batch(Tool::Storage, &calls, |i| format!("format {}", names[i]), Duration::from_secs(120))?;
        for (name, out) in names.iter().zip(outs) {
            if !out.ok() {
                return Err(Error::External(format!(
                    "formatting {name} failed (rc {}): {}",
                    out.rc,
                    out.stderr.lines().last().unwrap_or("")
                )));
            }
        }
        Ok(())
    }

    fn node_mut_by_role(&mut self, role: Role) -> Result<&mut Node> {
        self.nodes.iter_mut().find(|n| n.role == role).ok_or_else(|| Error::Source(format!("no {role:?} node")))
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

    pub fn start_node(&mut self, id: i32) -> Result<()> {
        // A ZooKeeper-mode broker killed with -9 leaves its ephemeral /brokers/ids node until its
        // session expires; starting it again before that is fatal ("node already exists").
        if self.mode == Mode::Zk {
            let session = Duration::from_millis(self.timers.session_ms + 1000);
            if let Some(since) = self.node(id).killed_at.map(|t| t.elapsed()) {
                if since < session {
                    self.journal.note(&format!(
                        "waiting {:.1} s for the killed {}'s ZooKeeper session to expire",
                        (session - since).as_secs_f64(),
                        self.node(id).name
                    ));
                    std::thread::sleep(session - since);
                }
            }
        }
        let cp = match &self.node(id).home {
            Some(home) => homes::classpath(&self.rt, home),
            None => self.rt.server_classpath_string(),
        };
        let java = self.rt.java.clone();
        let flags = self.server_cds_flags(Some(id));
        let node = self.node_mut(id);
        node.jvm_extra = flags;
        node.start(&java, &cp)
    }

    /// A Kafka home per node under the run directory, and the bundle installed into each.
    fn lay_out_homes(&mut self) -> Result<()> {
        for id in self.kafka_nodes() {
            self.lay_out_home(id)?;
        }
        Ok(())
    }

    /// Node `id`'s Kafka home under the run directory, with the bundle installed when there is one.
    fn lay_out_home(&mut self, id: i32) -> Result<()> {
        let home = self.run_dir.join("homes").join(&self.node(id).name);
        let copied = homes::lay_out(&self.rt, &home)?;
        if let Some(first) = copied.first() {
            self.journal.note(&format!(
                "{}: {} jar(s) copied, not linked, from the Maven cache (another file system), e.g. {first}: this node's JVM cannot map the servers' class-data-sharing archive",
                home.display(),
                copied.len()
            ));
        }
        if self.bundle.is_some() {
            let ran = self.okp_on_home("install", &home)?;
            if !ran.ok() {
                return Err(Error::External(format!(
                    "okp install into {} failed (rc {}): {}",
                    home.display(),
                    ran.rc,
                    ran.stderr.trim()
                )));
            }
        }
        self.node_mut(id).home = Some(home);
        Ok(())
    }

    /// `okp install` (verifying the bundle against its key) or `okp rollback` on `home`, journaled.
    pub fn okp_on_home(&mut self, action: &str, home: &Path) -> Result<homes::Ran> {
        let b = self.bundle.clone().ok_or_else(|| Error::Usage("no bundle: an upstream run installs none".into()))?;
        let h = home.display().to_string();
        let (archive, pubkey) = (b.archive.display().to_string(), b.pubkey.display().to_string());
        let args: Vec<&str> = match action {
            "install" => vec!["install", "--kafka-home", &h, "--pubkey", &pubkey, &archive],
            _ => vec!["rollback", "--kafka-home", &h],
        };
        let ran = homes::okp(&b.okp, &args)?;
        self.journal_okp(&ran);
        Ok(ran)
    }

    pub fn journal_okp(&mut self, ran: &homes::Ran) {
        let mut text = format!("$ {}\n  exit {}", ran.command, ran.rc);
        for (what, s) in [("stdout", &ran.stdout), ("stderr", &ran.stderr)] {
            if !s.trim().is_empty() {
                text.push_str(&format!("\n  --- {what}\n"));
                text.push_str(&s.lines().map(|l| format!("  | {l}")).collect::<Vec<_>>().join("\n"));
            }
        }
        self.journal.note(&text);
    }

    pub fn wait_node_ready(&mut self, id: i32) -> Result<Duration> {
        let marker = self.ready_marker(self.node(id).role);
        self.node_mut(id).wait_ready(marker, Duration::from_secs(120))
    }

    /// Starts a stopped node and waits for it; returns the seconds it took.
    pub fn restart(&mut self, id: i32) -> Result<f64> {
        let t0 = Instant::now();
        self.start_node(id)?;
        self.wait_node_ready(id)?;
        let s = t0.elapsed().as_secs_f64();
        self.journal.note(&format!("started {} again: ready in {s:.1} s", self.node(id).name));
        // Ready is the broker's own log line; a tool call right after it may still bootstrap from
        // a broker whose metadata has no topics yet (ZooKeeper mode: before the controller's
        // update reaches it), and be told a topic does not exist. Wait for the brokers to agree.
        if self.node(id).role == Role::Broker {
            let t = Instant::now();
            if self.wait_brokers_known(Duration::from_secs(20)).is_some() {
                self.journal.note(&format!(
                    "every running broker lists {} alive, and it lists them and the same topics, after {:.1} s more",
                    self.node(id).name,
                    t.elapsed().as_secs_f64()
                ));
            }
        }
        Ok(s)
    }

    /// Graceful stop (SIGTERM; SIGKILL after 60 s): a broker shuts down in a
    /// controlled way, so the controller sees it leave at once.
    pub fn stop(&mut self, id: i32) {
        let t0 = Instant::now();
        self.node_mut(id).stop(Duration::from_secs(60));
        self.journal.note(&format!("stopped {} (SIGTERM) in {:.1} s", self.node(id).name, t0.elapsed().as_secs_f64()));
    }

    /// Sets the extra lines appended to node `id`'s server.properties (empty:
    /// none, the node's own configuration), to take effect at its next start.
    /// The block is marked, so a later call replaces it rather than adding to it.
    pub fn set_server_overrides(&mut self, id: i32, lines: &[&str]) -> Result<()> {
        const MARK: &str = "# okp scenario overrides (until the scenario restores this node)\n";
        let path = self.node(id).dir.join("server.properties");
        let text =
            std::fs::read_to_string(&path).map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
        let own = text.split_once(MARK).map_or(text.as_str(), |(own, _)| own).to_string();
        let new = if lines.is_empty() { own } else { format!("{own}{MARK}{}\n", lines.join("\n")) };
        write(&path, &new)?;
        let name = self.node(id).name.clone();
        self.journal.note(&format!("{name} server.properties overrides := {lines:?}"));
        Ok(())
    }

    pub fn kill9(&mut self, id: i32) {
        self.node_mut(id).kill9();
        self.journal.note(&format!("kill -9 {}", self.node(id).name));
    }

    pub fn freeze(&mut self, id: i32) {
        self.node_mut(id).freeze();
        self.journal.note(&format!("SIGSTOP {}", self.node(id).name));
    }

    pub fn thaw(&mut self, id: i32) {
        self.node_mut(id).thaw();
        self.journal.note(&format!("SIGCONT {}", self.node(id).name));
    }

    /// Brokers that are running and not frozen, except `exclude`: the only ones a tool may bootstrap from.
    pub fn bootstrap(&mut self, exclude: &[i32]) -> String {
        let mut hosts = Vec::new();
        let brokers: Vec<i32> = self.nodes.iter().filter(|n| n.role == Role::Broker).map(|n| n.id).collect();
        for id in brokers {
            if exclude.contains(&id) {
                continue;
            }
            let n = self.node_mut(id);
            if n.is_running() && !n.is_frozen() {
                hosts.push(format!("127.0.0.1:{}", n.port));
            }
        }
        hosts.join(",")
    }

    /// Writes observer.ids on the given nodes (temp file + rename, as an operator's tool should).
    pub fn set_observers(&mut self, ids: &[i32], content: &str) -> Result<()> {
        for id in ids {
            let path = self.node(*id).observer_file();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)
                    .map_err(|e| Error::io(format!("cannot remove {}", path.display()), e))?;
            }
            let tmp = path.with_extension("ids.tmp");
            write(&tmp, content)?;
            std::fs::rename(&tmp, &path).map_err(|e| Error::io(format!("cannot rename onto {}", path.display()), e))?;
        }
        self.observers_changed_at = Some(Instant::now());
        let names: Vec<String> = ids.iter().map(|i| self.node(*i).name.clone()).collect();
        self.journal.note(&format!("observer.ids := {:?} on {}", content.trim_end(), names.join(", ")));
        Ok(())
    }

    /// How long ago the last observer.ids change was: okp's own last write or delete, or the
    /// newest file's modification time, whoever wrote it (the watchdog writes them through its
    /// own transport). None when nothing has changed one since the cluster started.
    pub fn since_observers_changed(&self) -> Option<Duration> {
        let now = std::time::SystemTime::now();
        let files = self.kafka_nodes().into_iter().filter_map(|id| {
            let modified = std::fs::metadata(self.node(id).observer_file()).and_then(|m| m.modified()).ok()?;
            // A modification time in the future (clock steps) counts as just now.
            Some(now.duration_since(modified).unwrap_or_default())
        });
        self.observers_changed_at.map(|t| t.elapsed()).into_iter().chain(files).min()
    }

    /// Deletes node `id`'s observer.ids file (the node keeps the last set it read).
    pub fn delete_observers(&mut self, id: i32) -> Result<()> {
        let path = self.node(id).observer_file();
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("cannot delete {}", path.display()), e)),
        }
        self.observers_changed_at = Some(Instant::now());
        let name = self.node(id).name.clone();
        self.journal.note(&format!("observer.ids deleted on {name}"));
        Ok(())
    }

    /// Runs a tool and journals it.
    pub fn tool(&mut self, t: Tool, args: &[String], stdin: Option<&Path>, timeout: Duration) -> Result<Output> {
        let out = self.tools.run(t, args, stdin, timeout)?;
        self.journal.tool(t.label(), &out);
        Ok(out)
    }

    /// One read of node `id`'s JMX gauges (attribute `Value`) whose object
    /// names match `patterns`, with the release's own JmxTool: name -> value.
    pub fn jmx(&mut self, id: i32, patterns: &[&str]) -> Result<BTreeMap<String, f64>> {
        self.jmx_attribute(id, patterns, "Value")
    }

    /// `jmx` of another attribute (a meter's `Count`); keys keep their `:Count` suffix.
    pub fn jmx_attribute(&mut self, id: i32, patterns: &[&str], attribute: &str) -> Result<BTreeMap<String, f64>> {
        let url = format!("service:jmx:rmi:///jndi/rmi://127.0.0.1:{}/jmxrmi", self.jmx_port(id));
        let mut a = vec![
            "--jmx-url".to_string(),
            url,
            "--one-time".into(),
            "true".into(),
            "--attributes".into(),
            attribute.into(),
        ];
        for p in patterns {
            a.push("--object-name".into());
            a.push(p.to_string());
        }
        let out = self.tool(Tool::Jmx, &a, None, Duration::from_secs(60))?;
        let read = tools::parse_jmx(&out.stdout);
        if !out.ok() || read.is_empty() {
            return Err(Error::External(format!(
                "JmxTool on node {id} read nothing (rc {}): {}",
                out.rc,
                out.stderr.lines().chain(out.stdout.lines()).rfind(|l| !l.trim().is_empty()).unwrap_or("")
            )));
        }
        Ok(read)
    }

    /// Starts a tool without waiting for it (`finish_tool` collects and journals it).
    pub fn spawn_tool(&mut self, t: Tool, args: &[String]) -> Result<tools::Running> {
        self.tools.spawn(t, args, None)
    }

    pub fn finish_tool(&mut self, t: Tool, running: tools::Running, timeout: Duration) -> Output {
        let out = running.finish(timeout);
        self.journal.tool(t.label(), &out);
        out
    }

    /// Deletes `topic` and waits (up to `timeout`) until no broker lists it.
    pub fn delete_topic_and_wait(&mut self, topic: &str, timeout: Duration) -> Result<bool> {
        if !self.delete_topic(topic)?.ok() {
            return Ok(false);
        }
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            let views = self.broker_views(topic);
            if !views.is_empty() && views.iter().all(|(_, v)| v.is_none()) {
                self.journal.note(&format!("{topic}: no broker lists it"));
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(false)
    }

    /// The state of partition 0 of `topic`, asked of the live brokers.
    ///
    /// A describe that the cluster answers with an error (rc != 0, not a
    /// timeout) is asked again, up to three times a second apart: the tool's
    /// DescribeConfigs goes to any broker, and a broker that has just been
    /// thawed answers it with UnknownServerException while it re-registers
    /// with ZooKeeper (seen in CI on 3.9.2 zk, right after LAT's SIGCONT).
    /// Every attempt is journaled.
    pub fn describe(&mut self, topic: &str) -> Result<Option<PartitionState>> {
        let out = self.describe_output(Some(topic))?;
        Ok(tools::parse_describe(&out.stdout, topic, 0))
    }

    /// Every partition of every topic, internal ones included: (topic, partition, state).
    pub fn describe_all(&mut self) -> Result<Vec<(String, u32, PartitionState)>> {
        let out = self.describe_output(None)?;
        if !out.ok() {
            return Err(Error::External(format!("describe of every topic failed (rc {})", out.rc)));
        }
        Ok(tools::parse_describe_all(&out.stdout))
    }

    fn describe_output(&mut self, topic: Option<&str>) -> Result<Output> {
        let boot = self.bootstrap(&[]);
        let mut a = args(&["--bootstrap-server", &boot, "--describe"]);
        if let Some(t) = topic {
            a.extend(args(&["--topic", t]));
        }
        let what = topic.unwrap_or("every topic");
        let mut attempt = 1;
        loop {
            let out = self.tool(Tool::Topics, &a, None, Duration::from_secs(30))?;
            if out.ok() || out.timed_out || attempt == 3 {
                return Ok(out);
            }
            self.journal.note(&format!(
                "describe of {what} failed (rc {}, attempt {attempt} of 3): asking again in 1 s",
                out.rc
            ));
            std::thread::sleep(Duration::from_secs(1));
            attempt += 1;
        }
    }

    /// Partition 0 of `topic` as the first live broker's metadata cache has it
    /// (okp's own Metadata request: milliseconds, no JVM). None when no broker answers.
    pub fn probe_state(&mut self, topic: &str) -> Option<PartitionState> {
        self.probe_first(|p| p.partition(topic, 0))
    }

    /// The brokers the first live broker's metadata lists as alive (registered, not fenced), sorted.
    pub fn probe_live_brokers(&mut self) -> Option<Vec<i32>> {
        let mut ids =
            self.probe_first(|p| Some(p.metadata(Some(&[]))?.brokers.iter().map(|b| b.id).collect::<Vec<_>>()))?;
        ids.sort_unstable();
        Some(ids)
    }

    /// Waits until every running broker's metadata lists every running broker alive, and every
    /// one names the same topics: the controller has taken each (re)started broker in and sent
    /// it the partitions. A broker's readiness line comes before that in ZooKeeper mode, where
    /// the controller learns of it from a watch, and its first update may list the brokers
    /// before the next one brings the partitions. Returns the brokers, or None at `timeout`
    /// (journaled with what each broker listed).
    pub fn wait_brokers_known(&mut self, timeout: Duration) -> Option<Vec<i32>> {
        let t0 = Instant::now();
        loop {
            let running = self.running_brokers();
            let ids: Vec<i32> = running.iter().map(|(id, _)| *id).collect();
            type View = (Vec<i32>, std::collections::BTreeSet<String>);
            let views: Vec<(i32, Option<View>)> = running
                .iter()
                .map(|(id, port)| {
                    let listed = crate::wire::Probe::connect(*port).and_then(|mut p| {
                        let m = p.metadata(None)?;
                        let topics = m
                            .partitions
                            .iter()
                            .map(|x| x.topic.clone())
                            .chain(m.topic_errors.iter().map(|(t, _)| t.clone()))
                            .collect();
                        Some((m.brokers.iter().map(|b| b.id).collect::<Vec<_>>(), topics))
                    });
                    (*id, listed)
                })
                .collect();
            let first_topics = views.first().and_then(|(_, v)| v.as_ref()).map(|(_, t)| t);
            if views.iter().all(|(_, v)| {
                v.as_ref().is_some_and(|(b, t)| ids.iter().all(|id| b.contains(id)) && Some(t) == first_topics)
            }) {
                return Some(ids);
            }
            if t0.elapsed() > timeout {
                let show: Vec<String> = views
                    .iter()
                    .map(|(id, v)| {
                        format!(
                            "{id}: {}",
                            v.as_ref().map_or("no answer".into(), |(b, t)| format!("brokers {b:?}, topics {t:?}"))
                        )
                    })
                    .collect();
                self.journal.note(&format!(
                    "not every running broker ({ids:?}) listed alive by every one, with the same topics, within {:.0} s: {}",
                    timeout.as_secs_f64(),
                    show.join("; ")
                ));
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The leader epoch of partition 0 of `topic`, as the first live broker's metadata cache has it.
    pub fn probe_leader_epoch(&mut self, topic: &str) -> Option<i32> {
        self.probe_first(|p| p.metadata(Some(&[topic]))?.partitions.into_iter().find(|x| x.index == 0)?.leader_epoch)
    }

    /// The first answer of `ask` from a running, unfrozen broker, in id order.
    fn probe_first<T>(&mut self, ask: impl Fn(&mut crate::wire::Probe) -> Option<T>) -> Option<T> {
        for id in BROKERS {
            let n = self.node_mut(id);
            if !n.is_running() || n.is_frozen() {
                continue;
            }
            let port = n.port;
            if let Some(answer) = crate::wire::Probe::connect(port).and_then(|mut p| ask(&mut p)) {
                return Some(answer);
            }
        }
        None
    }

    /// The high watermark of partition 0 of `topic`, asked of its leader.
    pub fn probe_hw(&mut self, topic: &str) -> Option<i64> {
        let leader = self.probe_state(topic)?.leader?;
        let n = self.node_mut(leader);
        if !n.is_running() || n.is_frozen() {
            return None;
        }
        let port = n.port;
        crate::wire::Probe::connect(port)?.high_watermark(topic, 0)
    }

    /// (id, port) of every running, unfrozen broker, in node order.
    fn running_brokers(&mut self) -> Vec<(i32, u16)> {
        self.nodes
            .iter_mut()
            .filter(|n| n.role == Role::Broker)
            .filter_map(|n| (n.is_running() && !n.is_frozen()).then_some((n.id, n.port)))
            .collect()
    }

    /// Each running, unfrozen broker's own view of partition 0 of `topic` (None: it does not
    /// list the topic), for every broker that answers a Metadata request, in id order.
    pub fn broker_views(&mut self, topic: &str) -> Vec<(i32, Option<PartitionState>)> {
        let mut views = Vec::new();
        for (id, port) in self.running_brokers() {
            let Some(m) = crate::wire::Probe::connect(port).and_then(|mut p| p.metadata(Some(&[topic]))) else {
                continue;
            };
            views.push((id, m.partitions.into_iter().find(|x| x.topic == topic && x.index == 0).map(|x| x.state)));
        }
        views
    }

    /// Partition 0 of `topic` when every broker that answers has the same view of it, with the
    /// ids of those brokers; None when none answers, one does not list the topic, or two views
    /// differ (a change still on its way through the cluster).
    pub fn probe_agreed(&mut self, topic: &str) -> Option<(PartitionState, Vec<i32>)> {
        let views = self.broker_views(topic);
        let first = views.first()?.1.clone()?;
        views
            .iter()
            .all(|(_, v)| v.as_ref() == Some(&first))
            .then(|| (first, views.iter().map(|(id, _)| *id).collect()))
    }

    /// Journals a state `probe_agreed` returned: `<what> <topic> (every broker that answers: …): …`.
    pub fn note_agreed(&mut self, what: &str, topic: &str, s: &PartitionState, by: &[i32]) {
        let by: Vec<String> = by.iter().map(|b| b.to_string()).collect();
        self.journal.note(&format!("{what} {topic} (every broker that answers: {}): {}", by.join(", "), s.show()));
    }

    /// Waits until `pred` holds for partition 0 of `topic`: polls the first live broker's
    /// metadata every 200 ms, and when that says yes, asks every live broker: the state counts
    /// only when each answering broker has it (the state returned). Every state seen is given to
    /// `each`, for invariants that must hold at every poll; distinct states are journaled, and
    /// so is the agreement. At the timeout the release's own describe records the last state.
    /// (The release's describe reads one broker's metadata too; `run_suite` checks okp's reading
    /// against it after every scenario.)
    pub fn wait_state(
        &mut self,
        topic: &str,
        timeout: Duration,
        mut pred: impl FnMut(&PartitionState) -> bool,
        mut each: impl FnMut(&PartitionState),
    ) -> Result<(Option<PartitionState>, f64)> {
        let t0 = Instant::now();
        let mut last_seen: Option<PartitionState> = None;
        loop {
            let probed = self.probe_state(topic);
            if let Some(s) = &probed {
                each(s);
                if last_seen.as_ref() != Some(s) {
                    self.journal.note(&format!("probe {topic}: {}", s.show()));
                    last_seen = Some(s.clone());
                }
            }
            if probed.as_ref().is_some_and(&mut pred) {
                if let Some((s, by)) = self.probe_agreed(topic) {
                    each(&s);
                    if pred(&s) {
                        self.note_agreed("agreed", topic, &s, &by);
                        return Ok((Some(s), t0.elapsed().as_secs_f64()));
                    }
                }
            }
            if t0.elapsed() > timeout {
                self.journal
                    .note(&format!("{topic}: not within {:.0} s; the release's describe:", timeout.as_secs_f64()));
                self.describe(topic)?;
                return Ok((None, t0.elapsed().as_secs_f64()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Polls partition 0 of `topic` for `hold` (probe every 250 ms, every broker's view at the
    /// end) and returns every state for which `bad` held, with its time.
    pub fn watch(
        &mut self,
        topic: &str,
        hold: Duration,
        bad: impl Fn(&PartitionState) -> bool,
    ) -> Result<(usize, Vec<String>)> {
        let mut each = self.watch_all(&[topic], hold, bad)?;
        Ok(each.pop().unwrap_or_default())
    }

    /// `watch` over several topics at once, each polled in turn in every round: one hold of
    /// `hold` for all of them (not one after the other). One (polls, violations) per topic.
    pub fn watch_all(
        &mut self,
        topics: &[&str],
        hold: Duration,
        bad: impl Fn(&PartitionState) -> bool,
    ) -> Result<Vec<(usize, Vec<String>)>> {
        let t0 = Instant::now();
        let mut seen: Vec<(usize, Vec<String>)> = vec![(0, Vec::new()); topics.len()];
        let mut last: Vec<Option<PartitionState>> = vec![None; topics.len()];
        while t0.elapsed() < hold {
            for (i, topic) in topics.iter().enumerate() {
                let Some(s) = self.probe_state(topic) else { continue };
                seen[i].0 += 1;
                if bad(&s) {
                    seen[i].1.push(format!("+{:.1}s {}", t0.elapsed().as_secs_f64(), s.show()));
                }
                if last[i].as_ref() != Some(&s) {
                    self.journal.note(&format!("probe {topic}: {}", s.show()));
                    last[i] = Some(s);
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        for (i, topic) in topics.iter().enumerate() {
            let views = self.broker_views(topic);
            let shown: Vec<String> = views
                .iter()
                .map(|(id, v)| {
                    format!("{id}: {}", v.as_ref().map(|s| s.show()).unwrap_or_else(|| "no such topic".into()))
                })
                .collect();
            self.journal.note(&format!("{topic}, every broker's view at the end: {}", shown.join("; ")));
            for (id, v) in views {
                let Some(s) = v else { continue };
                seen[i].0 += 1;
                if bad(&s) {
                    seen[i].1.push(format!("+{:.1}s (broker {id}) {}", t0.elapsed().as_secs_f64(), s.show()));
                }
            }
        }
        Ok(seen)
    }

    pub fn delete_topic(&mut self, topic: &str) -> Result<Output> {
        let boot = self.bootstrap(&[]);
        self.tool(
            Tool::Topics,
            &args(&["--bootstrap-server", &boot, "--delete", "--topic", topic]),
            None,
            Duration::from_secs(60),
        )
    }

    pub fn create_topic(&mut self, topic: &str, assignment: &str, configs: &[&str]) -> Result<Output> {
        Ok(self.create_topics(&[(topic, assignment, configs)])?.remove(0))
    }

    /// Creates topics with explicit replica assignments, one kafka-topics call each, in one JVM
    /// (`tool_batch`).
    pub fn create_topics(&mut self, topics: &[(&str, &str, &[&str])]) -> Result<Vec<Output>> {
        let boot = self.bootstrap(&[]);
        let calls: Vec<Vec<String>> = topics
            .iter()
            .map(|(topic, assignment, configs)| {
                let mut a = args(&[
                    "--bootstrap-server",
                    &boot,
                    "--create",
                    "--topic",
                    topic,
                    "--replica-assignment",
                    assignment,
                ]);
                for c in *configs {
                    a.push("--config".into());
                    a.push(c.to_string());
                }
                a
            })
            .collect();
        self.tool_batch(Tool::Topics, &calls, |_| Tool::Topics.label().to_string(), Duration::from_secs(60))
    }

    /// Produces `n` unique records with acks=all through the console producer.
    pub fn produce(&mut self, topic: &str, tag: &str, n: usize, exclude: &[i32]) -> Result<Produced> {
        self.produce_during(topic, tag, n, exclude, None)
    }

    /// As `produce`, with a producer that is not idempotent: it never asks a broker for a
    /// producer id, so it talks only to its bootstrap brokers and the leader (a frozen broker
    /// still in the metadata cannot stall it).
    pub fn produce_not_idempotent(&mut self, topic: &str, tag: &str, n: usize, exclude: &[i32]) -> Result<Produced> {
        self.produce_with(topic, tag, n, exclude, None, &["enable.idempotence=false"])
    }

    /// As `produce`, running `during` once the producer JVM has started (to kill a broker mid-stream).
    pub fn produce_during(
        &mut self,
        topic: &str,
        tag: &str,
        n: usize,
        exclude: &[i32],
        during: Option<&mut dyn FnMut(&mut Cluster)>,
    ) -> Result<Produced> {
        self.produce_with(topic, tag, n, exclude, during, &[])
    }

    /// `produce_during` with extra producer properties (later ones win: `delivery.timeout.ms=8000`).
    pub fn produce_with(
        &mut self,
        topic: &str,
        tag: &str,
        n: usize,
        exclude: &[i32],
        during: Option<&mut dyn FnMut(&mut Cluster)>,
        extra: &[&str],
    ) -> Result<Produced> {
        let values: Vec<String> = (0..n).map(|i| format!("{tag}-{i:06}")).collect();
        let input = self.run_dir.join("tools").join(format!("input-{tag}.txt"));
        write(&input, &(values.join("\n") + "\n"))?;
        let boot = self.bootstrap(exclude);
        let mut a = args(&[
            "--bootstrap-server",
            &boot,
            "--topic",
            topic,
            "--request-required-acks",
            "all",
            "--producer-property",
            "acks=all",
            "--producer-property",
            "linger.ms=5",
            "--producer-property",
            "delivery.timeout.ms=30000",
            "--producer-property",
            "request.timeout.ms=10000",
        ]);
        for p in extra {
            a.extend(args(&["--producer-property", p]));
        }
        let running = self.tools.spawn(Tool::Producer, &a, Some(&input))?;
        if let Some(f) = during {
            f(self);
        }
        let out = running.finish(Duration::from_secs(90));
        self.journal.tool(Tool::Producer.label(), &out);
        let errors = out.stderr.lines().filter(|l| l.contains("Error when sending message")).count();
        let ok = out.ok() && errors == 0;
        Ok(Produced { values: if ok { values } else { Vec::new() }, sent: n, errors, rc: out.rc })
    }

    /// Reads partition 0 of `topic` from the earliest offset (assign mode: no group coordinator needed).
    pub fn consume(&mut self, topic: &str, max: usize, read_committed: bool, exclude: &[i32]) -> Result<Vec<String>> {
        self.consume_with(topic, max, read_committed, exclude, &[], 15000)
    }

    /// `consume` with consumer properties (`client.rack=…`) and the tool's own idle timeout.
    pub fn consume_with(
        &mut self,
        topic: &str,
        max: usize,
        read_committed: bool,
        exclude: &[i32],
        props: &[&str],
        timeout_ms: u64,
    ) -> Result<Vec<String>> {
        let boot = self.bootstrap(exclude);
        let max_s = max.to_string();
        let mut a = args(&[
            "--bootstrap-server",
            &boot,
            "--topic",
            topic,
            "--partition",
            "0",
            "--offset",
            "earliest",
            "--max-messages",
            &max_s,
            "--timeout-ms",
            &timeout_ms.to_string(),
        ]);
        if read_committed {
            a.extend(args(&["--isolation-level", "read_committed"]));
        }
        for p in props {
            a.extend(args(&["--consumer-property", p]));
        }
        let out = self.tool(Tool::Consumer, &a, None, Duration::from_millis(timeout_ms + 45_000))?;
        // 4.2 on prints "Option --consumer-property is deprecated ..." on stdout.
        let notice = |l: &str| l.starts_with("Option --") && l.contains(" is deprecated");
        Ok(out.stdout.lines().filter(|l| !notice(l)).map(str::to_string).collect())
    }

    /// Reads partition 0 of `topic` from its start with okp's own reader (the soak client's
    /// `read`), which has no group id and so never waits for a group coordinator; compiled
    /// against the release's classpath on first use. A release's console consumer always
    /// joins a group, and 3.2.0's polls nothing in assign mode while the group's coordinator
    /// is offline (every replica of its `__consumer_offsets` partition down).
    pub fn consume_without_group(&mut self, topic: &str, max: usize, exclude: &[i32]) -> Result<Vec<String>> {
        let classes = self.okp_client_classes()?;
        let boot = self.bootstrap(exclude);
        self.journal.note(&format!(
            "okp-reader: okp's OkpSoakClient `read` (no group id), its classes ({}) appended to the classpath",
            classes.display()
        ));
        let a = args(&["read", &boot, topic, &max.to_string(), "15000"]);
        let out = self.tools.run_class(client::CLASS, &classes, &a, Duration::from_secs(75))?;
        self.journal.tool("okp-reader", &out);
        Ok(out
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("read\t"))
            .filter_map(|l| l.splitn(4, '\t').nth(3))
            .map(str::to_string)
            .collect())
    }

    /// okp's own Java classes (`OkpSoakClient`, `OkpToolBatch`), compiled against the release's
    /// classpath once per (release, JDK, sources) and kept in the Maven cache (compiled beside
    /// it, then renamed into place, so a kill or a second okp leaves either nothing or all of
    /// it); in the run directory when the cache cannot be written. Their directory.
    pub fn okp_client_classes(&mut self) -> Result<PathBuf> {
        let complete = |classes: &Path| {
            [client::CLASS, client::BATCH_CLASS]
                .iter()
                .all(|c| classes.join(format!("{}.class", c.replace('.', "/"))).is_file())
        };
        let key = crate::hash::sha256(
            format!("{}\0{}\0{}", self.rt.version, self.rt.java_version, client::sources_digest()).as_bytes(),
        );
        let name = format!("{}-{}", self.rt.version, &key[..16]);
        let cache = self.rt.client_cache.clone();
        let dir = cache.join(&name);
        if complete(&dir.join("classes")) {
            return Ok(dir.join("classes"));
        }
        let local = self.run_dir.join("okp-client");
        if std::fs::create_dir_all(&cache).is_err() {
            if !complete(&local.join("classes")) {
                client::compile(&self.rt.java, &self.tools.classpath, &local)?;
            }
            return Ok(local.join("classes"));
        }
        let staging = cache.join(format!(".{name}.tmp.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        if let Err(e) = client::compile(&self.rt.java, &self.tools.classpath, &staging) {
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

    /// Runs the release's tool `t` once per entry of `calls` in one JVM (okp's `OkpToolBatch`:
    /// the tool's own main, its exit caught; a single call runs as the tool itself); one `Output`
    /// per call, each journaled as `label(i)`.
    pub fn tool_batch(
        &mut self,
        t: Tool,
        calls: &[Vec<String>],
        label: impl Fn(usize) -> String,
        timeout: Duration,
    ) -> Result<Vec<Output>> {
        let outs = if let [one] = calls {
            vec![self.tools.run(t, one, None, timeout)?]
        } else {
            let classes = self.okp_client_classes()?;
            self.tools.batch(t, &classes, calls, timeout)?
        };
        for (i, out) in outs.iter().enumerate() {
            self.journal.tool(&label(i), out);
        }
        Ok(outs)
    }

    /// Starts a long-running `OkpSoakClient` (`produce …` or `consume …`) under the tools' JVM
    /// flags, its stderr in `okp-client/<name>.err`; its lines are timed from `t0`.
    pub fn spawn_okp_client(&mut self, name: &str, args: &[String], t0: Instant) -> Result<client::Client> {
        let classes = self.okp_client_classes()?;
        let classpath = format!("{}:{}", self.tools.classpath, classes.display());
        let logs = self.run_dir.join("okp-client");
        std::fs::create_dir_all(&logs).map_err(|e| Error::io(format!("cannot create {}", logs.display()), e))?;
        let err = logs.join(format!("{name}.err"));
        self.journal.note(&format!("okp client {name} started: OkpSoakClient {}", args.join(" ")));
        client::Client::spawn(name, &self.rt.java, &self.tools.jvm, &classpath, args, &err, t0)
    }

    /// The end offset (high watermark for a read_uncommitted reader) of partition 0.
    pub fn end_offset(&mut self, topic: &str, exclude: &[i32]) -> Result<Option<i64>> {
        let boot = self.bootstrap(exclude);
        let flag = if self.rt.version.major == 2 { "--broker-list" } else { "--bootstrap-server" };
        let out = self.tool(
            Tool::Offsets,
            &args(&[flag, &boot, "--topic", topic, "--time", "-1"]),
            None,
            Duration::from_secs(30),
        )?;
        Ok(tools::parse_offset(&out.stdout, topic, 0))
    }

    pub fn elect(&mut self, topic: &str, kind: &str, exclude: &[i32]) -> Result<Output> {
        let boot = self.bootstrap(exclude);
        self.tool(
            Tool::Elect,
            &args(&["--bootstrap-server", &boot, "--election-type", kind, "--topic", topic, "--partition", "0"]),
            None,
            Duration::from_secs(60),
        )
    }

    /// Runs kafka-reassign-partitions on partition 0 of `topic` with target `replicas` and
    /// `action` (`--execute`, `--verify`); the JSON file stays in the run's tools directory.
    pub fn reassign(&mut self, topic: &str, replicas: &[i32], action: &str) -> Result<Output> {
        self.reassign_with(topic, replicas, &[action])
    }

    /// `reassign` with several tool flags (`--execute --additional`: replace a reassignment in progress).
    pub fn reassign_with(&mut self, topic: &str, replicas: &[i32], actions: &[&str]) -> Result<Output> {
        let list = replicas.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        let json = format!(
            "{{\"version\":1,\"partitions\":[{{\"topic\":\"{topic}\",\"partition\":0,\"replicas\":[{}]}}]}}\n",
            list.join(",")
        );
        let file = self.run_dir.join("tools").join(format!("reassign-{topic}-{}.json", list.join("-")));
        write(&file, &json)?;
        let boot = self.bootstrap(&[]);
        let path = file.display().to_string();
        let mut a = args(&["--bootstrap-server", &boot, "--reassignment-json-file", &path]);
        a.extend(args(actions));
        self.tool(Tool::Reassign, &a, None, Duration::from_secs(60))
    }

    /// Broker `broker`'s own log end offset of partition 0 of `topic`, leader or follower
    /// (ListOffsets as DEBUGGING_REPLICA_ID, okp's probe).
    pub fn probe_leo(&mut self, broker: i32, topic: &str) -> Option<i64> {
        let n = self.node_mut(broker);
        if !n.is_running() || n.is_frozen() {
            return None;
        }
        let port = n.port;
        let key = (topic.to_string(), 0);
        crate::wire::Probe::connect(port)?
            .latest_offsets(crate::wire::DEBUGGING, std::slice::from_ref(&key))?
            .remove(&key)?
            .ok()
    }

    pub fn segment(&self, broker: i32, topic: &str) -> PathBuf {
        self.node(broker).dir.join("data").join(format!("{topic}-0")).join("00000000000000000000.log")
    }

    /// Size and sha256 of a replica's first segment (None when it has none).
    pub fn segment_digest(&self, broker: i32, topic: &str) -> Option<(u64, String)> {
        let bytes = std::fs::read(self.segment(broker, topic)).ok()?;
        Some((bytes.len() as u64, crate::hash::sha256(&bytes)))
    }

    /// Batch headers of a replica's first segment, through DumpLogSegments.
    pub fn dump_batches(&mut self, broker: i32, topic: &str) -> Result<Vec<String>> {
        let seg = self.segment(broker, topic).display().to_string();
        let out =
            self.tool(Tool::Dump, &args(&["--deep-iteration", "--files", &seg]), None, Duration::from_secs(60))?;
        Ok(tools::batch_lines(&out.stdout))
    }

    /// Waits until `broker`'s segment of `topic` equals the leader's byte for byte.
    pub fn wait_replica_identical(&mut self, broker: i32, leader: i32, topic: &str, timeout: Duration) -> (bool, f64) {
        let t0 = Instant::now();
        loop {
            let a = self.segment_digest(broker, topic);
            let b = self.segment_digest(leader, topic);
            if a.is_some() && a == b {
                return (true, t0.elapsed().as_secs_f64());
            }
            if t0.elapsed() > timeout {
                return (false, t0.elapsed().as_secs_f64());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The node id of the active controller.
    pub fn active_controller(&mut self) -> Result<Option<i32>> {
        if self.mode == Mode::Kraft {
            let boot = self.bootstrap(&[]);
            let out = self.tool(
                Tool::Quorum,
                &args(&["--bootstrap-server", &boot, "describe", "--status"]),
                None,
                Duration::from_secs(30),
            )?;
            return Ok(out
                .stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix("LeaderId:").and_then(|v| v.trim().parse().ok())));
        }
        let out = self.zk(&["get", "/controller"])?;
        Ok(out.stdout.lines().find_map(|l| {
            let at = l.find("\"brokerid\":")? + "\"brokerid\":".len();
            l[at..].trim().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
        }))
    }

    /// One command of the release's ZooKeeper shell against the cluster's ZooKeeper (zk mode).
    pub fn zk(&mut self, command: &[&str]) -> Result<Output> {
        let mut a = args(&["-server", &format!("127.0.0.1:{}", self.base_port)]);
        a.extend(args(command));
        self.tool(Tool::ZooKeeperShell, &a, None, Duration::from_secs(30))
    }

    /// Lines of every Kafka node's log (all starts) containing one of `needles`, prefixed with the node's name.
    pub fn grep_logs(&self, needles: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for n in &self.nodes {
            for l in n.whole_log().lines() {
                if needles.iter().any(|x| l.contains(x)) {
                    out.push(format!("{}: {l}", n.name));
                }
            }
        }
        out
    }

    /// Each running node's resident set size in MiB.
    pub fn rss(&mut self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for n in &mut self.nodes {
            if let Some(pid) = n.pid() {
                if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                    if let Some(kb) = s.lines().find_map(|l| {
                        l.strip_prefix("VmRSS:").and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                    }) {
                        m.insert(n.name.clone(), kb / 1024);
                    }
                }
            }
        }
        m
    }

    /// Stops everything: brokers, then controllers or ZooKeeper.
    pub fn down(&mut self) {
        let t0 = Instant::now();
        for n in self.nodes.iter_mut().rev() {
            n.thaw();
        }
        // Every node at once (SIGTERM, SIGKILL after 3 s): nothing after this reads the cluster.
        std::thread::scope(|scope| {
            for n in self.nodes.iter_mut() {
                scope.spawn(move || n.stop(Duration::from_secs(3)));
            }
        });
        self.tools.stop_resident();
        self.journal.note(&format!("cluster stopped in {:.1} s", t0.elapsed().as_secs_f64()));
        // A dump still running ends here, so its archive is put in place (or its staging file
        // removed) before the run ends.
        if matches!(self.server_cds, ServerCds::Dumping(_)) {
            while matches!(&self.server_cds, ServerCds::Dumping(h) if !h.is_finished()) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.server_cds_flags(None);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.tools.stop_resident();
        if let (ServerCds::Training { .. }, Ok(plan)) = (&self.server_cds, &self.rt.server_cds) {
            server_cds::release(&plan.archive);
        }
        for n in &mut self.nodes {
            n.kill9();
        }
    }
}

pub struct Produced {
    /// The records acknowledged (all of them when the producer reported no error; none otherwise).
    pub values: Vec<String>,
    pub sent: usize,
    pub errors: usize,
    pub rc: i32,
}

impl Produced {
    pub fn all_acked(&self) -> bool {
        self.values.len() == self.sent
    }
}

pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn mkdir(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p).map_err(|e| Error::io(format!("cannot create {}", p.display()), e))
}

fn write(p: &Path, text: &str) -> Result<()> {
    std::fs::write(p, text).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))
}

fn getrandom(buf: &mut [u8]) -> Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|e| Error::io("cannot read /dev/urandom", e))
}

/// Ports a cluster takes: base (ZooKeeper), +1..+4 brokers, +5..+8 broker JMX, +9 MULTI's fifth
/// broker, +11..+13 KRaft controllers, +14..+16 controller JMX.
/// Ports one cluster claims (`--base-port` names the first; a run of N lanes takes N blocks).
pub const PORT_BLOCK: u16 = 17;

/// A block of `PORT_BLOCK` consecutive loopback ports, claimed: an exclusive lock on
/// `$TMPDIR/okp-port-blocks/<base>.lock`, held until the cluster is dropped. Probing
/// that the ports bind is not enough on its own when two clusters start at once
/// (`okp verify --all --jobs 2`, or two okp processes): both would find the same
/// block free before either binds it. The lock is `flock(2)`, so it goes with the
/// process however it ends.
pub struct PortBlock {
    pub base: u16,
    _lock: std::fs::File,
}

impl PortBlock {
    /// Claims the block at `base` if no other cluster holds it and its ports all bind now.
    fn claim(base: u16) -> Option<PortBlock> {
        use std::os::fd::AsRawFd;
        let dir = std::env::temp_dir().join("okp-port-blocks");
        std::fs::create_dir_all(&dir).ok()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{base}.lock")))
            .ok()?;
        // SAFETY: flock(2) on a descriptor this function owns; non-blocking.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return None;
        }
        let free = (0..PORT_BLOCK).all(|i| TcpListener::bind(("127.0.0.1", base + i)).is_ok());
        free.then_some(PortBlock { base, _lock: file })
    }
}

/// A block of `PORT_BLOCK` consecutive loopback ports that all bind and no other okp
/// cluster holds. A requested base must be wholly free (another cluster there
/// would answer our tools); without one, the search starts at an offset derived
/// from the process id, so two okp runs started together rarely probe the same
/// block first (and the lock settles it when they do).
fn free_port_block(requested: Option<u16>) -> Result<PortBlock> {
    if let Some(base) = requested {
        return base.checked_add(PORT_BLOCK).and_then(|_| PortBlock::claim(base)).ok_or_else(|| {
            Error::External(format!(
                "--base-port {base}: ports {base}..{} on 127.0.0.1 are not all free (another cluster?)",
                base.saturating_add(PORT_BLOCK - 1)
            ))
        });
    }
    // Blocks stay below the kernel's ephemeral range: a port in it can be taken as the source
    // port of any outgoing connection while its broker is down, and the restart then fails to
    // bind (seen on 3.7.2: "Port already in use" for a broker's JMX port at 34286).
    const FIRST: u16 = 20000;
    let ephemeral_low = ephemeral_low();
    let blocks = ephemeral_low.saturating_sub(FIRST) / 20;
    if blocks == 0 {
        return Err(Error::External(format!(
            "no room for a port block below the ephemeral range (it starts at {ephemeral_low}); pass --base-port"
        )));
    }
    let start = (std::process::id() % blocks as u32) as u16;
    for k in 0..blocks {
        if let Some(block) = PortBlock::claim(FIRST + 20 * ((start + k) % blocks)) {
            return Ok(block);
        }
    }
    Err(Error::External(format!(
        "no block of {PORT_BLOCK} free ports on 127.0.0.1 between {FIRST} and {ephemeral_low} (below the ephemeral range)"
    )))
}

/// The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), 32768 if unreadable.
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(32768)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An id whose first byte's top six bits are 62 encodes to a leading '-' (URL-safe base64):
    /// kafka-storage would read it as an option, so it is drawn again.
    #[test]
    fn a_cluster_id_never_starts_with_a_dash() {
        let mut raw = [7u8; 16];
        raw[0] = 62 << 2;
        assert_eq!(cluster_id(raw).unwrap(), None);
        raw[0] = 0;
        let id = cluster_id(raw).unwrap().unwrap();
        assert_eq!(id.len(), 22);
        assert!(id.starts_with('A'), "{id}");
    }

    /// Two clusters started at once never get the same ports: a claimed block is not handed out
    /// again, by this process or another, until its holder lets go.
    #[test]
    fn a_claimed_port_block_is_not_handed_out_twice() {
        let first = free_port_block(None).unwrap();
        assert!(PortBlock::claim(first.base).is_none(), "block {} claimed twice", first.base);
        let second = free_port_block(None).unwrap();
        assert_ne!(second.base, first.base);
        assert!(free_port_block(Some(first.base)).is_err());
        let base = first.base;
        drop(first);
        assert!(PortBlock::claim(base).is_some(), "block {base} not released with its holder");
    }
}
