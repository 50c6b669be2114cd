//! A window of a live run as a `promtool test rules` file: the series every alert reads, as
//! Prometheus scraped them (one value per evaluation step, `_` where a series had none), and as
//! the expected alerts, those Prometheus itself held at chosen moments of the window. promtool
//! then evaluates the same rules over the same series offline; the two must agree.

use std::collections::BTreeMap;

use super::alerts::{quoted, Alert, DOC_BASE};
use super::prom::{Prom, Transition};
use crate::error::Result;

pub const PROMTOOL: &str = "/usr/bin/promtool";

/// Seconds of series kept before a window's start, so a rule that looks back (`for:`, the
/// one-hour `max_over_time`) sees the state before the condition.
const LEAD_IN_S: f64 = 10.0;

/// The metric names the alert expressions read.
pub fn metrics_read(alerts: &[Alert]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for a in alerts {
        for w in a.expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if (w.starts_with("okp_") || w.starts_with("kafka_")) && !names.iter().any(|n| n == w) {
                names.push(w.to_string());
            }
        }
    }
    names.sort();
    names
}

/// A series selector with every label: `name{k="v",…}` (PromQL's escapes).
fn selector(labels: &BTreeMap<String, String>) -> String {
    let name = labels.get("__name__").cloned().unwrap_or_default();
    let rest: Vec<String> =
        labels.iter().filter(|(k, _)| *k != "__name__").map(|(k, v)| format!("{k}={}", quoted(v))).collect();
    format!("{name}{{{}}}", rest.join(","))
}

/// promtool's expanding notation: runs of one value as `v+0xN`; a series that stops (Prometheus
/// marks it stale when a scrape no longer has it) as `stale`, then `_` while it stays absent.
pub fn values(v: &[Option<f64>]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[i] {
            j += 1;
        }
        match v[i] {
            None => {
                let ended = i > 0;
                out.extend((i..=j).map(|k| if ended && k == i { "stale" } else { "_" }.to_string()));
            }
            Some(x) if j > i => out.push(format!("{x}+0x{}", j - i)),
            Some(x) => out.push(format!("{x}")),
        }
        i = j + 1;
    }
    out.join(" ")
}

/// Which alerts (name → instances' labels) were firing at `t`, by the poller's timeline.
fn firing_at(timeline: &[Transition], t: f64) -> BTreeMap<String, Vec<BTreeMap<String, String>>> {
    let mut state: BTreeMap<(String, BTreeMap<String, String>), String> = BTreeMap::new();
    for tr in timeline.iter().filter(|tr| tr.at <= t) {
        state.insert((tr.alert.clone(), tr.labels.clone()), tr.state.clone());
    }
    let mut out: BTreeMap<String, Vec<BTreeMap<String, String>>> = BTreeMap::new();
    for ((name, labels), s) in state {
        if s == "firing" {
            out.entry(name).or_default().push(labels);
        }
    }
    out
}

/// Moments to hold the alerts at, whole seconds in [start, end]: the first one after each
/// transition to firing, and the window's last one, each where no alert changed state within
/// 2 s either side (so the live clock and promtool's agree there).
pub fn moments(timeline: &[Transition], start: f64, end: f64) -> Vec<f64> {
    // promtool sees no series before the window, so an alert pending since before it cannot be
    // firing there offline: a moment where one is (a condition the window's lead-in caught the
    // end of) is left out.
    let inherited = |m: f64| {
        let mut since: BTreeMap<(String, String), (f64, String)> = BTreeMap::new();
        for t in timeline.iter().filter(|t| t.at <= m) {
            let key = (t.alert.clone(), t.shown());
            let began = match (since.get(&key), t.state.as_str()) {
                (Some((b, s)), "firing") if s == "pending" || s == "firing" => *b,
                _ => t.at,
            };
            since.insert(key, (began, t.state.clone()));
        }
        since.values().any(|(b, s)| s != "inactive" && *b < start)
    };
    let stable = |m: f64| !timeline.iter().any(|t| (t.at - m).abs() < 2.0) && !inherited(m);
    let mut out: Vec<f64> = Vec::new();
    for t in timeline.iter().filter(|t| t.state == "firing" && t.at >= start && t.at <= end) {
        let mut m = t.at.ceil() + 2.0;
        while m <= end - 1.0 && !stable(m) {
            m += 1.0;
        }
        if m <= end - 1.0 && !out.contains(&m) {
            out.push(m);
        }
    }
    let mut last = end - 1.0;
    while last > start && !stable(last) {
        last -= 1.0;
    }
    if last > start && !out.contains(&last) {
        out.push(last);
    }
    out.sort_by(f64::total_cmp);
    out
}

/// `summary` with its `{{ $labels.X }}` filled in.
fn annotate(summary: &str, labels: &BTreeMap<String, String>) -> String {
    let mut s = summary.to_string();
    for (k, v) in labels {
        s = s.replace(&format!("{{{{ $labels.{k} }}}}"), v);
    }
    s
}

/// The test file for the window [from, to] (seconds of `p`'s clock) named `name`.
pub fn test_file(p: &Prom, name: &str, from: f64, to: f64, alerts: &[Alert]) -> Result<String> {
    let start = (from - LEAD_IN_S).max(0.0).floor();
    let end = to.floor();
    let names = metrics_read(alerts);
    let series = p.query_range(&format!("{{__name__=~\"{}\"}}", names.join("|")), start, end, 1)?;
    let timeline = p.timeline();
    let moments = moments(&timeline, start, end);
    let mut s = format!(
        "# okp: the series of window {name} of a live PROM run, as Prometheus scraped them every\n\
         # second, and the alerts Prometheus held (its /api/v1/alerts) at the moments below.\n\
         # Re-record: okp verify --version 3.9.2 --mode zk --scenarios PROM --evidence DIR, then copy\n\
         # DIR/partial/3.9.2-zk-PROM/PROM-series/ here. Run: promtool test rules {name}.test.yml\n\
         rule_files:\n  - alerts.yml\nevaluation_interval: 1s\ntests:\n  - name: {}\n    interval: 1s\n    input_series:\n",
        quoted(name)
    );
    // promtool's clock starts at 0: a series holding unix times (the status job's timestamp, which
    // OkpObserversStatusDown holds against time()) is written relative to the window's start.
    let zero = p.started_unix + start;
    for (labels, v) in &series {
        let shifted: Vec<Option<f64>>;
        let v = if labels.get("__name__").is_some_and(|n| n.ends_with("_timestamp_seconds")) {
            shifted = v.iter().map(|x| x.map(|x| ((x - zero) * 1000.0).round() / 1000.0)).collect();
            &shifted
        } else {
            v
        };
        s.push_str(&format!("      - series: {}\n        values: {}\n", quoted(&selector(labels)), quoted(&values(v))));
    }
    s.push_str("    alert_rule_test:\n");
    for m in &moments {
        let firing = firing_at(&timeline, *m);
        for a in alerts {
            s.push_str(&format!("      - eval_time: {}s\n        alertname: {}\n", (m - start) as u64, a.name));
            let instances = firing.get(a.name).cloned().unwrap_or_default();
            if instances.is_empty() {
                s.push_str("        exp_alerts: []\n");
                continue;
            }
            s.push_str("        exp_alerts:\n");
            for labels in instances {
                let mut all = labels.clone();
                all.insert("severity".into(), a.severity.into());
                let l: Vec<String> = all.iter().map(|(k, v)| format!("{k}: {}", quoted(v))).collect();
                s.push_str(&format!(
                    "          - exp_labels: {{{}}}\n            exp_annotations: {{summary: {}, runbook_url: {}}}\n",
                    l.join(", "),
                    quoted(&annotate(a.summary, &labels)),
                    quoted(&format!("{DOC_BASE}#{}", a.runbook))
                ));
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_keep_clear_of_every_transition() {
        let tr =
            |at: f64, state: &str| Transition { at, alert: "A".into(), labels: BTreeMap::new(), state: state.into() };
        let tl = vec![tr(10.2, "pending"), tr(20.1, "firing"), tr(21.0, "firing"), tr(30.5, "inactive")];
        // After 20.1: 23 is 2 s from 21.0 (clear); after 21.0: 23 too. The last second before 40.
        assert_eq!(moments(&tl, 0.0, 40.0), vec![23.0, 39.0]);
        // A window that ends on a transition steps back from it: 30 and 29 are within 2 s of 30.5.
        assert_eq!(moments(&tl, 0.0, 31.0), vec![23.0, 28.0]);
        // An alert pending before the window began: no moment while it lasts (22: it is over).
        let early = vec![tr(5.0, "pending"), tr(12.0, "firing"), tr(20.0, "inactive")];
        assert_eq!(moments(&early, 8.0, 30.0), vec![22.0, 29.0]);
        // A firing with no clear second after it in the window gives none.
        assert_eq!(moments(&[tr(10.0, "firing"), tr(12.5, "inactive")], 9.0, 14.0), Vec::<f64>::new());
    }

    #[test]
    fn values_use_promtools_notation() {
        assert_eq!(values(&[Some(1.0), Some(1.0), Some(1.0), None, None, Some(2.0)]), "1+0x2 stale _ 2");
        // Absent from the window's start: not yet there, nothing to mark stale.
        assert_eq!(values(&[None, None, Some(0.5)]), "_ _ 0.5");
        assert_eq!(values(&[]), "");
    }

    #[test]
    fn the_alerts_read_the_exported_names() {
        let names = metrics_read(&super::super::alerts::alerts(&Default::default()));
        assert!(names.contains(&"okp_partition_observers_in_isr".to_string()), "{names:?}");
        assert!(names.contains(&"kafka_cluster_partition_replicascount".to_string()), "{names:?}");
        assert!(!names.iter().any(|n| n.ends_with('_')), "{names:?}");
    }
}
