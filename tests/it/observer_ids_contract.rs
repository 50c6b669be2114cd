//! Our observer registry (Scala for the broker, Java for the KRaft controller)
//! compiled with the real scalac of the oldest and newest Scala of each line
//! Kafka 2.7–4.3 uses and with javac --release 8, then run through the same
//! contract cases (patches/tests/run-contract-test.sh), and through the
//! differential test: thousands of generated observer.ids files on which both
//! must give okp's own verdict (src/observers/differential.rs), every pattern
//! they accept held to java.util.regex.

use crate::common::*;

/// Generated cases; the 131 hostile patterns of cases.rs come first.
const DIFF_CASES: usize = 4000;

#[test]
fn both_registries_pass_the_contract_with_real_compilers() {
    let dir = tempfile::tempdir().unwrap();
    let cases_file = dir.path().join("cases.tsv");
    let cases = okp::observers::differential::generate(45, DIFF_CASES);
    std::fs::write(&cases_file, okp::observers::differential::lines(&cases)).unwrap();
    let script = repo_root().join("patches/tests/run-contract-test.sh");
    let o = std::process::Command::new("bash").arg(&script).env("OKP_DIFF_CASES", &cases_file).output().unwrap();
    let out = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "contract test failed:\n{out}");
    let line =
        out.lines().find(|l| l.starts_with("observer-ids: ")).unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let nums: Vec<u64> =
        line.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    assert!(nums[0] > 100, "too few checks ran: {line}");
    assert_eq!(nums[1], 0, "{line}");
    // One differential run per Scala build, each over every case.
    let runs: Vec<&str> = out.lines().filter(|l| l.starts_with("differential: ")).collect();
    assert_eq!(runs.len(), 4, "{out}");
    // And each held the rule index to the scan it replaced (ObserverIdsDifferential.indexAgainstScan).
    let index = out.lines().filter(|l| l.starts_with("index: ")).collect::<Vec<_>>();
    assert_eq!(index.len(), 4, "{out}");
    for l in index {
        assert!(l.ends_with("each decided by the index as by the scan, in both registries"), "{l}");
    }
    for r in runs {
        assert!(r.starts_with(&format!("differential: {DIFF_CASES} files, ")), "{r}");
    }
}
