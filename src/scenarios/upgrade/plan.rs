//! The order of a rolling upgrade from release A to release B, as upstream's upgrade notes give
//! it and as UPGRADE runs it: KRaft controllers first, then the brokers one at a time; in the
//! middle of the brokers (releases mixed) a status read, a promotion and a demotion, and one
//! node rolled back to A and forward again (upstream allows a downgrade until the finalisation);
//! then the finalisation (ZooKeeper: `inter.broker.protocol.version` raised to B, a second roll;
//! KRaft: `kafka-features upgrade` of metadata.version), after which there is no way back.
//!
//! `runbook` writes the same plan in an operator's words; docs/upgrade.md carries it for the
//! reference hops and a unit test keeps the two the same.
//!
//! Not here: running it (`super`).

use crate::model::Mode;
use crate::version::KafkaVersion;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The node stopped (controlled shutdown), B's home with B's bundle, started; ZooKeeper mode:
    /// with `inter.broker.protocol.version` pinned to A's.
    Upgrade(i32),
    /// The node stopped and started from its A home again: a rollback before the finalisation.
    Downgrade(i32),
    /// `okp observers status` over every node's observer.ids: the observer named, in no ISR of a
    /// topic it observes.
    Status,
    /// The observer promoted (every node's observer.ids without it: it joins the ISR) and
    /// demoted again (it leaves it).
    PromoteDemote,
    Finalize(Finalize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finalize {
    /// ZooKeeper: each broker restarted in turn without the pin, so it speaks B's protocol.
    Protocol { from: String, to: String },
    /// KRaft: metadata.version raised to B's with kafka-features (controllers and brokers all on B).
    Metadata { from: String, to: String },
    /// A and B share their feature level (a patch-level hop): nothing to raise.
    Nothing { level: String },
}

/// A release's feature level as the tools name it: `3.9`, `4.0`.
pub fn level(v: KafkaVersion) -> String {
    format!("{}.{}", v.major, v.minor)
}

/// Why A → B cannot be rolled in `mode`, if it cannot.
pub fn refuse(mode: Mode, a: KafkaVersion, b: KafkaVersion) -> Option<String> {
    if b <= a {
        return Some(format!(
            "{b} is not newer than {a}: UPGRADE rolls forward (a downgrade is part of the roll, before the finalisation)"
        ));
    }
    match mode {
        Mode::Zk if b.major >= 4 => Some(format!(
            "{b} has no ZooKeeper mode: a ZooKeeper cluster migrates to KRaft first (3.7–3.9), then upgrades"
        )),
        Mode::Kraft if a < KafkaVersion::new(3, 7, 0) => {
            Some(format!("okp's KRaft support starts at 3.7; {a} in KRaft mode is not in the matrix"))
        }
        _ => None,
    }
}

/// The steps of A → B on a cluster of `controllers` (KRaft; empty in ZooKeeper mode, whose
/// ZooKeeper ensemble is not part of a Kafka upgrade) and `brokers`.
pub fn plan(mode: Mode, a: KafkaVersion, b: KafkaVersion, controllers: &[i32], brokers: &[i32]) -> Vec<Step> {
    let mut steps: Vec<Step> = controllers.iter().map(|&c| Step::Upgrade(c)).collect();
    let half = brokers.len().div_ceil(2);
    steps.extend(brokers[..half].iter().map(|&id| Step::Upgrade(id)));
    steps.push(Step::Status);
    steps.push(Step::PromoteDemote);
    if let Some(&last) = brokers[..half].last() {
        steps.push(Step::Downgrade(last));
        steps.push(Step::Status);
        steps.push(Step::Upgrade(last));
    }
    steps.extend(brokers[half..].iter().map(|&id| Step::Upgrade(id)));
    steps.push(Step::Status);
    let (from, to) = (level(a), level(b));
    steps.push(Step::Finalize(if from == to {
        Finalize::Nothing { level: to }
    } else if mode == Mode::Zk {
        Finalize::Protocol { from, to }
    } else {
        Finalize::Metadata { from, to }
    }));
    steps.push(Step::Status);
    steps
}

/// The plan in an operator's words, one numbered line per step (what docs/upgrade.md shows).
pub fn runbook(mode: Mode, a: KafkaVersion, b: KafkaVersion, steps: &[Step], controllers: &[i32]) -> String {
    let is_controller = |id: &i32| controllers.contains(id);
    let name = |id: i32| if is_controller(&id) { format!("controller {id}") } else { format!("broker {id}") };
    let mut out = format!("Rolling {a} → {b}, {} mode:\n\n", if mode == Mode::Zk { "ZooKeeper" } else { "KRaft" });
    for (i, s) in steps.iter().enumerate() {
        let line = match s {
            Step::Upgrade(id) if mode == Mode::Zk => format!(
                "{}: stop it (SIGTERM, controlled shutdown); give it {b}'s Kafka home and run `okp install` of {b}'s bundle there; add `inter.broker.protocol.version={}` to its server.properties; start it; wait until it is back in the ISR of every partition it replicates as a full replica",
                name(*id),
                level(a)
            ),
            Step::Upgrade(id) => format!(
                "{}: stop it (SIGTERM); give it {b}'s Kafka home and run `okp install` of {b}'s bundle there; start it; wait until it is back{}",
                name(*id),
                if is_controller(id) { " in the quorum" } else { " in the ISR of every partition it replicates as a full replica" }
            ),
            Step::Downgrade(id) => format!(
                "rollback drill, still allowed before the finalisation: stop {}, start it from its {a} home (its {a} bundle still installed); then roll it to {b} again",
                name(*id)
            ),
            Step::Status => "`okp observers status --nodes NODES.yaml --bootstrap …`: exit 0 (every observer named on every node, in no ISR of a topic it observes, leading none)".to_string(),
            Step::PromoteDemote => "optional with releases mixed: `okp observers promote` and `okp observers demote` work as on one release".to_string(),
            Step::Finalize(Finalize::Protocol { from, to }) => format!(
                "finalise (no rollback to {a} after this): each broker in turn, remove `inter.broker.protocol.version={from}` (the default is {to}) and restart it, waiting for the ISR between brokers"
            ),
            Step::Finalize(Finalize::Metadata { from, to }) => format!(
                "finalise (no rollback to {a} after this): `kafka-features.sh --bootstrap-server … upgrade --release-version {to}` ({b}'s tool; `--metadata {to}` where it has no --release-version), metadata.version {from} → {to}"
            ),
            Step::Finalize(Finalize::Nothing { level }) => {
                format!("nothing to finalise: {a} and {b} share feature level {level}")
            }
        };
        out.push_str(&format!("{}. {line}\n", i + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> KafkaVersion {
        s.parse().unwrap()
    }

    #[test]
    fn kraft_rolls_the_controllers_first_then_half_the_brokers_then_the_drills_then_the_rest() {
        let p = plan(Mode::Kraft, v("3.9.2"), v("4.0.2"), &[101, 102, 103], &[1, 2, 3, 4]);
        use Step::*;
        assert_eq!(
            p,
            vec![
                Upgrade(101),
                Upgrade(102),
                Upgrade(103),
                Upgrade(1),
                Upgrade(2),
                Status,
                PromoteDemote,
                Downgrade(2),
                Status,
                Upgrade(2),
                Upgrade(3),
                Upgrade(4),
                Status,
                Finalize(super::Finalize::Metadata { from: "3.9".into(), to: "4.0".into() }),
                Status,
            ]
        );
    }

    #[test]
    fn every_node_ends_on_b_and_each_downgrade_is_undone_before_the_finalisation() {
        for (mode, cs) in [(Mode::Zk, vec![]), (Mode::Kraft, vec![101, 102, 103])] {
            for n in 1..=5 {
                let brokers: Vec<i32> = (1..=n).collect();
                let p = plan(mode, v("3.8.1"), v("3.9.2"), &cs, &brokers);
                let fin = p.iter().position(|s| matches!(s, Step::Finalize(_))).unwrap();
                let mut on_b = std::collections::BTreeSet::new();
                for s in &p[..fin] {
                    match s {
                        Step::Upgrade(id) => assert!(on_b.insert(*id), "{id} upgraded twice in a row"),
                        Step::Downgrade(id) => assert!(on_b.remove(id), "{id} downgraded while on A"),
                        _ => {}
                    }
                }
                let all: std::collections::BTreeSet<i32> = cs.iter().chain(&brokers).copied().collect();
                assert_eq!(on_b, all, "{mode:?} {n} brokers");
                // Controllers before any broker.
                let first_broker = p.iter().position(|s| matches!(s, Step::Upgrade(id) if *id < 100)).unwrap();
                assert!(p[..first_broker].iter().all(|s| matches!(s, Step::Upgrade(id) if *id > 100)));
                assert_eq!(p.last(), Some(&Step::Status));
            }
        }
    }

    #[test]
    fn the_finalisation_follows_the_mode_and_the_feature_level() {
        let fin = |mode, a, b| {
            plan(mode, v(a), v(b), &[], &[1, 2])
                .into_iter()
                .find_map(|s| if let Step::Finalize(f) = s { Some(f) } else { None })
                .unwrap()
        };
        assert_eq!(fin(Mode::Zk, "3.8.1", "3.9.2"), Finalize::Protocol { from: "3.8".into(), to: "3.9".into() });
        assert_eq!(fin(Mode::Kraft, "4.3.0", "4.3.1"), Finalize::Nothing { level: "4.3".into() });
        assert_eq!(fin(Mode::Kraft, "4.2.1", "4.3.1"), Finalize::Metadata { from: "4.2".into(), to: "4.3".into() });
    }

    #[test]
    fn hops_that_cannot_roll_are_refused_with_the_reason() {
        assert!(refuse(Mode::Kraft, v("4.3.1"), v("4.3.0")).unwrap().contains("not newer"));
        assert!(refuse(Mode::Kraft, v("4.3.1"), v("4.3.1")).unwrap().contains("not newer"));
        assert!(refuse(Mode::Zk, v("3.9.2"), v("4.0.2")).unwrap().contains("migrates to KRaft first"));
        assert!(refuse(Mode::Kraft, v("3.6.2"), v("3.7.2")).unwrap().contains("starts at 3.7"));
        assert_eq!(refuse(Mode::Kraft, v("3.9.2"), v("4.0.2")), None);
        assert_eq!(refuse(Mode::Zk, v("2.7.2"), v("2.8.2")), None);
    }

    /// docs/upgrade.md shows the runbook of the reference hops exactly as UPGRADE runs them,
    /// each between `<!-- runbook MODE A B -->` and `<!-- end runbook -->`. `OKP_BLESS=1` writes
    /// them there instead of checking.
    #[test]
    fn the_runbook_in_the_docs_is_the_plan_the_scenario_runs() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/upgrade.md");
        let mut doc = std::fs::read_to_string(path).unwrap();
        let bless = std::env::var("OKP_BLESS").is_ok_and(|v| v == "1");
        for (mode, a, b, cs) in
            [(Mode::Kraft, "3.9.2", "4.0.2", vec![101, 102, 103]), (Mode::Zk, "3.8.1", "3.9.2", vec![])]
        {
            let book = runbook(mode, v(a), v(b), &plan(mode, v(a), v(b), &cs, &[1, 2, 3, 4]), &cs);
            let open = format!("<!-- runbook {mode} {a} {b} -->\n");
            let start = doc.find(&open).unwrap_or_else(|| panic!("docs/upgrade.md has no {open}")) + open.len();
            let end = start + doc[start..].find("<!-- end runbook -->").expect("an end marker");
            if bless {
                doc.replace_range(start..end, &book);
            } else {
                assert_eq!(doc[start..end], book, "docs/upgrade.md's {a} → {b} runbook (OKP_BLESS=1 writes it)");
            }
        }
        if bless {
            std::fs::write(path, doc).unwrap();
        }
    }
}
