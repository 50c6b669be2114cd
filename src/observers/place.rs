//! `okp observers place`: a topic's replicas laid out by rack (primaries in some racks, observers
//! in others), its topic rule naming the observers, and with `--execute` the move itself through
//! Kafka's AlterPartitionReassignments, then a wait until the cluster shows the layout.
//!
//! Order when executing: the rule first, on every node, then the reassignment once the nodes have
//! re-read their files (5 s), so a replica added as an observer is one from its first fetch and
//! never enters the ISR; a reassignment completes when every primary target is in the ISR.
//!
//! Not here: the file edits' transport and all-or-nothing writes (change/), the rule text
//! (idfile/).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::change;
use super::idfile;
use super::transport::{NodeSpec, Transport};
use super::view;
use crate::error::{Error, Failure, Outcome, Result};
use crate::wire::Probe;

/// `RACK:COUNT`: `COUNT` replicas in rack `RACK`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    pub rack: String,
    pub count: usize,
}

impl std::str::FromStr for Want {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Want, String> {
        let (rack, count) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("`{}`: expected RACK:COUNT, e.g. east:3", crate::escape::one_line(s)))?;
        let count: usize = count
            .parse()
            .ok()
            .filter(|c| (1..=64).contains(c))
            .ok_or_else(|| format!("`{}`: COUNT must be a number from 1 to 64", crate::escape::one_line(s)))?;
        if rack.is_empty() || rack.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!("`{}`: RACK must be a broker.rack value, without spaces", crate::escape::one_line(s)));
        }
        Ok(Want { rack: rack.to_string(), count })
    }
}

/// A layout for every partition of a topic: replicas in order (primaries first, so the preferred
/// leader is a primary), and the observers the topic rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub targets: Vec<(i32, Vec<i32>)>,
    pub observers: BTreeSet<i32>,
    /// Partitions whose replicas change.
    pub moving: usize,
}

/// The layout of `current` (partition → replicas) that satisfies `primaries` and `observers`
/// with the live brokers' racks (`racks`: id → broker.rack). Per rack it keeps the brokers a
/// partition already has, then takes the least loaded (fewest replicas in this plan so far,
/// then the lowest id); primaries are rotated per partition so leadership spreads, unless the
/// current preferred leader is kept. A rack in both lists, or one without enough live brokers,
/// is refused by name.
pub fn plan(
    current: &[(i32, Vec<i32>)],
    racks: &BTreeMap<i32, Option<String>>,
    primaries: &[Want],
    observers: &[Want],
) -> std::result::Result<Plan, String> {
    if primaries.is_empty() {
        return Err("--replicas names no rack: a partition needs at least one replica that may lead".into());
    }
    let mut seen = BTreeSet::new();
    for w in primaries.iter().chain(observers) {
        if !seen.insert(w.rack.as_str()) {
            return Err(format!(
                "rack {} is named twice: a rack holds the topic's primaries or its observers, once (the topic rule names observers by broker, for every partition alike)",
                crate::escape::one_line(&w.rack)
            ));
        }
    }
    let in_rack = |rack: &str| -> Vec<i32> {
        racks.iter().filter(|(_, r)| r.as_deref() == Some(rack)).map(|(id, _)| *id).collect()
    };
    for w in primaries.iter().chain(observers) {
        let have = in_rack(&w.rack);
        if have.len() < w.count {
            let known: BTreeSet<&str> = racks.values().flatten().map(String::as_str).collect();
            return Err(format!(
                "rack {} has {} live broker(s) ({}), {} needed; racks the cluster reports: {}",
                crate::escape::one_line(&w.rack),
                have.len(),
                have.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "),
                w.count,
                if known.is_empty() {
                    "none (no broker sets broker.rack)".to_string()
                } else {
                    known.into_iter().collect::<Vec<_>>().join(", ")
                }
            ));
        }
    }
    let mut load: BTreeMap<i32, usize> = BTreeMap::new();
    let mut targets = Vec::new();
    let mut all_observers = BTreeSet::new();
    let mut moving = 0;
    for (p, now) in current {
        let mut pick = |w: &Want| -> Vec<i32> {
            let mut c = in_rack(&w.rack);
            c.sort_by_key(|id| (!now.contains(id), load.get(id).copied().unwrap_or(0), *id));
            let chosen: Vec<i32> = c.into_iter().take(w.count).collect();
            for id in &chosen {
                *load.entry(*id).or_default() += 1;
            }
            chosen
        };
        let mut prim: Vec<i32> = primaries.iter().flat_map(&mut pick).collect();
        match now.first().and_then(|l| prim.iter().position(|x| x == l)) {
            Some(i) => prim.rotate_left(i),
            None => {
                let n = prim.len();
                prim.rotate_left(*p as usize % n);
            }
        }
        let obs: Vec<i32> = observers.iter().flat_map(&mut pick).collect();
        all_observers.extend(obs.iter().copied());
        let target: Vec<i32> = prim.into_iter().chain(obs).collect();
        if &target != now {
            moving += 1;
        }
        targets.push((*p, target));
    }
    Ok(Plan { targets, observers: all_observers, moving })
}

/// How the topic rule that `place` writes names the observers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuleBy {
    /// The broker ids chosen (`observers=5,6`).
    Broker,
    /// The `--observers` racks (`observers=rack:west`).
    Rack,
}

impl Plan {
    /// The observers list of the topic rule: the ids chosen, or the racks they were chosen from
    /// (`wants`). Alike for every replica of the plan: each is in a rack of one side only, since
    /// a rack named on both sides is refused.
    pub fn rule(&self, by: RuleBy, wants: &[Want]) -> idfile::Observers {
        match by {
            RuleBy::Broker => idfile::Observers::of_ids(self.observers.clone()),
            RuleBy::Rack => {
                idfile::Observers { ids: BTreeSet::new(), racks: wants.iter().map(|w| w.rack.clone()).collect() }
            }
        }
    }
}

pub struct Args {
    pub topic: String,
    pub primaries: Vec<Want>,
    pub observers: Vec<Want>,
    pub rule_by: RuleBy,
    pub execute: bool,
    pub timeout: Duration,
    pub bootstrap: Vec<String>,
}

pub fn run(nodes: &[NodeSpec], transport: &Transport, a: &Args) -> Result<Outcome> {
    let t = crate::escape::one_line(&a.topic);
    let (m, via) = view::metadata(&a.bootstrap, Some(&a.topic))?;
    if let Some((_, code)) = m.topic_errors.iter().find(|(n, _)| n == &a.topic) {
        let why = if *code == 3 {
            "it does not exist; create it first".to_string()
        } else {
            format!("Kafka error code {code}")
        };
        return Err(Error::Usage(format!("topic {t}: {why} (asked {via})")));
    }
    let racks: BTreeMap<i32, Option<String>> = m.brokers.iter().map(|b| (b.id, b.rack.clone())).collect();
    let mut current: Vec<(i32, Vec<i32>)> =
        m.partitions.iter().filter(|p| p.topic == a.topic).map(|p| (p.index, p.state.replicas.clone())).collect();
    current.sort();
    let plan =
        plan(&current, &racks, &a.primaries, &a.observers).map_err(|e| Error::Usage(format!("place {t}: {e}")))?;
    let rule = plan.rule(a.rule_by, &a.observers);
    let files = change::plan_rule(nodes, transport, &a.topic, &rule)?;
    let mut cluster = super::roles::Cluster { racks: racks.clone(), ..Default::default() };
    for p in m.partitions.iter().filter(|p| p.topic == a.topic) {
        cluster.topics.entry(p.topic.clone()).or_default().extend(p.state.replicas.iter().copied());
    }
    files.check_roles(&cluster)?;
    let mut out = format!(
        "plan: topic {t}, {} partition(s), {} to move; rule `topic:{t} observers={}`{}\n",
        current.len(),
        plan.moving,
        crate::escape::one_line(&rule.shown()),
        match a.rule_by {
            RuleBy::Rack if !plan.observers.is_empty() => format!(" (today brokers {})", ids(&plan.observers)),
            _ => String::new(),
        }
    );
    for ((p, now), (_, target)) in current.iter().zip(&plan.targets) {
        let show = |v: &[i32]| {
            v.iter()
                .map(|id| {
                    format!(
                        "{id}({})",
                        crate::escape::one_line(racks.get(id).cloned().flatten().as_deref().unwrap_or("-"))
                    )
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        out.push_str(&format!(
            "  {t}-{p}: {} -> {}{}\n",
            show(now),
            show(target),
            if now == target { " (unchanged)" } else { "" }
        ));
    }
    out.push_str(&files.plan(transport));
    out.push_str(&format!(
        "reassignment (for kafka-reassign-partitions --execute): {}\n",
        reassignment_json(&a.topic, &plan)
    ));
    crate::out::print(&out)?;
    if !a.execute {
        crate::out::print("not executed: nothing written (add --execute to write the rule and move the replicas)\n")?;
        return Ok(Outcome::Done);
    }
    let t0 = Instant::now();
    change::write(transport, &files)?;
    if files.changing() > 0 {
        crate::out::note(format!(
            "waiting {} s for every node to re-read its rule before the move",
            change::REREAD.as_secs()
        ));
        let t1 = Instant::now();
        while t1.elapsed() < change::REREAD + Duration::from_millis(500) {
            if super::actuate::interrupted() {
                crate::out::note(format!(
                    "place {}: interrupted (SIGINT or SIGTERM): the rule is written on every node, the reassignment was not submitted",
                    crate::escape::one_line(&a.topic)
                ));
                return Ok(Outcome::Failed(Failure::Interrupted));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let moving: Vec<(i32, Vec<i32>)> = current
        .iter()
        .zip(&plan.targets)
        .filter(|((_, now), (_, target))| now != target)
        .map(|(_, t)| t.clone())
        .collect();
    if !moving.is_empty() {
        submit(&m, &a.topic, &moving)?;
    }
    wait(a, &plan, t0)
}

/// Sends the reassignment to the controller Metadata names (KRaft: a broker that forwards it).
fn submit(m: &crate::wire::Metadata, topic: &str, moving: &[(i32, Vec<i32>)]) -> Result<()> {
    let order: Vec<&crate::wire::BrokerAddr> = m
        .brokers
        .iter()
        .filter(|b| b.id == m.controller_id)
        .chain(m.brokers.iter().filter(|b| b.id != m.controller_id))
        .collect();
    for b in order {
        let Some(mut p) = Probe::connect_to(&format!("{}:{}", b.host, b.port)) else { continue };
        match p.alter_reassignments(topic, moving, 30_000) {
            None => continue,
            Some(Err((41, _))) => continue, // NOT_CONTROLLER: ask the next broker
            Some(Err((code, msg))) => {
                return Err(Error::External(format!(
                    "AlterPartitionReassignments refused by broker {}: Kafka error code {code}{}",
                    b.id,
                    msg.map(|m| format!(": {}", crate::escape::one_line(&m))).unwrap_or_default()
                )))
            }
            Some(Ok(answers)) => {
                let refused: Vec<String> = answers
                    .iter()
                    .filter(|a| a.error != 0)
                    .map(|a| {
                        format!(
                            "{topic}-{}: Kafka error code {}{}",
                            a.partition,
                            a.error,
                            a.message
                                .as_deref()
                                .map(|m| format!(": {}", crate::escape::one_line(m)))
                                .unwrap_or_default()
                        )
                    })
                    .collect();
                if !refused.is_empty() {
                    return Err(Error::External(format!(
                        "the reassignment was refused for {} partition(s) (the rule is written): {}",
                        refused.len(),
                        refused.join("; ")
                    )));
                }
                crate::out::note(format!("reassignment of {} partition(s) submitted to broker {}", moving.len(), b.id));
                return Ok(());
            }
        }
    }
    Err(Error::External("no broker accepted the AlterPartitionReassignments request (the rule is written)".into()))
}

/// Polls Metadata until every partition's replicas are the plan's, every primary is in the ISR,
/// no observer is, and a primary leads.
fn wait(a: &Args, plan: &Plan, t0: Instant) -> Result<Outcome> {
    let t = crate::escape::one_line(&a.topic);
    let mut last = Instant::now() - Duration::from_secs(10);
    loop {
        let (m, _) = view::metadata(&a.bootstrap, Some(&a.topic))?;
        let pending: Vec<String> = plan
            .targets
            .iter()
            .filter_map(|(p, target)| {
                let s = m.partitions.iter().find(|x| x.topic == a.topic && x.index == *p).map(|x| &x.state);
                let done = s.is_some_and(|s| {
                    &s.replicas == target
                        && target.iter().all(|id| plan.observers.contains(id) != s.isr.contains(id))
                        && s.leader.is_some_and(|l| !plan.observers.contains(&l))
                });
                (!done).then(|| match s {
                    Some(s) => {
                        format!("{t}-{p} (replicas {}, ISR {}, leader {:?})", ids(&s.replicas), ids(&s.isr), s.leader)
                    }
                    None => format!("{t}-{p} (not in the metadata)"),
                })
            })
            .collect();
        let secs = t0.elapsed().as_secs_f64();
        if pending.is_empty() {
            crate::out::print(&format!(
                "placed: topic {t}, every partition on its racks, primaries in the ISR, observers {} out of it, after {secs:.1} s\n",
                ids(&plan.observers)
            ))?;
            return Ok(Outcome::Done);
        }
        if super::actuate::interrupted() {
            crate::out::note(format!(
                "place {t}: interrupted (SIGINT or SIGTERM): the rule is written and the reassignment submitted; the cluster moves without okp; pending: {}",
                pending.join("; ")
            ));
            return Ok(Outcome::Failed(Failure::Interrupted));
        }
        if t0.elapsed() > a.timeout {
            crate::out::note(format!(
                "place {t}: not placed after {:.0} s (--timeout); the rule is written and the reassignment submitted; pending: {}",
                a.timeout.as_secs_f64(),
                pending.join("; ")
            ));
            return Ok(Outcome::Failed(Failure::CheckFailed));
        }
        if last.elapsed() > Duration::from_secs(5) {
            crate::out::note(format!(
                "waiting ({secs:.1} s): {} partition(s) pending: {}",
                pending.len(),
                pending.join("; ")
            ));
            last = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn ids<'a>(v: impl IntoIterator<Item = &'a i32>) -> String {
    v.into_iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// The plan as kafka-reassign-partitions reads it (`--reassignment-json-file`).
fn reassignment_json(topic: &str, plan: &Plan) -> String {
    let parts: Vec<serde_json::Value> =
        plan.targets.iter().map(|(p, r)| serde_json::json!({"topic": topic, "partition": p, "replicas": r})).collect();
    serde_json::json!({"version": 1, "partitions": parts}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn racks(v: &[(i32, &str)]) -> BTreeMap<i32, Option<String>> {
        v.iter().map(|(i, r)| (*i, Some(r.to_string()))).collect()
    }

    fn w(s: &str) -> Want {
        s.parse().unwrap()
    }

    #[test]
    fn two_regions_primaries_first_spread_and_kept() {
        let r = racks(&[(1, "east"), (2, "east"), (3, "east"), (4, "west"), (5, "west"), (6, "west")]);
        let current: Vec<(i32, Vec<i32>)> = (0..3).map(|p| (p, vec![1, 2, 3])).collect();
        let p = plan(&current, &r, &[w("east:3")], &[w("west:2")]).unwrap();
        for (_, t) in &p.targets {
            assert_eq!(t.len(), 5);
            assert!(t[..3].iter().all(|id| *id <= 3), "primaries first: {t:?}");
            assert!(t[3..].iter().all(|id| *id >= 4), "{t:?}");
        }
        assert_eq!(p.targets[0].1[0], 1, "the current preferred leader is kept");
        assert_eq!(p.observers, [4, 5, 6].into(), "observers spread over the west rack by load");
        assert_eq!(p.moving, 3);
        let again: Vec<(i32, Vec<i32>)> = p.targets.clone();
        let p2 = plan(&again, &r, &[w("east:3")], &[w("west:2")]).unwrap();
        assert_eq!((p2.targets, p2.moving), (again, 0), "a placed topic stays as it is");
    }

    /// `--rule-by rack` writes the observers' racks, which name exactly the observers the plan
    /// chose (and no primary); `broker` (the default) their ids. Either replaces an earlier rule.
    #[test]
    fn the_rule_names_the_observers_by_broker_or_by_rack() {
        let r = racks(&[(1, "east"), (2, "east"), (3, "east"), (4, "west"), (5, "west"), (6, "west"), (7, "dr")]);
        let current: Vec<(i32, Vec<i32>)> = (0..3).map(|p| (p, vec![1, 2, 3])).collect();
        let wants = [w("west:2"), w("dr:1")];
        let p = plan(&current, &r, &[w("east:3")], &wants).unwrap();
        assert_eq!(p.rule(RuleBy::Broker, &wants).shown(), "4,5,6,7");
        let by_rack = p.rule(RuleBy::Rack, &wants);
        assert_eq!(by_rack.shown(), "rack:dr,rack:west");
        for (_, t) in &p.targets {
            for id in t {
                assert_eq!(by_rack.contains(*id, &r), p.observers.contains(id), "broker {id} of {t:?}");
            }
        }
        let before = "# observers\ntopic:orders observers=5 # by hand\n";
        let after = idfile::set_topic_list(before, "orders", &by_rack).unwrap();
        assert_eq!(after, "# observers\ntopic:orders observers=rack:dr,rack:west # by hand\n");
        let rules = idfile::rules(&after).unwrap();
        let list = rules.resolve("orders").unwrap();
        assert!(list.contains(6, &r) && !list.contains(1, &r));
    }

    #[test]
    fn an_impossible_layout_is_refused_naming_the_rack() {
        let r = racks(&[(1, "east"), (2, "east"), (4, "west")]);
        let current = vec![(0, vec![1, 2])];
        let e = plan(&current, &r, &[w("east:2")], &[w("west:2")]).unwrap_err();
        assert!(
            e.starts_with("rack west has 1 live broker(s) (4), 2 needed; racks the cluster reports: east, west"),
            "{e}"
        );
        let e = plan(&current, &r, &[w("east:1")], &[w("east:1")]).unwrap_err();
        assert!(e.starts_with("rack east is named twice"), "{e}");
        let e = plan(&current, &r, &[w("north:1")], &[]).unwrap_err();
        assert!(e.contains("rack north has 0 live broker(s)"), "{e}");
        assert!(plan(&current, &r, &[], &[w("west:1")]).unwrap_err().contains("at least one replica"));
        for bad in ["east", "east:0", "east:x", ":2", "ea st:1", "east:65"] {
            assert!(bad.parse::<Want>().is_err(), "{bad}");
        }
        assert_eq!(
            w("a:b:2"),
            Want { rack: "a:b".into(), count: 2 },
            "a rack may hold a colon; the count is after the last"
        );
    }

    #[test]
    fn the_reassignment_json_is_what_kafka_reads() {
        let p = Plan { targets: vec![(0, vec![1, 4])], observers: [4].into(), moving: 1 };
        assert_eq!(
            reassignment_json("t", &p),
            r#"{"partitions":[{"partition":0,"replicas":[1,4],"topic":"t"}],"version":1}"#
        );
    }
}
