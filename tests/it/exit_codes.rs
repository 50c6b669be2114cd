//! docs/exit-codes.md is the contract: its kinds table matches `Failure::code`,
//! its per-command table names every command `okp --help` lists, and each
//! command, given a refused input, exits with the code the page gives for it
//! (no cluster, no network: each case fails before either is needed).

use crate::common::*;

use okp::error::Failure;

fn page() -> String {
    std::fs::read_to_string(repo_root().join("docs/exit-codes.md")).unwrap()
}

#[test]
fn the_kinds_table_is_the_code() {
    let page = page();
    let row = |kind: &str| -> i32 {
        let line =
            page.lines().find(|l| l.starts_with(&format!("| {kind} |"))).unwrap_or_else(|| panic!("no row {kind}"));
        line.split('|').nth(2).unwrap().trim().parse().unwrap()
    };
    let kinds = [
        ("drift", Failure::Drift),
        ("check failed", Failure::CheckFailed),
        ("bad input", Failure::BadInput),
        ("external", Failure::External),
        ("interrupted", Failure::Interrupted),
    ];
    assert_eq!(kinds.len(), Failure::ALL.len());
    for (name, f) in kinds {
        assert_eq!(row(name), f.code(), "docs/exit-codes.md row `{name}`");
    }
    assert_eq!(row("done"), 0);
}

#[test]
fn every_command_has_a_row() {
    let help = stdout(&okp().arg("--help").output().unwrap());
    let page = page();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  ") || l.is_empty())
        .filter(|l| l.len() > 2 && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 17, "{help}");
    for c in commands {
        assert!(
            page.contains(&format!("| `{c}")) || page.contains(&format!("| `{c} ")),
            "docs/exit-codes.md lacks `{c}`"
        );
    }
}

/// Each case: the arguments, the code docs/exit-codes.md gives, and a word the message must hold.
#[test]
fn refused_inputs_exit_as_documented() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let not_a_tree = d.join("not-a-tree");
    std::fs::create_dir(&not_a_tree).unwrap();
    std::fs::write(not_a_tree.join("README"), "hello").unwrap();
    let full = d.join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), "x").unwrap();
    let fifo = d.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let existing_key = d.join("k");
    std::fs::write(d.join("k.key"), "x").unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (vec!["show".into(), "--version".into(), "9.9.9".into()], 2, "unknown Kafka release 9.9.9"),
        (vec!["check-anchors".into(), "--source".into(), s(&not_a_tree)], 2, "is not a Kafka source tree"),
        (vec!["diff".into()], 2, "say which release to diff"),
        (vec!["apply".into(), "--source".into(), s(&d.join("nope"))], 2, "nope"),
        (vec!["export".into(), "--version".into(), "9.9.9".into()], 2, "unknown Kafka release"),
        (vec!["build".into()], 2, "pass --version"),
        (vec!["sources".into(), "--version".into(), "3.9.2".into(), "--out".into(), s(&full)], 2, "not empty"),
        (vec!["verify".into(), "--scenarios".into(), "NOPE".into()], 2, "unknown scenario"),
        (vec!["unit-tests".into(), "--classes".into(), "NoSuchTest".into()], 2, "is not a test class"),
        (vec!["bench".into(), "broker".into(), "--rounds".into(), "0".into()], 2, "must be > 0"),
        (vec!["bench".into(), "scale".into(), "--sizes".into(), "1000,0".into()], 2, "must be > 0"),
        (vec!["bench".into(), "scale".into(), "--heap".into(), "1gb".into()], 2, "a JVM heap size"),
        (vec!["verify".into(), "--jobs".into(), "2".into()], 2, "--all"),
        (vec!["verify".into(), "--soak".into(), "10x".into(), "--seed".into(), "1".into()], 2, "not a duration"),
        (vec!["verify".into(), "--soak".into(), "10m".into()], 2, "--seed"),
        (vec!["compare-builds".into(), s(&d.join("nope")), s(&not_a_tree)], 2, "no such jar or directory"),
        (vec!["compare-builds".into(), s(&not_a_tree), s(&not_a_tree)], 2, "no jar there"),
        (vec!["compare-builds".into(), s(&fifo), s(&fifo)], 2, "neither a regular file nor a directory"),
        (vec!["verify".into(), "--merge".into(), "--evidence".into(), s(&d.join("nope"))], 2, "no such directory"),
        (vec!["verify".into(), "--merge".into(), "--evidence".into(), s(&not_a_tree)], 0, ""),
        (
            vec!["verify".into(), "--version".into(), "2.7.2".into(), "--mode".into(), "kraft".into()],
            2,
            "has no kraft mode",
        ),
        (vec!["keygen".into(), "--unencrypted".into(), "--out".into(), s(&existing_key)], 2, "k.key"),
        (
            vec![
                "bundle".into(),
                "--build".into(),
                s(&not_a_tree),
                "--target".into(),
                "x86_64".into(),
                "--key".into(),
                s(&d.join("k.key")),
            ],
            2,
            "okp-build.json",
        ),
        (vec!["verify-bundle".into(), s(&d.join("no.tar.gz")), "--pubkey".into(), "RWQ".into()], 2, "no.tar.gz"),
        (
            vec![
                "install".into(),
                s(&d.join("no.tar.gz")),
                "--kafka-home".into(),
                s(d),
                "--pubkey".into(),
                "RWQ".into(),
            ],
            2,
            "no.tar.gz",
        ),
        (
            vec![
                "observers".into(),
                "status".into(),
                "--bootstrap".into(),
                "127.0.0.1:1".into(),
                "--observers".into(),
                "4".into(),
            ],
            3,
            "127.0.0.1:1",
        ),
        (
            vec![
                "observers".into(),
                "promote".into(),
                "--broker".into(),
                "4".into(),
                "--bootstrap".into(),
                "127.0.0.1:1".into(),
            ],
            2,
            "",
        ),
        (vec!["versions".into(), "--format".into(), "json".into()], 0, ""),
        (vec!["status".into(), "--source".into(), s(&not_a_tree)], 2, "not a Kafka source tree"),
        (vec!["rollback".into(), "--kafka-home".into(), s(&not_a_tree)], 2, "not a Kafka installation"),
    ];
    let mut wrong = Vec::new();
    for (args, code, word) in &cases {
        let o = okp().args(args).output().unwrap();
        let err = stderr(&o);
        if o.status.code() != Some(*code) || !err.contains(word) || err.contains("panicked") {
            wrong.push(format!(
                "okp {}: exit {:?} (documented {code}), stderr: {err}",
                args.join(" "),
                o.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A Kafka installation as rollback checks it: bin/kafka-run-class.sh and libs/ with one jar.
fn kafka_home(d: &std::path::Path) -> std::path::PathBuf {
    let home = d.join("kafka");
    std::fs::create_dir_all(home.join("bin")).unwrap();
    std::fs::create_dir_all(home.join("libs")).unwrap();
    std::fs::write(home.join("bin/kafka-run-class.sh"), "").unwrap();
    std::fs::write(home.join("libs/kafka_2.13-3.9.2.jar"), "patched").unwrap();
    home
}

/// docs/exit-codes.md: rollback refuses what okp never leaves with exit 2 and changes nothing,
/// neither in the installation nor through a link out of it.
#[test]
fn rollback_refuses_a_symlinked_state_or_a_missing_backup_with_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let rollback = |home: &std::path::Path| okp().arg("rollback").arg("--kafka-home").arg(home).output().unwrap();

    // .okp-observer as a link to elsewhere, holding a "backup" equal to the jar in libs/: once
    // deleted through the link, then exit 3.
    let home = kafka_home(t.path());
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("backup")).unwrap();
    std::fs::write(elsewhere.join("backup/kafka_2.13-3.9.2.jar"), "patched").unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.join(".okp-observer")).unwrap();
    let o = rollback(&home);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a symbolic link or not a directory"), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing was changed"), "{}", stderr(&o));
    assert!(elsewhere.join("backup/kafka_2.13-3.9.2.jar").is_file(), "a file was removed through the link");

    // An install record whose backup was deleted: refused before anything is written.
    std::fs::remove_file(home.join(".okp-observer")).unwrap();
    std::fs::create_dir_all(home.join(".okp-observer/backup")).unwrap();
    let (original, patched) = ("0".repeat(64), "1".repeat(64));
    std::fs::write(
        home.join(".okp-observer/installed"),
        format!(
            "bundle=okp-observer-3.9.2-kraft\nrelease=3.9.2\nmode=kraft\ntarget=linux-x86_64\npatch_set={}\njar=kafka_2.13-3.9.2.jar {original} {patched}\n",
            "a".repeat(64)
        ),
    )
    .unwrap();
    let before = snapshot(&home);
    let o = rollback(&home);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("backup") && stderr(&o).contains("is missing"), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing was changed"), "{}", stderr(&o));
    assert_eq!(snapshot(&home), before, "the installation changed");
}
