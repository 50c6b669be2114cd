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
//! Not here: the writes themselves (actuate.rs).

use std::path::PathBuf;

use super::change::Prepared;
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

/// Records `p` before its first write. A record that cannot be written is a note, not a refusal:
/// the change stays all or nothing for everything but SIGKILL.
pub fn begin(p: &Prepared) -> Result<Record> {
    let nodes: Vec<NodeSpec> = p.edits.iter().map(|e| e.node.clone()).collect();
    let Some(path) = path_for(&nodes) else {
        crate::out::note("no HOME, XDG_STATE_HOME or OKP_STATE_DIR: this change is not recorded, so a SIGKILL during it would leave no trace for the next okp");
        return Ok(Record { path: None });
    };
    let w = Written {
        schema: SCHEMA.into(),
        pid: std::process::id(),
        started_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        asked: p.asked().shown(),
        nodes: p
            .edits
            .iter()
            .map(|e| NodeText { label: e.node.label(), before: e.before.clone(), after: e.after.clone() })
            .collect(),
    };
    let bytes = serde_json::to_vec_pretty(&w).unwrap_or_default();
    if let Err(e) = crate::fsx::write_atomic(&path, &bytes) {
        crate::out::note(format!(
            "cannot record this change ({e}): a SIGKILL during it would leave no trace for the next okp"
        ));
        return Ok(Record { path: None });
    }
    Ok(Record { path: Some(path) })
}

/// Whether process `pid` runs and is an okp.
fn okp_alive(pid: u32) -> bool {
    pid != std::process::id()
        && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim().starts_with("okp"))
}

/// A change of these nodes okp recorded and did not finish, with what each node holds now.
pub struct Unfinished {
    path: PathBuf,
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
fn find(nodes: &[NodeSpec]) -> Result<Option<Unfinished>> {
    let Some(path) = path_for(nodes) else { return Ok(None) };
    let bytes = match crate::fsx::read::read_regular(&path, 4 << 20) {
        Ok(b) => b,
        Err(crate::fsx::read::ReadError::Missing) => return Ok(None),
        Err(e) => return Err(e.into_error(&path, "the change record")),
    };
    let w: Written = serde_json::from_slice(&bytes).ok().filter(|w: &Written| w.schema == SCHEMA).ok_or_else(|| {
        Error::Usage(format!(
            "{}: not a change record okp reads ({SCHEMA}); look at every node's observer.ids, then remove it",
            path.display()
        ))
    })?;
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

/// `okp observers recover`: the unfinished change of these nodes finished (`finish`) or undone,
/// every node that holds the other side written by compare-and-swap, all or nothing as any change.
pub fn recover(
    nodes: &[NodeSpec],
    transport: &super::transport::Transport,
    finish: bool,
) -> Result<crate::error::Outcome> {
    super::transport::check_nodes(nodes)?;
    let texts = super::change::read_every(nodes, transport)?;
    let Some(u) = find(nodes)? else {
        crate::out::print("no unfinished change of these nodes is recorded: nothing to do\n")?;
        return Ok(crate::error::Outcome::Done);
    };
    let mut edits = Vec::new();
    // The record is in the change's write order; undoing it goes the other way (a demotion's
    // undo is a promotion: controllers first).
    let mut order: Vec<&NodeText> = u.w.nodes.iter().collect();
    if !finish {
        order.reverse();
    }
    for r in order {
        let Some((n, now)) = nodes.iter().zip(&texts).find(|(n, _)| n.label() == r.label) else { continue };
        let (from, to) = if finish { (&r.before, &r.after) } else { (&r.after, &r.before) };
        if now == to {
            continue;
        }
        if now != from {
            return Err(Error::Check(format!(
                "{}: holds {:?}, neither the old nor the new file of `{}`: another writer changed it; fix it by hand, then remove {}",
                n.label(),
                now,
                u.w.asked,
                u.path.display()
            )));
        }
        edits.push((n.clone(), from.clone(), to.clone()));
    }
    let p = super::change::Prepared::of_texts(&u.w.asked, edits);
    crate::out::print(&p.plan(transport))?;
    super::actuate::write(transport, &p)?;
    let _ = std::fs::remove_file(&u.path);
    crate::out::print(&format!("`{}` {}\n", u.w.asked, if finish { "finished" } else { "undone" }))?;
    Ok(crate::error::Outcome::Done)
}
