//! PROM: okp's alert rules on a live cluster. Every node runs the JMX exporter with okp's rules,
//! a Prometheus server scrapes them every second and evaluates contrib/monitoring's alerts
//! rendered for this cluster's timers; node_exporter serves `okp observers status --format
//! prometheus`. The scenario creates each condition an alert describes, one at a time, and holds
//! the alert's life as Prometheus's own API reports it against the scenario's timeline:
//! silent in steady state, pending once the condition shows, firing no sooner than its `for:`
//! and no later than `for:` plus the condition's onset and two scrapes, resolved once the
//! condition ends, and no other alert firing meanwhile but those the condition also makes true.
//!
//! The series each episode ran on are written out as `promtool test rules` files
//! (PROM-series/, with the alerts Prometheus fired as the expected ones) and run through
//! promtool at once: the same rules over the same series must decide the same offline.
//! contrib/monitoring/tests/ holds one run's files (tests/it/monitoring.rs runs them).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{Ctx, ScenarioResult};
use crate::cluster::OBSERVER;
use crate::error::{Error, Result};
use crate::monitoring::alerts;
use crate::monitoring::prom::{Prom, Transition};

const TOPIC: &str = "prom";
const LEADER: i32 = 1;

/// okp's alerts each scenario of the suite may fire on okp's clusters (their `for:` rendered for
/// replica.lag.time.max.ms 3 s: 5-16 s), because it holds the alert's condition on purpose for
/// longer than that. Any other alert firing while a scenario runs is a false positive. The reason
/// is beside each; a scenario not listed makes none of the conditions (INIT, TXN).
pub fn expected_alerts(id: &str) -> &'static [&'static str] {
    const NOT_CAUGHT_UP: &str = "OkpObserverNotCaughtUp";
    const PRIMARIES: &str = "OkpPrimariesUnderReplicated";
    const IN_ISR: &str = "OkpObserverInIsr";
    const EMPTIED: &str = "OkpObserverSetEmptied";
    const SIZES: &str = "OkpObserverSetsDiffer";
    const FILES: &str = "OkpObserverIdsFilesDisagree";
    match id {
        // The observer frozen or killed under writes.
        "LAT" | "S3" => &[NOT_CAUGHT_UP],
        // A primary killed (the leader, a follower; in ZooKeeper mode S8's controller is a broker).
        "S1" | "S2" | "S8" => &[PRIMARIES],
        // A lagging observer promoted (the files emptied), then demoted.
        "S5" | "DEM" => &[NOT_CAUGHT_UP, EMPTIED, PRIMARIES],
        // Demoted on every node but its leader's, which is then killed: the files disagree and
        // the stale ISR names the observer.
        "STALE" => &[IN_ISR, PRIMARIES, EMPTIED, SIZES, FILES, NOT_CAUGHT_UP],
        // Two primaries killed, the observer promoted (every file emptied), demoted after.
        "AUTO" | "S4" => &[PRIMARIES, EMPTIED, NOT_CAUGHT_UP, IN_ISR],
        // The files made to disagree, some emptied.
        "S6" => &[FILES, SIZES, EMPTIED, IN_ISR, PRIMARIES],
        // Garbage, unreadable and deleted files: the status job cannot read a node's file.
        "S7" => &["OkpObserverIdsMalformed", "OkpObserversStatusDown", FILES, SIZES, EMPTIED],
        // Two observers, one promoted: the sets change size node by node.
        "MULTI" => &[SIZES, FILES, EMPTIED, NOT_CAUGHT_UP, PRIMARIES],
        // The followers held out of the ISR, then the observer frozen.
        "FFO" => &[PRIMARIES, NOT_CAUGHT_UP],
        // The observer frozen, a follower demoted, the leader named in every file (stuck in the ISR).
        "MET" => &[NOT_CAUGHT_UP, IN_ISR, SIZES, FILES, PRIMARIES],
        // A primary moved out and back, the observer added (copying) and removed.
        "REASSIGN" => &[PRIMARIES, NOT_CAUGHT_UP],
        // Rules swapped live with 4 frozen (a full replica of one topic: out of its ISR); a
        // pattern rule the registries refuse (malformed) written on purpose.
        "TOPIC" => {
            &[PRIMARIES, NOT_CAUGHT_UP, FILES, "OkpObserverRuleNoLiveBroker", IN_ISR, SIZES, "OkpObserverIdsMalformed"]
        }
        // Controllers and brokers restarted; an observer leading after a promotion.
        "PREF" => &[PRIMARIES, IN_ISR, EMPTIED, NOT_CAUGHT_UP, SIZES, FILES],
        // Every node restarted in turn, first back onto the release's own jars (no observer
        // gauges), then with the bundle before its file names the observer (an empty set).
        "ROLL" => &[PRIMARIES, NOT_CAUGHT_UP, "OkpObserversStatusDown", EMPTIED, SIZES, FILES],
        _ => &[],
    }
}

/// In a monitored run, the alerts that went firing while scenario `id` ran (since `from`, on
/// `p`'s clock): a fact, and a check that each is one the scenario's own conditions explain.
pub fn judge_alerts(id: &str, p: &Prom, from: f64, o: &mut ScenarioResult) {
    let fired = fired_between(p, from, p.now());
    o.fact("alerts_fired", &fired);
    if id == "PROM" {
        return;
    }
    let allowed = expected_alerts(id);
    let unexplained: Vec<&String> =
        fired.iter().filter(|a| !allowed.iter().any(|n| a.starts_with(&format!("{n}{{")))).collect();
    o.check(
        &format!("no okp alert fired that {id}'s own conditions do not explain (allowed: {allowed:?})"),
        unexplained.is_empty(),
        if unexplained.is_empty() {
            format!("{} fired, all expected", fired.len())
        } else {
            format!("unexplained: {unexplained:?}")
        },
    );
}

/// Why PROM cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    crate::monitoring::prom::unavailable()
}

/// A window of the run recorded as a promtool test: its name, the alert it is about, its start
/// and end (seconds of Prometheus's clock).
type Window = (&'static str, Option<&'static str>, f64, f64);

/// What the episodes share: the rules (their `for:`), the windows recorded, the dashboard panels
/// that answered, what each episode saw.
struct Log {
    rules: Vec<alerts::Alert>,
    windows: Vec<Window>,
    answered: std::collections::BTreeSet<String>,
    seen: Vec<Seen>,
}

impl Log {
    /// One episode (`episode`), its alert's `for:` from the rules, what it saw kept.
    fn run(
        &mut self,
        x: &mut Ctx,
        o: &mut ScenarioResult,
        ep: Episode,
        create: impl FnOnce(&mut Ctx) -> Result<()>,
        end: impl FnOnce(&mut Ctx) -> Result<()>,
        resolve_within: Option<Duration>,
    ) -> Result<()> {
        let for_s = self.rules.iter().find(|a| a.name == ep.alert).map_or(0, |a| a.for_s);
        let seen = episode(x, o, &ep, for_s, &mut self.windows, &mut self.answered, create, end, resolve_within)?;
        self.seen.push(seen);
        Ok(())
    }
}

fn ep(
    name: &'static str,
    alert: &'static str,
    label: Option<(&'static str, &'static str)>,
    also: &'static [&'static str],
    onset: Duration,
) -> Episode {
    Episode { name, alert, label, also, onset }
}

/// One condition and the alert it must raise.
struct Episode {
    name: &'static str,
    alert: &'static str,
    /// A label the alert must carry (e.g. topic=prom), if any.
    label: Option<(&'static str, &'static str)>,
    /// Other alerts the condition makes true as well (they may fire meanwhile).
    also: &'static [&'static str],
    /// How long after the condition is created it can first show in the gauges (the ISR rule's
    /// replica.lag.time.max.ms, the files' TTL, the status job's period).
    onset: Duration,
}

/// What one episode saw, in seconds of Prometheus's clock.
#[derive(Debug, Clone, serde::Serialize)]
struct Seen {
    episode: &'static str,
    alert: &'static str,
    for_s: u64,
    created_at: f64,
    pending_at: Option<f64>,
    firing_at: Option<f64>,
    ended_at: Option<f64>,
    resolved_at: Option<f64>,
    others_firing: Vec<String>,
}

fn matches(t: &Transition, alert: &str, label: Option<(&str, &str)>) -> bool {
    t.alert == alert && label.is_none_or(|(k, v)| t.labels.get(k).is_some_and(|x| x == v))
}

/// The first transition of `alert` to `state` at or after `since`.
fn first(p: &Prom, alert: &str, label: Option<(&str, &str)>, state: &str, since: f64) -> Option<f64> {
    p.timeline().into_iter().find(|t| t.at >= since && t.state == state && matches(t, alert, label)).map(|t| t.at)
}

/// Whether no instance of `alert` (with `label`) is pending or firing now, as the poller last saw.
fn quiet(p: &Prom, alert: &str, label: Option<(&str, &str)>) -> bool {
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for t in p.timeline().into_iter().filter(|t| matches(t, alert, label)) {
        last.insert(t.shown(), t.state);
    }
    last.values().all(|s| s == "inactive")
}

/// Alerts (name and labels) that went firing in [from, to].
fn fired_between(p: &Prom, from: f64, to: f64) -> Vec<String> {
    let v: std::collections::BTreeSet<String> = p
        .timeline()
        .into_iter()
        .filter(|t| t.at >= from && t.at <= to && t.state == "firing")
        .map(|t| format!("{}{{{}}}", t.alert, t.shown()))
        .collect();
    v.into_iter().collect()
}

/// The shipped dashboard's queries as Grafana runs them with every variable on All: each as
/// `title: query` (what `answered` holds) and the query.
fn dashboard_queries() -> Result<Vec<(String, String)>> {
    let panels = crate::monitoring::dashboard::panel_queries(crate::monitoring::DASHBOARD).map_err(Error::Harness)?;
    Ok(panels
        .into_iter()
        .map(|(title, expr)| {
            let expr = crate::monitoring::dashboard::all_selected(&expr);
            (format!("{title}: {expr}"), expr)
        })
        .collect())
}

/// Runs every dashboard query against the live server and adds to `answered` those that
/// returned a series.
fn probe_panels(p: &Prom, answered: &mut std::collections::BTreeSet<String>) {
    for (key, expr) in dashboard_queries().unwrap_or_default() {
        if p.query(&expr).is_ok_and(|r| !r.is_empty()) {
            answered.insert(key);
        }
    }
}

fn prom<'a>(x: &'a Ctx) -> Result<&'a Prom> {
    x.c.prom().ok_or_else(|| Error::Harness("PROM needs a monitored cluster (okp verify --prometheus)".into()))
}

/// prom back as the suite keeps it: leader 1, 1,2,3 in the ISR, 4 outside.
fn settled(x: &mut Ctx) -> Result<()> {
    let timeout = x.lag() + x.ttl() + Duration::from_secs(30);
    let (s, _) = x.c.wait_state(
        TOPIC,
        timeout,
        |s| s.leader == Some(LEADER) && s.isr.len() == 3 && !s.in_isr(OBSERVER),
        |_| {},
    )?;
    if s.is_none() {
        return Err(Error::External(format!("{TOPIC} not back to leader 1, ISR 1,2,3 within {} s", timeout.as_secs())));
    }
    Ok(())
}

fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if f() {
            return true;
        }
        if t0.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub fn prom_scenario(x: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    let timers =
        x.c.monitor
            .as_ref()
            .map(|m| m.timers)
            .ok_or_else(|| Error::Harness("PROM needs a monitored cluster".into()))?;
    let rules = alerts::alerts(&timers);
    o.fact(
        "timers",
        format!(
            "replica.lag.time.max.ms={} ttl={} s scrape={} s status={} s",
            timers.lag_ms, timers.ttl_s, timers.scrape_s, timers.status_s
        ),
    );
    let all = x.c.kafka_nodes();
    let brokers: Vec<i32> = crate::cluster::BROKERS.to_vec();

    super::metrics::observed_topic(x, o, TOPIC, "PROM", "prom: leader 1, ISR 1,2,3 (4 an observer)")?;

    // 0. Steady state: every exporter scraped, the status job up, the gauges there, no alert.
    let steady_from = prom(x)?.now();
    let longest = rules.iter().map(|a| a.for_s).max().unwrap_or(0);
    std::thread::sleep(Duration::from_secs(longest + 2 * timers.scrape_s + 2));
    let pr = prom(x)?;
    let series = |e: &str| pr.query(e).map(|r| r.len()).unwrap_or(0);
    let n_exporters = x.c.exporter_targets().len();
    o.check(
        "every node's exporter is scraped (up == 1)",
        series("up{job=\"kafka\"} == 1") == n_exporters,
        format!("{} of {n_exporters}", series("up{job=\"kafka\"} == 1")),
    );
    o.check(
        "the status job is scraped and reached the cluster (okp_observers_status_up == 1)",
        series("okp_observers_status_up == 1") == 1,
        format!("{} series", series("okp_observers_status_up == 1")),
    );
    let observed =
        pr.query(&format!("okp_partition_observer_replicas{{topic=\"{TOPIC}\",node=\"broker-{LEADER}\"}}"))?;
    o.check(
        "the observer gauges are exported with topic and partition labels (prom-0 on its leader: 1 observer replica)",
        observed.len() == 1 && observed[0].1 == 1.0,
        format!("{observed:?}"),
    );
    let urp = pr.query("sum(kafka_server_replicamanager_underreplicatedpartitions)")?;
    let urp = urp.first().map_or(f64::NAN, |r| r.1);
    o.fact("steady_kafka_under_replicated_partitions", urp);
    o.check(
        "steady: Kafka's UnderReplicatedPartitions counts the observer's partitions (> 0) while no primary is out of an ISR",
        urp > 0.0,
        format!("sum = {urp}"),
    );
    let mut answered = std::collections::BTreeSet::new();
    probe_panels(pr, &mut answered);
    let steady_to = pr.now();
    let noisy = fired_between(pr, steady_from, steady_to);
    // A pending alert that never reaches its `for:` notifies nobody: counted, not failed (2.7.2
    // zk's caught-up gauge reads one second short on an idle partition now and then).
    let blips: Vec<String> = pr
        .timeline()
        .into_iter()
        .filter(|t| t.at >= steady_from && t.state == "pending")
        .map(|t| format!("{}{{{}}}", t.alert, t.shown()))
        .collect();
    o.fact("steady_pending_never_firing", &blips);
    o.check(
        &format!("steady state, {:.0} s: no alert fired", steady_to - steady_from),
        noisy.is_empty(),
        format!("fired: {noisy:?}; pending without firing: {blips:?}"),
    );

    let lag = Duration::from_millis(timers.lag_ms);
    let ttl = Duration::from_secs(timers.ttl_s);
    let status = Duration::from_secs(timers.status_s);
    let mut log = Log { rules, windows: vec![("steady", None, steady_from, steady_to)], answered, seen: Vec::new() };

    // 1. A lagging observer: frozen while the leader takes writes.
    log.run(
        x,
        o,
        ep(
            "lagging-observer",
            "OkpObserverNotCaughtUp",
            Some(("topic", TOPIC)),
            &[],
            lag + x.session() + Duration::from_secs(3),
        ),
        |x| {
            x.c.freeze(OBSERVER);
            std::thread::sleep(x.session() + Duration::from_secs(1));
            let p = x.c.produce_not_idempotent(TOPIC, "PROM-lag", 300, &[OBSERVER])?;
            if !p.all_acked() {
                return Err(Error::External(format!(
                    "observer frozen: {} of {} records acked",
                    p.sent - p.errors,
                    p.sent
                )));
            }
            Ok(())
        },
        |x| {
            x.c.thaw(OBSERVER);
            let (same, _) = x.c.wait_replica_identical(OBSERVER, LEADER, TOPIC, Duration::from_secs(60));
            if !same {
                return Err(Error::External("the thawed observer did not catch up within 60 s".into()));
            }
            Ok(())
        },
        Some(lag + Duration::from_secs(5)),
    )?;

    // 2. A primary out of the ISR: follower 3 frozen. Kafka's URP already counted the observer.
    log.run(
        x,
        o,
        ep(
            "primary-out-of-isr",
            "OkpPrimariesUnderReplicated",
            Some(("topic", TOPIC)),
            &[],
            lag + Duration::from_secs(2),
        ),
        |x| {
            x.c.freeze(3);
            Ok(())
        },
        |x| {
            x.c.thaw(3);
            x.c.wait_state(TOPIC, Duration::from_secs(60), |s| s.in_isr(3), |_| {})?;
            Ok(())
        },
        Some(Duration::from_secs(10)),
    )?;
    // Every partition 3 left must have it back, and leaders settled, before the next episode.
    wait_until(Duration::from_secs(60), || quiet(prom(x).expect("monitored"), "OkpPrimariesUnderReplicated", None));
    wait_until(Duration::from_secs(60), || quiet(prom(x).expect("monitored"), "OkpObserverNotCaughtUp", None));

    // 3. An observer stuck in the ISR: leader 1 named in every file (it stays in the ISRs it leads).
    let all2 = all.clone();
    log.run(
        x,
        o,
        ep(
            "observer-in-isr",
            "OkpObserverInIsr",
            Some(("topic", TOPIC)),
            &["OkpPrimariesUnderReplicated"],
            ttl + Duration::from_secs(2),
        ),
        |x| x.c.set_observers(&all2, "1\n4\n"),
        |x| {
            x.c.set_observers(&all2, "4\n")?;
            settled(x)
        },
        Some(ttl + lag + Duration::from_secs(5)),
    )?;

    // 4. Broker 2's set differs (an id of no broker): the set sizes and the files disagree.
    log.run(
        x,
        o,
        ep(
            "sets-differ",
            "OkpObserverSetsDiffer",
            None,
            &["OkpObserverIdsFilesDisagree"],
            ttl + Duration::from_secs(2),
        ),
        |x| x.c.set_observers(&[2], "4\n9\n"),
        |x| x.c.set_observers(&[2], "4\n"),
        Some(ttl + Duration::from_secs(5)),
    )?;
    // The files disagree with every set of one size: 4,9 on broker 2, 4,8 on every other node
    // (8 and 9 are no broker's id, so nothing else changes).
    let others: Vec<i32> = all.iter().copied().filter(|&i| i != 2).collect();
    log.run(
        x,
        o,
        ep("files-disagree", "OkpObserverIdsFilesDisagree", None, &[], status + Duration::from_secs(1)),
        |x| {
            x.c.set_observers(&others, "4\n8\n")?;
            x.c.set_observers(&[2], "4\n9\n")
        },
        |x| x.c.set_observers(&all, "4\n"),
        Some(status * 2 + Duration::from_secs(5)),
    )?;

    // 5. A token that is not an id on broker 3's file: every node ignores it; status says so.
    log.run(
        x,
        o,
        ep(
            "malformed-file",
            "OkpObserverIdsMalformed",
            None,
            &["OkpObserverIdsFilesDisagree"],
            status + Duration::from_secs(1),
        ),
        |x| x.c.set_observers(&[3], "4\n4x\n"),
        |x| x.c.set_observers(&[3], "4\n"),
        Some(status * 2 + Duration::from_secs(5)),
    )?;

    // 6. A topic rule naming only a broker that does not run: prom's observer is 9 (none), so 4
    // is a full replica of prom meanwhile.
    log.run(
        x,
        o,
        ep("rule-no-live-broker", "OkpObserverRuleNoLiveBroker", None, &[], status + Duration::from_secs(1)),
        |x| x.c.set_observers(&all, &format!("4\ntopic:{TOPIC} observers=9\n")),
        |x| {
            x.c.set_observers(&all, "4\n")?;
            settled(x)
        },
        Some(status * 2 + Duration::from_secs(5)),
    )?;

    // 7. Every broker's set emptied (an empty file promotes every observer), restored at once.
    // KRaft controllers' files keep 4, so there the files disagree as well.
    log.run(
        x,
        o,
        ep(
            "set-emptied",
            "OkpObserverSetEmptied",
            Some(("node", "broker-1")),
            &["OkpObserverInIsr", "OkpPrimariesUnderReplicated", "OkpObserverIdsFilesDisagree"],
            ttl + Duration::from_secs(2),
        ),
        |x| x.c.set_observers(&brokers, ""),
        |x| {
            x.c.set_observers(&brokers, "4\n")?;
            settled(x)
        },
        None,
    )?;
    // Its expression looks back an hour: it stays firing after the restore by design. Only the
    // firing is checked; the resolution is the `max_over_time` window's, not the condition's.

    // 8. The status job stopped (its file left as it was): the file goes stale.
    let args = x.c.status_args("prometheus");
    log.run(
        x,
        o,
        ep("status-stale", "OkpObserversStatusDown", None, &[], status * 5 + Duration::from_secs(1)),
        |x| {
            prom(x)?.set_status_args(None);
            Ok(())
        },
        |x| {
            prom(x)?.set_status_args(Some(x.c.status_args("prometheus")));
            Ok(())
        },
        Some(status * 2 + Duration::from_secs(5)),
    )?;

    // 9. The status job cannot reach the cluster (its bootstrap a port nothing listens on): up 0.
    let closed = format!("127.0.0.1:{}", x.c.base_port + crate::cluster::PORT_BLOCK - 1);
    let mut unreachable = args.clone();
    if let Some(i) = unreachable.iter().position(|a| a == "--bootstrap") {
        unreachable[i + 1] = closed;
    }
    log.run(
        x,
        o,
        ep("status-unreachable", "OkpObserversStatusDown", None, &[], status + Duration::from_secs(1)),
        |x| {
            prom(x)?.set_status_args(Some(unreachable));
            Ok(())
        },
        |x| {
            prom(x)?.set_status_args(Some(x.c.status_args("prometheus")));
            Ok(())
        },
        Some(status * 2 + Duration::from_secs(5)),
    )?;

    let Log { windows, answered, seen, .. } = log;
    o.fact("episodes", &seen);
    let panels = dashboard_queries()?;
    let silent: Vec<&String> = panels.iter().map(|(key, _)| key).filter(|key| !answered.contains(*key)).collect();
    o.check(
        &format!("every query of the dashboard ({} panels' targets) returned series from this cluster, in steady state or while a condition held", panels.len()),
        silent.is_empty(),
        if silent.is_empty() {
            format!("{} answered", answered.len())
        } else {
            format!("no series: {}", silent.iter().map(|k| k.as_str()).collect::<Vec<_>>().join("; "))
        },
    );
    let pr = prom(x)?;
    o.fact("timeline", pr.timeline());
    write_series(x, o, &windows)?;
    Ok(())
}

/// Creates the condition, waits for the alert to fire, ends the condition, waits for it to
/// resolve (at most `resolve_within`; None: its expression outlives the condition by design,
/// only the firing is checked), and checks each step's time.
#[allow(clippy::too_many_arguments)]
fn episode(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    ep: &Episode,
    for_s: u64,
    windows: &mut Vec<Window>,
    answered: &mut std::collections::BTreeSet<String>,
    create: impl FnOnce(&mut Ctx) -> Result<()>,
    end: impl FnOnce(&mut Ctx) -> Result<()>,
    resolve_within: Option<Duration>,
) -> Result<Seen> {
    let scrape = x.c.monitor.as_ref().map_or(1, |m| m.timers.scrape_s) as f64;
    let created_at = prom(x)?.now();
    x.c.journal.note(&format!("PROM {}: creating the condition of {}", ep.name, ep.alert));
    let made = create(x);
    let deadline = ep.onset.as_secs_f64() + for_s as f64 + 2.0 * scrape + 5.0;
    let fired = made.is_ok()
        && wait_until(Duration::from_secs_f64(deadline), || {
            first(prom(x).expect("monitored"), ep.alert, ep.label, "firing", created_at).is_some()
        });
    if fired {
        // Held firing until no alert has changed for 5 s (at most 30 s), so the recorded series
        // have a moment clear of every change (the alerts the condition also raises included).
        wait_until(Duration::from_secs(30), || {
            let p = prom(x).expect("monitored");
            let last = p.timeline().last().map_or(0.0, |t| t.at);
            p.now() - last >= 5.0
        });
    }
    let pr = prom(x)?;
    probe_panels(pr, answered);
    let pending_at = first(pr, ep.alert, ep.label, "pending", created_at);
    let firing_at = first(pr, ep.alert, ep.label, "firing", created_at);
    let ended_at = pr.now();
    x.c.journal.note(&format!("PROM {}: ending the condition", ep.name));
    let ended = end(x);
    let one_hour = resolve_within.is_none();
    let resolved = resolve_within.is_some_and(|within| {
        wait_until(within + Duration::from_secs_f64(2.0 * scrape + 3.0), || {
            quiet(prom(x).expect("monitored"), ep.alert, ep.label)
        })
    });
    // A few quiet seconds in the window after the resolution, for the recorded series' last moment.
    std::thread::sleep(Duration::from_secs(4));
    let pr = prom(x)?;
    let resolved_at = if resolved {
        pr.timeline()
            .into_iter()
            .rev()
            .find(|t| t.at >= ended_at && t.state == "inactive" && matches(t, ep.alert, ep.label))
            .map(|t| t.at)
    } else {
        None
    };
    let to = pr.now();
    windows.push((ep.name, Some(ep.alert), created_at, to));
    let others: Vec<String> = fired_between(pr, created_at, to)
        .into_iter()
        .filter(|a| {
            !a.starts_with(&format!("{}{{", ep.alert)) && !ep.also.iter().any(|n| a.starts_with(&format!("{n}{{")))
        })
        .collect();
    made?;
    ended?;
    let rel = |t: Option<f64>, from: f64| t.map_or("never".to_string(), |t| format!("{:.1} s", t - from));
    let lbl = ep.label.map_or(String::new(), |(k, v)| format!("{{{k}={v}}}"));
    o.check(
        &format!(
            "{}: {}{lbl} pending, then firing within the onset ({:.0} s) + for ({for_s} s) + 2 scrapes",
            ep.name,
            ep.alert,
            ep.onset.as_secs_f64()
        ),
        fired && pending_at.is_some() && firing_at.is_some(),
        format!(
            "pending after {}, firing after {} (deadline {deadline:.0} s)",
            rel(pending_at, created_at),
            rel(firing_at, created_at)
        ),
    );
    if let (Some(p), Some(f)) = (pending_at, firing_at) {
        o.check(
            &format!("{}: pending → firing took at least its for: ({for_s} s) less one scrape", ep.name),
            f - p >= for_s as f64 - scrape - 0.5,
            format!("{:.1} s", f - p),
        );
    }
    if !one_hour {
        o.check(
            &format!("{}: {} resolved once the condition ended", ep.name, ep.alert),
            resolved && resolved_at.is_some(),
            format!("after {}", rel(resolved_at, ended_at)),
        );
    }
    o.check(
        &format!("{}: no other alert fired meanwhile (but {:?})", ep.name, ep.also),
        others.is_empty(),
        if others.is_empty() { "none".to_string() } else { others.join(", ") },
    );
    Ok(Seen {
        episode: ep.name,
        alert: ep.alert,
        for_s,
        created_at,
        pending_at,
        firing_at,
        ended_at: Some(ended_at),
        resolved_at,
        others_firing: fired_between(pr, created_at, to),
    })
}

/// Writes each window's series as a promtool test file and runs promtool over it.
fn write_series(x: &mut Ctx, o: &mut ScenarioResult, windows: &[Window]) -> Result<()> {
    let dir = x.c.journal.dir().join("PROM-series");
    crate::fsx::create_dir(&dir)?;
    let timers = x.c.monitor.as_ref().map(|m| m.timers).unwrap_or_default();
    let rules = alerts::render(&timers, alerts::DOC_BASE);
    crate::fsx::write_atomic(&dir.join("alerts.yml"), rules.as_bytes())?;
    let pr = prom(x)?;
    let mut passed = 0;
    for (name, alert, from, to) in windows {
        let test = crate::monitoring::record::test_file(pr, name, *from, *to, &alerts::alerts(&timers))?;
        if let Some(alert) = alert {
            o.check(
                &format!("{name}'s recorded series hold {alert} firing at a moment the test checks"),
                test.contains(&format!("alertname: {alert}\n        exp_alerts:\n          - ")),
                format!("{} moments", test.matches("alertname: OkpObserverInIsr\n").count()),
            );
        }
        let path = dir.join(format!("{name}.test.yml"));
        crate::fsx::write_atomic(&path, test.as_bytes())?;
        let out = std::process::Command::new(crate::monitoring::record::PROMTOOL)
            .arg("test")
            .arg("rules")
            .arg(&path)
            .current_dir(&dir)
            .output()
            .map_err(|e| Error::External(format!("cannot run promtool ({e})")))?;
        let ok = out.status.success();
        passed += ok as usize;
        o.check(
            &format!("promtool test rules over {name}'s recorded series: the same alerts offline"),
            ok,
            String::from_utf8_lossy(if ok { &out.stdout } else { &out.stderr })
                .lines()
                .take(12)
                .collect::<Vec<_>>()
                .join(" | "),
        );
    }
    o.fact("promtool_files_passed", passed);
    Ok(())
}
