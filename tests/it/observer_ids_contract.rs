//! Our observer registry (Scala for the broker, Java for the KRaft controller)
//! compiled with the real scalac of the oldest and newest Scala of each line
//! Kafka 2.7–4.3 uses and with javac --release 8, then run through the same
//! contract cases (patches/tests/run-contract-test.sh).

use crate::common::*;

#[test]
fn both_registries_pass_the_contract_with_real_compilers() {
    let script = repo_root().join("patches/tests/run-contract-test.sh");
    let o = std::process::Command::new("bash").arg(&script).output().unwrap();
    let out = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "contract test failed:\n{out}");
    let line =
        out.lines().find(|l| l.starts_with("observer-ids: ")).unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let nums: Vec<u64> =
        line.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    assert!(nums[0] > 100, "too few checks ran: {line}");
    assert_eq!(nums[1], 0, "{line}");
}
