//! The anchors hold on the real sources of every release in the matrix, as
//! published on Maven Central (sources jars, fetched through mvn and cached).

mod common;
use common::*;

#[test]
fn every_release_of_the_matrix_passes_check_anchors() {
    let ev = tempfile::tempdir().unwrap();
    let o = okp().args(["check-anchors", "--all", "--format", "json", "--evidence"]).arg(ev.path()).output().unwrap();
    let txt = std::fs::read_to_string(ev.path().join("check-anchors.txt")).unwrap();
    assert!(txt.starts_with("okp ") && txt.contains("every anchor matched exactly once"), "{txt}");
    assert_eq!(
        std::fs::read(ev.path().join("check-anchors.json")).unwrap(),
        o.stdout,
        "the json evidence is the report"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let failing: Vec<String> = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| {
            t["anchors"].as_array().unwrap().iter().filter(|a| a["status"] != "ok").map(move |a| {
                format!("{} {} {} {} {:?}", t["release"], t["mode"], a["anchor"], a["status"], a["lines"])
            })
        })
        .collect();
    assert!(failing.is_empty(), "drift on real releases:\n{}", failing.join("\n"));
    assert_eq!(o.status.code(), Some(0));
    // Every (release, mode) of versions.yaml was checked, and each checked something.
    let checked: Vec<(String, String)> = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let release = t["release"].as_str().unwrap().to_string();
            if t["skipped"].is_string() {
                // Only a release whose sources Maven Central does not publish may be skipped, and it says so.
                assert_eq!(release, "4.2.2", "unexpected skip: {t}");
                assert!(t["skipped"].as_str().unwrap().contains("no -sources.jar"));
            } else {
                assert!(!t["anchors"].as_array().unwrap().is_empty());
            }
            (release, t["mode"].as_str().unwrap().to_string())
        })
        .collect();
    let expected: Vec<(String, String)> =
        matrix().into_iter().flat_map(|(v, ms)| ms.into_iter().map(move |m| (v.clone(), m))).collect();
    assert_eq!(checked, expected);
}

#[test]
fn the_matrix_holds_the_reference_releases() {
    let have: Vec<String> = matrix().into_iter().map(|(v, _)| v).collect();
    for v in [
        "2.7.2", "2.8.1", "2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1",
        "3.9.2", "4.0.2", "4.1.2", "4.2.1", "4.3.1",
    ] {
        assert!(have.contains(&v.to_string()), "{v} missing from versions.yaml");
    }
}

#[test]
fn zookeeper_mode_ends_with_3_9_and_kraft_covers_3_7_on() {
    for (v, modes) in matrix() {
        let major_minor: Vec<u32> = v.split('.').take(2).map(|x| x.parse().unwrap()).collect();
        let (ma, mi) = (major_minor[0], major_minor[1]);
        assert_eq!(modes.contains(&"zk".to_string()), ma < 4, "{v}: zk mode iff before 4.0");
        if ma > 3 || (ma == 3 && mi >= 7) {
            assert!(modes.contains(&"kraft".to_string()), "{v}: kraft from 3.7 on");
        }
    }
}

#[test]
fn a_release_newer_than_the_matrix_is_checked_with_the_newest_anchors() {
    // The drift sentinel's question: would the newest family carry to a
    // release okp does not list yet? A tree declaring 4.3.2 (the real 4.3.1
    // sources under a newer number) is checked with 4.3.1's rules and its
    // open-ended anchors, and the report says whose anchors it used.
    let src = release_tree("4.3.1");
    let t = copy_tree(
        &src,
        &[
            "core/src/main/scala/kafka/cluster/Partition.scala",
            "core/src/main/scala/kafka/server/ReplicaManager.scala",
            "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java",
        ],
    );
    std::fs::write(t.path().join(".okp-source.json"), "{\"release\": \"4.3.2\"}\n").unwrap();
    let o = okp().args(["check-anchors", "--format", "json", "--source"]).arg(t.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &v["targets"][0];
    assert_eq!(t["release"], "4.3.2");
    assert_eq!(t["rules_from"], "4.3.1");
    assert!(!t["anchors"].as_array().unwrap().is_empty());
}

#[test]
fn a_release_without_sources_jars_is_a_clear_error() {
    // Maven Central serves 4.4.0's binary jars but no sources jars.
    let o = okp().args(["check-anchors", "--release", "4.4.0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not published on Maven Central: org.apache.kafka:kafka_2.13:4.4.0:sources"),
        "{}",
        stderr(&o)
    );
    let o = okp().args(["check-anchors", "--version", "4.2.2"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("release 4.2.2: Maven Central serves 4.2.2's binary jars"), "{}", stderr(&o));
}
