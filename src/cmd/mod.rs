//! One module per command: each turns its flags (`cli`) into library calls
//! and returns how the command came out. Only the commands that need the
//! model and the patch set build a `Workspace`, once.
//!
//! Not here: flag definitions (`cli`), the work itself (the library modules),
//! exit codes (`error`).

mod bench;
mod build;
mod bundle;
mod check;
mod dev_cluster;
mod diff;
mod monitoring;
mod observers;
mod patch;
mod playground;
mod releases;
mod sources;
mod unit_tests;
mod verify;
mod versions;

use crate::cli::{Cli, Command, ListFormat};
use crate::error::{Error, Outcome, Result};
use crate::model::Mode;
use crate::model::{Layer, Layers};
use crate::workspace::{DataFiles, Workspace};

/// Runs the command the command line names.
pub fn run(cli: Cli) -> Result<Outcome> {
    let files = DataFiles { versions: cli.versions, anchors: cli.anchors, patches: cli.patches };
    let ws = || Workspace::load(&files);
    match cli.command {
        Command::Versions(a) => versions::run(&ws()?, a),
        Command::CheckAnchors(a) => check::run(&ws()?, a),
        Command::Diff(a) => diff::run(&files, a),
        Command::Show(a) => patch::show(&ws()?, a),
        Command::Apply(a) => patch::apply(&ws()?, a),
        Command::Revert(a) => patch::revert(a),
        Command::Status(a) => patch::status(a),
        Command::Export(a) => patch::export(&ws()?, a),
        Command::Build(a) => build::run(&ws()?, a),
        Command::Verify(a) => verify::run(&ws()?, a),
        Command::UnitTests(a) => unit_tests::run(&ws()?, a),
        Command::Monitoring(a) => monitoring::run(a),
        Command::DevCluster(a) => dev_cluster::run(&ws()?, a),
        Command::Playground(a) => playground::run(&ws()?, a),
        Command::Sources(a) => sources::run(&ws()?, a),
        Command::Releases(a) => releases::run(&ws()?, a),
        Command::CompareBuilds(a) => build::compare(a),
        Command::Keygen(a) => bundle::keygen(a),
        Command::Bundle(a) => bundle::bundle(&ws()?, a),
        Command::VerifyBundle(a) => bundle::verify_bundle(&ws()?, a),
        Command::Install(a) => bundle::install(&ws()?, a),
        Command::Rollback(a) => bundle::rollback(a),
        Command::Observers(a) => observers::run(a),
        Command::Bench(a) => bench::run(&ws()?, a),
        Command::UpgradePlan(a) => upgrade_plan(&ws()?, a),
    }
}

/// `okp upgrade-plan`: the runbook of one hop for the given nodes (scenarios/upgrade/plan.rs).
fn upgrade_plan(ws: &Workspace, a: crate::cli::UpgradePlanArgs) -> Result<Outcome> {
    use crate::scenarios::upgrade::{plan, refuse, runbook};
    for v in [a.from, a.to] {
        let r = ws.release(v)?;
        if !r.modes.contains(&a.mode) {
            return Err(Error::Usage(format!("release {v} has no {} mode in versions.yaml", a.mode)));
        }
    }
    if let Some(why) = refuse(a.mode, a.from, a.to) {
        return Err(Error::Usage(format!("--from {} --to {}: {why}", a.from, a.to)));
    }
    if a.mode == Mode::Zk && !a.controllers.is_empty() {
        return Err(Error::Usage("--controllers: a ZooKeeper-mode cluster has no KRaft controllers".into()));
    }
    if a.mode == Mode::Kraft && a.controllers.is_empty() {
        return Err(Error::Usage("--controllers: a KRaft cluster's controllers are rolled first; name them".into()));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = a.controllers.iter().chain(&a.brokers).find(|id| !seen.insert(**id)) {
        return Err(Error::Usage(format!("node id {dup} is named twice")));
    }
    let steps = plan(a.mode, a.from, a.to, &a.controllers, &a.brokers);
    crate::out::print(&runbook(a.mode, a.from, a.to, &steps, &a.controllers))?;
    Ok(Outcome::Done)
}

/// `--layer` as given: core plus the chosen layers.
fn layers(chosen: &[Layer]) -> Layers {
    Layers::with(chosen)
}

fn json(f: ListFormat) -> bool {
    f == ListFormat::Json
}
