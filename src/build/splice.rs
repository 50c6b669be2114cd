//! The splice backend: patched jars for a release without Gradle. It takes the
//! upstream sources of the files it patches from a `SourceTree` (the release's
//! sources jars by default; a checkout, an `okp sources` tree or a git revision
//! when Maven Central has no sources jar) and the binary jars from Maven
//! Central, recompiles only the patched compilation units (our new files and
//! every upstream file an edit touches) with the release's own Scala compiler
//! and javac --release, against the release's jars, and swaps exactly the
//! classes those sources produce into copies of the upstream jars.
//!
//! Not here: choosing the tree (`cmd::build`, `source::open`), Gradle (`build::gradle`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::jar::{self, SourceKey, SpliceReport};
use super::proof;
use super::record::{BuildRecord, JarResult};
use crate::apply;
use crate::error::{Error, Result};
use crate::hash::sha256;
use crate::jvm::classfile;
use crate::jvm::jdk::java_bin;
use crate::maven::Maven;
use crate::model::{Coordinate, Layers, Mode, Release};
use crate::source::{SourceTree, Spec};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

/// The registry classes every edited class must reference, per source module.
fn registry_for(module: &str) -> &'static str {
    match module {
        "metadata" => "org/apache/kafka/controller/ObserverReplicas",
        _ => "kafka/observer/ObserverIds",
    }
}

/// Why a splice build did not produce jars: the compiler's own words.
#[derive(Debug)]
pub struct CompileFailure {
    pub module: String,
    pub command: String,
    pub output: String,
}

pub enum SpliceOutcome {
    /// Boxed: the record is large beside a compile failure.
    Built(Box<BuildRecord>),
    CompileFailed(CompileFailure),
}

/// Runs a compiler; Ok(Err(output)) when it ran and rejected the sources.
fn run(cmd: &mut Command, what: &str) -> Result<std::result::Result<(), String>> {
    let o = cmd.output().map_err(|e| Error::External(format!("cannot run {what}: {e}")))?;
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    Ok(if o.status.success() { Ok(()) } else { Err(text) })
}

fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        // Classpaths are long and machine-specific: name them, do not print them.
        if a.len() > 200 {
            s.push_str(" <classpath>");
        } else {
            s.push(' ');
            s.push_str(&a);
        }
    }
    s
}

/// Every .class file under `dir` as (jar entry name, bytes).
fn classes_under(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<()> {
        let listing = |e| Error::io(format!("reading classes in {}", d.display()), e);
        for e in std::fs::read_dir(d).map_err(listing)? {
            let p = e.map_err(listing)?.path();
            if p.is_dir() {
                walk(root, &p, out)?;
            } else if p.extension().is_some_and(|x| x == "class") {
                let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().replace('\\', "/");
                out.insert(rel, crate::fsx::read::input(&p, crate::fsx::read::MAX_CLASS, "compiled class")?);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out)?;
    }
    Ok(out)
}

/// The class-data-sharing archive for scalac `what` on this JDK (`jvm::cds::archive`): scalac
/// maps its classes from one and saves about 1.5 s per compile. None with OKP_NO_CDS or when
/// `java -version` cannot run.
fn scalac_cds(maven: &Maven, what: &str) -> Option<(PathBuf, bool)> {
    if std::env::var_os("OKP_NO_CDS").is_some() {
        return None;
    }
    let version = crate::jvm::jdk::version_line(&java_bin("java")).ok()?;
    crate::jvm::cds::archive(&maven.repo_local, &version, what)
}

/// Scala versions whose optimizer cannot run on this machine's JDK 17: their
/// bundled ASM cannot read class files of major version 61, so every
/// optimized emit fails ("Unsupported class file major version 61"). They
/// compile with the optimizer off: the same semantics, less inlining.
fn optimizer_unusable(scala: &str) -> bool {
    let patch = |s: &str| s.strip_prefix("2.13.").and_then(|p| p.parse::<u32>().ok());
    patch(scala).is_some_and(|p| p < 5)
}

/// scalac options matching the upstream build's code generation: the
/// release's Java target and Kafka's optimizer settings (inline-kafka), and
/// a note when they had to differ.
fn scalac_options(release: &Release) -> (Vec<String>, Option<String>) {
    let mut o: Vec<String> = ["-release", &release.java_release.to_string(), "-encoding", "utf8", "-nowarn"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // Kafka's build enables these language features; they change no bytecode
    // but some upstream files need them to compile.
    o.extend(["-language:postfixOps", "-language:implicitConversions", "-language:existentials"].map(String::from));
    if optimizer_unusable(&release.scala) {
        o.push("-opt:l:none".into());
        let why = format!(
            "optimizer off: scalac {} cannot read JDK 17 class files (major 61) in its optimizer",
            release.scala
        );
        return (o, Some(why));
    }
    o.push("-opt:l:inline".into());
    if release.version.major == 2 && release.version.minor == 7 {
        o.push("-opt-inline-from:scala.**".into());
    }
    o.push("-opt-inline-from:org.apache.kafka.**".into());
    o.push("-opt-inline-from:kafka.**".into());
    (o, None)
}

/// `javac -version`'s line, asked once per process, and kept per JDK (named by its files,
/// `jdk::identity`) in `okp-jdk/` of the local repository: a JVM start (0.3–1 s) a build need not
/// pay again while the JDK is the same.
fn javac_version(repo_local: &Path) -> std::result::Result<String, String> {
    static V: std::sync::OnceLock<std::result::Result<String, String>> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        let kept = crate::jvm::jdk::identity("javac")
            .map(|id| repo_local.join("okp-jdk").join(format!("javac-version-{}.txt", &sha256(id.as_bytes())[..32])));
        if let Some(Ok(Some(v))) = kept.as_ref().map(|f| crate::fsx::read::text_if_any(f, 4096, "kept javac version")) {
            if v.starts_with("javac ") {
                return Ok(v.trim().to_string());
            }
        }
        let v = Command::new(java_bin("javac"))
            .arg("-version")
            .output()
            .map(|o| {
                format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
                    .trim()
                    .to_string()
            })
            .map_err(|e| e.to_string())?;
        if let (Some(f), true) = (&kept, v.starts_with("javac ") && !v.contains('\n')) {
            let _ = crate::fsx::write_atomic(f, v.as_bytes());
        }
        Ok(v)
    })
    .clone()
}

/// `java -version`'s text (empty when it cannot run), asked once per process.
fn java_version() -> String {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        Command::new(java_bin("java"))
            .arg("-version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .unwrap_or_default()
    })
    .clone()
}

/// The release's Scala compiler.
pub fn scala_compiler(release: &Release) -> Coordinate {
    Coordinate { group: "org.scala-lang".into(), artifact: "scala-compiler".into(), version: release.scala.clone() }
}

/// What a splice build of `release` records as `compilers.scalac`: the compiler and its options.
pub fn scalac_recorded(release: &Release) -> String {
    format!("{} {}", scala_compiler(release), scalac_options(release).0.join(" "))
}

/// Compiles one module's `src` into `classes_dir` with the release's scalac (Scala and
/// Java sources, for types) then javac (the Java sources), against the classpath `cp`;
/// records the compilers in `compilers`. `dump_cds`: whether this JVM may write a
/// missing class-data-sharing archive (only one of a build's concurrent compiles may).
/// scalac reads the classpath and the extra sources of `view` instead (the module as the
/// release's own scalac run saw it); javac reads `cp`. Both run in the resident compiler
/// (`resident`) when it answers, else in a JVM of their own; a resident compiler that ends
/// mid-compile leaves the module to be compiled again from a clean directory, one-shot.
#[allow(clippy::too_many_arguments)]
fn compile(
    maven: &Maven,
    release: &Release,
    module: &str,
    cp: &std::ffi::OsStr,
    view: &ScalacView,
    src: &[PathBuf],
    classes_dir: &Path,
    javac_version: &str,
    dump_cds: bool,
    compilers: &mut BTreeMap<String, String>,
) -> Result<std::result::Result<(), CompileFailure>> {
    let args = (maven, release, module, cp, view, src, classes_dir, javac_version, dump_cds);
    match compile_with(args, !super::resident::disabled(), compilers)? {
        Compiled::Broken(why) => {
            crate::out::note(format!("{why}: compiling {module} again in a JVM of its own"));
            let _ = std::fs::remove_dir_all(classes_dir);
            match compile_with(args, false, compilers)? {
                Compiled::Done(r) => Ok(r),
                Compiled::Broken(why) => Err(Error::External(why)),
            }
        }
        Compiled::Done(r) => Ok(r),
    }
}

/// How `compile_with` ended.
enum Compiled {
    Done(std::result::Result<(), CompileFailure>),
    /// The resident compiler ended mid-compile (`resident::Answer::Broken`).
    Broken(String),
}

type CompileArgs<'a> =
    (&'a Maven, &'a Release, &'a str, &'a std::ffi::OsStr, &'a ScalacView, &'a [PathBuf], &'a Path, &'a str, bool);

/// An absolute `p` (the resident compiler's working directory is not this process's).
fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io(format!("cannot make {} absolute", p.display()), e))
}

/// A classpath with every entry absolute.
fn absolute_classpath(cp: &std::ffi::OsStr) -> Result<std::ffi::OsString> {
    let entries = std::env::split_paths(cp).map(|p| absolute(&p)).collect::<Result<Vec<_>>>()?;
    std::env::join_paths(entries).map_err(|e| Error::Source(format!("classpath: {e}")))
}

fn compile_with(
    (maven, release, module, cp, view, src, classes_dir, javac_version, dump_cds): CompileArgs<'_>,
    resident: bool,
    compilers: &mut BTreeMap<String, String>,
) -> Result<Compiled> {
    std::fs::create_dir_all(classes_dir).map_err(|e| Error::io("cannot create the classes directory", e))?;
    let classes_dir = absolute(classes_dir)?;
    let scala: Vec<PathBuf> = src
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "scala"))
        .map(|p| absolute(p))
        .collect::<Result<_>>()?;
    let java: Vec<PathBuf> = src
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .map(|p| absolute(p))
        .collect::<Result<_>>()?;
    let compiler = scala_compiler(release);
    let ccp =
        std::env::join_paths(maven.classpath(&compiler)?).map_err(|e| Error::Source(format!("classpath: {e}")))?;
    let server = super::resident::Resident { repo_local: &maven.repo_local, scala: &release.scala, classpath: &ccp };
    let failed = |command: String, output: String| {
        Ok(Compiled::Done(Err(CompileFailure { module: module.to_string(), command, output })))
    };
    if !scala.is_empty() {
        let (options, note) = scalac_options(release);
        // scalac's own arguments; the JVM's come before them in a one-shot compile.
        let mut args: Vec<std::ffi::OsString> =
            vec!["-d".into(), classes_dir.clone().into(), "-classpath".into(), absolute_classpath(&view.classpath)?];
        args.extend(options.iter().map(Into::into));
        // Java sources of the same module are given to scalac too (it reads them for types); javac compiles them below.
        args.extend(scala.iter().chain(&java).map(Into::into));
        for p in view.java_sources.iter().chain(view.context.iter().map(|(p, _)| p)) {
            args.push(absolute(p)?.into());
        }
        compilers.insert("scalac".into(), format!("{compiler} {}", options.join(" ")));
        if let Some(n) = &view.note {
            compilers.insert("scalac_inputs".into(), n.clone());
        }
        if let Some(note) = note {
            compilers.insert("scalac_note".into(), note);
        }
        let mut cmd = Command::new(java_bin("java"));
        // A compile of a few files is short-lived: C1-only JIT and the serial
        // collector cut its wall time by about a third on a 2-core machine.
        cmd.args(["-Xss8m", "-Xmx2g", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]);
        let answer = match resident {
            true => server.run(super::resident::Tool::Scalac, &args),
            false => super::resident::Answer::NotRun,
        };
        match answer {
            super::resident::Answer::Broken(why) => return Ok(Compiled::Broken(why)),
            super::resident::Answer::Ran { ok: false, output } => {
                cmd.arg("-cp").arg(&ccp).arg("scala.tools.nsc.Main").args(&args);
                return failed(format!("(okp's resident compiler) {}", show(&cmd)), output);
            }
            super::resident::Answer::Ran { ok: true, .. } => {}
            super::resident::Answer::NotRun => {
                // One JVM per build may write a missing archive; the others run without one.
                let cds =
                    scalac_cds(maven, &format!("scalac-{}", release.scala)).filter(|(_, dump)| dump_cds || !*dump);
                let mut dumped = None;
                match &cds {
                    Some((archive, false)) => {
                        cmd.arg(crate::jvm::cds::archive_flag(archive));
                    }
                    Some((archive, true)) => {
                        let staging = crate::fsx::staging(archive);
                        cmd.arg(crate::jvm::cds::dump_at_exit_flag(&staging));
                        dumped = Some((staging, archive.clone()));
                    }
                    None => {}
                }
                cmd.arg("-cp").arg(&ccp).arg("scala.tools.nsc.Main").args(&args);
                if let Err(output) = run(&mut cmd, "scalac")? {
                    if let Some((staging, _)) = &dumped {
                        let _ = std::fs::remove_file(staging);
                    }
                    return failed(show(&cmd), output);
                }
                if let Some((staging, archive)) = dumped {
                    // The first compile with this scalac dumped its loaded classes; later ones map them.
                    let _ = std::fs::rename(staging, archive);
                }
            }
        }
        drop_classes_of(&classes_dir, view.context.iter().map(|(_, k)| k))?;
    }
    if !java.is_empty() {
        let rel = if module == "metadata" {
            release.java_release_metadata.unwrap_or(release.java_release)
        } else {
            release.java_release
        };
        let mut cp_java = std::ffi::OsString::from(&classes_dir);
        cp_java.push(if cfg!(windows) { ";" } else { ":" });
        cp_java.push(absolute_classpath(cp)?);
        let mut args: Vec<std::ffi::OsString> =
            ["--release", &rel.to_string(), "-encoding", "UTF-8", "-nowarn", "-proc:none"]
                .iter()
                .map(Into::into)
                .collect();
        args.extend(["-d".into(), classes_dir.clone().into(), "-cp".into(), cp_java]);
        args.extend(java.iter().map(Into::into));
        let mut cmd = Command::new(java_bin("javac"));
        cmd.args(["-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"]).args(&args);
        compilers.insert("javac".into(), format!("{javac_version} --release {rel}"));
        let answer = match resident && super::resident::javac_is_the_servers() {
            true => server.run(super::resident::Tool::Javac, &args),
            false => super::resident::Answer::NotRun,
        };
        match answer {
            super::resident::Answer::Broken(why) => return Ok(Compiled::Broken(why)),
            super::resident::Answer::Ran { ok: false, output } => {
                return failed(format!("(okp's resident compiler) {}", show(&cmd)), output);
            }
            super::resident::Answer::Ran { ok: true, .. } => {}
            super::resident::Answer::NotRun => {
                if let Err(output) = run(&mut cmd, "javac")? {
                    return failed(show(&cmd), output);
                }
            }
        }
    }
    Ok(Compiled::Done(Ok(())))
}

/// Upstream Scala sources the release's build compiled in the same scalac run as a recompiled
/// unit and whose in-run form decides what the optimizer makes of that unit, per release range
/// (inclusive): `okp` compiles them beside the recompiled units and drops their classes. The
/// release's build compiled the whole module in one run, so a method inlined from another of its
/// files was inlined in the form it had within that run (already inlined into, not yet locally
/// optimised), not as the optimised class file in the release jar. On 3.1.0–3.3.2
/// `Partition.maybeExpandIsr` inlines `CoreUtils.inReadLock`, itself holding an inlined
/// `CoreUtils.inLock`; from the in-run form the optimizer keeps the boolean result in a local
/// (`istore 4; aconst_null; astore_2; iload 4`), from the class file it keeps it on the stack.
/// With CoreUtils.scala in the run, Partition.class is byte-identical to the release's.
const INLINE_CONTEXT: &[(KafkaVersion, KafkaVersion, &str)] =
    &[(KafkaVersion::new(3, 1, 0), KafkaVersion::new(3, 3, 2), "core/src/main/scala/kafka/utils/CoreUtils.scala")];

/// Whether a splice build of `version` has scalac read the upstream file `path` besides the units
/// it recompiles, when `recompiled` are the repository paths it may recompile: the Java sources of
/// a module with a recompiled Scala file (`scalac_view`) and `version`'s `INLINE_CONTEXT`.
/// `okp sources --hooked` lays these out too, so that a hooked tree builds the same jars.
pub fn scalac_reads(version: KafkaVersion, recompiled: &[&str], path: &str) -> bool {
    let Some((module, rest)) = path.split_once('/') else { return false };
    let scala_module =
        recompiled.iter().any(|f| f.ends_with(".scala") && f.split_once('/').is_some_and(|(m, _)| m == module));
    (scala_module && rest.starts_with("src/main/java/") && rest.ends_with(".java"))
        || INLINE_CONTEXT.iter().any(|(from, to, p)| *p == path && version >= *from && version <= *to)
}

/// A module as the release's own scalac run saw it.
struct ScalacView {
    /// The classpath with the module's jar replaced by a copy without the classes compiled from
    /// its Java sources.
    classpath: std::ffi::OsString,
    /// The module's Java sources (for types only: scalac emits nothing for them).
    java_sources: Vec<PathBuf>,
    /// `INLINE_CONTEXT` sources and their keys (their classes are dropped after the compile).
    context: Vec<(PathBuf, SourceKey)>,
    /// For the build record: what scalac read besides the recompiled units.
    note: Option<String>,
}

/// The release's build compiles a module's Scala and Java sources in one mixed scalac run (zinc,
/// then javac): scalac parses the Java sources for their types, and no class file of them exists
/// yet. Its optimizer therefore cannot inline a method whose body touches a member of such a class
/// (it cannot check the access: "defined in a Java source (mixed compilation), no bytecode is
/// available"), where it can against the release jar. On 3.6.0–4.0.x `ReplicaManager.fetchMessages`
/// keeps its call of `processRemoteFetch` (which calls the Java `RemoteLogManager.asyncRead`) in the
/// release; against the whole jar okp's recompile inlined it. So scalac gets the module's Java
/// sources from `tree` and the module jar without their classes (a class whose source `tree` lacks
/// stays); javac still compiles against the whole jar.
#[allow(clippy::too_many_arguments)]
fn scalac_view(
    version: KafkaVersion,
    module: &str,
    tree: &dyn SourceTree,
    work: &Path,
    jars: &Path,
    classpath: &[PathBuf],
    module_jar: &Path,
    files: &[String],
) -> Result<ScalacView> {
    let plain = || std::env::join_paths(classpath).map_err(|e| Error::Source(format!("classpath: {e}")));
    let mut view = ScalacView { classpath: plain()?, java_sources: Vec::new(), context: Vec::new(), note: None };
    if !files.iter().any(|f| f.ends_with(".scala")) {
        return Ok(view);
    }
    let zerr = |e: zip::result::ZipError| Error::Source(format!("{}: {e}", module_jar.display()));
    let mut zin =
        zip::ZipArchive::new(crate::fsx::read::open_input(module_jar, crate::fsx::read::MAX_JAR, "module jar")?)
            .map_err(zerr)?;
    // Repository path of each Java source -> the jar entries compiled from it.
    let mut java: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for i in 0..zin.len() {
        let mut f = zin.by_index(i).map_err(zerr)?;
        let name = f.name().to_string();
        if !name.ends_with(".class") {
            continue;
        }
        let b = crate::fsx::zip_entry::read(&mut f, module_jar, crate::fsx::read::MAX_CLASS)?;
        let info =
            classfile::parse(&b).map_err(|e| Error::Source(format!("{name} in {}: {e}", module_jar.display())))?;
        let Some(sf) = info.source_file.filter(|sf| sf.ends_with(".java") && !sf.contains('/')) else { continue };
        let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
        let path = if dir.is_empty() {
            format!("{module}/src/main/java/{sf}")
        } else {
            format!("{module}/src/main/java/{dir}/{sf}")
        };
        java.entry(path).or_default().push(i);
    }
    let write = |root: &str, path: &str, bytes: &[u8]| -> Result<PathBuf> {
        let p = work.join(root).join(path);
        std::fs::create_dir_all(p.parent().unwrap_or(work))
            .map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
        std::fs::write(&p, bytes).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
        Ok(p)
    };
    let mut dropped = std::collections::BTreeSet::new();
    let mut without_source = 0;
    for (path, entries) in &java {
        if files.contains(path) {
            // An edited Java file: each compile has its own version among its sources.
            dropped.extend(entries.iter().copied());
            continue;
        }
        match tree.read(path)? {
            Some(bytes) => {
                view.java_sources.push(write(&format!("scalac-java-{module}"), path, &bytes)?);
                dropped.extend(entries.iter().copied());
            }
            None => without_source += 1,
        }
    }
    for (from, to, path) in INLINE_CONTEXT {
        if !path.starts_with(&format!("{module}/")) || version < *from || version > *to {
            continue;
        }
        if files.iter().any(|f| f == path) {
            continue;
        }
        let bytes = tree.read(path)?.ok_or_else(|| {
            Error::Source(format!("{path}: not in the upstream tree (compiled beside the recompiled units)"))
        })?;
        let key = SourceKey::from_repo_path(path).ok_or_else(|| Error::Source(format!("{path}: not a source path")))?;
        view.context.push((write(&format!("scalac-context-{module}"), path, &bytes)?, key));
    }
    let mut notes = Vec::new();
    if !dropped.is_empty() && classpath.iter().any(|p| p == module_jar) {
        // Beside the build's staged jars, never under `--out`: a refused build leaves no jar there.
        let jar = jars.join(format!("scalac-view-{module}.jar"));
        let mut zout = zip::ZipWriter::new(
            std::fs::File::create(&jar).map_err(|e| Error::io(format!("cannot create {}", jar.display()), e))?,
        );
        for i in 0..zin.len() {
            if !dropped.contains(&i) {
                zout.raw_copy_file(zin.by_index_raw(i).map_err(zerr)?).map_err(zerr)?;
            }
        }
        zout.finish().map_err(zerr)?;
        let cp: Vec<&Path> =
            classpath.iter().map(|p| if p == module_jar { jar.as_path() } else { p.as_path() }).collect();
        view.classpath = std::env::join_paths(cp).map_err(|e| Error::Source(format!("classpath: {e}")))?;
        notes.push(format!(
            "the {} Java sources of {module} (for types; their {} classes left off scalac's classpath, as in the release's mixed compile)",
            view.java_sources.len(),
            dropped.len()
        ));
        if without_source > 0 {
            notes.push(format!(
                "{without_source} Java sources of {module} not in the tree: their classes stay on scalac's classpath"
            ));
        }
    } else if !view.java_sources.is_empty() {
        // The module jar is not on the classpath as expected: read it whole, as before.
        view.java_sources.clear();
    }
    if !view.context.is_empty() {
        let names: Vec<String> =
            view.context.iter().map(|(_, k)| format!("{}/{}", k.package_dir, k.file_name)).collect();
        notes.push(format!("compiled in the same run, classes dropped: {}", names.join(", ")));
    }
    view.note = (!notes.is_empty()).then(|| format!("scalac also read: {}", notes.join("; ")));
    Ok(view)
}

/// Removes from `dir` the classes compiled from the sources `keys` name.
fn drop_classes_of<'a>(dir: &Path, keys: impl Iterator<Item = &'a SourceKey>) -> Result<()> {
    let keys: Vec<&SourceKey> = keys.collect();
    if keys.is_empty() {
        return Ok(());
    }
    for (name, bytes) in classes_under(dir)? {
        let info = classfile::parse(&bytes).map_err(|e| Error::External(format!("{name}: {e}")))?;
        if keys.iter().any(|k| k.owns(&name, info.source_file.as_deref())) {
            let p = dir.join(&name);
            std::fs::remove_file(&p).map_err(|e| Error::io(format!("cannot remove {}", p.display()), e))?;
        }
    }
    Ok(())
}

/// okp's own classes of `module` as a splice build of `release` makes them: okp's new files
/// (`ours`: repository path and text, none of them an upstream file) compiled by `compile`, the
/// function the build runs, with the release's Scala compiler and javac, the same flags, classpath
/// and scalac view of the module (`tree`: the release's sources). They are compiled alone, without
/// the edited upstream files of the build's run: none of okp's files refers to one, and the test
/// `okps_own_classes_compiled_alone_are_the_builds` holds that they come out byte-identical.
/// What a consumer compares okp's added classes with, by content (`recheck`).
///
/// The classes are kept in the Maven cache (`~/.m2/repository/okp-ours/<key>/`), the key a sha256
/// over every input that shapes them (`compiled_cache`), as the unpatched compile's are: whoever can
/// write there can also change the release jars okp reads, so it adds no one who could mislead okp.
/// `OKP_NO_OURS_CACHE` set: compiled afresh every time.
pub fn compile_ours(
    ws: &Workspace,
    release: &Release,
    tree: &dyn SourceTree,
    module: &str,
    ours: &[(&str, &[u8])],
) -> Result<BTreeMap<String, Vec<u8>>> {
    let maven = &ws.maven;
    let coord: &Coordinate = release
        .sources
        .get(module)
        .ok_or_else(|| Error::Source(format!("{module}: not a source module of {}", release.version)))?;
    let classpath = maven.classpath(coord)?;
    let cp = std::env::join_paths(&classpath).map_err(|e| Error::Source(format!("classpath: {e}")))?;
    let upstream = maven.ensure(&[(coord.clone(), None)])?.remove(0);
    // The JDKs named by what they hold, not by starting them: a cache hit starts no JVM.
    let javac_version = match crate::jvm::jdk::identity("javac") {
        Some(id) => id,
        None => javac_version(&maven.repo_local).map_err(|e| {
            Error::External(format!(
                "cannot run javac ({e}): okp compiles its own classes with the release's compilers to compare them \
                 with the jars' (a JDK 17 is needed, as for okp build)"
            ))
        })?,
    };
    let java = crate::jvm::jdk::identity("java").unwrap_or_else(java_version);
    let work = tempfile::Builder::new()
        .prefix("okp-ours-")
        .tempdir()
        .map_err(|e| Error::io("cannot create a directory to compile okp's own classes in", e))?;
    let files: Vec<String> = ours.iter().map(|(p, _)| p.to_string()).collect();
    let mut src = Vec::new();
    for (path, text) in ours {
        let p = work.path().join("src").join(path);
        std::fs::create_dir_all(p.parent().unwrap_or(work.path()))
            .map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
        std::fs::write(&p, text).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
        src.push(p);
    }
    let view = scalac_view(release.version, module, tree, work.path(), work.path(), &classpath, &upstream, &files)?;
    let cached =
        compiled_cache("okp-ours", "2", maven, release, module, &classpath, &src, &view, &javac_version, &java)?;
    // OKP_NO_OURS_CACHE: compile afresh (the reproducibility test; a host that trusts no cache).
    if cached.is_dir() && std::env::var_os("OKP_NO_OURS_CACHE").is_none() {
        return classes_under(&cached);
    }
    let classes_dir = work.path().join("classes");
    let mut compilers = BTreeMap::new();
    if let Err(f) =
        compile(maven, release, module, &cp, &view, &src, &classes_dir, &javac_version, true, &mut compilers)?
    {
        return Err(Error::External(format!(
            "okp's own sources of {module} do not compile with {}'s compilers (a defect in okp, or the JDK is not 17):\n\
             {}\n{}",
            release.version, f.command, f.output
        )));
    }
    keep_unpatched(&classes_dir, &cached);
    classes_under(&classes_dir)
}

/// The default upstream tree of a splice build: the release's sources jars (refused, with the
/// flags that read a checkout instead, for a release Maven Central has none of).
pub fn release_sources(ws: &Workspace, release: &Release) -> Result<Box<dyn SourceTree>> {
    ws.open(Spec::Release {
        version: release.version,
        hint: "the splice build reads the files it patches from a checkout instead with --tree DIR or --git REPO --rev REV",
    })
}

/// A tree that is not the release's own sources jars (`--tree`, `--git`): its files where the
/// splice compiles nothing must be the release's, since changes there never reach the jars. Refused
/// naming them, unless `allow_modified`: then said plainly and returned for the record.
fn fork_check(
    ws: &Workspace,
    release: &Release,
    tree: &dyn SourceTree,
    plan: &apply::Plan,
    allow_modified: bool,
) -> Result<Vec<String>> {
    if tree.is_release_sources_jar() {
        return Ok(Vec::new());
    }
    if release.no_sources_jar.is_some() {
        crate::out::note(format!(
            "note: {} has no sources jar on Maven Central, so okp cannot tell whether {} differs from the release \
             outside the files it compiles; changes there would not be in the jars (a fork builds with the Gradle \
             backend: okp apply, then okp build --source)",
            release.version,
            tree.describe()
        ));
        return Ok(Vec::new());
    }
    let coords = ws.model.matrix.coordinates_for(release.version)?;
    let theirs = crate::source::ReleaseTree::open(&ws.maven, &release.version.to_string(), &coords)?;
    let compiled: Vec<&str> = plan.changes.iter().map(|c| c.path.as_str()).collect();
    let differs = crate::source::differences_from_release(tree, &theirs, &compiled)?;
    if differs.is_empty() {
        return Ok(differs);
    }
    let shown: Vec<String> = differs.iter().take(20).map(|d| crate::escape::one_line(d)).collect();
    let more = if differs.len() > 20 { format!("\n  … and {} more", differs.len() - 20) } else { String::new() };
    if !allow_modified {
        return Err(Error::Usage(format!(
            "{} differs from the release {}'s sources in {} file(s) the splice build does not compile; those \
             changes would NOT be in the jars (the splice takes every other class from the release's own jar):\n  \
             {}{more}\nBuild a fork with the Gradle backend (okp apply --source DIR, then okp build --source DIR), or \
             pass --allow-modified to build the release plus okp's edits from this tree anyway (recorded)",
            tree.describe(),
            release.version,
            differs.len(),
            shown.join("\n  ")
        )));
    }
    crate::out::note(format!(
        "warning: --allow-modified: {} differs from the release {}'s sources in {} file(s) the splice does not \
         compile; those changes are NOT in these jars (recorded in okp-build.json as provenance.not_built):\n  {}{more}",
        tree.describe(),
        release.version,
        differs.len(),
        shown.join("\n  ")
    ));
    Ok(differs)
}

/// Builds `release`'s patched jars for `mode`, reading the pristine upstream sources of the
/// patched files from `upstream` (which must hold them exactly as the release has them: the
/// spliced classes go into the release's own jars). A tree other than the release's sources jars
/// must match them outside the files compiled, unless `allow_modified` (`fork_check`).
pub fn splice(
    ws: &Workspace,
    release: &Release,
    mode: Mode,
    layers: &Layers,
    upstream: &dyn SourceTree,
    out: &Path,
    allow_modified: bool,
) -> Result<SpliceOutcome> {
    let (model, maven, ps) = (&ws.model, &ws.maven, ws.patch_set()?);
    let eff = ps.effective(model, release, release.version, mode, layers);
    let mut seconds = BTreeMap::new();
    let t0 = Instant::now();
    // Pristine sources from the upstream tree; the plan gives the patched bytes in memory.
    let tree = upstream;
    let targets = crate::check::check_tree(&model.anchors, release, release.version, &[mode], &eff.layers, tree)?;
    if !targets.iter().all(|t| t.ok()) {
        let rep = crate::check::Report { targets };
        crate::out::block(&crate::report::check_report(&rep, crate::report::Format::Table, false));
        return Err(Error::Drift(format!("anchor drift in {} {mode}: nothing was built", release.version)));
    }
    let plan = apply::plan(&eff, tree)?;
    let not_built = fork_check(ws, release, tree, &plan, allow_modified)?;
    // Every layer's units are proved (the metrics layer's gauges and their lambdas too).
    let prove = proof::enabled();
    let mut provenance = proof::Provenance::default();
    // One okp at a time writes `out` (its work/ and jars): a second waits here.
    let _lock = crate::fsx::lock_dir(out, ".okp-build.lock")?;
    let work = out.join("work");
    let _ = std::fs::remove_dir_all(&work);
    for c in &plan.changes {
        let p = work.join("src").join(&c.path);
        std::fs::create_dir_all(p.parent().unwrap_or(&work))
            .map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
        std::fs::write(&p, &c.after).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
        if let Some(before) = c.before.as_ref().filter(|_| prove) {
            let p = work.join("upstream-src").join(&c.path);
            std::fs::create_dir_all(p.parent().unwrap_or(&work))
                .map_err(|e| Error::io(format!("cannot create {}", p.display()), e))?;
            std::fs::write(&p, before).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
        }
    }
    seconds.insert("prepare".into(), t0.elapsed().as_secs_f64());

    // Group the recompiled files by module (core, metadata).
    let mut by_module: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in &plan.changes {
        let module = c.path.split('/').next().unwrap_or_default().to_string();
        by_module.entry(module).or_default().push(c.path.clone());
    }
    let mut compilers = BTreeMap::new();
    let javac_version = javac_version(&maven.repo_local).unwrap_or_default();

    // The spliced jars are staged beside `out`, never in it: they move in only once every module is
    // compiled, proved and re-derived from its bytes, so a refused or failed build leaves no jar
    // under `out` (the staging directory goes with this function, also on an error).
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".okp-build-staging-")
        .tempdir_in(parent)
        .map_err(|e| Error::io(format!("cannot create a staging directory in {}", parent.display()), e))?;
    let mut jars = Vec::new();
    for (module, files) in &by_module {
        let coord: &Coordinate = release
            .sources
            .get(module)
            .ok_or_else(|| Error::Source(format!("{module}: not a source module of {}", release.version)))?;
        let t = Instant::now();
        let classpath = maven.classpath(coord)?;
        let cp = std::env::join_paths(&classpath).map_err(|e| Error::Source(format!("classpath: {e}")))?;
        let classes_dir = work.join(format!("classes-{module}"));
        std::fs::create_dir_all(&classes_dir).map_err(|e| Error::io("cannot create the classes directory", e))?;
        let src: Vec<PathBuf> = files.iter().map(|f| work.join("src").join(f)).collect();
        seconds.insert(format!("classpath-{module}"), t.elapsed().as_secs_f64());
        let t = Instant::now();
        // The same module's edited upstream files as the release ships them, compiled beside
        // the patched ones (same compilers, flags, classpath) for the provenance proofs.
        let upstream_src: Vec<PathBuf> = files
            .iter()
            .filter(|f| plan.changes.iter().any(|c| &c.path == *f && c.before.is_some()))
            .map(|f| work.join("upstream-src").join(f))
            .collect();
        let upstream = maven.ensure(&[(coord.clone(), None)])?.remove(0);
        let view = scalac_view(release.version, module, tree, &work, staging.path(), &classpath, &upstream, files)?;
        // The unpatched compile is the same for every build of a release: its classes are kept in
        // the Maven cache, keyed by the exact sources (the scalac view's too), compilers, flags and
        // classpath.
        let cached = (prove && !upstream_src.is_empty())
            .then(|| {
                compiled_cache(
                    "okp-unpatched",
                    "2",
                    maven,
                    release,
                    module,
                    &classpath,
                    &upstream_src,
                    &view,
                    &javac_version,
                    &crate::jvm::jdk::identity("java").unwrap_or_else(java_version),
                )
            })
            .transpose()?;
        let hit = cached.as_ref().filter(|d| d.is_dir());
        let upstream_dir = match hit {
            Some(d) => d.clone(),
            None => work.join(format!("upstream-classes-{module}")),
        };
        if let Some(d) = hit {
            crate::out::note(format!(
                "{module}: the release's own sources compiled before: classes from {}",
                d.display()
            ));
        }
        let mut upstream_compilers = BTreeMap::new();
        let (patched, unpatched) = std::thread::scope(|s| {
            let other = (prove && !upstream_src.is_empty() && hit.is_none()).then(|| {
                s.spawn(|| {
                    let c = &mut upstream_compilers;
                    compile(maven, release, module, &cp, &view, &upstream_src, &upstream_dir, &javac_version, false, c)
                })
            });
            let mine =
                compile(maven, release, module, &cp, &view, &src, &classes_dir, &javac_version, true, &mut compilers);
            (mine, other.map(|h| h.join()))
        });
        if let Err(f) = patched? {
            return Ok(SpliceOutcome::CompileFailed(f));
        }
        match unpatched {
            Some(Err(_)) => return Err(Error::External(format!("the unpatched {module} compile panicked"))),
            Some(Ok(r)) => {
                if let Err(mut f) = r? {
                    f.module = format!("{module} (the release's own sources, compiled for the provenance proof)");
                    return Ok(SpliceOutcome::CompileFailed(f));
                }
            }
            None => {}
        }
        if let (Some(dir), None) = (&cached, hit) {
            keep_unpatched(&upstream_dir, dir);
        }
        seconds.insert(format!("compile-{module}"), t.elapsed().as_secs_f64());
        let compiled = classes_under(&classes_dir)?;
        if prove {
            let t = Instant::now();
            let unpatched = classes_under(&upstream_dir)?;
            let enforce = proof::enforced(release.version);
            let proved = proof::prove_module(
                release.version,
                enforce,
                &upstream,
                &plan,
                files,
                &unpatched,
                &compiled,
                &mut provenance,
            );
            if let (Err(e), Some(dir)) = (&proved, hit) {
                // Cached classes that are not the release's are not trusted again (a failed patch
                // delta says nothing about them).
                if proof::is_release_refusal(e) {
                    let _ = std::fs::remove_dir_all(dir);
                    crate::out::note(format!(
                        "the unpatched classes came from okp's cache {} (now removed; the next build compiles them afresh)",
                        dir.display()
                    ));
                }
            }
            proved?;
            seconds.insert(format!("proof-{module}"), t.elapsed().as_secs_f64());
        }

        // Splice into a copy of the upstream jar and check the result.
        let t = Instant::now();
        let name = format!("{}-{}.jar", coord.artifact, coord.version);
        let dest = staging.path().join(&name);
        let keys: Vec<SourceKey> = files.iter().filter_map(|f| SourceKey::from_repo_path(f)).collect();
        let report = jar::splice(&upstream, &dest, &keys, &compiled)?;
        check_splice(&upstream, &dest, &report, module, files, &plan, &compiled)?;
        seconds.insert(format!("splice-{module}"), t.elapsed().as_secs_f64());
        let up_bytes = crate::fsx::read::input(&upstream, crate::fsx::read::MAX_JAR, "upstream jar")?;
        let new_bytes = crate::fsx::read::input(&dest, crate::fsx::read::MAX_JAR, "spliced jar")?;
        jars.push(JarResult {
            module: module.clone(),
            upstream: coord.to_string(),
            upstream_sha256: sha256(&up_bytes),
            path: out.join(&name),
            sha256: sha256(&new_bytes),
            splice: report,
        });
    }
    let provenance = match prove {
        true => {
            provenance.not_built = not_built;
            Some(Box::new(proof::inputs(maven, release, tree, &plan, &compilers, &javac_version, provenance)?))
        }
        false => None,
    };
    let record = BuildRecord {
        schema: super::record::SCHEMA.current,
        okp_version: env!("CARGO_PKG_VERSION").to_string(),
        release: release.version,
        mode,
        family: eff.family.clone(),
        patch_set_hash: eff.hash.clone(),
        layers: eff.layers.iter().collect(),
        backend: "splice".into(),
        compilers,
        sources: plan.changes.iter().map(|c| c.path.clone()).collect(),
        jars,
        seconds,
        provenance,
        source: tree.describe(),
    };
    if record.provenance.is_some() {
        // What every consumer will do before it trusts these jars, done once here on the staged
        // bytes: a build that a consumer would refuse is refused now.
        let t = Instant::now();
        let bytes: Vec<Vec<u8>> = record
            .jars
            .iter()
            .map(|j| {
                crate::fsx::read::input(&staging.path().join(&j.splice.jar), crate::fsx::read::MAX_JAR, "spliced jar")
            })
            .collect::<Result<_>>()?;
        let facts = record.recheck(ws, out, &bytes, Some(tree))?;
        facts.note("");
        let mut record = record;
        record.seconds.insert("recheck".into(), t.elapsed().as_secs_f64());
        return publish(record, staging.path(), out);
    }
    publish(record, staging.path(), out)
}

/// Moves the staged jars into `out` and writes the record last: the old record goes first, so a
/// kill in between leaves jars no record vouches for (a consumer refuses them), never a record
/// beside jars it does not describe.
fn publish(record: BuildRecord, staged: &Path, out: &Path) -> Result<SpliceOutcome> {
    let old = out.join(super::record::FILE_NAME);
    match std::fs::remove_file(&old) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io(format!("cannot remove {}", old.display()), e));
        }
        _ => {}
    }
    let _ = std::fs::remove_file(out.join("provenance.json"));
    for j in &record.jars {
        let from = staged.join(&j.splice.jar);
        std::fs::rename(&from, &j.path)
            .map_err(|e| Error::io(format!("cannot move {} into place", from.display()), e))?;
    }
    record.write(out)?;
    if let Some(p) = &record.provenance {
        // The proofs alone, for evidence (evidence/build/proof/); they carry their own schema.
        crate::schema::write(&out.join("provenance.json"), p)?;
    }
    Ok(SpliceOutcome::Built(Box::new(record)))
}

/// Where the classes of a compile of `src` are kept: `~/.m2/repository/<kind>/<key>/`
/// (`okp-unpatched`: the release's own sources of a module's edited files; `okp-ours`: okp's own
/// files, `compile_ours`), the key a sha256 over every input that shapes those classes (the
/// sources' repository paths and bytes, each under a `src` or `upstream-src` directory, the Scala
/// compiler and its options, javac and the JVM that runs scalac, the Java release, the classpath's
/// files by name and size, what scalac read besides). The cache is in the Maven cache's trust
/// domain: whoever can write there can also change the release jars okp reads.
#[allow(clippy::too_many_arguments)]
fn compiled_cache(
    kind: &str,
    key_version: &str,
    maven: &Maven,
    release: &Release,
    module: &str,
    classpath: &[PathBuf],
    src: &[PathBuf],
    view: &ScalacView,
    javac_version: &str,
    java: &str,
) -> Result<PathBuf> {
    use std::fmt::Write as _;
    let mut key = format!("{kind}/{key_version}\n");
    let _ = writeln!(key, "module {module}\nscala {}\nscalac {:?}", release.scala, scalac_options(release).0);
    let _ = writeln!(
        key,
        "java-release {} {:?}\njavac {javac_version}\njava {java}",
        release.java_release, release.java_release_metadata
    );
    for p in classpath {
        let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let _ = writeln!(key, "cp {} {size}", p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    }
    // What scalac reads besides the units (`scalac_view`): their bytes shape the optimizer's inlining.
    for p in view.java_sources.iter().chain(view.context.iter().map(|(p, _)| p)) {
        let bytes = crate::fsx::read::input(p, crate::fsx::read::MAX_SOURCE, "source file")?;
        let text = p.to_string_lossy();
        let name = text.rsplit_once("/src/").map_or(text.as_ref(), |(_, r)| r);
        let _ = writeln!(key, "view {name} {}", sha256(&bytes));
    }
    for p in src {
        let bytes = crate::fsx::read::input(p, crate::fsx::read::MAX_SOURCE, "source file")?;
        // The repository path: where the build directory is does not shape the classes.
        let text = p.to_string_lossy();
        let repo_path = text
            .rsplit_once("/upstream-src/")
            .or_else(|| text.rsplit_once(&format!("/src/{module}/")))
            .map_or(text.as_ref(), |(_, r)| r);
        let _ = writeln!(key, "src {repo_path} {}", sha256(&bytes));
    }
    Ok(maven.repo_local.join(kind).join(&sha256(key.as_bytes())[..32]))
}

/// Keeps a fresh unpatched compile's classes at `dest` (staged, then renamed: a second okp or a kill
/// leaves nothing or a whole copy). A failure only costs the next build a compile.
fn keep_unpatched(classes: &Path, dest: &Path) {
    let Some(parent) = dest.parent() else { return };
    if std::fs::create_dir_all(parent).is_err() {
        return;
    }
    let Ok(staging) = tempfile::Builder::new().prefix(".staging-").tempdir_in(parent) else { return };
    let copied = classes_under(classes).and_then(|all| {
        for (name, bytes) in all {
            let p = staging.path().join(&name);
            std::fs::create_dir_all(p.parent().unwrap_or(staging.path()))
                .and_then(|_| std::fs::write(&p, bytes))
                .map_err(|e| Error::io("copying the unpatched classes", e))?;
        }
        Ok(())
    });
    if copied.is_ok() {
        let kept = staging.keep();
        if std::fs::rename(&kept, dest).is_err() {
            let _ = std::fs::remove_dir_all(&kept);
        }
    }
}

/// The checks a spliced jar must pass before anyone deploys it.
fn check_splice(
    upstream: &Path,
    spliced: &Path,
    report: &SpliceReport,
    module: &str,
    files: &[String],
    plan: &apply::Plan,
    compiled: &BTreeMap<String, Vec<u8>>,
) -> Result<()> {
    let before = jar::entries(upstream)?;
    let after = jar::entries(spliced)?;
    let touched: std::collections::BTreeSet<&String> =
        report.replaced.iter().chain(&report.added).chain(&report.removed).collect();
    // 1. Nothing outside the recompiled sources changed.
    for (name, bytes) in &before {
        if !touched.contains(name) && after.get(name) != Some(bytes) {
            return Err(Error::External(format!(
                "{}: {name} changed although no recompiled source owns it",
                spliced.display()
            )));
        }
    }
    for name in after.keys() {
        if !before.contains_key(name) && !touched.contains(name) {
            return Err(Error::External(format!("{}: unexpected new entry {name}", spliced.display())));
        }
    }
    // 2. Each edited upstream file's classes reference the observer registry, and keep the upstream class-file target.
    let registry = registry_for(module);
    for f in files {
        let edited = plan.changes.iter().any(|c| &c.path == f && c.before.is_some());
        let Some(key) = SourceKey::from_repo_path(f) else { continue };
        let mut references = false;
        for (name, bytes) in
            compiled.iter().filter(|(n, _)| n.rsplit_once('/').map(|(d, _)| d) == Some(key.package_dir.as_str()))
        {
            let info = classfile::parse(bytes).map_err(|e| Error::External(format!("{name}: {e}")))?;
            if info.source_file.as_deref() != Some(key.file_name.as_str()) {
                continue;
            }
            references |= info.references(registry);
            if let Some(old) = before.get(name) {
                let old_major = classfile::parse(old).map(|c| c.major).unwrap_or(0);
                if old_major != info.major {
                    return Err(Error::External(format!(
                        "{name}: compiled for Java {} but upstream targets Java {}",
                        classfile::java_release(info.major),
                        classfile::java_release(old_major)
                    )));
                }
            }
        }
        if edited && !references {
            return Err(Error::External(format!(
                "{f}: no recompiled class references {registry}; the hook edits did not reach the bytecode"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A class file `name` (internal name) whose SourceFile attribute is `source`.
    fn class_bytes(name: &str, source: &str) -> Vec<u8> {
        let utf = |s: &str| {
            let mut v = vec![1u8];
            v.extend((s.len() as u16).to_be_bytes());
            v.extend(s.as_bytes());
            v
        };
        let pool: Vec<Vec<u8>> =
            vec![utf(name), vec![7, 0, 1], utf("java/lang/Object"), vec![7, 0, 3], utf("SourceFile"), utf(source)];
        let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52];
        b.extend(((pool.len() + 1) as u16).to_be_bytes());
        pool.into_iter().for_each(|p| b.extend(p));
        b.extend([0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0]);
        b.extend([0, 1, 0, 5, 0, 0, 0, 2, 0, 6]);
        b
    }

    struct MemTree(BTreeMap<String, Vec<u8>>);

    impl SourceTree for MemTree {
        fn describe(&self) -> String {
            "memory".into()
        }
        fn declared_version(&self) -> Result<Option<String>> {
            Ok(None)
        }
        fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
            Ok(self.0.get(path).cloned())
        }
        fn files_under(&self, dir: &str) -> Result<Vec<String>> {
            let prefix = format!("{}/", dir.trim_end_matches('/'));
            Ok(self.0.keys().filter(|k| k.starts_with(&prefix)).cloned().collect())
        }
    }

    #[test]
    fn scalac_sees_the_module_as_its_mixed_compile_did() {
        let t = tempfile::tempdir().unwrap();
        let jar = t.path().join("kafka_2.13-3.2.3.jar");
        {
            let mut z = zip::ZipWriter::new(std::fs::File::create(&jar).unwrap());
            let o = zip::write::SimpleFileOptions::default();
            for (name, source) in [
                ("kafka/x/J", "J.java"),
                ("kafka/x/J$Inner", "J.java"),
                ("kafka/x/Gen", "Gen.java"),
                ("kafka/x/S", "S.scala"),
                ("kafka/utils/CoreUtils$", "CoreUtils.scala"),
            ] {
                z.start_file(format!("{name}.class"), o).unwrap();
                std::io::Write::write_all(&mut z, &class_bytes(name, source)).unwrap();
            }
            z.finish().unwrap();
        }
        let other = t.path().join("other.jar");
        let tree = MemTree(BTreeMap::from([
            ("core/src/main/java/kafka/x/J.java".to_string(), b"class J {}".to_vec()),
            ("core/src/main/scala/kafka/utils/CoreUtils.scala".to_string(), b"object CoreUtils".to_vec()),
        ]));
        let work = t.path().join("work");
        let files = ["core/src/main/scala/kafka/x/S.scala".to_string()];
        let cp = [jar.clone(), other.clone()];

        let v = scalac_view(KafkaVersion::new(3, 2, 3), "core", &tree, &work, &work, &cp, &jar, &files).unwrap();
        let view_jar = work.join("scalac-view-core.jar");
        assert_eq!(std::env::split_paths(&v.classpath).collect::<Vec<_>>(), vec![view_jar.clone(), other.clone()]);
        let kept: Vec<String> = jar::entries(&view_jar).unwrap().into_keys().collect();
        // J.java's classes go (its source is given to scalac); Gen.java has no source here and stays.
        assert_eq!(kept, ["kafka/utils/CoreUtils$.class", "kafka/x/Gen.class", "kafka/x/S.class"]);
        assert_eq!(v.java_sources, [work.join("scalac-java-core/core/src/main/java/kafka/x/J.java")]);
        assert_eq!(v.context.len(), 1);
        assert_eq!(v.context[0].1.file_name, "CoreUtils.scala");

        // The context is per release range; a module with no Scala unit is left alone.
        let v = scalac_view(KafkaVersion::new(3, 4, 1), "core", &tree, &work, &work, &cp, &jar, &files).unwrap();
        assert!(v.context.is_empty() && v.java_sources.len() == 1);
        let java_only = ["core/src/main/java/kafka/x/J.java".to_string()];
        let v = scalac_view(KafkaVersion::new(3, 2, 3), "core", &tree, &work, &work, &cp, &jar, &java_only).unwrap();
        assert!(v.java_sources.is_empty() && v.context.is_empty() && v.note.is_none());
        assert_eq!(std::env::split_paths(&v.classpath).collect::<Vec<_>>(), cp.to_vec());
    }

    #[test]
    fn the_files_scalac_reads_besides_the_units() {
        let units = ["core/src/main/scala/kafka/cluster/Partition.scala", "metadata/src/main/java/org/X.java"];
        let v = KafkaVersion::new(3, 2, 3);
        assert!(scalac_reads(v, &units, "core/src/main/java/kafka/server/builders/ReplicaManagerBuilder.java"));
        assert!(scalac_reads(v, &units, "core/src/main/scala/kafka/utils/CoreUtils.scala"));
        assert!(!scalac_reads(KafkaVersion::new(3, 4, 1), &units, "core/src/main/scala/kafka/utils/CoreUtils.scala"));
        // metadata is compiled by javac alone; core's Scala sources are not all read.
        assert!(!scalac_reads(v, &units, "metadata/src/main/java/org/apache/kafka/controller/Y.java"));
        assert!(!scalac_reads(v, &units, "core/src/main/scala/kafka/server/KafkaApis.scala"));
        assert!(!scalac_reads(v, &units, "gradle.properties"));
    }

    #[test]
    fn context_classes_are_dropped_after_the_compile() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("kafka/utils");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("CoreUtils$.class"), class_bytes("kafka/utils/CoreUtils$", "CoreUtils.scala")).unwrap();
        std::fs::write(d.join("Other.class"), class_bytes("kafka/utils/Other", "Other.scala")).unwrap();
        let key = SourceKey::from_repo_path("core/src/main/scala/kafka/utils/CoreUtils.scala").unwrap();
        drop_classes_of(t.path(), std::iter::once(&key)).unwrap();
        assert!(!d.join("CoreUtils$.class").exists() && d.join("Other.class").exists());
    }
}
