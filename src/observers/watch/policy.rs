//! The watchdog's policies: when it promotes an observer of a partition. Its own module, as
//! both the decisions (`decide`) and the persisted state (`state`) name it.

/// When the watchdog promotes an observer of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// The ISR is smaller than the topic's min.insync.replicas: acks=all writes fail.
    UnderMinIsr,
    /// The partition has no leader: nothing can be read or written.
    LeaderUnavailable,
    /// The ISR is smaller than the partition's non-observer replicas.
    UnderReplicated,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::UnderMinIsr => "under-min-isr",
            Policy::LeaderUnavailable => "leader-unavailable",
            Policy::UnderReplicated => "under-replicated",
        }
    }
}
