//! The comparison behind `okp diff`: per anchor, where its site went in the new release (unchanged,
//! moved, changed with the upstream change around it as a unified diff, gone, ambiguous) and, where
//! it no longer holds, re-anchoring candidates ranked by text similarity and structure; per guard,
//! whether its guarded region changed. Pure functions over both releases' hooked files.
//!
//! Not here: the report's types, reading the trees and git (`diff`), rendering (`render`).

use std::collections::BTreeMap;

use crate::anchor::{self, ScopeKind};
use crate::error::Result;
use crate::model::{Anchor, Guard, Pattern};
use crate::version::KafkaVersion;

use super::*;

/// How much a candidate's text similarity counts against its structure.
pub(super) const SIMILARITY_WEIGHT: f64 = 0.6;
/// Candidates shown per lost anchor.
const CANDIDATES: usize = 3;
/// Lines less alike than this are not candidates, however well placed.
const MIN_SIMILARITY: f64 = 0.35;
/// Context lines around each change in a site's diff.
const CONTEXT: usize = 3;
/// A site longer than this (a whole class) is compared as a window around the anchor instead.
pub(super) const MAX_REGION: usize = 300;
const WINDOW: usize = 20;

/// The guarded region of a file: the whole file, or the block of the one definition whose header
/// holds `method` (0-based inclusive lines); Err says why it is not found once.
pub(super) fn guard_region(lines: &[&str], method: Option<&str>) -> Result<(usize, usize), String> {
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
pub(super) fn churn(old: &[&str], new: &[&str]) -> (usize, usize) {
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
