//! PREF: the two edges where the observer gates meet Kafka's own elections
//! (docs/contract.md, "Edges").
//!
//! 1. An observer that leads because it was the only live replica when its
//!    partition was created (`4:1` and `1:4`, broker 1 down), under a
//!    preferred election (the release's own leader-election tool): the
//!    partition never ends up leaderless. Where a
//!    non-observer is in the ISR (ZooKeeper mode) it takes over; where none is
//!    (KRaft, whose controllers refuse an ISR holding an observer) the observer
//!    keeps leading and the tool reports PREFERRED_LEADER_NOT_AVAILABLE, as
//!    upstream does for a preferred replica that cannot lead.
//! 2. Leader balance with an observer first in an assignment (`4:1:2`) and the
//!    auto rebalance on, checking every 2 s: with broker 1 stopped and back,
//!    the rebalance hands leadership back to broker 1, the first non-observer,
//!    never to the observer (which also shows the rebalance is on); then the
//!    leader stays, with no leader change and no leader-epoch bump over six
//!    checks, and the controller's `PreferredReplicaImbalanceCount` is 0.
//!
//! The auto rebalance is a controller setting read at start-up, and every
//! other scenario runs without it (ZooKeeper brokers have it off; KRaft
//! controllers check every 300 s). So PREF turns it on with a rolling restart
//! of the nodes that can be controller, and restores their own configuration
//! the same way before it ends, whatever happened in between, unless it is the
//! last scenario on its cluster and passed (the cluster is torn down next).
//!
//! Not here: the hooks themselves (patches/edits.yaml: kraft-keep-leader,
//! zk-leader-balance, kraft-leader-balance).

use std::time::{Duration, Instant};

use super::{last_line, round, Ctx, ScenarioResult};
use crate::cluster::tools::gauge;
use crate::cluster::{BROKERS, OBSERVER};
use crate::error::{Error, Result};
use crate::model::Mode;

/// Part 1's topics, created while broker 1 is down, so the observer leads both: the
/// observer first (the preferred replica is 1 only by the leader-balance rule) and
/// broker 1 first (the preferred replica is 1 by upstream's rule too).
const LED: [(&str, &str); 2] = [("pref-a", "4:1"), ("pref-c", "1:4")];
/// Part 2's topic: the observer first, every broker up.
const BALANCED: &str = "pref-b";
/// The first non-observer of both assignments.
const PRIMARY: i32 = 1;
/// `leader.imbalance.check.interval.seconds` while PREF runs.
const CHECK_SECONDS: u64 = 2;
/// How many rebalance checks the leader must survive unmoved.
const CHECKS: u64 = 6;

pub fn pref(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    preferred_election_of_an_observer_leader(x, o)?;
    auto_rebalance_with_an_observer_first(x, o)
}

/// Part 1: create both topics while 1 is down (4 leads each), bring 1 back,
/// then a preferred election of each.
fn preferred_election_of_an_observer_leader(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    x.c.stop(PRIMARY);
    x.wait(
        o,
        "obs",
        x.lag() + x.session() + Duration::from_secs(10),
        "broker 1 stopped: out of obs's ISR",
        "primary_out_seconds",
        |s| !s.in_isr(PRIMARY),
    )?;
    let created = x.c.create_topics(&LED.map(|(topic, assignment)| (topic, assignment, &[] as &[&str])))?;
    for ((topic, assignment), out) in LED.iter().zip(&created) {
        o.check(
            &format!("{topic} created with replicas {assignment} while broker 1 is down"),
            out.ok(),
            format!("rc {}", out.rc),
        );
        let s = x.wait(
            o,
            topic,
            Duration::from_secs(20),
            &format!("{topic} has a leader"),
            &format!("{topic}_leader_seconds"),
            |s| s.leader.is_some(),
        )?;
        o.check(
            &format!("the observer, {topic}'s only live replica at creation, leads it"),
            s.as_ref().is_some_and(|s| s.leader == Some(OBSERVER)),
            s.map(|s| s.show()).unwrap_or_default(),
        );
    }
    let restart = x.c.restart(PRIMARY)?;
    o.fact("primary_restart_seconds", round(restart));
    let topics = LED.map(|(topic, _)| topic);
    if x.c.mode == Mode::Zk {
        for topic in topics {
            let (joined, secs) =
                x.c.wait_state(topic, x.lag() + Duration::from_secs(15), |s| s.in_isr(PRIMARY), |_| {})?;
            o.fact(&format!("{topic}_primary_in_isr_seconds"), joined.is_some().then(|| round(secs)));
            o.check(
                &format!("ZK: broker 1 back, the observer leader adds it to {topic}'s ISR"),
                joined.is_some(),
                format!("after {secs:.1} s"),
            );
        }
    } else {
        // One watch over both topics, long enough for a follower that fetches to have joined.
        x.hold_all(
            o,
            &topics,
            x.lag() + Duration::from_secs(15),
            |topic| format!("KRaft: broker 1 back, it stays out of {topic}'s ISR while the observer leads (the controllers refuse an ISR that holds an observer)"),
            |s| s.in_isr(PRIMARY),
        )?;
    }
    // Both elections, then one watch of each expected leader's topics.
    let mut expected = Vec::new();
    for topic in topics {
        expected.push((topic, elect_preferred(x, o, topic)?));
    }
    for leader in [PRIMARY, OBSERVER] {
        let led: Vec<&str> = expected.iter().filter(|(_, l)| *l == leader).map(|(t, _)| *t).collect();
        if led.is_empty() {
            continue;
        }
        x.hold_all(
            o,
            &led,
            Duration::from_secs(5),
            |topic| {
                if leader == PRIMARY {
                    format!("{topic} keeps broker 1 as its leader at every poll")
                } else {
                    format!("the observer keeps leading {topic} at every poll: the election left it a leader")
                }
            },
            |s| s.leader != Some(leader),
        )?;
    }
    for (topic, _) in LED {
        let deleted = x.c.delete_topic(topic)?;
        o.check(&format!("{topic} deleted"), deleted.ok(), format!("rc {}", deleted.rc));
    }
    Ok(())
}

/// A preferred election of `topic`, led by the observer: broker 1 takes over if it is in the ISR;
/// if not, the observer keeps leading and the tool reports PREFERRED_LEADER_NOT_AVAILABLE.
/// Returns the leader `topic` must keep from now on.
fn elect_preferred(x: &mut Ctx, o: &mut ScenarioResult, topic: &str) -> Result<i32> {
    let before = x.state(topic)?;
    o.fact(&format!("{topic}_before_election"), before.show());
    let out = x.c.elect(topic, "preferred", &[])?;
    let said = format!("rc {}: {}", out.rc, last_line(&out.stdout, &out.stderr));
    o.fact(&format!("{topic}_election"), &said);
    if before.in_isr(PRIMARY) {
        o.check(
            &format!("{topic}: with broker 1 in the ISR, the preferred election succeeds"),
            super::elected(&out) && out.stdout.contains("Successfully completed"),
            said,
        );
        x.wait(
            o,
            topic,
            Duration::from_secs(15),
            &format!("{topic}: broker 1, the first non-observer, takes leadership from the observer"),
            &format!("{topic}_primary_leads_seconds"),
            |s| s.leader == Some(PRIMARY),
        )?;
        Ok(PRIMARY)
    } else {
        let text = format!("{}\n{}", out.stdout, out.stderr);
        let reported = text.lines().find(|l| l.contains("PreferredLeaderNotAvailable"));
        o.check(
            &format!("{topic}: with no other replica that may lead, the tool reports PREFERRED_LEADER_NOT_AVAILABLE, as upstream does for a preferred replica that cannot lead"),
            !super::elected(&out) && reported.is_some(),
            reported.map(|l| format!("rc {}: {}", out.rc, l.trim())).unwrap_or(said),
        );
        Ok(OBSERVER)
    }
}

/// Part 2: `4:1:2` with every broker up, then the auto rebalance on for six checks.
fn auto_rebalance_with_an_observer_first(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let created = x.c.create_topic(BALANCED, "4:1:2", &[])?;
    o.check("pref-b created with replicas 4,1,2", created.ok(), format!("rc {}", created.rc));
    let s = x.wait(o, BALANCED, Duration::from_secs(20), "pref-b has a leader", "balanced_leader_seconds", |s| {
        s.leader.is_some()
    })?;
    o.check(
        "the observer first in pref-b's assignment is out of its ISR; broker 1, the first non-observer, leads",
        s.as_ref().is_some_and(|s| s.leader == Some(PRIMARY) && !s.in_isr(OBSERVER)),
        s.map(|s| s.show()).unwrap_or_default(),
    );
    let nodes: Vec<i32> = if x.c.mode == Mode::Zk { BROKERS.to_vec() } else { x.c.controllers() };
    let interval = format!("leader.imbalance.check.interval.seconds={CHECK_SECONDS}");
    let rebalance_on = ["auto.leader.rebalance.enable=true", interval.as_str()];
    let on = rolling_restart(x, o, &nodes, &rebalance_on, "auto rebalance on");
    let watched = on.and_then(|_| watch_rebalance_checks(x, o));
    // The last scenario on its cluster leaves the setting on: nothing runs on the cluster after it.
    let restored = if x.last && watched.is_ok() {
        x.c.journal
            .note("PREF is the last scenario on this cluster: the nodes keep the rebalance setting until teardown");
        Ok(())
    } else {
        rolling_restart(x, o, &nodes, &[], "own configuration restored")
    };
    watched?;
    restored?;
    let deleted = x.c.delete_topic(BALANCED)?;
    o.check("pref-b deleted", deleted.ok(), format!("rc {}", deleted.rc));
    Ok(())
}

fn watch_rebalance_checks(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    // The positive control: with pref-b's leadership moved off broker 1 and 1 back in the ISR, the
    // rebalance must hand it back to 1 (its first non-observer) and never to the observer.
    x.c.stop(PRIMARY);
    x.wait(
        o,
        BALANCED,
        x.lag() + x.session() + Duration::from_secs(10),
        "broker 1 stopped: pref-b's leadership moves to broker 2",
        "moved_off_seconds",
        |s| s.leader == Some(2),
    )?;
    let restart = x.c.restart(PRIMARY)?;
    o.fact("primary_restart_seconds_b", round(restart));
    let mut observer_led = Vec::new();
    let (back, secs) = x.c.wait_state(
        BALANCED,
        Duration::from_secs(CHECK_SECONDS * CHECKS + 30),
        |s| s.leader == Some(PRIMARY),
        |s| {
            if s.leader == Some(OBSERVER) {
                observer_led.push(s.show());
            }
        },
    )?;
    o.fact("rebalanced_back_seconds", back.is_some().then(|| round(secs)));
    o.check(
        "broker 1 back: the auto rebalance hands pref-b's leadership back to it, its first non-observer",
        back.is_some(),
        format!("after {secs:.1} s: {}", back.map(|s| s.show()).unwrap_or_default()),
    );
    o.check(
        "the rebalance never makes the observer leader",
        observer_led.is_empty(),
        super::polls_summary(&observer_led),
    );
    let t0 = Instant::now();
    let mut samples = Vec::new();
    let mut settled = false;
    while t0.elapsed() < Duration::from_secs(90) {
        let (controller, count) = imbalance_count(x)?;
        samples.push(format!("+{:.0}s controller {controller}: {count}", t0.elapsed().as_secs_f64()));
        if count == 0 {
            settled = true;
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    o.fact("imbalance_samples", &samples);
    o.fact("imbalance_settled_seconds", settled.then(|| round(t0.elapsed().as_secs_f64())));
    o.check(
        "PreferredReplicaImbalanceCount settles at 0: pref-b, led by its first non-observer, is not imbalanced",
        settled,
        samples.join("; "),
    );
    let epoch_before = x.c.probe_leader_epoch(BALANCED);
    x.hold(
        o,
        BALANCED,
        Duration::from_secs(CHECK_SECONDS * CHECKS),
        &format!("over {CHECKS} rebalance checks pref-b's leader stays broker 1 at every poll (no rebalance to the observer)"),
        |s| s.leader != Some(PRIMARY),
    )?;
    let epoch_after = x.c.probe_leader_epoch(BALANCED);
    o.fact("balanced_leader_epochs", [epoch_before, epoch_after]);
    o.check(
        "no leader-epoch bump over those checks (no rebalance storm)",
        epoch_before.is_some() && epoch_before == epoch_after,
        format!("leader epoch {epoch_before:?} then {epoch_after:?}"),
    );
    let (controller, count) = imbalance_count(x)?;
    o.check(
        &format!("PreferredReplicaImbalanceCount is still 0 after {CHECKS} checks"),
        count == 0,
        format!("controller {controller}: {count}"),
    );
    Ok(())
}

/// The active controller and its `PreferredReplicaImbalanceCount`, read with the release's JmxTool.
fn imbalance_count(x: &mut Ctx) -> Result<(i32, i64)> {
    let controller =
        x.c.active_controller()?.ok_or_else(|| Error::External("no active controller in the tool output".into()))?;
    let read = x.c.jmx(controller, &["kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount"])?;
    let count = gauge(&read, "KafkaController", "PreferredReplicaImbalanceCount", &[])
        .ok_or_else(|| Error::External(format!("controller {controller} has no PreferredReplicaImbalanceCount")))?;
    Ok((controller, count as i64))
}

/// Restarts `ids` one at a time with `lines` appended to their configuration
/// (none: their own), each back before the next goes: a broker in obs's ISR
/// (the observer: started), a controller with the quorum led again. Every
/// file is written first, so a node that the suite's recovery starts after a
/// failure here starts with the configuration asked for.
fn rolling_restart(x: &mut Ctx, o: &mut ScenarioResult, ids: &[i32], lines: &[&str], what: &str) -> Result<()> {
    let t0 = Instant::now();
    for &id in ids {
        x.c.set_server_overrides(id, lines)?;
    }
    let mut back = Vec::new();
    for &id in ids {
        x.c.stop(id);
        x.c.restart(id)?;
        let t = Instant::now();
        let ready = if BROKERS.contains(&id) && id != OBSERVER {
            x.c.wait_state("obs", Duration::from_secs(60), |s| s.in_isr(id), |_| {})?.0.is_some()
        } else if BROKERS.contains(&id) {
            true
        } else {
            let mut led = false;
            while !led && t.elapsed() < Duration::from_secs(30) {
                led = x.c.active_controller()?.is_some();
            }
            led
        };
        back.push(format!(
            "{id} {}",
            if ready { format!("{:.1} s", t.elapsed().as_secs_f64()) } else { "NOT back".into() }
        ));
        if !ready {
            break;
        }
    }
    let all = back.len() == ids.len() && back.iter().all(|b| !b.ends_with("NOT back"));
    o.fact(&format!("{what}_seconds"), round(t0.elapsed().as_secs_f64()));
    o.check(&format!("{what}: {ids:?} restarted one at a time, each back"), all, back.join(", "));
    if all {
        Ok(())
    } else {
        Err(Error::External(format!("{what}: a node did not come back ({})", back.join(", "))))
    }
}
