//! The soak's live half: one patched cluster, the seeded schedule applied
//! while acks=all producers (idempotent and not) write in batches, the
//! partition's state sampled between them, then every fault healed, every
//! record read back read_committed, the history written and checked.
//!
//! Producers here are the release's console producer, one JVM per batch, so
//! writes come in bursts a few seconds apart rather than as one stream; the
//! final read is one read_committed console consumer over the whole
//! partition (offsets are positions in it: the producers are not
//! transactional, so the log has no control records). Reassignments are not
//! driven yet: the schedule's reassign faults are journaled as skipped.
//!
//! Not here: the schedule and the checker (`soak`), jars (`verify`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{check, report, Event, Fault, History, ScheduledFault};
use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, Timers, OBSERVER};
use crate::error::{Error, Outcome as Exit, Result};
use crate::model::{Layers, Mode, Release};
use crate::workspace::Workspace;

pub struct Options {
    pub release: Release,
    pub mode: Mode,
    pub layers: Layers,
    pub duration: Duration,
    pub seed: u64,
    pub timers: Timers,
    pub evidence: PathBuf,
    pub base_port: Option<u16>,
}

const TOPIC: &str = "soak";
const BATCH: usize = 50;

pub fn run(ws: &Workspace, o: Options) -> Result<Exit> {
    let name = format!("{}-{}-seed{}", o.release.version, o.mode, o.seed);
    let build = crate::verify::patched_jars(ws, &o.release, o.mode, &o.layers, None)?;
    let rt = Runtime::assemble(&ws.maven, o.release.version, Some(&build))?;
    let run_dir = tempfile::Builder::new()
        .prefix(&format!("okp-soak-{name}-"))
        .tempdir()
        .map_err(|e| Error::io("cannot create the run directory", e))?
        .keep();
    let staging = run_dir.join("evidence");
    let journal = Journal::new(&staging, &run_dir);
    eprintln!("okp: soak {name}: run directory {}", run_dir.display());
    let mut c =
        Cluster::up(o.mode, rt, o.timers.clone(), &run_dir, o.base_port, journal, crate::cluster::Homes::Shared)?;
    let result = drive(&mut c, &o);
    c.journal.begin("teardown", "teardown");
    c.down();
    let history = result?;
    let verdict = check(&history);
    let text = report(&history, &verdict);
    let dir = c.journal.dir().to_path_buf();
    crate::schema::write(&dir.join("history.json"), &history)?;
    std::fs::write(dir.join("verdict.txt"), &text).map_err(|e| Error::io("cannot write verdict.txt", e))?;
    let dest = o.evidence.join("soak").join(&name);
    publish(&dir, &dest)?;
    crate::out::print(&format!("{text}evidence: {}\n", dest.display()))?;
    if verdict.ok() {
        let _ = std::fs::remove_dir_all(&run_dir);
    } else {
        eprintln!("okp: soak {name}: run directory (node logs) kept at {}", run_dir.display());
    }
    Ok(Exit::check(verdict.ok()))
}

fn publish(from: &Path, to: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).map_err(|e| Error::io(format!("cannot create {}", to.display()), e))?;
    for e in std::fs::read_dir(from).map_err(|e| Error::io("cannot read the staging directory", e))?.flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))
                .map_err(|er| Error::io(format!("cannot copy {}", e.path().display()), er))?;
        }
    }
    Ok(())
}

/// A fault being held: what undoes it, and when.
struct Held {
    until: Duration,
    fault: Fault,
    started_ms: u64,
}

fn node_id(name: &str) -> Option<i32> {
    name.rsplit('-').next().and_then(|n| n.parse().ok())
}

fn drive(c: &mut Cluster, o: &Options) -> Result<History> {
    c.journal.begin("soak", "soak: producers, faults, states");
    let out = c.create_topic(TOPIC, "1:2:3:4", &["min.insync.replicas=2"])?;
    if !out.ok() {
        return Err(Error::External(format!("creating topic {TOPIC} failed: {}", out.stderr)));
    }
    c.wait_state(TOPIC, Duration::from_secs(30), |s| s.leader.is_some(), |_| {})?;
    let mut names: Vec<String> = crate::cluster::BROKERS.iter().map(|b| format!("broker-{b}")).collect();
    names.extend(c.controllers().iter().map(|id| format!("controller-{id}")));
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let plan: Vec<ScheduledFault> = super::schedule(o.seed, o.duration.as_millis() as u64, &refs, false);
    c.journal.note(&format!("seed {}: {} faults scheduled: {plan:?}", o.seed, plan.len()));
    let t0 = Instant::now();
    let ms = |t0: Instant| t0.elapsed().as_millis() as u64;
    let mut events = Vec::new();
    let mut held: Vec<Held> = Vec::new();
    let mut next = 0;
    let mut batch = 0;
    while t0.elapsed() < o.duration {
        // Heal what is due, then start what is due.
        let now = t0.elapsed();
        let (due, keep): (Vec<Held>, Vec<Held>) = held.into_iter().partition(|h| h.until <= now);
        held = keep;
        for h in due {
            heal(c, &h.fault, h.started_ms, t0, &mut events)?;
        }
        while next < plan.len() && Duration::from_millis(plan[next].at_ms) <= t0.elapsed() {
            let f = plan[next].clone();
            next += 1;
            let t = ms(t0);
            if start(c, &f.fault, t, &mut events)? {
                held.push(Held {
                    until: t0.elapsed() + Duration::from_millis(f.hold_ms),
                    fault: f.fault,
                    started_ms: t,
                });
            }
        }
        // One batch from each producer kind, alternately.
        let idempotent = batch % 2 == 0;
        let tag = format!("s{batch}");
        let t = ms(t0);
        let p = if idempotent {
            c.produce(TOPIC, &tag, BATCH, &[])?
        } else {
            c.produce_not_idempotent(TOPIC, &tag, BATCH, &[])?
        };
        for v in &p.values {
            events.push(Event::Send {
                t_ms: t,
                producer: if idempotent { "idempotent" } else { "plain" }.into(),
                idempotent,
                value: v.clone(),
                acked: true,
                partition: 0,
                offset: None,
            });
        }
        batch += 1;
        sample(c, t0, &mut events);
    }
    for h in std::mem::take(&mut held) {
        heal(c, &h.fault, h.started_ms, t0, &mut events)?;
    }
    // Every primary back in the ISR before the read.
    c.wait_state(TOPIC, Duration::from_secs(120), |s| [1, 2, 3].iter().all(|b| s.in_isr(*b)), |_| {})?;
    sample(c, t0, &mut events);
    let acked = events.iter().filter(|e| matches!(e, Event::Send { .. })).count();
    let values = c.consume(TOPIC, acked + BATCH * batch, true, &[])?;
    let t = ms(t0);
    for (i, v) in values.into_iter().enumerate() {
        events.push(Event::Read {
            t_ms: t,
            consumer: "final".into(),
            session: 0,
            partition: 0,
            offset: i as i64,
            value: v,
        });
    }
    let t = ms(t0);
    for n in c.nodes.iter_mut() {
        let alive = n.is_running() && !n.is_frozen();
        events.push(Event::Process { t_ms: t, node: n.name.clone(), alive });
    }
    Ok(History {
        schema: super::SCHEMA.current,
        seed: o.seed,
        duration_ms: o.duration.as_millis() as u64,
        observer: OBSERVER,
        events,
    })
}

fn sample(c: &mut Cluster, t0: Instant, events: &mut Vec<Event>) {
    if let (Some(s), Some(hw)) = (c.probe_state(TOPIC), c.probe_hw(TOPIC)) {
        events.push(Event::State {
            t_ms: t0.elapsed().as_millis() as u64,
            partition: 0,
            leader: s.leader,
            isr: s.isr,
            high_watermark: hw,
        });
    }
}

/// Starts a fault; false when it needs no healing (or is not driven).
fn start(c: &mut Cluster, f: &Fault, t_ms: u64, events: &mut Vec<Event>) -> Result<bool> {
    let all = c.kafka_nodes();
    let held = match f {
        Fault::Kill { node } => node_id(node).map(|id| c.kill9(id)).is_some(),
        Fault::Pause { node } => node_id(node).map(|id| c.freeze(id)).is_some(),
        Fault::ObserverIds { promoted: true } => {
            events.push(Event::Promoted { t_ms, broker: OBSERVER, promoted: true });
            c.set_observers(&all, "")?;
            true
        }
        // The observer is demoted whenever no promotion is held: nothing to do.
        Fault::ObserverIds { promoted: false } => return Ok(false),
        Fault::ObserverIdsGarbage { node } => {
            let id = node_id(node).unwrap_or(1);
            c.set_observers(&[id], "not-an-id, 4x\n")?;
            true
        }
        Fault::PreferredElection => {
            let _ = c.elect(TOPIC, "preferred", &[]);
            false
        }
        Fault::UncleanElection => false,
        Fault::Reassign { .. } => {
            c.journal.note(&format!("{f:?}: not driven yet, skipped"));
            return Ok(false);
        }
    };
    events.push(Event::Fault { t_ms, end_ms: None, fault: f.clone() });
    Ok(held)
}

/// Undoes a held fault and records when it ended.
fn heal(c: &mut Cluster, f: &Fault, started_ms: u64, t0: Instant, events: &mut Vec<Event>) -> Result<()> {
    let all = c.kafka_nodes();
    match f {
        Fault::Kill { node } => {
            if let Some(id) = node_id(node) {
                c.restart(id)?;
            }
        }
        Fault::Pause { node } => {
            if let Some(id) = node_id(node) {
                c.thaw(id);
            }
        }
        Fault::ObserverIds { promoted: true } => {
            c.set_observers(&all, "4\n")?;
            // The observer is an observer again only once it has left the ISR and leadership.
            c.wait_state(
                TOPIC,
                Duration::from_secs(60),
                |s| !s.in_isr(OBSERVER) && s.leader != Some(OBSERVER),
                |_| {},
            )?;
            let t_ms = t0.elapsed().as_millis() as u64;
            events.push(Event::Promoted { t_ms, broker: OBSERVER, promoted: false });
        }
        Fault::ObserverIdsGarbage { node } => c.set_observers(&[node_id(node).unwrap_or(1)], "4\n")?,
        _ => {}
    }
    let end = t0.elapsed().as_millis() as u64;
    for e in events.iter_mut().rev() {
        if let Event::Fault { t_ms, end_ms, fault } = e {
            if *t_ms == started_ms && fault == f {
                *end_ms = Some(end);
                break;
            }
        }
    }
    Ok(())
}
