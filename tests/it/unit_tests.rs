//! `okp unit-tests` on the reference pairs CI runs on every change (2.7.2 zk,
//! 3.9.2 zk, 3.9.2 kraft, 4.3.1 kraft), each on a bounded subset of its
//! classes (`SUBSET`: the full classes take 3-8 minutes a pair on 2 cores and
//! run in ci/okp-unit-tests.yml and evidence/unit/), through all four
//! configurations (upstream, patched, observers, and rules: the observers from
//! a topic rule, every test ending as with observers); and its refusals, which
//! need no JVM.

use crate::common::*;

/// Per reference pair, the classes CI runs: `PartitionTest` (the ISR and high-watermark hooks,
/// rules 1-3, about 40 s a pair for the four configurations on an idle 2-core machine)
/// and a small controller class (the ZooKeeper controller's elections, the KRaft controller's
/// partition changes: the leader-balance and election edges).
const SUBSET: &[(&str, &str, &[&str])] = &[
    ("2.7.2", "zk", &["PartitionTest", "PartitionLeaderElectionAlgorithmsTest"]),
    ("3.9.2", "zk", &["PartitionTest", "PartitionLeaderElectionAlgorithmsTest"]),
    ("3.9.2", "kraft", &["PartitionTest", "PartitionChangeBuilderTest"]),
    ("4.3.1", "kraft", &["PartitionTest", "PartitionChangeBuilderTest"]),
];

/// unit.json read through okp's own reader (schema checked), as JSON for the assertions.
fn unit_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::to_value(okp::verify::unit_record::UnitRecord::read(dir).unwrap()).unwrap()
}

#[test]
fn the_reference_pairs_show_no_regression_on_their_ci_subset() {
    for (v, m, classes) in SUBSET {
        let t = tempfile::tempdir().unwrap();
        let o = okp()
            .args([
                "unit-tests",
                "--version",
                v,
                "--mode",
                m,
                "--classes",
                &classes.join(","),
                "--class-timeout",
                "600",
            ])
            .arg("--evidence")
            .arg(t.path())
            .output()
            .unwrap();
        let dir = t.path().join("unit").join(format!("{v}-{m}"));
        assert_eq!(o.status.code(), Some(0), "{v} {m}: {}\n{}", stdout(&o), stderr(&o));
        let r = unit_json(&dir);
        assert_eq!(r["schema"], 1);
        assert_eq!(r["verdict"], "pass", "{v} {m}: {r}");
        assert_eq!(r["regressions"].as_array().unwrap().len(), 0);
        for (i, class) in classes.iter().enumerate() {
            let runs = &r["classes"][i]["runs"];
            let passed = |c: &str| runs[c]["passed"].as_u64().unwrap();
            assert!(passed("upstream") > 0, "{v} {m} {class}: {r}");
            // Without observers as upstream: every upstream pass passes, or was a flake that passed again.
            let flaky = r["flaky"].as_array().map_or(0, |f| f.len()) as u64;
            assert!(passed("patched") + flaky >= passed("upstream"), "{v} {m} {class}: {r}");
        }
        // Every change with observers is one unit-tests.yaml explains.
        for c in r["changes"].as_array().unwrap() {
            assert!(c["rule"].is_string(), "{v} {m}: unexplained {c}");
        }
        // Under the topic rule every test ends as with the cluster-wide ids: same counts per class
        // (the rules counts beside `runs`, where an okp older than `rules` does not look).
        assert_eq!(r["rules_differences"].as_array().unwrap().len(), 0, "{v} {m}: {r}");
        for (i, class) in classes.iter().enumerate() {
            let row = &r["classes"][i];
            for n in ["passed", "failed", "skipped"] {
                assert!(row["rules"][n].is_u64(), "{v} {m} {class} {n}: {r}");
                assert_eq!(row["rules"][n], row["runs"]["observers"][n], "{v} {m} {class} {n}: {r}");
            }
        }
        let rules = std::fs::read_to_string(dir.join("observer-rules.ids")).unwrap();
        assert_eq!(rules.lines().nth(1), Some("regex:.* observers=2,102,424242"), "{rules}");
        assert_eq!(r["rules"]["file"].as_str(), Some(rules.as_str()));
        // The registries' log lines: never the file unread; where none shows, the JVM said why
        // (SLF4J without a backend on the unit-test classpath drops them).
        let logs = r["rules"]["registry_log"].as_array().unwrap();
        assert_eq!(logs.len(), classes.len(), "{r}");
        for l in logs {
            assert_ne!(l["seen"], "wrong", "{v} {m}: {l}");
            assert!(l["seen"] == "read" || l["nop_logger"] == true, "{v} {m}: {l}");
        }
        let cp = std::fs::read_to_string(dir.join("classpath.txt")).unwrap();
        let jars: Vec<&str> = cp.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(jars.iter().all(|l| l.len() > 66 && l[..64].chars().all(|c| c.is_ascii_hexdigit())), "{cp}");
        assert!(jars.iter().any(|l| l.contains(" patched ")), "the patched twin is listed: {cp}");
        assert!(jars.iter().any(|l| l.contains("-test.jar")), "{cp}");
        for class in *classes {
            for config in ["observers", "rules"] {
                let xml = dir.join("junit").join(config).join(class);
                assert!(std::fs::read_dir(&xml).unwrap().count() > 0, "{}", xml.display());
            }
        }
        assert!(dir.join("summary.md").is_file() && t.path().join("VERIFY.md").is_file());
        // --rejudge reads the same reports back to the same verdict.
        let again = okp()
            .args(["unit-tests", "--version", v, "--mode", m, "--rejudge", "--evidence"])
            .arg(t.path())
            .output()
            .unwrap();
        assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
        let rejudged = unit_json(&dir);
        assert_eq!(rejudged["changes"], r["changes"]);
        assert_eq!((&rejudged["rules_differences"], &rejudged["rules"]), (&r["rules_differences"], &r["rules"]));
    }
}

#[test]
fn refusals_exit_2_with_a_sentence() {
    let t = tempfile::tempdir().unwrap();
    let damaged = t.path().join("damaged.yaml");
    std::fs::write(&damaged, "schema: 1\nlauncher: a:b:c\nfamilies:\n  - name: x\n    from: [\n").unwrap();
    let no_family = t.path().join("no-family.yaml");
    let text = std::fs::read_to_string(repo_root().join("unit-tests.yaml")).unwrap();
    std::fs::write(&no_family, text.replace("to: 2.7.2", "to: 2.7.1")).unwrap();
    let ev = t.path().join("ev").display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--version".into(), "9.9.9".into()], "unknown Kafka release 9.9.9"),
        (vec!["--version".into(), "2.7.2".into(), "--mode".into(), "kraft".into()], "kraft"),
        (vec!["--data".into(), damaged.display().to_string()], "damaged.yaml:5:"),
        (
            vec!["--version".into(), "2.7.2".into(), "--data".into(), no_family.display().to_string()],
            "no unit-test family covers 2.7.2",
        ),
        (vec!["--classes".into(), "NoSuchTest".into()], "`NoSuchTest` is not a test class family u3.7 runs in zk mode"),
        (vec!["--rejudge".into(), "--evidence".into(), ev.clone()], "unit.json"),
        (vec!["--class-timeout".into(), "1".into()], "--class-timeout"),
    ];
    for (args, want) in cases {
        let o = okp().arg("unit-tests").args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

/// 4.2.2 publishes binary jars but no -test.jar (nor sources): refused before any JVM or build.
#[test]
fn a_release_without_sources_jars_is_refused() {
    // 4.2.2's test jars are on Maven Central since 2026-12-05 (404 before): what it lacks now is a
    // sources jar, so no patched jars can be built for its unit tests.
    let t = tempfile::tempdir().unwrap();
    okp_run(okp().args(["unit-tests", "--version", "4.2.2", "--evidence"]).arg(t.path()))
        .code(2)
        .err_has("Maven Central serves 4.2.2's binary jars and POMs but no -sources.jar")
        .err_has("okp unit-tests builds its patched jars from those sources (or pass --jars)");
    assert!(!t.path().join("unit").exists());
}
