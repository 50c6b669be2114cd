//! The files okp writes for each node: its directory, server.properties (and the scenarios'
//! overrides), its command line, and observer.ids.
//!
//! Not here: starting the node (`lifecycle`).

use std::path::Path;
use std::time::{Duration, Instant};

use super::node::{Node, Role};
use super::tools::Tool;
use super::{rack_of, Cluster, BROKERS, CONTROLLERS, RACK_SELECTOR};
use crate::error::{Error, Result};
use crate::model::Mode;

impl Cluster {
    pub(super) fn configure(&mut self) -> Result<()> {
        let server_class = self.tools.class(Tool::Server)?.to_string();
        let voters = self.voters();
        let mut nodes = Vec::new();
        if self.mode == Mode::Zk {
            let dir = self.run_dir.join("zk");
            crate::fsx::create_dir(&dir.join("data"))?;
            let cfg = format!(
                "dataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\ntickTime=500\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n",
                dir.join("data").display(),
                self.base_port
            );
            crate::fsx::write_atomic(&dir.join("zoo.cfg"), cfg.as_bytes())?;
            let zk_class = self.tools.class(Tool::ZooKeeper)?.to_string();
            let argv = self.server_argv(&zk_class, &dir.join("zoo.cfg"));
            nodes.push(Node::new("zk", Role::ZooKeeper, 0, self.base_port, dir, argv, vec![]));
        } else {
            for id in CONTROLLERS {
                let node = self.controller_node(id, &server_class, &voters)?;
                nodes.push(node);
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

    /// The node of KRaft controller `id`: its directory, server.properties and command line.
    pub(super) fn controller_node(&self, id: i32, server_class: &str, voters: &str) -> Result<Node> {
        let dir = self.run_dir.join(format!("c{id}"));
        crate::fsx::create_dir(&dir.join("data"))?;
        let port = self.controller_port(id);
        let props = format!(
            "process.roles=controller\nnode.id={id}\ncontroller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT\nlisteners=CONTROLLER://127.0.0.1:{port}\nlog.dirs={}\nnum.io.threads=2\nnum.network.threads=2\nbackground.threads=2\nbroker.session.timeout.ms={}\nbroker.heartbeat.interval.ms=1000\n",
            dir.join("data").display(),
            self.timers.session_ms
        );
        crate::fsx::write_atomic(&dir.join("server.properties"), props.as_bytes())?;
        let mut argv = self.server_argv(server_class, &dir.join("server.properties"));
        argv.splice(0..0, self.jmx_flags(id));
        let env = vec![("KAFKA_OBSERVER_IDS_FILE".to_string(), dir.join("observer.ids").display().to_string())];
        Ok(Node::new(&format!("controller-{id}"), Role::Controller, id, port, dir, argv, env))
    }

    /// The node of broker `id`: its directory, server.properties and command line.
    pub(super) fn broker_node(&self, id: i32, server_class: &str, voters: &str) -> Result<Node> {
        let dir = self.run_dir.join(format!("b{id}"));
        crate::fsx::create_dir(&dir.join("data"))?;
        let props = self.broker_props(id, self.mode, voters);
        crate::fsx::write_atomic(&dir.join("server.properties"), props.as_bytes())?;
        let port = self.broker_port(id);
        let mut argv = self.server_argv(server_class, &dir.join("server.properties"));
        // JMX on loopback only (MET); the extra broker of MULTI has no port of its own for it.
        if BROKERS.contains(&id) {
            argv.splice(0..0, self.jmx_flags(id));
        }
        let env = vec![("KAFKA_OBSERVER_IDS_FILE".to_string(), dir.join("observer.ids").display().to_string())];
        Ok(Node::new(&format!("broker-{id}"), Role::Broker, id, port, dir, argv, env))
    }

    /// Broker `id`'s server.properties in `mode` (a migrated broker is written again in KRaft mode).
    pub(super) fn broker_props(&self, id: i32, mode: Mode, voters: &str) -> String {
        let dir = self.run_dir.join(format!("b{id}"));
        let port = self.broker_port(id);
        let mut props = String::new();
        if mode == Mode::Zk {
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
        props
    }

    pub(super) fn server_argv(&self, class: &str, config: &Path) -> Vec<String> {
        let mut a = self.server_jvm.clone();
        a.push(class.to_string());
        a.push(config.display().to_string());
        a
    }

    /// Sets the extra lines appended to node `id`'s server.properties (empty:
    /// none, the node's own configuration), to take effect at its next start.
    /// The block is marked, so a later call replaces it rather than adding to it.
    pub fn set_server_overrides(&mut self, id: i32, lines: &[&str]) -> Result<()> {
        const MARK: &str = "# okp scenario overrides (until the scenario restores this node)\n";
        let path = self.node(id).dir.join("server.properties");
        let text = crate::fsx::read::text(&path, crate::fsx::read::MAX_TEXT, "server.properties")?;
        let own = text.split_once(MARK).map_or(text.as_str(), |(own, _)| own).to_string();
        let new = if lines.is_empty() { own } else { format!("{own}{MARK}{}\n", lines.join("\n")) };
        crate::fsx::write_atomic(&path, new.as_bytes())?;
        let name = self.node(id).name.clone();
        self.journal.note(&format!("{name} server.properties overrides := {lines:?}"));
        Ok(())
    }

    /// Writes observer.ids on the given nodes (temp file + rename, as an operator's tool should).
    pub fn set_observers(&mut self, ids: &[i32], content: &str) -> Result<()> {
        for id in ids {
            let path = self.node(*id).observer_file();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)
                    .map_err(|e| Error::io(format!("cannot remove {}", path.display()), e))?;
            }
            crate::fsx::write_atomic(&path, content.as_bytes())?;
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
}
