//! The ZooKeeper → KRaft migration of a running ZooKeeper-mode cluster (KIP-866, 3.7–3.9), the
//! MIGRATE scenario's moves: KRaft controllers added in migration mode (formatted with the
//! ZooKeeper cluster's id), brokers rolled into migration mode (dual-write once all have
//! registered), brokers rolled to KRaft, the controllers restarted without ZooKeeper (the
//! migration finalised); and the phases read off the controllers' own log lines.
//!
//! The jar set is the KRaft one throughout (core with the ZooKeeper-controller hooks, and
//! metadata), installed in every node's home, controllers included: what makes the observer
//! hold in every phase. `--upstream-controllers` gives the controllers the release's own jars
//! (the negative control).
//!
//! Not here: the order and the checks (scenarios/migrate), the configuration of a node before
//! the migration (`config`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::node::Role;
use super::tools::Tool;
use super::{args, Cluster, CONTROLLERS};
use crate::error::{Error, Result};
use crate::model::Mode;

/// Where a migration stands on this cluster.
#[derive(Default)]
pub struct Migration {
    /// Brokers rolled to KRaft mode.
    kraft_brokers: BTreeSet<i32>,
    /// The controllers start from the release's own jars (the negative control).
    pub upstream_controllers: bool,
}

/// The lines a controller in migration mode appends to its server.properties.
fn controller_migration_lines(zk: u16) -> Vec<String> {
    vec![
        "zookeeper.metadata.migration.enable=true".into(),
        format!("zookeeper.connect=127.0.0.1:{zk}"),
        // The brokers' inter-broker listener: the controller sends them LeaderAndIsr on it.
        "inter.broker.listener.name=PLAINTEXT".into(),
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT".into(),
    ]
}

/// The lines a ZooKeeper-mode broker in migration mode appends to its server.properties.
fn broker_migration_lines(voters: &str) -> Vec<String> {
    vec![
        "zookeeper.metadata.migration.enable=true".into(),
        format!("controller.quorum.voters={voters}"),
        "controller.listener.names=CONTROLLER".into(),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
    ]
}

impl Cluster {
    /// Whether broker `id` was rolled to KRaft mode by a migration.
    pub fn runs_kraft(&self, id: i32) -> bool {
        self.migration.as_ref().is_some_and(|m| m.kraft_brokers.contains(&id))
    }

    /// The ZooKeeper cluster's id, as broker 1 recorded it in its meta.properties.
    pub fn zk_cluster_id(&self) -> Result<String> {
        let path = self.node(1).dir.join("data").join("meta.properties");
        let text = crate::fsx::read::text(&path, crate::fsx::read::MAX_TEXT, "meta.properties")?;
        text.lines()
            .find_map(|l| l.strip_prefix("cluster.id=").map(|v| v.trim().to_string()))
            .filter(|v| !v.is_empty())
            .ok_or_else(|| Error::External(format!("{}: no cluster.id", path.display())))
    }

    /// Adds KRaft controllers 101–103 in migration mode to this ZooKeeper-mode cluster, each with
    /// observer.ids `observers` and its own Kafka home (the bundle installed, unless the
    /// controllers are the negative control), formatted with the ZooKeeper cluster's id, started;
    /// returns once each logged that it started.
    pub fn add_migration_controllers(&mut self, observers: &str, upstream: bool) -> Result<()> {
        if self.mode != Mode::Zk || !self.controllers().is_empty() {
            return Err(Error::Harness("a migration starts from a ZooKeeper-mode cluster without controllers".into()));
        }
        let cid = self.zk_cluster_id()?;
        self.cluster_id = Some(cid.clone());
        self.migration = Some(Migration { upstream_controllers: upstream, ..Migration::default() });
        let server_class = self.tools.class(Tool::Server)?.to_string();
        let voters = self.voters();
        let lines = controller_migration_lines(self.base_port);
        for id in CONTROLLERS {
            let node = self.controller_node(id, &server_class, &voters)?;
            self.journal.note(&format!("adding {} port {} dir {}", node.name, node.port, node.dir.display()));
            self.nodes.push(node);
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            self.set_server_overrides(id, &refs)?;
            self.set_observers(&[id], observers)?;
            if self.nodes.iter().any(|n| n.home.is_some() && n.role == Role::Broker) {
                if upstream {
                    self.lay_out_home_without_bundle(id)?;
                } else {
                    self.lay_out_home(id)?;
                }
            }
            let cfg = self.node(id).dir.join("server.properties").display().to_string();
            let out = self.tools.run(
                Tool::Storage,
                &args(&["format", "-t", &cid, "-c", &cfg]),
                None,
                Duration::from_secs(120),
            )?;
            self.journal.tool(&format!("format {}", self.node(id).name), &out);
            if !out.ok() {
                return Err(Error::External(format!("formatting controller {id} failed (rc {})", out.rc)));
            }
        }
        for id in CONTROLLERS {
            self.start_node(id)?;
        }
        for id in CONTROLLERS {
            self.wait_node_ready(id)?;
        }
        Ok(())
    }

    /// Stopped broker `id` into migration mode (its ZooKeeper configuration kept, the quorum added).
    pub fn broker_to_migration_mode(&mut self, id: i32) -> Result<()> {
        let lines = broker_migration_lines(&self.voters());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        self.set_server_overrides(id, &refs)
    }

    /// Stopped broker `id` back to plain ZooKeeper mode (a rollback): its own configuration alone.
    pub fn broker_to_zk_mode(&mut self, id: i32) -> Result<()> {
        self.set_server_overrides(id, &[])
    }

    /// Stopped broker `id` to KRaft mode: its server.properties written again as a KRaft broker's
    /// (node.id = its broker.id, no ZooKeeper), its log directories as they are.
    pub fn broker_to_kraft(&mut self, id: i32) -> Result<()> {
        let props = self.broker_props(id, Mode::Kraft, &self.voters());
        crate::fsx::write_atomic(&self.node(id).dir.join("server.properties"), props.as_bytes())?;
        if let Some(m) = self.migration.as_mut() {
            m.kraft_brokers.insert(id);
        }
        let name = self.node(id).name.clone();
        self.journal.note(&format!(
            "{name} server.properties written again for KRaft mode (process.roles=broker, node.id={id})"
        ));
        Ok(())
    }

    /// Stopped KRaft-mode broker `id` back to a ZooKeeper-mode broker in migration mode (the
    /// first roll of a rollback from dual-write): its ZooKeeper configuration again, the
    /// migration lines kept.
    pub fn broker_back_to_migration_mode(&mut self, id: i32) -> Result<()> {
        let props = self.broker_props(id, Mode::Zk, &self.voters());
        crate::fsx::write_atomic(&self.node(id).dir.join("server.properties"), props.as_bytes())?;
        if let Some(m) = self.migration.as_mut() {
            m.kraft_brokers.remove(&id);
        }
        self.broker_to_migration_mode(id)
    }

    /// Stops the KRaft controllers and takes them out of the cluster (a rollback to ZooKeeper).
    pub fn remove_controllers(&mut self) {
        for id in self.controllers() {
            self.stop(id);
        }
        self.nodes.retain(|n| n.role != Role::Controller);
        self.cluster_id = None;
        self.journal.note("the KRaft controllers are stopped and out of the cluster");
    }

    /// Stopped controller `id` without ZooKeeper: the migration lines gone; its next start
    /// finalises the migration.
    pub fn controller_without_zk(&mut self, id: i32) -> Result<()> {
        self.set_server_overrides(id, &[])
    }

    /// Once every broker runs KRaft and every controller was finalised: the cluster is a KRaft one.
    pub fn migrated(&mut self) {
        self.mode = Mode::Kraft;
        self.journal.note("the cluster is a KRaft cluster from now on");
    }

    /// Waits until one of `ids` logged a line containing `needle` since its last start (any
    /// start when `since_start` is false): which node and after how long.
    pub fn wait_log(
        &mut self,
        ids: &[i32],
        needle: &str,
        since_start: bool,
        timeout: Duration,
    ) -> Result<Option<(i32, f64)>> {
        let t0 = Instant::now();
        loop {
            super::node::check_interrupt()?;
            for &id in ids {
                let n = self.node(id);
                let text = if since_start { n.log_since_start() } else { n.whole_log() };
                if text.to_ascii_lowercase().contains(&needle.to_ascii_lowercase()) {
                    let secs = t0.elapsed().as_secs_f64();
                    let name = n.name.clone();
                    self.journal.note(&format!("{name} logged `{needle}` ({secs:.1} s)"));
                    return Ok(Some((id, secs)));
                }
            }
            if t0.elapsed() > timeout {
                self.journal.note(&format!("no `{needle}` from {ids:?} within {:.0} s", timeout.as_secs_f64()));
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The migration driver's state changes the controllers logged (`<id> transitioning from A to
    /// B state`), in each controller's order: (controller, from, to).
    /// Each line read is written to the journal as the controller logged it (`controller-N| …`),
    /// so the records keep the real output the parse is tested against.
    pub fn migration_transitions(&mut self) -> Vec<(i32, String, String)> {
        let mut out = Vec::new();
        let mut raw = Vec::new();
        for id in self.controllers() {
            for l in self.node(id).whole_log().lines() {
                if let Some((from, to)) = transition(l) {
                    raw.push(format!("controller-{id}| {l}"));
                    out.push((id, from, to));
                }
            }
        }
        self.journal.note(&format!(
            "the migration driver's state changes, as the controllers logged them:\n{}",
            raw.join("\n")
        ));
        out
    }

    /// Stops the ZooKeeper ensemble (after the finalisation nothing needs it).
    pub fn stop_zookeeper(&mut self) {
        if let Some(zk) = self.nodes.iter_mut().find(|n| n.role == Role::ZooKeeper) {
            zk.stop(Duration::from_secs(10));
        }
        self.journal.note("stopped ZooKeeper (SIGTERM)");
    }
}

/// `(A, B)` of a line `… transitioning from A to B state`.
pub fn transition(line: &str) -> Option<(String, String)> {
    let at = line.find("transitioning from ")? + "transitioning from ".len();
    let rest = &line[at..];
    let (from, rest) = rest.split_once(" to ")?;
    let to = rest.strip_suffix(" state").or_else(|| rest.split_once(" state").map(|(t, _)| t))?;
    let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    (ok(from) && ok(to)).then(|| (from.to_string(), to.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as 3.9.2's KRaft controller logged them in migration mode.
    #[test]
    fn the_migration_driver_state_changes_are_read_from_the_controller_log() {
        let l = "[2026-12-05 13:41:50,123] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)";
        assert_eq!(transition(l), Some(("KRAFT_CONTROLLER_TO_BROKER_COMM".into(), "DUAL_WRITE".into())));
        let w = "INFO [KRaftMigrationDriver id=101] 101 transitioning from WAIT_FOR_CONTROLLER_QUORUM to WAIT_FOR_BROKERS state";
        assert_eq!(transition(w), Some(("WAIT_FOR_CONTROLLER_QUORUM".into(), "WAIT_FOR_BROKERS".into())));
        assert_eq!(transition("Transitioned migration state from ZkMigrationLeadershipState{...}"), None);
        assert_eq!(transition("transitioning from a to b state"), None);
    }

    /// Against real controller output: the lines MIGRATE's journals keep (`controller-N| …`, as
    /// the controllers of 3.7–3.9 logged them) parse to the transitions its run.json records, and
    /// they go the way the operations guide says, to DUAL_WRITE.
    #[test]
    fn the_transitions_parse_from_the_controllers_own_lines_in_the_records() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence/upgrade");
        let mut checked = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let Ok(journal) = std::fs::read_to_string(e.path().join("MIGRATE.txt")) else { continue };
            let parsed: Vec<String> = journal
                .lines()
                .filter_map(|l| {
                    let (node, line) = l.split_once("| ")?;
                    let id = node.strip_prefix("controller-")?;
                    transition(line).map(|(a, b)| format!("{id}: {a} → {b}"))
                })
                .collect();
            if parsed.is_empty() {
                continue;
            }
            let run: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(e.path().join("run.json")).unwrap()).unwrap();
            let recorded: Vec<String> = run["scenarios"][0]["facts"]["driver_transitions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            // The journal holds the read made for the record last.
            let tail = &parsed[parsed.len() - recorded.len()..];
            assert_eq!(tail, recorded.as_slice(), "{}", e.path().display());
            assert!(recorded.iter().any(|t| t.ends_with("→ DUAL_WRITE")), "{}: {recorded:?}", e.path().display());
            checked += 1;
        }
        assert!(checked > 0, "no MIGRATE journal with the controllers' lines under {}", dir.display());
    }

    #[test]
    fn the_migration_configuration_of_each_role() {
        let c = controller_migration_lines(21000);
        assert!(c.contains(&"zookeeper.connect=127.0.0.1:21000".to_string()));
        assert!(c.contains(&"zookeeper.metadata.migration.enable=true".to_string()));
        let b = broker_migration_lines("101@127.0.0.1:21011");
        assert!(b.contains(&"controller.quorum.voters=101@127.0.0.1:21011".to_string()));
        assert!(b.iter().any(|l| l.contains("CONTROLLER:PLAINTEXT")));
    }
}
