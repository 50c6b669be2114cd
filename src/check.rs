//! `okp check-anchors`: runs every applicable anchor of a (release, mode)
//! against one source tree and records, per anchor, whether it matched
//! exactly once, where, and what resembles it when it did not.

use std::collections::{BTreeMap, BTreeSet};

use crate::anchor::{self, Candidate};
use crate::error::Result;
use crate::model::{AnchorSet, Layers, Mode, Release};
use crate::source::SourceTree;
use crate::version::KafkaVersion;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    /// No match: upstream changed or removed the line.
    Missing,
    /// More than one match: an edit would be ambiguous.
    Ambiguous,
    /// One match, but not inside the method or class it belongs to.
    Misplaced,
    /// The anchored file does not exist in this tree.
    FileMissing,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Ambiguous => "ambiguous",
            Status::Misplaced => "misplaced",
            Status::FileMissing => "file-missing",
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct AnchorResult {
    pub anchor: String,
    pub hooks: Vec<String>,
    pub file: String,
    pub status: Status,
    /// 1-based line numbers of every match.
    pub lines: Vec<usize>,
    pub expected: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    /// For `misplaced`: the text that should enclose the match, and the definition that does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enclosing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enclosed_by: Option<(usize, String)>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct TargetResult {
    pub release: KafkaVersion,
    pub mode: Mode,
    pub family: String,
    pub source: String,
    /// Set when the tree is newer than the matrix: whose anchors were checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules_from: Option<KafkaVersion>,
    /// Why nothing was checked (no sources to check), when so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub anchors: Vec<AnchorResult>,
}

impl TargetResult {
    pub fn ok(&self) -> bool {
        self.anchors.iter().all(|a| a.status == Status::Ok)
    }
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Report {
    pub targets: Vec<TargetResult>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.targets.iter().all(TargetResult::ok)
    }
}

/// How many resembling lines a report shows for a missing anchor.
const CANDIDATES: usize = 3;
/// Lines less alike than this are not worth showing.
const MIN_SIMILARITY: f64 = 0.5;

/// A row saying a (release, mode) could not be checked, and why.
pub fn skipped(release: &Release, mode: Mode, why: &str) -> TargetResult {
    TargetResult {
        release: release.version,
        mode,
        family: release.family.clone(),
        source: String::new(),
        rules_from: None,
        skipped: Some(why.to_string()),
        anchors: Vec::new(),
    }
}

/// Checks `tree` as release `version` in each of `modes`, using the mode
/// rules of `rules` (the release itself, or the newest known one for a
/// release newer than the matrix).
pub fn check_tree(
    anchors: &AnchorSet,
    rules: &Release,
    version: KafkaVersion,
    modes: &[Mode],
    layers: &Layers,
    tree: &dyn SourceTree,
) -> Result<Vec<TargetResult>> {
    let per_mode: Vec<(Mode, Vec<&crate::model::Anchor>)> =
        modes.iter().map(|&m| (m, anchors.applicable_in(rules, version, m, layers))).collect();
    let files: BTreeSet<&str> = per_mode.iter().flat_map(|(_, a)| a.iter().map(|a| a.file.as_str())).collect();
    let mut texts: BTreeMap<&str, Option<String>> = BTreeMap::new();
    for f in files {
        texts.insert(f, tree.read(f)?.map(|b| String::from_utf8_lossy(&b).into_owned()));
    }
    let split: BTreeMap<&str, Option<Vec<&str>>> =
        texts.iter().map(|(f, t)| (*f, t.as_deref().map(anchor::lines))).collect();

    let mut out = Vec::new();
    for (mode, list) in per_mode {
        let mut results = Vec::with_capacity(list.len());
        for a in list {
            let lines = split.get(a.file.as_str()).and_then(Option::as_ref);
            results.push(check_one(a, lines.map(Vec::as_slice)));
        }
        out.push(TargetResult {
            release: version,
            mode,
            family: rules.family.clone(),
            source: tree.describe(),
            rules_from: (rules.version != version).then_some(rules.version),
            skipped: None,
            anchors: results,
        });
    }
    Ok(out)
}

fn check_one(a: &crate::model::Anchor, lines: Option<&[&str]>) -> AnchorResult {
    let mut r = AnchorResult {
        anchor: a.id.clone(),
        hooks: a.hooks.clone(),
        file: a.file.clone(),
        status: Status::Ok,
        lines: Vec::new(),
        expected: a.pattern.display_lines(),
        candidates: Vec::new(),
        enclosing: a.enclosing.clone(),
        enclosed_by: None,
    };
    let Some(lines) = lines else {
        r.status = Status::FileMissing;
        return r;
    };
    let found = anchor::find(lines, &a.pattern);
    r.lines = found.iter().map(|i| i + 1).collect();
    r.status = match found.len() {
        0 => {
            r.candidates = anchor::candidates(lines, &a.pattern, CANDIDATES, MIN_SIMILARITY);
            Status::Missing
        }
        1 => match &a.enclosing {
            Some(needle) => match anchor::check_enclosing(lines, found[0], needle) {
                Ok(()) => Status::Ok,
                Err(by) => {
                    r.enclosed_by = by.map(|(i, l)| (i + 1, l.trim().to_string()));
                    Status::Misplaced
                }
            },
            None => Status::Ok,
        },
        _ => Status::Ambiguous,
    };
    r
}
