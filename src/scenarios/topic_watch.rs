//! TOPIC's watchdog step: `okp observers watch` with a policy per topic (docs/observers-watch.md,
//! "Per topic"), run as AUTO runs it (`--once`, this okp, the nodes' own files), while TOPIC's
//! observer.ids say `4`, `prefix:t observers=none` and `topic:tobs observers=4`: broker 4
//! observes tobs through its topic rule. A primary of tobs (1:2:4, min.insync.replicas=2) stops,
//! and one scan with `--topic-policy topic:tobs=under-min-isr --policy never` promotes 4 for
//! tobs alone: only tobs's rule is rewritten (`topic:tobs observers=none`) on every node, the
//! prefix rule and the cluster-wide `4` stay, and 4 joins tobs's ISR. The primary back, a second
//! scan demotes it the same way and the files are as found. Whatever happens, the stopped
//! broker runs again and every file is put back as found.
//!
//! Not here: the watchdog's rules (src/observers/watch and its tests), AUTO's cluster-wide run.

use std::path::Path;
use std::time::{Duration, Instant};

use super::auto::{about, watch, Files};
use super::{round, Ctx, ScenarioResult};
use crate::cluster::tools::PartitionState;
use crate::cluster::OBSERVER;
use crate::error::{Error, Result};

const OBS: &str = "tobs";
/// The rule as found, and as the promotion writes it.
const RULE: &str = "topic:tobs observers=4";
const PROMOTED: &str = "topic:tobs observers=none";

fn in_isr(s: &PartitionState) -> bool {
    s.in_isr(OBSERVER)
}

fn files(x: &Ctx, nodes: &[i32]) -> Vec<String> {
    nodes
        .iter()
        .map(|id| crate::fsx::read::lossy_text(&x.c.node(*id).observer_file(), crate::fsx::read::MAX_TEXT))
        .collect()
}

pub(super) fn watch_per_topic(x: &mut Ctx, o: &mut ScenarioResult, nodes_file: &Path) -> Result<()> {
    let nodes = x.c.kafka_nodes();
    let found = files(x, &nodes);
    let mut stopped = None;
    let r = steps(x, o, nodes_file, &found, &mut stopped);
    // As found, whatever happened: the stopped primary running, every node's file as it was.
    let started = match stopped {
        Some(id) if !x.c.node_mut(id).is_running() => x.c.restart(id).map(|_| ()),
        _ => Ok(()),
    };
    let mut put_back = false;
    for ((id, was), now) in nodes.iter().zip(&found).zip(files(x, &nodes)) {
        if *was != now {
            x.c.set_observers(&[*id], was)?;
            put_back = true;
        }
    }
    if put_back {
        let t = x.lag() + x.ttl() + Duration::from_secs(30);
        x.wait(o, OBS, t, "files put back as found: 4 an observer of tobs again", "watch_restore_seconds", |s| {
            !in_isr(s)
        })?;
    }
    r.and(started)
}

fn steps(
    x: &mut Ctx,
    o: &mut ScenarioResult,
    nodes_file: &Path,
    found: &[String],
    stopped: &mut Option<i32>,
) -> Result<()> {
    let nodes = x.c.kafka_nodes();
    let s = x.state(OBS)?;
    // A primary in tobs's ISR that does not lead: stopping it shrinks the ISR, leadership stays.
    let victim = s.isr.iter().copied().find(|b| *b != OBSERVER && Some(*b) != s.leader);
    let ready = !in_isr(&s) && found.iter().all(|f| f.contains(&format!("{RULE}\n")));
    o.check(
        "watch per topic: 4 observes tobs by `topic:tobs observers=4` on every node, outside its ISR, a primary to stop",
        ready && victim.is_some(),
        format!("{}; files {found:?}", s.show()),
    );
    let Some(victim) = victim.filter(|_| ready) else { return Ok(()) };

    let dir = x.c.journal.dir().join("TOPIC-watch");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let f = Files { nodes: nodes_file.to_path_buf(), state: dir.join("state.json"), audit: dir.join("audit.log") };
    let flags = [
        "--topic-policy",
        "topic:tobs=under-min-isr",
        "--policy",
        "never",
        "--cooldown",
        "1",
        "--confirm-interval",
        "2",
        "--timeout",
        "60",
    ];
    let t = x.lag() + x.ttl() + Duration::from_secs(30);

    let t_stop = Instant::now();
    *stopped = Some(victim);
    x.c.stop(victim);
    x.wait(
        o,
        OBS,
        t,
        &format!("primary {victim} stopped: tobs's ISR under min.insync.replicas=2"),
        "watch_isr_shrink_seconds",
        |s| !s.in_isr(victim) && s.leader.is_some() && s.isr.len() < 2,
    )?;

    let (rc, l) = watch(x, &f, &flags)?;
    o.fact("watch_stop_to_promoted_seconds", round(t_stop.elapsed().as_secs_f64()));
    let want: Vec<String> = found.iter().map(|t| t.replace(RULE, PROMOTED)).collect();
    let now = files(x, &nodes);
    let actions: Vec<&serde_json::Value> = l.iter().filter(|d| d["action"] == "promote").collect();
    o.check(
        "--topic-policy topic:tobs=under-min-isr --policy never: 4 promoted for tobs, its audit lines name the rule topic:tobs, nothing else promoted",
        rc == Some(0)
            && about(&l, "tobs-0") == ["promote/decided", "promote/done"]
            && actions.iter().all(|d| d["topic_rule"] == "topic:tobs" && d["broker"] == OBSERVER),
        format!("rc {rc:?}, tobs-0 decisions {:?}, promote lines {actions:?}", about(&l, "tobs-0")),
    );
    o.check(
        "only tobs's rule rewritten on every node (`topic:tobs observers=none`); the prefix rule and the cluster-wide 4 untouched",
        now == want,
        format!("files {now:?}"),
    );
    let state = crate::fsx::read::lossy_text(&f.state, crate::fsx::read::MAX_TEXT);
    o.check(
        "the state file records the promotion for topic tobs",
        state.contains("\"topic\": \"tobs\""),
        state.replace('\n', " "),
    );
    x.wait(o, OBS, t, "promoted for tobs: 4 joins tobs's ISR", "watch_promoted_in_isr_seconds", in_isr)?;

    x.c.restart(victim)?;
    *stopped = None;
    let t_back = Instant::now();
    x.wait(o, OBS, t, &format!("primary {victim} back in tobs's ISR"), "watch_primary_back_seconds", |s| {
        s.in_isr(victim)
    })?;
    // A scan that wants nothing changes nothing: scan until it demotes, at most 30 s.
    let demoted = |l: &[serde_json::Value]| about(l, "tobs-0").iter().any(|a| a.starts_with("demote/"));
    let (mut rc, mut l) = watch(x, &f, &flags)?;
    while !demoted(&l) && rc == Some(0) && t_back.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_secs(1));
        (rc, l) = watch(x, &f, &flags)?;
    }
    o.fact("watch_back_to_demoted_seconds", round(t_back.elapsed().as_secs_f64()));
    let line = l.iter().find(|d| d["action"] == "demote" && d["outcome"] == "done");
    o.check(
        "tobs healthy again, cleared twice 2 s apart: 4 demoted for tobs (the rule topic:tobs), the cluster-wide ids untouched",
        rc == Some(0)
            && about(&l, "tobs-0") == ["demote/decided", "demote/done"]
            && line.is_some_and(|d| {
                d["topic_rule"] == "topic:tobs"
                    && d["reason"].as_str().is_some_and(|r| r.ends_with("confirmed again 2 s later"))
            }),
        format!("rc {rc:?}, tobs-0 decisions {:?}, demote line {line:?}", about(&l, "tobs-0")),
    );
    let now = files(x, &nodes);
    o.check("every node's observer.ids as found (`topic:tobs observers=4`)", now == found, format!("files {now:?}"));
    x.wait(o, OBS, t, "demoted for tobs: 4 leaves tobs's ISR", "watch_demoted_out_of_isr_seconds", |s| !in_isr(s))?;
    Ok(())
}
