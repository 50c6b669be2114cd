//! Shared test support: run the okp binary, lay out real release sources,
//! and look anchors up in the real manifest.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

pub mod bundle;
pub mod dev_cluster;

pub fn okp() -> Command {
    let mut c = Command::cargo_bin("okp").expect("okp binary");
    c.env_remove("NO_COLOR");
    // Every test stops what it started: no resident compiler outlives a test's build (its own
    // tests, tests/it/resident.rs, start theirs in a directory of their own and stop them).
    c.env("OKP_NO_DAEMON", "1");
    c
}

/// A finished okp run: its exit code and both streams. Built by `okp_run`; each check panics at the
/// caller's line showing the code and both streams.
pub struct Ran {
    pub code: Option<i32>,
    pub out: String,
    pub err: String,
}

/// Runs `cmd` (usually `okp().args([...])`) to its end.
pub fn okp_run(cmd: &mut Command) -> Ran {
    let o = cmd.output().unwrap();
    Ran { code: o.status.code(), out: stdout(&o), err: stderr(&o) }
}

impl Ran {
    fn shown(&self) -> String {
        format!("exit {:?}\n--- stdout\n{}--- stderr\n{}", self.code, self.out, self.err)
    }

    /// The exit code is `want`.
    #[track_caller]
    pub fn code(self, want: i32) -> Self {
        assert_eq!(self.code, Some(want), "{}", self.shown());
        self
    }

    /// stderr holds `part`.
    #[track_caller]
    pub fn err_has(self, part: &str) -> Self {
        assert!(self.err.contains(part), "stderr lacks {part:?}:\n{}", self.shown());
        self
    }

    /// stdout holds `part`.
    #[track_caller]
    pub fn out_has(self, part: &str) -> Self {
        assert!(self.out.contains(part), "stdout lacks {part:?}:\n{}", self.shown());
        self
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Maven local repository okp and its tests use.
pub fn m2() -> PathBuf {
    std::env::var_os("OKP_MAVEN_REPO_LOCAL")
        .map(Into::into)
        .unwrap_or_else(|| Path::new(&std::env::var("HOME").unwrap()).join(".m2/repository"))
}

/// The output of `okp <args> --out DIR`, made once per build directory under
/// target/`group`/`name` and shared read-only; `marker` is a file the output
/// always holds. Concurrent test binaries may race; both outputs are the same.
pub fn cached_output(group: &str, name: &str, marker: &str, args: &[&str]) -> PathBuf {
    // A build depends on the patch set: its cache directory is named by it too, so a build kept
    // from before a change of the patch set (target/ survives between local runs) is not reused.
    let name =
        &if args.first() == Some(&"build") { format!("{name}-{}", patch_set_digest()) } else { name.to_string() };
    let base = repo_root().join("target").join(group);
    let dir = base.join(name);
    if dir.join(marker).is_file() {
        return dir;
    }
    std::fs::create_dir_all(&base).unwrap();
    let staging = tempfile::tempdir_in(&base).unwrap();
    let out = staging.path().join("out");
    let o = okp().args(args).arg("--out").arg(&out).output().unwrap();
    assert!(o.status.success(), "okp {args:?} failed: {}", stderr(&o));
    let _ = std::fs::rename(&out, &dir);
    assert!(dir.join(marker).is_file());
    dir
}

/// The first 12 hex digits of a sha256 over what a build's patch set is made of: every file under
/// patches/, anchors.yaml and versions.yaml (paths and bytes, in path order).
pub fn patch_set_digest() -> String {
    static D: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        let root = repo_root();
        let mut files = vec![root.join("anchors.yaml"), root.join("versions.yaml")];
        let mut dirs = vec![root.join("patches")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    files.push(p);
                }
            }
        }
        files.sort();
        let mut all = Vec::new();
        for f in files {
            all.extend(f.strip_prefix(&root).unwrap().to_string_lossy().as_bytes());
            all.push(0);
            all.extend(std::fs::read(&f).unwrap());
            all.push(0);
        }
        okp::hash::sha256(&all)[..12].to_string()
    })
    .clone()
}

/// A pristine tree of a real release's sources (from its Maven Central
/// sources jars, through `okp sources`). Tests copy what they alter.
pub fn release_tree(version: &str) -> PathBuf {
    cached_output("okp-test-trees", version, ".okp-source.json", &["sources", "--version", version])
}

/// Copies the files of `src` that okp reads (the anchored ones and the
/// marker) into a fresh temporary tree the test may alter.
pub fn copy_tree(src: &Path, files: &[&str]) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for f in files.iter().chain([".okp-source.json"].iter()) {
        let from = src.join(f);
        let to = t.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
    t
}

/// An anchor of the real manifest: (id, file, lines).
pub struct AnchorRef {
    pub id: String,
    pub file: String,
    pub lines: Vec<String>,
    pub enclosing: Option<String>,
}

fn version_key(v: &str) -> (u32, u32, u32) {
    let p: Vec<u32> = v.split('.').map(|x| x.parse().unwrap()).collect();
    (p[0], p[1], p[2])
}

/// The first text anchor of `hook` that covers release `version`.
pub fn anchor_for(hook: &str, version: &str) -> AnchorRef {
    let text = std::fs::read_to_string(repo_root().join("anchors.yaml")).unwrap();
    let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let v = version_key(version);
    for a in doc["anchors"].as_array().unwrap() {
        let hooks: Vec<&str> = a["hooks"].as_array().unwrap().iter().filter_map(|h| h.as_str()).collect();
        let from = version_key(a["from"].as_str().unwrap());
        let to = a["to"].as_str().map(version_key);
        if !hooks.contains(&hook) || from > v || to.is_some_and(|t| t < v) {
            continue;
        }
        let Some(t) = a["text"].as_str() else { continue };
        return AnchorRef {
            id: a["id"].as_str().unwrap().to_string(),
            file: a["file"].as_str().unwrap().to_string(),
            lines: t.strip_suffix('\n').unwrap_or(t).split('\n').map(str::to_string).collect(),
            enclosing: a["enclosing"].as_str().map(str::to_string),
        };
    }
    panic!("no text anchor for hook {hook} at {version}");
}

/// The entries of the real versions.yaml.
fn releases() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(repo_root().join("versions.yaml")).unwrap();
    let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    doc["releases"].as_array().unwrap().clone()
}

/// Every release listed in the real versions.yaml with its modes.
pub fn matrix() -> Vec<(String, Vec<String>)> {
    releases()
        .iter()
        .map(|r| {
            let v = match &r["version"] {
                serde_json::Value::String(s) => s.clone(),
                other => panic!("version not a string: {other:?}"),
            };
            let modes = r["modes"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_string()).collect();
            (v, modes)
        })
        .collect()
}

/// The releases the real versions.yaml marks `no_sources_jar` (no sources jars on Maven Central).
pub fn releases_without_sources_jar() -> Vec<String> {
    releases()
        .iter()
        .filter(|r| r["no_sources_jar"].is_string())
        .map(|r| r["version"].as_str().unwrap().to_string())
        .collect()
}

/// Replaces temp paths and the okp version in output, so snapshots are stable.
pub fn scrub(s: &str, tmp: &Path) -> String {
    s.replace(&tmp.display().to_string(), "[TREE]")
}

/// A tree holding only the files the anchors of `version` touch, the other files its splice
/// build's scalac reads and the marker, laid out by `okp sources --hooked`.
pub fn hooked_tree(version: &str) -> PathBuf {
    // Which files are hooked follows anchors.yaml, and which others a splice build reads follows
    // src/build/splice.rs (`scalac_reads`), so a cached tree is only good for the ones it was made from.
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in ["anchors.yaml", "src/build/splice.rs", "src/cmd/sources.rs"] {
        std::fs::read(repo_root().join(f)).unwrap().hash(&mut h);
    }
    let name = format!("hooked-{version}-{:016x}", h.finish());
    cached_output("okp-test-trees", &name, ".okp-source.json", &["sources", "--hooked", "--version", version])
}

/// A private copy of a whole tree.
pub fn copy_all(src: &Path) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    copy_into(src, t.path());
    t
}

pub fn copy_into(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_into(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// Every file under `dir` (except okp's own .okp/ and .git/) with its bytes.
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, d: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".okp" || rel == ".git" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = std::collections::BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

pub fn git_in(dir: &Path, args: &[&str]) -> Output {
    let o = std::process::Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Turns `dir` into a git repository with everything committed.
pub fn git_init_commit(dir: &Path) {
    git_in(dir, &["init", "-q"]);
    git_in(dir, &["config", "user.email", "test@okp.invalid"]);
    git_in(dir, &["config", "user.name", "okp test"]);
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-qm", "pristine"]);
}

/// A copy of the real versions.yaml without `version`'s entry, in a fresh directory.
pub fn matrix_without(version: &str) -> (tempfile::TempDir, String, String) {
    let real = std::fs::read_to_string(repo_root().join("versions.yaml")).unwrap();
    let start = real.find(&format!("  - version: {version}\n")).unwrap();
    // The entry ends where the next entry, or a comment above one, starts.
    let body = &real[start..];
    let len = body
        .split_inclusive('\n')
        .enumerate()
        .skip(1)
        .find(|(_, l)| l.starts_with("  - ") || l.starts_with("  #"))
        .map_or(body.len(), |(i, _)| body.split_inclusive('\n').take(i).map(str::len).sum());
    let end = start + len;
    let entry = real[start..end].to_string();
    let dir = tempfile::tempdir().unwrap();
    let without = format!("{}{}", &real[..start], &real[end..]);
    std::fs::write(dir.path().join("versions.yaml"), &without).unwrap();
    (dir, entry, without)
}
