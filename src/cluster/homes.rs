//! Per-node Kafka homes laid out like the binary distribution (`bin/`,
//! `libs/`), so a verify cluster runs the artifact an operator deploys: each
//! node's home starts with the release's own jars and, for a patched run, gets
//! the signed bundle installed by `okp install`, exactly as the bundle's
//! INSTALL.md tells an operator. The ROLL scenario rolls `okp rollback` and
//! `okp install` through these homes on the live cluster.
//!
//! Not here: starting processes (node.rs), the bundle itself (bundle/).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::runtime::Runtime;
use crate::error::{Error, Result};
use crate::workspace::DataFiles;

/// The bundle a patched run installs, and the okp that installs it.
#[derive(Clone, Debug)]
pub struct Bundle {
    pub okp: PathBuf,
    pub archive: PathBuf,
    pub pubkey: PathBuf,
    /// The data files this okp was given (`--versions`, `--anchors`, `--patches`), which `okp
    /// install` needs too to re-derive the bundle's jars as `okp bundle` did.
    pub data_args: Vec<String>,
    /// The release's sources the build read (`--tree DIR` or `--git REPO --rev REV`), for a
    /// release without a sources jar: `bundle` and `install` re-derive the jars from them.
    pub source_args: Vec<String>,
}

impl Bundle {
    /// `okp install` of this bundle into `home`, verified against its key, as argument words.
    pub fn install_args(&self, home: &Path) -> Vec<String> {
        let mut a = self.data_args.clone();
        a.extend(["install", "--kafka-home"].map(String::from));
        a.push(home.display().to_string());
        a.extend(["--pubkey".to_string(), self.pubkey.display().to_string()]);
        a.extend(self.source_args.iter().cloned());
        a.push(self.archive.display().to_string());
        a
    }
}

/// What `okp` printed and how it ended, for the journal.
pub struct Ran {
    pub command: String,
    pub rc: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.rc == 0
    }

    /// This `okp install` into `home` as a result: an error naming the home when it failed.
    pub fn installed(&self, home: &Path) -> Result<()> {
        if self.ok() {
            return Ok(());
        }
        Err(Error::External(format!(
            "okp install into {} failed (rc {}): {}",
            home.display(),
            self.rc,
            self.stderr.trim()
        )))
    }
}

/// Runs the okp binary with `args` (its own CLI, as an operator would).
pub fn okp(okp: &Path, args: &[&str]) -> Result<Ran> {
    let out = Command::new(okp)
        .args(args)
        .env_remove("OKP_KEY_PASSWORD")
        .output()
        .map_err(|e| Error::External(format!("cannot run {} ({e})", okp.display())))?;
    Ok(Ran {
        command: std::iter::once("okp").chain(args.iter().copied()).collect::<Vec<_>>().join(" "),
        rc: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The okp binary to run again as a child (`okp bundle`, `okp install`, `okp observers watch`):
/// on Linux `/proc/self/exe`, which names this process's own image even when the file it was
/// started from has since been replaced or deleted (an upgrade of okp during a long run); else
/// the path it was started from.
pub fn okp_binary() -> Result<PathBuf> {
    let proc_self = Path::new("/proc/self/exe");
    if proc_self.exists() {
        return Ok(proc_self.to_path_buf());
    }
    std::env::current_exe().map_err(|e| Error::io("cannot find the okp binary", e))
}

/// Makes a throw-away signing key and the bundle of the build whose patched
/// jars `rt` runs, under `dir`: `okp keygen --unencrypted`, then `okp bundle`
/// with the data files this okp was given (the bundle's SBOM lists the edits of
/// the patch set the jars were built with). `source_args`: `--tree DIR` or `--git REPO --rev REV`
/// where the release has no sources jar (the sources the build read), else empty.
pub fn make_bundle(rt: &Runtime, data: &DataFiles, dir: &Path, source_args: &[String]) -> Result<(Bundle, Vec<Ran>)> {
    let okp_bin = okp_binary()?;
    let Some((_, patched, _)) = rt.swapped.first() else {
        return Err(Error::Harness("a bundle needs a patched build".into()));
    };
    let build = patched.parent().ok_or_else(|| Error::Harness(format!("{}: no build directory", patched.display())))?;
    crate::fsx::create_dir(dir)?;
    let prefix = dir.join("verify-key");
    let s = |p: &Path| p.display().to_string();
    let mut log = Vec::new();
    let ran = okp(&okp_bin, &["keygen", "--unencrypted", "--out", &s(&prefix)])?;
    if !ran.ok() {
        return Err(Error::External(format!("okp keygen failed (rc {}): {}", ran.rc, ran.stderr.trim())));
    }
    log.push(ran);
    let target = format!("linux-{}", std::env::consts::ARCH);
    let key = dir.join("verify-key.key");
    let out = dir.join("bundle");
    let mut data_args: Vec<String> = Vec::new();
    for (flag, file) in [("--versions", &data.versions), ("--anchors", &data.anchors), ("--patches", &data.patches)] {
        if let Some(f) = file {
            data_args.extend([flag.to_string(), s(f)]);
        }
    }
    let mut args = data_args.clone();
    args.extend(
        ["bundle", "--build", &s(build), "--target", &target, "--key", &s(&key), "--out", &s(&out)].map(String::from),
    );
    args.extend(source_args.iter().cloned());
    let ran = okp(&okp_bin, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
    if !ran.ok() {
        return Err(Error::External(format!("okp bundle failed (rc {}): {}", ran.rc, ran.stderr.trim())));
    }
    log.push(ran);
    let archive = std::fs::read_dir(&out)
        .map_err(|e| Error::io(format!("cannot read {}", out.display()), e))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .ok_or_else(|| Error::External(format!("okp bundle wrote no .tar.gz into {}", out.display())))?;
    let bundle = Bundle {
        okp: okp_bin,
        archive,
        pubkey: dir.join("verify-key.pub"),
        data_args,
        source_args: source_args.to_vec(),
    };
    Ok((bundle, log))
}

/// Lays out `home` with the release's own jars (the upstream twin of every
/// patched jar): `libs/` as the distribution has it, and a `bin/` holding a
/// stand-in launcher (okp starts the JVM itself; install.sh only checks that
/// the launcher is there). Jars are hard-linked from the Maven cache where
/// they are never written (install.sh replaces a jar by rename, so a link's
/// target is never touched), and copied where they will be replaced. Returns
/// the jars that could not be linked (another file system) and were copied:
/// a server JVM maps the class-data-sharing archive only from linked jars.
pub fn lay_out(rt: &Runtime, home: &Path) -> Result<Vec<String>> {
    let libs = home.join("libs");
    let bin = home.join("bin");
    for d in [&libs, &bin] {
        crate::fsx::create_dir(d)?;
    }
    let launcher = bin.join("kafka-run-class.sh");
    crate::fsx::write_atomic(
        &launcher,
        b"#!/bin/sh\n# Stand-in for the distribution's launcher: okp verify starts the JVM itself\n# with libs/ on the classpath. Present because install.sh checks for it.\nexit 64\n",
    )?;
    let mut seen = std::collections::BTreeSet::new();
    let mut copied = Vec::new();
    for jar in upstream_classpath(rt) {
        let name = jar.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !seen.insert(name.clone()) {
            return Err(Error::Harness(format!("two jars named {name} on the runtime classpath")));
        }
        let to = libs.join(&name);
        let replaced = rt.swapped.iter().any(|(up, _, _)| up == &jar);
        let linked = !replaced && std::fs::hard_link(&jar, &to).is_ok();
        if !linked {
            std::fs::copy(&jar, &to)
                .map_err(|e| Error::io(format!("cannot copy {} to {}", jar.display(), to.display()), e))?;
            if !replaced {
                copied.push(name);
            }
        }
    }
    Ok(copied)
}

/// The runtime classpath with every patched jar replaced by its upstream twin.
fn upstream_classpath(rt: &Runtime) -> Vec<PathBuf> {
    rt.classpath.iter().map(|p| upstream_twin(rt, p)).collect()
}

/// `jar`'s upstream twin when it is a patched jar; else `jar`.
fn upstream_twin(rt: &Runtime, jar: &Path) -> PathBuf {
    rt.swapped.iter().find(|(_, patched, _)| patched == jar).map(|(up, _, _)| up.clone()).unwrap_or(jar.to_path_buf())
}

/// The classpath of a node started from `home`: the servers' order (`Runtime::server_jars`),
/// each jar from `home/libs`.
pub fn classpath(rt: &Runtime, home: &Path) -> String {
    let jars: Vec<PathBuf> = rt
        .server_jars()
        .iter()
        .map(|j| upstream_twin(rt, j))
        .filter_map(|j| j.file_name().map(|n| home.join("libs").join(n)))
        .collect();
    std::env::join_paths(jars).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// sha256 of each jar in `home/libs` that the bundle replaces (name, digest).
pub fn replaced_jar_digests(rt: &Runtime, home: &Path) -> Vec<(String, String)> {
    rt.swapped
        .iter()
        .filter_map(|(up, _, _)| up.file_name())
        .map(|n| {
            let p = home.join("libs").join(n);
            let digest = crate::fsx::read::read_regular(&p, crate::fsx::read::MAX_JAR)
                .map(|b| crate::hash::sha256(&b))
                .unwrap_or_else(|e| format!("unreadable ({e})"));
            (n.to_string_lossy().into_owned(), digest)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn runtime(dir: &Path, names: &[&str], patched: &[&str]) -> Runtime {
        let mut classpath = Vec::new();
        let mut swapped = Vec::new();
        for n in names {
            let p = dir.join("m2").join(n);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("upstream {n}")).unwrap();
            if patched.contains(n) {
                let q = dir.join("build").join(n);
                std::fs::create_dir_all(q.parent().unwrap()).unwrap();
                std::fs::write(&q, format!("patched {n}")).unwrap();
                swapped.push((p.clone(), q.clone(), crate::hash::sha256(format!("patched {n}").as_bytes())));
                classpath.push(q);
            } else {
                classpath.push(p);
            }
        }
        Runtime {
            version: "3.9.2".parse().unwrap(),
            java: "java".into(),
            java_version: String::new(),
            classpath,
            logging: super::super::runtime::Logging::Log4j1,
            added: Vec::new(),
            left_out: Vec::new(),
            swapped,
            tool_cds: None,
            server_cds: Err("none in this test".into()),
            client_cache: dir.join("okp-client"),
        }
    }

    #[test]
    fn a_home_holds_the_release_jars_in_classpath_order_and_copies_what_install_replaces() {
        let t = tempfile::tempdir().unwrap();
        let rt = runtime(t.path(), &["zz-first.jar", "kafka_2.13-3.9.2.jar", "aa-last.jar"], &["kafka_2.13-3.9.2.jar"]);
        let home = t.path().join("home");
        assert_eq!(lay_out(&rt, &home).unwrap(), Vec::<String>::new());
        assert!(home.join("bin/kafka-run-class.sh").is_file());
        let core = home.join("libs/kafka_2.13-3.9.2.jar");
        assert_eq!(std::fs::read_to_string(&core).unwrap(), "upstream kafka_2.13-3.9.2.jar");
        // The jar install.sh replaces is a copy: the Maven cache's inode is never in libs/.
        let cached = t.path().join("m2/kafka_2.13-3.9.2.jar");
        assert_ne!(std::fs::metadata(&core).unwrap().ino(), std::fs::metadata(&cached).unwrap().ino());
        let cp = classpath(&rt, &home);
        let names: Vec<&str> = cp.split(':').map(|p| p.rsplit('/').next().unwrap()).collect();
        assert_eq!(names, ["zz-first.jar", "kafka_2.13-3.9.2.jar", "aa-last.jar"]);
        assert!(cp.split(':').all(|p| p.starts_with(home.join("libs").to_str().unwrap())));
        let digests = replaced_jar_digests(&rt, &home);
        assert_eq!(
            digests,
            vec![("kafka_2.13-3.9.2.jar".into(), crate::hash::sha256(b"upstream kafka_2.13-3.9.2.jar"))]
        );
    }

    #[test]
    fn two_jars_of_one_name_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let mut rt = runtime(t.path(), &["a.jar"], &[]);
        let other = t.path().join("elsewhere/a.jar");
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        std::fs::write(&other, "x").unwrap();
        rt.classpath.push(other);
        let err = lay_out(&rt, &t.path().join("home")).unwrap_err().to_string();
        assert!(err.contains("two jars named a.jar"), "{err}");
    }
}
