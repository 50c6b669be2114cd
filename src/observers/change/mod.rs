//! The path of a change to observer.ids, one pipeline for `okp observers promote|demote
//! [--topic]`, `okp observers place` and the watchdog: what to ask for in, every node's file
//! planned, checked, written and read back out. Its stops, in order:
//!
//! 1. read every node's file at once (`read`: all or nothing, each through the transport);
//! 2. parse each with the one meaning (idfile/) and refuse a file okp cannot read cleanly
//!    (`read::check_clean`), or one a SIGKILLed change left half-applied (journal.rs);
//! 3. plan the new files (idfile/edit.rs), in write order (`write_order`);
//! 4. the role diff (roles.rs): refuse any role change the ask did not name, and okp's reading
//!    where the cluster contradicts it; then the pre-checks on a fresh snapshot (`precheck`);
//! 5. the plan as printed (`report`), then the writes in order, by compare-and-swap, all or
//!    nothing (actuate.rs, swap.rs);
//! 6. read back: wait until the cluster shows the change (`converge`).
//!
//! Order of the writes (KRaft):
//! - promote: controllers first, then (after the nodes' 5 s re-read interval)
//!   brokers. A broker that promotes N lets the leader propose N for the ISR;
//!   a controller that still holds N as an observer rejects that AlterPartition
//!   (INELIGIBLE_REPLICA), so controllers must know first.
//! - demote: brokers first, then controllers. A controller that demotes N
//!   rejects every proposed ISR still holding N, which would also block the
//!   leader's unrelated ISR changes (removing a failed follower) until the
//!   brokers catch up; brokers first lets the leader shrink N out with an ISR
//!   the controllers still accept.
//!
//! In ZooKeeper mode every node is a broker (the controller runs in one), so
//! the order is by id.
//!
//! The pre-checks are pure (`prechecks`), so each refusal is unit-tested; the
//! integration test shows each on a real cluster.
//!
//! `apply` is the path, whole: what to ask for (`Ask`) in, the outcome out. Its callers differ
//! only where it forks (`Steps`): after the plan (the command notes every refusal, waives what
//! `--force` may, stops for `--dry-run`; the watchdog audits a refusal, records its action in
//! the state file before any write) and in the read-back (SIGINT/SIGTERM, or the watchdog's
//! stop). `run` is the command; the watchdog calls `apply` with its own `Steps` and never sees a
//! plan's insides. `okp observers place` takes the same stops with a rule for its ask
//! (`plan_rule`, `Prepared::check_roles`, `write`), then its own read-back, a reassignment.
//!
//! Not here: when to change (the operator, or the watchdog's policies).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::error::{Error, Failure, Outcome, Result};
use crate::observers::actuate::Edit;
pub use crate::observers::actuate::REREAD;
use crate::observers::idfile;
use crate::observers::roles::{self, Asked};
use crate::observers::transport::{NodeRole, NodeSpec, Transport};
use crate::observers::view::{self, Depth, Snapshot};

mod converge;
mod precheck;
mod read;
mod report;

use converge::wait;
pub use precheck::{blocking, prechecks, ruled_everywhere, Refusal, Rule};
use precheck::{ids, rack_refusals};
use read::check_clean;
pub use read::{observer_set, read_every};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Remove N from observer.ids: it may join ISRs and lead.
    Promote,
    /// Add N to observer.ids: it leaves every ISR and may never lead.
    Demote,
}

impl Direction {
    pub fn verb(self) -> &'static str {
        match self {
            Direction::Promote => "promote",
            Direction::Demote => "demote",
        }
    }
}

/// Node order for the writes (see the module comment).
pub fn write_order(nodes: &[NodeSpec], dir: Direction) -> Vec<NodeSpec> {
    let mut v = nodes.to_vec();
    let first = match dir {
        Direction::Promote => NodeRole::Controller,
        Direction::Demote => NodeRole::Broker,
    };
    v.sort_by_key(|n| (n.role != first, n.id));
    v
}

/// What to ask for: the pipeline's one input, from `okp observers promote|demote`'s flags or the
/// watchdog's decision. Broker `broker` promoted or demoted in the cluster-wide ids, or (`topic`)
/// in that topic's exact rule alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub broker: i32,
    pub direction: Direction,
    /// Change this topic's rule alone (`--topic`), not the cluster-wide ids.
    pub topic: Option<String>,
    /// Demote with `topic`: take away the topic's exact rule when the rest of the file gives the
    /// topic the same observers (`idfile::restore_topic_rule`), as the watchdog does for a rule
    /// its promotion added. False for the command.
    pub restore_rule: bool,
}

/// The command: what it asks for, and its flags.
pub struct Args {
    pub ask: Ask,
    pub for_unclean: bool,
    pub force: bool,
    pub dry_run: bool,
    pub timeout: Duration,
    pub bootstrap: Vec<String>,
}

/// A change read and checked, not yet written: every node's file before and
/// after (in write order), and the pre-checks' refusals on a fresh snapshot.
pub struct Prepared {
    broker: i32,
    topic: Option<String>,
    direction: Direction,
    edits: Vec<Edit>,
    refusals: Vec<Refusal>,
}

/// Writes a planned change (actuate.rs): every node by compare-and-swap, in the plan's order, all
/// or nothing (a failure, another writer, SIGINT or SIGTERM puts back every node written).
pub fn write(transport: &Transport, p: &Prepared) -> Result<()> {
    crate::observers::actuate::write(transport, &p.asked().shown(), &p.edits)
}

/// Stops 1-4 for `a`: reads every node's file (in write order) and the cluster (`bootstrap`),
/// plans the new files, checks the role diff and runs the pre-checks (`for_unclean`: promote for
/// an unclean election). Nothing is written. A broker the cluster does not know is bad input.
fn prepare(
    nodes: &[NodeSpec],
    transport: &Transport,
    a: &Ask,
    bootstrap: &[String],
    for_unclean: bool,
) -> Result<Prepared> {
    let mut prepared = plan_edits(nodes, transport, a.broker, a.direction, a.topic.as_deref(), a.restore_rule)?;
    let mut snap = view::snapshot(
        bootstrap,
        None,
        Depth { offsets: a.direction == Direction::Promote, min_insync: a.direction == Direction::Demote },
    )?;
    // The role diff sees every topic of the cluster, before the pre-checks narrow the partitions.
    let cluster = roles::Cluster::of(&snap);
    prepared.check_roles(&cluster)?;
    if let Some(t) = &a.topic {
        snap.partitions.retain(|p| &p.topic == t);
        if snap.partitions.is_empty() {
            crate::out::note(format!(
                "topic {}: no partition in the cluster; the rule is written for when it is created",
                crate::escape::one_line(t)
            ));
        }
    }
    let hosted = snap.partitions.iter().filter(|p| p.replicas.contains(&a.broker)).count();
    if !snap.live(a.broker) && hosted == 0 && a.topic.is_none() {
        let known: Vec<i32> = snap.brokers.keys().copied().collect();
        return Err(Error::Usage(format!(
            "broker {} is not in the cluster: it is not registered (live brokers: {}) and hosts no replica",
            a.broker,
            ids(&known)
        )));
    }
    if a.topic.is_none() {
        // The cluster-wide ids do not decide a topic every node's file gives a rule of its own:
        // the change leaves such a topic's partitions as they are, so their pre-checks do not apply.
        let rules: Vec<idfile::Rules> =
            prepared.edits.iter().map(|e| idfile::rules(&e.before).unwrap_or_default()).collect();
        snap.partitions.retain(|p| !ruled_everywhere(&rules, &p.topic));
    }
    prepared.check_reading(&snap, &cluster)?;
    if let (Some(t), Direction::Promote) = (&a.topic, a.direction) {
        prepared.refusals = rack_refusals(&prepared.edits, t, a.broker, &snap.racks);
    }
    prepared.refusals.extend(prechecks(&snap, a.broker, a.direction, for_unclean));
    Ok(prepared)
}

/// Every node's file and what it becomes, in write order, with no pre-check (the cluster is
/// not asked). Every node is read, at once, before anything is written: a node whose file
/// cannot be read (a host down, stalled, or with a changed key) stops the change with every
/// such node named, and no file anywhere has changed.
pub fn plan_files(
    nodes: &[NodeSpec],
    transport: &Transport,
    broker: i32,
    direction: Direction,
    topic: Option<&str>,
) -> Result<Prepared> {
    let p = plan_edits(nodes, transport, broker, direction, topic, false)?;
    p.check_roles(&roles::Cluster::default())?;
    Ok(p)
}

/// `plan_files`; with `restore_rule` a demotion with `topic` takes away the topic's exact rule
/// when the rest of the file gives the topic the same observers (`Ask::restore_rule`).
fn plan_edits(
    nodes: &[NodeSpec],
    transport: &Transport,
    broker: i32,
    direction: Direction,
    topic: Option<&str>,
    restore_rule: bool,
) -> Result<Prepared> {
    crate::observers::transport::check_nodes(nodes)?;
    let order = write_order(nodes, direction);
    let texts = read_every(&order, transport)?;
    check_clean(&order, &texts)?;
    crate::observers::journal::check(&order, &texts)?;
    let mut edits = Vec::new();
    for (node, before) in order.into_iter().zip(texts) {
        let after = match (topic, direction) {
            (None, _) => idfile::with_cluster_id(&before, broker, direction == Direction::Demote)
                .map_err(|e| Error::Usage(format!("{}: observer.ids: {e}; nothing was written", node.label())))?,
            (Some(t), Direction::Demote) if restore_rule => idfile::restore_topic_rule(&before, t, broker)
                .map_err(|e| Error::Usage(format!("{}: observer.ids: {e}; nothing was written", node.label())))?,
            (Some(t), _) => idfile::with_topic_rule(&before, t, broker, direction == Direction::Demote)
                .map_err(|e| Error::Usage(format!("{}: observer.ids: {e}; nothing was written", node.label())))?,
        };
        edits.push(Edit { node, before, after });
    }
    Ok(Prepared { broker, topic: topic.map(str::to_string), direction, edits, refusals: Vec::new() })
}

/// Every node's file with topic `topic`'s exact rule naming `list` (`okp observers place`), in
/// the order a demotion writes (brokers first: the rule adds observers). Nothing is written.
pub fn plan_rule(nodes: &[NodeSpec], transport: &Transport, topic: &str, list: &idfile::Observers) -> Result<Prepared> {
    crate::observers::transport::check_nodes(nodes)?;
    let order = write_order(nodes, Direction::Demote);
    let texts = read_every(&order, transport)?;
    check_clean(&order, &texts)?;
    crate::observers::journal::check(&order, &texts)?;
    let mut edits = Vec::new();
    for (node, before) in order.into_iter().zip(texts) {
        let after = idfile::set_topic_list(&before, topic, list)
            .map_err(|e| Error::Usage(format!("{}: observer.ids: {e}; nothing was written", node.label())))?;
        edits.push(Edit { node, before, after });
    }
    Ok(Prepared {
        broker: -1,
        topic: Some(topic.to_string()),
        direction: Direction::Demote,
        edits,
        refusals: Vec::new(),
    })
}

impl Prepared {
    /// What the operator asked for, as the role diff judges it.
    pub fn asked(&self) -> Asked {
        match (&self.topic, self.broker) {
            (Some(t), b) if b < 0 => Asked::Topic(t.clone()),
            (topic, broker) => {
                Asked::Broker { broker, topic: topic.clone(), observer: self.direction == Direction::Demote }
            }
        }
    }

    /// Refuses the plan (exit 1, nothing written, `--force` or not) when a node's new file would
    /// change the role of any (topic, broker) beyond what was asked (roles.rs); `c`: the cluster's
    /// topics and racks (empty without a cluster: the file's shape and the named topic still count).
    pub fn check_roles(&self, c: &roles::Cluster) -> Result<()> {
        roles::check(&self.asked(), self.edits.iter().map(|e| (e.node.label(), e.before.as_str(), e.after.as_str())), c)
    }

    /// Refuses the plan (exit 1, nothing written, `--force` or not) when okp's reading of a node's
    /// file makes a broker other than the one asked about an observer of a topic the change touches
    /// (`snap`'s partitions) while the cluster has it in that topic's ISR: the brokers read the
    /// file otherwise, or a change is still converging, and a plan from that reading could change
    /// roles nobody named. Only nodes whose file the plan changes are held to it.
    pub(super) fn check_reading(&self, snap: &Snapshot, c: &roles::Cluster) -> Result<()> {
        let mut isr: std::collections::BTreeMap<String, BTreeSet<i32>> = Default::default();
        for p in &snap.partitions {
            isr.entry(p.topic.clone()).or_default().extend(p.isr.iter().copied());
        }
        // Only the nodes whose file changes: a node left as it is changes nobody's role.
        let files: Vec<(String, &str)> =
            self.edits.iter().filter(|e| e.before != e.after).map(|e| (e.node.label(), e.before.as_str())).collect();
        let found = roles::contradicted(&self.asked(), &files, &isr, c);
        if found.is_empty() {
            return Ok(());
        }
        Err(Error::Check(format!(
            "{}: okp's reading of observer.ids contradicts the cluster, so it plans no write from it (--force does not override this):\n  {}\n\
             the brokers read the file otherwise (a broker of an older patch set ignores topic rules; a pattern they match differently) \
             or a change is still converging: see okp observers status, and run the command again once it agrees; nothing was written",
            self.asked().shown(),
            found.join("\n  ")
        )))
    }

    /// Every node's topic rules after the change (the change never edits them): the topics they
    /// name keep their own observers, so `wait` leaves their partitions out.
    pub fn rules_after(&self) -> Vec<idfile::Rules> {
        self.edits.iter().map(|e| idfile::rules(&e.after).unwrap_or_default()).collect()
    }

    /// How many nodes' files change (the others already agree).
    pub fn changing(&self) -> usize {
        self.edits.iter().filter(|e| e.before != e.after).count()
    }
}

/// The caller's say where the path of a change forks: the command (`run`) and the watchdog each
/// answer these, and nothing else of the path differs between them.
pub trait Steps {
    /// Stops 1-4 are done and nothing is written: `refusals`, every pre-check's refusal (which
    /// ones the caller's force waives is its say, `blocking`); `plan`, the plan as printed.
    /// `Some(outcome)` ends the change there; `None` writes it.
    fn planned(&mut self, refusals: &[Refusal], plan: &dyn Fn() -> String) -> Result<Option<Outcome>>;
    /// Every node is written; the read-back follows.
    fn written(&mut self) {}
    /// Whether to end the read-back early (the files are written; the cluster converges by itself).
    fn stop(&self) -> bool;
}

/// The path of a change, whole: what to ask for (`ask`) in, the outcome out. Reads and plans
/// (`prepare`: stops 1-4, of `bootstrap`'s cluster; `for_unclean` as the pre-checks take it),
/// asks `steps`, writes in order (`write`), then reads back until the cluster shows the change
/// or `timeout` (`wait`).
pub fn apply(
    nodes: &[NodeSpec],
    transport: &Transport,
    ask: &Ask,
    bootstrap: &[String],
    for_unclean: bool,
    timeout: Duration,
    steps: &mut dyn Steps,
) -> Result<Outcome> {
    let prepared = prepare(nodes, transport, ask, bootstrap, for_unclean)?;
    if let Some(end) = steps.planned(&prepared.refusals, &|| prepared.plan(transport))? {
        return Ok(end);
    }
    let t0 = Instant::now();
    write(transport, &prepared)?;
    steps.written();
    wait(&prepared, bootstrap, timeout, t0, &|| steps.stop())
}

/// The command's answers: every refusal noted, `--force` waives what it may, `--dry-run` stops
/// after the plan, SIGINT or SIGTERM ends the read-back.
struct Command<'a> {
    a: &'a Args,
}

impl Steps for Command<'_> {
    fn planned(&mut self, refusals: &[Refusal], plan: &dyn Fn() -> String) -> Result<Option<Outcome>> {
        let a = self.a;
        let verb = a.ask.direction.verb();
        for r in refusals {
            let how = if blocking(r, a.force) { "refused" } else { "overridden by --force" };
            crate::out::note(format!(
                "{verb} broker {}: {how} ({}): {}: {}",
                a.ask.broker,
                r.rule.word(),
                r.partition,
                r.detail
            ));
        }
        let blocked: Vec<&Refusal> = refusals.iter().filter(|r| blocking(r, a.force)).collect();
        if !blocked.is_empty() {
            let hint = if blocked.iter().any(|r| r.rule == Rule::RackItem) {
                "; --force never overrides a rack item"
            } else if blocked.iter().all(|r| r.rule != Rule::Leadership) {
                "; --force overrides these checks"
            } else {
                "; --force never overrides leadership"
            };
            crate::out::note(format!(
                "{verb} broker {} refused by {} pre-check(s); nothing was written{hint}",
                a.ask.broker,
                blocked.len()
            ));
            return Ok(Some(Outcome::Failed(Failure::CheckFailed)));
        }
        crate::out::print(&plan())?;
        if a.dry_run {
            crate::out::print("dry run: nothing written\n")?;
            return Ok(Some(Outcome::Done));
        }
        Ok(None)
    }

    /// Written on every node: an interrupt now stops the wait, not the change.
    fn stop(&self) -> bool {
        crate::observers::actuate::interrupted()
    }
}

/// `okp observers promote|demote`: the path of a change for the flags' ask.
pub fn run(nodes: &[NodeSpec], transport: &Transport, a: &Args) -> Result<Outcome> {
    apply(nodes, transport, &a.ask, &a.bootstrap, a.for_unclean, a.timeout, &mut Command { a })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::view::tests::part;

    fn snap(parts: Vec<view::Part>, live: &[i32]) -> Snapshot {
        Snapshot {
            cluster_id: None,
            brokers: live.iter().map(|i| (*i, format!("h:{i}"))).collect(),
            racks: live.iter().map(|i| (*i, None)).collect(),
            partitions: parts,
        }
    }

    #[test]
    fn demote_refuses_a_leader_always() {
        let s = snap(vec![part("lead", Some(4), &[1, 2, 4], &[1, 2, 4], &[])], &[1, 2, 4]);
        let r = prechecks(&s, 4, Direction::Demote, false);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].rule, Rule::Leadership);
        assert!(blocking(&r[0], true), "--force never waives leadership");
    }

    #[test]
    fn demote_refuses_to_break_min_insync() {
        let ok = snap(vec![part("obs", Some(1), &[1, 2, 3, 4], &[1, 2, 4], &[])], &[1, 2, 3, 4]);
        assert!(prechecks(&ok, 4, Direction::Demote, false).is_empty());
        let tight = snap(vec![part("pair", Some(1), &[1, 4], &[1, 4], &[])], &[1, 4]);
        let r = prechecks(&tight, 4, Direction::Demote, false);
        assert_eq!(r[0].rule, Rule::MinInsync);
        assert!(r[0].detail.contains("ISR 1,4 (2) would become 1 (1) < min.insync.replicas=2"), "{}", r[0].detail);
        assert!(!blocking(&r[0], true));
        let outside = snap(vec![part("pair", Some(1), &[1, 4], &[1], &[])], &[1, 4]);
        assert!(prechecks(&outside, 4, Direction::Demote, false).is_empty(), "not in the ISR: nothing to break");
    }

    #[test]
    fn unclean_promote_refuses_a_lagging_observer() {
        let lagging = snap(vec![part("rf3", None, &[1, 2, 4], &[2], &[(1, 1200), (4, 900)])], &[1, 4]);
        let r = prechecks(&lagging, 4, Direction::Promote, false);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].rule, Rule::Lag);
        assert!(
            r[0].detail.contains("log end offset 900, live replica 1 has 1200")
                && r[0].detail.contains("900..1199 (300 records)"),
            "{}",
            r[0].detail
        );
        let level = snap(vec![part("rf3", None, &[1, 2, 4], &[2], &[(1, 1200), (4, 1200)])], &[1, 4]);
        assert!(prechecks(&level, 4, Direction::Promote, false).is_empty(), "replica 2 is down: not compared");
        let led = snap(vec![part("obs", Some(1), &[1, 4], &[1], &[(1, 1200), (4, 900)])], &[1, 4]);
        assert!(prechecks(&led, 4, Direction::Promote, false).is_empty(), "a clean promotion catches up first");
        assert_eq!(
            prechecks(&led, 4, Direction::Promote, true)[0].rule,
            Rule::Lag,
            "--for-unclean-election checks led partitions too"
        );
        let silent = snap(vec![part("rf3", None, &[1, 4], &[1], &[(1, 1200)])], &[1, 4]);
        assert_eq!(prechecks(&silent, 4, Direction::Promote, false)[0].rule, Rule::Unknown);
    }

    /// Brokers 1-3, each with `DIR/bID/observer.ids` holding observer 4.
    fn three_brokers(dir: &std::path::Path) -> Vec<NodeSpec> {
        (1..=3)
            .map(|id| {
                let d = dir.join(format!("b{id}"));
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join("observer.ids"), "# observers\n4\n").unwrap();
                NodeSpec { id, role: NodeRole::Broker, path: d.join("observer.ids").display().to_string(), host: None }
            })
            .collect()
    }

    /// A write that fails on the third node: the two written before it are put back, and the
    /// error says so node by node (a shell template that refuses one directory stands in for
    /// a read-only disk; tests/it/hosts.rs does it over ssh with a read-only mount).
    #[test]
    fn a_failed_write_puts_back_every_node_written_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let nodes = three_brokers(dir.path());
        let transport = Transport::Command {
            read: "cat {path}".into(),
            write: "case {path} in */b3/*) echo 'No space left on device' >&2; exit 1;; esac; cat > {path}".into(),
            timeout: Duration::from_secs(10),
        };
        let p = plan_files(&nodes, &transport, 4, Direction::Promote, None).unwrap();
        let e = write(&transport, &p).unwrap_err().to_string();
        assert!(e.starts_with("promote broker 4 failed on broker 3"), "{e}");
        assert!(e.contains("every node's observer.ids is as before (2 put back, 0 never written)"), "{e}");
        assert!(e.contains("No space left on device"), "{e}");
        for n in &nodes {
            assert_eq!(std::fs::read_to_string(&n.path).unwrap(), "# observers\n4\n", "{}", n.path);
        }
        // Unreadable nodes are all named before anything is written.
        let gone = Transport::Command {
            read: "case {path} in */b1/*|*/b2/*) echo unreachable >&2; exit 255;; esac; cat {path}".into(),
            write: "cat > {path}".into(),
            timeout: Duration::from_secs(10),
        };
        let e = plan_files(&nodes, &gone, 4, Direction::Promote, None).err().unwrap().to_string();
        assert!(e.starts_with("cannot read observer.ids of 2 of 3 nodes; nothing was written"), "{e}");
        assert!(e.contains("broker 1 (") && e.contains("broker 2 (") && !e.contains("broker 3 ("), "{e}");
    }

    /// The attack: a read template whose remote shell prints a banner before the file. okp took
    /// the banner for the file's text and planned (and wrote) it back into observer.ids. Now no
    /// plan is made from a file with text the registries ignore, whatever the change, and the
    /// error names the node, its file, each stray token and its line; nothing is written.
    #[test]
    fn a_file_read_with_a_banner_is_refused_for_writing() {
        let dir = tempfile::tempdir().unwrap();
        let nodes = three_brokers(dir.path());
        let banner = Transport::Command {
            read: "case {path} in */b2/*) printf 'Welcome to host7\\n';; esac; cat {path}".into(),
            write: "cat > {path}".into(),
            timeout: Duration::from_secs(10),
        };
        let list = idfile::Observers::of_ids([4, 5].into());
        for planned in [
            plan_files(&nodes, &banner, 4, Direction::Promote, None),
            plan_files(&nodes, &banner, 5, Direction::Demote, None),
            plan_files(&nodes, &banner, 5, Direction::Demote, Some("orders")),
            plan_rule(&nodes, &banner, "orders", &list),
        ] {
            let e = planned.err().expect("refused");
            assert_eq!(e.failure(), Failure::CheckFailed, "exit 1: {e}");
            let e = e.to_string();
            assert!(
                e.starts_with(&format!(
                    "{}: observer.ids line 1: `Welcome`, `to`, `host7`: not broker ids, text the registries ignore\n",
                    nodes[1].label()
                )),
                "{e}"
            );
            assert!(e.contains("(--force does not override this); nothing was written"), "{e}");
            assert!(!e.contains("broker 1 (") && !e.contains("broker 3 ("), "only the unclean node: {e}");
        }
        for n in &nodes {
            assert_eq!(std::fs::read_to_string(&n.path).unwrap(), "# observers\n4\n");
        }
        // A stray token in the file itself (a typo), and a malformed rule, which stays bad input
        // naming its line and column, as the registries name it.
        std::fs::write(&nodes[0].path, "4\n5x # typo\n").unwrap();
        std::fs::write(&nodes[2].path, "4\ntopic:t observers=7,\n").unwrap();
        let cat = Transport::Command {
            read: "cat {path}".into(),
            write: "cat > {path}".into(),
            timeout: Duration::from_secs(10),
        };
        let e = plan_files(&nodes, &cat, 4, Direction::Promote, None).err().unwrap();
        assert_eq!(e.failure(), Failure::CheckFailed, "{e}");
        let e = e.to_string();
        assert!(e.contains(&format!("{}: observer.ids line 2: `5x`: not broker ids", nodes[0].label())), "{e}");
        assert!(e.contains(&format!("{}: observer.ids: line 2, column 21:", nodes[2].label())), "{e}");
        std::fs::write(&nodes[0].path, "4\n").unwrap();
        let e = plan_files(&nodes, &cat, 4, Direction::Promote, None).err().unwrap();
        assert_eq!(e.failure(), Failure::BadInput, "{e}");
        assert!(e.to_string().ends_with("; nothing was written"), "{e}");
        // A clean file, as status reads it clean (comments, blank lines, CRLF), plans as before.
        std::fs::write(&nodes[2].path, "# observers\r\n\r\n4, 5 # dr\r\ntopic:t observers=7\r\n").unwrap();
        assert!(plan_files(&nodes, &cat, 4, Direction::Promote, None).is_ok());
    }

    /// Another writer (a second okp, the watchdog, an editor) changes broker 2's file after okp
    /// read it: okp writes nothing there, puts back broker 1, which it had written, never
    /// writes broker 3, and leaves broker 2 with the other writer's bytes.
    #[test]
    fn a_file_changed_since_it_was_read_stops_the_change_and_is_left_to_its_writer() {
        let dir = tempfile::tempdir().unwrap();
        let nodes = three_brokers(dir.path());
        let transport = Transport::Command {
            read: "cat {path}".into(),
            // Writing broker 1 also has "someone else" write broker 2.
            write: r#"cat > {path} && case {path} in */b1/*) printf '4\n5\n' > "$(dirname "$(dirname {path})")/b2/observer.ids";; esac"#
                .into(),
            timeout: Duration::from_secs(10),
        };
        let p = plan_files(&nodes, &transport, 4, Direction::Promote, None).unwrap();
        let e = write(&transport, &p).unwrap_err().to_string();
        assert!(e.starts_with("promote broker 4 failed on broker 2"), "{e}");
        assert!(e.contains("observer.ids changed since okp read it"), "{e}");
        assert!(
            e.contains("every write of okp's is undone (1 put back, 1 never written) and 1 node(s) hold what another writer put there"),
            "{e}"
        );
        assert!(e.contains("broker 2 (") && e.contains("changed by another writer"), "{e}");
        let read = |id: usize| std::fs::read_to_string(&nodes[id - 1].path).unwrap();
        assert_eq!(
            (read(1), read(2), read(3)),
            ("# observers\n4\n".into(), "4\n5\n".into(), "# observers\n4\n".into())
        );
    }

    #[test]
    fn a_topic_every_node_rules_is_outside_a_cluster_wide_change() {
        let r = |t: &str| idfile::rules(t).unwrap();
        let both = [r("4\ntopic:tfull observers=none\n"), r("4\nprefix:tf observers=none\n")];
        assert!(ruled_everywhere(&both, "tfull"), "a rule on every node, whichever kind");
        assert!(!ruled_everywhere(&both, "tobs"));
        let one = [r("4\ntopic:tfull observers=none\n"), r("4\n")];
        assert!(!ruled_everywhere(&one, "tfull"), "a node without the rule takes the cluster-wide ids");
        assert!(!ruled_everywhere(&[], "tfull"));
        // Broker 4 leads tfull, a full replica by its rule: a cluster-wide demotion does not
        // touch tfull, so its leadership does not refuse it once tfull is left out.
        let mut s = snap(vec![part("tfull", Some(4), &[1, 2, 4], &[1, 2, 4], &[])], &[1, 2, 4]);
        assert_eq!(prechecks(&s, 4, Direction::Demote, false)[0].rule, Rule::Leadership);
        s.partitions.retain(|p| !ruled_everywhere(&both, &p.topic));
        assert!(prechecks(&s, 4, Direction::Demote, false).is_empty());
    }

    #[test]
    fn a_rack_item_that_keeps_the_broker_an_observer_refuses_its_promotion() {
        let node = |id, role, path: &str| NodeSpec { id, role, path: path.into(), host: None };
        let rule = "4\ntopic:orders observers=5,rack:west # DR\n";
        let edit = |n: NodeSpec, before: &str| Edit { node: n, before: before.into(), after: before.into() };
        let edits = vec![
            edit(node(101, NodeRole::Controller, "/c/observer.ids"), rule),
            edit(node(1, NodeRole::Broker, "/opt/kafka/observer.ids"), rule),
            edit(NodeSpec { host: Some("b2.example".into()), ..node(2, NodeRole::Broker, "/o") }, rule),
            edit(node(3, NodeRole::Broker, "/o3"), "4\nprefix:ord observers=rack:west\n"),
            edit(node(6, NodeRole::Broker, "/o6"), "4\n"),
        ];
        let racks: idfile::RackView =
            [(1, Some("east".to_string())), (4, Some("west".to_string())), (6, None)].into_iter().collect();
        let r = rack_refusals(&edits, "orders", 4, &racks);
        let details: Vec<&str> = r.iter().map(|r| r.detail.as_str()).collect();
        assert_eq!(
            details,
            [
                "broker 4 observes topic orders through rack:west (line 2 of /c/observer.ids on controller 101: `topic:orders observers=5,rack:west`); edit that rule by hand, or list the brokers by id (the same rule on broker 1, broker 2 (b2.example))",
                "broker 4 observes topic orders through rack:west (line 2 of /o3 on broker 3: `prefix:ord observers=rack:west`); edit that rule by hand, or list the brokers by id",
            ]
        );
        assert!(r.iter().all(|r| r.rule == Rule::RackItem && r.partition == "orders" && blocking(r, true)));
        assert!(rack_refusals(&edits, "orders", 1, &racks).is_empty(), "east: no rack item holds it");
        assert!(rack_refusals(&edits, "orders", 6, &racks).is_empty(), "no broker.rack: none either");
        assert_eq!(rack_refusals(&edits, "orders", 9, &racks).len(), 2, "an unknown rack: held");
        assert!(rack_refusals(&edits, "logs", 4, &racks).is_empty(), "no rule for logs");
    }

    #[test]
    fn promote_writes_controllers_first_and_demote_brokers_first() {
        let n = |id, role| NodeSpec { id, role, path: format!("/{id}"), host: None };
        let nodes = vec![
            n(1, NodeRole::Broker),
            n(101, NodeRole::Controller),
            n(4, NodeRole::Broker),
            n(102, NodeRole::Controller),
        ];
        let order = |d| write_order(&nodes, d).iter().map(|n| n.id).collect::<Vec<_>>();
        assert_eq!(order(Direction::Promote), vec![101, 102, 1, 4]);
        assert_eq!(order(Direction::Demote), vec![1, 4, 101, 102]);
    }
}
