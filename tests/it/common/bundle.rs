//! The bundle tests' shared support: real splice builds, keys, bundles made
//! with them, a directory laid out like a Kafka installation holding the real
//! upstream jars, and the okp commands run on them.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::{cached_output, m2, okp, repo_root, stderr};

pub const NAME_3_9: &str = "okp-observer-3.9.2-kraft-linux-x86_64";

/// A splice build of (version, mode), made once per build directory.
pub fn built(version: &str, mode: &str) -> PathBuf {
    let dir = cached_output(
        "okp-test-bundles",
        &format!("build-{version}-{mode}"),
        "okp-build.json",
        &["build", "--version", version, "--mode", mode],
    );
    // The compile's scratch files are not part of a build's output.
    let _ = std::fs::remove_dir_all(dir.join("work"));
    dir
}

/// An unencrypted key pair in a fresh directory: (dir, secret, public).
pub fn keys() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let prefix = d.path().join("ci");
    let o = okp().args(["keygen", "--unencrypted", "--out"]).arg(&prefix).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (d, prefix.with_extension("key"), prefix.with_extension("pub"))
}

/// One shared key pair and the 3.9.2 kraft x86_64 bundle made with it, for
/// tests that only read them. Returns (key dir, out dir).
pub fn shared() -> &'static (tempfile::TempDir, tempfile::TempDir) {
    static S: OnceLock<(tempfile::TempDir, tempfile::TempDir)> = OnceLock::new();
    S.get_or_init(|| {
        let (kd, key, _) = keys();
        let out = tempfile::tempdir().unwrap();
        let o = bundle(&built("3.9.2", "kraft"), "x86_64", &key, out.path());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        (kd, out)
    })
}

pub fn shared_pub() -> PathBuf {
    shared().0.path().join("ci.pub")
}

/// The secret key of the shared bundle (unencrypted).
pub fn shared_key() -> PathBuf {
    shared().0.path().join("ci.key")
}

pub fn shared_bundle() -> PathBuf {
    shared().1.path().join(format!("{NAME_3_9}.tar.gz"))
}

/// `okp bundle`, for the caller to add environment or flags to.
pub fn bundle_cmd(build: &Path, target: &str, key: &Path, out: &Path) -> assert_cmd::Command {
    let mut c = okp();
    c.args(["bundle", "--target", target, "--build"]).arg(build).arg("--key").arg(key).arg("--out").arg(out);
    c
}

pub fn bundle(build: &Path, target: &str, key: &Path, out: &Path) -> Output {
    bundle_cmd(build, target, key, out).output().unwrap()
}

/// Copies a bundle and its sidecars into `dir`.
pub fn copy_bundle(src: &Path, dir: &Path) -> PathBuf {
    let name = src.file_name().unwrap().to_str().unwrap();
    for ext in ["", ".minisig", ".sha256", ".sha512"] {
        std::fs::copy(format!("{}{ext}", src.display()), dir.join(format!("{name}{ext}"))).unwrap();
    }
    dir.join(name)
}

pub fn verify(file: &Path, pubkey: &Path) -> Output {
    okp().arg("verify-bundle").arg(file).arg("--pubkey").arg(pubkey).output().unwrap()
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// A directory laid out like a Kafka installation of `version`: bin/, config/,
/// and libs/ with the release's real jars from the Maven local repository.
pub fn kafka_home(version: &str) -> tempfile::TempDir {
    let h = tempfile::tempdir().unwrap();
    let bin = h.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for script in ["kafka-run-class.sh", "kafka-server-start.sh", "kafka-topics.sh"] {
        std::fs::write(
            bin.join(script),
            format!(
                "#!/bin/bash\n# {script} of Kafka {version}\nexec \"$(dirname \"$0\")\"/kafka-run-class.sh \"$@\"\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(bin.join(script), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::create_dir_all(h.path().join("config")).unwrap();
    std::fs::write(h.path().join("config/server.properties"), "broker.id=1\nlog.dirs=/tmp/kafka-logs\n").unwrap();
    let libs = h.path().join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    let kafka = m2().join("org/apache/kafka");
    let mut n = 0;
    for artifact in
        ["kafka_2.13", "kafka-clients", "kafka-metadata", "kafka-raft", "kafka-server-common", "kafka-storage"]
    {
        let jar = kafka.join(artifact).join(version).join(format!("{artifact}-{version}.jar"));
        if jar.is_file() {
            std::fs::copy(&jar, libs.join(jar.file_name().unwrap())).unwrap();
            n += 1;
        }
    }
    assert!(n >= 2, "the Maven local repository lacks the {version} jars");
    // A third-party jar, as the real libs/ is full of them.
    let scala_jar = std::fs::read_dir(m2().join("org/scala-lang/scala-library"))
        .unwrap()
        .flat_map(|v| std::fs::read_dir(v.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jar") && !p.to_string_lossy().ends_with("-sources.jar"))
        .expect("a scala-library jar in the Maven local repository");
    std::fs::copy(&scala_jar, libs.join(scala_jar.file_name().unwrap())).unwrap();
    h
}

/// Every file and directory under `dir` with its bytes and permission bits.
pub fn tree(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                out.insert(format!("{rel}/"), (vec![], mode));
                walk(root, &p, out);
            } else {
                out.insert(rel, (std::fs::read(&p).unwrap(), mode));
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

/// The bundle extracted by GNU tar into a fresh directory: (the directory, the bundle's top directory in it).
pub fn untar(bundle: &Path) -> (tempfile::TempDir, PathBuf) {
    let x = tempfile::tempdir().unwrap();
    let o = run(Command::new("tar").arg("-xzf").arg(bundle).current_dir(x.path()));
    assert!(o.status.success(), "tar -xzf {}: {}", bundle.display(), stderr(&o));
    let top = bundle.file_name().unwrap().to_str().unwrap().trim_end_matches(".tar.gz").to_string();
    let root = x.path().join(top);
    (x, root)
}

pub fn manifest_of(bundle: &Path) -> serde_json::Value {
    let o = run(Command::new("tar").arg("-xzOf").arg(bundle).arg(format!("{NAME_3_9}/MANIFEST.json")));
    assert!(o.status.success());
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The shared bundle's patch-set hash.
pub fn patch_set() -> String {
    manifest_of(&shared_bundle())["patch_set_hash"].as_str().unwrap().to_string()
}

/// The trusted comment okp writes for the 3.9.2 kraft bundle.
pub fn okp_comment() -> String {
    format!(
        "timestamp:1700000000\tfile:{NAME_3_9}.tar.gz\tokp-bundle:{NAME_3_9}\trelease:3.9.2\tmode:kraft\ttarget:linux-x86_64\tpatch_set:{}\tokp_version:{}",
        patch_set(),
        env!("CARGO_PKG_VERSION")
    )
}

/// Signs `file` with the secret key and writes fresh sidecars, as a holder of the key would.
/// The trusted comment binds the 3.9.2 bundle's name but no patch set.
pub fn resign(file: &Path, key: &Path) {
    let name = file.file_name().unwrap().to_str().unwrap();
    let tc = format!(
        "timestamp:0\tfile:{name}\tokp-bundle:{NAME_3_9}\trelease:3.9.2\tmode:kraft\ttarget:linux-x86_64\tpatch_set:"
    );
    resign_with(file, key, &tc);
}

/// Signs `file` with the secret key and trusted comment `tc`, and writes fresh sidecars.
pub fn resign_with(file: &Path, key: &Path, tc: &str) {
    let text = std::fs::read_to_string(key).unwrap();
    let sk = minisign::SecretKeyBox::from_string(&text).unwrap().into_unencrypted_secret_key().unwrap();
    let bytes = std::fs::read(file).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    let sig = minisign::sign(None, &sk, std::io::Cursor::new(&bytes), Some(tc), None).unwrap();
    std::fs::write(format!("{}.minisig", file.display()), sig.to_string()).unwrap();
    for tool in ["sha256sum", "sha512sum"] {
        let o = run(Command::new(tool).arg(name).current_dir(file.parent().unwrap()));
        std::fs::write(format!("{}.{}", file.display(), &tool[..6]), o.stdout).unwrap();
    }
}

/// A .tar.gz with one hand-made entry besides a plain file, named like a bundle.
pub fn evil_tar(kind: &str) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
    let mut ok = tar::Header::new_gnu();
    ok.set_size(2);
    ok.set_mode(0o644);
    ok.set_entry_type(tar::EntryType::Regular);
    builder.append_data(&mut ok, format!("{NAME_3_9}/MANIFEST.json"), &b"{}"[..]).unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o644);
    let name = |h: &mut tar::Header, n: &str| {
        // Written into the raw header field: tar::Builder itself refuses `..` and absolute paths.
        let field = &mut h.as_old_mut().name;
        field.fill(0);
        field[..n.len()].copy_from_slice(n.as_bytes());
    };
    match kind {
        "dotdot" => {
            name(&mut h, &format!("{NAME_3_9}/../../okp-evil"));
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(5);
        }
        "absolute" => {
            name(&mut h, "/tmp/okp-evil-absolute");
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(5);
        }
        "symlink" => {
            name(&mut h, &format!("{NAME_3_9}/libs"));
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_link_name("/etc").unwrap();
            h.set_size(0);
        }
        "hardlink" => {
            name(&mut h, &format!("{NAME_3_9}/passwd"));
            h.set_entry_type(tar::EntryType::Link);
            h.set_link_name("/etc/passwd").unwrap();
            h.set_size(0);
        }
        "device" => {
            name(&mut h, &format!("{NAME_3_9}/sda"));
            h.set_entry_type(tar::EntryType::Block);
            h.set_size(0);
        }
        _ => unreachable!(),
    }
    h.set_cksum();
    let data: &[u8] = if h.size().unwrap() == 5 { b"evil\n" } else { b"" };
    builder.append(&h, data).unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

pub fn install(bundle: &Path, home: &Path, pubkey: Option<&Path>, extra: &[&str]) -> Output {
    let mut c = okp();
    c.arg("install").arg(bundle).arg("--kafka-home").arg(home).args(extra);
    if let Some(p) = pubkey {
        c.arg("--pubkey").arg(p);
    }
    c.output().unwrap()
}

pub fn rollback(home: &Path, extra: &[&str]) -> Output {
    okp().arg("rollback").arg("--kafka-home").arg(home).args(extra).output().unwrap()
}

/// A directory with `cp` and `mv` stand-ins that run the real tools, except
/// that the `fail_at`-th call of `tool` fails (as a full disk or a kill would).
pub fn failing_tools(tool: &str, fail_at: usize) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for t in ["cp", "mv"] {
        let real = String::from_utf8(run(Command::new("sh").arg("-c").arg(format!("command -v {t}"))).stdout).unwrap();
        let fail = if t == tool { fail_at } else { 0 };
        let count = d.path().join(format!("{t}.count"));
        let script = format!(
            "#!/bin/sh\nn=$(cat '{c}' 2>/dev/null || echo 0); n=$((n + 1)); echo \"$n\" > '{c}'\n[ \"$n\" -ne {fail} ] || {{ echo \"{t}: injected failure\" >&2; exit 1; }}\nexec {real} \"$@\"\n",
            c = count.display(),
            real = real.trim()
        );
        let p = d.path().join(t);
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    d
}

/// The Python of the virtualenv scripts/setup.sh makes (PyNaCl, cyclonedx-python-lib), or `OKP_PYTHON`.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("OKP_PYTHON").filter(|p| !p.is_empty()) {
        return p.into();
    }
    Path::new(&std::env::var("HOME").unwrap()).join(".local/share/okp/venv/bin/python")
}

/// Runs one of the independent checkers in tests/fixtures/attest/ with `args`.
pub fn attest_tool<S: AsRef<std::ffi::OsStr>>(script: &str, args: &[S]) -> Output {
    let py = python();
    let script = repo_root().join("tests/fixtures/attest").join(script);
    Command::new(&py)
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {} ({e}): run scripts/setup.sh", py.display(), script.display()))
}
