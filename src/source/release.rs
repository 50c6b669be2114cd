//! A Kafka release as published on Maven Central: its sources jars, mapped
//! back to repository paths (`core/src/main/scala/kafka/cluster/Partition.scala`
//! is entry `kafka/cluster/Partition.scala` of kafka_2.13-V-sources.jar).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Mutex;

use super::SourceTree;
use crate::error::{Error, Result};
use crate::maven::Maven;
use crate::model::Coordinate;

/// Source roots inside an upstream module directory, and the file kind each holds.
const ROOTS: [(&str, &str); 2] = [("src/main/scala/", ".scala"), ("src/main/java/", ".java")];

pub struct ReleaseTree {
    version: String,
    /// Module directory (`core`, `metadata`, …) -> its opened sources jar.
    jars: BTreeMap<String, (Coordinate, PathBuf, Mutex<zip::ZipArchive<File>>)>,
}

impl ReleaseTree {
    /// Resolves (downloading through mvn when not cached) and opens the
    /// sources jars of `sources` (module dir -> coordinate).
    pub fn open(maven: &Maven, version: &str, sources: &BTreeMap<String, Coordinate>) -> Result<ReleaseTree> {
        let wanted: Vec<(Coordinate, Option<&str>)> = sources.values().map(|c| (c.clone(), Some("sources"))).collect();
        let paths = maven.ensure(&wanted)?;
        let mut jars = BTreeMap::new();
        for ((dir, coord), path) in sources.iter().zip(paths) {
            let f = crate::fsx::read::open_input(&path, crate::fsx::read::MAX_JAR, "sources jar")?;
            let zip = zip::ZipArchive::new(f).map_err(|e| {
                Error::Source(format!(
                    "{} is not a readable jar ({e}); delete it so okp fetches it again",
                    path.display()
                ))
            })?;
            jars.insert(dir.clone(), (coord.clone(), path, Mutex::new(zip)));
        }
        Ok(ReleaseTree { version: version.to_string(), jars })
    }

    /// The jar entry a repository path maps to: (module dir, entry name).
    fn locate(path: &str) -> Option<(&str, &str)> {
        let (module, rest) = path.split_once('/')?;
        ROOTS.iter().find_map(|(root, ext)| {
            let entry = rest.strip_prefix(root)?;
            entry.ends_with(ext).then_some((module, entry))
        })
    }

    /// Every file of every jar as (repository path, bytes), for laying out a tree.
    pub fn files(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let mut out = Vec::new();
        for (dir, (_, path, zip)) in &self.jars {
            let mut zip = zip.lock().map_err(|_| Error::Source("jar reader poisoned".into()))?;
            for i in 0..zip.len() {
                let mut f = zip.by_index(i).map_err(|e| Error::Source(format!("{}: {e}", path.display())))?;
                if f.is_dir() {
                    continue;
                }
                let name = f.name().to_string();
                let Some((root, _)) = ROOTS.iter().find(|(_, ext)| name.ends_with(ext)) else { continue };
                if name.starts_with('/') || name.split('/').any(|c| c == "..") {
                    return Err(Error::Source(format!("{}: refusing entry with unsafe path `{name}`", path.display())));
                }
                let buf = crate::fsx::zip_entry::read(&mut f, path, crate::fsx::read::MAX_SOURCE)?;
                out.push((format!("{dir}/{root}{name}"), buf));
            }
        }
        Ok(out)
    }

    /// The module directories the sources jars cover (`core`, `metadata`).
    pub fn modules(&self) -> Vec<String> {
        self.jars.keys().cloned().collect()
    }

    pub fn coordinates(&self) -> Vec<String> {
        self.jars.values().map(|(c, _, _)| format!("{c}:sources")).collect()
    }
}

impl SourceTree for ReleaseTree {
    fn is_release_sources_jar(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!("Maven Central release {} ({})", self.version, self.coordinates().join(", "))
    }

    fn declared_version(&self) -> Result<Option<String>> {
        Ok(Some(self.version.clone()))
    }

    fn files_under(&self, dir: &str) -> Result<Vec<String>> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        Ok(self.files()?.into_iter().map(|(p, _)| p).filter(|p| p.starts_with(&prefix)).collect())
    }

    fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let Some((module, entry)) = Self::locate(path) else { return Ok(None) };
        let Some((_, jar, zip)) = self.jars.get(module) else { return Ok(None) };
        let mut zip = zip.lock().map_err(|_| Error::Source("jar reader poisoned".into()))?;
        let mut f = match zip.by_name(entry) {
            Ok(f) => f,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => return Err(Error::Source(format!("{}: {e}", jar.display()))),
        };
        Ok(Some(crate::fsx::zip_entry::read(&mut f, jar, crate::fsx::read::MAX_SOURCE)?))
    }
}

#[cfg(test)]
mod tests {
    use super::ReleaseTree;

    #[test]
    fn maps_repo_paths_to_jar_entries() {
        assert_eq!(
            ReleaseTree::locate("core/src/main/scala/kafka/cluster/Partition.scala"),
            Some(("core", "kafka/cluster/Partition.scala"))
        );
        assert_eq!(
            ReleaseTree::locate("metadata/src/main/java/org/apache/kafka/controller/X.java"),
            Some(("metadata", "org/apache/kafka/controller/X.java"))
        );
        // A .java file is never under src/main/scala in a sources jar mapping.
        assert_eq!(ReleaseTree::locate("core/src/main/scala/kafka/X.java"), None);
        assert_eq!(ReleaseTree::locate("gradle.properties"), None);
    }
}
