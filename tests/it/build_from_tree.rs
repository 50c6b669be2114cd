//! okp build from any source: the splice backend reading the upstream files
//! from a tree (`--tree`, an `okp sources` tree) or a git revision (`--git
//! --rev`) makes the same jars, byte for byte, as from the release's Maven
//! Central sources jars; so a release published without sources jars builds
//! from a checkout. Checked with `sha256sum`, an independent hasher.

use crate::common::*;

use std::collections::BTreeMap;
use std::path::Path;

/// sha256 of every jar in `dir`, by `sha256sum`.
fn jar_hashes(dir: &Path) -> BTreeMap<String, String> {
    let mut jars: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    jars.sort();
    assert!(!jars.is_empty(), "no jar in {}", dir.display());
    jars.iter()
        .map(|j| {
            let o = std::process::Command::new("sha256sum").arg(j).output().expect("sha256sum");
            assert!(o.status.success());
            let hash = String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().to_string();
            (j.file_name().unwrap().to_string_lossy().into_owned(), hash)
        })
        .collect()
}

/// okp-build.json read through okp's own reader (schema checked), as JSON for the assertions.
fn record(dir: &Path) -> serde_json::Value {
    serde_json::to_value(okp::build::record::BuildRecord::read(dir).unwrap()).unwrap()
}

/// The real versions.yaml with `version` marked as published without sources jars.
fn versions_without_sources_jar(dir: &Path, version: &str) -> std::path::PathBuf {
    let real = std::fs::read_to_string(repo_root().join("versions.yaml")).unwrap();
    let line = format!("  - version: {version}\n");
    assert!(real.contains(&line));
    let marked = real.replacen(&line, &format!("{line}    no_sources_jar: \"test: no sources jar of {version}\"\n"), 1);
    let p = dir.join("versions.yaml");
    std::fs::write(&p, marked).unwrap();
    p
}

#[test]
fn a_tree_and_a_git_revision_build_the_jars_the_sources_jars_build() {
    let t = tempfile::tempdir().unwrap();
    let build = |extra: &[&std::ffi::OsStr], out: &str| {
        let dir = t.path().join(out);
        let o = okp().arg("build").args(extra).args(["--mode", "zk", "--out"]).arg(&dir).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        dir
    };
    let from_jars = build(&["--version".as_ref(), "3.9.2".as_ref()], "jars");

    // The matrix says Maven Central has no sources jar of 3.9.2: the default source is refused,
    // naming the flags that read a checkout; a tree and a git revision still build.
    let versions = versions_without_sources_jar(t.path(), "3.9.2");
    let o = okp()
        .arg("--versions")
        .arg(&versions)
        .args(["build", "--version", "3.9.2", "--mode", "zk", "--out"])
        .arg(t.path().join("refused"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("release 3.9.2: test: no sources jar of 3.9.2; the splice build reads the files it patches from a checkout instead with --tree DIR or --git REPO --rev REV"),
        "{}",
        stderr(&o)
    );
    assert!(!t.path().join("refused").exists());

    // A whole tree laid out by `okp sources --version 3.9.2`.
    let tree = release_tree("3.9.2");
    let from_tree = build(
        &[
            "--versions".as_ref(),
            versions.as_os_str(),
            "--version".as_ref(),
            "3.9.2".as_ref(),
            "--tree".as_ref(),
            tree.as_os_str(),
        ],
        "tree",
    );

    // A git repository of one commit holding the hooked files (all the splice build reads) and
    // okp's marker, which says the release: no --version needed.
    let repo = copy_all(&hooked_tree("3.9.2"));
    git_init_commit(repo.path());
    let from_git = build(
        &[
            "--versions".as_ref(),
            versions.as_os_str(),
            "--git".as_ref(),
            repo.path().as_os_str(),
            "--rev".as_ref(),
            "HEAD".as_ref(),
        ],
        "git",
    );

    let expected = jar_hashes(&from_jars);
    assert_eq!(expected.keys().collect::<Vec<_>>(), ["kafka_2.13-3.9.2.jar"]);
    assert_eq!(jar_hashes(&from_tree), expected, "--tree built other jars");
    assert_eq!(jar_hashes(&from_git), expected, "--git built other jars");

    // Each record says where its sources came from.
    let source = |d: &Path| record(d)["source"].as_str().unwrap().to_string();
    assert!(source(&from_jars).starts_with("Maven Central release 3.9.2 (org.apache.kafka:kafka_2.13:3.9.2:sources"));
    assert_eq!(source(&from_tree), format!("directory {}", tree.display()));
    assert!(
        source(&from_git).starts_with(&format!("git {} at HEAD (", repo.path().display())),
        "{}",
        source(&from_git)
    );
    for d in [&from_jars, &from_tree, &from_git] {
        assert_eq!(record(d)["jars"][0]["sha256"], expected["kafka_2.13-3.9.2.jar"].as_str());
    }

    // `okp verify --jars` re-derives the build before it runs anything: for a release without a
    // sources jar only from the tree the build read, which --tree / --git --rev name.
    let ev = t.path().join("ev");
    let verify = |extra: &[&std::ffi::OsStr]| {
        okp()
            .arg("--versions")
            .arg(&versions)
            .args(["verify", "--version", "3.9.2", "--mode", "zk", "--scenarios", "INIT", "--lanes", "1", "--evidence"])
            .arg(&ev)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = verify(&["--jars".as_ref(), from_tree.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("name it with --tree DIR or --git REPO --rev REV"), "{}", stderr(&o));
    let o = verify(&["--tree".as_ref(), tree.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pass --jars DIR"), "{}", stderr(&o));
    assert!(!ev.exists(), "a refused verify wrote evidence");
    let o = verify(&["--jars".as_ref(), from_tree.as_os_str(), "--tree".as_ref(), tree.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("re-derived from its bytes"), "{}", stderr(&o));
}

#[test]
fn a_tree_of_another_release_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["build", "--version", "3.9.1", "--mode", "zk", "--tree"])
        .arg(release_tree("3.9.2"))
        .arg("--out")
        .arg(out.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("declares release 3.9.2, not 3.9.1"), "{}", stderr(&o));
    // --tree and --git feed the splice backend, not Gradle.
    let o = okp()
        .args(["build", "--version", "3.9.2", "--mode", "zk", "--backend", "gradle", "--tree"])
        .arg(release_tree("3.9.2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--tree and --git feed the splice backend"), "{}", stderr(&o));
    let o = okp().args(["build", "--version", "3.9.2", "--git", "/nonexistent"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "--git needs --rev: {}", stderr(&o));
}
