//! okp's resident compiler (src/build/resident.rs): a splice build through it makes the classes a
//! one-shot compile makes, byte for byte, and whatever happens to it (killed mid-compile, a stale
//! socket, a server of another key, a token file others can read, two builds at once) the build
//! still succeeds with the same jars, compiled in a JVM of its own. Real compilers, a real release
//! (3.9.2 zk); each test has its own servers' directory (`OKP_DAEMON_DIR`).

use crate::common::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Every class file under `dir`, by path.
fn classes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "class") {
                out.insert(p.strip_prefix(root).unwrap().display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn build(daemons: &Path, out: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = okp();
    c.env_remove("OKP_NO_DAEMON");
    c.args(["build", "--version", "3.9.2", "--mode", "zk", "--out"]).arg(out).env("OKP_DAEMON_DIR", daemons);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The jars' sha256 of a build, by file name.
fn jars(out: &Path) -> BTreeMap<String, String> {
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("okp-build.json")).unwrap()).unwrap();
    rec["jars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["path"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), j["sha256"].to_string()))
        .collect()
}

/// The one server directory under `daemons`.
fn server_dir(daemons: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(daemons).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// The pids of the JVMs serving from `dir` (their command line names its socket).
fn server_pids(dir: &Path) -> Vec<i32> {
    let needle = dir.join("sock").display().to_string();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("okp.build.OkpCompileServer") && cmd.contains(&needle) {
            pids.push(pid);
        }
    }
    pids
}

fn stop_servers(dir: &Path) {
    for pid in server_pids(dir) {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

#[test]
fn the_resident_compiler_makes_the_one_shot_classes() {
    let daemons = tempfile::tempdir().unwrap();
    let (one_shot, first, second) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = build(daemons.path(), one_shot.path(), &[("OKP_NO_DAEMON", "1")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!daemons.path().read_dir().unwrap().any(|_| true), "OKP_NO_DAEMON started a server");
    let o = build(daemons.path(), first.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("started the resident compiler"), "{}", stderr(&o));
    let dir = server_dir(daemons.path());
    // The second build is served by the first build's server: a new compiler, the same classes.
    let o = build(daemons.path(), second.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("started the resident compiler"), "{}", stderr(&o));
    assert_eq!(server_pids(&dir).len(), 1);
    let want = classes(&one_shot.path().join("work/classes-core"));
    assert!(want.len() > 100, "{} classes", want.len());
    for out in [first.path(), second.path()] {
        let got = classes(&out.join("work/classes-core"));
        assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
        for (name, bytes) in &want {
            assert!(got[name] == *bytes, "{name} differs from the one-shot compile's");
        }
        assert_eq!(jars(out), jars(one_shot.path()));
    }
    // Its directory and token are this user's alone.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(dir.join("token")).unwrap().permissions().mode() & 0o777, 0o600);
    stop_servers(&dir);
}

#[test]
fn whatever_happens_to_the_resident_compiler_the_build_makes_the_same_jars() {
    use std::os::unix::fs::PermissionsExt;
    let daemons = tempfile::tempdir().unwrap();
    let reference = tempfile::tempdir().unwrap();
    let o = build(daemons.path(), reference.path(), &[("OKP_NO_DAEMON", "1")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let want = jars(reference.path());
    let ok = |o: &Output, out: &Path, said: &str| {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
        assert!(stderr(o).contains(said), "expected {said:?} in:\n{}", stderr(o));
        assert_eq!(jars(out), want);
    };

    // Killed mid-compile: the build compiles again in a JVM of its own.
    let out = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("okp"))
        .args(["build", "--version", "3.9.2", "--mode", "zk", "--out"])
        .arg(out.path())
        .env("OKP_DAEMON_DIR", daemons.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let dir = loop {
        let found = std::fs::read_dir(daemons.path()).unwrap().next().map(|e| e.unwrap().path());
        if let Some(d) = found.filter(|d| !server_pids(d).is_empty() && d.join("sock").exists()) {
            break d;
        }
        assert!(t.elapsed().as_secs() < 300, "no server started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // The request is in once the server has taken it; a moment later it is compiling.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    stop_servers(&dir);
    let o = child.wait_with_output().unwrap();
    ok(&o, out.path(), "ended before it answered");

    // A stale socket (the killed server's) is replaced by a new server.
    assert!(dir.join("sock").exists(), "the killed server's socket is still there");
    let out = tempfile::tempdir().unwrap();
    ok(&build(daemons.path(), out.path(), &[]), out.path(), "started the resident compiler");

    // Two builds at once: one is served, the other compiles in a JVM of its own.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (oa, ob) = std::thread::scope(|s| {
        let ha = s.spawn(|| build(daemons.path(), a.path(), &[]));
        let hb = s.spawn(|| build(daemons.path(), b.path(), &[]));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    for (o, out) in [(&oa, a.path()), (&ob, b.path())] {
        ok(o, out, "");
    }
    stop_servers(&dir);

    // A token file others can read: its server is not used.
    let out = tempfile::tempdir().unwrap();
    ok(&build(daemons.path(), out.path(), &[]), out.path(), "started the resident compiler");
    std::fs::set_permissions(dir.join("token"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = tempfile::tempdir().unwrap();
    ok(&build(daemons.path(), out.path(), &[]), out.path(), "with mode 0600 (mode 644)");
    stop_servers(&dir);

    // A server of another key on the socket: named, left alone, not used.
    std::fs::set_permissions(dir.join("token"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let _ = std::fs::remove_file(dir.join("sock"));
    let listener = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
    let impostor = std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            use std::io::Write;
            let _ = s.write_all(b"okp-compile-server 1 0000 4242\n");
        }
    });
    let out = tempfile::tempdir().unwrap();
    ok(&build(daemons.path(), out.path(), &[]), out.path(), "is for another compiler, JDK or classpath");
    impostor.join().unwrap();
    stop_servers(&dir);
}
