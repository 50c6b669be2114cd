//! `okp diff` on real consecutive releases (sources jars from Maven Central):
//! what carries over, what changed around a site, what is gone; `--write`
//! adds a working versions.yaml entry or writes the porting worksheet and
//! leaves versions.yaml alone. Snapshots pin the reports.

use crate::common::*;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn diff(args: &[&str]) -> (i32, String, String) {
    let o = okp().arg("diff").args(args).output().unwrap();
    (o.status.code().unwrap(), stdout(&o), stderr(&o))
}

fn json(from: &str, to: &str) -> serde_json::Value {
    let (_, out, err) = diff(&["--from", from, "--to", to, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(v["schema"], 1, "the json report carries its schema (docs/records.md)");
    v
}

fn anchor<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["anchors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["anchor"] == id)
        .unwrap_or_else(|| panic!("no anchor {id} in {v}"))
}

fn write_in(dir: &Path, from: &str, to: &str, extra: &[&str]) -> (i32, String, String) {
    let o = okp().current_dir(dir).args(["diff", "--from", from, "--to", to, "--write"]).args(extra).output().unwrap();
    (o.status.code().unwrap(), stdout(&o), stderr(&o))
}

#[test]
fn a_patch_release_carries_over_and_write_adds_a_working_entry() {
    let (code, out, err) = diff(&["--from", "4.1.1", "--to", "4.1.2"]);
    assert_eq!(code, 0, "{out}{err}");
    // Count-agnostic: the number of anchors changes with every hook; the snapshot pins it.
    let carried = out.lines().any(|l| l.contains("carries over: all ") && l.contains(" anchors hold in 4.1.2"));
    assert!(carried, "{out}");
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
    // other anchor carries, and only the reassignment sites changed around them, and the
    // AlterPartition validator around the defense, whose rejection log lines 4.3 all extended
    // with logPartitionChangeInfo(..).
    assert_eq!(v["verdict"], "drift");
    for a in v["anchors"].as_array().unwrap() {
        let reassignment = a["hooks"].as_array().unwrap().iter().any(|h| h.as_str().unwrap().contains("reassignment"));
        // Around three per-topic controller sites 4.3 changed nothing they rely on: the log lines of
        // replay(PartitionChangeRecord), where the imbalanced set is kept; the PartitionChangeBuilder
        // constructor (and electLeader's call of it) gained the ELR flag as an argument.
        let validator = [
            "rcm.ineligible-replicas-of-partition",
            "rcm.replay-change-preferred",
            "rcm.elect-preferred-not-needed",
            "pcb.accept-leader",
            // The KRaft broker's publisher (rack view): 4.3 moved the coordinators' deleted-topic
            // notices and renamed their image calls; the line the rack view follows is unchanged.
            "bmp.set-image",
        ]
        .contains(&a["anchor"].as_str().unwrap());
        assert_eq!(a["carries"], a["anchor"] != "prr.target-replicas-in-isr", "{a}");
        assert!(
            reassignment || validator || a["status"] != "changed",
            "no hooked method but the reassignment ones and the validator changed: {a}"
        );
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
    for id in ["psm.initial-leader-and-isr", "psm.initial-leader-and-isr-recipients", "el.offline-candidates"] {
        let a = anchor(&v, id);
        assert_eq!((a["status"].as_str(), a["carries"].as_bool()), (Some("gone"), Some(false)), "{a}");
    }
    for h in v["hooks"].as_array().unwrap() {
        // broker-rack-view loses its ZooKeeper half (UpdateMetadata, ReplicaManager) with
        // ZooKeeper; its KRaft half (the broker's metadata publisher) carries.
        let zk_only = h["scope"] == "zk-controller";
        let half = h["hook"] == "broker-rack-view";
        assert_eq!(h["has_site"], !zk_only && !half, "{h}");
        if half {
            assert_eq!(anchor(&v, "bmp.set-image")["carries"], true, "{h}");
            assert_eq!(anchor(&v, "rm.update-metadata-cache")["status"], "gone", "{h}");
        }
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
        text.contains("[ ] Hook `zk-initial-isr`") && text.contains("[ ] Re-anchor `el.offline-candidates`"),
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
    // A release without sources jars is compared by its own jars (below), not refused.
    let (code, out, err) = diff(&["--from", "4.2.1", "--to", "4.2.2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("okp diff 4.2.1 -> 4.2.2 (patch family f4.0, modes kraft, from the releases' jars)"),
        "{out}"
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
    // Maven Central has 4.4.0's POM and jars but no sources jars (versions.yaml says so), nor
    // 4.4.9's (not listed: mvn is asked).
    // Its jars are compared instead: 4.4.0 carries over with review (four sites' members changed).
    let (code, out, err) = diff(&["--from", "4.3.1", "--to", "4.4.0", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["basis"].as_str(), v["verdict"].as_str()), (Some("bytecode"), Some("carries-over-review")));
    // --write needs a tree to check the anchors in, and says which.
    let (dir, _, before) = matrix_without("4.4.0");
    let (code, _, err) = write_in(dir.path(), "4.3.1", "4.4.0", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--write needs a source of 4.4.0") && err.contains("--git REPO --to-rev TAG"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("versions.yaml")).unwrap(), before);
    // A release Maven Central has no jars of at all.
    let (code, _, err) = diff(&["--from", "4.3.1", "--to", "4.4.9"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("release 4.4.9 has no jars on Maven Central either"), "{err}");
    // Nor is it a release to port from.
    let (code, _, err) = diff(&["--from", "4.4.0", "--to", "4.3.1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--from-source DIR or --git REPO --from-rev REV"), "{err}");
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
    // The election edges' files (kraft-keep-leader, kraft-leader-balance) and the KRaft broker's rack
    // view: in both trees, changed in one commit.
    const EDGES: [&str; 5] = [
        "metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java",
        "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java",
        "metadata/src/main/java/org/apache/kafka/controller/metrics/ControllerMetadataMetricsPublisher.java",
        "metadata/src/main/java/org/apache/kafka/controller/metrics/ControllerMetricsChanges.java",
        // The KRaft broker's rack view (broker-rack-view).
        "core/src/main/scala/kafka/server/metadata/BrokerMetadataPublisher.scala",
    ];
    const PRR: &str = "metadata/src/main/java/org/apache/kafka/controller/PartitionReassignmentReplicas.java";
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    git(repo, &["init", "-q"]);
    git(repo, &["config", "user.email", "test@okp.invalid"]);
    git(repo, &["config", "user.name", "okp test"]);
    let (old, new) = (hooked_tree("4.1.2"), hooked_tree("4.2.1"));
    std::fs::write(repo.join("gradle.properties"), "version=4.1.2\n").unwrap();
    commit_files(repo, &old, &[&[PARTITION, RCM, PRR, REPLICA_MANAGER][..], &EDGES[..]].concat(), "release 4.1.2");
    git(repo, &["tag", "v4.1.2"]);
    commit_files(repo, &new, &[RCM, PRR], "KAFKA-1: controller change");
    std::fs::write(repo.join("README"), "unrelated\n").unwrap();
    commit_files(repo, &new, &[], "docs: unrelated");
    commit_files(repo, &new, &[PARTITION], "KAFKA-2: ISR as a Java set");
    commit_files(repo, &new, &[REPLICA_MANAGER], "KAFKA-3: replica manager gauges");
    commit_files(repo, &new, &EDGES, "KAFKA-4: election and balance code");
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

/// A git repository at `dir` with one commit per (tree, tag).
fn repo_of(dir: &Path, trees: &[(&Path, &str)]) {
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "test@okp.invalid"]);
    git(dir, &["config", "user.name", "okp test"]);
    for (tree, tag) in trees {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap() != ".git" {
                if p.is_dir() {
                    std::fs::remove_dir_all(&p).unwrap()
                } else {
                    std::fs::remove_file(&p).unwrap()
                }
            }
        }
        copy_into(tree, dir);
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", &format!("release {tag}")]);
        git(dir, &["tag", tag]);
    }
}

/// The shell command the worksheet says to run again.
fn rerun_line(worksheet: &str) -> String {
    let at = worksheet.find("Then run again (the same sources):\n\n```sh\n").expect("a run-again block");
    let rest = &worksheet[at..];
    let start = rest.find("```sh\n").unwrap() + "```sh\n".len();
    rest[start..].lines().next().unwrap().to_string()
}

#[test]
fn the_worksheet_says_how_to_run_again_with_the_same_sources() {
    // A drift (3.9.2 -> 4.0.2: the ZooKeeper controller is gone) leaves versions.yaml alone, so the
    // command can run again and must drift again: exit 1, never 2 (a command that does not parse
    // or reads other sources).
    let t = tempfile::tempdir().unwrap();
    let (old, new) = (hooked_tree("3.9.2"), hooked_tree("4.0.2"));
    let repo = t.path().join("kafka");
    std::fs::create_dir(&repo).unwrap();
    repo_of(&repo, &[(&old, "v3.9.2"), (&new, "v4.0.2")]);
    let (dir, _, before) = matrix_without("4.0.2");
    let versions = dir.path().join("versions.yaml");
    let okp_dir = assert_cmd::cargo::cargo_bin("okp").parent().unwrap().to_path_buf();
    let path = format!("{}:{}", okp_dir.display(), std::env::var("PATH").unwrap());
    let cases: [(&str, Vec<String>); 2] = [
        (
            "git",
            vec![
                "--git".into(),
                repo.display().to_string(),
                "--from-rev".into(),
                "v3.9.2".into(),
                "--to-rev".into(),
                "v4.0.2".into(),
            ],
        ),
        (
            "trees",
            vec!["--from-source".into(), old.display().to_string(), "--to-source".into(), new.display().to_string()],
        ),
    ];
    for (name, sources) in cases {
        let ws = dir.path().join(format!("ws-{name}.md"));
        let o = okp()
            .current_dir(dir.path())
            .arg("--versions")
            .arg(&versions)
            .args(["diff", "--from", "3.9.2", "--to", "4.0.2", "--write", "--worksheet"])
            .arg(&ws)
            .args(&sources)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let text = std::fs::read_to_string(&ws).unwrap();
        let line = rerun_line(&text);
        for word in sources.iter().chain([&versions.display().to_string(), &ws.display().to_string()]) {
            assert!(line.split(' ').any(|w| w == word), "{name}: `{word}` not in `{line}`");
        }
        std::fs::remove_file(&ws).unwrap();
        // Run it as written, by sh, from another directory.
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .env("PATH", &path)
            .current_dir(t.path())
            .output()
            .unwrap();
        assert!(matches!(o.status.code(), Some(0 | 1)), "{name}: `{line}` exited {:?}: {}", o.status, stderr(&o));
        assert_eq!(o.status.code(), Some(1), "{name}: the same sources drift the same way");
        assert!(ws.is_file(), "{name}: the rerun wrote the worksheet where the first run did");
        assert_eq!(std::fs::read_to_string(&ws).unwrap(), text, "{name}: the rerun saw the same sources");
        assert_eq!(std::fs::read_to_string(&versions).unwrap(), before);
    }
}

#[test]
fn write_marks_a_release_maven_central_has_no_sources_jar_of() {
    // 4.2.2 is published without sources jars. Its stand-in tree here is 4.2.1's hooked files
    // under 4.2.2's number (versions.yaml's note: the hooked classes are byte-identical), read
    // from git, the way a real port reads a release tag.
    let t = tempfile::tempdir().unwrap();
    let tree = copy_all(&hooked_tree("4.2.1"));
    std::fs::write(tree.path().join(".okp-source.json"), "{\"release\": \"4.2.2\"}\n").unwrap();
    let repo = t.path().join("kafka");
    std::fs::create_dir(&repo).unwrap();
    repo_of(&repo, &[(tree.path(), "v4.2.2")]);
    let (dir, real_entry, _) = matrix_without("4.2.2");
    let o = okp()
        .current_dir(dir.path())
        .args(["diff", "--from", "4.2.1", "--to", "4.2.2", "--git"])
        .arg(&repo)
        .args(["--to-rev", "v4.2.2", "--write"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("4.2.2 is marked no_sources_jar"), "{}", stderr(&o));
    let versions = dir.path().join("versions.yaml");
    let doc: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&versions).unwrap()).unwrap();
    let entry = doc["releases"].as_array().unwrap().iter().find(|r| r["version"] == "4.2.2").unwrap();
    let why = entry["no_sources_jar"].as_str().expect("no_sources_jar written");
    assert!(
        why.contains("no -sources.jar (org.apache.kafka:kafka_2.13:4.2.2:sources, org.apache.kafka:kafka-metadata:4.2.2:sources not published")
            && why.contains(&format!("ported with okp diff from git {} at v4.2.2 (", repo.display())),
        "{why}"
    );
    // Everything else is what the real entry says.
    let real: serde_json::Value = serde_saphyr::from_str(&format!("releases:\n{real_entry}")).unwrap();
    let real = &real["releases"][0];
    for key in ["family", "modes", "scala", "java_release", "java_release_metadata", "sources", "jars", "gradle_tasks"]
    {
        assert_eq!(entry[key], real[key], "{key}");
    }
    // check-anchors on it alone names the providers that read a checkout.
    let o = okp().arg("--versions").arg(&versions).args(["check-anchors", "--version", "4.2.2"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("check-anchors reads a checkout instead with --source DIR or --git REPO --rev REV"));
    // The weekly sentinel (`check-anchors --all`) stays green with it: skipped, with a line saying so.
    let o = okp().arg("--versions").arg(&versions).args(["check-anchors", "--all"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("4.2.2") && all.contains("skip"), "{all}");
}

fn guard<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["guards"].as_array().unwrap().iter().find(|g| g["guard"] == id).unwrap_or_else(|| panic!("no guard {id} in {v}"))
}

#[test]
fn guarded_code_changes_from_4_2_1_to_4_3_1() {
    // 4.3 moved the ISR expansion onto the lambda lock API: the promotion gate's anchor holds, but
    // the method that calls it, guarded for that hook, changed; so did the KRaft AlterPartition
    // handlers (guarded for the defense hook).
    let v = json("4.2.1", "4.3.1");
    let g = guard(&v, "partition.maybe-expand-isr");
    assert_eq!((g["status"].as_str(), g["hook"].as_str()), (Some("changed"), Some("promotion-gate")), "{g}");
    let hunks: Vec<&str> = g["diff"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(hunks[0].starts_with("@@ -") && hunks[0].ends_with("@@ def maybeExpandIsr"), "{hunks:?}");
    assert!(
        hunks.contains(&"+    val needsIsrUpdate = !partitionState.isInflight && canAddReplicaToIsr(followerReplica.brokerId) && inReadLock(leaderIsrUpdateLock, () => {"),
        "{hunks:?}"
    );
    assert_eq!(guard(&v, "rcm.alter-partition")["status"], "changed");
    assert_eq!(guard(&v, "pcb.is-valid-new-leader")["status"], "unchanged");
    // No ZooKeeper guard in a KRaft-only release.
    assert!(v["guards"].as_array().unwrap().iter().all(|g| !g["hook"].as_str().unwrap().starts_with("zk-")));
    let (code, md, _) = diff(&["--from", "4.2.1", "--to", "4.3.1", "--format", "markdown"]);
    assert_eq!(code, 1, "4.2 -> 4.3 drifts at prr.target-replicas-in-isr (why f4.3 exists)");
    let section = &md[md.find("### Guarded code changed").expect("the section")..];
    insta::assert_snapshot!("guarded_code_4_2_1_to_4_3_1_markdown", section);
    let (code, _, _) = diff(&["--from", "4.2.1", "--to", "4.3.1", "--strict"]);
    assert_eq!(code, 1);
}

#[test]
fn a_guarded_change_alone_asks_for_review_and_is_drift_under_strict() {
    // 4.1.2 against itself, but for one line of the guarded maybeExpandIsr: every anchor holds
    // unchanged, only the guard sees it.
    const PARTITION: &str = "core/src/main/scala/kafka/cluster/Partition.scala";
    let old = hooked_tree("4.1.2");
    let new = copy_all(&old);
    let p = new.path().join(PARTITION);
    let text = std::fs::read_to_string(&p).unwrap();
    // The first send after the method's header is its own (maybeShrinkIsr has the same line).
    let at = text.find("  private def maybeExpandIsr(").unwrap();
    let (head, tail) = text.split_at(at);
    let send = "      alterIsrUpdateOpt.foreach(submitAlterPartition)\n";
    let edited = format!(
        "{head}{}",
        tail.replacen(send, "      alterIsrUpdateOpt.foreach(update => submitAlterPartition(update))\n", 1)
    );
    std::fs::write(&p, edited).unwrap();
    let args = |extra: &[&str]| -> (i32, String, String) {
        let mut a = vec!["--from-source", old.to_str().unwrap(), "--to-source", new.path().to_str().unwrap()];
        a.extend(extra);
        diff(&a)
    };
    let (code, out, err) = args(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("guarded code (anchors.yaml guards of 4.1.2): 23 unchanged, 1 changed"), "{out}");
    assert!(out.contains("GUARDED CODE CHANGED `partition.maybe-expand-isr` (hook promotion-gate)"), "{out}");
    assert!(out.contains("+      alterIsrUpdateOpt.foreach(update => submitAlterPartition(update))"), "{out}");
    assert!(!out.contains("changed calls of the site"), "no anchor sees it: {out}");
    assert!(
        out.contains("anchors hold in 4.1.2, but 1 guarded region(s) changed")
            && out.contains("carries over with review: all "),
        "{out}"
    );
    let (code, _, _) = args(&["--strict"]);
    assert_eq!(code, 1, "--strict counts a guarded change as drift");
    let (_, json, _) = args(&["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"], "carries-over-review");
    assert!(v["anchors"].as_array().unwrap().iter().all(|a| a["status"] == "unchanged"), "{v}");
}

#[test]
fn every_guard_is_found_once_in_every_release_it_covers() {
    // A release against itself: a guard that does not fit a release it claims shows as unlocated.
    let no_sources = releases_without_sources_jar();
    let mut seen = std::collections::BTreeSet::new();
    for (v, _) in matrix().into_iter().filter(|(v, _)| !no_sources.contains(v)) {
        let j = json(&v, &v);
        for g in j["guards"].as_array().unwrap() {
            assert_eq!(g["status"], "unchanged", "{v}: {g}");
            seen.insert(g["guard"].as_str().unwrap().to_string());
        }
    }
    // And every guard of anchors.yaml serves some release.
    let doc: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(repo_root().join("anchors.yaml")).unwrap()).unwrap();
    let all: std::collections::BTreeSet<String> =
        doc["guards"].as_array().unwrap().iter().map(|g| g["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(seen, all);
}

/// The members of each class in `javap -c -p` output of `jar`, normalised without okp (constant
/// pool indices, byte offsets and branch targets dropped): class -> member header -> code lines.
fn javap(jar: &Path, classes: &[String]) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let o = std::process::Command::new("javap")
        .args(["-c", "-p", "-cp"])
        .arg(jar)
        .args(classes.iter().map(|c| c.replace('/', ".")))
        .output()
        .expect("javap (a JDK)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let index = regex::Regex::new(r"#\d+(,\s*\d+)?").unwrap();
    let target = regex::Regex::new(r"^(goto|if\w*|jsr)(\s+)\d+").unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let (mut class, mut member) = (String::new(), String::new());
    for l in text.lines() {
        if l.starts_with("Compiled from") {
            continue;
        }
        if !l.starts_with(' ') && l.ends_with('{') {
            let decl = l.trim_end_matches('{').trim();
            let decl = decl.split(" extends ").next().unwrap().split(" implements ").next().unwrap();
            let decl = decl.split('<').next().unwrap();
            class = decl.split_whitespace().last().unwrap().to_string();
        } else if l.starts_with("  ") && !l.starts_with("   ") && l.ends_with(';') {
            member = l.trim().to_string();
            out.entry(class.clone()).or_default().insert(member.clone(), Vec::new());
        } else if let Some((_, insn)) = l.trim().split_once(": ").filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
        {
            let insn =
                target.replace(&index.replace_all(insn, "#"), "$1 X").split("//").next().unwrap().trim().to_string();
            out.entry(class.clone()).or_default().entry(member.clone()).or_default().push(insn);
        }
    }
    out
}

/// `void validateTotalNumberOfPartitions(java.util.List<…CreatePartitionsTopic>);` ->
/// `method validateTotalNumberOfPartitions(List)`, as okp names members.
fn okp_name(class: &str, header: &str) -> String {
    let head = header.trim_end_matches(';');
    let Some((before, params)) = head.split_once('(') else {
        return format!("field {}", head.split_whitespace().last().unwrap());
    };
    let mut name = before.split_whitespace().last().unwrap().to_string();
    if name == class {
        name = "<init>".into();
    }
    let params = params.trim_end_matches(')').split(" throws ").next().unwrap().trim_end_matches(')');
    let (mut depth, mut cur, mut list) = (0, String::new(), Vec::new());
    for c in params.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ',' if depth == 0 => list.push(std::mem::take(&mut cur)),
            c if depth == 0 => cur.push(c),
            _ => {}
        }
    }
    if !cur.trim().is_empty() {
        list.push(cur);
    }
    let simple: Vec<String> = list
        .iter()
        .map(|p| {
            let p = p.trim().replace("...", "[]");
            let base = p.trim_end_matches("[]");
            let dims = (p.len() - base.len()) / 2;
            format!("{}{}", base.rsplit(['.', '$']).next().unwrap(), "[]".repeat(dims))
        })
        .collect();
    format!("method {name}({})", simple.join(", "))
}

#[test]
fn the_bytecode_of_4_3_2_against_4_3_1_changes_only_replication_control_manager() {
    let (code, out, err) = diff(&["--from", "4.3.1", "--to", "4.3.2", "--binary", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["basis"].as_str(), v["verdict"].as_str()), (Some("bytecode"), Some("carries-over")));
    let b = &v["binary"];
    let classes = b["classes"].as_array().unwrap();
    let changed: Vec<&serde_json::Value> = classes.iter().filter(|c| c["status"] != "unchanged").collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    const RCM: &str = "org/apache/kafka/controller/ReplicationControlManager";
    assert_eq!(changed[0]["class"], RCM);
    let list = |k: &str| -> BTreeSet<String> {
        changed[0][k]
            .as_array()
            .map(|a| a.iter().map(|m| m.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    // What javap says, without okp: read both releases' jars, every class okp compared.
    let jar = |a: &str, v: &str| m2().join(format!("org/apache/kafka/{a}/{v}/{a}-{v}.jar"));
    let names: Vec<String> = classes.iter().map(|c| c["class"].as_str().unwrap().to_string()).collect();
    let (core, metadata): (Vec<String>, Vec<String>) = names.into_iter().partition(|c| c.starts_with("kafka/"));
    let mut truth_added = BTreeSet::new();
    let mut truth_changed = BTreeSet::new();
    let mut truth_removed = BTreeSet::new();
    for (artifact, of) in [("kafka_2.13", &core), ("kafka-metadata", &metadata)] {
        let (a, b) = (javap(&jar(artifact, "4.3.1"), of), javap(&jar(artifact, "4.3.2"), of));
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (class, members) in &a {
            let simple = class.rsplit('.').next().unwrap();
            for (m, code) in members {
                match b[class].get(m) {
                    None => truth_removed.insert(format!("{class} {}", okp_name(simple, m))),
                    Some(c) if c != code => truth_changed.insert(format!("{class} {}", okp_name(simple, m))),
                    _ => false,
                };
            }
            for m in b[class].keys().filter(|m| !members.contains_key(*m)) {
                truth_added.insert(format!("{class} {}", okp_name(simple, m)));
            }
        }
    }
    let rcm = |s: BTreeSet<String>| -> BTreeSet<String> {
        s.into_iter().map(|m| format!("{} {m}", RCM.replace('/', "."))).collect()
    };
    assert_eq!(rcm(list("added")), truth_added);
    assert_eq!(rcm(list("changed")), truth_changed);
    assert!(list("removed").is_empty() && truth_removed.is_empty(), "{truth_removed:?}");
    assert!(truth_added.contains(
        "org.apache.kafka.controller.ReplicationControlManager method validateTotalNumberOfPartitions(List)"
    ));
    assert!(truth_changed.contains(
        "org.apache.kafka.controller.ReplicationControlManager method createPartitions(ControllerRequestContext, List)"
    ));
    // Every hook site carries, at the release's own lines: RCM's moved +30 and +35.
    let site = |id: &str| b["sites"].as_array().unwrap().iter().find(|s| s["anchor"] == id).unwrap().clone();
    assert!(b["sites"].as_array().unwrap().iter().all(|s| s["verdict"] == "carries"));
    assert_eq!(
        (
            site("rcm.ineligible-replicas-of-partition")["from_line"].as_u64(),
            site("rcm.ineligible-replicas-of-partition")["to_line"].as_u64()
        ),
        (Some(1346), Some(1376))
    );
    assert_eq!(site("rcm.change-reassignment-validate")["to_line"].as_u64(), Some(2304));
    assert!(b["guards"].as_array().unwrap().iter().all(|g| g["status"] == "unchanged"));
}

#[test]
fn write_refuses_the_4_3_1_release_commit_as_4_3_2() {
    // A repository whose commit declares 4.3.1 (gradle.properties) and holds 4.3.1's hooked files:
    // what the 4.3.1 release commit is to okp.
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().join("kafka");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "test@okp.invalid"]);
    git(&repo, &["config", "user.name", "okp test"]);
    let tree = hooked_tree("4.3.1");
    let files: Vec<String> = walk(&tree);
    let refs: Vec<&str> = files.iter().map(String::as_str).collect();
    std::fs::write(repo.join("gradle.properties"), "group=org.apache.kafka\nversion=4.3.1\n").unwrap();
    commit_files(&repo, &tree, &refs, "Bump version to 4.3.1");
    let (dir, _, before) = matrix_without("4.3.2");
    let run = |extra: &[&str]| {
        let o = okp()
            .current_dir(dir.path())
            .args(["diff", "--from", "4.3.1", "--to", "4.3.2", "--git"])
            .arg(&repo)
            .args(["--to-rev", "HEAD", "--write"])
            .args(extra)
            .output()
            .unwrap();
        (o.status.code().unwrap(), stderr(&o))
    };
    let (code, err) = run(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("declares version 4.3.1 (gradle.properties), not 4.3.2: it is not 4.3.2's source"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("versions.yaml")).unwrap(), before, "nothing written");
    // Taken on purpose: recorded as what it is, with the verdict's origin, and how it takes effect.
    let (code, err) = run(&["--accept-version-mismatch"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("takes effect") && err.contains("--versions") && err.contains("rebuild okp"), "{err}");
    let doc: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.path().join("versions.yaml")).unwrap()).unwrap();
    let entry = doc["releases"].as_array().unwrap().iter().find(|r| r["version"] == "4.3.2").unwrap();
    let why = entry["no_sources_jar"].as_str().unwrap();
    assert!(
        why.contains("a commit declaring version 4.3.1, not 4.3.2 (taken with --accept-version-mismatch")
            && why.contains("verdict from 4.3.2's own bytecode against 4.3.1's (okp diff --binary): carries over")
            && why.contains("lacks ReplicationControlManager.validateTotalNumberOfPartitions(List)"),
        "{why}"
    );
}

/// Every file of `root` (relative paths), its marker left out.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != ".okp-source.json" {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}
