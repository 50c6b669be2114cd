//! `okp sources` leaves nothing behind when killed: the next run removes the staging directory a
//! killed run left (named after its pid, which no longer runs), and only such directories.

use crate::common::*;

#[test]
fn a_killed_runs_staging_is_swept_and_a_live_ones_is_kept() {
    let parent = tempfile::tempdir().unwrap();
    // A pid above the kernel's default pid_max does not run.
    let stale = parent.path().join(".okp-sources-4194303-abc123");
    std::fs::create_dir_all(stale.join("core")).unwrap();
    std::fs::write(stale.join("core/x"), "half").unwrap();
    let live = parent.path().join(format!(".okp-sources-{}-def456", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let foreign = parent.path().join(".okp-sources-notapid");
    std::fs::create_dir(&foreign).unwrap();
    let out = parent.path().join("tree");
    let o = okp().args(["sources", "--version", "3.9.2", "--hooked", "--out"]).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stale.exists(), "the killed run's staging directory is still there");
    assert!(stderr(&o).contains("removed") && stderr(&o).contains("4194303"), "{}", stderr(&o));
    assert!(live.exists(), "a running process's staging directory was removed");
    assert!(foreign.exists(), "a directory okp did not name was removed");
    assert!(out.join(".okp-source.json").is_file());
    let left: Vec<String> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with(".okp-sources-")
                && !n.contains(&std::process::id().to_string())
                && n != ".okp-sources-notapid"
        })
        .collect();
    assert!(left.is_empty(), "staging left behind: {left:?}");
}
