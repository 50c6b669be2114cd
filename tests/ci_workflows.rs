//! The GitHub Actions workflows users copy from ci/ are well-formed: valid
//! against the GitHub workflow JSON schema (checked by check-jsonschema, which
//! scripts/setup.sh installs from PyPI), shaped as the job needs (triggers,
//! jobs, steps that each use an action or run a script), every okp command
//! they run exists with the flags they pass, and shellcheck accepts every
//! `run:` script.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

const SENTINEL: &str = "ci/okp-drift-sentinel.yml";
const COMPILE: &str = "ci/okp-compile-matrix.yml";
const UNIT: &str = "ci/okp-unit-tests.yml";

fn load(path: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(repo_root().join(path)).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn workflows() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo_root().join("ci"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 3, "{v:?}");
    v
}

/// Every step of every job, as (job, step) mappings.
fn steps(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    doc["jobs"].as_object().unwrap().values().flat_map(|j| j["steps"].as_array().unwrap().iter()).collect()
}

fn runs(doc: &serde_json::Value) -> Vec<String> {
    steps(doc).into_iter().filter_map(|s| s["run"].as_str().map(str::to_string)).collect()
}

/// The tool scripts/setup.sh installs (a virtualenv under ~/.local/share/okp), or one on PATH.
fn check_jsonschema() -> PathBuf {
    if let Some(p) = std::env::var_os("OKP_CHECK_JSONSCHEMA").filter(|p| !p.is_empty()) {
        return p.into();
    }
    let venv = Path::new(&std::env::var("HOME").unwrap()).join(".local/share/okp/venv/bin/check-jsonschema");
    if venv.is_file() {
        return venv;
    }
    PathBuf::from("check-jsonschema")
}

#[test]
fn workflows_are_valid_against_the_github_workflow_schema() {
    let tool = check_jsonschema();
    let o = Command::new(&tool)
        .args(["--builtin-schema", "vendor.github-workflows"])
        .args(workflows())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e}): run scripts/setup.sh", tool.display()));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // The validator is a real one: a job without runs-on and a step without uses/run fail.
    let bad = tempfile::tempdir().unwrap();
    let f = bad.path().join("bad.yml");
    std::fs::write(&f, "name: x\non: workflow_dispatch\njobs:\n  a:\n    steps:\n      - runx: echo\n").unwrap();
    let o = Command::new(&tool).args(["--builtin-schema", "vendor.github-workflows"]).arg(&f).output().unwrap();
    assert!(!o.status.success(), "the schema check accepted a broken workflow");
}

#[test]
fn the_sentinel_runs_weekly_and_on_demand_and_the_compile_job_on_changes() {
    let s = load(SENTINEL);
    let on = &s["on"];
    let cron = on["schedule"][0]["cron"].as_str().expect("a schedule with a cron");
    let fields: Vec<&str> = cron.split_whitespace().collect();
    assert_eq!(fields.len(), 5, "{cron}");
    assert!(fields[4] != "*" && fields[2] == "*" && fields[3] == "*", "weekly: one day of the week ({cron})");
    assert!(on.get("workflow_dispatch").is_some());
    let c = load(COMPILE);
    let u = load(UNIT);
    for t in ["push", "pull_request", "workflow_dispatch"] {
        assert!(c["on"].get(t).is_some(), "compile matrix: no {t} trigger");
        assert!(u["on"].get(t).is_some(), "unit tests: no {t} trigger");
    }
    for doc in [&s, &c, &u] {
        assert_eq!(doc["permissions"]["contents"], "read", "read-only token");
        for (name, job) in doc["jobs"].as_object().unwrap() {
            assert!(job["runs-on"].is_string(), "{name:?}: runs-on");
            assert!(job["timeout-minutes"].as_u64().is_some(), "{name:?}: a timeout");
        }
        for step in steps(doc) {
            let (uses, run) = (step.get("uses"), step.get("run"));
            assert!(uses.is_some() != run.is_some(), "a step uses an action or runs a script: {step:?}");
            if let Some(u) = uses.and_then(|u| u.as_str()) {
                assert!(u.contains('@'), "actions are pinned: {u}");
            }
        }
    }
    // What the sentinel is for: the whole matrix, then newer releases, a report, a failure.
    let script = runs(&s).join("\n");
    for needle in [
        "check-anchors --all",
        "diff --from \"$from\" --to \"$to\" --strict --format markdown",
        "maven-metadata.xml",
        "GITHUB_STEP_SUMMARY",
        "exit 1",
    ] {
        assert!(script.contains(needle), "sentinel lacks `{needle}`");
    }
    assert!(steps(&s)
        .iter()
        .any(|st| st["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact@"))
            && st["if"] == "always()"));
    assert!(runs(&c).join("\n").contains("okp build --all --reference --check"));
    // The unit-test job: every reference (release, mode) unit-tests.yaml covers, full classes, evidence kept.
    assert!(runs(&u).join("\n").contains("okp unit-tests --version \"$version\" --mode \"$mode\" --evidence evidence"));
    let pairs: Vec<&str> = u["jobs"]["unit"]["strategy"]["matrix"]["pair"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let o = okp().args(["versions", "--format", "json"]).output().unwrap();
    let versions: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let data = std::fs::read_to_string(repo_root().join("unit-tests.yaml")).unwrap();
    let covered = |v: &str| {
        let v: Vec<u32> = v.split('.').map(|x| x.parse().unwrap()).collect();
        data.lines()
            .filter(|l| l.trim_start().starts_with("from: "))
            .zip(data.lines().filter(|l| l.trim_start().starts_with("to: ")))
            .any(|(f, t)| {
                let p = |l: &str| -> Vec<u32> {
                    l.split_whitespace().nth(1).unwrap().split('.').map(|x| x.parse().unwrap()).collect()
                };
                p(f) <= v && v <= p(t)
            })
    };
    for r in versions["releases"].as_array().unwrap().iter().filter(|r| r["reference"] == true) {
        let v = r["version"].as_str().unwrap();
        for m in r["modes"].as_array().unwrap() {
            let pair = format!("{v} {}", m.as_str().unwrap());
            assert_eq!(pairs.contains(&pair.as_str()), covered(v), "{UNIT}: reference pair {pair}");
        }
    }
    assert!(steps(&u)
        .iter()
        .any(|st| st["uses"].as_str().is_some_and(|x| x.starts_with("actions/upload-artifact@"))
            && st["if"] == "always()"));
}

/// `okp <subcommand> --flag ...` invocations in the scripts, as (subcommand, flags).
fn okp_commands(script: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for line in script.lines() {
        for start in ["\"$OKP\" ", "./target/release/okp "] {
            let Some(i) = line.find(start) else { continue };
            let rest = &line[i + start.len()..];
            let rest = rest.split(['>', '|']).next().unwrap();
            let mut words = rest.split_whitespace();
            let sub = words.next().unwrap().to_string();
            out.push((sub, words.filter(|w| w.starts_with("--")).map(str::to_string).collect()));
        }
    }
    out
}

#[test]
fn every_okp_command_in_the_workflows_exists_with_its_flags() {
    let mut seen = 0;
    for w in workflows() {
        let doc: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&w).unwrap()).unwrap();
        for script in runs(&doc) {
            for (sub, flags) in okp_commands(&script) {
                let o = okp().args([sub.as_str(), "--help"]).output().unwrap();
                assert!(o.status.success(), "{}: `okp {sub}` is not a command: {}", w.display(), stderr(&o));
                let help = stdout(&o);
                for f in flags {
                    assert!(help.contains(&f), "{}: `okp {sub}` has no {f}", w.display());
                }
                seen += 1;
            }
        }
    }
    assert!(seen >= 4, "found only {seen} okp commands");
}

#[test]
fn shellcheck_accepts_every_run_script() {
    let dir = tempfile::tempdir().unwrap();
    let expr = regex::Regex::new(r"\$\{\{[^}]*\}\}").unwrap();
    let mut files = Vec::new();
    for w in workflows() {
        let doc: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&w).unwrap()).unwrap();
        for (i, script) in runs(&doc).iter().enumerate() {
            // GitHub runs `bash -e {0}` with pipefail; its ${{ }} expressions are filled in before.
            let body = expr.replace_all(script, "GHA_EXPRESSION");
            let f = dir.path().join(format!("{}-{i}.sh", w.file_stem().unwrap().to_string_lossy()));
            std::fs::write(&f, format!("#!/usr/bin/env bash\nset -eo pipefail\n{body}")).unwrap();
            files.push(f);
        }
    }
    assert!(files.len() >= 6);
    let o = Command::new("shellcheck")
        .arg("--shell=bash")
        .args(&files)
        .output()
        .expect("shellcheck (scripts/setup.sh installs it)");
    assert!(o.status.success(), "{}", stdout(&o));
}
