//! The actuator: writes a planned change (each node's old and new file) node by node, in the
//! plan's order, each by compare-and-swap (swap.rs) and read back, and keeps it all or nothing: a
//! failed write, another writer, or SIGINT/SIGTERM puts back every node already written, and the
//! error names every node's state. promote, demote, place, recover and the watchdog all write
//! through here.
//!
//! Interrupts: from the first write on, SIGINT and SIGTERM no longer end okp at once. The write
//! in flight (a template runs in a process group of its own, so a terminal's Ctrl-C does not
//! reach it) is waited for, bounded by `--transport-timeout`; then every node written is put
//! back and okp exits 130 listing each node. A second signal does not stop the putting back.
//! SIGKILL cannot be caught: the change record (journal.rs) lets the next okp find the nodes.
//!
//! Not here: what to write (change/, idfile/), whether it may be written (roles.rs, the
//! pre-checks), how a node is reached (transport/). This module knows no plan type: a change is
//! what was asked (`asked`, for messages) and its edits, in write order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::swap::Swap;
use super::transport::{NodeRole, NodeSpec, Transport};
use crate::error::{Error, Result};

/// How long the registries may take to see an edited file (their cache TTL).
pub const REREAD: Duration = Duration::from_secs(5);

/// One node's file as read when the change was planned, and what it becomes.
pub struct Edit {
    pub node: NodeSpec,
    pub before: String,
    pub after: String,
}

/// A file's text as messages show it: Rust's debug quoting (every control character escaped).
pub fn quoted(text: &str) -> String {
    format!("{text:?}")
}

static STOP: AtomicBool = AtomicBool::new(false);

/// From now on SIGINT and SIGTERM set a flag instead of ending okp (once per process; where
/// another handler is already installed, such as the watchdog's, that one stays).
pub fn catch_interrupts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    });
}

/// Whether SIGINT or SIGTERM arrived since `catch_interrupts`.
pub fn interrupted() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Sleeps `d`, or less when interrupted: false then.
fn pause(d: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        if interrupted() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(d - t0.elapsed()));
    }
    !interrupted()
}

/// Writes the files that change, in the plan's order, each read back; between
/// the controllers and the brokers it waits the nodes' re-read interval.
///
/// All or nothing: when a write fails (the host went down or stalled since it was read, its
/// directory is read-only, the read-back differs, another writer changed the file since okp
/// read it), or SIGINT/SIGTERM arrives, every node already written is written back to the bytes
/// it had, newest first, and so is the failing node when a read shows it holds the new bytes.
/// The error then says, node by node, that every file is as before; only when a node cannot be
/// put back (or cannot be read after its failed write) does it name that node as changed or
/// unknown. Interrupted: exit 130.
pub fn write(transport: &Transport, asked: &str, edits: &[Edit]) -> Result<()> {
    let p = Change { asked, edits };
    let changing: Vec<&Edit> = edits.iter().filter(|e| e.before != e.after).collect();
    if changing.is_empty() {
        return Ok(());
    }
    catch_interrupts();
    if !transport.compares() {
        crate::out::note(
            "the write template has no {cas}: okp reads each file again just before writing it, but a writer in \
             between can still be lost; put {cas} in --write-cmd (docs/hosts.md)",
        );
    }
    let record = super::journal::begin(asked, edits.iter().map(|e| (&e.node, e.before.as_str(), e.after.as_str())));
    let mut last_role = None;
    let mut written: Vec<&Edit> = Vec::new();
    for e in changing {
        if interrupted() {
            return Err(stopped(transport, &p, &written, record));
        }
        if last_role.is_some_and(|r| r != e.node.role) {
            crate::out::note(format!(
                "waiting {} s (the nodes' re-read interval) before writing the {}s",
                REREAD.as_secs(),
                if e.node.role == NodeRole::Broker { "broker" } else { "controller" }
            ));
            if !pause(REREAD + Duration::from_millis(500)) {
                return Err(stopped(transport, &p, &written, record));
            }
        }
        if let Err(why) = write_one(transport, e) {
            let (msg, undone) = undo(transport, &p, &written, Some(e), &format!("failed on {}", e.node.label()), &why);
            record.end(undone);
            return Err(Error::External(msg));
        }
        crate::out::note(format!("wrote {}", e.node.label()));
        written.push(e);
        last_role = Some(e.node.role);
    }
    if interrupted() {
        return Err(stopped(transport, &p, &written, record));
    }
    record.end(true);
    Ok(())
}

/// What `write` is writing.
struct Change<'a> {
    asked: &'a str,
    edits: &'a [Edit],
}

/// SIGINT or SIGTERM during the writes: every node written put back, each node's state on
/// stderr, exit 130.
fn stopped(transport: &Transport, p: &Change, written: &[&Edit], record: super::journal::Record) -> Error {
    let why = Error::Interrupted;
    let head = format!("interrupted (SIGINT or SIGTERM) after writing {} node(s)", written.len());
    let (msg, undone) = undo(transport, p, written, None, &head, &why);
    record.end(undone);
    crate::out::note(msg);
    Error::Interrupted
}

/// One node's write and its read-back. The node must still hold what `prepare` read: otherwise
/// another okp, the watchdog or an editor changed it meanwhile, and this change, planned from the
/// old bytes, would silently undo theirs. With `{cas}` (or local files) the node compares as it
/// swaps; without, okp reads it first.
fn write_one(transport: &Transport, e: &Edit) -> Result<()> {
    let changed = |now: &str| {
        Error::External(format!(
            "{}: observer.ids changed since okp read it ({} then, {now}): another okp, the watchdog or an editor is changing it; run the command again to plan from the file as it is",
            e.node.label(),
            quoted(&e.before),
        ))
    };
    if transport.compares() {
        if let Swap::Changed(why) = transport.swap(&e.node, &e.before, &e.after)? {
            return Err(changed(&why));
        }
    } else {
        let now = transport.read(&e.node)?;
        if now != e.before {
            return Err(changed(&format!("{} now", quoted(&now))));
        }
        transport.write(&e.node, &e.after)?;
    }
    let back = transport.read(&e.node)?;
    if back != e.after {
        return Err(Error::External(format!(
            "{}: read back {} after writing {}; the file is being changed by something else",
            e.node.label(),
            quoted(&back),
            quoted(&e.after)
        )));
    }
    Ok(())
}

/// Where one node's file stands after a failed or interrupted change.
enum After {
    /// Never written, or written and put back: the bytes it had.
    AsBefore(&'static str),
    /// Holds the new bytes: putting them back failed.
    Changed(Error),
    /// Its own write failed and it could not be read afterwards.
    Unknown(Error),
    /// Holds bytes that are neither its old nor okp's new ones: another writer put them there
    /// after okp read it; okp leaves them.
    Foreign(String),
}

/// Puts back every node in `written` (and `failed`, whose write failed, if it holds the new
/// bytes), newest first, each by compare-and-swap from okp's own bytes, so a node another writer
/// changed since is left to them. The message (`{asked} {head}; …`, `why` at the end of its first
/// line) names every changing node's state; true when every write of okp's is undone (each node as
/// before, or holding what another writer put there).
fn undo(
    transport: &Transport,
    p: &Change,
    written: &[&Edit],
    failed: Option<&Edit>,
    head: &str,
    why: &Error,
) -> (String, bool) {
    let asked = p.asked;
    crate::out::note(format!("{asked}: {why}"));
    let put_back = |e: &Edit| -> After {
        match transport.read(&e.node) {
            Ok(now) if now == e.before => return After::AsBefore("not changed"),
            Ok(now) if now != e.after => return After::Foreign(now),
            _ => {}
        }
        let swapped = if transport.compares() {
            transport.swap(&e.node, &e.after, &e.before)
        } else {
            transport.write(&e.node, &e.before).map(|_| Swap::Done)
        };
        match swapped.and_then(|s| Ok((s, transport.read(&e.node)?))) {
            Ok((_, back)) if back == e.before => After::AsBefore("put back"),
            Ok((Swap::Changed(_), now)) => After::Foreign(now),
            Ok((Swap::Done, back)) => After::Changed(Error::External(format!(
                "read back {} after putting back {}",
                quoted(&back),
                quoted(&e.before)
            ))),
            Err(err) => After::Changed(err),
        }
    };
    let mut states: Vec<(&Edit, After)> = Vec::new();
    if let Some(f) = failed {
        let own = match transport.read(&f.node) {
            Ok(now) if now == f.before => After::AsBefore("not changed"),
            Ok(now) if now == f.after => put_back(f),
            Ok(now) => After::Foreign(now),
            Err(err) => After::Unknown(err),
        };
        states.push((f, own));
    }
    for e in written.iter().rev() {
        let s = put_back(e);
        if matches!(s, After::AsBefore(_)) {
            crate::out::note(format!("put back {}", e.node.label()));
        }
        states.push((e, s));
    }
    let touched = |e: &Edit| states.iter().any(|(s, _)| std::ptr::eq(*s, e));
    let never: Vec<&Edit> = p.edits.iter().filter(|e| e.before != e.after && !touched(e)).collect();
    let untouched = never.len();
    let all_back = states.iter().all(|(_, s)| matches!(s, After::AsBefore(_)));
    let undone = states.iter().all(|(_, s)| matches!(s, After::AsBefore(_) | After::Foreign(_)));
    let put = states.iter().filter(|(_, s)| matches!(s, After::AsBefore("put back"))).count();
    let mut msg = if all_back {
        format!(
            "{asked} {head}; every node's observer.ids is as before ({put} put back, {untouched} never written): {why}"
        )
    } else if undone {
        format!(
            "{asked} {head}; every write of okp's is undone ({put} put back, {untouched} never written) and {} node(s) hold what another writer put there, left as they are: {why}",
            states.iter().filter(|(_, s)| matches!(s, After::Foreign(_))).count()
        )
    } else {
        format!("{asked} {head} and NOT every node's observer.ids is as before: {why}")
    };
    for (e, s) in &states {
        let line = match s {
            After::AsBefore(how) => format!("{}: as before ({how})", e.node.label()),
            After::Changed(err) => format!(
                "{}: CHANGED, holds the new {} (putting back its {} failed: {err}); fix it by hand",
                e.node.label(),
                quoted(&e.after),
                quoted(&e.before)
            ),
            After::Foreign(now) => format!(
                "{}: changed by another writer, holds {} (okp read {}); left as it is",
                e.node.label(),
                quoted(now),
                quoted(&e.before)
            ),
            After::Unknown(err) => format!(
                "{}: UNKNOWN, its write failed and it cannot be read ({err}); it holds its old {} or the new {}",
                e.node.label(),
                quoted(&e.before),
                quoted(&e.after)
            ),
        };
        msg.push_str("\n  ");
        msg.push_str(&line);
    }
    for e in never {
        msg.push_str(&format!("\n  {}: as before (never written)", e.node.label()));
    }
    (msg, undone)
}
