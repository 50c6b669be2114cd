//! The Grafana dashboard users import (contrib/monitoring/dashboard.json) is well-formed: valid
//! against Grafana's dashboard model as the Grafana Foundation SDK's strict decoder reads it
//! (scripts/dashboard-check, which scripts/setup.sh builds; broken copies must fail it), every
//! panel's query parses with promtool, and every panel has a unique id, a title and a
//! description, its targets a refId each and the `${datasource}` variable as data source.

use crate::common::*;

use okp::monitoring::dashboard::panel_queries;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const DASHBOARD: &str = "contrib/monitoring/dashboard.json";

fn text() -> String {
    std::fs::read_to_string(repo_root().join(DASHBOARD)).unwrap()
}

fn dashboard() -> Value {
    serde_json::from_str(&text()).unwrap()
}

/// Every panel, a row's nested panels after the row.
fn all_panels(doc: &Value) -> Vec<&Value> {
    fn walk<'a>(panels: &'a [Value], out: &mut Vec<&'a Value>) {
        for p in panels {
            out.push(p);
            if let Some(nested) = p["panels"].as_array() {
                walk(nested, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(doc["panels"].as_array().expect("a panels list"), &mut out);
    out
}

/// A tool scripts/setup.sh installs under ~/.local/share/okp, the path in `env` if set, or PATH's.
fn tool(env: &str, installed: &str, name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return p.into();
    }
    let p = Path::new(&std::env::var("HOME").unwrap()).join(".local/share/okp").join(installed);
    if p.is_file() {
        return p;
    }
    PathBuf::from(name)
}

fn dashboard_check(file: &Path) -> std::process::Output {
    let tool = tool("OKP_DASHBOARD_CHECK", "bin/dashboard-check", "dashboard-check");
    Command::new(&tool)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e}): run scripts/setup.sh", tool.display()))
}

fn promtool_check_rules(rules: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dashboard-rules.yml");
    std::fs::write(&file, rules).unwrap();
    let tool = tool("OKP_PROMTOOL", "bin/promtool", "promtool");
    Command::new(&tool)
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e}): run scripts/setup.sh", tool.display()))
}

/// Each query as a recording rule, the dashboard's variables replaced by a match-all regex: a JSON
/// string is a YAML double-quoted scalar, so no query needs YAML escaping of its own.
fn as_recording_rules(queries: &[(String, String)]) -> String {
    let mut rules = String::from("groups:\n  - name: okp-dashboard\n    rules:\n");
    for (i, (_, expr)) in queries.iter().enumerate() {
        let expr = okp::monitoring::dashboard::all_selected(expr);
        rules += &format!(
            "      - record: okp_dashboard_query_{i}\n        expr: {}\n",
            serde_json::to_string(&expr).unwrap()
        );
    }
    rules
}

#[test]
fn the_dashboard_is_valid_against_grafanas_dashboard_model() {
    let o = dashboard_check(&repo_root().join(DASHBOARD));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

/// One defect put into a copy of the dashboard.
type Break = fn(&mut Value);

#[test]
fn the_model_check_rejects_broken_dashboards() {
    // One defect each: an unknown panel field, a wrong type, a missing required field, a typo in
    // a Prometheus target, an unknown stat option, a template variable without its type.
    let breaks: [(&str, Break); 6] = [
        ("unknown field", |d| d["panels"][1]["descripton"] = json!("typo")),
        ("wrong type", |d| d["panels"][1]["gridPos"]["w"] = json!("12")),
        ("missing type", |d| {
            d["panels"][1].as_object_mut().unwrap().remove("type");
        }),
        ("target typo", |d| {
            let t = d["panels"][1]["targets"][0].as_object_mut().unwrap();
            let e = t.remove("expr").unwrap();
            t.insert("exprr".into(), e);
        }),
        ("stat option typo", |d| d["panels"][1]["options"]["colourMode"] = json!("background")),
        ("variable without type", |d| {
            d["templating"]["list"][1].as_object_mut().unwrap().remove("type");
        }),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (what, break_it) in breaks {
        let mut doc = dashboard();
        assert_eq!(doc["panels"][1]["type"], "stat", "the breaks above expect a stat panel at panels[1]");
        break_it(&mut doc);
        let file = dir.path().join("broken.json");
        std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let o = dashboard_check(&file);
        assert!(!o.status.success(), "the model check accepted a dashboard with a {what}: {}", stdout(&o));
        assert!(stderr(&o).contains("invalid dashboard"), "{what}: {}", stderr(&o));
    }
}

#[test]
fn every_panel_query_parses_with_promtool() {
    let queries = panel_queries(&text()).unwrap();
    assert!(queries.len() >= 20, "{queries:?}");
    let o = promtool_check_rules(&as_recording_rules(&queries));
    assert!(o.status.success(), "{}{}\n{queries:#?}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains(&format!("{} rules found", queries.len())), "{}", stdout(&o));
    // The check is a real one: a query with an unclosed bracket fails it.
    let broken = [("broken".to_string(), "sum(rate(x[5m])".to_string())];
    let o = promtool_check_rules(&as_recording_rules(&broken));
    assert!(!o.status.success(), "promtool accepted a broken query: {}", stdout(&o));
}

#[test]
fn every_panel_has_a_unique_id_a_title_a_description_and_targets_with_refids() {
    let doc = dashboard();
    let panels = all_panels(&doc);
    let mut ids = BTreeSet::new();
    for p in &panels {
        let id = p["id"].as_u64().unwrap_or_else(|| panic!("a panel without an id: {p}"));
        assert!(ids.insert(id), "panel id {id} is used twice");
        let title = p["title"].as_str().unwrap_or("");
        assert!(!title.trim().is_empty(), "panel {id} has no title");
        if p["type"] == "row" {
            // Grafana's row model has no description; its panels carry them.
            continue;
        }
        let description = p["description"].as_str().unwrap_or("");
        assert!(
            description.ends_with('.') && description.len() > 40,
            "{title}: a description says what it shows and what a bad value means"
        );
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        let targets = p["targets"].as_array().unwrap_or_else(|| panic!("{title} has no targets"));
        assert!(!targets.is_empty(), "{title} has no targets");
        let mut refs = BTreeSet::new();
        for t in targets {
            assert!(t["expr"].as_str().is_some_and(|e| !e.is_empty()), "{title}: a target without an expr");
            let r = t["refId"].as_str().unwrap_or_else(|| panic!("{title}: a target without a refId"));
            assert!(refs.insert(r), "{title}: refId {r} twice");
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
        }
    }
}

#[test]
fn the_variables_are_a_prometheus_data_source_and_job_and_topic_from_label_values() {
    let doc = dashboard();
    let vars = doc["templating"]["list"].as_array().unwrap();
    let names: Vec<&str> = vars.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["datasource", "job", "topic"]);
    assert_eq!(vars[0]["type"], "datasource");
    assert_eq!(vars[0]["query"], "prometheus");
    for v in &vars[1..] {
        assert_eq!(v["type"], "query", "{v}");
        assert!(v["query"]["query"].as_str().unwrap().starts_with("label_values("), "{v}");
    }
    // The queries use the variables they offer, and the status exporter's panels its fixed job.
    let queries = panel_queries(&text()).unwrap();
    assert!(queries.iter().any(|(_, e)| e.contains("topic=~\"$topic\"")));
    for (title, e) in &queries {
        if e.starts_with("okp_observer") {
            assert!(e.contains("job=\"okp-status\""), "{title}: {e}");
        } else if !e.starts_with("ALERTS") {
            assert!(e.contains("job=~\"$job\""), "{title}: {e}");
        }
    }
}

// ---- The alert rules over series recorded from a live cluster (scenario PROM) ----

const SERIES: &str = "contrib/monitoring/tests";

/// The alert each recorded window is about, and the others its condition also makes true
/// (scenarios/prom.rs creates the same conditions).
const WINDOWS: &[(&str, Option<&str>, &[&str])] = &[
    ("steady", None, &[]),
    ("lagging-observer", Some("OkpObserverNotCaughtUp"), &[]),
    ("primary-out-of-isr", Some("OkpPrimariesUnderReplicated"), &[]),
    ("observer-in-isr", Some("OkpObserverInIsr"), &["OkpPrimariesUnderReplicated"]),
    ("sets-differ", Some("OkpObserverSetsDiffer"), &["OkpObserverIdsFilesDisagree"]),
    ("files-disagree", Some("OkpObserverIdsFilesDisagree"), &[]),
    ("malformed-file", Some("OkpObserverIdsMalformed"), &["OkpObserverIdsFilesDisagree"]),
    ("rule-no-live-broker", Some("OkpObserverRuleNoLiveBroker"), &[]),
    (
        "set-emptied",
        Some("OkpObserverSetEmptied"),
        &["OkpObserverInIsr", "OkpPrimariesUnderReplicated", "OkpObserverIdsFilesDisagree"],
    ),
    ("status-stale", Some("OkpObserversStatusDown"), &[]),
    ("status-unreachable", Some("OkpObserversStatusDown"), &[]),
];

fn promtool_test(dir: &Path, file: &str) -> std::process::Output {
    Command::new(tool("OKP_PROMTOOL", "", "promtool")).args(["test", "rules", file]).current_dir(dir).output().unwrap()
}

/// The alerts a test file expects firing at some moment it checks.
fn expected_firing(test: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut name = "";
    for l in test.lines() {
        if let Some(n) = l.trim().strip_prefix("alertname: ") {
            name = n;
        } else if l.trim() == "exp_alerts:" {
            out.insert(name.to_string());
        }
    }
    out
}

/// The recorded files test the rules as okp renders them today for PROM's timers: a change of
/// an alert needs a new recording (the command is in each file's head).
#[test]
fn the_recorded_series_were_recorded_with_todays_rules() {
    let t = okp::monitoring::alerts::Timers { lag_ms: 3000, ttl_s: 5, scrape_s: 1, status_s: 2 };
    let shipped = std::fs::read_to_string(repo_root().join(SERIES).join("alerts.yml")).unwrap();
    assert_eq!(shipped, okp::monitoring::alerts::render(&t, okp::monitoring::alerts::DOC_BASE));
}

/// promtool evaluates the rules over each window's series as Prometheus scraped them on a live
/// cluster and must find the alerts Prometheus itself held; each alert fires in its own window
/// (and those of the conditions that also make it true) and in no other.
#[test]
fn each_alert_fires_offline_where_it_fired_live_and_nowhere_else() {
    let dir = repo_root().join(SERIES);
    for (name, alert, also) in WINDOWS {
        let file = format!("{name}.test.yml");
        let text = std::fs::read_to_string(dir.join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let out = promtool_test(&dir, &file);
        assert!(
            out.status.success(),
            "{file}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let firing = expected_firing(&text);
        let allowed: BTreeSet<String> = alert.iter().chain(also.iter()).map(|s| s.to_string()).collect();
        assert!(firing.is_subset(&allowed), "{file}: {firing:?} fire, only {allowed:?} may");
        if let Some(a) = alert {
            assert!(firing.contains(*a), "{file}: {a} never expected firing ({firing:?})");
        }
    }
}

/// The check can fail: the steady window with an alert expected that did not fire, and the
/// lagging window with its alert taken out, both fail promtool.
#[test]
fn promtool_fails_a_recording_whose_expected_alerts_are_changed() {
    let dir = repo_root().join(SERIES);
    let scratch = tempfile::tempdir().unwrap();
    std::fs::copy(dir.join("alerts.yml"), scratch.path().join("alerts.yml")).unwrap();
    let steady = std::fs::read_to_string(dir.join("steady.test.yml")).unwrap();
    let invented = steady.replacen(
        "alertname: OkpObserverInIsr\n        exp_alerts: []",
        "alertname: OkpObserverInIsr\n        exp_alerts:\n          - exp_labels: {job: \"kafka\", partition: \"0\", severity: \"critical\", topic: \"prom\"}",
        1,
    );
    assert_ne!(invented, steady);
    std::fs::write(scratch.path().join("a.test.yml"), invented).unwrap();
    assert!(!promtool_test(scratch.path(), "a.test.yml").status.success());
    let lagging = std::fs::read_to_string(dir.join("lagging-observer.test.yml")).unwrap();
    let at = lagging.find("alertname: OkpObserverNotCaughtUp\n        exp_alerts:\n").unwrap();
    let end = lagging[at..].find("      - eval_time").map_or(lagging.len(), |e| at + e);
    let dropped =
        format!("{}alertname: OkpObserverNotCaughtUp\n        exp_alerts: []\n{}", &lagging[..at], &lagging[end..]);
    std::fs::write(scratch.path().join("b.test.yml"), dropped).unwrap();
    assert!(!promtool_test(scratch.path(), "b.test.yml").status.success());
}

/// `okp monitoring` writes the three files (the alert rules rendered for the timers given, loading
/// in promtool), and refuses bad input with exit 2 and nothing written.
#[test]
fn okp_monitoring_writes_the_files_for_the_timers_given() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m");
    let o = okp().args(["monitoring", "--lag-ms", "10000", "--scrape-s", "30", "--out"]).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rules = std::fs::read_to_string(out.join("alerts.yml")).unwrap();
    // TTL 5 + lag 10 + 2 scrapes of 30 s.
    assert!(rules.contains("alert: OkpObserverInIsr\n        expr: \"max by (job, topic, partition) (okp_partition_observers_in_isr) > 0\"\n        for: 1m15s"), "{rules}");
    let check = Command::new(tool("OKP_PROMTOOL", "", "promtool"))
        .args(["check", "rules"])
        .arg(out.join("alerts.yml"))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    assert_eq!(std::fs::read_to_string(out.join("dashboard.json")).unwrap(), text());
    assert_eq!(
        std::fs::read_to_string(out.join("jmx-exporter.yml")).unwrap(),
        std::fs::read_to_string(repo_root().join("contrib/monitoring/jmx-exporter.yml")).unwrap()
    );
    let bad = dir.path().join("bad");
    for args in [
        vec!["--lag-ms", "0"],
        vec!["--scrape-s", "0"],
        vec!["--runbook", "a\u{7}b"],
        vec!["--runbook", "x{{ .Value }}"],
    ] {
        let o = okp().arg("monitoring").args(&args).arg("--out").arg(&bad).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!bad.exists(), "{args:?} wrote {}", bad.display());
    }
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let o = okp().arg("monitoring").arg("--out").arg(&file).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
}

/// The exporter's rules name every gauge of the metrics layer and the Kafka metrics the alerts
/// read, and every metric an alert reads is one the rules export or okp's status exporter prints.
#[test]
fn every_metric_the_alerts_read_is_exported() {
    let rules = std::fs::read_to_string(repo_root().join("contrib/monitoring/jmx-exporter.yml")).unwrap();
    let status_doc = std::fs::read_to_string(repo_root().join("docs/observers.md")).unwrap();
    for m in okp::monitoring::record::metrics_read(&okp::monitoring::alerts::alerts(&Default::default())) {
        let exported = rules.contains(&format!("name: {m}\n"))
            || (m.starts_with("kafka_") && {
                // `kafka_server_replicamanager_$1` style: the family prefix and the bean name in the pattern.
                let (prefix, bean) = m.rsplit_once('_').unwrap();
                rules.to_lowercase().contains(&format!("name: {prefix}_$1")) && rules.to_lowercase().contains(bean)
            })
            || status_doc.contains(&format!("| `{m}` |"));
        assert!(exported, "{m}: read by an alert, exported by nothing");
    }
    for g in
        ["ObserverSetSize", "ObserverReplicas", "ObserversInIsr", "CaughtUpObservers", "ObserverMaxLag", "ObserverLag"]
    {
        assert!(rules.contains(&format!("name={g}")), "{g}");
    }
}

/// The real agent (the pinned jar from Maven Central) loads the shipped rules in a JVM and serves
/// a scrape without error. Which Kafka MBeans they match, per release family, scenario PROM shows
/// on live brokers (evidence/partial/*-PROM/).
#[test]
fn the_exporter_agent_loads_the_shipped_rules() {
    let jar = okp::monitoring::exporter::jar().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("Idle.java");
    std::fs::write(
        &main,
        "public class Idle { public static void main(String[] a) throws Exception { Thread.sleep(60000); } }\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let rules = repo_root().join("contrib/monitoring/jmx-exporter.yml");
    let mut child = Command::new("java")
        .arg(okp::monitoring::exporter::agent_flag(&jar, port, &rules).unwrap())
        .arg(&main)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let body = loop {
        if let Ok(b) = okp::monitoring::prom::get(port, "/metrics") {
            break b;
        }
        if t0.elapsed() > std::time::Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the agent did not serve on {port}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(body.contains("jmx_exporter_build_info{name=\"jmx_prometheus_javaagent\",version=\"1.0.1\"} 1"), "{body}");
    assert!(body.contains("jmx_scrape_error 0.0"), "{body}");
    assert!(body.contains("jmx_config_reload_failure_total 0.0"), "{body}");
}
