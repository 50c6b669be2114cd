//! Observers in Prometheus: the JMX exporter's rules, the alert rules, the dashboard, and a
//! Prometheus server (with node_exporter for `okp observers status --format prometheus`) that
//! the PROM scenario and the playground start on loopback.
//!
//! - `exporter`: which exporter jar (pinned by hash), its rules file, the agent's JVM flag;
//! - `alerts`: the alert rules rendered from the timers their `for:` derive from;
//! - `dashboard`: the Grafana dashboard okp ships, and its panels' queries;
//! - `prom`: a Prometheus server and node_exporter as child processes, and the HTTP API reads.
//!
//! Not here: the gauges themselves (the metrics layer of the patch set, docs/observer-metrics.md).

pub mod alerts;
pub mod dashboard;
pub mod exporter;
pub mod prom;
pub mod record;

/// The Grafana dashboard okp ships (contrib/monitoring/dashboard.json).
pub const DASHBOARD: &str = include_str!("../../contrib/monitoring/dashboard.json");
