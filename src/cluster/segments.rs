//! A replica's log read straight off its data directory: every record of every segment of one
//! partition, with the batch it came in (producer id, epoch, base sequence, leader epoch), so a
//! scenario can say which record sits at which offset on which replica without a tool JVM, and
//! see how a producer's sequence numbers landed in the log (the CREATE scenario).
//!
//! Only what okp's own clients write is read: record batches of magic 2 (every release okp
//! supports writes them), without compression. A compressed batch, an old magic or a damaged
//! length is an error that names the file and position; a batch cut short at the end of the
//! active segment (a write in progress) ends the read there, as it ends a follower's fetch.
//!
//! Not here: comparing segments byte for byte (`inspect`), DumpLogSegments (`admin`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The batch header of magic 2: offset (8), length (4), leader epoch (4), magic (1), crc (4),
/// attributes (2), last offset delta (4), first and max timestamp (8 + 8), producer id (8),
/// producer epoch (2), base sequence (4), record count (4).
const BATCH_HEADER: usize = 61;
/// The bytes of a batch before and including its length field, which the length does not count.
const LOG_OVERHEAD: usize = 12;

/// One record as a replica holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub offset: i64,
    /// The value as text (okp's clients write ASCII values); None for a null value.
    pub value: Option<String>,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The record's own sequence: the batch's base sequence plus its offset delta (-1: none).
    pub sequence: i32,
    pub leader_epoch: i32,
    /// A control record (a transaction marker): no value of a producer's.
    pub control: bool,
}

/// The partition's directory under a broker's log directory.
pub fn partition_dir(log_dir: &Path, topic: &str, partition: u32) -> PathBuf {
    log_dir.join(format!("{topic}-{partition}"))
}

/// Every record of the partition in `dir`, segment by segment in offset order. No directory:
/// no records (the replica has not been created yet, or was deleted).
pub fn read_partition(dir: &Path) -> Result<Vec<Record>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("cannot list {}", dir.display()), e)),
    };
    let mut segments: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let base = name.strip_suffix(".log")?.parse::<u64>().ok()?;
            Some((base, e.path()))
        })
        .collect();
    segments.sort();
    let mut out = Vec::new();
    for (_, path) in segments {
        let bytes = match crate::fsx::read::read_regular(&path, crate::fsx::read::MAX_LOG) {
            Ok(b) => b,
            // Deleted or rolled away between the listing and the read: what is left is read.
            Err(crate::fsx::read::ReadError::Missing) => continue,
            Err(e) => return Err(e.into_error(&path, "a log segment")),
        };
        out.extend(parse_segment(&bytes).map_err(|e| Error::External(format!("{}: {e}", path.display())))?);
    }
    Ok(out)
}

/// The records of one segment's bytes.
pub fn parse_segment(bytes: &[u8]) -> std::result::Result<Vec<Record>, String> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + LOG_OVERHEAD <= bytes.len() {
        let base_offset = be_i64(bytes, pos);
        let length = be_i32(bytes, pos + 8);
        if length == 0 && base_offset == 0 && bytes[pos..].iter().all(|b| *b == 0) {
            // A preallocated segment's zero tail.
            break;
        }
        if length < (BATCH_HEADER - LOG_OVERHEAD) as i32 {
            return Err(format!("batch at byte {pos}: length {length} is shorter than a batch header"));
        }
        let end = pos + LOG_OVERHEAD + length as usize;
        if end > bytes.len() {
            // Being written: what a reader sees of the active segment's last batch.
            break;
        }
        let batch = &bytes[pos..end];
        let magic = batch[16] as i8;
        if magic != 2 {
            return Err(format!("batch at byte {pos} (offset {base_offset}): magic {magic}, only 2 is read"));
        }
        let attributes = be_i16(batch, 21);
        if attributes & 0x7 != 0 {
            return Err(format!(
                "batch at byte {pos} (offset {base_offset}): compressed (codec {}); okp's clients write none",
                attributes & 0x7
            ));
        }
        let control = attributes & 0x20 != 0;
        let leader_epoch = be_i32(batch, 12);
        let producer_id = be_i64(batch, 43);
        let producer_epoch = be_i16(batch, 51);
        let base_sequence = be_i32(batch, 53);
        let count = be_i32(batch, 57);
        let mut r = Reader { b: batch, at: BATCH_HEADER };
        for i in 0..count.max(0) {
            let what = |e: &str| format!("batch at byte {pos} (offset {base_offset}), record {i}: {e}");
            let len = r.varint().map_err(|e| what(&e))?;
            let start = r.at;
            let _attrs = r.byte().map_err(|e| what(&e))?;
            let _ts = r.varlong().map_err(|e| what(&e))?;
            let delta = r.varint().map_err(|e| what(&e))?;
            let key_len = r.varint().map_err(|e| what(&e))?;
            r.skip(key_len).map_err(|e| what(&e))?;
            let value_len = r.varint().map_err(|e| what(&e))?;
            let value = if value_len < 0 {
                None
            } else {
                let v = r.take(value_len as usize).map_err(|e| what(&e))?;
                Some(String::from_utf8_lossy(v).into_owned())
            };
            // Headers are not read: the record's length says where the next one starts.
            r.at = start
                .checked_add(usize::try_from(len).map_err(|_| what("negative length"))?)
                .filter(|e| *e <= batch.len())
                .ok_or_else(|| what("length past the batch"))?;
            let sequence = if base_sequence < 0 { -1 } else { base_sequence.wrapping_add(delta) };
            out.push(Record {
                offset: base_offset + i64::from(delta),
                value: if control { None } else { value },
                producer_id,
                producer_epoch,
                sequence,
                leader_epoch,
                control,
            });
        }
        pos = end;
    }
    Ok(out)
}

/// CRC-32C (Castagnoli), the checksum of a record batch of magic 2.
pub fn crc32c(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { 0x82F6_3B78 ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !bytes.iter().fold(!0u32, |c, b| TABLE[((c ^ u32::from(*b)) & 0xff) as usize] ^ (c >> 8))
}

/// An idempotent producer's batch of magic 2, uncompressed, as a client sends it in a Produce
/// request (offset 0, leader epoch unset, CRC-32C set): `values` from sequence `base_sequence`.
pub fn encode_batch(producer_id: i64, producer_epoch: i16, base_sequence: i32, values: &[&str]) -> Vec<u8> {
    let mut records = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let mut r = vec![0u8]; // attributes
        put_varint(&mut r, 0); // timestamp delta
        put_varint(&mut r, i as i64); // offset delta
        put_varint(&mut r, -1); // no key
        put_varint(&mut r, v.len() as i64);
        r.extend_from_slice(v.as_bytes());
        put_varint(&mut r, 0); // no headers
        put_varint(&mut records, r.len() as i64);
        records.extend(r);
    }
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    let mut after_crc = Vec::new();
    after_crc.extend(0i16.to_be_bytes()); // attributes: no compression, not transactional
    after_crc.extend((values.len() as i32 - 1).to_be_bytes());
    after_crc.extend(now.to_be_bytes());
    after_crc.extend(now.to_be_bytes());
    after_crc.extend(producer_id.to_be_bytes());
    after_crc.extend(producer_epoch.to_be_bytes());
    after_crc.extend(base_sequence.to_be_bytes());
    after_crc.extend((values.len() as i32).to_be_bytes());
    after_crc.extend(records);
    let mut b = Vec::new();
    b.extend(0i64.to_be_bytes());
    b.extend(((after_crc.len() + 9) as i32).to_be_bytes()); // leader epoch (4), magic (1), crc (4)
    b.extend((-1i32).to_be_bytes());
    b.push(2);
    b.extend(crc32c(&after_crc).to_be_bytes());
    b.extend(after_crc);
    b
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(b[at..at + 2].try_into().unwrap_or([0; 2]))
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> std::result::Result<u8, String> {
        let v = *self.b.get(self.at).ok_or("cut short")?;
        self.at += 1;
        Ok(v)
    }

    fn varlong(&mut self) -> std::result::Result<i64, String> {
        let mut raw: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            raw |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn varint(&mut self) -> std::result::Result<i32, String> {
        i32::try_from(self.varlong()?).map_err(|_| "varint out of range".to_string())
    }

    fn take(&mut self, n: usize) -> std::result::Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.b.len()).ok_or("cut short")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn skip(&mut self, n: i32) -> std::result::Result<(), String> {
        if n > 0 {
            self.take(n as usize)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            let b = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }

    /// One uncompressed batch of magic 2 as a broker writes it (the CRC is not checked here).
    pub(crate) fn batch(base: i64, pid: i64, seq: i32, values: &[Option<&str>], attributes: i16) -> Vec<u8> {
        let mut records = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let mut r = vec![0u8];
            varint(&mut r, 0);
            varint(&mut r, i as i64);
            varint(&mut r, -1);
            match v {
                Some(v) => {
                    varint(&mut r, v.len() as i64);
                    r.extend_from_slice(v.as_bytes());
                }
                None => varint(&mut r, -1),
            }
            varint(&mut r, 0);
            varint(&mut records, r.len() as i64);
            records.extend(r);
        }
        let mut b = Vec::new();
        b.extend(base.to_be_bytes());
        b.extend(((BATCH_HEADER - LOG_OVERHEAD + records.len()) as i32).to_be_bytes());
        b.extend(7i32.to_be_bytes());
        b.push(2);
        b.extend(0u32.to_be_bytes());
        b.extend(attributes.to_be_bytes());
        b.extend((values.len() as i32 - 1).to_be_bytes());
        b.extend(0i64.to_be_bytes());
        b.extend(0i64.to_be_bytes());
        b.extend(pid.to_be_bytes());
        b.extend(0i16.to_be_bytes());
        b.extend(seq.to_be_bytes());
        b.extend((values.len() as i32).to_be_bytes());
        b.extend(records);
        b
    }

    /// The CRC-32C check value, and an encoded batch reads back with its sequence and a CRC over
    /// the bytes from its attributes on.
    #[test]
    fn encoded_batches_carry_their_crc_and_read_back() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        let b = encode_batch(4242, 0, 5, &["v5", "v6"]);
        assert_eq!(u32::from_be_bytes(b[17..21].try_into().unwrap()), crc32c(&b[21..]));
        let got = parse_segment(&b).unwrap();
        assert_eq!(got.iter().map(|r| (r.offset, r.sequence)).collect::<Vec<_>>(), vec![(0, 5), (1, 6)]);
        assert_eq!(got[1].value.as_deref(), Some("v6"));
        assert_eq!(got[0].producer_id, 4242);
    }

    #[test]
    fn batches_give_offsets_values_and_sequences() {
        let mut seg = batch(0, 1000, 2, &[Some("r-1-0-0-000002"), Some("r-1-0-0-000003")], 0);
        seg.extend(batch(2, 1000, 4, &[Some("r-1-0-0-000004")], 0));
        let got = parse_segment(&seg).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!((got[0].offset, got[0].sequence, got[0].value.as_deref()), (0, 2, Some("r-1-0-0-000002")));
        assert_eq!((got[1].offset, got[1].sequence), (1, 3));
        assert_eq!((got[2].offset, got[2].sequence, got[2].producer_id, got[2].leader_epoch), (2, 4, 1000, 7));
        assert!(!got[0].control);
    }

    #[test]
    fn a_batch_being_written_ends_the_read_and_a_zero_tail_is_no_batch() {
        let mut seg = batch(0, 5, 0, &[Some("a")], 0);
        let whole = seg.len();
        seg.extend(batch(1, 5, 1, &[Some("b")], 0));
        seg.truncate(seg.len() - 3);
        assert_eq!(parse_segment(&seg).unwrap().len(), 1);
        seg.truncate(whole);
        seg.extend([0u8; 64]);
        assert_eq!(parse_segment(&seg).unwrap().len(), 1);
    }

    #[test]
    fn compressed_old_and_damaged_batches_are_refused_by_position() {
        let gz = batch(0, 5, 0, &[Some("a")], 1);
        assert!(parse_segment(&gz).unwrap_err().contains("compressed"));
        let mut old = batch(0, 5, 0, &[Some("a")], 0);
        old[16] = 1;
        assert!(parse_segment(&old).unwrap_err().contains("magic 1"));
        let mut short = batch(0, 5, 0, &[Some("a")], 0);
        short[8..12].copy_from_slice(&3i32.to_be_bytes());
        assert!(parse_segment(&short).unwrap_err().contains("byte 0"));
        let mut bad_len = batch(0, 5, 0, &[Some("abc")], 0);
        bad_len[BATCH_HEADER] = 0x7e; // a record length far past the batch
        assert!(parse_segment(&bad_len).unwrap_err().contains("record 0"));
    }

    #[test]
    fn control_batches_have_no_value_and_no_partition_dir_is_no_records() {
        let got = parse_segment(&batch(0, 5, -1, &[Some("marker")], 0x20 | 0x10)).unwrap();
        assert!(got[0].control && got[0].value.is_none() && got[0].sequence == -1);
        let dir = tempfile::tempdir().unwrap();
        assert!(read_partition(&dir.path().join("t-0")).unwrap().is_empty());
        let p = partition_dir(dir.path(), "t", 0);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("00000000000000000000.log"), batch(0, 9, 0, &[Some("x")], 0)).unwrap();
        std::fs::write(p.join("00000000000000000000.index"), [1u8; 8]).unwrap();
        assert_eq!(read_partition(&p).unwrap()[0].value.as_deref(), Some("x"));
    }
}
