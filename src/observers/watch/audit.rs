//! The watchdog's audit log: every decision as one JSON line (schema
//! `okp-observer-watch-audit/1`), appended with one `write` and synced, and
//! the same line on stderr (the journal, under systemd).
//!
//! Rule 8: the log is opened and a `start` line appended and synced before the
//! watchdog reads the cluster; if that fails it does not start. A later line
//! that cannot be written stops the watchdog before it acts: a decision line
//! is written before the files change.
//!
//! Not here: what is decided (`decide`).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::decide::{Decision, Numbers, Policy};
use crate::error::{Error, Result};

pub const SCHEMA: &str = "okp-observer-watch-audit/1";

/// One audit line. `action`: start, stop, error, promote, demote, skip,
/// refuse, forget, release; `outcome` (promote and demote): decided (written before
/// the files), dry-run, done, not-converged, interrupted.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Line {
    pub time: String,
    pub schema: &'static str,
    pub pid: u32,
    pub dry_run: bool,
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<&'static str>,
    pub policy: Option<Policy>,
    pub broker: Option<i32>,
    /// An action through a topic rule: the exact rule it rewrites (`topic:tobs`); absent: the
    /// cluster-wide ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_rule: Option<String>,
    /// Per partition: leader, replicas, ISR and its size, min.insync.replicas, non-observer count, the broker's lag.
    pub partitions: Vec<Numbers>,
    pub max_lag: i64,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

pub struct Audit {
    file: std::fs::File,
    pub path: PathBuf,
    dry_run: bool,
    max_lag: i64,
}

/// Now as `YYYY-MM-DDTHH:MM:SS.mmmZ` and milliseconds since the epoch.
pub fn now() -> (String, i64) {
    let ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    (stamp(ms), ms)
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn stamp(ms: i64) -> String {
    let s = crate::report::utc(ms.div_euclid(1000));
    format!("{}.{:03}Z", s.trim_end_matches('Z'), ms.rem_euclid(1000))
}

impl Audit {
    /// Opens (creating it and its directory) the log for appending. Rule 8:
    /// `start` must follow before anything else is done.
    pub fn open(path: &Path, dry_run: bool, max_lag: i64) -> Result<Audit> {
        let refuse = |e| {
            Error::io(
                format!(
                    "cannot open the audit log {} (the watchdog does not start without one; --audit-log names another)",
                    path.display()
                ),
                e,
            )
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(refuse)?;
        }
        let file = crate::fsx::open_append(path).map_err(refuse)?;
        Ok(Audit { file, path: path.to_path_buf(), dry_run, max_lag })
    }

    /// Appends one line (one `write`, then fsync) and echoes it on stderr. The reason may quote
    /// text from outside (a node's transport stderr, a `--bootstrap` value, a file): it is written
    /// through `escape::one_line`, so no value carries a line break or a terminal control into the
    /// log or the journal (JSON would escape C0 controls, but not DEL and C1, and a reader of the
    /// decoded value would meet them raw).
    pub fn write(&mut self, line: &Line) -> Result<()> {
        let line = Line { reason: crate::escape::one_line(&line.reason), ..line.clone() };
        let mut text =
            serde_json::to_string(&line).map_err(|e| Error::External(format!("cannot encode an audit line: {e}")))?;
        text.push('\n');
        self.file.write_all(text.as_bytes()).and_then(|_| self.file.sync_data()).map_err(|e| {
            Error::io(
                format!(
                    "cannot append to the audit log {} (the watchdog stops rather than act unaudited)",
                    self.path.display()
                ),
                e,
            )
        })?;
        crate::out::block(&text);
        Ok(())
    }

    fn line(&self, action: &'static str, reason: String) -> Line {
        Line {
            time: now().0,
            schema: SCHEMA,
            pid: std::process::id(),
            dry_run: self.dry_run,
            action,
            outcome: None,
            policy: None,
            broker: None,
            topic_rule: None,
            partitions: vec![],
            max_lag: self.max_lag,
            reason,
            seconds: None,
        }
    }

    /// A line that is not a decision: start, stop, error.
    pub fn event(&mut self, action: &'static str, reason: impl Into<String>) -> Result<()> {
        let l = self.line(action, reason.into());
        self.write(&l)
    }

    /// A decision, with the outcome of a promote or demote.
    pub fn decision(&mut self, d: &Decision, outcome: Option<&'static str>, seconds: Option<f64>) -> Result<()> {
        let mut l = self.line(d.action.word(), d.reason.clone());
        l.outcome = outcome;
        l.policy = d.policy;
        l.broker = d.broker;
        l.topic_rule = d.topic.as_ref().map(|t| format!("topic:{t}"));
        l.partitions = d.parts.clone();
        l.seconds = seconds;
        self.write(&l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_carry_milliseconds() {
        assert_eq!(stamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(stamp(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn rule8_a_log_that_cannot_be_opened_refuses_the_start() {
        let d = tempfile::tempdir().unwrap();
        // A directory where the log should be (root ignores file modes; this fails for anyone).
        let e = Audit::open(d.path(), false, 0).err().expect("refused");
        assert!(e.to_string().contains("cannot open the audit log"), "{e}");
        assert_eq!(e.exit_code(), 2, "a path that cannot be a log is bad input");
        // Under /proc nothing can be created.
        assert!(Audit::open(Path::new("/proc/okp-watch/audit.log"), false, 0).is_err());
    }

    #[test]
    fn a_symlinked_or_fifo_audit_log_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim.conf");
        std::fs::write(&victim, "keep\n").unwrap();
        let link = d.path().join("audit.log");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = Audit::open(&link, false, 0).err().expect("refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
        let fifo = d.path().join("fifo.log");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = Audit::open(&fifo, false, 0).err().expect("refused at once, not blocked");
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_reason_from_outside_cannot_forge_a_line_or_a_colour() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.log");
        let mut a = Audit::open(&p, false, 0).unwrap();
        // As a node's transport stderr or a --bootstrap value would bring it.
        let forged = "b1:9092\n{\"action\":\"promote\"}\n\x1b[31mred\u{9b}2J";
        a.event("error", format!("cannot reach {forged}")).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(line["action"], "error");
        let reason = line["reason"].as_str().unwrap();
        assert_eq!(reason, "cannot reach b1:9092\\n{\"action\":\"promote\"}\\n\\x1b[31mred\\u{9b}2J");
        assert!(!reason.chars().any(char::is_control), "the decoded value carries no control either");
    }

    #[test]
    fn each_decision_is_one_json_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/audit.log");
        let mut a = Audit::open(&p, true, 3).unwrap();
        a.event("start", "hello").unwrap();
        let v = super::super::decide::tests::two_primaries_down(0);
        let plan = super::super::decide::decide(
            &v,
            &super::super::state::State::new(None),
            &super::super::decide::tests::rules(Policy::UnderMinIsr),
            0,
        );
        a.decision(plan.act.as_ref().unwrap(), Some("dry-run"), None).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["action"], "start");
        let l = &lines[1];
        assert_eq!(
            (l["action"].as_str(), l["outcome"].as_str(), l["policy"].as_str()),
            (Some("promote"), Some("dry-run"), Some("under-min-isr"))
        );
        assert_eq!(
            (l["broker"].as_i64(), l["dry_run"].as_bool(), l["max_lag"].as_i64()),
            (Some(4), Some(true), Some(3))
        );
        let p0 = &l["partitions"][0];
        assert_eq!(
            (p0["partition"].as_str(), p0["isr_size"].as_i64(), p0["min_insync"].as_i64(), p0["lag"].as_i64()),
            (Some("auto-0"), Some(1), Some(2), Some(0))
        );
        assert!(l["time"].as_str().unwrap().ends_with('Z') && l["schema"] == SCHEMA);
    }
}
