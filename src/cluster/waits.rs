//! Waiting for the cluster to reach a state, and watching that a state never shows: polls of
//! the probes with timeouts, each distinct state journaled.
//!
//! Not here: single reads (`probes`).

use std::time::{Duration, Instant};

use super::tools::PartitionState;
use super::{node, Cluster};
use crate::error::Result;

impl Cluster {
    /// Deletes `topic` and waits (up to `timeout`) until no broker lists it.
    pub fn delete_topic_and_wait(&mut self, topic: &str, timeout: Duration) -> Result<bool> {
        if !self.delete_topic(topic)?.ok() {
            return Ok(false);
        }
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            node::check_interrupt()?;
            let views = self.broker_views(topic);
            if !views.is_empty() && views.iter().all(|(_, v)| v.is_none()) {
                self.journal.note(&format!("{topic}: no broker lists it"));
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(false)
    }

    /// Waits until every running broker's metadata lists every running broker alive, and every
    /// one names the same topics: the controller has taken each (re)started broker in and sent
    /// it the partitions. A broker's readiness line comes before that in ZooKeeper mode, where
    /// the controller learns of it from a watch, and its first update may list the brokers
    /// before the next one brings the partitions. Returns the brokers, or None at `timeout`
    /// (journaled with what each broker listed).
    pub fn wait_brokers_known(&mut self, timeout: Duration) -> Option<Vec<i32>> {
        let t0 = Instant::now();
        loop {
            if node::interrupted() {
                return None;
            }
            let running = self.running_brokers();
            let ids: Vec<i32> = running.iter().map(|(id, _)| *id).collect();
            type View = (Vec<i32>, std::collections::BTreeSet<String>);
            let views: Vec<(i32, Option<View>)> = running
                .iter()
                .map(|(id, port)| {
                    let listed = crate::wire::Probe::connect(*port).and_then(|mut p| {
                        let m = p.metadata(None)?;
                        let topics = m
                            .partitions
                            .iter()
                            .map(|x| x.topic.clone())
                            .chain(m.topic_errors.iter().map(|(t, _)| t.clone()))
                            .collect();
                        Some((m.brokers.iter().map(|b| b.id).collect::<Vec<_>>(), topics))
                    });
                    (*id, listed)
                })
                .collect();
            let first_topics = views.first().and_then(|(_, v)| v.as_ref()).map(|(_, t)| t);
            if views.iter().all(|(_, v)| {
                v.as_ref().is_some_and(|(b, t)| ids.iter().all(|id| b.contains(id)) && Some(t) == first_topics)
            }) {
                return Some(ids);
            }
            if t0.elapsed() > timeout {
                let show: Vec<String> = views
                    .iter()
                    .map(|(id, v)| {
                        format!(
                            "{id}: {}",
                            v.as_ref().map_or("no answer".into(), |(b, t)| format!("brokers {b:?}, topics {t:?}"))
                        )
                    })
                    .collect();
                self.journal.note(&format!(
                    "not every running broker ({ids:?}) listed alive by every one, with the same topics, within {:.0} s: {}",
                    timeout.as_secs_f64(),
                    show.join("; ")
                ));
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until `pred` holds for partition 0 of `topic`: polls the first live broker's
    /// metadata every 200 ms, and when that says yes, asks every live broker: the state counts
    /// only when each answering broker has it (the state returned). Every state seen is given to
    /// `each`, for invariants that must hold at every poll; distinct states are journaled, and
    /// so is the agreement. At the timeout the release's own describe records the last state.
    /// (The release's describe reads one broker's metadata too; `run_suite` checks okp's reading
    /// against it after every scenario.)
    pub fn wait_state(
        &mut self,
        topic: &str,
        timeout: Duration,
        mut pred: impl FnMut(&PartitionState) -> bool,
        mut each: impl FnMut(&PartitionState),
    ) -> Result<(Option<PartitionState>, f64)> {
        let t0 = Instant::now();
        let mut last_seen: Option<PartitionState> = None;
        loop {
            node::check_interrupt()?;
            let probed = self.probe_state(topic);
            if let Some(s) = &probed {
                each(s);
                if last_seen.as_ref() != Some(s) {
                    self.journal.note(&format!("probe {topic}: {}", s.show()));
                    last_seen = Some(s.clone());
                }
            }
            if probed.as_ref().is_some_and(&mut pred) {
                if let Some((s, by)) = self.probe_agreed(topic) {
                    each(&s);
                    if pred(&s) {
                        self.note_agreed("agreed", topic, &s, &by);
                        return Ok((Some(s), t0.elapsed().as_secs_f64()));
                    }
                }
            }
            if t0.elapsed() > timeout {
                self.journal
                    .note(&format!("{topic}: not within {:.0} s; the release's describe:", timeout.as_secs_f64()));
                self.describe(topic)?;
                return Ok((None, t0.elapsed().as_secs_f64()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Polls partition 0 of `topic` for `hold` (probe every 250 ms, every broker's view at the
    /// end) and returns every state for which `bad` held, with its time.
    pub fn watch(
        &mut self,
        topic: &str,
        hold: Duration,
        bad: impl Fn(&PartitionState) -> bool,
    ) -> Result<(usize, Vec<String>)> {
        let mut each = self.watch_all(&[topic], hold, bad)?;
        Ok(each.pop().unwrap_or_default())
    }

    /// `watch` over several topics at once, each polled in turn in every round: one hold of
    /// `hold` for all of them (not one after the other). One (polls, violations) per topic.
    pub fn watch_all(
        &mut self,
        topics: &[&str],
        hold: Duration,
        bad: impl Fn(&PartitionState) -> bool,
    ) -> Result<Vec<(usize, Vec<String>)>> {
        let t0 = Instant::now();
        let mut seen: Vec<(usize, Vec<String>)> = vec![(0, Vec::new()); topics.len()];
        let mut last: Vec<Option<PartitionState>> = vec![None; topics.len()];
        while t0.elapsed() < hold {
            node::check_interrupt()?;
            for (i, topic) in topics.iter().enumerate() {
                let Some(s) = self.probe_state(topic) else { continue };
                seen[i].0 += 1;
                if bad(&s) {
                    seen[i].1.push(format!("+{:.1}s {}", t0.elapsed().as_secs_f64(), s.show()));
                }
                if last[i].as_ref() != Some(&s) {
                    self.journal.note(&format!("probe {topic}: {}", s.show()));
                    last[i] = Some(s);
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        for (i, topic) in topics.iter().enumerate() {
            let views = self.broker_views(topic);
            let shown: Vec<String> = views
                .iter()
                .map(|(id, v)| {
                    format!("{id}: {}", v.as_ref().map(|s| s.show()).unwrap_or_else(|| "no such topic".into()))
                })
                .collect();
            self.journal.note(&format!("{topic}, every broker's view at the end: {}", shown.join("; ")));
            for (id, v) in views {
                let Some(s) = v else { continue };
                seen[i].0 += 1;
                if bad(&s) {
                    seen[i].1.push(format!("+{:.1}s (broker {id}) {}", t0.elapsed().as_secs_f64(), s.show()));
                }
            }
        }
        Ok(seen)
    }

    /// Waits until `broker`'s segment of `topic` equals the leader's byte for byte.
    pub fn wait_replica_identical(&mut self, broker: i32, leader: i32, topic: &str, timeout: Duration) -> (bool, f64) {
        let t0 = Instant::now();
        loop {
            let a = self.segment_digest(broker, topic);
            let b = self.segment_digest(leader, topic);
            if a.is_some() && a == b {
                return (true, t0.elapsed().as_secs_f64());
            }
            if t0.elapsed() > timeout || node::interrupted() {
                return (false, t0.elapsed().as_secs_f64());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
