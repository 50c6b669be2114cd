//! okp's own looks at the cluster through the Kafka protocol (`wire::Probe`): which brokers
//! answer, the state of a partition as each broker's metadata has it, high watermark and log end
//! offsets. Milliseconds, no JVM.
//!
//! Not here: polling until a state holds (`waits`), the release's own tools (`admin`).

use super::node::Role;
use super::tools::PartitionState;
use super::{Cluster, BROKERS};

impl Cluster {
    /// Brokers that are running and not frozen, except `exclude`: the only ones a tool may bootstrap from.
    pub fn bootstrap(&mut self, exclude: &[i32]) -> String {
        let mut hosts = Vec::new();
        let brokers: Vec<i32> = self.nodes.iter().filter(|n| n.role == Role::Broker).map(|n| n.id).collect();
        for id in brokers {
            if exclude.contains(&id) {
                continue;
            }
            let n = self.node_mut(id);
            if n.is_running() && !n.is_frozen() {
                hosts.push(format!("127.0.0.1:{}", n.port));
            }
        }
        hosts.join(",")
    }

    /// Partition 0 of `topic` as the first live broker's metadata cache has it
    /// (okp's own Metadata request: milliseconds, no JVM). None when no broker answers.
    pub fn probe_state(&mut self, topic: &str) -> Option<PartitionState> {
        self.probe_first(|p| p.partition(topic, 0))
    }

    /// The brokers the first live broker's metadata lists as alive (registered, not fenced), sorted.
    pub fn probe_live_brokers(&mut self) -> Option<Vec<i32>> {
        let mut ids =
            self.probe_first(|p| Some(p.metadata(Some(&[]))?.brokers.iter().map(|b| b.id).collect::<Vec<_>>()))?;
        ids.sort_unstable();
        Some(ids)
    }

    /// The leader epoch of partition 0 of `topic`, as the first live broker's metadata cache has it.
    pub fn probe_leader_epoch(&mut self, topic: &str) -> Option<i32> {
        self.probe_first(|p| p.metadata(Some(&[topic]))?.partitions.into_iter().find(|x| x.index == 0)?.leader_epoch)
    }

    /// The first answer of `ask` from a running, unfrozen broker, in id order.
    pub(super) fn probe_first<T>(&mut self, ask: impl Fn(&mut crate::wire::Probe) -> Option<T>) -> Option<T> {
        for id in BROKERS {
            let n = self.node_mut(id);
            if !n.is_running() || n.is_frozen() {
                continue;
            }
            let port = n.port;
            if let Some(answer) = crate::wire::Probe::connect(port).and_then(|mut p| ask(&mut p)) {
                return Some(answer);
            }
        }
        None
    }

    /// The high watermark of partition 0 of `topic`, asked of its leader.
    pub fn probe_hw(&mut self, topic: &str) -> Option<i64> {
        let leader = self.probe_state(topic)?.leader?;
        let n = self.node_mut(leader);
        if !n.is_running() || n.is_frozen() {
            return None;
        }
        let port = n.port;
        crate::wire::Probe::connect(port)?.high_watermark(topic, 0)
    }

    /// (id, port) of every running, unfrozen broker, in node order.
    pub(super) fn running_brokers(&mut self) -> Vec<(i32, u16)> {
        self.nodes
            .iter_mut()
            .filter(|n| n.role == Role::Broker)
            .filter_map(|n| (n.is_running() && !n.is_frozen()).then_some((n.id, n.port)))
            .collect()
    }

    /// Each running, unfrozen broker's own view of partition 0 of `topic` (None: it does not
    /// list the topic), for every broker that answers a Metadata request, in id order.
    pub fn broker_views(&mut self, topic: &str) -> Vec<(i32, Option<PartitionState>)> {
        let mut views = Vec::new();
        for (id, port) in self.running_brokers() {
            let Some(m) = crate::wire::Probe::connect(port).and_then(|mut p| p.metadata(Some(&[topic]))) else {
                continue;
            };
            views.push((id, m.partitions.into_iter().find(|x| x.topic == topic && x.index == 0).map(|x| x.state)));
        }
        views
    }

    /// Partition 0 of `topic` when every broker that answers has the same view of it, with the
    /// ids of those brokers; None when none answers, one does not list the topic, or two views
    /// differ (a change still on its way through the cluster).
    pub fn probe_agreed(&mut self, topic: &str) -> Option<(PartitionState, Vec<i32>)> {
        let views = self.broker_views(topic);
        let first = views.first()?.1.clone()?;
        views
            .iter()
            .all(|(_, v)| v.as_ref() == Some(&first))
            .then(|| (first, views.iter().map(|(id, _)| *id).collect()))
    }

    /// Journals a state `probe_agreed` returned: `<what> <topic> (every broker that answers: …): …`.
    pub fn note_agreed(&mut self, what: &str, topic: &str, s: &PartitionState, by: &[i32]) {
        let by: Vec<String> = by.iter().map(|b| b.to_string()).collect();
        self.journal.note(&format!("{what} {topic} (every broker that answers: {}): {}", by.join(", "), s.show()));
    }

    /// Broker `broker`'s own log end offset of partition 0 of `topic`, leader or follower
    /// (ListOffsets as DEBUGGING_REPLICA_ID, okp's probe).
    pub fn probe_leo(&mut self, broker: i32, topic: &str) -> Option<i64> {
        let n = self.node_mut(broker);
        if !n.is_running() || n.is_frozen() {
            return None;
        }
        let port = n.port;
        let key = (topic.to_string(), 0);
        crate::wire::Probe::connect(port)?
            .latest_offsets(crate::wire::DEBUGGING, std::slice::from_ref(&key))?
            .remove(&key)?
            .ok()
    }
}
