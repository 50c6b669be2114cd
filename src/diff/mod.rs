//! `okp diff`: what upstream changed, between two releases, at every anchor
//! and hook of the patch set, so porting to a new release is reading one
//! report and making the decisions it lists.
//!
//! The engine (`compare`) is a pure function over the hooked files' text of
//! both releases: per anchor it says unchanged, moved, changed (with the
//! upstream change around the site as a unified diff), gone or ambiguous, and,
//! where the anchor no longer holds, ranks re-anchoring candidates by text
//! similarity and by structure (same enclosing method, same class). Thin
//! adapters read the trees and list the git commits that touched each hooked
//! file. Rendering is in `diff/render.rs`; the versions.yaml entry and the
//! porting worksheet `--write` produces are in `diff/write.rs`; the verdict
//! from the two releases' own jars (`--binary`, and a release without sources
//! jars) is in `diff/binary.rs`.
//!
//! Not here: which flags pick the trees (see `cli`), matching rules (see `anchor`).

pub mod binary;
pub mod render;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::anchor::{self, ScopeKind};
use crate::error::{Error, Result};
use crate::model::{Anchor, AnchorSet, Guard, Mode, Pattern, Release};
use crate::source::SourceTree;
use crate::version::KafkaVersion;

/// What happened to one anchor's site between the two releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteStatus {
    /// Holds at the same line; the code around it is the same.
    Unchanged,
    /// Holds at another line; the code around it is the same.
    Moved,
    /// The code around the site changed (the anchor may still hold: see `carries`).
    Changed,
    /// The file, or the method holding the site, is not in the new release.
    Gone,
    /// The anchor matches more than once in the new release.
    Ambiguous,
}

impl SiteStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            SiteStatus::Unchanged => "unchanged",
            SiteStatus::Moved => "moved",
            SiteStatus::Changed => "changed",
            SiteStatus::Gone => "gone",
            SiteStatus::Ambiguous => "ambiguous",
        }
    }
}

/// A place in the new release that could take a lost anchor, with the
/// components of its score.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ranked {
    /// 1-based line of the candidate's first line in the new release.
    pub line: usize,
    pub text: Vec<String>,
    /// Text similarity to the anchor, in [0, 1].
    pub similarity: f64,
    /// Inside a method of the same name as the old site's.
    pub same_method: bool,
    /// Inside a type of the same name as the old site's class.
    pub same_class: bool,
    /// `SIMILARITY_WEIGHT * similarity + (1 - SIMILARITY_WEIGHT) * structure`,
    /// structure being the mean of same_method and same_class.
    pub score: f64,
    /// The innermost method or type around the candidate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// One anchor of the old release's patch set, looked up in the new one.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AnchorPort {
    pub anchor: String,
    pub file: String,
    pub hooks: Vec<String>,
    pub status: SiteStatus,
    /// The anchor matches exactly once in the new release, inside its
    /// enclosing method: the edit applies there as it is.
    pub carries: bool,
    /// 1-based line in the old release.
    pub from_line: usize,
    /// 1-based lines of every match in the new release.
    pub to_lines: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<i64>,
    pub expected: Vec<String>,
    /// The method (or type) that holds the site in the old release: `def getOutOfSyncReplicas`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// Where that method is in the new release (1-based line), if it still exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_to_line: Option<usize>,
    /// A sentence on what happened, when the status alone does not say it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The upstream change around the site: unified-diff lines with the files' line numbers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
    /// Changed lines elsewhere in the file that call the site (unified-diff lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Ranked>,
    /// Set when anchors.yaml's release range for this anchor excludes the new release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range_note: Option<String>,
    /// With the bytecode comparison: the anchor's line in the new release itself, from its line
    /// tables (the lines above are the new tree's, which may be a snapshot and not the release).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_line: Option<usize>,
}

impl AnchorPort {
    /// Whether a human must look: the anchor does not carry, the code around
    /// it or a call of it changed, or the manifest's range stops before the new release.
    pub fn needs_review(&self) -> bool {
        !self.carries || self.status == SiteStatus::Changed || !self.callers.is_empty() || self.range_note.is_some()
    }
}

/// One hook of the contract the old release carries.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HookPort {
    pub hook: String,
    pub scope: crate::model::anchors::Scope,
    pub site: String,
    /// Anchors that serve it in the old release (anchors.yaml `from`/`to`).
    pub anchors: Vec<String>,
    /// Every one of them holds in the new release.
    pub has_site: bool,
    /// The code around one of its sites changed.
    pub changed: bool,
}

/// A commit between the two git revisions that touched a hooked file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Commit {
    pub id: String,
    pub date: String,
    pub author: String,
    pub summary: String,
}

/// One hooked file in both releases.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FilePort {
    pub file: String,
    pub in_from: bool,
    pub in_to: bool,
    /// Lines added and removed between the two releases.
    pub added: usize,
    pub removed: usize,
    /// With two git revisions: the commits that touched the file, newest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits: Option<Vec<Commit>>,
}

/// One side of the comparison.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Side {
    /// The release whose number the tree carries (None: a snapshot tree with no --to).
    pub version: Option<KafkaVersion>,
    /// What the tree is (`Maven Central release 4.2.1 (...)`, `git REPO at REV (...)`).
    pub source: String,
    /// The version the tree's gradle.properties declares, when it is not a release's sources jars
    /// (`8.3.2-0-ccs` for a branch snapshot of Confluent's mirror).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared: Option<String>,
}

impl Side {
    pub fn label(&self) -> String {
        self.version.map(|v| v.to_string()).unwrap_or_else(|| "the new tree".into())
    }
}

/// What happened to a guarded region (anchors.yaml `guards`) between the two releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GuardStatus {
    /// The same text (it may have moved).
    Unchanged,
    /// The text differs: read the diff, a path around the hook may have opened.
    Changed,
    /// The file, or the method, is not in the new release (or not once).
    Gone,
    /// Not found once in the old tree: nothing to compare (a partial tree, or a guard that does
    /// not fit the old release).
    Unlocated,
}

impl GuardStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            GuardStatus::Unchanged => "unchanged",
            GuardStatus::Changed => "changed",
            GuardStatus::Gone => "gone",
            GuardStatus::Unlocated => "unlocated",
        }
    }
}

/// One guard of the old release's hooks, compared.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GuardPort {
    pub guard: String,
    pub hook: String,
    pub file: String,
    /// The guarded method's header text; absent: the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub why: String,
    pub status: GuardStatus,
    /// 1-based first line of the region in each release, where found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The upstream change of the region: unified-diff lines with the files' line numbers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
    /// anchors.yaml ends the guard before the new release (`to`), so its going is expected.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retired: bool,
}

impl GuardPort {
    /// Whether a human must look: the region changed, or went although anchors.yaml still covers
    /// the new release, or could not be compared.
    pub fn needs_review(&self) -> bool {
        match self.status {
            GuardStatus::Unchanged => false,
            GuardStatus::Gone => !self.retired,
            GuardStatus::Changed | GuardStatus::Unlocated => true,
        }
    }

    /// What the region is, for reports: `def maybeExpandIsr` or `the whole file`.
    pub fn region(&self) -> String {
        self.method.clone().unwrap_or_else(|| "the whole file".into())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every anchor holds and no site changed.
    CarriesOver,
    /// Every anchor holds, but code around some sites, calls of them or guarded code changed: read the diffs.
    CarriesOverReview,
    /// Some anchor does not hold: the patch set needs porting.
    Drift,
}

/// What the verdict rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// The two sides' sources, anchor by anchor.
    Sources,
    /// The two releases' jars alone (no source of the new release): `binary`.
    Bytecode,
    /// Both: the anchors in the new tree, and the members holding them in the release's jars.
    SourcesAndBytecode,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct DiffReport {
    pub from: Side,
    pub to: Side,
    pub basis: Basis,
    /// The old release's patch family and modes (what `--write` gives the new release).
    pub family: String,
    pub modes: Vec<Mode>,
    pub verdict: Verdict,
    pub anchors: Vec<AnchorPort>,
    pub hooks: Vec<HookPort>,
    /// The guards of the old release's hooks (anchors.yaml `guards`), compared.
    pub guards: Vec<GuardPort>,
    pub files: Vec<FilePort>,
    /// The comparison of the two releases' jars (`--binary`, or a new release without sources jars).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<binary::BinaryReport>,
}

impl DiffReport {
    /// Adds the bytecode comparison: each anchor gets the release's own line, the verdict is the
    /// worse of the two.
    pub fn with_binary(mut self, b: binary::BinaryReport) -> DiffReport {
        for a in &mut self.anchors {
            a.release_line = b.sites.iter().find(|s| s.anchor == a.anchor).and_then(|s| s.to_line);
        }
        self.verdict = self.verdict.max(b.verdict);
        self.basis = Basis::SourcesAndBytecode;
        self.binary = Some(b);
        self
    }

    /// A report from the bytecode alone: no source of the new release to match the anchors in.
    pub fn from_bytecode(
        model_anchors: &AnchorSet,
        rules: &Release,
        from: Side,
        to: Side,
        b: binary::BinaryReport,
    ) -> DiffReport {
        let from_version = from.version.unwrap_or(rules.version);
        let (_, hook_list) = patch_set(model_anchors, rules, from_version);
        let hooks = hook_list
            .iter()
            .map(|h| {
                let serving: Vec<&binary::SitePort> = b.sites.iter().filter(|s| s.hooks.contains(&h.id)).collect();
                HookPort {
                    hook: h.id.clone(),
                    scope: h.scope,
                    site: h.site.clone(),
                    anchors: serving.iter().map(|s| s.anchor.clone()).collect(),
                    has_site: !serving.is_empty() && serving.iter().all(|s| s.verdict != binary::SiteVerdict::Gone),
                    changed: serving.iter().any(|s| s.verdict == binary::SiteVerdict::Review),
                }
            })
            .collect();
        DiffReport {
            from,
            to,
            basis: Basis::Bytecode,
            family: rules.family.clone(),
            modes: rules.modes.clone(),
            verdict: b.verdict,
            anchors: Vec::new(),
            hooks,
            guards: Vec::new(),
            files: Vec::new(),
            binary: Some(b),
        }
    }

    fn verdict_of(anchors: &[AnchorPort], guards: &[GuardPort]) -> Verdict {
        if anchors.iter().any(|a| !a.carries || a.range_note.is_some()) {
            Verdict::Drift
        } else if anchors.iter().any(AnchorPort::needs_review) || guards.iter().any(GuardPort::needs_review) {
            Verdict::CarriesOverReview
        } else {
            Verdict::CarriesOver
        }
    }
}

/// How much a candidate's text similarity counts against its structure.
const SIMILARITY_WEIGHT: f64 = 0.6;
/// Candidates shown per lost anchor.
const CANDIDATES: usize = 3;
/// Lines less alike than this are not candidates, however well placed.
const MIN_SIMILARITY: f64 = 0.35;
/// Context lines around each change in a site's diff.
const CONTEXT: usize = 3;
/// A site longer than this (a whole class) is compared as a window around the anchor instead.
const MAX_REGION: usize = 300;
const WINDOW: usize = 20;

/// The hooked files of one release: repository path -> text (None: absent).
pub type Files = BTreeMap<String, Option<String>>;

/// The anchors and hooks the old release's patch set uses, over all its modes.
pub fn patch_set<'a>(
    anchors: &'a AnchorSet,
    rules: &Release,
    version: KafkaVersion,
) -> (Vec<&'a Anchor>, Vec<&'a crate::model::anchors::Hook>) {
    let mut ids = BTreeSet::new();
    let mut hook_ids = BTreeSet::new();
    for &m in &rules.modes {
        ids.extend(anchors.applicable(rules, version, m).into_iter().map(|a| a.id.as_str()));
        hook_ids.extend(anchors.hooks_for(rules, m).into_iter().map(|h| h.id.as_str()));
    }
    (
        anchors.anchors.iter().filter(|a| ids.contains(a.id.as_str())).collect(),
        anchors.hooks.iter().filter(|h| hook_ids.contains(h.id.as_str())).collect(),
    )
}

/// The guards of the hooks the old release carries (anchors.yaml `guards`).
pub fn guards<'a>(anchors: &'a AnchorSet, rules: &Release, version: KafkaVersion) -> Vec<&'a Guard> {
    anchors.guards_for(rules, version)
}

/// The files a port compares: every file the anchors and the guards name.
pub fn watched_files(anchors: &[&Anchor], guards: &[&Guard]) -> BTreeSet<String> {
    anchors.iter().map(|a| a.file.clone()).chain(guards.iter().map(|g| g.file.clone())).collect()
}

/// Reads the files from a tree.
pub fn read_files(tree: &dyn SourceTree, files: &BTreeSet<String>) -> Result<Files> {
    let mut out = Files::new();
    for f in files {
        out.insert(f.clone(), tree.read(f)?.map(|b| String::from_utf8_lossy(&b).into_owned()));
    }
    Ok(out)
}

/// The guarded region of a file: the whole file, or the block of the one definition whose header
/// holds `method` (0-based inclusive lines); Err says why it is not found once.
fn guard_region(lines: &[&str], method: Option<&str>) -> Result<(usize, usize), String> {
    let Some(m) = method else {
        return Ok((0, lines.len().saturating_sub(1)));
    };
    let headers: Vec<usize> =
        (0..lines.len()).filter(|&i| lines[i].contains(m) && anchor::definition(lines[i]).is_some()).collect();
    match headers.as_slice() {
        [i] => Ok((*i, anchor::block_end(lines, *i))),
        [] => Err(format!("no definition holds `{m}`")),
        many => Err(format!(
            "{} definitions hold `{m}` (lines {})",
            many.len(),
            many.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Compares each guarded region between the two releases' files.
pub fn compare_guards(guards: &[&Guard], to_version: Option<KafkaVersion>, from: &Files, to: &Files) -> Vec<GuardPort> {
    let to_label = to_version.map_or("the new tree".to_string(), |v| v.to_string());
    guards
        .iter()
        .map(|g| {
            let mut r = GuardPort {
                guard: g.id.clone(),
                hook: g.hook.clone(),
                file: g.file.clone(),
                method: g.method.clone(),
                why: g.why.clone(),
                status: GuardStatus::Unlocated,
                from_line: None,
                to_line: None,
                note: None,
                diff: Vec::new(),
                retired: to_version.zip(g.to).is_some_and(|(v, to)| v > to),
            };
            let ends = match (r.retired, g.to) {
                (true, Some(to)) => format!(" (anchors.yaml ends this guard at {to})"),
                _ => String::new(),
            };
            let Some(old_text) = from.get(&g.file).cloned().flatten() else {
                r.note = Some(format!("{} is not in the old tree: nothing to compare", g.file));
                return r;
            };
            let old = anchor::lines(&old_text);
            let (s1, e1) = match guard_region(&old, g.method.as_deref()) {
                Ok(region) => region,
                Err(why) => {
                    r.note = Some(format!("in the old tree {why}: nothing to compare"));
                    return r;
                }
            };
            r.from_line = Some(s1 + 1);
            let Some(new_text) = to.get(&g.file).cloned().flatten() else {
                r.status = GuardStatus::Gone;
                r.note = Some(format!("{} is not in {to_label}{ends}", g.file));
                return r;
            };
            let new = anchor::lines(&new_text);
            let (s2, e2) = match guard_region(&new, g.method.as_deref()) {
                Ok(region) => region,
                Err(why) => {
                    r.status = GuardStatus::Gone;
                    r.note = Some(format!("in {to_label} {why}{ends}"));
                    return r;
                }
            };
            r.to_line = Some(s2 + 1);
            let (o, n) = (&old[s1..=e1], &new[s2..=e2]);
            if o != n {
                r.status = GuardStatus::Changed;
                r.diff = region_diff(o, s1, n, s2, &r.region());
            } else {
                r.status = GuardStatus::Unchanged;
            }
            r
        })
        .collect()
}

/// The site of a match: the method or type that holds it (the match itself
/// when it is a header that opens a block), as (0-based header line, kind, name),
/// and the class around it.
struct Site {
    header: usize,
    name: String,
    kind: ScopeKind,
    class: Option<String>,
    /// 0-based inclusive range compared between the releases.
    range: (usize, usize),
}

fn site_of(lines: &[&str], at: usize, len: usize, enclosing: Option<&str>) -> Option<Site> {
    let opens_block = lines[at + len - 1].trim_end().ends_with('{');
    let scopes = anchor::scopes(lines, at, opens_block);
    // The hook's site is the scope the anchor names as `enclosing` (the
    // method or class the contract means), else the innermost one.
    let named = enclosing.and_then(|needle| scopes.iter().find(|(i, _, _)| lines[*i].contains(needle)));
    let (header, kind, name) = named.or(scopes.first()).cloned()?;
    let class = scopes
        .iter()
        .find(|(i, k, _)| *k == ScopeKind::Type && *i != header)
        .or_else(|| scopes.iter().find(|(_, k, _)| *k == ScopeKind::Type))
        .map(|(_, _, n)| n.clone());
    let end = anchor::block_end(lines, header);
    let range = if end - header + 1 > MAX_REGION {
        (at.saturating_sub(WINDOW), (at + len - 1 + WINDOW).min(lines.len() - 1))
    } else {
        (header, end)
    };
    Some(Site { header, name, kind, class, range })
}

/// The changes elsewhere in the file to lines that call (or construct) the
/// site: a caller that changed may route around a hook that still holds.
fn caller_changes(old: &[&str], new: &[&str], site: &Site, site_new: Option<&Site>) -> Vec<String> {
    let calls = |l: &str| {
        l.match_indices(&format!("{}(", site.name))
            .any(|(i, _)| !l[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            && anchor::definition(l).is_none_or(|(_, n)| n != site.name)
    };
    let inside = |i: usize, s: Option<&Site>| s.is_some_and(|s| (s.range.0..=s.range.1).contains(&i));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, old, new);
    let mut out = Vec::new();
    for group in similar::group_diff_ops(ops, CONTEXT) {
        let hit = group.iter().any(|op| match op.as_tag_tuple() {
            (similar::DiffTag::Equal, _, _) => false,
            (_, o, n) => {
                o.clone().any(|i| calls(old[i]) && !inside(i, Some(site)))
                    || n.clone().any(|i| calls(new[i]) && !inside(i, site_new))
            }
        });
        if hit {
            out.extend(render_group(&group, old, 0, new, 0, &format!("calls {}", site.name)));
        }
    }
    out
}

fn describe_site(kind: ScopeKind, name: &str) -> String {
    match kind {
        ScopeKind::Method => format!("method {name}"),
        ScopeKind::Type => format!("type {name}"),
    }
}

/// Where the old site's method is in the new release: a header with the same
/// name (in the same class, when there are several), closest to `near`.
fn find_site(lines: &[&str], old: &Site, near: usize) -> Option<Site> {
    let mut found: Vec<Site> = (0..lines.len())
        .filter(|&i| anchor::definition(lines[i]).is_some_and(|(k, n)| k == old.kind && n == old.name))
        .map(|i| {
            let end = anchor::block_end(lines, i);
            let class =
                anchor::scopes(lines, i, false).into_iter().find(|(_, k, _)| *k == ScopeKind::Type).map(|(_, _, n)| n);
            Site { header: i, name: old.name.clone(), kind: old.kind, class, range: (i, end.min(i + MAX_REGION)) }
        })
        .collect();
    if found.iter().any(|s| s.class == old.class) {
        found.retain(|s| s.class == old.class);
    }
    found.into_iter().min_by_key(|s| s.header.abs_diff(near))
}

/// The unified diff of two line ranges, hunk headers in file line numbers
/// and naming the site.
fn region_diff(old: &[&str], old_start: usize, new: &[&str], new_start: usize, label: &str) -> Vec<String> {
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, old, new);
    similar::group_diff_ops(ops, CONTEXT)
        .iter()
        .flat_map(|g| render_group(g, old, old_start, new, new_start, label))
        .collect()
}

/// One hunk: its header (1-based file lines, offset by where the slices start) and its lines.
fn render_group(
    group: &[similar::DiffOp],
    old: &[&str],
    old_start: usize,
    new: &[&str],
    new_start: usize,
    label: &str,
) -> Vec<String> {
    let (Some(first), Some(last)) = (group.first(), group.last()) else { return Vec::new() };
    let (os, oe) = (first.old_range().start, last.old_range().end);
    let (ns, ne) = (first.new_range().start, last.new_range().end);
    let mut out =
        vec![format!("@@ -{},{} +{},{} @@ {label}", old_start + os + 1, oe - os, new_start + ns + 1, ne - ns)];
    for op in group {
        for change in op.iter_changes(old, new) {
            let sign = match change.tag() {
                similar::ChangeTag::Equal => ' ',
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
            };
            out.push(format!("{sign}{}", change.value()));
        }
    }
    out
}

/// Lines added and removed between two texts.
fn churn(old: &[&str], new: &[&str]) -> (usize, usize) {
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, old, new);
    ops.iter().fold((0, 0), |(a, r), op| match op.as_tag_tuple() {
        (similar::DiffTag::Equal, _, _) => (a, r),
        (_, o, n) => (a + n.len(), r + o.len()),
    })
}

/// Ranks places in `lines` for a lost anchor: text similarity, then whether
/// the place sits in a method named like the old site and a class named like
/// the old class.
fn rank(lines: &[&str], pattern: &Pattern, old: Option<&Site>, extra: &[usize]) -> Vec<Ranked> {
    let mut pool = anchor::candidates(lines, pattern, 40, MIN_SIMILARITY);
    for &i in extra {
        if !pool.iter().any(|c| c.line == i + 1) {
            let k = pattern.display_lines().len().min(lines.len() - i);
            pool.push(anchor::Candidate {
                line: i + 1,
                score: 1.0,
                text: lines[i..i + k].iter().map(|s| s.to_string()).collect(),
                hint: None,
            });
        }
    }
    let mut ranked: Vec<Ranked> = pool
        .into_iter()
        .map(|c| {
            let scopes = anchor::scopes(lines, c.line - 1, true);
            let same_method = old.is_some_and(|o| scopes.iter().any(|(_, k, n)| *k == o.kind && *n == o.name));
            let same_class = old
                .and_then(|o| o.class.as_ref())
                .is_some_and(|cl| scopes.iter().any(|(_, k, n)| *k == ScopeKind::Type && n == cl));
            let structure = (f64::from(u8::from(same_method)) + f64::from(u8::from(same_class))) / 2.0;
            Ranked {
                line: c.line,
                text: c.text,
                similarity: c.score,
                same_method,
                same_class,
                score: SIMILARITY_WEIGHT * c.score + (1.0 - SIMILARITY_WEIGHT) * structure,
                scope: scopes.first().map(|(_, k, n)| describe_site(*k, n)),
                hint: c.hint,
            }
        })
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.line.cmp(&b.line)));
    ranked.truncate(CANDIDATES.max(extra.len()));
    ranked
}

/// Compares the old release's anchors in both releases' files. Fails (an
/// input error) when the old tree itself does not hold one of them: okp diff
/// starts from a release the patch set supports.
pub fn compare(
    anchors: &[&Anchor],
    to_version: Option<KafkaVersion>,
    from: &Files,
    to: &Files,
) -> Result<Vec<AnchorPort>, Vec<String>> {
    let split = |files: &'_ Files| -> BTreeMap<String, Option<Vec<String>>> {
        files
            .iter()
            .map(|(f, t)| (f.clone(), t.as_deref().map(|t| anchor::lines(t).into_iter().map(str::to_string).collect())))
            .collect()
    };
    let (old_files, new_files) = (split(from), split(to));
    let mut out = Vec::new();
    let mut broken = Vec::new();
    for a in anchors {
        let old_owned = old_files.get(&a.file).cloned().flatten().unwrap_or_default();
        let old: Vec<&str> = old_owned.iter().map(String::as_str).collect();
        let old_found = anchor::find(&old, &a.pattern);
        let holds_at = |lines: &[&str], found: &[usize]| match (found, &a.enclosing) {
            ([i], Some(needle)) => anchor::check_enclosing(lines, *i, needle).is_ok().then_some(*i),
            ([i], None) => Some(*i),
            _ => None,
        };
        let Some(at1) = holds_at(&old, &old_found) else {
            broken.push(format!(
                "anchor `{}` does not match exactly once in {} of the old tree (found {} times)",
                a.id,
                a.file,
                old_found.len()
            ));
            continue;
        };
        let len = a.pattern.display_lines().len().max(1);
        let site1 = site_of(&old, at1, len, a.enclosing.as_deref());
        let mut r = AnchorPort {
            anchor: a.id.clone(),
            file: a.file.clone(),
            hooks: a.hooks.clone(),
            status: SiteStatus::Gone,
            carries: false,
            from_line: at1 + 1,
            to_lines: Vec::new(),
            delta: None,
            expected: a.pattern.display_lines(),
            site: site1.as_ref().map(|s| describe_site(s.kind, &s.name)),
            site_to_line: None,
            note: None,
            diff: Vec::new(),
            callers: Vec::new(),
            candidates: Vec::new(),
            range_note: to_version.filter(|v| !a.covers(*v)).map(|v| match a.to {
                Some(to) => format!("anchors.yaml ends this anchor at {to} (`to: {to}`), before {v}"),
                None => format!("anchors.yaml starts this anchor at {} (`from`), after {v}", a.from),
            }),
            release_line: None,
        };
        let Some(new_owned) = new_files.get(&a.file).cloned().flatten() else {
            r.note = Some(format!(
                "{} is not in {}",
                a.file,
                to_version.map_or("the new tree".to_string(), |v| v.to_string())
            ));
            out.push(r);
            continue;
        };
        let new: Vec<&str> = new_owned.iter().map(String::as_str).collect();
        let found = anchor::find(&new, &a.pattern);
        r.to_lines = found.iter().map(|i| i + 1).collect();
        let at2 = holds_at(&new, &found);
        // The old site's code, and where it is now: at the match when the
        // anchor holds, else the method of the same name.
        let site2 = match (at2, &site1) {
            (Some(i), _) => site_of(&new, i, len, a.enclosing.as_deref()),
            (None, Some(s1)) => find_site(&new, s1, found.first().copied().unwrap_or(at1)),
            (None, None) => None,
        };
        r.site_to_line = site2.as_ref().map(|s| s.header + 1);
        let region = |lines: &'_ [&'_ str], s: &Option<Site>, at: usize| -> (usize, usize) {
            s.as_ref()
                .map(|s| s.range)
                .unwrap_or((at.saturating_sub(WINDOW), (at + len - 1 + WINDOW).min(lines.len().saturating_sub(1))))
        };
        let (s1, e1) = region(&old, &site1, at1);
        let site_changed = match (&site2, at2) {
            (Some(_), _) | (None, Some(_)) => {
                let (s2, e2) = region(&new, &site2, at2.unwrap_or(0));
                let (o, n) = (&old[s1..=e1], &new[s2..=e2]);
                let label = r.site.clone().unwrap_or_default();
                r.diff = region_diff(o, s1, n, s2, &label);
                o != n
            }
            (None, None) => false,
        };
        match (found.len(), at2) {
            (_, Some(i)) => {
                r.carries = true;
                r.delta = Some(i as i64 - at1 as i64);
                r.status = if site_changed {
                    SiteStatus::Changed
                } else if i == at1 {
                    SiteStatus::Unchanged
                } else {
                    SiteStatus::Moved
                };
            }
            (0, None) => {
                r.status = if site2.is_some() { SiteStatus::Changed } else { SiteStatus::Gone };
                if site2.is_none() {
                    r.diff.clear();
                    r.note = Some(match &r.site {
                        Some(s) => format!("the anchor and its {s} are no longer in {}", a.file),
                        None => format!("the anchor is no longer in {}", a.file),
                    });
                } else {
                    r.note = Some("the anchor text is gone; its method is still there".into());
                }
                r.candidates = rank(&new, &a.pattern, site1.as_ref(), &[]);
            }
            (1, None) => {
                r.status = SiteStatus::Changed;
                let now =
                    anchor::scopes(&new, found[0], false).into_iter().next().map(|(_, k, n)| describe_site(k, &n));
                r.note = Some(format!(
                    "found once, at line {}, but not inside `{}`{}",
                    found[0] + 1,
                    a.enclosing.as_deref().unwrap_or("?"),
                    now.map(|n| format!(": it now sits in {n}")).unwrap_or_default()
                ));
                r.candidates = rank(&new, &a.pattern, site1.as_ref(), &[]);
            }
            (_, None) => {
                r.status = SiteStatus::Ambiguous;
                r.note =
                    Some(format!("found {} times; candidates are the matches, ranked by their place", found.len()));
                r.candidates = rank(&new, &a.pattern, site1.as_ref(), &found);
            }
        }
        if r.carries && !site_changed {
            r.diff.clear();
        }
        if let Some(s1) = &site1 {
            r.callers = caller_changes(&old, &new, s1, site2.as_ref());
        }
        out.push(r);
    }
    if broken.is_empty() {
        Ok(out)
    } else {
        Err(broken)
    }
}

/// Per hook: the anchors that serve it in the old release, and whether it still has a site.
pub fn hooks(hooks: &[&crate::model::anchors::Hook], anchors: &[AnchorPort]) -> Vec<HookPort> {
    hooks
        .iter()
        .map(|h| {
            let serving: Vec<&AnchorPort> = anchors.iter().filter(|a| a.hooks.contains(&h.id)).collect();
            HookPort {
                hook: h.id.clone(),
                scope: h.scope,
                site: h.site.clone(),
                anchors: serving.iter().map(|a| a.anchor.clone()).collect(),
                has_site: !serving.is_empty() && serving.iter().all(|a| a.carries),
                changed: serving.iter().any(|a| a.status == SiteStatus::Changed),
            }
        })
        .collect()
}

/// Per hooked file: presence on both sides and the size of the change.
pub fn files(from: &Files, to: &Files) -> Vec<FilePort> {
    from.iter()
        .map(|(f, old)| {
            let new = to.get(f).cloned().flatten();
            let (added, removed) = match (old, &new) {
                (Some(o), Some(n)) => churn(&anchor::lines(o), &anchor::lines(n)),
                _ => (0, 0),
            };
            FilePort { file: f.clone(), in_from: old.is_some(), in_to: new.is_some(), added, removed, commits: None }
        })
        .collect()
}

/// Builds the whole report from the two sides' files.
pub fn report(
    model_anchors: &AnchorSet,
    rules: &Release,
    from: Side,
    to: Side,
    old: &Files,
    new: &Files,
) -> Result<DiffReport> {
    let from_version = from.version.unwrap_or(rules.version);
    let (anchors, hook_list) = patch_set(model_anchors, rules, from_version);
    let guard_list = guards(model_anchors, rules, from_version);
    let ported = compare(&anchors, to.version, old, new).map_err(|broken| {
        Error::Usage(format!(
            "{} does not hold the patch set of {from_version}, so there is nothing to port from:\n  {}\n(okp check-anchors on it says more)",
            from.source,
            broken.join("\n  ")
        ))
    })?;
    let guarded = compare_guards(&guard_list, to.version, old, new);
    Ok(DiffReport {
        basis: Basis::Sources,
        binary: None,
        verdict: DiffReport::verdict_of(&ported, &guarded),
        hooks: hooks(&hook_list, &ported),
        guards: guarded,
        files: files(old, new),
        family: rules.family.clone(),
        modes: rules.modes.clone(),
        anchors: ported,
        from,
        to,
    })
}

/// The commits between `from_rev` and `to_rev` (reachable from the second,
/// not the first) that changed each file, newest first; merges are skipped,
/// as `git log --no-merges FROM..TO -- FILE` does.
pub fn commits_touching(
    repo: &Path,
    from_rev: &str,
    to_rev: &str,
    files: &[String],
) -> Result<BTreeMap<String, Vec<Commit>>> {
    let git_err = |what: &str, e: git2::Error| Error::Source(format!("{}: {what}: {}", repo.display(), e.message()));
    let r = git2::Repository::open(repo).map_err(|e| Error::Tree {
        path: repo.to_path_buf(),
        msg: format!("is not a git repository: {}", e.message()),
    })?;
    let id = |rev: &str| -> Result<git2::Oid> {
        let obj =
            r.revparse_single(rev).map_err(|_| Error::Source(format!("{}: no revision `{rev}`", repo.display())))?;
        obj.peel_to_commit().map(|c| c.id()).map_err(|e| git_err(rev, e))
    };
    let (from_id, to_id) = (id(from_rev)?, id(to_rev)?);
    let mut walk = r.revwalk().map_err(|e| git_err("revwalk", e))?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME).map_err(|e| git_err("revwalk", e))?;
    walk.push(to_id).map_err(|e| git_err(to_rev, e))?;
    walk.hide(from_id).map_err(|e| git_err(from_rev, e))?;
    let blob = |tree: &git2::Tree, f: &str| tree.get_path(Path::new(f)).ok().map(|e| e.id());
    let mut out: BTreeMap<String, Vec<Commit>> = files.iter().map(|f| (f.clone(), Vec::new())).collect();
    for oid in walk {
        let oid = oid.map_err(|e| git_err("revwalk", e))?;
        let c = r.find_commit(oid).map_err(|e| git_err("commit", e))?;
        if c.parent_count() != 1 {
            continue;
        }
        let tree = c.tree().map_err(|e| git_err("tree", e))?;
        let parent = c.parent(0).and_then(|p| p.tree()).map_err(|e| git_err("parent", e))?;
        for f in files {
            if blob(&tree, f) != blob(&parent, f) {
                let commit = Commit {
                    id: oid.to_string()[..10].to_string(),
                    date: crate::report::utc(c.time().seconds())[..10].to_string(),
                    author: c.author().name().unwrap_or("?").to_string(),
                    summary: c.summary().unwrap_or("").to_string(),
                };
                out.entry(f.clone()).or_default().push(commit);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor(id: &str, text: &str, enclosing: Option<&str>) -> Anchor {
        Anchor {
            id: id.into(),
            file: "P.scala".into(),
            pattern: Pattern::Lines(text.split('\n').map(str::to_string).collect()),
            from: KafkaVersion::new(1, 0, 0),
            to: None,
            hooks: vec!["h".into()],
            why: "test".into(),
            enclosing: enclosing.map(str::to_string),
            line: 1,
        }
    }

    fn files(text: &str) -> Files {
        [("P.scala".to_string(), Some(text.to_string()))].into_iter().collect()
    }

    const OLD: &str =
        "class P {\n  def a(): Unit = {\n    val x = 1\n    go(x)\n  }\n\n  def b(): Unit = {\n    val y = 2\n  }\n}\n";

    fn one(a: &Anchor, new: &str) -> AnchorPort {
        compare(&[a], None, &files(OLD), &files(new)).unwrap().remove(0)
    }

    #[test]
    fn same_text_is_unchanged_and_shifted_text_is_moved() {
        let a = anchor("x", "    go(x)", Some("def a"));
        let r = one(&a, OLD);
        assert_eq!((r.status, r.carries, r.delta), (SiteStatus::Unchanged, true, Some(0)));
        assert!(r.diff.is_empty());
        let r = one(&a, &OLD.replace("class P {\n", "class P {\n  // new\n  // lines\n"));
        assert_eq!((r.status, r.carries, r.delta), (SiteStatus::Moved, true, Some(2)));
        assert_eq!(r.site.as_deref(), Some("method a"));
    }

    #[test]
    fn a_change_in_the_method_is_changed_even_when_the_anchor_holds() {
        let a = anchor("x", "    go(x)", Some("def a"));
        let r = one(&a, &OLD.replace("val x = 1", "val x = compute()"));
        assert_eq!((r.status, r.carries), (SiteStatus::Changed, true));
        assert!(
            r.diff.iter().any(|l| l == "-    val x = 1") && r.diff.iter().any(|l| l == "+    val x = compute()"),
            "{:?}",
            r.diff
        );
        assert!(r.diff[0].starts_with("@@ -2,"), "hunk headers use file line numbers: {}", r.diff[0]);
        // A change in another method does not touch this site.
        let r = one(&a, &OLD.replace("val y = 2", "val y = 3"));
        assert_eq!(r.status, SiteStatus::Unchanged);
    }

    #[test]
    fn a_lost_anchor_ranks_the_line_in_the_same_method_first() {
        let a = anchor("x", "    go(x)", Some("def a"));
        // b gets the more similar line, a keeps a less similar one: structure decides.
        let new = OLD.replace("    go(x)", "    go(x, true)").replace("    val y = 2", "    val y = 2\n    go(x )");
        let r = one(&a, &new);
        assert_eq!((r.status, r.carries), (SiteStatus::Changed, false));
        let best = &r.candidates[0];
        assert_eq!((best.line, best.same_method, best.same_class), (4, true, true), "{:?}", r.candidates);
        assert!(r.candidates.iter().any(|c| !c.same_method && c.similarity > best.similarity));
    }

    #[test]
    fn a_removed_file_or_method_is_gone_and_a_double_match_is_ambiguous() {
        let a = anchor("x", "    go(x)", Some("def a"));
        let none: Files = [("P.scala".to_string(), None)].into_iter().collect();
        let r = compare(&[&a], None, &files(OLD), &none).unwrap().remove(0);
        assert_eq!((r.status, r.carries), (SiteStatus::Gone, false));
        let r = one(&a, "class P {\n  def c(): Unit = {\n    stop()\n  }\n}\n");
        assert_eq!(r.status, SiteStatus::Gone);
        let b = anchor("y", "    val y = 2", None);
        let r = one(&b, &OLD.replace("val x = 1", "val y = 2"));
        assert_eq!((r.status, r.carries, r.to_lines.clone()), (SiteStatus::Ambiguous, false, vec![3, 8]));
        assert_eq!(r.candidates[0].line, 8, "the match in the old method ranks first: {:?}", r.candidates);
    }

    fn guard(method: Option<&str>) -> Guard {
        Guard {
            id: "g".into(),
            hook: "h".into(),
            file: "P.scala".into(),
            method: method.map(str::to_string),
            from: KafkaVersion::new(1, 0, 0),
            to: None,
            why: "test".into(),
        }
    }

    fn guarded(g: &Guard, old: &Files, new: &Files) -> GuardPort {
        compare_guards(&[g], Some(KafkaVersion::new(2, 0, 0)), old, new).remove(0)
    }

    #[test]
    fn a_guarded_method_is_compared_alone_wherever_it_moved() {
        let g = guard(Some("def b"));
        let moved = OLD.replace("class P {\n", "class P {\n  // new\n").replace("val x = 1", "val x = 2");
        let r = guarded(&g, &files(OLD), &files(&moved));
        assert_eq!((r.status, r.from_line, r.to_line), (GuardStatus::Unchanged, Some(7), Some(8)), "{r:?}");
        assert!(r.diff.is_empty());
        let r = guarded(&g, &files(OLD), &files(&OLD.replace("val y = 2", "val y = peek()")));
        assert_eq!(r.status, GuardStatus::Changed);
        assert_eq!(r.diff[0], "@@ -7,3 +7,3 @@ def b", "hunk headers in file lines, naming the region");
        assert!(r.diff.contains(&"+    val y = peek()".to_string()), "{:?}", r.diff);
        // Without a method the whole file is the region.
        let r = guarded(&guard(None), &files(OLD), &files(&moved));
        assert_eq!((r.status, r.region().as_str()), (GuardStatus::Changed, "the whole file"));
    }

    #[test]
    fn a_guard_not_found_once_is_gone_or_unlocated() {
        let g = guard(Some("def b"));
        let none: Files = [("P.scala".to_string(), None)].into_iter().collect();
        let r = guarded(&g, &files(OLD), &none);
        assert_eq!((r.status, r.needs_review()), (GuardStatus::Gone, true));
        assert_eq!(r.note.as_deref(), Some("P.scala is not in 2.0.0"));
        // Gone where anchors.yaml ends the guard: expected, nothing to review.
        let ended = Guard { to: Some(KafkaVersion::new(1, 5, 0)), ..g.clone() };
        let r = guarded(&ended, &files(OLD), &none);
        assert_eq!((r.status, r.retired, r.needs_review()), (GuardStatus::Gone, true, false));
        assert_eq!(r.note.as_deref(), Some("P.scala is not in 2.0.0 (anchors.yaml ends this guard at 1.5.0)"));
        let r = guarded(&g, &files(OLD), &files(&OLD.replace("def b()", "def c()")));
        assert_eq!((r.status, r.note.as_deref()), (GuardStatus::Gone, Some("in 2.0.0 no definition holds `def b`")));
        let twice = OLD.replace("def a()", "def b()");
        let r = guarded(&g, &files(&twice), &files(OLD));
        assert_eq!(r.status, GuardStatus::Unlocated);
        assert!(r.note.as_deref().unwrap().contains("2 definitions hold `def b` (lines 2, 7)"), "{r:?}");
        let r = guarded(&g, &none, &files(OLD));
        assert_eq!(r.status, GuardStatus::Unlocated);
        // A call of the method is not its definition.
        let r = guarded(&guard(Some("go(")), &files(OLD), &files(OLD));
        assert_eq!(r.status, GuardStatus::Unlocated);
    }

    #[test]
    fn an_old_tree_without_the_anchor_is_refused() {
        let a = anchor("x", "    nowhere()", None);
        let err = compare(&[&a], None, &files(OLD), &files(OLD)).unwrap_err();
        assert!(err[0].contains("anchor `x`"), "{err:?}");
    }
}
