//! TOPIC: observers per topic (docs/observer-ids.md, "Topic rules"). Broker 4 is an observer of
//! topic `tobs` and a full replica of topic `tfull` at the same time, by one rule in observer.ids;
//! acks=all on `tobs` does not wait for 4 frozen while `tfull` does, as upstream; the rules are
//! swapped live and back; an exact rule wins over an overlapping prefix rule; a rack rule
//! (`rack:r4`) gives what the id rule gives; a pattern rule swaps them, and a pattern outside the
//! language freezes every node's last good set.

use std::time::{Duration, Instant};

use super::{round, Ctx, Flavor, ScenarioResult};
use crate::cluster::tools::PartitionState;
use crate::cluster::OBSERVER;
use crate::error::Result;

/// The topic 4 observes under the cluster-wide id, and the one a rule makes it a full replica of.
const OBS: &str = "tobs";
const FULL: &str = "tfull";

/// The cluster-wide observer 4, and topic `tfull` with no observers.
const RULES: &str = "4\ntopic:tfull observers=none\n";
/// The roles swapped: `tobs` has no observers, `tfull` takes the cluster-wide 4.
const SWAPPED: &str = "4\ntopic:tobs observers=none\n";
/// A prefix rule covering both topics and an exact rule for `tobs`: the exact rule wins for it.
const PRECEDENCE: &str = "4\nprefix:t observers=none\ntopic:tobs observers=4\n";
/// The prefix rule alone: 4 fully replicates both topics.
const PREFIX_ONLY: &str = "4\nprefix:t observers=none\n";
/// A pattern rule (docs/observer-ids.md, "Patterns"): `tobs` has no observers, `tfull` takes the
/// cluster-wide 4 (a pattern matches the whole name).
const BY_PATTERN: &str = "4\nregex:to[a-z]+ observers=none\n";
/// A pattern outside the language (Java reads `[[:alpha:]]` as the set `{: a l p h}`, which
/// matches neither topic): every node refuses the file and keeps BY_PATTERN's set, frozen.
const REFUSED_PATTERN: &str = "4\nregex:[[:alpha:]]+ observers=none\n";
/// PRECEDENCE with 4 named by its rack (broker.rack r4) instead of its id: the same observers.
const BY_RACK: &str = "4\nprefix:t observers=none\ntopic:tobs observers=rack:r4\n";

pub fn topic(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let nodes = x.c.kafka_nodes();
    x.c.set_observers(&nodes, RULES)?;
    let r = steps(x, o);
    // Leave the cluster as found: observer.ids `4` everywhere and in effect, both topics gone.
    let restored = x.c.set_observers(&nodes, "4\n");
    let edited = Instant::now();
    for t in [OBS, FULL] {
        let deleted = x.c.delete_topic_and_wait(t, Duration::from_secs(60)).unwrap_or(false);
        o.check(&format!("clean-up: topic {t} deleted"), deleted, "");
    }
    let settle = x.ttl() + Duration::from_secs(1);
    if let Some(left) = settle.checked_sub(edited.elapsed()) {
        std::thread::sleep(left);
    }
    restored?;
    r
}

fn in_isr(s: &PartitionState) -> bool {
    s.in_isr(OBSERVER)
}

fn leads(s: &PartitionState) -> bool {
    s.leader == Some(OBSERVER)
}

fn steps(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let patched = x.flavor == Flavor::Patched;
    let outs = x.c.create_topics(&[
        (OBS, "1:2:4", &["min.insync.replicas=2"][..]),
        (FULL, "1:2:4", &["min.insync.replicas=2"][..]),
    ])?;
    o.check(
        "topics tobs and tfull created on 1:2:4 with `4` and `topic:tfull observers=none` in observer.ids",
        outs.iter().all(|out| out.ok()),
        outs.iter().map(|out| format!("rc {}", out.rc)).collect::<Vec<_>>().join(", "),
    );
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.wait(
        o,
        FULL,
        t,
        "tfull: broker 4 is in the ISR (a full replica by its topic rule)",
        "full_join_seconds",
        in_isr,
    )?;
    x.hold_all(
        o,
        &[OBS],
        x.lag() * 2 + Duration::from_secs(2),
        |_| "tobs: broker 4 never enters the ISR and never leads (observer by the cluster-wide id)".into(),
        |s| in_isr(s) || leads(s),
    )?;

    // Broker 4 frozen while records flow (LAT's measurement): acks=all on tobs does not wait for
    // it; on tfull it stalls, as upstream, until the leader drops 4 after replica.lag.time.max.ms.
    let lag_ms = x.lag().as_secs_f64() * 1000.0;
    let limit = lag_ms / 3.0;
    for (topic, gated) in [(FULL, false), (OBS, true)] {
        let (out, f, flowing) = super::write_path::produce_while_frozen(x, topic)?;
        o.fact(&format!("{topic}_observer_frozen"), &f);
        o.fact(&format!("{topic}_frozen_after_seconds"), flowing.map(round));
        o.check(
            &format!("{topic}: 600 records with acks=all, broker 4 frozen once they flow"),
            flowing.is_some() && out.ok() && f.as_ref().is_some_and(|p| p.records == 600),
            format!("rc {} {:?}", out.rc, f),
        );
        let shown = f
            .as_ref()
            .map(|p| format!("p50 {} ms, p99 {} ms, max {} ms", p.p50_ms, p.p99_ms, p.max_ms))
            .unwrap_or_else(|| "no summary".into());
        if gated {
            o.check(
                &format!("tobs: acks=all does not wait for 4 frozen: p99 < {limit:.0} ms (a third of replica.lag.time.max.ms)"),
                f.as_ref().is_some_and(|p| p.p99_ms < limit),
                shown,
            );
        } else {
            o.check(
                &format!("tfull: acks=all waits for 4 frozen, as upstream: max >= {:.0} ms (half of replica.lag.time.max.ms)", lag_ms / 2.0),
                f.as_ref().is_some_and(|p| p.max_ms >= lag_ms / 2.0),
                shown,
            );
            let t = x.lag() + Duration::from_secs(40);
            x.wait(o, FULL, t, "tfull: thawed broker 4 rejoins the ISR", "full_rejoin_seconds", in_isr)?;
        }
    }

    if !patched {
        // The negative control has shown what it must (upstream ignores the rules): the steps
        // below only wait out their timeouts there.
        return Ok(());
    }

    // The rules swapped live: 4 joins tobs's ISR and leaves tfull's. First 4 back in tfull's ISR
    // (tobs's freeze kept it away from tfull too), so its leaving is the swap's doing.
    let t = x.lag() + Duration::from_secs(40);
    x.wait(o, FULL, t, "tfull: 4 back in the ISR before the swap", "full_back_seconds", in_isr)?;
    let nodes = x.c.kafka_nodes();
    x.c.set_observers(&nodes, SWAPPED)?;
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.wait(o, OBS, t, "swapped: 4 joins tobs's ISR (`topic:tobs observers=none`)", "swap_join_seconds", in_isr)?;
    x.wait(o, FULL, t, "swapped: 4 leaves tfull's ISR (the cluster-wide 4 now applies)", "swap_leave_seconds", |s| {
        !in_isr(s)
    })?;

    // Overlapping rules: `prefix:t observers=none` covers both, `topic:tobs observers=4` wins for tobs.
    x.c.set_observers(&nodes, PRECEDENCE)?;
    x.wait(o, OBS, t, "precedence: the exact rule wins, 4 leaves tobs's ISR", "precedence_leave_seconds", |s| {
        !in_isr(s)
    })?;
    x.wait(o, FULL, t, "precedence: the prefix rule applies, 4 joins tfull's ISR", "precedence_join_seconds", in_isr)?;
    x.hold_all(
        o,
        &[OBS],
        x.lag() + x.ttl(),
        |_| "precedence: 4 stays out of tobs's ISR and never leads it".into(),
        |s| in_isr(s) || leads(s),
    )?;

    by_rack(x, o)?;

    // okp observers promote/demote --topic tobs: only tobs's rule changes, on every node, and the
    // command waits for tobs's partition alone; tfull keeps 4 in its ISR throughout.
    let nodes_file = nodes_yaml(x)?;
    for (verb, joins) in [("promote", true), ("demote", false)] {
        let (rc, out) = okp_observers(x, verb, &nodes_file)?;
        let want = if joins { "topic:tobs observers=none" } else { "topic:tobs observers=4" };
        let files: Vec<String> = nodes
            .iter()
            .map(|id| crate::fsx::read::lossy_text(&x.c.node(*id).observer_file(), crate::fsx::read::MAX_TEXT))
            .collect();
        o.check(
            &format!("okp observers {verb} --broker 4 --topic tobs: exit 0, `{want}` on every node, the prefix rule and the id untouched"),
            rc == Some(0) && files.iter().all(|f| f == &PRECEDENCE.replace("topic:tobs observers=4", want)),
            format!("exit {rc:?}; {}", out.lines().last().unwrap_or("")),
        );
        let s = x.state(OBS)?;
        o.check(
            &format!("after {verb} --topic tobs: 4 {} tobs's ISR", if joins { "in" } else { "out of" }),
            in_isr(&s) == joins,
            s.show(),
        );
        let full = x.state(FULL)?;
        o.check(&format!("after {verb} --topic tobs: tfull unchanged, 4 in its ISR"), in_isr(&full), full.show());
    }

    super::topic_watch::watch_per_topic(x, o, &nodes_file)?;
    // Elections ask per topic: 4 observes tobs (`topic:tobs observers=4`) and fully replicates
    // every other t* topic (`prefix:t observers=none`); it may lead those, never tobs.
    leaders(x, o)?;

    // okp observers place --execute under acks=all load: topic tplace from 1:2:3 to primaries in
    // racks r1-r3 and an observer in r4 (each broker is its own rack here); no acked record lost.
    place(x, o, &nodes_file)?;

    by_pattern(x, o)?;

    // Back to the cluster-wide id alone: 4 leaves tfull's ISR.
    x.c.set_observers(&nodes, "4\n")?;
    x.wait(o, FULL, t, "rules removed: 4 is an observer of tfull again", "restore_seconds", |s| !in_isr(s))?;
    Ok(())
}

/// A `regex:` rule evaluated by the brokers and controllers with the registries' pattern engine:
/// from PRECEDENCE (4 observes tobs, fully replicates tfull), BY_PATTERN swaps both; then a file
/// whose pattern the engine refuses leaves every node on BY_PATTERN's set (frozen), where
/// `java.util.regex` would have read the pattern and put 4 back out of tobs's ISR.
fn by_pattern(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let nodes = x.c.kafka_nodes();
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.c.set_observers(&nodes, BY_PATTERN)?;
    x.wait(o, OBS, t, "pattern: `regex:to[a-z]+ observers=none`, 4 joins tobs's ISR", "pattern_join_seconds", in_isr)?;
    x.wait(
        o,
        FULL,
        t,
        "pattern: tfull takes the cluster-wide 4, which leaves its ISR",
        "pattern_leave_seconds",
        |s| !in_isr(s),
    )?;
    x.c.set_observers(&nodes, REFUSED_PATTERN)?;
    x.hold_all(
        o,
        &[OBS],
        x.lag() + x.ttl(),
        |_| "refused pattern `[[:alpha:]]+`: every node keeps the last good set, 4 stays in tobs's ISR".into(),
        |s| !in_isr(s),
    )?;
    let full = x.state(FULL)?;
    o.check("refused pattern: tfull unchanged, 4 out of its ISR", !in_isr(&full), full.show());
    Ok(())
}

/// A rack rule gives what the id rule gives: from PREFIX_ONLY (4 in tobs's ISR), BY_RACK takes 4
/// out of tobs's ISR and keeps it out of its leadership, tfull untouched, each node resolving
/// `rack:r4` from its own view of broker.rack (the audit line's `racks=[r4:4]`); then PRECEDENCE
/// again, which names 4 by id: nothing moves.
fn by_rack(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let nodes = x.c.kafka_nodes();
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.c.set_observers(&nodes, PREFIX_ONLY)?;
    x.wait(o, OBS, t, "rack: with the prefix rule alone, 4 joins tobs's ISR", "rack_off_join_seconds", in_isr)?;
    let audited_before = x.c.grep_logs(&["racks=[r4:4]"]).len();
    x.c.set_observers(&nodes, BY_RACK)?;
    x.wait(o, OBS, t, "rack: `topic:tobs observers=rack:r4` takes 4 out of tobs's ISR", "rack_leave_seconds", |s| {
        !in_isr(s)
    })?;
    x.hold_all(
        o,
        &[OBS],
        x.lag() + x.ttl(),
        |_| "rack: 4 stays out of tobs's ISR and never leads it, as with the id rule".into(),
        |s| in_isr(s) || leads(s),
    )?;
    let full = x.state(FULL)?;
    o.check("rack: tfull unchanged, 4 in its ISR", in_isr(&full), full.show());
    let audited: Vec<String> = x.c.grep_logs(&["racks=[r4:4]"]).into_iter().skip(audited_before).collect();
    o.check(
        "rack: an OBSERVER AUDIT line resolves rack r4 to broker 4 from broker.rack (`racks=[r4:4]`)",
        audited.iter().any(|l| l.contains("OBSERVER AUDIT") && l.contains("rules=") && l.contains("rack:r4")),
        audited.first().cloned().unwrap_or_else(|| "no such line".into()),
    );
    x.c.set_observers(&nodes, PRECEDENCE)?;
    x.hold_all(
        o,
        &[OBS],
        x.ttl() + Duration::from_secs(2),
        |_| "rack: back to the id rule (PRECEDENCE), 4 still out of tobs's ISR".into(),
        |s| in_isr(s) || leads(s),
    )?;
    Ok(())
}

/// A topic broker 4 fully replicates under PRECEDENCE's prefix rule while it observes tobs.
const LEAD: &str = "tlead";
/// The broker stopped to force the elections: the leader of tobs and of tlead.
const FIRST: i32 = 1;

/// Every election path asks per topic (with PRECEDENCE in force). tlead on 1,4,2: broker 1 stopped
/// (controlled shutdown), its leadership of tlead goes to 4, the next replica in the ISR, and of
/// tobs to 2, never 4; then preferred elections: tobs reassigned to 4,1,2 keeps 1 (the first
/// replica not observing tobs), tlead reassigned to 4,1,2 is led by 4 (its preferred replica). A
/// patched controller that asked "an observer of any topic" would skip 4 for tlead every time.
fn leaders(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    // The watchdog's demotion just before rewrote tobs's rule: every node (the controller above
    // all) must hold it before the elections, or a controller still holding `observers=none`
    // names 4 tobs's preferred replica (seen once, 3.2.0 zk, 2026-12-04: the preferred election
    // 0.9 s after broker 1's return failed as upstream's would, 4 first and outside the ISR).
    x.settle_observers();
    let outs = x.c.create_topics(&[(LEAD, "1:4:2", &["min.insync.replicas=2"][..])])?;
    o.check(
        "tlead created on 1:4:2 (4 a full replica by `prefix:t observers=none`)",
        outs[0].ok(),
        format!("rc {}", outs[0].rc),
    );
    let t = x.lag() + x.ttl() + Duration::from_secs(30);
    x.wait(o, LEAD, t, "tlead: 4 in the ISR", "lead_join_seconds", in_isr)?;
    x.wait(o, OBS, Duration::from_secs(30), "tobs: broker 1 leads before the stop", "obs_first_leads_seconds", |s| {
        s.leader == Some(FIRST)
    })?;
    x.c.stop(FIRST);
    // Who leads each topic once broker 1 is gone: 4 for tlead, which it fully replicates; 2 for tobs.
    for (topic, leader, waited, fact, checked) in [
        (
            LEAD,
            OBSERVER,
            "broker 1 stopped: tlead's leadership goes to 4, the next replica in its ISR (4 may lead the topic it fully replicates)",
            "lead_to_observer_of_other_topic_seconds",
            "tlead: the new leader is 4",
        ),
        (
            OBS,
            2,
            "broker 1 stopped: tobs has a new leader",
            "obs_new_leader_seconds",
            "tobs: the new leader is 2, never 4 (its observer)",
        ),
    ] {
        let t = x.session() + Duration::from_secs(20);
        let s = x.wait(o, topic, t, waited, fact, |s| s.leader.is_some() && s.leader != Some(FIRST))?;
        o.check(checked, s.as_ref().is_some_and(|s| s.leader == Some(leader)), s.map(|s| s.show()).unwrap_or_default());
    }
    let restart = x.c.restart(FIRST)?;
    o.fact("first_restart_seconds", round(restart));
    for topic in [OBS, LEAD] {
        x.wait(
            o,
            topic,
            x.lag() + Duration::from_secs(30),
            &format!("{topic}: broker 1 back in the ISR"),
            &format!("{topic}_first_back_seconds"),
            |s| s.in_isr(FIRST),
        )?;
    }
    // Preferred elections: tlead as it stands (1 leads again), then each reassigned to 4,1,2.
    elect_preferred(x, o, LEAD, FIRST, "1, its first replica")?;
    for (topic, leader, why) in
        [(OBS, FIRST, "1, the first replica not observing tobs, never 4"), (LEAD, OBSERVER, "4, its first replica")]
    {
        let out = x.c.reassign(topic, &[OBSERVER, FIRST, 2], "--execute")?;
        o.check(
            &format!("{topic} reassigned to 4,1,2 (the same replicas, 4 first)"),
            out.ok(),
            format!("rc {}", out.rc),
        );
        let t = Duration::from_secs(30);
        x.wait(o, topic, t, &format!("{topic}: replicas now 4,1,2"), &format!("{topic}_reordered_seconds"), |s| {
            s.replicas == [OBSERVER, FIRST, 2]
        })?;
        elect_preferred(x, o, topic, leader, why)?;
    }
    x.hold_all(o, &[OBS], x.lag(), |_| "tobs: 4 first in its replicas still never leads it".into(), leads)?;
    let deleted = x.c.delete_topic_and_wait(LEAD, Duration::from_secs(60)).unwrap_or(false);
    o.check("tlead deleted", deleted, "");
    Ok(())
}

/// A preferred election of `topic`; then `leader` (`why`) must lead it.
fn elect_preferred(x: &mut Ctx, o: &mut ScenarioResult, topic: &str, leader: i32, why: &str) -> Result<()> {
    let out = x.c.elect(topic, "preferred", &[])?;
    o.fact(&format!("{topic}_preferred_election_to_{leader}"), format!("rc {}: {}", out.rc, out.stdout.trim()));
    let name = format!("{topic}: after a preferred election, {why} leads");
    x.wait(o, topic, Duration::from_secs(30), &name, &format!("{topic}_preferred_{leader}_seconds"), |s| {
        s.leader == Some(leader)
    })?;
    Ok(())
}

const PLACE: &str = "tplace";

fn place(x: &mut Ctx, o: &mut ScenarioResult, nodes_file: &std::path::Path) -> Result<()> {
    let out = x.c.create_topic(PLACE, "1:2:3", &["min.insync.replicas=2"])?;
    o.check("topic tplace created on 1:2:3", out.ok(), format!("rc {}", out.rc));
    let t = x.lag() + Duration::from_secs(30);
    x.wait(o, PLACE, t, "tplace: ISR 1,2,3", "place_create_seconds", |s| s.isr.len() == 3)?;
    let perf = super::write_path::perf_args(x, PLACE, "3000", "300");
    let running = x.c.spawn_tool(crate::cluster::tools::Tool::Perf, &perf)?;
    std::thread::sleep(Duration::from_secs(2));
    let boot = x.c.bootstrap(&[]);
    let args: Vec<String> = [
        "observers",
        "place",
        "--topic",
        PLACE,
        "--replicas",
        "r1:1",
        "--replicas",
        "r2:1",
        "--replicas",
        "r3:1",
        "--observers",
        "r4:1",
        "--execute",
        "--timeout",
        "120",
        "--bootstrap",
        &boot,
        "--nodes",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([nodes_file.display().to_string()])
    .collect();
    let (code, text, secs) = run_okp(x, &args)?;
    let produced = x.c.finish_tool(crate::cluster::tools::Tool::Perf, running, Duration::from_secs(90));
    let p = crate::cluster::tools::parse_perf(&produced.stdout);
    o.fact("place_seconds", round(secs));
    o.check(
        "okp observers place --topic tplace --replicas r1:1,r2:1,r3:1 --observers r4:1 --execute: exit 0, placed",
        code == Some(0) && text.contains("placed: topic tplace"),
        format!("exit {code:?} in {secs:.1} s; {}", text.lines().last().unwrap_or("")),
    );
    let s = x.state(PLACE)?;
    o.check(
        "tplace: replicas 1,2,3,4 (primaries first), 4 outside the ISR, a primary leads",
        s.replicas == [1, 2, 3, 4] && !in_isr(&s) && s.isr.len() == 3 && !leads(&s),
        s.show(),
    );
    let rule = x.c.kafka_nodes().iter().all(|id| {
        crate::fsx::read::lossy_text(&x.c.node(*id).observer_file(), crate::fsx::read::MAX_TEXT)
            .contains("topic:tplace observers=4\n")
    });
    o.check("the rule `topic:tplace observers=4` on every node", rule, "");
    o.check(
        "3000 records with acks=all during the move, 0 errors",
        produced.ok() && p.as_ref().is_some_and(|p| p.records == 3000),
        format!("rc {} {:?}", produced.rc, p),
    );
    let got = x.c.consume(PLACE, 3000, false, &[])?;
    o.check("every acked record of tplace read back", got.len() == 3000, format!("{} records", got.len()));
    let leader = s.leader.unwrap_or(1);
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, leader, PLACE, Duration::from_secs(45));
    o.check("observer 4's copy of tplace is byte-identical to the leader's", same, format!("{secs:.1} s"));
    let deleted = x.c.delete_topic_and_wait(PLACE, Duration::from_secs(60)).unwrap_or(false);
    o.check("clean-up: topic tplace deleted", deleted, "");
    Ok(())
}

/// A nodes file naming every node's observer.ids, for okp's own observers commands.
fn nodes_yaml(x: &mut Ctx) -> Result<std::path::PathBuf> {
    let path = x.c.journal.dir().join("TOPIC-nodes.yaml");
    x.write_nodes_file(&path)?;
    Ok(path)
}

/// `okp observers VERB --broker 4 --topic tobs`: its exit code and output (journaled).
fn okp_observers(x: &mut Ctx, verb: &str, nodes: &std::path::Path) -> Result<(Option<i32>, String)> {
    let boot = x.c.bootstrap(&[]);
    let args: Vec<String> =
        ["observers", verb, "--broker", "4", "--topic", OBS, "--bootstrap", &boot, "--timeout", "60", "--nodes"]
            .iter()
            .map(|s| s.to_string())
            .chain([nodes.display().to_string()])
            .collect();
    let (code, text, _) = run_okp(x, &args)?;
    Ok((code, text))
}

/// Runs this okp with `args`: its exit code, stdout then stderr, and seconds; journaled.
pub(super) fn run_okp(x: &mut Ctx, args: &[String]) -> Result<(Option<i32>, String, f64)> {
    let okp = crate::cluster::homes::okp_binary()?;
    let t0 = Instant::now();
    let out = std::process::Command::new(&okp)
        .args(args)
        .output()
        .map_err(|e| crate::error::Error::io(format!("cannot run okp {}", args.join(" ")), e))?;
    let secs = t0.elapsed().as_secs_f64();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    x.c.journal.note(&format!(
        "$ okp {}\n  (rc={:?}, {secs:.2} s)\n{}",
        args.join(" "),
        out.status.code(),
        text.lines().map(|l| format!("  | {l}\n")).collect::<String>()
    ));
    Ok((out.status.code(), text, secs))
}
