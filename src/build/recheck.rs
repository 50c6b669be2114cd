//! Re-deriving a build's proof from its jars' bytes, with okp's own data: what every consumer of
//! patched jars runs before it trusts them (`okp bundle`, `okp verify --jars`, verify's jar
//! cache, `okp install`, `okp show --build`), and what a splice build runs on its own staged jars
//! before it moves them into place.
//!
//! A build record (okp-build.json) or a bundle's manifest says what the jars are: release, mode,
//! layers, patch-set hash, per jar the classes replaced and added and the members changed. None of
//! it is taken on trust here. From the release's jar on Maven Central, the release's sources jars
//! and okp's own patch set, `recheck` derives what the jars must be and compares:
//!
//! 1. **Entries**: every entry of the release jar that no edited source owns is byte-identical in
//!    the shipped jar; every entry the shipped jar has beyond the release's comes from an edited
//!    source or from one of okp's own files; no entry appears twice.
//! 2. **Members**: each class of an edited source, against the release's class of the same name by
//!    the proofs' normalised comparison (`proof::compare_unit`): every member that differs sits
//!    where one of okp's edits sits (edit sites computed by applying okp's patch set for the
//!    claimed release, mode and layers to the release's own sources), or is a difference the
//!    release's documented exceptions forgive (`proof::EXCEPTIONS`); and every edit shows in the
//!    bytecode (a jar of another mode or layer set, or an upstream class put back, fails here).
//! 3. **Claims**: the patch-set hash and family are okp's for the claimed release, mode and layers;
//!    the jar set is the mode's; each jar's replaced/added/removed lists are exactly the entries
//!    found; the recorded changed members of each class lie between the members no exception
//!    forgives and all members that differ; the recorded proof passed, enforced.
//! 4. **okp's own classes**, when the caller passes a compile (`Claims::ours_by_content`:
//!    verify-bundle and install pass `splice::compile_ours`): byte-identical to okp's own sources
//!    compiled with the release's compilers, and no other class from okp's files. Without it they
//!    are checked by name and the source file they name (entries, above).
//!
//! A disagreement is refused (exit 1) naming the jar, the entry or class and the field. No
//! recompile of upstream code: the cost is reading the two jars and parsing the edited sources'
//! classes (and okp's own compile, cached, when asked).
//!
//! What this cannot see: a change *inside* a member an edit sits in (its bytes differ from the
//! release's anyway). The build's own proof catches that (its unpatched recompile of the release's
//! sources against the release jar, and the patch delta against it); a consumer without a
//! recompile has the member-level bound only.
//!
//! Not here: the build's proofs (`proof`), reading the record (`record`) or a manifest (`bundle`).

use std::collections::BTreeSet;
use std::time::Instant;

use super::jar;
use super::proof::{self, Provenance};
use crate::apply;
use crate::error::{Error, Result};
use crate::hash::sha256;
use crate::model::{Layer, Layers, Mode};
use crate::source::{SourceTree, Spec};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

/// What a record or a manifest says of a build's jars.
pub struct Claims<'a> {
    /// The file the claims were read from (`okp-build.json`, `MANIFEST.json`), for messages.
    pub what: String,
    pub release: KafkaVersion,
    pub mode: Mode,
    pub layers: &'a [Layer],
    pub family: &'a str,
    pub patch_set_hash: &'a str,
    pub provenance: Option<&'a Provenance>,
    pub jars: Vec<ClaimedJar<'a>>,
    /// Compare okp's own classes with okp's own sources compiled by the release's compilers, byte
    /// for byte, not by name only: what verify-bundle and install ask, passing
    /// `splice::compile_ours` (the re-check itself compiles nothing, and sits below the build).
    pub ours_by_content: Option<CompileOurs<'a>>,
}

/// Compiles okp's own files of one module (repository path, text) as a splice build of the release
/// does, reading the module's other sources from the tree: the classes by jar entry name.
pub type CompileOurs<'a> = &'a dyn Fn(
    &crate::model::Release,
    &dyn SourceTree,
    &str,
    &[(&str, &[u8])],
) -> Result<std::collections::BTreeMap<String, Vec<u8>>>;

/// One jar and what is said of it.
pub struct ClaimedJar<'a> {
    pub file_name: &'a str,
    pub module: &'a str,
    /// The Maven coordinate of the upstream jar it is a copy of.
    pub upstream: &'a str,
    pub upstream_sha256: &'a str,
    pub bytes: &'a [u8],
    pub replaced: &'a [String],
    pub added: &'a [String],
    pub removed: &'a [String],
}

/// What the bytes showed.
#[derive(Debug, Default)]
pub struct Rechecked {
    pub jars: Vec<JarFacts>,
    pub seconds: f64,
    /// Every file the build compiled, as okp's patch set applied to the release's sources gives
    /// it: the release's sha256 (none for okp's own files) and the patched text's.
    pub sources: Vec<proof::SourceHash>,
}

#[derive(Debug, Default)]
pub struct JarFacts {
    pub file_name: String,
    /// Release entries found byte-identical.
    pub identical: usize,
    pub replaced: usize,
    pub added: usize,
    pub removed: usize,
    /// Classes of the edited sources compared member by member.
    pub classes_compared: usize,
    /// Members that differ from the release's, all sitting where an edit sits (or forgiven).
    pub members_changed: usize,
    /// Members that differ only as a documented exception of the release forgives.
    pub members_forgiven: usize,
    /// okp's own classes found byte-identical to okp's sources compiled with the release's
    /// compilers (none when they were checked by name only).
    pub ours_compiled: Option<usize>,
}

impl Rechecked {
    /// Notes `summary` on stderr, a line per jar, each after `prefix`.
    pub fn note(&self, prefix: &str) {
        for l in self.summary().lines() {
            crate::out::note(format!("{prefix}{l}"));
        }
    }

    /// One line per jar, for a command's output.
    pub fn summary(&self) -> String {
        self.jars
            .iter()
            .map(|j| {
                format!(
                    "{}: re-derived from its bytes: {} release entries byte-identical, {} replaced, {} added{}, {} \
                     classes compared with the release's, {} members changed, all where okp's edits sit{}",
                    j.file_name,
                    j.identical,
                    j.replaced,
                    j.added,
                    match j.ours_compiled {
                        Some(n) => format!(
                            " ({n} of okp's own classes byte-identical to okp's sources compiled with the release's \
                             compilers)"
                        ),
                        None => String::new(),
                    },
                    j.classes_compared,
                    j.members_changed,
                    if j.members_forgiven > 0 {
                        format!(
                            " ({} more forgiven as the release's documented compiler differences)",
                            j.members_forgiven
                        )
                    } else {
                        String::new()
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Re-derives the proof of `c`'s jars from their bytes (see the module's header), reading the
/// release's own sources from its sources jars, or for a release Maven Central has none of, from
/// `source` (the tree the build read: each file compiled must hash as the record says).
pub fn recheck(ws: &Workspace, c: &Claims, source: Option<&dyn SourceTree>) -> Result<Rechecked> {
    let t0 = Instant::now();
    let what = &c.what;
    let release = ws.release(c.release)?;
    if !release.supports(c.mode) {
        return Err(Error::Check(format!("{what}: mode: release {} has no {} mode", c.release, c.mode)));
    }
    let layers = Layers::with(c.layers);
    let ps = ws.patch_set()?;
    let eff = ps.effective(&ws.model, release, release.version, c.mode, &layers);
    let mut problems: Vec<String> = Vec::new();
    if eff.hash != c.patch_set_hash {
        problems.push(format!(
            "{what}: patch_set_hash: says {}, but okp's patch set for {} {} ({}) is {} (a build of another \
             patch set: bundle with the okp (or the --patches) that built it)",
            short(c.patch_set_hash),
            c.release,
            c.mode,
            layers.label(),
            short(&eff.hash)
        ));
    }
    if eff.family != c.family {
        problems.push(format!("{what}: family: says {}, but {} is of family {}", c.family, c.release, eff.family));
    }
    match c.provenance {
        None => problems.push(format!(
            "{what}: provenance: it holds no passing provenance proof, so nothing shows these jars are the release \
             plus exactly our edits; build them again with this okp (`okp show --build DIR` prints what it holds)"
        )),
        Some(p) => {
            if !p.passed() || !p.release.passed || !p.release.enforced || !p.delta.passed {
                problems.push(format!(
                    "{what}: provenance: the recorded proof did not pass enforced (release.passed {}, release.enforced \
                     {}, delta.passed {})",
                    p.release.passed, p.release.enforced, p.delta.passed
                ));
            }
        }
    }
    // The jars a mode replaces.
    let mut wanted: Vec<&str> =
        release.jars.get(&c.mode).map(|v| v.iter().map(String::as_str).collect()).unwrap_or_default();
    wanted.sort();
    let mut have: Vec<&str> = c.jars.iter().map(|j| j.module).collect();
    have.sort();
    if have != wanted {
        problems.push(format!("{what}: jars: for modules {have:?}, but {} {} replaces {wanted:?}", c.release, c.mode));
    }
    if !problems.is_empty() {
        return Err(refused(what, problems));
    }

    // Where okp's edits sit: okp's patch set applied to the release's own sources.
    let opened;
    let tree: &dyn SourceTree = match (&release.no_sources_jar, source) {
        (None, _) => {
            opened = ws.open(Spec::Release { version: c.release, hint: "" })?;
            opened.as_ref()
        }
        (Some(_), Some(t)) => t,
        (Some(_), None) => {
            return Err(Error::Usage(format!(
                "{what}: {} has no sources jar on Maven Central, so where okp's edits sit in it comes only from the \
                 tree the build read: name it with --tree DIR or --git REPO --rev REV",
                c.release
            )))
        }
    };
    let plan = apply::plan(&eff, tree)?;
    // From a tree the user names: its files compiled must be the ones the record names, byte for
    // byte (a tree other than the build's is not re-derived against).
    if let (Some(p), Some(_)) = (c.provenance, &release.no_sources_jar) {
        for ch in plan.changes.iter().filter(|ch| ch.before.is_some()) {
            let said = p.sources.iter().find(|s| s.path == ch.path).and_then(|s| s.upstream_sha256.as_deref());
            let found = ch.before.as_deref().map(sha256);
            if said != found.as_deref() {
                problems.push(format!(
                    "{what}: provenance.sources: {}: says {}, but {} holds {}",
                    ch.path,
                    said.map_or("nothing", short),
                    tree.describe(),
                    found.as_deref().map_or("nothing", short)
                ));
            }
        }
        if !problems.is_empty() {
            return Err(refused(what, problems));
        }
    }
    let mut out = Rechecked {
        sources: plan
            .changes
            .iter()
            .map(|ch| proof::SourceHash {
                path: ch.path.clone(),
                upstream_sha256: ch.before.as_deref().map(sha256),
                patched_sha256: sha256(&ch.after),
            })
            .collect(),
        ..Default::default()
    };
    for j in &c.jars {
        let module_files: Vec<&apply::Change> =
            plan.changes.iter().filter(|ch| ch.path.split('/').next() == Some(j.module)).collect();
        let edited: Vec<(&str, String)> = module_files
            .iter()
            .filter(|ch| ch.before.is_some())
            .map(|ch| (ch.path.as_str(), String::from_utf8_lossy(&ch.after).into_owned()))
            .collect();
        let ours: Vec<&str> = module_files.iter().filter(|ch| ch.before.is_none()).map(|ch| ch.path.as_str()).collect();
        let coord = release.sources.get(j.module).ok_or_else(|| {
            Error::Check(format!("{what}: jars: module {} is not a source module of {}", j.module, c.release))
        })?;
        if j.upstream != coord.to_string() {
            problems.push(format!("{what}: {}: upstream: says {}, but it is {coord}", j.file_name, j.upstream));
            continue;
        }
        let upstream_path = ws.maven.ensure(&[(coord.clone(), None)])?.remove(0);
        let upstream_bytes = crate::fsx::read::input(&upstream_path, crate::fsx::read::MAX_JAR, "upstream jar")?;
        let upstream_sha = sha256(&upstream_bytes);
        if j.upstream_sha256 != upstream_sha {
            problems.push(format!(
                "{what}: {}: upstream_sha256: says {}, but Maven Central's {coord} is {}",
                j.file_name,
                short(j.upstream_sha256),
                short(&upstream_sha)
            ));
        }
        let rel = jar::entries_of(&upstream_bytes, &upstream_path.display().to_string())?;
        // What the shipped jar holds is the finding, never okp's failure nor bad input: a jar that
        // is no zip, an entry whose CRC or size does not match its bytes, an entry over the cap, a
        // class that does not parse refuse the jar (exit 1), naming it. Its bytes are in memory, so
        // no error reading them is the machine's.
        let bad = |e: Error| match e {
            Error::Check(_) | Error::External(_) | Error::Source(_) | Error::Io { .. } | Error::Tree { .. } => {
                let m = e.to_string();
                Error::Check(if m.starts_with(j.file_name) { m } else { format!("{}: {m}", j.file_name) })
            }
            e => e,
        };
        let shipped = jar::entries_of(j.bytes, j.file_name).map_err(bad)?;
        let paths: Vec<&str> = edited.iter().map(|(p, _)| *p).collect();
        let rel_owned = proof::owned_by(&rel, &paths)?;
        let ship_owned = proof::owned_by(&shipped, &paths).map_err(bad)?;
        let ship_ours = proof::owned_by(&shipped, &ours).map_err(bad)?;
        let mut facts = JarFacts { file_name: j.file_name.to_string(), ..Default::default() };
        let name = j.file_name;

        // 1. Entries.
        for (entry, bytes) in &rel {
            if rel_owned.contains_key(entry) {
                continue;
            }
            match shipped.get(entry) {
                Some(b) if b == bytes => facts.identical += 1,
                Some(_) => {
                    problems.push(format!("{name}: {entry}: differs from the release jar, and no okp edit owns it"))
                }
                None => problems.push(format!("{name}: {entry}: in the release jar, missing here")),
            }
        }
        for entry in shipped.keys().filter(|e| !rel.contains_key(*e)) {
            if !ship_owned.contains_key(entry) && !ship_ours.contains_key(entry) {
                problems.push(format!("{name}: {entry}: not in the release jar, and from no source okp compiles"));
            }
        }
        for entry in ship_ours.keys().filter(|e| rel.contains_key(*e)) {
            problems.push(format!("{name}: {entry}: okp's own class has the name of a release class"));
        }
        let derived_replaced: Vec<String> = rel_owned.keys().filter(|e| shipped.contains_key(*e)).cloned().collect();
        let derived_removed: Vec<String> = rel_owned.keys().filter(|e| !shipped.contains_key(*e)).cloned().collect();
        let derived_added: Vec<String> = ship_owned
            .keys()
            .chain(ship_ours.keys())
            .filter(|e| !rel.contains_key(*e))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for (field, said, found) in [
            ("replaced", j.replaced, &derived_replaced),
            ("added", j.added, &derived_added),
            ("removed", j.removed, &derived_removed),
        ] {
            let said: BTreeSet<&String> = said.iter().collect();
            let found: BTreeSet<&String> = found.iter().collect();
            if said != found {
                let extra: Vec<&&String> = said.difference(&found).take(3).collect();
                let missing: Vec<&&String> = found.difference(&said).take(3).collect();
                problems.push(format!(
                    "{what}: {name}: {field}: the list does not match the jar (listed, not found: {extra:?}; found, not \
                     listed: {missing:?})"
                ));
            }
        }
        (facts.replaced, facts.added, facts.removed) =
            (derived_replaced.len(), derived_added.len(), derived_removed.len());
        // Every one of okp's own sources must be there: a jar without them lacks a layer or a mode's files.
        for f in &ours {
            let Some(key) = jar::SourceKey::from_repo_path(f) else { continue };
            if !ship_ours.values().any(|(file, _)| file == f) {
                problems.push(format!(
                    "{name}: no class of okp's {}/{} (the {} {} patch set with layers {} has it)",
                    key.package_dir,
                    key.file_name,
                    c.release,
                    c.mode,
                    layers.label()
                ));
            }
        }

        // okp's own classes, by content: what okp's own sources compile to with the release's
        // compilers, flags and classpath, as the splice build compiles them.
        if let Some(compile) = c.ours_by_content.filter(|_| !ours.is_empty()) {
            let texts: Vec<(&str, &[u8])> = module_files
                .iter()
                .filter(|ch| ch.before.is_none())
                .map(|ch| (ch.path.as_str(), &ch.after[..]))
                .collect();
            let expected = compile(release, tree, j.module, &texts)?;
            let mut same = 0;
            // Missing classes are one finding per jar: an unpatched jar lacks every one of them,
            // and a line each would push the findings that say why out of the report's first 20.
            let mut missing: Vec<&str> = Vec::new();
            for (entry, bytes) in &expected {
                match ship_ours.get(entry) {
                    Some((_, b)) if *b == bytes.as_slice() => same += 1,
                    Some(_) => problems.push(format!(
                        "{name}: {entry}: okp's own class differs from what okp's sources compile to with {}'s \
                         compilers (sha256 {}, expected {})",
                        c.release,
                        short(&sha256(ship_ours[entry].1)),
                        short(&sha256(bytes))
                    )),
                    None => missing.push(entry.as_str()),
                }
            }
            if !missing.is_empty() {
                problems.push(format!(
                    "{name}: {} class(es) okp's sources compile to with {}'s compilers are not in the jar: {}",
                    missing.len(),
                    c.release,
                    missing.join(", ")
                ));
            }
            for entry in ship_ours.keys().filter(|e| !expected.contains_key(*e)) {
                problems.push(format!(
                    "{name}: {entry}: not a class okp's sources compile to with {}'s compilers",
                    c.release
                ));
            }
            facts.ours_compiled = Some(same);
        }

        // 2. Members.
        let files: Vec<(&str, &str)> = edited.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let unit = proof::compare_unit(&files, &rel_owned, &ship_owned, Some(c.release), ("release", "shipped"))
            .map_err(bad)?;
        facts.classes_compared = unit.classes_compared;
        facts.members_forgiven = unit.forgiven.values().map(Vec::len).sum();
        facts.members_changed =
            unit.changed_members.values().map(Vec::len).sum::<usize>().saturating_sub(facts.members_forgiven);
        problems.extend(unit.problems.iter().map(|p| format!("{name}: {p}")));

        // 3. What the record says each class changed: at least what no exception forgives, at most all that differs.
        if let Some(p) = c.provenance {
            let classes: BTreeSet<&String> = unit.changed_members.keys().collect();
            for class in &classes {
                let all: BTreeSet<&String> = unit.changed_members[*class].iter().collect();
                let forgiven: BTreeSet<&String> =
                    unit.forgiven.get(*class).map(|v| v.iter().collect()).unwrap_or_default();
                let said: BTreeSet<&String> =
                    p.delta.changed_members.get(*class).map(|v| v.iter().collect()).unwrap_or_default();
                let unsaid: Vec<&&String> = all.difference(&forgiven).filter(|m| !said.contains(*m)).take(3).collect();
                let beyond: Vec<&&String> = said.difference(&all).take(3).collect();
                if !unsaid.is_empty() || !beyond.is_empty() {
                    problems.push(format!(
                        "{what}: provenance.delta.changed_members: {class}: {}{}",
                        if unsaid.is_empty() {
                            String::new()
                        } else {
                            format!("changed in the jar, not recorded: {unsaid:?}; ")
                        },
                        if beyond.is_empty() {
                            String::new()
                        } else {
                            format!("recorded, not changed in the jar: {beyond:?}")
                        }
                    ));
                }
            }
            let module_classes: BTreeSet<String> =
                rel_owned.keys().chain(ship_owned.keys()).map(|k| k.trim_end_matches(".class").to_string()).collect();
            for class in p.delta.changed_members.keys().filter(|k| module_classes.contains(*k) && !classes.contains(k))
            {
                problems.push(format!("{what}: provenance.delta.changed_members: {class}: recorded as changed, identical to the release's"));
            }
        }
        out.jars.push(facts);
    }
    if !problems.is_empty() {
        return Err(refused(what, problems));
    }
    out.seconds = t0.elapsed().as_secs_f64();
    Ok(out)
}

fn short(h: &str) -> &str {
    h.get(..16).unwrap_or(h)
}

fn refused(what: &str, problems: Vec<String>) -> Error {
    let n = problems.len();
    let shown: Vec<String> = problems.into_iter().take(20).map(|p| crate::escape::one_line(&p)).collect();
    Error::Check(format!(
        "the jars are not what {what} says, re-derived from their bytes with okp's own data ({n} finding(s); \
         refusing them):\n  {}",
        shown.join("\n  ")
    ))
}
