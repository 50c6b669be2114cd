//! `okp observers recover --finish|--undo`: the change an earlier okp recorded and did not finish
//! (journal.rs: killed, crashed, the machine lost power) written to its end or put back, node by
//! node, through the actuator (compare-and-swap, all or nothing, interrupts put back).
//!
//! Not here: finding and reporting the record (journal.rs), the writes (actuate.rs).

use super::actuate::{self, Edit};
use super::change::read_every;
use super::transport::{check_nodes, NodeSpec, Transport};
use crate::error::{Error, Outcome, Result};

pub fn run(nodes: &[NodeSpec], transport: &Transport, finish: bool, dry_run: bool) -> Result<Outcome> {
    check_nodes(nodes)?;
    let texts = read_every(nodes, transport)?;
    let Some(u) = super::journal::find(nodes)? else {
        crate::out::print("no unfinished change of these nodes is recorded: nothing to do\n")?;
        return Ok(Outcome::Done);
    };
    // The record is in the change's write order; undoing it goes the other way (a demotion's
    // undo is a promotion: controllers first).
    let mut order: Vec<(&str, &str, &str)> = u.nodes().collect();
    if !finish {
        order.reverse();
    }
    let mut edits = Vec::new();
    for (label, old, new) in order {
        let Some((n, now)) = nodes.iter().zip(&texts).find(|(n, _)| n.label() == label) else { continue };
        let (from, to) = if finish { (old, new) } else { (new, old) };
        if now == to {
            continue;
        }
        if now != from {
            return Err(Error::Check(format!(
                "{label}: holds {}, neither the old nor the new file of `{}`: another writer changed it; fix it by hand, then remove {}",
                actuate::quoted(now),
                u.asked(),
                u.path.display()
            )));
        }
        // The record explains, it does not decide: bytes it holds are written only if they read
        // as cleanly as any file okp plans from (rules that parse, no text the registries ignore).
        if let Some(why) = unclean(to) {
            return Err(Error::Check(format!(
                "{label}: the recorded file of `{}` does not read cleanly ({why}), so okp does not write it; fix the node by hand, then remove {}",
                u.asked(),
                u.path.display()
            )));
        }
        edits.push(Edit { node: n.clone(), before: from.to_string(), after: to.to_string() });
    }
    let what = format!("{} `{}`", if finish { "finish" } else { "undo" }, u.asked());
    let mut plan = format!("plan: {what}; {} node(s) change\n", edits.len());
    for e in &edits {
        plan.push_str(&format!(
            "  {}: {} → {} by {}\n",
            e.node.label(),
            actuate::quoted(&e.before),
            actuate::quoted(&e.after),
            transport.describe_write(&e.node)
        ));
    }
    crate::out::print(&plan)?;
    if dry_run {
        crate::out::print("dry run: nothing written\n")?;
        return Ok(Outcome::Done);
    }
    actuate::write(transport, &what, &edits)?;
    let _ = std::fs::remove_file(&u.path);
    crate::out::print(&format!("`{}` {}\n", u.asked(), if finish { "finished" } else { "undone" }))?;
    Ok(Outcome::Done)
}

/// Why `text` would not be planned from, if it would not: a malformed rule, or tokens the
/// registries ignore.
fn unclean(text: &str) -> Option<String> {
    if let Err(e) = super::idfile::rules(text) {
        return Some(e);
    }
    let stray = super::idfile::ignored(text);
    (!stray.is_empty()).then(|| {
        let shown: Vec<String> = stray.iter().take(8).map(|t| super::idfile::shown_token(t)).collect();
        format!("{}: not broker ids", shown.join(", "))
    })
}

/// For `okp observers status`: when a change of these nodes was recorded and not finished, what
/// each node holds and how to finish or undo it, on stderr (status still reports the cluster).
/// Nothing is read unless there is a record.
pub fn note_unfinished(nodes: &[NodeSpec], transport: &Transport) -> Result<()> {
    if nodes.is_empty() {
        return Ok(());
    }
    match super::journal::find(nodes) {
        Ok(None) => return Ok(()),
        Err(e) => {
            crate::out::note(e.to_string());
            return Ok(());
        }
        Ok(Some(_)) => {}
    }
    let texts = read_every(nodes, transport)?;
    if let Err(e) = super::journal::check(nodes, &texts) {
        crate::out::note(e.to_string());
    }
    Ok(())
}
