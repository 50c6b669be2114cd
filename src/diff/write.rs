//! `okp diff --write`: when the old release's patch set carries over, the new
//! release's versions.yaml entry (filled the way the file's header says: scala
//! from the release POM, java_release from the class-file major of its jars),
//! inserted as text so the file keeps its layout and comments, confirmed by
//! check-anchors on the new release before the file is replaced atomically.
//! When it does not carry over, the porting worksheet instead.

use std::path::{Path, PathBuf};

use super::{DiffReport, Verdict};
use crate::error::{Error, Failure, Outcome, Result};
use crate::maven::Maven;
use crate::model::{AnchorSet, Coordinate, Matrix, Origin, Release};
use crate::source::{RevKind, SourceTree};
use crate::version::KafkaVersion;

/// The class whose class-file major gives `java_release` (core) and
/// `java_release_metadata` (kafka-metadata), as versions.yaml's header says.
const CORE_CLASS: &str = "kafka/cluster/Partition.class";
const METADATA_CLASS: &str = "org/apache/kafka/controller/ReplicationControlManager.class";

/// Where `--write` writes.
pub struct Targets {
    pub versions: PathBuf,
    pub anchors: Origin,
    pub worksheet: PathBuf,
    /// The command line that runs this diff again (same data files and sources), for the worksheet.
    pub rerun: String,
}

/// The scala-library version a release POM depends on.
pub fn scala_from_pom(pom: &str) -> Option<String> {
    let at = pom.find("<artifactId>scala-library</artifactId>")?;
    let rest = &pom[at..];
    let end = rest.find("</dependency>").unwrap_or(rest.len());
    let block = &rest[..end];
    let v = block.split_once("<version>")?.1.split_once("</version>")?.0.trim();
    (!v.is_empty() && !v.contains("${")).then(|| v.to_string())
}

fn quoted(s: &str) -> String {
    // A JSON string is a valid YAML double-quoted scalar.
    serde_json::to_string(s).unwrap_or_default()
}

fn flow(items: &[String], quote: bool) -> String {
    let items: Vec<String> = items.iter().map(|i| if quote { quoted(i) } else { i.clone() }).collect();
    format!("[{}]", items.join(", "))
}

/// The entry's text, in the field order and style of the file's entries.
pub fn entry_text(r: &Release) -> String {
    let mut s = format!("  - version: {}\n", r.version);
    s.push_str(&format!("    family: {}\n", r.family));
    s.push_str(&format!("    modes: {}\n", flow(&r.modes.iter().map(|m| m.to_string()).collect::<Vec<_>>(), false)));
    if let Some(n) = &r.kraft_note {
        s.push_str(&format!("    kraft_note: {}\n", quoted(n)));
    }
    s.push_str(&format!("    scala: {}\n    java_release: {}\n", r.scala, r.java_release));
    if let Some(m) = r.java_release_metadata {
        s.push_str(&format!("    java_release_metadata: {m}\n"));
    }
    if let Some(n) = &r.no_sources_jar {
        s.push_str(&format!("    no_sources_jar: {}\n", quoted(n)));
    }
    s.push_str("    sources:\n");
    for (dir, c) in &r.sources {
        s.push_str(&format!("      {dir}: {c}\n"));
    }
    s.push_str("    jars:\n");
    for (m, jars) in &r.jars {
        s.push_str(&format!("      {m}: {}\n", flow(jars, false)));
    }
    s.push_str("    gradle_tasks:\n");
    for (m, tasks) in &r.gradle_tasks {
        s.push_str(&format!("      {m}: {}\n", flow(tasks, true)));
    }
    s
}

/// `text` with `entry` inserted where release `v` sorts: before the first
/// later release's entry (and before the comment lines directly above it,
/// which belong to that entry), or at the end.
pub fn insert_entry(text: &str, matrix: &Matrix, v: KafkaVersion, entry: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let next = matrix.releases.iter().find(|r| r.version > v).and_then(|r| {
        let needle = format!("- version: {}", r.version);
        lines.iter().position(|l| l.trim_start().starts_with(&needle) && l.trim_end().ends_with(&r.version.to_string()))
    });
    match next {
        Some(mut at) => {
            while at > 0 && lines[at - 1].trim_start().starts_with('#') {
                at -= 1;
            }
            let mut out: String = lines[..at].concat();
            out.push_str(entry);
            out.push_str(&lines[at..].concat());
            out
        }
        None => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(entry);
            out
        }
    }
}

/// Reads one class's class-file major from a jar and maps it to the Java release.
fn java_release_of(jar: &Path, class: &str) -> Result<u32> {
    let bytes = crate::fsx::read::input(jar, crate::fsx::read::MAX_JAR, "jar")?;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| Error::Source(format!("{} is not a readable jar ({e})", jar.display())))?;
    let mut entry = zip.by_name(class).map_err(|e| Error::Source(format!("{}: no {class} ({e})", jar.display())))?;
    let bytes = crate::fsx::zip_entry::read(&mut entry, jar, crate::fsx::read::MAX_CLASS)?;
    let info =
        crate::jvm::classfile::parse(&bytes).map_err(|e| Error::Source(format!("{}!{class}: {e}", jar.display())))?;
    Ok(u32::from(crate::jvm::classfile::java_release(info.major)))
}

/// `no_sources_jar` of a new release: None when Maven Central has its sources jars, else the
/// sentence saying so (which sources jars are missing, and where the port read V2's sources from).
/// A cached sources jar answers without mvn; a missing one is asked for.
pub fn missing_sources_jar(
    maven: &Maven,
    sources: &std::collections::BTreeMap<String, Coordinate>,
    v: KafkaVersion,
    read_from: &str,
) -> Result<Option<String>> {
    let wanted: Vec<(Coordinate, Option<&str>)> = sources.values().map(|c| (c.clone(), Some("sources"))).collect();
    match maven.ensure(&wanted) {
        Ok(_) => return Ok(None),
        Err(Error::NotPublished(_)) => {}
        Err(e) => return Err(e),
    }
    // Name each missing one: one mvn run per artifact, only on this path.
    let mut missing = Vec::new();
    for w in &wanted {
        match maven.ensure(std::slice::from_ref(w)) {
            Ok(_) => {}
            Err(Error::NotPublished(_)) => missing.push(format!("{}:sources", w.0)),
            Err(e) => return Err(e),
        }
    }
    let date = &crate::report::utc_now()[..10];
    Ok(Some(format!(
        "Maven Central serves {v}'s binary jars and POMs but no -sources.jar ({} not published, asked {date}); \
         ported with okp diff from {read_from}; check a checkout with --source or --git",
        missing.join(", ")
    )))
}

/// Where `--write` says the new release's sources were read from, and on what its verdict rests:
/// the tree (a release tag, a branch snapshot with its revision, a directory) and the version it
/// declares, and the bytecode comparison when there was one. A tree declaring another version
/// than `--to` (the 4.3.1 release commit offered as 4.3.2, a branch snapshot) is refused unless
/// `accept_mismatch`, and then recorded as such.
pub fn read_from(report: &DiffReport, tree: &dyn SourceTree, accept_mismatch: bool) -> Result<String> {
    let v = report.to.label();
    let declared = tree.declared_version()?;
    let mut s = tree.describe();
    if !tree.is_release_sources_jar() {
        let kind = match tree.rev_kind() {
            Some(RevKind::Tag) => "a tag",
            Some(RevKind::Branch) => "a branch snapshot",
            Some(RevKind::Commit) => "a commit",
            None => "a tree",
        };
        match &declared {
            Some(d) if *d == v => s.push_str(&format!(", {kind} declaring version {d}")),
            Some(d) if accept_mismatch => s.push_str(&format!(
                ", {kind} declaring version {d}, not {v} (taken with --accept-version-mismatch: not {v}'s own source)"
            )),
            Some(d) => {
                return Err(Error::Usage(format!(
                    "{} declares version {d} (gradle.properties), not {v}: it is not {v}'s source, so --write \
                     will not record it as {v}; use {v}'s release tag, or pass --accept-version-mismatch to record it \
                     as {kind} declaring {d}",
                    tree.describe()
                )))
            }
            None if accept_mismatch => {
                s.push_str(&format!(", {kind} declaring no version (taken with --accept-version-mismatch)"))
            }
            None => {
                return Err(Error::Usage(format!(
                    "{} declares no version (no gradle.properties version=), so nothing says it is {v}'s source; \
                     pass --accept-version-mismatch to record it as such",
                    tree.describe()
                )))
            }
        }
    }
    if let Some(b) = &report.binary {
        s.push_str(&format!("; verdict from {}", verdict_basis(report, b)));
    }
    Ok(s)
}

/// `4.3.2's own bytecode against 4.3.1's (okp diff --binary): carries over with review (…)`.
fn verdict_basis(report: &DiffReport, b: &super::binary::BinaryReport) -> String {
    let verdict = match b.verdict {
        Verdict::CarriesOver => "carries over".to_string(),
        Verdict::CarriesOverReview => {
            let mut what: Vec<String> = b
                .sites
                .iter()
                .filter(|s| s.verdict != super::binary::SiteVerdict::Carries)
                .map(|s| format!("site {}", s.anchor))
                .collect();
            what.extend(b.guards.iter().filter(|g| g.needs_review()).map(|g| format!("guard {}", g.guard)));
            format!("carries over with review ({} changed)", what.join(", "))
        }
        Verdict::Drift => "drift".to_string(),
    };
    let elsewhere: Vec<String> = b
        .classes
        .iter()
        .filter(|c| !c.added.is_empty() || !c.removed.is_empty() || !c.changed.is_empty())
        .map(|c| {
            let class = c.class.rsplit('/').next().unwrap_or(&c.class);
            let members: Vec<String> = c
                .added
                .iter()
                .map(|m| format!("+{m}"))
                .chain(c.removed.iter().map(|m| format!("-{m}")))
                .chain(c.changed.iter().map(|m| format!("~{m}")))
                .collect();
            format!("{class} {}", members.join(", "))
        })
        .collect();
    let verdict = if elsewhere.is_empty() {
        verdict
    } else {
        format!("{verdict}; changed in the hooked files: {}", elsewhere.join("; "))
    };
    let verdict = match &b.source_check {
        Some(c) if !c.agrees() => {
            let what: Vec<String> = c
                .findings
                .iter()
                .map(|f| format!("{} {}.{}", f.finding.as_str(), f.class, f.member.trim_start_matches("method ")))
                .collect();
            format!("{verdict}; the tree against that bytecode: {}", what.join(", "))
        }
        _ => verdict,
    };
    format!("{}'s own bytecode against {}'s (okp diff --binary): {verdict}", report.to.label(), report.from.label())
}

/// The new release's entry: the old release's family, modes, jars and tasks;
/// its own coordinates, Scala and Java release, read from Maven Central, and
/// `no_sources_jar` when Maven Central has no sources jar of it (V2 read from `read_from`).
pub fn derive_entry(maven: &Maven, template: &Release, v: KafkaVersion, read_from: &str) -> Result<Release> {
    let at = |c: &Coordinate| c.at_version(&v.to_string());
    let sources: std::collections::BTreeMap<String, Coordinate> =
        template.sources.iter().map(|(d, c)| (d.clone(), at(c))).collect();
    let core = sources
        .get("core")
        .cloned()
        .ok_or_else(|| Error::Usage(format!("release {} lists no core source", template.version)))?;
    let metadata = template.java_release_metadata.map(|_| {
        sources.get("metadata").cloned().unwrap_or(Coordinate {
            group: core.group.clone(),
            artifact: "kafka-metadata".into(),
            version: v.to_string(),
        })
    });
    let mut wanted = vec![(core.clone(), None)];
    wanted.extend(metadata.iter().map(|c| (c.clone(), None)));
    let jars = maven.ensure(&wanted)?;
    // Resolving a jar brings its POM into the local repository.
    let pom_path = jars[0].with_extension("pom");
    let pom = crate::fsx::read::text(&pom_path, crate::fsx::read::MAX_TEXT, &format!("POM of {core}"))?;
    let scala = scala_from_pom(&pom)
        .ok_or_else(|| Error::Source(format!("{}: no scala-library dependency with a version", pom_path.display())))?;
    let no_sources_jar = missing_sources_jar(maven, &sources, v, read_from)?;
    Ok(Release {
        version: v,
        reference: false,
        family: template.family.clone(),
        modes: template.modes.clone(),
        kraft_note: template.kraft_note.clone(),
        scala,
        java_release: java_release_of(&jars[0], CORE_CLASS)?,
        java_release_metadata: match jars.get(1) {
            Some(j) => Some(java_release_of(j, METADATA_CLASS)?),
            None => None,
        },
        no_sources_jar,
        sources,
        jars: template.jars.clone(),
        gradle_tasks: template.gradle_tasks.clone(),
    })
}

fn write_worksheet(report: &DiffReport, t: &Targets) -> Result<()> {
    let text = super::render::worksheet(report, &t.versions.display().to_string(), &t.rerun);
    crate::fsx::write_atomic(&t.worksheet, text.as_bytes())?;
    crate::out::note(format!("porting worksheet written to {}", t.worksheet.display()));
    Ok(())
}

/// `--write`: adds the new release when the patch set carries over (and a
/// worksheet of the sites to review, if any changed); otherwise writes only
/// the worksheet. versions.yaml changes only after check-anchors passed on
/// the new release with the new entry, and then in one rename.
pub fn write(
    report: &DiffReport,
    to_tree: &dyn SourceTree,
    maven: &Maven,
    read_from: &str,
    t: &Targets,
) -> Result<Outcome> {
    let v =
        report.to.version.ok_or_else(|| Error::Usage("--write needs the new release's number: pass --to V2".into()))?;
    let text = crate::fsx::read::text(
        &t.versions,
        4 << 20,
        "versions file (--write edits it; --versions FILE names another)",
    )?;
    let origin = Origin::new(t.versions.display().to_string(), text.clone());
    let matrix = Matrix::parse(&origin)?;
    if matrix.get(v).is_some() {
        return Err(Error::Usage(format!(
            "{v} is already in {}; --write adds a release that is not there yet",
            t.versions.display()
        )));
    }
    if report.verdict == Verdict::Drift {
        write_worksheet(report, t)?;
        crate::out::note(format!(
            "{} unchanged: the patch set of {} does not carry over to {v}",
            t.versions.display(),
            report.from.label()
        ));
        return Ok(Outcome::Failed(Failure::Drift));
    }
    let from = report
        .from
        .version
        .ok_or_else(|| Error::Usage("--write needs the old release's number: pass --from V1".into()))?;
    let template = matrix.require(from)?;
    let entry = derive_entry(maven, template, v, read_from)?;
    let new_text = insert_entry(&text, &matrix, v, &entry_text(&entry));
    let new_origin = Origin::new(format!("{} (with {v} added)", t.versions.display()), new_text.clone());
    let new_matrix = Matrix::parse(&new_origin)?;
    let anchors = AnchorSet::parse(&t.anchors)?;
    anchors.check_coverage(&new_matrix, &t.anchors)?;
    let release = new_matrix.require(v)?;
    let checked =
        crate::check::check_tree(&anchors, release, v, &release.modes, &crate::model::Layers::all(), to_tree)?;
    let drifted: Vec<String> = checked
        .iter()
        .flat_map(|t| {
            t.anchors
                .iter()
                .filter(|a| a.status != crate::check::Status::Ok)
                .map(move |a| format!("{} {}: {}", t.mode, a.anchor, a.status.as_str()))
        })
        .collect();
    if !drifted.is_empty() {
        write_worksheet(report, t)?;
        crate::out::note(format!(
            "{} unchanged: check-anchors on {v} with the new entry failed: {}",
            t.versions.display(),
            drifted.join(", ")
        ));
        return Ok(Outcome::Failed(Failure::Drift));
    }
    crate::fsx::write_atomic(&t.versions, new_text.as_bytes())?;
    let n: usize = checked.iter().map(|t| t.anchors.len()).sum();
    crate::out::note(format!(
        "added {v} to {} (family {}, modes {}, scala {}, java {}); check-anchors passed: {n} anchor checks in {} mode(s)",
        t.versions.display(),
        release.family,
        release.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", "),
        release.scala,
        release.java_release,
        checked.len()
    ));
    if let Some(why) = &release.no_sources_jar {
        crate::out::note(format!("{v} is marked no_sources_jar (check-anchors --all and build --all skip it): {why}"));
    }
    if report.verdict == Verdict::CarriesOverReview {
        write_worksheet(report, t)?;
    }
    let file = t.versions.display();
    crate::out::note(format!(
        "the new entry takes effect where okp reads {file}: pass it with --versions (okp --versions {file} show \
         --version {v}), or rebuild okp (cargo build --release): the okp binary embeds the versions.yaml it was \
         built with, so until then `okp show --version {v}` says it does not know {v}"
    ));
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# header\nschema: 1\nreleases:\n  - version: 1.0.0\n    family: f1\n    modes: [zk]\n    kraft_note: \"none\"\n    scala: 2.13.1\n    java_release: 8\n    sources:\n      core: g:kafka_2.13:1.0.0\n    jars:\n      zk: [core]\n    gradle_tasks:\n      zk: [\":core:jar\"]\n  # a comment about 3.0.0\n  - version: 3.0.0\n    family: f1\n    modes: [zk]\n    kraft_note: \"none\"\n    scala: 2.13.1\n    java_release: 8\n    sources:\n      core: g:kafka_2.13:3.0.0\n    jars:\n      zk: [core]\n    gradle_tasks:\n      zk: [\":core:jar\"]\n";

    fn matrix(text: &str) -> Matrix {
        Matrix::parse(&Origin::new("v.yaml", text)).unwrap()
    }

    #[test]
    fn an_entry_round_trips_through_the_parser() {
        let m = matrix(FILE);
        let mut r = m.releases[0].clone();
        r.version = KafkaVersion::new(2, 0, 0);
        r.sources.insert("core".into(), "g:kafka_2.13:2.0.0".parse().unwrap());
        let text = entry_text(&r);
        let block = &FILE[FILE.find("  - version: 1.0.0").unwrap()..FILE.find("  # a comment").unwrap()];
        assert_eq!(text, block.replace("1.0.0", "2.0.0"), "same layout as the file's own entries");
        let new = insert_entry(FILE, &m, r.version, &text);
        let parsed = matrix(&new);
        assert_eq!(
            parsed.releases.iter().map(|r| r.version.to_string()).collect::<Vec<_>>(),
            ["1.0.0", "2.0.0", "3.0.0"]
        );
        assert!(
            new.contains("  zk: [\":core:jar\"]\n  - version: 2.0.0\n"),
            "inserted above the next entry's comment:\n{new}"
        );
        assert!(new.contains("# a comment about 3.0.0\n  - version: 3.0.0"), "the comment stays with its entry");
        assert_eq!(new.replace(&text, ""), FILE, "nothing else changed");
    }

    #[test]
    fn no_sources_jar_is_written_and_read_back() {
        let mut r = matrix(FILE).releases[0].clone();
        r.version = KafkaVersion::new(2, 0, 0);
        r.sources.insert("core".into(), "g:kafka_2.13:2.0.0".parse().unwrap());
        r.no_sources_jar = Some("Maven Central has no \"sources\" jar: read from git /r at 4.4 (abc)".into());
        let text = insert_entry(FILE, &matrix(FILE), r.version, &entry_text(&r));
        let back = matrix(&text);
        let marked: Vec<String> = back
            .releases
            .iter()
            .filter(|x| x.no_sources_jar == r.no_sources_jar)
            .map(|x| x.version.to_string())
            .collect();
        assert_eq!(marked, ["2.0.0"], "{text}");
    }

    #[test]
    fn a_newest_release_goes_at_the_end() {
        let m = matrix(FILE);
        let new = insert_entry(FILE.trim_end_matches('\n'), &m, KafkaVersion::new(4, 0, 0), "  - version: 4.0.0\n");
        assert!(new.ends_with("[\":core:jar\"]\n  - version: 4.0.0\n"), "{new}");
    }

    #[test]
    fn scala_comes_from_the_scala_library_dependency() {
        let pom = "<project><dependencies><dependency><groupId>org.scala-lang</groupId><artifactId>scala-reflect</artifactId><version>9.9</version></dependency>\n<dependency>\n <groupId>org.scala-lang</groupId>\n <artifactId>scala-library</artifactId>\n <version>2.13.16</version>\n</dependency></dependencies></project>";
        assert_eq!(scala_from_pom(pom).as_deref(), Some("2.13.16"));
        assert_eq!(scala_from_pom("<project/>"), None);
        assert_eq!(
            scala_from_pom("<artifactId>scala-library</artifactId><version>${scala.version}</version></dependency>"),
            None
        );
    }
}
