//! What okp reads off the nodes beside Kafka's protocol and tools: a replica's log segment byte
//! for byte, the servers' own logs, and each process's resident memory.
//!
//! Not here: reading segments through DumpLogSegments (`admin`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::Cluster;

impl Cluster {
    pub fn segment(&self, broker: i32, topic: &str) -> PathBuf {
        self.node(broker).dir.join("data").join(format!("{topic}-0")).join("00000000000000000000.log")
    }

    /// Size and sha256 of a replica's first segment (None when it has none).
    pub fn segment_digest(&self, broker: i32, topic: &str) -> Option<(u64, String)> {
        let bytes = crate::fsx::read::read_regular(&self.segment(broker, topic), crate::fsx::read::MAX_LOG).ok()?;
        Some((bytes.len() as u64, crate::hash::sha256(&bytes)))
    }

    /// Lines of every Kafka node's log (all starts) containing one of `needles`, prefixed with the node's name.
    pub fn grep_logs(&self, needles: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for n in &self.nodes {
            for l in n.whole_log().lines() {
                if needles.iter().any(|x| l.contains(x)) {
                    out.push(format!("{}: {l}", n.name));
                }
            }
        }
        out
    }

    /// Each running node's resident set size in MiB.
    pub fn rss(&mut self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for n in &mut self.nodes {
            if let Some(pid) = n.pid() {
                let status = crate::fsx::read::read_optional_text(
                    std::path::Path::new(&format!("/proc/{pid}/status")),
                    crate::fsx::read::MAX_TEXT,
                );
                if let Ok(Some(s)) = status {
                    if let Some(kb) = s.lines().find_map(|l| {
                        l.strip_prefix("VmRSS:").and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                    }) {
                        m.insert(n.name.clone(), kb / 1024);
                    }
                }
            }
        }
        m
    }
}
