//! Reading the release's tools' outputs: describe, offsets, reassignment status, segment dumps,
//! JmxTool reads and ProducerPerformance summaries, each by its fields (`Key: value`, quoted CSV),
//! never by column, since releases add columns.
//!
//! Not here: running the tools (`tools`), what a scenario concludes (`scenarios`).

use std::collections::BTreeMap;

use super::PartitionState;

fn ids(v: &str) -> Vec<i32> {
    v.split(',').filter_map(|s| s.trim().parse().ok()).collect()
}

/// Partition `p` of `topic` from describe output.
pub fn parse_describe(stdout: &str, topic: &str, p: u32) -> Option<PartitionState> {
    parse_describe_all(stdout).into_iter().find(|(t, q, _)| t == topic && *q == p).map(|(_, _, s)| s)
}

/// Every partition line of describe output, in order: (topic, partition, state).
/// Fields are read as `Key: value` pairs, never by column: 3.9 and 4.x add Elr columns.
pub fn parse_describe_all(stdout: &str) -> Vec<(String, u32, PartitionState)> {
    let mut found = Vec::new();
    for line in stdout.lines() {
        let fields: BTreeMap<String, String> = line
            .split('\t')
            .filter_map(|f| f.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let (Some(topic), Some(p)) = (fields.get("Topic"), fields.get("Partition").and_then(|x| x.parse::<u32>().ok()))
        else {
            continue;
        };
        let leader = fields.get("Leader").and_then(|l| l.parse::<i32>().ok()).filter(|l| *l >= 0);
        let state = PartitionState {
            leader,
            replicas: fields.get("Replicas").map(|v| ids(v)).unwrap_or_default(),
            isr: fields.get("Isr").map(|v| ids(v)).unwrap_or_default(),
            elr: fields.get("Elr").map(|v| ids(v)).unwrap_or_default(),
        };
        found.push((topic.clone(), p, state));
    }
    found
}

/// The `offset` of `topic:p:offset` lines (GetOffsetShell).
pub fn parse_offset(stdout: &str, topic: &str, p: u32) -> Option<i64> {
    let prefix = format!("{topic}:{p}:");
    stdout.lines().find_map(|l| l.trim().strip_prefix(&prefix).and_then(|o| o.trim().parse().ok()))
}

/// What kafka-reassign-partitions `--verify` says of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReassignStatus {
    Complete,
    InProgress,
    /// Any other line about the partition (no reassignment, but not the target replicas).
    Other(String),
}

/// The `--verify` status of partition `p` of `topic`: "Reassignment of partition T-P is
/// complete." (2.7 on), "… is still in progress.", or "There is no active reassignment of
/// partition T-P, but replica set is … rather than …". None when no line names the partition.
pub fn parse_reassign_status(stdout: &str, topic: &str, p: u32) -> Option<ReassignStatus> {
    let name = format!("partition {topic}-{p}");
    let line = stdout
        .lines()
        .find(|l| l.find(&name).is_some_and(|at| !l[at + name.len()..].starts_with(|c: char| c.is_ascii_digit())))?;
    Some(if line.contains("still in progress") {
        ReassignStatus::InProgress
    } else if line.contains(&format!("{name} is complete")) {
        ReassignStatus::Complete
    } else {
        ReassignStatus::Other(line.trim().to_string())
    })
}

/// Batch headers of a DumpLogSegments --deep-iteration output (offsets,
/// producer ids, sequences, CRCs, and `position`, which equal files share).
pub fn batch_lines(stdout: &str) -> Vec<String> {
    stdout.lines().filter(|l| l.starts_with("baseOffset:")).map(|l| l.trim().to_string()).collect()
}

/// ProducerPerformance's summary: records, and latency percentiles in ms.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PerfSummary {
    pub records: u64,
    pub records_per_sec: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
}

/// JmxTool's `--one-time true` output: a header of quoted `object-name:attribute`
/// keys (the first is "time") and one row of values. Returns key -> number,
/// the keys without the `:Value` attribute suffix.
pub fn parse_jmx(stdout: &str) -> BTreeMap<String, f64> {
    let mut lines =
        stdout.lines().filter(|l| l.starts_with('"') || l.chars().next().is_some_and(|c| c.is_ascii_digit()));
    let (Some(header), Some(row)) = (lines.find(|l| l.starts_with("\"time\"")), lines.next()) else {
        return BTreeMap::new();
    };
    let keys = csv_fields(header);
    let values = csv_fields(row);
    keys.into_iter()
        .zip(values)
        .skip(1)
        .filter_map(|(k, v)| {
            v.trim().parse::<f64>().ok().map(|v| (k.strip_suffix(":Value").unwrap_or(&k).to_string(), v))
        })
        .collect()
}

/// Splits one CSV line, honouring double quotes (object names hold commas).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The value of gauge `name` of MBean type `type_` in a JmxTool read, matched
/// on the object name's properties (their order differs between releases).
pub fn gauge(read: &BTreeMap<String, f64>, type_: &str, name: &str, tags: &[(&str, &str)]) -> Option<f64> {
    read.iter()
        .find(|(k, _)| {
            let props: Vec<&str> = k.split_once(':').map(|(_, p)| p.split(',').collect()).unwrap_or_default();
            let has = |key: &str, v: &str| props.iter().any(|p| p.split_once('=') == Some((key, v)));
            has("type", type_) && has("name", name) && tags.iter().all(|(tk, tv)| has(tk, tv))
        })
        .map(|(_, v)| *v)
}

pub fn parse_perf(stdout: &str) -> Option<PerfSummary> {
    // "300 records sent, 99.6 records/sec (0.01 MB/sec), 11.23 ms avg latency, 77.00 ms max latency, 5 ms 50th, 40 ms 95th, 77 ms 99th, 77 ms 99.9th."
    let line = stdout.lines().rev().find(|l| l.contains("records sent") && l.contains("50th"))?;
    let num_before = |tag: &str| -> Option<f64> {
        let at = line.find(tag)?;
        line[..at].trim_end().rsplit([' ', ',']).find(|s| !s.is_empty())?.parse().ok()
    };
    let records = line.split_whitespace().next()?.parse().ok()?;
    Some(PerfSummary {
        records,
        records_per_sec: num_before(" records/sec")?,
        avg_ms: num_before("ms avg latency")?,
        max_ms: num_before("ms max latency")?,
        p50_ms: num_before("ms 50th")?,
        p99_ms: num_before("ms 99th")?,
        p999_ms: num_before("ms 99.9th")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_lines_of_every_shape() {
        let old = "Topic: obs\tPartitionCount: 1\tReplicationFactor: 4\tConfigs: min.insync.replicas=2\n\tTopic: obs\tPartition: 0\tLeader: 1\tReplicas: 1,2,3,4\tIsr: 1,2,3\n";
        let s = parse_describe(old, "obs", 0).unwrap();
        assert_eq!((s.leader, s.replicas.clone(), s.isr.clone()), (Some(1), vec![1, 2, 3, 4], vec![1, 2, 3]));
        let new = "\tTopic: obs\tPartition: 0\tLeader: none\tReplicas: 1,2,3,4\tIsr: \tElr: 2,3\tLastKnownElr: 1\n";
        let s = parse_describe(new, "obs", 0).unwrap();
        assert_eq!((s.leader, s.isr.clone(), s.elr.clone()), (None, vec![], vec![2, 3]));
        assert_eq!(s.show(), "Leader: none Replicas: 1,2,3,4 Isr:  Elr: 2,3");
        assert!(parse_describe(new, "other", 0).is_none());
        let minus = "\tTopic: t\tPartition: 0\tLeader: -1\tReplicas: 4\tIsr: 4\n";
        assert_eq!(parse_describe(minus, "t", 0).unwrap().leader, None);
    }

    #[test]
    fn describe_of_every_topic() {
        let out = "Topic: __consumer_offsets\tTopicId: x\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: \n\tTopic: __consumer_offsets\tPartition: 0\tLeader: 2\tReplicas: 2,3,4\tIsr: 2,3\n\tTopic: __consumer_offsets\tPartition: 1\tLeader: 3\tReplicas: 3,4,1\tIsr: 3,1\nTopic: obs\tPartitionCount: 1\n\tTopic: obs\tPartition: 0\tLeader: 1\tReplicas: 1,2,3,4\tIsr: 1,2,3\n";
        let all = parse_describe_all(out);
        let keys: Vec<(&str, u32, Option<i32>)> = all.iter().map(|(t, p, s)| (t.as_str(), *p, s.leader)).collect();
        assert_eq!(
            keys,
            vec![("__consumer_offsets", 0, Some(2)), ("__consumer_offsets", 1, Some(3)), ("obs", 0, Some(1))]
        );
        assert_eq!(parse_describe(out, "__consumer_offsets", 1).unwrap().replicas, vec![3, 4, 1]);
    }

    #[test]
    fn perf_summary() {
        let out = "150 records sent, 29.9 records/sec\n300 records sent, 99.6 records/sec (0.01 MB/sec), 11.23 ms avg latency, 77.00 ms max latency, 5 ms 50th, 40 ms 95th, 77 ms 99th, 77 ms 99.9th.\n";
        let p = parse_perf(out).unwrap();
        assert_eq!(p.records, 300);
        assert_eq!(p.records_per_sec, 99.6, "the summary line's rate, not a progress line's");
        assert_eq!((p.avg_ms, p.max_ms, p.p50_ms, p.p99_ms, p.p999_ms), (11.23, 77.0, 5.0, 77.0, 77.0));
    }

    #[test]
    fn jmx_one_time_csv() {
        let out = "Trying to connect to JMX url: service:jmx:rmi:///jndi/rmi://127.0.0.1:29105/jmxrmi.\n\
\"time\",\"kafka.cluster:type=Partition,name=ObserverLag,topic=met,partition=0:Value\",\"kafka.server:type=ReplicaManager,name=ObserverSetSize:Value\"\n\
1764470000000,300,1\n";
        let r = parse_jmx(out);
        assert_eq!(r.len(), 2);
        assert_eq!(gauge(&r, "Partition", "ObserverLag", &[("topic", "met"), ("partition", "0")]), Some(300.0));
        assert_eq!(gauge(&r, "Partition", "ObserverLag", &[("topic", "obs")]), None);
        assert_eq!(gauge(&r, "ReplicaManager", "ObserverSetSize", &[]), Some(1.0));
        assert!(parse_jmx("Connected\n").is_empty());
    }

    #[test]
    fn reassign_verify_lines() {
        let out = "Status of partition reassignment:\nReassignment of partition ra-0 is complete.\nReassignment of partition ra-10 is still in progress.\n\nClearing broker-level throttles on brokers 1,2,3,4\n";
        assert_eq!(parse_reassign_status(out, "ra", 0), Some(ReassignStatus::Complete));
        assert_eq!(parse_reassign_status(out, "ra", 10), Some(ReassignStatus::InProgress));
        assert_eq!(parse_reassign_status(out, "ra", 1), None);
        let other = "There is no active reassignment of partition ra-0, but replica set is 1,2,3 rather than 4.\n";
        assert!(
            matches!(parse_reassign_status(other, "ra", 0), Some(ReassignStatus::Other(l)) if l.contains("rather than 4"))
        );
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("obs:0:1500\n", "obs", 0), Some(1500));
        assert_eq!(parse_offset("obs:1:3\n", "obs", 0), None);
    }
}
