//! MM2: the control group of scenario WAN. The same two regions and link as WAN
//! (`hosts::wan`): region a holds the source cluster (the quorum, brokers 1, 2, 3, 5), region b
//! broker 4, an observer of the source topic `mt`, and a host with a second, one-node KRaft
//! cluster (the target) and a MirrorMaker 2 worker (Kafka's own connect-mirror of the same
//! release, from Maven Central, dedicated mode) copying `mt` to the target's `a.mt`. The target
//! and the worker run the release's own jars.
//!
//! Under one acks=all load on `mt` (okp's producer, unique values):
//!
//! 1. a consumer group `mg` reads the first records of `mt` and commits;
//! 2. three transactions on `mt`: committed, aborted, committed;
//! 3. the same kill -9, at the same moment, of the MM2 worker (in its offset-flush window, long
//!    after its first flush) and of the observer's broker; both started again;
//! 4. once the load has stopped and both copies caught up, each copy is read whole: duplicates,
//!    acked records missing, the offset of each record against the source's, the aborted
//!    transaction's records under read_committed, and where `mg` resumes on each copy (MM2's
//!    translated offset, synced to the target's group; the observer's log has the source's own
//!    offsets) with the records it would read twice.
//!
//! The observer side is checked (0 duplicates, 0 missing, the same offsets, nothing aborted
//! visible); MM2's side is measured and recorded, never judged: it is the comparison.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::{round, Ctx, Flavor, ScenarioResult};
use crate::cluster::node::{Node, Role};
use crate::cluster::tools::Tool;
use crate::error::{Error, Result};
use crate::hosts;
use crate::hosts::cluster::{HostCluster, Layout, BROKER_PORT};
use crate::hosts::{Host, Topology};
use crate::model::Coordinate;
use crate::wire::{Probe, DEBUGGING};

/// Kafka Connect's default offset-flush interval, set explicitly: the window a kill falls in.
const FLUSH_MS: u64 = 60_000;
/// The kill: this long after MM2's first copied record (past its first flush, 40 s into the next
/// window).
const KILL_AFTER: Duration = Duration::from_secs(100);
/// The producer's pause between records (about 450 records/s).
const INTERVAL_MS: u64 = 2;
/// Records the group `mg` reads and commits before the kill.
const GROUP_READ: u64 = 3000;
/// Records per transaction.
const TXN_RECORDS: u64 = 200;
const MIRROR_CLASS: &str = "org.apache.kafka.connect.mirror.MirrorMaker";
const TARGET_TOPIC: &str = "a.mt";

/// Why MM2 cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    super::wan::unavailable()
}

pub fn mm2(ctx: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    if let Some(why) = unavailable() {
        return Err(Error::External(format!("MM2 needs namespaces and Toxiproxy: {why}")));
    }
    if ctx.flavor != Flavor::Patched {
        return Err(Error::Usage(
            "MM2 compares okp's observer with MirrorMaker 2: it runs on the patched jars only".into(),
        ));
    }
    let v = ctx.c.rt.version;
    if v < crate::version::KafkaVersion::new(3, 3, 0) {
        return Err(Error::External(format!(
            "MM2's target is a one-node KRaft cluster, production-ready from 3.3; {v} is older"
        )));
    }
    let eos = ctx.tuning.mm2_exactly_once;
    if eos && v < crate::version::KafkaVersion::new(3, 5, 0) {
        return Err(Error::Usage(format!(
            "--mm2-exactly-once: MirrorMaker 2 supports exactly-once from 3.5 (KIP-618); {v} is older"
        )));
    }
    let link = ctx.tuning.wan.unwrap_or(super::wan::DEFAULT_LINK);
    let bundle =
        ctx.c.bundle.clone().ok_or_else(|| Error::Usage("MM2 installs okp's bundle: this run has none".into()))?;
    let classes = ctx.c.okp_client_classes()?;
    // The release's own jars (the patched ones swapped back) for the target and the worker.
    let mut upstream = ctx.c.rt.classpath.clone();
    for (up, patched, _) in &ctx.c.rt.swapped {
        for p in upstream.iter_mut().filter(|p| *p == patched) {
            *p = up.clone();
        }
    }
    let maven = crate::maven::Maven::from_env()?;
    let mirror = maven.classpath_of(
        &[Coordinate { group: "org.apache.kafka".into(), artifact: "connect-mirror".into(), version: v.to_string() }],
        &format!("okp-mm2-{v}"),
    )?;
    let join = |v: &[std::path::PathBuf]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
    let layout = Layout::two_regions(ctx.c.mode, link, true, "4\n");
    o.fact("link_given", link);
    o.fact("mm2_exactly_once", eos);
    let t0 = Instant::now();
    let mut hc =
        HostCluster::up_with(ctx.c.mode, ctx.c.rt.clone(), Some(bundle), classes, ctx.c.timers.lag_ms, layout)?;
    o.fact("cluster_up_seconds", round(t0.elapsed().as_secs_f64()));
    let clientb = hc.topo.host("clientb")?.clone();
    let m = hosts::wan::measure_link(&clientb, &hc.topo.ctl, link)?;
    ctx.c.journal.note(&format!("link given: {}\nlink measured: {}", link.show(), m.show()));
    o.fact("link_measured", &m);
    let ns = hc.topo.ctl.ns.clone();
    let journal = &mut ctx.c.journal;
    let r = hosts::in_netns(&ns, || {
        let mut x = Mm2 {
            hc: &mut hc,
            o,
            note: &mut |s: &str| journal.note(s),
            clientb,
            upstream_cp: join(&upstream),
            mirror_cp: format!("{}:{}", join(&mirror), join(&upstream)),
            target: None,
            worker: None,
            eos,
        };
        let r = x.run();
        for n in [x.worker.as_mut(), x.target.as_mut()].into_iter().flatten() {
            n.kill9();
        }
        r
    })?;
    super::wan::tear_down(hc, &mut ctx.c.journal, o);
    r
}

struct Mm2<'a> {
    hc: &'a mut HostCluster,
    o: &'a mut ScenarioResult,
    note: &'a mut dyn FnMut(&str),
    clientb: Host,
    upstream_cp: String,
    mirror_cp: String,
    target: Option<Node>,
    worker: Option<Node>,
    /// The worker with exactly-once source support (KIP-618).
    eos: bool,
}

/// One copy of a topic as a reader saw it: (offset, value) in log order.
type Copy = Vec<(i64, String)>;

impl Mm2<'_> {
    fn target_boot(&self) -> String {
        format!("{}:{BROKER_PORT}", self.clientb.addr)
    }

    fn run(&mut self) -> Result<()> {
        self.hc.create_topic("mt", "1:2:3:4", &["min.insync.replicas=2"])?;
        let (s, _) = self.hc.wait_state("mt", Duration::from_secs(60), |s| s.leader.is_some() && s.isr.len() >= 3);
        (self.note)(&format!("mt: {}", s.map(|s| s.show()).unwrap_or("no leader".into())));
        self.start_target()?;
        let producer = self.hc.producer("mt", "mm", INTERVAL_MS)?;
        self.start_worker()?;
        // MM2 copying: the target's a.mt has a record.
        let t_copy = Instant::now();
        let copying = loop {
            if self.target_end().is_some_and(|e| e > 0) {
                break true;
            }
            if t_copy.elapsed() > Duration::from_secs(120) || !self.worker.as_mut().is_some_and(|w| w.is_running()) {
                break false;
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        if !copying {
            let tail = self.worker.as_ref().map(|w| w.tail(30)).unwrap_or_default();
            return Err(Error::External(format!(
                "MirrorMaker 2 copied nothing to {TARGET_TOPIC} within 120 s:\n{tail}"
            )));
        }
        let first_copy = Instant::now();
        (self.note)(&format!(
            "MM2 copying: {TARGET_TOPIC} has records {:.1} s after the worker started",
            t_copy.elapsed().as_secs_f64()
        ));
        std::thread::sleep(Duration::from_secs(20));
        // The group reads and commits on the source, as an application in region a would.
        let boot = self.hc.bootstrap();
        let committed = self.client_lines(&["commit", &boot, "mt", "mg", &GROUP_READ.to_string()], false)?;
        let source_committed = committed_of(&committed).unwrap_or(-1);
        (self.note)(&format!("group mg read {GROUP_READ} records of mt and committed offset {source_committed}"));
        let txn = self.client_lines(&["txn", &boot, "mt", "tx", &TXN_RECORDS.to_string()], false)?;
        let txns: Vec<&str> = txn.iter().filter(|l| l.starts_with("txn\t")).map(String::as_str).collect();
        (self.note)(&format!("transactions on mt: {}", txns.join("; ")));
        if let Some(left) = KILL_AFTER.checked_sub(first_copy.elapsed()) {
            std::thread::sleep(left);
        }
        // The same kill -9 of both copies' processes at once.
        let end_at_kill = self.target_end().unwrap_or(-1);
        if let Some(w) = self.worker.as_mut() {
            w.kill9();
        }
        self.hc.kill9(4)?;
        let kill_at = first_copy.elapsed().as_secs_f64();
        (self.note)(&format!(
            "kill -9 of the MM2 worker and of broker 4 (the observer) at once, {kill_at:.1} s after MM2's first copied record (offset flush every {} s); {TARGET_TOPIC} ended at {end_at_kill}",
            FLUSH_MS / 1000
        ));
        std::thread::sleep(Duration::from_secs(5));
        self.hc.start(4)?;
        let t_restart = Instant::now();
        self.start_worker()?;
        std::thread::sleep(Duration::from_secs(20));
        let (lines, _) = producer.stop(Duration::from_secs(60));
        let acked: BTreeSet<String> = lines
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.text.split('\t').collect();
                (f.first() == Some(&"ack") && f.len() >= 3).then(|| f[2].to_string())
            })
            .collect();
        // Both copies caught up: the observer at the leader's log end, the target's end unchanged for 10 s.
        let leader_end = self.end_at(&self.addr(1), "mt");
        let t_wait = Instant::now();
        let mut last = (-1, Instant::now());
        loop {
            let e = self.target_end().unwrap_or(-1);
            if e != last.0 {
                last = (e, Instant::now());
            }
            let observer_done = self.end_at(&self.addr(4), "mt") >= leader_end;
            if (observer_done && last.1.elapsed() > Duration::from_secs(10))
                || t_wait.elapsed() > Duration::from_secs(180)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let observer_end = self.end_at(&self.addr(4), "mt");
        (self.note)(&format!(
            "after the restart: the observer at {observer_end} of the leader's {leader_end}; {TARGET_TOPIC} at {} ({:.1} s after the restarts)",
            last.0,
            t_restart.elapsed().as_secs_f64()
        ));
        // MM2's synced group offset: its checkpoints every 5 s, the sync every 5 s.
        let target_boot = self.target_boot();
        let mut target_committed = -1;
        for _ in 0..20 {
            let l = self.client_lines(&["committed", &target_boot, TARGET_TOPIC, "mg"], true)?;
            target_committed = committed_of(&l).unwrap_or(-1);
            if target_committed >= 0 {
                break;
            }
            std::thread::sleep(Duration::from_secs(3));
        }
        let mm2_resumed_from = self.mm2_resumed_from();
        self.compare(&acked, source_committed, target_committed, mm2_resumed_from, end_at_kill)
    }

    #[allow(clippy::too_many_arguments)]
    fn compare(
        &mut self,
        acked: &BTreeSet<String>,
        source_committed: i64,
        target_committed: i64,
        mm2_resumed_from: Option<i64>,
        end_at_kill: i64,
    ) -> Result<()> {
        let boot = self.hc.bootstrap();
        let source = self.read(&boot, "mt", "read_committed", "", false)?;
        let observer = self.read(&boot, "mt", "read_committed", "b", true)?;
        let target = self.read(&self.target_boot(), TARGET_TOPIC, "read_committed", "", true)?;
        let target_all = self.read(&self.target_boot(), TARGET_TOPIC, "read_uncommitted", "", true)?;
        let source_all = self.read(&boot, "mt", "read_uncommitted", "", false)?;
        let stats = |copy: &Copy| -> CopyStats {
            let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, v) in copy {
                *seen.entry(v.as_str()).or_default() += 1;
            }
            let duplicates = seen.values().map(|n| n - 1).sum();
            let missing = acked.iter().filter(|v| !seen.contains_key(v.as_str())).count();
            let src: BTreeMap<&str, i64> = source.iter().map(|(o, v)| (v.as_str(), *o)).collect();
            let mut first: BTreeMap<&str, i64> = BTreeMap::new();
            for (o, v) in copy {
                first.entry(v.as_str()).or_insert(*o);
            }
            let moved: Vec<i64> =
                first.iter().filter_map(|(v, o)| src.get(v).map(|s| o - s)).filter(|d| *d != 0).collect();
            CopyStats {
                records: copy.len(),
                distinct: seen.len(),
                duplicates,
                acked_missing: missing,
                offsets_moved: moved.len(),
                offset_shift_max: moved.iter().map(|d| d.abs()).max().unwrap_or(0),
                aborted_visible: copy.iter().filter(|(_, v)| v.starts_with("tx-a-")).count(),
                committed_visible: copy.iter().filter(|(_, v)| v.starts_with("tx-c")).count(),
            }
        };
        let (s_obs, s_tgt) = (stats(&observer), stats(&target));
        // Where mg resumes on each copy, and what it reads again there.
        let consumed: BTreeSet<&str> =
            source.iter().filter(|(o, _)| *o < source_committed).map(|(_, v)| v.as_str()).collect();
        let resume = |copy: &Copy, at: i64| -> (usize, usize) {
            let after: BTreeSet<&str> = copy.iter().filter(|(o, _)| *o >= at).map(|(_, v)| v.as_str()).collect();
            let again = copy.iter().filter(|(o, v)| *o >= at && consumed.contains(v.as_str())).count();
            let skipped = source.iter().filter(|(o, v)| *o >= source_committed && !after.contains(v.as_str())).count();
            (again, skipped)
        };
        let (obs_again, obs_skipped) = resume(&observer, source_committed);
        let (tgt_again, tgt_skipped) = if target_committed >= 0 { resume(&target, target_committed) } else { (0, 0) };
        let identical = observer == source;
        let aborted_in_source_log = source_all.iter().filter(|(_, v)| v.starts_with("tx-a-")).count();
        let aborted_target_uncommitted = target_all.iter().filter(|(_, v)| v.starts_with("tx-a-")).count();
        self.o.fact("acked", acked.len());
        self.o.fact("source_records_read_committed", source.len());
        self.o.fact("observer", &s_obs);
        self.o.fact("mm2", &s_tgt);
        self.o.fact("observer_log_identical_to_source", identical);
        self.o.fact("group_committed_source", source_committed);
        self.o.fact("group_committed_target_translated", target_committed);
        self.o.fact("group_reread_observer", obs_again);
        self.o.fact("group_reread_mm2", tgt_again);
        self.o.fact("group_skipped_observer", obs_skipped);
        self.o.fact("group_skipped_mm2", tgt_skipped);
        self.o.fact("mm2_resumed_from_source_offset", mm2_resumed_from);
        self.o.fact("mm2_target_end_at_kill", end_at_kill);
        self.o.fact("aborted_records_in_source_log", aborted_in_source_log);
        self.o.fact("aborted_records_target_read_uncommitted", aborted_target_uncommitted);
        let show = |name: &str, s: &CopyStats| {
            format!(
                "{name}: {} records read_committed ({} distinct), {} duplicates, {} acked missing, {} records at another offset than the source's (up to {}), aborted records visible: {}, committed transactional records: {}",
                s.records, s.distinct, s.duplicates, s.acked_missing, s.offsets_moved, s.offset_shift_max, s.aborted_visible, s.committed_visible
            )
        };
        (self.note)(&format!(
            "{} acked; source read_committed: {} records\n{}\n{}\nmg committed {source_committed} on the source; MM2 synced {target_committed} to the target: resuming there reads {tgt_again} records again, skips {tgt_skipped}; on the observer: {obs_again} again, {obs_skipped} skipped\nMM2 resumed mt-0 from source offset {} (its last offset flush before the kill); the target's a.mt ended at {end_at_kill} when it was killed",
            acked.len(),
            source.len(),
            show("observer 4", &s_obs),
            show("MM2 target a.mt", &s_tgt),
            mm2_resumed_from.map_or("none".into(), |o| o.to_string())
        ));
        self.o.check(
            "the observer after the same kill -9: every acked record once, at the source's own offset (its log is the source's)",
            s_obs.duplicates == 0 && s_obs.acked_missing == 0 && identical,
            show("observer 4", &s_obs),
        );
        self.o.check(
            "the observer under read_committed: the aborted transaction invisible, both committed ones whole",
            aborted_in_source_log as u64 == TXN_RECORDS
                && s_obs.aborted_visible == 0
                && s_obs.committed_visible as u64 == 2 * TXN_RECORDS,
            format!(
                "aborted records in the source's log {aborted_in_source_log}; on 4 read_committed: {} aborted, {} committed",
                s_obs.aborted_visible, s_obs.committed_visible
            ),
        );
        self.o.check(
            "a group resuming on the observer at its committed offset reads nothing twice and skips nothing",
            source_committed > 0 && obs_again == 0 && obs_skipped == 0,
            format!("mg at {source_committed}: {obs_again} again, {obs_skipped} skipped"),
        );
        self.o.check(
            "the control group ran: MirrorMaker 2 copied every acked record to the target (at least once)",
            s_tgt.acked_missing == 0 && s_tgt.records > 0,
            show("MM2 target a.mt", &s_tgt),
        );
        Ok(())
    }

    fn addr(&self, broker: i32) -> String {
        self.hc.node(broker).map(|n| format!("{}:{BROKER_PORT}", n.host.addr)).unwrap_or_default()
    }

    fn end_at(&self, addr: &str, topic: &str) -> i64 {
        end_at(addr, topic)
    }

    /// The target's a.mt log end, read from region b.
    fn target_end(&self) -> Option<i64> {
        let addr = self.target_boot();
        let e = hosts::in_netns(&self.clientb.ns, || end_at(&addr, TARGET_TOPIC)).ok()?;
        (e >= 0).then_some(e)
    }

    /// Runs okp's client to its end (in region b with `in_b`); its stdout lines.
    fn client_lines(&self, args: &[&str], in_b: bool) -> Result<Vec<String>> {
        let cp = format!("{}:{}", self.hc.rt.classpath_string(), self.hc.client_classes.display());
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let err = self.hc.topo.dir.join(format!("client-{}.err", args[0]));
        let (java, jvm) = (self.hc.rt.java.clone(), self.hc.tools.jvm.clone());
        let run = || -> Result<Vec<String>> {
            let c = crate::cluster::client::Client::spawn(&args[0], &java, &jvm, &cp, &args, &err, Instant::now())?;
            let (lines, _) = c.stop(Duration::from_secs(180));
            Ok(lines.into_iter().map(|l| l.text).collect())
        };
        if in_b {
            hosts::in_netns(&self.clientb.ns, run)?
        } else {
            run()
        }
    }

    /// One whole read of `topic` partition 0: (offset, value) in order.
    fn read(&self, boot: &str, topic: &str, isolation: &str, rack: &str, in_b: bool) -> Result<Copy> {
        let mut args = vec!["read", boot, topic, "10000000", "8000", isolation];
        if !rack.is_empty() {
            args.push(rack);
        }
        let lines = self.client_lines(&args, in_b)?;
        Ok(lines
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f.first() == Some(&"read") && f.len() >= 5).then(|| Some((f[3].parse().ok()?, f[4].to_string())))?
            })
            .collect())
    }

    /// The one-node KRaft target cluster on clientb (release's own jars).
    fn start_target(&mut self) -> Result<()> {
        let h = self.clientb.clone();
        let dir = h.dir.join("target");
        let data = dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| Error::io(format!("cannot create {}", data.display()), e))?;
        let props = format!(
            "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@{a}:9093\ncontroller.listener.names=CONTROLLER\n\
             listeners=PLAINTEXT://{a}:{BROKER_PORT},CONTROLLER://{a}:9093\nadvertised.listeners=PLAINTEXT://{a}:{BROKER_PORT}\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\ninter.broker.listener.name=PLAINTEXT\n\
             log.dirs={}\nnum.partitions=1\noffsets.topic.replication.factor=1\noffsets.topic.num.partitions=4\n\
             transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\ntransaction.state.log.num.partitions=4\n\
             group.initial.rebalance.delay.ms=0\nnum.network.threads=2\nnum.io.threads=2\nbackground.threads=2\nlog.cleaner.enable=false\n",
            data.display(),
            a = h.addr
        );
        let cfg = dir.join("server.properties");
        crate::fsx::write_atomic(&cfg, props.as_bytes())?;
        let id = hosts::cluster::cluster_id_of(&format!("okp-mm2-target-{}-{}", self.hc.topo.run, std::process::id()))?;
        hosts::cluster::format_storage(&mut self.hc.tools, &id, &cfg, "the target")?;
        let (server_log, _) = self.hc.rt.write_logging(&dir)?;
        let mut argv = vec![self.hc.rt.java.display().to_string()];
        argv.extend(crate::cluster::SERVER_HEAP_GC.iter().map(|s| s.to_string()));
        argv.push(server_log);
        argv.push(self.hc.tools.class(Tool::Server)?.to_string());
        argv.push(cfg.display().to_string());
        let mut node =
            Node::new("target", Role::Broker, 1, BROKER_PORT, dir.clone(), Topology::on_host(&h, &argv), Vec::new());
        node.start(std::path::Path::new("ip"), &self.upstream_cp)?;
        let secs = node.wait_ready("Kafka Server started", Duration::from_secs(120))?;
        (self.note)(&format!(
            "target cluster (one KRaft node, release's jars) ready on {} in {:.1} s",
            h.addr,
            secs.as_secs_f64()
        ));
        self.target = Some(node);
        Ok(())
    }

    /// The MirrorMaker 2 worker on clientb (dedicated mode, `--clusters b`), started or restarted.
    fn start_worker(&mut self) -> Result<()> {
        let dir = self.clientb.dir.join("mm2");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let cfg = dir.join("mm2.properties");
        // Exactly-once (KIP-618): transactional writes to b, which need the internal REST server
        // of dedicated mode (on the worker's host only), and a read_committed source consumer,
        // without which the connector declares no exactly-once support (KAFKA-14021) and copies
        // aborted records as committed ones.
        let eos = if self.eos {
            format!(
                "b.exactly.once.source.support = enabled\ndedicated.mode.enable.internal.rest = true\nlisteners = http://{}:8083\na.consumer.isolation.level = read_committed\n",
                self.clientb.addr
            )
        } else {
            String::new()
        };
        let props = format!(
            "{eos}clusters = a, b\na.bootstrap.servers = {}\nb.bootstrap.servers = {}\n\
             a->b.enabled = true\na->b.topics = mt\na->b.groups = mg\nb->a.enabled = false\n\
             tasks.max = 1\nreplication.factor = 1\n\
             checkpoints.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n\
             offset.storage.replication.factor = 1\nstatus.storage.replication.factor = 1\nconfig.storage.replication.factor = 1\n\
             offset.storage.partitions = 1\nstatus.storage.partitions = 1\noffset.flush.interval.ms = {FLUSH_MS}\n\
             emit.checkpoints.interval.seconds = 5\nsync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 5\n\
             refresh.topics.interval.seconds = 5\nrefresh.groups.interval.seconds = 5\n",
            self.hc.bootstrap(),
            self.target_boot()
        );
        crate::fsx::write_atomic(&cfg, props.as_bytes())?;
        if self.worker.is_none() {
            let (server_log, _) = self.hc.rt.write_logging(&dir)?;
            let argv: Vec<String> = [
                self.hc.rt.java.display().to_string(),
                "-Xms64m".into(),
                "-Xmx384m".into(),
                "-XX:+UseSerialGC".into(),
                "-XX:TieredStopAtLevel=1".into(),
                server_log,
                MIRROR_CLASS.into(),
                cfg.display().to_string(),
                "--clusters".into(),
                "b".into(),
            ]
            .into();
            self.worker = Some(Node::new(
                "mm2",
                Role::Broker,
                0,
                0,
                dir.clone(),
                Topology::on_host(&self.clientb, &argv),
                Vec::new(),
            ));
        }
        let cp = self.mirror_cp.clone();
        let w = self.worker.as_mut().ok_or_else(|| Error::Harness("no worker".into()))?;
        w.start(std::path::Path::new("ip"), &cp)?;
        (self.note)("MirrorMaker 2 worker started on clientb (dedicated mode, --clusters b)");
        Ok(())
    }

    /// The source offset MM2 resumed mt-0 from after its restart (the offset it had committed
    /// before the kill), as its replication consumer logs it: `Seeking to offset N for partition mt-0`.
    fn mm2_resumed_from(&self) -> Option<i64> {
        resumed_from(&self.worker.as_ref()?.log_since_start())
    }
}

/// Partition 0's log end at `addr` (-1: no answer).
fn end_at(addr: &str, topic: &str) -> i64 {
    let key = (topic.to_string(), 0);
    Probe::connect_to(addr)
        .and_then(|mut p| p.latest_offsets(DEBUGGING, std::slice::from_ref(&key)))
        .and_then(|m| m.get(&key).cloned())
        .and_then(|r| r.ok())
        .unwrap_or(-1)
}

/// `Seeking to offset N for partition mt-0` in a worker's log: N.
fn resumed_from(log: &str) -> Option<i64> {
    log.lines().find_map(|l| {
        let (_, rest) = l.split_once("Seeking to offset ")?;
        let (n, rest) = rest.split_once(' ')?;
        rest.starts_with("for partition mt-0 ").then(|| n.parse().ok())?
    })
}

fn committed_of(lines: &[String]) -> Option<i64> {
    lines.iter().find_map(|l| l.strip_prefix("committed\t")?.trim().parse().ok())
}

#[derive(Debug, Default, serde::Serialize)]
struct CopyStats {
    records: usize,
    distinct: usize,
    duplicates: usize,
    acked_missing: usize,
    offsets_moved: usize,
    offset_shift_max: i64,
    aborted_visible: usize,
    committed_visible: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_offset_is_read_from_the_replication_consumers_line_for_mt_0_only() {
        let log = "[t] INFO [Consumer clientId=a->b|MirrorSourceConnector-0|replication-consumer, groupId=null] Seeking to offset 12 for partition mt-10 (x)\n\
                   [t] INFO [Consumer clientId=a->b|MirrorSourceConnector-0|replication-consumer, groupId=null] Seeking to offset 30828 for partition mt-0 (org.apache.kafka.clients.consumer.internals.ClassicKafkaConsumer)\n";
        assert_eq!(resumed_from(log), Some(30828));
        assert_eq!(resumed_from("Seeking to offset x for partition mt-0 (y)"), None);
        assert_eq!(resumed_from(""), None);
    }

    #[test]
    fn a_groups_offset_is_the_clients_committed_line() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(committed_of(&l(&["note\tx", "committed\t3000", "done"])), Some(3000));
        assert_eq!(committed_of(&l(&["committed\t-1"])), Some(-1));
        assert_eq!(committed_of(&l(&["done"])), None);
    }
}
