//! WAN: the situation observers exist for. A cluster of its own on separate hosts in two regions
//! (`hosts::wan`): region a holds the quorum and brokers 1, 2, 3, 5; region b broker 4 and a
//! client host; every connection between them crosses a link with a real delay (Toxiproxy) and a
//! bandwidth cap (tc tbf), measured at the start.
//!
//! Three topics side by side, acks=all, min.insync.replicas 2, RF 4: (a) `wa` on 1, 2, 3, 5 (no
//! remote replica; `wa2` likewise, the A/A control), (b) `wb` on 1, 2, 3, 4 with 4 an observer,
//! (c) `wc` on 1, 2, 3, 4 with 4 a full replica (`topic:wc observers=none`). Then:
//!
//! 1. Fixed rate, the four at once: p50/p99/p999 of each (ProducerPerformance); (b) within (a)'s
//!    band, (c) at least one round trip slower. The leader's high watermark sampled against the
//!    observer's log end: it runs ahead of the observer (it never waits for it).
//! 2. Saturating rate (1.5 × the link), one topic at a time: (a) and (b) alike, (b)'s observer
//!    lagging (records, bytes, seconds) and draining after the load stops; (c) slowed until its
//!    remote follower leaves the ISR.
//! 3. KIP-392: a consumer in region b reads `wb` with `client.rack=b` and without: the bytes
//!    the link carried toward b in each read.
//! 4. Region b lost (broker 4 stopped): (b)'s latency as before.
//! 5. Region a lost (brokers 1, 2, 3, 5 killed at once, the quorum kept): the watchdog over ssh
//!    across the link promotes 4, an unclean election makes it leader of `wd`, writes resume; the
//!    acked records 4 lacks (its lag at the loss) are counted.
//!
//! On the release's own jars (`--upstream`, the negative control) the "observer" is an ISR
//! follower: (b) waits like (c).
//!
//! Not here: MirrorMaker 2 as a control group (scenario MM2, `mm2.rs`).

use std::time::{Duration, Instant};

use super::{round, Ctx, Flavor, ScenarioResult};
use crate::cluster::tools::{parse_perf, Tool};
use crate::error::{Error, Result};
use crate::hosts;
use crate::hosts::cluster::{HostCluster, Layout};
use crate::hosts::wan::Link;
use crate::wire::{Probe, DEBUGGING};

/// The link a run gets without `--wan-rtt` / `--wan-bandwidth`.
pub const DEFAULT_LINK: Link = Link { rtt_ms: 50, rate_kbit: 20_000 };
const RECORD: u64 = 1000;
/// Below what one producer gets through a remote ISR follower (acks=all requests of one
/// connection are answered in order: about one 16 KiB batch per round trip), so (c)'s latency is
/// its round trip, not a queue.
const FIXED_RATE: u64 = 50;
const FIXED_SECONDS: u64 = 60;
const SATURATE_SECONDS: u64 = 20;
/// Broker 4 counts as caught up within this many records of the leader's log end (the 50/s
/// probe beside a load keeps writing while it is sampled: a few records are always in flight).
const CAUGHT_UP: i64 = 10;

/// Why WAN cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    hosts::available().err().or_else(|| hosts::wan::toxiproxy().err().map(|e| e.to_string()))
}

pub fn wan(ctx: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    if let Some(why) = unavailable() {
        return Err(Error::External(format!("WAN needs namespaces and Toxiproxy: {why}")));
    }
    let link = ctx.tuning.wan.unwrap_or(DEFAULT_LINK);
    let patched = ctx.flavor == Flavor::Patched;
    let bundle = if patched {
        Some(ctx.c.bundle.clone().ok_or_else(|| Error::Usage("WAN installs okp's bundle: this run has none".into()))?)
    } else {
        None
    };
    let classes = ctx.c.okp_client_classes()?;
    let layout = Layout::two_regions(ctx.c.mode, link, patched, "4\nprefix:wc observers=none\n");
    o.fact("link_given", link);
    o.fact("patched", patched);
    let t0 = Instant::now();
    let mut hc = HostCluster::up_with(ctx.c.mode, ctx.c.rt.clone(), bundle, classes, ctx.c.timers.lag_ms, layout)?;
    o.fact("cluster_up_seconds", round(t0.elapsed().as_secs_f64()));
    let (ctl, clientb) = (hc.topo.ctl.clone(), hc.topo.host("clientb")?.clone());
    let m = hosts::wan::measure_link(&clientb, &ctl, link)?;
    ctx.c.journal.note(&format!("link given: {}\nlink measured: {}", link.show(), m.show()));
    o.check(
        "the link measured: its round trip at least the delay given, its throughput at most the rate given",
        m.rtt_ms[0] >= f64::from(link.rtt_ms) - 0.5
            && m.upload_mbit <= link.rate_kbit as f64 / 1000.0 * 1.05
            && m.download_mbit <= link.rate_kbit as f64 / 1000.0 * 1.05,
        m.show(),
    );
    o.fact("link_measured", &m);
    let journal_dir = ctx.c.journal.dir().to_path_buf();
    let journal = &mut ctx.c.journal;
    let ns = ctl.ns.clone();
    let r = hosts::in_netns(&ns, || {
        let mut x = Wan {
            hc: &mut hc,
            o,
            note: &mut |s: &str| journal.note(s),
            patched,
            rtt: m.rtt_ms[0],
            link,
            load_end: 0.0,
        };
        x.run(&journal_dir)
    })?;
    tear_down(hc, &mut ctx.c.journal, o);
    r
}

/// The regions' cluster's log into the journal, then the cluster and its regions removed, checked.
pub(super) fn tear_down(mut hc: HostCluster, journal: &mut crate::cluster::journal::Journal, o: &mut ScenarioResult) {
    let log = std::mem::take(&mut hc.log);
    journal.note(&log.join("\n"));
    let (run, dir) = (hc.topo.run, hc.topo.dir.clone());
    hc.down();
    o.check(
        "every namespace (gateways included), process and file of the regions removed",
        hosts::run_gone(run, &dir),
        format!("run {run} gone"),
    );
}

struct Wan<'a> {
    hc: &'a mut HostCluster,
    o: &'a mut ScenarioResult,
    note: &'a mut dyn FnMut(&str),
    patched: bool,
    /// The measured round trip, ms.
    rtt: f64,
    link: Link,
    /// When the last sampled load ended, seconds after its sampling began.
    load_end: f64,
}

/// One ProducerPerformance run's summary.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
struct Lat {
    /// It sent every record (else it was stopped at twice its time).
    complete: bool,
    records: u64,
    mean_ms: f64,
    records_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
}

/// One sample of a topic's partition 0: the leader's high watermark and log end, broker 4's log end.
#[derive(Debug, Clone, Copy)]
struct Sample {
    t: f64,
    hw: i64,
    leader_end: i64,
    remote_end: i64,
}

impl Wan<'_> {
    fn run(&mut self, dir: &std::path::Path) -> Result<()> {
        for (t, a) in [("wa", "1:2:3:5"), ("wa2", "2:3:5:1"), ("wb", "1:2:3:4"), ("wc", "1:2:3:4"), ("wc1", "1:2:3:4")]
        {
            self.hc.create_topic(t, a, &["min.insync.replicas=2", "unclean.leader.election.enable=true"])?;
        }
        // Region a lost leaves one copy: the disaster-recovery topic accepts writes with one.
        self.hc.create_topic("wd", "1:2:3:4", &["min.insync.replicas=1", "unclean.leader.election.enable=true"])?;
        for t in ["wa", "wa2", "wb", "wc"] {
            let (s, secs) = self.hc.wait_state(t, Duration::from_secs(60), |s| s.leader.is_some() && s.isr.len() >= 3);
            (self.note)(&format!("{t}: {} after {secs:.1} s", s.map(|s| s.show()).unwrap_or("no leader".into())));
        }
        // (c)'s remote follower joins the ISR once it has caught up across the link.
        let (c, _) = self.hc.wait_state("wc", Duration::from_secs(60), |s| s.in_isr(4));
        let (b, _) = self.hc.wait_state("wb", Duration::from_secs(10), |s| s.isr.len() == 3);
        let b_out = b.as_ref().is_some_and(|s| !s.in_isr(4));
        self.o.check(
            if self.patched {
                "(b) the observer 4 is not in wb's ISR"
            } else {
                "(b) upstream: 4 is in wb's ISR like any follower"
            },
            if self.patched { b_out } else { !b_out && self.hc.state("wb").is_some_and(|s| s.in_isr(4)) },
            self.hc.state("wb").map(|s| s.show()).unwrap_or_default(),
        );
        self.o.check(
            "(c) 4 is in wc's ISR (a full replica by its rule)",
            c.is_some(),
            self.hc.state("wc").map(|s| s.show()).unwrap_or_default(),
        );
        // Warm-up: the JITs, the first segments, the producers' metadata.
        self.perf_all(&["wa", "wa2", "wb", "wc", "wc1"], FIXED_RATE, 5)?;
        self.fixed(dir)?;
        self.saturating(dir)?;
        self.rack_local()?;
        self.region_b_lost()?;
        self.region_a_lost()?;
        Ok(())
    }

    /// ProducerPerformance on each of `topics` at once, `rate` records/s for `secs` seconds each.
    /// One that cannot keep the rate is stopped at twice its time and judged by the windows it
    /// printed (records, throughput, mean and max latency; its percentiles unknown, 0).
    fn perf_all(&mut self, topics: &[&str], rate: u64, secs: u64) -> Result<Vec<Lat>> {
        let boot = self.hc.bootstrap();
        let mut running = Vec::new();
        for t in topics {
            // wc1: (c) again with one request in flight (the producer batches while it waits).
            let in_flight = if *t == "wc1" { "1" } else { "5" };
            let args: Vec<String> = [
                "--topic",
                t,
                "--num-records",
                &(rate * secs).to_string(),
                "--throughput",
                &rate.to_string(),
                "--record-size",
                &RECORD.to_string(),
                "--producer-props",
                &format!("bootstrap.servers={boot}"),
                "acks=all",
                "linger.ms=0",
                "enable.idempotence=false",
                "request.timeout.ms=30000",
                &format!("max.in.flight.requests.per.connection={in_flight}"),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            running.push(self.hc.tools.spawn(Tool::Perf, &args, None)?);
        }
        let mut out = Vec::new();
        for (t, r) in topics.iter().zip(running) {
            let done = r.finish(Duration::from_secs(secs * 2 + 30));
            let p = parse_perf(&done.stdout).unwrap_or_else(|| windows(&done.stdout));
            if p.records == 0 {
                return Err(Error::External(format!(
                    "ProducerPerformance on {t} gave no summary (rc {}): {}",
                    done.rc,
                    done.stderr.lines().last().unwrap_or("")
                )));
            }
            out.push(Lat {
                complete: done.rc == 0,
                mean_ms: p.avg_ms,
                records: p.records,
                records_per_sec: p.records_per_sec,
                p50_ms: p.p50_ms,
                p99_ms: p.p99_ms,
                p999_ms: p.p999_ms,
                max_ms: p.max_ms,
            });
        }
        Ok(out)
    }

    fn addr(&self, broker: i32) -> String {
        self.hc.node(broker).map(|n| format!("{}:{}", n.host.addr, hosts::cluster::BROKER_PORT)).unwrap_or_default()
    }

    /// Samples `topic` every 250 ms while `busy` runs (and `after` seconds more, or until broker 4
    /// has the leader's log end when `until_caught_up`).
    fn sampled<T>(
        &mut self,
        topic: &str,
        after: Duration,
        until_caught_up: bool,
        busy: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<(T, Vec<Sample>)> {
        self.sampled_from(Instant::now(), topic, after, until_caught_up, busy)
    }

    /// `sampled`, with a probe beside the load: okp's acks=all producer writing `topic` 50 times
    /// a second, each acknowledgement's latency kept. Returns the probe's p99 per second too.
    #[allow(clippy::type_complexity)]
    fn probed<T>(
        &mut self,
        topic: &str,
        after: Duration,
        until_caught_up: bool,
        busy: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<(T, Vec<Sample>, Vec<(f64, f64)>)> {
        let t0 = Instant::now();
        let probe = self.hc.producer(topic, &format!("probe-{topic}"), 20)?;
        let r = self.sampled_from(t0, topic, after, until_caught_up, busy);
        let (lines, _) = probe.stop(Duration::from_secs(60));
        let (r, samples) = r?;
        Ok((r, samples, p99_per_second(&lines)))
    }

    fn sampled_from<T>(
        &mut self,
        t0: Instant,
        topic: &str,
        after: Duration,
        until_caught_up: bool,
        busy: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<(T, Vec<Sample>)> {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (leader, remote, topic_s) = (self.addr(1), self.addr(4), topic.to_string());
        let flag = stop.clone();
        let sampler = std::thread::spawn(move || {
            let mut out = Vec::new();
            let (mut l, mut r) = (Probe::connect_to(&leader), Probe::connect_to(&remote));
            let key = (topic_s.clone(), 0);
            let mut stopped_at: Option<Instant> = None;
            loop {
                if flag.load(std::sync::atomic::Ordering::Relaxed) && stopped_at.is_none() {
                    stopped_at = Some(Instant::now());
                }
                if l.is_none() {
                    l = Probe::connect_to(&leader);
                }
                if r.is_none() {
                    r = Probe::connect_to(&remote);
                }
                let t = t0.elapsed().as_secs_f64();
                // The high watermark first: broker 4's log end, read after it, is at least what
                // it was then if 4 is in the ISR.
                let hw = l.as_mut().and_then(|p| p.high_watermark(&topic_s, 0));
                let end = l.as_mut().and_then(|p| p.latest_offsets(DEBUGGING, std::slice::from_ref(&key)));
                let remote_end = r.as_mut().and_then(|p| p.latest_offsets(DEBUGGING, std::slice::from_ref(&key)));
                match (hw, end.and_then(|m| m.get(&key).cloned()), remote_end.and_then(|m| m.get(&key).cloned())) {
                    (Some(hw), Some(Ok(le)), Some(Ok(re))) => {
                        out.push(Sample { t, hw, leader_end: le, remote_end: re });
                        if let Some(s) = stopped_at {
                            let caught_up = le - re <= CAUGHT_UP;
                            if (until_caught_up && caught_up && s.elapsed() >= Duration::from_secs(1))
                                || s.elapsed() >= after
                            {
                                break;
                            }
                        }
                    }
                    (hw, _, rem) => {
                        if hw.is_none() {
                            l = None;
                        }
                        if rem.is_none() {
                            r = None;
                        }
                        if stopped_at.is_some_and(|s| s.elapsed() >= after) {
                            break;
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            out
        });
        let r = busy(self);
        self.load_end = t0.elapsed().as_secs_f64();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let samples = sampler.join().unwrap_or_default();
        Ok((r?, samples))
    }

    fn fixed(&mut self, dir: &std::path::Path) -> Result<()> {
        let (lat, samples) = self.sampled("wb", Duration::ZERO, false, |x| {
            x.perf_all(&["wa", "wa2", "wb", "wc", "wc1"], FIXED_RATE, FIXED_SECONDS)
        })?;
        let (a, a2, b, c, c1) = (lat[0], lat[1], lat[2], lat[3], lat[4]);
        for (case, l) in [("a", a), ("a2", a2), ("b", b), ("c", c), ("c1", c1)] {
            self.o.fact(&format!("fixed_{case}"), l);
        }
        let table = format!(
            "fixed rate {FIXED_RATE} records/s of {RECORD} bytes for {FIXED_SECONDS} s, the four at once; link {} (measured RTT {:.1} ms)\n\
             case                         p50 ms   p99 ms  p99.9 ms\n\
             (a)  wa, no remote replica   {:>6.1}   {:>6.1}   {:>6.1}\n\
             (a2) wa2, the A/A control    {:>6.1}   {:>6.1}   {:>6.1}\n\
             (b)  wb, remote observer     {:>6.1}   {:>6.1}   {:>6.1}\n\
             (c)  wc, remote ISR follower {:>6.1}   {:>6.1}   {:>6.1}\n\
             (c1) wc1, as (c), 1 in flight {:>6.1}   {:>6.1}   {:>6.1}",
            self.link.show(),
            self.rtt,
            a.p50_ms,
            a.p99_ms,
            a.p999_ms,
            a2.p50_ms,
            a2.p99_ms,
            a2.p999_ms,
            b.p50_ms,
            b.p99_ms,
            b.p999_ms,
            c.p50_ms,
            c.p99_ms,
            c.p999_ms,
            c1.p50_ms,
            c1.p99_ms,
            c1.p999_ms
        );
        (self.note)(&table);
        // The A/A band: how far two identical cases land apart on this machine.
        let band = (a.p50_ms - a2.p50_ms).abs().max(2.0);
        let (lo, hi) = (a.p50_ms.min(a2.p50_ms), a.p50_ms.max(a2.p50_ms));
        self.o.fact("aa_band_p50_ms", round(band));
        self.o.fact("fixed_b_within_aa_band", b.p50_ms <= hi + band);
        self.o.check(
            "(c) the remote ISR follower costs at least one round trip at p50 (with 5 requests in flight and with 1)",
            c.p50_ms >= hi + 0.8 * self.rtt && c1.p50_ms >= hi + 0.8 * self.rtt,
            format!(
                "(c) p50 {:.1} ms, (c1) {:.1} ms, (a)/(a2) p50 {:.1}/{:.1} ms, RTT {:.1} ms",
                c.p50_ms, c1.p50_ms, a.p50_ms, a2.p50_ms, self.rtt
            ),
        );
        if self.patched {
            self.o.check(
                "(b) the remote observer within (a)'s band at p50 (less than half a round trip above it)",
                b.p50_ms <= hi + 0.5 * self.rtt,
                format!("(b) p50 {:.1} ms, (a)/(a2) {lo:.1}–{hi:.1} ms, RTT {:.1} ms", b.p50_ms, self.rtt),
            );
        } else {
            self.o.check(
                "upstream (negative control): (b)'s \"observer\" waits like an ISR follower, a round trip at p50",
                b.p50_ms >= hi + 0.8 * self.rtt,
                format!("(b) p50 {:.1} ms, (a)/(a2) {lo:.1}–{hi:.1} ms, RTT {:.1} ms", b.p50_ms, self.rtt),
            );
        }
        let ahead = samples.iter().filter(|s| s.hw > s.remote_end).count();
        self.o.fact("fixed_hw_above_observer", [ahead, samples.len()]);
        let detail = format!(
            "{} samples of wb at 4 Hz: the high watermark above broker 4's log end in {ahead}; by up to {} records",
            samples.len(),
            samples.iter().map(|s| s.hw - s.remote_end).max().unwrap_or(0)
        );
        if self.patched {
            self.o.check(
                "(b) the high watermark runs ahead of the observer (it never waits for it)",
                // One sample with the high watermark above 4's log end is impossible while 4 is in
                // the ISR; several, at a rate where 4 is a round trip behind, show it is the rule.
                samples.len() >= 20 && ahead >= 5,
                detail,
            );
        } else {
            self.o.check(
                "upstream: the high watermark never above broker 4's log end (it waits for it)",
                samples.len() >= 20 && ahead == 0,
                detail,
            );
        }
        write_timeline(&dir.join("WAN-fixed-wb.csv"), &samples)?;
        Ok(())
    }

    fn saturating(&mut self, dir: &std::path::Path) -> Result<()> {
        // 1.5 × the link in records/s: the link cannot carry what (b) and (c) are written at.
        let rate = (self.link.rate_kbit * 1000 / 8 * 3 / 2 / RECORD).max(100);
        self.o.fact("saturating_records_per_sec", rate);
        let a = self.perf_all(&["wa"], rate, SATURATE_SECONDS)?[0];
        let (b, samples, b_p99) =
            self.probed("wb", Duration::from_secs(180), true, |x| Ok(x.perf_all(&["wb"], rate, SATURATE_SECONDS)?[0]))?;
        let load_end = self.load_end;
        write_timeline(&dir.join("WAN-saturating-wb.csv"), &samples)?;
        let (c, c_samples, c_p99) =
            self.probed("wc", Duration::ZERO, false, |x| Ok(x.perf_all(&["wc"], rate, SATURATE_SECONDS)?[0]))?;
        write_timeline(&dir.join("WAN-saturating-wc.csv"), &c_samples)?;
        let mbit = rate as f64 * RECORD as f64 * 8.0 / 1e6;
        for (file, case, p99, samples) in [
            ("WAN-saturating-wb.png", "(b) wb, broker 4 an observer", &b_p99, &samples),
            ("WAN-saturating-wc.png", "(c) wc, broker 4 an ISR follower", &c_p99, &c_samples),
        ] {
            crate::plot::write_png(
                &dir.join(file),
                &crate::plot::Chart {
                    title: format!("{case}: {mbit:.0} Mbit/s written over a {} link", self.link.show()),
                    x_label: "seconds".into(),
                    y_label: "acks=all p99 of a 50/s probe (ms)".into(),
                    y2_label: Some("broker 4 behind the leader (s)".into()),
                    series: vec![
                        crate::plot::Series {
                            name: "probe p99 per second".into(),
                            points: p99.clone(),
                            right_axis: false,
                        },
                        crate::plot::Series {
                            name: "broker 4's lag".into(),
                            points: lag_series(samples),
                            right_axis: true,
                        },
                    ],
                    log_x: false,
                },
            )?;
        }
        let peak = |v: &[(f64, f64)]| v.iter().map(|p| p.1).fold(0.0_f64, f64::max);
        self.o.fact("saturating_probe_p99_peak_ms_b", round(peak(&b_p99)));
        self.o.fact("saturating_probe_p99_peak_ms_c", round(peak(&c_p99)));
        let wc = self.hc.state("wc");
        for (case, l) in [("a", a), ("b", b), ("c", c)] {
            self.o.fact(&format!("saturating_{case}"), l);
        }
        let lag_records = samples.iter().map(|s| s.leader_end - s.remote_end).max().unwrap_or(0);
        let lag_seconds = lag_seconds(&samples);
        // Caught up: the first sample after the load within CAUGHT_UP records of the leader.
        let caught = samples.iter().find(|s| s.t >= load_end && s.leader_end - s.remote_end <= CAUGHT_UP);
        let drain = caught.map_or(-1.0, |s| round(s.t - load_end));
        let caught_up = caught.is_some();
        self.o.fact("saturating_observer_lag_max_records", lag_records);
        self.o.fact("saturating_observer_lag_max_bytes", lag_records as u64 * RECORD);
        self.o.fact("saturating_observer_lag_max_seconds", round(lag_seconds));
        self.o.fact("saturating_drain_seconds_after_load", drain);
        (self.note)(&format!(
            "saturating {rate} records/s of {RECORD} bytes ({:.1} Mbit/s) for {SATURATE_SECONDS} s, one topic at a time:\n\
             (a) p50 {:.1} / p99 {:.1} / p99.9 {:.1} ms, {:.0} records/s\n\
             (b) p50 {:.1} / p99 {:.1} / p99.9 {:.1} ms, {:.0} records/s; observer behind by up to {lag_records} records (~{} bytes), {:.1} s; caught up {drain:.1} s after the load stopped\n\
             (c) p50 {:.1} / p99 {:.1} / p99.9 {:.1} ms (0: stopped before its summary), mean {:.1} ms, {:.0} records/s; wc after it: {}",
            rate as f64 * RECORD as f64 * 8.0 / 1e6,
            a.p50_ms, a.p99_ms, a.p999_ms, a.records_per_sec,
            b.p50_ms, b.p99_ms, b.p999_ms, b.records_per_sec,
            lag_records as u64 * RECORD, lag_seconds,
            c.p50_ms, c.p99_ms, c.p999_ms, c.mean_ms, c.records_per_sec,
            wc.map(|s| s.show()).unwrap_or_default()
        ));
        if self.patched {
            self.o.check(
                "(b) saturating: the observer falls behind the link's rate and catches up after the load",
                lag_records > 0 && caught_up,
                format!(
                    "behind by up to {lag_records} records ({lag_seconds:.1} s); caught up {drain:.1} s after the load"
                ),
            );
            self.o.check(
                "(b) saturating: the producer keeps (a)'s throughput (within 10 %); (c)'s is what the round trip lets through",
                b.complete && b.records_per_sec >= 0.9 * a.records_per_sec,
                format!(
                    "records/s: (a) {:.0}, (b) {:.0}, (c) {:.0}{}",
                    a.records_per_sec,
                    b.records_per_sec,
                    c.records_per_sec,
                    if c.complete { "" } else { " (stopped at twice its time)" }
                ),
            );
            self.o.check(
                "(b) saturating: acks=all p50 within a round trip of (a)'s at the same rate",
                b.p50_ms <= a.p50_ms + self.rtt,
                format!("(b) p50 {:.1} ms, (a) {:.1} ms, RTT {:.1} ms", b.p50_ms, a.p50_ms, self.rtt),
            );
        }
        Ok(())
    }

    /// KIP-392 in region b: bytes the link carried toward b while a consumer there read `wb`.
    fn rack_local(&mut self) -> Result<()> {
        let regions = self.hc.topo.regions.as_ref().map_or(2, |r| r.names.len());
        let run = self.hc.topo.run;
        let clientb = self.hc.topo.host("clientb")?.clone();
        let end = {
            let mut p =
                Probe::connect_to(&self.addr(1)).ok_or_else(|| Error::External("broker 1 does not answer".into()))?;
            p.high_watermark("wb", 0).unwrap_or(0)
        };
        let mut bytes = Vec::new();
        for rack in ["b", ""] {
            let before = hosts::wan::link_bytes(run, regions).get("0->1").copied().unwrap_or(0);
            let mut args: Vec<String> = [
                "--bootstrap-server",
                &self.hc.bootstrap(),
                "--topic",
                "wb",
                "--from-beginning",
                "--max-messages",
                &end.to_string(),
                "--timeout-ms",
                "30000",
                "--consumer-property",
                "fetch.max.bytes=10485760",
                // One short line per record, not its 1000 bytes.
                "--property",
                "print.value=false",
                "--property",
                "print.offset=true",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if !rack.is_empty() {
                args.extend(["--consumer-property".into(), format!("client.rack={rack}")]);
            }
            let t0 = Instant::now();
            let tools = &mut self.hc.tools;
            let out = hosts::in_netns(&clientb.ns, || -> Result<_> {
                let r = tools.spawn(Tool::Consumer, &args, None)?;
                Ok(r.finish(Duration::from_secs(300)))
            })??;
            let secs = t0.elapsed().as_secs_f64();
            let after = hosts::wan::link_bytes(run, regions).get("0->1").copied().unwrap_or(0);
            let read = out.stdout.lines().filter(|l| l.contains("Offset:")).count();
            bytes.push((rack, after.saturating_sub(before), read, secs));
        }
        let show = |r: &str| if r.is_empty() { "no client.rack".to_string() } else { format!("client.rack={r}") };
        let lines: Vec<String> = bytes
            .iter()
            .map(|(r, b, n, s)| {
                format!("{}: {n} records read in {s:.1} s, {b} bytes crossed the link toward b", show(r))
            })
            .collect();
        (self.note)(&format!("KIP-392, a consumer in region b reading wb (0 to {end}):\n  {}", lines.join("\n  ")));
        self.o.fact("kip392_link_bytes_rack_b", bytes[0].1);
        self.o.fact("kip392_link_bytes_no_rack", bytes[1].1);
        self.o.fact("kip392_records", end);
        self.o.check(
            "KIP-392: the consumer of rack b reads every record and the link carries a tenth or less of what it carries without the rack",
            bytes[0].2 as i64 >= end && bytes[1].2 as i64 >= end && bytes[0].1 * 10 <= bytes[1].1,
            lines.join("; "),
        );
        Ok(())
    }

    /// Region b lost: broker 4 killed; (a) and (b) at the fixed rate again.
    fn region_b_lost(&mut self) -> Result<()> {
        self.hc.stop(4)?;
        let lat = self.perf_all(&["wa", "wb"], FIXED_RATE, 20)?;
        let (a, b) = (lat[0], lat[1]);
        self.o.fact("region_b_lost_a", a);
        self.o.fact("region_b_lost_b", b);
        let before = self.o.facts.get("fixed_b").and_then(|v| v["p50_ms"].as_f64()).unwrap_or(0.0);
        (self.note)(&format!(
            "region b lost (broker 4 stopped): (a) p50 {:.1} / p99 {:.1} ms; (b) p50 {:.1} / p99 {:.1} ms (with it: p50 {before:.1} ms)",
            a.p50_ms, a.p99_ms, b.p50_ms, b.p99_ms
        ));
        if self.patched {
            self.o.check(
                "region b lost: (b) writes go on at (a)'s latency (within half a round trip)",
                b.records >= FIXED_RATE * 20 && b.p50_ms <= a.p50_ms + 0.5 * self.rtt,
                format!("(b) p50 {:.1} ms, (a) {:.1} ms, {} records", b.p50_ms, a.p50_ms, b.records),
            );
        }
        Ok(())
    }
}

impl Wan<'_> {
    /// Region a lost under acks=all writes to `wd` (1, 2, 3 and observer 4, min.insync.replicas
    /// 1: one copy is left after the loss, so writes resume on it): every broker there killed at
    /// once (the quorum is kept: it stands for the third site of a 2.5-region layout), then okp's
    /// watchdog (`okp observers watch --enable --once`, over ssh across the link) promotes 4,
    /// the controller elects it (unclean: it was never in the ISR), and writes are accepted
    /// again. The acked
    /// records 4 does not have are the observer's lag at the moment of the loss: asynchronous
    /// replication's recovery point, counted here.
    fn region_a_lost(&mut self) -> Result<()> {
        self.hc.start(4)?;
        let (s, secs) = self.hc.wait_state("wd", Duration::from_secs(120), |s| s.leader == Some(1));
        (self.note)(&format!("region b back: {} after {secs:.1} s", s.map(|s| s.show()).unwrap_or_default()));
        let nodes = self.hc.topo.dir.join("nodes.yaml");
        crate::fsx::write_atomic(&nodes, self.hc.nodes_yaml().as_bytes())?;
        let t_start = Instant::now();
        let producer = self.hc.producer("wd", "dr", 20)?;
        std::thread::sleep(Duration::from_secs(10));
        let t_kill = Instant::now();
        let killed_at_ms = t_kill.duration_since(t_start).as_millis() as u64;
        for id in [1, 2, 3, 5] {
            self.hc.kill9(id)?;
        }
        (self.note)("region a lost: brokers 1, 2, 3, 5 killed (kill -9) at once");
        let (s, _) = self.hc.wait_state("wd", Duration::from_secs(60), |s| s.leader.is_none());
        (self.note)(&format!("wd without a leader: {}", s.map(|s| s.show()).unwrap_or("(no answer)".into())));
        let (rc, out, err, watch_secs, audit) =
            super::hosts::watch_once(self.hc, &["--policy", "leader-unavailable"], &nodes, 30)?;
        let promoted_after = t_kill.elapsed().as_secs_f64();
        (self.note)(&format!(
            "$ okp observers watch --enable --once (over ssh, across the link)\n  exit {rc} in {watch_secs:.1} s\n{out}{err}\naudit log:\n{audit}"
        ));
        // The controller does not elect by itself once 4 may lead: the operator's unclean election
        // (4 was never in the ISR), retried while the nodes read the edited observer.ids (TTL 5 s).
        let boot = self.hc.bootstrap();
        let elect: Vec<String> =
            ["--bootstrap-server", &boot, "--election-type", "unclean", "--topic", "wd", "--partition", "0"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let t_elect = Instant::now();
        let mut elections = 0;
        // A KRaft controller may elect 4 by itself (the topic allows unclean elections): okp's probe
        // looks before each attempt, so "leads" is when it first saw 4 leading.
        let s = loop {
            if let Some(s) = self.hc.state("wd").filter(|s| s.leader == Some(4)) {
                (self.note)(&format!("wd led by 4 before election attempt {}", elections + 1));
                break Some(s);
            }
            elections += 1;
            let out = self.hc.tools.run(Tool::Elect, &elect, None, Duration::from_secs(60))?;
            let (s, _) = self.hc.wait_state("wd", Duration::from_secs(2), |s| s.leader == Some(4));
            if s.is_some() || t_elect.elapsed() > Duration::from_secs(60) {
                (self.note)(&format!(
                    "kafka-leader-election --election-type unclean --topic wd: {elections} run(s), last rc {}: {}",
                    out.rc,
                    out.stdout.trim()
                ));
                break s;
            }
        };
        let leads_after = t_kill.elapsed().as_secs_f64();
        (self.note)(&format!("wd: {}", s.as_ref().map(|s| s.show()).unwrap_or("4 not leading".into())));
        // Writes accepted again: the producer's first acknowledgement after the loss.
        let t0 = Instant::now();
        let first_ack = loop {
            let after: Vec<u64> = producer
                .lines_from(0)
                .iter()
                .filter(|l| l.text.starts_with("ack\t") && l.t_ms > killed_at_ms + 1000)
                .map(|l| l.t_ms)
                .collect();
            if let Some(t) = after.first() {
                break Some((t - killed_at_ms) as f64 / 1000.0);
            }
            if t0.elapsed() > Duration::from_secs(90) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        std::thread::sleep(Duration::from_secs(3));
        let (lines, _) = producer.stop(Duration::from_secs(60));
        let acked: Vec<(u64, String)> = lines
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.text.split('\t').collect();
                (f.first() == Some(&"ack") && f.len() >= 3).then(|| (l.t_ms, f[2].to_string()))
            })
            .collect();
        let read = self.hc.read_all("wd", 2_000_000)?;
        let have: std::collections::BTreeSet<&str> = read.iter().map(String::as_str).collect();
        let missing: Vec<&(u64, String)> = acked.iter().filter(|(_, v)| !have.contains(v.as_str())).collect();
        let window = missing.iter().map(|(t, _)| killed_at_ms as f64 - *t as f64).fold(0.0_f64, f64::max) / 1000.0;
        let after_loss = missing.iter().filter(|(t, _)| *t > killed_at_ms).count();
        self.o.fact("region_a_lost_watch_exit", rc);
        self.o.fact("region_a_lost_promoted_seconds", round(promoted_after));
        self.o.fact("region_a_lost_leader_seconds", round(leads_after));
        self.o.fact("region_a_lost_writes_again_seconds", first_ack.map(round));
        self.o.fact("region_a_lost_acked", acked.len());
        self.o.fact("region_a_lost_acked_missing", missing.len());
        self.o.fact("region_a_lost_missing_acked_within_seconds_before", round(window));
        let detail = format!(
            "watch exit {rc} ({watch_secs:.1} s); 4 leads {leads_after:.1} s after the loss; writes accepted again after {}; {} acked records, {} not on 4 (acked up to {window:.2} s before the loss; {after_loss} acked after it)",
            first_ack.map(|s| format!("{s:.1} s")).unwrap_or("never (90 s)".into()),
            acked.len(),
            missing.len()
        );
        (self.note)(&format!("region a lost: {detail}"));
        if self.patched {
            self.o.check(
                "region a lost: the watchdog promotes the caught-up observer over the link, it leads, writes are accepted again",
                rc == 0 && s.is_some() && first_ack.is_some(),
                detail.clone(),
            );
            self.o.check(
                "region a lost: every acked record on 4 but those acked within the observer's lag before the loss (its recovery point), none acked after it lost",
                after_loss == 0 && window <= 2.0 + self.rtt / 1000.0,
                detail,
            );
        }
        Ok(())
    }
}

/// ProducerPerformance's windows (`N records sent, R records/sec (…), A ms avg latency, M ms max
/// latency.`, every 5 s) summed, for a run stopped before its summary.
fn windows(stdout: &str) -> crate::cluster::tools::PerfSummary {
    let mut p = crate::cluster::tools::PerfSummary::default();
    let (mut weighted, mut secs) = (0.0, 0.0);
    for l in stdout.lines().filter(|l| l.contains("records sent") && !l.contains("50th")) {
        let num = |tag: &str| -> Option<f64> {
            let at = l.find(tag)?;
            l[..at].trim_end().rsplit([' ', ',', '(']).find(|s| !s.is_empty())?.parse().ok()
        };
        let (Some(n), Some(rate), Some(avg), Some(max)) =
            (num("records sent"), num("records/sec"), num("ms avg latency"), num("ms max latency"))
        else {
            continue;
        };
        p.records += n as u64;
        weighted += n * avg;
        secs += if rate > 0.0 { n / rate } else { 0.0 };
        p.max_ms = p.max_ms.max(max);
    }
    if p.records > 0 {
        p.avg_ms = weighted / p.records as f64;
        p.records_per_sec = p.records as f64 / secs.max(1e-9);
    }
    p
}

/// How long broker 4 has been missing records the leader had, at each sample: how long ago the
/// leader first had more than 4 has now (0 when it has all).
fn lag_series(samples: &[Sample]) -> Vec<(f64, f64)> {
    samples
        .iter()
        .map(|s| {
            let lag = if s.remote_end >= s.leader_end {
                0.0
            } else {
                samples.iter().find(|p| p.leader_end > s.remote_end).map_or(0.0, |first| s.t - first.t)
            };
            (s.t, lag)
        })
        .collect()
}

/// The longest time broker 4 missed records the leader had.
fn lag_seconds(samples: &[Sample]) -> f64 {
    lag_series(samples).iter().map(|p| p.1).fold(0.0, f64::max)
}

/// The p99 of a probe's acknowledgement latencies (`ack … MICROS`), per second of its run.
fn p99_per_second(lines: &[crate::cluster::client::Line]) -> Vec<(f64, f64)> {
    let mut by_second: std::collections::BTreeMap<u64, Vec<f64>> = std::collections::BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.text.split('\t').collect();
        if f.first() == Some(&"ack") && f.len() >= 6 {
            if let Ok(us) = f[5].parse::<f64>() {
                by_second.entry(l.t_ms / 1000).or_default().push(us / 1000.0);
            }
        }
    }
    by_second
        .into_iter()
        .map(|(sec, mut v)| {
            v.sort_by(f64::total_cmp);
            let i = ((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1;
            (sec as f64 + 0.5, v[i])
        })
        .collect()
}

fn write_timeline(path: &std::path::Path, samples: &[Sample]) -> Result<()> {
    let mut s = String::from("seconds,high_watermark,leader_log_end,broker4_log_end\n");
    for x in samples {
        s.push_str(&format!("{:.2},{},{},{}\n", x.t, x.hw, x.leader_end, x.remote_end));
    }
    crate::fsx::write_atomic(path, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: f64, leader_end: i64, remote_end: i64) -> Sample {
        Sample { t, hw: leader_end, leader_end, remote_end }
    }

    #[test]
    fn a_probes_p99_is_taken_per_second() {
        let line = |t_ms: u64, us: u64| crate::cluster::client::Line { t_ms, text: format!("ack\t1\tv\t0\t5\t{us}") };
        let mut lines: Vec<_> = (0..100).map(|i| line(100 + i, 1000 + i * 10)).collect();
        lines.push(line(1500, 7000));
        lines.push(crate::cluster::client::Line { t_ms: 1600, text: "err\t2\tv\tTimeout".into() });
        assert_eq!(p99_per_second(&lines), vec![(0.5, 1.98), (1.5, 7.0)]);
    }

    #[test]
    fn a_stopped_runs_windows_are_summed() {
        let out = "1000 records sent, 200.0 records/sec (0.19 MB/sec), 10.0 ms avg latency, 50.0 ms max latency.\n\
                   500 records sent, 100.0 records/sec (0.10 MB/sec), 40.0 ms avg latency, 90.0 ms max latency.\n";
        let p = windows(out);
        assert_eq!(p.records, 1500);
        assert_eq!(p.avg_ms, 20.0);
        assert_eq!(p.max_ms, 90.0);
        assert_eq!(p.records_per_sec, 150.0);
        assert_eq!(windows("nothing").records, 0);
    }

    #[test]
    fn lag_in_seconds_is_how_long_the_newest_missing_record_has_waited() {
        // The leader gets 10 at 1 s, 20 at 2 s; 4 has 10 at 2 s, 20 at 3.5 s.
        let v = vec![s(0.0, 0, 0), s(1.0, 10, 0), s(2.0, 20, 10), s(3.0, 20, 15), s(3.5, 20, 20)];
        // At 2 s 4 misses records the leader had since 2 s (0 s); at 3 s since 2 s (1 s); at 1 s: since 1 s.
        assert_eq!(lag_seconds(&v), 1.0);
        assert_eq!(lag_seconds(&[s(0.0, 5, 5)]), 0.0);
    }
}
