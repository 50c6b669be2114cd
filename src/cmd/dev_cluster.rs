//! `okp dev-cluster` (hidden): a patched cluster for the integration tests.
//!
//! Not here: the cluster (`dev_cluster`, `cluster`).

use crate::cli::DevClusterArgs;
use crate::cluster::Timers;
use crate::error::{Outcome, Result};
use crate::model::ModeDefault;
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, a: DevClusterArgs) -> Result<Outcome> {
    let release = ws.release(a.release.version)?.clone();
    let mode = release.mode_for(a.release.mode, ModeDefault::ZkFirst)?;
    let timers = Timers { lag_ms: a.lag_ms, session_ms: a.session_ms };
    crate::dev_cluster::hold(ws, release, mode, timers, &a.topic, &a.state)
}
