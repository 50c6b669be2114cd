//! `okp observers watch`: the unattended auto-promotion watchdog. Every
//! `--interval` it looks at the cluster (the snapshot `status` uses, and every
//! node's observer.ids), decides (`decide`, pure), and takes at most one
//! action: promote a caught-up observer where its policy says a partition
//! needs it, or demote a broker it promoted itself once the condition has
//! cleared twice, `--confirm-interval` apart. The watchdog decides only what
//! to ask for (a `change::Ask`); each action then takes the one path of a
//! change that `okp observers promote|demote` takes (`change::apply`: read,
//! parse, plan, role diff, pre-checks, the writes in order, the read-back),
//! answering where it forks (`Acting`, its `change::Steps`).
//!
//! The nine safety rules and where each lives: (1) off unless enabled —
//! `config::resolve`; (2) `--dry-run` — `scan` stops before any write;
//! (3) only a caught-up observer — `decide` (and `change`'s pre-checks);
//! (4) cooldown — `decide`, from the state's last action; (5) one action per
//! scan — `decide`; (6) demotion confirmed twice — `cleared` in `decide`,
//! again in `scan` after `--confirm-interval`; (7) only its own promotions are
//! demoted — the state file (`state`); (8) no audit log, no start — `audit`,
//! `run`; (9) one instance, a human stays authoritative — `state::lock`, and
//! `decide` forgets (and holds) a broker demoted by hand and refuses while the
//! nodes' files disagree.
//!
//! Per topic (docs/observers-watch.md, "Per topic"): a partition is flagged by its topic's
//! policy; a broker that observes the topic through a topic rule is promoted by rewriting that
//! topic's exact rule alone (`change` with `--topic`), and the state records the topic so the
//! demotion restores that rule and nothing else.
//!
//! Not here: the policies' arithmetic (`decide`), the files' formats
//! (`state`, `audit`, `config`), the edits themselves (`change`).

pub mod audit;
pub mod config;
pub mod decide;
pub mod decision;
pub mod policy;
pub mod state;

pub use policy::Policy;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use self::audit::Audit;
use self::config::Settings;
use self::decide::{Action, Decision, View};
use self::state::{Held, LastAction, Promoted, State};
use super::change::{self, Ask, Direction, Refusal, Steps};
use super::transport::{NodeSpec, Transport};
use super::view::{self, Depth};
use crate::error::{Error, Failure, Outcome, Result};

/// The cluster as the watchdog touches it: `Live` is the real one; the tests
/// drive `scan` with a scripted one.
pub trait Cluster {
    /// One look: every node's observer.ids and the snapshot (offsets, min.insync.replicas).
    fn view(&mut self) -> Result<View>;
    /// The one path of a change (`change::apply`) for what the watchdog asks for, never for an
    /// unclean election; `steps` (the watchdog's) answer where it forks.
    fn change(&mut self, ask: &Ask, steps: &mut dyn Steps) -> Result<Outcome>;
}

/// Time as the watchdog sees it.
pub trait Clock {
    /// Wall clock, milliseconds since the epoch (the cooldown survives restarts).
    fn now_ms(&self) -> i64;
    /// Sleeps; false when a stop was asked for meanwhile.
    fn sleep(&mut self, d: Duration) -> bool;
    fn stopping(&self) -> bool;
}

/// SIGTERM or SIGINT seen: stop between actions.
static STOP: AtomicBool = AtomicBool::new(false);

struct RealClock;

impl Clock for RealClock {
    fn now_ms(&self) -> i64 {
        audit::now().1
    }

    fn sleep(&mut self, d: Duration) -> bool {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if self.stopping() {
                return false;
            }
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
        }
        !self.stopping()
    }

    fn stopping(&self) -> bool {
        STOP.load(Ordering::SeqCst)
    }
}

/// The real cluster: `change` and `view` over the nodes' transport.
struct Live<'a> {
    nodes: &'a [NodeSpec],
    transport: &'a Transport,
    bootstrap: &'a [String],
    timeout: Duration,
}

impl Cluster for Live<'_> {
    fn view(&mut self) -> Result<View> {
        let set = change::observer_set(None, None, self.nodes, self.transport)?;
        let rules = set.rules();
        let snap = view::snapshot(self.bootstrap, None, Depth { offsets: true, min_insync: true })?;
        // A malformed rule is as unclear as an ignored token: the node keeps a set okp cannot see.
        let ignored =
            set.ignored.into_iter().chain(set.malformed.into_iter().map(|m| format!("malformed rule: {m}"))).collect();
        Ok(View { snap, observers: set.ids.unwrap_or_default(), rules, disagreeing: set.disagreeing, ignored })
    }

    fn change(&mut self, ask: &Ask, steps: &mut dyn Steps) -> Result<Outcome> {
        change::apply(self.nodes, self.transport, ask, self.bootstrap, false, self.timeout, steps)
    }
}

/// How a scan ended: its outcome, or a failure of the cluster or a transport
/// (audited; the loop goes on, `--once` ends with it).
pub enum Scan {
    Done(Outcome),
    Failed(Error),
}

/// A failure that ends the watchdog (`scan_inner`'s `Err(Err)`).
fn fatal(e: Error) -> std::result::Result<Scan, Error> {
    Err(e)
}

/// A failure of the cluster or a transport: this scan ends, the loop goes on.
fn soft(e: Error) -> std::result::Result<Scan, Error> {
    Ok(Scan::Failed(e))
}

/// One scan: look, decide, write every decision, take at most one action.
/// `Err` only when the watchdog must stop: its audit log or state file could
/// not be written, or the state belongs to another cluster.
pub fn scan(
    cluster: &mut dyn Cluster,
    clock: &mut dyn Clock,
    audit: &mut Audit,
    state: &mut State,
    s: &Settings,
) -> Result<Scan> {
    match scan_inner(cluster, clock, audit, state, s) {
        Ok(o) => Ok(Scan::Done(o)),
        Err(Ok(scan)) => Ok(scan),
        Err(Err(fatal)) => Err(fatal),
    }
}

/// `Err(Ok(Scan::Failed))`: the cluster or a transport failed; `Err(Err)`: fatal.
type Inner = std::result::Result<Outcome, std::result::Result<Scan, Error>>;

fn scan_inner(
    cluster: &mut dyn Cluster,
    clock: &mut dyn Clock,
    audit: &mut Audit,
    state: &mut State,
    s: &Settings,
) -> Inner {
    let view = cluster.view().map_err(soft)?;
    match (&state.cluster_id, &view.snap.cluster_id) {
        (Some(mine), Some(theirs)) if mine != theirs => {
            return Err(Err(Error::Usage(format!(
                "the state file {} belongs to cluster {mine}, but {} answers as cluster {theirs}: one state file per cluster",
                s.state.display(),
                s.bootstrap.join(",")
            ))))
        }
        (None, Some(id)) => state.cluster_id = Some(id.clone()),
        _ => {}
    }
    let plan = decide::decide(&view, state, &s.rules, clock.now_ms());
    for d in &plan.notes {
        audit.decision(d, None, None).map_err(fatal)?;
    }
    let changed = !plan.forget.is_empty() || !plan.release.is_empty();
    if changed && !s.dry_run {
        let at = audit::now().0;
        state.promoted.retain(|p| !plan.forget.contains(&(p.broker, p.topic.clone())));
        state.held.extend(plan.forget.iter().map(|(b, t)| Held { broker: *b, topic: t.clone(), at: at.clone() }));
        state.held.retain(|h| !plan.release.contains(&(h.broker, h.topic.clone())));
        state::save(&s.state, state).map_err(fatal)?;
    }
    let Some(mut act) = plan.act else { return Ok(Outcome::Done) };
    let (Some(broker), Some(policy)) = (act.broker, act.policy) else { return Ok(Outcome::Done) };
    let dir = if act.action == Action::Promote { Direction::Promote } else { Direction::Demote };
    // Through a topic's rule (Some) or the cluster-wide ids (None); a promotion that writes the
    // topic's first exact rule says so, and its demotion takes the rule away again.
    let topic = act.topic.clone();
    let key = (broker, topic.clone());
    let on = decide::for_topic(topic.as_deref());
    let mine = |st: &State| st.promoted.iter().find(|p| (p.broker, p.topic.clone()) == key).cloned();
    let rule_added = dir == Direction::Promote && topic.as_deref().is_some_and(|t| !view.rules.has_exact(t));
    let restore_rule = dir == Direction::Demote && mine(state).is_some_and(|p| p.rule_added);
    // A wanted action not taken, and how the scan ends.
    let skip = |audit: &mut Audit, act: &Decision, reason: String, end: Outcome| -> Inner {
        let d = Decision { action: Action::Skip, reason, ..act.clone() };
        audit.decision(&d, None, None).map_err(fatal)?;
        Ok(end)
    };
    let stopped = Outcome::Failed(Failure::Interrupted);
    if dir == Direction::Demote {
        // Rule 6: the condition must still be cleared `--confirm-interval` later.
        if !clock.sleep(s.confirm_interval) {
            return skip(
                audit,
                &act,
                format!("stopping before the second look at broker {broker}'s demotion"),
                stopped,
            );
        }
        let second = cluster.view().map_err(soft)?;
        let secs = s.confirm_interval.as_secs();
        let again = match &topic {
            None => second.observers.contains(&broker),
            Some(t) => second.observers_of(t).0.contains(&broker),
        };
        if again || !second.disagreeing.is_empty() || !second.ignored.is_empty() {
            return skip(
                audit,
                &act,
                format!("observer.ids changed during the {secs} s confirmation; deciding again next scan"),
                Outcome::Done,
            );
        }
        let judged = match mine(state) {
            Some(p) => decide::cleared_for(&second, &p, &s.rules),
            None => Err(format!("broker {broker}{on} is no longer in the state file")),
        };
        match judged {
            Err(why) => {
                return skip(
                    audit,
                    &act,
                    format!("cleared at the first look but not at the second, {secs} s later ({why}): not demoted"),
                    Outcome::Done,
                )
            }
            Ok(parts) => {
                act.parts = parts;
                act.reason = format!("{}; confirmed again {secs} s later", act.reason);
            }
        }
    }
    if clock.stopping() {
        return skip(
            audit,
            &act,
            format!("stopping: the {} of broker {broker}{on} was not started", dir.verb()),
            stopped,
        );
    }
    // The one path of a change, as `okp observers promote|demote [--topic]` takes it: the same
    // pre-checks on a fresh look, never forced; `Acting` answers where it forks.
    let ask = Ask { broker, direction: dir, topic: topic.clone(), restore_rule };
    let mut acting = Acting {
        audit,
        state,
        s,
        act,
        dir,
        key,
        policy,
        rule_added,
        on,
        fatal: None,
        started: None,
        written: false,
        clock: &*clock,
    };
    let result = cluster.change(&ask, &mut acting);
    if let Some(e) = acting.fatal.take() {
        return Err(Err(e));
    }
    let out = match result {
        Ok(out) => out,
        Err(e) => {
            if acting.started.is_some() && !acting.written {
                acting
                    .audit
                    .event(
                        "error",
                        format!(
                            "{} broker {broker}{}: a write failed ({e}); the nodes' files may now disagree: the watchdog acts again only once every node's file agrees",
                            dir.verb(),
                            acting.on
                        ),
                    )
                    .map_err(fatal)?;
            }
            return Err(soft(e));
        }
    };
    // Ended where the path forks (refused, or a dry run): audited there.
    let (true, Some(t0)) = (acting.written, acting.started) else { return Ok(out) };
    let outcome = match out {
        Outcome::Done => "done",
        Outcome::Failed(Failure::Interrupted) => "interrupted",
        Outcome::Failed(_) => "not-converged",
    };
    acting
        .audit
        .decision(&acting.act, Some(outcome), Some((t0.elapsed().as_secs_f64() * 10.0).round() / 10.0))
        .map_err(fatal)?;
    Ok(out)
}

/// The watchdog's answers where the path of a change forks (`change::Steps`): a pre-check's
/// refusal is audited and ends the action; a dry run stops after the plan; otherwise the action
/// is audited and recorded in the state file before any file changes (rules 8 and 7). A failure
/// of the audit log or the state file is kept in `fatal`: it ends the watchdog.
struct Acting<'a> {
    audit: &'a mut Audit,
    state: &'a mut State,
    s: &'a Settings,
    act: Decision,
    dir: Direction,
    /// (broker, topic) of the action, as the state file keys a promotion.
    key: (i32, Option<String>),
    policy: Policy,
    rule_added: bool,
    /// ` for topic T`, or nothing for the cluster-wide ids.
    on: String,
    fatal: Option<Error>,
    /// When the writes began: the action is audited and recorded.
    started: Option<Instant>,
    /// Every node is written: the read-back follows.
    written: bool,
    clock: &'a dyn Clock,
}

impl Acting<'_> {
    /// `r`, with a failure kept as fatal.
    fn keep(&mut self, r: Result<()>) -> Result<()> {
        r.map_err(|e| {
            self.fatal = Some(e);
            Error::External("the audit log or the state file failed".into())
        })
    }
}

impl Steps for Acting<'_> {
    fn planned(&mut self, refusals: &[Refusal], plan: &dyn Fn() -> String) -> Result<Option<Outcome>> {
        let (broker, dir) = (self.key.0, self.dir);
        let refusals: Vec<&Refusal> = refusals.iter().filter(|r| change::blocking(r, false)).collect();
        if !refusals.is_empty() {
            let why: Vec<String> =
                refusals.iter().map(|r| format!("{}: {}: {}", r.rule.word(), r.partition, r.detail)).collect();
            let d = Decision {
                action: Action::Refuse,
                reason: format!(
                    "{} broker {broker}{} refused by the pre-checks ({}); nothing written",
                    dir.verb(),
                    self.on,
                    why.join("; ")
                ),
                ..self.act.clone()
            };
            let r = self.audit.decision(&d, None, None);
            self.keep(r)?;
            return Ok(Some(Outcome::Done));
        }
        crate::out::print(&plan())?;
        if self.s.dry_run {
            self.act.reason = format!("{}; dry run: nothing written", self.act.reason);
            let r = self.audit.decision(&self.act, Some("dry-run"), None);
            self.keep(r)?;
            return Ok(Some(Outcome::Done));
        }
        // Audited and recorded before any file changes (rules 8 and 7).
        let r = self.audit.decision(&self.act, Some("decided"), None);
        self.keep(r)?;
        let (at, at_ms) = audit::now();
        let topic = self.key.1.clone();
        match dir {
            Direction::Promote => self.state.promoted.push(Promoted {
                broker,
                topic: topic.clone(),
                rule_added: self.rule_added,
                policy: self.policy,
                at: at.clone(),
                at_ms,
                partitions: self.act.parts.iter().map(|n| n.partition.clone()).collect(),
            }),
            Direction::Demote => self.state.promoted.retain(|p| (p.broker, p.topic.clone()) != self.key),
        }
        self.state.last_action = Some(LastAction { action: dir, broker, topic, at, at_ms });
        let r = state::save(&self.s.state, self.state);
        self.keep(r)?;
        self.started = Some(Instant::now());
        Ok(None)
    }

    fn written(&mut self) {
        self.written = true;
    }

    fn stop(&self) -> bool {
        self.clock.stopping()
    }
}

/// The watchdog: audit log (rule 8), lock (rule 9), state, then scans until
/// stopped (or once). Exit: 0 done (`--once`: the scan ran, any action it took
/// converged), 1 an action not converged within `--timeout` (`--once`), 2 bad
/// input (not enabled, a second instance, a damaged state, an audit log path
/// that cannot be a file), 3 the cluster, a transport or the disk failed,
/// 130 stopped by SIGTERM/SIGINT.
pub fn run(nodes: &[NodeSpec], transport: &Transport, s: &Settings) -> Result<Outcome> {
    super::transport::check_nodes(nodes)?;
    let mut audit = Audit::open(&s.audit_log, s.dry_run, s.rules.max_lag)?;
    let lock = state::lock(&s.state)?;
    audit.event(
        "start",
        format!(
            "okp {} watching {} (policy {}{}, max-lag {}, interval {} s, cooldown {} s, confirm-interval {} s{}{}); state {}, lock {}",
            env!("CARGO_PKG_VERSION"),
            s.bootstrap.join(","),
            s.rules.policy.name(),
            if s.rules.topics.is_empty() {
                String::new()
            } else {
                format!(", topic policies {}", s.rules.topics.shown())
            },
            s.rules.max_lag,
            s.interval.as_secs(),
            s.rules.cooldown_ms / 1000,
            s.confirm_interval.as_secs(),
            if s.dry_run { ", dry run: nothing will be written" } else { "" },
            if s.once { ", one scan" } else { "" },
            s.state.display(),
            lock.path.display()
        ),
    )?;
    let mut st = match state::load(&s.state) {
        Ok(st) => st,
        Err(e) => {
            audit.event("error", format!("refusing to start: {e}"))?;
            return Err(e);
        }
    };
    // Stop between actions; a second handler (tests in one process) keeps the first.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    let mut live = Live { nodes, transport, bootstrap: &s.bootstrap, timeout: s.timeout };
    let mut clock = RealClock;
    loop {
        let outcome = match scan(&mut live, &mut clock, &mut audit, &mut st, s)? {
            Scan::Done(o) => o,
            Scan::Failed(e) => {
                audit.event("error", e.to_string())?;
                if s.once {
                    audit.event("stop", "one scan (--once), failed")?;
                    return Err(e);
                }
                Outcome::Done
            }
        };
        if outcome == Outcome::Failed(Failure::Interrupted) || clock.stopping() {
            audit.event("stop", "SIGTERM or SIGINT: stopped between actions")?;
            return Ok(Outcome::Failed(Failure::Interrupted));
        }
        if s.once {
            audit.event("stop", "one scan (--once)")?;
            return Ok(outcome);
        }
        if !clock.sleep(s.interval) {
            audit.event("stop", "SIGTERM or SIGINT: stopped between scans")?;
            return Ok(Outcome::Failed(Failure::Interrupted));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decide::tests::{promoted, two_primaries_down, view};
    use super::decide::Policy;
    use super::*;
    use crate::observers::view::tests::part;

    /// A scripted cluster: the views it shows in turn (the last one repeats) and what was done to it.
    struct Script {
        views: Vec<View>,
        refusals: Vec<Refusal>,
        log: Vec<String>,
    }

    impl Cluster for Script {
        fn view(&mut self) -> Result<View> {
            self.log.push("view".into());
            if self.views.len() > 1 {
                Ok(self.views.remove(0))
            } else {
                self.views.first().cloned().ok_or_else(|| Error::External("no cluster".into()))
            }
        }
        fn change(&mut self, c: &Ask, steps: &mut dyn Steps) -> Result<Outcome> {
            let topic = c.topic.as_deref().map(|t| format!(" --topic {t}")).unwrap_or_default();
            let restore = if c.restore_rule { " (restoring the rule)" } else { "" };
            self.log.push(format!("prepare {} {}{topic}{restore}", c.direction.verb(), c.broker));
            if let Some(end) = steps.planned(&self.refusals, &String::new)? {
                return Ok(end);
            }
            self.log.push("write".into());
            steps.written();
            self.log.push("wait".into());
            Ok(Outcome::Done)
        }
    }

    struct FakeClock {
        now: i64,
        stop_after_sleeps: Option<usize>,
        slept: Vec<Duration>,
    }

    impl Clock for FakeClock {
        fn now_ms(&self) -> i64 {
            self.now
        }
        fn sleep(&mut self, d: Duration) -> bool {
            self.slept.push(d);
            self.now += d.as_millis() as i64;
            !self.stopping()
        }
        fn stopping(&self) -> bool {
            self.stop_after_sleeps.is_some_and(|n| self.slept.len() >= n)
        }
    }

    struct Rig {
        _dir: tempfile::TempDir,
        s: Settings,
        audit: Audit,
        clock: FakeClock,
    }

    fn rig(dry_run: bool) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let flags = config::File {
            enable: Some(true),
            dry_run: Some(dry_run),
            bootstrap: Some(vec!["b:1".into()]),
            state: Some(dir.path().join("state.json")),
            audit_log: Some(dir.path().join("audit.log")),
            ..config::File::default()
        };
        let s = config::resolve(&flags, false, None).unwrap();
        let audit = Audit::open(&s.audit_log, dry_run, 0).unwrap();
        Rig { _dir: dir, s, audit, clock: FakeClock { now: 10_000_000, stop_after_sleeps: None, slept: vec![] } }
    }

    fn script(views: Vec<View>) -> Script {
        Script { views, refusals: vec![], log: vec![] }
    }

    fn lines(r: &Rig) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&r.s.audit_log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    fn run_scan(r: &mut Rig, c: &mut Script, st: &mut State) -> Outcome {
        match scan(c, &mut r.clock, &mut r.audit, st, &r.s).unwrap() {
            Scan::Done(o) => o,
            Scan::Failed(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_promotion_is_audited_and_recorded_before_the_write() {
        let mut r = rig(false);
        let mut c = script(vec![two_primaries_down(0)]);
        let mut st = State::new(None);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "prepare promote 4", "write", "wait"]);
        let l = lines(&r);
        let outcomes: Vec<&str> = l.iter().filter_map(|x| x["outcome"].as_str()).collect();
        assert_eq!(outcomes, ["decided", "done"]);
        let saved = state::load(&r.s.state).unwrap();
        assert_eq!(saved.promoted.iter().map(|p| p.broker).collect::<Vec<_>>(), [4]);
        assert_eq!(saved.cluster_id.as_deref(), Some("c1"), "bound to the cluster it saw");
        assert_eq!(saved.last_action.as_ref().map(|a| (a.action, a.broker)), Some((Direction::Promote, 4)));
    }

    #[test]
    fn rule2_dry_run_traces_and_changes_nothing() {
        let mut r = rig(true);
        let mut c = script(vec![two_primaries_down(0)]);
        let mut st = State::new(None);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "prepare promote 4"], "pre-checks run, no write");
        let l = lines(&r);
        assert_eq!((l[0]["outcome"].as_str(), l[0]["dry_run"].as_bool()), (Some("dry-run"), Some(true)));
        assert!(l[0]["reason"].as_str().unwrap().ends_with("dry run: nothing written"));
        assert!(!r.s.state.exists(), "no state written");
        // A forget is traced but not recorded either.
        let mut st = State { promoted: vec![promoted(4, Policy::UnderMinIsr)], ..State::new(None) };
        let mut c = script(vec![two_primaries_down(0)]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert!(!r.s.state.exists());
    }

    #[test]
    fn the_pre_checks_refuse_with_their_words() {
        let mut r = rig(false);
        let mut c = script(vec![two_primaries_down(0)]);
        c.refusals = vec![Refusal {
            rule: change::Rule::Lag,
            partition: "auto-0".into(),
            detail: "broker 4 has log end offset 1, live replica 1 has 5".into(),
        }];
        let mut st = State::new(None);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "prepare promote 4"]);
        let l = lines(&r);
        assert_eq!(l[0]["action"], "refuse");
        assert!(l[0]["reason"].as_str().unwrap().contains("log end offset: auto-0: broker 4 has log end offset 1"));
        assert!(st.promoted.is_empty() && !r.s.state.exists());
    }

    #[test]
    fn a_promotion_a_rack_item_refuses_is_audited_and_the_loop_goes_on() {
        let mut r = rig(false);
        let mut v = super::decide::tests::with_ids(
            view(vec![part("tobs", Some(1), &[1, 2, 4], &[1], &[(1, 9), (4, 9)])], &[1, 4], &[]),
            "topic:tobs observers=rack:dr\n",
        );
        v.snap.racks.insert(4, Some("dr".into()));
        let mut c = script(vec![v]);
        c.refusals = vec![Refusal {
            rule: change::Rule::RackItem,
            partition: "tobs".into(),
            detail: "broker 4 observes topic tobs through rack:dr (line 1 of /b1/observer.ids on broker 1: `topic:tobs observers=rack:dr`); edit that rule by hand, or list the brokers by id".into(),
        }];
        let mut st = State::new(None);
        for _ in 0..2 {
            assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        }
        assert_eq!(c.log, ["view", "prepare promote 4 --topic tobs", "view", "prepare promote 4 --topic tobs"]);
        let l: Vec<serde_json::Value> = lines(&r).into_iter().filter(|x| x["action"] == "refuse").collect();
        assert_eq!((l.len(), l[0]["topic_rule"].as_str()), (2, Some("topic:tobs")), "one refusal per scan");
        let reason = l[0]["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("promote broker 4 for topic tobs refused by the pre-checks (rack item: tobs: broker 4 observes topic tobs through rack:dr (line 1 of /b1/observer.ids"),
            "{reason}"
        );
        assert!(st.promoted.is_empty() && !r.s.state.exists(), "nothing recorded, nothing written");
    }

    fn back() -> View {
        view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 2, 3, 4], &[(1, 9), (4, 9)])], &[1, 2, 3, 4], &[])
    }

    fn still_down() -> View {
        view(vec![part("auto", Some(1), &[1, 2, 3, 4], &[1, 4], &[(1, 9), (4, 9)])], &[1, 4], &[])
    }

    #[test]
    fn rule6_a_demotion_waits_for_the_second_look() {
        let mut r = rig(false);
        let mut st = State { promoted: vec![promoted(4, Policy::UnderMinIsr)], ..State::new(Some("c1".into())) };
        // Cleared at the first look, not at the second: nothing written.
        let mut c = script(vec![back(), still_down()]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "view"]);
        assert_eq!(r.clock.slept, [Duration::from_secs(5)], "--confirm-interval apart");
        let l = lines(&r);
        assert_eq!(l[0]["action"], "skip");
        assert!(l[0]["reason"].as_str().unwrap().contains("not at the second, 5 s later"), "{}", l[0]["reason"]);
        assert_eq!(st.promoted.len(), 1);
        // Cleared twice: demoted, and no longer owned.
        let mut c = script(vec![back(), back()]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "view", "prepare demote 4", "write", "wait"]);
        assert!(st.promoted.is_empty());
        assert!(state::load(&r.s.state).unwrap().promoted.is_empty());
        let l = lines(&r);
        assert!(l.last().unwrap()["reason"].as_str().unwrap().ends_with("confirmed again 5 s later"));
    }

    #[test]
    fn rule4_a_demotion_inside_the_cooldown_is_refused_across_restarts() {
        let mut r = rig(false);
        let mut c = script(vec![two_primaries_down(0)]);
        let mut st = State::new(None);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        // A restart: the state from disk; the primaries back 60 s later.
        let mut st = state::load(&r.s.state).unwrap();
        r.clock.now = st.last_action.as_ref().unwrap().at_ms + 60_000;
        let mut c = script(vec![back()]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view"], "no second look, no write inside the cooldown");
        let l = lines(&r);
        assert_eq!(
            (l.last().unwrap()["action"].as_str(), l.last().unwrap()["broker"].as_i64()),
            (Some("refuse"), Some(4))
        );
        assert!(l.last().unwrap()["reason"].as_str().unwrap().contains("cooldown"));
    }

    #[test]
    fn sigterm_stops_between_actions() {
        let mut r = rig(false);
        r.clock.stop_after_sleeps = Some(1);
        let mut st = State { promoted: vec![promoted(4, Policy::UnderMinIsr)], ..State::new(Some("c1".into())) };
        let mut c = script(vec![back()]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Failed(Failure::Interrupted));
        assert_eq!(c.log, ["view"], "stopped during the confirmation: nothing prepared or written");
        assert_eq!(st.promoted.len(), 1);
    }

    #[test]
    fn another_cluster_behind_the_same_state_is_fatal() {
        let mut r = rig(false);
        let mut st = State::new(Some("other".into()));
        let mut c = script(vec![two_primaries_down(0)]);
        let e = scan(&mut c, &mut r.clock, &mut r.audit, &mut st, &r.s).err().expect("fatal");
        assert!(e.to_string().contains("belongs to cluster other, but b:1 answers as cluster c1"), "{e}");
    }

    #[test]
    fn a_cluster_that_does_not_answer_is_a_failed_scan_not_a_fatal_one() {
        let mut r = rig(false);
        let mut c = script(vec![]);
        let mut st = State::new(None);
        assert!(matches!(scan(&mut c, &mut r.clock, &mut r.audit, &mut st, &r.s).unwrap(), Scan::Failed(_)));
    }

    #[test]
    fn a_promotion_through_a_topic_rule_rewrites_that_rule_and_its_demotion_restores_it() {
        use super::decide::tests::with_ids;
        use super::policy::{TopicPolicies, TopicPolicy};
        let mut r = rig(false);
        r.s.rules.policy = Policy::Never;
        r.s.rules.topics = TopicPolicies::new(&[TopicPolicy::parse_flag("topic:tobs=under-min-isr").unwrap()]).unwrap();
        // 4 observes tobs through `prefix:t observers=4` (tobs has no exact rule): promoted for
        // tobs alone, and the state says the promotion added tobs's rule.
        let tobs = |isr: &[i32], live: &[i32], text: &str| {
            with_ids(view(vec![part("tobs", Some(1), &[1, 2, 4], isr, &[(1, 9), (2, 9), (4, 9)])], live, &[]), text)
        };
        let mut c = script(vec![tobs(&[1], &[1, 4], "prefix:t observers=4\n")]);
        let mut st = State::new(None);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "prepare promote 4 --topic tobs", "write", "wait"]);
        let l = lines(&r);
        let rules: Vec<(&str, &str)> =
            l.iter().map(|x| (x["outcome"].as_str().unwrap_or("-"), x["topic_rule"].as_str().unwrap_or("-"))).collect();
        assert_eq!(rules, [("decided", "topic:tobs"), ("done", "topic:tobs")]);
        let saved = state::load(&r.s.state).unwrap();
        assert_eq!((saved.promoted[0].topic.as_deref(), saved.promoted[0].rule_added), (Some("tobs"), true));
        assert_eq!(saved.last_action.as_ref().and_then(|a| a.topic.as_deref()), Some("tobs"));
        // 2 back, past the cooldown, cleared twice: demoted for tobs, restoring the file.
        r.clock.now = saved.last_action.as_ref().unwrap().at_ms + 301_000;
        let back = tobs(&[1, 2, 4], &[1, 2, 4], "prefix:t observers=4\ntopic:tobs observers=none\n");
        let mut c = script(vec![back.clone(), back]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "view", "prepare demote 4 --topic tobs (restoring the rule)", "write", "wait"]);
        assert!(st.promoted.is_empty());
        let l = lines(&r);
        assert_eq!(
            (l.last().unwrap()["action"].as_str(), l.last().unwrap()["topic_rule"].as_str()),
            (Some("demote"), Some("topic:tobs"))
        );
        // An exact rule of tobs's own at the promotion: rewritten both ways, never removed.
        let mut r = rig(false);
        let mut c = script(vec![tobs(&[1], &[1, 4], "prefix:t observers=none\ntopic:tobs observers=4\n")]);
        let mut st = State::new(None);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "prepare promote 4 --topic tobs", "write", "wait"]);
        assert!(!st.promoted[0].rule_added);
        r.clock.now = st.last_action.as_ref().unwrap().at_ms + 301_000;
        let back = tobs(&[1, 2, 4], &[1, 2, 4], "prefix:t observers=none\ntopic:tobs observers=none\n");
        let mut c = script(vec![back.clone(), back]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "view", "prepare demote 4 --topic tobs", "write", "wait"]);
    }

    #[test]
    fn a_topic_rule_back_during_the_confirmation_stops_the_demotion() {
        use super::decide::tests::with_ids;
        let mut r = rig(false);
        let tobs = |text: &str| {
            with_ids(
                view(vec![part("tobs", Some(1), &[1, 2, 4], &[1, 2, 4], &[(1, 9), (4, 9)])], &[1, 2, 4], &[]),
                text,
            )
        };
        let mut st = State {
            promoted: vec![Promoted { topic: Some("tobs".into()), ..promoted(4, Policy::UnderMinIsr) }],
            ..State::new(Some("c1".into()))
        };
        let mut c = script(vec![tobs("topic:tobs observers=none\n"), tobs("topic:tobs observers=4\n")]);
        assert_eq!(run_scan(&mut r, &mut c, &mut st), Outcome::Done);
        assert_eq!(c.log, ["view", "view"], "nothing prepared or written");
        assert!(lines(&r)[0]["reason"].as_str().unwrap().contains("observer.ids changed during the 5 s confirmation"));
        assert_eq!(st.promoted.len(), 1);
    }
}
