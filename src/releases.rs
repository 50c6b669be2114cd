//! `okp releases`: every final Apache Kafka release in scope (2.7.0 and newer) that Maven Central
//! lists for `org.apache.kafka:kafka_2.13`, each with its state against the matrix: supported (in
//! versions.yaml, sources jars, built and verified here: the evidence linked), in the matrix but
//! not buildable from Maven Central (no sources jars: a build needs `--git` of the release tag),
//! in the matrix but not verified here, or missing from the matrix; and whether Maven Central has
//! its sources jars and test jars.
//!
//! What Maven Central says comes over HTTP through the machine's `curl` (the artifact metadata,
//! and a HEAD request per artifact), and is cached beside the Maven local repository
//! (`okp-releases/cache.json`, one typed record): the metadata with the time it was fetched, and
//! every answer about an artifact. A published artifact stays published, so a yes is never asked
//! again; a no is asked again on every online run. `--offline` reads only the cache (and the local
//! repository's own jars); `--metadata FILE` reads a recorded maven-metadata.xml instead. Either
//! is parsed within caps (size, nesting depth, nodes, versions, releases in scope: `MAX_*`), which
//! also bound how many HEAD requests one run makes.
//!
//! Not here: what a release's evidence is (`verify::pair_evidence`, handed in by `cmd`), porting
//! (`diff`), downloading jars (`maven`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::maven::Maven;
use crate::model::{Coordinate, Matrix, Mode};
use crate::schema::{Absent, Schema};
use crate::version::KafkaVersion;

/// The oldest release okp's matrix covers: releases before it are out of scope.
pub const FIRST: KafkaVersion = KafkaVersion::new(2, 7, 0);

/// Maven Central, unless OKP_MAVEN_CENTRAL names a mirror (a repository laid out the same way).
pub const CENTRAL: &str = "https://repo1.maven.org/maven2";

/// The artifact whose metadata lists the releases.
pub const METADATA: &str = "org/apache/kafka/kafka_2.13/maven-metadata.xml";

/// The cache's place below the Maven local repository.
pub const CACHE_FILE: &str = "okp-releases/cache.json";

/// What `maven-metadata.xml` says.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Metadata {
    /// Every version listed, as written (release candidates and all).
    pub versions: Vec<String>,
    /// `lastUpdated` (yyyyMMddHHmmss), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
}

/// The largest maven-metadata.xml okp reads (kafka_2.13's lists about 80 versions in under 10 KiB).
pub const MAX_METADATA: usize = 1 << 20;
/// The deepest element nesting okp parses (the metadata's `<version>` sits at depth 4). Checked by
/// a scan before the XML parser runs: roxmltree 0.20 recurses once per level and has no depth
/// limit of its own, so 20,000 nested elements overflowed the stack.
pub const MAX_DEPTH: usize = 32;
/// The most nodes the XML parser builds (elements, texts, comments; roxmltree's `nodes_limit`).
const MAX_NODES: u32 = 65_536;
/// The most `<version>` elements okp takes from the metadata, release candidates and all.
pub const MAX_VERSIONS: usize = 4_096;
/// The most final releases in scope okp takes from the metadata: each costs up to two HEAD requests
/// per module online (its sources and test jars), so this bounds one run's requests to Maven Central.
pub const MAX_IN_SCOPE: usize = 256;

/// Parses a `maven-metadata.xml`, refusing one over any of okp's caps (size, depth, nodes,
/// versions, releases in scope) with a sentence naming `what` and the cap.
pub fn parse_metadata(xml: &str, what: &str) -> Result<Metadata> {
    let refuse = |msg: String| Error::Source(format!("{what} {msg}: not the metadata of kafka_2.13"));
    if xml.len() > MAX_METADATA {
        return Err(refuse(format!("is {} bytes, over okp's cap of {MAX_METADATA} bytes", xml.len())));
    }
    if let Some(line) = deeper_than(xml, MAX_DEPTH) {
        return Err(refuse(format!("nests elements deeper than okp's cap of {MAX_DEPTH} (line {line})")));
    }
    let opts = roxmltree::ParsingOptions { allow_dtd: false, nodes_limit: MAX_NODES };
    let doc = roxmltree::Document::parse_with_options(xml, opts).map_err(|e| match e {
        roxmltree::Error::NodesLimitReached => refuse(format!("has more than okp's cap of {MAX_NODES} XML nodes")),
        e => Error::Source(format!("{what} is not a maven-metadata.xml: {e}")),
    })?;
    let text = |n: roxmltree::Node| n.text().map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    let mut versions = Vec::new();
    for v in doc.descendants().filter(|n| n.has_tag_name("version")).filter_map(text) {
        if versions.len() == MAX_VERSIONS {
            return Err(refuse(format!("lists more than okp's cap of {MAX_VERSIONS} <version> elements")));
        }
        versions.push(v);
    }
    if versions.is_empty() {
        return Err(Error::Source(format!("{what} lists no <version>: not the metadata of kafka_2.13")));
    }
    let last_updated = doc.descendants().find(|n| n.has_tag_name("lastUpdated")).and_then(text);
    let m = Metadata { versions, last_updated };
    m.bounded(what)?;
    Ok(m)
}

impl Metadata {
    /// Refuses a list with more final releases in scope than `MAX_IN_SCOPE` (also a cached one, which
    /// a hand edit may have grown): okp asks Maven Central about each release's jars.
    pub fn bounded(&self, what: &str) -> Result<()> {
        let n = in_scope(&self.versions).len();
        if n > MAX_IN_SCOPE {
            return Err(Error::Source(format!(
                "{what} lists {n} final releases from {FIRST} on, over okp's cap of {MAX_IN_SCOPE} (okp asks Maven \
                 Central about each one's jars): not the metadata of kafka_2.13"
            )));
        }
        Ok(())
    }
}

/// The line of the first element opened deeper than `cap`, by a linear scan that never recurses:
/// comments, processing instructions, CDATA and declarations are skipped, a quoted attribute value
/// may hold `>`, `<x/>` opens nothing, `</x>` closes one. On every prefix the parser accepts, the
/// count is the parser's own depth (a stray close tag the parser refuses stops it there), so a
/// text this scan passes never makes the parser recurse deeper than `cap`.
pub(crate) fn deeper_than(xml: &str, cap: usize) -> Option<usize> {
    let b = xml.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    // The index just past `end` at or after `from`, or the end of the text.
    let past = |from: usize, end: &[u8]| {
        b[from.min(b.len())..].windows(end.len()).position(|w| w == end).map_or(b.len(), |p| from + p + end.len())
    };
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        if rest.starts_with(b"<!--") {
            i = past(i + 4, b"-->");
        } else if rest.starts_with(b"<![CDATA[") {
            i = past(i + 9, b"]]>");
        } else if rest.starts_with(b"<?") {
            i = past(i + 2, b"?>");
        } else if rest.starts_with(b"<!") {
            i = past(i + 2, b">");
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            i = past(i + 2, b">");
        } else {
            // A start tag: find its `>` outside quotes.
            let (mut j, mut quote) = (i + 1, None);
            while j < b.len() {
                match (quote, b[j]) {
                    (None, q @ (b'"' | b'\'')) => quote = Some(q),
                    (Some(q), c) if c == q => quote = None,
                    (None, b'>') => break,
                    _ => {}
                }
                j += 1;
            }
            if !(j < b.len() && b[j - 1] == b'/') {
                depth += 1;
                if depth > cap {
                    return Some(1 + b[..i].iter().filter(|&&c| c == b'\n').count());
                }
            }
            i = j + 1;
        }
    }
    None
}

/// The final releases in scope: `X.Y.Z` (no `-rc1`, no suffix) from `FIRST` on, ascending, once each.
pub fn in_scope(versions: &[String]) -> Vec<KafkaVersion> {
    let mut out: Vec<KafkaVersion> = versions
        .iter()
        .filter(|v| {
            v.split('.').count() == 3 && v.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|v| v.parse().ok())
        .filter(|v| *v >= FIRST)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One answer about an artifact, as cached.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    pub published: bool,
    /// When it was asked (UTC, `2026-12-03T14:00:00Z`).
    pub asked_utc: String,
}

/// The metadata as cached, with where and when it was fetched.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fetched {
    pub url: String,
    pub fetched_utc: String,
    #[serde(flatten)]
    pub metadata: Metadata,
}

/// `okp-releases/cache.json`: schema 1.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cache {
    pub schema: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Fetched>,
    /// `group:artifact:version:classifier` -> the answer.
    #[serde(default)]
    pub artifacts: BTreeMap<String, Answer>,
}

impl Cache {
    pub const SCHEMA: Schema = Schema {
        current: 1,
        absent: Absent::Refused,
        remedy: "it was written by another okp; delete it and okp asks Maven Central again",
    };

    /// The cache at `path`; an empty one when there is none yet.
    pub fn read(path: &Path) -> Result<Cache> {
        if !path.exists() {
            return Ok(Cache { schema: Cache::SCHEMA.current, ..Cache::default() });
        }
        Cache::SCHEMA.read(path, "okp's cache of Maven Central's answers", "okp releases' cache")
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        crate::schema::write(path, self)
    }
}

/// The cache key of an artifact.
fn key(c: &Coordinate, classifier: &str) -> String {
    format!("{c}:{classifier}")
}

/// Maven Central over HTTP through `curl`.
pub struct Http {
    curl: String,
    base: String,
}

impl Http {
    /// From the environment: OKP_CURL (default `curl`), OKP_MAVEN_CENTRAL (default Maven Central).
    pub fn from_env() -> Http {
        Http {
            curl: std::env::var("OKP_CURL").unwrap_or_else(|_| "curl".into()),
            base: std::env::var("OKP_MAVEN_CENTRAL").unwrap_or_else(|_| CENTRAL.into()).trim_end_matches('/').into(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    fn curl(&self) -> Command {
        let mut c = Command::new(&self.curl);
        c.args(["--silent", "--show-error", "--location", "--max-time", "30", "--retry", "2"]);
        c
    }

    fn run(&self, mut c: Command, what: &str) -> Result<std::process::Output> {
        c.output().map_err(|e| self.cannot_run(e, what))
    }

    fn cannot_run(&self, e: std::io::Error, what: &str) -> Error {
        Error::External(format!(
            "cannot run `{}` ({e}) to {what}: okp asks Maven Central through curl; install it (apt-get install \
             curl) or set OKP_CURL, or read a recorded file with --metadata FILE, or the cache with --offline",
            self.curl
        ))
    }

    /// The body at `url`, at most `MAX_METADATA` bytes: curl's `--max-filesize` refuses a larger
    /// body only when the server announces its size, so okp also stops reading one byte past the
    /// cap and kills curl (a body streamed without Content-Length no longer fills memory).
    pub fn get(&self, url: &str) -> Result<String> {
        use std::io::Read;
        let mut c = self.curl();
        c.args(["--fail", "--max-filesize", &MAX_METADATA.to_string(), url]);
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let what = format!("fetch {url}");
        let mut child = c.spawn().map_err(|e| self.cannot_run(e, &what))?;
        let stderr = child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = (&mut e).take(64 << 10).read_to_end(&mut b);
                b
            })
        });
        let mut body = Vec::new();
        let read = child.stdout.take().map(|o| o.take(MAX_METADATA as u64 + 1).read_to_end(&mut body));
        if body.len() > MAX_METADATA {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Source(format!(
                "{url} sent more than okp's cap of {MAX_METADATA} bytes (stopped there): not the metadata of kafka_2.13"
            )));
        }
        let status = child.wait().map_err(|e| self.cannot_run(e, &what))?;
        let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
        if let Some(Err(e)) = read {
            return Err(Error::External(format!("cannot fetch {url}: reading curl's output: {e}")));
        }
        if !status.success() {
            return Err(Error::External(format!("cannot fetch {url}: {}", String::from_utf8_lossy(&err).trim())));
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// Whether each URL exists (HEAD: 200 yes, 404 no), in one curl run.
    pub fn exists(&self, urls: &[String]) -> Result<BTreeMap<String, bool>> {
        let mut out = BTreeMap::new();
        for chunk in urls.chunks(64) {
            let mut c = self.curl();
            c.args(["--head", "--parallel", "--parallel-max", "8", "--write-out", "%{http_code} %{url_effective}\\n"]);
            for u in chunk {
                c.args(["--output", "/dev/null", u]);
            }
            let o = self.run(c, "ask Maven Central which artifacts it has")?;
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                let Some((code, url)) = line.split_once(' ') else { continue };
                match code {
                    "200" => out.insert(url.to_string(), true),
                    "404" | "410" => out.insert(url.to_string(), false),
                    _ => None,
                };
            }
            let unanswered: Vec<&String> = chunk.iter().filter(|u| !out.contains_key(*u)).collect();
            if !unanswered.is_empty() {
                return Err(Error::External(format!(
                    "Maven Central did not answer for {} ({}){}",
                    unanswered.len(),
                    unanswered.first().map(|u| u.as_str()).unwrap_or_default(),
                    match String::from_utf8_lossy(&o.stderr).trim() {
                        "" => String::new(),
                        e => format!(": {e}"),
                    }
                )));
            }
        }
        Ok(out)
    }
}

/// Where the metadata comes from.
pub enum MetadataSource<'a> {
    /// Maven Central (then the cache is updated).
    Live,
    /// The cache alone.
    Offline,
    /// A recorded maven-metadata.xml.
    File(&'a Path),
}

/// Whether Maven Central has an artifact, as far as okp knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Avail {
    Yes,
    No,
    /// Offline, and neither the cache nor the local repository knows.
    Unknown,
}

impl Avail {
    pub fn as_str(&self) -> &'static str {
        match self {
            Avail::Yes => "yes",
            Avail::No => "no",
            Avail::Unknown => "unknown",
        }
    }
    /// All of `each` yes: yes; any no: no; else unknown.
    fn all(each: &[Avail]) -> Avail {
        if each.contains(&Avail::No) {
            Avail::No
        } else if each.iter().all(|a| *a == Avail::Yes) && !each.is_empty() {
            Avail::Yes
        } else {
            Avail::Unknown
        }
    }
}

/// A release's state against the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// In versions.yaml, with sources jars, built (a passing provenance proof) and verified (a
    /// passing `okp verify` run) for every mode: the evidence is linked.
    Supported,
    /// In versions.yaml with sources jars, but this evidence directory holds no passing proof or run
    /// for some mode.
    NotVerified,
    /// In versions.yaml, but Maven Central has no sources jars of it: okp cannot build it from
    /// Maven Central (a build needs `--git` of the release tag or `--tree`).
    NotBuildable,
    /// Not in versions.yaml.
    Missing,
}

impl State {
    pub fn as_str(&self) -> &'static str {
        match self {
            State::Supported => "supported",
            State::NotVerified => "not verified here",
            State::NotBuildable => "not buildable from Maven Central",
            State::Missing => "MISSING from the matrix",
        }
    }
}

/// What the evidence directory holds for one (release, mode).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PairEvidence {
    /// A passing `okp verify` run (full, or partial runs covering the suite): its directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// A passing provenance proof of a build (`build/proof/<pair>.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<String>,
}

impl PairEvidence {
    pub fn complete(&self) -> bool {
        self.run.is_some() && self.proof.is_some()
    }
}

/// One release in scope.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub version: KafkaVersion,
    pub state: State,
    pub in_matrix: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<Mode>,
    /// Maven Central has every sources jar the release's modules need.
    pub sources_jars: Avail,
    /// Maven Central has every test jar (what `okp unit-tests` runs) of those modules.
    pub test_jars: Avail,
    /// Per mode, the evidence found (paths relative to the evidence directory).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<Mode, PairEvidence>,
    /// The verdict from the release's own jars against the release before it (`okp diff --binary
    /// --evidence`), with the report's path relative to the evidence directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytecode_verdict: Option<String>,
    /// For a release missing from the matrix: the release to port it from (`okp diff --from`):
    /// the nearest older one in the matrix with sources jars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_from: Option<KafkaVersion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The whole report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    pub schema: u32,
    /// Where the list came from: the URL and when it was fetched, the cache, or a recorded file.
    pub metadata: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    pub releases: Vec<Row>,
    /// Releases of the matrix Maven Central does not list (a typo, or a withdrawn release).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unlisted: Vec<KafkaVersion>,
}

/// The schema of `okp releases --format json` (and of `releases.json` of `--report DIR`).
pub const JSON_SCHEMA: u32 = 1;

impl Report {
    pub fn missing(&self) -> Vec<KafkaVersion> {
        self.releases.iter().filter(|r| r.state == State::Missing).map(|r| r.version).collect()
    }
    pub fn not_buildable(&self) -> Vec<KafkaVersion> {
        self.releases.iter().filter(|r| r.state == State::NotBuildable).map(|r| r.version).collect()
    }
}

/// Reads the metadata from where `source` says, updating `cache` when it was fetched.
pub fn metadata(source: MetadataSource<'_>, http: &Http, cache: &mut Cache) -> Result<(Metadata, String)> {
    match source {
        MetadataSource::File(p) => {
            let bytes = crate::fsx::read::input(p, MAX_METADATA as u64, "recorded maven-metadata.xml")?;
            let what = p.display().to_string();
            Ok((parse_metadata(&String::from_utf8_lossy(&bytes), &what)?, format!("recorded file {what}")))
        }
        MetadataSource::Offline => match &cache.metadata {
            Some(f) => {
                f.metadata.bounded(&format!("the cached metadata of {}", f.url))?;
                Ok((f.metadata.clone(), format!("{} as fetched {} (cached; --offline)", f.url, f.fetched_utc)))
            }
            None => {
                Err(Error::Usage("--offline: okp has no cached metadata yet; run `okp releases` once online".into()))
            }
        },
        MetadataSource::Live => {
            let url = http.url(METADATA);
            // A page that is not the metadata (a proxy's error page) is Maven Central failing, not bad input.
            let m = parse_metadata(&http.get(&url)?, &url).map_err(|e| Error::External(e.to_string()))?;
            let fetched_utc = crate::report::utc_now();
            cache.metadata = Some(Fetched { url: url.clone(), fetched_utc: fetched_utc.clone(), metadata: m.clone() });
            Ok((m, format!("{url} as fetched {fetched_utc}")))
        }
    }
}

/// Whether each artifact (coordinate, classifier) is published: the local repository and the
/// cache first, then (online) one curl run for the rest. Updates the cache.
pub fn availability(
    wanted: &[(Coordinate, &str)],
    maven: &Maven,
    http: &Http,
    cache: &mut Cache,
    offline: bool,
) -> Result<BTreeMap<String, Avail>> {
    let mut out = BTreeMap::new();
    let mut ask = Vec::new();
    for (c, cl) in wanted {
        let k = key(c, cl);
        let local = maven.path(c, Some(cl)).is_file();
        match cache.artifacts.get(&k) {
            _ if local => {
                out.insert(k, Avail::Yes);
            }
            Some(a) if a.published => {
                out.insert(k, Avail::Yes);
            }
            Some(_) if offline => {
                out.insert(k, Avail::No);
            }
            None if offline => {
                out.insert(k, Avail::Unknown);
            }
            _ => ask.push((k, http.url(&c.repo_path(Some(cl))))),
        }
    }
    if !ask.is_empty() {
        let urls: Vec<String> = ask.iter().map(|(_, u)| u.clone()).collect();
        let answers = http.exists(&urls)?;
        let now = crate::report::utc_now();
        for (k, u) in ask {
            let published = answers.get(&u).copied().unwrap_or(false);
            cache.artifacts.insert(k.clone(), Answer { published, asked_utc: now.clone() });
            out.insert(k, if published { Avail::Yes } else { Avail::No });
        }
    }
    Ok(out)
}

/// The releases in scope with their states. `evidence(release, mode)` says what the evidence
/// directory holds; `avail` answers per artifact key (see `availability`).
pub fn report(
    matrix: &Matrix,
    listed: &[KafkaVersion],
    metadata: String,
    last_updated: Option<String>,
    avail: &BTreeMap<String, Avail>,
    evidence: &dyn Fn(KafkaVersion, Mode) -> PairEvidence,
    bytecode: &BTreeMap<KafkaVersion, (String, String)>,
) -> Result<Report> {
    let mut releases = Vec::new();
    for &v in listed {
        let coords = matrix.coordinates_for(v)?;
        let of = |cl: &str| {
            Avail::all(
                &coords.values().map(|c| avail.get(&key(c, cl)).copied().unwrap_or(Avail::Unknown)).collect::<Vec<_>>(),
            )
        };
        let (sources_jars, test_jars) = (of("sources"), of("test"));
        let entry = matrix.get(v);
        let mut row = Row {
            version: v,
            state: State::Missing,
            in_matrix: entry.is_some(),
            modes: entry.map(|r| r.modes.clone()).unwrap_or_default(),
            sources_jars,
            test_jars,
            evidence: BTreeMap::new(),
            bytecode_verdict: bytecode.get(&v).map(|(verdict, link)| format!("{verdict} ({link})")),
            port_from: None,
            note: None,
        };
        match entry {
            None => {
                row.port_from = matrix
                    .releases
                    .iter()
                    .rev()
                    .find(|r| r.version < v && r.no_sources_jar.is_none())
                    .map(|r| r.version);
                row.note = Some(match (row.port_from, sources_jars) {
                    (Some(f), Avail::No) => format!(
                        "no sources jar: okp diff --from {f} --to {v} compares the releases' jars; port from the \
                         release tag with okp diff --from {f} --to {v} --git KAFKA --to-rev {v} --write"
                    ),
                    (Some(f), _) => format!("port it: okp diff --from {f} --to {v} --write"),
                    (None, _) => "no older release of the matrix to port it from".into(),
                });
            }
            Some(r) => {
                row.evidence = r.modes.iter().map(|&m| (m, evidence(v, m))).collect();
                row.state = if r.no_sources_jar.is_some() || sources_jars == Avail::No {
                    State::NotBuildable
                } else if row.evidence.values().all(PairEvidence::complete) {
                    State::Supported
                } else {
                    State::NotVerified
                };
                row.note = match (r.no_sources_jar.is_some(), sources_jars) {
                    (true, Avail::Yes) => Some(
                        "versions.yaml says no_sources_jar, but Maven Central now has its sources jars: drop the \
                         marker and check its anchors (okp check-anchors --version V)"
                            .replace('V', &v.to_string()),
                    ),
                    (false, Avail::No) => Some("versions.yaml lists sources jars Maven Central does not have".into()),
                    (true, _) => {
                        Some(format!("build it from the release tag: okp build --version {v} --git KAFKA --rev {v}"))
                    }
                    _ => None,
                };
            }
        }
        releases.push(row);
    }
    let unlisted = matrix.releases.iter().map(|r| r.version).filter(|v| !listed.contains(v)).collect();
    Ok(Report { schema: JSON_SCHEMA, metadata, last_updated, releases, unlisted })
}

/// Every artifact `report` needs answered for `listed`: each release's modules' sources and test jars.
pub fn wanted(matrix: &Matrix, listed: &[KafkaVersion]) -> Result<Vec<(Coordinate, &'static str)>> {
    let mut out = Vec::new();
    for &v in listed {
        for c in matrix.coordinates_for(v)?.into_values() {
            out.push((c.clone(), "sources"));
            out.push((c, "test"));
        }
    }
    Ok(out)
}

/// The cache file of a Maven local repository.
pub fn cache_path(maven: &Maven) -> PathBuf {
    maven.repo_local.join(CACHE_FILE)
}

/// The terminal table.
pub fn table(r: &Report) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "okp releases: final Apache Kafka releases from {FIRST} on Maven Central ({})", r.metadata);
    let _ = writeln!(
        s,
        "\n{:<8} {:<33} {:<11} {:<8} {:<6} evidence / next step",
        "release", "state", "modes", "sources", "tests"
    );
    for row in &r.releases {
        let modes = row.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(",");
        let evidence: Vec<String> = row
            .evidence
            .iter()
            .filter(|(_, e)| e.run.is_some() || e.proof.is_some())
            .map(|(m, e)| {
                let parts: Vec<&str> = [e.run.as_deref(), e.proof.as_deref()].into_iter().flatten().collect();
                format!("{m}: {}", parts.join(" + "))
            })
            .collect();
        let mut evidence = evidence;
        if let Some(b) = &row.bytecode_verdict {
            evidence.push(format!("bytecode verdict: {b}"));
        }
        let last = match (&row.note, evidence.is_empty()) {
            (Some(n), true) => n.clone(),
            (Some(n), false) => format!("{}; {n}", evidence.join("; ")),
            (None, _) => evidence.join("; "),
        };
        let _ = writeln!(
            s,
            "{:<8} {:<33} {:<11} {:<8} {:<6} {last}",
            row.version.to_string(),
            row.state.as_str(),
            if modes.is_empty() { "-".into() } else { modes },
            row.sources_jars.as_str(),
            row.test_jars.as_str()
        );
    }
    for v in &r.unlisted {
        let _ = writeln!(s, "{v:<8} in versions.yaml, but Maven Central's metadata does not list it");
    }
    let count = |st: State| r.releases.iter().filter(|x| x.state == st).count();
    let _ = writeln!(
        s,
        "\n{} releases in scope: {} supported, {} not verified here, {} not buildable from Maven Central, {} missing from the matrix",
        r.releases.len(),
        count(State::Supported),
        count(State::NotVerified),
        count(State::NotBuildable),
        count(State::Missing)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_final_releases_from_2_7_0_are_in_scope() {
        let listed: Vec<String> =
            ["2.6.3", "2.7.0", "3.0.0-rc1", "4.3.2", "4.3.2", "4.4.0-SNAPSHOT", "4.3", "4.10.0", "x.y.z"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let got: Vec<String> = in_scope(&listed).iter().map(|v| v.to_string()).collect();
        assert_eq!(got, ["2.7.0", "4.3.2", "4.10.0"]);
    }

    #[test]
    fn metadata_is_read_and_a_page_that_is_not_is_refused() {
        let xml = "<?xml version=\"1.0\"?><metadata><versioning><versions><version>4.3.1</version>\n<version> 4.3.2 </version></versions><lastUpdated>20261201102129</lastUpdated></versioning></metadata>";
        let m = parse_metadata(xml, "m.xml").unwrap();
        assert_eq!(
            (m.versions, m.last_updated.as_deref()),
            (vec!["4.3.1".to_string(), "4.3.2".to_string()], Some("20261201102129"))
        );
        let e = parse_metadata("<html><body>gateway</body></html>", "proxy page").unwrap_err().to_string();
        assert!(e.contains("proxy page lists no <version>"), "{e}");
        assert!(parse_metadata("not xml", "x").is_err());
    }

    /// A metadata file of `versions` (each `<version>` on its own line) with `extra` before `</metadata>`.
    fn metadata_of(versions: impl Iterator<Item = String>, extra: &str) -> String {
        let vs: String = versions.map(|v| format!("<version>{v}</version>\n")).collect();
        format!("<metadata><versioning><versions>\n{vs}</versions></versioning>{extra}</metadata>")
    }

    #[test]
    fn deep_nesting_is_refused_before_the_parser_recurses() {
        // The attack: 20,000 nested elements (140 KB) overflowed the stack (abort, exit 134).
        let n = 20_000;
        let xml = metadata_of(["4.3.1".to_string()].into_iter(), &format!("\n{}{}", "<a>".repeat(n), "</a>".repeat(n)));
        let e = parse_metadata(&xml, "m.xml").unwrap_err();
        assert!(matches!(e, Error::Source(_)), "bad input, exit 2: {e:?}");
        let e = e.to_string();
        assert!(e.starts_with("m.xml nests elements deeper than okp's cap of 32 (line 4)"), "{e}");
        // Just at the cap is read; one deeper is refused.
        let at = |d: usize| {
            metadata_of(["4.3.1".to_string()].into_iter(), &"<a>".repeat(d - 1).to_string())
                .replace("</metadata>", &format!("{}</metadata>", "</a>".repeat(d - 1)))
        };
        assert!(parse_metadata(&at(MAX_DEPTH), "m.xml").is_ok());
        assert!(parse_metadata(&at(MAX_DEPTH + 1), "m.xml").unwrap_err().to_string().contains("deeper than"));
    }

    #[test]
    fn the_depth_scan_skips_what_opens_no_element() {
        for (xml, deepest_ok) in [
            ("<a><b/><c x='>' y=\"<d>\"><!-- <e><f> --><![CDATA[<g><h>]]><?pi <i>?></c></a>", 2),
            ("<!DOCTYPE a [<!ELEMENT a ANY>]><a><b></b><b></b></a>", 2),
            ("<a><b><c", 3),
            // A stray close tag lowers the count; the parser stops at it, so it never recurses deeper.
            ("<a></b></c></d><e><f>", 2),
        ] {
            assert_eq!(deeper_than(xml, deepest_ok), None, "{xml}");
            assert_eq!(deeper_than(xml, deepest_ok - 1), Some(1), "{xml}");
        }
    }

    #[test]
    fn huge_metadata_is_refused_by_size_nodes_versions_and_releases_in_scope() {
        // The attack: 1M versions (28 MB) used 1.9 GB and, online, a HEAD request per version.
        let million = metadata_of((0..1_000_000).map(|i| format!("9.{}.{}", i / 1000, i % 1000)), "");
        let e = parse_metadata(&million, "m.xml").unwrap_err().to_string();
        assert!(e.contains(&format!("m.xml is {} bytes, over okp's cap of 1048576 bytes", million.len())), "{e}");
        // Under the size cap: too many nodes, too many versions, too many releases in scope.
        let nodes = metadata_of(["4.3.1".to_string()].into_iter(), &"<a/>".repeat(70_000));
        let e = parse_metadata(&nodes, "m.xml").unwrap_err().to_string();
        assert!(e.contains("more than okp's cap of 65536 XML nodes"), "{e}");
        let rcs = metadata_of((0..=MAX_VERSIONS).map(|i| format!("4.{i}.0-rc1")), "");
        let e = parse_metadata(&rcs, "m.xml").unwrap_err().to_string();
        assert!(e.contains("lists more than okp's cap of 4096 <version> elements"), "{e}");
        let finals = metadata_of((0..=MAX_IN_SCOPE).map(|i| format!("5.{i}.0")), "");
        let e = parse_metadata(&finals, "m.xml").unwrap_err().to_string();
        assert!(e.contains("m.xml lists 257 final releases from 2.7.0 on, over okp's cap of 256"), "{e}");
        // At the caps: read.
        let m = parse_metadata(&metadata_of((1..=MAX_IN_SCOPE).map(|i| format!("5.{i}.0")), ""), "m.xml").unwrap();
        assert_eq!(in_scope(&m.versions).len(), MAX_IN_SCOPE);
        // A cache grown by hand is held to the same cap.
        let grown = Metadata { versions: (0..=MAX_IN_SCOPE).map(|i| format!("5.{i}.0")).collect(), last_updated: None };
        assert!(grown.bounded("the cache").unwrap_err().to_string().contains("over okp's cap of 256"));
    }

    #[test]
    fn a_cache_of_another_schema_is_refused() {
        let c = Cache { schema: 1, ..Cache::default() };
        crate::schema::testing::assert_refused(&c, "cache.json", 2, |d| Cache::read(&d.join("cache.json")));
    }
}
