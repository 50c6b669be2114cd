//! The bundle's container: a gzip-compressed tar written so that the same files
//! give the same bytes, and read so that nothing unsafe is ever written.
//!
//! Writing: entries sorted by path, directories listed explicitly, mode 0644 or
//! 0755, uid/gid 0 with empty owner names, one fixed mtime (SOURCE_DATE_EPOCH or
//! 0), GNU headers; gzip with no file name, mtime 0, OS "unknown" and level 9.
//!
//! Reading: the whole archive is parsed and every entry judged (type, path,
//! mode, duplicates, size) before a single byte reaches the disk; extraction
//! then writes only what was judged safe, with paths built from checked
//! components. The gzip container is read as strictly as `gzip -t` reads it:
//! one member, its CRC32 and length trailer checked, nothing after it; and
//! it may unpack to at most `unpacked_cap` bytes, counted as it streams, so
//! a gzip bomb is refused after a few MB. Not here: what the files mean (see
//! `manifest`).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Component, Path};

use flate2::{Compression, GzBuilder};

/// A file to put in (or read out of) a bundle: a relative `/`-separated path
/// under the bundle's top directory, its permission bits and bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub mode: u32,
    pub bytes: Vec<u8>,
}

pub const MODE_FILE: u32 = 0o644;
pub const MODE_EXEC: u32 = 0o755;
const MODE_DIR: u32 = 0o755;

/// How many times its own size a bundle may unpack to. Bundles are jars, which
/// are compressed already: a real 3.9.2 bundle unpacks to 1.05 times its size.
/// Only a gzip bomb (deflate reaches 1032:1) comes near.
const MAX_RATIO: u64 = 8;
/// Room for the small text files and tar headers of a tiny bundle.
const RATIO_SLACK: u64 = 1 << 20;
/// The decompressed size okp reads at most, whatever the bundle's size.
const MAX_UNPACKED: u64 = 1 << 30;

/// The most a bundle of `compressed` bytes may unpack to (tar headers included):
/// eight times its size plus 1 MiB, and never more than 1 GiB. okp holds the
/// unpacked files in memory, so this bounds its memory too.
fn unpacked_cap(compressed: usize) -> u64 {
    (compressed as u64).saturating_mul(MAX_RATIO).saturating_add(RATIO_SLACK).min(MAX_UNPACKED)
}

/// The mtime every entry carries: SOURCE_DATE_EPOCH when set (the
/// reproducible-builds convention), else 0.
pub fn source_date_epoch() -> Result<u64, String> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(s) if !s.trim().is_empty() => {
            s.trim().parse().map_err(|_| format!("SOURCE_DATE_EPOCH=`{s}` is not a number of seconds"))
        }
        _ => Ok(0),
    }
}

/// Writes `files` under `top/` as a reproducible .tar.gz.
pub fn write(top: &str, files: &[File], mtime: u64) -> std::io::Result<Vec<u8>> {
    let mut entries: Vec<(String, Option<&File>)> = Vec::new();
    let mut dirs = BTreeSet::new();
    dirs.insert(format!("{top}/"));
    for f in files {
        let mut prefix = String::new();
        let parts: Vec<&str> = f.path.split('/').collect();
        for d in &parts[..parts.len() - 1] {
            prefix.push_str(d);
            prefix.push('/');
            dirs.insert(format!("{top}/{prefix}"));
        }
        entries.push((format!("{top}/{}", f.path), Some(f)));
    }
    entries.extend(dirs.into_iter().map(|d| (d, None)));
    entries.sort_by(|a, b| a.0.cmp(&b.0));

    let gz = GzBuilder::new().mtime(0).operating_system(255).write(Vec::new(), Compression::new(9));
    let mut tar = tar::Builder::new(gz);
    for (path, file) in &entries {
        let mut h = tar::Header::new_gnu();
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(mtime);
        match file {
            Some(f) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(f.mode);
                h.set_size(f.bytes.len() as u64);
                tar.append_data(&mut h, path, f.bytes.as_slice())?;
            }
            None => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(MODE_DIR);
                h.set_size(0);
                tar.append_data(&mut h, path, std::io::empty())?;
            }
        }
    }
    let gz = tar.into_inner()?;
    let mut out = gz.finish()?;
    out.flush()?;
    Ok(out)
}

/// A bundle read into memory and judged safe: its top directory and files.
#[derive(Debug)]
pub struct Unpacked {
    pub top: String,
    pub files: Vec<File>,
}

/// Checks one entry path: relative, only normal components, under one top
/// directory. Returns (top, path below top).
pub fn check_path(raw: &str) -> Result<(String, String), String> {
    if raw.is_empty() {
        return Err("an entry has an empty path".into());
    }
    if raw.contains('\0') || raw.contains('\\') {
        return Err(format!("{raw:?}: path holds a NUL or a backslash"));
    }
    if raw.starts_with('/') {
        return Err(format!("{raw}: absolute path"));
    }
    let trimmed = raw.strip_suffix('/').unwrap_or(raw);
    let mut parts = Vec::new();
    for c in Path::new(trimmed).components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => return Err(format!("{raw}: path climbs out with `..`")),
            Component::CurDir => return Err(format!("{raw}: path has a `.` component")),
            Component::RootDir | Component::Prefix(_) => return Err(format!("{raw}: absolute path")),
        }
    }
    // `Path::components` drops empty segments ("a//b") and a middle "." silently; insist on the canonical spelling.
    if parts.join("/") != trimmed {
        return Err(format!("{raw}: path is not in canonical form"));
    }
    let top = parts.first().cloned().ok_or_else(|| format!("{raw}: empty path"))?;
    Ok((top, parts[1..].join("/")))
}

/// The deflate data of a one-member gzip file and what follows it (RFC 1952:
/// the header's optional fields are skipped, its CRC16 checked when present).
fn gzip_body(bytes: &[u8]) -> Result<&[u8], String> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let short = || "not a gzip file: it ends inside the gzip header".to_string();
    if bytes.len() < 10 || bytes[..2] != [0x1f, 0x8b] {
        return Err("not a gzip file (no gzip magic number)".into());
    }
    if bytes[2] != 8 {
        return Err(format!("gzip compression method {} is not deflate", bytes[2]));
    }
    let flags = bytes[3];
    if flags & 0xe0 != 0 {
        return Err(format!("gzip header flags {flags:#04x} set reserved bits"));
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = bytes.get(at..at + 2).ok_or_else(short)?;
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for field in [FNAME, FCOMMENT] {
        if flags & field != 0 {
            at += bytes.get(at..).and_then(|r| r.iter().position(|&b| b == 0)).ok_or_else(short)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        let want = bytes.get(at..at + 2).ok_or_else(short)?;
        let mut crc = flate2::Crc::new();
        crc.update(&bytes[..at]);
        if (crc.sum() & 0xffff) as u16 != u16::from_le_bytes([want[0], want[1]]) {
            return Err("the gzip header's CRC16 does not match the header".into());
        }
        at += 2;
    }
    bytes.get(at..).ok_or_else(short)
}

/// The decompressed stream, counted and checksummed as it is read; an error
/// (never a silent truncation) once it passes `cap` bytes.
struct Counted<R> {
    inner: R,
    crc: flate2::Crc,
    count: u64,
    cap: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.count += n as u64;
        if self.count > self.cap {
            return Err(std::io::Error::other(format!("the archive unpacks to more than {} bytes", self.cap)));
        }
        Ok(n)
    }
}

/// Reads a .tar.gz into memory, refusing (with every reason) anything that is
/// not a plain directory or regular file under one top directory with a safe
/// path and ordinary permissions, or not exactly one intact gzip member of at
/// most `unpacked_cap` bytes unpacked. Nothing is written.
pub fn read(bytes: &[u8]) -> Result<Unpacked, Vec<String>> {
    let cap = unpacked_cap(bytes.len());
    let mut rest = gzip_body(bytes).map_err(|e| vec![e])?;
    let counted =
        Counted { inner: flate2::bufread::DeflateDecoder::new(&mut rest), crc: flate2::Crc::new(), count: 0, cap };
    let mut archive = tar::Archive::new(counted);
    let (top, files, mut problems) = read_entries(&mut archive);
    // Past the tar's end-of-archive blocks: only zeros, to the end of the deflate data.
    let mut counted = archive.into_inner();
    if problems.is_empty() {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match counted.read(&mut buf) {
                Ok(0) => break,
                Ok(n) if buf[..n].iter().all(|&b| b == 0) => {}
                Ok(_) => {
                    problems.push("data after the tar's end-of-archive blocks".into());
                    break;
                }
                Err(e) => {
                    problems.push(format!("the gzip data is damaged: {e}"));
                    break;
                }
            }
        }
    }
    let (crc, len) = (counted.crc.sum(), counted.count);
    if len > cap {
        // Whatever else went wrong followed from the cap.
        return Err(vec![format!(
            "the archive unpacks to more than {cap} bytes (at most {MAX_RATIO} times the bundle's {} bytes plus 1 MiB, and at most 1 GiB): a gzip bomb, not a bundle",
            bytes.len()
        )]);
    }
    drop(counted);
    if problems.is_empty() {
        // The gzip trailer: CRC32 and length (mod 2^32) of the data, little-endian; then nothing.
        match rest {
            [c0, c1, c2, c3, l0, l1, l2, l3, after @ ..] => {
                let (want_crc, want_len) =
                    (u32::from_le_bytes([*c0, *c1, *c2, *c3]), u32::from_le_bytes([*l0, *l1, *l2, *l3]));
                if want_crc != crc {
                    problems.push(format!("the gzip trailer's CRC32 is {want_crc:08x}, the data's is {crc:08x}"));
                }
                if want_len != len as u32 {
                    problems.push(format!("the gzip trailer's length is {want_len}, the data's is {}", len as u32));
                }
                if !after.is_empty() {
                    problems.push(format!(
                        "{} bytes after the gzip member (a second member or trailing garbage)",
                        after.len()
                    ));
                }
            }
            _ => problems.push("the gzip data is truncated: no CRC32 and length trailer".into()),
        }
    }
    match top {
        Some(top) if problems.is_empty() => Ok(Unpacked { top, files }),
        None if problems.is_empty() => Err(vec!["the archive is empty".into()]),
        _ => Err(problems),
    }
}

/// Every entry of the tar, judged: (top directory, files, problems).
fn read_entries<R: Read>(archive: &mut tar::Archive<R>) -> (Option<String>, Vec<File>, Vec<String>) {
    let mut problems = Vec::new();
    let mut top: Option<String> = None;
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => return (None, files, vec![format!("not a tar.gz archive: {e}")]),
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                problems.push(format!("the archive is damaged: {e}"));
                break;
            }
        };
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            let what = match kind {
                tar::EntryType::Symlink => "a symbolic link",
                tar::EntryType::Link => "a hard link",
                tar::EntryType::Char | tar::EntryType::Block => "a device",
                tar::EntryType::Fifo => "a FIFO",
                _ => "not a regular file or directory",
            };
            let target =
                entry.link_name_bytes().map(|l| format!(" -> {}", String::from_utf8_lossy(&l))).unwrap_or_default();
            problems.push(format!("{raw}{target}: {what}; bundles hold only files and directories"));
            continue;
        }
        let (t, rel) = match check_path(&raw) {
            Ok(p) => p,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        match &top {
            None => top = Some(t),
            Some(existing) if *existing != t => {
                problems.push(format!("{raw}: outside the bundle's top directory {existing}/"));
                continue;
            }
            Some(_) => {}
        }
        let mode = entry.header().mode().unwrap_or(0);
        if mode & 0o7000 != 0 || mode & 0o022 != 0 {
            problems.push(format!("{raw}: mode {mode:04o} (setuid, setgid, sticky or group/other-writable)"));
        }
        if kind.is_dir() {
            continue;
        }
        if rel.is_empty() || !seen.insert(rel.clone()) {
            problems.push(format!("{raw}: duplicate or empty entry"));
            continue;
        }
        let mut data = Vec::new();
        if let Err(e) = entry.read_to_end(&mut data) {
            problems.push(format!("{raw}: cannot read: {e}"));
            break;
        }
        files.push(File { path: rel, mode: if mode & 0o111 != 0 { MODE_EXEC } else { MODE_FILE }, bytes: data });
    }
    (top, files, problems)
}

/// Writes judged files below `dest/<top>/` (dest must exist and should be a
/// fresh, private directory). Files are created new, never overwritten.
pub fn extract(unpacked: &Unpacked, dest: &Path) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let root = dest.join(&unpacked.top);
    std::fs::create_dir(&root)?;
    for f in &unpacked.files {
        // Paths were checked by `read`; build them from components all the same.
        let mut p = root.clone();
        for part in f.path.split('/') {
            p.push(part);
        }
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        let mut out = std::fs::OpenOptions::new().write(true).create_new(true).mode(f.mode).open(&p)?;
        out.write_all(&f.bytes)?;
        out.set_permissions(std::fs::Permissions::from_mode(f.mode))?;
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<File> {
        vec![
            File { path: "install.sh".into(), mode: MODE_EXEC, bytes: b"#!/bin/sh\n".to_vec() },
            File { path: "libs/a.jar".into(), mode: MODE_FILE, bytes: vec![1, 2, 3] },
            File { path: "MANIFEST.json".into(), mode: MODE_FILE, bytes: b"{}".to_vec() },
        ]
    }

    #[test]
    fn same_files_in_any_order_give_the_same_bytes() {
        let a = write("b", &files(), 0).unwrap();
        let mut rev = files();
        rev.reverse();
        assert_eq!(a, write("b", &rev, 0).unwrap());
        assert_ne!(a, write("b", &files(), 1).unwrap(), "the mtime is in the headers");
        // gzip header: magic, deflate, no flags (no name), mtime 0, xfl 2 (level 9), OS 255.
        assert_eq!(&a[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255]);
    }

    #[test]
    fn round_trips() {
        let u = read(&write("top", &files(), 0).unwrap()).unwrap();
        assert_eq!(u.top, "top");
        let mut want = files();
        want.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(u.files, want);
    }

    #[test]
    fn the_gzip_trailer_is_checked_and_nothing_may_follow_it() {
        let good = write("top", &files(), 0).unwrap();
        let n = good.len();
        assert!(read(&good).is_ok());
        let flipped = |at: usize| {
            let mut b = good.clone();
            b[at] ^= 0x01;
            read(&b).unwrap_err().join("; ")
        };
        assert!(flipped(n - 8).contains("the gzip trailer's CRC32 is"), "{}", flipped(n - 8));
        assert!(flipped(n - 1).contains("the gzip trailer's length is"), "{}", flipped(n - 1));
        let mut trailing = good.clone();
        trailing.extend(b"garbage");
        assert_eq!(
            read(&trailing).unwrap_err(),
            ["7 bytes after the gzip member (a second member or trailing garbage)"]
        );
        let mut two = good.clone();
        two.extend(&good);
        assert!(read(&two).unwrap_err()[0].contains(&format!("{n} bytes after the gzip member")));
        assert!(read(&good[..n - 3]).unwrap_err()[0].contains("no CRC32 and length trailer"));
        assert!(read(&good[..5]).unwrap_err()[0].contains("not a gzip file"));
    }

    /// A gzip member (with a file name in its header, as gzip(1) writes) of `tar` bytes.
    fn gzip(tar: &[u8]) -> Vec<u8> {
        let mut gz = GzBuilder::new().filename("b.tar").write(Vec::new(), Compression::fast());
        gz.write_all(tar).unwrap();
        gz.finish().unwrap()
    }

    fn tar_of(files: &[File]) -> Vec<u8> {
        let gz = write("top", files, 0).unwrap();
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut tar).unwrap();
        tar
    }

    #[test]
    fn what_lies_past_the_tar_end_blocks_must_be_zeros() {
        let tar = tar_of(&files());
        assert!(read(&gzip(&tar)).is_ok(), "a header with a file name is read");
        let mut padded = tar.clone();
        padded.extend([0u8; 10240]);
        assert!(read(&gzip(&padded)).is_ok(), "zero padding to a tape record is what tar writes");
        let mut hidden = tar;
        hidden.extend(b"hidden payload");
        assert_eq!(read(&gzip(&hidden)).unwrap_err(), ["data after the tar's end-of-archive blocks"]);
    }

    #[test]
    fn a_gzip_bomb_is_refused_at_the_cap() {
        let big = vec![File { path: "libs/a.jar".into(), mode: MODE_FILE, bytes: vec![0; 64 << 20] }];
        let bomb = write("top", &big, 0).unwrap();
        assert!(bomb.len() < 100_000, "{}", bomb.len());
        let cap = unpacked_cap(bomb.len());
        assert!(cap < (2 << 20), "{cap}");
        let e = read(&bomb).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with(&format!("the archive unpacks to more than {cap} bytes")), "{e:?}");
        assert_eq!(unpacked_cap(5_419_952), 8 * 5_419_952 + (1 << 20));
        assert_eq!(unpacked_cap(usize::MAX), 1 << 30);
    }

    #[test]
    fn unsafe_paths_are_refused() {
        for bad in ["/etc/passwd", "top/../x", "../x", "top/./x", "top//x", "a\\b", ""] {
            assert!(check_path(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(check_path("top/libs/a.jar").unwrap(), ("top".into(), "libs/a.jar".into()));
        assert_eq!(check_path("top/").unwrap(), ("top".into(), "".into()));
    }
}
