//! Hardening of the trees okp writes (issue "Hardening"): okp stays inside the
//! tree whatever its state files say, two okp commands never work on one tree
//! at once, a full disk or an unwritable directory leaves the tree as it was,
//! damaged state never panics, and no temporary file outlives the next command.
//!
//! Victims live next to the tree (`../victim`, `../d`); every test asserts
//! they keep their bytes.

use crate::common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const V: &str = "3.9.2";
const M: &str = "kraft";
const LOCK_MSG: &str = "is working on this tree; try again when it has finished";
const VICTIM: &[u8] = b"bytes okp must never touch\n";
const CONTROLLER_DIR: &str = "metadata/src/main/java/org/apache/kafka/controller";

fn okp_in(tree: &Path, args: &[&str]) -> Output {
    okp().args(args).arg("--source").arg(tree).output().unwrap()
}

fn apply(tree: &Path) -> Output {
    okp_in(tree, &["apply", "--mode", M])
}

/// A tree in a directory that also holds a file and an empty directory okp must never touch.
struct Site {
    dir: tempfile::TempDir,
    tree: PathBuf,
    victim: PathBuf,
    d: PathBuf,
}

/// The hooked tree with the patch set applied by okp, made once per build
/// directory (like `hooked_tree`) and copied by the tests that start from it.
fn applied_tree() -> PathBuf {
    let hooked = hooked_tree(V);
    let dir = hooked.with_file_name(format!("applied-{}", hooked.file_name().unwrap().to_string_lossy()));
    if dir.join(".okp/state.json").is_file() {
        return dir;
    }
    let staging = tempfile::tempdir_in(hooked.parent().unwrap()).unwrap();
    copy_into(&hooked, staging.path());
    let o = apply(staging.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = std::fs::rename(staging.path(), &dir);
    assert!(dir.join(".okp/state.json").is_file());
    dir
}

fn site() -> Site {
    site_from(&hooked_tree(V))
}

fn site_from(src: &Path) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    copy_into(src, &tree);
    let victim = dir.path().join("victim");
    std::fs::write(&victim, VICTIM).unwrap();
    let d = dir.path().join("d");
    std::fs::create_dir(&d).unwrap();
    Site { dir, tree, victim, d }
}

impl Site {
    fn applied() -> Site {
        site_from(&applied_tree())
    }

    fn assert_victims_untouched(&self) {
        assert_eq!(std::fs::read(&self.victim).unwrap(), VICTIM, "the file next to the tree was changed");
        assert!(self.d.is_dir(), "the directory next to the tree was removed");
    }
}

fn sha256_of(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut c = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    c.stdin.take().unwrap().write_all(bytes).unwrap();
    let o = c.wait_with_output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().to_string()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &serde_json::Value) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

/// Every file under `dir` (okp's own directory included) whose name ends in `.okp-tmp`.
fn okp_tmp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd {
        let e = e.unwrap();
        let ft = e.file_type().unwrap();
        if ft.is_dir() && e.file_name() != ".git" {
            out.extend(okp_tmp_files(&e.path()));
        } else if e.file_name().to_string_lossy().ends_with(".okp-tmp") {
            out.push(e.path());
        }
    }
    out
}

fn assert_exit_2_naming(o: &Output, what: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "expected a refusal (exit 2): {}", stderr(o));
    for w in what {
        assert!(stderr(o).contains(w), "stderr does not name `{w}`: {}", stderr(o));
    }
}

/// A full or read-only filesystem: the machine failed, not the input (exit 3, docs/exit-codes.md).
fn assert_io_failure(o: &Output, what: &[&str]) {
    assert_eq!(o.status.code(), Some(3), "expected exit 3: {}", stderr(o));
    for w in what {
        assert!(stderr(o).contains(w), "stderr does not name `{w}`: {}", stderr(o));
    }
}

// ---- 1. paths in okp's state files, the patch set and the matrix are confined to their tree ----

#[test]
fn revert_refuses_a_state_that_names_paths_outside_the_tree() {
    let victim_sha = sha256_of(VICTIM);
    type Plant<'a> = Box<dyn Fn(&Site, &mut serde_json::Value) + 'a>;
    let cases: Vec<(&str, Plant, String)> = vec![
        (
            "relative file",
            Box::new(|_, st| {
                st["files"][1] = serde_json::json!({"path": "../victim", "created": true, "after_sha256": victim_sha});
            }),
            r#"state.json: files[1].path "../victim" leaves the tree"#.into(),
        ),
        (
            "absolute file",
            Box::new(|s, st| {
                let abs = s.victim.display().to_string();
                st["files"][1] = serde_json::json!({"path": abs, "created": true, "after_sha256": victim_sha});
            }),
            "files[1].path \"/".into(),
        ),
        (
            "directory",
            Box::new(|_, st| st["created_dirs"] = serde_json::json!(["../d"])),
            r#"state.json: created_dirs[0] "../d" leaves the tree"#.into(),
        ),
    ];
    for (name, plant, msg) in cases {
        let s = Site::applied();
        let sp = s.tree.join(".okp/state.json");
        let mut st = read_json(&sp);
        plant(&s, &mut st);
        write_json(&sp, &st);
        let before = snapshot(&s.tree);
        for args in [&["revert"][..], &["revert", "--force"][..], &["status"][..]] {
            let o = okp_in(&s.tree, args);
            assert_exit_2_naming(&o, &[&msg, "leaves the tree"]);
            s.assert_victims_untouched();
            assert_eq!(snapshot(&s.tree), before, "{name} {args:?}: the tree changed");
        }
    }
}

#[test]
fn status_refuses_a_planted_journal_that_names_paths_outside_the_tree() {
    let victim_sha = sha256_of(VICTIM);
    let evil = b"planted bytes\n";
    let cases = [
        (
            serde_json::json!({"op": "apply", "txn": "t", "created_dirs": [],
                "files": [{"path": "../victim", "created": true, "after_sha256": victim_sha}]}),
            r#".okp/journal.json: files[0].path "../victim" leaves the tree"#,
        ),
        (
            // Restoring a "pristine copy" would overwrite the victim with the planted bytes.
            serde_json::json!({"op": "revert", "txn": "t", "created_dirs": [],
                "files": [{"path": "../victim", "created": false,
                           "before_sha256": sha256_of(evil), "after_sha256": victim_sha}]}),
            r#".okp/journal.json: files[0].path "../victim" leaves the tree"#,
        ),
        (
            serde_json::json!({"op": "apply", "txn": "t", "files": [], "created_dirs": ["../d"]}),
            r#".okp/journal.json: created_dirs[0] "../d" leaves the tree"#,
        ),
    ];
    for (journal, msg) in cases {
        let s = site();
        write_json(&s.tree.join(".okp/journal.json"), &journal);
        std::fs::create_dir_all(s.tree.join(".okp/pristine")).unwrap();
        std::fs::write(s.tree.join(".okp/victim"), evil).unwrap();
        let before = snapshot(&s.tree);
        for args in [&["status"][..], &["revert"][..], &["apply", "--mode", M][..]] {
            let o = okp_in(&s.tree, args);
            assert_exit_2_naming(&o, &[msg]);
            s.assert_victims_untouched();
            assert_eq!(snapshot(&s.tree), before, "{args:?}: the tree changed");
            assert!(s.tree.join(".okp/journal.json").exists(), "{args:?}: the journal went");
        }
    }
}

#[test]
fn a_symlink_on_the_way_is_refused() {
    // A directory of the tree that is a symlink to a directory outside it.
    let s = site();
    let outside = s.dir.path().join("outside");
    let cluster = s.tree.join("core/src/main/scala/kafka/cluster");
    std::fs::rename(&cluster, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &cluster).unwrap();
    let outside_before = snapshot(&outside);
    let o = apply(&s.tree);
    assert_exit_2_naming(&o, &["core/src/main/scala/kafka/cluster", "symlink"]);
    assert_eq!(snapshot(&outside), outside_before, "okp wrote through the symlink");
    assert!(!s.tree.join("core/src/main/scala/kafka/observer").exists(), "okp wrote in the tree");
    assert!(!s.tree.join(".okp").join("journal.json").exists());

    // okp's own directory as a symlink to a directory outside.
    let s = site();
    let elsewhere = s.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, s.tree.join(".okp")).unwrap();
    let before = snapshot(&s.tree);
    for args in [&["apply", "--mode", M][..], &["status"][..], &["revert"][..]] {
        let o = okp_in(&s.tree, args);
        assert_exit_2_naming(&o, &[".okp", "symlink"]);
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{args:?} wrote through .okp");
        assert_eq!(snapshot(&s.tree), before);
    }
}

#[test]
fn a_patch_set_with_paths_outside_its_trees_is_refused() {
    let s = site();
    let patches = s.dir.path().join("patches");
    std::fs::create_dir(&patches).unwrap();
    copy_into(&repo_root().join("patches"), &patches);
    let edits = patches.join("edits.yaml");
    let good = std::fs::read_to_string(&edits).unwrap();
    let before = snapshot(&s.tree);
    std::fs::write(s.dir.path().join("secret"), "class Secret\n").unwrap();
    let cases = [
        (
            good.replacen("path: core/src/main/scala/kafka/observer/ObserverIds.scala", "path: ../escape.scala", 1),
            r#"new_files[0].path "../escape.scala" leaves the tree"#,
        ),
        (
            good.replacen(
                "source: common/core/src/main/scala/kafka/observer/ObserverIds.scala",
                "source: ../secret",
                1,
            ),
            r#"new_files[0].source "../secret" leaves the tree"#,
        ),
    ];
    for (text, msg) in cases {
        assert_ne!(text, good);
        std::fs::write(&edits, text).unwrap();
        let o = okp()
            .arg("--patches")
            .arg(&patches)
            .args(["apply", "--mode", M, "--source"])
            .arg(&s.tree)
            .output()
            .unwrap();
        assert_exit_2_naming(&o, &[msg]);
        assert!(!s.dir.path().join("escape.scala").exists());
        assert_eq!(snapshot(&s.tree), before);
        assert!(!s.tree.join(".okp").exists());
    }
}

#[test]
fn a_matrix_source_directory_outside_the_tree_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo_root().join("versions.yaml")).unwrap();
    let line = format!("      core: org.apache.kafka:kafka_2.13:{V}\n");
    assert!(text.contains(&line));
    let bad = text.replacen(&line, &format!("{line}      ../x: org.apache.kafka:kafka_2.13:{V}\n"), 1);
    let f = dir.path().join("versions.yaml");
    std::fs::write(&f, bad).unwrap();
    let o = okp().arg("--versions").arg(&f).arg("versions").output().unwrap();
    assert_exit_2_naming(&o, &[r#"sources key "../x" leaves the tree"#]);
}

// ---- 4. damaged state fields are refused, never a panic ----

#[test]
fn damaged_state_fields_are_refused_without_a_panic() {
    let cases: [(&str, serde_json::Value, &str); 6] = [
        ("patch_set_hash", serde_json::json!("abc"), "patch_set_hash"),
        // A multibyte character across byte 16.
        ("patch_set_hash", serde_json::json!(format!("0123456789abcde€{}", "0".repeat(46))), "patch_set_hash"),
        ("schema", serde_json::json!(99), "schema 99"),
        ("release", serde_json::json!("3.9"), "release"),
        // mode is typed (Mode): serde names the value and the two it accepts.
        ("mode", serde_json::json!("zookeeper"), "unknown variant `zookeeper`, expected `zk` or `kraft`"),
        ("okp_version", serde_json::json!("0.1.0\u{1b}[2J"), "okp_version"),
    ];
    for (field, value, msg) in cases {
        let s = Site::applied();
        let sp = s.tree.join(".okp/state.json");
        let mut st = read_json(&sp);
        st[field] = value.clone();
        write_json(&sp, &st);
        let before = snapshot(&s.tree);
        for args in [&["status"][..], &["revert"][..], &["apply", "--mode", M][..]] {
            let o = okp_in(&s.tree, args);
            assert_exit_2_naming(&o, &["state.json", msg]);
            assert_eq!(snapshot(&s.tree), before, "{field}={value} {args:?}: the tree changed");
        }
    }
}

// ---- 5. no temporary file outlives the next command ----

#[test]
fn the_next_command_removes_the_temp_files_a_kill_left_and_only_those() {
    let pristine = snapshot(&hooked_tree(V));
    let s = Site::applied();
    // A revert killed midway: its journal, and temp files where okp was writing.
    let st = read_json(&s.tree.join(".okp/state.json"));
    let journal = serde_json::json!({"op": "revert", "txn": st["txn"], "files": st["files"],
        "created_dirs": st["created_dirs"]});
    write_json(&s.tree.join(".okp/journal.json"), &journal);
    let planted = [
        ".okp/..gitignore.okp-tmp".to_string(),
        ".okp/.journal.json.okp-tmp".to_string(),
        ".okp/.state.json.okp-tmp".to_string(),
        ".okp/pristine/core/src/main/scala/kafka/cluster/.Partition.scala.okp-tmp".to_string(),
        format!("{CONTROLLER_DIR}/.ObserverReplicas.java.okp-tmp"),
        "core/src/main/scala/kafka/cluster/.Partition.scala.okp-tmp".to_string(),
    ];
    // Names okp never makes for this tree: not its to remove.
    let foreign = [
        "core/src/main/scala/kafka/cluster/.Notes.scala.okp-tmp",
        "core/src/main/scala/kafka/cluster/notes.okp-tmp",
        "core/.Partition.scala.okp-tmp",
    ];
    for p in planted.iter().map(String::as_str).chain(foreign) {
        std::fs::write(s.tree.join(p), "partial").unwrap();
    }
    let o = okp_in(&s.tree, &["status"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let left: Vec<String> = okp_tmp_files(&s.tree)
        .iter()
        .map(|p| p.strip_prefix(&s.tree).unwrap().to_string_lossy().into_owned())
        .collect();
    let mut foreign_sorted: Vec<String> = foreign.iter().map(|s| s.to_string()).collect();
    foreign_sorted.sort();
    let mut left_sorted = left.clone();
    left_sorted.sort();
    assert_eq!(left_sorted, foreign_sorted, "okp's temp files must go, and only those");
    let mut now = snapshot(&s.tree);
    for f in foreign {
        now.remove(f);
    }
    assert_eq!(now, pristine, "the interrupted revert was not finished");
}

/// OKP_TEST_ABORT_IN_WRITE=N aborts the process (as a kill would) while the
/// N-th file write has its bytes in the temp file but before the rename.
fn aborted_in_each_write(op: &str, start_applied: bool, at_least: usize) {
    let pristine = snapshot(&hooked_tree(V));
    let full = snapshot(&applied_tree());
    let mut aborted = 0;
    for n in 1..=40 {
        let t = copy_all(&if start_applied { applied_tree() } else { hooked_tree(V) });
        let args: &[&str] = if op == "apply" { &["apply", "--mode", M] } else { &["revert"] };
        let o = okp().args(args).arg("--source").arg(t.path()).env("OKP_TEST_ABORT_IN_WRITE", n.to_string()).output();
        let o = o.unwrap();
        if o.status.success() {
            break;
        }
        aborted += 1;
        assert!(o.status.code().is_none(), "{op} write {n}: should have been aborted: {}", stderr(&o));
        assert!(!okp_tmp_files(t.path()).is_empty(), "{op} write {n}: the abort left no temp file to test with");
        let s = okp_in(t.path(), &["status"]);
        assert!(s.status.success(), "{op} write {n}: {}", stderr(&s));
        assert_eq!(okp_tmp_files(t.path()), Vec::<PathBuf>::new(), "{op} write {n}: temp files left");
        let now = snapshot(t.path());
        assert!(now == pristine || now == full, "{op} write {n}: half-patched after recovery");
        assert_eq!(t.path().join(".okp/state.json").exists(), now == full, "{op} write {n}: state disagrees");
    }
    assert!(aborted >= at_least, "{op}: only {aborted} writes were interrupted");
}

#[test]
fn a_kill_inside_any_apply_write_leaves_no_temp_file_after_the_next_command() {
    aborted_in_each_write("apply", false, 5);
}

#[test]
fn a_kill_inside_any_revert_write_leaves_no_temp_file_after_the_next_command() {
    // Revert writes one file, its journal: the pristine copies are renamed back.
    aborted_in_each_write("revert", true, 1);
}

// ---- 2. one okp at a time per tree ----

/// Holds `<tree>/.okp/lock` with util-linux flock(1), as a running okp
/// would: a shell opens the file, locks it and becomes `sleep` holding it, so
/// killing that one process lets go.
struct Holder(std::process::Child);

impl Holder {
    fn start(tree: &Path, pid_text: &str) -> Holder {
        use std::io::BufRead;
        let dir = tree.join(".okp");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(".gitignore"), "*\n").unwrap();
        std::fs::write(dir.join("lock"), pid_text).unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec 9<>"$1" && flock -x 9 && echo held && exec sleep 120"#)
            .arg("sh")
            .arg(dir.join("lock"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line, "held\n", "flock(1) did not take the lock");
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_held_lock_refuses_every_command_and_recovery_waits_for_it() {
    let pristine = snapshot(&hooked_tree(V));
    // An apply killed just after its journal is written (the first step after the pristine copies,
    // whose number grows with the files the patch set edits): its journal waits for recovery.
    let s = (6..60)
        .map(|n| {
            let s = site();
            let o = okp()
                .args(["apply", "--mode", M, "--source"])
                .arg(&s.tree)
                .env("OKP_TEST_ABORT_AFTER", n.to_string())
                .output()
                .unwrap();
            assert!(o.status.code().is_none(), "apply finished before step {n}");
            s
        })
        .find(|s| s.tree.join(".okp/journal.json").exists())
        .expect("no step of the apply wrote its journal");
    let before = snapshot(&s.tree);
    {
        let _h = Holder::start(&s.tree, "4242\n");
        for args in
            [&["status"][..], &["revert"][..], &["apply", "--mode", M][..], &["apply", "--mode", M, "--dry-run"][..]]
        {
            let o = okp_in(&s.tree, args);
            assert_exit_2_naming(
                &o,
                &["another okp (pid 4242) is working on this tree; try again when it has finished"],
            );
            assert_eq!(snapshot(&s.tree), before, "{args:?}: recovery ran without the lock");
            assert!(s.tree.join(".okp/journal.json").exists());
        }
    }
    // The holder is gone (its lock file stays, with its pid): the lock is free.
    assert!(s.tree.join(".okp/lock").exists());
    let o = okp_in(&s.tree, &["status"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("rolled back an interrupted apply"), "{}", stderr(&o));
    assert_eq!(snapshot(&s.tree), pristine);
}

#[test]
fn the_lock_leaves_a_clean_git_tree_clean() {
    let t = copy_all(&hooked_tree(V));
    git_init_commit(t.path());
    let clean = |when: &str| {
        let st = git_in(t.path(), &["status", "--porcelain", "--untracked-files=all"]);
        assert!(st.stdout.is_empty(), "{when}: {}", String::from_utf8_lossy(&st.stdout));
    };
    assert!(okp_in(t.path(), &["status"]).status.success());
    clean("after status");
    assert!(!t.path().join(".okp").exists(), "status left .okp behind in a pristine tree");
    assert!(okp_in(t.path(), &["apply", "--mode", M, "--dry-run"]).status.success());
    clean("after a dry run");
    for n in ["1", "2"] {
        let o = okp().args(["apply", "--mode", M, "--source"]).arg(t.path()).env("OKP_TEST_ABORT_AFTER", n).output();
        assert!(o.unwrap().status.code().is_none());
        let st = git_in(t.path(), &["status", "--porcelain", "--untracked-files=all", "--", ".okp"]);
        assert!(st.stdout.is_empty(), "killed at step {n}: {}", String::from_utf8_lossy(&st.stdout));
        assert!(okp_in(t.path(), &["status"]).status.success());
        clean("after recovery");
    }
}

/// Two okp processes started together on one tree, 30 times: each either
/// succeeds or is refused with the lock message, and the tree ends pristine or
/// fully patched with a state (and pristine copies) that says so.
fn race(a: &[&str], b: &[&str], start_applied: bool) {
    let pristine = snapshot(&hooked_tree(V));
    let full = snapshot(&applied_tree());
    let bin = env!("CARGO_BIN_EXE_okp");
    let name = format!("{} + {}", a[0], b[0]);
    let mut refused = 0;
    // How long `a` alone takes: b starts at a different point of a's run each time, from at once
    // to a little after a's usual end, so some runs overlap whatever the machine's load.
    let alone = {
        let t = copy_all(&if start_applied { applied_tree() } else { hooked_tree(V) });
        let t0 = std::time::Instant::now();
        let _ = Command::new(bin).args(a).arg("--source").arg(t.path()).output().unwrap();
        t0.elapsed()
    };
    for i in 0..30 {
        let t = copy_all(&if start_applied { applied_tree() } else { hooked_tree(V) });
        let spawn = |args: &[&str]| {
            Command::new(bin)
                .args(args)
                .arg("--source")
                .arg(t.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let pa = spawn(a);
        std::thread::sleep(alone.mul_f64(f64::from(i % 10) / 8.0));
        let pb = spawn(b);
        for o in [pa.wait_with_output().unwrap(), pb.wait_with_output().unwrap()] {
            match o.status.code() {
                Some(0) => {}
                Some(2) if stderr(&o).contains(LOCK_MSG) => refused += 1,
                _ => panic!("{name} #{i}: neither success nor the lock message: {:?} {}", o.status, stderr(&o)),
            }
        }
        let now = snapshot(t.path());
        let okp = t.path().join(".okp");
        assert!(!okp.join("journal.json").exists(), "{name} #{i}: a journal was left");
        assert_eq!(okp_tmp_files(t.path()), Vec::<PathBuf>::new(), "{name} #{i}: temp files left");
        if now == full {
            assert!(okp.join("state.json").exists(), "{name} #{i}: patched but no state");
            for (f, bytes) in &pristine {
                if now[f] != *bytes {
                    let copy = std::fs::read(okp.join("pristine").join(f));
                    assert_eq!(copy.ok().as_ref(), Some(bytes), "{name} #{i}: pristine copy of {f} lost");
                }
            }
        } else {
            assert!(now == pristine, "{name} #{i}: half-patched");
            assert!(!okp.join("state.json").exists(), "{name} #{i}: pristine but a state says applied");
        }
    }
    eprintln!("{name}: {refused} of 30 runs had a loser, refused with the lock message");
    assert!(refused > 0, "{name}: no run raced, so this proved nothing");
}

#[test]
fn apply_and_status_at_once() {
    race(&["apply", "--mode", M], &["status"], false);
}

#[test]
fn apply_and_apply_at_once() {
    race(&["apply", "--mode", M], &["apply", "--mode", M], false);
}

#[test]
fn revert_and_status_at_once() {
    race(&["revert"], &["status"], true);
}

// ---- 3. unwritable directories and full disks are found before the first write ----

/// A mount made for one test and undone when it ends; None (with a visible
/// message) where the sandbox does not allow mounting.
struct Mount(PathBuf);

impl Mount {
    fn try_new(args: &[&str], at: &Path, then: Option<&[&str]>) -> Option<Mount> {
        let o = Command::new("mount").args(args).arg(at).output();
        match o {
            Ok(o) if o.status.success() => {}
            other => {
                eprintln!("SKIPPED: cannot mount here ({other:?}); this case is not tested on this machine");
                return None;
            }
        }
        let m = Mount(at.to_path_buf());
        if let Some(then) = then {
            let o = Command::new("mount").args(then).arg(at).output().unwrap();
            if !o.status.success() {
                eprintln!("SKIPPED: cannot remount read-only here: {}", stderr(&o));
                return None;
            }
        }
        Some(m)
    }

    fn read_only_bind(dir: &Path) -> Option<Mount> {
        Mount::try_new(&["--bind", &dir.display().to_string()], dir, Some(&["-o", "remount,bind,ro"]))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_write_failing_with_enospc_midway_is_rolled_back_before_okp_exits() {
    // Stand-in for a disk that fills up during apply (the free-space preflight
    // stops a disk that is already full): OKP_TEST_ENOSPC_AT_WRITE=N makes
    // okp's N-th file write fail with ENOSPC after part of the bytes reached its temp file.
    let pristine = snapshot(&hooked_tree(V));
    let mut failed = 0;
    for n in 1..=40 {
        let t = copy_all(&hooked_tree(V));
        let o = okp()
            .args(["apply", "--mode", M, "--source"])
            .arg(t.path())
            .env("OKP_TEST_ENOSPC_AT_WRITE", n.to_string())
            .output()
            .unwrap();
        if o.status.success() {
            break;
        }
        failed += 1;
        assert_io_failure(&o, &["No space left on device", &t.path().display().to_string(), "rolled back"]);
        assert_eq!(snapshot(t.path()), pristine, "write {n}: the tree was not rolled back");
        assert_eq!(okp_tmp_files(t.path()), Vec::<PathBuf>::new(), "write {n}: temp files left");
        assert!(!t.path().join(".okp").exists(), "write {n}: .okp left behind");
    }
    assert!(failed >= 5, "only {failed} writes failed");
}

#[test]
fn a_read_only_directory_is_found_before_the_first_write() {
    let t = copy_all(&hooked_tree(V));
    let dir = t.path().join(CONTROLLER_DIR);
    let Some(_m) = Mount::read_only_bind(&dir) else { return };
    let before = snapshot(t.path());
    let o = apply(t.path());
    assert_io_failure(&o, &["Read-only file system", CONTROLLER_DIR, "nothing was changed"]);
    assert_eq!(snapshot(t.path()), before);
    assert_eq!(okp_tmp_files(t.path()), Vec::<PathBuf>::new());
    assert!(!t.path().join(".okp").exists(), ".okp left behind");
}

#[test]
fn a_read_only_tree_can_still_be_inspected_but_not_patched() {
    let t = copy_all(&hooked_tree(V));
    let Some(_m) = Mount::read_only_bind(t.path()) else { return };
    let o = okp_in(t.path(), &["status"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("pristine"));
    let o = okp_in(t.path(), &["apply", "--mode", M, "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = apply(t.path());
    assert_io_failure(&o, &["Read-only file system"]);
}

#[test]
fn a_filesystem_without_room_is_found_before_the_first_write() {
    let src = hooked_tree(V);
    let parent = tempfile::tempdir().unwrap();
    // Room for the tree and about 300 KiB: not for the patched files and the pristine copies.
    let tree_kib: u64 = snapshot(&src).values().map(|b| (b.len() as u64).div_ceil(4096) * 4).sum();
    let size = format!("size={}k", tree_kib + 300);
    let Some(_m) = Mount::try_new(&["-t", "tmpfs", "-o", &size, "tmpfs"], parent.path(), None) else { return };
    let tree = parent.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    copy_into(&src, &tree);
    let before = snapshot(&tree);
    let o = apply(&tree);
    assert_io_failure(&o, &["No space left on device", "nothing was changed"]);
    assert_eq!(snapshot(&tree), before);
    assert_eq!(okp_tmp_files(&tree), Vec::<PathBuf>::new());
    assert!(!tree.join(".okp").exists(), ".okp left behind");
}
