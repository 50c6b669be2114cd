//! MIGRATE: a patched ZooKeeper-mode cluster with observers taken to KRaft (KIP-866, 3.7–3.9)
//! the way upstream's operations guide gives it, under an idempotent acks=all producer and a
//! read_committed consumer: three KRaft controllers added in migration mode (formatted with the
//! ZooKeeper cluster's id), the brokers rolled into migration mode one by one (the controller
//! migrates the metadata and goes to dual-write once all have registered), then rolled to KRaft,
//! then the controllers restarted without ZooKeeper (finalised), and ZooKeeper stopped. The
//! phases are read off the controllers' own log lines (`transitioning from A to B state`,
//! `Completed migration of metadata`, `MIGRATION to POST_MIGRATION`) and each broker's
//! (`Successfully registered broker N`).
//!
//! While the KRaft controller is active and the brokers still speak ZooKeeper (dual-write), the
//! KRaft controller decides: the observer promoted and demoted (an ISR expansion and shrink), an
//! unclean election on a topic whose only live replica is the observer (it must stay without
//! a leader), and reassignments (onto the observer alone: refused; a primary added with the
//! observer listed first: complete without it, which then loses the preferred election). Both
//! controller kinds' registries are shown reading observer.ids (their audit lines). After every step the UPGRADE invariants: 4 never in obs's ISR nor leading it, in
//! ufull's ISR by its topic rule, the primaries in obs's ISR, writes acked while a node was down.
//!
//! With `--upgrade-to B,C,…` the finalised KRaft cluster is then rolled to each release in
//! turn under the same clients (UPGRADE's steps and checks): the life of one cluster.
//!
//! With `--upstream-controllers` the controllers run the release's own jars (brokers patched):
//! the negative control, which must show the observer leading or in an ISR in the window.
//! Runs alone (`--migrate`) on a ZooKeeper-mode cluster built from the KRaft jar set, and leaves
//! it a KRaft cluster.

use std::time::{Duration, Instant};

use super::roll::{Traffic, ACKS_IN_WINDOW};
use super::upgrade::invariants;
use super::{round, Ctx, Flavor, ScenarioResult};
use crate::cluster::tools::PartitionState;
use crate::cluster::{BROKERS, OBSERVER};
use crate::error::Result;
use crate::model::Mode;
use crate::version::KafkaVersion;

const FULL: &str = "ufull";
/// 4 and 1 only, unclean elections allowed: with 1 down the observer is the only live replica.
const ELECT: &str = "uelect";
const RULES: &str = "4\ntopic:ufull observers=none\n";
const WAIT: Duration = Duration::from_secs(60);

pub fn migrate(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let v = x.c.rt.version;
    if x.c.mode != Mode::Zk || x.flavor == Flavor::Upstream || x.c.bundle.is_none() {
        o.check("MIGRATE needs a patched ZooKeeper-mode run (okp verify --version V --migrate)", false, "not this run");
        return Ok(());
    }
    if v < KafkaVersion::new(3, 7, 0) || v.major > 3 {
        o.check("MIGRATE runs on 3.7–3.9, the releases with both modes", false, v.to_string());
        return Ok(());
    }
    let upstream_controllers = x.tuning.upstream_controllers;
    o.fact("controllers", if upstream_controllers { "the release's own jars (negative control)" } else { "patched" });
    let t_all = Instant::now();
    let brokers = BROKERS.to_vec();
    x.c.set_observers(&brokers, RULES)?;
    x.settle_observers();
    let outs = x.c.create_topics(&[
        (FULL, "1:2:4", &["min.insync.replicas=2"][..]),
        (ELECT, "1:4", &["min.insync.replicas=1", "unclean.leader.election.enable=true"][..]),
    ])?;
    o.check(
        "topics ufull (1:2:4) and uelect (1:4, unclean elections on) created",
        outs.iter().all(|out| out.ok()),
        outs.iter().map(|out| format!("rc {}", out.rc)).collect::<Vec<_>>().join(", "),
    );
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.wait(o, FULL, t, "before: 4 in ufull's ISR (its topic rule)", "full_join_seconds", |s| s.in_isr(OBSERVER))?;
    x.wait(o, ELECT, t, "before: uelect led by 1, 4 outside its ISR", "elect_ready_seconds", |s| {
        s.leader == Some(1) && !s.in_isr(OBSERVER)
    })?;
    let traffic = Traffic::start(x, "MIGRATE")?;
    let (acks, secs) = traffic.acks_since(0);
    o.check(
        "before: acks=all writes acked on the ZooKeeper cluster",
        acks >= ACKS_IN_WINDOW,
        format!("{acks} acks in {secs:.1} s"),
    );

    // A latency baseline on the ZooKeeper cluster, as UPGRADE takes it.
    std::thread::sleep(Duration::from_millis(
        super::upgrade::BASELINE_FROM_MS + 10_000u64.saturating_sub(traffic.ms()),
    ));
    let from_ms = traffic.ms();
    let mut phases: Vec<serde_json::Value> = Vec::new();
    let mut broke: Vec<String> = Vec::new();

    // 1. KRaft controllers in migration mode.
    let t0 = Instant::now();
    x.c.add_migration_controllers(RULES, upstream_controllers)?;
    let waiting = x.c.wait_log(&x.c.controllers(), "to WAIT_FOR_BROKERS state", false, WAIT)?;
    o.check(
        "controllers 101–103 in migration mode, formatted with the ZooKeeper cluster's id: waiting for the brokers",
        waiting.is_some(),
        format!("{waiting:?}"),
    );
    step(x, "KRaft controllers added in migration mode", t0, &traffic, &mut phases, &mut broke)?;

    // 2. Brokers into migration mode, one by one; dual-write once all have registered.
    for &id in &brokers {
        let t0 = Instant::now();
        roll_broker(x, &traffic, id, &mut broke, |c| c.broker_to_migration_mode(id))?;
        let reg = x.c.wait_log(&[id], &format!("Successfully registered broker {id}"), true, WAIT)?;
        if reg.is_none() {
            broke.push(format!("broker {id} in migration mode did not register with the KRaft controller"));
        }
        step(x, &format!("broker {id} in migration mode"), t0, &traffic, &mut phases, &mut broke)?;
    }
    let migrated =
        x.c.wait_log(&x.c.controllers(), "Completed migration of metadata from ZooKeeper to KRaft", false, WAIT)?;
    let dual = x.c.wait_log(&x.c.controllers(), "to DUAL_WRITE state", false, WAIT)?;
    o.check(
        "every broker registered: the KRaft controller migrated the metadata and went to dual-write",
        migrated.is_some() && dual.is_some(),
        format!("metadata migrated: {migrated:?}; dual-write: {dual:?}"),
    );

    // 3. The dual-write window: the KRaft controller decides for brokers that speak ZooKeeper.
    let t0 = Instant::now();
    let znode = x.c.zk(&["get", "/controller"])?;
    let kraft_holds =
        znode.stdout.contains("kraftControllerEpoch") && !znode.stdout.contains("\"kraftControllerEpoch\":-1");
    o.check(
        "dual-write: /controller in ZooKeeper names the KRaft controller",
        kraft_holds,
        znode.stdout.lines().find(|l| l.contains("brokerid")).unwrap_or("").trim().to_string(),
    );
    let window_bad = decisions_in_window(x, o)?;
    let audit = x.c.grep_logs(&["OBSERVER AUDIT"]);
    let by_controllers =
        audit.iter().filter(|l| l.starts_with("controller-") && l.contains("registry=controller")).count();
    let by_brokers = audit.iter().filter(|l| l.starts_with("broker-") && l.contains("registry=broker")).count();
    o.fact("audit_lines", serde_json::json!({"kraft_controllers": by_controllers, "brokers": by_brokers}));
    if upstream_controllers {
        o.check(
            "negative control: the KRaft controllers run the release's own jars (no observer registry, no audit line), the brokers okp's",
            by_controllers == 0 && by_brokers > 0,
            format!("{by_controllers} audit lines from KRaft controllers, {by_brokers} from brokers"),
        );
    } else {
        o.check(
            "both controller kinds read observer.ids: audit lines from the KRaft controllers' registry and the brokers' (ZooKeeper controller) registry",
            by_controllers > 0 && by_brokers > 0,
            format!("{by_controllers} from KRaft controllers, {by_brokers} from brokers"),
        );
    }
    if upstream_controllers {
        o.check(
            "negative control: with the release's own jars on the KRaft controllers, the observer leads or enters an ISR in the dual-write window",
            window_bad.iter().any(|b| b.contains("4 led or was in the ISR")),
            if window_bad.is_empty() { "it did not: the control failed".to_string() } else { window_bad.join("; ") },
        );
    } else {
        o.check(
            "dual-write window: the KRaft controller kept the observer out of every ISR it observes and out of leadership (promote, demote, unclean election, reassignments, preferred election)",
            window_bad.is_empty(),
            if window_bad.is_empty() { "held".to_string() } else { window_bad.join("; ") },
        );
    }
    step(
        x,
        "dual-write window: promote, demote, unclean election, reassignments",
        t0,
        &traffic,
        &mut phases,
        &mut broke,
    )?;

    // 4. Brokers to KRaft, one by one.
    for &id in &brokers {
        let t0 = Instant::now();
        roll_broker(x, &traffic, id, &mut broke, |c| c.broker_to_kraft(id))?;
        step(x, &format!("broker {id} in KRaft mode"), t0, &traffic, &mut phases, &mut broke)?;
    }

    // The controllers' driver states so far (a rollback takes the controllers away).
    let mut seen = x.c.migration_transitions();
    if x.tuning.migrate_back {
        roll_back(x, o, &traffic, &brokers, &mut phases, &mut broke)?;
    } else {
        finalise(x, o, &traffic, &mut phases, &mut broke)?;
        seen = x.c.migration_transitions();
        // The life of one cluster: the KRaft cluster rolled on to each `--upgrade-to` release
        // in turn, the same clients running (UPGRADE's steps and checks for each hop).
        if x.c.next.is_some() {
            let last = super::upgrade::roll_every_hop(x, o, &traffic, &mut phases)?;
            o.fact("to", last.to_string());
        }
    }
    let transitions: Vec<String> = seen.iter().map(|(id, a, b)| format!("{id}: {a} → {b}")).collect();
    o.fact("driver_transitions", &transitions);
    o.fact("phases", &phases);
    o.check(
        "after every step: 4 never in obs's ISR nor leading it (watched), in ufull's ISR, the primaries in obs's ISR, writes acked while each node was down",
        broke.is_empty(),
        if broke.is_empty() { format!("{} steps, {:.1} s", phases.len(), t_all.elapsed().as_secs_f64()) } else { broke.join(" | ") },
    );
    super::upgrade::latency_fact(x, o, &traffic, from_ms, traffic.ms());
    traffic.finish(x, o, "migrate_traffic");
    x.read_back(o, "MIGRATE", &[])?;
    let leader = x.state("obs")?.leader.unwrap_or(1);
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, leader, "obs", Duration::from_secs(45));
    let mode = if x.tuning.migrate_back { "back in ZooKeeper mode" } else { "in KRaft mode" };
    o.check(
        &format!("{mode}: observer 4's copy of obs is byte-identical to leader {leader}'s"),
        same,
        format!("{secs:.1} s"),
    );
    for topic in [FULL, ELECT] {
        let deleted = x.c.delete_topic_and_wait(topic, Duration::from_secs(60)).unwrap_or(false);
        o.check(&format!("clean-up: topic {topic} deleted"), deleted, "");
    }
    let all = x.c.kafka_nodes();
    x.c.set_observers(&all, "4\n")?;
    Ok(())
}

/// The finalisation: each controller restarted without ZooKeeper; then ZooKeeper stopped.
fn finalise(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    traffic: &Traffic,
    phases: &mut Vec<serde_json::Value>,
    broke: &mut Vec<String>,
) -> Result<()> {
    let t0 = Instant::now();
    for id in x.c.controllers() {
        x.c.stop(id);
        x.c.controller_without_zk(id)?;
        x.c.restart(id)?;
    }
    let fin = x.c.wait_log(&x.c.controllers(), "MIGRATION to POST_MIGRATION", false, WAIT)?;
    o.check(
        "finalised: the controllers, restarted without ZooKeeper, moved the migration to POST_MIGRATION",
        fin.is_some(),
        format!("{fin:?}"),
    );
    x.c.migrated();
    step(x, "finalised (controllers without ZooKeeper)", t0, traffic, phases, broke)?;
    let t0 = Instant::now();
    x.c.stop_zookeeper();
    step(x, "ZooKeeper stopped", t0, traffic, phases, broke)
}

/// The rollback from dual-write with KRaft brokers, as the operations guide gives it: each
/// broker back to ZooKeeper mode with the migration lines kept, the controllers stopped, the
/// `/controller` and `/migration` znodes deleted (a broker becomes the ZooKeeper controller),
/// each broker to plain ZooKeeper mode.
fn roll_back(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    traffic: &Traffic,
    brokers: &[i32],
    phases: &mut Vec<serde_json::Value>,
    broke: &mut Vec<String>,
) -> Result<()> {
    for &id in brokers {
        let t0 = Instant::now();
        roll_broker(x, traffic, id, broke, |c| c.broker_back_to_migration_mode(id))?;
        step(
            x,
            &format!("rollback: broker {id} back in ZooKeeper mode, migration lines kept"),
            t0,
            traffic,
            phases,
            broke,
        )?;
    }
    let t0 = Instant::now();
    x.c.remove_controllers();
    raise_zk_controller_epoch(x, o)?;
    let mut deleted = Vec::new();
    for znode in ["/controller", "/migration"] {
        let out = x.c.zk(&["deleteall", znode])?;
        deleted.push(format!("{znode}: rc {}", out.rc));
    }
    let elected = x.c.wait_log(brokers, "successfully elected as the controller", true, WAIT)?;
    o.check(
        "rollback: controllers stopped, /controller and /migration deleted, a broker elected ZooKeeper controller",
        elected.is_some(),
        format!("{}; elected: {elected:?}", deleted.join(", ")),
    );
    step(x, "rollback: KRaft controllers gone, a broker is the ZooKeeper controller", t0, traffic, phases, broke)?;
    for &id in brokers {
        let t0 = Instant::now();
        roll_broker(x, traffic, id, broke, |c| c.broker_to_zk_mode(id))?;
        step(x, &format!("rollback: broker {id} in plain ZooKeeper mode"), t0, traffic, phases, broke)?;
    }
    let znode = x.c.zk(&["get", "/controller"])?;
    let zk_holds = znode.stdout.contains("\"kraftControllerEpoch\":-1");
    o.check(
        "rolled back: /controller names a broker (kraftControllerEpoch -1)",
        zk_holds,
        znode.stdout.lines().find(|l| l.contains("brokerid")).unwrap_or("").trim().to_string(),
    );
    Ok(())
}

/// KAFKA-20488: a ZooKeeper controller elected after the rollback takes `/controller_epoch` + 1,
/// while the partition states the KRaft controller wrote in dual-write carry the KRaft epoch; a
/// ZooKeeper controller below it has every partition write refused ("Leader and isr path
/// written by another controller"), so no leader moves until enough elections pass it (seen
/// here: 3.9.0, ZooKeeper epoch 7 under KRaft epoch 10, obs without a leader for 60 s). Before
/// `/controller` is deleted, `/controller_epoch` is raised to the KRaft epoch when below it.
fn raise_zk_controller_epoch(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let kraft = kraft_epoch(&x.c.zk(&["get", "/controller"])?.stdout);
    let zk = last_number(&x.c.zk(&["get", "/controller_epoch"])?.stdout);
    let mut raised = None;
    if let (Some(k), Some(z)) = (kraft, zk) {
        if z < k {
            let out = x.c.zk(&["set", "/controller_epoch", &k.to_string()])?;
            raised = Some(serde_json::json!({"to": k, "rc": out.rc}));
        }
    }
    x.c.journal
        .note(&format!("controller epochs before the rollback: KRaft {kraft:?}, ZooKeeper {zk:?}; raised: {raised:?}"));
    o.fact("rollback_controller_epochs", serde_json::json!({"kraft": kraft, "zookeeper": zk, "raised": raised}));
    Ok(())
}

/// `kraftControllerEpoch` in the `/controller` znode's JSON, as zookeeper-shell prints it.
fn kraft_epoch(get: &str) -> Option<i64> {
    let at = get.find("\"kraftControllerEpoch\":")? + "\"kraftControllerEpoch\":".len();
    let digits: String = get[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    digits.parse().ok()
}

/// The last line of zookeeper-shell's output that is a number alone (`get /controller_epoch`).
fn last_number(get: &str) -> Option<i64> {
    get.lines().rev().find_map(|l| l.trim().parse().ok())
}

/// Stops broker `id`, changes its configuration with `change`, waits for acks without it,
/// starts it again.
fn roll_broker(
    x: &mut Ctx,
    traffic: &Traffic,
    id: i32,
    broke: &mut Vec<String>,
    change: impl FnOnce(&mut crate::cluster::Cluster) -> Result<()>,
) -> Result<()> {
    x.c.stop(id);
    let down = traffic.ms();
    change(x.c)?;
    let (acks, secs) = traffic.acks_since(down);
    x.c.journal.note(&format!("broker {id} down: {acks} acks=all writes acked in {secs:.1} s"));
    if acks < ACKS_IN_WINDOW {
        broke.push(format!("broker {id} down: {acks} acks in {secs:.0} s"));
    }
    x.c.restart(id)?;
    Ok(())
}

/// After a step: the invariants, its time, acks and observer lag as one phase.
fn step(
    x: &mut Ctx,
    name: &str,
    t0: Instant,
    traffic: &Traffic,
    phases: &mut Vec<serde_json::Value>,
    broke: &mut Vec<String>,
) -> Result<()> {
    let held = invariants(x)?;
    let secs = round(t0.elapsed().as_secs_f64());
    let hw = x.c.probe_hw("obs");
    let leo = x.c.probe_leo(OBSERVER, "obs");
    let lag = hw.zip(leo).map(|(h, l)| h - l);
    phases.push(serde_json::json!({"phase": name, "seconds": secs, "acks_so_far": traffic.acks_between(0, traffic.ms()), "observer_lag": lag, "problems": held}));
    x.c.journal.note(&format!(
        "MIGRATE {name}: {secs:.1} s, observer lag {lag:?}, {}",
        if held.is_empty() { "every check held".into() } else { format!("FAILED {held:?}") }
    ));
    broke.extend(held.into_iter().map(|h| format!("{name}: {h}")));
    Ok(())
}

/// The KRaft controller's decisions while the brokers still speak ZooKeeper: the observer
/// promoted (joins obs's ISR) and demoted (leaves it), then broker 1 killed so the observer is
/// uelect's only live replica, unclean elections on: it must not lead, neither by the
/// controller's own unclean election nor by an operator's (kafka-leader-election). What broke (the negative
/// control wants something here).
fn decisions_in_window(x: &mut Ctx, o: &mut ScenarioResult) -> Result<Vec<String>> {
    let mut bad = super::upgrade::promote_then_demote(x, o, "window", "in the dual-write window")?;
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    // Promoted, 4 joined every ISR, uelect's too; its demotion there must be done before 1 is
    // killed (a first run killed 1 0.1 s too early and saw 4 still in uelect's ISR, in the
    // middle of a legitimate demotion).
    let (s, _) = x.c.wait_state(ELECT, t, |s: &PartitionState| !s.in_isr(OBSERVER) && s.leader == Some(1), |_| {})?;
    if s.is_none() {
        bad.push(format!("demoted, 4 still in uelect's ISR after {:.0} s", t.as_secs_f64()));
    }
    x.settle_observers();
    // The unclean election: 1 killed, 4 the only live replica of uelect.
    x.c.kill9(1);
    let hold = x.session() + Duration::from_secs(8);
    let seen = x.c.watch_all(&[ELECT, "obs"], hold, |s| s.leader == Some(OBSERVER) || s.in_isr(OBSERVER))?;
    for (topic, (polls, v)) in [ELECT, "obs"].iter().zip(seen) {
        if !v.is_empty() {
            bad.push(format!(
                "{topic} with broker 1 killed: 4 led or was in the ISR in {} of {polls} polls: {}",
                v.len(),
                super::polls_summary(&v)
            ));
        }
    }
    // An operator's explicit unclean election, then the same watch: in the negative control
    // 3.7.2's own KRaft controller did not elect uncleanly by itself (3.9.2's did), so the
    // window needs the operator's request to show what its jar decides.
    let out = x.c.elect(ELECT, "unclean", &[1])?;
    let elected = super::elected(&out);
    o.fact(
        "window_unclean_election",
        serde_json::json!({"rc": out.rc, "elected": elected, "said": super::last_line(&out.stdout, &out.stderr)}),
    );
    let seen = x.c.watch_all(&[ELECT], Duration::from_secs(4), |s| s.leader == Some(OBSERVER) || s.in_isr(OBSERVER))?;
    for (polls, v) in seen {
        if elected || !v.is_empty() {
            bad.push(format!(
                "uelect, kafka-leader-election --election-type unclean with broker 1 killed (rc {}): 4 led or was in the ISR in {} of {polls} polls: {}",
                out.rc,
                v.len(),
                super::polls_summary(&v)
            ));
        }
    }
    x.c.restart(1)?;
    let (s, _) = x.c.wait_state(ELECT, WAIT, |s: &PartitionState| s.leader == Some(1), |_| {})?;
    if s.is_none() {
        bad.push("uelect: 1 not leading again within 60 s of its restart".into());
        return Ok(bad);
    }
    bad.extend(reassign_in_window(x, o)?);
    Ok(bad)
}

/// The window's reassignments of uelect (1 leading, 4 outside its ISR), each decided by the KRaft
/// controller for brokers that speak ZooKeeper: onto the observer alone (refused, naming it; not
/// asked of the release's own controller jars, which would accept it and leave 4 the partition's
/// only replica); then 2 added with the observer listed first (complete once 2 is in the ISR:
/// 3.8–3.9's own controller waits for 4 too), a preferred election (4 is first: it must not
/// lead), and back to 1,4. What broke.
fn reassign_in_window(x: &mut Ctx, o: &mut ScenarioResult) -> Result<Vec<String>> {
    let mut bad = Vec::new();
    if x.tuning.upstream_controllers {
        o.fact(
            "window_reassign_refusal",
            "not asked: the release's own controller accepts a reassignment onto broker 4 alone",
        );
    } else {
        let out = x.c.reassign(ELECT, &[OBSERVER], "--execute")?;
        let said = format!("{}\n{}", out.stdout, out.stderr);
        let line = said.lines().find(|l| l.contains("is an observer")).unwrap_or("").trim().to_string();
        let shown = if line.is_empty() { super::last_line(&out.stdout, &out.stderr) } else { line.clone() };
        o.fact("window_reassign_refusal", serde_json::json!({"rc": out.rc, "said": shown}));
        if out.ok() || line.is_empty() {
            bad.push(format!("uelect onto broker 4 alone: not refused naming the observer (rc {}: {shown})", out.rc));
        }
    }
    let (done, seen) = reassign_and_wait(x, &[OBSERVER, 1, 2])?;
    let s = x.state(ELECT)?;
    o.fact(
        "window_reassignment",
        serde_json::json!({"target": "4,1,2", "complete_seconds": done.map(round), "state": s.show()}),
    );
    if !seen.is_empty() {
        bad.push(format!(
            "uelect, reassigned to 4,1,2: 4 led or was in the ISR in {} polls: {}",
            seen.len(),
            super::polls_summary(&seen)
        ));
    }
    if done.is_none() {
        // The release's own 3.8–3.9 controller waits for the observer, which never joins the
        // ISR: cancelled, uelect is back on 1,4 for the phases after the window.
        let out = x.c.reassign(ELECT, &[OBSERVER, 1, 2], "--cancel")?;
        x.c.journal.note(&format!("uelect's reassignment to 4,1,2 cancelled: rc {}", out.rc));
        bad.push(format!("uelect, 2 added with 4 listed first: not complete within {} s", REASSIGN_WITHIN.as_secs()));
        return Ok(bad);
    }
    if s.leader == Some(OBSERVER) || !s.in_isr(2) {
        bad.push(format!("uelect reassigned to 4,1,2: {}", s.show()));
    }
    // 4 is the first replica: a preferred election must leave it out.
    let out = x.c.elect(ELECT, "preferred", &[])?;
    let polls =
        x.c.watch_all(&[ELECT], Duration::from_secs(4), |s| s.leader == Some(OBSERVER) || s.in_isr(OBSERVER))?;
    let s = x.state(ELECT)?;
    o.fact(
        "window_preferred_election",
        serde_json::json!({"rc": out.rc, "said": super::last_line(&out.stdout, &out.stderr), "state": s.show()}),
    );
    for (n, v) in polls {
        if !v.is_empty() || s.leader == Some(OBSERVER) {
            bad.push(format!(
                "uelect, a preferred election with 4 listed first: 4 led or was in the ISR in {} of {n} polls: {}",
                v.len(),
                super::polls_summary(&v)
            ));
        }
    }
    let (back, seen) = reassign_and_wait(x, &[1, OBSERVER])?;
    o.fact("window_reassignment_back", serde_json::json!({"target": "1,4", "complete_seconds": back.map(round)}));
    if back.is_none() || !seen.is_empty() {
        bad.push(format!(
            "uelect back to 1,4: complete {back:?}; 4 led or was in the ISR in {} polls: {}",
            seen.len(),
            super::polls_summary(&seen)
        ));
    }
    Ok(bad)
}

/// How long a window reassignment may take (uelect holds no records).
const REASSIGN_WITHIN: Duration = Duration::from_secs(45);

/// Reassigns uelect to `target` and polls it until `--verify` says complete: the seconds it took
/// (None if not within REASSIGN_WITHIN) and every poll where 4 led or was in the ISR.
fn reassign_and_wait(x: &mut Ctx, target: &[i32]) -> Result<(Option<f64>, Vec<String>)> {
    let t0 = Instant::now();
    let exec = x.c.reassign(ELECT, target, "--execute")?;
    x.c.journal.note(&format!("uelect → {target:?}: --execute rc {}", exec.rc));
    if !exec.ok() {
        return Ok((None, Vec::new()));
    }
    let (done, seen, _) = super::reassign::await_reassignment(x, ELECT, target, t0, REASSIGN_WITHIN, |s| {
        s.leader == Some(OBSERVER) || s.in_isr(OBSERVER)
    })?;
    Ok((done.map(|at| at.duration_since(t0).as_secs_f64()), seen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epochs_are_read_from_zookeeper_shell_output() {
        // As a 3.9.0 run's zookeeper-shell printed them (journal of 3.9.0-zk-to-kraft-and-back).
        let controller = "Connecting to 127.0.0.1:22000\n\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n{\"version\":2,\"brokerid\":101,\"timestamp\":\"1796493781995\",\"kraftControllerEpoch\":9}\n";
        assert_eq!(kraft_epoch(controller), Some(9));
        assert_eq!(
            kraft_epoch("{\"version\":2,\"brokerid\":2,\"timestamp\":\"1\",\"kraftControllerEpoch\":-1}"),
            Some(-1)
        );
        assert_eq!(kraft_epoch("Node does not exist: /controller"), None);
        let epoch =
            "Connecting to 127.0.0.1:22000\n\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n7\n";
        assert_eq!(last_number(epoch), Some(7));
        assert_eq!(last_number("Node does not exist: /controller_epoch"), None);
    }
}
