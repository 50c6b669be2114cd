//! The watchdog's state file: the cluster it belongs to, the brokers it
//! promoted itself (the only ones it may demote, rule 7) and its last action
//! (the cooldown survives a restart, rule 4). One schema, one reader (`load`,
//! which refuses a damaged file with its line and column), one writer (`save`,
//! atomic through `fsx::write_atomic`).
//!
//! Also the lock beside it (`STATE.lock`, rule 9): an exclusive `flock`, held
//! for the life of the process, with the holder's pid inside; a second
//! watchdog on the same state file is refused by name. A separate file, since
//! every save replaces the state file (a lock on the old inode would be lost).
//!
//! Not here: what the brokers in it mean to a decision (`decide`).

use std::path::{Path, PathBuf};

use super::policy::Policy;
use crate::error::{Error, Result};
use crate::observers::change::Direction;

pub const SCHEMA: &str = "okp-observer-watch-state/1";

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: String,
    /// The cluster id Metadata gave when the state was first written; another cluster is refused.
    pub cluster_id: Option<String>,
    /// Brokers the watchdog promoted and has not demoted (nor seen demoted by hand).
    pub promoted: Vec<Promoted>,
    /// Brokers it had promoted that a human demoted: not promoted again while their partitions stay flagged.
    pub held: Vec<Held>,
    /// The last promote or demote it started (not in dry-run): the cooldown counts from it.
    pub last_action: Option<LastAction>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Promoted {
    pub broker: i32,
    /// The policy whose condition must clear before it is demoted.
    pub policy: Policy,
    pub at: String,
    pub at_ms: i64,
    /// The partitions that triggered it.
    pub partitions: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Held {
    pub broker: i32,
    /// When the watchdog saw the manual demotion.
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastAction {
    pub action: Direction,
    pub broker: i32,
    pub at: String,
    pub at_ms: i64,
}

impl State {
    pub fn new(cluster_id: Option<String>) -> State {
        State { schema: SCHEMA.into(), cluster_id, promoted: vec![], held: vec![], last_action: None }
    }
}

/// The state at `path`; a missing file is a first run (an empty state).
pub fn load(path: &Path) -> Result<State> {
    let Some(text) = crate::fsx::read::text_if_any(path, crate::fsx::read::MAX_RECORD, "watchdog's state file")? else {
        return Ok(State::new(None));
    };
    parse(&path.display().to_string(), &text)
}

/// Parses and checks a state file's text; `name` is how messages call it.
pub fn parse(name: &str, text: &str) -> Result<State> {
    let damaged = |line: usize, col: usize, msg: String| {
        Error::Manifest {
        file: name.to_string(),
        line: line.max(1),
        col: col.max(1),
        msg: format!(
            "damaged watchdog state: {msg}; the watchdog does not guess which brokers it promoted: restore the file, or (knowing which brokers it promoted) remove it"
        ),
    }
    };
    // The schema first: a state of another okp is named as such, not as a missing field.
    #[derive(serde::Deserialize)]
    struct Head {
        schema: Option<serde_json::Value>,
    }
    if let Ok(Head { schema }) = serde_json::from_str::<Head>(text) {
        if schema.as_ref().and_then(|v| v.as_str()) != Some(SCHEMA) {
            let found = schema.map(|v| v.to_string()).unwrap_or_else(|| "(none)".into());
            return Err(damaged(1, 1, format!("schema {found}, expected {SCHEMA:?} (written by another okp?)")));
        }
    }
    if let Some(k) = crate::schema::duplicate_key(text.as_bytes()) {
        return Err(damaged(1, 1, format!("the key {k:?} appears twice in one object")));
    }
    let state: State = serde_json::from_str(text).map_err(|e| damaged(e.line(), e.column(), e.to_string()))?;
    let mut seen = std::collections::BTreeSet::new();
    for p in &state.promoted {
        if p.broker < 0 || !seen.insert(p.broker) {
            return Err(damaged(
                1,
                1,
                format!("broker {} is not a broker id or is listed twice in `promoted`", p.broker),
            ));
        }
    }
    Ok(state)
}

/// Writes the state atomically (a reader sees the old file or the new one).
pub fn save(path: &Path, state: &State) -> Result<()> {
    let text =
        serde_json::to_string_pretty(state).map_err(|e| Error::External(format!("cannot encode the state: {e}")))?;
    crate::fsx::write_atomic(path, (text + "\n").as_bytes())
}

/// The exclusive lock of one state file, held until dropped (the process ends).
pub struct Lock {
    _lock: crate::fsx::FileLock,
    pub path: PathBuf,
}

/// The lock file of `state`: `STATE.lock` beside it.
pub fn lock_path(state: &Path) -> PathBuf {
    let mut name = state.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".lock");
    state.with_file_name(name)
}

/// Takes the lock of `state` or says who holds it. A symbolic link or anything but a regular file
/// at the lock's path is refused before anything is written (`fsx::lock_file`): the watchdog never
/// writes its pid through a link planted there.
pub fn lock(state: &Path) -> Result<Lock> {
    use crate::fsx::{LockRefusal, NotALockFile};
    let path = lock_path(state);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    }
    match crate::fsx::lock_file(&path, false, &mut |_| {})? {
        Ok(l) => Ok(Lock { _lock: l, path }),
        Err(LockRefusal::Not(NotALockFile::Symlink)) => Err(Error::Tree {
            path,
            msg: "the watchdog's lock file is a symbolic link: refused (remove it; okp creates its own)".into(),
        }),
        Err(LockRefusal::Not(NotALockFile::NotRegular)) => Err(Error::Tree {
            path,
            msg: "the watchdog's lock file is not a regular file: refused (remove it; okp creates its own)".into(),
        }),
        Err(LockRefusal::Gone) => Err(Error::Tree {
            path,
            msg: "the watchdog's lock directory was removed while okp locked it: nothing was changed".into(),
        }),
        Err(LockRefusal::Held(holder)) => {
            let holder = crate::escape::one_line(&holder);
            let who = if holder.is_empty() {
                "another process (pid not yet written)".to_string()
            } else {
                format!("pid {holder}")
            };
            Err(Error::Usage(format!(
                "another observer watchdog ({who}) holds {}: one watchdog per cluster; stop it first (systemctl stop okp-observer-watch, or kill {})",
                path.display(),
                if holder.is_empty() { "it" } else { &holder }
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_survives_a_round_trip_and_a_missing_file_is_a_first_run() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.json");
        assert_eq!(load(&p).unwrap(), State::new(None));
        let mut s = State::new(Some("c1".into()));
        s.promoted.push(super::super::decide::tests::promoted(4, Policy::UnderMinIsr));
        s.last_action = Some(LastAction { action: Direction::Promote, broker: 4, at: "t".into(), at_ms: 7 });
        save(&p, &s).unwrap();
        assert_eq!(load(&p).unwrap(), s);
        assert!(std::fs::read_to_string(&p).unwrap().contains("\"action\": \"promote\""));
    }

    #[test]
    fn a_damaged_state_is_refused_with_its_place() {
        let e = parse("s.json", "{\"schema\": \"okp-observer-watch-state/1\",\n \"promoted\": [ {\"broker\": 4,\n")
            .unwrap_err();
        assert!(e.to_string().starts_with("s.json:3:"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let e = parse(
            "s.json",
            "{\"schema\": \"x/9\", \"cluster_id\": null, \"promoted\": [], \"held\": [], \"last_action\": null}",
        )
        .unwrap_err();
        assert!(e.to_string().contains("schema \"x/9\""), "{e}");
        let one = r#"{"broker": 4, "policy": "under-min-isr", "at": "t", "at_ms": 1, "partitions": []}"#;
        let twice = format!(
            "{{\"schema\": \"{SCHEMA}\", \"cluster_id\": null, \"promoted\": [{one}, {one}], \"held\": [], \"last_action\": null}}"
        );
        assert!(parse("s.json", &twice).unwrap_err().to_string().contains("listed twice"));
        let unknown = format!(
            "{{\"schema\": \"{SCHEMA}\", \"cluster_id\": null, \"promoted\": [], \"held\": [], \"last_action\": null, \"x\": 1}}"
        );
        assert!(parse("s.json", &unknown).unwrap_err().to_string().contains("unknown field `x`"));
        let policy = format!(
            "{{\"schema\": \"{SCHEMA}\", \"cluster_id\": null, \"promoted\": [{}], \"held\": [], \"last_action\": null}}",
            one.replace("under-min-isr", "always")
        );
        assert!(parse("s.json", &policy).unwrap_err().to_string().contains("unknown variant `always`"));
    }

    #[test]
    fn rule9_a_second_lock_is_refused_naming_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.json");
        let held = lock(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&held.path).unwrap().trim(), std::process::id().to_string());
        // flock locks belong to the open file description: a second open in this process conflicts too.
        let e = lock(&p).err().expect("refused");
        assert!(e.to_string().contains(&format!("(pid {}) holds", std::process::id())), "{e}");
        assert_eq!(e.exit_code(), 2);
        drop(held);
        // A child another test forks at this moment holds a copy of the descriptor until its exec
        // closes it (close-on-exec), and with it the flock: allow it that moment.
        let again = (0..100).find_map(|_| {
            lock(&p).ok().or_else(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                None
            })
        });
        assert!(again.is_some(), "released with the process (here: the drop)");
    }

    #[test]
    fn a_symlinked_or_fifo_lock_file_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.json");
        let victim = d.path().join("victim.conf");
        std::fs::write(&victim, "keep\n").unwrap();
        std::os::unix::fs::symlink(&victim, lock_path(&p)).unwrap();
        let e = lock(&p).err().expect("refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
        std::fs::remove_file(lock_path(&p)).unwrap();
        let fifo = std::ffi::CString::new(lock_path(&p).to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let e = lock(&p).err().expect("refused");
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
