//! Renders results for people (table), machines (json) and CI (junit).
//! Pure: every function returns a String; the CLI decides where it goes.
//!
//! The check-anchors JSON (`--format json`, and check-anchors.json of
//! `--evidence`) is `AnchorsJson`, schema 1 (`ANCHORS_JSON_SCHEMA`). okp does
//! not read it back; CI and scripts that do should check `schema`.
//!
//! Not here: running the checks (`check`), the diff reports (`diff::render`).

use std::fmt::Write;

use crate::check::{AnchorResult, Report, Status, TargetResult};
use crate::model::Matrix;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Junit,
}

pub fn check_report(report: &Report, format: Format, verbose: bool) -> String {
    match format {
        Format::Table => check_table(report, verbose),
        Format::Json => check_json(report),
        Format::Junit => check_junit(report),
    }
}

fn count(report: &Report) -> (usize, usize) {
    let total = report.targets.iter().map(|t| t.anchors.len()).sum();
    let bad = report.targets.iter().flat_map(|t| &t.anchors).filter(|a| a.status != Status::Ok).count();
    (total, bad)
}

fn check_table(report: &Report, verbose: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{:<8} {:<6} {:<8} {:>7}  result", "release", "mode", "family", "anchors");
    for t in &report.targets {
        let good = t.anchors.iter().filter(|a| a.status == Status::Ok).count();
        let result = match &t.skipped {
            Some(why) => format!("skipped: {why}"),
            None if t.ok() => "ok".to_string(),
            None => "DRIFT".to_string(),
        };
        let rules = t.rules_from.map(|v| format!(" (anchors of {v})")).unwrap_or_default();
        let _ = writeln!(
            s,
            "{:<8} {:<6} {:<8} {:>7}  {result}{rules}",
            t.release.to_string(),
            t.mode.as_str(),
            t.family,
            format!("{good}/{}", t.anchors.len())
        );
        if verbose {
            for a in &t.anchors {
                let at = a.lines.iter().map(|l| format!("{}:{l}", a.file)).collect::<Vec<_>>().join(", ");
                let _ = writeln!(
                    s,
                    "    {:<12} {:<48} {}",
                    a.status.as_str(),
                    a.anchor,
                    if at.is_empty() { a.file.clone() } else { at }
                );
            }
        }
    }
    // One block per (release, anchor): an anchor that drifted in both modes
    // drifted once, so say it once and name both modes.
    let mut shown: Vec<(String, &str)> = Vec::new();
    for t in &report.targets {
        for a in t.anchors.iter().filter(|a| a.status != Status::Ok) {
            let key = (t.release.to_string(), a.anchor.as_str());
            if shown.contains(&key) {
                continue;
            }
            shown.push(key);
            let modes: Vec<&str> = report
                .targets
                .iter()
                .filter(|u| {
                    u.release == t.release && u.anchors.iter().any(|b| b.anchor == a.anchor && b.status != Status::Ok)
                })
                .map(|u| u.mode.as_str())
                .collect();
            s.push('\n');
            s.push_str(&drift_detail(t, a, &modes.join(", ")));
        }
    }
    let (total, bad) = count(report);
    let checks = report.targets.iter().filter(|t| t.skipped.is_none()).count();
    let skipped = report.targets.len() - checks;
    s.push('\n');
    if skipped > 0 {
        let _ = writeln!(s, "{skipped} (release, mode) pair(s) skipped: no sources to check (see above)");
    }
    if bad == 0 {
        let _ = writeln!(s, "{checks} (release, mode) checks, {total} anchors: every anchor matched exactly once");
    } else {
        let failing = report.targets.iter().filter(|t| !t.ok()).count();
        let _ = writeln!(s, "{checks} (release, mode) checks, {total} anchors: {bad} drifted in {failing} check(s)");
    }
    s
}

/// The block a maintainer reads to see what upstream changed at one anchor.
pub fn drift_detail(t: &TargetResult, a: &AnchorResult, modes: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "DRIFT {} {modes}: anchor `{}` (hooks: {})", t.release, a.anchor, a.hooks.join(", "));
    let _ = writeln!(s, "  source: {}", t.source);
    let _ = writeln!(s, "  file:   {}", a.file);
    let expected = a.expected.iter().map(|l| format!("      | {l}\n")).collect::<String>();
    match a.status {
        Status::Ok => {}
        Status::FileMissing => {
            let _ = writeln!(s, "  the file does not exist in this tree; expected it to hold:");
            s.push_str(&expected);
        }
        Status::Ambiguous => {
            let at = a.lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ");
            let _ = writeln!(s, "  expected exactly once, found {} times, at lines {at}:", a.lines.len());
            s.push_str(&expected);
        }
        Status::Misplaced => {
            let _ = writeln!(
                s,
                "  found once, at line {}, but not inside `{}`:",
                a.lines[0],
                a.enclosing.as_deref().unwrap_or("?")
            );
            s.push_str(&expected);
            match &a.enclosed_by {
                Some((line, text)) => {
                    let _ = writeln!(s, "  it now sits in line {line}: {text}");
                }
                None => {
                    let _ = writeln!(s, "  it now sits at the top level of the file");
                }
            }
        }
        Status::Missing => {
            let _ = writeln!(s, "  expected exactly once, found 0 times:");
            s.push_str(&expected);
            if a.candidates.is_empty() {
                let _ = writeln!(s, "  no line in the file resembles it (similarity below 50%)");
            } else {
                let _ = writeln!(s, "  closest candidates (- expected, + found):");
                for c in &a.candidates {
                    let hint = c.hint.as_deref().map(|h| format!("  {h}")).unwrap_or_default();
                    let _ = writeln!(s, "    line {}  similarity {:.0}%{hint}", c.line, c.score * 100.0);
                    s.push_str(&line_diff(&a.expected, &c.text));
                }
            }
        }
    }
    s
}

/// `- expected` / `+ found` lines for the lines that differ, `  ` for the same.
fn line_diff(expected: &[String], found: &[String]) -> String {
    let old = expected.join("\n") + "\n";
    let new = found.join("\n") + "\n";
    let diff = similar::TextDiff::from_lines(&old, &new);
    let mut s = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => "-",
            similar::ChangeTag::Insert => "+",
            similar::ChangeTag::Equal => " ",
        };
        let _ = writeln!(s, "      {sign} {}", change.value().trim_end_matches('\n'));
    }
    s
}

/// The schema of the check-anchors JSON.
pub const ANCHORS_JSON_SCHEMA: u32 = 1;

/// The check-anchors report for machines, schema 1: the totals, then every (release, mode) checked.
#[derive(Debug, serde::Serialize)]
pub struct AnchorsJson<'a> {
    pub schema: u32,
    /// Every anchor of every checked (release, mode) matched exactly once.
    pub ok: bool,
    /// (release, mode) pairs checked.
    pub checks: usize,
    /// (release, mode) pairs skipped (no sources to check).
    pub skipped: usize,
    /// Anchors looked up, over all pairs.
    pub anchors: usize,
    /// Anchors that did not match exactly once.
    pub drifted: usize,
    pub targets: &'a [TargetResult],
}

impl<'a> AnchorsJson<'a> {
    pub fn of(report: &'a Report) -> AnchorsJson<'a> {
        let (total, bad) = count(report);
        let skipped = report.targets.iter().filter(|t| t.skipped.is_some()).count();
        AnchorsJson {
            schema: ANCHORS_JSON_SCHEMA,
            ok: report.ok(),
            checks: report.targets.len() - skipped,
            skipped,
            anchors: total,
            drifted: bad,
            targets: &report.targets,
        }
    }
}

fn check_json(report: &Report) -> String {
    crate::schema::to_json(&AnchorsJson::of(report))
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn check_junit(report: &Report) -> String {
    let (total, bad) = count(report);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(s, "<testsuites name=\"okp check-anchors\" tests=\"{total}\" failures=\"{bad}\">");
    for t in &report.targets {
        let fails = t.anchors.iter().filter(|a| a.status != Status::Ok).count();
        let _ = writeln!(
            s,
            "  <testsuite name=\"{} {}\" tests=\"{}\" failures=\"{fails}\">",
            t.release,
            t.mode,
            t.anchors.len()
        );
        for a in &t.anchors {
            let _ = write!(
                s,
                "    <testcase classname=\"okp.anchors.{}.{}\" name=\"{}\"",
                t.release,
                t.mode,
                xml(&a.anchor)
            );
            if a.status == Status::Ok {
                s.push_str("/>\n");
            } else {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    a.status.as_str(),
                    xml(&drift_detail(t, a, t.mode.as_str()))
                );
            }
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

pub fn versions_table(m: &Matrix) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<8} {:<9} {:<8} {:<8} {:<5} jars replaced (zk | kraft)",
        "release", "modes", "family", "scala", "java"
    );
    let mut notes: Vec<String> = Vec::new();
    for r in &m.releases {
        let modes = r.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(",");
        let jars = |mode| {
            r.jars
                .get(&mode)
                .map(|j: &Vec<String>| {
                    j.iter().filter_map(|d| r.sources.get(d).map(|c| c.artifact.clone())).collect::<Vec<_>>().join("+")
                })
                .unwrap_or_else(|| "-".into())
        };
        let note = match &r.kraft_note {
            Some(n) => {
                let i = notes.iter().position(|x| x == n).unwrap_or_else(|| {
                    notes.push(n.clone());
                    notes.len() - 1
                });
                format!(" [{}]", i + 1)
            }
            None => String::new(),
        };
        let java = match r.java_release_metadata {
            Some(m) if m != r.java_release => format!("{}/{m}", r.java_release),
            _ => r.java_release.to_string(),
        };
        let _ = writeln!(
            s,
            "{:<8} {:<9} {:<8} {:<8} {:<5} {} | {}{note}",
            r.version.to_string(),
            modes,
            r.family,
            r.scala,
            java,
            jars(crate::model::Mode::Zk),
            jars(crate::model::Mode::Kraft)
        );
    }
    if !notes.is_empty() {
        s.push_str("\nno kraft mode:\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(s, "  [{}] {n}", i + 1);
        }
    }
    let _ = writeln!(
        s,
        "\n{} releases, {} (release, mode) pairs",
        m.releases.len(),
        m.releases.iter().map(|r| r.modes.len()).sum::<usize>()
    );
    s
}

/// The matrix as JSON: the releases, and every (release, mode) pair with its `sources` and
/// `reference` flags (`Matrix::pairs`), so CI and scripts take pairs without expanding modes
/// themselves.
pub fn versions_json(m: &Matrix) -> String {
    let pairs = m.pairs(crate::model::PairFilter::default());
    serde_json::to_string_pretty(&serde_json::json!({ "releases": m.releases, "pairs": pairs })).unwrap_or_default()
        + "\n"
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`, for evidence stamps.
pub fn utc_now() -> String {
    utc(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Status;
    use crate::model::Mode;
    use crate::version::KafkaVersion;

    fn sample() -> Report {
        let anchor = |id: &str, status, lines: Vec<usize>| AnchorResult {
            anchor: id.into(),
            hooks: vec!["promotion-gate".into()],
            file: "core/src/main/scala/kafka/cluster/Partition.scala".into(),
            status,
            lines,
            expected: vec!["  private def canAddReplicaToIsr(followerReplicaId: Int): Boolean = {".into()],
            candidates: vec![],
            enclosing: None,
            enclosed_by: None,
        };
        let target = |mode, skipped: Option<&str>, anchors| TargetResult {
            release: KafkaVersion::new(3, 9, 2),
            mode,
            family: "f3.7".into(),
            source: "Maven Central release 3.9.2".into(),
            rules_from: None,
            skipped: skipped.map(str::to_string),
            anchors,
        };
        Report {
            targets: vec![
                target(
                    Mode::Zk,
                    None,
                    vec![
                        anchor("partition.can-add", Status::Ok, vec![806]),
                        anchor("isr.filter", Status::Missing, vec![]),
                    ],
                ),
                target(Mode::Kraft, Some("no sources jar on Maven Central"), vec![]),
            ],
        }
    }

    #[test]
    fn check_anchors_json_serialized_form() {
        let json = check_report(&sample(), Format::Json, false);
        insta::assert_snapshot!(json);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!((v["schema"].as_u64(), v["ok"].as_bool(), v["drifted"].as_u64()), (Some(1), Some(false), Some(1)));
    }
}
