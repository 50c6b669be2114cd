//! Drift is caught: altered copies of real release files (3.9.2 from Maven
//! Central) give the right report and exit code. Snapshots pin the reports.

use crate::common::*;

const RELEASE: &str = "3.9.2";

/// Runs check-anchors (zk mode) on a tree holding `file` rewritten by `alter`.
fn check_altered(hook: &str, alter: impl Fn(&mut Vec<String>, &AnchorRef)) -> (i32, String, AnchorRef) {
    let a = anchor_for(hook, RELEASE);
    let pristine = release_tree(RELEASE);
    // The tree holds every file the zk anchors read, so only the altered anchor drifts.
    let files = [
        "core/src/main/scala/kafka/cluster/Partition.scala",
        "core/src/main/scala/kafka/controller/PartitionStateMachine.scala",
        "core/src/main/scala/kafka/controller/KafkaController.scala",
        "core/src/main/scala/kafka/controller/ControllerContext.scala",
        "core/src/main/scala/kafka/server/ReplicaManager.scala",
        "core/src/main/scala/kafka/controller/Election.scala",
        "core/src/main/scala/kafka/server/metadata/BrokerMetadataPublisher.scala",
    ];
    let tree = copy_tree(&pristine, &files);
    let path = tree.path().join(&a.file);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    alter(&mut lines, &a);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let o = okp().args(["check-anchors", "--mode", "zk", "--source"]).arg(tree.path()).output().unwrap();
    (o.status.code().unwrap(), scrub(&stdout(&o), tree.path()), a)
}

fn position(lines: &[String], a: &AnchorRef) -> usize {
    (0..lines.len())
        .find(|&i| a.lines.iter().enumerate().all(|(k, l)| lines.get(i + k) == Some(l)))
        .expect("anchor in pristine file")
}

#[test]
fn pristine_release_passes() {
    let o = okp().args(["check-anchors", "--source"]).arg(release_tree(RELEASE)).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn deleted_anchor_is_missing_with_candidates() {
    let (code, out, a) = check_altered("promotion-gate", |lines, a| {
        let i = position(lines, a);
        lines.drain(i..i + a.lines.len());
    });
    assert_eq!(code, 1);
    assert!(out.contains(&format!("anchor `{}`", a.id)));
    assert!(out.contains("found 0 times"));
    insta::assert_snapshot!("deleted", out);
}

#[test]
fn duplicated_anchor_is_ambiguous_with_every_location() {
    let (code, out, a) = check_altered("promotion-gate", |lines, a| {
        let copy = a.lines.clone();
        let at = lines.len() - 1;
        lines.splice(at..at, copy);
    });
    assert_eq!(code, 1);
    assert!(out.contains(&"found 2 times, at lines".to_string()), "{out}");
    assert!(out.contains(&a.id));
    insta::assert_snapshot!("duplicated", out);
}

#[test]
fn reindented_anchor_is_missing_and_says_so() {
    let (code, out, _) = check_altered("promotion-gate", |lines, a| {
        let i = position(lines, a);
        for l in &mut lines[i..i + a.lines.len()] {
            *l = format!("  {l}");
        }
    });
    assert_eq!(code, 1);
    assert!(out.contains("same text, different indentation"), "{out}");
    insta::assert_snapshot!("reindented", out);
}

#[test]
fn anchor_moved_into_another_method_is_misplaced() {
    let (code, out, a) = check_altered("hw-gate", |lines, a| {
        assert!(a.enclosing.is_some(), "the hw-gate anchor must name its enclosing method");
        let i = position(lines, a);
        let moved: Vec<String> = lines.drain(i..i + a.lines.len()).collect();
        let target = lines.iter().position(|l| l.contains("def getOutOfSyncReplicas(")).expect("getOutOfSyncReplicas");
        lines.splice(target + 1..target + 1, moved);
    });
    assert_eq!(code, 1);
    assert!(out.contains("but not inside"), "{out}");
    assert!(out.contains("def getOutOfSyncReplicas("), "{out}");
    assert!(out.contains(&a.id));
    insta::assert_snapshot!("moved", out);
}

#[test]
fn junit_and_json_carry_the_same_verdict() {
    let a = anchor_for("promotion-gate", RELEASE);
    let tree = copy_tree(&release_tree(RELEASE), &["core/src/main/scala/kafka/controller/PartitionStateMachine.scala"]);
    let o = okp()
        .args(["check-anchors", "--mode", "zk", "--format", "junit", "--source"])
        .arg(tree.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let x = stdout(&o);
    assert!(x.starts_with("<?xml"));
    assert!(x.contains(&format!("name=\"{}\">\n      <failure message=\"file-missing\"", a.id)), "{x}");
    let o = okp()
        .args(["check-anchors", "--mode", "zk", "--format", "json", "--source"])
        .arg(tree.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["schema"], 1, "the json report carries its schema (docs/records.md)");
}
