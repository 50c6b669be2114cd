//! ROLL: adoption without downtime, with the artifact an operator deploys.
//! Every node of a patched run starts from its own Kafka home with the signed
//! bundle installed (cluster/homes.rs); ROLL rolls it off and on again, one
//! node at a time with a controlled restart, while acks=all writes go on. First
//! the cluster before adoption: every node stopped at once, put back on the
//! release's own jars and started (no observer named); then `okp install`
//! rolling, the observer named, `okp rollback` rolling.
//! It runs last and leaves the cluster on the release's jars.

use std::time::Duration;

use super::{Ctx, Flavor, Outcome};
use crate::cluster::homes;
use crate::cluster::node::Role;
use crate::cluster::OBSERVER;
use crate::error::Result;

const PRIMARIES: [i32; 3] = [1, 2, 3];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Install,
    Rollback,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Install => "install",
            Action::Rollback => "rollback",
        }
    }
}

pub fn roll(x: &mut Ctx, o: &mut Outcome) -> Result<()> {
    if x.flavor == Flavor::Upstream || x.c.bundle.is_none() {
        o.check("ROLL needs a patched run (the bundle installed in every node's home)", false, "none here");
        return Ok(());
    }
    let controllers = x.c.controllers();
    let brokers: Vec<i32> = x.c.nodes.iter().filter(|n| n.role == Role::Broker).map(|n| n.id).collect();
    // Upgrades go controllers first, downgrades brokers first.
    let up: Vec<i32> = controllers.iter().chain(&brokers).copied().collect();
    let down: Vec<i32> = brokers.iter().chain(&controllers).copied().collect();
    let all = x.c.kafka_nodes();

    // 0. Before adoption there is no observer: 4 is an ordinary follower.
    x.c.set_observers(&all, "")?;
    let t = x.lag() + x.ttl() + Duration::from_secs(20);
    x.wait(o, "obs", t, "no observer named: 4 joins the ISR", "unnamed_seconds", |s| s.in_isr(OBSERVER))?;

    // 1. The cluster before adoption: every node back on the release's jars, all at once (the
    //    state the operator starts from is set up here, not proven; step 4 proves a rolling
    //    rollback under writes).
    let secs = cold_start_on_release_jars(x, o, &down, &up)?;
    o.fact("cold_start_seconds", secs);
    // 2. Adoption: okp install, one node at a time, writes in every state.
    let secs = roll_through(x, o, &up, Action::Install, "install")?;
    o.fact("install_seconds", secs);
    x.wait(
        o,
        "obs",
        t,
        "installed everywhere, no observer named yet: 4 still in the ISR",
        "installed_isr_seconds",
        |s| s.in_isr(OBSERVER),
    )?;
    // 3. Name the observer.
    x.c.set_observers(&all, "4\n")?;
    x.wait(o, "obs", t, "observer named: 4 leaves the ISR, a primary leads", "named_seconds", |s| {
        !s.in_isr(OBSERVER) && s.leader.is_some_and(|l| l != OBSERVER)
    })?;
    x.produce_obs(o, "ROLL-named", 200, &[])?;
    // 4. Rolling rollback with the observer named: back on the release's jars the file is ignored.
    let secs = roll_through(x, o, &down, Action::Rollback, "rollback")?;
    o.fact("rollback_seconds", secs);
    x.wait(
        o,
        "obs",
        t,
        "rolled back everywhere: the release ignores observer.ids, 4 rejoins the ISR",
        "rejoin_seconds",
        |s| s.in_isr(OBSERVER),
    )?;
    x.read_back(o, "ROLL", &[])?;
    Ok(())
}

/// Every node killed, `okp rollback` on each home, every node started again (controllers first);
/// done when the primaries are back in obs's ISR. Returns its seconds.
fn cold_start_on_release_jars(x: &mut Ctx, o: &mut Outcome, down: &[i32], up: &[i32]) -> Result<f64> {
    let t0 = std::time::Instant::now();
    let mut failed = Vec::new();
    for &id in down {
        x.c.kill9(id);
    }
    let want = expected_digests(x, Action::Rollback);
    for &id in down {
        let name = x.c.node(id).name.clone();
        let Some(home) = x.c.node(id).home.clone() else {
            failed.push(format!("{name}: no Kafka home"));
            continue;
        };
        let ran = x.c.okp_on_home(Action::Rollback.word(), &home)?;
        if !ran.ok() {
            failed.push(format!("{name}: okp rollback exit {}: {}", ran.rc, ran.stderr.trim()));
        }
        let have = homes::replaced_jar_digests(&x.c.rt, &home);
        x.c.journal.note(&format!("{name} jars after okp rollback: {have:?}"));
        if have != want {
            failed.push(format!("{name}: jars {have:?}, expected {want:?}"));
        }
    }
    for &id in up {
        x.c.start_node(id)?;
    }
    for &id in up {
        x.c.wait_node_ready(id)?;
    }
    let t = x.lag() + Duration::from_secs(60);
    let (s, _) = x.c.wait_state("obs", t, |s| PRIMARIES.iter().all(|p| s.in_isr(*p)), |_| {})?;
    if s.is_none() {
        failed.push(format!("the primaries were not all in obs's ISR within {:.0} s of the start", t.as_secs_f64()));
    }
    let secs = super::round(t0.elapsed().as_secs_f64());
    o.check(
        &format!(
            "the cluster before adoption: {} nodes stopped, okp rollback on each home, started on the release's jars",
            down.len()
        ),
        failed.is_empty(),
        if failed.is_empty() { format!("{secs:.1} s") } else { failed.join("; ") },
    );
    Ok(secs)
}

/// One rolling pass of `action` over `order`; returns its seconds.
fn roll_through(x: &mut Ctx, o: &mut Outcome, order: &[i32], action: Action, label: &str) -> Result<f64> {
    let t0 = std::time::Instant::now();
    let mut failed = Vec::new();
    let mut errors = 0usize;
    for &id in order {
        let name = x.c.node(id).name.clone();
        let Some(home) = x.c.node(id).home.clone() else {
            failed.push(format!("{name}: no Kafka home"));
            continue;
        };
        x.c.stop_node(id);
        let ran = x.c.okp_on_home(action.word(), &home)?;
        if !ran.ok() {
            failed.push(format!("{name}: okp {} exit {}: {}", action.word(), ran.rc, ran.stderr.trim()));
        }
        let want = expected_digests(x, action);
        let have = homes::replaced_jar_digests(&x.c.rt, &home);
        x.c.journal.note(&format!("{name} jars after okp {}: {have:?}", action.word()));
        if have != want {
            failed.push(format!("{name}: jars {have:?}, expected {want:?}"));
        }
        // Writes go on while the node is down.
        let exclude: Vec<i32> = if x.c.node(id).role == Role::Broker { vec![id] } else { vec![] };
        let p = x.c.produce("obs", &format!("ROLL-{label}-{name}"), 100, &exclude)?;
        x.sent += p.sent;
        x.ledger.extend(p.values.iter().cloned());
        errors += p.errors;
        if !p.all_acked() {
            failed.push(format!("{name} down: {} of 100 acks=all writes failed (rc {})", p.errors, p.rc));
        }
        x.c.restart(id)?;
        let t = x.lag() + Duration::from_secs(60);
        let (s, _) = x.c.wait_state(
            "obs",
            t,
            &|s: &crate::cluster::tools::PartitionState| PRIMARIES.iter().all(|p| s.in_isr(*p)),
            |_| {},
        )?;
        if s.is_none() {
            failed.push(format!(
                "after {name}'s restart the primaries were not all in the ISR within {:.0} s",
                t.as_secs_f64()
            ));
        }
    }
    let secs = super::round(t0.elapsed().as_secs_f64());
    o.check(
        &format!("rolling {label} over {} nodes, 100 acks=all writes with each one down", order.len()),
        failed.is_empty() && errors == 0,
        if failed.is_empty() { format!("{secs:.1} s, 0 producer errors") } else { failed.join("; ") },
    );
    Ok(secs)
}

/// The jars a home holds after `action`: the bundle's after install, Maven Central's after rollback.
fn expected_digests(x: &Ctx, action: Action) -> Vec<(String, String)> {
    x.c.rt
        .swapped
        .iter()
        .map(|(up, _, patched_sha)| {
            let name = up.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let digest = match action {
                Action::Install => patched_sha.clone(),
                Action::Rollback => std::fs::read(up).map(|b| crate::hash::sha256(&b)).unwrap_or_default(),
            };
            (name, digest)
        })
        .collect()
}
