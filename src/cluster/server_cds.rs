//! Class-data sharing for the server JVMs of a test cluster (brokers, KRaft
//! controllers, ZooKeeper): a static archive of the classes a server loads
//! from the jars the bundle does *not* replace, kept in okp's CDS cache.
//!
//! A server start spends about a third of its CPU loading and verifying
//! classes. A suite restarts servers some 50 times, so mapping them from an
//! archive shortens every restart (measured in docs/benchmarks.md).
//!
//! The patched classes never come from the archive. The JVM checks an
//! archive's class path only up to the last entry it archived a class from,
//! and that entry's file must be the one of the dump (same file, size and
//! modification time). So the servers' class path puts the jars the bundle
//! replaces last, and the archive is dumped with a class path that holds only
//! the others. Each node's home hard-links those from the Maven cache, so one
//! archive serves every home; the replaced jars, different in every home and
//! changed by `okp install` / `okp rollback`, are always read from the home.
//! Moving them last changes no lookup: `plan` refuses when any class or
//! resource of theirs also exists in another jar.
//!
//! An archive the JVM cannot use (another JDK, a jar changed since the dump)
//! is ignored with `-Xshare:auto` and the server starts as without one.
//!
//! Not here: starting processes (node.rs), the tools' archive (cds.rs), where an archive lives
//! and the class lists' merge (`jvm::cds`).

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use crate::error::{Error, Result};

/// The archive the servers of one runtime map, and the jars it covers.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The archive in okp's CDS cache, keyed by the JDK and the identity (path, size,
    /// modification time) of every jar in `shared`.
    pub archive: PathBuf,
    /// The jars the archive is dumped from: the runtime classpath without the jars the bundle
    /// replaces, in classpath order. The servers' classpath starts with exactly these.
    pub shared: Vec<PathBuf>,
    /// The jars the bundle replaces (patched in a patched run), in classpath order: the
    /// servers' classpath ends with these.
    pub last: Vec<PathBuf>,
}

/// Entries that may exist in a replaced jar and in another jar without one shadowing the
/// other for a server: the manifest and top-level licence texts, which no server reads.
fn harmless(entry: &str) -> bool {
    entry == "META-INF/MANIFEST.MF" || (!entry.contains('/') && !entry.ends_with(".class"))
}

/// The entries (classes and resources, not directories) of a jar.
fn entries(jar: &Path) -> Result<BTreeSet<String>> {
    let f = crate::fsx::read::open_regular(jar, crate::fsx::read::MAX_JAR).map_err(|e| e.into_error(jar, "jar"))?;
    let z = zip::ZipArchive::new(f).map_err(|e| Error::Harness(format!("{}: not a jar ({e})", jar.display())))?;
    Ok(z.file_names().filter(|n| !n.ends_with('/')).map(str::to_string).collect())
}

/// The plan for `classpath`, where `replaced` are the entries the bundle replaces, with the
/// archive at `archive`; or why there is none (some class or resource of a replaced jar also
/// exists in another jar, so moving it last could change what a server loads).
pub fn plan(classpath: &[PathBuf], replaced: &[PathBuf], archive: PathBuf) -> std::result::Result<Plan, String> {
    let (last, shared): (Vec<PathBuf>, Vec<PathBuf>) = classpath.iter().cloned().partition(|p| replaced.contains(p));
    let mut theirs = BTreeSet::new();
    for jar in &last {
        theirs.extend(entries(jar).map_err(|e| e.to_string())?.into_iter().filter(|e| !harmless(e)));
    }
    if !theirs.is_empty() {
        for jar in &shared {
            if let Some(both) = entries(jar).map_err(|e| e.to_string())?.intersection(&theirs).next() {
                return Err(format!(
                    "{} and a jar the bundle replaces both hold {both}: the servers keep the release's classpath order, without a class-data-sharing archive",
                    jar.display()
                ));
            }
        }
    }
    Ok(Plan { archive, shared, last })
}

impl Plan {
    /// The servers' classpath: the shared jars, then the replaced ones.
    pub fn order(&self) -> Vec<PathBuf> {
        self.shared.iter().chain(&self.last).cloned().collect()
    }

    /// Whether the archive is there to map: a regular file, not a link (a FIFO there would
    /// hang every server's JVM at start).
    pub fn ready(&self) -> bool {
        crate::fsx::is_regular_file(&self.archive)
    }

    /// The JVM flags that map the archive (ignored by the JVM when it does not fit).
    pub fn flags(&self) -> Vec<String> {
        vec!["-Xshare:auto".into(), crate::jvm::cds::archive_flag(&self.archive)]
    }
}

/// Archives a process is dumping now, so that two lanes of one run dump each archive once.
static CLAIMED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Claims the dump of `archive` for this caller; false when another lane of this process has.
pub fn claim(archive: &Path) -> bool {
    CLAIMED.lock().map(|mut c| c.insert(archive.to_path_buf())).unwrap_or(false)
}

/// Gives up the claim on `archive` (after its dump ended, well or not).
pub fn release(archive: &Path) {
    if let Ok(mut c) = CLAIMED.lock() {
        c.remove(archive);
    }
}

/// What a dump did, for the journal.
pub struct Dumped {
    pub classes: usize,
    pub seconds: f64,
}

/// Dumps the archive of `plan` from the class lists `lists` with `java`, through a staging
/// file renamed into place (a second okp, or a kill, leaves no partial archive). `jvm` are
/// the servers' heap and GC flags, so the archive's settings match theirs.
pub fn dump(java: &Path, jvm: &[String], plan: &Plan, lists: &[PathBuf], scratch: &Path) -> Result<Dumped> {
    let t0 = Instant::now();
    let texts: Vec<String> =
        lists.iter().map(|p| crate::fsx::read::lossy_text(p, crate::fsx::read::MAX_TEXT)).collect();
    let merged = crate::jvm::cds::merge_lists(&texts);
    let classes = merged.lines().filter(|l| !l.starts_with('@')).count();
    if classes == 0 {
        return Err(Error::External(format!("no class list to dump from ({})", display_all(lists))));
    }
    let list = scratch.join("server-cds.classlist");
    crate::fsx::write_atomic(&list, merged.as_bytes())?;
    crate::fsx::sweep_stale_staging(&plan.archive);
    let staging = crate::fsx::staging(&plan.archive);
    let cp = std::env::join_paths(&plan.shared)
        .map_err(|e| Error::Harness(format!("a shared jar's path cannot be on a classpath ({e})")))?;
    let mut cmd = Command::new(java);
    cmd.args(jvm)
        .arg("-Xshare:dump")
        .arg(format!("-XX:SharedClassListFile={}", list.display()))
        .arg(crate::jvm::cds::archive_flag(&staging))
        .env("CLASSPATH", cp)
        .env_remove("JAVA_TOOL_OPTIONS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = cmd.spawn().map_err(|e| Error::External(format!("cannot run {} ({e})", java.display())))?;
    // Registered like a server: Ctrl-C stops the dump with the cluster.
    let pid = child.id() as i32;
    super::node::register(pid);
    let out = child.wait_with_output();
    super::node::unregister(pid);
    let out = out.map_err(|e| Error::External(format!("java -Xshare:dump: {e}")))?;
    let log = scratch.join("server-cds.dump.log");
    let _ = crate::fsx::write_atomic(&log, &[&out.stdout[..], &out.stderr[..]].concat());
    if !out.status.success() || !staging.is_file() {
        let _ = std::fs::remove_file(&staging);
        return Err(Error::External(format!(
            "java -Xshare:dump exited with {} (its output: {})",
            out.status,
            log.display()
        )));
    }
    std::fs::rename(&staging, &plan.archive).map_err(|e| {
        let _ = std::fs::remove_file(&staging);
        Error::io(format!("cannot put the archive in place at {}", plan.archive.display()), e)
    })?;
    Ok(Dumped { classes, seconds: t0.elapsed().as_secs_f64() })
}

fn display_all(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn jar(dir: &Path, name: &str, entries: &[&str]) -> PathBuf {
        let p = dir.join(name);
        let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
        for e in entries {
            z.start_file(*e, zip::write::SimpleFileOptions::default()).unwrap();
            z.write_all(b"x").unwrap();
        }
        z.finish().unwrap();
        p
    }

    #[test]
    fn the_replaced_jars_go_last_and_the_archive_covers_only_the_others() {
        let t = tempfile::tempdir().unwrap();
        let core = jar(t.path(), "kafka_2.13.jar", &["kafka/Kafka.class", "META-INF/MANIFEST.MF", "LICENSE"]);
        let clients = jar(t.path(), "clients.jar", &["org/C.class", "META-INF/MANIFEST.MF", "LICENSE"]);
        let meta = jar(t.path(), "metadata.jar", &["org/M.class"]);
        let scala = jar(t.path(), "scala.jar", &["scala/S.class"]);
        let cp = vec![core.clone(), clients.clone(), meta.clone(), scala.clone()];
        let p = plan(&cp, &[core.clone(), meta.clone()], t.path().join("a.jsa")).unwrap();
        assert_eq!(p.shared, vec![clients.clone(), scala.clone()]);
        assert_eq!(p.last, vec![core.clone(), meta.clone()]);
        assert_eq!(p.order(), vec![clients, scala, core, meta]);
    }

    #[test]
    fn a_class_or_resource_in_a_replaced_jar_and_another_keeps_the_order() {
        let t = tempfile::tempdir().unwrap();
        let core = jar(t.path(), "kafka_2.13.jar", &["kafka/Kafka.class", "kafka/version.properties"]);
        for shadow in ["kafka/Kafka.class", "kafka/version.properties", "META-INF/services/x.Y"] {
            let other = jar(t.path(), "other.jar", &[shadow, "META-INF/MANIFEST.MF"]);
            let core2 =
                jar(t.path(), "core2.jar", &["kafka/Kafka.class", "kafka/version.properties", "META-INF/services/x.Y"]);
            let why = plan(&[core2.clone(), other.clone()], &[core2], t.path().join("a.jsa")).unwrap_err();
            assert!(why.contains(shadow), "{why}");
        }
        // Nothing replaced: every jar is shared.
        let p = plan(std::slice::from_ref(&core), &[], t.path().join("a.jsa")).unwrap();
        assert_eq!(p.shared, vec![core]);
        assert!(p.last.is_empty());
    }

    #[test]
    fn only_a_regular_file_is_ready_and_a_claim_is_held_once() {
        let t = tempfile::tempdir().unwrap();
        let mut p = Plan { archive: t.path().join("a.jsa"), shared: vec![], last: vec![] };
        assert!(!p.ready());
        let fifo = t.path().join("fifo.jsa");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path under the test's own temporary directory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p.archive = fifo;
        assert!(!p.ready());
        std::fs::write(t.path().join("real.jsa"), b"x").unwrap();
        std::os::unix::fs::symlink(t.path().join("real.jsa"), t.path().join("link.jsa")).unwrap();
        p.archive = t.path().join("link.jsa");
        assert!(!p.ready());
        p.archive = t.path().join("real.jsa");
        assert!(p.ready());
        assert!(claim(&p.archive));
        assert!(!claim(&p.archive));
        release(&p.archive);
        assert!(claim(&p.archive));
        release(&p.archive);
    }
}
