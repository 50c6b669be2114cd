//! The Grafana dashboard okp ships (contrib/monitoring/dashboard.json), read as its queries: every
//! panel's title with each of its targets' PromQL, rows' nested panels included, so tests and
//! tools can check the queries (promtool, the alert rules' metric names) without a Grafana.
//!
//! Not here: the dashboard's schema (scripts/dashboard-check, the Grafana Foundation SDK's strict
//! decoder, checks it), writing or rendering dashboards.

use serde_json::Value;

/// Every panel's (title, expr), one pair per target, in the dashboard's order; a row's own
/// collapsed panels follow the row. Panels without targets (rows, text) give none.
/// Errors name the panel: a dashboard that is not JSON, has no `panels` list, or has a panel
/// `expr` as Grafana runs it with the dashboard's variables (`$job`, `$topic`) set to All.
pub fn all_selected(expr: &str) -> String {
    ["${job}", "$job", "${topic}", "$topic"].iter().fold(expr.to_string(), |e, v| e.replace(v, ".*"))
}

/// without a title or a target without an `expr` string.
pub fn panel_queries(json: &str) -> Result<Vec<(String, String)>, String> {
    let doc: Value = serde_json::from_str(json).map_err(|e| format!("the dashboard is not JSON: {e}"))?;
    let panels = doc.get("panels").and_then(Value::as_array).ok_or("the dashboard has no `panels` list")?;
    let mut out = Vec::new();
    collect(panels, "panels", &mut out)?;
    Ok(out)
}

fn collect(panels: &[Value], at: &str, out: &mut Vec<(String, String)>) -> Result<(), String> {
    for (i, panel) in panels.iter().enumerate() {
        let here = format!("{at}[{i}]");
        let title = panel.get("title").and_then(Value::as_str).ok_or_else(|| format!("{here} has no title"))?;
        let targets = match panel.get("targets") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(t)) => t.as_slice(),
            Some(_) => return Err(format!("{here} ({title}): `targets` is not a list")),
        };
        for (j, target) in targets.iter().enumerate() {
            let expr = target
                .get("expr")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{here} ({title}): targets[{j}] has no `expr` string"))?;
            out.push((title.to_string(), expr.to_string()));
        }
        if let Some(nested) = panel.get("panels").and_then(Value::as_array) {
            collect(nested, &format!("{here}.panels"), out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::panel_queries;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn every_target_of_every_panel_in_order_rows_included() {
        let json = r#"{"panels": [
            {"type": "row", "title": "Observers", "panels": []},
            {"type": "stat", "title": "A", "targets": [{"expr": "up", "refId": "A"}, {"expr": "sum(x)", "refId": "B"}]},
            {"type": "row", "title": "Collapsed", "collapsed": true, "panels": [
                {"type": "timeseries", "title": "Inner", "targets": [{"expr": "y", "refId": "A"}]}
            ]},
            {"type": "text", "title": "Notes"}
        ]}"#;
        assert_eq!(panel_queries(json).unwrap(), pairs(&[("A", "up"), ("A", "sum(x)"), ("Inner", "y")]));
    }

    #[test]
    fn a_broken_dashboard_is_an_error_that_names_the_panel() {
        assert!(panel_queries("{").unwrap_err().contains("not JSON"));
        assert!(panel_queries("{}").unwrap_err().contains("no `panels` list"));
        let no_title = r#"{"panels": [{"type": "stat", "targets": []}]}"#;
        assert_eq!(panel_queries(no_title).unwrap_err(), "panels[0] has no title");
        let no_expr =
            r#"{"panels": [{"type": "row", "title": "R", "panels": [{"title": "B", "targets": [{"refId": "A"}]}]}]}"#;
        assert_eq!(panel_queries(no_expr).unwrap_err(), "panels[0].panels[0] (B): targets[0] has no `expr` string");
        let not_list = r#"{"panels": [{"title": "C", "targets": {}}]}"#;
        assert_eq!(panel_queries(not_list).unwrap_err(), "panels[0] (C): `targets` is not a list");
    }

    #[test]
    fn the_shipped_dashboard_has_a_query_on_every_panel() {
        let json = include_str!("../../contrib/monitoring/dashboard.json");
        let q = panel_queries(json).unwrap();
        assert!(q.iter().all(|(_, e)| !e.trim().is_empty()), "{q:?}");
        assert!(q.iter().any(|(_, e)| e.contains("okp_broker_observers_in_isr")), "{q:?}");
    }
}
