//! A Kafka cluster across a run's hosts: ZooKeeper on host `zk` (or KRaft controllers on
//! `c101`–`c103`) and brokers 1–4 on `b1`–`b4`, each process inside its host's namespace
//! (`ip netns exec`, its own hostname) listening on the host's address with the usual ports
//! (2181, 9093, 9092). Each host has its own Kafka home laid out like the binary distribution
//! (`cluster::homes`), its own observer.ids (`KAFKA_OBSERVER_IDS_FILE`), its data and logs.
//!
//! Brokers and controllers run under a stand-in for a service manager (`bin/okp-service` of the
//! host: runs the node, and again when it ends), so a restart is what an operator's tooling does
//! on a real host (`bin/okp-restart`, which Ansible calls over ssh): the JVM ends and comes back
//! with the jars then in `libs/` of the home the host's link `current` points to (A's home,
//! `kafka/`, until an upgrade play points it at B's, `kafka-B/`). The controllers and ZooKeeper
//! run the bundle from the start; the brokers start on the release's own jars and get the bundle
//! from a roll (Ansible).
//!
//! Everything that talks to the cluster (tools, clients, okp's probe) runs on the operator host
//! (`hosts::in_netns`). Not here: the hosts (`hosts`), what is asserted (`scenarios::hosts`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Host, Topology};
use crate::cluster::homes::{self, Bundle};
use crate::cluster::node::{Node, Role};
use crate::cluster::runtime::Runtime;
use crate::cluster::tools::{self, Runner, Tool};
use crate::error::{Error, Result};
use crate::model::Mode;

pub const BROKER_PORT: u16 = 9092;
const CONTROLLER_PORT: u16 = 9093;
const ZK_PORT: u16 = 2181;

/// The host names of a cluster in `mode`: the quorum first, then brokers 1–4.
pub fn host_names(mode: Mode) -> Vec<&'static str> {
    match mode {
        Mode::Zk => vec!["zk", "b1", "b2", "b3", "b4"],
        Mode::Kraft => vec!["c101", "c102", "c103", "b1", "b2", "b3", "b4"],
    }
}

/// The hosts of a cluster in `mode` across two regions (scenario WAN): region a holds the
/// quorum and brokers 1, 2, 3 and 5; region b broker 4 and a client host (`clientb`, no Kafka).
pub fn wan_host_names(mode: Mode) -> Vec<&'static str> {
    let mut v = host_names(mode);
    v.retain(|h| *h != "b4");
    v.extend(["b5", "b4", "clientb"]);
    v
}

/// A KRaft cluster id (URL-safe base64 of 16 bytes, as Kafka's Uuid) derived from `seed` (the run
/// and this process), its top bit clear: the first base64 character is never `-`, which the
/// storage tool would read as an option.
pub fn cluster_id_of(seed: &str) -> Result<String> {
    let raw = crate::hash::sha256(seed.as_bytes());
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&raw[i * 2..i * 2 + 2], 16).unwrap_or(0);
    }
    bytes[0] &= 0x7f;
    crate::cluster::cluster_id(bytes)?.ok_or_else(|| Error::Source("a cluster id starting with `-`".into()))
}

/// `kafka-storage format -t ID -c CONFIG` of one KRaft node (`name` in the error).
pub fn format_storage(tools: &mut Runner, id: &str, config: &Path, name: &str) -> Result<()> {
    let out = tools.run(
        Tool::Storage,
        &["format".into(), "-t".into(), id.to_string(), "-c".into(), config.display().to_string()],
        None,
        Duration::from_secs(120),
    )?;
    if !out.ok() {
        return Err(Error::External(format!(
            "formatting {name} failed (rc {}): {}",
            out.rc,
            out.stderr.lines().last().unwrap_or("")
        )));
    }
    Ok(())
}

/// How a host cluster is laid out and what its nodes run at the start.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Host names (`host_names`, `wan_host_names`): `zk`, `cNNN` controllers, `bN` brokers,
    /// `client…` hosts without Kafka.
    pub names: Vec<&'static str>,
    /// The hosts' regions and the link between them; None: one network.
    pub regions: Option<super::wan::Regions>,
    /// The bundle installed on the brokers from the start (else they run the release's jars).
    pub patched_brokers: bool,
    /// The bundle installed on the KRaft controllers from the start.
    pub patched_controllers: bool,
    /// Every node's observer.ids at the start.
    pub observer_ids: String,
}

impl Layout {
    /// Scenarios WAN's and MM2's: `wan_host_names` in two regions, a (the quorum, brokers 1, 2,
    /// 3, 5) and b (broker 4, clientb), behind `link`.
    pub fn two_regions(mode: Mode, link: super::wan::Link, patched: bool, observer_ids: &str) -> Layout {
        let names = wan_host_names(mode);
        let regions = super::wan::Regions {
            names: vec!["a".into(), "b".into()],
            of: names.iter().map(|n| (n.to_string(), usize::from(*n == "b4" || *n == "clientb"))).collect(),
            link,
            toxiproxy: None,
        };
        Layout {
            names,
            regions: Some(regions),
            patched_brokers: patched,
            patched_controllers: patched,
            observer_ids: observer_ids.into(),
        }
    }

    /// Scenario HOSTS's: one network, the controllers patched, the brokers on the release's jars.
    pub fn hosts(mode: Mode) -> Layout {
        Layout {
            names: host_names(mode),
            regions: None,
            patched_brokers: false,
            patched_controllers: true,
            observer_ids: "4\n".into(),
        }
    }
}

/// The stand-in service manager of a node (broker or KRaft controller), outside its Kafka homes
/// as a systemd unit is: at each start it runs the home the host's link `current` points to then.
const SERVICE: &str = "#!/bin/sh
# okp's test hosts have no service manager: this loop is the node's service. At each start it
# runs Java from the Kafka home the link `current` points to then (its Java, classpath and
# logging from that home's bin/okp-server-env, as kafka-run-class.sh builds them from its own
# libs/), writes the pid, and runs it again whenever it ends.
host=$(cd \"$(dirname \"$0\")/..\" && pwd)
while :; do
  home=$(cd \"$host/current\" && pwd -P)
  . \"$home/bin/okp-server-env\"
  CLASSPATH=$OKP_CLASSPATH \"$OKP_JAVA\" \"$OKP_LOG\" \"$@\" &
  echo $! > \"$host/kafka.pid\"
  wait $!
  sleep 1
done
";

/// What Ansible runs over ssh to restart the node of a test host.
const RESTART: &str = "#!/bin/sh
# Restarts this test host's node, as `systemctl restart kafka` would: ends the JVM (SIGTERM,
# a controlled shutdown) and waits until it is gone; the service loop starts it again.
host=$(cd \"$(dirname \"$0\")/..\" && pwd)
pid=$(cat \"$host/kafka.pid\") || exit 1
kill -TERM \"$pid\" 2>/dev/null || exit 0
i=0
while kill -0 \"$pid\" 2>/dev/null; do
  i=$((i + 1)); [ \"$i\" -gt 600 ] && kill -KILL \"$pid\"
  sleep 0.1
done
";

/// `bin/okp-server-env` of a Kafka home of `rt`'s release, which the service sources with
/// `$home` set to the home: B's home gets its own from B's distribution, so the link decides.
pub fn server_env(rt: &Runtime, log_flag: &str) -> String {
    format!(
        "# How a node started from this Kafka home runs (okp's test hosts; the part of\n# kafka-run-class.sh their service needs): Java, the classpath from libs/, logging.\nOKP_JAVA={java}\nOKP_CLASSPATH=\"{cp}\"\nOKP_LOG=\"{log_flag}\"\n",
        java = rt.java.display(),
        cp = homes::classpath(rt, Path::new("$home")),
    )
}

/// Writes `home`'s logging configuration and `bin/okp-server-env` for `rt`'s release.
fn write_server_env(rt: &Runtime, home: &Path) -> Result<()> {
    let config = home.join("config");
    crate::fsx::create_dir(&config)?;
    let (server_log, _) = rt.write_logging(&config)?;
    let flag = server_log.replace(&home.display().to_string(), "$home");
    crate::fsx::write_atomic(&home.join("bin/okp-server-env"), server_env(rt, &flag).as_bytes())
}

/// Lays out release `rt`'s binary distribution (its own jars, its launcher's stand-in, its
/// logging) under `dir` and packs it as `kafka_2.13-V.tgz` there, as an operator downloads it.
pub fn distribution(rt: &Runtime, dir: &Path) -> Result<PathBuf> {
    let name = format!("kafka_2.13-{}", rt.version);
    let home = dir.join(&name);
    homes::lay_out(rt, &home)?;
    write_server_env(rt, &home)?;
    let tgz = dir.join(format!("{name}.tgz"));
    let out = std::process::Command::new("tar")
        .arg("-C")
        .arg(dir)
        .arg("-czf")
        .arg(&tgz)
        .arg(&name)
        .output()
        .map_err(|e| Error::External(format!("cannot run tar ({e})")))?;
    if !out.status.success() {
        return Err(Error::External(format!("tar of {name} failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(tgz)
}

/// Partition 0 of `topic` as the first broker of `bootstrap` that answers has it (okp's probe).
pub fn state_at(bootstrap: &str, topic: &str) -> Option<crate::wire::PartitionState> {
    bootstrap.split(',').find_map(|b| crate::wire::Probe::connect_to(b).and_then(|mut p| p.partition(topic, 0)))
}

/// One node: its host, its process, and its Kafka home.
pub struct HostNode {
    pub host: Host,
    pub node: Node,
    pub home: PathBuf,
}

pub struct HostCluster {
    pub mode: Mode,
    pub topo: Topology,
    pub rt: Runtime,
    pub nodes: Vec<HostNode>,
    /// The release's tools, run on the operator host.
    pub tools: Runner,
    /// okp's signed bundle (None: a run on the release's jars, the negative control).
    pub bundle: Option<Bundle>,
    /// okp's Java client classes (producer and reader of `client.rs`).
    pub client_classes: PathBuf,
    pub cluster_id: Option<String>,
    /// What happened, line by line, for the scenario's journal.
    pub log: Vec<String>,
}

impl HostCluster {
    /// Makes the hosts, lays out a Kafka home on each (the bundle installed on the quorum's),
    /// starts the cluster and waits until every node is ready. Brokers run the release's jars.
    pub fn up(mode: Mode, rt: Runtime, bundle: Bundle, client_classes: PathBuf, lag_ms: u64) -> Result<HostCluster> {
        HostCluster::up_with(mode, rt, Some(bundle), client_classes, lag_ms, Layout::hosts(mode))
    }

    /// As `up`, laid out as `layout` says.
    pub fn up_with(
        mode: Mode,
        rt: Runtime,
        bundle: Option<Bundle>,
        client_classes: PathBuf,
        lag_ms: u64,
        layout: Layout,
    ) -> Result<HostCluster> {
        crate::cluster::node::install_interrupt_handler();
        let topo = match layout.regions.clone() {
            Some(r) => Topology::create_in_regions(&layout.names, r)?,
            None => Topology::create(&layout.names)?,
        };
        let (server_log, tool_log) = rt.write_logging(&topo.dir)?;
        let classes = tools::resolve(&rt.class_index()?);
        let scratch = topo.dir.join("tools");
        std::fs::create_dir_all(&scratch).map_err(|e| Error::io("cannot create the tools' directory", e))?;
        let tool_jvm = vec![
            "-Xms16m".into(),
            "-Xmx128m".into(),
            "-XX:+UseSerialGC".into(),
            "-XX:TieredStopAtLevel=1".into(),
            "-Xlog:disable".into(),
            "-Xlog:all=warning:stderr".into(),
            tool_log,
        ];
        let tools = Runner::new(rt.java.clone(), rt.classpath_string(), tool_jvm, classes, scratch);
        let mut c = HostCluster {
            mode,
            topo,
            rt,
            nodes: Vec::new(),
            tools,
            bundle,
            client_classes,
            cluster_id: None,
            log: Vec::new(),
        };
        c.configure(&server_log, lag_ms, &layout)?;
        c.start_all()?;
        Ok(c)
    }

    fn note(&mut self, s: String) {
        self.log.push(s);
    }

    fn addr(&self, name: &str) -> String {
        self.topo.host(name).map(|h| h.addr.clone()).unwrap_or_default()
    }

    /// `HOST:9092` of every broker.
    pub fn bootstrap(&self) -> String {
        self.brokers()
            .iter()
            .map(|id| format!("{}:{BROKER_PORT}", self.addr(&format!("b{id}"))))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn brokers(&self) -> Vec<i32> {
        self.nodes.iter().filter(|n| n.node.role == Role::Broker).map(|n| n.node.id).collect()
    }

    /// Every node that reads an observer.ids (brokers, KRaft controllers).
    pub fn kafka_nodes(&self) -> Vec<&HostNode> {
        self.nodes.iter().filter(|n| n.node.role != Role::ZooKeeper).collect()
    }

    pub fn node(&self, id: i32) -> Result<&HostNode> {
        self.nodes
            .iter()
            .find(|n| n.node.id == id && n.node.role != Role::ZooKeeper)
            .ok_or_else(|| Error::Usage(format!("no node {id}")))
    }

    fn node_mut(&mut self, id: i32) -> Result<&mut HostNode> {
        self.nodes
            .iter_mut()
            .find(|n| n.node.id == id && n.node.role != Role::ZooKeeper)
            .ok_or_else(|| Error::Usage(format!("no node {id}")))
    }

    pub fn observer_file(n: &HostNode) -> PathBuf {
        n.host.dir.join("observer.ids")
    }

    /// The nodes file of this cluster for `okp observers` and the Ansible inventory's hosts:
    /// each node by its host name, its observer.ids path on that host.
    pub fn nodes_yaml(&self) -> String {
        let mut s =
            String::from("# okp's test hosts: every node's observer.ids, reached over ssh as root@<host>.\nnodes:\n");
        for n in self.kafka_nodes() {
            let role = if n.node.role == Role::Controller { "controller" } else { "broker" };
            s.push_str(&format!(
                "  - {{id: {}, role: {role}, host: {}, path: {}}}\n",
                n.node.id,
                n.host.name,
                HostCluster::observer_file(n).display()
            ));
        }
        s
    }

    fn configure(&mut self, server_log: &str, lag_ms: u64, layout: &Layout) -> Result<()> {
        let server_class = self.tools.class(Tool::Server)?.to_string();
        // The servers' logging flag is each home's (bin/okp-server-env); ZooKeeper's is added below.
        let jvm: Vec<String> = crate::cluster::SERVER_HEAP_GC
            .iter()
            .map(|s| s.to_string())
            .chain(["-Djava.awt.headless=true".to_string()])
            .collect();
        let voters = crate::cluster::CONTROLLERS
            .iter()
            .map(|id| format!("{id}@{}:{CONTROLLER_PORT}", self.addr(&format!("c{id}"))))
            .collect::<Vec<_>>()
            .join(",");
        let hosts: Vec<Host> = self.topo.hosts.iter().filter(|h| !h.name.starts_with("client")).cloned().collect();
        for h in hosts {
            let data = h.dir.join("data");
            std::fs::create_dir_all(&data).map_err(|e| Error::io(format!("cannot create {}", data.display()), e))?;
            let home = h.dir.join("kafka");
            homes::lay_out(&self.rt, &home)?;
            let (role, id, config, class) = if h.name == "zk" {
                let cfg = format!(
                    "dataDir={}\nclientPort={ZK_PORT}\nclientPortAddress={}\ntickTime=500\nmaxClientCnxns=0\nadmin.enableServer=false\n",
                    data.display(),
                    h.addr
                );
                (Role::ZooKeeper, 0, ("zoo.cfg", cfg), self.tools.class(Tool::ZooKeeper)?.to_string())
            } else if let Some(id) = h.name.strip_prefix('c').and_then(|i| i.parse::<i32>().ok()) {
                let props = format!(
                    "process.roles=controller\nnode.id={id}\ncontroller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT\nlisteners=CONTROLLER://{}:{CONTROLLER_PORT}\nlog.dirs={}\nnum.io.threads=2\nnum.network.threads=2\nbackground.threads=2\nbroker.session.timeout.ms=4000\nbroker.heartbeat.interval.ms=1000\n",
                    h.addr,
                    data.display()
                );
                (Role::Controller, id, ("server.properties", props), server_class.clone())
            } else {
                let id: i32 =
                    h.name.trim_start_matches('b').parse().map_err(|_| Error::Usage(format!("host {}", h.name)))?;
                let mut props = match self.mode {
                    Mode::Zk => format!(
                        "broker.id={id}\nzookeeper.connect={}:{ZK_PORT}\nzookeeper.session.timeout.ms=4000\n",
                        self.addr("zk")
                    ),
                    Mode::Kraft => format!(
                        "process.roles=broker\nnode.id={id}\ncontroller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\ninter.broker.listener.name=PLAINTEXT\nbroker.session.timeout.ms=4000\nbroker.heartbeat.interval.ms=1000\n"
                    ),
                };
                props.push_str(&format!(
                    "listeners=PLAINTEXT://{a}:{BROKER_PORT}\nadvertised.listeners=PLAINTEXT://{a}:{BROKER_PORT}\nlog.dirs={}\n",
                    data.display(),
                    a = h.addr
                ));
                if let Some(r) = &self.topo.regions {
                    // KIP-392: a consumer of the region's rack may read from a replica there.
                    props.push_str(&format!(
                        "broker.rack={}\nreplica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector\n",
                        r.names[r.region_of(&h.name)]
                    ));
                }
                props.push_str(&format!(
                    "num.partitions=1\ndefault.replication.factor=3\noffsets.topic.replication.factor=3\noffsets.topic.num.partitions=4\ntransaction.state.log.replication.factor=3\ntransaction.state.log.min.isr=2\ntransaction.state.log.num.partitions=4\ngroup.initial.rebalance.delay.ms=0\nauto.leader.rebalance.enable=false\nreplica.lag.time.max.ms={lag_ms}\nreplica.fetch.wait.max.ms=200\nnum.network.threads=2\nnum.io.threads=2\nnum.replica.fetchers=1\nbackground.threads=2\nlog.cleaner.enable=false\ncontrolled.shutdown.enable=true\n"
                ));
                (Role::Broker, id, ("server.properties", props), server_class.clone())
            };
            let cfg = h.dir.join(config.0);
            crate::fsx::write_atomic(&cfg, config.1.as_bytes())?;
            let mut argv: Vec<String> = Vec::new();
            if role == Role::ZooKeeper {
                argv.push(self.rt.java.display().to_string());
                argv.extend(jvm.iter().cloned());
                argv.push(server_log.to_string());
            } else {
                // A node runs under its service from the home `current` points to (A's now), the
                // home's own Java, classpath and logging (bin/okp-server-env).
                write_server_env(&self.rt, &home)?;
                let link = h.dir.join("current");
                std::os::unix::fs::symlink(&home, &link)
                    .map_err(|e| Error::io(format!("cannot link {} to {}", link.display(), home.display()), e))?;
                let service = h.dir.join("bin/okp-service");
                let restart = h.dir.join("bin/okp-restart");
                for (p, text) in [(&service, SERVICE), (&restart, RESTART)] {
                    crate::fsx::write_executable(p, text.as_bytes())?;
                }
                argv.push(service.display().to_string());
                argv.extend(jvm.iter().cloned());
            }
            argv.push(class);
            argv.push(cfg.display().to_string());
            let argv = Topology::on_host(&h, &argv);
            let env = vec![("KAFKA_OBSERVER_IDS_FILE".to_string(), h.dir.join("observer.ids").display().to_string())];
            std::fs::write(h.dir.join("observer.ids"), &layout.observer_ids)
                .map_err(|e| Error::io("cannot write observer.ids", e))?;
            let port = match role {
                Role::ZooKeeper => ZK_PORT,
                Role::Controller => CONTROLLER_PORT,
                Role::Broker => BROKER_PORT,
            };
            let node = Node::new(&h.name, role, id, port, h.dir.clone(), argv, env);
            // HOSTS: the quorum runs the bundle from the start; brokers get it from the roll.
            if (role == Role::Controller && layout.patched_controllers)
                || (role == Role::Broker && layout.patched_brokers)
            {
                self.install(&home)?;
            }
            self.nodes.push(HostNode { host: h, node, home });
        }
        Ok(())
    }

    /// `okp install` of the run's bundle into `home`, verified against its key.
    fn install(&mut self, home: &Path) -> Result<()> {
        let h = home.display().to_string();
        let bundle =
            self.bundle.as_ref().ok_or_else(|| Error::Usage("this host cluster has no bundle to install".into()))?;
        let args = bundle.install_args(home);
        let ran = homes::okp(&bundle.okp, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
        self.note(format!("$ {}\n  exit {}\n  {}", ran.command, ran.rc, ran.stdout.trim().replace('\n', "\n  ")));
        if !ran.ok() {
            return Err(Error::External(format!("okp install into {h} failed (rc {}): {}", ran.rc, ran.stderr.trim())));
        }
        Ok(())
    }

    fn start_all(&mut self) -> Result<()> {
        let ip = PathBuf::from("ip");
        if self.mode == Mode::Kraft {
            let cluster_id = cluster_id_of(&format!("okp-hosts-{}-{}", self.topo.run, std::process::id()))?;
            for i in 0..self.nodes.len() {
                let cfg = self.nodes[i].host.dir.join("server.properties");
                format_storage(&mut self.tools, &cluster_id, &cfg, &self.nodes[i].host.name)?;
            }
            self.cluster_id = Some(cluster_id);
        }
        let order: Vec<usize> = (0..self.nodes.len()).collect();
        for i in order.iter().copied() {
            let cp = homes::classpath(&self.rt, &self.nodes[i].home);
            self.nodes[i].node.start(&ip, &cp)?;
            if self.nodes[i].node.role == Role::ZooKeeper {
                // ZooKeeper logs at WARN: it is ready when it listens on its host's address.
                let t0 = Instant::now();
                while !super::netns::listening(&self.nodes[i].host.ns, ZK_PORT) {
                    if t0.elapsed() > Duration::from_secs(60) || !self.nodes[i].node.is_running() {
                        return Err(Error::External(format!(
                            "ZooKeeper on {} did not listen on {}:{ZK_PORT} within 60 s; last lines:\n{}",
                            self.nodes[i].host.name,
                            self.nodes[i].host.addr,
                            self.nodes[i].node.tail(20)
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        let servers: Vec<usize> = order.into_iter().filter(|i| self.nodes[*i].node.role != Role::ZooKeeper).collect();
        for i in servers {
            let marker = self.ready_marker(self.nodes[i].node.role);
            let secs = self.nodes[i].node.wait_ready(marker, Duration::from_secs(120))?;
            let line = format!(
                "{} ready on {} in {:.1} s",
                self.nodes[i].host.name,
                self.nodes[i].host.addr,
                secs.as_secs_f64()
            );
            self.note(line);
        }
        Ok(())
    }

    fn ready_marker(&self, role: Role) -> &'static str {
        match (role, self.mode) {
            (Role::ZooKeeper, _) => "binding to port",
            (_, Mode::Zk) => "] started (kafka.server.KafkaServer)",
            (_, Mode::Kraft) => "Kafka Server started",
        }
    }

    /// Creates `topic` with `assignment` (`1:2:3:4`) and configs, from the operator host.
    pub fn create_topic(&mut self, topic: &str, assignment: &str, configs: &[&str]) -> Result<()> {
        let mut a: Vec<String> =
            ["--bootstrap-server", &self.bootstrap(), "--create", "--topic", topic, "--replica-assignment", assignment]
                .iter()
                .map(|s| s.to_string())
                .collect();
        for c in configs {
            a.push("--config".into());
            a.push(c.to_string());
        }
        let out = self.tools.run(Tool::Topics, &a, None, Duration::from_secs(60))?;
        if !out.ok() {
            return Err(Error::External(format!("creating {topic} failed (rc {}): {}", out.rc, out.stderr.trim())));
        }
        Ok(())
    }

    /// Partition 0 of `topic` as the first broker that answers has it (okp's probe).
    pub fn state(&self, topic: &str) -> Option<crate::wire::PartitionState> {
        state_at(&self.bootstrap(), topic)
    }

    /// Waits up to `timeout` until `pred` holds for `topic`: the state and the seconds it took.
    pub fn wait_state(
        &self,
        topic: &str,
        timeout: Duration,
        pred: impl Fn(&crate::wire::PartitionState) -> bool,
    ) -> (Option<crate::wire::PartitionState>, f64) {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.state(topic).filter(|s| pred(s)) {
                return (Some(s), t0.elapsed().as_secs_f64());
            }
            if t0.elapsed() > timeout || crate::cluster::node::interrupted() {
                return (None, t0.elapsed().as_secs_f64());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A continuous acks=all producer of okp's client on the operator host.
    pub fn producer(&self, topic: &str, name: &str, interval_ms: u64) -> Result<crate::cluster::client::Client> {
        let cp = format!("{}:{}", self.rt.classpath_string(), self.client_classes.display());
        let args: Vec<String> = vec![
            "produce".into(),
            self.bootstrap(),
            topic.into(),
            name.into(),
            "false".into(),
            interval_ms.to_string(),
        ];
        crate::cluster::client::Client::spawn(
            name,
            &self.rt.java,
            &self.tools.jvm,
            &cp,
            &args,
            &self.topo.dir.join(format!("client-{name}.err")),
            Instant::now(),
        )
    }

    /// Every value of `topic` partition 0 from its start (okp's reader, no group).
    pub fn read_all(&self, topic: &str, max: usize) -> Result<Vec<String>> {
        let cp = format!("{}:{}", self.rt.classpath_string(), self.client_classes.display());
        let args: Vec<String> = vec!["read".into(), self.bootstrap(), topic.into(), max.to_string(), "5000".into()];
        let c = crate::cluster::client::Client::spawn(
            "read",
            &self.rt.java,
            &self.tools.jvm,
            &cp,
            &args,
            &self.topo.dir.join("client-read.err"),
            Instant::now(),
        )?;
        let (lines, _) = c.stop(Duration::from_secs(120));
        Ok(lines
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.text.split('\t').collect();
                (f.first() == Some(&"read") && f.len() >= 5).then(|| f[4].to_string())
            })
            .collect())
    }

    /// Stops node `id` and its service (SIGTERM to its process group).
    pub fn stop(&mut self, id: i32) -> Result<()> {
        self.node_mut(id)?.node.stop(Duration::from_secs(60));
        Ok(())
    }

    /// kill -9 of node `id` and its service (no shutdown: a host lost).
    pub fn kill9(&mut self, id: i32) -> Result<()> {
        self.node_mut(id)?.node.kill9();
        Ok(())
    }

    /// Starts node `id` again and waits until it is ready.
    pub fn start(&mut self, id: i32) -> Result<f64> {
        let marker = self.ready_marker(self.node(id)?.node.role);
        let cp = homes::classpath(&self.rt, &self.node(id)?.home);
        let n = self.node_mut(id)?;
        n.node.start(Path::new("ip"), &cp)?;
        Ok(n.node.wait_ready(marker, Duration::from_secs(120))?.as_secs_f64())
    }

    /// The link node `n` runs Kafka from (its home on A, or B's after an upgrade play).
    pub fn current(n: &HostNode) -> PathBuf {
        n.host.dir.join("current")
    }

    /// What Ansible runs on `n`'s host to restart its node.
    pub fn restart_command(n: &HostNode) -> PathBuf {
        n.host.dir.join("bin/okp-restart")
    }

    /// What node `n` runs now: the Kafka home its JVM's classpath comes from (read from the
    /// process's environment) and the release its log last named (`Kafka version: X`).
    pub fn running(n: &HostNode) -> (Option<PathBuf>, Option<String>) {
        let pid = crate::fsx::read::read_optional_text(&n.host.dir.join("kafka.pid"), crate::fsx::read::MAX_SIDECAR)
            .ok()
            .flatten()
            .map(|p| p.trim().to_string());
        let home = pid
            .and_then(|pid| {
                crate::fsx::read::read_regular(Path::new(&format!("/proc/{pid}/environ")), crate::fsx::read::MAX_SOURCE)
                    .ok()
            })
            .and_then(|env| {
                env.split(|b| *b == 0).find_map(|kv| {
                    let kv = String::from_utf8_lossy(kv);
                    let first = kv.strip_prefix("CLASSPATH=")?.split(':').next()?.to_string();
                    // `HOME/libs/JAR`: the home is two levels up.
                    Path::new(&first).parent()?.parent().map(Path::to_path_buf)
                })
            });
        let version = n.node.whole_log().lines().rev().find_map(|l| {
            l.split_once("Kafka version: ").map(|(_, v)| v.split_whitespace().next().unwrap_or("").to_string())
        });
        (home, version)
    }

    /// The lines of every node's log that name observer.ids (evidence of what each node read).
    pub fn observer_log_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for n in &self.nodes {
            for l in n.node.whole_log().lines() {
                if l.contains("OBSERVER AUDIT") || l.contains("Observer broker ids changed") {
                    out.push(format!("{}: {l}", n.host.name));
                }
            }
        }
        out
    }

    /// Every node stopped, then the hosts removed.
    pub fn down(&mut self) {
        for n in &mut self.nodes {
            n.node.kill9();
        }
        self.topo.teardown();
    }
}

impl Drop for HostCluster {
    fn drop(&mut self) {
        self.down();
    }
}
