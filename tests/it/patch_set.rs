//! The patch set on the real sources of every (release, mode): apply lands
//! every edit, revert restores the bytes, export is a patch `git apply`
//! accepts and that yields the same bytes as okp apply.

use crate::common::*;

const PSM: &str = "core/src/main/scala/kafka/controller/PartitionStateMachine.scala";

/// (release, mode) pairs whose sources Maven Central publishes.
fn pairs() -> Vec<(String, String)> {
    let no_sources = releases_without_sources_jar();
    matrix()
        .into_iter()
        .filter(|(v, _)| !no_sources.contains(v))
        .flat_map(|(v, ms)| ms.into_iter().map(move |m| (v.clone(), m)))
        .collect()
}

/// What okp show reports for a (release, mode) with `layer` args: edits, new files, edited files.
fn shown(v: &str, m: &str, layer: &[&str]) -> (usize, usize, std::collections::BTreeSet<String>) {
    let o = okp().args(["show", "--format", "json", "--version", v, "--mode", m]).args(layer).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let edits = j[0]["edits"].as_array().unwrap();
    let files = edits.iter().map(|e| e[1]["file"].as_str().unwrap().to_string()).collect();
    (edits.len(), j[0]["new_files"].as_array().unwrap().len(), files)
}

fn count_markers(files: &std::collections::BTreeMap<String, Vec<u8>>) -> (usize, usize) {
    let text: String = files.values().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
    (text.matches("// OBSERVER PATCH:").count(), text.matches("// END OBSERVER PATCH").count())
}

#[test]
fn apply_revert_export_round_trip_on_every_release_and_mode() {
    round_trip(&[]);
}

/// The same with the optional metrics layer: its edits land in Partition and
/// ReplicaManager on every release, and export still equals apply.
#[test]
fn with_the_metrics_layer_too() {
    round_trip(&["--layer", "metrics"]);
}

fn round_trip(layer: &[&str]) {
    const REPLICA_MANAGER: &str = "core/src/main/scala/kafka/server/ReplicaManager.scala";
    let mut summary = Vec::new();
    let mut psm_checked = 0;
    for (v, m) in pairs() {
        let pristine_dir = hooked_tree(&v);
        let pristine = snapshot(&pristine_dir);
        let (edits, new_files, edited) = shown(&v, &m, layer);
        // The read-replica hook edits it from 3.3.2 on, the ZooKeeper broker's rack view up to 3.9.2
        // (every mode: the file is shared); the metrics layer on every release.
        let numbers: Vec<u32> = v.split('.').map(|n| n.parse().unwrap()).collect();
        let read_replica = numbers >= vec![3, 3, 2];
        let zk_rack_view = numbers < vec![4, 0, 0];
        assert_eq!(
            edited.contains(REPLICA_MANAGER),
            !layer.is_empty() || read_replica || zk_rack_view,
            "{v} {m}: ReplicaManager is edited exactly with the metrics layer, the read-replica hook (3.3.2+) or the ZooKeeper rack view (to 3.9.2)"
        );

        // apply: every edit lands, once, marked.
        let t = copy_all(&pristine_dir);
        let o = okp().args(["apply", "--mode", &m]).args(layer).arg("--source").arg(t.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{v} {m}: {}", stderr(&o));
        let patched = snapshot(t.path());
        assert_eq!(count_markers(&patched), (edits, edits), "{v} {m}: every edit carries one begin and one end marker");
        assert_eq!(patched.len(), pristine.len() + new_files, "{v} {m}: new files added");
        for (path, bytes) in &pristine {
            let changed = patched.get(path) != Some(bytes);
            assert_eq!(
                changed,
                edited.contains(path),
                "{v} {m}: {path} changed={changed}, but the mode edits {edited:?}"
            );
        }
        // ZK controller: the initial ISR leaves observers out, but the new partition's first
        // LeaderAndIsr must still reach them (upstream sends it to that ISR), or a running
        // observer never fetches the partition.
        if edited.contains(PSM) {
            psm_checked += 1;
            let psm = String::from_utf8_lossy(&patched[PSM]).into_owned();
            assert!(
                !psm.contains(".addLeaderAndIsrRequestForBrokers(leaderIsrAndControllerEpoch.leaderAndIsr.isr,"),
                "{v} {m}: first LeaderAndIsr still goes to the filtered ISR"
            );
            assert!(
                psm.contains(
                    ".addLeaderAndIsrRequestForBrokers(controllerContext.partitionReplicaAssignment(partition).filter("
                ),
                "{v} {m}: first LeaderAndIsr not sent to the live assigned replicas"
            );
        }

        // revert: byte-identical to pristine, nothing left behind.
        let o = okp().args(["revert", "--source"]).arg(t.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{v} {m}: {}", stderr(&o));
        assert_eq!(snapshot(t.path()), pristine, "{v} {m}: revert is byte-identical");
        assert!(!t.path().join(".okp").exists(), "{v} {m}: .okp/ removed");

        // export (from the Maven Central sources jars): git apply --check, then git apply == okp apply.
        let g = copy_all(&pristine_dir);
        git_init_commit(g.path());
        let patch = g.path().join("observer.patch");
        let o = okp()
            .args(["export", "--version", &v, "--mode", &m])
            .args(layer)
            .arg("--output")
            .arg(&patch)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{v} {m}: {}", stderr(&o));
        git_in(g.path(), &["apply", "--check", "observer.patch"]);
        git_in(g.path(), &["apply", "observer.patch"]);
        std::fs::remove_file(&patch).unwrap();
        assert_eq!(snapshot(g.path()), patched, "{v} {m}: git apply of the export == okp apply");
        summary.push(format!("{v} {m}: {edits} edits, {new_files} new files"));
    }
    assert!(summary.len() >= 53, "{summary:?}");
    let zk_pairs = pairs().iter().filter(|(_, m)| m == "zk").count();
    assert!(
        zk_pairs > 0 && psm_checked >= zk_pairs,
        "ZK controller file checked in {psm_checked} pairs, {zk_pairs} zk pairs"
    );
}
