//! The pre-checks of a change against the live cluster, pure over one snapshot: what would make
//! it unsafe now (a leader demoted, an ISR below min.insync.replicas, an unclean election that
//! loses records, a number that could not be read, a rack item that keeps the broker an
//! observer), and which of them `--force` waives.
//!
//! Not here: reading the cluster (view.rs), what the operator named (roles.rs).

use super::Direction;
use crate::observers::actuate::Edit;
use crate::observers::idfile;
use crate::observers::transport::NodeSpec;
use crate::observers::view::Snapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Demote: N leads a partition. Never overridable: a leader cannot be demoted live.
    Leadership,
    /// Demote: the ISR would drop below min.insync.replicas.
    MinInsync,
    /// Promote for an unclean election: N's log is behind a live replica's.
    Lag,
    /// A number the check needs could not be read.
    Unknown,
    /// Promote with a topic: a `rack:NAME` item of the topic's rule keeps N an observer whatever
    /// its id does. Never overridable: no edit of the ids promotes it.
    RackItem,
}

impl Rule {
    pub fn word(self) -> &'static str {
        match self {
            Rule::Leadership => "leadership",
            Rule::MinInsync => "min.insync.replicas",
            Rule::Lag => "log end offset",
            Rule::Unknown => "unknown",
            Rule::RackItem => "rack item",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Refusal {
    pub rule: Rule,
    pub partition: String,
    pub detail: String,
}

pub(super) fn ids(v: &[i32]) -> String {
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// Every reason not to make this change now, per partition `broker` replicates.
///
/// Promote: for an unclean election (`for_unclean`, or a partition with no
/// leader) N's log end offset must be at least every live replica's; a down
/// replica's log cannot be read and is named, not counted. Demote: N must lead
/// nothing, and every ISR it is in must keep min.insync.replicas without it.
pub fn prechecks(snap: &Snapshot, broker: i32, dir: Direction, for_unclean: bool) -> Vec<Refusal> {
    let mut out = Vec::new();
    for p in snap.partitions.iter().filter(|p| p.replicas.contains(&broker)) {
        let mut refuse = |rule, detail: String| out.push(Refusal { rule, partition: p.name(), detail });
        match dir {
            Direction::Promote => {
                if !(for_unclean || p.leader.is_none()) {
                    continue;
                }
                let Some(mine) = p.leo.get(&broker).copied() else {
                    refuse(Rule::Unknown, format!("broker {broker}'s log end offset could not be read (down, frozen, or not hosting it yet), so it cannot be compared with the other replicas"));
                    continue;
                };
                for r in p.replicas.iter().copied().filter(|r| *r != broker && snap.live(*r)) {
                    match p.leo.get(&r) {
                        None => refuse(Rule::Unknown, format!("live replica {r} did not answer its log end offset; broker {broker} has {mine}")),
                        Some(&theirs) if theirs > mine => refuse(
                            Rule::Lag,
                            format!("broker {broker} has log end offset {mine}, live replica {r} has {theirs}: electing {broker} uncleanly would discard offsets {mine}..{} ({} records)", theirs - 1, theirs - mine),
                        ),
                        Some(_) => {}
                    }
                }
            }
            Direction::Demote => {
                if p.leader == Some(broker) {
                    refuse(Rule::Leadership, format!("broker {broker} leads it (ISR {}); a leader cannot be demoted live: move leadership first (a preferred election or a reassignment)", ids(&p.isr)));
                }
                if p.isr.contains(&broker) {
                    let after: Vec<i32> = p.isr.iter().copied().filter(|i| *i != broker).collect();
                    match p.min_insync {
                        Some(min) if (after.len() as i32) < min => refuse(
                            Rule::MinInsync,
                            format!("ISR {} ({}) would become {} ({}) < min.insync.replicas={min}: acks=all writes would fail", ids(&p.isr), p.isr.len(), if after.is_empty() { "empty".into() } else { ids(&after) }, after.len()),
                        ),
                        Some(_) => {}
                        None => refuse(Rule::Unknown, format!("min.insync.replicas of topic {} could not be read", p.topic)),
                    }
                }
            }
        }
    }
    out
}

/// `--force` waives a refusal, except leadership and a rack item.
pub fn blocking(r: &Refusal, force: bool) -> bool {
    matches!(r.rule, Rule::Leadership | Rule::RackItem) || !force
}

/// Promote `broker` for `topic` alone: a refusal per distinct rule (the nodes' files in `edits`,
/// usually all alike) whose `rack:NAME` item keeps `broker` an observer of `topic` (`racks`: the
/// cluster's brokers and their broker.rack). Naming the first node's file and line, and the other
/// nodes with the same rule.
pub(super) fn rack_refusals(edits: &[Edit], topic: &str, broker: i32, racks: &idfile::RackView) -> Vec<Refusal> {
    let mut held: Vec<(idfile::RackHold, Vec<&NodeSpec>)> = Vec::new();
    for e in edits {
        let Ok(Some(hold)) = idfile::rack_hold(&e.before, topic, broker, racks) else { continue };
        match held.iter_mut().find(|(h, _)| *h == hold) {
            Some((_, nodes)) => nodes.push(&e.node),
            None => held.push((hold, vec![&e.node])),
        }
    }
    held.into_iter()
        .map(|(hold, nodes)| {
            let name = |n: &NodeSpec| match &n.host {
                Some(h) => format!("{} {} ({})", n.role.word(), n.id, crate::escape::one_line(h)),
                None => format!("{} {}", n.role.word(), n.id),
            };
            let mut detail = hold.message(broker, topic, &nodes[0].path, &name(nodes[0]));
            if nodes.len() > 1 {
                let others: Vec<String> = nodes[1..].iter().map(|n| name(n)).collect();
                detail.push_str(&format!(" (the same rule on {})", others.join(", ")));
            }
            Refusal { rule: Rule::RackItem, partition: crate::escape::one_line(topic), detail }
        })
        .collect()
}

/// Whether every node's rules (`rules`, one per node) give `topic` observers of its own, so that
/// the cluster-wide ids decide it on no node.
pub fn ruled_everywhere(rules: &[idfile::Rules], topic: &str) -> bool {
    !rules.is_empty() && rules.iter().all(|r| r.resolve(topic).is_some())
}
