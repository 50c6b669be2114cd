//! `okp diff` on real consecutive releases (sources jars from Maven Central):
//! what carries over, what changed around a site, what is gone; `--write`
//! adds a working versions.yaml entry or writes the porting worksheet and
//! leaves versions.yaml alone. Snapshots pin the reports.

mod common;
use common::*;

use std::path::Path;

fn diff(args: &[&str]) -> (i32, String, String) {
    let o = okp().arg("diff").args(args).output().unwrap();
    (o.status.code().unwrap(), stdout(&o), stderr(&o))
}

fn json(from: &str, to: &str) -> serde_json::Value {
    let (_, out, err) = diff(&["--from", from, "--to", to, "--format", "json"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"))
}

fn anchor<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["anchors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["anchor"] == id)
        .unwrap_or_else(|| panic!("no anchor {id} in {v}"))
}

/// A copy of the real versions.yaml without `version`'s entry, in a fresh directory.
fn matrix_without(version: &str) -> (tempfile::TempDir, String, String) {
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

fn write_in(dir: &Path, from: &str, to: &str, extra: &[&str]) -> (i32, String, String) {
    let o = okp().current_dir(dir).args(["diff", "--from", from, "--to", to, "--write"]).args(extra).output().unwrap();
    (o.status.code().unwrap(), stdout(&o), stderr(&o))
}

#[test]
fn a_patch_release_carries_over_and_write_adds_a_working_entry() {
    let (code, out, err) = diff(&["--from", "4.1.1", "--to", "4.1.2"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("carries over: all 13 anchors hold in 4.1.2"), "{out}");
    insta::assert_snapshot!("carries_over_4_1_1_to_4_1_2", out);

    let (dir, real_entry, before) = matrix_without("4.1.2");
    let (code, _, err) = write_in(dir.path(), "4.1.1", "4.1.2", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "added 4.1.2 to versions.yaml (family f4.0, modes kraft, scala 2.13.16, java 17); check-anchors passed"
        ),
        "{err}"
    );
    let after = std::fs::read_to_string(dir.path().join("versions.yaml")).unwrap();
    // The entry okp wrote is the real one, but for `reference` (a human's choice), and nothing else moved.
    let written = after.replacen(&before[..before.find("  - version: 4.2.0\n").unwrap()], "", 1);
    assert!(written.starts_with(&real_entry.replace("    reference: true\n", "")), "{written}");
    assert_eq!(after.replace(&real_entry.replace("    reference: true\n", ""), ""), before);
    assert!(!dir.path().join("porting-4.1.1-4.1.2.md").exists(), "nothing to decide, no worksheet");
    let o = okp()
        .arg("--versions")
        .arg(dir.path().join("versions.yaml"))
        .args(["check-anchors", "--version", "4.1.2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // A second --write refuses and changes nothing.
    let (code, _, err) = write_in(dir.path(), "4.1.1", "4.1.2", &[]);
    assert_eq!(code, 2);
    assert!(err.contains("4.1.2 is already in versions.yaml"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("versions.yaml")).unwrap(), after);
}

#[test]
fn the_demotion_site_changes_from_4_1_2_to_4_2_1() {
    let v = json("4.1.2", "4.2.1");
    assert_eq!(v["verdict"], "carries-over-review");
    let a = anchor(&v, "partition.out-of-sync-filter");
    assert_eq!((a["status"].as_str(), a["carries"].as_bool()), (Some("changed"), Some(true)));
    assert_eq!(a["site"], "method getOutOfSyncReplicas");
    let hunks: Vec<&str> = a["diff"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(hunks.contains(&"-      val candidateReplicaIds = current.isr - localBrokerId"), "{hunks:?}");
    assert!(hunks.iter().any(|l| l.starts_with('+') && l.contains("val candidateReplicaIds")), "{hunks:?}");
    let hook = v["hooks"].as_array().unwrap().iter().find(|h| h["hook"] == "demotion").unwrap();
    assert_eq!((hook["has_site"].as_bool(), hook["changed"].as_bool()), (Some(true), Some(true)));
    let (code, md, _) = diff(&["--from", "4.1.2", "--to", "4.2.1", "--format", "markdown"]);
    assert_eq!(code, 0, "the anchors carry over");
    insta::assert_snapshot!("demotion_site_4_1_2_to_4_2_1_markdown", md);
    let (code, _, _) = diff(&["--from", "4.1.2", "--to", "4.2.1", "--strict"]);
    assert_eq!(code, 1, "--strict counts a changed site as drift");

    // --write adds the release (the anchors hold) and lists the site to review.
    let (dir, _, _) = matrix_without("4.2.1");
    let (code, _, err) = write_in(dir.path(), "4.1.2", "4.2.1", &[]);
    assert_eq!(code, 0, "{err}");
    let ws = std::fs::read_to_string(dir.path().join("porting-4.1.2-4.2.1.md")).unwrap();
    assert!(ws.contains("[ ] Review `partition.out-of-sync-filter`"), "{ws}");
}

#[test]
fn the_lock_api_changes_from_4_2_1_to_4_3_1() {
    let v = json("4.2.1", "4.3.1");
    // 4.3 rewrote the KRaft reassignment completion test (adding replicas, then every target when
    // shrinking): its 4.2 anchor does not carry, which is why f4.3 is a family of its own. Every
    // other anchor carries, and only the reassignment sites changed around them.
    assert_eq!(v["verdict"], "drift");
    for a in v["anchors"].as_array().unwrap() {
        let reassignment = a["hooks"].as_array().unwrap().iter().any(|h| h.as_str().unwrap().contains("reassignment"));
        assert_eq!(a["carries"], a["anchor"] != "prr.target-replicas-in-isr", "{a}");
        assert!(reassignment || a["status"] != "changed", "no hooked method but the reassignment ones changed: {a}");
    }
    // The ISR-expansion path that calls the promotion gate moved to the LockUtils lambda API.
    let gate = anchor(&v, "partition.can-add-replica-to-isr");
    let callers: Vec<&str> = gate["callers"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(
        callers.iter().any(|l| l.starts_with('+')
            && l.contains("canAddReplicaToIsr(followerReplica.brokerId) && inReadLock(leaderIsrUpdateLock, () => {")),
        "{callers:?}"
    );
    let (code, out, _) = diff(&["--from", "4.2.1", "--to", "4.3.1"]);
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!("lock_api_4_2_1_to_4_3_1", out);
}

#[test]
fn the_zookeeper_controller_is_gone_in_4_0_2() {
    let (code, out, _) = diff(&["--from", "3.9.2", "--to", "4.0.2"]);
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!("zk_controller_gone_3_9_2_to_4_0_2", out);
    let v = json("3.9.2", "4.0.2");
    assert_eq!(v["verdict"], "drift");
    for id in ["psm.initial-leader-and-isr", "psm.initial-leader-and-isr-recipients", "psm.unclean-leader-opt"] {
        let a = anchor(&v, id);
        assert_eq!((a["status"].as_str(), a["carries"].as_bool()), (Some("gone"), Some(false)), "{a}");
    }
    for h in v["hooks"].as_array().unwrap() {
        assert_eq!(h["has_site"], h["scope"] != "zk-controller", "{h}");
    }
    let psm = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"].as_str().unwrap().ends_with("PartitionStateMachine.scala"))
        .unwrap();
    assert_eq!((psm["in_from"].as_bool(), psm["in_to"].as_bool()), (Some(true), Some(false)));

    // --write: the worksheet, and versions.yaml byte for byte as it was.
    let (dir, _, before) = matrix_without("4.0.2");
    let ws = dir.path().join("ws.md");
    let (code, _, err) = write_in(dir.path(), "3.9.2", "4.0.2", &["--worksheet", ws.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("versions.yaml unchanged"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("versions.yaml")).unwrap(), before);
    let text = std::fs::read_to_string(&ws).unwrap();
    assert!(
        text.contains("[ ] Hook `zk-initial-isr`") && text.contains("[ ] Re-anchor `psm.unclean-leader-opt`"),
        "{text}"
    );
    insta::assert_snapshot!(
        "zk_controller_gone_worksheet",
        scrub(&text.replace(env!("CARGO_PKG_VERSION"), "[OKP]"), dir.path())
    );
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let (code, _, err) = diff(&["--from", "4.2.1", "--to", "2.6.0"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown Kafka release 2.6.0"), "{err}");
    let (code, _, err) = diff(&["--from", "4.2.1", "--to", "4.2.2"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("release 4.2.2: Maven Central serves 4.2.2's binary jars")
            && err.contains("--to-source DIR or --git REPO --to-rev REV"),
        "{err}"
    );
    let (code, _, err) = diff(&["--to", "4.3.1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--from V, --from-source DIR or --git REPO --from-rev REV"), "{err}");
    // A tree that does not hold the old release's patch set is not something to port from.
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join(".okp-source.json"), "{\"release\": \"4.2.1\"}\n").unwrap();
    let (code, _, err) = diff(&["--from-source", empty.path().to_str().unwrap(), "--to", "4.3.1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("does not hold the patch set of 4.2.1")
            && err.contains("anchor `partition.can-add-replica-to-isr`"),
        "{err}"
    );
}

#[test]
fn a_release_without_sources_jars_names_the_other_providers() {
    // Maven Central has 4.4.0's POM and jars but no sources jars (mvn is asked).
    let (code, _, err) = diff(&["--from", "4.3.1", "--to", "4.4.0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("release 4.4.0 has no sources jar") && err.contains("--to-source DIR"), "{err}");
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let args = ["--from", "4.1.2", "--to", "4.2.1"];
    let (_, plain, _) = diff(&args);
    assert!(!plain.contains('\x1b'), "not a terminal: no colour");
    let (_, always, _) = diff(&[&args[..], &["--color", "always"]].concat());
    assert!(always.contains("\x1b[31m-      val candidateReplicaIds = current.isr - localBrokerId\x1b[0m"), "{always}");
    let o = okp().env("NO_COLOR", "1").arg("diff").args(args).output().unwrap();
    assert!(!stdout(&o).contains('\x1b'));
}

fn git(dir: &Path, args: &[&str]) {
    git_in(dir, args);
}

/// Replaces the files of `tree` in `repo` and commits them with `msg`.
fn commit_files(repo: &Path, tree: &Path, files: &[&str], msg: &str) {
    for f in files {
        let to = repo.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(tree.join(f), &to).unwrap();
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", msg]);
}

#[test]
fn git_sources_list_the_commits_that_touched_each_hooked_file() {
    const PARTITION: &str = "core/src/main/scala/kafka/cluster/Partition.scala";
    const RCM: &str = "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java";
    const REPLICA_MANAGER: &str = "core/src/main/scala/kafka/server/ReplicaManager.scala";
    const PRR: &str = "metadata/src/main/java/org/apache/kafka/controller/PartitionReassignmentReplicas.java";
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    git(repo, &["init", "-q"]);
    git(repo, &["config", "user.email", "test@okp.invalid"]);
    git(repo, &["config", "user.name", "okp test"]);
    let (old, new) = (hooked_tree("4.1.2"), hooked_tree("4.2.1"));
    std::fs::write(repo.join("gradle.properties"), "version=4.1.2\n").unwrap();
    commit_files(repo, &old, &[PARTITION, RCM, PRR, REPLICA_MANAGER], "release 4.1.2");
    git(repo, &["tag", "v4.1.2"]);
    commit_files(repo, &new, &[RCM, PRR], "KAFKA-1: controller change");
    std::fs::write(repo.join("README"), "unrelated\n").unwrap();
    commit_files(repo, &new, &[], "docs: unrelated");
    commit_files(repo, &new, &[PARTITION], "KAFKA-2: ISR as a Java set");
    commit_files(repo, &new, &[REPLICA_MANAGER], "KAFKA-3: replica manager gauges");
    std::fs::write(repo.join("gradle.properties"), "version=4.2.1\n").unwrap();
    commit_files(repo, &new, &[], "bump version");
    git(repo, &["tag", "v4.2.1"]);

    let o = okp()
        .args(["diff", "--git"])
        .arg(repo)
        .args(["--from-rev", "v4.1.2", "--to-rev", "v4.2.1", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let summaries = |file: &str| -> Vec<String> {
        let f = v["files"].as_array().unwrap().iter().find(|f| f["file"] == file).unwrap();
        f["commits"].as_array().unwrap().iter().map(|c| c["summary"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(summaries(PARTITION), ["KAFKA-2: ISR as a Java set"]);
    assert_eq!(summaries(RCM), ["KAFKA-1: controller change"]);
    // The versions come from the trees, and the verdict is the Maven Central one.
    assert_eq!((v["from"]["version"].as_str(), v["to"]["version"].as_str()), (Some("4.1.2"), Some("4.2.1")));
    let maven = json("4.1.2", "4.2.1");
    assert_eq!(v["anchors"], maven["anchors"]);
    // Table and markdown show them too.
    let o = okp()
        .args(["diff", "--git"])
        .arg(repo)
        .args(["--from-rev", "v4.1.2", "--to-rev", "v4.2.1", "--format", "markdown"])
        .output()
        .unwrap();
    assert!(
        stdout(&o).contains("1 commit(s) touched <code>core/src/main/scala/kafka/cluster/Partition.scala</code>"),
        "{}",
        stdout(&o)
    );
    // Mixed providers: the old side from Maven Central, the new one from git.
    let o = okp()
        .args(["diff", "--from", "4.1.2", "--git"])
        .arg(repo)
        .args(["--to-rev", "v4.2.1", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mixed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(mixed["anchors"], maven["anchors"]);
    assert!(mixed["files"][0].get("commits").is_none(), "commits need two revisions");
}
