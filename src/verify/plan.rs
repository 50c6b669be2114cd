//! What a run is before anything starts: its name, its lanes with their port blocks, and where
//! its evidence goes.
//!
//! Not here: which pairs of the matrix (`model::Matrix::pairs`), how the suite is shared among
//! lanes (`scenarios::lanes`), the scenarios a run takes (`cmd::verify`).

use std::path::{Path, PathBuf};

use super::PARTIAL_DIR;
use crate::cluster::PORT_BLOCK;
use crate::error::{Error, Result};
use crate::model::Mode;
use crate::scenarios::{self, Flavor, Scenario};

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

/// One lane of a run: the scenarios its cluster runs, and its port block when `--base-port` names
/// the first.
pub struct LanePlan {
    pub scenarios: Vec<&'static Scenario>,
    pub base_port: Option<u16>,
}

/// The `lanes` lanes of a run of `selected` (at least one, even with no scenario): lane N takes the
/// port block `PORT_BLOCK` × (N − 1) above `base_port`; refused when one would pass port 65535.
pub fn lanes(
    selected: &[&'static Scenario],
    lanes: usize,
    mode: Mode,
    base_port: Option<u16>,
) -> Result<Vec<LanePlan>> {
    let mut split = scenarios::lanes(selected, lanes, mode);
    if split.is_empty() {
        split.push(Vec::new());
    }
    (0..split.len() as u16)
        .zip(split)
        .map(|(i, scenarios)| {
            let base_port = match base_port {
                None => None,
                Some(b) => Some(
                    b.checked_add(PORT_BLOCK * i)
                        .filter(|base| base.checked_add(PORT_BLOCK - 1).is_some())
                        .ok_or_else(|| {
                            Error::Usage(format!("--base-port {b}: lane {}'s ports would pass port 65535", i + 1))
                        })?,
                ),
            };
            Ok(LanePlan { scenarios, base_port })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lane_takes_the_port_block_after_the_one_before() {
        let suite: Vec<&'static Scenario> = scenarios::default_suite(Flavor::Patched).collect();
        let two = lanes(&suite, 2, Mode::Zk, Some(20000)).unwrap();
        assert_eq!(two.iter().map(|l| l.base_port).collect::<Vec<_>>(), [Some(20000), Some(20000 + PORT_BLOCK)]);
        assert_eq!(two.iter().map(|l| l.scenarios.len()).sum::<usize>(), suite.len());
        assert!(lanes(&suite, 2, Mode::Zk, None).unwrap().iter().all(|l| l.base_port.is_none()));
        let e = lanes(&suite, 2, Mode::Zk, Some(65500)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("--base-port 65500: lane 2's ports would pass port 65535"), "{e}");
        let none = lanes(&[], 2, Mode::Zk, None).unwrap();
        assert!(none.len() == 1 && none[0].scenarios.is_empty(), "a run of no scenario still has its lane");
    }

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
