//! The git provider (object database reads, no checkout) agrees with the
//! directory provider, on a repository built here from real release sources
//! with one tag per release, and works on a bare clone.

use crate::common::*;

use std::path::Path;
use std::process::Command;

const RELEASES: [&str; 4] = ["2.7.2", "3.4.1", "3.9.2", "4.3.1"];

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// check-anchors JSON with the source description removed (it names the provider).
fn verdict(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let o = okp().arg("check-anchors").args(args).args(["--format", "json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for t in v["targets"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("source");
    }
    v
}

#[test]
fn git_provider_agrees_with_directory_provider() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().join("kafka");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "test@okp.invalid"]);
    git(&repo, &["config", "user.name", "okp test"]);
    for v in RELEASES {
        // Replace the whole tree with this release's sources, commit, tag.
        for e in std::fs::read_dir(&repo).unwrap() {
            let e = e.unwrap();
            if e.file_name() != ".git" {
                let p = e.path();
                if p.is_dir() {
                    std::fs::remove_dir_all(p).unwrap()
                } else {
                    std::fs::remove_file(p).unwrap()
                }
            }
        }
        copy_into(&release_tree(v), &repo);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", &format!("release {v}")]);
        git(&repo, &["tag", v]);
    }
    let bare = t.path().join("kafka.git");
    let o = Command::new("git").args(["clone", "-q", "--bare"]).arg(&repo).arg(&bare).output().unwrap();
    assert!(o.status.success());
    for v in RELEASES {
        let dir = release_tree(v);
        let from_dir = verdict(&["--source".as_ref(), dir.as_os_str()]);
        let from_git = verdict(&["--git".as_ref(), repo.as_os_str(), "--rev".as_ref(), v.as_ref()]);
        let from_bare = verdict(&["--git".as_ref(), bare.as_os_str(), "--rev".as_ref(), v.as_ref()]);
        assert_eq!(from_dir, from_git, "{v}: git and directory providers disagree");
        assert_eq!(from_dir, from_bare, "{v}: bare repository differs");
        assert!(from_dir["anchors"].as_u64().unwrap() > 0);
    }
    // The work tree (checked out at the last tag) was not touched by the reads.
    let st = Command::new("git").arg("-C").arg(&repo).args(["status", "--porcelain"]).output().unwrap();
    assert!(st.stdout.is_empty());
}
