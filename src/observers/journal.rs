//! The change record: what a promote, demote or place is writing, kept on the operator's machine
//! from just before its first write until every node is written or put back, so that a change
//! cut short by SIGKILL, a crash or a power loss (which no handler sees) is found by the next okp
//! that plans a change of the same nodes. That okp reads every node, says which hold the new
//! file and which the old, and writes nothing until the operator finishes or undoes it
//! (`okp observers recover --finish|--undo`).
//!
//! One file per set of nodes (`observers-change-<16 hex of the nodes' sha256>.json`, schema
//! `okp-observers-change/1`) in `$OKP_STATE_DIR`, else `$XDG_STATE_HOME/okp`, else
//! `~/.local/state/okp`. The record explains, the nodes decide: what each node holds is read
//! again, never taken from the record. A record whose okp still runs (its pid alive, named okp)
//! refuses a second change of the same nodes from this machine.
//!
//! Not here: the writes themselves (actuate.rs), finishing or undoing (recover.rs).

use std::path::PathBuf;

use super::transport::NodeSpec;
use crate::error::{Error, Result};

const SCHEMA: &str = "okp-observers-change/1";

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    schema: String,
    pid: u32,
    started_ms: u64,
    /// `demote broker 2 for topic demo`.
    asked: String,
    nodes: Vec<NodeText>,
}

#[derive(serde::Serialize, serde::Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct NodeText {
    label: String,
    before: String,
    after: String,
}

/// The record of a change being written; `end` removes it once every node is written or put back.
pub struct Record {
    path: Option<PathBuf>,
}

impl Record {
    /// `clean`: every node holds the new file, or is as before; otherwise the record stays for
    /// the next okp to find.
    pub fn end(self, clean: bool) {
        if let (true, Some(p)) = (clean, &self.path) {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
fn dir() -> Option<PathBuf> {
    // Unit tests record into the temp directory, never into the HOME of whoever runs them.
    Some(std::env::temp_dir().join("okp-unit-test-state"))
}

#[cfg(not(test))]
fn dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("OKP_STATE_DIR")
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("okp")))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/okp")))
}

/// The record's path for this set of nodes (whatever their order).
fn path_for(nodes: &[NodeSpec]) -> Option<PathBuf> {
    let mut labels: Vec<String> = nodes.iter().map(NodeSpec::label).collect();
    labels.sort();
    let key = crate::hash::sha256(labels.join("\n").as_bytes());
    dir().map(|d| d.join(format!("observers-change-{}.json", &key[..16])))
}

/// Records a change (`asked`; each node, its file now and what it becomes, in write order)
/// before its first write. A record that cannot be written is a note, not a refusal: the change
/// stays all or nothing for everything but SIGKILL.
pub fn begin<'a>(asked: &str, edits: impl Iterator<Item = (&'a NodeSpec, &'a str, &'a str)>) -> Record {
    let edits: Vec<_> = edits.collect();
    let nodes: Vec<NodeSpec> = edits.iter().map(|(n, _, _)| (*n).clone()).collect();
    let Some(path) = path_for(&nodes) else {
        crate::out::note("no HOME, XDG_STATE_HOME or OKP_STATE_DIR: this change is not recorded, so a SIGKILL during it would leave no trace for the next okp");
        return Record { path: None };
    };
    let w = Written {
        schema: SCHEMA.into(),
        pid: std::process::id(),
        started_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        asked: asked.to_string(),
        nodes: edits
            .iter()
            .map(|(n, before, after)| NodeText {
                label: n.label(),
                before: before.to_string(),
                after: after.to_string(),
            })
            .collect(),
    };
    let bytes = serde_json::to_vec_pretty(&w).unwrap_or_default();
    if let Err(e) = crate::fsx::write_atomic(&path, &bytes) {
        crate::out::note(format!(
            "cannot record this change ({e}): a SIGKILL during it would leave no trace for the next okp"
        ));
        return Record { path: None };
    }
    Record { path: Some(path) }
}

/// Whether process `pid` runs and is an okp.
fn okp_alive(pid: u32) -> bool {
    pid != std::process::id()
        && crate::fsx::read::lossy_text(std::path::Path::new(&format!("/proc/{pid}/comm")), 64)
            .trim()
            .starts_with("okp")
}

/// A change of these nodes okp recorded and did not finish.
pub struct Unfinished {
    pub path: PathBuf,
    w: Written,
}

/// Each node's state against the record: `holds the new file`, `holds its old file`, or neither.
fn states(w: &Written, nodes: &[NodeSpec], texts: &[String]) -> Vec<(String, &'static str)> {
    w.nodes
        .iter()
        .map(|r| {
            let now = nodes.iter().zip(texts).find(|(n, _)| n.label() == r.label).map(|(_, t)| t);
            let state = match now {
                Some(t) if *t == r.after && r.after != r.before => "holds the new file",
                Some(t) if *t == r.before => "holds its old file",
                Some(_) => "holds neither (another writer changed it since)",
                None => "not among this command's nodes",
            };
            (r.label.clone(), state)
        })
        .collect()
}

/// Before a change is planned from `texts` (every node's file, as read now, in `nodes`' order):
/// a record of an earlier change of the same nodes that did not finish refuses it (exit 1),
/// saying what each node holds and how to finish or undo it. A record whose every node is
/// already all old or all new is removed with a note.
pub fn check(nodes: &[NodeSpec], texts: &[String]) -> Result<()> {
    let Some(u) = find(nodes)? else { return Ok(()) };
    let st = states(&u.w, nodes, texts);
    if st.iter().all(|(_, s)| *s == "holds its old file")
        || st.iter().all(|(_, s)| *s != "holds its old file" && s.starts_with("holds the new"))
    {
        crate::out::note(format!(
            "an earlier `{}` (pid {}) left a record, but every node holds {} file: record removed",
            u.w.asked,
            u.w.pid,
            if st.iter().all(|(_, s)| *s == "holds its old file") { "its old" } else { "the new" }
        ));
        let _ = std::fs::remove_file(&u.path);
        return Ok(());
    }
    Err(Error::Check(u.report(&st)))
}

/// The record of these nodes, if there is one whose okp is gone. One whose okp still runs is
/// refused here (exit 1): another change of the same nodes is being written from this machine.
pub fn find(nodes: &[NodeSpec]) -> Result<Option<Unfinished>> {
    let Some(path) = path_for(nodes) else { return Ok(None) };
    let bytes = match crate::fsx::read::read_regular(&path, 4 << 20) {
        Ok(b) => b,
        Err(crate::fsx::read::ReadError::Missing) => return Ok(None),
        Err(e) => return Err(e.into_error(&path, "the change record")),
    };
    let mut w: Written =
        serde_json::from_slice(&bytes).ok().filter(|w: &Written| w.schema == SCHEMA).ok_or_else(|| {
            Error::Usage(format!(
                "{}: not a change record okp reads ({SCHEMA}); look at every node's observer.ids, then remove it",
                path.display()
            ))
        })?;
    // The record is a file anyone with this user's rights could have written: what okp prints of
    // it is escaped (okp's own labels and verbs are plain text already, so they match unchanged).
    w.asked = crate::escape::one_line(&w.asked);
    for n in &mut w.nodes {
        n.label = crate::escape::one_line(&n.label);
    }
    if okp_alive(w.pid) {
        return Err(Error::Check(format!(
            "another okp (pid {}) is writing `{}` to these nodes from this machine; run this again when it is done ({})",
            w.pid,
            w.asked,
            path.display()
        )));
    }
    Ok(Some(Unfinished { path, w }))
}

impl Unfinished {
    /// What the change was: `promote broker 4`.
    pub fn asked(&self) -> &str {
        &self.w.asked
    }

    /// Each node's label, old file and new file, in the change's write order.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.w.nodes.iter().map(|n| (n.label.as_str(), n.before.as_str(), n.after.as_str()))
    }

    fn report(&self, st: &[(String, &'static str)]) -> String {
        let lines: Vec<String> = st.iter().map(|(l, s)| format!("  {l}: {s}")).collect();
        format!(
            "an earlier `{}` (okp pid {}, gone) did not finish: it was killed or crashed between its writes, and the nodes disagree:\n{}\n\
             okp plans no change of these nodes until that one is finished or undone: `okp observers recover --finish` \
             writes its new file where the old one is, `--undo` puts the old one back where the new one is (same nodes \
             and transport flags); the record is {}",
            self.w.asked,
            self.w.pid,
            lines.join("\n"),
            self.path.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record's writer counts as running only while a process of that pid is an okp: this
    /// one is not counted (its own record), nor a pid that is another program.
    #[test]
    fn a_record_is_live_only_while_an_okp_runs_under_its_pid() {
        assert!(!okp_alive(std::process::id()));
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("okp-sleep");
        std::fs::copy("/bin/sleep", &fake).unwrap();
        let mut as_okp = std::process::Command::new(&fake).arg("30").spawn().unwrap();
        let mut other = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(okp_alive(as_okp.id()), "a process named okp…");
        assert!(!okp_alive(other.id()), "sleep is not okp");
        for c in [&mut as_okp, &mut other] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        assert!(!okp_alive(as_okp.id()), "gone");
    }
}
