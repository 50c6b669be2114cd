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
mod observers;
mod patch;
mod playground;
mod releases;
mod sources;
mod unit_tests;
mod verify;
mod versions;

use crate::cli::{Cli, Command, ListFormat};
use crate::error::{Outcome, Result};
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
    }
}

/// `--layer` as given: core plus the chosen layers.
fn layers(chosen: &[Layer]) -> Layers {
    Layers::with(chosen)
}

fn json(f: ListFormat) -> bool {
    f == ListFormat::Json
}
