//! The records okp writes and reads again (docs/records.md), end to end: a
//! file of a schema this okp does not read is refused by the command that
//! reads it, with a message naming the file and the schema, and nothing
//! changes. The serialized form of each record is pinned by a snapshot in its
//! own module; `.okp/state.json`'s is pinned here (serialized as `tx::record`
//! does, `serde_json::to_vec_pretty`), to keep the test out of `tx`.

use crate::common::*;

use std::path::Path;

/// A tree `okp status` and `okp revert` accept (okp's source marker), with `state` as its .okp/state.json.
fn tree_with_state(state: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join(".okp-source.json"), r#"{"release": "3.9.2"}"#).unwrap();
    std::fs::create_dir(t.path().join(".okp")).unwrap();
    std::fs::write(t.path().join(".okp/state.json"), state).unwrap();
    t
}

fn state() -> okp::tx::State {
    okp::tx::State {
        schema: 1,
        txn: "1764473155-4242".into(),
        okp_version: "0.1.0".into(),
        release: "3.9.2".parse().unwrap(),
        mode: okp::model::Mode::Kraft,
        family: "f3.7".into(),
        patch_set_hash: "a".repeat(64),
        layers: "core+metrics".into(),
        files: vec![
            okp::tx::FileState {
                path: "core/src/main/scala/kafka/cluster/Partition.scala".into(),
                created: false,
                before_sha256: Some("b".repeat(64)),
                after_sha256: "c".repeat(64),
            },
            okp::tx::FileState {
                path: "core/src/main/scala/kafka/observer/ObserverIds.scala".into(),
                created: true,
                before_sha256: None,
                after_sha256: "d".repeat(64),
            },
        ],
        created_dirs: vec!["core/src/main/scala/kafka/observer".into()],
        modified: vec![],
        unchecked: None,
    }
}

fn state_json(s: &okp::tx::State) -> String {
    String::from_utf8(serde_json::to_vec_pretty(s).unwrap()).unwrap()
}

#[test]
fn state_json_serialized_form() {
    insta::assert_snapshot!("state_json", state_json(&state()));
}

#[test]
fn a_state_json_of_the_current_schema_reads_with_release_and_mode_typed() {
    let t = tree_with_state(&state_json(&state()));
    let o = okp().args(["status", "--source"]).arg(t.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("applied (Kafka 3.9.2 kraft, family f3.7, layers core+metrics, okp 0.1.0)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_state_json_of_an_unknown_schema_is_refused_and_nothing_changes() {
    let text = state_json(&state()).replacen("\"schema\": 1", "\"schema\": 2", 1);
    let t = tree_with_state(&text);
    let path = t.path().join(".okp/state.json");
    for cmd in ["status", "revert"] {
        let o = okp().arg(cmd).arg("--source").arg(t.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        // tx::record words it itself: `<file>: schema 2 is not one this okp (0.1.0) reads (schema 1)`.
        let want = format!("{}: schema 2 is not one this okp", path.display());
        assert!(stderr(&o).contains(&want), "{cmd}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{cmd} changed the state file");
    }
}

/// `okp bundle` reads okp-build.json first: a record of another schema stops it before anything else.
#[test]
fn a_build_record_of_an_unknown_schema_is_refused_by_okp_bundle() {
    let build = tempfile::tempdir().unwrap();
    let record = build.path().join("okp-build.json");
    std::fs::write(&record, r#"{"schema": 7, "release": "3.9.2", "mode": "kraft"}"#).unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["bundle", "--target", "x86_64", "--key", "/nonexistent/okp.key", "--build"])
        .arg(build.path())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want = format!("{}: schema 7 is not one this okp reads (it reads schema 1)", record.display());
    assert!(stderr(&o).contains(&want) && stderr(&o).contains("okp build"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    assert!(Path::new(&record).is_file());
}
