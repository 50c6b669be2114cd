//! `okp verify --soak` on real brokers, short: 2 minutes of continuous acks=all
//! producers and a read_committed consumer under a seeded fault schedule on
//! 3.9.2 ZooKeeper, then the checker; and `--soak-recheck` of a stored history
//! (no cluster). The checker's rules are tested on synthetic histories in
//! `src/soak/mod.rs`.

use crate::common::*;

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
    let h: serde_json::Value = serde_json::from_slice(&gunzip(&dir.join("history.json.gz"))).unwrap();
    assert_eq!(h["schema"], 1);
    let events = h["events"].as_array().unwrap();
    let count = |kind: &str| events.iter().filter(|e| e["event"] == kind).count();
    assert!(count("send") >= 100, "{} sends", count("send"));
    assert!(count("read") >= count("send"), "every acked record read back");
    assert!(count("fault") >= 2, "{} faults in 2 minutes", count("fault"));
    assert!(count("state") >= 5);
    // Continuous clients: both producers and the consumer reported, and finished by themselves.
    let producers: std::collections::BTreeSet<&str> =
        events.iter().filter(|e| e["event"] == "send").filter_map(|e| e["producer"].as_str()).collect();
    assert_eq!(producers.into_iter().collect::<Vec<_>>(), ["pi0", "pp0"]);
    assert!(events.iter().any(|e| e["event"] == "read" && e["consumer"] == "rc0"), "the continuous consumer read");
    for c in ["client-pi0", "client-pp0", "client-rc0"] {
        assert!(events.iter().any(|e| e["event"] == "process" && e["node"] == c && e["alive"] == true), "{c}");
    }
    // The stored history checks again to the same verdict.
    let again = okp().args(["verify", "--soak-recheck"]).arg(dir.join("history.json.gz")).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(stdout(&again), verdict);
}

fn gunzip(p: &std::path::Path) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap()).read_to_end(&mut out).unwrap();
    out
}

/// A stored history with an injected loss: `--soak-recheck` says so and exits 1; a damaged file
/// is refused with its name and exit 2. No cluster.
#[test]
fn a_stored_history_is_checked_again() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("history.json");
    let send = |v: &str, o: i64| {
        format!(
            r#"{{"event":"send","t_ms":10,"producer":"pi0","idempotent":true,"value":"{v}","acked":true,"partition":0,"offset":{o}}}"#
        )
    };
    let read = |v: &str, o: i64| {
        format!(r#"{{"event":"read","t_ms":20,"consumer":"rc0","session":0,"partition":0,"offset":{o},"value":"{v}"}}"#)
    };
    let history = |events: &[String]| {
        format!(r#"{{"schema":1,"seed":9,"duration_ms":100,"observer":4,"events":[{}]}}"#, events.join(","))
    };
    std::fs::write(&p, history(&[send("a", 0), send("b", 1), read("a", 0), read("b", 1)])).unwrap();
    let o = okp().args(["verify", "--soak-recheck"]).arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("every rule held"), "{}", stdout(&o));

    std::fs::write(&p, history(&[send("a", 0), send("b", 1), read("a", 0)])).unwrap();
    let o = okp().args(["verify", "--soak-recheck"]).arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("VIOLATED") && stdout(&o).contains("Lost") && stdout(&o).contains("--seed 9"));

    std::fs::write(&p, "{\"schema\":1,\"seed\":").unwrap();
    okp_run(okp().args(["verify", "--soak-recheck"]).arg(&p)).code(2).err_has("history.json");
}
