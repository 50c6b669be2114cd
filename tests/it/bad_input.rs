//! Bad input gets a clear error naming the file, line, version or path, a
//! documented exit code (2 input, 3 external), and never a panic.

use crate::common::*;

const BROKEN_YAML: &str = "schema: 1\nreleases:\n  - version: 3.9.2\n    family: [unclosed\n";

#[test]
fn malformed_versions_yaml_names_file_line_and_column() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("versions.yaml");
    std::fs::write(&f, BROKEN_YAML).unwrap();
    let o = okp().arg("--versions").arg(&f).arg("versions").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o).replace(&t.path().display().to_string(), "[DIR]");
    assert!(err.starts_with("okp: error: [DIR]/versions.yaml:"), "{err}");
    assert!(regex::Regex::new(r"versions\.yaml:\d+:\d+: ").unwrap().is_match(&err), "{err}");
    assert!(!err.contains("panicked"));
}

/// Runs `okp versions` with a copy of the real anchors.yaml altered by `edit`.
fn with_altered_anchors(edit: impl Fn(String) -> String) -> (std::process::Output, String) {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("anchors.yaml");
    let text = edit(std::fs::read_to_string(repo_root().join("anchors.yaml")).unwrap());
    std::fs::write(&f, &text).unwrap();
    let o = okp().arg("--anchors").arg(&f).arg("versions").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    (o, text)
}

#[test]
fn unknown_field_in_anchors_yaml_points_at_it() {
    let (o, text) = with_altered_anchors(|t| t.replacen("    why:", "    wyh: typo\n    why:", 1));
    let line = text.lines().position(|l| l.contains("wyh: typo")).unwrap() + 1;
    let err = stderr(&o);
    assert!(err.contains(&format!("anchors.yaml:{line}:")), "expected line {line}: {err}");
    assert!(err.contains("unknown field `wyh`"), "{err}");
}

#[test]
fn anchor_naming_an_unknown_hook_is_refused() {
    let (o, _) = with_altered_anchors(|t| t.replacen("hooks: [promotion-gate]", "hooks: [promotion-gaet]", 1));
    assert!(stderr(&o).contains("unknown hook `promotion-gaet`"), "{}", stderr(&o));
}

#[test]
fn layers_in_anchors_yaml_are_checked() {
    // The observer contract is core: no contract hook can be made optional.
    let (o, _) = with_altered_anchors(|t| {
        t.replacen(
            "  - id: promotion-gate\n    scope: broker",
            "  - id: promotion-gate\n    layer: metrics\n    scope: broker",
            1,
        )
    });
    assert!(
        stderr(&o).contains("hook `promotion-gate` is part of the observer contract: its layer is core"),
        "{}",
        stderr(&o)
    );
    // An anchor belongs to one layer.
    let (o, _) =
        with_altered_anchors(|t| t.replacen("hooks: [metrics-broker]", "hooks: [metrics-broker, demotion]", 1));
    assert!(stderr(&o).contains("names hooks of different layers"), "{}", stderr(&o));
    // Layers are a closed set, named where the typo is.
    let (o, text) = with_altered_anchors(|t| t.replacen("    layer: metrics", "    layer: gauges", 1));
    let line = text.lines().position(|l| l.contains("layer: gauges")).unwrap() + 1;
    let err = stderr(&o);
    assert!(
        err.contains(&format!("anchors.yaml:{line}:")) && err.contains("unknown variant `gauges`"),
        "expected line {line}: {err}"
    );
}

#[test]
fn regex_anchor_without_a_reason_is_refused() {
    let (o, _) = with_altered_anchors(|t| t.replacen("    text: ", "    regex: ", 1));
    assert!(stderr(&o).contains("needs regex_reason"), "{}", stderr(&o));
}

#[test]
fn a_hook_left_without_an_anchor_is_refused() {
    // Dropping the 3.6+ HW anchor leaves hw-gate uncovered from 3.6.0 on.
    let (o, _) = with_altered_anchors(|t| t.replace("    from: 3.6.0", "    from: 3.7.0"));
    let err = stderr(&o);
    assert!(err.contains("hook `hw-gate` has no anchor for 3.6.0 zk"), "{err}");
}

#[test]
fn unknown_release_lists_the_supported_ones() {
    let o = okp().args(["check-anchors", "--version", "2.6.3"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("unknown Kafka release 2.6.3; supported releases: 2.7.0, "), "{err}");
    assert!(err.contains("4.3.1"), "{err}");
}

#[test]
fn not_a_release_number_is_a_usage_error() {
    okp_run(okp().args(["check-anchors", "--version", "3.9"])).code(2).err_has("not a Kafka release number");
}

#[test]
fn mode_a_release_lacks_is_refused_with_the_reason() {
    okp_run(okp().args(["check-anchors", "--version", "2.7.2", "--mode", "kraft"]))
        .code(2)
        .err_has("release 2.7.2 has no kraft mode: ");
}

#[test]
fn a_directory_that_is_not_a_kafka_tree_is_refused() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("README"), "hello").unwrap();
    okp_run(okp().args(["check-anchors", "--source"]).arg(t.path())).code(2).err_has("is not a Kafka source tree");
    okp_run(okp().args(["check-anchors", "--source", "/nonexistent/kafka"]))
        .code(2)
        .err_has("/nonexistent/kafka: cannot open");
}

#[test]
fn a_snapshot_checkout_needs_an_explicit_version() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("gradle.properties"), "group=org.apache.kafka\nversion=3.9.3-SNAPSHOT\n").unwrap();
    std::fs::write(t.path().join("settings.gradle"), "include 'core'\n").unwrap();
    std::fs::create_dir(t.path().join("core")).unwrap();
    let o = okp().args(["check-anchors", "--source"]).arg(t.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("declares version 3.9.3-SNAPSHOT, which is not a final release; pass --version"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_git_revision_that_does_not_exist_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("git").args(["init", "-q"]).arg(t.path()).status().unwrap();
    assert!(ok.success());
    okp_run(okp().args(["check-anchors", "--git"]).arg(t.path()).args(["--rev", "v3.9.2"]))
        .code(2)
        .err_has("no revision `v3.9.2`");
    okp_run(okp().args(["check-anchors", "--git", "/nonexistent/repo", "--rev", "x"]))
        .code(2)
        .err_has("is not a git repository");
}

#[test]
fn a_file_missing_at_that_release_is_drift_naming_the_file() {
    let a = anchor_for("promotion-gate", "3.9.2");
    let tree = copy_tree(&release_tree("3.9.2"), &[]);
    let o = okp()
        .args(["check-anchors", "--mode", "zk", "--format", "json", "--source"])
        .arg(tree.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let hit = v["targets"][0]["anchors"].as_array().unwrap().iter().find(|x| x["anchor"] == a.id.as_str()).unwrap();
    assert_eq!(hit["status"], "file-missing");
    assert_eq!(hit["file"], a.file.as_str());
}

#[test]
fn unreachable_maven_central_is_an_external_failure() {
    // A settings.xml whose only mirror is a closed loopback port, and an empty
    // local repository, so mvn must go to the network and cannot.
    let t = tempfile::tempdir().unwrap();
    let settings = t.path().join("settings.xml");
    std::fs::write(
        &settings,
        "<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf><url>http://127.0.0.1:9/</url></mirror></mirrors></settings>\n",
    )
    .unwrap();
    let o = okp()
        .args(["check-anchors", "--version", "3.9.2"])
        .env("OKP_MAVEN_SETTINGS", &settings)
        .env("OKP_MAVEN_REPO_LOCAL", t.path().join("m2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot reach Maven Central through mvn"), "{}", stderr(&o));
    assert!(!t.path().join("m2/org/apache/kafka").exists());
}

#[test]
fn missing_mvn_is_an_external_failure() {
    let t = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["check-anchors", "--version", "3.9.2"])
        .env("OKP_MVN", "/nonexistent/mvn")
        .env("OKP_MAVEN_REPO_LOCAL", t.path().join("m2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("cannot run `/nonexistent/mvn`"), "{}", stderr(&o));
}

#[test]
fn clap_usage_errors_exit_2() {
    let o = okp().args(["check-anchors", "--all", "--source", "/tmp"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_guards_in_anchors_yaml_are_refused_at_their_entry() {
    const GUARD: &str = "  - id: partition.maybe-expand-isr\n    hook: promotion-gate\n";
    let cases: [(&str, &str, &str); 6] = [
        ("    hook: promotion-gate\n", "    hook: promotion-gaet\n", "names unknown hook `promotion-gaet` (defined: "),
        (
            "    file: core/src/main/scala/kafka/cluster/Partition.scala\n",
            "    file: /core/src/main/scala/kafka/cluster/Partition.scala\n",
            "must be a relative path inside the Kafka repository",
        ),
        ("    from: 2.7.0\n", "    from: 3.0.0\n    to: 2.8.0\n", "`to` 2.8.0 is before `from` 3.0.0"),
        ("    method: \"def maybeExpandIsr\"\n", "    method: \" \"\n", "method is blank"),
        ("  - id: partition.maybe-expand-isr\n", "  - id: partition.needs-expand-isr\n", "is defined twice"),
        (
            "  - id: partition.maybe-expand-isr\n",
            "  - id: partition.can-add-replica-to-isr\n",
            "has the id of an anchor",
        ),
    ];
    for (from, to, says) in cases {
        let (o, text) = with_altered_anchors(|t| {
            let at = t.find(GUARD).expect("the guard");
            let (head, tail) = t.split_at(at);
            // Edit the first `from` at or after the guard's entry.
            format!("{head}{}", tail.replacen(from, to, 1))
        });
        let err = stderr(&o);
        assert!(err.contains(says), "{says}: {err}");
        // The error names the file and the line of the guard's entry (the first of twins).
        let id = to.trim().strip_prefix("- id: ").unwrap_or("partition.maybe-expand-isr");
        let guards = text.lines().position(|l| l == "guards:").unwrap();
        let line = guards + text.lines().skip(guards).position(|l| l.contains(&format!("id: {id}"))).unwrap() + 1;
        assert!(err.contains(&format!("anchors.yaml:{line}:")), "{says}: expected line {line}: {err}");
    }
    // A misspelt field is refused where it stands.
    let (o, text) = with_altered_anchors(|t| t.replacen("    method: \"def maybeExpandIsr\"", "    mehtod: x", 1));
    let line = text.lines().position(|l| l.contains("mehtod: x")).unwrap() + 1;
    assert!(stderr(&o).contains(&format!("anchors.yaml:{line}:")), "{}", stderr(&o));
    assert!(stderr(&o).contains("unknown field `mehtod`"), "{}", stderr(&o));
}

#[test]
fn a_replacement_indented_off_its_anchor_is_refused_naming_the_edit() {
    // The proof places an edit in a method by the indentation of its marker: a replacement two
    // columns left of the line it replaces would sit at the enclosing object's level.
    let p = tempfile::tempdir().unwrap();
    copy_into(&repo_root().join("patches"), p.path());
    let e = p.path().join("edits.yaml");
    let line = "        val leaderOpt = PartitionLeaderElectionAlgorithms.reassignPartitionLeaderElection(";
    let text = std::fs::read_to_string(&e).unwrap().replacen(&format!("  {line}"), line, 1);
    std::fs::write(&e, &text).unwrap();
    let o = okp().arg("--patches").arg(p.path()).args(["show", "--version", "3.9.2", "--mode", "zk"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let at = text.lines().position(|l| l == "  - id: zk-election-reassign").unwrap() + 1;
    let err = stderr(&o);
    assert!(err.contains(&format!("edits.yaml:{at}:")), "expected line {at}: {err}");
    assert!(
        err.contains(
            "edit zk-election-reassign: replaces anchor `el.reassign-candidates` (indented 4) with code indented 2"
        ),
        "{err}"
    );
}

#[test]
fn bench_rules_must_be_topic_rules_read_as_the_registries_read_them() {
    let t = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 7] = [
        ("ids", b"4\ntopic:a observers=none\n", "cluster-wide ids {4} in it: only topic rules here"),
        (
            "malformed",
            b"topic:a observers=4x\n",
            "line 1, column 19: not a broker id: \"4x\" (a list is none, or broker ids and rack:NAME separated by commas)",
        ),
        (
            "rack",
            b"topic:a observers=4\nprefix:b observers=rack:dr,rack:d r\n",
            "line 2, column 1: a topic rule is SELECTOR observers=LIST",
        ),
        (
            "rack-name",
            b"topic:a observers=4,rack:dr\nprefix:b observers=rack:dr,rack:d+r\n",
            "line 2, column 28: not a rack: \"rack:d+r\" (a rack is rack:NAME, NAME of 1-255 letters, digits, '.', '_', '-' or '/')",
        ),
        ("empty", b"# nothing\n", "no topic rule in it"),
        ("regex", b"regex:( observers=1\n", "line 1, column 8: not a pattern of observer.ids (an empty alternative): ("),
        (
            "regex-java-only",
            b"regex:[[:alpha:]]+ observers=1\n",
            "line 1, column 8: not a pattern of observer.ids ('[' in a class): [[:alpha:]]+",
        ),
    ];
    for (name, text, says) in cases {
        let f = t.path().join(name);
        std::fs::write(&f, text).unwrap();
        let out = t.path().join(format!("out-{name}"));
        let o = okp()
            .args(["bench", "broker", "--version", "3.9.2", "--rules"])
            .arg(&f)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("{}: {says}", f.display())), "{name}: {}", stderr(&o));
        assert!(!out.exists(), "{name}: nothing written");
    }
}
