//! `okp diff` reports: a terminal table (diffs coloured only when asked),
//! markdown ready for a pull request, json for machines, and the porting
//! worksheet. Pure: every function returns a String.
//!
//! The json is `DiffReport` with a `schema` field first, schema 1
//! (`JSON_SCHEMA`). okp does not read it back; scripts that do should check
//! `schema`.
//!
//! Not here: comparing the trees (`diff::engine`), what `--write` writes (`write`).

use std::fmt::Write;

use super::binary::{BinaryReport, ClassStatus, MemberStatus, SiteVerdict};
use super::{AnchorPort, Basis, DiffReport, GuardPort, GuardStatus, SiteStatus, Verdict};

/// Diff lines shown per site in text reports (json carries all of them).
const MAX_DIFF_LINES: usize = 40;
/// Commits listed per file in text reports.
const MAX_COMMITS: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Table,
    Markdown,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Auto: colour only on a terminal, and never when NO_COLOR is set (no-color.org).
    pub fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => crate::out::stdout_styled(),
        }
    }
}

/// The schema of `okp diff --format json`.
pub const JSON_SCHEMA: u32 = 1;

/// `okp diff --format json`, schema 1: the report, its schema first.
#[derive(serde::Serialize)]
struct Json<'a> {
    schema: u32,
    #[serde(flatten)]
    report: &'a DiffReport,
}

pub fn render(r: &DiffReport, format: DiffFormat, color: bool) -> String {
    match format {
        DiffFormat::Table => table(r, color),
        DiffFormat::Markdown => markdown(r),
        DiffFormat::Json => crate::schema::to_json(&Json { schema: JSON_SCHEMA, report: r }),
    }
}

fn title(r: &DiffReport) -> String {
    let modes = r.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ");
    let basis = match r.basis {
        Basis::Sources => "",
        Basis::Bytecode => ", from the releases' jars",
        Basis::SourcesAndBytecode => ", sources and the releases' jars",
    };
    format!("okp diff {} -> {} (patch family {}, modes {modes}{basis})", r.from.label(), r.to.label(), r.family)
}

/// The verdict from the bytecode alone, in one sentence.
fn binary_verdict_line(r: &DiffReport, b: &BinaryReport) -> String {
    let to = r.to.label();
    let count = |v: SiteVerdict| b.sites.iter().filter(|s| s.verdict == v).count();
    let guards = b.guards.iter().filter(|g| g.needs_review()).count();
    let elsewhere: usize = b
        .classes
        .iter()
        .map(|c| {
            c.added.len()
                + c.removed.len()
                + c.changed.len()
                + usize::from(c.status != ClassStatus::Changed && c.status != ClassStatus::Unchanged)
        })
        .sum();
    let elsewhere = if elsewhere > 0 {
        format!("; {elsewhere} member(s) of the hooked files changed (listed above)")
    } else {
        String::new()
    };
    match b.verdict {
        Verdict::CarriesOver => format!(
            "carries over (bytecode): the members holding all {} hook sites and every guarded member are the same program in {to}{elsewhere}; the anchors' text is not checked (no source of {to})",
            b.sites.len()
        ),
        Verdict::CarriesOverReview => format!(
            "carries over with review (bytecode): {} of {} hook sites and {guards} guarded region(s) changed in {to}; read the changes before shipping{elsewhere}",
            count(SiteVerdict::Review),
            b.sites.len()
        ),
        Verdict::Drift => format!(
            "DRIFT (bytecode): the members holding {} of {} hook sites are not in {to}; each needs a decision",
            count(SiteVerdict::Gone),
            b.sites.len()
        ),
    }
}

/// One sentence: what the report concludes and what to do next.
pub fn verdict_line(r: &DiffReport) -> String {
    if let (Basis::Bytecode, Some(b)) = (r.basis, &r.binary) {
        return binary_verdict_line(r, b);
    }
    // Anchors held in a tree that is not the release say so, not "in 4.3.2".
    let to = match (&r.to.declared, r.to.version) {
        (Some(d), Some(v)) if *d != v.to_string() => format!("the new tree (declaring {d})"),
        _ => r.to.label(),
    };
    let changed = r.anchors.iter().filter(|a| a.carries && a.needs_review()).count();
    let lost = r.anchors.iter().filter(|a| !a.carries || a.range_note.is_some()).count();
    let guarded = r.guards.iter().filter(|g| g.needs_review()).count();
    let what = match (changed, guarded) {
        (0, g) => format!("{g} guarded region(s) changed"),
        (c, 0) => format!("the code at or calling {c} site(s) changed"),
        (c, g) => format!("the code at or calling {c} site(s) and {g} guarded region(s) changed"),
    };
    let sources_verdict = match &r.binary {
        Some(_) => DiffReport::verdict_of(&r.anchors, &r.guards),
        None => r.verdict,
    };
    let sources = match sources_verdict {
        Verdict::CarriesOver => format!(
            "carries over: all {} anchors hold in {to} and no code around them or guarded for them changed",
            r.anchors.len()
        ),
        Verdict::CarriesOverReview => format!(
            "carries over with review: all {} anchors hold in {to}, but {what}; read the diffs before shipping",
            r.anchors.len()
        ),
        Verdict::Drift => {
            format!("DRIFT: {lost} of {} anchors do not carry over to {to}; each needs a decision", r.anchors.len())
        }
    };
    match &r.binary {
        Some(b) => format!("{sources}. {}", binary_verdict_line(r, b)),
        None => sources,
    }
}

fn at(a: &AnchorPort) -> String {
    match (a.to_lines.as_slice(), a.delta) {
        ([], _) => "-".into(),
        ([l], Some(0)) => l.to_string(),
        ([l], Some(d)) => format!("{l} ({d:+})"),
        (ls, _) => ls.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(","),
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

fn capped(diff: &[String]) -> (&[String], usize) {
    let n = diff.len().min(MAX_DIFF_LINES);
    (&diff[..n], diff.len() - n)
}

/// A diff under its heading on the terminal, capped at MAX_DIFF_LINES; nothing when empty.
fn diff_table(s: &mut String, heading: &str, diff: &[String], color: bool) {
    let (shown, more) = capped(diff);
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(s, "  {heading}:");
    for l in shown {
        let _ = writeln!(s, "    {}", paint(l, color));
    }
    if more > 0 {
        let _ = writeln!(s, "    ... {more} more diff lines (--format json has them all)");
    }
}

/// The same in markdown: the heading, then a fenced diff block.
fn diff_md(s: &mut String, heading: &str, diff: &[String]) {
    let (shown, more) = capped(diff);
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n{heading}:\n\n```diff");
    for l in shown {
        let _ = writeln!(s, "{l}");
    }
    s.push_str("```\n");
    if more > 0 {
        let _ = writeln!(s, "({more} more diff lines in `--format json`)");
    }
}

fn paint(line: &str, color: bool) -> String {
    if !color {
        return line.to_string();
    }
    let code = match line.as_bytes().first() {
        Some(b'+') => "32",
        Some(b'-') => "31",
        Some(b'@') => "36",
        _ => return line.to_string(),
    };
    format!("\x1b[{code}m{line}\x1b[0m")
}

fn table(r: &DiffReport, color: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", title(r));
    let _ = writeln!(s, "  from: {}", r.from.source);
    let _ = writeln!(s, "  to:   {}{}", r.to.source, declared(r));
    if r.basis != Basis::Bytecode {
        let release = r.binary.is_some();
        let _ = writeln!(
            s,
            "\n{:<38} {:<10} {:<8} {:>8} {:>13}{}  site",
            "anchor",
            "status",
            "carries",
            "old line",
            "new line",
            if release { format!(" {:>12}", "release line") } else { String::new() }
        );
        for a in &r.anchors {
            let rel = match (release, a.release_line) {
                (false, _) => String::new(),
                (true, Some(l)) => format!(" {l:>12}"),
                (true, None) => format!(" {:>12}", "-"),
            };
            let _ = writeln!(
                s,
                "{:<38} {:<10} {:<8} {:>8} {:>13}{rel}  {}",
                a.anchor,
                a.status.as_str(),
                yes(a.carries),
                a.from_line,
                at(a),
                a.site.as_deref().unwrap_or("-")
            );
        }
        if release && !r.to.source.starts_with("Maven Central release") {
            let _ = writeln!(
                s,
                "  (new line: in {}; release line: in {} itself, from its jar's line tables)",
                r.to.source,
                r.to.label()
            );
        }
    }
    let _ = writeln!(s, "\n{:<30} {:<17} {:<8} anchors in {}", "hook", "scope", "site", r.from.label());
    for h in &r.hooks {
        let site = match (h.has_site, h.changed) {
            (true, false) => "yes",
            (true, true) => "changed",
            (false, _) => "NONE",
        };
        let scope = serde_json::to_value(h.scope).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let _ = writeln!(s, "{:<30} {:<17} {:<8} {}", h.hook, scope, site, h.anchors.join(", "));
    }
    if !r.files.is_empty() {
        let _ = writeln!(s, "\nfiles");
    }
    for f in &r.files {
        let what = match (f.in_from, f.in_to) {
            (true, true) if f.added + f.removed == 0 => "identical".to_string(),
            (true, true) => format!("+{} -{}", f.added, f.removed),
            (true, false) => format!("GONE in {}", r.to.label()),
            _ => format!("not in {}", r.from.label()),
        };
        let _ = writeln!(s, "  {}  {what}", f.file);
        if let Some(commits) = &f.commits {
            let _ = writeln!(s, "    {} commit(s) touched it between the two revisions", commits.len());
            for c in commits.iter().take(MAX_COMMITS) {
                let _ = writeln!(s, "      {} {} {}: {}", c.id, c.date, c.author, c.summary);
            }
            if commits.len() > MAX_COMMITS {
                let _ = writeln!(s, "      ... {} more (--format json lists all)", commits.len() - MAX_COMMITS);
            }
        }
    }
    for a in r.anchors.iter().filter(|a| a.needs_review()) {
        s.push('\n');
        let _ = writeln!(
            s,
            "{} `{}` (hooks: {}){}",
            a.status.as_str().to_uppercase(),
            a.anchor,
            a.hooks.join(", "),
            if a.carries { ": the anchor still holds" } else { "" }
        );
        let _ = writeln!(s, "  file: {}", a.file);
        if let Some(site) = &a.site {
            let now = a.site_to_line.map(|l| format!("line {l}")).unwrap_or_else(|| "not found".into());
            let _ = writeln!(s, "  site: {site}; in {}: {now}", r.to.label());
        }
        for note in a.note.iter().chain(&a.range_note) {
            let _ = writeln!(s, "  note: {note}");
        }
        if !a.carries {
            s.push_str("  anchor:\n");
            for l in &a.expected {
                let _ = writeln!(s, "      | {l}");
            }
        }
        let heading = format!("upstream change around the site ({} -> {})", r.from.label(), r.to.label());
        diff_table(&mut s, &heading, &a.diff, color);
        diff_table(&mut s, "changed calls of the site elsewhere in the file", &a.callers, color);
        if !a.candidates.is_empty() {
            let _ = writeln!(
                s,
                "  re-anchoring candidates in {} (score = {:.0}% similarity + {:.0}% structure):",
                r.to.label(),
                super::engine::SIMILARITY_WEIGHT * 100.0,
                (1.0 - super::engine::SIMILARITY_WEIGHT) * 100.0
            );
            for c in &a.candidates {
                let _ = writeln!(s, "    line {:<5} score {:>3.0}%  {}", c.line, c.score * 100.0, components(c));
                for l in &c.text {
                    let _ = writeln!(s, "      | {l}");
                }
            }
        }
    }
    s.push_str(&guards_table(r, color));
    if let Some(b) = &r.binary {
        s.push_str(&binary_text(r, b, false));
    }
    let hint = if r.verdict == Verdict::Drift { " (`okp diff --write` writes the porting worksheet)" } else { "" };
    let _ = writeln!(s, "\n{}{hint}", verdict_line(r));
    s
}

/// How many guards came out each way: `12 unchanged, 1 changed`.
fn guard_counts(r: &DiffReport) -> String {
    let count = |f: &dyn Fn(&GuardPort) -> bool| r.guards.iter().filter(|g| f(g)).count();
    let retired = format!("gone where anchors.yaml ends them before {}", r.to.label());
    [
        (count(&|g| g.status == GuardStatus::Unchanged), "unchanged"),
        (count(&|g| g.status == GuardStatus::Changed), "changed"),
        (count(&|g| g.status == GuardStatus::Gone && !g.retired), "gone"),
        (count(&|g| g.status == GuardStatus::Gone && g.retired), retired.as_str()),
        (count(&|g| g.status == GuardStatus::Unlocated), "unlocated"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect::<Vec<_>>()
    .join(", ")
}

fn guard_lines(g: &GuardPort) -> String {
    let line = |l: Option<usize>| l.map_or("-".to_string(), |l| l.to_string());
    format!("{} -> {}", line(g.from_line), line(g.to_line))
}

/// The terminal's "Guarded code changed" section: each guard that did not come out unchanged, with
/// its upstream diff.
fn guards_table(r: &DiffReport, color: bool) -> String {
    let mut s = String::new();
    if r.guards.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\nguarded code (anchors.yaml guards of {}): {}", r.from.label(), guard_counts(r));
    for g in r.guards.iter().filter(|g| g.needs_review()) {
        s.push('\n');
        let _ = writeln!(s, "GUARDED CODE {} `{}` (hook {})", g.status.as_str().to_uppercase(), g.guard, g.hook);
        let _ = writeln!(s, "  file: {}", g.file);
        let _ = writeln!(s, "  region: {}; lines {}", g.region(), guard_lines(g));
        let _ = writeln!(s, "  why guarded: {}", g.why);
        if let Some(note) = &g.note {
            let _ = writeln!(s, "  note: {note}");
        }
        diff_table(&mut s, &format!("upstream change ({} -> {})", r.from.label(), r.to.label()), &g.diff, color);
    }
    s
}

/// Markdown's "Guarded code changed" section, also the worksheet's evidence for the guards.
fn guards_md(r: &DiffReport, heading: &str) -> String {
    let mut s = String::new();
    let review: Vec<&GuardPort> = r.guards.iter().filter(|g| g.needs_review()).collect();
    if r.guards.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\n{heading} Guarded code changed\n");
    let _ = writeln!(
        s,
        "anchors.yaml guards of {} (code that could route around a hook although its anchors hold): {}.",
        r.from.label(),
        guard_counts(r)
    );
    if review.is_empty() {
        return s;
    }
    s.push_str("\n| guard | hook | status | file | region | lines |\n|---|---|---|---|---|---|\n");
    for g in &review {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | `{}` | `{}` | {} |",
            g.guard,
            g.hook,
            g.status.as_str(),
            g.file,
            md_cell(&g.region()),
            guard_lines(g)
        );
    }
    for g in &review {
        let _ = writeln!(s, "\n{heading}# `{}` ({}, hook {})\n", g.guard, g.status.as_str(), g.hook);
        let _ = writeln!(s, "- file: `{}`, region `{}`\n- why guarded: {}", g.file, md_cell(&g.region()), g.why);
        if let Some(note) = &g.note {
            let _ = writeln!(s, "- {note}");
        }
        diff_md(&mut s, &format!("upstream change ({} → {})", r.from.label(), r.to.label()), &g.diff);
    }
    s
}

fn components(c: &super::Ranked) -> String {
    let mark = |b: bool| if b { "yes" } else { "no" };
    format!(
        "similarity {:.0}%, same method {}, same class {}{}{}",
        c.similarity * 100.0,
        mark(c.same_method),
        mark(c.same_class),
        c.scope.as_deref().map(|s| format!(", in {s}")).unwrap_or_default(),
        c.hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default()
    )
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Markdown, for a pull request description or a CI job summary.
pub fn markdown(r: &DiffReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## {}\n", title(r));
    let _ = writeln!(s, "**{}**\n", verdict_line(r));
    let _ = writeln!(s, "- from: {}\n- to: {}{}\n", r.from.source, r.to.source, declared(r));
    if r.basis != Basis::Bytecode {
        let release = r.binary.is_some();
        s.push_str(if release {
            "| anchor | status | carries | old line | new line | release line | site |\n|---|---|---|---:|---:|---:|---|\n"
        } else {
            "| anchor | status | carries | old line | new line | site |\n|---|---|---|---:|---:|---|\n"
        });
        for a in &r.anchors {
            let rel = match (release, a.release_line) {
                (false, _) => String::new(),
                (true, Some(l)) => format!(" {l} |"),
                (true, None) => " - |".to_string(),
            };
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} | {} |{rel} {} |",
                a.anchor,
                a.status.as_str(),
                yes(a.carries),
                a.from_line,
                at(a),
                a.site.as_deref().unwrap_or("-")
            );
        }
    }
    let _ = writeln!(s, "\n| hook | site in {} | anchors in {} |\n|---|---|---|", r.to.label(), r.from.label());
    for h in &r.hooks {
        let site = match (h.has_site, h.changed) {
            (true, false) => "yes",
            (true, true) => "yes, code around it changed",
            (false, _) => "**none**",
        };
        let _ = writeln!(
            s,
            "| {} | {site} | {} |",
            h.hook,
            h.anchors.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
        );
    }
    if !r.files.is_empty() {
        s.push_str("\n| file | change |\n|---|---|\n");
    }
    for f in &r.files {
        let what = match (f.in_from, f.in_to) {
            (true, true) if f.added + f.removed == 0 => "identical".to_string(),
            (true, true) => format!("+{} −{}", f.added, f.removed),
            (true, false) => format!("**gone** in {}", r.to.label()),
            _ => format!("not in {}", r.from.label()),
        };
        let _ = writeln!(s, "| `{}` | {what} |", f.file);
    }
    for f in r.files.iter().filter(|f| f.commits.is_some()) {
        s.push_str(&commits_md(f));
    }
    for a in r.anchors.iter().filter(|a| a.needs_review()) {
        s.push('\n');
        s.push_str(&evidence_md(r, a, "###"));
    }
    s.push_str(&guards_md(r, "###"));
    if let Some(b) = &r.binary {
        s.push_str(&binary_text(r, b, true));
    }
    s
}

/// `, declaring 8.3.2-0-ccs` when the new tree declares a version that is not the release's number.
fn declared(r: &DiffReport) -> String {
    match (&r.to.declared, r.to.version) {
        (Some(d), Some(v)) if *d != v.to_string() => format!(" (declaring version {d}, not {v})"),
        _ => String::new(),
    }
}

fn lines(l: Option<[u32; 2]>) -> String {
    match l {
        Some([a, b]) if a == b => a.to_string(),
        Some([a, b]) => format!("{a}-{b}"),
        None => "-".into(),
    }
}

/// The bytecode section: the classes of the hooked and guarded files, each hook site's members,
/// the guarded members, and (with a tree of the new release) where that tree is not the release.
/// `md`: markdown, else terminal text.
fn binary_text(r: &DiffReport, b: &BinaryReport, md: bool) -> String {
    let mut s = String::new();
    let (from, to) = (r.from.label(), r.to.label());
    let code = |x: &str| if md { format!("`{}`", md_cell(x)) } else { x.to_string() };
    if md {
        let _ = writeln!(s, "\n### Bytecode: {from} -> {to}\n");
    } else {
        let _ = writeln!(s, "\nbytecode: {from} -> {to}");
    }
    let _ = writeln!(
        s,
        "{}jars: {} -> {} (compared member by member after the provenance proofs' normalisation)",
        if md { "- " } else { "  " },
        b.from_jars.join(", "),
        b.to_jars.join(", ")
    );
    let n = |st: ClassStatus| b.classes.iter().filter(|c| c.status == st).count();
    let _ = writeln!(
        s,
        "{}classes of the hooked and guarded files: {} unchanged, {} changed, {} added, {} removed",
        if md { "- " } else { "  " },
        n(ClassStatus::Unchanged),
        n(ClassStatus::Changed),
        n(ClassStatus::Added),
        n(ClassStatus::Removed)
    );
    for f in &b.not_compared {
        let _ = writeln!(s, "{}not compared (no jar of its module): {}", if md { "- " } else { "  " }, code(f));
    }
    for c in b.classes.iter().filter(|c| c.status != ClassStatus::Unchanged) {
        let status = serde_json::to_value(c.status).ok().and_then(|v| v.as_str().map(str::to_uppercase));
        let _ = writeln!(s, "{}{} {}", if md { "\n- " } else { "  " }, status.unwrap_or_default(), code(&c.class));
        for (sign, list) in [("+", &c.added), ("-", &c.removed), ("~", &c.changed)] {
            for m in list {
                let _ = writeln!(s, "{}{sign} {}", if md { "  - " } else { "      " }, code(m));
            }
        }
    }
    if md {
        let _ = writeln!(
            s,
            "\n| anchor | verdict | old line | release line | members holding it |\n|---|---|---:|---:|---|"
        );
    } else {
        let _ = writeln!(
            s,
            "\n  {:<38} {:<8} {:>8} {:>12}  members holding it",
            "hook site", "verdict", "old line", "release line"
        );
    }
    for site in &b.sites {
        let verdict =
            serde_json::to_value(site.verdict).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let to_line = site.to_line.map_or("-".to_string(), |l| {
            let d = l as i64 - site.from_line as i64;
            if d == 0 {
                l.to_string()
            } else {
                format!("{l} ({d:+})")
            }
        });
        let members: Vec<String> = site
            .members
            .iter()
            .map(|m| {
                let st = match m.status {
                    MemberStatus::Unchanged => "",
                    MemberStatus::Changed => " CHANGED",
                    MemberStatus::Gone => " GONE",
                };
                format!("{}.{}{st}", m.class, m.member.trim_start_matches("method "))
            })
            .collect();
        let shown = if members.len() > 3 {
            format!("{} and {} more", members[..3].join("; "), members.len() - 3)
        } else {
            members.join("; ")
        };
        let shown = match &site.note {
            Some(n) if members.is_empty() => n.clone(),
            _ => shown,
        };
        if md {
            let _ =
                writeln!(s, "| `{}` | {verdict} | {} | {to_line} | {} |", site.anchor, site.from_line, md_cell(&shown));
        } else {
            let _ = writeln!(s, "  {:<38} {:<8} {:>8} {:>12}  {shown}", site.anchor, verdict, site.from_line, to_line);
        }
    }
    let changed: Vec<_> = b.guards.iter().filter(|g| g.needs_review()).collect();
    let _ = writeln!(
        s,
        "{}guarded members (anchors.yaml guards of {from}): {} unchanged, {} changed or not placed",
        if md { "\n" } else { "\n  " },
        b.guards.len() - changed.len(),
        changed.len()
    );
    for g in changed {
        let what = if g.changed.is_empty() { g.note.clone().unwrap_or_default() } else { g.changed.join("; ") };
        let _ = writeln!(
            s,
            "{}{} {} (hook {}): {}",
            if md { "- " } else { "    " },
            g.status.as_str().to_uppercase(),
            code(&g.guard),
            g.hook,
            what
        );
    }
    if let Some(c) = &b.source_check {
        let declared = c.declared.as_deref().map(|d| format!(", declaring {d}")).unwrap_or_default();
        let _ = writeln!(
            s,
            "{}the new tree against {to}'s bytecode ({}{declared}): {} member(s) compared, {}",
            if md { "\n" } else { "\n  " },
            c.source,
            c.compared,
            if c.agrees() {
                "no difference found (nothing compiled: text and line tables only)".to_string()
            } else {
                format!("{} finding(s):", c.findings.len())
            }
        );
        for f in &c.findings {
            let what = match f.finding {
                super::binary::Finding::Lacks => {
                    format!("the tree LACKS it ({to} has it at lines {})", lines(f.release_lines))
                }
                super::binary::Finding::OldShape => {
                    format!("the tree has {from}'s text of it; {to} changed it (its lines {})", lines(f.release_lines))
                }
                super::binary::Finding::OtherShape => format!(
                    "the tree's text of it differs from {from}'s; {to}'s bytecode of it is {from}'s (its lines {})",
                    lines(f.release_lines)
                ),
                super::binary::Finding::BothChanged => format!(
                    "both the tree and {to} changed it: only a build's proof tells whether they agree (its lines {})",
                    lines(f.release_lines)
                ),
                super::binary::Finding::Extra => format!("the tree still defines it; {to} no longer has it"),
            };
            let at = f.source_line.map(|l| format!(" (tree line {l})")).unwrap_or_default();
            let _ = writeln!(
                s,
                "{}{}.{}{at}: {what}",
                if md { "- " } else { "    " },
                code(&f.class),
                f.member.trim_start_matches("method ")
            );
        }
    }
    s
}

fn commits_md(f: &super::FilePort) -> String {
    let mut s = String::new();
    let commits = f.commits.as_deref().unwrap_or_default();
    let _ = writeln!(s, "\n<details><summary>{} commit(s) touched <code>{}</code></summary>\n", commits.len(), f.file);
    for c in commits.iter().take(MAX_COMMITS) {
        let _ = writeln!(s, "- `{}` {} {}: {}", c.id, c.date, md_cell(&c.author), md_cell(&c.summary));
    }
    if commits.len() > MAX_COMMITS {
        let _ = writeln!(s, "- … {} more", commits.len() - MAX_COMMITS);
    }
    s.push_str("\n</details>\n");
    s
}

/// One anchor's evidence: what happened, the upstream diff, the candidates.
fn evidence_md(r: &DiffReport, a: &AnchorPort, heading: &str) -> String {
    let mut s = String::new();
    let what = if a.carries { "the anchor still holds" } else { "the anchor does not carry over" };
    let _ = writeln!(s, "{heading} `{}`: {} ({what})\n", a.anchor, a.status.as_str());
    let _ = writeln!(
        s,
        "- hooks: {}\n- file: `{}`, line {} in {}",
        a.hooks.join(", "),
        a.file,
        a.from_line,
        r.from.label()
    );
    if let Some(site) = &a.site {
        let now = a.site_to_line.map(|l| format!("line {l}")).unwrap_or_else(|| "not found".into());
        let _ = writeln!(s, "- site: {site}; in {}: {now}", r.to.label());
    }
    for note in a.note.iter().chain(&a.range_note) {
        let _ = writeln!(s, "- {note}");
    }
    if !a.carries {
        s.push_str("\nanchor:\n\n```\n");
        for l in &a.expected {
            let _ = writeln!(s, "{l}");
        }
        s.push_str("```\n");
    }
    diff_md(&mut s, &format!("upstream change around the site ({} → {})", r.from.label(), r.to.label()), &a.diff);
    diff_md(&mut s, "changed calls of the site elsewhere in the file", &a.callers);
    if !a.candidates.is_empty() {
        let _ = writeln!(s, "\nre-anchoring candidates in {}:\n\n| line | score | similarity | same method | same class | text |\n|---:|---:|---:|---|---|---|", r.to.label());
        for c in &a.candidates {
            let text = c.text.iter().map(|l| format!("`{}`", md_cell(l.trim()))).collect::<Vec<_>>().join("<br>");
            let _ = writeln!(
                s,
                "| {} | {:.0}% | {:.0}% | {} | {} | {text}{} |",
                c.line,
                c.score * 100.0,
                c.similarity * 100.0,
                if c.same_method { "yes" } else { "no" },
                if c.same_class { "yes" } else { "no" },
                c.hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default()
            );
        }
    }
    let commits: Vec<&super::Commit> =
        r.files.iter().filter(|f| f.file == a.file).flat_map(|f| f.commits.iter().flatten()).collect();
    if !commits.is_empty() {
        let _ = writeln!(
            s,
            "\ncommits that touched the file: {}",
            commits
                .iter()
                .take(MAX_COMMITS)
                .map(|c| format!("`{}` {}", c.id, md_cell(&c.summary)))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    s
}

/// The porting worksheet: each decision a human must make, with its evidence.
/// `rerun` is the command line that runs the diff again with the same sources.
pub fn worksheet(r: &DiffReport, versions_file: &str, rerun: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Porting worksheet: {} → {}\n", r.from.label(), r.to.label());
    let _ = writeln!(s, "Written by okp {} (`okp diff --write`). {}\n", env!("CARGO_PKG_VERSION"), verdict_line(r));
    let _ = writeln!(
        s,
        "- from: {}\n- to: {}\n- patch family of {}: {} (modes {})\n",
        r.from.source,
        r.to.source,
        r.from.label(),
        r.family,
        r.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
    );
    s.push_str("## Decisions\n\n");
    let mut n = 0;
    for h in r.hooks.iter().filter(|h| !h.has_site) {
        n += 1;
        let gone = r.anchors.iter().filter(|a| h.anchors.contains(&a.anchor)).all(|a| a.status == SiteStatus::Gone);
        let why = if gone { "its site is gone (file or method removed)" } else { "its anchor does not hold" };
        let _ = writeln!(
            s,
            "{n}. [ ] Hook `{}` ({}) has no site in {}: {why}. Either find its new site (decisions below) or, if {} no longer has the {} code path, drop it for {} (modes in {versions_file}).",
            h.hook,
            h.site,
            r.to.label(),
            r.to.label(),
            serde_json::to_value(h.scope).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            r.to.label()
        );
    }
    for a in r.anchors.iter().filter(|a| a.needs_review()) {
        n += 1;
        let task = if a.range_note.is_some() && a.carries {
            format!(
                "Range of `{}`: it holds in {}, but anchors.yaml's range excludes it; extend the range or say why not.",
                a.anchor,
                r.to.label()
            )
        } else if a.carries && a.status == SiteStatus::Changed {
            format!("Review `{}`: the anchor holds, but upstream changed the code around it; confirm the hook's rule still holds there.", a.anchor)
        } else if a.carries {
            format!("Review the callers of `{}`'s site: upstream changed calls of it; confirm every path still goes through the hook.", a.anchor)
        } else if a.range_note.is_some() {
            format!(
                "Re-anchor `{}` (anchors.yaml already ends it before {}): add an anchor `from: {}` at the new site (candidates below), or drop its hooks for {}.",
                a.anchor,
                r.to.label(),
                r.to.label(),
                r.to.label()
            )
        } else {
            format!(
                "Re-anchor `{}`: close it with `to: {}` in anchors.yaml and add an anchor `from: {}` at the new site (candidates below), or record that the hook is gone.",
                a.anchor,
                r.from.label(),
                r.to.label()
            )
        };
        let _ = writeln!(s, "{n}. [ ] {task}");
    }
    for g in r.guards.iter().filter(|g| g.needs_review()) {
        n += 1;
        let what = match g.status {
            GuardStatus::Gone => format!("is no longer in {}", r.to.label()),
            GuardStatus::Unlocated => format!("was not found once in {}: fix the guard or the tree", r.from.label()),
            _ => "changed upstream".to_string(),
        };
        let _ = writeln!(
            s,
            "{n}. [ ] Guarded code `{}` (hook `{}`): `{}` in `{}` {what}; confirm no path now routes around the hook, then update the guard in anchors.yaml if its code moved.",
            g.guard,
            g.hook,
            g.region(),
            g.file
        );
    }
    if n == 0 {
        s.push_str("None: every anchor carries over and no site or guarded code changed.\n");
    }
    let _ = writeln!(
        s,
        "\nThen run again (the same sources):\n\n```sh\n{rerun}\n```\n\nWhen every anchor carries over it adds {} to {versions_file} and confirms it with check-anchors.\n",
        r.to.label()
    );
    s.push_str("## Evidence\n");
    for a in r.anchors.iter().filter(|a| a.needs_review()) {
        s.push('\n');
        s.push_str(&evidence_md(r, a, "###"));
    }
    s.push_str(&guards_md(r, "###"));
    for f in r.files.iter().filter(|f| f.commits.is_some()) {
        s.push_str(&commits_md(f));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::{compare, FilePort, GuardPort, GuardStatus, HookPort, Side};
    use super::*;
    use crate::model::{Anchor, Mode, Pattern};
    use crate::version::KafkaVersion;

    /// A report over one anchor whose method changed around it between two small files.
    fn sample() -> DiffReport {
        let old = "class P {\n  def a(): Unit = {\n    val x = 1\n    go(x)\n  }\n}\n";
        let new = old.replace("val x = 1", "val x = compute()");
        let files = |t: &str| [("P.scala".to_string(), Some(t.to_string()))].into_iter().collect();
        let a = Anchor {
            id: "p.go".into(),
            file: "P.scala".into(),
            pattern: Pattern::Lines(vec!["    go(x)".into()]),
            from: KafkaVersion::new(1, 0, 0),
            to: None,
            hooks: vec!["h".into()],
            why: "test".into(),
            enclosing: Some("def a".into()),
            line: 1,
        };
        let anchors = compare(&[&a], None, &files(old), &files(&new)).unwrap();
        let guards = vec![GuardPort {
            guard: "p.b-callers".into(),
            hook: "h".into(),
            file: "P.scala".into(),
            method: Some("def b".into()),
            why: "a caller of the site".into(),
            status: GuardStatus::Unchanged,
            from_line: Some(7),
            to_line: Some(7),
            note: None,
            diff: vec![],
            retired: false,
        }];
        DiffReport {
            from: Side {
                version: Some(KafkaVersion::new(4, 1, 2)),
                source: "Maven Central release 4.1.2".into(),
                declared: None,
            },
            to: Side {
                version: Some(KafkaVersion::new(4, 2, 1)),
                source: "Maven Central release 4.2.1".into(),
                declared: None,
            },
            basis: super::super::Basis::Sources,
            binary: None,
            family: "f4.1".into(),
            modes: vec![Mode::Kraft],
            verdict: DiffReport::verdict_of(&anchors, &guards),
            anchors,
            hooks: vec![HookPort {
                hook: "h".into(),
                scope: crate::model::anchors::Scope::Broker,
                site: "P.a".into(),
                anchors: vec!["p.go".into()],
                has_site: true,
                changed: true,
            }],
            guards,
            files: vec![FilePort {
                file: "P.scala".into(),
                in_from: true,
                in_to: true,
                added: 1,
                removed: 1,
                commits: None,
            }],
        }
    }

    #[test]
    fn diff_json_serialized_form() {
        let json = render(&sample(), DiffFormat::Json, false);
        insta::assert_snapshot!(json);
        assert!(json.starts_with("{\n  \"schema\": 1,\n"), "{json}");
    }
}
