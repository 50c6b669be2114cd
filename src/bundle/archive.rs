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
//! components. Not here: what the files mean (see `manifest`).

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

/// The decompressed size okp will read at most: far above any bundle (tens of
/// MB), far below what a gzip bomb would make.
const MAX_UNPACKED: u64 = 2 << 30;

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

/// Reads a .tar.gz into memory, refusing (with every reason) anything that is
/// not a plain directory or regular file under one top directory with a safe
/// path and ordinary permissions. Nothing is written.
pub fn read(bytes: &[u8]) -> Result<Unpacked, Vec<String>> {
    let gz = flate2::read::GzDecoder::new(bytes);
    let mut archive = tar::Archive::new(gz.take(MAX_UNPACKED));
    let mut problems = Vec::new();
    let mut top: Option<String> = None;
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    let entries = archive.entries().map_err(|e| vec![format!("not a tar.gz archive: {e}")])?;
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
    match top {
        Some(top) if problems.is_empty() => Ok(Unpacked { top, files }),
        None if problems.is_empty() => Err(vec!["the archive is empty".into()]),
        _ => Err(problems),
    }
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
    fn unsafe_paths_are_refused() {
        for bad in ["/etc/passwd", "top/../x", "../x", "top/./x", "top//x", "a\\b", ""] {
            assert!(check_path(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(check_path("top/libs/a.jar").unwrap(), ("top".into(), "libs/a.jar".into()));
        assert_eq!(check_path("top/").unwrap(), ("top".into(), "".into()));
    }
}
