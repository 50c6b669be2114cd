//! evidence/wan/WAN.md: one row per run of scenario WAN alone (`okp verify --scenarios WAN`),
//! written from the run.json files under evidence/wan/ after every such run and by
//! `okp verify --merge`: the link as given and as measured, the fixed-rate latencies of the five
//! cases, the saturating load (throughputs, the observer's lag and drain, the plots), KIP-392's
//! bytes over the link, and both region losses.
//!
//! Not here: the scenario (`scenarios::wan`), the release × scenario page (`matrix`).

use std::path::Path;

use super::record::RunRecord;
use crate::error::{Error, Result};
use crate::scenarios::ScenarioResult;

/// The subdirectory of the evidence directory that holds the WAN runs.
pub const DIR: &str = "wan";
pub const PAGE: &str = "WAN.md";

/// A WAN run's directory: its run name and its link (`3.9.2-zk-rtt20ms-20mbit`).
pub fn dir_name(run_name: &str, link: crate::hosts::wan::Link) -> String {
    let rate = if link.rate_kbit.is_multiple_of(1000) {
        format!("{}mbit", link.rate_kbit / 1000)
    } else {
        format!("{}kbit", link.rate_kbit)
    };
    format!("{run_name}-rtt{}ms-{rate}", link.rtt_ms)
}

/// Writes `dir`/WAN.md from every run directory in `dir` (by release, mode, flavor, round trip).
pub fn write_page(dir: &Path) -> Result<()> {
    let mut runs: Vec<(String, RunRecord)> = Vec::new();
    let mut mm2_runs: Vec<(String, RunRecord)> = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(format!("cannot read {}", dir.display()), e))?.flatten() {
        let p = e.path();
        if p.join(super::record::FILE_NAME).is_file() {
            let r = RunRecord::read(&p)?;
            let name = e.file_name().to_string_lossy().into_owned();
            if r.scenarios.iter().any(|o| o.id == "WAN") {
                runs.push((name, r));
            } else if r.scenarios.iter().any(|o| o.id == "MM2") {
                mm2_runs.push((name, r));
            }
        }
    }
    mm2_runs.sort_by(|(a, _), (b, _)| a.cmp(b));
    let rtt = |r: &RunRecord| wan(r).and_then(|o| num(o, "link_given", "rtt_ms")).unwrap_or(0.0) as u64;
    runs.sort_by(|(_, a), (_, b)| {
        (a.release, a.mode, a.flavor == crate::scenarios::Flavor::Upstream, rtt(a)).cmp(&(
            b.release,
            b.mode,
            b.flavor == crate::scenarios::Flavor::Upstream,
            rtt(b),
        ))
    });
    let mut text = page(&runs);
    text.push_str(&mm2_section(&mm2_runs));
    crate::fsx::write_atomic(&dir.join(PAGE), text.as_bytes())
}

/// The MirrorMaker 2 control group (scenario MM2): one row per copy per run.
fn mm2_section(runs: &[(String, RunRecord)]) -> String {
    let mut s = String::from(
        "\n## The control group: MirrorMaker 2 against the observer (scenario MM2)\n\n\
         The same regions and link; the source topic `mt` (acks=all, about 450 records/s) copied to region b twice: by observer 4 of the same cluster, and by a MirrorMaker 2 worker (the release's own connect-mirror, dedicated mode, offset flush every 60 s) to a one-node cluster there as `a.mt`. \
         Both processes killed with -9 at the same moment, about 40 s into MM2's second offset-flush window, and started again. Each copy read whole with read_committed once both caught up. \
         Duplicates: records read more than once; moved: records at another offset than the source's (the largest shift); aborted visible: records of the aborted transaction (200) a read_committed consumer sees; group `mg` resumes: where it resumes on the copy after committing on the source, and what it reads again / skips there. \
         MM2 is measured, not judged: separate clusters are independent failure domains (their own controllers, configs and upgrades), which one cluster with an observer is not.\n\n\
         | run | copy | verdict | records | duplicates | acked missing | moved (max shift) | aborted visible | mg resumes at (source's) | read again / skipped | journal |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    if runs.is_empty() {
        s.push_str("| no run yet ||||||||||\n");
    }
    for (name, r) in runs {
        let Some(o) = r.scenarios.iter().find(|o| o.id == "MM2") else { continue };
        let src = or_dash(num(o, "group_committed_source", ""), 0);
        let mm2 = if o.facts.get("mm2_exactly_once").and_then(|v| v.as_bool()) == Some(true) {
            "MM2 exactly-once → a.mt"
        } else {
            "MM2 → a.mt"
        };
        for (copy, key, at, again, skipped) in [
            ("observer 4", "observer", "group_committed_source", "group_reread_observer", "group_skipped_observer"),
            (mm2, "mm2", "group_committed_target_translated", "group_reread_mm2", "group_skipped_mm2"),
        ] {
            let f = |field: &str| or_dash(num(o, key, field), 0);
            s.push_str(&format!(
                "| {name} | {copy} | {} | {} | {} | {} | {} ({}) | {} | {} ({src}) | {} / {} | [MM2]({name}/{}) |\n",
                r.verdict.word(),
                f("records"),
                f("duplicates"),
                f("acked_missing"),
                f("offsets_moved"),
                f("offset_shift_max"),
                f("aborted_visible"),
                or_dash(num(o, at, ""), 0),
                or_dash(num(o, again, ""), 0),
                or_dash(num(o, skipped, ""), 0),
                o.evidence,
            ));
        }
    }
    s
}

fn wan(r: &RunRecord) -> Option<&ScenarioResult> {
    r.scenarios.iter().find(|o| o.id == "WAN")
}

/// Fact `name`'s field `field` (or the fact itself when `field` is empty), as a number.
fn num(o: &ScenarioResult, name: &str, field: &str) -> Option<f64> {
    let v = o.facts.get(name)?;
    let v = if field.is_empty() { v } else { v.get(field)? };
    v.as_f64()
}

fn ms(o: &ScenarioResult, case: &str) -> String {
    match (num(o, case, "p50_ms"), num(o, case, "p99_ms")) {
        (Some(p50), Some(p99)) => format!("{p50:.0} / {p99:.0}"),
        _ => "–".into(),
    }
}

fn or_dash(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |x| format!("{x:.digits$}"))
}

fn page(runs: &[(String, RunRecord)]) -> String {
    let mut s = String::from(
        "# okp verify: observers across a WAN link (scenario WAN)\n\n\
         Written by `okp verify` after every run of scenario WAN alone, from the `run.json` files in this directory (docs/multi-region.md has the layout and what each case means). \
         Region a: the quorum and brokers 1, 2, 3, 5; region b: broker 4 and a client host; every connection between them through a Toxiproxy delay and a tc tbf rate, measured at the start. \
         Cases, acks=all, min.insync.replicas 2: (a) no remote replica and (a2) its A/A copy, (b) 4 a remote observer, (c) 4 a remote ISR follower, (c1) as (c) with one request in flight. \
         An `-upstream` row ran the release's own jars: the negative control, where (b) is an ISR follower like (c).\n\n\
         ## Latency at a fixed rate (50 records/s of 1000 bytes each, the five at once; p50 / p99 ms)\n\n\
         | run | verdict | link given | RTT measured (min) | (a) | (a2) | (b) observer | (c) ISR follower | (c1) one in flight | HW above 4's log end | journal |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    if runs.is_empty() {
        s.push_str("| no run yet ||||||||||\n");
    }
    for (name, r) in runs {
        let Some(o) = wan(r) else { continue };
        let given = match (num(o, "link_given", "rtt_ms"), num(o, "link_given", "rate_kbit")) {
            (Some(rtt), Some(k)) => format!("{rtt:.0} ms, {}", crate::hosts::wan::show_rate(k as u64)),
            _ => "–".into(),
        };
        let measured = o.facts.get("link_measured").and_then(|m| m.get("rtt_ms")?.get(0)?.as_f64());
        let hw = o
            .facts
            .get("fixed_hw_above_observer")
            .and_then(|v| Some(format!("{} of {} samples", v.get(0)?.as_u64()?, v.get(1)?.as_u64()?)))
            .unwrap_or_else(|| "–".into());
        s.push_str(&format!(
            "| {name} | {} | {given} | {} ms | {} | {} | {} | {} | {} | {hw} | [WAN]({name}/{}) |\n",
            r.verdict.word(),
            or_dash(measured, 1),
            ms(o, "fixed_a"),
            ms(o, "fixed_a2"),
            ms(o, "fixed_b"),
            ms(o, "fixed_c"),
            ms(o, "fixed_c1"),
            o.evidence,
        ));
    }
    s.push_str(
        "\n## A saturating load (1.5 × the link, one topic at a time), KIP-392, region losses\n\n\
         Throughput in records/s ((c) stopped at twice its time when it cannot keep the rate). The observer's lag: the most records it was behind and for how long; drained: seconds from the load's end until it was within 10 records of the leader. \
         KIP-392: bytes the link carried toward region b while a consumer there read all of wb with `client.rack=b` and without. Region a lost: seconds from kill -9 of brokers 1, 2, 3, 5 until the watchdog had promoted 4, until 4 led wd after an unclean election, until the first acknowledged write; acked records not on 4 (the observer's recovery point).\n\n\
         | run | written Mbit/s | (a) / (b) / (c) records/s | 4 behind (records, s) | drained (s) | plots | KIP-392 rack b / none (bytes) | region b lost: (b) p50 ms | region a lost: promoted / leads / writes (s) | acked not on 4 |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (name, r) in runs {
        let Some(o) = wan(r) else { continue };
        let rate = num(o, "saturating_records_per_sec", "");
        let mbit = rate.map(|r| r * 1000.0 * 8.0 / 1e6);
        let rps = |case: &str| or_dash(num(o, case, "records_per_sec"), 0);
        let plots =
            ["wb", "wc"].iter().map(|t| format!("[{t}]({name}/WAN-saturating-{t}.png)")).collect::<Vec<_>>().join(" ");
        s.push_str(&format!(
            "| {name} | {} | {} / {} / {} | {}, {} | {} | {plots} | {} / {} | {} | {} / {} / {} | {} of {} |\n",
            or_dash(mbit, 0),
            rps("saturating_a"),
            rps("saturating_b"),
            rps("saturating_c"),
            or_dash(num(o, "saturating_observer_lag_max_records", ""), 0),
            or_dash(num(o, "saturating_observer_lag_max_seconds", ""), 1),
            or_dash(num(o, "saturating_drain_seconds_after_load", ""), 1),
            or_dash(num(o, "kip392_link_bytes_rack_b", ""), 0),
            or_dash(num(o, "kip392_link_bytes_no_rack", ""), 0),
            or_dash(num(o, "region_b_lost_b", "p50_ms"), 0),
            or_dash(num(o, "region_a_lost_promoted_seconds", ""), 1),
            or_dash(num(o, "region_a_lost_leader_seconds", ""), 1),
            or_dash(num(o, "region_a_lost_writes_again_seconds", ""), 1),
            or_dash(num(o, "region_a_lost_acked_missing", ""), 0),
            or_dash(num(o, "region_a_lost_acked", ""), 0),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_directory_names_its_link() {
        let link = crate::hosts::wan::Link { rtt_ms: 20, rate_kbit: 20_000 };
        assert_eq!(dir_name("3.9.2-zk", link), "3.9.2-zk-rtt20ms-20mbit");
        let link = crate::hosts::wan::Link { rtt_ms: 100, rate_kbit: 800 };
        assert_eq!(dir_name("4.3.1-kraft-upstream", link), "4.3.1-kraft-upstream-rtt100ms-800kbit");
    }

    #[test]
    fn no_mm2_run_gives_a_control_group_table_that_says_so() {
        let s = mm2_section(&[]);
        assert!(s.contains("## The control group: MirrorMaker 2") && s.contains("| no run yet"), "{s}");
    }

    #[test]
    fn an_empty_directory_gives_a_page_that_says_so() {
        let p = page(&[]);
        assert!(p.contains("| no run yet"), "{p}");
    }
}
