//! Provenance proofs of splice builds (docs: src/build/proof.rs): with the real
//! releases' sources jars, jars and compilers, the patched jars are proved to
//! be the release plus exactly our edits; a source changed outside our edits
//! and a patch set that changes a method no edit sits in are refused.

use crate::common::*;

use std::process::Command;

use okp::build::splice::{self, SpliceOutcome};
use okp::error::Error;
use okp::model::{Layers, Mode};
use okp::source::DirTree;
use okp::workspace::{DataFiles, Workspace};

fn record(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("okp-build.json")).unwrap()).unwrap()
}

fn sha256sum(p: &std::path::Path) -> String {
    let o = Command::new("sha256sum").arg(p).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().to_string()
}

#[test]
fn the_proofs_pass_for_3_9_2_zk_and_4_3_1_kraft_from_the_sources_jars() {
    for (version, mode, edited_class, edited_member) in [
        // The initial-ISR edit sits in the lambda that builds each partition's LeaderAndIsr.
        (
            "3.9.2",
            "zk",
            "kafka/controller/ZkPartitionStateMachine",
            "method $anonfun$initializeLeaderAndIsrForPartitions$6(ZkPartitionStateMachine, Tuple2)",
        ),
        ("4.3.1", "kraft", "org/apache/kafka/controller/PartitionChangeBuilder", "method electLeader()"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let o = okp().args(["build", "--version", version, "--mode", mode, "--out"]).arg(out.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{version} {mode}: {}", stderr(&o));
        let p = &record(out.path())["provenance"];
        // Since the read-replica hook (3.3.2+), core builds recompile ReplicaManager.scala, the one
        // file whose source = release proof is not established (a recompile of 3.9.2's unmodified
        // source differs in fetchMessages): its difference is recorded apart, never another file's.
        assert_eq!(p["release"]["passed"], true, "{p:#}");
        let unestablished = p["release"]["not_established"].as_array().cloned().unwrap_or_default();
        assert!(unestablished.iter().all(|d| d.as_str().unwrap().starts_with("ReplicaManager.scala: ")), "{p:#}");
        assert_eq!(p["delta"]["passed"], true, "{p:#}");
        assert!(p["release"]["classes_compared"].as_u64().unwrap() >= 7, "{p:#}");
        let changed: Vec<&str> = p["delta"]["changed_members"][edited_class]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(changed.contains(&edited_member), "{version}: {changed:?}");
        assert!(p["delta"]["new_classes"].as_array().unwrap().iter().any(|c| c.as_str().unwrap().contains("Observer")));
        // The sources jars' hashes, checked with sha256sum.
        for j in p["sources_jars"].as_array().unwrap() {
            let coord = j["coordinate"].as_str().unwrap();
            let parts: Vec<&str> = coord.split(':').collect();
            let jar = m2()
                .join(parts[0].replace('.', "/"))
                .join(parts[1])
                .join(parts[2])
                .join(format!("{}-{}-sources.jar", parts[1], parts[2]));
            assert_eq!(j["sha256"].as_str().unwrap(), sha256sum(&jar), "{coord}");
        }
        // Every compiled source is hashed; the upstream ones twice (as released, as patched).
        let sources = p["sources"].as_array().unwrap();
        assert!(sources
            .iter()
            .any(|s| s["upstream_sha256"].is_string() && s["upstream_sha256"] != s["patched_sha256"]));
        assert!(out.path().join("provenance.json").is_file());
        // `okp show --build` prints the same record for a reviewer: sources with their sha256,
        // both verdicts, and the members our edits changed.
        let o = okp().args(["show", "--build"]).arg(out.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let shown = String::from_utf8_lossy(&o.stdout);
        assert!(shown.contains("provenance (schema 1): passed"), "{shown}");
        assert!(shown.contains("patch delta: passed"), "{shown}");
        assert!(shown.contains(&format!("      {edited_class}:\n")) && shown.contains(edited_member), "{shown}");
        let first = &sources[0];
        assert!(shown.contains(&format!("{}  release ", first["path"].as_str().unwrap())), "{shown}");
        assert!(shown.contains(first["patched_sha256"].as_str().unwrap()), "{shown}");
        let members = |class: &str| -> Vec<String> {
            p["delta"]["changed_members"][class]
                .as_array()
                .map(|a| a.iter().map(|m| m.as_str().unwrap().to_string()).collect())
                .unwrap_or_default()
        };
        if mode == "zk" {
            // The leader-balance edits add closures to KafkaController and ControllerContext: scalac
            // renumbers the file's synthetic names, which the proof attributes to the edits.
            let kc = members("kafka/controller/KafkaController");
            assert!(kc.contains(&"method checkAndTriggerAutoLeaderRebalance()".to_string()), "{kc:?}");
            assert_eq!(
                members("kafka/controller/KafkaController$$anonfun$1"),
                ["class added (defined in an edited member)"]
            );
            // This class holds no edit, but its captured field is renumbered (topic$6 -> topic$7): the
            // patched jar's bytes differ from the release's, and the proof does not list it.
            let nested = "kafka/controller/ControllerContext$$anonfun$$nestedInanonfun$replicasOnBrokers$2$1";
            assert!(members(nested).is_empty(), "{p:#}");
            let class_in = |jar: &std::path::Path| {
                let o = Command::new("unzip").arg("-p").arg(jar).arg(format!("{nested}.class")).output().unwrap();
                assert!(o.status.success());
                o.stdout
            };
            let release = m2().join("org/apache/kafka/kafka_2.13/3.9.2/kafka_2.13-3.9.2.jar");
            let (theirs, ours) = (class_in(&release), class_in(&out.path().join("kafka_2.13-3.9.2.jar")));
            let has = |b: &[u8], s: &str| b.windows(s.len()).any(|w| w == s.as_bytes());
            assert!(has(&theirs, "topic$6") && !has(&theirs, "topic$7"));
            assert!(has(&ours, "topic$7") && !has(&ours, "topic$6"), "the renumbering this test is about");
        } else {
            // The election gate sits in the builder's constructor: LeaderAcceptor is upstream's again.
            let la = members("org/apache/kafka/controller/ReplicationControlManager$LeaderAcceptor");
            assert!(la.is_empty(), "{la:?}");
            let pcb = members("org/apache/kafka/controller/PartitionChangeBuilder");
            let ctor = "method <init>(PartitionRegistration, Uuid, int, IntPredicate, MetadataVersion, int, boolean)";
            assert!(pcb.contains(&ctor.to_string()) && pcb.contains(&"method electLeader()".to_string()), "{pcb:?}");
        }
    }
}

#[test]
fn a_source_changed_outside_our_edits_is_refused_naming_the_method() {
    let tree = tempfile::tempdir().unwrap();
    let dir = tree.path().join("src");
    let o = okp().args(["sources", "--version", "3.9.2", "--out"]).arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let f = dir.join("core/src/main/scala/kafka/cluster/Partition.scala");
    let text = std::fs::read_to_string(&f).unwrap();
    let line = "  def isUnderReplicated: Boolean = isLeader && (assignmentState.replicationFactor - partitionState.isr.size) > 0";
    assert!(text.contains(line));
    std::fs::write(&f, text.replace(line, &line.replace("> 0", "> 1"))).unwrap();

    let ws = Workspace::load(&DataFiles::default()).unwrap();
    let release = ws.release("3.9.2".parse().unwrap()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let src = DirTree::open(&dir).unwrap();
    let r = splice::splice(&ws, release, Mode::Zk, &Layers::core(), &src, out.path(), false);
    let msg = match r {
        Err(Error::Check(m)) => m,
        Err(e) => panic!("another error: {e}"),
        Ok(SpliceOutcome::Built(_)) => panic!("built from an altered source"),
        Ok(SpliceOutcome::CompileFailed(f)) => panic!("compile failed: {}", f.output),
    };
    assert!(
        msg.contains("Partition.scala: Partition: method isUnderReplicated() differ from the release jar"),
        "{msg}"
    );
    assert!(!out.path().join("okp-build.json").exists());
    assert!(!out.path().join("kafka_2.13-3.9.2.jar").exists(), "refused before any jar is written");
}

/// A constant changed in the second module (kafka-metadata) of a KRaft build from a tree: refused
/// naming it, and no jar of either module is left behind (the first module's jar used to be
/// written before the second one was proved: seen on 4.4.0 from a branch snapshot).
#[test]
fn a_constant_changed_in_the_metadata_module_is_refused_and_no_jar_is_left() {
    let tree = copy_all(&hooked_tree("3.9.2"));
    let f = tree.path().join("metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java");
    let text = std::fs::read_to_string(&f).unwrap();
    let line = "    static final int MAX_PARTITIONS_PER_BATCH = 10_000;";
    assert!(text.contains(line));
    std::fs::write(&f, text.replace(line, "    static final int MAX_PARTITIONS_PER_BATCH = 10_001;")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["build", "--version", "3.9.2", "--mode", "kraft", "--tree"])
        .arg(tree.path())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("ReplicationControlManager.java: ReplicationControlManager:"), "{err}");
    assert!(err.contains("MAX_PARTITIONS_PER_BATCH"), "{err}");
    let left: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "work")
        .collect();
    assert!(left.is_empty(), "a refused build left {left:?}");
}

/// A 3.9.2 zk build with the patch set at `patches`, which the patch delta proof must refuse
/// (exit 1) leaving no jar; its stderr.
fn refused_by_the_delta_proof(patches: &std::path::Path) -> String {
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .arg("--patches")
        .arg(patches)
        .args(["build", "--version", "3.9.2", "--mode", "zk", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("more than our edits"), "{err}");
    assert!(!out.path().join("kafka_2.13-3.9.2.jar").exists());
    err
}

#[test]
fn a_patch_set_that_changes_a_method_no_edit_sits_in_is_refused() {
    let p = tempfile::tempdir().unwrap();
    copy_into(&repo_root().join("patches"), p.path());
    let e = p.path().join("edits.yaml");
    // The promotion gate's code closes its method and opens another, which takes the rest of the body.
    // (edits.yaml holds the code as a `|2` block: 6 columns of YAML indentation before the code's own.)
    let gate = "\n          if (kafka.observer.ObserverIds.isObserver(topicPartition.topic, followerReplicaId)) return false\n";
    let text = std::fs::read_to_string(&e).unwrap();
    assert!(text.contains(gate));
    let sneaky = [
        "",
        "          if (kafka.observer.ObserverIds.isObserver(topicPartition.topic, followerReplicaId)) return false",
        "          sneaky(followerReplicaId)",
        "        }",
        "",
        "        private def sneaky(followerReplicaId: Int): Boolean = {",
        "",
    ]
    .join("\n");
    std::fs::write(&e, text.replacen(gate, &sneaky, 1)).unwrap();
    let err = refused_by_the_delta_proof(p.path());
    // The new method, and the pickled Scala signature that lists it.
    assert!(
        err.contains("Partition: method sneaky(int), class attribute ScalaSignature changed, but no edit sits in them"),
        "{err}"
    );
}

#[test]
fn verify_refuses_jars_whose_record_has_no_passing_proof() {
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .env("OKP_NO_PROOF", "1")
        .args(["build", "--version", "3.9.2", "--mode", "zk", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(record(out.path()).get("provenance").is_none());
    // verify reads the record before it starts any broker: refused with exit 1.
    let o = okp().args(["verify", "--version", "3.9.2", "--mode", "zk", "--jars"]).arg(out.path()).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("holds no passing provenance proof"), "{err}");
}

#[test]
fn a_method_no_edit_sits_in_is_refused_in_a_file_whose_closures_are_renumbered() {
    let p = tempfile::tempdir().unwrap();
    copy_into(&repo_root().join("patches"), p.path());
    let e = p.path().join("edits.yaml");
    // The recount edit closes updateMetrics and opens a method that takes the rest of its body:
    // upstream code moves into a member no edit sits in, in the file where the other edits' closures
    // renumber the synthetic classes and lambdas.
    let recount = "\n          if (isActive) controllerContext.recountPreferredReplicaImbalanceIfObserversChanged()\n";
    let text = std::fs::read_to_string(&e).unwrap();
    assert!(text.contains(recount));
    let sneaky = [
        "",
        "          if (isActive) controllerContext.recountPreferredReplicaImbalanceIfObserversChanged()",
        "          sneaky()",
        "        }",
        "",
        "        private def sneaky(): Unit = {",
        "",
    ]
    .join("\n");
    std::fs::write(&e, text.replacen(recount, &sneaky, 1)).unwrap();
    let err = refused_by_the_delta_proof(p.path());
    let line = err.lines().find(|l| l.contains("KafkaController.scala: KafkaController:")).unwrap_or_default();
    assert!(line.contains("method sneaky()") && line.contains("but no edit sits in them"), "{err}");
    // Nothing else: the renumbered closures of the other edits are attributed.
    assert_eq!(err.lines().filter(|l| l.contains("no edit sits in")).count(), 1, "{err}");
}
