//! `okp playground`: a local patched cluster to try observers by hand.
//!
//! Not here: the cluster and what it prints (`playground`).

use crate::cli::PlaygroundArgs;
use crate::error::{Outcome, Result};
use crate::model::ModeDefault;
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, a: PlaygroundArgs) -> Result<Outcome> {
    let release = ws.release(a.release.version)?.clone();
    release.require_sources_jar("okp playground builds its patched jars from those sources")?;
    let mode = release.mode_for(a.release.mode, ModeDefault::ZkFirst)?;
    crate::playground::run(ws, release, mode, a.dir)
}
