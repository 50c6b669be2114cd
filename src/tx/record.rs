//! The two files okp keeps in a tree's `.okp/`: `state.json` (the patch set
//! applied) and `journal.json` (what a running command is changing). Their
//! schema, their one writer (bytes; `tx` puts them on disk durably) and their
//! one reader, which takes nothing on trust: anyone can plant or edit these
//! files, so every field is validated and every path confined to the tree
//! (`model::confine`) before okp acts on any of it.
//!
//! Not here: acting on them (see `tx`).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::hash::is_sha256;
use crate::model::confine::{confine, STATE_DIR};
use crate::model::Mode;
use crate::version::KafkaVersion;

/// The schema of both files; a file with another is refused, never guessed at.
pub const SCHEMA: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileState {
    pub path: String,
    /// The file did not exist before apply.
    pub created: bool,
    /// Set exactly when the file existed before apply.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_sha256: Option<String>,
    pub after_sha256: String,
}

/// What `.okp/state.json` records about an applied patch set.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: u32,
    pub txn: String,
    pub okp_version: String,
    /// Written `3.9.2`; only that canonical spelling reads.
    pub release: KafkaVersion,
    /// Written `zk` or `kraft`.
    pub mode: Mode,
    pub family: String,
    pub patch_set_hash: String,
    /// The layers applied (`core`, `core+metrics`); empty in states written before layers existed (core).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub layers: String,
    pub files: Vec<FileState>,
    /// Directories apply created (deepest last), removed on revert when empty.
    pub created_dirs: Vec<String>,
    /// Edited upstream files that were not the release's own bytes (`--allow-modified`), each with
    /// both sha256; empty when every one was the release's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modified: Vec<String>,
    /// Why the files could not be compared with the release's (no sources jar, Maven unreachable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

impl State {
    /// The first 16 hex digits of the patch-set hash, for messages.
    pub fn short_hash(&self) -> &str {
        self.patch_set_hash.get(..16).unwrap_or(&self.patch_set_hash)
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum JournalOp {
    Apply,
    Revert,
}

/// Written before the first change to the tree and removed after the last:
/// while it exists, the tree may be half-changed and the next command must
/// finish the story (roll an apply back, a revert forward).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Journal {
    /// Absent in journals written before it existed, which are schema 1.
    #[serde(default = "schema_1")]
    pub schema: u32,
    pub op: JournalOp,
    pub txn: String,
    pub files: Vec<FileState>,
    pub created_dirs: Vec<String>,
}

fn schema_1() -> u32 {
    SCHEMA
}

/// `<root>/.okp/state.json` and `<root>/.okp/journal.json`.
pub fn state_path(root: &Path) -> PathBuf {
    root.join(STATE_DIR).join("state.json")
}

pub fn journal_path(root: &Path) -> PathBuf {
    root.join(STATE_DIR).join("journal.json")
}

pub fn to_bytes<T: Serialize>(v: &T) -> Vec<u8> {
    // Plain structs of strings, numbers and lists: serialising them cannot fail.
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// A record okp reads back, and how it checks itself.
trait Record: DeserializeOwned {
    /// What to tell the user when the file does not parse.
    fn damaged(path: &Path, root: &Path, e: &serde_json::Error) -> String;
    /// The first field that is wrong, as `field "value" why`.
    fn check(&self, root: &Path) -> std::result::Result<(), String>;
}

impl Record for State {
    fn damaged(path: &Path, root: &Path, e: &serde_json::Error) -> String {
        format!(
            "{} is damaged ({e}); okp will not guess what was applied. The pristine copies are in {}",
            path.display(),
            root.join(STATE_DIR).join("pristine").display()
        )
    }

    fn check(&self, root: &Path) -> std::result::Result<(), String> {
        // release and mode are typed: the parse already refused anything but `3.9.2` and zk/kraft.
        if !is_sha256(&self.patch_set_hash) {
            return Err(format!("patch_set_hash {:?} is not 64 lowercase hex digits", self.patch_set_hash));
        }
        for (i, m) in self.modified.iter().enumerate() {
            printable(&format!("modified[{i}]"), m)?;
        }
        if let Some(why) = &self.unchecked {
            printable("unchecked", why)?;
        }
        for (field, v) in
            [("txn", &self.txn), ("okp_version", &self.okp_version), ("family", &self.family), ("layers", &self.layers)]
        {
            printable(field, v)?;
        }
        check_changes(&self.files, &self.created_dirs, root)
    }
}

impl Record for Journal {
    fn damaged(path: &Path, root: &Path, e: &serde_json::Error) -> String {
        format!(
            "{} is damaged ({e}); restore the files from {} by hand",
            path.display(),
            root.join(STATE_DIR).join("pristine").display()
        )
    }

    fn check(&self, root: &Path) -> std::result::Result<(), String> {
        printable("txn", &self.txn)?;
        check_changes(&self.files, &self.created_dirs, root)
    }
}

/// The applied state of the tree at `root`, if any, validated.
pub fn read_state(root: &Path) -> Result<Option<State>> {
    read(&state_path(root), root)
}

/// The journal of an interrupted command, if any, validated.
pub fn read_journal(root: &Path) -> Result<Option<Journal>> {
    read(&journal_path(root), root)
}

fn read<T: Record>(path: &Path, root: &Path) -> Result<Option<T>> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::Tree { path: path.to_path_buf(), msg: "is a symlink; okp will not follow it".into() });
    }
    let bytes = match crate::fsx::read::input_if_any(path, crate::fsx::read::MAX_RECORD, "okp state")? {
        Some(b) => b,
        None => return Ok(None),
    };
    // The schema first, so a newer okp's file is named as such rather than as damaged.
    #[derive(Deserialize)]
    struct Head {
        #[serde(default = "schema_1")]
        schema: u32,
    }
    let refuse = |msg: String| Error::Tree { path: path.to_path_buf(), msg: format!("{msg}; okp will not act on it") };
    if let Ok(head) = serde_json::from_slice::<Head>(&bytes) {
        if head.schema != SCHEMA {
            return Err(refuse(format!(
                "schema {} is not one this okp ({}) reads (schema {SCHEMA}); use the okp that wrote it",
                head.schema,
                env!("CARGO_PKG_VERSION")
            )));
        }
    }
    let v: T = serde_json::from_slice(&bytes).map_err(|e| Error::Usage(T::damaged(path, root, &e)))?;
    v.check(root).map_err(refuse)?;
    Ok(Some(v))
}

/// Every path confined to the tree (and each pristine copy to `.okp/pristine/`),
/// every hash a sha256, a pristine hash exactly for the files that existed.
fn check_changes(files: &[FileState], dirs: &[String], root: &Path) -> std::result::Result<(), String> {
    let okp = root.join(STATE_DIR);
    for (i, f) in files.iter().enumerate() {
        let field = format!("files[{i}].path");
        confine(&f.path, Some(root)).map_err(|why| format!("{field} {:?} {why}", f.path))?;
        if !f.created {
            confine(&format!("pristine/{}", f.path), Some(&okp))
                .map_err(|why| format!("{field} {:?}: its pristine copy {why}", f.path))?;
        }
        if files[..i].iter().any(|g| g.path == f.path) {
            return Err(format!("{field} {:?} is listed twice", f.path));
        }
        match (&f.before_sha256, f.created) {
            (Some(h), false) if is_sha256(h) => {}
            (None, true) => {}
            (h, _) => return Err(format!("files[{i}].before_sha256 {h:?} does not fit created: {}", f.created)),
        }
        if !is_sha256(&f.after_sha256) {
            return Err(format!("files[{i}].after_sha256 {:?} is not 64 lowercase hex digits", f.after_sha256));
        }
    }
    for (i, d) in dirs.iter().enumerate() {
        confine(d, Some(root)).map_err(|why| format!("created_dirs[{i}] {d:?} {why}"))?;
    }
    Ok(())
}

/// Free text okp prints: no control characters (a planted escape sequence would reach the terminal).
fn printable(field: &str, v: &str) -> std::result::Result<(), String> {
    if v.chars().any(char::is_control) {
        return Err(format!("{field} {v:?} holds control characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "5ef5ce1fb2cf885854e0028e8c2e6e3fba922236a31dfefedb91fe5f77125ea9";

    fn state() -> State {
        State {
            schema: 1,
            txn: "t".into(),
            okp_version: "0.1.0".into(),
            release: KafkaVersion::new(3, 9, 2),
            mode: Mode::Kraft,
            family: "f3.7".into(),
            patch_set_hash: H.into(),
            layers: "core".into(),
            files: vec![FileState {
                path: "core/A.scala".into(),
                created: false,
                before_sha256: Some(H.into()),
                after_sha256: H.into(),
            }],
            created_dirs: vec![],
            modified: vec![],
            unchecked: None,
        }
    }

    fn check(s: &State) -> std::result::Result<(), String> {
        let t = tempfile::tempdir().unwrap();
        s.check(t.path())
    }

    #[test]
    fn a_sound_state_passes_and_each_bad_field_is_named() {
        assert_eq!(check(&state()), Ok(()));
        type Spoil = fn(&mut State);
        let bad: [(Spoil, &str); 7] = [
            (|s| s.patch_set_hash = "abc".into(), "patch_set_hash \"abc\""),
            (|s| s.patch_set_hash = format!("0123456789abcde€{}", "0".repeat(46)), "patch_set_hash"),
            (|s| s.patch_set_hash = H.to_uppercase(), "patch_set_hash"),
            (|s| s.family = "f\u{1b}[2J".into(), "family"),
            (|s| s.files[0].path = "../victim".into(), "files[0].path \"../victim\" leaves the tree"),
            (|s| s.files[0].before_sha256 = None, "files[0].before_sha256"),
            (|s| s.created_dirs = vec!["/d".into()], "created_dirs[0] \"/d\" leaves the tree"),
        ];
        for (spoil, msg) in bad {
            let mut s = state();
            spoil(&mut s);
            let e = check(&s).unwrap_err();
            assert!(e.contains(msg), "{e} should name {msg}");
        }
        assert_eq!(state().short_hash(), "5ef5ce1fb2cf8858");
        let mut s = state();
        s.patch_set_hash = "€".into();
        assert_eq!(s.short_hash(), "€");
    }

    /// release and mode are typed: anything but the canonical spelling is refused when read.
    #[test]
    fn a_release_or_mode_spelt_otherwise_is_refused() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(STATE_DIR)).unwrap();
        for (field, value, msg) in [
            ("release", "3.9", "not a Kafka release number"),
            ("release", " 3.9.2", "not spelt"),
            ("mode", "zookeeper", "zookeeper"),
        ] {
            let mut v = serde_json::to_value(state()).unwrap();
            v[field] = value.into();
            std::fs::write(state_path(t.path()), v.to_string()).unwrap();
            let e = read_state(t.path()).unwrap_err().to_string();
            assert!(e.contains("state.json is damaged") && e.contains(msg), "{field} {value:?}: {e}");
        }
    }

    #[test]
    fn another_schema_is_refused_by_name() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(STATE_DIR)).unwrap();
        let mut v = serde_json::to_value(state()).unwrap();
        v["schema"] = 99.into();
        v["something_new"] = true.into();
        std::fs::write(state_path(t.path()), v.to_string()).unwrap();
        let e = read_state(t.path()).unwrap_err().to_string();
        assert!(e.contains("state.json: schema 99 is not one this okp"), "{e}");
    }

    #[test]
    fn a_symlinked_record_is_refused() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(STATE_DIR)).unwrap();
        let elsewhere = t.path().join("elsewhere.json");
        std::fs::write(&elsewhere, serde_json::to_vec(&state()).unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, journal_path(t.path())).unwrap();
        let e = read_journal(t.path()).unwrap_err().to_string();
        assert!(e.contains("journal.json: is a symlink"), "{e}");
    }
}
