//! Splicing a jar: a copy of the upstream jar in which exactly the classes of
//! the recompiled sources are replaced (and those the new compile no longer
//! emits dropped); every other entry is copied raw, byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use zip::write::SimpleFileOptions;

use crate::error::{Error, Result};
use crate::jvm::classfile;

/// A source file that was recompiled: its package directory and file name,
/// which is how a class's `SourceFile` attribute and path name their origin.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceKey {
    pub package_dir: String,
    pub file_name: String,
}

impl SourceKey {
    /// From a repository path like `core/src/main/scala/kafka/cluster/Partition.scala`.
    pub fn from_repo_path(path: &str) -> Option<SourceKey> {
        let rest =
            ["/src/main/scala/", "/src/main/java/"].iter().find_map(|root| path.split_once(root).map(|(_, r)| r))?;
        let (dir, name) = rest.rsplit_once('/')?;
        Some(SourceKey { package_dir: dir.to_string(), file_name: name.to_string() })
    }

    /// Whether the class at jar `entry` came from this source.
    pub fn owns(&self, entry: &str, source_file: Option<&str>) -> bool {
        let dir = entry.rsplit_once('/').map_or("", |(d, _)| d);
        dir == self.package_dir && source_file == Some(self.file_name.as_str())
    }
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpliceReport {
    pub jar: String,
    /// Upstream classes replaced by a recompiled class of the same name.
    pub replaced: Vec<String>,
    /// Classes the recompile emitted that upstream did not have.
    pub added: Vec<String>,
    /// Upstream classes of the recompiled sources that the recompile no longer emits.
    pub removed: Vec<String>,
    /// Entries copied raw.
    pub unchanged: usize,
}

/// Writes `out`: `upstream` with the classes of `sources` swapped for `compiled`
/// (jar entry name -> bytes). Entry order and timestamps are kept, so the same
/// inputs give the same bytes.
pub fn splice(
    upstream: &Path,
    out: &Path,
    sources: &[SourceKey],
    compiled: &BTreeMap<String, Vec<u8>>,
) -> Result<SpliceReport> {
    let zerr = |e: zip::result::ZipError| Error::Source(format!("{}: {e}", upstream.display()));
    let mut zin =
        zip::ZipArchive::new(crate::fsx::read::open_input(upstream, crate::fsx::read::MAX_JAR, "upstream jar")?)
            .map_err(zerr)?;
    let tmp = out.with_extension("jar.okp-tmp");
    let mut zout =
        zip::ZipWriter::new(File::create(&tmp).map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))?);
    let mut report = SpliceReport {
        jar: out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        ..Default::default()
    };
    let mut written = BTreeSet::new();
    let mut stamp = None;
    for i in 0..zin.len() {
        let (name, owned, time) = {
            let mut f = zin.by_index(i).map_err(zerr)?;
            let name = f.name().to_string();
            let time = f.last_modified();
            let mut owned = false;
            if name.ends_with(".class") {
                let b = crate::fsx::zip_entry::read(&mut f, upstream, crate::fsx::read::MAX_CLASS)?;
                let info = classfile::parse(&b)
                    .map_err(|e| Error::Source(format!("{name} in {}: {e}", upstream.display())))?;
                owned = sources.iter().any(|s| s.owns(&name, info.source_file.as_deref()));
            }
            (name, owned, time)
        };
        stamp = stamp.or(time);
        if !owned {
            zout.raw_copy_file(zin.by_index_raw(i).map_err(zerr)?).map_err(zerr)?;
            report.unchanged += 1;
            continue;
        }
        match compiled.get(&name) {
            Some(bytes) => {
                write_entry(&mut zout, &name, bytes, time).map_err(zerr)?;
                written.insert(name.clone());
                report.replaced.push(name);
            }
            None => report.removed.push(name),
        }
    }
    for (name, bytes) in compiled {
        if !written.contains(name) {
            write_entry(&mut zout, name, bytes, stamp).map_err(zerr)?;
            report.added.push(name.clone());
        }
    }
    zout.finish().map_err(zerr)?;
    std::fs::rename(&tmp, out).map_err(|e| Error::io(format!("cannot move {} into place", out.display()), e))?;
    Ok(report)
}

fn write_entry<W: Write + std::io::Seek>(
    z: &mut zip::ZipWriter<W>,
    name: &str,
    bytes: &[u8],
    time: Option<zip::DateTime>,
) -> zip::result::ZipResult<()> {
    let opts = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(time.unwrap_or_default())
        .unix_permissions(0o644);
    z.start_file(name, opts)?;
    z.write_all(bytes).map_err(zip::result::ZipError::Io)
}

/// Every entry of a jar with its bytes (for checks).
pub fn entries(path: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let f = crate::fsx::read::open_input(path, crate::fsx::read::MAX_JAR, "jar")?;
    read_entries(f, &path.display().to_string())
}

/// Every entry of the jar `bytes` (`what` names it in errors). A name that appears twice in the
/// central directory is refused: which copy a JVM loads need not be the one a check read (the zip
/// library keeps one of them and never shows the other).
pub fn entries_of(bytes: &[u8], what: &str) -> Result<BTreeMap<String, Vec<u8>>> {
    if let Some(name) = duplicate_name(bytes) {
        return Err(Error::Check(format!("{what}: entry {name} appears twice in the jar's central directory")));
    }
    read_entries(std::io::Cursor::new(bytes), what)
}

/// A name the central directory of the zip `b` lists twice, or a description of why the
/// directory cannot be walked; None when every name is listed once.
fn duplicate_name(b: &[u8]) -> Option<String> {
    let u16_at = |i: usize| b.get(i..i + 2).map(|x| u16::from_le_bytes([x[0], x[1]]) as usize);
    let u32_at = |i: usize| b.get(i..i + 4).map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize);
    // The end-of-central-directory record: its signature, searched back over the longest comment.
    let from = b.len().saturating_sub(22 + 0xffff);
    let eocd = (from..b.len().saturating_sub(21)).rev().find(|&i| u32_at(i) == Some(0x0605_4b50))?;
    let (count, mut at) = (u16_at(eocd + 10)?, u32_at(eocd + 16)?);
    if count == 0xffff || at == 0xffff_ffff {
        return Some("(a ZIP64 directory, which a Kafka jar never needs)".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..count {
        if u32_at(at)? != 0x0201_4b50 {
            return Some("(a central directory that does not parse)".into());
        }
        let (n, extra, comment) = (u16_at(at + 28)?, u16_at(at + 30)?, u16_at(at + 32)?);
        let name = String::from_utf8_lossy(b.get(at + 46..at + 46 + n)?).into_owned();
        if !seen.insert(name.clone()) {
            return Some(name);
        }
        at += 46 + n + extra + comment;
    }
    None
}

fn read_entries<R: Read + std::io::Seek>(r: R, what: &str) -> Result<BTreeMap<String, Vec<u8>>> {
    let zerr = |e: zip::result::ZipError| Error::Source(format!("{what}: {e}"));
    let mut z = zip::ZipArchive::new(r).map_err(zerr)?;
    let mut out = BTreeMap::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).map_err(zerr)?;
        let b = crate::fsx::zip_entry::read(&mut f, Path::new(what), crate::fsx::read::MAX_ENTRY)?;
        let name = f.name().to_string();
        if out.insert(name.clone(), b).is_some() {
            return Err(Error::Check(format!("{what}: entry {name} appears twice")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_keys_come_from_repo_paths() {
        let k = SourceKey::from_repo_path("core/src/main/scala/kafka/cluster/Partition.scala").unwrap();
        assert_eq!(k.package_dir, "kafka/cluster");
        assert_eq!(k.file_name, "Partition.scala");
        assert!(k.owns("kafka/cluster/Partition$.class", Some("Partition.scala")));
        assert!(!k.owns("kafka/server/Partition.class", Some("Partition.scala")));
        assert!(!k.owns("kafka/cluster/Replica.class", Some("Replica.scala")));
    }
}
