//! `okp verify --soak` on real brokers, short: 2 minutes of acks=all batches
//! under a seeded fault schedule on 3.9.2 ZooKeeper, then the checker. The
//! checker itself is tested on synthetic histories in `src/soak.rs`.

mod common;
use common::*;

#[test]
fn a_two_minute_soak_holds_every_rule() {
    let ev = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["verify", "--version", "3.9.2", "--mode", "zk", "--soak", "120", "--seed", "1", "--evidence"])
        .arg(ev.path())
        .output()
        .unwrap();
    let dir = ev.path().join("soak").join("3.9.2-zk-seed1");
    let verdict = std::fs::read_to_string(dir.join("verdict.txt")).unwrap_or_default();
    assert_eq!(o.status.code(), Some(0), "{verdict}\n{}\n{}", stdout(&o), stderr(&o));
    assert!(verdict.starts_with("soak seed 1: ") && verdict.contains("every rule held"), "{verdict}");
    let h: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("history.json")).unwrap()).unwrap();
    assert_eq!(h["schema"], 1);
    let events = h["events"].as_array().unwrap();
    let count = |kind: &str| events.iter().filter(|e| e["event"] == kind).count();
    assert!(count("send") >= 100, "{} sends", count("send"));
    assert!(count("read") >= count("send"), "every acked record read back");
    assert!(count("fault") >= 2, "{} faults in 2 minutes", count("fault"));
    assert!(count("state") >= 5);
}
