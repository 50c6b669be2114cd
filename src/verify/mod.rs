//! `okp verify`: build (or take) the patched jars of one release and mode,
//! start a real cluster on loopback from Maven Central artifacts, run the
//! scenario suite, and write the evidence: the journal of every command,
//! run.json with every number, a summary page per run and one matrix page
//! over every run in the evidence directory.
//!
//! The stages, in the order a run takes them (`run::run` drives them):
//!
//! - `plan`: the matrix's pairs, a run's name, its lanes and port blocks, where its evidence goes;
//! - `jars`: the jars under test (`--jars DIR` or the cached splice build), each re-checked
//!   against its build record (`build::recheck`) before use;
//! - `run`: the runtime, a cluster per lane, the suite on each, teardown, the run's record;
//! - `record`: run.json, the typed record every later stage reads;
//! - `render`: one run's terminal table and summary.md;
//! - `publish`: the run's files staged, then moved into the evidence directory (a partial run
//!   under `partial/`), then the pages written again;
//! - `matrix`: VERIFY.md over every run, with the proof and unit columns;
//! - `upgrades`: the page of the UPGRADE runs (`--upgrade-to`), evidence/upgrade/UPGRADE.md;
//! - `wan_page`: the page of the runs of scenario WAN alone, evidence/wan/WAN.md.
//!
//! `unit` (`okp unit-tests`) shares the jars stage and adds the unit column.
//!
//! Not here: processes and tools (cluster/), what is asserted (scenarios/),
//! which scenarios and pairs a command asks for (`cmd::verify`).

pub mod all;
pub mod jars;
pub mod matrix;
pub mod plan;
pub mod publish;
pub mod record;
pub mod render;
pub mod run;
pub mod unit_record;
pub mod upgrades;
pub mod wan_page;

use std::path::PathBuf;

use crate::cluster::Timers;
use crate::model::{Layers, Mode, Release};
use crate::scenarios::{Flavor, Scenario};

pub use all::{run_all, AllRun, PairResult};
pub use jars::{patched_jars, patched_jars_from, JarsSource};
pub use matrix::{bytecode_verdicts, pair_evidence, write_matrix};
pub use plan::{placement, run_name};
pub(crate) use publish::publish;
pub use publish::write_evidence;
pub use run::run;

/// The subdirectory of the evidence directory that holds partial runs (fewer scenarios than the suite).
pub const PARTIAL_DIR: &str = "partial";

/// One (release, mode) of versions.yaml, as VERIFY.md lists it whether or not it was run.
pub use crate::model::Pair;

pub struct Options {
    pub release: Release,
    pub mode: Mode,
    pub flavor: Flavor,
    pub jars: Option<PathBuf>,
    /// The sources `jars`' build read, for a release without a sources jar (`--tree`, `--git --rev`).
    pub jars_source: Option<JarsSource>,
    /// Layers of the patched build (ignored with --upstream).
    pub layers: Layers,
    pub scenarios: Vec<&'static Scenario>,
    pub timers: Timers,
    pub evidence: PathBuf,
    pub keep: bool,
    pub base_port: Option<u16>,
    pub json: bool,
    /// How many clusters share the suite (each runs its lane's scenarios at the same time).
    pub lanes: usize,
    /// The sizes of the scenarios that take one (`--create-rounds`).
    pub tuning: crate::scenarios::Tuning,
    /// `--upgrade-to`: the releases UPGRADE rolls the cluster to, in turn (their patched jars and
    /// bundles are made beside the run's own); the run's evidence goes to `upgrade/`.
    pub upgrade_to: Vec<Release>,
    /// `--migrate`: MIGRATE on a ZooKeeper-mode cluster built from the KRaft jar set; the run's
    /// evidence goes to `upgrade/`.
    pub migrate: bool,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::verify::matrix::{write_matrix, PROOF_DIR, RELEASES_DIR};
    use crate::verify::record::{self, RunRecord};
    use crate::verify::render::summary_page;
    use std::path::Path;

    pub(crate) fn evidence() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence")
    }

    /// Copies the run.json files of `from`'s runs (and of its partial runs), and the unit.json files
    /// of its unit runs, into a fresh evidence directory.
    pub(crate) fn runs_of(from: &Path) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let copy = |from: &Path, to: &Path, file: &str| {
            for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
                let run = e.path().join(file);
                if run.is_file() {
                    std::fs::create_dir_all(to.join(e.file_name())).unwrap();
                    std::fs::copy(&run, to.join(e.file_name()).join(file)).unwrap();
                }
            }
        };
        copy(from, t.path(), record::FILE_NAME);
        copy(&from.join(PARTIAL_DIR), &t.path().join(PARTIAL_DIR), record::FILE_NAME);
        copy(&from.join("unit"), &t.path().join("unit"), unit_record::FILE_NAME);
        for dir in [PROOF_DIR, RELEASES_DIR] {
            for e in std::fs::read_dir(from.join(dir)).into_iter().flatten().flatten() {
                if e.path().extension().is_some_and(|x| x == "json") {
                    std::fs::create_dir_all(t.path().join(dir)).unwrap();
                    std::fs::copy(e.path(), t.path().join(dir).join(e.file_name())).unwrap();
                }
            }
        }
        t
    }

    pub(crate) fn matrix_pairs() -> Vec<Pair> {
        crate::model::Model::load(None, None).unwrap().matrix.pairs(crate::model::PairFilter::default())
    }

    /// The typed reader gives the same pages as the run.json files under evidence/ were published with
    /// (`okp verify --merge` writes them again after a change to the page or the scenario list).
    #[test]
    fn the_evidence_pages_come_out_the_same_from_the_typed_records() {
        let all = matrix_pairs();
        for dir in [evidence(), evidence().join("met-cluster")] {
            let t = runs_of(&dir);
            if t.path().join(PARTIAL_DIR).is_dir() {
                write_matrix(&t.path().join(PARTIAL_DIR), None).unwrap();
                let want = std::fs::read_to_string(dir.join(PARTIAL_DIR).join("VERIFY.md")).unwrap();
                assert_eq!(std::fs::read_to_string(t.path().join(PARTIAL_DIR).join("VERIFY.md")).unwrap(), want);
            }
            write_matrix(t.path(), Some(&all)).unwrap();
            let want = std::fs::read_to_string(dir.join("VERIFY.md")).unwrap();
            assert_eq!(std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap(), want, "{}", dir.display());
            for e in std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.path().join("summary.md").is_file()) {
                let rec = RunRecord::read(&e.path()).unwrap();
                let want = std::fs::read_to_string(e.path().join("summary.md")).unwrap();
                assert_eq!(summary_page(&rec), want, "{}", e.path().display());
            }
        }
    }
}
