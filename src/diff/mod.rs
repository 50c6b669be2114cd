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
pub mod engine;
pub mod render;
pub mod write;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::anchor;
use crate::error::{Error, Result};
use crate::model::{Anchor, AnchorSet, Guard, Mode, Release};
use crate::source::SourceTree;
use crate::version::KafkaVersion;

pub use engine::{compare, compare_guards};

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
                (Some(o), Some(n)) => engine::churn(&anchor::lines(o), &anchor::lines(n)),
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
