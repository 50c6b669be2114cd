//! The watchdog's decisions as data: what one scan looks at (`View`, the rules it decides by)
//! and what it says (`Decision`, one audit line each, with each partition's `Numbers`; `Plan`,
//! one scan's). Pure, no I/O.
//!
//! Not here: how the decisions are made (`decide`), the audit line's form (`audit`).

use std::collections::BTreeSet;

use super::policy::{Policy, TopicPolicies};
use crate::observers::idfile;
use crate::observers::view::{Part, Snapshot};

/// The rules a decision needs (the timing of scans is the driver's).
#[derive(Clone, Debug)]
pub struct Rules {
    /// The policy of every topic no topic policy selects.
    pub policy: Policy,
    /// Per topic (`--topic-policy`, `topic-policies:`); empty: `policy` for every topic.
    pub topics: TopicPolicies,
    /// An observer this many offsets behind still counts as caught up (rule 3).
    pub max_lag: i64,
    /// Milliseconds between two actions (rule 4).
    pub cooldown_ms: i64,
}

impl Rules {
    /// The policy of `topic`: its topic policy, else the cluster's.
    pub fn policy_for(&self, topic: &str) -> Policy {
        self.topics.resolve(topic).unwrap_or(self.policy)
    }
}

/// One look at the cluster: the snapshot (offsets and min.insync.replicas
/// read) and the observer ids of every node's file.
#[derive(Clone, Debug)]
pub struct View {
    pub snap: Snapshot,
    /// The union of every node's observer.ids (the cluster-wide ids).
    pub observers: BTreeSet<i32>,
    /// The topic rules of the nodes' files (every node's, as they agree; when they do not,
    /// `disagreeing` says so and nothing is done).
    pub rules: idfile::Rules,
    /// Nodes whose file disagrees with the union (empty when all agree).
    pub disagreeing: Vec<String>,
    /// Files holding tokens that are not ids (`broker 1: `4x``): maybe a typo for an id.
    pub ignored: Vec<String>,
}

impl View {
    /// Topic `topic`'s observers, and whether a topic rule gives them (true: changing them edits
    /// the topic's exact rule) rather than the cluster-wide ids. A rule's `rack:NAME` items stand
    /// for the brokers the snapshot's Metadata reports in that rack. A replica Metadata does not
    /// list (down: its rack is unknown here) counts as no observer for the watchdog's arithmetic,
    /// although the nodes (and `status`) hold it as one: here that is the safe direction (an
    /// under-replicated partition is flagged, a demotion waits for that primary to be back, a
    /// promoted broker that went down is not taken for one demoted by hand), and such a broker is
    /// never a candidate (not live), while the promotion itself (`change`) refuses a broker a rack
    /// item may hold.
    pub fn observers_of(&self, topic: &str) -> (BTreeSet<i32>, bool) {
        match self.rules.resolve(topic) {
            Some(s) => (s.members(&self.snap.racks, []), true),
            None => (self.observers.clone(), false),
        }
    }

    /// Whether a change of scope `scope` (a topic's exact rule, or with None the cluster-wide
    /// ids) applies to `topic`: its own topic, or every topic no rule names.
    pub(super) fn in_scope(&self, scope: Option<&str>, topic: &str) -> bool {
        match scope {
            Some(t) => t == topic,
            None => !self.observers_of(topic).1,
        }
    }
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
    pub(super) fn of(p: &Part, observers: &BTreeSet<i32>, broker: i32) -> Numbers {
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
    /// The topic whose exact rule the action rewrites (the broker observes it through a topic
    /// rule); None: the cluster-wide ids.
    pub topic: Option<String>,
    pub parts: Vec<Numbers>,
    pub reason: String,
}

/// A broker as the watchdog owns or holds it: its id, and the topic whose rule it was promoted
/// through (None: cluster-wide).
pub type Key = (i32, Option<String>);

/// What one scan decided.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Decisions written as they are: skips, refusals, forgets, releases.
    pub notes: Vec<Decision>,
    /// Promotions to drop from `promoted` and hold (a human made the broker an observer again).
    pub forget: Vec<Key>,
    /// Holds that lapse (none of their partitions is flagged).
    pub release: Vec<Key>,
    /// The one action of this scan (rule 5), cooldown permitting (rule 4).
    pub act: Option<Decision>,
}
