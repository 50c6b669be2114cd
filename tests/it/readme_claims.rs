//! README's claims about the verify matrix are the records' (evidence/<release>-<mode>/run.json,
//! written by okp verify): how many pairs pass, how many scenarios the suite has, and how many of
//! those runs used the patch set okp embeds now (the hash each run.json names against `okp show`'s).

use crate::common::*;

#[test]
fn readme_says_what_the_verify_records_say() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (mut pairs, mut passing, mut current) = (0, 0, 0);
    let mut suites = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(root.join("evidence")).unwrap().flatten() {
        let run = e.path().join("run.json");
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with("-upstream") || !run.is_file() {
            continue;
        }
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
        pairs += 1;
        if r["verdict"] == "pass" {
            passing += 1;
            // The suite's own scenarios: a monitored run (`--prometheus`) adds the opt-in PROM.
            let own = r["scenarios"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| !okp::scenarios::OPT_IN.contains(&s["id"].as_str().unwrap_or("")))
                .count();
            suites.insert(own);
        }
        let mut args = vec!["show", "--version", r["release"].as_str().unwrap(), "--mode", r["mode"].as_str().unwrap()];
        for l in r["layers"].as_array().unwrap() {
            if l != "core" {
                args.extend(["--layer", l.as_str().unwrap()]);
            }
        }
        let o = okp().args(&args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let shown = stdout(&o);
        let now = shown.lines().next().unwrap().rsplit(' ').next().unwrap().to_string();
        if r["patch_set_hash"].as_str().is_some_and(|h| h.starts_with(&now)) {
            current += 1;
        }
    }
    assert_eq!(suites.len(), 1, "passing runs of different suite sizes: {suites:?}");
    let scenarios = suites.into_iter().next().unwrap();
    for claim in [
        format!("All {passing} (release, mode)"),
        format!("whole suite of {scenarios} scenarios"),
        format!("{current} of the {pairs} ran the patch set okp embeds now"),
    ] {
        let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&claim), "README.md does not say `{claim}`");
    }
}

/// README's claims about the lifecycle runs are the records' (evidence/upgrade/*/run.json): how many
/// rolling upgrades and migrations passed, how many of the migrations rolled back, the records
/// their producers had acknowledged, and that every
/// negative control held (the observer in an ISR or leading in the dual-write window, or in a
/// topic created while releases were mixed).
#[test]
fn readme_says_what_the_upgrade_records_say() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut upgrades, mut migrations, mut back, mut controls) = (0, 0, 0, 0);
    let mut acked: u64 = 0;
    for e in std::fs::read_dir(root.join("evidence/upgrade")).unwrap().flatten() {
        let run = e.path().join("run.json");
        if !run.is_file() {
            continue;
        }
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert_eq!(r["verdict"], "pass", "{name}: every lifecycle run in the repository passes");
        let o = &r["scenarios"][0];
        for traffic in ["upgrade_traffic", "migrate_traffic"] {
            acked += o["facts"][traffic]["acked"].as_u64().unwrap_or(0);
        }
        match o["id"].as_str() {
            Some("UPGRADE" | "MIGRATE") if name.contains("-upstream-controllers") => controls += 1,
            Some("UPGRADE") => upgrades += 1,
            Some("MIGRATE") if name.contains("-and-back") => back += 1,
            Some("MIGRATE") if !name.contains("-to-kraft-to-") => migrations += 1,
            _ => {}
        }
    }
    for claim in [
        format!("{upgrades} rolling upgrades"),
        format!("{migrations} ZooKeeper → KRaft migrations"),
        format!("{back} rolled back"),
        format!("{controls} negative controls"),
        format!("{} records acked in all", thousands(acked)),
    ] {
        assert!(flat.contains(&claim), "README.md does not say `{claim}`");
    }
}

/// 241258 → "241,258", as README writes counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// README's claims about the monitored suites are the records' (evidence/monitoring/*/run.json):
/// how many passed, how many alert instances fired outside PROM, and the scenarios where none did.
#[test]
fn readme_says_what_the_monitoring_records_say() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut runs, mut fired) = (0, 0);
    let mut quiet: Option<std::collections::BTreeSet<String>> = None;
    for e in std::fs::read_dir(root.join("evidence/monitoring")).unwrap().flatten() {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path().join("run.json")).unwrap()).unwrap();
        assert_eq!(r["verdict"], "pass", "{}", e.path().display());
        runs += 1;
        let mut silent = std::collections::BTreeSet::new();
        for s in r["scenarios"].as_array().unwrap().iter().filter(|s| s["id"] != "PROM") {
            let n = s["facts"]["alerts_fired"].as_array().map_or(0, |a| a.len());
            fired += n;
            if n == 0 {
                silent.insert(s["id"].as_str().unwrap().to_string());
            }
        }
        quiet = Some(match quiet {
            None => silent,
            Some(q) => q.intersection(&silent).cloned().collect(),
        });
    }
    assert!(flat.contains(&format!("In {runs} monitored whole suites")), "README: {runs} monitored suites");
    assert!(flat.contains(&format!("{fired} alert instances fired")), "README: {fired} alert instances");
    let quiet: Vec<String> = quiet.unwrap_or_default().into_iter().collect();
    let order = |id: &String| okp::scenarios::SCENARIOS.iter().position(|s| s.id == id.as_str());
    let mut quiet = quiet;
    quiet.sort_by_key(order);
    let (last, rest) = quiet.split_last().unwrap();
    let claim = format!("none in {} or {last}", rest.join(", "));
    assert!(flat.contains(&claim), "README does not say `{claim}`");
}

/// "a to b", or "a" when they are one number (README's way with ranges of counts).
fn range(v: &[u64]) -> String {
    let (lo, hi) = (v.iter().min().copied().unwrap_or(0), v.iter().max().copied().unwrap_or(0));
    if lo == hi {
        thousands(lo)
    } else {
        format!("{} to {}", thousands(lo), thousands(hi))
    }
}

/// README's claims about the MirrorMaker 2 control group are the records'
/// (evidence/wan/*-mm2*/run.json): how many runs, MM2's duplicates after the kill without and with
/// exactly-once, the records a group read again on the target; the observer's side all zero.
#[test]
fn readme_says_what_the_mm2_records_say() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut runs, mut dup, mut dup_eos, mut again) = (0, Vec::new(), Vec::new(), Vec::new());
    for e in std::fs::read_dir(root.join("evidence/wan")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.contains("-mm2") || !e.path().join("run.json").is_file() {
            continue;
        }
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path().join("run.json")).unwrap()).unwrap();
        assert_eq!(r["verdict"], "pass", "{name}");
        let s = r["scenarios"].as_array().unwrap().iter().find(|s| s["id"] == "MM2").unwrap();
        let f = &s["facts"];
        runs += 1;
        assert_eq!(f["observer"]["duplicates"], 0, "{name}");
        assert_eq!(f["observer"]["acked_missing"], 0, "{name}");
        assert_eq!(f["observer_log_identical_to_source"], true, "{name}");
        assert_eq!(f["group_reread_observer"], 0, "{name}");
        let d = f["mm2"]["duplicates"].as_u64().unwrap();
        if f["mm2_exactly_once"] == true {
            dup_eos.push(d);
        } else {
            dup.push(d);
        }
        again.push(f["group_reread_mm2"].as_u64().unwrap());
    }
    assert!(runs > 0, "no MM2 run under evidence/wan");
    for claim in [
        format!("{runs} runs of scenario MM2"),
        format!("MirrorMaker 2 re-delivered {} records", range(&dup)),
        format!("{} with exactly-once", range(&dup_eos)),
        format!("read {} records again", range(&again)),
    ] {
        assert!(flat.contains(&claim), "README.md does not say `{claim}`");
    }
}
