//! The pages of one run: the terminal table and the run's summary.md.
//!
//! Not here: VERIFY.md over every run (`matrix`).

use std::path::Path;

use super::record::RunRecord;

pub(super) fn terminal_table(name: &str, record: &RunRecord, dest: &Path) -> String {
    let (outcomes, seconds) = (&record.scenarios, &record.seconds);
    let mut s =
        format!("okp verify {name}\n\n{:<5} {:<6} {:>8}  {:>6}  {}\n", "id", "result", "seconds", "checks", "scenario");
    for o in outcomes {
        let passed = o.checks.iter().filter(|c| c.pass).count();
        s.push_str(&format!(
            "{:<5} {:<6} {:>8.1}  {:>6}  {}\n",
            o.id,
            if o.pass { "pass" } else { "FAIL" },
            o.seconds,
            format!("{passed}/{}", o.checks.len()),
            o.title
        ));
        for c in o.checks.iter().filter(|c| !c.pass) {
            s.push_str(&format!("      FAIL {} — {}\n", c.name, c.detail));
        }
        if let Some(e) = &o.error {
            s.push_str(&format!("      ERROR {e}\n"));
        }
    }
    let t = |k: &str| seconds.get(k).copied().unwrap_or(0.0);
    s.push_str(&format!(
        "\nwall time: {:.1} s total (jars {:.1}, classpath {:.1}, cluster up {:.1}, scenarios {:.1}, teardown {:.1})\nverdict: {}\nevidence: {}\n",
        t("total"),
        t("jars"),
        t("classpath"),
        t("cluster_up"),
        t("scenarios"),
        t("teardown"),
        record.verdict.word(),
        dest.display()
    ));
    s
}

pub(super) fn summary_page(record: &RunRecord) -> String {
    let outcomes = &record.scenarios;
    let mut s = format!(
        "# okp verify {} {} ({})\n\nWritten by okp {} at {} UTC. Verdict: **{}**. Java: {}.\n\n",
        record.release,
        record.mode,
        record.flavor.as_str(),
        record.okp_version,
        record.written_utc,
        record.verdict.word(),
        record.java
    );
    s.push_str("Raw evidence: `run.json` (every number), one journal per scenario (each command and its output), `setup.txt`, `observer-audit.txt`.\n\n");
    s.push_str("| id | result | seconds | scenario | journal |\n|---|---|---|---|---|\n");
    for o in outcomes {
        s.push_str(&format!(
            "| {} | {} | {:.1} | {} | [{}]({}) |\n",
            o.id,
            if o.pass { "pass" } else { "**FAIL**" },
            o.seconds,
            o.title,
            o.evidence,
            o.evidence
        ));
    }
    for o in outcomes {
        s.push_str(&format!("\n## {} — {}\n\n", o.id, o.title));
        for c in &o.checks {
            s.push_str(&format!(
                "- {} {} — {}\n",
                if c.pass { "PASS" } else { "**FAIL**" },
                c.name,
                c.detail.replace('|', "\\|")
            ));
        }
        if let Some(e) = &o.error {
            s.push_str(&format!("- **ERROR** {e}\n"));
        }
    }
    s
}
