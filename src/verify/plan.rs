//! Which runs: the matrix's (release, mode) pairs, a run's name, and where its evidence goes.
//!
//! Not here: the lanes a suite is split into (`scenarios::lanes`), the scenarios a run takes (`cmd::verify`).

use std::path::{Path, PathBuf};

use super::{Pair, PARTIAL_DIR};
use crate::model::{Matrix, Mode};
use crate::scenarios::{self, Flavor};

/// Every (release, mode) of the matrix, in versions.yaml's order.
pub fn pairs(matrix: &Matrix) -> Vec<Pair> {
    matrix
        .releases
        .iter()
        .flat_map(|r| {
            r.modes.iter().map(move |m| Pair { release: r.version, mode: *m, sources: r.no_sources_jar.is_none() })
        })
        .collect()
}

/// Where a run's evidence goes, relative to the evidence directory. A run of the whole suite
/// of its flavor replaces `<name>/`; a run of fewer scenarios (`--scenarios`, or `--layer core`
/// which leaves MET out) goes to `partial/<name>-<what it ran>/`, so re-checking one scenario
/// never replaces a full run's journals, and VERIFY.md keeps the full run. `<what it ran>` is
/// the ids it ran (`S4`, `S4-S7`), or `without-` the ids it left out when that is shorter.
pub fn placement(name: &str, flavor: Flavor, selected: &[&str]) -> PathBuf {
    let has = |id: &str| selected.iter().any(|s| s.eq_ignore_ascii_case(id));
    let full: Vec<&str> = scenarios::default_suite(flavor).map(|s| s.id).collect();
    let missing: Vec<&str> = full.iter().copied().filter(|id| !has(id)).collect();
    if missing.is_empty() {
        return PathBuf::from(name);
    }
    let ran: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.id).filter(|id| has(id)).collect();
    let what = if ran.len() <= missing.len() { ran.join("-") } else { format!("without-{}", missing.join("-")) };
    Path::new(PARTIAL_DIR).join(format!("{name}-{what}"))
}

/// The run's identity in the evidence directory: `<release>-<mode>[-upstream]`.
pub fn run_name(release: &str, mode: Mode, flavor: Flavor) -> String {
    match flavor {
        Flavor::Patched => format!("{release}-{mode}"),
        Flavor::Upstream => format!("{release}-{mode}-upstream"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_fewer_scenarios_than_the_suite_is_placed_apart() {
        let all: Vec<&str> = scenarios::default_suite(Flavor::Patched).map(|s| s.id).collect();
        assert_eq!(placement("4.3.1-kraft", Flavor::Patched, &all), Path::new("4.3.1-kraft"));
        assert_eq!(placement("3.9.2-zk", Flavor::Patched, &["HOSTS"]), Path::new("partial/3.9.2-zk-HOSTS"));
        assert_eq!(placement("4.3.1-kraft", Flavor::Patched, &["S4"]), Path::new("partial/4.3.1-kraft-S4"));
        assert_eq!(placement("4.3.1-kraft", Flavor::Patched, &["s7", "S4"]), Path::new("partial/4.3.1-kraft-S7-S4"));
        let core: Vec<&str> = all.iter().copied().filter(|id| *id != "MET").collect();
        assert_eq!(placement("3.9.2-zk", Flavor::Patched, &core), Path::new("partial/3.9.2-zk-without-MET"));
        let gates: Vec<&str> = scenarios::SCENARIOS.iter().filter(|s| s.gate).map(|s| s.id).collect();
        assert_eq!(placement("3.9.2-zk-upstream", Flavor::Upstream, &gates), Path::new("3.9.2-zk-upstream"));
        assert_eq!(
            placement("3.9.2-zk-upstream", Flavor::Upstream, &["INIT"]),
            Path::new("partial/3.9.2-zk-upstream-INIT")
        );
    }
}
