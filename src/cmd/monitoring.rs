//! `okp monitoring`: the monitoring files, written for the user's timers.

use crate::cli::MonitoringArgs;
use crate::error::{Error, Outcome, Result};
use crate::monitoring::{alerts, exporter};

pub fn run(a: MonitoringArgs) -> Result<Outcome> {
    if a.out.exists() && !a.out.is_dir() {
        return Err(Error::Usage(format!("--out {}: not a directory", a.out.display())));
    }
    if a.runbook.chars().any(|c| c.is_control()) {
        return Err(Error::Usage("--runbook: control characters are not allowed in a link".into()));
    }
    // Prometheus expands annotations as Go templates: a `{{` in the link would be run as one.
    if a.runbook.contains("{{") || a.runbook.contains("}}") {
        return Err(Error::Usage(
            "--runbook: `{{` and `}}` are not allowed (Prometheus reads annotations as templates)".into(),
        ));
    }
    let t = alerts::Timers {
        lag_ms: a.lag_ms,
        ttl_s: crate::cluster::OBSERVER_IDS_TTL.as_secs(),
        scrape_s: a.scrape_s,
        status_s: a.status_s,
    };
    crate::fsx::create_dir(&a.out)?;
    let files: [(&str, String); 3] = [
        ("jmx-exporter.yml", exporter::RULES.to_string()),
        ("alerts.yml", alerts::render(&t, &a.runbook)),
        ("dashboard.json", crate::monitoring::DASHBOARD.to_string()),
    ];
    for (name, text) in &files {
        let path = a.out.join(name);
        crate::fsx::write_atomic(&path, text.as_bytes())?;
        crate::out::print(&format!("wrote {}\n", path.display()))?;
    }
    Ok(Outcome::Done)
}
