//! The watchdog's decisions as a pure function of one look at the cluster
//! (`View`), what it promoted itself (`State`) and its rules: which partition
//! a policy flags, which observer could help and why one is skipped (not
//! live, lag unknown, lag above `--max-lag`), which promoted broker's
//! condition has cleared, and the one action a scan may take (rule 5) unless
//! the cooldown refuses it (rule 4). Every decision is a `Decision`, which
//! becomes one audit line.
//!
//! Not here: reading the cluster, the pre-checks and the writes (`change`),
//! the second look before a demotion (rule 6, `watch::scan`), the audit file.

use std::collections::{BTreeMap, BTreeSet};

pub use super::policy::Policy;
use super::state::{Promoted, State};
use crate::observers::view::{Part, Snapshot};

/// The rules a decision needs (the timing of scans is the driver's).
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    pub policy: Policy,
    /// An observer this many offsets behind still counts as caught up (rule 3).
    pub max_lag: i64,
    /// Milliseconds between two actions (rule 4).
    pub cooldown_ms: i64,
}

/// One look at the cluster: the snapshot (offsets and min.insync.replicas
/// read) and the observer ids of every node's file.
#[derive(Clone, Debug)]
pub struct View {
    pub snap: Snapshot,
    /// The union of every node's observer.ids.
    pub observers: BTreeSet<i32>,
    /// Nodes whose file disagrees with the union (empty when all agree).
    pub disagreeing: Vec<String>,
    /// Files holding tokens that are not ids (`broker 1: `4x``): maybe a typo for an id.
    pub ignored: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Promote,
    Demote,
    /// A candidate not taken: not live, lagging, not confirmed, one action per scan.
    Skip,
    /// A wanted action blocked by a safety rule: cooldown, pre-check, files that disagree.
    Refuse,
    /// A promoted broker is an observer again (demoted by hand): no longer the watchdog's, and
    /// held: not promoted again while its partitions stay flagged.
    Forget,
    /// A hold lifted: none of the held broker's partitions is flagged any more.
    Release,
}

impl Action {
    pub fn word(self) -> &'static str {
        match self {
            Action::Promote => "promote",
            Action::Demote => "demote",
            Action::Skip => "skip",
            Action::Refuse => "refuse",
            Action::Forget => "forget",
            Action::Release => "release",
        }
    }
}

/// One partition's numbers, as the audit line carries them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Numbers {
    pub partition: String,
    pub leader: Option<i32>,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub isr_size: usize,
    pub min_insync: Option<i32>,
    /// Replicas that are not observers: what the ISR holds when nothing is wrong.
    pub primaries: usize,
    /// The broker's lag behind the leader (with no leader: the highest live replica).
    pub lag: Option<i64>,
}

impl Numbers {
    fn of(p: &Part, observers: &BTreeSet<i32>, broker: i32) -> Numbers {
        let lag = match (p.reference_leo(), p.leo.get(&broker)) {
            (Some(r), Some(b)) => Some((r - b).max(0)),
            _ => None,
        };
        Numbers {
            partition: p.name(),
            leader: p.leader,
            replicas: p.replicas.clone(),
            isr: p.isr.clone(),
            isr_size: p.isr.len(),
            min_insync: p.min_insync,
            primaries: p.replicas.iter().filter(|r| !observers.contains(r)).count(),
            lag,
        }
    }
}

/// One decision: one audit line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    pub policy: Option<Policy>,
    pub broker: Option<i32>,
    pub parts: Vec<Numbers>,
    pub reason: String,
}

/// What one scan decided.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Decisions written as they are: skips, refusals, forgets, releases.
    pub notes: Vec<Decision>,
    /// Brokers to drop from `promoted` and hold (a human made them observers again).
    pub forget: Vec<i32>,
    /// Held brokers whose hold lapses (none of their partitions is flagged).
    pub release: Vec<i32>,
    /// The one action of this scan (rule 5), cooldown permitting (rule 4).
    pub act: Option<Decision>,
}

fn ids(v: &[i32]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// Whether `policy` flags partition `p`, and in which words.
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
    }
}

/// Whether the condition that made the watchdog promote `broker` under
/// `policy` has cleared on every partition it replicates, as if it were an
/// observer again: each has a leader, the ISR without it keeps
/// min.insync.replicas, and (under-replicated) every other non-observer
/// replica is back in the ISR. `Err` says what still holds.
pub fn cleared(view: &View, broker: i32, policy: Policy) -> Result<Vec<Numbers>, String> {
    let mut numbers = Vec::new();
    let mut as_observer = view.observers.clone();
    as_observer.insert(broker);
    for p in view.snap.partitions.iter().filter(|p| p.replicas.contains(&broker)) {
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
        if policy == Policy::UnderReplicated {
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

/// The partitions `broker` leads (a leader cannot be demoted live).
fn leads(snap: &Snapshot, broker: i32) -> Vec<String> {
    snap.partitions.iter().filter(|p| p.leader == Some(broker)).map(|p| p.name()).collect()
}

/// One scan's decisions (see the module comment). `now_ms`: wall clock, for the cooldown.
pub fn decide(view: &View, state: &State, rules: &Rules, now_ms: i64) -> Plan {
    let mut plan = Plan::default();
    let policy = rules.policy;
    // Rule 9: the nodes' files are the human's. While they disagree someone may be editing them;
    // a token that is not an id (`4x`) may be a typo for one, which the nodes read as "not an
    // observer". What the human meant is unknown either way, so nothing is done until it is fixed.
    let unclear = if !view.disagreeing.is_empty() {
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
    };
    if let Some(reason) = unclear {
        plan.notes.push(Decision { action: Action::Refuse, policy: Some(policy), broker: None, parts: vec![], reason });
        return plan;
    }
    // Rule 9: a broker it promoted that is an observer again was demoted by hand: forget it, and
    // hold it (never promote it again on its own account) while its partitions stay flagged.
    let mut owned: Vec<&Promoted> = Vec::new();
    for p in &state.promoted {
        if view.observers.contains(&p.broker) {
            plan.forget.push(p.broker);
            plan.notes.push(Decision {
                action: Action::Forget,
                policy: Some(p.policy),
                broker: Some(p.broker),
                parts: vec![],
                reason: format!(
                    "broker {} (promoted by the watchdog at {}) is in observer.ids again: demoted by hand; the watchdog no longer owns it and holds it: it does not promote it again while any of its partitions is flagged",
                    p.broker, p.at
                ),
            });
        } else {
            owned.push(p);
        }
    }
    let flagged = |b: i32| {
        view.snap.partitions.iter().any(|p| p.replicas.contains(&b) && triggered(policy, p, &view.observers).is_some())
    };
    let mut held: BTreeMap<i32, String> = plan.forget.iter().map(|b| (*b, "now".to_string())).collect();
    for h in &state.held {
        if plan.forget.contains(&h.broker) {
            continue;
        }
        if !flagged(h.broker) {
            plan.release.push(h.broker);
            plan.notes.push(Decision {
                action: Action::Release,
                policy: Some(policy),
                broker: Some(h.broker),
                parts: vec![],
                reason: format!(
                    "hold on broker {} (demoted by hand, seen at {}) lifted: none of its partitions is flagged any more",
                    h.broker, h.at
                ),
            });
        } else {
            held.insert(h.broker, format!("at {}", h.at));
        }
    }

    // Promotion candidates: per observer broker, the flagged partitions where it is live and caught up.
    let mut candidates: BTreeMap<i32, Vec<Numbers>> = BTreeMap::new();
    let mut why: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for p in &view.snap.partitions {
        let Some(trigger) = triggered(policy, p, &view.observers) else { continue };
        for o in p.replicas.iter().copied().filter(|r| view.observers.contains(r)) {
            let n = Numbers::of(p, &view.observers, o);
            let skip = |reason: String| Decision {
                action: Action::Skip,
                policy: Some(policy),
                broker: Some(o),
                parts: vec![n.clone()],
                reason,
            };
            if let Some(when) = held.get(&o) {
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
                    why.entry(o).or_default().push(format!("{}: {trigger}", p.name()));
                    candidates.entry(o).or_default().push(n);
                }
            }
        }
    }
    // The broker that helps the most partitions, then the smallest worst lag, then the lowest id.
    let mut ranked: Vec<(i32, Vec<Numbers>)> = candidates.into_iter().collect();
    ranked.sort_by_key(|(b, parts)| {
        (std::cmp::Reverse(parts.len()), parts.iter().filter_map(|n| n.lag).max().unwrap_or(0), *b)
    });
    let mut wanted: Vec<Decision> = ranked
        .into_iter()
        .map(|(b, parts)| Decision {
            action: Action::Promote,
            policy: Some(policy),
            broker: Some(b),
            reason: format!(
                "{}; observer {b} is live and caught up (lag ≤ --max-lag {})",
                why.remove(&b).unwrap_or_default().join("; "),
                rules.max_lag
            ),
            parts,
        })
        .collect();

    // Demotion candidates: brokers it promoted whose condition has cleared (first look; rule 6 confirms).
    for p in &owned {
        let Ok(parts) = cleared(view, p.broker, p.policy) else { continue };
        let led = leads(&view.snap, p.broker);
        if !led.is_empty() {
            plan.notes.push(Decision {
                action: Action::Skip,
                policy: Some(p.policy),
                broker: Some(p.broker),
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
        wanted.push(Decision {
            action: Action::Demote,
            policy: Some(p.policy),
            broker: Some(p.broker),
            parts,
            reason: format!(
                "the {} condition that made the watchdog promote broker {} has cleared: every partition it replicates has a leader and keeps min.insync.replicas without it",
                p.policy.name(),
                p.broker
            ),
        });
    }

    // Rule 5: one action per scan (promotion first: it restores availability).
    let mut wanted = wanted.into_iter();
    let Some(first) = wanted.next() else { return plan };
    for other in wanted {
        plan.notes.push(Decision {
            action: Action::Skip,
            reason: format!(
                "one action per scan: {} broker {} waits for a later scan ({})",
                other.action.word(),
                other.broker.unwrap_or(-1),
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
                    "cooldown: the last action ({} broker {} at {}) was {} s ago; the next is allowed in {} s (--cooldown {} s). Wanted: {}",
                    last.action.verb(),
                    last.broker,
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
    use super::super::state::{Held, LastAction, Promoted, State};
    use super::*;
    use crate::observers::change::Direction;
    use crate::observers::view::tests::part;

    pub(crate) fn view(parts: Vec<Part>, live: &[i32], observers: &[i32]) -> View {
        View {
            snap: Snapshot {
                cluster_id: Some("c1".into()),
                brokers: live.iter().map(|i| (*i, format!("h:{i}"))).collect(),
                partitions: parts,
            },
            observers: observers.iter().copied().collect(),
            disagreeing: vec![],
            ignored: vec![],
        }
    }

    pub(crate) fn rules(policy: Policy) -> Rules {
        Rules { policy, max_lag: 0, cooldown_ms: 300_000 }
    }

    /// rf4 1:2:3:4 with min.insync.replicas=2 after 2 and 3 died: ISR {1}, 4 caught up.
    pub(crate) fn two_primaries_down(lag4: i64) -> View {
        view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1], &[(1, 500), (4, 500 - lag4)])], &[1, 4], &[4])
    }

    pub(crate) fn promoted(broker: i32, policy: Policy) -> Promoted {
        Promoted { broker, policy, at: "2025-01-01T00:00:00.000Z".into(), at_ms: 0, partitions: vec!["auto-0".into()] }
    }

    fn state_with(promoted: Vec<Promoted>, last_ms: Option<i64>) -> State {
        State {
            last_action: last_ms.map(|at_ms| LastAction {
                action: Direction::Promote,
                broker: 4,
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
        assert_eq!(plan.forget, vec![4]);
        assert_eq!(plan.notes[0].action, Action::Forget);
        assert!(plan.notes[0].reason.contains("demoted by hand"), "{}", plan.notes[0].reason);
        assert!(plan.act.is_none());
        // Demoted by hand while the primaries are still down: not promoted again (held), in the
        // same scan and in later ones, until none of its partitions is flagged.
        let plan = decide(&two_primaries_down(0), &st, &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none(), "{plan:?}");
        assert!(plan.notes.iter().any(|d| d.action == Action::Skip && d.reason.contains("observer 4 is held")));
        let held = State { held: vec![Held { broker: 4, at: "t".into() }], ..State::new(None) };
        let plan = decide(&two_primaries_down(0), &held, &rules(Policy::UnderMinIsr), 0);
        assert!(plan.act.is_none() && plan.release.is_empty());
        let healthy =
            view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 3], &[(1, 9), (4, 9)])], &[1, 2, 3, 4], &[4]);
        let plan = decide(&healthy, &held, &rules(Policy::UnderMinIsr), 0);
        assert_eq!(plan.release, vec![4]);
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
}
