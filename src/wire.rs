//! A minimal Kafka protocol client: Metadata (brokers; leader, replicas, ISR
//! of partitions), ListOffsets (a leader's high watermark, or any replica's
//! own log end offset) and DescribeConfigs (a topic's effective configs), over
//! plain TCP; and, for the CREATE scenario's reproduction of KAFKA-15591, InitProducerId and a
//! Produce of one batch a caller made (`cluster::segments::encode_batch`). It exists because a tool JVM costs 1–4 s per call on a 2-core
//! machine, which is too coarse to time a failover or to sample a high
//! watermark, and because `okp observers` must not need a JVM at all. In `okp
//! verify`, every state a scenario *asserts* at the end of a wait is still read
//! with the release's own tool; the probe only decides when to look.
//!
//! Versions: ApiVersions v0 first (every broker answers it), then the highest
//! Metadata version in 4..=8, ListOffsets in 1..=3, DescribeConfigs v1 and Produce in
//! 3..=8 — all non-flexible encodings (InitProducerId v1, or v2 where v1 is gone), served by every release from Kafka 2.7 to 4.3
//! (4.0 dropped only the v0 of ListOffsets and DescribeConfigs).
//!
//! Not here: retries, TLS or SASL (the probe speaks PLAINTEXT only).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

const API_PRODUCE: i16 = 0;
const API_FETCH: i16 = 1;
const API_LIST_OFFSETS: i16 = 2;
const API_METADATA: i16 = 3;
const API_DESCRIBE_CONFIGS: i16 = 32;
const API_VERSIONS: i16 = 18;
const API_INIT_PRODUCER_ID: i16 = 22;
const API_ALTER_PARTITION_REASSIGNMENTS: i16 = 45;
const API_CREATE_TOPICS: i16 = 19;

/// ListOffsets `replica_id` of an ordinary consumer: a leader answers with its high watermark.
/// One partition's leader, replicas and ISR, as Metadata answers it and as
/// TopicCommand --describe prints it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PartitionState {
    pub leader: Option<i32>,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// Eligible leader replicas (3.9 on prints them; empty otherwise).
    pub elr: Vec<i32>,
}

impl PartitionState {
    pub fn in_isr(&self, id: i32) -> bool {
        self.isr.contains(&id)
    }

    pub fn show(&self) -> String {
        let j = |v: &[i32]| v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        let leader = self.leader.map(|l| l.to_string()).unwrap_or_else(|| "none".into());
        let elr = if self.elr.is_empty() { String::new() } else { format!(" Elr: {}", j(&self.elr)) };
        format!("Leader: {leader} Replicas: {} Isr: {}{elr}", j(&self.replicas), j(&self.isr))
    }
}

pub const CONSUMER: i32 = -1;
/// Kafka's DEBUGGING_REPLICA_ID: any replica (follower too) answers "latest"
/// with its own local log end offset (no isolation level applies).
pub const DEBUGGING: i32 = -2;

/// DescribeConfigs resource type of a topic.
const RESOURCE_TOPIC: i8 = 2;

pub struct Probe {
    stream: TcpStream,
    correlation: i32,
    metadata_version: i16,
    list_offsets_version: i16,
    describe_configs_v1: bool,
    /// Fetch v11 (KIP-392's rack_id and preferred_read_replica): 2.4 and later.
    fetch_v11: bool,
    /// The highest Produce version in 3..=8 (the non-flexible ones with record batches of magic 2).
    produce_version: Option<i16>,
    /// InitProducerId: v1 (non-flexible) where served, else v2 (flexible).
    init_producer_id_version: Option<i16>,
    /// CreateTopics v4 (non-flexible, explicit assignments): served from 2.0 through 4.x.
    create_topics_v4: bool,
}

/// A broker as Metadata lists it (registered, so alive as far as the controller knows).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BrokerAddr {
    pub id: i32,
    pub host: String,
    pub port: i32,
    /// broker.rack, None when unset.
    pub rack: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMeta {
    pub topic: String,
    pub index: i32,
    pub error: i16,
    pub state: PartitionState,
    /// Replicas whose broker is not alive (Metadata v5+; empty before).
    pub offline: Vec<i32>,
    /// The leader epoch (Metadata v7+; None before).
    pub leader_epoch: Option<i32>,
}

#[derive(Debug, Clone, Default)]
pub struct Metadata {
    pub brokers: Vec<BrokerAddr>,
    pub partitions: Vec<PartitionMeta>,
    /// Topics the broker answered with an error for (name, error code).
    pub topic_errors: Vec<(String, i16)>,
    /// The cluster's id (null from a ZooKeeper cluster that has none yet).
    pub cluster_id: Option<String>,
    /// The controller as the broker names it (ZooKeeper mode: the active controller; KRaft: a
    /// live broker, which forwards controller requests); -1 when none.
    pub controller_id: i32,
}

/// AlterPartitionReassignments' answer: one per partition, or the whole request's error (code,
/// message).
pub type ReassignAnswers = Result<Vec<ReassignAnswer>, (i16, Option<String>)>;

/// One partition's answer to AlterPartitionReassignments: Kafka's error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignAnswer {
    pub partition: i32,
    pub error: i16,
    pub message: Option<String>,
}

/// One partition's answer to ListOffsets: the offset, or Kafka's error code.
pub type OffsetAnswer = Result<i64, i16>;

impl Probe {
    /// A probe of the broker at 127.0.0.1:`port` (okp verify's clusters).
    pub fn connect(port: u16) -> Option<Probe> {
        Probe::connect_to(&format!("127.0.0.1:{port}"))
    }

    /// A probe of the broker at `host:port`.
    pub fn connect_to(address: &str) -> Option<Probe> {
        let addr = address.to_socket_addrs().ok()?.next()?;
        let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(1000)).ok()?;
        stream.set_read_timeout(Some(Duration::from_millis(1500))).ok()?;
        stream.set_write_timeout(Some(Duration::from_millis(1500))).ok()?;
        let mut p = Probe {
            stream,
            correlation: 0,
            metadata_version: 4,
            list_offsets_version: 1,
            describe_configs_v1: false,
            fetch_v11: false,
            produce_version: None,
            init_producer_id_version: None,
            create_topics_v4: false,
        };
        let body = p.call(API_VERSIONS, 0, &[])?;
        let mut r = Reader::new(&body);
        if r.i16()? != 0 {
            return None;
        }
        for _ in 0..r.i32()? {
            let (key, min, max) = (r.i16()?, r.i16()?, r.i16()?);
            let pick = |lo: i16, hi: i16| if max < lo || min > hi { None } else { Some(max.min(hi)) };
            match key {
                API_METADATA => p.metadata_version = pick(4, 8)?,
                API_LIST_OFFSETS => p.list_offsets_version = pick(1, 3)?,
                API_DESCRIBE_CONFIGS => p.describe_configs_v1 = pick(1, 1).is_some(),
                API_FETCH => p.fetch_v11 = pick(11, 11).is_some(),
                API_PRODUCE => p.produce_version = pick(3, 8),
                API_INIT_PRODUCER_ID => p.init_producer_id_version = pick(0, 1).or(pick(2, 2)),
                API_CREATE_TOPICS => p.create_topics_v4 = pick(4, 4).is_some(),
                _ => {}
            }
        }
        Some(p)
    }

    fn call(&mut self, api: i16, version: i16, body: &[u8]) -> Option<Vec<u8>> {
        self.correlation += 1;
        let mut req = Vec::new();
        req.extend_from_slice(&api.to_be_bytes());
        req.extend_from_slice(&version.to_be_bytes());
        req.extend_from_slice(&self.correlation.to_be_bytes());
        put_str(&mut req, "okp-probe");
        req.extend_from_slice(body);
        let mut framed = (req.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&req);
        self.stream.write_all(&framed).ok()?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let n = i32::from_be_bytes(len);
        if !(4..=64 << 20).contains(&n) {
            return None;
        }
        let mut resp = vec![0u8; n as usize];
        self.stream.read_exact(&mut resp).ok()?;
        if i32::from_be_bytes(resp[..4].try_into().ok()?) != self.correlation {
            return None;
        }
        Some(resp[4..].to_vec())
    }

    /// The brokers and the partitions of `topics` (None: every topic) as this broker's metadata cache has them.
    pub fn metadata(&mut self, topics: Option<&[&str]>) -> Option<Metadata> {
        let v = self.metadata_version;
        let mut body = Vec::new();
        match topics {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(ts) => {
                body.extend_from_slice(&(ts.len() as i32).to_be_bytes());
                for t in ts {
                    put_str(&mut body, t);
                }
            }
        }
        body.push(0); // allow_auto_topic_creation = false
        if v >= 8 {
            body.push(0);
            body.push(0);
        }
        let resp = self.call(API_METADATA, v, &body)?;
        let mut r = Reader::new(&resp);
        let mut m = Metadata::default();
        r.i32()?; // throttle_time_ms
        for _ in 0..r.i32()? {
            let id = r.i32()?;
            let host = r.string()?;
            let port = r.i32()?;
            let rack = r.nullable_string()?;
            m.brokers.push(BrokerAddr { id, host, port, rack });
        }
        m.cluster_id = r.nullable_string()?;
        m.controller_id = r.i32()?;
        for _ in 0..r.i32()? {
            let err = r.i16()?;
            let name = r.string()?;
            r.i8()?; // is_internal
            for _ in 0..r.i32()? {
                let error = r.i16()?; // LEADER_NOT_AVAILABLE still lists replicas and ISR
                let index = r.i32()?;
                let leader = r.i32()?;
                let leader_epoch = if v >= 7 { Some(r.i32()?) } else { None };
                let replicas = r.ids()?;
                let isr = r.ids()?;
                let offline = if v >= 5 { r.ids()? } else { Vec::new() };
                let state = PartitionState { leader: (leader >= 0).then_some(leader), replicas, isr, elr: Vec::new() };
                if err == 0 {
                    m.partitions.push(PartitionMeta {
                        topic: name.clone(),
                        index,
                        error,
                        state,
                        offline,
                        leader_epoch,
                    });
                }
            }
            if v >= 8 {
                r.i32()?;
            }
            if err != 0 {
                m.topic_errors.push((name, err));
            }
        }
        Some(m)
    }

    /// AlterPartitionReassignments v0 (KIP-455, Kafka 2.4+; a flexible version): moves each
    /// partition of `topic` to its replica list. Sent to the controller (ZooKeeper mode) or any
    /// broker (KRaft mode forwards it). The request's own error (code, message) when the whole
    /// call failed, else one answer per partition; None when the broker did not answer.
    pub fn alter_reassignments(
        &mut self,
        topic: &str,
        targets: &[(i32, Vec<i32>)],
        timeout_ms: i32,
    ) -> Option<ReassignAnswers> {
        let mut body = Vec::new();
        body.extend_from_slice(&timeout_ms.to_be_bytes());
        put_uvarint(&mut body, 2); // one topic
        put_compact_str(&mut body, topic);
        put_uvarint(&mut body, targets.len() as u64 + 1);
        for (p, replicas) in targets {
            body.extend_from_slice(&p.to_be_bytes());
            put_uvarint(&mut body, replicas.len() as u64 + 1);
            for r in replicas {
                body.extend_from_slice(&r.to_be_bytes());
            }
            body.push(0); // partition tagged fields
        }
        body.push(0); // topic tagged fields
        body.push(0); // request tagged fields
        let resp = self.call_flexible(API_ALTER_PARTITION_REASSIGNMENTS, 0, &body)?;
        parse_alter_reassignments(&resp)
    }

    /// `call` with request header v2 (client id, then tagged fields) and response header v1
    /// (correlation id, then tagged fields): the flexible versions.
    fn call_flexible(&mut self, api: i16, version: i16, body: &[u8]) -> Option<Vec<u8>> {
        let mut with_tags = vec![0u8]; // the request header's tagged fields, after the client id
        with_tags.extend_from_slice(body);
        let resp = self.call(api, version, &with_tags)?;
        let mut r = Reader::new(&resp);
        r.skip_tags()?;
        Some(resp[r.at..].to_vec())
    }

    /// How long a call may wait for its answer (1.5 s from `connect`): a request the broker
    /// answers only when the work is done (CreateTopics of many topics) needs longer.
    pub fn set_timeout(&mut self, timeout: Duration) -> Option<()> {
        self.stream.set_read_timeout(Some(timeout)).ok()
    }

    /// CreateTopics v4: each topic with its explicit assignment (partition i on `replicas[i]`),
    /// no configs; the broker answers when the partitions have leaders or `timeout_ms` passed.
    /// Sent to the controller (ZooKeeper mode, else NOT_CONTROLLER) or any broker (KRaft mode
    /// forwards it). One (topic, error code) per topic; None when the broker did not answer or
    /// does not serve v4.
    pub fn create_topics(&mut self, topics: &[(String, Vec<Vec<i32>>)], timeout_ms: i32) -> Option<Vec<(String, i16)>> {
        if !self.create_topics_v4 {
            return None;
        }
        let mut body = Vec::new();
        body.extend_from_slice(&(topics.len() as i32).to_be_bytes());
        for (name, partitions) in topics {
            put_str(&mut body, name);
            body.extend_from_slice(&(-1i32).to_be_bytes()); // num_partitions: from the assignment
            body.extend_from_slice(&(-1i16).to_be_bytes()); // replication_factor: likewise
            body.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
            for (i, replicas) in partitions.iter().enumerate() {
                body.extend_from_slice(&(i as i32).to_be_bytes());
                body.extend_from_slice(&(replicas.len() as i32).to_be_bytes());
                for r in replicas {
                    body.extend_from_slice(&r.to_be_bytes());
                }
            }
            body.extend_from_slice(&0i32.to_be_bytes()); // no configs
        }
        body.extend_from_slice(&timeout_ms.to_be_bytes());
        body.push(0); // validate_only = false
        let resp = self.call(API_CREATE_TOPICS, 4, &body)?;
        let mut r = Reader::new(&resp);
        r.i32()?; // throttle_time_ms
        let mut out = Vec::new();
        for _ in 0..r.i32()? {
            let name = r.string()?;
            let error = r.i16()?;
            r.nullable_string()?; // error_message
            out.push((name, error));
        }
        Some(out)
    }

    /// Partition `p` of `topic`, as this broker's metadata cache has it.
    pub fn partition(&mut self, topic: &str, p: i32) -> Option<PartitionState> {
        let m = self.metadata(Some(&[topic]))?;
        m.partitions.into_iter().find(|x| x.topic == topic && x.index == p).map(|x| x.state)
    }

    /// ListOffsets "latest" for each of `partitions`, as `replica_id`
    /// (`CONSUMER`: a leader's high watermark; `DEBUGGING`: this broker's own
    /// log end offset, leader or follower). One request for all of them.
    pub fn latest_offsets(
        &mut self,
        replica_id: i32,
        partitions: &[(String, i32)],
    ) -> Option<BTreeMap<(String, i32), OffsetAnswer>> {
        let v = self.list_offsets_version;
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in partitions {
            by_topic.entry(t.as_str()).or_default().push(*p);
        }
        let mut body = Vec::new();
        body.extend_from_slice(&replica_id.to_be_bytes());
        if v >= 2 {
            body.push(0); // isolation_level: read_uncommitted (the high watermark; ignored for DEBUGGING)
        }
        body.extend_from_slice(&(by_topic.len() as i32).to_be_bytes());
        for (t, ps) in &by_topic {
            put_str(&mut body, t);
            body.extend_from_slice(&(ps.len() as i32).to_be_bytes());
            for p in ps {
                body.extend_from_slice(&p.to_be_bytes());
                body.extend_from_slice(&(-1i64).to_be_bytes()); // latest
            }
        }
        let resp = self.call(API_LIST_OFFSETS, v, &body)?;
        let mut r = Reader::new(&resp);
        if v >= 2 {
            r.i32()?;
        }
        let mut out = BTreeMap::new();
        for _ in 0..r.i32()? {
            let name = r.string()?;
            for _ in 0..r.i32()? {
                let index = r.i32()?;
                let err = r.i16()?;
                r.i64()?; // timestamp
                let offset = r.i64()?;
                out.insert((name.clone(), index), if err == 0 { Ok(offset) } else { Err(err) });
            }
        }
        Some(out)
    }

    /// The high watermark of partition `p` (ListOffsets, latest), asked of its leader.
    pub fn high_watermark(&mut self, topic: &str, p: i32) -> Option<i64> {
        let key = (topic.to_string(), p);
        self.latest_offsets(CONSUMER, std::slice::from_ref(&key))?.remove(&key)?.ok()
    }

    /// The effective value of config `name` of each of `topics` (DescribeConfigs
    /// v1): topic override or the broker's default. None when the broker does
    /// not serve v1 or does not answer; a topic missing from the map had an error.
    pub fn topic_config(&mut self, topics: &[&str], name: &str) -> Option<BTreeMap<String, String>> {
        if !self.describe_configs_v1 {
            return None;
        }
        let mut body = Vec::new();
        body.extend_from_slice(&(topics.len() as i32).to_be_bytes());
        for t in topics {
            body.push(RESOURCE_TOPIC as u8);
            put_str(&mut body, t);
            body.extend_from_slice(&1i32.to_be_bytes());
            put_str(&mut body, name);
        }
        body.push(0); // include_synonyms = false
        let resp = self.call(API_DESCRIBE_CONFIGS, 1, &body)?;
        let mut r = Reader::new(&resp);
        r.i32()?; // throttle_time_ms
        let mut out = BTreeMap::new();
        for _ in 0..r.i32()? {
            let err = r.i16()?;
            r.nullable_string()?; // error_message
            r.i8()?; // resource_type
            let resource = r.string()?;
            for _ in 0..r.i32()? {
                let key = r.string()?;
                let value = r.nullable_string()?;
                r.i8()?; // read_only
                r.i8()?; // config_source
                r.i8()?; // is_sensitive
                for _ in 0..r.i32()? {
                    r.string()?;
                    r.nullable_string()?;
                    r.i8()?;
                }
                if let (0, true, Some(v)) = (err, key == name, value) {
                    out.insert(resource.clone(), v);
                }
            }
        }
        Some(out)
    }
}

/// One record batch of a Fetch answer, from its header only.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Batch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub transactional: bool,
    /// A control batch (a transaction's commit or abort marker).
    pub control: bool,
}

/// A broker's answer to a consumer's Fetch of one partition.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FetchAnswer {
    pub error: i16,
    /// The high watermark as the answering replica knows it.
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    /// KIP-392: the replica the leader tells a client of this rack to read from (-1: none).
    pub preferred_read_replica: i32,
    /// Complete batches only (a batch cut by the size limit is left out).
    pub batches: Vec<Batch>,
}

impl FetchAnswer {
    /// The offset after the last record served (None when nothing was served).
    pub fn served_end(&self) -> Option<i64> {
        self.batches.iter().map(|b| b.last_offset + 1).max()
    }
}

impl Probe {
    /// Fetch v11 of partition `p` of `topic` from `offset`, as a consumer of
    /// rack `rack` ("" for none) with isolation level `read_committed` or not.
    /// None when the broker does not serve v11 or does not answer in time.
    pub fn fetch(&mut self, topic: &str, p: i32, offset: i64, read_committed: bool, rack: &str) -> Option<FetchAnswer> {
        if !self.fetch_v11 {
            return None;
        }
        let mut b = Vec::new();
        b.extend_from_slice(&CONSUMER.to_be_bytes()); // replica_id
        b.extend_from_slice(&100i32.to_be_bytes()); // max_wait_ms
        b.extend_from_slice(&0i32.to_be_bytes()); // min_bytes: answer at once
        b.extend_from_slice(&(4i32 << 20).to_be_bytes()); // max_bytes
        b.push(u8::from(read_committed)); // isolation_level
        b.extend_from_slice(&0i32.to_be_bytes()); // session_id: no fetch session
        b.extend_from_slice(&(-1i32).to_be_bytes()); // session_epoch: FINAL_EPOCH, a sessionless fetch
        b.extend_from_slice(&1i32.to_be_bytes());
        put_str(&mut b, topic);
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&p.to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes()); // current_leader_epoch: unknown
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes()); // log_start_offset (a follower's field)
        b.extend_from_slice(&(4i32 << 20).to_be_bytes()); // partition_max_bytes
        b.extend_from_slice(&0i32.to_be_bytes()); // forgotten_topics_data
        put_str(&mut b, rack);
        let resp = self.call(API_FETCH, 11, &b)?;
        parse_fetch_v11(&resp, topic, p)
    }
}

impl Probe {
    /// A producer id and epoch for an idempotent producer (InitProducerId without a
    /// transactional id, asked of any broker). None when the broker does not serve a version
    /// okp speaks or does not answer; Err with Kafka's error code otherwise.
    pub fn init_producer_id(&mut self) -> Option<Result<(i64, i16), i16>> {
        let v = self.init_producer_id_version?;
        let resp = if v >= 2 {
            let mut body = vec![0u8]; // transactional_id: null (compact)
            body.extend_from_slice(&60_000i32.to_be_bytes());
            body.push(0); // tagged fields
            self.call_flexible(API_INIT_PRODUCER_ID, v, &body)?
        } else {
            let mut body = (-1i16).to_be_bytes().to_vec(); // transactional_id: null
            body.extend_from_slice(&60_000i32.to_be_bytes());
            self.call(API_INIT_PRODUCER_ID, v, &body)?
        };
        let mut r = Reader::new(&resp);
        r.i32()?; // throttle_time_ms
        let err = r.i16()?;
        let (id, epoch) = (r.i64()?, r.i16()?);
        Some(if err == 0 { Ok((id, epoch)) } else { Err(err) })
    }

    /// Produce (acks=all) of one record batch to partition `p` of `topic`, asked of its leader:
    /// the base offset it was written at, or Kafka's error code. None when the broker does not
    /// serve Produce v3–v8 or does not answer in time.
    pub fn produce(&mut self, topic: &str, p: i32, batch: &[u8], timeout_ms: i32) -> Option<Result<i64, i16>> {
        let v = self.produce_version?;
        let mut body = (-1i16).to_be_bytes().to_vec(); // transactional_id: null
        body.extend_from_slice(&(-1i16).to_be_bytes()); // acks=all
        body.extend_from_slice(&timeout_ms.to_be_bytes());
        body.extend_from_slice(&1i32.to_be_bytes());
        put_str(&mut body, topic);
        body.extend_from_slice(&1i32.to_be_bytes());
        body.extend_from_slice(&p.to_be_bytes());
        body.extend_from_slice(&(batch.len() as i32).to_be_bytes());
        body.extend_from_slice(batch);
        // acks=all answers once the ISR has the batch: longer than a metadata read may take.
        let wait = Duration::from_millis(timeout_ms.max(0) as u64 + 2000);
        self.stream.set_read_timeout(Some(wait)).ok()?;
        let resp = self.call(API_PRODUCE, v, &body);
        self.stream.set_read_timeout(Some(Duration::from_millis(1500))).ok()?;
        parse_produce(&resp?, v, topic, p)
    }
}

fn parse_produce(resp: &[u8], v: i16, topic: &str, p: i32) -> Option<Result<i64, i16>> {
    let mut r = Reader::new(resp);
    let mut answer = None;
    for _ in 0..r.i32()? {
        let name = r.string()?;
        for _ in 0..r.i32()? {
            let index = r.i32()?;
            let err = r.i16()?;
            let base = r.i64()?;
            r.i64()?; // log_append_time_ms
            if v >= 5 {
                r.i64()?; // log_start_offset
            }
            if v >= 8 {
                for _ in 0..r.i32()? {
                    r.i32()?;
                    r.nullable_string()?;
                }
                r.nullable_string()?;
            }
            if name == topic && index == p {
                answer = Some(if err == 0 { Ok(base) } else { Err(err) });
            }
        }
    }
    answer
}

fn parse_fetch_v11(resp: &[u8], topic: &str, p: i32) -> Option<FetchAnswer> {
    let mut r = Reader::new(resp);
    r.i32()?; // throttle_time_ms
    let top_error = r.i16()?;
    r.i32()?; // session_id
    for _ in 0..r.i32()? {
        let name = r.string()?;
        for _ in 0..r.i32()? {
            let index = r.i32()?;
            let error = r.i16()?;
            let high_watermark = r.i64()?;
            let last_stable_offset = r.i64()?;
            r.i64()?; // log_start_offset
            let aborted = r.i32()?;
            for _ in 0..aborted.max(0) {
                r.i64()?;
                r.i64()?;
            }
            let preferred_read_replica = r.i32()?;
            let len = r.i32()?;
            let records = if len > 0 { r.take(len as usize)? } else { &[][..] };
            if name == topic && index == p {
                let error = if top_error != 0 { top_error } else { error };
                let batches = batches_of(records);
                return Some(FetchAnswer {
                    error,
                    high_watermark,
                    last_stable_offset,
                    preferred_read_replica,
                    batches,
                });
            }
        }
    }
    None
}

/// The complete record batches (magic 2) in `records`, from their headers.
fn batches_of(records: &[u8]) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while records.len() >= at + 61 {
        let h = &records[at..];
        let base = i64::from_be_bytes(h[0..8].try_into().unwrap_or_default());
        let len = i32::from_be_bytes(h[8..12].try_into().unwrap_or_default());
        if len < 49 || records.len() < at + 12 + len as usize || h[16] != 2 {
            break;
        }
        let attributes = i16::from_be_bytes(h[21..23].try_into().unwrap_or_default());
        let delta = i32::from_be_bytes(h[23..27].try_into().unwrap_or_default());
        out.push(Batch {
            base_offset: base,
            last_offset: base + i64::from(delta),
            transactional: attributes & 0x10 != 0,
            control: attributes & 0x20 != 0,
        });
        at += 12 + len as usize;
    }
    out
}

fn parse_alter_reassignments(resp: &[u8]) -> Option<ReassignAnswers> {
    let mut r = Reader::new(resp);
    r.i32()?; // throttle_time_ms
    let error = r.i16()?;
    let message = r.compact_nullable_string()?;
    if error != 0 {
        return Some(Err((error, message)));
    }
    let mut out = Vec::new();
    for _ in 0..r.compact_len()? {
        r.compact_nullable_string()?; // topic name
        for _ in 0..r.compact_len()? {
            let partition = r.i32()?;
            let error = r.i16()?;
            let message = r.compact_nullable_string()?;
            r.skip_tags()?;
            out.push(ReassignAnswer { partition, error, message });
        }
        r.skip_tags()?;
    }
    Some(Ok(out))
}

fn put_uvarint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn put_compact_str(buf: &mut Vec<u8>, s: &str) {
    put_uvarint(buf, s.len() as u64 + 1);
    buf.extend_from_slice(s.as_bytes());
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as i16).to_be_bytes());
    buf.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, at: 0 }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at + n)?;
        self.at += n;
        Some(s)
    }

    fn i8(&mut self) -> Option<i8> {
        Some(self.take(1)?[0] as i8)
    }

    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn nullable_string(&mut self) -> Option<Option<String>> {
        let n = self.i16()?;
        if n < 0 {
            return Some(None);
        }
        Some(Some(String::from_utf8_lossy(self.take(n as usize)?).into_owned()))
    }

    fn string(&mut self) -> Option<String> {
        self.nullable_string()?
    }

    fn ids(&mut self) -> Option<Vec<i32>> {
        let n = self.i32()?;
        (0..n.max(0)).map(|_| self.i32()).collect()
    }

    fn uvarint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..35).step_by(7) {
            let b = self.take(1)?[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// A compact array's length (its varint is length + 1; 0 is null, read as empty).
    fn compact_len(&mut self) -> Option<u64> {
        Some(self.uvarint()?.saturating_sub(1))
    }

    fn compact_nullable_string(&mut self) -> Option<Option<String>> {
        let n = self.uvarint()?;
        if n == 0 {
            return Some(None);
        }
        Some(Some(String::from_utf8_lossy(self.take(n as usize - 1)?).into_owned()))
    }

    /// Tagged fields: each a tag and a length-prefixed value, none of which okp reads.
    fn skip_tags(&mut self) -> Option<()> {
        for _ in 0..self.uvarint()? {
            self.uvarint()?;
            let n = self.uvarint()?;
            self.take(n as usize)?;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A magic-2 batch header of `records` records from `base`, with `attributes`, padded to a batch of 70 bytes.
    fn batch(base: i64, records: i32, attributes: i16) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&base.to_be_bytes());
        h.extend_from_slice(&58i32.to_be_bytes()); // batchLength: 70 - 12
        h.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
        h.push(2); // magic
        h.extend_from_slice(&0i32.to_be_bytes()); // crc (not checked here)
        h.extend_from_slice(&attributes.to_be_bytes());
        h.extend_from_slice(&(records - 1).to_be_bytes()); // lastOffsetDelta
        h.resize(70, 0);
        h
    }

    /// Produce v8's answer: the base offset of the asked partition, or its error code.
    #[test]
    fn reads_a_produce_answer_of_v3_and_v8() {
        for (v, err, base) in [(8i16, 0i16, 0i64), (3, 45, -1)] {
            let mut b = Vec::new();
            b.extend_from_slice(&1i32.to_be_bytes());
            put_str(&mut b, "cz");
            b.extend_from_slice(&1i32.to_be_bytes());
            b.extend_from_slice(&0i32.to_be_bytes());
            b.extend_from_slice(&err.to_be_bytes());
            b.extend_from_slice(&base.to_be_bytes());
            b.extend_from_slice(&(-1i64).to_be_bytes()); // log append time
            if v >= 5 {
                b.extend_from_slice(&0i64.to_be_bytes()); // log start offset
            }
            if v >= 8 {
                b.extend_from_slice(&0i32.to_be_bytes()); // record errors
                b.extend_from_slice(&(-1i16).to_be_bytes()); // error message: null
            }
            b.extend_from_slice(&0i32.to_be_bytes()); // throttle
            let want = if err == 0 { Ok(base) } else { Err(err) };
            assert_eq!(parse_produce(&b, v, "cz", 0), Some(want), "v{v}");
            assert_eq!(parse_produce(&b, v, "cz", 1), None);
        }
    }

    #[test]
    fn reads_a_fetch_v11_answer_and_leaves_out_a_cut_batch() {
        let mut records = batch(0, 5, 0x10);
        records.extend(batch(5, 1, 0x30));
        records.extend(&batch(6, 3, 0)[..40]); // cut by the size limit
        let mut b = Vec::new();
        b.extend_from_slice(&0i32.to_be_bytes()); // throttle
        b.extend_from_slice(&0i16.to_be_bytes()); // error
        b.extend_from_slice(&0i32.to_be_bytes()); // session
        b.extend_from_slice(&1i32.to_be_bytes());
        put_str(&mut b, "ffo");
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // partition
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&9i64.to_be_bytes()); // high watermark
        b.extend_from_slice(&6i64.to_be_bytes()); // last stable offset
        b.extend_from_slice(&0i64.to_be_bytes()); // log start
        b.extend_from_slice(&1i32.to_be_bytes()); // one aborted transaction
        b.extend_from_slice(&7i64.to_be_bytes());
        b.extend_from_slice(&0i64.to_be_bytes());
        b.extend_from_slice(&4i32.to_be_bytes()); // preferred read replica
        b.extend_from_slice(&(records.len() as i32).to_be_bytes());
        b.extend(&records);
        let a = parse_fetch_v11(&b, "ffo", 0).unwrap();
        assert_eq!((a.high_watermark, a.last_stable_offset, a.preferred_read_replica), (9, 6, 4));
        assert_eq!(a.batches.len(), 2);
        assert!(a.batches[0].transactional && !a.batches[0].control);
        assert!(a.batches[1].control);
        assert_eq!(a.served_end(), Some(6));
        assert!(parse_fetch_v11(&b, "other", 0).is_none());
        assert!(parse_fetch_v11(&b[..30], "ffo", 0).is_none());
    }

    #[test]
    fn reads_a_metadata_v8_partition_list() {
        // Hand-encoded from the protocol spec: one broker, one topic with one partition.
        let mut b = Vec::new();
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        put_str(&mut b, "127.0.0.1");
        b.extend_from_slice(&9092i32.to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
        put_str(&mut b, "cid");
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        put_str(&mut b, "obs");
        b.push(0);
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&7i32.to_be_bytes());
        for ids in [&[1i32, 2, 3, 4][..], &[][..], &[1, 2, 3][..]] {
            b.extend_from_slice(&(ids.len() as i32).to_be_bytes());
            for i in ids {
                b.extend_from_slice(&i.to_be_bytes());
            }
        }
        let mut r = Reader::new(&b);
        r.i32().unwrap();
        assert_eq!(r.i32(), Some(1));
        r.i32().unwrap();
        assert_eq!(r.string().as_deref(), Some("127.0.0.1"));
        r.i32().unwrap();
        assert_eq!(r.nullable_string(), Some(None));
        assert_eq!(r.nullable_string(), Some(Some("cid".into())));
        r.i32().unwrap();
        assert_eq!(r.i32(), Some(1));
        r.i16().unwrap();
        assert_eq!(r.string().as_deref(), Some("obs"));
        r.i8().unwrap();
        assert_eq!(r.i32(), Some(1));
        r.i16().unwrap();
        assert_eq!(r.i32(), Some(0));
        assert_eq!(r.i32(), Some(-1));
        r.i32().unwrap();
        assert_eq!(r.ids(), Some(vec![1, 2, 3, 4]));
        assert_eq!(r.ids(), Some(vec![]));
        assert_eq!(r.ids(), Some(vec![1, 2, 3]));
        assert_eq!(r.i32(), None, "reading past the end is None, not a panic");
    }

    #[test]
    fn reads_an_alter_partition_reassignments_answer() {
        // Hand-encoded from the protocol spec (v0, flexible): one topic, two partitions, the second refused.
        let mut b = Vec::new();
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.push(0); // null message
        put_uvarint(&mut b, 2);
        put_compact_str(&mut b, "t");
        put_uvarint(&mut b, 3);
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.push(0);
        b.push(0);
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&39i16.to_be_bytes());
        put_compact_str(&mut b, "Every target replica [4] is an observer of t");
        b.push(1); // one tagged field: tag 7, 2 bytes
        b.extend_from_slice(&[7, 2, 0xAA, 0xBB]);
        b.push(0);
        b.push(0);
        let got = parse_alter_reassignments(&b).unwrap().unwrap();
        assert_eq!(got[0], ReassignAnswer { partition: 0, error: 0, message: None });
        assert_eq!((got[1].partition, got[1].error), (1, 39));
        assert!(got[1].message.as_deref().unwrap().contains("observer of t"));
        let mut top = Vec::new();
        top.extend_from_slice(&0i32.to_be_bytes());
        top.extend_from_slice(&41i16.to_be_bytes());
        put_compact_str(&mut top, "not the controller");
        assert_eq!(parse_alter_reassignments(&top).unwrap(), Err((41, Some("not the controller".into()))));
        assert!(parse_alter_reassignments(&b[..9]).is_none(), "a cut answer is None, not a panic");
        let mut v = Vec::new();
        put_uvarint(&mut v, 300);
        assert_eq!((v.clone(), Reader::new(&v).uvarint()), (vec![0xAC, 0x02], Some(300)));
    }
}
