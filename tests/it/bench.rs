//! `okp bench broker` on real brokers, as small as it goes: one round (an
//! upstream and a patched 3.9.2 ZooKeeper cluster), a few hundred records per
//! case. It checks the run is complete and its record well formed; no time is
//! judged (the numbers are docs/benchmarks.md's, from a full run).

use crate::common::*;

#[test]
fn one_round_measures_every_case_on_both_flavors() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("bench");
    let o = okp()
        .args(["bench", "broker", "--version", "3.9.2", "--mode", "zk", "--rounds", "1", "--rate", "500"])
        .args(["--rate-records", "500", "--max-records", "2000", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    assert_eq!(r["schema"], 1);
    let samples = r["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 10, "5 cases x 2 flavors: {r}");
    for s in samples {
        assert_eq!(s["rc"], 0, "{s}");
        assert!(s["records_per_sec"].as_f64().unwrap() > 0.0, "{s}");
    }
    // The HW gate shows in the numbers even at this size: upstream's leader waits for the frozen
    // fourth replica until it leaves the ISR, the patched leader never waits for the observer.
    let p50 = |flavor: &str| {
        samples.iter().find(|s| s["flavor"] == flavor && s["case"] == "rf4-frozen").unwrap()["p50_ms"].as_f64().unwrap()
    };
    assert!(p50("upstream") > p50("patched"), "{r}");
    assert_eq!(r["ratios"].as_array().unwrap().len(), 20, "5 cases x 4 metrics");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| rf4-frozen | p99_ms |") && md.contains("Patched, observer frozen"), "{md}");
    for j in ["1-upstream", "1-patched"] {
        assert!(out.join("journal").join(j).is_dir(), "{j}");
    }
}
