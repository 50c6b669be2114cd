//! The soak's live half: one patched cluster, the seeded schedule applied while two
//! continuous acks=all producers (idempotent and not) and one continuous read_committed
//! consumer run (okp's own client, `client`), the partition's state sampled every half
//! second; then the producers stopped, every fault healed, the consumer caught up to the high
//! watermark, one more read of the whole partition with the release's console consumer, and the
//! history written and checked.
//!
//! Not here: the schedule and the checker (`soak`), the client JVMs (`client`), jars (`verify`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{check, report, Event, Fault, History, ScheduledFault};
use crate::cluster::client;
use crate::cluster::journal::Journal;
use crate::cluster::runtime::Runtime;
use crate::cluster::{Cluster, Timers, OBSERVER};
use crate::error::{Error, Outcome, Result};
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
    /// Schedule unclean elections too (`--soak-unclean`): the operator accepts their data loss.
    pub unclean: bool,
}

const TOPIC: &str = "soak";

pub fn run(ws: &Workspace, o: Options) -> Result<Outcome> {
    let name = format!("{}-{}-seed{}", o.release.version, o.mode, o.seed);
    let build = crate::verify::patched_jars(ws, &o.release, o.mode, &o.layers, None)?;
    let rt = Runtime::assemble(&ws.maven, o.release.version, Some(&build))?;
    let (run_dir, staging) = crate::verify::publish::run_dir("soak", &name)?;
    let journal = Journal::new(&staging, &run_dir);
    let mut c =
        Cluster::up(o.mode, rt, o.timers.clone(), &run_dir, o.base_port, journal, crate::cluster::Homes::Shared)?;
    let result = drive(&mut c, &o);
    c.journal.begin("teardown", "teardown");
    c.down();
    let history = result?;
    let verdict = check(&history);
    let text = report(&history, &verdict);
    let dir = c.journal.dir().to_path_buf();
    history.write(&dir)?;
    std::fs::write(dir.join("verdict.txt"), &text).map_err(|e| Error::io("cannot write verdict.txt", e))?;
    let dest = o.evidence.join("soak").join(&name);
    // Beside the old evidence, then renamed over it: a kill leaves the old soak or the new one.
    crate::verify::publish(&dir, &dest)?;
    crate::out::print(&format!("{text}evidence: {}\n", dest.display()))?;
    if verdict.ok() {
        let _ = std::fs::remove_dir_all(&run_dir);
    } else {
        crate::out::note(format!("soak {name}: run directory (node logs) kept at {}", run_dir.display()));
    }
    Ok(Outcome::check(verdict.ok()))
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

/// Each producer sends one record every this many milliseconds (5 a second each): enough to
/// have writes in flight at every fault, few enough that a 30-minute history stays a few MB.
const SEND_INTERVAL_MS: u64 = 200;
/// The soak topic's assignment outside a reassignment fault: three primaries and the observer.
const ASSIGNMENT: [i32; 4] = [1, 2, 3, 4];

/// The continuous clients: two producers (idempotent and not) and one read_committed consumer.
struct Clients {
    java: PathBuf,
    jvm: Vec<String>,
    classpath: String,
    boot: String,
    logs: PathBuf,
    t0: Instant,
    running: Vec<(Role, client::Client)>,
    /// Clients that ended early (a JVM that died), with their lines.
    ended: Vec<(Role, String, Vec<client::Line>, bool)>,
    restarts: u32,
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Producer { idempotent: bool },
    Consumer,
}

impl Clients {
    fn start(&mut self, role: Role) -> Result<()> {
        let n = self.restarts;
        let name = match role {
            Role::Producer { idempotent: true } => format!("pi{n}"),
            Role::Producer { idempotent: false } => format!("pp{n}"),
            Role::Consumer => format!("rc{n}"),
        };
        let args: Vec<String> = match role {
            Role::Producer { idempotent } => vec![
                "produce".into(),
                self.boot.clone(),
                TOPIC.into(),
                name.clone(),
                idempotent.to_string(),
                SEND_INTERVAL_MS.to_string(),
            ],
            Role::Consumer => vec!["consume".into(), self.boot.clone(), TOPIC.into(), name.clone()],
        };
        let err = self.logs.join(format!("client-{name}.err"));
        let c = client::Client::spawn(&name, &self.java, &self.jvm, &self.classpath, &args, &err, self.t0)?;
        self.running.push((role, c));
        Ok(())
    }

    /// A client whose JVM died is kept with its lines and started again under a new name.
    fn keep_alive(&mut self, journal: &mut Journal) -> Result<()> {
        let mut i = 0;
        while i < self.running.len() {
            if self.running[i].1.alive() {
                i += 1;
                continue;
            }
            let (role, c) = self.running.remove(i);
            let name = c.name.clone();
            let (lines, _) = c.stop(Duration::from_secs(1));
            journal.note(&format!("client {name} exited during the soak; started again"));
            self.ended.push((role, name, lines, false));
            self.restarts += 1;
            self.start(role)?;
        }
        Ok(())
    }

    fn stop(&mut self, which: impl Fn(Role) -> bool) {
        let (stop, keep): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.running).into_iter().partition(|(r, _)| which(*r));
        self.running = keep;
        for (role, c) in stop {
            let name = c.name.clone();
            let (lines, done) = c.stop(Duration::from_secs(60));
            self.ended.push((role, name, lines, done));
        }
    }

    fn consumer_offset(&self) -> Option<i64> {
        self.running.iter().find(|(r, _)| *r == Role::Consumer).and_then(|(_, c)| c.last_read_offset())
    }
}

fn drive(c: &mut Cluster, o: &Options) -> Result<History> {
    c.journal.begin("soak", "soak: producers, consumer, faults, states");
    let out = c.create_topic(TOPIC, "1:2:3:4", &["min.insync.replicas=2"])?;
    if !out.ok() {
        return Err(Error::External(format!("creating topic {TOPIC} failed: {}", out.stderr)));
    }
    c.wait_state(TOPIC, Duration::from_secs(30), |s| s.leader.is_some(), |_| {})?;
    let mut names: Vec<String> = crate::cluster::BROKERS.iter().map(|b| format!("broker-{b}")).collect();
    names.extend(c.controllers().iter().map(|id| format!("controller-{id}")));
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let plan: Vec<ScheduledFault> = super::schedule(o.seed, o.duration.as_millis() as u64, &refs, o.unclean);
    c.journal.note(&format!("seed {}: {} faults scheduled: {plan:?}", o.seed, plan.len()));

    let client_dir = c.run_dir.join("soak-client");
    std::fs::create_dir_all(&client_dir)
        .map_err(|e| Error::io(format!("cannot create {}", client_dir.display()), e))?;
    let classes = c.okp_client_classes()?;
    c.journal.note(&format!(
        "clients: okp's OkpSoakClient compiled against the release's classpath; producers pi (idempotent) and pp \
         (not), acks=all, one record every {SEND_INTERVAL_MS} ms each; consumer rc, read_committed, partition 0 \
         from offset 0"
    ));
    let t0 = Instant::now();
    let ms = |t0: Instant| t0.elapsed().as_millis() as u64;
    let mut clients = Clients {
        java: c.rt.java.clone(),
        jvm: c.tools.jvm.clone(),
        classpath: format!("{}:{}", c.tools.classpath, classes.display()),
        boot: c.bootstrap(&[]),
        logs: client_dir,
        t0,
        running: Vec::new(),
        ended: Vec::new(),
        restarts: 0,
    };
    for role in [Role::Consumer, Role::Producer { idempotent: true }, Role::Producer { idempotent: false }] {
        clients.start(role)?;
    }
    let mut events = Vec::new();
    let mut held: Vec<Held> = Vec::new();
    let mut next = 0;
    while t0.elapsed() < o.duration {
        crate::cluster::node::check_interrupt()?;
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
            if let Some(t) = start(c, &f.fault, t0, &mut events)? {
                held.push(Held {
                    until: t0.elapsed() + Duration::from_millis(f.hold_ms),
                    fault: f.fault,
                    started_ms: t,
                });
            }
        }
        clients.keep_alive(&mut c.journal)?;
        sample(c, t0, &mut events);
        std::thread::sleep(Duration::from_millis(500));
    }
    // Producers stop first (each answers everything in flight), then every fault is healed.
    clients.stop(|r| r != Role::Consumer);
    for h in std::mem::take(&mut held) {
        heal(c, &h.fault, h.started_ms, t0, &mut events)?;
    }
    // The assignment back as it was and every primary back in the ISR before the reads end.
    c.wait_state(
        TOPIC,
        Duration::from_secs(120),
        |s| s.replicas == ASSIGNMENT && [1, 2, 3].iter().all(|b| s.in_isr(*b)),
        |_| {},
    )?;
    sample(c, t0, &mut events);
    // The continuous consumer reads up to the high watermark, then stops.
    let hw = c.probe_hw(TOPIC).unwrap_or(0);
    let caught_up = Instant::now();
    while clients.consumer_offset().map_or(-1, |o| o + 1) < hw && caught_up.elapsed() < Duration::from_secs(90) {
        std::thread::sleep(Duration::from_millis(200));
    }
    c.journal.note(&format!(
        "high watermark {hw}; consumer at {:?} after {:.1} s",
        clients.consumer_offset(),
        caught_up.elapsed().as_secs_f64()
    ));
    clients.stop(|_| true);
    let sends = history_of_clients(&clients.ended, &mut events, &mut c.journal);
    // And one read of the whole partition with the release's own console consumer.
    let values = c.consume(TOPIC, sends + 1000, true, &[])?;
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
    for (_, name, _, done) in &clients.ended {
        events.push(Event::Process { t_ms: t, node: format!("client-{name}"), alive: *done });
    }
    // Client lines arrived out of order with the main loop's events: one timeline for the checker.
    events.sort_by_key(Event::t_ms);
    Ok(History {
        schema: super::SCHEMA.current,
        seed: o.seed,
        duration_ms: o.duration.as_millis() as u64,
        observer: OBSERVER,
        events,
    })
}

/// The clients' lines as history events; returns how many records were sent.
fn history_of_clients(
    ended: &[(Role, String, Vec<client::Line>, bool)],
    events: &mut Vec<Event>,
    journal: &mut Journal,
) -> usize {
    let mut sends = 0;
    for (role, name, lines, done) in ended {
        let (mut acked, mut failed, mut read, mut unread) = (0, 0, 0, 0);
        for l in lines {
            match (client::parse(&l.text), role) {
                // An ack carries where the record landed; an error, nothing: it may or may not be in the log.
                (Some(said @ (client::Said::Ack { .. } | client::Said::Err { .. })), Role::Producer { idempotent }) => {
                    let (value, at) = match said {
                        client::Said::Ack { value, partition, offset, .. } => (value, Some((partition, offset))),
                        client::Said::Err { value, .. } => (value, None),
                        _ => continue,
                    };
                    if at.is_some() {
                        acked += 1;
                    } else {
                        failed += 1;
                    }
                    events.push(Event::Send {
                        t_ms: l.t_ms,
                        producer: name.clone(),
                        idempotent: *idempotent,
                        value,
                        acked: at.is_some(),
                        partition: at.map_or(0, |a| a.0),
                        offset: at.map(|a| a.1),
                    });
                }
                (Some(client::Said::Read { session, partition, offset, value }), Role::Consumer) => {
                    read += 1;
                    events.push(Event::Read {
                        t_ms: l.t_ms,
                        consumer: name.clone(),
                        session,
                        partition,
                        offset,
                        value,
                    });
                }
                (Some(client::Said::Note(text)), _) => journal.note(&format!("client {name}: {text}")),
                (Some(client::Said::Done), _) => {}
                _ => unread += 1,
            }
        }
        sends += acked + failed;
        journal.note(&format!(
            "client {name}: {acked} acknowledged, {failed} failed sends, {read} records read, {unread} lines not \
             understood, finished by itself: {done}"
        ));
    }
    sends
}

fn sample(c: &mut Cluster, t0: Instant, events: &mut Vec<Event>) {
    if let (Some(s), Some(hw)) = (c.probe_state(TOPIC), c.probe_hw(TOPIC)) {
        events.push(Event::State {
            t_ms: t0.elapsed().as_millis() as u64,
            partition: 0,
            leader: s.leader,
            isr: s.isr,
            high_watermark: hw,
            replicas: s.replicas,
        });
    }
}

/// Starts a fault; Some(the time it is recorded at) when it is held until healed. A fault is
/// recorded when it began, except an unclean election: when the election was asked for, since
/// every record acknowledged until then may be lost by it.
fn start(c: &mut Cluster, f: &Fault, t0: Instant, events: &mut Vec<Event>) -> Result<Option<u64>> {
    let mut t_ms = t0.elapsed().as_millis() as u64;
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
        Fault::ObserverIds { promoted: false } => return Ok(None),
        Fault::ObserverIdsGarbage { node } => {
            let id = node_id(node).unwrap_or(1);
            // Tokens that are not ids, around the one that is: the contract ignores them, so the set
            // stays {4} (docs/observer-ids.md). A file of only such tokens reads as "no observers",
            // a promotion on that node: the first 30-minute soak, whose garbage was "not-an-id, 4x",
            // let 4 into the ISR of the partition that node led (docs/soak.md, findings).
            c.set_observers(&[id], "not-an-id, 4 %%@@!! 4x # junk\n")?;
            true
        }
        Fault::ObserverIdsDeleted { node } => {
            c.delete_observers(node_id(node).unwrap_or(1))?;
            true
        }
        Fault::PreferredElection => {
            let _ = c.elect(TOPIC, "preferred", &[]);
            false
        }
        // Only with --soak-unclean, the operator's explicit choice of data loss: primary 3 paused
        // until it has left the ISR, primaries 1 and 2 killed, 3 continued, and an unclean election
        // asked for. Only 3, stale, may lead (never the observer); what 3 lacks is lost, and the
        // checker lists it as accepted. Healed by restarting 1 and 2.
        Fault::UncleanElection => {
            c.freeze(3);
            let (left, _) = c.wait_state(TOPIC, Duration::from_secs(30), |s| !s.in_isr(3), |_| {})?;
            c.kill9(1);
            c.kill9(2);
            c.thaw(3);
            if left.is_none() {
                c.journal.note("broker 3 did not leave the ISR within 30 s; the unclean election goes ahead");
            }
            t_ms = t0.elapsed().as_millis() as u64;
            let out = c.elect(TOPIC, "unclean", &[1, 2])?;
            c.journal.note(&format!("unclean election: rc {}", out.rc));
            true
        }
        // Away from the steady assignment: the observer removed, or primary 3 moved out (the
        // partition then runs on two primaries and the observer). `--additional` replaces a
        // reassignment still in progress.
        Fault::Reassign { add } => {
            let target: &[i32] = if *add { &[1, 2, 4] } else { &[1, 2, 3] };
            let out = c.reassign_with(TOPIC, target, &["--execute", "--additional"])?;
            if !out.ok() {
                c.journal.note(&format!("{f:?}: the reassignment tool failed (rc {}); nothing to undo", out.rc));
                return Ok(None);
            }
            true
        }
    };
    events.push(Event::Fault { t_ms, end_ms: None, fault: f.clone() });
    Ok(held.then_some(t_ms))
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
        Fault::ObserverIdsGarbage { node } | Fault::ObserverIdsDeleted { node } => {
            c.set_observers(&[node_id(node).unwrap_or(1)], "4\n")?
        }
        Fault::UncleanElection => {
            c.restart(1)?;
            c.restart(2)?;
        }
        Fault::Reassign { .. } => {
            // Back to the steady assignment; a node down may make the tool fail once: try again.
            for attempt in 0..5 {
                if c.reassign_with(TOPIC, &ASSIGNMENT, &["--execute", "--additional"])?.ok() {
                    break;
                }
                c.journal
                    .note(&format!("reassignment back to {ASSIGNMENT:?} failed (attempt {attempt}); again in 3 s"));
                std::thread::sleep(Duration::from_secs(3));
            }
        }
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
