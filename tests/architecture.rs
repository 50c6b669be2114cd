//! The import graph, drawn from the code's own `crate::` paths, obeys the
//! pipeline of docs/architecture.md: every top-level module sits in one stage,
//! imports only modules of its own stage or of lower ones, the graph has no
//! circle, and the clap module holds no logic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The stages, bottom to top, as docs/architecture.md draws them.
const STAGES: &[(&str, &[&str])] = &[
    ("foundations", &["error", "out", "fsx", "hash", "schema", "version"]),
    ("data", &["model", "patchset"]),
    ("upstream sources", &["maven", "source", "workspace"]),
    ("anchors and edits", &["anchor", "check", "report", "apply", "tx", "gitwt", "patch"]),
    ("products", &["build", "port", "bundle", "releases"]),
    (
        "live clusters",
        &["wire", "cluster", "scenarios", "soak", "verify", "dev_cluster", "bench", "observers", "hosts", "playground"],
    ),
    ("flags", &["cli"]),
    ("commands", &["cmd"]),
];

fn stage_of(module: &str) -> Option<usize> {
    STAGES.iter().position(|(_, ms)| ms.contains(&module))
}

/// The text of a Rust file without comments and string literals (so a path in a
/// message or a doc comment is not an import).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // a char literal such as '"'
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Top-level module → the top-level modules its files name through `crate::`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    let path_re = regex::Regex::new(r"crate::(\w+)").unwrap();
    let group_re = regex::Regex::new(r"crate::\{([^}]*)\}").unwrap();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().and_then(|x| x.to_str()) != Some("rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap();
            let top =
                rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
            if top == "main" || top == "lib" {
                continue;
            }
            let code = code_only(&std::fs::read_to_string(&p).unwrap());
            let mut names: BTreeSet<String> = path_re.captures_iter(&code).map(|c| c[1].to_string()).collect();
            for g in group_re.captures_iter(&code) {
                for item in g[1].split(',') {
                    if let Some(first) = item.trim().split("::").next().filter(|s| !s.is_empty()) {
                        names.insert(first.trim().to_string());
                    }
                }
            }
            names.remove(&top);
            edges.entry(top).or_default().extend(names);
        }
    }
    edges
}

fn show(g: &BTreeMap<String, BTreeSet<String>>) -> String {
    g.iter().map(|(k, v)| format!("{k} -> {}\n", v.iter().cloned().collect::<Vec<_>>().join(" "))).collect()
}

#[test]
fn every_module_has_a_stage() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let declared: Vec<&str> =
        lib.lines().filter_map(|l| l.strip_prefix("pub mod ")).map(|l| l.trim_end_matches(';')).collect();
    assert!(declared.len() > 20, "lib.rs declares {declared:?}");
    for m in &declared {
        assert!(stage_of(m).is_some(), "src/lib.rs declares `{m}`, which no stage of tests/architecture.rs holds");
    }
    for (_, ms) in STAGES {
        for m in *ms {
            assert!(declared.contains(m), "stage module `{m}` is not declared in src/lib.rs");
        }
    }
}

#[test]
fn no_module_imports_a_higher_stage() {
    let g = graph();
    let mut upward = Vec::new();
    for (from, tos) in &g {
        let Some(a) = stage_of(from) else { continue };
        for to in tos {
            match stage_of(to) {
                Some(b) if b > a => upward.push(format!("{from} ({}) -> {to} ({})", STAGES[a].0, STAGES[b].0)),
                _ => {}
            }
        }
    }
    assert!(upward.is_empty(), "imports that run up the pipeline:\n{}\ngraph:\n{}", upward.join("\n"), show(&g));
}

#[test]
fn the_import_graph_has_no_circle() {
    let g = graph();
    // Kahn's algorithm: whatever cannot be peeled off sits on a circle.
    let mut remaining = g.clone();
    loop {
        let leaves: Vec<String> = remaining
            .iter()
            .filter(|(_, tos)| tos.iter().all(|t| !remaining.contains_key(t)))
            .map(|(k, _)| k.clone())
            .collect();
        if leaves.is_empty() {
            break;
        }
        for l in leaves {
            remaining.remove(&l);
        }
    }
    assert!(remaining.is_empty(), "modules on an import circle:\n{}", show(&remaining));
}

#[test]
fn the_flags_module_holds_no_logic() {
    let cli = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli.rs")).unwrap();
    let code = code_only(&cli);
    for word in ["fn ", "impl ", "std::fs", "std::process"] {
        assert!(!code.contains(word), "src/cli.rs holds `{word}`: flags only, the logic belongs in src/cmd/");
    }
    let main = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs")).unwrap();
    assert!(code_only(&main).lines().filter(|l| !l.trim().is_empty()).count() < 20, "src/main.rs grew logic");
}

#[test]
fn only_commands_name_the_command_layer() {
    let g = graph();
    let offenders: Vec<&String> = g
        .iter()
        .filter(|(from, tos)| *from != "cmd" && (tos.contains("cmd") || tos.contains("cli")))
        .map(|(k, _)| k)
        .collect();
    assert!(offenders.is_empty(), "modules below the command layer that import it: {offenders:?}");
}

/// The files under src/cluster: (path relative to the crate, text), Rust and Java alike.
fn cluster_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut stack = vec![root.join("src/cluster")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    assert!(out.len() > 10, "src/cluster holds only {out:?}");
    out
}

/// Split by concern, not by size; but the harness once was one 1765-line `impl Cluster` of
/// ninety methods. A cluster file past 600 lines holds more than one concern: split it.
#[test]
fn no_cluster_file_exceeds_600_lines() {
    const MAX: usize = 600;
    let long: Vec<String> = cluster_files()
        .iter()
        .map(|(p, text)| (p, text.lines().count()))
        .filter(|(_, n)| *n > MAX)
        .map(|(p, n)| format!("{p}: {n} lines"))
        .collect();
    assert!(long.is_empty(), "cluster files over {MAX} lines (split them by concern):\n{}", long.join("\n"));
}

/// The cluster reads, writes and locks files through the bottom floor (`fsx`: the guarded
/// reader, the atomic writer, the lock): no raw call in its code (its tests may make fixtures).
#[test]
fn the_cluster_touches_files_through_fsx() {
    const RAW: [&str; 8] = [
        "fs::read(",
        "fs::read_to_string",
        ".read_to_string(",
        "File::open",
        "fs::write(",
        "OpenOptions",
        "libc::flock",
        "create_dir_all",
    ];
    let mut raw = Vec::new();
    for (p, text) in cluster_files().iter().filter(|(p, _)| p.ends_with(".rs")) {
        let code = code_only(text.split("#[cfg(test)]").next().unwrap_or(""));
        for (i, line) in code.lines().enumerate() {
            if let Some(call) = RAW.iter().find(|r| line.contains(*r)) {
                raw.push(format!("{p}:{}: {call}", i + 1));
            }
        }
    }
    assert!(raw.is_empty(), "raw file calls in src/cluster (use crate::fsx):\n{}", raw.join("\n"));
}
