//! Provenance proofs of a splice build: every patched jar is the release plus
//! exactly our edits. The splice backend compiles each edited upstream unit
//! twice with the same compiler, flags and classpath — as the release ships it
//! (unpatched) and with our edits (patched) — and this module compares:
//!
//! 1. **Source ≡ release**: each unpatched class against the class of the same
//!    name in the release's jar, normalised (`bytecode`). A class or member
//!    that differs means the source we compiled is not the source the release
//!    was built from (or our compile is not the release's), and the build is
//!    refused, naming the source, the class and the members. The differences
//!    a release's own compiler makes and ours cannot reproduce are forgiven
//!    only where `EXCEPTIONS` lists them for that release and source, only of
//!    the kind listed, and every use is recorded.
//! 2. **Patch delta**: each patched class against the unpatched class (same
//!    compiler both sides, so exact after normalisation). Every member that
//!    differs must belong to the code an edit sits in — see `EditSite` — and
//!    every class only the patched compile has must come from our own files
//!    (patches/common, patches/metrics). Anything else refuses the build.
//!
//! The results, with the sha256 of every source compiled and of the sources
//! jars they came from, form the `provenance` of okp-build.json.
//!
//! Not here: compiling (`splice`), reading class files (`bytecode`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::jar::{self, SourceKey};
use super::synthetic;
use crate::anchor::{self, ScopeKind};
use crate::apply::Plan;
use crate::error::{Error, Result};
use crate::hash::sha256;
use crate::jvm::classfile::{self, ClassDiff, Kind, MemberId, Relaxation};
use crate::maven::Maven;
use crate::model::{Coordinate, Release};
use crate::patchset::{MARK_BEGIN, MARK_END};
use crate::source::SourceTree;
use crate::version::KafkaVersion;

/// A documented difference between a release's classes and a recompile of
/// the same source that okp forgives, for the releases and the source named.
pub struct Exception {
    pub from: &'static str,
    pub to: &'static str,
    /// Repository path of the source unit whose classes it covers.
    pub file: &'static str,
    pub relaxations: &'static [Relaxation],
    pub cause: &'static str,
}

/// The differences found by experiment (`okp build` on every reference
/// release, evidence/build/proof/) that okp cannot reproduce and forgives.
pub const EXCEPTIONS: &[Exception] = &[
    Exception {
        from: "2.7.0",
        to: "2.7.2",
        file: "core/src/main/scala/",
        relaxations: &[Relaxation::ScalaOptimizerOff],
        cause: "the release was compiled by scalac 2.13.3 with its optimizer (-opt:l:inline -opt-inline-from:scala.** \
                and kafka.**); that optimizer cannot read JDK 17's class files, so okp compiles 2.7 with it off and the \
                bodies of methods it inlined into differ",
    },
    Exception {
        from: "3.7.0",
        to: "3.9.2",
        file: "metadata/src/main/java/",
        relaxations: &[Relaxation::JavacNullCheck, Relaxation::JavacCheckcast, Relaxation::JavacEnumValues],
        cause: "kafka-metadata 3.7-3.9 was compiled by javac 8 (getClass null checks, lambda$null$ names, casts \
                omitted per JDK-8058199, enum arrays built in <clinit>); okp compiles with javac 17 --release 8",
    },
    Exception {
        from: "4.0.0",
        to: "4.4.0",
        file: "metadata/src/main/java/",
        relaxations: &[Relaxation::JavacMandatedParameters],
        cause: "kafka-metadata 4.x was compiled by javac 21 or later, which writes MethodParameters for an inner \
                class constructor's outer instance and for an enum's constructor and valueOf; okp compiles with \
                javac 17 --release 17 (4.4.0: seen on PartitionChangeBuilder$Election, 2026-11-30)",
    },
];

fn exceptions_for(version: KafkaVersion, file: &str) -> Vec<Relaxation> {
    EXCEPTIONS
        .iter()
        .filter(|e| file.starts_with(e.file))
        .filter(|e| {
            let (from, to) = (e.from.parse::<KafkaVersion>(), e.to.parse::<KafkaVersion>());
            matches!((from, to), (Ok(f), Ok(t)) if f <= version && version <= t)
        })
        .flat_map(|e| e.relaxations.iter().copied())
        .collect()
}

/// What okp-build.json records about where a build came from and what was proved.
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    pub schema: u32,
    /// The tree the upstream sources were read from.
    pub tree: String,
    /// Every source file compiled: its sha256 as the release ships it (none for our own
    /// files) and as compiled into the patched jar.
    pub sources: Vec<SourceHash>,
    /// The release's sources jars (the tree, when it is the release's own, is read from them).
    pub sources_jars: Vec<Artifact>,
    /// `org.scala-lang:scala-compiler:V` (with its jar's sha256) and `javac -version`, as used.
    pub compilers: BTreeMap<String, String>,
    pub release: ReleaseProof,
    pub delta: DeltaProof,
    /// A `--tree`/`--git` source built with `--allow-modified`: its files that differ from the
    /// release's sources jars where the splice compiles nothing (`path (why)`). Those changes are
    /// NOT in the jars: the jars are the release plus okp's edits, whatever the fork holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_built: Vec<String>,
}

impl Provenance {
    pub const SCHEMA: u32 = 1;

    /// Whether both proofs passed, the source ≡ release proof enforced with no difference left
    /// (records of older okp that recorded differences instead of refusing them do not pass). What
    /// every consumer requires before it re-derives the jars (`recheck`).
    pub fn passed(&self) -> bool {
        let r = &self.release;
        let release = r.passed && r.enforced && r.differences.is_empty() && r.not_established.is_empty();
        self.schema == Self::SCHEMA && release && self.delta.passed && r.classes_compared > 0
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SourceHash {
    pub path: String,
    pub upstream_sha256: Option<String>,
    pub patched_sha256: String,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Artifact {
    pub coordinate: String,
    pub sha256: String,
}

/// Source ≡ release: the unpatched recompile against the release's classes.
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ReleaseProof {
    pub classes_compared: usize,
    /// Classes whose bytes equal the release's.
    pub byte_identical: usize,
    /// Classes equal only after normalisation.
    pub normalised_equal: usize,
    /// Members forgiven by an exception, with the kind and how often.
    pub exceptions_used: Vec<ExceptionUse>,
    pub passed: bool,
    /// Whether a difference refuses the build: always, in records this okp writes (`enforced`).
    #[serde(default)]
    pub enforced: bool,
    /// Differences an older okp recorded instead of refusing them (never written now; a record
    /// holding any does not pass).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// Differences an older okp recorded apart for ReplicaManager.scala (never written now; a
    /// record holding any does not pass).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_established: Vec<String>,
}

/// Whether the source ≡ release proof refuses a build of `version` on a difference: on every
/// release. okp's recompile reproduces every release's classes up to `EXCEPTIONS` (2.7.0–4.3.1,
/// both layers, evidence/build/proof/: since the scalac view of `splice`, every core class from
/// 2.8.0 on byte for byte), so a difference means the sources are not the release's. Nothing is
/// forgiven file-wide or release-wide any more; a record that says otherwise does not pass.
pub fn enforced(_version: KafkaVersion) -> bool {
    true
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExceptionUse {
    pub class: String,
    pub member: String,
    pub relaxation: Relaxation,
    pub count: usize,
}

/// Patch delta: the patched recompile against the unpatched one.
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct DeltaProof {
    pub classes_compared: usize,
    pub unchanged: usize,
    /// Per class, the members that differ (all inside the code our edits sit in).
    pub changed_members: BTreeMap<String, Vec<String>>,
    /// Classes of our own files.
    pub new_classes: Vec<String>,
    pub passed: bool,
}

/// The classes of `all` (jar entry name -> bytes) that `files` (repository paths) own,
/// each with the path of the file that owns it.
pub fn owned_by<'a>(
    all: &'a BTreeMap<String, Vec<u8>>,
    files: &[&str],
) -> Result<BTreeMap<String, (String, &'a [u8])>> {
    let keys: Vec<(SourceKey, &str)> =
        files.iter().filter_map(|f| SourceKey::from_repo_path(f).map(|k| (k, *f))).collect();
    let mut out = BTreeMap::new();
    for (name, bytes) in all.iter().filter(|(n, _)| n.ends_with(".class")) {
        let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
        if !keys.iter().any(|(k, _)| k.package_dir == dir) {
            continue;
        }
        let info = classfile::parse(bytes).map_err(|e| Error::External(format!("{name}: {e}")))?;
        if let Some((_, file)) = keys.iter().find(|(k, _)| k.owns(name, info.source_file.as_deref())) {
            out.insert(name.clone(), (file.to_string(), bytes.as_slice()));
        }
    }
    Ok(out)
}

fn read(name: &str, what: &str, bytes: &[u8]) -> Result<classfile::Class> {
    classfile::read(bytes).map_err(|e| Error::External(format!("{name} ({what}): cannot read the class file: {e}")))
}

fn simple(class: &str) -> &str {
    let c = class.strip_suffix(".class").unwrap_or(class);
    c.rsplit('/').next().unwrap_or(c)
}

fn list(members: &[MemberId]) -> String {
    members.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
}

/// Source ≡ release for one module: `release` are the release jar's classes of the
/// edited files, `recompiled` the unpatched compile's. Refuses with every difference named.
pub fn prove_release(
    version: KafkaVersion,
    enforce: bool,
    release: &BTreeMap<String, (String, &[u8])>,
    recompiled: &BTreeMap<String, (String, &[u8])>,
    proof: &mut ReleaseProof,
) -> Result<()> {
    let mut problems = Vec::new();
    for (name, (file, bytes)) in release {
        let Some((_, ours)) = recompiled.get(name) else {
            problems.push((
                file.to_string(),
                format!("{}: class {} in the release jar, not in your source", base(file), simple(name)),
            ));
            continue;
        };
        proof.classes_compared += 1;
        if bytes == ours {
            proof.byte_identical += 1;
            continue;
        }
        let (a, b) = (read(name, "release", bytes)?, read(name, "recompiled", ours)?);
        let d = classfile::compare(&a, &b);
        if d.is_empty() {
            proof.normalised_equal += 1;
            continue;
        }
        let (left, uses) = forgive(version, file, &a, &b, &d);
        if std::env::var_os("OKP_PROOF_DEBUG").is_some() {
            for m in &left.differ {
                let (x, y) = (a.methods.get(&m.key), b.methods.get(&m.key));
                crate::out::block(&format!("--- {m}\nrelease: {x:#?}\nrecompiled: {y:#?}\n"));
            }
        }
        if left.is_empty() {
            proof.normalised_equal += 1;
            proof.exceptions_used.extend(uses);
            continue;
        }
        let mut parts = Vec::new();
        if !left.only_a.is_empty() {
            parts.push(format!("{} in the release jar, not in your source", list(&left.only_a)));
        }
        if !left.only_b.is_empty() {
            parts.push(format!("{} in your source, not in the release jar", list(&left.only_b)));
        }
        if !left.differ.is_empty() {
            parts.push(format!("{} differ from the release jar", list(&left.differ)));
        }
        problems.push((file.to_string(), format!("{}: {}: {}", base(file), simple(name), parts.join("; "))));
    }
    for (name, (file, _)) in recompiled.iter().filter(|(n, _)| !release.contains_key(*n)) {
        problems.push((
            file.to_string(),
            format!("{}: class {} in your source, not in the release jar", base(file), simple(name)),
        ));
    }
    proof.enforced = enforce;
    let refused: Vec<&str> = problems.iter().map(|(_, m)| m.as_str()).collect();
    if !refused.is_empty() {
        return Err(Error::Check(format!(
            "{NOT_THE_RELEASE} {version} (refusing to build on them):\n  {}",
            refused.join("\n  ")
        )));
    }
    // One call per module: the proof passes when no module differs (a refusal ends the build).
    proof.passed = enforce && proof.differences.is_empty() && proof.not_established.is_empty();
    Ok(())
}

/// How the source ≡ release proof's refusal begins (`is_release_refusal`).
const NOT_THE_RELEASE: &str = "the sources compiled are not the release's";

/// Whether `e` is the source ≡ release proof's refusal (not the patch delta's).
pub fn is_release_refusal(e: &Error) -> bool {
    matches!(e, Error::Check(m) if m.starts_with(NOT_THE_RELEASE))
}

/// What is left of `d`, the differences between a release's class `a` and a recompile `b` of its
/// source `file`, once the exceptions of `version` (`EXCEPTIONS`) forgive what they cover; with
/// each use. The one place the release's compiler differences are forgiven: the build's source ≡
/// release proof and every consumer's re-check (`recheck`) call it.
pub(crate) fn forgive(
    version: KafkaVersion,
    file: &str,
    a: &classfile::Class,
    b: &classfile::Class,
    d: &ClassDiff,
) -> (ClassDiff, Vec<ExceptionUse>) {
    let allowed = exceptions_for(version, file);
    let mut left = ClassDiff { only_a: d.only_a.clone(), only_b: d.only_b.clone(), differ: Vec::new() };
    let mut uses = Vec::new();
    if allowed.contains(&Relaxation::ScalaOptimizerOff) {
        // Inlined code brings the inner classes it uses into the InnerClasses list.
        let inner = |m: &MemberId| m.kind == Kind::Class && m.key == "InnerClasses";
        for m in d.only_a.iter().chain(&d.only_b).chain(&d.differ).filter(|m| inner(m)) {
            let relaxation = Relaxation::ScalaOptimizerOff;
            uses.push(ExceptionUse { class: a.name.clone(), member: m.to_string(), relaxation, count: 1 });
        }
        // Inlined closures from the Scala library bring a `$deserializeLambda$` with them.
        let deser = |m: &MemberId| m.kind == Kind::Method && m.name() == "$deserializeLambda$";
        for m in d.only_a.iter().chain(&d.only_b).filter(|m| deser(m)) {
            let relaxation = Relaxation::ScalaOptimizerOff;
            uses.push(ExceptionUse { class: a.name.clone(), member: m.to_string(), relaxation, count: 1 });
        }
        left.only_a.retain(|m| !inner(m) && !deser(m));
        left.only_b.retain(|m| !inner(m) && !deser(m));
    }
    if allowed.contains(&Relaxation::JavacEnumValues) {
        let values = format!("$values:()[L{};", b.name);
        let clinit = MemberId::method("<clinit>:()V");
        let inlined = classfile::enum_values_inlined(b);
        let same = inlined
            .as_ref()
            .zip(a.methods.get(&clinit.key))
            .is_some_and(|(x, y)| classfile::method_equal_modulo(y, x, &[Relaxation::JavacCheckcast]).is_some());
        if same && left.only_b.iter().any(|m| m.key == values) && d.differ.contains(&clinit) {
            left.only_b.retain(|m| m.key != values);
            let relaxation = Relaxation::JavacEnumValues;
            uses.push(ExceptionUse { class: a.name.clone(), member: clinit.to_string(), relaxation, count: 1 });
        }
    }
    let enum_values_forgiven = uses.iter().any(|u| u.relaxation == Relaxation::JavacEnumValues);
    for m in &d.differ {
        if enum_values_forgiven && m.key == "<clinit>:()V" {
            continue;
        }
        let inner_classes = m.kind == Kind::Class && m.key == "InnerClasses";
        if inner_classes && allowed.contains(&Relaxation::ScalaOptimizerOff) {
            continue;
        }
        let forgiven = match m.kind {
            Kind::Method if !allowed.is_empty() => {
                classfile::method_equal_modulo(&a.methods[&m.key], &b.methods[&m.key], &allowed)
            }
            _ => None,
        };
        match forgiven {
            Some(used) => {
                for (relaxation, count) in used {
                    uses.push(ExceptionUse { class: a.name.clone(), member: m.to_string(), relaxation, count });
                }
            }
            None => left.differ.push(m.clone()),
        }
    }
    (left, uses)
}

fn base(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// Where one of our inserted blocks sits in a patched file, read from the
/// source by indentation (`anchor::scopes`) at its opening marker line — that
/// is, where the edit's anchor put it, not what the block's own text says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditSite {
    /// 1-based line of the `// OBSERVER PATCH:` marker in the patched file.
    pub line: usize,
    /// The innermost enclosing type (class, object, trait, interface).
    pub class: Option<String>,
    /// Enclosing methods, innermost first; empty for a block at class level.
    pub methods: Vec<String>,
    /// For a block at class level: the names it defines at its own level
    /// (methods, vals, vars, Java fields), which become members of the class.
    pub defines: Vec<String>,
    /// For a block at class level: the types whose declaration line it holds
    /// (`class LeaderAcceptor implements …`): their header (super class,
    /// interfaces, flags) is the edit's.
    pub declares: Vec<String>,
}

/// The edit sites of a patched file, from its markers.
pub fn edit_sites(patched: &str) -> Vec<EditSite> {
    let lines = anchor::lines(patched);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with(MARK_BEGIN) {
            i += 1;
            continue;
        }
        let end = (i + 1..lines.len()).find(|&j| lines[j].trim_start().starts_with(MARK_END)).unwrap_or(lines.len());
        let scopes = anchor::scopes(&lines, i, false);
        let class = scopes.iter().find(|(_, k, _)| *k == ScopeKind::Type).map(|(_, _, n)| n.clone());
        // Methods up to the innermost type: a method of an outer class does not hold this block.
        let methods: Vec<String> =
            scopes.iter().take_while(|(_, k, _)| *k == ScopeKind::Method).map(|(_, _, n)| n.clone()).collect();
        let (mut defines, mut declares) = (Vec::new(), Vec::new());
        if methods.is_empty() {
            let indent = lines[i].len() - lines[i].trim_start().len();
            for l in &lines[i + 1..end] {
                if l.trim().is_empty() || l.len() - l.trim_start().len() != indent {
                    continue;
                }
                match anchor::definition(l) {
                    Some((ScopeKind::Method, n)) => defines.push(n),
                    Some((ScopeKind::Type, n)) => declares.push(n),
                    _ => {
                        if let Some(n) = val_name(l).or_else(|| java_field_name(l)) {
                            defines.push(n);
                        }
                    }
                }
            }
        }
        out.push(EditSite { line: i + 1, class, methods, defines, declares });
        i = end + 1;
    }
    out
}

/// `val x = …` / `private lazy val x: T = …` / `var x` -> `x`.
fn val_name(line: &str) -> Option<String> {
    let mut t = line.trim_start();
    for m in ["private ", "protected ", "override ", "final ", "lazy ", "@volatile "] {
        t = t.strip_prefix(m).unwrap_or(t);
    }
    let rest = t.strip_prefix("val ").or_else(|| t.strip_prefix("var "))?;
    let n: String = rest.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!n.is_empty()).then_some(n)
}

/// `private java.util.Set<Integer> observersCounted = …;` -> `observersCounted`: a Java
/// field declared at class level (a statement cannot stand there).
fn java_field_name(line: &str) -> Option<String> {
    let t = line.trim();
    if !t.ends_with(';') || t.starts_with("//") || t.starts_with('@') {
        return None;
    }
    let head = t.split_once('=').map_or(t.trim_end_matches(';'), |(h, _)| h).trim();
    if head.contains('(') || head.split_whitespace().count() < 2 {
        return None;
    }
    let n = head.rsplit(char::is_whitespace).next()?;
    (n.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$') && !n.is_empty()).then(|| n.to_string())
}

/// Whether `class` (a jar entry or internal name) is the type `t` of a source:
/// `Partition`, the object `Partition$`, the nested `Outer$LeaderAcceptor`.
fn class_is(class: &str, t: &str) -> bool {
    let s = simple(class);
    let s = s.strip_suffix('$').unwrap_or(s);
    s == t || s.ends_with(&format!("${t}"))
}

/// Whether a bytecode member named `n` holds code written in method `m`: the
/// method itself, a local def lifted out of it (`m$1`), a lambda body in it
/// (Scala `$anonfun$m$2`, `$anonfun$m$2$adapted`; Java `lambda$m$0`).
fn belongs_to(n: &str, m: &str) -> bool {
    let local = n
        .strip_prefix(m)
        .and_then(|r| r.strip_prefix('$'))
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    // Java lambda bodies carry their caller's name (see `bytecode`), a nested one its outer lambda's.
    let java_lambda = n.starts_with("lambda$") && n.contains(&format!("lambda${m}$"));
    n == m || local || n.starts_with(&format!("$anonfun${m}$")) || java_lambda
}

/// A member name without scalac's expanded-name prefix: a private member another class reaches
/// (a lambda body a nested class calls, 2.13.3 on 2.7.2) is made public and renamed
/// `<owner's full name, '$' for '/'>$$<name>`: `kafka$cluster$Partition$$$anonfun$new$10` is
/// `$anonfun$new$10` of `kafka/cluster/Partition`. Only the owner's own prefix is stripped.
fn unexpanded<'n>(class: &str, n: &'n str) -> &'n str {
    let c = class.strip_suffix(".class").unwrap_or(class);
    let owner = c.strip_suffix('$').unwrap_or(c).replace('/', "$");
    n.strip_prefix(owner.as_str()).and_then(|r| r.strip_prefix("$$")).filter(|r| !r.is_empty()).unwrap_or(n)
}

/// Whether a changed member of `class` is explained by one of `sites`.
pub fn explained(class: &str, m: &MemberId, sites: &[EditSite]) -> bool {
    let n = unexpanded(class, m.name());
    sites.iter().filter(|s| s.class.as_deref().is_some_and(|t| class_is(class, t))).any(|s| match m.kind {
        Kind::Method | Kind::Field if !s.methods.is_empty() => s.methods.iter().any(|x| belongs_to(n, x)),
        Kind::Method | Kind::Field => {
            ["<init>", "<clinit>"].contains(&n)
                || n.starts_with("$anonfun$new$")
                || s.defines.iter().any(|d| n == d || n == format!("{d}_$eq") || belongs_to(n, d))
        }
        // New members change the pickled Scala signature; only a class-level block defines any.
        Kind::Class if m.key == "ScalaSignature" => !s.defines.is_empty(),
        Kind::Class => false,
    }) || (m.kind == Kind::Class && m.key == "header" && declared(class, sites))
}

/// Whether an edit holds `class`'s declaration line.
fn declared(class: &str, sites: &[EditSite]) -> bool {
    sites.iter().any(|s| s.declares.iter().any(|t| class_is(class, t)))
}

/// One side of the delta proof, read per source file with its synthetic names
/// canonicalised (`synthetic`): canonical internal name -> (file, class, real name), and
/// where each local or anonymous class is defined.
type Side = (BTreeMap<String, (String, classfile::Class, String)>, BTreeMap<String, (String, Option<String>)>);

fn read_side(owned: &BTreeMap<String, (String, &[u8])>, what: &str) -> Result<Side> {
    let mut per_file: BTreeMap<&str, BTreeMap<String, classfile::Class>> = BTreeMap::new();
    for (name, (file, bytes)) in owned {
        let c = read(name, what, bytes)?;
        per_file.entry(file.as_str()).or_default().insert(c.name.clone(), c);
    }
    let (mut out, mut definers) = (BTreeMap::new(), BTreeMap::new());
    for (file, mut classes) in per_file {
        let canonical = synthetic::canonicalise(&mut classes);
        for (name, c) in classes {
            let real = canonical.real.get(&name).cloned().unwrap_or_else(|| name.clone());
            out.insert(name, (file.to_string(), c, real));
        }
        definers.extend(canonical.definers);
    }
    Ok((out, definers))
}

/// Whether a local or anonymous class only one side has is explained: an edit sits in
/// the member that defines it.
fn class_explained(definer: Option<&(String, Option<String>)>, sites: &[EditSite]) -> bool {
    match definer {
        Some((outer, Some(m))) => explained(outer, &MemberId::method(&format!("{m}:")), sites),
        _ => false,
    }
}

/// The InnerClasses rows of a class attribute value, keyed by the inner class.
fn inner_rows(v: Option<&String>) -> BTreeMap<String, String> {
    v.map(|v| {
        v.split("; ")
            .filter(|r| !r.is_empty())
            .map(|r| (r.split(' ').next().unwrap_or_default().to_string(), r.to_string()))
            .collect()
    })
    .unwrap_or_default()
}

/// What `compare_unit` found between two sets of classes of the edited files.
#[derive(Debug, Default)]
pub(crate) struct UnitDelta {
    pub classes_compared: usize,
    pub unchanged: usize,
    /// Per class (real name), every member that differs, forgiven ones included.
    pub changed_members: BTreeMap<String, Vec<String>>,
    /// Per class, the members of `changed_members` that only a release exception explains.
    pub forgiven: BTreeMap<String, Vec<String>>,
    pub exceptions_used: Vec<ExceptionUse>,
    /// Changes no edit explains, each a sentence naming the file, class and members.
    pub problems: Vec<String>,
}

/// The comparison at the heart of the patch delta proof and of every consumer's re-check
/// (`recheck`): the classes `before_raw` (the unpatched compile, or the release jar's own) against
/// `after_raw` (the patched compile, or a shipped jar's), both as `owned_by` gives them for the
/// edited files `files` (path, patched text). Every member that differs must sit where an edit
/// sits (`EditSite`); with `forgive_as`, the release's exceptions (`forgive`) may explain a member
/// no edit holds, since a release jar was built by the release's compiler, not ours. And every
/// edit must show: an edit site no change reaches is a problem too (a jar without the edit, or with
/// another mode's or layer's edits).
pub(crate) fn compare_unit(
    files: &[(&str, &str)],
    before_raw: &BTreeMap<String, (String, &[u8])>,
    after_raw: &BTreeMap<String, (String, &[u8])>,
    forgive_as: Option<KafkaVersion>,
    sides: (&str, &str),
) -> Result<UnitDelta> {
    let mut out = UnitDelta::default();
    let sites: BTreeMap<&str, Vec<EditSite>> = files.iter().map(|(f, text)| (*f, edit_sites(text))).collect();
    let (before, before_definers) = read_side(before_raw, sides.0)?;
    let (after, after_definers) = read_side(after_raw, sides.1)?;
    let here_of = |file: &str| sites.get(file).map(Vec::as_slice).unwrap_or_default();
    // Which edit sites a change shows, per file: (file, index into its sites).
    let mut shown: BTreeSet<(String, usize)> = BTreeSet::new();
    let mut show = |file: &str, class: &str, m: &MemberId| {
        for (i, s) in here_of(file).iter().enumerate() {
            if explained(class, m, std::slice::from_ref(s)) {
                shown.insert((file.to_string(), i));
            }
        }
    };
    // Local and anonymous classes only one side has: explained when an edit sits where they are defined.
    let mut synthetic_changes: BTreeSet<String> = BTreeSet::new();
    for (canonical, (file, _, real)) in before.iter().filter(|(n, _)| !after.contains_key(*n)) {
        if class_explained(before_definers.get(canonical), here_of(file)) {
            synthetic_changes.insert(canonical.clone());
            out.changed_members.insert(real.clone(), vec!["class removed (defined in an edited member)".into()]);
        } else {
            out.problems.push(format!("class {} is gone from the {} classes", simple(real), sides.1));
        }
    }
    for (canonical, (file, _, real)) in after.iter().filter(|(n, _)| !before.contains_key(*n)) {
        if class_explained(after_definers.get(canonical), here_of(file)) {
            synthetic_changes.insert(canonical.clone());
            out.changed_members.insert(real.clone(), vec!["class added (defined in an edited member)".into()]);
            if let Some((outer, Some(m))) = after_definers.get(canonical) {
                show(file, outer, &MemberId::method(&format!("{m}:")));
            }
        } else {
            out.problems.push(format!("{}: class {} only in the {} classes", base(file), simple(real), sides.1));
        }
    }
    for (canonical, (file, b, real)) in &after {
        let Some((_, a, _)) = before.get(canonical) else { continue };
        out.classes_compared += 1;
        fn raw<'a>(m: &BTreeMap<String, (String, &'a [u8])>, n: &str) -> Option<&'a [u8]> {
            m.get(&format!("{n}.class")).map(|(_, b)| *b)
        }
        let same_bytes = raw(before_raw, &before[canonical].2).is_some_and(|x| raw(after_raw, real) == Some(x));
        let d = if same_bytes { ClassDiff::default() } else { classfile::compare(a, b) };
        let changed = d.all();
        if changed.is_empty() {
            out.unchanged += 1;
            continue;
        }
        let here = here_of(file);
        for m in &changed {
            show(file, &a.name, m);
        }
        // With a release on one side, the release's exceptions may explain what no edit does.
        let unforgiven: Vec<MemberId> = match forgive_as {
            Some(version) => {
                let (left, uses) = forgive(version, file, a, b, &d);
                let left = left.all();
                let forgiven: Vec<String> =
                    changed.iter().filter(|m| !left.contains(m)).map(|m| m.to_string()).collect();
                if !forgiven.is_empty() {
                    out.forgiven.insert(real.clone(), forgiven);
                }
                out.exceptions_used.extend(uses);
                left
            }
            None => changed.clone(),
        };
        let mut stray: Vec<MemberId> = unforgiven.iter().filter(|m| !explained(&a.name, m, here)).cloned().collect();
        // A local or anonymous class's code is written inside the member that defines it: where an
        // edit sits in that member, so do the class's methods (a gauge's `value()` calling a lambda
        // body the edit renumbered, 2.7.2's ReplicaManager).
        if class_explained(after_definers.get(canonical), here) {
            stray.retain(|m| m.kind == Kind::Class);
        }
        let explained_members: Vec<&MemberId> =
            changed.iter().filter(|m| m.kind != Kind::Class && explained(&a.name, m, here)).collect();
        stray.retain(|m| {
            if m.kind == Kind::Class && m.key == "InnerClasses" {
                // Each row added or removed must name a class an explained change brings or
                // takes away: a class added or removed with an edit, or one an edited member uses.
                let (x, y) = (inner_rows(a.attrs.get(&m.key)), inner_rows(b.attrs.get(&m.key)));
                let keys: BTreeSet<&String> = x.keys().chain(y.keys()).filter(|k| x.get(*k) != y.get(*k)).collect();
                let header_types = |c: &classfile::Class| -> BTreeSet<String> {
                    c.interfaces.iter().cloned().chain(c.super_name.clone()).collect()
                };
                let (ha, hb) = (header_types(a), header_types(b));
                let declared_here = declared(&a.name, here);
                return !keys.iter().all(|k| {
                    synthetic_changes.contains(*k)
                        || (declared_here && ha.symmetric_difference(&hb).any(|t| t == *k))
                        || explained_members.iter().any(|e| {
                            let used = |c: &classfile::Class| {
                                let member =
                                    if e.kind == Kind::Method { c.methods.get(&e.key) } else { c.fields.get(&e.key) };
                                member.is_some_and(|mm| synthetic::mentions(mm, k))
                            };
                            used(a) || used(b)
                        })
                });
            }
            // `$deserializeLambda$` lists every lambda body: it may differ by the explained ones alone
            // (and exists on one side only when every lambda it lists is explained).
            if m.name() != "$deserializeLambda$" {
                return true;
            }
            let drop = |n: &str| explained(&a.name, &MemberId::method(&format!("{n}:")), here);
            let handles = |c: &classfile::Class| match c.methods.get(&m.key) {
                Some(x) => synthetic::lambda_handles(x, &c.name, &drop),
                None => Some(BTreeSet::new()),
            };
            let (hx, hy) = (handles(a), handles(b));
            hx.is_none() || hx != hy
        });
        if !stray.is_empty() && std::env::var_os("OKP_PROOF_DEBUG").is_some() {
            for m in &stray {
                let (x, y) = (a.methods.get(&m.key), b.methods.get(&m.key));
                crate::out::block(&format!("--- {m}\n{}: {x:#?}\n{}: {y:#?}\n", sides.0, sides.1));
                if m.kind != Kind::Method {
                    crate::out::block(&format!(
                        "{}: {:?}\n{}: {:?}\n",
                        sides.0,
                        a.attrs.get(&m.key),
                        sides.1,
                        b.attrs.get(&m.key)
                    ));
                }
            }
        }
        if !stray.is_empty() {
            out.problems.push(format!(
                "{}: {}: {} changed, but no edit sits in {}",
                base(file),
                simple(real),
                list(&stray),
                if stray.len() == 1 { "it" } else { "them" }
            ));
        }
        out.changed_members.insert(real.clone(), changed.iter().map(|m| m.to_string()).collect());
    }
    for (file, sites) in &sites {
        for (i, s) in sites.iter().enumerate() {
            if s.class.is_some() && !shown.contains(&(file.to_string(), i)) {
                out.problems.push(format!(
                    "{}: the edit at line {} (in {}) changed nothing in the {} classes",
                    base(file),
                    s.line,
                    s.methods.first().or(s.class.as_ref()).map_or("?", |x| x.as_str()),
                    sides.1
                ));
            }
        }
    }
    Ok(out)
}

/// Patch delta for one module. `files` are the edited upstream files with their
/// patched text; `ours` our own new files; `unpatched` / `patched` the two compiles.
pub fn prove_delta(
    files: &[(&str, &str)],
    ours: &[&str],
    unpatched: &BTreeMap<String, Vec<u8>>,
    patched: &BTreeMap<String, Vec<u8>>,
    proof: &mut DeltaProof,
) -> Result<()> {
    let edited: Vec<&str> = files.iter().map(|(f, _)| *f).collect();
    let before_raw = owned_by(unpatched, &edited)?;
    let after_raw = owned_by(patched, &edited)?;
    let new = owned_by(patched, ours)?;
    let unit = compare_unit(files, &before_raw, &after_raw, None, ("unpatched", "patched"))?;
    let mut problems = unit.problems;
    proof.classes_compared += unit.classes_compared;
    proof.unchanged += unit.unchanged;
    proof.changed_members.extend(unit.changed_members);
    proof.new_classes.extend(new.keys().map(|n| n.trim_end_matches(".class").to_string()));
    let theirs: BTreeSet<&String> = after_raw.keys().chain(new.keys()).collect();
    for name in patched.keys().filter(|n| !theirs.contains(n)) {
        problems.push(format!("class {} comes from no compiled source", simple(name)));
    }
    if !problems.is_empty() {
        return Err(Error::Check(format!(
            "the patched classes differ from the release's in more than our edits (refusing the build):\n  {}",
            problems.join("\n  ")
        )));
    }
    proof.passed = true;
    Ok(())
}

/// Whether splice builds prove their provenance: always, unless OKP_NO_PROOF is set
/// (for measuring what the proofs cost; such a record has no provenance, and
/// `okp verify --jars` refuses it).
pub fn enabled() -> bool {
    std::env::var_os("OKP_NO_PROOF").is_none()
}

/// Both proofs for one module: `files` are the module's compiled files (edited upstream
/// files and our own), `unpatched` / `patched` the two compiles' classes.
#[allow(clippy::too_many_arguments)]
pub fn prove_module(
    version: KafkaVersion,
    enforce: bool,
    upstream_jar: &Path,
    plan: &Plan,
    files: &[String],
    unpatched: &BTreeMap<String, Vec<u8>>,
    patched: &BTreeMap<String, Vec<u8>>,
    prov: &mut Provenance,
) -> Result<()> {
    let mine = plan.changes.iter().filter(|c| files.contains(&c.path));
    let edited: Vec<(&str, String)> = mine
        .clone()
        .filter(|c| c.before.is_some())
        .map(|c| (c.path.as_str(), String::from_utf8_lossy(&c.after).into_owned()))
        .collect();
    let ours: Vec<&str> = mine.filter(|c| c.before.is_none()).map(|c| c.path.as_str()).collect();
    let paths: Vec<&str> = edited.iter().map(|(p, _)| *p).collect();
    if !paths.is_empty() {
        let release_classes = jar::entries(upstream_jar)?;
        let release = owned_by(&release_classes, &paths)?;
        let recompiled = owned_by(unpatched, &paths)?;
        prove_release(version, enforce, &release, &recompiled, &mut prov.release)?;
    }
    let files: Vec<(&str, &str)> = edited.iter().map(|(p, t)| (*p, t.as_str())).collect();
    prove_delta(&files, &ours, unpatched, patched, &mut prov.delta)
}

/// Completes `prov` with the inputs: every compiled source's sha256 (as released and as
/// patched), the sources jars' sha256, and the compilers (`compilers` as the build used them).
pub fn inputs(
    maven: &Maven,
    release: &Release,
    tree: &dyn SourceTree,
    plan: &Plan,
    compilers: &BTreeMap<String, String>,
    javac_version: &str,
    mut prov: Provenance,
) -> Result<Provenance> {
    prov.schema = Provenance::SCHEMA;
    prov.tree = tree.describe();
    prov.sources = plan
        .changes
        .iter()
        .map(|c| SourceHash {
            path: c.path.clone(),
            upstream_sha256: c.before.as_deref().map(sha256),
            patched_sha256: sha256(&c.after),
        })
        .collect();
    let file_sha =
        |p: &Path| -> Result<String> { Ok(sha256(&crate::fsx::read::input(p, crate::fsx::read::MAX_JAR, "jar")?)) };
    // The sources jars are recorded only when they are what was read (a build from a checkout
    // or a git revision names its tree above, and may have no sources jar at all: 4.4.0).
    for c in release.sources.values().filter(|_| tree.is_release_sources_jar()) {
        prov.sources_jars
            .push(Artifact { coordinate: format!("{c}:sources"), sha256: file_sha(&maven.path(c, Some("sources")))? });
    }
    if let Some(opts) = compilers.get("scalac") {
        let c = Coordinate {
            group: "org.scala-lang".into(),
            artifact: "scala-compiler".into(),
            version: release.scala.clone(),
        };
        prov.compilers.insert("scala-compiler".into(), format!("{c} sha256 {}", file_sha(&maven.path(&c, None))?));
        prov.compilers.insert("scalac-options".into(), opts.split_once(' ').map_or("", |(_, o)| o).to_string());
    }
    if compilers.contains_key("javac") {
        prov.compilers.insert("javac".into(), javac_version.to_string());
    }
    Ok(prov)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patched() -> String {
        [
            "class Partition(val topic: String) {",
            "  newGauge(\"UnderReplicated\", () => 1)",
            "  // OBSERVER PATCH: gauges",
            "  newGauge(\"Observers\", () => 2)",
            "  def observerGaugeValues: Int = 3",
            "  val observerCount = 4",
            "  // END OBSERVER PATCH",
            "",
            "  private def canAddReplicaToIsr(followerReplicaId: Int): Boolean = {",
            "    // OBSERVER PATCH: gate",
            "    if (kafka.observer.ObserverIds.isObserver(followerReplicaId)) return false",
            "    // END OBSERVER PATCH",
            "    true",
            "  }",
            "}",
        ]
        .join("\n")
    }

    #[test]
    fn sites_are_read_from_where_the_markers_stand() {
        let s = edit_sites(&patched());
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].class.as_deref(), Some("Partition"));
        assert!(s[0].methods.is_empty());
        assert_eq!(s[0].defines, ["observerGaugeValues", "observerCount"]);
        assert_eq!(s[1].methods, ["canAddReplicaToIsr"]);
        assert!(s[1].defines.is_empty());
        assert_eq!(s[1].line, 10);
    }

    #[test]
    fn only_members_holding_an_edit_are_explained() {
        let s = edit_sites(&patched());
        let m = |k: &str| MemberId::method(k);
        let c = "kafka/cluster/Partition";
        assert!(explained(c, &m("canAddReplicaToIsr:(I)Z"), &s));
        assert!(explained(c, &m("$anonfun$canAddReplicaToIsr$1:(I)Z"), &s));
        assert!(explained(c, &m("<init>:(Ljava/lang/String;)V"), &s));
        assert!(explained(c, &m("$anonfun$new$3:()I"), &s));
        assert!(explained(c, &m("observerGaugeValues:()I"), &s));
        assert!(explained(c, &MemberId { kind: Kind::Field, key: "observerCount:I".into() }, &s));
        assert!(explained(c, &MemberId { kind: Kind::Class, key: "ScalaSignature".into() }, &s));
        // A method no edit sits in, a local def our code would add, another class.
        assert!(!explained(c, &m("maybeIncrementLeaderHW:()Z"), &s));
        assert!(!explained(c, &m("sneaky$1:(I)I"), &[s[1].clone()]));
        assert!(!explained("kafka/cluster/Replica", &m("canAddReplicaToIsr:(I)Z"), &s));
        assert!(!explained(c, &MemberId { kind: Kind::Class, key: "InnerClasses".into() }, &s));
        assert!(!explained(c, &m("canAddReplicaToIsrX:(I)Z"), &s));
    }

    #[test]
    fn types_match_objects_and_nested_classes() {
        assert!(class_is("kafka/cluster/Partition$.class", "Partition"));
        assert!(class_is("org/apache/kafka/controller/ReplicationControlManager$LeaderAcceptor", "LeaderAcceptor"));
        assert!(!class_is("kafka/cluster/PartitionListener", "Partition"));
        assert!(belongs_to("shouldWaitForReplicaToJoinIsr$1", "shouldWaitForReplicaToJoinIsr"));
        assert!(belongs_to("$anonfun$getOutOfSyncReplicas$1$adapted", "getOutOfSyncReplicas"));
        assert_eq!(
            unexpanded("kafka/cluster/Partition", "kafka$cluster$Partition$$$anonfun$new$10"),
            "$anonfun$new$10"
        );
        assert_eq!(unexpanded("kafka/cluster/Partition$", "kafka$cluster$Partition$$f$1"), "f$1");
        // Another owner's prefix, or nothing after it, is left as it is.
        assert_eq!(
            unexpanded("kafka/cluster/Replica", "kafka$cluster$Partition$$$anonfun$new$10"),
            "kafka$cluster$Partition$$$anonfun$new$10"
        );
        assert_eq!(unexpanded("kafka/cluster/Partition", "kafka$cluster$Partition$$"), "kafka$cluster$Partition$$");
        assert!(!belongs_to("getOutOfSyncReplicasX", "getOutOfSyncReplicas"));
    }
}
