//! `okp observers`: operate observer replicas on a running cluster.
//!
//! - `status`: per partition, each replica's role (leader / ISR / observer),
//!   log end offset, lag and caught-up state, and the red states (an observer
//!   inside an ISR or leading), as a table, json, or Prometheus's text format
//!   (`exposition`).
//! - `promote` / `demote --broker N`: edit observer.ids on every node through
//!   a transport (local files or a command template), after pre-checks, in a
//!   safe order, then wait until the cluster shows the change.
//! - `watch`: the opt-in auto-promotion watchdog, which takes the same steps
//!   as promote and demote under nine safety rules (docs/observers-watch.md).
//!
//! One path for a change (`change::apply`), whoever asks. The stops of
//! `okp observers promote --broker 4`:
//! 1. cmd/observers.rs: the flags → the nodes and their transport (`transport`),
//!    what to ask for (`change::Ask`) → `change::run` → `change::apply`;
//! 2. read every node's file at once (`change::read`, through `transport`);
//! 3. parse each with the one meaning (`idfile`, `pattern`): a file okp cannot
//!    read cleanly, or one a killed change left half-applied (`journal`), stops it;
//! 4. plan the new files (`idfile::edit`), in write order;
//! 5. the role diff (`roles`) against the cluster (`view`), then the
//!    pre-checks (`change::precheck`);
//! 6. the caller's say (`change::Steps`): the command notes refusals, prints
//!    the plan (`change::report`), stops for `--dry-run`;
//! 7. write in order, compare-and-swap per node, all or nothing (`actuate`, `swap`);
//! 8. read back: wait until the cluster shows it (`change::converge`).
//!
//! The watchdog (`watch`) decides only what to ask for (`watch::decide`, pure),
//! then calls the same `change::apply` with its own `Steps` (audit, state file).
//! `place` takes stops 2-4, the role diff of 5 (no pre-checks) and 7 for a
//! topic's rule (`change::plan_rule`), then its own read-back, a reassignment;
//! `recover` finishes or undoes what a killed change left.
//!
//! Everything here talks to Kafka through okp's own protocol probe
//! (cluster/probe.rs): no JVM, no Kafka tools, PLAINTEXT listeners only.
//!
//! Not here: the rules a node applies to its file (the patch set's
//! registries, docs/observer-ids.md).

pub mod actuate;
pub mod change;
pub mod differential;
pub mod exposition;
pub mod idfile;
pub mod journal;
pub mod pattern;
pub mod place;
pub mod recover;
pub mod roles;
pub mod swap;
pub mod transport;
pub mod view;
pub mod watch;

use crate::error::{Outcome, Result};

/// `okp observers status --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    /// A table for people.
    Table,
    /// json for programs (schema okp-observers-status/1).
    Json,
    /// Prometheus's text exposition format 0.0.4, for node_exporter's textfile collector.
    Prometheus,
}

pub struct StatusArgs {
    pub bootstrap: Vec<String>,
    pub topic: Option<String>,
    pub observers: view::ObserverSet,
    pub max_lag: i64,
    pub format: StatusFormat,
    pub color: bool,
}

/// Prints the status; exit 1 when a red state is found (an observer in an ISR or
/// leading, or an observer.ids file holding a token that is not an id). When the
/// cluster cannot be read, `--format prometheus` still prints an exposition
/// (`okp_observers_status_up 0`) before the error.
pub fn status(a: &StatusArgs) -> Result<Outcome> {
    let snap = view::snapshot(&a.bootstrap, a.topic.as_deref(), view::Depth { offsets: true, min_insync: false });
    let unix_seconds =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or_default();
    let snap = match snap {
        Ok(s) => s,
        Err(e) => {
            if a.format == StatusFormat::Prometheus {
                let down = exposition::Status { observers: &a.observers, cluster: None, unix_seconds };
                crate::out::print(&exposition::render(&down))?;
            }
            return Err(e);
        }
    };
    let rows = view::rows(&snap, &a.observers, a.max_lag);
    let out = match a.format {
        StatusFormat::Table => view::table(&rows, &a.observers, a.color),
        StatusFormat::Json => view::json(&rows, &a.observers, a.max_lag),
        StatusFormat::Prometheus => exposition::render(&exposition::Status {
            observers: &a.observers,
            cluster: Some((&snap, &rows)),
            unix_seconds,
        }),
    };
    crate::out::print(&out)?;
    Ok(Outcome::check(view::red_states(&rows, &a.observers) == 0))
}
