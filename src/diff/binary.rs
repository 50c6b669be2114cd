//! `okp diff --binary`: a port verdict from the two releases' own jars, for a release Maven Central
//! publishes without sources jars (4.2.2, 4.3.2, 4.4.0) or as a second opinion on any port.
//!
//! The classes of every hooked and guarded file are read from both releases' binary jars
//! (`proof::owned_by`: by package and `SourceFile`), their synthetic names canonicalised per file
//! (`synthetic`, and javac's lambda names in `bytecode`), and compared member by member with the
//! provenance proofs' normalisation (`classfile::compare`): constant-pool order, instruction
//! encoding and debug information do not count, every change to a member's code, constants,
//! calls or flags does.
//!
//! Each anchor is placed in the old release's members by its source line: the old release's
//! sources (which `okp diff` reads anyway) give the method that holds the anchor, its jar's
//! `LineNumberTable`s give the members whose code lies in that method (the method itself, its
//! lambdas and local functions). A hook whose members are the same program in the new release
//! carries; one whose members changed is a review item; one whose members are gone does not carry.
//! A guarded region is placed the same way. The new release's line numbers come from its own line
//! tables: a member whose lines all moved by the same amount moved the anchor by that amount.
//!
//! With a source of the new release as well (a tag, a branch snapshot), `check_source` says
//! where that source is not the release, without compiling: members the release has and the
//! source lacks, and members whose text is the old release's where the release changed them (or
//! differs where the release did not).
//!
//! What this does not prove: an anchor's exact text in the new release (there is no source to
//! match it in); that a build of the new release from some tree reproduces its classes (`okp
//! build`'s source = release proof does that).
//!
//! Not here: reading jars and class files (`build::jar`, `build::bytecode`), rendering
//! (`diff::render`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::{GuardStatus, Verdict};
use crate::anchor::{self, ScopeKind};
use crate::build::{jar, proof, synthetic};
use crate::error::{Error, Result};
use crate::jvm::classfile::{self, Class, LineTables, MemberId};
use crate::model::{Anchor, Guard};
use crate::version::KafkaVersion;

/// One class of a release's jar, read for comparison.
#[derive(Clone, Debug)]
pub struct ReadClass {
    /// The repository path of the source file it came from.
    pub file: String,
    /// Its real internal name (`org/apache/kafka/controller/ReplicationControlManager$1`).
    pub real: String,
    pub class: Class,
    pub lines: LineTables,
}

/// The classes of the watched files in one release's jars, keyed by canonical internal name.
#[derive(Clone, Debug, Default)]
pub struct Release {
    pub version: Option<KafkaVersion>,
    /// The jars read (`org.apache.kafka:kafka-metadata:4.3.2`).
    pub jars: Vec<String>,
    pub classes: BTreeMap<String, ReadClass>,
}

impl Release {
    fn of_file<'a>(&'a self, file: &'a str) -> impl Iterator<Item = (&'a String, &'a ReadClass)> + 'a {
        self.classes.iter().filter(move |(_, c)| c.file == file)
    }
}

/// Reads the classes of `files` from `jars` (module directory of the repository, `core` or
/// `metadata` -> (coordinate, jar path)). Files in a module no jar is given for are returned as
/// not compared.
pub fn read_release(
    version: Option<KafkaVersion>,
    jars: &BTreeMap<String, (String, PathBuf)>,
    files: &BTreeSet<String>,
) -> Result<(Release, Vec<String>)> {
    let mut by_module: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut not_compared = Vec::new();
    for f in files {
        let module = f.split('/').next().unwrap_or_default();
        if jars.contains_key(module) {
            by_module.entry(module).or_default().push(f.as_str());
        } else {
            not_compared.push(f.clone());
        }
    }
    let mut out = Release { version, ..Release::default() };
    for (module, files) in by_module {
        let (coordinate, path) = &jars[module];
        out.jars.push(coordinate.clone());
        let entries = jar::entries(path)?;
        let owned = proof::owned_by(&entries, &files)?;
        let mut per_file: BTreeMap<String, BTreeMap<String, (Class, LineTables)>> = BTreeMap::new();
        for (name, (file, bytes)) in owned {
            let (class, lines) = classfile::read_with_lines(bytes)
                .map_err(|e| Error::External(format!("{}!{name}: cannot read the class file: {e}", path.display())))?;
            per_file.entry(file).or_default().insert(class.name.clone(), (class, lines));
        }
        for (file, read) in per_file {
            let mut classes: BTreeMap<String, Class> = read.iter().map(|(k, (c, _))| (k.clone(), c.clone())).collect();
            let canonical = synthetic::canonicalise(&mut classes);
            // The line tables' keys name classes in descriptors too: rename them the same way.
            let renames: BTreeMap<String, String> =
                canonical.real.iter().map(|(c, r)| (r.clone(), c.clone())).collect();
            for (name, class) in classes {
                let real = canonical.real.get(&name).cloned().unwrap_or_else(|| name.clone());
                let lines = read
                    .get(&real)
                    .map(|(_, l)| l.iter().map(|(k, v)| (synthetic::rename_classes(k, &renames), v.clone())).collect())
                    .unwrap_or_default();
                out.classes.insert(name, ReadClass { file: file.clone(), real, class, lines });
            }
        }
    }
    Ok((out, not_compared))
}

/// How one class of the watched files differs between the two releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClassStatus {
    Unchanged,
    Changed,
    Added,
    Removed,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ClassPort {
    /// The class's internal name in the new release (in the old one when removed).
    pub class: String,
    pub file: String,
    pub status: ClassStatus,
    /// Members only the new release has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// Members only the old release has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Members both have whose normalised code, flags or attributes differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

/// What became of one member that holds a hook site or guarded code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemberStatus {
    Unchanged,
    Changed,
    Gone,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SiteMember {
    /// `ReplicationControlManager$LeaderAcceptor`.
    pub class: String,
    /// `method test(int)`.
    pub member: String,
    pub status: MemberStatus,
    /// First and last line of its code in the old release (its line table).
    pub from_lines: [u32; 2],
    /// The same in the new release, when it has the member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_lines: Option<[u32; 2]>,
    /// Every line of its table moved by this much (absent: the lines moved unevenly, or it is gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shift: Option<i64>,
}

/// One anchor's verdict from the bytecode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteVerdict {
    /// Every member holding the site is the same program in the new release.
    Carries,
    /// A member holding the site changed (or none could be placed): read the release's change.
    Review,
    /// A member holding the site is not in the new release.
    Gone,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SitePort {
    pub anchor: String,
    pub file: String,
    pub hooks: Vec<String>,
    /// 1-based line in the old release's sources.
    pub from_line: usize,
    /// The method (or type) holding it in the old release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    pub verdict: SiteVerdict,
    /// The anchor's line in the new release, from its line tables (the holding member's shift).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_line: Option<usize>,
    pub members: Vec<SiteMember>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct GuardBinary {
    pub guard: String,
    pub hook: String,
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub status: GuardStatus,
    /// The members of the region that changed or went (`Class: method m(int)`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl GuardBinary {
    pub fn needs_review(&self) -> bool {
        self.status != GuardStatus::Unchanged
    }
}

/// What a source of the new release holds against the release's own bytecode, for one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Finding {
    /// The release has the member; the source has no definition of that name.
    Lacks,
    /// The release changed the member; the source's text of it is the old release's.
    OldShape,
    /// The release did not change the member; the source's text of it differs from the old release's.
    OtherShape,
    /// Both changed it: which is right needs a compile (`okp build --git`'s proof says).
    BothChanged,
    /// The release no longer has the member; the source still defines it.
    Extra,
}

impl Finding {
    pub fn as_str(&self) -> &'static str {
        match self {
            Finding::Lacks => "lacks",
            Finding::OldShape => "old-shape",
            Finding::OtherShape => "other-shape",
            Finding::BothChanged => "both-changed",
            Finding::Extra => "extra",
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SourceFinding {
    pub file: String,
    pub class: String,
    pub member: String,
    pub finding: Finding,
    /// The member's first and last line in the release (its line table), where it has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_lines: Option<[u32; 2]>,
    /// 1-based line of the source's definition, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_line: Option<usize>,
}

/// A source of the new release checked against the release's bytecode.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SourceCheck {
    /// What the source is (`git REPO at 4.3 (0157ac7cf2)`).
    pub source: String,
    /// The version its gradle.properties declares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared: Option<String>,
    /// Release members compared (each with a definition of its name in the source).
    pub compared: usize,
    pub findings: Vec<SourceFinding>,
}

impl SourceCheck {
    /// The source is the release's, as far as its text and the release's bytecode can tell.
    pub fn agrees(&self) -> bool {
        self.findings.is_empty()
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct BinaryReport {
    /// The jars compared, per side.
    pub from_jars: Vec<String>,
    pub to_jars: Vec<String>,
    pub verdict: Verdict,
    /// Every class of the hooked and guarded files, in either release.
    pub classes: Vec<ClassPort>,
    pub sites: Vec<SitePort>,
    pub guards: Vec<GuardBinary>,
    /// Watched files in a module whose jar is not compared.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_compared: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_check: Option<SourceCheck>,
}

/// `org/apache/kafka/controller/ReplicationControlManager$LeaderAcceptor` -> `ReplicationControlManager$LeaderAcceptor`.
fn simple(class: &str) -> &str {
    class.rsplit('/').next().unwrap_or(class)
}

fn range(lines: &[u32]) -> Option<[u32; 2]> {
    Some([*lines.first()?, *lines.last()?])
}

/// The common shift of two line tables, when every line moved by the same amount.
fn shift(a: &[u32], b: &[u32]) -> Option<i64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let d = i64::from(b[0]) - i64::from(a[0]);
    a.iter().zip(b).all(|(x, y)| i64::from(*y) - i64::from(*x) == d).then_some(d)
}

/// Per class of the watched files: added, removed and changed members.
pub fn compare_classes(old: &Release, new: &Release) -> Vec<ClassPort> {
    let names: BTreeSet<&String> = old.classes.keys().chain(new.classes.keys()).collect();
    names
        .into_iter()
        .map(|name| match (old.classes.get(name), new.classes.get(name)) {
            (Some(a), Some(b)) => {
                let d = classfile::compare(&a.class, &b.class);
                let show = |v: &[MemberId]| v.iter().map(|m| m.to_string()).collect::<Vec<_>>();
                ClassPort {
                    class: b.real.clone(),
                    file: b.file.clone(),
                    status: if d.is_empty() { ClassStatus::Unchanged } else { ClassStatus::Changed },
                    added: show(&d.only_b),
                    removed: show(&d.only_a),
                    changed: show(&d.differ),
                }
            }
            (Some(a), None) => ClassPort {
                class: a.real.clone(),
                file: a.file.clone(),
                status: ClassStatus::Removed,
                added: Vec::new(),
                removed: Vec::new(),
                changed: Vec::new(),
            },
            (None, Some(b)) => ClassPort {
                class: b.real.clone(),
                file: b.file.clone(),
                status: ClassStatus::Added,
                added: Vec::new(),
                removed: Vec::new(),
                changed: Vec::new(),
            },
            (None, None) => unreachable!("a name from one of the two maps"),
        })
        .collect()
}

/// A method's name without its signature, scalac's `$adapted` and its counters
/// (`$anonfun$f$5:(…)V` -> `$anonfun$f`): what stays when a lambda is renumbered.
fn family(key: &str) -> &str {
    let mut n = key.split(':').next().unwrap_or_default();
    loop {
        let before = n;
        n = n.strip_suffix("$adapted").unwrap_or(n);
        if let Some((head, tail)) = n.rsplit_once('$') {
            if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) && !head.is_empty() {
                n = head;
            }
        }
        if n == before {
            return n;
        }
    }
}

/// The members of `file`'s classes in `old` whose code lies in the 1-based lines `[s, e]`, each
/// looked up in `new`.
fn members_in(old: &Release, new: &Release, file: &str, s: u32, e: u32) -> Vec<SiteMember> {
    let mut out = Vec::new();
    for (name, c) in old.of_file(file) {
        for (key, lines) in &c.lines {
            if !lines.iter().any(|l| (s..=e).contains(l)) {
                continue;
            }
            let Some(from_lines) = range(lines) else { continue };
            let id = MemberId::method(key);
            let (status, to) = match new.classes.get(name).map(|n| (n.class.methods.get(key), n)) {
                Some((Some(m), n)) => {
                    let same = c.class.methods.get(key) == Some(m);
                    let status = if same { MemberStatus::Unchanged } else { MemberStatus::Changed };
                    (status, n.lines.get(key).map(Vec::as_slice))
                }
                // Another signature of the same name (a parameter's type moved, a lambda renumbered):
                // changed, not gone.
                Some((None, n)) if n.class.methods.keys().any(|k| family(k) == family(key)) => {
                    (MemberStatus::Changed, None)
                }
                _ => (MemberStatus::Gone, None),
            };
            out.push(SiteMember {
                class: simple(&c.real).to_string(),
                member: id.to_string(),
                status,
                from_lines,
                to_lines: to.and_then(range),
                shift: to.and_then(|t| shift(lines, t)),
            });
        }
    }
    out.sort_by(|a, b| (a.from_lines, &a.class, &a.member).cmp(&(b.from_lines, &b.class, &b.member)));
    out
}

/// The class-level differences (header, attributes) of the type `name` in `file`, for a site that
/// is a type (its declaration line).
fn type_members(old: &Release, new: &Release, file: &str, name: &str) -> Vec<SiteMember> {
    let mut out = Vec::new();
    for (canonical, c) in old.of_file(file) {
        let s = simple(&c.real);
        if s != name && !s.ends_with(&format!("${name}")) {
            continue;
        }
        let (status, label) = match new.classes.get(canonical) {
            None => (MemberStatus::Gone, "class".to_string()),
            Some(n) => {
                let d = classfile::compare(&c.class, &n.class);
                let class_level: Vec<String> =
                    d.all().into_iter().filter(|m| m.kind == classfile::Kind::Class).map(|m| m.to_string()).collect();
                if class_level.is_empty() {
                    (MemberStatus::Unchanged, "class header and attributes".to_string())
                } else {
                    (MemberStatus::Changed, class_level.join(", "))
                }
            }
        };
        out.push(SiteMember {
            class: s.to_string(),
            member: label,
            status,
            from_lines: [0, 0],
            to_lines: None,
            shift: None,
        });
    }
    out
}

/// The anchors of the old release, each placed in its members and judged.
pub fn sites(anchors: &[&Anchor], old_files: &super::Files, old: &Release, new: &Release) -> Result<Vec<SitePort>> {
    let placed = super::compare(anchors, None, old_files, old_files).map_err(|broken| {
        Error::Usage(format!("the old tree does not hold its own patch set:\n  {}", broken.join("\n  ")))
    })?;
    let mut out = Vec::new();
    for (a, p) in anchors.iter().zip(placed) {
        let text = old_files.get(&a.file).cloned().flatten().unwrap_or_default();
        let lines = anchor::lines(&text);
        let at = p.from_line - 1;
        let len = a.pattern.display_lines().len().max(1);
        // The site: the scope the anchor names as `enclosing`, else the innermost one, the
        // anchor's own line counting when it defines a method (`def isLeader: Boolean = …`).
        let scopes = anchor::scopes(&lines, at, anchor::definition(lines[at]).is_some());
        let named = a.enclosing.as_deref().and_then(|n| scopes.iter().find(|(i, _, _)| lines[*i].contains(n)));
        let site = named.or(scopes.first()).cloned();
        let mut members = Vec::new();
        let mut note = None;
        let (first, last) = (p.from_line as u32, (p.from_line + len - 1) as u32);
        match &site {
            Some((header, kind, name)) => {
                let end = anchor::block_end(&lines, *header);
                if *kind == ScopeKind::Type {
                    // A type's site: its header and attributes (super class, interfaces, nest), and
                    // its code; in a large type only the code on the anchor's own lines.
                    members = type_members(old, new, &a.file, name);
                    let (s, e) = if end - header > super::engine::MAX_REGION {
                        (first, last)
                    } else {
                        (*header as u32 + 1, end as u32 + 1)
                    };
                    members.extend(members_in(old, new, &a.file, s, e));
                } else {
                    members = members_in(old, new, &a.file, *header as u32 + 1, end as u32 + 1);
                }
            }
            None => note = Some("no method or type holds the anchor in the old sources".to_string()),
        }
        if members.is_empty() && note.is_none() {
            note = Some(format!(
                "no code of the old release's jar lies in {}: nothing to compare",
                p.site.clone().unwrap_or_else(|| "the site".into())
            ));
        }
        let verdict = if members.iter().any(|m| m.status == MemberStatus::Gone) {
            SiteVerdict::Gone
        } else if members.is_empty() || members.iter().any(|m| m.status == MemberStatus::Changed) {
            SiteVerdict::Review
        } else {
            SiteVerdict::Carries
        };
        // The anchor's own member: the one whose lines come closest around it (innermost).
        let line = p.from_line as u32;
        let holder = members
            .iter()
            .filter(|m| m.from_lines[0] != 0)
            .filter(|m| m.from_lines[0] <= line + len as u32 && line <= m.from_lines[1] + 1)
            .min_by_key(|m| m.from_lines[1] - m.from_lines[0])
            .or_else(|| members.iter().find(|m| m.from_lines[0] != 0));
        let to_line = match verdict {
            SiteVerdict::Gone => None,
            _ => holder.and_then(|m| m.shift).map(|d| (p.from_line as i64 + d) as usize),
        };
        out.push(SitePort {
            anchor: a.id.clone(),
            file: a.file.clone(),
            hooks: a.hooks.clone(),
            from_line: p.from_line,
            site: p.site,
            verdict,
            to_line,
            members,
            note,
        });
    }
    Ok(out)
}

/// The guarded regions of the old release, each placed in its members and judged.
pub fn guards(guards: &[&Guard], old_files: &super::Files, old: &Release, new: &Release) -> Vec<GuardBinary> {
    guards
        .iter()
        .map(|g| {
            let mut r = GuardBinary {
                guard: g.id.clone(),
                hook: g.hook.clone(),
                file: g.file.clone(),
                method: g.method.clone(),
                status: GuardStatus::Unlocated,
                changed: Vec::new(),
                note: None,
            };
            let Some(text) = old_files.get(&g.file).cloned().flatten() else {
                r.note = Some(format!("{} is not in the old tree: nothing to compare", g.file));
                return r;
            };
            let lines = anchor::lines(&text);
            let (s, e) = match super::engine::guard_region(&lines, g.method.as_deref()) {
                Ok(region) => region,
                Err(why) => {
                    r.note = Some(format!("in the old tree {why}: nothing to compare"));
                    return r;
                }
            };
            let members = members_in(old, new, &g.file, s as u32 + 1, e as u32 + 1);
            let mut changed: Vec<String> = members
                .iter()
                .filter(|m| m.status != MemberStatus::Unchanged)
                .map(|m| {
                    let gone = if m.status == MemberStatus::Gone { " (gone)" } else { "" };
                    format!("{}: {}{gone}", m.class, m.member)
                })
                .collect();
            if g.method.is_none() {
                // The whole file: its classes' headers and attributes, and classes added or removed.
                for p in compare_classes(old, new).into_iter().filter(|p| p.file == g.file) {
                    let c = simple(&p.class).to_string();
                    match p.status {
                        ClassStatus::Added => changed.push(format!("{c}: class added")),
                        ClassStatus::Removed => changed.push(format!("{c}: class removed")),
                        _ => changed.extend(
                            p.added
                                .iter()
                                .chain(&p.removed)
                                .chain(p.changed.iter().filter(|m| m.starts_with("class") || m.starts_with("field")))
                                .map(|m| format!("{c}: {m}")),
                        ),
                    }
                }
                changed.sort();
                changed.dedup();
            }
            if members.is_empty() && g.method.is_some() {
                r.note = Some("no code of the old release's jar lies in the region: nothing to compare".into());
                return r;
            }
            r.status = if changed.is_empty() { GuardStatus::Unchanged } else { GuardStatus::Changed };
            r.changed = changed;
            r
        })
        .collect()
}

fn verdict_of(sites: &[SitePort], guards: &[GuardBinary]) -> Verdict {
    if sites.iter().any(|s| s.verdict == SiteVerdict::Gone) {
        Verdict::Drift
    } else if sites.iter().any(|s| s.verdict == SiteVerdict::Review) || guards.iter().any(GuardBinary::needs_review) {
        Verdict::CarriesOverReview
    } else {
        Verdict::CarriesOver
    }
}

/// The whole binary comparison.
pub fn report(
    anchors: &[&Anchor],
    guard_list: &[&Guard],
    old_files: &super::Files,
    old: &Release,
    new: &Release,
    not_compared: Vec<String>,
) -> Result<BinaryReport> {
    let sites = sites(anchors, old_files, old, new)?;
    let guards = guards(guard_list, old_files, old, new);
    Ok(BinaryReport {
        from_jars: old.jars.clone(),
        to_jars: new.jars.clone(),
        verdict: verdict_of(&sites, &guards),
        classes: compare_classes(old, new),
        sites,
        guards,
        not_compared,
        source_check: None,
    })
}

/// Whether a method name is one a source file defines by that name (not a lambda body, an
/// accessor scalac or javac makes, or an initialiser).
fn written(name: &str) -> bool {
    !name.contains('$') && !name.starts_with('<')
}

/// The definition blocks of methods named `name` in `lines`: (0-based header, text of the block).
fn blocks<'a>(lines: &[&'a str], name: &str) -> Vec<(usize, Vec<&'a str>)> {
    (0..lines.len())
        .filter(|&i| anchor::definition(lines[i]).is_some_and(|(k, n)| k == ScopeKind::Method && n == name))
        .map(|i| (i, lines[i..=anchor::block_end(lines, i)].to_vec()))
        .collect()
}

/// How many parameters a definition's header declares (every parameter list, generics and
/// default values skipped): what tells overloads of one name apart without compiling.
fn arity(lines: &[&str], header: usize) -> usize {
    let (mut depth, mut angle, mut n, mut any) = (0i32, 0i32, 0usize, false);
    let mut seen_paren = false;
    for l in lines.iter().skip(header).take(20) {
        for c in l.chars() {
            match c {
                '(' => {
                    depth += 1;
                    seen_paren = true;
                }
                ')' => {
                    if depth == 1 {
                        n += usize::from(any);
                        any = false;
                    }
                    depth -= 1;
                }
                '<' | '[' if depth >= 1 => angle += 1,
                '>' | ']' if depth >= 1 => angle -= 1,
                ',' if depth == 1 && angle == 0 => {
                    n += 1;
                    any = false;
                }
                '{' | '=' | ';' if depth == 0 && seen_paren => return n,
                c if depth == 1 && !c.is_whitespace() => any = true,
                _ => {}
            }
        }
        if depth == 0 && seen_paren && (l.trim_end().ends_with('{') || l.contains('=')) {
            return n;
        }
    }
    n
}

/// The parameter count of a method descriptor.
fn desc_arity(key: &str) -> usize {
    let desc = key.split_once(':').map_or("", |(_, d)| d);
    let p = classfile::pretty_params(desc);
    if p.is_empty() {
        0
    } else {
        p.split(", ").count()
    }
}

/// `blocks` of the overload of `key` (its name and parameter count).
fn overloads<'a>(lines: &[&'a str], key: &str) -> Vec<(usize, Vec<&'a str>)> {
    let name = key.split(':').next().unwrap_or_default();
    let want = desc_arity(key);
    blocks(lines, name).into_iter().filter(|(h, _)| arity(lines, *h) == want).collect()
}

/// The old source's block of the method holding the member whose code starts at 1-based `first`.
fn old_block<'a>(lines: &[&'a str], first: u32, name: &str) -> Option<Vec<&'a str>> {
    let at = (first as usize).checked_sub(1).filter(|&i| i < lines.len())?;
    let (header, _, _) =
        anchor::scopes(lines, at, true).into_iter().find(|(_, k, n)| *k == ScopeKind::Method && n == name)?;
    Some(lines[header..=anchor::block_end(lines, header)].to_vec())
}

/// Checks a source of the new release against the release's bytecode, file by file: members the
/// release has that the source lacks, members whose text is the old release's where the release
/// changed them, or differs where it did not. Compiles nothing.
pub fn check_source(
    source: String,
    declared: Option<String>,
    old_files: &super::Files,
    new_files: &super::Files,
    old: &Release,
    new: &Release,
) -> SourceCheck {
    let mut findings = Vec::new();
    let mut compared = 0;
    let files: BTreeSet<&String> = new.classes.values().map(|c| &c.file).collect();
    for file in files {
        let old_text = old_files.get(file).cloned().flatten().unwrap_or_default();
        let old_lines = anchor::lines(&old_text);
        let src_text = new_files.get(file).cloned().flatten().unwrap_or_default();
        let src_lines = anchor::lines(&src_text);
        let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
        for (canonical, c) in new.of_file(file) {
            let before = old.classes.get(canonical);
            for (key, lines) in &c.lines {
                let id = MemberId::method(key);
                let name = id.name().to_string();
                if !written(&name) {
                    continue;
                }
                let push = |f: Finding, line: Option<usize>, findings: &mut Vec<SourceFinding>| {
                    findings.push(SourceFinding {
                        file: file.clone(),
                        class: simple(&c.real).to_string(),
                        member: id.to_string(),
                        finding: f,
                        release_lines: range(lines),
                        source_line: line,
                    })
                };
                let was = before.and_then(|b| Some((b.class.methods.get(key)?, b.lines.get(key)?.first()?)));
                // A member both releases have counts only where the old source defines its name
                // (scalac's forwarders and accessors have no definition of their own).
                if was.is_some() && overloads(&old_lines, key).is_empty() {
                    continue;
                }
                let theirs = overloads(&src_lines, key);
                if theirs.is_empty() {
                    push(Finding::Lacks, None, &mut findings);
                    continue;
                }
                compared += 1;
                // New in the release and defined in the source: its shape needs a compile.
                let Some((was, old_first)) = was else { continue };
                let Some(old_text) = old_block(&old_lines, *old_first, &name) else { continue };
                let same_as_old = theirs.iter().find(|(_, t)| *t == old_text).map(|(i, _)| i + 1);
                let release_changed = c.class.methods.get(key) != Some(was);
                // One finding per source definition and kind (overloads share a block's name).
                let first_line = theirs[0].0 + 1;
                match (release_changed, same_as_old) {
                    (true, Some(l)) => push(Finding::OldShape, Some(l), &mut findings),
                    (true, None) => push(Finding::BothChanged, Some(first_line), &mut findings),
                    (false, None) if seen.insert((name.clone(), "other".into())) => {
                        push(Finding::OtherShape, Some(first_line), &mut findings)
                    }
                    _ => {}
                }
            }
        }
        // Members the release no longer has that the source still defines.
        for (canonical, c) in old.of_file(file) {
            for key in c.lines.keys() {
                let id = MemberId::method(key);
                let name = id.name();
                let gone = new.classes.get(canonical).is_none_or(|n| !n.class.methods.contains_key(key));
                let renamed =
                    new.of_file(file).any(|(_, n)| n.class.methods.keys().any(|k| k.split(':').next() == Some(name)));
                if written(name) && gone && !renamed && !overloads(&old_lines, key).is_empty() {
                    if let Some((i, _)) = overloads(&src_lines, key).first() {
                        findings.push(SourceFinding {
                            file: file.clone(),
                            class: simple(&c.real).to_string(),
                            member: id.to_string(),
                            finding: Finding::Extra,
                            release_lines: None,
                            source_line: Some(i + 1),
                        });
                    }
                }
            }
        }
    }
    findings.sort_by(|a, b| (&a.file, a.release_lines, &a.member).cmp(&(&b.file, b.release_lines, &b.member)));
    SourceCheck { source, declared, compared, findings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_is_one_amount_for_every_line() {
        assert_eq!(shift(&[10, 12, 15], &[40, 42, 45]), Some(30));
        assert_eq!(shift(&[10, 12, 15], &[40, 43, 45]), None);
        assert_eq!(shift(&[10, 12], &[10, 12, 13]), None);
        assert_eq!(shift(&[], &[]), None);
    }

    #[test]
    fn overloads_are_told_apart_by_their_parameter_count() {
        let src = "class R {\n  static void v(CreateTopicsRequestData request, int n) {\n    x();\n  }\n  void v(\n      List<Map<String, Integer>> topics) {\n    y();\n  }\n  def s(a: Int, b: Map[Int, Int] = Map())(implicit c: C): Unit = {\n  }\n  def t: Int = 1\n}\n";
        let lines = anchor::lines(src);
        assert_eq!((arity(&lines, 1), arity(&lines, 4), arity(&lines, 7), arity(&lines, 9)), (2, 1, 3, 0));
        assert_eq!(overloads(&lines, "v:(Ljava/util/List;)V").iter().map(|(h, _)| *h).collect::<Vec<_>>(), [4]);
        assert_eq!(desc_arity("v:(Lx/Y;I[J)V"), 3);
    }

    #[test]
    fn a_renumbered_lambda_is_of_the_same_family() {
        assert_eq!(family("$anonfun$fetchOffsetForTimestamp$5:()V"), "$anonfun$fetchOffsetForTimestamp");
        assert_eq!(family("$anonfun$f$1$adapted:(I)V"), "$anonfun$f");
        assert_eq!(family("<init>:(I)V"), "<init>");
        assert_eq!(family("lambda$createTopic$3:()V"), "lambda$createTopic");
    }

    #[test]
    fn written_names_are_those_a_source_defines() {
        assert!(written("createPartitions"));
        for n in ["lambda$createPartitions$0", "$anonfun$maybeExpandIsr$1", "<init>", "<clinit>", "access$000"] {
            assert!(!written(n), "{n}");
        }
    }
}
