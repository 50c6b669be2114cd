//! okp build: the splice backend with the real compilers and jars of real
//! releases, checked with the JDK's own tools; the Gradle backend's
//! orchestration through a stand-in wrapper (Gradle cannot be installed here).

use crate::common::*;

use std::path::Path;
use std::process::Command;

fn unzip_list(jar: &Path) -> std::collections::BTreeSet<String> {
    let o = Command::new("unzip").arg("-Z1").arg(jar).output().expect("unzip");
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect()
}

fn unzip_entry(jar: &Path, entry: &str) -> Vec<u8> {
    let o = Command::new("unzip").arg("-p").arg(jar).arg(entry).output().unwrap();
    assert!(o.status.success());
    o.stdout
}

#[test]
fn splice_build_changes_only_the_patched_classes_and_they_call_the_registry() {
    let out = tempfile::tempdir().unwrap();
    let o = okp().args(["build", "--version", "3.9.2", "--mode", "kraft", "--out"]).arg(out.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("okp-build.json")).unwrap()).unwrap();
    assert_eq!(rec["backend"], "splice");
    // The record reads back through okp's one reader, schema 1, release and mode typed.
    let typed = okp::build::record::BuildRecord::read(out.path()).unwrap();
    assert_eq!((typed.schema, typed.release.to_string(), typed.mode.as_str()), (1, "3.9.2".into(), "kraft"));
    assert!(rec["compilers"]["scalac"].as_str().unwrap().contains("scala-compiler:2.13.15"));
    for (module, upstream, registry, ours, class) in [
        (
            "core",
            "org/apache/kafka/kafka_2.13/3.9.2/kafka_2.13-3.9.2.jar",
            "kafka/observer/ObserverIds",
            "kafka/observer/",
            "kafka.cluster.Partition",
        ),
        (
            "metadata",
            "org/apache/kafka/kafka-metadata/3.9.2/kafka-metadata-3.9.2.jar",
            "org/apache/kafka/controller/ObserverReplicas",
            "org/apache/kafka/controller/ObserverReplicas",
            "org.apache.kafka.controller.ReplicationControlManager",
        ),
    ] {
        let up = m2().join(upstream);
        let spliced = out.path().join(up.file_name().unwrap());
        // Independent checks with unzip and javap: the entry set grows only by our registry classes
        // and the partial function zk-leader-balance adds to checkAndTriggerAutoLeaderRebalance ...
        let (a, b) = (unzip_list(&up), unzip_list(&spliced));
        let added: Vec<&String> = b.difference(&a).collect();
        let ours_or_the_edit =
            |e: &str| e.starts_with(ours) || e == "kafka/controller/KafkaController$$anonfun$1.class";
        assert!(!added.is_empty() && added.iter().all(|e| ours_or_the_edit(e)), "{module}: added {added:?}");
        assert!(a.difference(&b).next().is_none(), "{module}: entries disappeared");
        // ... the entries okp says it left alone are byte-identical ...
        let jr = rec["jars"].as_array().unwrap().iter().find(|j| j["module"] == module).unwrap();
        let replaced: std::collections::BTreeSet<&str> =
            jr["splice"]["replaced"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        for e in a.iter().filter(|e| !replaced.contains(e.as_str()) && !e.ends_with('/')).step_by(37) {
            assert_eq!(unzip_entry(&up, e), unzip_entry(&spliced, e), "{module}: {e} changed");
        }
        // ... and the patched class calls the registry.
        let javap = Command::new("javap").args(["-c", "-p", "-classpath"]).arg(&spliced).arg(class).output().unwrap();
        assert!(javap.status.success());
        assert!(String::from_utf8_lossy(&javap.stdout).contains(registry), "{class} does not call {registry}");
        let javap = Command::new("javap").args(["-c", "-p", "-classpath"]).arg(&up).arg(class).output().unwrap();
        assert!(!String::from_utf8_lossy(&javap.stdout).contains(registry));
    }
}

#[test]
fn a_type_error_in_a_hook_fails_with_the_compilers_message() {
    let p = tempfile::tempdir().unwrap();
    copy_into(&repo_root().join("patches"), p.path());
    let e = p.path().join("edits.yaml");
    let text = std::fs::read_to_string(&e).unwrap().replacen(
        "if (kafka.observer.ObserverIds.isObserver(topicPartition.topic, followerReplicaId)) return false",
        "if (kafka.observer.ObserverIds.isObserver(topicPartition.topic, followerReplicaId)) return \"no\"",
        1,
    );
    std::fs::write(&e, text).unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .arg("--patches")
        .arg(p.path())
        .args(["build", "--version", "2.7.2", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("Partition.scala"), "{err}");
    assert!(err.contains("type mismatch"), "{err}");
    assert!(err.contains("the core compile failed"), "{err}");
    assert!(!out.path().join("kafka_2.13-2.7.2.jar").exists(), "no jar after a failed compile");
}

/// A directory laid out like a Kafka 3.9.2 checkout, with the stand-in wrapper.
fn standin_checkout() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("gradle.properties"), "group=org.apache.kafka\nversion=3.9.2\n").unwrap();
    std::fs::write(t.path().join("settings.gradle"), "include 'core', 'metadata'\n").unwrap();
    std::fs::create_dir_all(t.path().join("core")).unwrap();
    std::fs::create_dir_all(t.path().join("metadata")).unwrap();
    std::fs::copy(repo_root().join("tests/fixtures/gradlew-standin"), t.path().join("gradlew")).unwrap();
    t
}

#[test]
fn gradle_backend_runs_the_mode_tasks_and_collects_the_jars() {
    let t = standin_checkout();
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["build", "--mode", "kraft", "--progress", "never", "--source"])
        .arg(t.path())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("./gradlew --console=plain :core:jar :metadata:jar -x test"), "{err}");
    assert!(err.contains("okp: gradle step 1: :core:compileJava"), "{err}");
    assert!(out.path().join("kafka_2.13-3.9.2.jar").is_file());
    assert!(out.path().join("kafka-metadata-3.9.2.jar").is_file());
    let log = std::fs::read_to_string(out.path().join("gradle-3.9.2-kraft.log")).unwrap();
    assert!(log.contains("args: --console=plain :core:jar :metadata:jar -x test"), "{log}");
    assert!(log.contains("BUILD SUCCESSFUL"));
}

#[test]
fn gradle_failure_names_the_task_and_shows_the_last_lines() {
    let t = standin_checkout();
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["build", "--mode", "zk", "--progress", "never", "--source"])
        .arg(t.path())
        .arg("--out")
        .arg(out.path())
        .env("STANDIN_FAIL_TASK", ":core:compileScala")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("okp: gradle failed in task :core:compileScala; full log: "), "{err}");
    assert!(err.contains("type mismatch;"), "{err}");
    assert!(out.path().join("gradle-3.9.2-zk.log").is_file());
    assert!(!out.path().join("kafka_2.13-3.9.2.jar").exists());
}

#[test]
fn gradle_backend_needs_a_wrapper() {
    let t = standin_checkout();
    std::fs::remove_file(t.path().join("gradlew")).unwrap();
    okp_run(okp().args(["build", "--mode", "zk", "--source"]).arg(t.path())).code(2).err_has("has no ./gradlew");
}

#[test]
fn every_reference_release_and_mode_splice_compiles() {
    // The reference matrix, each (release, mode) compiled with its own compilers;
    // the table lands in okp-out/build-matrix.json of the scratch directory.
    let out = tempfile::tempdir().unwrap();
    let o = okp().args(["build", "--all", "--reference", "--check", "--out"]).arg(out.path()).output().unwrap();
    let table = stdout(&o);
    println!("{table}");
    assert_eq!(o.status.code(), Some(0), "{table}\n{}", stderr(&o));
    let m = okp::build::matrix::BuildMatrix::read(out.path()).unwrap();
    assert_eq!(m.builds.len(), 20, "17 reference releases, 3 of them in both modes");
    assert!(
        m.builds.iter().all(|r| r.status == okp::build::matrix::Status::Ok && r.result.starts_with("ok (")),
        "{table}"
    );
    assert_eq!(m.render_table(), table, "the table printed is the one the record renders");
}
