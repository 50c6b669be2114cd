//! MET: the `metrics` layer's JMX gauges, read with the release's own JmxTool
//! from the leader of a fresh topic `met` (replicas 1, 2, 3 and observer 4),
//! in steady state, with the observer lagging (frozen), during the demotion of
//! a follower, and with an observer stuck in the ISR (a leader demoted by
//! editing the files, which `okp observers demote` refuses to do). In steady
//! state it also reads every broker and holds each one's totals against the
//! partitions it leads, across every topic of the cluster.
//!
//! Every expected value is exact and derived from the cluster, never from the
//! gauges themselves: the lag must equal the leader's end offset moved while
//! the observer was frozen, as `GetOffsetShell` reports it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Ctx, ScenarioResult};
use crate::cluster::tools::gauge;
use crate::cluster::tools::PartitionState;
use crate::cluster::{BROKERS, OBSERVER};
use crate::error::{Error, Result};

const TOPIC: &str = "met";
const LEADER: i32 = 1;
const FOLLOWER: i32 = 3;

/// The gauges okp's metrics layer registers (docs/observer-metrics.md).
const PARTITION_GAUGES: [&str; 4] = ["ObserverReplicas", "ObserversInIsr", "CaughtUpObservers", "ObserverLag"];
const BROKER_GAUGES: [&str; 5] =
    ["ObserverSetSize", "ObserverReplicas", "ObserversInIsr", "CaughtUpObservers", "ObserverMaxLag"];

/// One JmxTool read of a broker: `partition.<gauge>` (topic met, partition 0)
/// and `broker.<gauge>`, as integers.
type Gauges = BTreeMap<String, i64>;

fn read(x: &mut Ctx, o: &mut ScenarioResult, id: i32, label: &str) -> Result<Gauges> {
    // Whole object names, no patterns: 2.7's JmxTool cannot combine patterns with --one-time.
    let names: Vec<String> = PARTITION_GAUGES
        .iter()
        .map(|n| format!("kafka.cluster:type=Partition,name={n},topic={TOPIC},partition=0"))
        .chain(
            BROKER_GAUGES.iter().chain(&["LeaderCount"]).map(|n| format!("kafka.server:type=ReplicaManager,name={n}")),
        )
        .collect();
    let raw = x.c.jmx(id, &names.iter().map(String::as_str).collect::<Vec<_>>())?;
    let mut g = Gauges::new();
    for name in PARTITION_GAUGES {
        if let Some(v) = gauge(&raw, "Partition", name, &[("topic", TOPIC), ("partition", "0")]) {
            g.insert(format!("partition.{name}"), v as i64);
        }
    }
    // Kafka's own LeaderCount, to hold the per-broker totals against.
    for name in BROKER_GAUGES.iter().chain(&["LeaderCount"]) {
        if let Some(v) = gauge(&raw, "ReplicaManager", name, &[]) {
            g.insert(format!("broker.{name}"), v as i64);
        }
    }
    let missing: Vec<String> = PARTITION_GAUGES
        .iter()
        .map(|n| format!("partition.{n}"))
        .chain(BROKER_GAUGES.iter().map(|n| format!("broker.{n}")))
        .filter(|k| !g.contains_key(k))
        .collect();
    if !missing.is_empty() {
        return Err(Error::External(format!(
            "broker {id} exposes no gauge {} (is the metrics layer in the jars?)",
            missing.join(", ")
        )));
    }
    o.fact(&format!("{label}_broker{id}"), &g);
    x.c.journal.note(&format!("gauges of broker {id} ({label}): {}", show(&g)));
    Ok(g)
}

fn show(g: &Gauges) -> String {
    g.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// One check: every listed gauge has exactly the value given.
/// Reads broker `id`'s gauges until they hold `want` or `timeout` passes; the last read either
/// way. For a state the leader learns only at the follower's next fetch: a byte-identical log on
/// the observer comes before the leader has its fetch at the new end offset, and a read in that
/// moment (no longer a JVM start away, now that JMX reads run in the resident tool JVM) would
/// see the old lag.
fn read_until(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    id: i32,
    label: &str,
    want: &[(&str, i64)],
    timeout: Duration,
) -> Result<Gauges> {
    let t0 = std::time::Instant::now();
    loop {
        let g = read(x, o, id, label)?;
        let holds = want.iter().all(|(k, v)| g.get(*k) == Some(v));
        if holds || t0.elapsed() > timeout {
            x.c.journal.note(&format!(
                "{label}: the gauges of broker {id} {} after {:.1} s",
                if holds { "hold" } else { "still do not hold" },
                t0.elapsed().as_secs_f64()
            ));
            return Ok(g);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn expect(o: &mut ScenarioResult, what: &str, g: &Gauges, want: &[(&str, i64)]) -> bool {
    let bad: Vec<String> = want
        .iter()
        .filter(|(k, v)| g.get(*k) != Some(v))
        .map(|(k, v)| {
            format!("{k}={} (expected {v})", g.get(*k).map_or_else(|| "absent".to_string(), |x| x.to_string()))
        })
        .collect();
    let detail = if bad.is_empty() {
        want.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    } else {
        bad.join(", ")
    };
    o.check(what, bad.is_empty(), detail)
}

fn get(g: &Gauges, k: &str) -> i64 {
    g.get(k).copied().unwrap_or(-1)
}

/// Every partition of every topic (internal ones too) as describe prints it.
type Partitions = Vec<(String, u32, PartitionState)>;

/// Steady state across the cluster: no partition has the observer in its ISR,
/// and each broker's totals equal what the assignment says of the partitions it
/// leads (a broker counts the observer replicas of the partitions it leads,
/// as Kafka's UnderReplicatedPartitions counts only led partitions). The
/// gauges are read between two describes of every topic; if a leader moved in
/// between (a preferred election, say), the reads are made again, at most
/// three times.
fn cluster_wide(x: &mut Ctx, o: &mut ScenarioResult, settle: Duration) -> Result<()> {
    let t0 = std::time::Instant::now();
    let mut all = x.c.describe_all()?;
    while all.iter().any(|(_, _, s)| s.in_isr(OBSERVER)) && t0.elapsed() < settle {
        std::thread::sleep(Duration::from_secs(1));
        all = x.c.describe_all()?;
    }
    let held: Vec<String> =
        all.iter().filter(|(_, _, s)| s.in_isr(OBSERVER)).map(|(t, p, s)| format!("{t}-{p} {}", s.show())).collect();
    o.check(
        &format!("cluster: observer {OBSERVER} is in the ISR of no partition of any topic"),
        held.is_empty() && !all.is_empty(),
        if held.is_empty() {
            format!("{} partitions, after {:.1} s", all.len(), t0.elapsed().as_secs_f64())
        } else {
            held.join("; ")
        },
    );
    let leaders = |d: &Partitions| d.iter().map(|(t, p, s)| (t.clone(), *p, s.leader)).collect::<Vec<_>>();
    // The last describe above is the first read's "before"; each "after" is the next one's.
    let mut before = all;
    let mut attempt = 1;
    let (views, all) = loop {
        let mut views = BTreeMap::new();
        for id in BROKERS {
            views.insert(id, read(x, o, id, "cluster")?);
        }
        let after = x.c.describe_all()?;
        if leaders(&before) == leaders(&after) || attempt == 3 {
            break (views, after);
        }
        x.c.journal
            .note(&format!("a leader moved while the gauges were read (attempt {attempt} of 3): reading them again"));
        before = after;
        attempt += 1;
    };
    let mut total = 0;
    for (id, g) in &views {
        let led = all
            .iter()
            .filter(|(_, _, s)| s.leader == Some(*id) && *id != OBSERVER && s.replicas.contains(&OBSERVER))
            .count() as i64;
        total += led;
        let mut want = vec![
            ("broker.ObserverSetSize", 1),
            ("broker.ObserverReplicas", led),
            ("broker.CaughtUpObservers", led),
            ("broker.ObserversInIsr", 0),
            ("broker.ObserverMaxLag", 0),
        ];
        if *id != LEADER {
            want.push(("partition.ObserverReplicas", 0));
        }
        expect(o, &format!("cluster, broker {id}: set size 1; it leads {led} partition(s) with an observer replica, all caught up, none in an ISR"), g, &want);
    }
    let assigned = all.iter().filter(|(_, _, s)| s.replicas.contains(&OBSERVER)).count();
    o.fact(
        "cluster_observer_replicas",
        serde_json::json!({"assigned": assigned, "counted_by_leaders": total, "partitions": all.len()}),
    );
    o.check(
        "cluster: the brokers' ObserverReplicas add up to every observer replica of the assignment",
        total == assigned as i64,
        format!("sum {total}, assignment {assigned} (of {} partitions)", all.len()),
    );
    Ok(())
}

/// A fresh topic on 1:2:3:4 (min.insync.replicas 2): leader 1, ISR 1,2,3 once created, 100
/// records acked with acks=all (tagged `tag`), the observer's copy byte-identical: where MET and
/// PROM start.
pub(super) fn observed_topic(x: &mut Ctx, o: &mut ScenarioResult, topic: &str, tag: &str, wait: &str) -> Result<()> {
    let out = x.c.create_topic(topic, "1:2:3:4", &["min.insync.replicas=2"])?;
    if !out.ok() {
        return Err(Error::External(format!(
            "creating topic {topic} failed (rc {}): {}",
            out.rc,
            out.stderr.lines().last().unwrap_or("")
        )));
    }
    x.wait(o, topic, Duration::from_secs(30), wait, "create_seconds", |s| {
        s.leader == Some(LEADER) && s.isr.len() == 3 && !s.in_isr(OBSERVER)
    })?;
    let p = x.c.produce(topic, tag, 100, &[])?;
    o.check("100 records acked with acks=all", p.all_acked(), format!("sent {}, errors {}", p.sent, p.errors));
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, LEADER, topic, Duration::from_secs(30));
    o.check("the observer holds a byte-identical copy", same, format!("after {secs:.1} s"));
    Ok(())
}

pub fn met(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let all = x.c.kafka_nodes();
    let audit_before: std::collections::BTreeSet<String> = x.c.grep_logs(&["OBSERVER AUDIT"]).into_iter().collect();
    observed_topic(x, o, TOPIC, "MET", "met: leader 1, ISR 1,2,3 (4 is an observer)")?;
    let settle = x.lag() + x.ttl() + Duration::from_secs(20);

    // 1. Steady state: one observer, caught up, outside the ISR.
    let steady = read(x, o, LEADER, "steady")?;
    expect(
        o,
        "steady, leader, partition: 1 observer replica, 0 in the ISR, 1 caught up, lag 0",
        &steady,
        &[
            ("partition.ObserverReplicas", 1),
            ("partition.ObserversInIsr", 0),
            ("partition.CaughtUpObservers", 1),
            ("partition.ObserverLag", 0),
        ],
    );
    let replicas = get(&steady, "broker.ObserverReplicas");
    expect(
        o,
        "steady, leader, broker: set size 1, 0 in any ISR, every observer replica caught up, max lag 0",
        &steady,
        &[
            ("broker.ObserverSetSize", 1),
            ("broker.ObserversInIsr", 0),
            ("broker.CaughtUpObservers", replicas),
            ("broker.ObserverMaxLag", 0),
        ],
    );
    o.check(
        "steady, leader, broker: it leads at least met with an observer",
        replicas >= 1,
        format!("broker.ObserverReplicas={replicas}"),
    );
    let on_observer = read(x, o, OBSERVER, "steady")?;
    expect(
        o,
        "steady, observer 4 itself: set size 1; it leads nothing, so its partition gauges read 0",
        &on_observer,
        &[("broker.ObserverSetSize", 1), ("partition.ObserverReplicas", 0), ("partition.ObserverLag", 0)],
    );

    // 1b. The whole cluster: every broker's own view, against every partition's assignment.
    cluster_wide(x, o, settle)?;

    // 2. A lagging observer: frozen while the leader takes writes.
    let before = x.c.end_offset(TOPIC, &[OBSERVER])?.ok_or_else(|| Error::External("no end offset for met".into()))?;
    x.c.freeze(OBSERVER);
    let lagging = (|| -> Result<Gauges> {
        // Until its session expires the frozen broker is still in the metadata, and an idempotent
        // producer may send InitProducerId there (3.0 fails on that timeout, 3.2 expires the
        // batch): wait out the session and produce without idempotence.
        std::thread::sleep(x.session() + Duration::from_secs(1));
        let p = x.c.produce_not_idempotent(TOPIC, "MET-lag", 300, &[OBSERVER])?;
        o.check(
            "observer frozen: 300 records acked with acks=all",
            p.all_acked(),
            format!("sent {}, errors {}", p.sent, p.errors),
        );
        std::thread::sleep(x.lag() + Duration::from_secs(1));
        read(x, o, LEADER, "lagging")
    })();
    let after = x.c.end_offset(TOPIC, &[OBSERVER]);
    x.c.thaw(OBSERVER);
    let lagging = lagging?;
    let after = after?.ok_or_else(|| Error::External("no end offset for met".into()))?;
    let moved = after - before;
    o.fact("lag_expected_offsets", moved);
    expect(
        o,
        &format!(
            "lagging, leader, partition: lag = the {moved} offsets written while frozen; 0 caught up; 0 in the ISR"
        ),
        &lagging,
        &[
            ("partition.ObserverReplicas", 1),
            ("partition.ObserversInIsr", 0),
            ("partition.CaughtUpObservers", 0),
            ("partition.ObserverLag", moved),
        ],
    );
    expect(
        o,
        "lagging, leader, broker: one fewer caught up; max lag = that lag",
        &lagging,
        &[
            ("broker.ObserverReplicas", replicas),
            ("broker.CaughtUpObservers", replicas - 1),
            ("broker.ObserversInIsr", 0),
            ("broker.ObserverMaxLag", moved),
        ],
    );
    let (same, secs) = x.c.wait_replica_identical(OBSERVER, LEADER, TOPIC, Duration::from_secs(60));
    o.check("thawed: the observer catches up to a byte-identical copy", same, format!("after {secs:.1} s"));
    o.fact("catch_up_seconds", super::round(secs));
    let want = [
        ("partition.ObserverLag", 0),
        ("partition.CaughtUpObservers", 1),
        ("broker.ObserverMaxLag", 0),
        ("broker.CaughtUpObservers", replicas),
    ];
    let caught = read_until(x, o, LEADER, "caught_up", &want, Duration::from_secs(15))?;
    expect(o, "caught up again, leader: lag 0, 1 caught up", &caught, &want);

    // 3. Demotion of follower 3: it leaves the ISR and is counted as an observer.
    x.c.set_observers(&all, "3\n4\n")?;
    x.wait(o, TOPIC, settle, "demotion of 3: it leaves the ISR of met", "demotion_seconds", |s| {
        !s.in_isr(FOLLOWER) && !s.in_isr(OBSERVER) && s.leader == Some(LEADER)
    })?;
    // Let every other partition 1 leads drop 3 too before the next step.
    std::thread::sleep(x.lag());
    let demoted = read(x, o, LEADER, "demoted")?;
    expect(
        o,
        "3 demoted, leader: set size 2; met has 2 observer replicas, both caught up, none in the ISR",
        &demoted,
        &[
            ("broker.ObserverSetSize", 2),
            ("broker.ObserversInIsr", 0),
            ("partition.ObserverReplicas", 2),
            ("partition.CaughtUpObservers", 2),
            ("partition.ObserversInIsr", 0),
            ("partition.ObserverLag", 0),
        ],
    );

    // 4. An observer stuck in the ISR: the leader itself named in the files.
    // The ISR shrink never removes a leader, so the gauge must show it and keep showing it.
    x.c.set_observers(&all, "1\n3\n4\n")?;
    std::thread::sleep(x.ttl() + Duration::from_secs(1));
    let stuck = read(x, o, LEADER, "stuck")?;
    std::thread::sleep(x.lag() + Duration::from_secs(1));
    let still = read(x, o, LEADER, "still_stuck")?;
    let s = x.state(TOPIC)?;
    o.check(
        "leader 1 named an observer: it still leads met and is in its ISR",
        s.leader == Some(LEADER) && s.in_isr(LEADER),
        s.show(),
    );
    let later = format!("still stuck {:.0} s later", (x.lag() + Duration::from_secs(1)).as_secs_f64());
    for (label, g) in [("stuck", &stuck), (later.as_str(), &still)] {
        expect(
            o,
            &format!("{label}, leader: ObserversInIsr = 1 on met; set size 3; 2 observer followers"),
            g,
            &[("partition.ObserversInIsr", 1), ("partition.ObserverReplicas", 2), ("broker.ObserverSetSize", 3)],
        );
        let (n, leads) = (get(g, "broker.ObserversInIsr"), get(g, "broker.LeaderCount"));
        o.check(
            &format!("{label}, leader, broker: ObserversInIsr = LeaderCount (itself, in every ISR it leads)"),
            n >= 1 && n == leads,
            format!("broker.ObserversInIsr={n} broker.LeaderCount={leads}"),
        );
    }

    // 5. Back to the suite's state: only 4 is an observer; 3 rejoins every ISR.
    x.c.set_observers(&all, "4\n")?;
    x.wait(o, TOPIC, settle, "restored: 3 back in the ISR of met, 4 still out", "rejoin_seconds", |s| {
        s.in_isr(FOLLOWER) && !s.in_isr(OBSERVER)
    })?;
    x.wait(o, "obs", settle, "restored: 3 back in the ISR of obs", "rejoin_obs_seconds", |s| {
        s.in_isr(FOLLOWER) && !s.in_isr(OBSERVER)
    })?;
    let restored = read(x, o, LEADER, "restored")?;
    expect(
        o,
        "restored, leader: set size 1; met back to 1 observer replica, 0 in the ISR, 1 caught up",
        &restored,
        &[
            ("broker.ObserverSetSize", 1),
            ("broker.ObserversInIsr", 0),
            ("partition.ObserverReplicas", 1),
            ("partition.ObserversInIsr", 0),
            ("partition.CaughtUpObservers", 1),
        ],
    );

    // 6. The audit trail. Broker 1's registry is read all the time (its gauges, its ISR checks),
    // so it logs each of the three changes with exact sets. A controller's registry is read only
    // when the controller is asked something (an AlterPartition, an election), so it may skip a
    // set the files held for a few seconds; its trail must still name only sets the files held
    // and end at the restored one.
    let audit: Vec<String> =
        x.c.grep_logs(&["OBSERVER AUDIT"]).into_iter().filter(|l| !audit_before.contains(l)).collect();
    o.fact("audit_lines", audit.len());
    let text = "event=change source=file:";
    for (before, after, added, removed) in
        [("[4]", "[3,4]", "[3]", "[]"), ("[3,4]", "[1,3,4]", "[1]", "[]"), ("[1,3,4]", "[4]", "[]", "[1,3]")]
    {
        let sets = format!("before={before} after={after} added={added} removed={removed} ");
        let hit = audit.iter().find(|l| {
            l.starts_with("broker-1:") && l.contains("registry=broker") && l.contains(text) && l.contains(&sets)
        });
        o.check(
            &format!("audit: broker-1 logged OBSERVER AUDIT registry=broker event=change {}", sets.trim_end()),
            hit.is_some(),
            hit.map(|l| l.chars().take(300).collect::<String>())
                .unwrap_or_else(|| format!("no such line among {} new audit lines", audit.len())),
        );
    }
    if x.c.mode == crate::model::Mode::Kraft {
        let held = ["after=[3,4] ", "after=[1,3,4] ", "after=[4] "];
        let lines: Vec<&String> = audit
            .iter()
            .filter(|l| l.starts_with("controller-") && l.contains("registry=controller") && l.contains(text))
            .collect();
        let stray: Vec<&&String> = lines.iter().filter(|l| !held.iter().any(|h| l.contains(h))).collect();
        // The last line of each controller (grep_logs lists each node's lines in order): the one
        // that accepted 3 back into the ISR must have read the restored file.
        let mut last: std::collections::BTreeMap<&str, &String> = std::collections::BTreeMap::new();
        for l in &lines {
            last.insert(l.split(':').next().unwrap_or(""), l);
        }
        let last_restored = last.values().any(|l| l.contains("after=[4] "));
        o.check(
            "audit: the controllers logged event=change lines naming only sets the files held, and one ends at the restored [4]",
            !lines.is_empty() && stray.is_empty() && last_restored,
            format!("{} controller change lines, {} naming another set; last: {}", lines.len(), stray.len(), lines.last().map(|l| l.chars().take(300).collect::<String>()).unwrap_or_default()),
        );
    }
    Ok(())
}
