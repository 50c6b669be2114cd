//! The GitHub Actions workflows users copy from ci/ are well-formed: valid
//! against the GitHub workflow JSON schema (checked by check-jsonschema, which
//! scripts/setup.sh installs from PyPI), shaped as the job needs (triggers,
//! jobs, steps that each use an action or run a script), every okp command
//! they run exists with the flags they pass, and shellcheck accepts every
//! `run:` script.

use crate::common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

const SENTINEL: &str = "ci/okp-drift-sentinel.yml";
const COMPILE: &str = "ci/okp-compile-matrix.yml";
const UNIT: &str = "ci/okp-unit-tests.yml";
const VERIFY: &str = "ci/okp-verify-matrix.yml";
const GRADLE: &str = "ci/okp-gradle-check.yml";
const HOSTS: &str = "ci/okp-hosts.yml";

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
    assert_eq!(v.len(), 6, "{v:?}");
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
        well_shaped(doc);
    }
    // What the sentinel is for: the whole matrix, then newer releases, a report, a failure.
    let script = runs(&s).join("\n");
    for needle in [
        "check-anchors --all",
        "\"$OKP\" releases --strict --report okp-report",
        "diff --from \"$from\" --to \"$to\" --strict --format markdown",
        "GITHUB_STEP_SUMMARY",
        "exit 1",
    ] {
        assert!(script.contains(needle), "sentinel lacks `{needle}`");
    }
    // okp releases finds the new releases: no metadata download or version arithmetic of its own.
    for gone in ["maven-metadata.xml", "curl ", "sort -V", "awk"] {
        assert!(!script.contains(gone), "the sentinel does `{gone}` itself instead of okp releases");
    }
    let fail = step_named(&s["jobs"]["sentinel"], "Fail on drift");
    assert_eq!(
        fail["env"]["RELEASES"], "${{ steps.releases.outputs.code }}",
        "a missing or unbuildable release fails the job"
    );
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

/// A read-only token; every job on a runner with a timeout; every step an action (pinned) or a script.
fn well_shaped(doc: &serde_json::Value) {
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

fn step_named<'a>(job: &'a serde_json::Value, prefix: &str) -> &'a serde_json::Value {
    job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .unwrap_or_else(|| panic!("no step `{prefix}…`"))
}

/// The verify matrix: one job per pair from a plan job, fail-fast off, each pair's evidence
/// uploaded on its own, a merge job that runs whatever the pairs did.
#[test]
fn the_verify_matrix_fans_out_one_job_per_pair_and_merges() {
    let doc = load(VERIFY);
    well_shaped(&doc);
    for t in ["push", "workflow_dispatch"] {
        assert!(doc["on"].get(t).is_some(), "verify matrix: no {t} trigger");
    }
    let jobs = &doc["jobs"];
    let verify = &jobs["verify"];
    assert_eq!(verify["needs"], "plan");
    assert_eq!(verify["strategy"]["fail-fast"], false, "a failed pair must not cancel the others");
    assert_eq!(verify["strategy"]["matrix"]["pair"], "${{ fromJSON(needs.plan.outputs.pairs) }}");
    assert_eq!(jobs["plan"]["outputs"]["pairs"], "${{ steps.pairs.outputs.pairs }}");
    let run = step_named(verify, "Verify")["run"].as_str().unwrap();
    assert!(run.contains("okp verify --version \"$version\" --mode \"$mode\" --evidence evidence"), "{run}");
    let upload = step_named(verify, "Upload the pair");
    assert_eq!(upload["if"], "always()");
    assert_eq!(upload["with"]["name"], "okp-verify-${{ matrix.pair }}");
    assert_eq!(upload["with"]["path"], "evidence/${{ matrix.pair }}/");
    let merge = &jobs["merge"];
    assert_eq!((&merge["needs"], &merge["if"]), (&serde_json::json!("verify"), &serde_json::json!("always()")));
    assert_eq!(step_named(merge, "Download every")["with"]["pattern"], "okp-verify-*");
    assert!(step_named(merge, "Merge")["run"].as_str().unwrap().contains("okp verify --merge --evidence evidence"));
}

/// The plan step's script, run here with this okp, lists exactly the (release, mode) pairs with
/// sources jars of versions.yaml: the matrix cannot drift from the data.
#[test]
fn the_verify_matrix_pairs_are_those_of_versions_yaml() {
    let doc = load(VERIFY);
    let script = step_named(&doc["jobs"]["plan"], "List every")["run"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("target/release")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_okp"), dir.path().join("target/release/okp")).unwrap();
    let out = dir.path().join("github-output");
    let o = Command::new("bash")
        .args(["-eo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env("GITHUB_OUTPUT", &out)
        .output()
        .expect("bash");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let listed: Vec<String> = serde_json::from_str(text.trim().strip_prefix("pairs=").unwrap()).unwrap();
    let model = okp::model::Model::load(None, None).unwrap();
    let want: Vec<String> = model
        .matrix
        .pairs(okp::model::PairFilter { sources: true, ..Default::default() })
        .into_iter()
        .map(|p| format!("{}-{}", p.release, p.mode))
        .collect();
    assert_eq!(listed, want);
    assert!(
        listed.len() >= 53 && listed.contains(&"3.9.2-zk".to_string()) && !listed.contains(&"4.2.2-kraft".to_string())
    );
}

/// The sentinel's releases step, run here with this okp on a recorded metadata file (offline): the
/// pairs it hands the diff step are the releases okp releases finds missing, each with the release
/// it names to port from; its exit code goes to the step output the last step fails on.
#[test]
fn the_sentinel_pairs_what_okp_releases_finds_missing() {
    let doc = load(SENTINEL);
    let script =
        step_named(&doc["jobs"]["sentinel"], "List the upstream releases")["run"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("okp-report")).unwrap();
    std::os::unix::fs::symlink(repo_root().join("evidence"), dir.path().join("evidence")).unwrap();
    // The job's okp, pointed at the recorded metadata and an empty cache (no network).
    let wrapper = dir.path().join("okp");
    let fixture = repo_root().join("tests/fixtures/releases/maven-metadata.xml");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec {} \"$@\" --metadata {} --offline\n", env!("CARGO_BIN_EXE_okp"), fixture.display()),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let m2 = tempfile::tempdir().unwrap();
    let out = dir.path().join("github-output");
    let o = Command::new("bash")
        .args(["-eo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env("OKP", &wrapper)
        .env("EXTRA", "")
        .env("OKP_MAVEN_REPO_LOCAL", m2.path())
        .env("GITHUB_OUTPUT", &out)
        .output()
        .expect("bash");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("okp-report/pairs.txt")).unwrap(), "4.3.1 4.5.0\n");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "code=1\n", "4.5.0 missing, and --strict");
    let summary = std::fs::read_to_string(dir.path().join("okp-report/01-releases.md")).unwrap();
    assert!(summary.starts_with("## okp releases --strict (exit 1)") && summary.contains("MISSING from the matrix"));
}

/// The Gradle check: for reference releases of versions.yaml, apache/kafka at the release tag,
/// apply, the real wrapper, the splice build of the same pair, and the comparison, in that order.
#[test]
fn the_gradle_check_builds_a_release_tag_both_ways_and_compares() {
    let doc = load(GRADLE);
    well_shaped(&doc);
    let job = &doc["jobs"]["gradle"];
    assert_eq!(job["strategy"]["fail-fast"], false);
    let model = okp::model::Model::load(None, None).unwrap();
    let include = job["strategy"]["matrix"]["include"].as_array().unwrap();
    assert!(include.len() >= 3, "a few reference releases");
    for e in include {
        let v: okp::version::KafkaVersion = e["version"].as_str().unwrap().parse().unwrap();
        let r = model.matrix.require(v).unwrap();
        assert!(r.reference && r.no_sources_jar.is_none(), "{v}: not a reference release with sources");
        let m: okp::model::Mode = e["mode"].as_str().unwrap().parse().unwrap();
        assert!(r.modes.contains(&m), "{v} has no {m} mode");
        assert!(e["java"].is_string(), "{v}: a JDK its Gradle runs on");
    }
    let kafka = step_named(job, "Check out apache/kafka");
    assert_eq!(kafka["with"]["repository"], "apache/kafka");
    assert_eq!(kafka["with"]["ref"], "${{ matrix.version }}");
    let order: Vec<&str> = ["Apply", "Build with the checkout", "Splice-build", "Compare"]
        .iter()
        .map(|p| step_named(job, p)["run"].as_str().unwrap())
        .collect();
    assert!(order[0].contains("okp apply --version \"$VERSION\" --mode \"$MODE\" --source kafka"));
    assert!(order[1].contains("okp build --source kafka --mode \"$MODE\""));
    assert!(order[2].contains("okp build --version \"$VERSION\" --mode \"$MODE\" --out okp-out/splice"));
    assert!(order[3].contains("okp compare-builds okp-out/gradle okp-out/splice"));
    assert!(order[3].contains("exit \"$rc\""), "a difference fails the job");
    let names: Vec<&str> = job["steps"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    let at = |p: &str| names.iter().position(|n| n.starts_with(p)).unwrap();
    assert!(at("Apply") < at("Build with") && at("Build with") < at("Compare") && at("Splice") < at("Compare"));
    assert_eq!(step_named(job, "Upload")["if"], "always()");
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

/// The hosts job: root (sudo) for the namespaces, the fast fault tests and the role's checks, the
/// playground's ignored test once, then scenario HOSTS on exactly 3.9.2 zk and 4.3.1 kraft, its
/// evidence uploaded whatever happened.
#[test]
fn the_hosts_job_runs_the_fault_tests_and_hosts_on_both_pairs_as_root() {
    let doc = load(HOSTS);
    well_shaped(&doc);
    let job = &doc["jobs"]["hosts"];
    let pairs: Vec<&str> =
        job["strategy"]["matrix"]["pair"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(pairs, ["3.9.2 zk", "4.3.1 kraft"]);
    let tests = step_named(job, "The transport's fault tests")["run"].as_str().unwrap();
    assert!(tests.contains("sudo") && tests.contains("--test it -- hosts:: ansible_role::"), "{tests}");
    let pg = step_named(job, "okp playground")["run"].as_str().unwrap();
    assert!(pg.contains("--test it -- --ignored playground::"), "{pg}");
    let run = step_named(job, "Scenario HOSTS")["run"].as_str().unwrap();
    assert!(run.contains("sudo") && run.contains("okp verify --scenarios HOSTS"), "{run}");
    assert_eq!(step_named(job, "Upload the evidence")["if"], "always()");
}
