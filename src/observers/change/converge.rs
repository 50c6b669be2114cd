//! The last stop of a change: the read-back, polling the cluster's Metadata until it shows the
//! change (or `--timeout`, or a stop), with the progress notes and the closing line.
//!
//! Not here: the writes (actuate.rs), the plan (`super`).

use std::time::{Duration, Instant};

use super::precheck::ids;
use super::{Direction, Prepared};
use crate::error::{Failure, Outcome, Result};
use crate::observers::actuate::REREAD;
use crate::observers::view::{self, Depth};

/// Polls Metadata until the change is visible: promote → N in the ISR of every
/// partition it replicates that has a leader; demote → N in no ISR. Partitions of a topic that
/// a node's topic rule names (every node's, after the change) keep their own observers and are
/// not waited for. Asked of `bootstrap`, until `timeout` after `t0`; `stop` ends the wait early
/// (the files are written; the cluster converges by itself).
pub fn wait(
    planned: &Prepared,
    bootstrap: &[String],
    timeout: Duration,
    t0: Instant,
    stop: &dyn Fn() -> bool,
) -> Result<Outcome> {
    let (broker, direction, topic) = (planned.broker, planned.direction, planned.topic.as_ref());
    let rules = planned.rules_after();
    let verb = direction.verb();
    let mut last_report = Instant::now();
    let mut last_pending: Option<Vec<String>> = None;
    let by_rule = |topic: &str| rules.iter().any(|r| r.resolve(topic).is_some());
    let mut told = false;
    loop {
        let snap = view::snapshot(bootstrap, None, Depth { offsets: false, min_insync: false })?;
        let (mine, ruled): (Vec<&view::Part>, Vec<&view::Part>) = snap
            .partitions
            .iter()
            .filter(|p| p.replicas.contains(&broker) && topic.is_none_or(|t| &p.topic == t))
            .partition(|p| topic.is_some() || !by_rule(&p.topic));
        if !ruled.is_empty() && !told {
            let mut topics: Vec<&str> = ruled.iter().map(|p| p.topic.as_str()).collect();
            topics.dedup();
            crate::out::note(format!(
                "{verb} broker {}: not waiting for {} partition(s) of topic(s) with a rule of their own in observer.ids ({}): the change does not apply to them",
                broker,
                ruled.len(),
                crate::escape::one_line(&topics.join(", "))
            ));
            told = true;
        }
        let leaderless: Vec<String> = mine.iter().filter(|p| p.leader.is_none()).map(|p| p.name()).collect();
        let pending: Vec<String> = mine
            .iter()
            .filter(|p| match direction {
                Direction::Promote => p.leader.is_some() && !p.isr.contains(&broker),
                Direction::Demote => p.isr.contains(&broker),
            })
            .map(|p| {
                format!(
                    "{} (leader {}, ISR {})",
                    p.name(),
                    p.leader.map(|l| l.to_string()).unwrap_or_else(|| "none".into()),
                    ids(&p.isr)
                )
            })
            .collect();
        let secs = t0.elapsed().as_secs_f64();
        let (done, total) = match direction {
            Direction::Promote => (
                mine.iter().filter(|p| p.leader.is_some() && p.isr.contains(&broker)).count(),
                mine.len() - leaderless.len(),
            ),
            Direction::Demote => (mine.len() - pending.len(), mine.len()),
        };
        if pending.is_empty() && (leaderless.is_empty() || direction == Direction::Demote || t0.elapsed() >= REREAD) {
            let what = match direction {
                Direction::Promote => format!("in the ISR of {done} partition(s) with a leader"),
                Direction::Demote => format!("in no ISR ({} partition(s) replicated)", mine.len()),
            };
            let mut s = format!("broker {} {verb}d: {what} after {secs:.1} s\n", broker);
            if direction == Direction::Promote && !leaderless.is_empty() {
                s.push_str(&format!(
                    "leaderless: {} — nothing in the cluster shows a promotion there; every node has re-read its file ({} s passed), so an (unclean) election may now pick broker {}\n",
                    leaderless.join(", "),
                    REREAD.as_secs(),
                    broker
                ));
            }
            crate::out::print(&s)?;
            return Ok(Outcome::Done);
        }
        if stop() {
            crate::out::note(format!(
                "{verb} broker {}: stopping; every node's file is written, the cluster converges without okp",
                broker
            ));
            return Ok(Outcome::Failed(Failure::Interrupted));
        }
        if t0.elapsed() > timeout {
            crate::out::note(format!(
                "{verb} broker {}: written on every node, but not visible after {:.0} s (--timeout); not yet converged: {}. Demotion takes up to replica.lag.time.max.ms + 5 s; a promoted replica joins an ISR only once caught up with its leader, and never while it is down",
                broker,
                timeout.as_secs_f64(),
                if pending.is_empty() { "waiting for the re-read interval".to_string() } else { pending.join("; ") }
            ));
            return Ok(Outcome::Failed(Failure::CheckFailed));
        }
        if last_pending.as_ref() != Some(&pending) || last_report.elapsed() > Duration::from_secs(5) {
            crate::out::note(format!(
                "waiting ({secs:.1} s): {done}/{total} partition(s) converged; pending: {}",
                if pending.is_empty() { "-".into() } else { pending.join("; ") }
            ));
            last_report = Instant::now();
            last_pending = Some(pending);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
