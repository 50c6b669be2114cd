//! A monitored cluster (`okp verify --prometheus`, the PROM scenario, the playground): the JMX
//! exporter as an agent in every broker and KRaft controller, and a Prometheus server with okp's
//! alert rules scraping them, plus node_exporter serving `okp observers status --format
//! prometheus` (docs/monitoring.md).

use std::time::Duration;

use super::node::Role;
use super::{Cluster, Monitor, OBSERVER_IDS_TTL};
use crate::error::{Error, Result};
use crate::monitoring::{alerts, exporter, prom};

/// Prometheus and node_exporter are stopped with the nodes on Ctrl-C.
const HOOKS: prom::Hooks = prom::Hooks { started: super::node::register, stopped: super::node::unregister };

/// Prometheus's scrape and evaluation interval on okp's clusters, and how often the status job
/// runs: short, so the alerts' `for:` (rendered for them) fit in a scenario.
pub const SCRAPE_S: u64 = 1;
pub const STATUS_S: u64 = 2;

impl Cluster {
    /// Fetches the exporter (pinned hash) and writes its rules into the run directory: done
    /// before the nodes are configured, so every node's command line carries the agent.
    pub(super) fn set_up_monitor(&mut self) -> Result<()> {
        let jar = exporter::jar()?;
        let dir = self.run_dir.join("monitoring");
        crate::fsx::create_dir(&dir)?;
        let rules = dir.join("jmx-exporter.yml");
        crate::fsx::write_atomic(&rules, exporter::RULES.as_bytes())?;
        exporter::agent_flag(&jar, self.exporter_port(1), &rules)?;
        let timers = alerts::Timers {
            lag_ms: self.timers.lag_ms,
            ttl_s: OBSERVER_IDS_TTL.as_secs(),
            scrape_s: SCRAPE_S,
            status_s: STATUS_S,
        };
        self.monitor = Some(Monitor { jar, rules, prom: None, timers });
        Ok(())
    }

    /// Every node's exporter as a scrape target.
    pub fn exporter_targets(&self) -> Vec<prom::Target> {
        self.nodes
            .iter()
            .filter(|n| n.role != Role::ZooKeeper && (n.role == Role::Controller || super::BROKERS.contains(&n.id)))
            .map(|n| prom::Target {
                node: n.name.clone(),
                role: if n.role == Role::Controller { "controller" } else { "broker" },
                port: self.exporter_port(n.id),
            })
            .collect()
    }

    /// The arguments after `okp observers status` that read this cluster and every node's file.
    pub fn status_args(&self, format: &str) -> Vec<String> {
        // Every broker: the status job outlives a broker's stop or freeze; one answering is enough.
        let all: Vec<String> = super::BROKERS.iter().map(|&id| format!("127.0.0.1:{}", self.broker_port(id))).collect();
        let mut a = vec!["--format".to_string(), format.to_string(), "--bootstrap".to_string(), all.join(",")];
        for n in &self.nodes {
            match n.role {
                Role::Broker if super::BROKERS.contains(&n.id) => {
                    a.extend(["--node".to_string(), format!("{}={}", n.id, n.observer_file().display())])
                }
                Role::Controller => {
                    a.extend(["--controller-node".to_string(), format!("{}={}", n.id, n.observer_file().display())])
                }
                _ => {}
            }
        }
        a
    }

    /// Starts Prometheus (and node_exporter with the status job) once the nodes are up, and waits
    /// until every exporter has been scraped once.
    pub(super) fn start_prometheus(&mut self) -> Result<()> {
        let Some(m) = &self.monitor else { return Ok(()) };
        if let Some(why) = prom::unavailable() {
            return Err(Error::External(why));
        }
        let rules = alerts::render(&m.timers, alerts::DOC_BASE);
        let okp = std::env::current_exe().map_err(|e| Error::io("cannot find okp's own executable", e))?;
        let (port, ne_port) = self.prometheus_ports();
        let targets = self.exporter_targets();
        let job = prom::StatusJob { okp, args: self.status_args("prometheus"), every: Duration::from_secs(STATUS_S) };
        let p = prom::Prom::start(
            &self.run_dir.join("monitoring"),
            port,
            &targets,
            &rules,
            SCRAPE_S,
            Some((ne_port, job)),
            HOOKS,
        )?;
        p.wait_targets_up("kafka", targets.len(), Duration::from_secs(60))?;
        self.journal.note(&format!(
            "Prometheus on http://127.0.0.1:{port} scraping {} exporters every {SCRAPE_S} s, node_exporter (okp observers status) on 127.0.0.1:{ne_port}",
            targets.len()
        ));
        if let Some(m) = &mut self.monitor {
            m.prom = Some(p);
        }
        Ok(())
    }

    /// The cluster's Prometheus, when it is monitored.
    pub fn prom(&self) -> Option<&prom::Prom> {
        self.monitor.as_ref().and_then(|m| m.prom.as_ref())
    }
}
