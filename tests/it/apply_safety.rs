//! Applying is boringly safe: a kill at any point of the write sequence never
//! leaves a half-patched tree, and every refused input leaves every byte as it was.

use crate::common::*;

use std::path::Path;

const V: &str = "3.9.2";
const M: &str = "kraft";

fn apply(dir: &Path, extra: &[&str]) -> std::process::Output {
    okp().args(["apply", "--mode", M, "--source"]).arg(dir).args(extra).output().unwrap()
}

/// The fully patched bytes of the 3.9.2 kraft tree.
fn patched() -> std::collections::BTreeMap<String, Vec<u8>> {
    let t = copy_all(&hooked_tree(V));
    assert!(apply(t.path(), &[]).status.success());
    snapshot(t.path())
}

#[test]
fn a_kill_at_any_write_step_leaves_pristine_or_patched_and_a_rerun_recovers() {
    let pristine = snapshot(&hooked_tree(V));
    let full = patched();
    let mut aborted = 0;
    for n in 1..=40 {
        // Apply from a pristine copy, aborting (as a kill would: no cleanup runs) after n durable steps.
        let t = copy_all(&hooked_tree(V));
        let o = okp()
            .args(["apply", "--mode", M, "--source"])
            .arg(t.path())
            .env("OKP_TEST_ABORT_AFTER", n.to_string())
            .output()
            .unwrap();
        if o.status.success() {
            // n is past the last step: the whole sequence ran.
            assert_eq!(snapshot(t.path()), full);
            assert!(aborted > 5, "expected several write steps, aborted at {aborted}");
            break;
        }
        aborted += 1;
        assert!(o.status.code().is_none(), "step {n}: apply should have been killed: {}", stderr(&o));
        // Any okp command first finishes the story; the tree is then pristine or fully patched.
        let s = okp().args(["status", "--source"]).arg(t.path()).output().unwrap();
        assert!(s.status.success(), "step {n}: {}", stderr(&s));
        let now = snapshot(t.path());
        assert!(now == pristine || now == full, "step {n}: half-patched tree after recovery");
        // A re-run lands the patch set.
        let r = apply(t.path(), &[]);
        assert!(r.status.success(), "step {n}: re-run failed: {}", stderr(&r));
        assert_eq!(snapshot(t.path()), full, "step {n}: re-run did not fully patch");
        let rv = okp().args(["revert", "--source"]).arg(t.path()).output().unwrap();
        assert!(rv.status.success());
        assert_eq!(snapshot(t.path()), pristine, "step {n}: revert after recovery");
        assert!(!t.path().join(".okp").exists(), "step {n}: .okp left behind");
    }
    assert!(aborted >= 8, "only {aborted} steps were exercised");
}

#[test]
fn a_kill_during_revert_is_finished_by_the_next_command() {
    let pristine = snapshot(&hooked_tree(V));
    for n in 1..=30 {
        let t = copy_all(&hooked_tree(V));
        assert!(apply(t.path(), &[]).status.success());
        let o = okp()
            .args(["revert", "--source"])
            .arg(t.path())
            .env("OKP_TEST_ABORT_AFTER", n.to_string())
            .output()
            .unwrap();
        if o.status.success() {
            assert_eq!(snapshot(t.path()), pristine);
            break;
        }
        let s = okp().args(["status", "--source"]).arg(t.path()).output().unwrap();
        assert!(s.status.success(), "step {n}: {}", stderr(&s));
        assert_eq!(snapshot(t.path()), pristine, "step {n}: revert not finished");
        assert!(stdout(&s).contains("pristine"), "{}", stdout(&s));
    }
}

#[test]
fn second_apply_is_a_noop_that_says_so() {
    let t = copy_all(&hooked_tree(V));
    assert!(apply(t.path(), &[]).status.success());
    let before = snapshot(t.path());
    let o = apply(t.path(), &[]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("already carries patch set"), "{}", stderr(&o));
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let t = copy_all(&hooked_tree(V));
    let before = snapshot(t.path());
    let o = apply(t.path(), &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let diff = stdout(&o);
    assert!(diff.contains("+++ b/core/src/main/scala/kafka/cluster/Partition.scala"));
    assert!(diff.contains("+    // OBSERVER PATCH: an observer is never added to the ISR"));
    assert_eq!(snapshot(t.path()), before);
    assert!(!t.path().join(".okp").exists());
}

#[test]
fn dirty_git_tree_is_refused_and_left_alone() {
    let t = copy_all(&hooked_tree(V));
    git_init_commit(t.path());
    let f = t.path().join("core/src/main/scala/kafka/cluster/Partition.scala");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("// a local change\n");
    std::fs::write(&f, &text).unwrap();
    let before = snapshot(t.path());
    let o = apply(t.path(), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "uncommitted changes in files okp would touch: core/src/main/scala/kafka/cluster/Partition.scala"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn commit_lands_the_patch_on_a_new_branch() {
    let t = copy_all(&hooked_tree(V));
    git_init_commit(t.path());
    let o = apply(t.path(), &["--commit"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let branch = git_in(t.path(), &["rev-parse", "--abbrev-ref", "HEAD"]);
    assert_eq!(String::from_utf8_lossy(&branch.stdout).trim(), format!("okp/observer-{V}-{M}"));
    let st = git_in(t.path(), &["status", "--porcelain"]);
    assert!(st.stdout.is_empty(), "work tree not clean: {}", String::from_utf8_lossy(&st.stdout));
    let files = git_in(t.path(), &["show", "--name-only", "--format=", "HEAD"]);
    let files = String::from_utf8_lossy(&files.stdout).into_owned();
    assert!(files.contains("core/src/main/scala/kafka/observer/ObserverIds.scala"), "{files}");
    assert!(
        files.contains("metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java"),
        "{files}"
    );
}

#[test]
fn wrong_release_is_refused_unless_forced() {
    let t = copy_all(&hooked_tree(V));
    let before = snapshot(t.path());
    let o = apply(t.path(), &["--version", "3.9.1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("declares version 3.9.2, not 3.9.1"), "{}", stderr(&o));
    assert_eq!(snapshot(t.path()), before);
    // Forced, 3.9.1's patch set (same family) lands on the 3.9.2 tree: the files it edits are
    // byte for byte 3.9.1's own (compared with 3.9.1's sources jar), so nothing else is needed.
    let o = apply(t.path(), &["--version", "3.9.1", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("byte-identical to Kafka 3.9.1's"), "{}", stderr(&o));
}

/// A hooked file that is not the release's own bytes (a fork, a local change outside every
/// anchor) is refused before anything is written, naming the file and both sha256; with
/// --allow-modified it is patched and the state records it, which `okp status` shows.
#[test]
fn a_hooked_file_changed_since_the_release_is_refused_unless_allowed() {
    let t = copy_all(&hooked_tree(V));
    let o = apply(t.path(), &["--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("byte-identical to Kafka 3.9.2's"), "{}", stderr(&o));
    let path = "core/src/main/scala/kafka/cluster/Partition.scala";
    let f = t.path().join(path);
    let mut text = std::fs::read(&f).unwrap();
    text.extend_from_slice(b"// a fork's change, outside every anchor\n");
    std::fs::write(&f, &text).unwrap();
    let before = snapshot(t.path());
    let o = apply(t.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("{path} (sha256 {} here", okp::hash::sha256(&text))), "{err}");
    assert!(err.contains("nothing was changed") && err.contains("--allow-modified"), "{err}");
    assert_eq!(snapshot(t.path()), before);
    assert!(!t.path().join(".okp").exists());

    let o = apply(t.path(), &["--allow-modified"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join(".okp/state.json")).unwrap()).unwrap();
    let modified = state["modified"].as_array().unwrap();
    assert_eq!(modified.len(), 1, "{state}");
    assert!(modified[0].as_str().unwrap().starts_with(path), "{state}");
    let o = okp().args(["status", "--source"]).arg(t.path()).output().unwrap();
    assert!(stdout(&o).contains(&format!("applied with --allow-modified: {path}")), "{}", stdout(&o));
}

#[test]
fn read_only_file_is_refused_before_anything_is_written() {
    let t = copy_all(&hooked_tree(V));
    let f = t.path().join("metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java");
    let mut p = std::fs::metadata(&f).unwrap().permissions();
    p.set_readonly(true);
    std::fs::set_permissions(&f, p).unwrap();
    let before = snapshot(t.path());
    let o = apply(t.path(), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ReplicationControlManager.java: is read-only"), "{}", stderr(&o));
    assert_eq!(snapshot(t.path()), before);
    assert!(!t.path().join(".okp").exists());
}

#[test]
fn anchor_drift_writes_nothing() {
    let t = copy_all(&hooked_tree(V));
    let f = t.path().join("core/src/main/scala/kafka/cluster/Partition.scala");
    let text = std::fs::read_to_string(&f).unwrap().replace(
        "  private def canAddReplicaToIsr(followerReplicaId: Int): Boolean = {",
        "  private def canAddReplicaToIsr(replicaId: Int): Boolean = {",
    );
    std::fs::write(&f, text).unwrap();
    let before = snapshot(t.path());
    let o = apply(t.path(), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("anchor `partition.can-add-replica-to-isr`"), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing was written"), "{}", stderr(&o));
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn damaged_state_file_is_refused() {
    let t = copy_all(&hooked_tree(V));
    assert!(apply(t.path(), &[]).status.success());
    std::fs::write(t.path().join(".okp/state.json"), "{ not json").unwrap();
    let before = snapshot(t.path());
    for cmd in [&["apply", "--mode", M][..], &["revert"][..]] {
        let o = okp().args(cmd).arg("--source").arg(t.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        assert!(stderr(&o).contains("state.json is damaged"), "{}", stderr(&o));
        assert_eq!(snapshot(t.path()), before);
    }
}

#[test]
fn another_patch_set_version_is_refused() {
    let t = copy_all(&hooked_tree(V));
    assert!(apply(t.path(), &[]).status.success());
    let before = snapshot(t.path());
    // The same patch set with one edit's marker text changed: a different patch-set hash.
    let p = tempfile::tempdir().unwrap();
    copy_into(&repo_root().join("patches"), p.path());
    let e = p.path().join("edits.yaml");
    let text = std::fs::read_to_string(&e).unwrap().replacen(
        "why: an observer is never added to the ISR",
        "why: observers never join the ISR",
        1,
    );
    std::fs::write(&e, text).unwrap();
    let o =
        okp().arg("--patches").arg(p.path()).args(["apply", "--mode", M, "--source"]).arg(t.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already carries another okp patch set"), "{}", stderr(&o));
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn revert_refuses_files_changed_since_apply() {
    let t = copy_all(&hooked_tree(V));
    assert!(apply(t.path(), &[]).status.success());
    let f = t.path().join("core/src/main/scala/kafka/cluster/Partition.scala");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("// edited after apply\n");
    std::fs::write(&f, &text).unwrap();
    let before = snapshot(t.path());
    okp_run(okp().args(["revert", "--source"]).arg(t.path())).code(2).err_has("changed since okp applied");
    assert_eq!(snapshot(t.path()), before);
    let o = okp().args(["revert", "--force", "--source"]).arg(t.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(snapshot(t.path()), snapshot(&hooked_tree(V)));
}

#[test]
fn both_modes_need_an_explicit_choice() {
    let t = copy_all(&hooked_tree(V));
    okp_run(okp().args(["apply", "--source"]).arg(t.path())).code(2).err_has("supports zk and kraft: pass --mode");
}
