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
//! A promotion through a topic rule records its topic (`topic`, and `rule_added` when the
//! promotion wrote the topic's exact rule): the demotion restores that rule and nothing else. The
//! fields are absent for a cluster-wide promotion, so a file written before topic rules reads as
//! it always did, and a file of only cluster-wide promotions is written as before. An okp older
//! than them refuses a file that holds one (`unknown field`), rather than misread it.
//!
//! Not here: what the brokers in it mean to a decision (`decide`).

use std::path::{Path, PathBuf};

use super::policy::Policy;
use crate::error::{Error, Result};
use crate::observers::change::Direction;
use crate::observers::idfile;

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
    /// The topic whose exact rule the promotion rewrote (the broker observed it through a topic
    /// rule); absent: the cluster-wide ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// The promotion wrote `topic`'s exact rule, which the topic did not have: the demotion takes
    /// it away again when the rest of the file still says the same (`idfile::restore_topic_rule`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub rule_added: bool,
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
    /// The topic it was promoted for (through its rule); absent: cluster-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// When the watchdog saw the manual demotion.
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastAction {
    pub action: Direction,
    pub broker: i32,
    /// The topic whose rule it changed; absent: the cluster-wide ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub at: String,
    pub at_ms: i64,
}

fn is_false(b: &bool) -> bool {
    !*b
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
        let topic =
            p.topic.as_deref().map(|t| format!(" for topic {}", crate::escape::one_line(t))).unwrap_or_default();
        if p.broker < 0 || !seen.insert((p.broker, p.topic.as_deref())) {
            return Err(damaged(
                1,
                1,
                format!("broker {}{topic} is not a broker id or is listed twice in `promoted`", p.broker),
            ));
        }
    }
    for t in state
        .promoted
        .iter()
        .filter_map(|p| p.topic.as_deref())
        .chain(state.held.iter().filter_map(|h| h.topic.as_deref()))
    {
        // The topic goes into observer.ids as `topic:T`: only a name Kafka accepts.
        if idfile::Selector::parse(&format!("topic:{t}")).is_err() {
            return Err(damaged(1, 1, format!("topic {}: not a Kafka topic name", crate::escape::one_line(t))));
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
        s.last_action =
            Some(LastAction { action: Direction::Promote, broker: 4, topic: None, at: "t".into(), at_ms: 7 });
        save(&p, &s).unwrap();
        assert_eq!(load(&p).unwrap(), s);
        assert!(std::fs::read_to_string(&p).unwrap().contains("\"action\": \"promote\""));
    }

    #[test]
    fn a_state_of_topic_promotions_round_trips_and_an_old_file_reads_as_cluster_wide() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.json");
        let mut s = State::new(Some("c1".into()));
        s.promoted.push(super::super::decide::tests::promoted(4, Policy::UnderMinIsr));
        s.promoted.push(Promoted {
            topic: Some("tobs".into()),
            rule_added: true,
            ..super::super::decide::tests::promoted(4, Policy::UnderReplicated)
        });
        s.held.push(Held { broker: 5, topic: Some("audit".into()), at: "t".into() });
        s.last_action = Some(LastAction {
            action: Direction::Promote,
            broker: 4,
            topic: Some("tobs".into()),
            at: "t".into(),
            at_ms: 7,
        });
        save(&p, &s).unwrap();
        assert_eq!(load(&p).unwrap(), s);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("\"topic\": \"tobs\"").count(), 2, "{text}");
        assert_eq!(text.matches("rule_added").count(), 1, "written only when true: {text}");
        // A file of an okp before topic rules: every promotion is cluster-wide.
        let old = format!(
            "{{\"schema\": \"{SCHEMA}\", \"cluster_id\": \"c1\", \"promoted\": [{{\"broker\": 4, \"policy\": \"under-min-isr\", \"at\": \"t\", \"at_ms\": 1, \"partitions\": [\"obs-0\"]}}], \"held\": [{{\"broker\": 5, \"at\": \"t\"}}], \"last_action\": {{\"action\": \"promote\", \"broker\": 4, \"at\": \"t\", \"at_ms\": 1}}}}"
        );
        let st = parse("s.json", &old).unwrap();
        assert_eq!((st.promoted[0].topic.as_deref(), st.promoted[0].rule_added), (None, false));
        assert_eq!((st.held[0].topic.as_deref(), st.last_action.unwrap().topic), (None, None));
        // A cluster-wide state is written as before: no new field appears.
        let mut cw = State::new(None);
        cw.promoted.push(super::super::decide::tests::promoted(4, Policy::UnderMinIsr));
        save(&p, &cw).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains("topic") && !text.contains("rule_added"), "{text}");
        // The same broker for two topics is two promotions; twice for one topic is damage; a
        // topic that could not be in observer.ids is damage.
        let one = |t: &str| {
            format!(r#"{{"broker": 4, "topic": "{t}", "policy": "never", "at": "t", "at_ms": 1, "partitions": []}}"#)
        };
        let file = |a: String, b: String| {
            format!("{{\"schema\": \"{SCHEMA}\", \"cluster_id\": null, \"promoted\": [{a}, {b}], \"held\": [], \"last_action\": null}}")
        };
        assert!(parse("s.json", &file(one("a"), one("b"))).is_ok());
        let e = parse("s.json", &file(one("a"), one("a"))).unwrap_err().to_string();
        assert!(e.contains("broker 4 for topic a is not a broker id or is listed twice"), "{e}");
        let e = parse("s.json", &file(one("a"), one("x\\ny"))).unwrap_err().to_string();
        assert!(e.contains("topic x\\ny: not a Kafka topic name"), "{e}");
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
