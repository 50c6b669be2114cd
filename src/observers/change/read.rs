//! The first stops of a change: every node's observer.ids read at once through its transport,
//! all or nothing, and each refused for writing unless okp reads it cleanly with the one meaning
//! (idfile/); also the observer set `status` shows from the same reads.
//!
//! Not here: the transport itself (transport/), what the text means (idfile/).

use std::collections::BTreeSet;

use crate::error::{Error, Failure, Result};
use crate::fsx::read::read_regular;
use crate::observers::idfile;
use crate::observers::transport::{NodeSpec, Transport, MAX_IDS_FILE};
use crate::observers::view;

/// How many ignored tokens a refusal names per node.
const STRAY_SHOWN: usize = 8;

/// Refuses to plan a write from a file okp cannot read cleanly, as `okp observers status` shows
/// it red: a malformed topic rule (the registries keep their last good set; bad input, exit 2,
/// naming the node's file, line and column) or tokens the registries ignore (a banner or message
/// of the day the read template printed before the file, a typo for an id: okp cannot tell the
/// file's text from the transport's, and a plan from it would write that text back; exit 1,
/// naming the node's file, each token and its line). `--force` does not reach here.
pub(super) fn check_clean(nodes: &[NodeSpec], texts: &[String]) -> Result<()> {
    let mut unclean = Vec::new();
    let mut stray = false;
    for (node, text) in nodes.iter().zip(texts) {
        if let Err(e) = idfile::rules(text) {
            unclean.push(format!("{}: observer.ids: {e}", node.label()));
            continue;
        }
        let tokens = idfile::ignored_at(text);
        if tokens.is_empty() {
            continue;
        }
        stray = true;
        let mut lines: Vec<(usize, Vec<String>)> = Vec::new();
        for (line, t) in tokens.iter().take(STRAY_SHOWN) {
            match lines.last_mut() {
                Some((l, ts)) if l == line => ts.push(idfile::shown_token(t)),
                _ => lines.push((*line, vec![idfile::shown_token(t)])),
            }
        }
        let more = match tokens.len().saturating_sub(STRAY_SHOWN) {
            0 => String::new(),
            k => format!(" and {k} more"),
        };
        let named: Vec<String> = lines.iter().map(|(l, ts)| format!("line {l}: {}", ts.join(", "))).collect();
        unclean.push(format!(
            "{}: observer.ids {}{more}: not broker ids, text the registries ignore",
            node.label(),
            named.join("; ")
        ));
    }
    match (unclean.len(), stray) {
        (0, _) => Ok(()),
        (1, false) => Err(Error::Usage(format!("{}; nothing was written", unclean[0]))),
        (_, false) => Err(Error::Usage(format!("{}\nnothing was written", unclean.join("\n")))),
        (_, true) => Err(Error::Check(format!(
            "{}\nokp plans no write from a file it cannot read cleanly (okp observers status shows it red): a banner or \
             message of the day the read template prints before the file would be written back into it, a typo for \
             an id changes what the node reads; fix the file or the template (--force does not override this); \
             nothing was written",
            unclean.join("\n")
        ))),
    }
}

/// Every node's file in `nodes`' order, or an error naming every node that could not be read
/// (one node: its own error, whose kind decides the exit code; a missing file is bad input).
pub fn read_every(nodes: &[NodeSpec], transport: &Transport) -> Result<Vec<String>> {
    let mut texts = Vec::new();
    let mut failed = Vec::new();
    for r in read_all(nodes, transport) {
        match r {
            Ok(t) => texts.push(t),
            Err(e) => failed.push(e),
        }
    }
    match failed.len() {
        0 => Ok(texts),
        1 => Err(failed.remove(0)),
        k => {
            let external = failed.iter().any(|e| e.failure() == Failure::External);
            let lines: Vec<String> = failed.iter().map(|e| format!("  {e}")).collect();
            let msg = format!(
                "cannot read observer.ids of {k} of {} nodes; nothing was written:\n{}",
                nodes.len(),
                lines.join("\n")
            );
            Err(if external { Error::External(msg) } else { Error::Usage(msg) })
        }
    }
}

/// Every node's file, read at once (one thread per node), in `nodes`' order: a change waits
/// for the slowest host, not for the sum of them.
fn read_all(nodes: &[NodeSpec], transport: &Transport) -> Vec<Result<String>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = nodes.iter().map(|n| scope.spawn(move || transport.read(n))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::External("a read of observer.ids panicked".into()))))
            .collect()
    })
}

/// The observer set for `status`: `--observers`, `--observers-file`, or every node's file.
pub fn observer_set(
    list: Option<&str>,
    file: Option<&std::path::Path>,
    nodes: &[NodeSpec],
    transport: &Transport,
) -> Result<view::ObserverSet> {
    if let Some(l) = list {
        let set: BTreeSet<i32> = idfile::parse(l);
        if let Some(bad) = idfile::ignored(l).first() {
            return Err(Error::Usage(format!("--observers {l}: `{bad}` is not a broker id (expected e.g. 4,5)")));
        }
        if set.is_empty() && !l.trim().is_empty() {
            return Err(Error::Usage(format!("--observers {l}: no broker id in it (expected e.g. 4,5)")));
        }
        return Ok(view::ObserverSet::given(Some(set), "--observers".into()));
    }
    if let Some(f) = file {
        let bytes = read_regular(f, MAX_IDS_FILE).map_err(|e| e.into_error(f, "--observers-file"))?;
        let text = idfile::text_of(&bytes);
        return Ok(view::ObserverSet::from_file(format!("file {}", f.display()), &text));
    }
    if nodes.is_empty() {
        return Ok(view::ObserverSet::given(None, "nowhere: pass --observers, --observers-file or the nodes' files (--node, --nodes) to know which replicas are observers".into()));
    }
    let texts = read_every(nodes, transport)?;
    let read: Vec<(String, String)> = nodes.iter().map(|n| n.label()).zip(texts).collect();
    Ok(view::ObserverSet::from_files(&read))
}
