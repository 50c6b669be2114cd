//! `okp observers status --format prometheus`: the status as the Prometheus text exposition
//! format 0.0.4, for node_exporter's textfile collector (docs/observers.md, "Scraping status").
//! It holds what no JMX gauge has: what okp reads from the nodes' observer.ids files (whether
//! they agree, malformed rules, ignored tokens), each topic rule against the live brokers and
//! their racks, and the replicas' roles. Every family is a gauge with HELP and TYPE, the
//! families sorted by name and their samples by label values, so two runs over the same cluster
//! differ only in the timestamp, and a complete exposition ends with `okp_observers_status_up`
//! (the textfile recipe in docs/observers.md checks that before it publishes).
//!
//! Not here: reading the cluster or the files (`view`), writing the .prom file (the caller's
//! `> f.$$ && mv f.$$ f`, which the textfile collector needs to be atomic).

use super::idfile;
use super::view::{self, ObserverSet, ReplicaRow, Snapshot};

/// What one run knows.
pub struct Status<'a> {
    pub observers: &'a ObserverSet,
    /// The snapshot and its rows; None when the snapshot failed (`okp_observers_status_up 0`:
    /// only what the files say is exposed).
    pub cluster: Option<(&'a Snapshot, &'a [ReplicaRow])>,
    /// When the snapshot was taken (or failed), seconds since the Unix epoch.
    pub unix_seconds: f64,
}

/// One metric family: its name, HELP text and samples (labels, value).
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Vec<(&'static str, String)>, String)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Family {
        Family { name, help, samples: Vec::new() }
    }

    fn one(name: &'static str, help: &'static str, value: impl ToString) -> Family {
        Family { name, help, samples: vec![(vec![], value.to_string())] }
    }
}

/// A label value as the exposition format writes it between double quotes: `\`, `"` and a line
/// break escaped (`\\`, `\"`, `\n`).
fn escaped(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// How many of the brokers a rule's list makes observers are live: its ids among the snapshot's
/// brokers, and the live brokers whose broker.rack a `rack:NAME` item names. A live broker's rack
/// is always known (Metadata gives it), so no fail-safe guess enters the count.
pub fn rule_live_brokers(list: &idfile::Observers, snap: &Snapshot) -> usize {
    list.members(&snap.racks, std::iter::empty()).into_iter().filter(|id| snap.live(*id)).count()
}

/// The exposition, ending with a line break.
pub fn render(s: &Status) -> String {
    let o = s.observers;
    let mut families = vec![
        Family::one(
            "okp_observers_status_up",
            "1 when okp read the cluster's snapshot, 0 when it could not (then only the files' metrics follow).",
            u8::from(s.cluster.is_some()),
        ),
        Family::one(
            "okp_observers_status_timestamp_seconds",
            "When the snapshot was taken (or failed), seconds since the Unix epoch.",
            format!("{:.3}", s.unix_seconds),
        ),
        Family::one(
            "okp_observer_ids_files",
            "observer.ids files read: one per node, 1 with --observers-file, 0 with --observers.",
            o.files_read(),
        ),
        Family::one(
            "okp_observer_ids_malformed_rules",
            "observer.ids files holding a malformed topic rule (each file's first counts); that node's registries keep their last good set (frozen).",
            o.malformed.len(),
        ),
        Family::one(
            "okp_observer_ids_ignored_tokens",
            "Tokens in the observer.ids files that are neither ids nor comments; every node ignores them.",
            o.ignored_tokens(),
        ),
    ];
    let mut disagrees = Family::new(
        "okp_observer_ids_file_disagrees",
        "1 for each node whose observer.ids names another set or other rules than the others.",
    );
    let mut nodes: Vec<&String> = o.disagreeing_nodes().iter().collect();
    nodes.sort();
    disagrees.samples = nodes.into_iter().map(|n| (vec![("node", n.clone())], "1".to_string())).collect();
    families.push(disagrees);
    if o.from_nodes() {
        families.push(Family::one(
            "okp_observer_ids_files_agree",
            "1 when every node's observer.ids gives the same ids and rules, 0 otherwise (absent unless read from the nodes).",
            u8::from(o.disagreeing_nodes().is_empty()),
        ));
    }
    if let Some(ids) = &o.ids {
        families.push(Family::one(
            "okp_observer_ids_set_size",
            "Cluster-wide observer ids: the union over the files.",
            ids.len(),
        ));
    }
    if let Some((snap, rows)) = s.cluster {
        families.extend(cluster(o, snap, rows));
    }
    families.sort_by_key(|f| f.name);
    let mut out = String::new();
    for f in &families {
        out.push_str(&format!("# HELP {} {}\n# TYPE {} gauge\n", f.name, f.help, f.name));
        for (labels, value) in &f.samples {
            out.push_str(f.name);
            if !labels.is_empty() {
                let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escaped(v))).collect();
                out.push_str(&format!("{{{}}}", l.join(",")));
            }
            out.push_str(&format!(" {value}\n"));
        }
    }
    out
}

/// The families that need the snapshot.
fn cluster(o: &ObserverSet, snap: &Snapshot, rows: &[ReplicaRow]) -> Vec<Family> {
    let mut rules = Family::new(
        "okp_observer_rule_live_brokers",
        "For each topic rule, the live brokers it makes observers (a rack item counts the live brokers of that rack); 0: it names no live broker. Rules =none are left out.",
    );
    rules.samples = o
        .each_rule()
        .into_iter()
        .filter(|(_, list)| !(list.ids.is_empty() && list.racks.is_empty()))
        .map(|(text, list)| (vec![("rule", text)], rule_live_brokers(&list, snap).to_string()))
        .collect();
    let count = |keep: &dyn Fn(&ReplicaRow) -> bool| rows.iter().filter(|r| keep(r)).count();
    let mut observed: Vec<&ReplicaRow> =
        rows.iter().filter(|r| r.is_observer == Some(true) && r.lag.is_some()).collect();
    observed.sort_by_key(|r| (&r.topic, r.partition, r.replica));
    let labels = |r: &ReplicaRow| {
        vec![("topic", r.topic.clone()), ("partition", r.partition.to_string()), ("replica", r.replica.to_string())]
    };
    let mut lag = Family::new(
        "okp_observer_replica_lag",
        "Offsets an observer replica is behind its partition's leader (only where both answered).",
    );
    let mut caught_up = Family::new(
        "okp_observer_replica_caught_up",
        "1 when an observer replica is within --max-lag of its leader, 0 otherwise.",
    );
    for r in observed {
        lag.samples.push((labels(r), r.lag.unwrap_or_default().to_string()));
        caught_up.samples.push((labels(r), u8::from(r.caught_up == Some(true)).to_string()));
    }
    vec![
        rules,
        lag,
        caught_up,
        Family::one(
            "okp_observer_replicas",
            "Replicas that are observers (role observer, or an observer by okp's reading in any role).",
            count(&|r| r.role == "observer" || r.is_observer == Some(true)),
        ),
        Family::one(
            "okp_observers_in_isr",
            "Observer replicas inside an ISR (red state observer-in-isr).",
            count(&|r| r.flags.contains(&"observer-in-isr")),
        ),
        Family::one(
            "okp_observers_leading",
            "Observer replicas leading their partition (red state observer-leads).",
            count(&|r| r.flags.contains(&"observer-leads")),
        ),
        Family::one(
            "okp_observers_red_states",
            "Red states, as json's red_states: flagged replicas, files with ignored tokens, files with a malformed rule.",
            view::red_states(rows, o),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::view::tests::part;
    use crate::observers::view::{rows, Snapshot};

    fn snap(brokers: &[(i32, Option<&str>)], partitions: Vec<view::Part>) -> Snapshot {
        Snapshot {
            cluster_id: None,
            brokers: brokers.iter().map(|(i, _)| (*i, format!("h:{i}"))).collect(),
            racks: brokers.iter().map(|(i, r)| (*i, r.map(str::to_string))).collect(),
            partitions,
        }
    }

    /// The value of the sample whose name and labels are `series` (`name` or `name{a="b"}`).
    fn value(text: &str, series: &str) -> Option<String> {
        text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ').map(str::to_string))
    }

    #[test]
    fn a_healthy_cluster_whose_files_agree() {
        let s = snap(
            &[(1, None), (2, None), (4, None)],
            vec![part("obs", Some(1), &[1, 2, 4], &[1, 2], &[(1, 100), (2, 100), (4, 97)])],
        );
        let obs = ObserverSet::from_files(&[("broker 1".into(), "4\n".into()), ("broker 2".into(), "4\n".into())]);
        let r = rows(&s, &obs, 5);
        let t = render(&Status { observers: &obs, cluster: Some((&s, &r)), unix_seconds: 1700000000.25 });
        assert_eq!(
            t,
            "\
# HELP okp_observer_ids_file_disagrees 1 for each node whose observer.ids names another set or other rules than the others.
# TYPE okp_observer_ids_file_disagrees gauge
# HELP okp_observer_ids_files observer.ids files read: one per node, 1 with --observers-file, 0 with --observers.
# TYPE okp_observer_ids_files gauge
okp_observer_ids_files 2
# HELP okp_observer_ids_files_agree 1 when every node's observer.ids gives the same ids and rules, 0 otherwise (absent unless read from the nodes).
# TYPE okp_observer_ids_files_agree gauge
okp_observer_ids_files_agree 1
# HELP okp_observer_ids_ignored_tokens Tokens in the observer.ids files that are neither ids nor comments; every node ignores them.
# TYPE okp_observer_ids_ignored_tokens gauge
okp_observer_ids_ignored_tokens 0
# HELP okp_observer_ids_malformed_rules observer.ids files holding a malformed topic rule (each file's first counts); that node's registries keep their last good set (frozen).
# TYPE okp_observer_ids_malformed_rules gauge
okp_observer_ids_malformed_rules 0
# HELP okp_observer_ids_set_size Cluster-wide observer ids: the union over the files.
# TYPE okp_observer_ids_set_size gauge
okp_observer_ids_set_size 1
# HELP okp_observer_replica_caught_up 1 when an observer replica is within --max-lag of its leader, 0 otherwise.
# TYPE okp_observer_replica_caught_up gauge
okp_observer_replica_caught_up{topic=\"obs\",partition=\"0\",replica=\"4\"} 1
# HELP okp_observer_replica_lag Offsets an observer replica is behind its partition's leader (only where both answered).
# TYPE okp_observer_replica_lag gauge
okp_observer_replica_lag{topic=\"obs\",partition=\"0\",replica=\"4\"} 3
# HELP okp_observer_replicas Replicas that are observers (role observer, or an observer by okp's reading in any role).
# TYPE okp_observer_replicas gauge
okp_observer_replicas 1
# HELP okp_observer_rule_live_brokers For each topic rule, the live brokers it makes observers (a rack item counts the live brokers of that rack); 0: it names no live broker. Rules =none are left out.
# TYPE okp_observer_rule_live_brokers gauge
# HELP okp_observers_in_isr Observer replicas inside an ISR (red state observer-in-isr).
# TYPE okp_observers_in_isr gauge
okp_observers_in_isr 0
# HELP okp_observers_leading Observer replicas leading their partition (red state observer-leads).
# TYPE okp_observers_leading gauge
okp_observers_leading 0
# HELP okp_observers_red_states Red states, as json's red_states: flagged replicas, files with ignored tokens, files with a malformed rule.
# TYPE okp_observers_red_states gauge
okp_observers_red_states 0
# HELP okp_observers_status_timestamp_seconds When the snapshot was taken (or failed), seconds since the Unix epoch.
# TYPE okp_observers_status_timestamp_seconds gauge
okp_observers_status_timestamp_seconds 1700000000.250
# HELP okp_observers_status_up 1 when okp read the cluster's snapshot, 0 when it could not (then only the files' metrics follow).
# TYPE okp_observers_status_up gauge
okp_observers_status_up 1
"
        );
    }

    #[test]
    fn disagreeing_files_red_states_and_sorted_samples() {
        let s = snap(
            &[(1, None), (2, None), (4, None), (5, None)],
            vec![
                part("b", Some(4), &[4, 1, 5], &[4, 1, 5], &[(4, 10), (1, 10), (5, 8)]),
                part("a", Some(1), &[5, 1, 4], &[1, 4], &[(1, 10), (4, 10)]),
            ],
        );
        let obs = ObserverSet::from_files(&[
            ("broker 2".into(), "4 5x\n".into()),
            ("broker 1".into(), "4,5 banana 6y\n".into()),
            ("controller 9".into(), "4\ntopic:c observers=4,rack:\n".into()),
        ]);
        let r = rows(&s, &obs, 0);
        let t = render(&Status { observers: &obs, cluster: Some((&s, &r)), unix_seconds: 1.0 });
        assert_eq!(value(&t, "okp_observer_ids_files"), Some("3".into()));
        assert_eq!(value(&t, "okp_observer_ids_files_agree"), Some("0".into()));
        let disagrees: Vec<&str> = t.lines().filter(|l| l.starts_with("okp_observer_ids_file_disagrees{")).collect();
        assert_eq!(
            disagrees,
            [
                "okp_observer_ids_file_disagrees{node=\"broker 2\"} 1",
                "okp_observer_ids_file_disagrees{node=\"controller 9\"} 1"
            ],
            "{t}"
        );
        assert_eq!(value(&t, "okp_observer_ids_ignored_tokens"), Some("3".into()), "5x, banana, 6y");
        assert_eq!(value(&t, "okp_observer_ids_malformed_rules"), Some("1".into()));
        assert_eq!(value(&t, "okp_observer_ids_set_size"), Some("2".into()));
        // b-0: 4 leads (observer-leads and in the ISR), 5 in the ISR; a-0: 4 in the ISR, 5 out.
        assert_eq!(value(&t, "okp_observers_leading"), Some("1".into()));
        assert_eq!(value(&t, "okp_observers_in_isr"), Some("3".into()));
        assert_eq!(value(&t, "okp_observer_replicas"), Some("4".into()));
        assert_eq!(value(&t, "okp_observers_red_states"), Some((3 + 2 + 1).to_string()), "3 rows, 2 files, 1 file");
        let lags: Vec<&str> = t.lines().filter(|l| l.starts_with("okp_observer_replica_lag{")).collect();
        assert_eq!(
            lags,
            [
                "okp_observer_replica_lag{topic=\"a\",partition=\"0\",replica=\"4\"} 0",
                "okp_observer_replica_lag{topic=\"b\",partition=\"0\",replica=\"4\"} 0",
                "okp_observer_replica_lag{topic=\"b\",partition=\"0\",replica=\"5\"} 2",
            ],
            "a-0's 5 has no LEO: no lag, no sample; sorted by topic, then replica"
        );
        assert_eq!(
            value(&t, "okp_observer_replica_caught_up{topic=\"b\",partition=\"0\",replica=\"5\"}"),
            Some("0".into())
        );
        assert_eq!(t.lines().last(), Some("okp_observers_status_up 1"), "docs/observers.md's recipe relies on it");
        let names: Vec<&str> = t.lines().filter_map(|l| l.strip_prefix("# TYPE ")).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn each_rule_counts_its_live_brokers_by_id_and_by_rack() {
        // 7 in rack dr, 8 without broker.rack, 3 in rack west; 9 is down (not in Metadata).
        let s = snap(&[(1, Some("east")), (7, Some("dr")), (8, None), (3, Some("west"))], vec![]);
        let text = "\
topic:audit observers=rack:dr,9
topic:ledger observers=9
prefix:led observers=rack:west,rack:dr,3
regex:x\\.y observers=rack:gone
topic:quiet observers=none
";
        let obs = ObserverSet::from_files(&[("b1".into(), text.into()), ("b2".into(), "".into())]);
        assert!(obs.malformed.is_empty(), "{:?}", obs.malformed);
        let t = render(&Status { observers: &obs, cluster: Some((&s, &[])), unix_seconds: 1.0 });
        let rules: Vec<&str> = t.lines().filter(|l| l.starts_with("okp_observer_rule_live_brokers{")).collect();
        assert_eq!(
            rules,
            [
                "okp_observer_rule_live_brokers{rule=\"prefix:led=3,rack:dr,rack:west\"} 2",
                "okp_observer_rule_live_brokers{rule=\"regex:x\\\\.y=rack:gone\"} 0",
                "okp_observer_rule_live_brokers{rule=\"topic:audit=9,rack:dr\"} 1",
                "okp_observer_rule_live_brokers{rule=\"topic:ledger=9\"} 0",
            ],
            "3 counts once though listed and in rack west; 9 is down; no broker in rack gone; =none left out\n{t}"
        );
        let dr = idfile::Observers { ids: [].into(), racks: ["dr".to_string()].into() };
        assert_eq!(rule_live_brokers(&dr, &snap(&[(1, Some("east"))], vec![])), 0, "no live broker in rack dr");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escaped("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escaped("broker 1 (/etc/kafka/observer.ids)"), "broker 1 (/etc/kafka/observer.ids)");
        let obs = ObserverSet::from_files(&[("a \"b\"\\\n".into(), "4\n".into()), ("ok".into(), "".into())]);
        let t = render(&Status { observers: &obs, cluster: None, unix_seconds: 1.0 });
        assert!(t.contains("okp_observer_ids_file_disagrees{node=\"ok\"} 1"), "{t}");
        let obs = ObserverSet::from_files(&[("ok".into(), "4\n".into()), ("a \"b\"\\\n".into(), "".into())]);
        let t = render(&Status { observers: &obs, cluster: None, unix_seconds: 1.0 });
        assert!(t.contains("okp_observer_ids_file_disagrees{node=\"a \\\"b\\\"\\\\\\n\"} 1"), "{t}");
    }

    #[test]
    fn an_unreachable_cluster_is_up_0_with_the_files_metrics_alone() {
        let obs = ObserverSet::given(Some([4, 5].into()), "--observers".into());
        let t = render(&Status { observers: &obs, cluster: None, unix_seconds: 12.5 });
        assert_eq!(t.lines().last(), Some("okp_observers_status_up 0"), "the last line, as when up\n{t}");
        assert_eq!(value(&t, "okp_observers_status_timestamp_seconds"), Some("12.500".into()));
        assert_eq!(value(&t, "okp_observer_ids_files"), Some("0".into()));
        assert_eq!(value(&t, "okp_observer_ids_set_size"), Some("2".into()));
        assert!(!t.contains("okp_observer_ids_files_agree"), "not read from nodes: no agreement to claim\n{t}");
        for cluster_only in ["okp_observer_replicas", "okp_observers_red_states", "okp_observer_rule_live_brokers"] {
            assert!(!t.contains(cluster_only), "{cluster_only}\n{t}");
        }
        let nobody = ObserverSet::given(None, "nowhere".into());
        let t = render(&Status { observers: &nobody, cluster: None, unix_seconds: 1.0 });
        assert!(!t.contains("okp_observer_ids_set_size"), "{t}");
        let file = ObserverSet::from_file("file x".into(), "4\n");
        let t = render(&Status { observers: &file, cluster: None, unix_seconds: 1.0 });
        assert_eq!(value(&t, "okp_observer_ids_files"), Some("1".into()));
        assert!(!t.contains("okp_observer_ids_files_agree"), "{t}");
    }
}
