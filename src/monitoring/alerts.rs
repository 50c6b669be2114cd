//! The Prometheus alert rules for observers, rendered from the timers they depend on.
//!
//! Each alert's `for:` is a formula over the cluster's timers, not a number picked once: a
//! condition that okp's own operations create for a bounded time (a demotion leaves the id in an
//! ISR for up to the cache TTL plus `replica.lag.time.max.ms`) must not fire, and one that
//! outlives that bound must. contrib/monitoring/alerts.yml is `render(&Timers::default())`
//! (a test holds the file to it); the PROM scenario renders them with its cluster's timers.
//!
//! Not here: the metric names (contrib/monitoring/jmx-exporter.yml and `okp observers status
//! --format prometheus`), the live proof (scenarios/prom.rs).

/// What the alerts' `for:` durations are derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// The brokers' replica.lag.time.max.ms.
    pub lag_ms: u64,
    /// How long a node keeps the observer set it read (the hooks' cache TTL: 5 s).
    pub ttl_s: u64,
    /// Prometheus's scrape and rule-evaluation interval.
    pub scrape_s: u64,
    /// How often `okp observers status --format prometheus` rewrites the textfile.
    pub status_s: u64,
}

impl Default for Timers {
    /// Kafka's default replica.lag.time.max.ms (30 s since 2.5), the hooks' TTL, a 15 s scrape
    /// (Prometheus's default is 1 min; 15 s is what most Kafka set-ups use) and a status
    /// textfile written every 30 s.
    fn default() -> Timers {
        Timers { lag_ms: 30_000, ttl_s: 5, scrape_s: 15, status_s: 30 }
    }
}

/// `OkpObserversStatusDown`'s expression: the status job ran and could not read the cluster, or
/// its file has not changed for three runs (a `{status_s}` placeholder).
const STATUS_DOWN_EXPR: &str =
    "okp_observers_status_up == 0 or time() - okp_observers_status_timestamp_seconds > 3 * {status_s}";

/// One alert: its name, severity, expression, `for:` in seconds and the formula that gave it.
pub struct Alert {
    pub name: &'static str,
    pub severity: &'static str,
    pub expr: String,
    pub for_s: u64,
    pub for_formula: &'static str,
    pub summary: &'static str,
    /// The section of docs/monitoring.md that says what to do.
    pub runbook: &'static str,
}

fn ceil_s(ms: u64) -> u64 {
    ms.div_ceil(1000)
}

/// Every alert, in the order of the rules file.
pub fn alerts(t: &Timers) -> Vec<Alert> {
    let lag = ceil_s(t.lag_ms);
    vec![
        Alert {
            name: "OkpObserverInIsr",
            severity: "critical",
            expr: "max by (job, topic, partition) (okp_partition_observers_in_isr) > 0".into(),
            // A demotion: every node re-reads the file within the TTL, then the leader shrinks
            // the ISR within replica.lag.time.max.ms; two scrapes to see it gone.
            for_s: t.ttl_s + lag + 2 * t.scrape_s,
            for_formula: "TTL + replica.lag.time.max.ms + 2 scrapes",
            summary: "an observer of {{ $labels.topic }}-{{ $labels.partition }} is in its ISR: acks=all waits for it and it can be elected",
            runbook: "observer-in-isr",
        },
        Alert {
            name: "OkpObserverNotCaughtUp",
            severity: "warning",
            expr: "max by (job, topic, partition) (okp_partition_observer_replicas) > max by (job, topic, partition) (okp_partition_caught_up_observers)".into(),
            // Not caught up means behind for replica.lag.time.max.ms already; a restart of the
            // observer broker (a roll) takes a few of those.
            for_s: 4 * lag,
            for_formula: "4 × replica.lag.time.max.ms",
            summary: "an observer of {{ $labels.topic }}-{{ $labels.partition }} is not caught up: behind its leader for longer than replica.lag.time.max.ms",
            runbook: "observer-not-caught-up",
        },
        Alert {
            name: "OkpObserverSetsDiffer",
            severity: "critical",
            expr: "max by (job) (okp_broker_observer_set_size) != min by (job) (okp_broker_observer_set_size)".into(),
            // okp writes every node's file within a second or two; each node re-reads within the TTL.
            for_s: 2 * t.ttl_s + 2 * t.scrape_s,
            for_formula: "2 TTL + 2 scrapes",
            summary: "brokers hold observer sets of different sizes: their observer.ids files disagree",
            runbook: "observer-sets-differ",
        },
        Alert {
            name: "OkpObserverSetEmptied",
            severity: "warning",
            expr: "okp_broker_observer_set_size == 0 and max_over_time(okp_broker_observer_set_size[1h]) > 0".into(),
            for_s: t.ttl_s + t.scrape_s,
            for_formula: "TTL + 1 scrape",
            summary: "{{ $labels.node }}'s observer set became empty within the hour: every observer it knew is now a full replica",
            runbook: "observer-set-emptied",
        },
        Alert {
            name: "OkpPrimariesUnderReplicated",
            severity: "warning",
            // Kafka's UnderReplicatedPartitions counts every partition with an observer (the
            // observer is never in the ISR): this is the under-replication that matters.
            expr: "max by (job, topic, partition) (kafka_cluster_partition_replicascount) - max by (job, topic, partition) (okp_partition_observer_replicas) > max by (job, topic, partition) (kafka_cluster_partition_insyncreplicascount)".into(),
            for_s: lag + 2 * t.scrape_s,
            for_formula: "replica.lag.time.max.ms + 2 scrapes",
            summary: "{{ $labels.topic }}-{{ $labels.partition }} has a primary (non-observer) replica out of its ISR",
            runbook: "primaries-under-replicated",
        },
        Alert {
            name: "OkpObserverIdsMalformed",
            severity: "critical",
            expr: "okp_observer_ids_malformed_rules > 0 or okp_observer_ids_ignored_tokens > 0".into(),
            for_s: 2 * t.status_s + t.scrape_s,
            for_formula: "2 status runs + 1 scrape",
            summary: "an observer.ids file holds a malformed rule or a token that is not an id: the nodes keep their last good set (frozen) or ignore it",
            runbook: "observer-ids-malformed",
        },
        Alert {
            name: "OkpObserverIdsFilesDisagree",
            severity: "critical",
            expr: "okp_observer_ids_files_agree == 0".into(),
            for_s: 2 * t.ttl_s + 2 * t.status_s + t.scrape_s,
            for_formula: "2 TTL + 2 status runs + 1 scrape",
            summary: "the nodes' observer.ids files do not say the same thing",
            runbook: "observer-ids-files-disagree",
        },
        Alert {
            name: "OkpObserverRuleNoLiveBroker",
            severity: "warning",
            expr: "okp_observer_rule_live_brokers == 0".into(),
            for_s: 4 * lag + 2 * t.status_s,
            for_formula: "4 × replica.lag.time.max.ms + 2 status runs",
            summary: "topic rule {{ $labels.rule }} names no live broker: its observers are all down or the rule names the wrong ids",
            runbook: "observer-rule-no-live-broker",
        },
        Alert {
            name: "OkpObserversStatusDown",
            severity: "warning",
            // Up 0: it ran and could not reach the cluster; an old timestamp: it has not written
            // its file for 5 periods (stopped, or failing before it prints).
            expr: STATUS_DOWN_EXPR.replace("{status_s}", &t.status_s.to_string()),
            for_s: 2 * t.status_s + t.scrape_s,
            for_formula: "2 status runs + 1 scrape",
            summary: "okp observers status cannot reach the cluster, or its file is stale: the file-level alerts are blind",
            runbook: "observers-status-down",
        },
    ]
}

/// A duration in Prometheus's notation (`1m5s`).
pub fn duration(s: u64) -> String {
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!(
            "{h}h{}{}",
            if m > 0 { format!("{m}m") } else { String::new() },
            if s > 0 { format!("{s}s") } else { String::new() }
        ),
    }
}

/// A YAML double-quoted scalar (a JSON string is one).
pub(super) fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The rules file for `t`, with runbook links under `doc_base` (a URL or path prefix ending in
/// `monitoring.md`).
pub fn render(t: &Timers, doc_base: &str) -> String {
    let mut s = format!(
        "# okp: Prometheus alert rules for observer replicas (docs/monitoring.md).\n\
         # Rendered by okp for replica.lag.time.max.ms={} ms, observer.ids TTL {} s, scrape every {} s,\n\
         # okp observers status every {} s: `okp monitoring --out DIR --lag-ms N --scrape-s N --status-s N`\n\
         # renders it again for other timers. Each `for:` is the formula in the comment above it.\n\
         groups:\n  - name: okp-observers\n    rules:\n",
        t.lag_ms, t.ttl_s, t.scrape_s, t.status_s
    );
    for a in alerts(t) {
        s.push_str(&format!(
            "      # for: {}\n      - alert: {}\n        expr: {}\n        for: {}\n        labels:\n          severity: {}\n        annotations:\n          summary: {}\n          runbook_url: {}\n",
            a.for_formula,
            a.name,
            quoted(&a.expr),
            duration(a.for_s),
            a.severity,
            quoted(a.summary),
            quoted(&format!("{doc_base}#{}", a.runbook)),
        ));
    }
    s
}

/// Where the shipped file's runbook links point.
pub const DOC_BASE: &str = "docs/monitoring.md";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_prometheus_writes_them() {
        assert_eq!(duration(10), "10s");
        assert_eq!(duration(120), "2m");
        assert_eq!(duration(65), "1m5s");
        assert_eq!(duration(3600), "1h");
        assert_eq!(duration(3725), "1h2m5s");
    }

    #[test]
    fn the_shipped_rules_file_is_the_default_render() {
        let shipped = include_str!("../../contrib/monitoring/alerts.yml");
        assert_eq!(
            shipped,
            render(&Timers::default(), DOC_BASE),
            "run `okp monitoring --out contrib/monitoring` to write it again"
        );
    }

    #[test]
    fn for_durations_follow_the_timers() {
        let d = alerts(&Timers::default());
        let get = |n: &str| d.iter().find(|a| a.name == n).unwrap().for_s;
        // Defaults: 5 + 30 + 30 s for an observer in the ISR, 2 min not caught up.
        assert_eq!(get("OkpObserverInIsr"), 65);
        assert_eq!(get("OkpObserverNotCaughtUp"), 120);
        let fast = alerts(&Timers { lag_ms: 3000, ttl_s: 5, scrape_s: 1, status_s: 2 });
        assert_eq!(fast.iter().find(|a| a.name == "OkpObserverInIsr").unwrap().for_s, 10);
        // Every alert names a runbook section and is unique.
        let mut names: Vec<&str> = d.iter().map(|a| a.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), d.len());
    }
}
