//! The import graph, drawn from the code's own `crate::` paths, obeys the
//! pipeline of docs/architecture.md: every top-level module sits in one stage,
//! imports only modules of its own stage or of lower ones, the graph has no
//! circle, the JVM floor imports only the foundations below it and alone
//! spells class files, the JDK lookup and CDS flags, and the clap module holds
//! no logic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The stages, bottom to top, as docs/architecture.md draws them.
const STAGES: &[(&str, &[&str])] = &[
    ("foundations", &["error", "escape", "out", "fsx", "hash", "jvm", "plot", "schema", "version"]),
    ("data", &["model", "patchset"]),
    ("upstream sources", &["maven", "source", "workspace"]),
    ("anchors and edits", &["anchor", "check", "report", "apply", "tx", "gitwt", "patch"]),
    ("products", &["build", "diff", "bundle", "releases"]),
    (
        "live clusters",
        &[
            "wire",
            "cluster",
            "scenarios",
            "soak",
            "unit_tests",
            "verify",
            "dev_cluster",
            "bench",
            "observers",
            "monitoring",
            "hosts",
            "playground",
        ],
    ),
    ("flags", &["cli"]),
    ("commands", &["cmd"]),
];

fn stage_of(module: &str) -> Option<usize> {
    STAGES.iter().position(|(_, ms)| ms.contains(&module))
}

/// The text of a Rust file without comments and string literals (so a path in a
/// message or a doc comment is not an import, and braces in text do not count).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let c: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            i += 2;
            while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c[i] == 'r' && !ident_before(&c, i) && matches!(c.get(i + 1), Some('"' | '#')) {
            // A raw string r"…", r#"…"#: no escapes, ends at the quote and as many hashes.
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            j += 1;
            while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#'))) {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            // an escaped char literal such as '\'' or '\u{1b}'
            i += 3;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            // a char literal such as '"' or '{'
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Whether `c[at]` continues an identifier (`br"…"` counts as a raw string's start, not as one).
fn ident_before(c: &[char], at: usize) -> bool {
    let ident = |k: usize| c[k].is_alphanumeric() || c[k] == '_';
    match at {
        0 => false,
        1 => ident(0) && c[0] != 'b',
        _ => ident(at - 1) && (c[at - 1] != 'b' || ident(at - 2)),
    }
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
        assert!(stage_of(m).is_some(), "src/lib.rs declares `{m}`, which no stage of tests/it/architecture.rs holds");
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
    let remaining = on_a_circle(&graph());
    assert!(remaining.is_empty(), "modules on an import circle:\n{}", show(&remaining));
}

/// What the JVM floor (`src/jvm`) may import: the foundations below it, nothing that prints,
/// writes records or knows a product, so every stage can reach Java through it.
const JVM_FLOOR_IMPORTS: &[&str] = &["error", "escape", "fsx", "hash"];

#[test]
fn the_jvm_floor_imports_only_the_foundations_below_it() {
    let g = graph();
    let imports = g.get("jvm").expect("src/jvm is drawn in the graph");
    let above: Vec<&String> = imports.iter().filter(|m| !JVM_FLOOR_IMPORTS.contains(&m.as_str())).collect();
    assert!(above.is_empty(), "src/jvm imports {above:?}; the JVM floor may import only {JVM_FLOOR_IMPORTS:?}");
}

/// What only src/jvm spells: a class file's magic (one class-file reader), the JDK lookup (one
/// `java_bin`) and the class-data-sharing archive flags. Each is (the needle, whether it is
/// searched in code with strings and comments removed, or in the text as written).
const JVM_ONLY: &[(&str, bool)] = &[
    ("0xcafe_babe", true),
    ("0xcafebabe", true),
    ("fn java_bin", true),
    ("\"JAVA_HOME\")", false),
    ("-XX:SharedArchiveFile", false),
    ("-XX:ArchiveClassesAtExit", false),
];

/// `path: needle` for each file of `files` outside src/jvm that spells a JVM_ONLY needle.
fn java_outside_the_jvm_floor(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in files.iter().filter(|(rel, _)| !rel.starts_with("jvm/")) {
        let code = code_only(text).to_lowercase();
        for (needle, in_code) in JVM_ONLY {
            let hit = if *in_code { code.contains(needle) } else { text.contains(needle) };
            if hit {
                found.push(format!("src/{rel}: {needle}"));
            }
        }
    }
    found
}

#[test]
fn class_files_the_jdk_and_cds_flags_are_reached_through_the_jvm_floor() {
    let found = java_outside_the_jvm_floor(&sources());
    assert!(found.is_empty(), "JVM primitives outside src/jvm (use crate::jvm):\n{}", found.join("\n"));
}

#[test]
fn the_jvm_check_sees_a_planted_reader_lookup_and_flag() {
    let f = |rel: &str, text: &str| vec![(rel.to_string(), text.to_string())];
    for planted in [
        "fn magic(r: &mut R) -> bool { r.u4() == 0xCAFE_BABE }",
        "pub fn java_bin() -> PathBuf { todo!() }",
        "fn h() { std::env::var_os(\"JAVA_HOME\"); }",
        "fn a() -> String { format!(\"-XX:SharedArchiveFile={}\", p) }",
    ] {
        assert_eq!(java_outside_the_jvm_floor(&f("build/x.rs", planted)).len(), 1, "{planted}");
        assert!(java_outside_the_jvm_floor(&f("jvm/x.rs", planted)).is_empty(), "{planted}");
    }
    // A word in a comment or a message is not a reader.
    assert!(java_outside_the_jvm_floor(&f("build/x.rs", "// 0xCAFEBABE\nfn f() { e(\"fn java_bin\"); }")).is_empty());
}

#[test]
fn the_flags_module_holds_no_logic() {
    let files: Vec<(String, String)> = sources().into_iter().filter(|(rel, _)| rel.starts_with("cli/")).collect();
    assert!(files.iter().any(|(rel, _)| rel == "cli/mod.rs"), "src/cli/mod.rs not found");
    // Test code (`#[cfg(test)]` items, and the files `#[cfg(test)] mod x;` names) may hold functions.
    let mut test_files = BTreeSet::new();
    let mut shipped = Vec::new();
    for (rel, text) in &files {
        let (kept, tests) = without_test_code(&code_only(text));
        test_files.extend(tests.into_iter().map(|t| format!("cli/{t}.rs")));
        shipped.push((rel, kept));
    }
    for (rel, code) in shipped.iter().filter(|(rel, _)| !test_files.contains(rel.as_str())) {
        for word in ["fn ", "impl ", "std::fs", "std::process"] {
            assert!(!code.contains(word), "src/{rel} holds `{word}`: flags only, the logic belongs in src/cmd/");
        }
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

/// Where a raw read, open or lock may still be written outside src/fsx: nowhere any more (verify,
/// scenarios and hosts were the last). Kept so the check's exception path stays tested; never add to it.
const NOT_YET_ON_FSX: &[&str] = &[];

/// Files outside src/fsx that may still call `libc::flock`: none (the port-block lock moved onto fsx).
/// This list must shrink to nothing; never add to it.
const FLOCK_NOT_YET_ON_FSX: &[&str] = &[];

/// The raw calls that bypass fsx's guarded reader (regular file only, a cap, never blocking):
/// reading a whole file, opening one for reading, and okp's one lock.
const RAW_IO: &[&str] = &["fs::read(", "read_to_string(", "File::open(", ".read(true)", "libc::flock"];

/// `code` (already `code_only`) without the items under `#[cfg(test)]`, and the names of the
/// modules declared there without a body (`#[cfg(test)] mod tests;`: a file that is test code).
fn without_test_code(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut test_files = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(ATTR) {
        out.push_str(&rest[..at]);
        let item = &rest[at + ATTR.len()..];
        // The item ends at its first `;` outside brackets, or at the end of its first block.
        let (mut depth, mut end) = (0i32, item.len());
        for (k, ch) in item.char_indices() {
            match ch {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                '{' if depth == 0 => {
                    let mut braces = 0;
                    for (m, b) in item[k..].char_indices() {
                        match b {
                            '{' => braces += 1,
                            '}' => braces -= 1,
                            _ => {}
                        }
                        if braces == 0 {
                            end = k + m + 1;
                            break;
                        }
                    }
                    break;
                }
                _ => {}
            }
        }
        let head: Vec<&str> = item[..end].split_whitespace().collect();
        if let Some(name) = head.windows(2).find(|w| w[0] == "mod").map(|w| w[1]) {
            if let Some(name) = name.strip_suffix(';') {
                test_files.push(name.to_string());
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_files)
}

/// Every .rs file under src/ (relative path, text).
fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().and_then(|x| x.to_str()) == Some("rs") {
                let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
                files.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// The raw calls in the non-test code of `files` outside src/fsx and outside `allowed`, as
/// `path: call` lines.
fn raw_io_outside_fsx(files: &[(String, String)], allowed: &[&str]) -> Vec<String> {
    shipped_calls_outside(files, RAW_IO, "fsx/", allowed)
}

/// Where shipped code (test code left out) outside `home` and `allowed` writes one of `calls`.
fn shipped_calls_outside(files: &[(String, String)], calls: &[&str], home: &str, allowed: &[&str]) -> Vec<String> {
    let mut code = Vec::new();
    let mut test_files = BTreeSet::new();
    for (rel, text) in files {
        let (kept, tests) = without_test_code(&code_only(text));
        // `mod x;` in a/mod.rs or a.rs names a/x.rs (or a/x/mod.rs).
        let dir = rel.strip_suffix("mod.rs").map(str::to_string).unwrap_or_else(|| rel.replace(".rs", "/"));
        let dir = if rel == "lib.rs" || rel == "main.rs" { String::new() } else { dir };
        for t in tests {
            test_files.insert(format!("{dir}{t}.rs"));
            test_files.insert(format!("{dir}{t}/"));
        }
        code.push((rel, kept));
    }
    let mut found = Vec::new();
    for (rel, kept) in code {
        let is_test = test_files.iter().any(|t| rel == t || (t.ends_with('/') && rel.starts_with(t.as_str())));
        if rel.starts_with(home) || is_test || allowed.iter().any(|a| rel == *a || rel.starts_with(a)) {
            continue;
        }
        for call in calls {
            if kept.contains(call) {
                found.push(format!("src/{rel}: {call}"));
            }
        }
    }
    found
}

/// The macros that write to stdout or stderr directly; only src/out.rs may use them (`out::print`,
/// `note`, `block`, `error`), so every message gets the same prefix, escaping and colour rule.
const RAW_OUTPUT: &[&str] = &["eprintln!", "eprint!", "println!", "print!("];

#[test]
fn messages_are_written_through_out_only() {
    let found = shipped_calls_outside(&sources(), RAW_OUTPUT, "out.rs", &[]);
    assert!(
        found.is_empty(),
        "output written around src/out.rs (use out::print/note/block/error):\n{}",
        found.join("\n")
    );
    let planted = vec![("observers/x.rs".to_string(), "fn f() { eprintln!(\"okp: hi\"); }".to_string())];
    assert!(!shipped_calls_outside(&planted, RAW_OUTPUT, "out.rs", &[]).is_empty(), "a planted eprintln! is seen");
}

#[test]
fn inputs_are_read_and_locks_taken_through_fsx_only() {
    let found = raw_io_outside_fsx(&sources(), NOT_YET_ON_FSX);
    assert!(
        found.is_empty(),
        "raw reads, opens or locks outside src/fsx (read through fsx::read::input/text/open_input, lock \
         through fsx::lock_file):\n{}",
        found.join("\n")
    );
    // flock has no exception left, not even where raw reads still have one.
    let flocks: Vec<String> = raw_io_outside_fsx(&sources(), FLOCK_NOT_YET_ON_FSX)
        .into_iter()
        .filter(|l| l.ends_with("libc::flock"))
        .collect();
    assert!(flocks.is_empty(), "flock outside src/fsx (take locks through fsx::lock_file):\n{}", flocks.join("\n"));
}

#[test]
fn the_raw_io_check_sees_a_planted_call_and_ignores_tests_and_text() {
    let planted = |body: &str| vec![("observers/x.rs".to_string(), body.to_string())];
    for call in [
        "fn f() { let _ = std::fs::read_to_string(p); }",
        "fn f() { let _ = std::fs::read(p); }",
        "fn f() { let _ = File::open(p); }",
        "fn f() { let _ = OpenOptions::new().read(true).open(p); }",
        "fn f() { unsafe { libc::flock(fd, 2) }; }",
        // Code after a test module is still code.
        "#[cfg(test)]\nmod tests { fn t() {} }\nfn f() { let _ = std::fs::read(p); }",
        // A test-only constant ends at its `;`, not at the next block.
        "impl T {\n #[cfg(test)]\n const A: [u8; 2] = [1, 2];\n fn f() { let _ = std::fs::read(p); }\n}",
    ] {
        assert_eq!(raw_io_outside_fsx(&planted(call), &[]).len(), 1, "not seen: {call}");
    }
    for fine in [
        "#[cfg(test)]\nmod tests {\n fn t() { let _ = std::fs::read_to_string(p); let c = '{'; }\n}",
        "fn f() { note(\"std::fs::read(\"); } // File::open(",
        "/* libc::flock */ fn f() { let s = r#\"File::open(\"#; }",
    ] {
        assert!(raw_io_outside_fsx(&planted(fine), &[]).is_empty(), "seen in tests or text: {fine}");
    }
    // A test module in its own file (`#[cfg(test)] mod tests;`) is test code too.
    let files = vec![
        ("bundle/attest/mod.rs".to_string(), "#[cfg(test)]\nmod tests;\n".to_string()),
        ("bundle/attest/tests.rs".to_string(), "fn t() { let _ = std::fs::read(p); }".to_string()),
    ];
    assert!(raw_io_outside_fsx(&files, &[]).is_empty());
    // The allowlist and src/fsx are excluded, nothing else.
    let at = |rel: &str| vec![(rel.to_string(), "fn f() { let _ = std::fs::read(p); }".to_string())];
    assert!(raw_io_outside_fsx(&at("fsx/read.rs"), &[]).is_empty());
    assert!(raw_io_outside_fsx(&at("hosts/mod.rs"), &["hosts/"]).is_empty());
    assert_eq!(raw_io_outside_fsx(&at("hosts/mod.rs"), NOT_YET_ON_FSX).len(), 1);
    assert_eq!(raw_io_outside_fsx(&at("clusters.rs"), NOT_YET_ON_FSX).len(), 1);
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
/// ninety methods, and the class-file reader one 1452-line file beside a second reader. A file
/// under src/cluster or src/jvm past 600 lines holds more than one concern: split it.
#[test]
fn no_cluster_or_jvm_file_exceeds_600_lines() {
    const MAX: usize = 600;
    let jvm =
        sources().into_iter().filter(|(rel, _)| rel.starts_with("jvm/")).map(|(rel, t)| (format!("src/{rel}"), t));
    let long: Vec<String> = cluster_files()
        .into_iter()
        .chain(jvm)
        .map(|(p, text)| (p.clone(), text.lines().count()))
        .filter(|(_, n)| *n > MAX)
        .map(|(p, n)| format!("{p}: {n} lines"))
        .collect();
    assert!(long.is_empty(), "files over {MAX} lines (split them by concern):\n{}", long.join("\n"));
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

/// One module convention: a module with children is a folder with a `mod.rs`, never `X.rs` beside
/// an `X/` folder, at any depth of src/.
#[test]
fn no_module_file_sits_beside_its_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut both = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.with_extension("rs").is_file() {
                    both.push(p.strip_prefix(&src).unwrap().display().to_string());
                }
                stack.push(p);
            }
        }
    }
    both.sort();
    assert!(both.is_empty(), "modules written both ways (src/X.rs beside src/X/): {both:?}; move X.rs to X/mod.rs");
}

/// For each module folder (a directory with mod.rs) among `files` (path under src/, text): the
/// import graph between its child modules, drawn from `super::X` (in a child's own file),
/// `crate::<folder path>::X` (anywhere in the child), and names the folder's mod.rs re-exports
/// from a child (`pub use x::Thing`, then `super::Thing`). The folder's own mod.rs is the
/// parent, not a node: it declares and re-exports its children.
fn folder_graphs(files: &[(String, String)]) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut out: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let folders: BTreeSet<String> =
        files.iter().filter_map(|(rel, _)| rel.strip_suffix("mod.rs").map(str::to_string)).collect();
    let use_re = regex::Regex::new(r"pub(?:\([^)]*\))?\s+use\s+(?:self::)?(\w+)::(\{[^}]*\}|[\w:]+)").unwrap();
    let super_re = regex::Regex::new(r"(?:^|[^:\w])super::(\w+)").unwrap();
    for folder in &folders {
        let child_of = |rel: &str| -> Option<String> {
            let rest = rel.strip_prefix(folder.as_str())?;
            if rest == "mod.rs" {
                return None;
            }
            Some(rest.split('/').next().unwrap().trim_end_matches(".rs").to_string())
        };
        let children: BTreeSet<String> = files.iter().filter_map(|(rel, _)| child_of(rel)).collect();
        let mod_rs = files.iter().find(|(rel, _)| *rel == format!("{folder}mod.rs")).map(|(_, t)| code_only(t));
        // Names the parent re-exports from a child: `pub use child::{a, b as c}` / `pub use child::a;`.
        let mut reexport: BTreeMap<String, String> = BTreeMap::new();
        for c in use_re.captures_iter(mod_rs.as_deref().unwrap_or("")) {
            if !children.contains(&c[1]) {
                continue;
            }
            for item in c[2].trim_matches(|ch| ch == '{' || ch == '}').split(',') {
                let item = item.trim();
                let name = item.rsplit(" as ").next().unwrap_or(item).rsplit("::").next().unwrap_or(item).trim();
                if !name.is_empty() && name != "*" {
                    reexport.insert(name.to_string(), c[1].to_string());
                }
            }
        }
        let crate_path = format!("crate::{}", folder.trim_end_matches('/').replace('/', "::"));
        let crate_re = regex::Regex::new(&format!(r"{}::(\w+)", regex::escape(&crate_path))).unwrap();
        let mut g: BTreeMap<String, BTreeSet<String>> = children.iter().map(|c| (c.clone(), BTreeSet::new())).collect();
        for (rel, text) in files {
            let Some(me) = child_of(rel) else { continue };
            // Tests may reach a sibling's test helpers: only the code shipped counts.
            let code = without_test_code(&code_only(text)).0;
            let direct = !rel[folder.len()..].contains('/');
            let mut names: Vec<String> = crate_re.captures_iter(&code).map(|c| c[1].to_string()).collect();
            if direct {
                names.extend(super_re.captures_iter(&code).map(|c| c[1].to_string()));
            }
            for n in names {
                let to = if children.contains(&n) { Some(n) } else { reexport.get(&n).cloned() };
                if let Some(to) = to.filter(|t| *t != me) {
                    g.get_mut(&me).unwrap().insert(to);
                }
            }
        }
        out.insert(folder.clone(), g);
    }
    out
}

/// The nodes of `g` that sit on a circle (Kahn's algorithm: what cannot be peeled off).
fn on_a_circle(g: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut remaining = g.clone();
    loop {
        let leaves: Vec<String> = remaining
            .iter()
            .filter(|(_, tos)| tos.iter().all(|t| !remaining.contains_key(t)))
            .map(|(k, _)| k.clone())
            .collect();
        if leaves.is_empty() {
            return remaining;
        }
        for l in leaves {
            remaining.remove(&l);
        }
    }
}

#[test]
fn no_circle_inside_a_module_folder() {
    let mut circles = Vec::new();
    for (folder, g) in folder_graphs(&sources()) {
        let c = on_a_circle(&g);
        if !c.is_empty() {
            circles.push(format!("src/{folder}:\n{}", show(&c)));
        }
    }
    assert!(circles.is_empty(), "child modules on an import circle inside their folder:\n{}", circles.join("\n"));
}

#[test]
fn the_folder_check_sees_a_planted_circle_through_super_crate_and_reexports() {
    let f = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let clean = vec![
        f("x/mod.rs", "mod a; mod b; pub use b::Thing;"),
        f("x/a.rs", "use super::b::f; use super::Thing;"),
        f("x/b.rs", "pub fn f() {} pub struct Thing; use super::Options;"),
    ];
    assert!(on_a_circle(&folder_graphs(&clean)["x/"]).is_empty());
    for (how, back) in
        [("super", "use super::a::g;"), ("crate path", "fn h() { crate::x::a::g(); }"), ("re-export", "use super::G;")]
    {
        let planted = vec![
            f("x/mod.rs", "mod a; mod b; pub use a::{g as G};"),
            f("x/a.rs", "use super::b::f; pub fn g() {}"),
            f("x/b.rs", &format!("pub fn f() {{}} {back}")),
        ];
        let c = on_a_circle(&folder_graphs(&planted)["x/"]);
        assert_eq!(c.keys().cloned().collect::<Vec<_>>(), ["a", "b"], "{how}: {c:?}");
    }
    // A grandchild reaching an uncle through the crate path counts for its child module.
    let deep = vec![
        f("x/mod.rs", "mod a; mod b;"),
        f("x/a/mod.rs", "mod inner;"),
        f("x/a/inner.rs", "fn k() { crate::x::b::f(); }"),
        f("x/b.rs", "use super::a::g;"),
    ];
    assert_eq!(on_a_circle(&folder_graphs(&deep)["x/"]).len(), 2);
}
