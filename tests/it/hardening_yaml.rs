//! Hostile YAML inputs are refused, by name, with exit 2, and without
//! waiting: deep nesting (the shapes that were quadratic under serde_yaml),
//! a FIFO in place of a file, and files over the caps (src/model/yaml.rs,
//! docs/dependencies.md). Each run has a 60 s limit: a hang or a slow parse
//! fails the test instead of stalling the suite (the time is not asserted).

use crate::common::*;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn run(args: &[&str]) -> Output {
    okp().args(args).timeout(LIMIT).output().unwrap()
}

/// Exit 2 (not a kill by the time limit) and every `needles` in stderr.
fn refused(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "status {:?}: {}", o.status, stderr(o));
    for n in needles {
        assert!(stderr(o).contains(n), "expected `{n}` in: {}", stderr(o));
    }
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(s(p)).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path and touches no Rust memory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

fn nodes_status(nodes: &Path) -> Output {
    run(&["observers", "status", "--bootstrap", "127.0.0.1:1", "--nodes", s(nodes)])
}

#[test]
fn two_hundred_kb_of_nesting_is_refused_at_its_position() {
    let t = tempfile::tempdir().unwrap();
    let flow = t.path().join("flow.yaml");
    std::fs::write(&flow, "[".repeat(200 * 1024)).unwrap();
    let deep = "nested more than 32 levels deep";
    refused(&nodes_status(&flow), &[&format!("{}:1:33: {deep}", flow.display())]);
    refused(&run(&["--versions", s(&flow), "versions"]), &[&format!("{}:1:33: {deep}", flow.display())]);
    // Nested flow mappings: the shape whose parse time grew quadratically (19 s at 200 KB).
    let maps = t.path().join("maps.yaml");
    std::fs::write(&maps, "{a: ".repeat(50 * 1024)).unwrap();
    refused(&run(&["--anchors", s(&maps), "versions"]), &[&format!("{}:1:", maps.display()), deep]);
    refused(&nodes_status(&maps), &[&format!("{}:1:", maps.display()), deep]);
    // Block nesting meets a type error first here (a sequence where a mapping belongs); the
    // depth limit for block nesting is unit-tested in src/model/yaml.rs.
}

#[test]
fn a_fifo_is_refused_by_name_not_waited_on() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("versions.yaml");
    mkfifo(&fifo);
    let not_regular = format!("{}: is a FIFO, not a regular file", fifo.display());
    refused(&run(&["--versions", s(&fifo), "versions"]), &[&not_regular]);
    refused(&run(&["--anchors", s(&fifo), "versions"]), &[&not_regular]);
    refused(&nodes_status(&fifo), &[&not_regular, "okp reads a nodes file only from a regular file"]);
    refused(
        &run(&[
            "observers",
            "promote",
            "--broker",
            "4",
            "--dry-run",
            "--bootstrap",
            "127.0.0.1:1",
            "--nodes",
            s(&fifo),
        ]),
        &[&not_regular],
    );
    // --patches DIR whose edits.yaml is a FIFO.
    let patches = t.path().join("patches");
    std::fs::create_dir(&patches).unwrap();
    mkfifo(&patches.join("edits.yaml"));
    refused(
        &run(&["--patches", s(&patches), "show", "--version", "3.9.2", "--mode", "zk"]),
        &[&format!("{}: is a FIFO, not a regular file", patches.join("edits.yaml").display())],
    );
    // A directory is not read either.
    refused(&run(&["--versions", s(t.path()), "versions"]), &["is a directory, not a regular file"]);
}

#[test]
fn files_over_the_cap_are_refused_naming_the_cap() {
    let t = tempfile::tempdir().unwrap();
    let big = |name: &str, bytes: u64| -> PathBuf {
        let p = t.path().join(name);
        // A comment: valid YAML, so only the size can refuse it.
        let mut text = "#".repeat(bytes as usize);
        text.push('\n');
        std::fs::write(&p, text).unwrap();
        p
    };
    let data = big("versions.yaml", 4 << 20);
    refused(
        &run(&["--versions", s(&data), "versions"]),
        &[&format!("{}: ", data.display()), "over the 4 MiB cap okp sets for a YAML data file"],
    );
    let nodes = big("nodes.yaml", 1 << 20);
    refused(
        &nodes_status(&nodes),
        &[&format!("{}: ", nodes.display()), "over the 1 MiB cap okp sets for a nodes file"],
    );
    // Just under the nodes cap, the same file is read and parsed (and holds no node).
    let under = big("under.yaml", (1 << 20) - 2);
    let o = nodes_status(&under);
    assert!(!stderr(&o).contains("cap"), "{}", stderr(&o));
}
