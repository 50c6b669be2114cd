//! Where upstream Kafka sources come from, behind one interface: a directory
//! (a checkout), a git revision read straight from the object database, or a
//! release's sources jars from Maven Central.
//!
//! Not here: deciding what to read (see `check`) or downloading (see `maven`).

mod dir;
mod git;
mod release;

pub use dir::DirTree;
pub use git::GitTree;
pub use release::ReleaseTree;

use crate::error::Result;

/// Name of the marker file okp writes into a tree it laid out from a
/// release's sources jars (there is no gradle.properties in those jars).
pub const MARKER: &str = ".okp-source.json";

/// A read-only view of one Kafka source tree at one version.
pub trait SourceTree {
    /// For reports: what this tree is, e.g. `git /src/kafka at 3.9.2 (1a2b3c4d)`.
    fn describe(&self) -> String;
    /// The version string the tree declares (gradle.properties `version=`),
    /// which may be a snapshot; `None` when the tree does not say.
    fn declared_version(&self) -> Result<Option<String>>;
    /// Bytes of a repository-relative file, or `None` when the tree has no such file.
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>>;
}

/// The `version=` value of a gradle.properties file.
pub fn version_from_gradle_properties(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = l.strip_prefix("version")?.trim_start();
        let v = rest.strip_prefix('=')?.trim();
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The `release` value of okp's marker file.
pub fn version_from_marker(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("release")?.as_str().map(str::to_string)
}

/// Version a tree declares, from gradle.properties or okp's marker.
fn declared_from(read: impl Fn(&str) -> Result<Option<Vec<u8>>>) -> Result<Option<String>> {
    if let Some(b) = read("gradle.properties")? {
        return Ok(version_from_gradle_properties(&String::from_utf8_lossy(&b)));
    }
    if let Some(b) = read(MARKER)? {
        return Ok(version_from_marker(&String::from_utf8_lossy(&b)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gradle_version() {
        let t = "group=org.apache.kafka\n# comment\nversion=3.9.2\nscalaVersion=2.13.15\n";
        assert_eq!(version_from_gradle_properties(t).as_deref(), Some("3.9.2"));
        assert_eq!(version_from_gradle_properties("versionX=1\n"), None);
        assert_eq!(version_from_gradle_properties("version = 4.1.0-SNAPSHOT").as_deref(), Some("4.1.0-SNAPSHOT"));
    }
}
