//! versions.yaml: every supported Kafka release, its modes, its patch family,
//! the toolchain of its upstream build, and the Maven artifacts okp reads and
//! replaces.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

use super::confine::confine;
use super::Origin;
use crate::error::Error;
use crate::version::KafkaVersion;

/// How a cluster is controlled: ZooKeeper (up to 3.9) or KRaft.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Zk,
    Kraft,
}

impl Mode {
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Zk => "zk",
            Mode::Kraft => "kraft",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "zk" | "zookeeper" => Ok(Mode::Zk),
            "kraft" => Ok(Mode::Kraft),
            _ => Err(format!("unknown mode `{s}` (expected zk or kraft)")),
        }
    }
}

/// `group:artifact:version` of a Maven artifact.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Coordinate {
    pub group: String,
    pub artifact: String,
    pub version: String,
}

impl Coordinate {
    /// Path of the artifact's file with `classifier` inside a Maven repository layout.
    pub fn repo_path(&self, classifier: Option<&str>) -> String {
        let file = match classifier {
            Some(c) => format!("{}-{}-{}.jar", self.artifact, self.version, c),
            None => format!("{}-{}.jar", self.artifact, self.version),
        };
        format!("{}/{}/{}/{}", self.group.replace('.', "/"), self.artifact, self.version, file)
    }

    /// The same artifact at another version (used for releases newer than the matrix).
    pub fn at_version(&self, version: &str) -> Coordinate {
        Coordinate { version: version.to_string(), ..self.clone() }
    }
}

impl fmt::Display for Coordinate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.group, self.artifact, self.version)
    }
}

impl FromStr for Coordinate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            [g, a, v] if !g.is_empty() && !a.is_empty() && !v.is_empty() => {
                Ok(Coordinate { group: g.to_string(), artifact: a.to_string(), version: v.to_string() })
            }
            _ => Err(format!("`{s}` is not a Maven coordinate (expected group:artifact:version)")),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    schema: u32,
    releases: Vec<RawRelease>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelease {
    version: String,
    #[serde(default)]
    reference: bool,
    family: String,
    modes: Vec<Mode>,
    #[serde(default)]
    kraft_note: Option<String>,
    scala: String,
    java_release: u32,
    #[serde(default)]
    java_release_metadata: Option<u32>,
    #[serde(default)]
    no_sources_jar: Option<String>,
    sources: BTreeMap<String, String>,
    jars: BTreeMap<Mode, Vec<String>>,
    gradle_tasks: BTreeMap<Mode, Vec<String>>,
}

/// One supported release.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Release {
    pub version: KafkaVersion,
    /// One of the reference implementation's matrix (the releases CI compiles and verifies).
    pub reference: bool,
    pub family: String,
    pub modes: Vec<Mode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kraft_note: Option<String>,
    pub scala: String,
    pub java_release: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub java_release_metadata: Option<u32>,
    /// Set (to the evidence) when Maven Central publishes this release's
    /// binary jars but no sources jars, so its sources need a checkout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_sources_jar: Option<String>,
    /// Upstream repo directory (e.g. `core`) -> the Maven artifact whose sources jar holds it.
    pub sources: BTreeMap<String, Coordinate>,
    pub jars: BTreeMap<Mode, Vec<String>>,
    pub gradle_tasks: BTreeMap<Mode, Vec<String>>,
}

/// What a command does when `--mode` is absent and the release has both modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ModeDefault {
    /// Ask for `--mode` (apply, build, show, export: the jars differ per mode).
    Ask,
    /// ZooKeeper where the release has it, else KRaft (verify, dev-cluster).
    ZkFirst,
}

impl Release {
    pub fn supports(&self, mode: Mode) -> bool {
        self.modes.contains(&mode)
    }

    /// The modes to act on: `chosen` if the release has it, else every mode it has.
    pub fn modes_for(&self, chosen: Option<Mode>) -> Result<Vec<Mode>, Error> {
        match chosen {
            None => Ok(self.modes.clone()),
            Some(m) if self.supports(m) => Ok(vec![m]),
            Some(m) => Err(self.no_such_mode(m)),
        }
    }

    /// The one mode to act on: `chosen` if the release has it, its only mode, or `default`'s pick.
    pub fn mode_for(&self, chosen: Option<Mode>, default: ModeDefault) -> Result<Mode, Error> {
        match (chosen, self.modes.as_slice(), default) {
            (Some(m), _, _) if self.supports(m) => Ok(m),
            (Some(m), _, _) => Err(self.no_such_mode(m)),
            (None, [m], _) => Ok(*m),
            (None, _, ModeDefault::ZkFirst) => Ok(if self.supports(Mode::Zk) { Mode::Zk } else { Mode::Kraft }),
            (None, _, ModeDefault::Ask) => Err(Error::Usage(format!(
                "release {} supports zk and kraft: pass --mode (kraft also carries the ZooKeeper controller hooks, \
                 for a ZK->KRaft migration)",
                self.version
            ))),
        }
    }

    fn no_such_mode(&self, m: Mode) -> Error {
        let why = self.kraft_note.as_ref().filter(|_| m == Mode::Kraft).map(|n| format!(": {n}")).unwrap_or_default();
        Error::Usage(format!("release {} has no {m} mode{why}", self.version))
    }

    /// Fails when Maven Central has no sources jar of this release; `hint` says which flags read a
    /// checkout instead.
    pub fn require_sources_jar(&self, hint: &str) -> Result<(), Error> {
        match &self.no_sources_jar {
            None => Ok(()),
            Some(why) => Err(Error::Usage(format!("release {}: {why}; {hint}", self.version))),
        }
    }
}

/// One (release, mode) of the matrix, whether or not anything was built or run for it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Pair {
    pub release: KafkaVersion,
    pub mode: Mode,
    /// Maven Central has its sources jars, so okp can build its patched jars.
    pub sources: bool,
    /// A reference release (the reference implementation's matrix, which CI compiles and verifies).
    pub reference: bool,
}

/// Which pairs of the matrix a command takes; `PairFilter::default()` takes every pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairFilter {
    /// Only the reference releases (`--reference`).
    pub reference: bool,
    /// Only this mode (`--mode`); a release without it has no pair.
    pub mode: Option<Mode>,
    /// Only releases with sources jars on Maven Central.
    pub sources: bool,
}

/// The release matrix, ascending by version.
#[derive(Clone, Debug)]
pub struct Matrix {
    pub releases: Vec<Release>,
}

impl Matrix {
    pub fn parse(origin: &Origin) -> Result<Matrix, Error> {
        let raw: RawMatrix = super::yaml::parse(origin)?;
        if raw.schema != 1 {
            return Err(
                origin.error_at("schema", format!("unsupported schema {} (this okp reads schema 1)", raw.schema))
            );
        }
        if raw.releases.is_empty() {
            return Err(origin.error_at("releases", "no releases listed"));
        }
        let mut releases: Vec<Release> = Vec::with_capacity(raw.releases.len());
        for r in raw.releases {
            let at = format!("version: {}", r.version);
            let err = |msg: String| origin.error_at(&at, format!("release {}: {msg}", r.version));
            let version: KafkaVersion = r.version.parse().map_err(|e: String| err(e))?;
            if let Some(prev) = releases.last() {
                if prev.version >= version {
                    return Err(err(format!(
                        "releases must be listed in ascending order without repeats (after {})",
                        prev.version
                    )));
                }
            }
            if r.modes.is_empty() {
                return Err(err("lists no modes".into()));
            }
            if version.major >= 4 && r.modes.contains(&Mode::Zk) {
                return Err(err("Kafka 4.x has no ZooKeeper mode".into()));
            }
            match (r.modes.contains(&Mode::Kraft), &r.kraft_note) {
                (false, None) => return Err(err("has no kraft mode, so it needs a kraft_note saying why".into())),
                (true, Some(_)) => return Err(err("supports kraft, so it must not carry a kraft_note".into())),
                _ => {}
            }
            if r.family.trim().is_empty() {
                return Err(err("has an empty family".into()));
            }
            let mut sources = BTreeMap::new();
            for (dir, coord) in &r.sources {
                // `okp sources --out DIR` writes each module under DIR/<key>.
                if let Err(why) = confine(dir, None) {
                    return Err(err(format!("sources key {dir:?} {why}")));
                }
                let c: Coordinate = coord.parse().map_err(|e: String| err(e))?;
                if c.version != r.version {
                    return Err(err(format!("source `{dir}` is {c}, which is not version {}", r.version)));
                }
                sources.insert(dir.clone(), c);
            }
            if !sources.contains_key("core") {
                return Err(err("lists no `core` source".into()));
            }
            for mode in &r.modes {
                let jars = r.jars.get(mode).ok_or_else(|| err(format!("lists no jars for mode {mode}")))?;
                for j in jars {
                    if !sources.contains_key(j) {
                        return Err(err(format!(
                            "jar `{j}` of mode {mode} is not one of its sources ({})",
                            keys(&sources)
                        )));
                    }
                }
                if !r.gradle_tasks.contains_key(mode) {
                    return Err(err(format!("lists no gradle_tasks for mode {mode}")));
                }
            }
            for mode in r.jars.keys().chain(r.gradle_tasks.keys()) {
                if !r.modes.contains(mode) {
                    return Err(err(format!("has jars or gradle_tasks for mode {mode}, which it does not support")));
                }
            }
            releases.push(Release {
                version,
                reference: r.reference,
                family: r.family,
                modes: r.modes,
                kraft_note: r.kraft_note,
                scala: r.scala,
                java_release: r.java_release,
                java_release_metadata: r.java_release_metadata,
                no_sources_jar: r.no_sources_jar,
                sources,
                jars: r.jars,
                gradle_tasks: r.gradle_tasks,
            });
        }
        Ok(Matrix { releases })
    }

    /// The (release, mode) pairs `filter` takes, in versions.yaml's order: the one place a command
    /// (`verify --all`, `build --all`, VERIFY.md, `okp versions --format json` for CI and scripts)
    /// picks pairs of the matrix.
    pub fn pairs(&self, filter: PairFilter) -> Vec<Pair> {
        self.releases
            .iter()
            .filter(|r| !filter.reference || r.reference)
            .filter(|r| !filter.sources || r.no_sources_jar.is_none())
            .flat_map(|r| {
                r.modes.iter().filter(move |m| filter.mode.is_none_or(|x| x == **m)).map(move |m| Pair {
                    release: r.version,
                    mode: *m,
                    sources: r.no_sources_jar.is_none(),
                    reference: r.reference,
                })
            })
            .collect()
    }

    pub fn get(&self, v: KafkaVersion) -> Option<&Release> {
        self.releases.iter().find(|r| r.version == v)
    }

    /// Looks a release up, or fails with the list of supported ones.
    pub fn require(&self, v: KafkaVersion) -> Result<&Release, Error> {
        self.get(v).ok_or_else(|| Error::UnknownRelease { version: v.to_string(), supported: self.supported_list() })
    }

    /// The release whose rules (modes, family, anchor range) apply to `v`: its own entry, or the
    /// newest one for a release newer than the matrix.
    pub fn rules_for(&self, v: KafkaVersion) -> Result<&Release, Error> {
        match self.get(v) {
            Some(r) => Ok(r),
            None if v > self.newest().version => Ok(self.newest()),
            None => self.require(v),
        }
    }

    /// Coordinates of a release's sources jars; for a release not in the matrix (newer, or between
    /// two listed ones), the nearest older release's artifacts at its version.
    pub fn coordinates_for(&self, v: KafkaVersion) -> Result<BTreeMap<String, Coordinate>, Error> {
        if let Some(r) = self.get(v) {
            return Ok(r.sources.clone());
        }
        match self.releases.iter().rev().find(|r| r.version < v) {
            Some(older) => Ok(older.sources.iter().map(|(d, c)| (d.clone(), c.at_version(&v.to_string()))).collect()),
            None => Err(Error::UnknownRelease { version: v.to_string(), supported: self.supported_list() }),
        }
    }

    pub fn newest(&self) -> &Release {
        // Parsing guarantees at least one release, ascending.
        &self.releases[self.releases.len() - 1]
    }

    pub fn supported_list(&self) -> String {
        self.releases.iter().map(|r| r.version.to_string()).collect::<Vec<_>>().join(", ")
    }
}

fn keys<V>(m: &BTreeMap<String, V>) -> String {
    m.keys().cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> Matrix {
        crate::model::Model::load(None, None).unwrap().matrix
    }

    /// Every filter narrows the same list, in versions.yaml's order: release by release, mode by mode.
    #[test]
    fn pairs_are_the_matrix_narrowed_by_each_filter() {
        let m = matrix();
        let all = m.pairs(PairFilter::default());
        assert_eq!(all.len(), m.releases.iter().map(|r| r.modes.len()).sum::<usize>());
        let mut expect = Vec::new();
        for r in &m.releases {
            for mode in &r.modes {
                expect.push((r.version, *mode));
            }
        }
        assert_eq!(all.iter().map(|p| (p.release, p.mode)).collect::<Vec<_>>(), expect);
        let with_sources = m.pairs(PairFilter { sources: true, ..PairFilter::default() });
        assert!(with_sources.len() < all.len(), "some release has no sources jar");
        assert_eq!(with_sources, all.iter().filter(|p| p.sources).cloned().collect::<Vec<_>>());
        let reference_kraft = m.pairs(PairFilter { reference: true, mode: Some(Mode::Kraft), sources: false });
        assert!(!reference_kraft.is_empty());
        assert_eq!(
            reference_kraft,
            all.iter().filter(|p| p.reference && p.mode == Mode::Kraft).cloned().collect::<Vec<_>>()
        );
        let v272: KafkaVersion = "2.7.2".parse().unwrap();
        assert!(!m
            .pairs(PairFilter { mode: Some(Mode::Kraft), ..PairFilter::default() })
            .iter()
            .any(|p| p.release == v272));
    }
}
