//! The anchors hold on the real sources of every release in the matrix, as
//! published on Maven Central (sources jars, fetched through mvn and cached).

use crate::common::*;

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
    let no_sources = releases_without_sources_jar();
    assert_eq!(no_sources, ["4.2.2", "4.3.2", "4.4.0"]);
    for v in &no_sources {
        assert!(stderr(&o).contains(&format!("okp: check-anchors: {v} skipped: ")), "{}", stderr(&o));
    }
    let checked: Vec<(String, String)> = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let release = t["release"].as_str().unwrap().to_string();
            if t["skipped"].is_string() {
                // Only a release versions.yaml marks as published without sources jars is skipped, and it says so.
                assert!(no_sources.contains(&release), "unexpected skip: {t}");
                assert!(t["skipped"].as_str().unwrap().contains("no -sources.jar"));
            } else {
                assert!(!no_sources.contains(&release), "{release} has no sources jar but was checked: {t}");
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
    // release okp does not list yet? A tree declaring a release after the
    // newest listed one (the real 4.3.1 sources under that number) is checked
    // with the newest release's rules and its open-ended anchors, and the
    // report says whose anchors it used.
    let newest = matrix().last().unwrap().0.clone();
    let (head, patch) = newest.rsplit_once('.').unwrap();
    let newer = format!("{head}.{}", patch.parse::<u32>().unwrap() + 1);
    let src = release_tree("4.3.1");
    // Every file 4.3.1's anchors read, as check-anchors reports them (the set grows with the hooks).
    let o = okp().args(["check-anchors", "--release", "4.3.1", "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut files: Vec<String> = v["targets"][0]["anchors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["file"].as_str().unwrap().to_string())
        .collect();
    files.sort();
    files.dedup();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let t = copy_tree(&src, &files);
    std::fs::write(t.path().join(".okp-source.json"), format!("{{\"release\": \"{newer}\"}}\n")).unwrap();
    let o = okp().args(["check-anchors", "--format", "json", "--source"]).arg(t.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &v["targets"][0];
    assert_eq!(t["release"], newer.as_str());
    assert_eq!(t["rules_from"], newest.as_str());
    assert!(!t["anchors"].as_array().unwrap().is_empty());
}

#[test]
fn a_release_without_sources_jars_names_the_flags_that_read_a_checkout() {
    // Maven Central serves 4.4.0's and 4.2.2's binary jars but no sources jars.
    const HINT: &str = "check-anchors reads a checkout instead with --source DIR or --git REPO --rev REV";
    for args in [["--release", "4.4.0"], ["--release", "4.2.2"], ["--version", "4.2.2"], ["--version", "4.4.0"]] {
        let o = okp().arg("check-anchors").args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("release {}", args[1])) && err.contains(HINT), "{args:?}: {err}");
    }
}

/// The text of `version`'s entry in the real versions.yaml.
fn entry_of(version: &str) -> String {
    let real = std::fs::read_to_string(repo_root().join("versions.yaml")).unwrap();
    let start = real.find(&format!("  - version: {version}\n")).unwrap();
    let body = &real[start..];
    let len: usize = body
        .split_inclusive('\n')
        .enumerate()
        .take_while(|(i, l)| *i == 0 || !(l.starts_with("  - ") || l.starts_with("  #")))
        .map(|(_, l)| l.len())
        .sum();
    body[..len].to_string()
}

#[test]
fn check_all_skips_releases_without_sources_jars_and_still_checks_the_rest() {
    // 4.2.2 is marked no_sources_jar; "4.4.9" is not, and Maven Central has no sources jar of it
    // (as the weekly run found when 4.4.0 was added unmarked): both are skipped with a line
    // saying why, the rest is checked, and the run exits 0, not 2.
    let unmarked = entry_of("4.3.1").replace("4.3.1", "4.4.9");
    let text = format!("schema: 1\nreleases:\n{}{}{unmarked}", entry_of("4.2.2"), entry_of("4.3.1"));
    let t = tempfile::tempdir().unwrap();
    let versions = t.path().join("versions.yaml");
    std::fs::write(&versions, text).unwrap();
    let o = okp().arg("--versions").arg(&versions).args(["check-anchors", "--all"]).output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(err.contains("okp: check-anchors: 4.2.2 skipped: Maven Central serves 4.2.2's binary jars"), "{err}");
    assert!(
        err.contains("okp: check-anchors: 4.4.9 skipped: Maven Central has no sources jar")
            && err.contains("versions.yaml does not mark the release no_sources_jar: mark it"),
        "{err}"
    );
    let row = |v: &str| out.lines().find(|l| l.starts_with(v)).unwrap_or_default().to_string();
    assert!(row("4.2.2").contains("skipped: Maven Central serves 4.2.2's binary jars"), "{out}");
    assert!(row("4.3.1").ends_with("  ok"), "{out}");
    assert!(out.contains("2 (release, mode) pair(s) skipped"), "{out}");
}
