//! The role diff of a planned change: for every node, every (topic, broker) whose role (observer
//! or full replica) the new observer.ids would change, computed from the old and the new text
//! with the one reading okp has of a file (`idfile::parse` for the cluster-wide ids,
//! `idfile::Rules` for the topic rules), and refused unless it is what the operator named.
//!
//! Two parts, so that a topic the cluster does not have yet is covered too:
//! - the file's shape: a change of the cluster-wide ids by broker B leaves every topic rule as it
//!   was and changes the ids by B alone; a change of topic T's rule leaves the cluster-wide ids
//!   and every other rule as they were;
//! - the roles: for every topic the cluster has (and T), for every broker it knows, its role
//!   before and after; any change that is not B's (toward what was asked), or is outside T,
//!   is listed.
//!
//! And one check of okp's reading against the cluster (`contradicted`): a broker okp reads as an
//! observer of a topic the change touches, but which the cluster has in that topic's ISR, means
//! the brokers read the file otherwise (an older patch set, a different pattern engine) or a
//! change is still converging; a plan made from that reading could change roles nobody named.
//!
//! Neither is waived by `--force`.
//!
//! Not here: making the new text (idfile/), the pre-checks against the cluster (change/),
//! writing (actuate.rs).

use std::collections::{BTreeMap, BTreeSet};

use super::idfile::{self, RackView};
use crate::error::{Error, Result};

/// What the operator asked for: the only role changes a plan may make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// Broker `broker` an observer (`observer`) or a full replica, of topic `topic` alone or (None)
    /// of every topic the cluster-wide ids decide.
    Broker { broker: i32, topic: Option<String>, observer: bool },
    /// Topic `0`'s observers, whichever brokers they are (`okp observers place`).
    Topic(String),
}

impl Asked {
    /// `demote broker 2 for topic demo`, `promote broker 4`, `place topic demo`.
    pub fn shown(&self) -> String {
        match self {
            Asked::Broker { broker, topic, observer } => format!(
                "{} broker {broker}{}",
                if *observer { "demote" } else { "promote" },
                topic.as_deref().map(|t| format!(" for topic {}", crate::escape::one_line(t))).unwrap_or_default()
            ),
            Asked::Topic(t) => format!("place topic {}", crate::escape::one_line(t)),
        }
    }

    fn topic(&self) -> Option<&str> {
        match self {
            Asked::Broker { topic, .. } => topic.as_deref(),
            Asked::Topic(t) => Some(t),
        }
    }

    /// Whether broker `x` becoming `to` in topic `t` is what was asked.
    fn allows(&self, t: &str, x: i32, to: Role) -> bool {
        match self {
            Asked::Broker { broker, topic, observer } => {
                x == *broker && topic.as_deref().is_none_or(|n| n == t) && to != Role::of(!observer)
            }
            Asked::Topic(n) => n == t,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Observer,
    Full,
}

impl Role {
    fn of(observer: bool) -> Role {
        if observer {
            Role::Observer
        } else {
            Role::Full
        }
    }

    fn word(self) -> &'static str {
        match self {
            Role::Observer => "observer",
            Role::Full => "full replica",
        }
    }
}

/// The cluster as the role diff needs it: every topic with its replicas, and the brokers' racks.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub topics: BTreeMap<String, BTreeSet<i32>>,
    pub racks: RackView,
}

impl Cluster {
    pub fn of(snap: &super::view::Snapshot) -> Cluster {
        let mut topics: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
        for p in &snap.partitions {
            topics.entry(p.topic.clone()).or_default().extend(p.replicas.iter().copied());
        }
        Cluster { topics, racks: snap.racks.clone() }
    }
}

/// Broker `x`'s role in topic `t` as file `text` (with its rules `rules`) makes it.
fn role(text: &str, rules: &idfile::Rules, t: &str, x: i32, c: &Cluster, universe: &BTreeSet<i32>) -> Role {
    match rules.observers_of(t, &c.racks, universe.iter().copied()) {
        Some(s) => Role::of(s.contains(&x)),
        None => Role::of(idfile::parse(text).contains(&x)),
    }
}

/// What the change from `before` to `after` on one node does beyond `asked`: each a line
/// (`topic demo, broker 3: observer → full replica`). Empty: nothing beyond.
pub fn beyond(asked: &Asked, before: &str, after: &str, c: &Cluster) -> Vec<String> {
    let mut out = Vec::new();
    let (rb, ra) = match (idfile::rules(before), idfile::rules(after)) {
        (Ok(b), Ok(a)) => (b, a),
        (_, Err(e)) => {
            return vec![format!("the new file would not read ({e}): every node would keep its last good set")]
        }
        (Err(e), _) => return vec![format!("the file does not read ({e})")],
    };
    let (ib, ia) = (idfile::parse(before), idfile::parse(after));
    match asked {
        Asked::Broker { broker, topic: None, observer } => {
            let mut want = ib.clone();
            if *observer {
                want.insert(*broker);
            } else {
                want.remove(broker);
            }
            if ia != want {
                out.push(format!(
                    "the cluster-wide ids: {} → {} (asked: {})",
                    idfile::show(&ib),
                    idfile::show(&ia),
                    idfile::show(&want)
                ));
            }
            if ra != rb {
                out.push(format!(
                    "the topic rules: {} → {}",
                    crate::escape::one_line(&rb.shown()),
                    crate::escape::one_line(&ra.shown())
                ));
            }
        }
        _ => {
            let t = asked.topic().unwrap_or_default();
            if ia != ib {
                out.push(format!("the cluster-wide ids: {} → {}", idfile::show(&ib), idfile::show(&ia)));
            }
            if ra.without_exact(t) != rb.without_exact(t) {
                out.push(format!(
                    "topic rules other than topic:{}'s: {} → {}",
                    crate::escape::one_line(t),
                    crate::escape::one_line(&rb.without_exact(t).shown()),
                    crate::escape::one_line(&ra.without_exact(t).shown())
                ));
            }
        }
    }
    let mut topics = c.topics.clone();
    if let Some(t) = asked.topic() {
        topics.entry(t.to_string()).or_default();
    }
    let mut universe: BTreeSet<i32> = c.racks.keys().copied().collect();
    universe.extend(topics.values().flatten().copied());
    universe.extend(ib.iter().chain(&ia).copied());
    universe.extend(rb.ids().into_iter().chain(ra.ids()));
    if let Asked::Broker { broker, .. } = asked {
        universe.insert(*broker);
    }
    for t in topics.keys() {
        for &x in &universe {
            let (was, will) = (role(before, &rb, t, x, c, &universe), role(after, &ra, t, x, c, &universe));
            if was != will && !asked.allows(t, x, will) {
                out.push(format!("topic {}, broker {x}: {} → {}", crate::escape::one_line(t), was.word(), will.word()));
            }
        }
    }
    out
}

/// Refuses a plan (each node's label, old and new text) whose role diff goes beyond `asked` on
/// any node: exit 1, every finding once with the nodes it is on. Nothing has been written.
pub fn check<'a>(
    asked: &Asked,
    edits: impl IntoIterator<Item = (String, &'a str, &'a str)>,
    c: &Cluster,
) -> Result<()> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (label, before, after) in edits {
        if before == after {
            continue;
        }
        for line in beyond(asked, before, after, c) {
            found.entry(line).or_default().push(label.clone());
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = found.into_iter().map(|(what, on)| format!("  {what} (on {})", on.join(", "))).collect();
    Err(Error::Check(format!(
        "{} would change more than it names, so okp writes nothing (--force does not override this):\n{}\n\
         the registries read every node's new file this way; edit the rule in force by hand, or name the change",
        asked.shown(),
        lines.join("\n")
    )))
}

/// Where okp's reading of a node's file contradicts the cluster: a broker other than the one
/// asked about that the file makes an observer of a topic the change touches, while the cluster
/// has it in that topic's ISR. `files`: each node's label and text; `isr`: topic → the brokers in
/// the ISR of any of its partitions (the topics the change touches).
pub fn contradicted(
    asked: &Asked,
    files: &[(String, &str)],
    isr: &BTreeMap<String, BTreeSet<i32>>,
    c: &Cluster,
) -> Vec<String> {
    let named = match asked {
        Asked::Broker { broker, .. } => Some(*broker),
        Asked::Topic(_) => None,
    };
    let mut found: BTreeMap<(String, i32), (String, Vec<String>)> = BTreeMap::new();
    for (label, text) in files {
        let Ok(rules) = idfile::rules(text) else { continue };
        let universe: BTreeSet<i32> = isr.values().flatten().copied().collect();
        for (t, in_isr) in isr {
            for &x in in_isr.iter().filter(|x| Some(**x) != named) {
                if role(text, &rules, t, x, c, &universe) != Role::Observer {
                    continue;
                }
                let by = match rules.in_force(t) {
                    Some(r) => format!("rule {} on line {}", crate::escape::one_line(r.selector), r.line),
                    None => "the cluster-wide ids".to_string(),
                };
                found.entry((t.clone(), x)).or_insert_with(|| (by, Vec::new())).1.push(label.clone());
            }
        }
    }
    found
        .into_iter()
        .map(|((t, x), (by, on))| {
            format!(
                "topic {}, broker {x}: okp reads it as an observer ({by}; on {}), but the cluster has it in the ISR",
                crate::escape::one_line(&t),
                on.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(topics: &[(&str, &[i32])]) -> Cluster {
        Cluster {
            topics: topics.iter().map(|(t, r)| (t.to_string(), r.iter().copied().collect())).collect(),
            racks: [1, 2, 3, 4].into_iter().map(|i| (i, None)).collect(),
        }
    }

    fn demote(broker: i32, topic: Option<&str>) -> Asked {
        Asked::Broker { broker, topic: topic.map(str::to_string), observer: true }
    }

    /// The write: `demote --broker 2 --topic demo` in a file whose cluster-wide ids make 4
    /// demo's observer wrote `topic:demo observers=2,3`, which also demotes 3 and promotes 4.
    #[test]
    fn the_attacks_write_is_refused_naming_the_unnamed_brokers() {
        let c = cluster(&[("demo", &[1, 2, 3, 4]), ("other", &[1, 2, 3, 4])]);
        let got = beyond(&demote(2, Some("demo")), "4\n", "4\ntopic:demo observers=2,3\n", &c);
        assert_eq!(
            got,
            ["topic demo, broker 3: full replica → observer", "topic demo, broker 4: observer → full replica"]
        );
        // The right write changes broker 2 alone.
        assert!(beyond(&demote(2, Some("demo")), "4\n", "4\ntopic:demo observers=2,4\n", &c).is_empty());
        let e = check(
            &demote(2, Some("demo")),
            [("broker 1 (/o)".to_string(), "4\n", "4\ntopic:demo observers=2,3\n")],
            &c,
        )
        .unwrap_err();
        assert_eq!(e.failure(), crate::error::Failure::CheckFailed);
        let e = e.to_string();
        assert!(e.starts_with("demote broker 2 for topic demo would change more than it names"), "{e}");
        assert!(e.contains("  topic demo, broker 4: observer → full replica (on broker 1 (/o))"), "{e}");
        assert!(e.contains("--force does not override this"), "{e}");
    }

    #[test]
    fn the_files_shape_covers_topics_the_cluster_does_not_have() {
        let c = cluster(&[]);
        // A cluster-wide demotion that also adds a rule, or another id.
        let got = beyond(&demote(4, None), "4\n", "4\n5\n", &c);
        assert_eq!(got[0], "the cluster-wide ids: [4] → [4,5] (asked: [4])");
        let got = beyond(&demote(5, None), "4\n", "4\n5\nprefix:x observers=none\n", &c);
        assert_eq!(got, ["the topic rules:  → prefix:x=none"]);
        // A topic edit that touches another rule or the ids.
        let got = beyond(
            &demote(2, Some("t")),
            "4\nprefix:a observers=1\n",
            "4\nprefix:a observers=2\ntopic:t observers=2,4\n",
            &c,
        );
        assert_eq!(got, ["topic rules other than topic:t's: prefix:a=1 → prefix:a=2"]);
        assert_eq!(
            beyond(&Asked::Topic("t".into()), "4\n", "\ntopic:t observers=none\n", &c)[0],
            "the cluster-wide ids: [4] → []"
        );
        // What was asked, and nothing else.
        assert!(beyond(&demote(5, None), "4\n", "4\n5\n", &c).is_empty());
        assert!(beyond(&Asked::Topic("t".into()), "4\n", "4\ntopic:t observers=1,2\n", &cluster(&[("t", &[1, 2, 4])]))
            .is_empty());
        let promote = Asked::Broker { broker: 4, topic: None, observer: false };
        assert!(beyond(&promote, "4 5\n", "5\n", &cluster(&[("t", &[1, 4, 5])])).is_empty());
        // The asked broker in the other direction is not what was asked.
        let got =
            beyond(&promote, "4\ntopic:t observers=none\n", "\ntopic:t observers=4\n", &cluster(&[("t", &[1, 4])]));
        assert!(got.contains(&"topic t, broker 4: full replica → observer".to_string()), "{got:?}");
        // A new file the registries would refuse.
        assert!(beyond(&demote(2, Some("t")), "4\n", "topic:t observers=2,\n", &c)[0]
            .starts_with("the new file would not read"));
    }

    #[test]
    fn a_reading_the_cluster_contradicts_is_named() {
        let c = cluster(&[("demo", &[1, 2, 3, 4])]);
        let isr: BTreeMap<String, BTreeSet<i32>> = [("demo".to_string(), [1, 2, 3].into())].into();
        let files = [("broker 1".to_string(), "4\nprefix:de observers=3\n"), ("broker 2".to_string(), "4\n")];
        assert_eq!(
            contradicted(&demote(2, Some("demo")), &files, &isr, &c),
            ["topic demo, broker 3: okp reads it as an observer (rule prefix:de on line 2; on broker 1), but the cluster has it in the ISR"]
        );
        assert!(contradicted(&demote(3, Some("demo")), &files, &isr, &c).is_empty(), "the broker asked about");
        assert!(contradicted(&demote(2, Some("demo")), &files[1..], &isr, &c).is_empty());
    }
}
