//! A minimal Kafka protocol client for polling: Metadata (leader, replicas,
//! ISR of a partition) and ListOffsets (the high watermark), over plain TCP
//! to 127.0.0.1. It exists because a tool JVM costs 1–4 s per call on a
//! 2-core machine, which is too coarse to time a failover or to sample a
//! high watermark. Every state a scenario *asserts* at the end of a wait is
//! still read with the release's own tool; the probe only decides when to look.
//!
//! Versions: ApiVersions v0 first (every broker answers it), then the highest
//! Metadata version in 4..=8 and ListOffsets in 1..=3 the broker supports —
//! all non-flexible encodings, supported from Kafka 2.7 to 4.3.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::tools::PartitionState;

const API_LIST_OFFSETS: i16 = 2;
const API_METADATA: i16 = 3;
const API_VERSIONS: i16 = 18;

pub struct Probe {
    stream: TcpStream,
    correlation: i32,
    metadata_version: i16,
    list_offsets_version: i16,
}

impl Probe {
    pub fn connect(port: u16) -> Option<Probe> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
        stream.set_read_timeout(Some(Duration::from_millis(1500))).ok()?;
        stream.set_write_timeout(Some(Duration::from_millis(1500))).ok()?;
        let mut p = Probe { stream, correlation: 0, metadata_version: 4, list_offsets_version: 1 };
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

    /// Partition `p` of `topic`, as this broker's metadata cache has it.
    pub fn partition(&mut self, topic: &str, p: i32) -> Option<PartitionState> {
        let v = self.metadata_version;
        let mut body = Vec::new();
        body.extend_from_slice(&1i32.to_be_bytes());
        put_str(&mut body, topic);
        body.push(0); // allow_auto_topic_creation = false
        if v >= 8 {
            body.push(0);
            body.push(0);
        }
        let resp = self.call(API_METADATA, v, &body)?;
        let mut r = Reader::new(&resp);
        r.i32()?; // throttle_time_ms
        for _ in 0..r.i32()? {
            r.i32()?;
            r.string()?;
            r.i32()?;
            r.nullable_string()?;
        }
        r.nullable_string()?; // cluster_id
        r.i32()?; // controller_id
        for _ in 0..r.i32()? {
            let err = r.i16()?;
            let name = r.string()?;
            r.i8()?; // is_internal
            let mut found = None;
            for _ in 0..r.i32()? {
                r.i16()?; // partition error (LEADER_NOT_AVAILABLE still lists replicas and ISR)
                let index = r.i32()?;
                let leader = r.i32()?;
                if v >= 7 {
                    r.i32()?;
                }
                let replicas = r.ids()?;
                let isr = r.ids()?;
                if v >= 5 {
                    r.ids()?;
                }
                if index == p {
                    found = Some(PartitionState { leader: (leader >= 0).then_some(leader), replicas, isr, elr: Vec::new() });
                }
            }
            if v >= 8 {
                r.i32()?;
            }
            if name == topic && err == 0 {
                return found;
            }
        }
        None
    }

    /// The high watermark of partition `p` (ListOffsets, latest), asked of its leader.
    pub fn high_watermark(&mut self, topic: &str, p: i32) -> Option<i64> {
        let v = self.list_offsets_version;
        let mut body = Vec::new();
        body.extend_from_slice(&(-1i32).to_be_bytes()); // replica_id: a consumer
        if v >= 2 {
            body.push(0); // isolation_level: read_uncommitted (the high watermark)
        }
        body.extend_from_slice(&1i32.to_be_bytes());
        put_str(&mut body, topic);
        body.extend_from_slice(&1i32.to_be_bytes());
        body.extend_from_slice(&p.to_be_bytes());
        body.extend_from_slice(&(-1i64).to_be_bytes()); // latest
        let resp = self.call(API_LIST_OFFSETS, v, &body)?;
        let mut r = Reader::new(&resp);
        if v >= 2 {
            r.i32()?;
        }
        for _ in 0..r.i32()? {
            r.string()?;
            for _ in 0..r.i32()? {
                let index = r.i32()?;
                let err = r.i16()?;
                r.i64()?; // timestamp
                let offset = r.i64()?;
                if index == p && err == 0 {
                    return Some(offset);
                }
            }
        }
        None
    }
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for ids in [&[1, 2, 3, 4][..], &[][..], &[1, 2, 3][..]] {
            b.extend_from_slice(&(ids.len() as i32).to_be_bytes());
            for i in ids {
                b.extend_from_slice(&(*i as i32).to_be_bytes());
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
}
