//! `okp bench broker` and `okp bench scale` on real brokers, as small as they go: one round (an
//! upstream and a patched cluster), a few hundred records per case or 50 partitions. They check
//! the run is complete and its record well formed; no time is judged (the numbers are
//! docs/benchmarks.md's, from a full run).

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

/// `okp bench scale` at the smallest size that still has every step: 50 partitions, one round of
/// each flavor on 4.3.1 KRaft. Every metric has a number on both sides, and the observer shows as
/// designed: outside the ISR of all 50 partitions patched, of none upstream. No time is judged.
#[test]
fn scale_at_a_tiny_size_measures_every_metric_on_both_flavors() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("scale");
    let o = okp()
        .args(["bench", "scale", "--version", "4.3.1", "--mode", "kraft", "--sizes", "50", "--rounds", "1"])
        .args(["--idle-secs", "3", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("scale.json")).unwrap()).unwrap();
    assert_eq!((r["schema"].as_i64(), r["complete"].as_bool()), (Some(1), Some(true)), "{r}");
    let samples = r["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 18, "9 metrics x 2 flavors: {r}");
    for s in samples {
        assert!(s["value"].as_f64().is_some_and(|v| v >= 0.0), "a metric did not complete: {s}");
    }
    let clusters = r["clusters"].as_array().unwrap();
    let outside = |flavor: &str| {
        clusters.iter().find(|c| c["flavor"] == flavor).unwrap()["observer_outside_isr"].as_u64().unwrap()
    };
    assert_eq!((outside("upstream"), outside("patched")), (0, 50), "{r}");
    for c in clusters {
        assert_eq!((c["led"].as_u64(), c["hosted"].as_u64()), (Some(17), Some(50)), "{c}");
        assert!(c["problems"].as_array().unwrap().is_empty(), "{c}");
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| create_s | 50 |") && md.contains("| rejoin_isr_s | 50 |"), "{md}");
    for png in ["create_s.png", "failover_s.png", "controller_cpu_s_per_1k.png"] {
        assert!(std::fs::read(out.join(png)).unwrap().starts_with(b"\x89PNG"), "{png}");
    }
    for j in ["50-1-upstream", "50-1-patched"] {
        assert!(out.join("journal").join(j).join("setup.txt").is_file(), "{j}");
    }
}
