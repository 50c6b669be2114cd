//! The watchdog's decisions as a pure function of one look at the cluster
//! (`View`), what it promoted itself (`State`) and its rules: which partition
//! a policy flags, which observer could help and why one is skipped (not
//! live, lag unknown, lag above `--max-lag`), which promoted broker's
//! condition has cleared, and the one action a scan may take (rule 5) unless
//! the cooldown refuses it (rule 4). Every decision is a `Decision`, which
//! becomes one audit line.
//!
//! Per topic: a partition is flagged by its topic's policy (a topic policy, else `--policy`),
//! and its observers are its topic's (a topic rule in observer.ids, else the cluster-wide ids).
//! A broker that observes the flagged topic through a rule is promoted for that topic alone (its
//! exact rule is rewritten: the action's `topic`); one that observes it through the cluster-wide
//! ids is promoted cluster-wide, which changes every topic no rule names. A demotion undoes
//! exactly that, and is judged on exactly those partitions.
//!
//! Not here: the decisions' types (`decision`), reading the cluster, the path of a change (`change`),
//! the second look before a demotion (rule 6, `watch::scan`), the audit file.

use std::collections::{BTreeMap, BTreeSet};

pub use super::decision::{Action, Decision, Key, Numbers, Plan, Rules, View};
pub use super::policy::Policy;
use super::state::{Promoted, State};
use crate::observers::view::Part;

fn ids(v: &[i32]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// ` for topic T` when `topic` is set (a promotion through T's rule), else nothing.
pub(super) fn for_topic(topic: Option<&str>) -> String {
    topic.map(|t| format!(" for topic {t}")).unwrap_or_default()
}

/// Whether `policy` flags partition `p`, and in which words. `observers`: the observers of its topic.
pub fn triggered(policy: Policy, p: &Part, observers: &BTreeSet<i32>) -> Option<String> {
    match policy {
        Policy::UnderMinIsr => {
            let min = p.min_insync?;
            ((p.isr.len() as i32) < min)
                .then(|| format!("ISR {} ({}) < min.insync.replicas={min}", ids(&p.isr), p.isr.len()))
        }
        Policy::LeaderUnavailable => p.leader.is_none().then(|| format!("no leader (ISR {})", ids(&p.isr))),
        Policy::UnderReplicated => {
            let primaries: Vec<i32> = p.replicas.iter().copied().filter(|r| !observers.contains(r)).collect();
            let in_isr = primaries.iter().filter(|r| p.isr.contains(r)).count();
            (in_isr < primaries.len()).then(|| {
                format!(
                    "ISR {} holds {in_isr} of the {} non-observer replicas {}",
                    ids(&p.isr),
                    primaries.len(),
                    ids(&primaries)
                )
            })
        }
        Policy::Never => None,
    }
}

/// Whether the condition that made the watchdog promote `broker` under
/// `policy` has cleared on every partition it replicates, as if it were an
/// observer again: each has a leader, the ISR without it keeps
/// min.insync.replicas, and (under-replicated) every other non-observer
/// replica is back in the ISR. `Err` says what still holds. The partitions are
/// those of a cluster-wide promotion (every topic no rule names); `cleared_for`
/// judges a promotion as the state records it.
pub fn cleared(view: &View, broker: i32, policy: Policy) -> Result<Vec<Numbers>, String> {
    cleared_in(view, broker, None, &|_| policy == Policy::UnderReplicated)
}

/// `cleared` for promotion `p`, on the partitions it changed (its topic's, or cluster-wide those
/// of every topic no rule names). Each is judged by its topic's policy now, and a topic that
/// triggered the promotion also by the policy it was promoted under: under-replicated, the
/// stricter, asks for every other non-observer replica back.
pub fn cleared_for(view: &View, p: &Promoted, rules: &Rules) -> Result<Vec<Numbers>, String> {
    let triggering: BTreeSet<&str> = p.partitions.iter().filter_map(|n| n.rsplit_once('-').map(|(t, _)| t)).collect();
    cleared_in(view, p.broker, p.topic.as_deref(), &|topic| {
        rules.policy_for(topic) == Policy::UnderReplicated
            || (p.policy == Policy::UnderReplicated && triggering.contains(topic))
    })
}

/// `cleared` on the partitions of scope `scope`; `all_back(topic)`: whether every other
/// non-observer replica must be back in the ISR (under-replicated).
fn cleared_in(
    view: &View,
    broker: i32,
    scope: Option<&str>,
    all_back: &dyn Fn(&str) -> bool,
) -> Result<Vec<Numbers>, String> {
    let mut numbers = Vec::new();
    for p in view.snap.partitions.iter().filter(|p| p.replicas.contains(&broker) && view.in_scope(scope, &p.topic)) {
        let mut as_observer = view.observers_of(&p.topic).0;
        as_observer.insert(broker);
        let n = Numbers::of(p, &as_observer, broker);
        if p.leader.is_none() {
            return Err(format!("{} has no leader", p.name()));
        }
        let rest: Vec<i32> = p.isr.iter().copied().filter(|i| *i != broker).collect();
        let Some(min) = p.min_insync else {
            return Err(format!("min.insync.replicas of {} could not be read", p.topic));
        };
        if (rest.len() as i32) < min {
            return Err(format!(
                "{}: ISR without broker {broker} would be {} ({}) < min.insync.replicas={min}",
                p.name(),
                ids(&rest),
                rest.len()
            ));
        }
        if all_back(&p.topic) {
            let missing: Vec<i32> =
                p.replicas.iter().copied().filter(|r| !as_observer.contains(r) && !rest.contains(r)).collect();
            if !missing.is_empty() {
                return Err(format!("{}: non-observer replica(s) {} not back in the ISR", p.name(), ids(&missing)));
            }
        }
        numbers.push(n);
    }
    Ok(numbers)
}

/// The partitions of scope `scope` that `broker` leads (a leader cannot be demoted live).
fn leads(view: &View, broker: i32, scope: Option<&str>) -> Vec<String> {
    view.snap
        .partitions
        .iter()
        .filter(|p| p.leader == Some(broker) && view.in_scope(scope, &p.topic))
        .map(|p| p.name())
        .collect()
}

/// A topic as one scan sees it: its policy and its observers (through a rule or not).
struct Topic {
    policy: Policy,
    observers: BTreeSet<i32>,
    ruled: bool,
}

/// One scan's decisions (see the module comment). `now_ms`: wall clock, for the cooldown.
pub fn decide(view: &View, state: &State, rules: &Rules, now_ms: i64) -> Plan {
    let mut plan = Plan::default();
    if let Some(reason) = unclear(view) {
        plan.notes.push(Decision {
            action: Action::Refuse,
            policy: Some(rules.policy),
            broker: None,
            topic: None,
            parts: vec![],
            reason,
        });
        return plan;
    }
    let topics = topics(view, rules);
    let owned = forget(view, state, &mut plan);
    let held = holds(view, state, &topics, rules.policy, &mut plan);
    let mut wanted = promotions(view, &topics, &held, rules, &mut plan);
    wanted.extend(demotions(view, &owned, rules, &mut plan));
    one_action(plan, wanted, state, rules, now_ms)
}

/// Rule 9: the nodes' files are the human's. While they disagree someone may be editing them;
/// a token that is not an id (`4x`) may be a typo for one, which the nodes read as "not an
/// observer". What the human meant, or what the nodes do, is unknown either way, so nothing is
/// done until it is fixed: why, or None when the files are clear.
fn unclear(view: &View) -> Option<String> {
    if !view.disagreeing.is_empty() {
        Some(format!(
            "observer.ids disagree across nodes ({}); the watchdog acts only when every node's file agrees (a human may be editing them)",
            view.disagreeing.join("; ")
        ))
    } else if !view.ignored.is_empty() {
        Some(format!(
            "observer.ids holds tokens that are neither ids nor comments ({}); the watchdog acts only on files whose every token is an id",
            view.ignored.join("; ")
        ))
    } else {
        None
    }
}

/// Each topic of the snapshot once: its policy and observers.
fn topics<'a>(view: &'a View, rules: &Rules) -> BTreeMap<&'a str, Topic> {
    let mut topics: BTreeMap<&str, Topic> = BTreeMap::new();
    for p in &view.snap.partitions {
        topics.entry(p.topic.as_str()).or_insert_with(|| {
            let (observers, ruled) = view.observers_of(&p.topic);
            Topic { policy: rules.policy_for(&p.topic), observers, ruled }
        });
    }
    topics
}

/// Rule 9: a broker it promoted that is an observer again was demoted by hand: forget it, and
/// hold it (never promote it again on its own account) while its partitions stay flagged. The
/// promotions still the watchdog's.
fn forget<'a>(view: &View, state: &'a State, plan: &mut Plan) -> Vec<&'a Promoted> {
    let mut owned: Vec<&Promoted> = Vec::new();
    for p in &state.promoted {
        let again = match &p.topic {
            None => view.observers.contains(&p.broker),
            Some(t) => view.observers_of(t).0.contains(&p.broker),
        };
        if !again {
            owned.push(p);
            continue;
        }
        plan.forget.push((p.broker, p.topic.clone()));
        let reason = match &p.topic {
            None => format!(
                "broker {} (promoted by the watchdog at {}) is in observer.ids again: demoted by hand; the watchdog no longer owns it and holds it: it does not promote it again while any of its partitions is flagged",
                p.broker, p.at
            ),
            Some(t) => format!(
                "broker {} (promoted by the watchdog for topic {t} at {}) is an observer of {t} again in observer.ids: demoted by hand; the watchdog no longer owns it and holds it: it does not promote it again for {t} while any of its partitions of {t} is flagged",
                p.broker, p.at
            ),
        };
        plan.notes.push(Decision {
            action: Action::Forget,
            policy: Some(p.policy),
            broker: Some(p.broker),
            topic: p.topic.clone(),
            parts: vec![],
            reason,
        });
    }
    owned
}

/// The holds that stay (broker and scope → since when), each lifted once none of its partitions
/// is flagged any more.
fn holds(
    view: &View,
    state: &State,
    topics: &BTreeMap<&str, Topic>,
    policy: Policy,
    plan: &mut Plan,
) -> BTreeMap<Key, String> {
    let of = |p: &Part| &topics[p.topic.as_str()];
    let flagged = |b: i32, scope: Option<&str>| {
        view.snap.partitions.iter().any(|p| {
            p.replicas.contains(&b)
                && view.in_scope(scope, &p.topic)
                && triggered(of(p).policy, p, &of(p).observers).is_some()
        })
    };
    let mut held: BTreeMap<Key, String> = plan.forget.iter().map(|k| (k.clone(), "now".to_string())).collect();
    for h in &state.held {
        let key = (h.broker, h.topic.clone());
        if plan.forget.contains(&key) {
            continue;
        }
        if !flagged(h.broker, h.topic.as_deref()) {
            plan.release.push(key);
            plan.notes.push(Decision {
                action: Action::Release,
                policy: Some(policy),
                broker: Some(h.broker),
                topic: h.topic.clone(),
                parts: vec![],
                reason: format!(
                    "hold on broker {}{} (demoted by hand, seen at {}) lifted: none of its partitions{} is flagged any more",
                    h.broker,
                    for_topic(h.topic.as_deref()),
                    h.at,
                    h.topic.as_deref().map(|t| format!(" of {t}")).unwrap_or_default()
                ),
            });
        } else {
            held.insert(key, format!("at {}", h.at));
        }
    }
    held
}

/// Promotion candidates: per observer broker and the scope it observes through (a topic's
/// rule, or the cluster-wide ids), the flagged partitions where it is live and caught up; the
/// broker that helps the most partitions first, then the smallest worst lag, then the lowest id.
fn promotions(
    view: &View,
    topics: &BTreeMap<&str, Topic>,
    held: &BTreeMap<Key, String>,
    rules: &Rules,
    plan: &mut Plan,
) -> Vec<Decision> {
    let of = |p: &Part| &topics[p.topic.as_str()];
    let mut candidates: BTreeMap<Key, (Policy, Vec<Numbers>)> = BTreeMap::new();
    let mut why: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    for p in &view.snap.partitions {
        let t = of(p);
        let Some(trigger) = triggered(t.policy, p, &t.observers) else { continue };
        let scope = t.ruled.then(|| p.topic.clone());
        for o in p.replicas.iter().copied().filter(|r| t.observers.contains(r)) {
            let n = Numbers::of(p, &t.observers, o);
            let skip = |reason: String| Decision {
                action: Action::Skip,
                policy: Some(t.policy),
                broker: Some(o),
                topic: scope.clone(),
                parts: vec![n.clone()],
                reason,
            };
            if let Some(when) = held.get(&(o, scope.clone())) {
                plan.notes.push(skip(format!(
                    "{}: {trigger}; observer {o} is held: a human demoted it ({when}) after the watchdog had promoted it, and the watchdog does not undo that while its partitions stay flagged",
                    p.name()
                )));
                continue;
            }
            if !view.snap.live(o) {
                plan.notes.push(skip(format!("{}: {trigger}; observer {o} is not live (not registered)", p.name())));
                continue;
            }
            match n.lag {
                None => plan.notes.push(skip(format!(
                    "{}: {trigger}; observer {o}'s lag is unknown (its log end offset or the reference one did not answer): only a caught-up observer is promoted",
                    p.name()
                ))),
                Some(lag) if lag > rules.max_lag => plan.notes.push(skip(format!(
                    "{}: {trigger}; observer {o} lags {lag} offset(s) > --max-lag {}: a lagging observer joins no ISR until it has caught up, and elected uncleanly it would lose those offsets",
                    p.name(),
                    rules.max_lag
                ))),
                Some(_) => {
                    let key = (o, scope.clone());
                    why.entry(key.clone()).or_default().push(format!("{}: {trigger}", p.name()));
                    candidates.entry(key).or_insert_with(|| (t.policy, Vec::new())).1.push(n);
                }
            }
        }
    }
    // The broker that helps the most partitions, then the smallest worst lag, then the lowest id.
    let mut ranked: Vec<(Key, (Policy, Vec<Numbers>))> = candidates.into_iter().collect();
    ranked.sort_by_key(|((b, _), (_, parts))| {
        (std::cmp::Reverse(parts.len()), parts.iter().filter_map(|n| n.lag).max().unwrap_or(0), *b)
    });
    ranked
        .into_iter()
        .map(|((b, topic), (pol, parts))| {
            let through = match &topic {
                None => String::new(),
                Some(t) => format!(
                    "; it observes {t} through a topic rule: promoted for {t} alone, the rule topic:{t} rewritten without {b}, the cluster-wide ids untouched"
                ),
            };
            Decision {
                action: Action::Promote,
                policy: Some(pol),
                broker: Some(b),
                reason: format!(
                    "{}; observer {b} is live and caught up (lag ≤ --max-lag {}){through}",
                    why.remove(&(b, topic.clone())).unwrap_or_default().join("; "),
                    rules.max_lag
                ),
                topic,
                parts,
            }
        })
        .collect()
}

/// Demotion candidates: brokers it promoted whose condition has cleared (first look; rule 6
/// confirms), unless one still leads.
fn demotions(view: &View, owned: &[&Promoted], rules: &Rules, plan: &mut Plan) -> Vec<Decision> {
    let mut wanted = Vec::new();
    for p in owned {
        let Ok(parts) = cleared_for(view, p, rules) else { continue };
        let led = leads(view, p.broker, p.topic.as_deref());
        if !led.is_empty() {
            plan.notes.push(Decision {
                action: Action::Skip,
                policy: Some(p.policy),
                broker: Some(p.broker),
                topic: p.topic.clone(),
                parts,
                reason: format!(
                    "the {} condition has cleared, but broker {} leads {}: a leader cannot be demoted live; move leadership (a preferred election) and it will be demoted",
                    p.policy.name(),
                    p.broker,
                    led.join(", ")
                ),
            });
            continue;
        }
        let reason = match &p.topic {
            None => format!(
                "the {} condition that made the watchdog promote broker {} has cleared: every partition it replicates has a leader and keeps min.insync.replicas without it",
                p.policy.name(),
                p.broker
            ),
            Some(t) => format!(
                "the {} condition that made the watchdog promote broker {} for topic {t} has cleared: every partition of {t} it replicates has a leader and keeps min.insync.replicas without it; the rule topic:{t} names {} again, the cluster-wide ids untouched",
                p.policy.name(),
                p.broker,
                p.broker
            ),
        };
        wanted.push(Decision {
            action: Action::Demote,
            policy: Some(p.policy),
            broker: Some(p.broker),
            topic: p.topic.clone(),
            parts,
            reason,
        });
    }
    wanted
}

/// Rule 5: one action per scan (promotion first: it restores availability), unless the
/// cooldown refuses it (rule 4).
fn one_action(mut plan: Plan, wanted: Vec<Decision>, state: &State, rules: &Rules, now_ms: i64) -> Plan {
    let mut wanted = wanted.into_iter();
    let Some(first) = wanted.next() else { return plan };
    for other in wanted {
        plan.notes.push(Decision {
            action: Action::Skip,
            reason: format!(
                "one action per scan: {} broker {}{} waits for a later scan ({})",
                other.action.word(),
                other.broker.unwrap_or(-1),
                for_topic(other.topic.as_deref()),
                other.reason
            ),
            ..other
        });
    }
    // Rule 4: the cooldown between two actions (a clock that went back counts as no time passed).
    if let Some(last) = &state.last_action {
        let since = (now_ms - last.at_ms).max(0);
        if since < rules.cooldown_ms {
            plan.notes.push(Decision {
                action: Action::Refuse,
                reason: format!(
                    "cooldown: the last action ({} broker {}{} at {}) was {} s ago; the next is allowed in {} s (--cooldown {} s). Wanted: {}",
                    last.action.verb(),
                    last.broker,
                    for_topic(last.topic.as_deref()),
                    last.at,
                    since / 1000,
                    (rules.cooldown_ms - since + 999) / 1000,
                    rules.cooldown_ms / 1000,
                    first.reason
                ),
                ..first
            });
            return plan;
        }
    }
    plan.act = Some(first);
    plan
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::policy::TopicPolicies;
    use super::super::state::{Held, LastAction, Promoted, State};
    use super::*;
    use crate::observers::change::Direction;
    use crate::observers::idfile;
    use crate::observers::view::tests::part;
    use crate::observers::view::Snapshot;

    pub(crate) fn view(parts: Vec<Part>, live: &[i32], observers: &[i32]) -> View {
        View {
            snap: Snapshot {
                cluster_id: Some("c1".into()),
                brokers: live.iter().map(|i| (*i, format!("h:{i}"))).collect(),
                racks: live.iter().map(|i| (*i, None)).collect(),
                partitions: parts,
            },
            observers: observers.iter().copied().collect(),
            rules: idfile::Rules::default(),
            disagreeing: vec![],
            ignored: vec![],
        }
    }

    pub(crate) fn rules(policy: Policy) -> Rules {
        Rules { policy, topics: TopicPolicies::default(), max_lag: 0, cooldown_ms: 300_000 }
    }

    /// rf4 1:2:3:4 with min.insync.replicas=2 after 2 and 3 died: ISR {1}, 4 caught up.
    pub(crate) fn two_primaries_down(lag4: i64) -> View {
        view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1], &[(1, 500), (4, 500 - lag4)])], &[1, 4], &[4])
    }

    pub(crate) fn promoted(broker: i32, policy: Policy) -> Promoted {
        Promoted {
            broker,
            topic: None,
            rule_added: false,
            policy,
            at: "2025-01-01T00:00:00.000Z".into(),
            at_ms: 0,
            partitions: vec!["auto-0".into()],
        }
    }

    fn state_with(promoted: Vec<Promoted>, last_ms: Option<i64>) -> State {
        State {
            last_action: last_ms.map(|at_ms| LastAction {
                action: Direction::Promote,
                broker: 4,
                topic: None,
                at: "t".into(),
                at_ms,
            }),
            promoted,
            ..State::new(Some("c1".into()))
        }
    }

    #[test]
    fn under_min_isr_promotes_a_caught_up_observer() {
        let plan = decide(&two_primaries_down(0), &State::new(None), &rules(Policy::UnderMinIsr), 1_000_000);
        let act = plan.act.expect("a promotion");
        assert_eq!((act.action, act.broker), (Action::Promote, Some(4)));
        assert_eq!(act.parts[0].isr_size, 1);
        assert_eq!((act.parts[0].min_insync, act.parts[0].lag, act.parts[0].primaries), (Some(2), Some(0), 3));
        assert!(act.reason.contains("auto-0: ISR 1 (1) < min.insync.replicas=2"), "{}", act.reason);
        // ISR at min.insync.replicas: nothing to do.
        let fine = view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2], &[(1, 5), (4, 5)])], &[1, 2, 4], &[4]);
        let plan = decide(&fine, &State::new(None), &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.notes.is_empty(), "{plan:?}");
    }

    #[test]
    fn leader_unavailable_promotes_only_for_a_leaderless_partition() {
        let leaderless = view(vec![part("auto", None, &[1, 2, 3, 4], &[1], &[(4, 500)])], &[4], &[4]);
        let plan = decide(&leaderless, &State::new(None), &rules(Policy::LeaderUnavailable), 0);
        let act = plan.act.expect("a promotion");
        assert!(act.reason.contains("no leader (ISR 1)"), "{}", act.reason);
        // A leader, even with a short ISR, is not this policy's business.
        let plan = decide(&two_primaries_down(0), &State::new(None), &rules(Policy::LeaderUnavailable), 0);
        assert!(plan.act.is_none(), "{plan:?}");
        // A live primary ahead of the observer: lag against the highest live replica.
        let behind = view(vec![part("auto", None, &[1, 2, 4], &[1], &[(2, 800), (4, 500)])], &[2, 4], &[4]);
        let plan = decide(&behind, &State::new(None), &rules(Policy::LeaderUnavailable), 0);
        assert!(plan.act.is_none());
        assert!(plan.notes[0].reason.contains("lags 300 offset(s)"), "{:?}", plan.notes);
    }

    #[test]
    fn under_replicated_counts_only_non_observer_replicas() {
        let one_down = view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2], &[(1, 5), (4, 5)])], &[1, 2, 4], &[4]);
        let act = decide(&one_down, &State::new(None), &rules(Policy::UnderReplicated), 0).act.expect("promotion");
        assert!(act.reason.contains("holds 2 of the 3 non-observer replicas 1,2,3"), "{}", act.reason);
        // Under min.insync.replicas is not triggered by one primary down (ISR 2 = min 2).
        assert!(decide(&one_down, &State::new(None), &rules(Policy::UnderMinIsr), 0).act.is_none());
        let healthy =
            view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 3], &[(1, 5), (4, 5)])], &[1, 2, 3, 4], &[4]);
        assert!(decide(&healthy, &State::new(None), &rules(Policy::UnderReplicated), 0).act.is_none());
    }

    #[test]
    fn rule3_a_lagging_or_unknown_or_dead_observer_is_skipped_with_its_numbers() {
        let plan = decide(&two_primaries_down(300), &State::new(None), &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none());
        assert_eq!(plan.notes.len(), 1);
        assert_eq!((plan.notes[0].action, plan.notes[0].parts[0].lag), (Action::Skip, Some(300)));
        assert!(
            plan.notes[0].reason.contains("observer 4 lags 300 offset(s) > --max-lag 0"),
            "{}",
            plan.notes[0].reason
        );
        // --max-lag raises the bar.
        let plan = decide(
            &two_primaries_down(300),
            &State::new(None),
            &Rules { max_lag: 300, ..rules(Policy::UnderMinIsr) },
            0,
        );
        assert_eq!(plan.act.map(|a| a.broker), Some(Some(4)));
        // Its log end offset did not answer: unknown is not caught up.
        let silent = view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1], &[(1, 500)])], &[1, 4], &[4]);
        let plan = decide(&silent, &State::new(None), &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.notes[0].reason.contains("lag is unknown"), "{:?}", plan.notes);
        // Not registered: not live.
        let dead = view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1], &[(1, 500)])], &[1], &[4]);
        let plan = decide(&dead, &State::new(None), &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.notes[0].reason.contains("observer 4 is not live"), "{:?}", plan.notes);
    }

    #[test]
    fn rule4_the_cooldown_refuses_a_second_action() {
        let r = rules(Policy::UnderMinIsr);
        let st = state_with(vec![], Some(1_000_000));
        let plan = decide(&two_primaries_down(0), &st, &r, 1_000_000 + 120_000);
        assert!(plan.act.is_none());
        assert_eq!(plan.notes[0].action, Action::Refuse);
        assert!(
            plan.notes[0].reason.contains("was 120 s ago; the next is allowed in 180 s (--cooldown 300 s)"),
            "{}",
            plan.notes[0].reason
        );
        assert_eq!(plan.notes[0].broker, Some(4), "the refusal names what it wanted");
        assert!(decide(&two_primaries_down(0), &st, &r, 1_000_000 + 300_000).act.is_some(), "after the cooldown");
        assert!(decide(&two_primaries_down(0), &st, &r, 500_000).act.is_none(), "a clock that went back waits");
    }

    #[test]
    fn rule5_one_action_per_scan() {
        // Two observers (4, 5) of two flagged partitions; 5 helps both, so 5 is promoted and 4 waits.
        let v = view(
            vec![
                part("a", Some(1), &[1, 2, 4, 5], &[1], &[(1, 9), (4, 9), (5, 9)]),
                part("b", Some(1), &[1, 2, 5], &[1], &[(1, 9), (5, 9)]),
            ],
            &[1, 4, 5],
            &[4, 5],
        );
        let plan = decide(&v, &State::new(None), &rules(Policy::UnderMinIsr), 0);
        assert_eq!(plan.act.as_ref().and_then(|a| a.broker), Some(5));
        assert_eq!(plan.act.as_ref().map(|a| a.parts.len()), Some(2));
        let waits: Vec<&Decision> = plan.notes.iter().filter(|d| d.action == Action::Skip).collect();
        assert_eq!(waits.len(), 1);
        assert_eq!(waits[0].broker, Some(4));
        assert!(waits[0].reason.starts_with("one action per scan: promote broker 4 waits"), "{}", waits[0].reason);
        // A promotion and a demotion wanted in the same scan: the promotion goes first.
        let st = state_with(vec![promoted(6, Policy::UnderMinIsr)], None);
        let mut v2 = v.clone();
        v2.snap.partitions.push(part("c", Some(1), &[1, 2, 6], &[1, 2, 6], &[(1, 9), (2, 9), (6, 9)]));
        let plan = decide(&v2, &st, &rules(Policy::UnderMinIsr), 0);
        assert_eq!(plan.act.as_ref().map(|a| a.action), Some(Action::Promote));
        assert!(
            plan.notes.iter().any(|d| d.reason.starts_with("one action per scan: demote broker 6")),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn rule6_demotion_needs_the_condition_cleared() {
        let st = state_with(vec![promoted(4, Policy::UnderMinIsr)], None);
        let r = rules(Policy::UnderMinIsr);
        // Still down: ISR {1,4}; without 4 it would be {1} < 2.
        let still = view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 4], &[(1, 9), (4, 9)])], &[1, 4], &[]);
        assert!(decide(&still, &st, &r, 0).act.is_none());
        assert!(cleared(&still, 4, Policy::UnderMinIsr)
            .unwrap_err()
            .contains("would be 1 (1) < min.insync.replicas=2"));
        // One primary back: ISR {1,2,4} keeps 2 without 4 → demote (rule 6's second look is the driver's).
        let back =
            view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 4], &[(1, 9), (2, 9), (4, 9)])], &[1, 2, 4], &[]);
        let act = decide(&back, &st, &r, 0).act.expect("a demotion");
        assert_eq!((act.action, act.broker), (Action::Demote, Some(4)));
        // under-replicated clears only when every primary is back.
        let st_ur = state_with(vec![promoted(4, Policy::UnderReplicated)], None);
        assert!(decide(&back, &st_ur, &r, 0).act.is_none());
        assert!(cleared(&back, 4, Policy::UnderReplicated).unwrap_err().contains("replica(s) 3 not back"));
        let all =
            view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 3, 4], &[(1, 9), (4, 9)])], &[1, 2, 3, 4], &[]);
        assert!(decide(&all, &st_ur, &r, 0).act.is_some());
        // Leaderless: not cleared under any policy.
        let none = view(vec![part("auto", None, &[1, 2, 3, 4], &[4], &[(4, 9)])], &[4], &[]);
        assert!(cleared(&none, 4, Policy::LeaderUnavailable).is_err());
    }

    #[test]
    fn a_promoted_broker_that_leads_is_held_not_demoted() {
        let st = state_with(vec![promoted(4, Policy::LeaderUnavailable)], None);
        let led = view(vec![part("auto", Some(4), &[1, 2, 3, 4], &[1, 2, 3, 4], &[(4, 9)])], &[1, 2, 3, 4], &[]);
        let plan = decide(&led, &st, &rules(Policy::LeaderUnavailable), 0);
        assert!(plan.act.is_none());
        assert!(
            plan.notes[0].reason.contains("broker 4 leads auto-0: a leader cannot be demoted live"),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn rule7_only_brokers_it_promoted_are_demoted() {
        // 4 was promoted by hand (not in the state): conditions cleared, nothing to demote.
        let back =
            view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 3, 4], &[(1, 9), (4, 9)])], &[1, 2, 3, 4], &[]);
        let plan = decide(&back, &State::new(None), &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.notes.is_empty(), "{plan:?}");
    }

    #[test]
    fn rule9_a_manual_demotion_is_forgotten_held_and_disagreeing_files_stop_everything() {
        let st = state_with(vec![promoted(4, Policy::UnderMinIsr)], None);
        // 4 is in observer.ids again (a human demoted it): forgotten, never demoted on our account.
        let v = view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 3], &[(1, 9), (4, 9)])], &[1, 2, 3, 4], &[4]);
        let plan = decide(&v, &st, &rules(Policy::UnderMinIsr), 0);
        assert_eq!(plan.forget, vec![(4, None)]);
        assert_eq!(plan.notes[0].action, Action::Forget);
        assert!(plan.notes[0].reason.contains("demoted by hand"), "{}", plan.notes[0].reason);
        assert!(plan.act.is_none());
        // Demoted by hand while the primaries are still down: not promoted again (held), in the
        // same scan and in later ones, until none of its partitions is flagged.
        let plan = decide(&two_primaries_down(0), &st, &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none(), "{plan:?}");
        assert!(plan.notes.iter().any(|d| d.action == Action::Skip && d.reason.contains("observer 4 is held")));
        let held = State { held: vec![Held { broker: 4, topic: None, at: "t".into() }], ..State::new(None) };
        let plan = decide(&two_primaries_down(0), &held, &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.release.is_empty());
        let healthy =
            view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 3], &[(1, 9), (4, 9)])], &[1, 2, 3, 4], &[4]);
        let plan = decide(&healthy, &held, &rules(Policy::UnderMinIsr), 0);
        assert_eq!(plan.release, vec![(4, None)]);
        assert_eq!(plan.notes[0].action, Action::Release);
        // The nodes' files disagree: no action at all, not even a forget.
        let mut v = two_primaries_down(0);
        v.disagreeing = vec!["broker 2 (/b2/observer.ids): []".into()];
        let plan = decide(&v, &st, &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.forget.is_empty());
        assert_eq!(plan.notes[0].action, Action::Refuse);
        assert!(plan.notes[0].reason.contains("observer.ids disagree across nodes"), "{}", plan.notes[0].reason);
        // A file with a token that is not an id: no action either (it may be a typo for one).
        let mut v = two_primaries_down(0);
        v.ignored = vec!["broker 2: `4x`".into()];
        let plan = decide(&v, &st, &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.forget.is_empty());
        assert_eq!(plan.notes[0].action, Action::Refuse);
        assert!(plan.notes[0].reason.contains("broker 2: `4x`"), "{}", plan.notes[0].reason);
    }

    // ---- per topic ----

    /// `view` with the observer.ids `text` on every node (cluster-wide ids and topic rules).
    pub(crate) fn with_ids(mut v: View, text: &str) -> View {
        v.observers = idfile::parse(text);
        v.rules = idfile::rules(text).unwrap();
        v
    }

    fn policies(rules: Rules, flags: &[&str]) -> Rules {
        let list: Vec<_> = flags.iter().map(|f| super::super::policy::TopicPolicy::parse_flag(f).unwrap()).collect();
        Rules { topics: TopicPolicies::new(&list).unwrap(), ..rules }
    }

    /// tobs and tfull on 1:2:4 (min.insync.replicas=2) with 2 down; `obs` on 1:2:3:4 with 2 and 3 down.
    fn two_down(text: &str) -> View {
        with_ids(
            view(
                vec![
                    part("obs", Some(1), &[1, 2, 3, 4], &[1], &[(1, 9), (4, 9)]),
                    part("tobs", Some(1), &[1, 2, 4], &[1], &[(1, 9), (4, 9)]),
                    part("tfull", Some(1), &[1, 2, 4], &[1, 4], &[(1, 9), (4, 9)]),
                ],
                &[1, 4],
                &[],
            ),
            text,
        )
    }

    #[test]
    fn a_partition_is_flagged_by_its_topics_policy_and_never_is_never() {
        let r = policies(rules(Policy::Never), &["topic:tobs=under-min-isr", "prefix:t=never"]);
        let plan = decide(&two_down("4\n"), &State::new(None), &r, 0);
        let act = plan.act.expect("a promotion");
        assert_eq!((act.broker, act.topic.as_deref(), act.policy), (Some(4), None, Some(Policy::UnderMinIsr)));
        let names: Vec<&str> = act.parts.iter().map(|n| n.partition.as_str()).collect();
        assert_eq!(names, ["tobs-0"], "obs is never (the default), tfull never by the prefix");
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);
        // The exact name beats the prefix, the longest prefix beats a shorter one and any regex.
        let r =
            policies(rules(Policy::UnderMinIsr), &["regex:t.*=never", "prefix:tob=never", "prefix:to=under-min-isr"]);
        let plan = decide(&two_down("4\n"), &State::new(None), &r, 0);
        let names: Vec<&str> = plan.act.as_ref().unwrap().parts.iter().map(|n| n.partition.as_str()).collect();
        assert_eq!(names, ["obs-0"], "obs: the cluster's; tobs: prefix:tob (never); tfull: regex (never)");
        // Nothing but never: nothing to do.
        let plan = decide(&two_down("4\n"), &State::new(None), &rules(Policy::Never), 0);
        assert!(plan.act.is_none() && plan.notes.is_empty(), "{plan:?}");
    }

    #[test]
    fn a_rack_item_makes_the_brokers_of_its_rack_observers_of_the_topic() {
        // tobs keeps its observers in rack dr: broker 4 is there. 2 is down, so Metadata does not
        // list it: its rack is unknown, and the watchdog counts it as a primary.
        let mut v = two_down("topic:tobs observers=rack:dr\n");
        v.snap.racks.insert(4, Some("dr".into()));
        assert_eq!(v.observers_of("tobs"), ([4].into(), true));
        assert_eq!(v.observers_of("obs"), (BTreeSet::new(), false), "no rule, no cluster-wide ids");
        let r = policies(rules(Policy::Never), &["topic:tobs=under-replicated"]);
        let act = decide(&v, &State::new(None), &r, 0).act.expect("a promotion");
        assert_eq!((act.broker, act.topic.as_deref()), (Some(4), Some("tobs")), "2, a primary, is out of the ISR");
        assert!(act.reason.contains("non-observer replicas 1,2"), "{}", act.reason);
        v.snap.racks.insert(4, None);
        assert_eq!(v.observers_of("tobs"), (BTreeSet::new(), true), "4 sets no broker.rack: no rack item matches it");
    }

    #[test]
    fn observers_are_per_topic_and_a_rule_makes_the_promotion_per_topic() {
        let text = "4\nprefix:t observers=none\ntopic:tobs observers=4\n";
        let v = two_down(text);
        assert_eq!(v.observers_of("tobs"), ([4].into(), true));
        assert_eq!(v.observers_of("tfull"), (BTreeSet::new(), true));
        assert_eq!(v.observers_of("obs"), ([4].into(), false));
        // tobs flagged: 4 observes it through its rule: promoted for tobs alone.
        let r = policies(rules(Policy::Never), &["topic:tobs=under-min-isr"]);
        let act = decide(&v, &State::new(None), &r, 0).act.expect("a promotion");
        assert_eq!((act.broker, act.topic.as_deref()), (Some(4), Some("tobs")));
        assert!(act.reason.contains("it observes tobs through a topic rule: promoted for tobs alone, the rule topic:tobs rewritten without 4, the cluster-wide ids untouched"), "{}", act.reason);
        // tfull flagged: 4 is a full replica of it by the prefix rule, no observer to promote
        // (its ISR 1,4 holds 2 of its 3 primaries: under-replicated, and nothing to do).
        let r = policies(rules(Policy::Never), &["topic:tfull=under-replicated"]);
        let plan = decide(&v, &State::new(None), &r, 0);
        assert!(plan.act.is_none() && plan.notes.is_empty(), "{plan:?}");
        // obs flagged: 4 observes it through the cluster-wide ids: a cluster-wide promotion,
        // which covers obs only (the rules keep tobs and tfull as they are).
        let r = policies(rules(Policy::Never), &["topic:obs=under-min-isr"]);
        let act = decide(&v, &State::new(None), &r, 0).act.expect("a promotion");
        assert_eq!((act.broker, act.topic.as_deref()), (Some(4), None));
        assert!(!act.reason.contains("topic rule"), "{}", act.reason);
        // Both flagged: two promotions of broker 4, one per scan (rule 5).
        let r = rules(Policy::UnderMinIsr);
        let plan = decide(&v, &State::new(None), &r, 0);
        assert_eq!(plan.act.as_ref().map(|a| a.topic.clone()), Some(None), "obs first: the lower key on a tie");
        assert!(
            plan.notes
                .iter()
                .any(|d| d.reason.starts_with("one action per scan: promote broker 4 for topic tobs waits")),
            "{:?}",
            plan.notes
        );
        // Under-replicated counts a topic's own primaries: tfull's are 1, 2 and 4.
        let r = policies(rules(Policy::Never), &["prefix:t=under-replicated"]);
        let plan = decide(&v, &State::new(None), &r, 0);
        let act = plan.act.expect("tobs");
        assert_eq!(act.topic.as_deref(), Some("tobs"));
        assert_eq!(act.parts[0].primaries, 2, "tobs: 1 and 2 (4 observes it)");
    }

    fn promoted_for(topic: &str, policy: Policy) -> Promoted {
        Promoted { topic: Some(topic.into()), partitions: vec![format!("{topic}-0")], ..promoted(4, policy) }
    }

    #[test]
    fn a_promotion_for_a_topic_is_demoted_on_that_topics_partitions_and_forgotten_by_its_rule() {
        let promoted_text = "4\nprefix:t observers=none\ntopic:tobs observers=none\n";
        let st = state_with(vec![promoted_for("tobs", Policy::UnderMinIsr)], None);
        let r = policies(rules(Policy::Never), &["topic:tobs=under-min-isr"]);
        // 2 back in tobs's ISR; obs still under min.insync.replicas (it is not the promotion's
        // business), 4 leads tfull (a full replica there, untouched): demote for tobs.
        let back = with_ids(
            view(
                vec![
                    part("obs", Some(1), &[1, 2, 3, 4], &[1], &[(1, 9), (4, 9)]),
                    part("tobs", Some(1), &[1, 2, 4], &[1, 2, 4], &[(1, 9), (2, 9), (4, 9)]),
                    part("tfull", Some(4), &[1, 2, 4], &[1, 2, 4], &[(1, 9), (2, 9), (4, 9)]),
                ],
                &[1, 2, 4],
                &[],
            ),
            promoted_text,
        );
        let act = decide(&back, &st, &r, 0).act.expect("a demotion");
        assert_eq!((act.action, act.broker, act.topic.as_deref()), (Action::Demote, Some(4), Some("tobs")));
        assert_eq!(act.parts.iter().map(|n| n.partition.as_str()).collect::<Vec<_>>(), ["tobs-0"]);
        assert!(
            act.reason.contains("promote broker 4 for topic tobs has cleared")
                && act.reason.contains("the rule topic:tobs names 4 again"),
            "{}",
            act.reason
        );
        // The same look judged cluster-wide (the old way) is not cleared: obs would block it.
        assert!(cleared(&back, 4, Policy::UnderMinIsr).unwrap_err().contains("obs-0"));
        // Still down on tobs: not cleared.
        let down = with_ids(
            view(vec![part("tobs", Some(1), &[1, 2, 4], &[1, 4], &[(1, 9), (4, 9)])], &[1, 4], &[]),
            promoted_text,
        );
        assert!(decide(&down, &st, &r, 0).act.is_none());
        // A human wrote `topic:tobs observers=4` again: forgotten, held for tobs only.
        let by_hand = with_ids(down.clone(), "4\nprefix:t observers=none\ntopic:tobs observers=4\n");
        let plan = decide(&by_hand, &st, &r, 0);
        assert_eq!(plan.forget, vec![(4, Some("tobs".to_string()))]);
        assert!(plan.notes[0].reason.contains("is an observer of tobs again"), "{}", plan.notes[0].reason);
        assert!(plan.act.is_none());
        // Promoted both cluster-wide and for tobs; a human put 4 back into the cluster-wide ids:
        // the cluster-wide promotion is forgotten, the one for tobs stays the watchdog's.
        let both = state_with(vec![promoted(4, Policy::UnderMinIsr), promoted_for("tobs", Policy::UnderMinIsr)], None);
        let plan = decide(&with_ids(down, "4\ntopic:tobs observers=none\n"), &both, &r, 0);
        assert_eq!(plan.forget, vec![(4, None)]);
    }

    #[test]
    fn a_demotion_is_judged_by_each_topics_policy() {
        // Promoted for audit under under-replicated: cleared only with every primary back.
        let st = state_with(vec![promoted_for("audit", Policy::UnderReplicated)], None);
        let r = policies(rules(Policy::Never), &["topic:audit=under-replicated"]);
        let one_back = with_ids(
            view(vec![part("audit", Some(1), &[1, 2, 3, 4], &[1, 2, 4], &[(1, 9), (4, 9)])], &[1, 2, 4], &[]),
            "topic:audit observers=none\n",
        );
        assert!(decide(&one_back, &st, &r, 0).act.is_none(), "3 not back");
        let all_back = with_ids(
            view(vec![part("audit", Some(1), &[1, 2, 3, 4], &[1, 2, 3, 4], &[(1, 9), (4, 9)])], &[1, 2, 3, 4], &[]),
            "topic:audit observers=none\n",
        );
        assert!(decide(&all_back, &st, &r, 0).act.is_some());
        // A cluster-wide promotion spans topics of different policies: each is judged by its own.
        let st =
            state_with(vec![Promoted { partitions: vec!["a-0".into()], ..promoted(4, Policy::UnderMinIsr) }], None);
        let two = |b_isr: &[i32]| {
            view(
                vec![
                    part("a", Some(1), &[1, 2, 3, 4], &[1, 2, 4], &[(1, 9), (4, 9)]),
                    part("b", Some(1), &[1, 2, 3, 4], b_isr, &[(1, 9), (4, 9)]),
                ],
                &[1, 2, 3, 4],
                &[],
            )
        };
        let r = policies(rules(Policy::UnderMinIsr), &["topic:b=under-replicated"]);
        assert!(decide(&two(&[1, 2, 4]), &st, &r, 0).act.is_none(), "b must have 3 back, a need not");
        assert!(decide(&two(&[1, 2, 3, 4]), &st, &r, 0).act.is_some());
    }

    #[test]
    fn a_rule_the_nodes_refuse_stops_everything() {
        let mut v = two_down("4\n");
        v.ignored = vec!["broker 2: malformed rule: line 2, column 7: not a pattern of observer.ids".into()];
        let plan = decide(&v, &State::new(None), &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none());
        assert_eq!(plan.notes[0].action, Action::Refuse);
        assert!(plan.notes[0].reason.contains("malformed rule"), "{}", plan.notes[0].reason);
    }
}
