//! Starting and stopping the cluster and its nodes: the first start (KRaft storage formatted),
//! readiness, restart, SIGTERM, kill -9, SIGSTOP/SIGCONT, MULTI's extra broker, each node's
//! Kafka home with the bundle installed, and the stop of everything in `down` and Drop.
//!
//! Not here: one process's start and signals (`node`), the node's files (`config`).

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use super::cds::ServerCds;
use super::node::Role;
use super::tools::Tool;
use super::{args, homes, server_cds, Cluster};
use crate::error::{Error, Result};
use crate::model::Mode;

impl Cluster {
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
            let id_str = self.cluster_id.clone().ok_or_else(|| Error::Harness("the KRaft cluster has no id".into()))?;
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

    /// The line node `id` logs once it is ready: a KRaft controller or broker (a broker rolled
    /// to KRaft by MIGRATE among them) says `Kafka Server started`, a ZooKeeper-mode broker
    /// `[KafkaServer id=N] started`.
    pub fn ready_marker(&self, id: i32) -> &'static str {
        let n = self.node(id);
        let kraft = self.mode == Mode::Kraft || n.role == Role::Controller || self.runs_kraft(id);
        match (n.role, kraft) {
            (Role::ZooKeeper, _) => "binding to port",
            (_, false) => "] started (kafka.server.KafkaServer)",
            (_, true) => "Kafka Server started",
        }
    }

    pub(super) fn start_all(&mut self) -> Result<()> {
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
                super::node::check_interrupt()?;
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

    pub(super) fn format_storage(&mut self) -> Result<()> {
        // One in 64 random ids starts with '-', which kafka-storage's argument parser takes for
        // an option ("--cluster-id/-t: expected one argument"); Kafka's own Uuid.randomUuid()
        // draws again in that case, and so does okp.
        let id = loop {
            let mut raw = [0u8; 16];
            crate::hash::random_bytes(&mut raw)?;
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
        // A node on the next release (UPGRADE): B's classpath, no archive (dumped from A's jars).
        let on_next = self.next.as_ref().and_then(|n| n.classpath_of(id));
        let (cp, flags) = match (on_next, &self.node(id).home) {
            (Some(cp), _) => (cp, Vec::new()),
            (None, Some(home)) => (homes::classpath(&self.rt, home), self.server_cds_flags(Some(id))),
            (None, None) => (self.rt.server_classpath_string(), self.server_cds_flags(Some(id))),
        };
        let java = self.rt.java.clone();
        let node = self.node_mut(id);
        node.jvm_extra = flags;
        node.start(&java, &cp)
    }

    /// A Kafka home per node under the run directory, and the bundle installed into each.
    pub(super) fn lay_out_homes(&mut self) -> Result<()> {
        for id in self.kafka_nodes() {
            self.lay_out_home(id)?;
        }
        Ok(())
    }

    /// Node `id`'s Kafka home under the run directory, with the bundle installed when there is one.
    pub(super) fn lay_out_home(&mut self, id: i32) -> Result<()> {
        self.lay_out_home_with(id, true)
    }

    /// Node `id`'s Kafka home with the release's own jars only (MIGRATE's negative control).
    pub(super) fn lay_out_home_without_bundle(&mut self, id: i32) -> Result<()> {
        self.lay_out_home_with(id, false)
    }

    fn lay_out_home_with(&mut self, id: i32, install: bool) -> Result<()> {
        let home = self.run_dir.join("homes").join(&self.node(id).name);
        let copied = homes::lay_out(&self.rt, &home)?;
        if let Some(first) = copied.first() {
            self.journal.note(&format!(
                "{}: {} jar(s) copied, not linked, from the Maven cache (another file system), e.g. {first}: this node's JVM cannot map the servers' class-data-sharing archive",
                home.display(),
                copied.len()
            ));
        }
        if self.bundle.is_some() && install {
            self.okp_on_home("install", &home)?.installed(&home)?;
        }
        self.node_mut(id).home = Some(home);
        Ok(())
    }

    /// `okp install` (verifying the bundle against its key) or `okp rollback` on `home`, journaled.
    pub fn okp_on_home(&mut self, action: &str, home: &Path) -> Result<homes::Ran> {
        let b = self.bundle.clone().ok_or_else(|| Error::Harness("no bundle: an upstream run installs none".into()))?;
        let args: Vec<String> = match action {
            "install" => b.install_args(home),
            _ => vec!["rollback".into(), "--kafka-home".into(), home.display().to_string()],
        };
        let ran = homes::okp(&b.okp, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
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
        let marker = self.ready_marker(id);
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

/// A KRaft cluster id from 16 random bytes (URL-safe base64, as Kafka's `Uuid`), or None for
/// one that starts with '-' and would be read as an option on the storage tool's command line.
pub(crate) fn cluster_id(raw: [u8; 16]) -> Result<Option<String>> {
    let id = <ct_codecs::Base64UrlSafeNoPadding as ct_codecs::Encoder>::encode_to_string(raw)
        .map_err(|e| Error::Harness(format!("cluster id: {e}")))?;
    Ok((!id.starts_with('-')).then_some(id))
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
}
