//! `okp verify` on real brokers: the full suite for one ZooKeeper release and
//! one KRaft release, the negative control on unpatched jars (its gate
//! scenarios must fail), Ctrl-C stopping every process, and bad input.
//!
//! Clusters run one at a time (a lock), because two clusters on a 2-core
//! machine would measure each other rather than Kafka.

use crate::common::*;

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_CLUSTER: Mutex<()> = Mutex::new(());

/// The run's run.json; when okp wrote none, the panic shows okp's own output.
fn run_json(dir: &Path, o: &std::process::Output) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("run.json")).unwrap_or_else(|e| {
        panic!("{}: {e}\nexit {:?}\nstdout:\n{}\nstderr:\n{}", dir.display(), o.status.code(), stdout(o), stderr(o))
    });
    serde_json::from_str(&text).unwrap()
}

fn failed_checks(run: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in run["scenarios"].as_array().unwrap() {
        for c in s["checks"].as_array().unwrap() {
            if !c["pass"].as_bool().unwrap() {
                out.push(format!("{}: {} — {}", s["id"], c["name"], c["detail"]));
            }
        }
        if !s["error"].is_null() {
            out.push(format!("{}: ERROR {}", s["id"], s["error"]));
        }
    }
    out
}

/// Every scenario id, in suite order (the zk suite runs them all; `okp verify --help` names them).
const ALL: &[&str] = &[
    "INIT", "LAT", "S1", "S2", "S3", "TXN", "S5", "DEM", "STALE", "AUTO", "S6", "S7", "S8", "MULTI", "FFO", "S4",
    "MET", "REASSIGN", "TOPIC", "PREF", "ROLL",
];

/// Runs the whole suite (less `leave_out`) and checks the verdict, every scenario, and the evidence files.
fn full_suite(version: &str, mode: &str, leave_out: &[&str]) {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let ev = tempfile::tempdir().unwrap();
    let mut cmd = okp();
    cmd.args(["verify", "--version", version, "--mode", mode, "--evidence"]).arg(ev.path());
    if !leave_out.is_empty() {
        let ids: Vec<&str> = ALL.iter().copied().filter(|id| !leave_out.contains(id)).collect();
        cmd.args(["--scenarios", &ids.join(",")]);
    }
    let o = cmd.output().unwrap();
    let name = format!("{version}-{mode}");
    // A run of fewer scenarios than the suite is kept apart, under partial/.
    let (dir, page) = if leave_out.is_empty() {
        (ev.path().join(&name), ev.path().join("VERIFY.md"))
    } else {
        let d = ev.path().join("partial").join(format!("{name}-without-{}", leave_out.join("-")));
        (d, ev.path().join("partial").join("VERIFY.md"))
    };
    let run = run_json(&dir, &o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}\nfailed checks: {:#?}", stdout(&o), stderr(&o), failed_checks(&run));
    assert_eq!(run["verdict"], "pass");
    // Wall time per phase and per scenario, for the CI log (never asserted: see bench/ and evidence/).
    let per: Vec<String> = run["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {}s", s["id"].as_str().unwrap(), s["seconds"]))
        .collect();
    eprintln!("okp verify {name}: seconds {} ; {}", run["seconds"], per.join(", "));
    let ids: Vec<&str> = run["scenarios"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    for want in ["INIT", "LAT", "S1", "S2", "S3", "TXN", "S5", "DEM", "S6", "S7", "S8", "S4", "MET"] {
        assert!(ids.contains(&want), "{want} missing from {ids:?}");
    }
    for s in run["scenarios"].as_array().unwrap() {
        assert!(s["pass"].as_bool().unwrap(), "{}", s);
        assert!(
            s["checks"].as_array().unwrap().len() >= 2,
            "a scenario with fewer than 2 checks asserts too little: {s}"
        );
        let journal = dir.join(s["evidence"].as_str().unwrap());
        let text = std::fs::read_to_string(&journal).unwrap();
        assert!(text.contains("$ CLASSPATH=$RUNTIME_CLASSPATH java"), "{} lists no tool command", journal.display());
    }
    // The patched jars were really on the classpath, built with the metrics layer (verify's default).
    assert!(!run["jars"].as_array().unwrap().is_empty());
    assert_eq!(run["layers"], serde_json::json!(["core", "metrics"]));
    assert!(std::fs::read_to_string(dir.join("summary.md")).unwrap().contains(&format!("okp verify {version} {mode}")));
    let matrix = std::fs::read_to_string(&page).unwrap();
    let row = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(matrix.contains(&format!("[{row}]({row}/summary.md)")), "{matrix}");
    // Nothing of the run is left running.
    assert_no_java_of(&o);
}

/// No JVM whose command line names this run's directory is alive.
fn assert_no_java_of(o: &std::process::Output) {
    let err = stderr(o);
    let Some(run_dir) = err
        .lines()
        .find_map(|l| l.split("run directory ").nth(1))
        .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
    else {
        return;
    };
    let ps = std::process::Command::new("ps").args(["-eo", "pid,args"]).output().unwrap();
    let left: Vec<String> = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains("java") && l.contains(&run_dir))
        .map(str::to_string)
        .collect();
    assert!(left.is_empty(), "processes of {run_dir} still running: {left:#?}");
}

/// The whole suite: with the servers' class-data-sharing archive and the resident tool JVMs it
/// takes about 4–5 minutes here (evidence/3.9.2-zk), so CI no longer leaves scenarios out.
#[test]
fn zookeeper_release_3_9_2_full_suite() {
    full_suite("3.9.2", "zk", &[]);
}

/// The whole suite, about 5–6 minutes here (evidence/4.3.1-kraft).
#[test]
fn kraft_release_4_3_1_full_suite() {
    full_suite("4.3.1", "kraft", &[]);
}

/// The suite can fail: on the unpatched jars of the same release, the gate
/// scenarios (initial ISR, HW gate, all primaries down) must each fail, and
/// okp calls that a successful negative control.
#[test]
fn upstream_jars_fail_the_gate_scenarios() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let ev = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["verify", "--version", "3.9.2", "--mode", "zk", "--upstream", "--evidence"])
        .arg(ev.path())
        .output()
        .unwrap();
    let run = run_json(&ev.path().join("3.9.2-zk-upstream"), &o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(run["flavor"], "upstream");
    for s in run["scenarios"].as_array().unwrap() {
        assert_eq!(s["gate"], true);
        assert_eq!(s["pass"], false, "gate {} passed on upstream jars: {s}", s["id"]);
    }
    let init = run["scenarios"].as_array().unwrap().iter().find(|s| s["id"] == "INIT").unwrap();
    let isr_check = init["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with("obs (1:2:3:4)"))
        .unwrap();
    assert_eq!(isr_check["pass"], false);
    assert!(isr_check["detail"].as_str().unwrap().contains("Isr: 1,2,3,4"), "{isr_check}");
    assert!(run["jars"].as_array().unwrap().is_empty(), "an upstream run swaps no jar");
    assert_no_java_of(&o);
}

/// CREATE end to end on a real cluster (two rounds): the three clients (librdkafka through
/// scripts/setup.sh's confluent-kafka, as reported and with one request in flight, and the
/// release's Java producer) create and write 60 partitions, every replica's log is read and judged, the broker's sequence rule behind
/// KAFKA-15591 is recorded by a raw Produce, and the brokers are rolled back to their own config.
#[test]
fn create_scenario_judges_every_partition_born_under_both_clients() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let ev = tempfile::tempdir().unwrap();
    let o = okp()
        .args(["verify", "--version", "4.3.1", "--mode", "kraft", "--scenarios", "CREATE", "--create-rounds", "2"])
        .args(["--lanes", "1", "--evidence"])
        .arg(ev.path())
        .output()
        .unwrap();
    let dir = ev.path().join("partial").join("4.3.1-kraft-CREATE");
    let run = run_json(&dir, &o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}\nfailed checks: {:#?}", stdout(&o), stderr(&o), failed_checks(&run));
    let create = &run["scenarios"][0];
    assert_eq!(create["id"], "CREATE");
    let facts = &create["facts"];
    assert_eq!(facts["totals"]["partitions"], 60, "{facts}");
    let acked = facts["totals"]["acked"].as_u64().unwrap();
    assert!(acked > 2700, "2 rounds × 30 partitions × 50 records, a few failed at most: {facts}");
    assert!(
        facts["client_librdkafka-inflight1"].as_str().unwrap().contains("max.in.flight.requests.per.connection=1"),
        "{facts}"
    );
    assert!(facts["client_librdkafka"].as_str().unwrap().contains("confluent-kafka 2.16.1"), "{facts}");
    assert!(facts["client_java"].as_str().unwrap().contains("kafka-clients 4.3.1"), "{facts}");
    assert_eq!(facts["sequence_rule_first_batch_at_sequence_5"], "taken at offset 0", "{facts}");
    assert_eq!(facts["sequence_rule_then_sequence_0"], "refused: OUT_OF_ORDER_SEQUENCE_NUMBER (45)", "{facts}");
    let journal = std::fs::read_to_string(dir.join("CREATE.txt")).unwrap();
    assert!(journal.contains("round 2 (produce before CreateTopics returned"), "{journal}");
    assert!(journal.contains("overrides := []"), "the brokers get their own config back: {journal}");
    assert_no_java_of(&o);
}

/// Ctrl-C during a run stops every JVM the run started.
#[test]
fn interrupt_stops_every_process() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let ev = tempfile::tempdir().unwrap();
    let log = ev.path().join("stderr.txt");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_okp"))
        .env("OKP_NO_DAEMON", "1")
        .args(["verify", "--version", "3.9.2", "--mode", "zk", "--scenarios", "S1", "--evidence"])
        .arg(ev.path().join("ev"))
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the brokers run (the run directory is printed, then broker logs appear).
    let t0 = Instant::now();
    let run_dir = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(d) = text.lines().find_map(|l| l.split("run directory ").nth(1)).map(|s| s.trim().to_string()) {
            if Path::new(&d).join("b4").join("stdout.log").is_file() {
                break d;
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(300), "the cluster did not start: {text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_secs(3));
    let java_of_run = || -> Vec<String> {
        let ps = std::process::Command::new("ps").args(["-eo", "pid,args"]).output().unwrap();
        String::from_utf8_lossy(&ps.stdout)
            .lines()
            .filter(|l| l.contains("java") && l.contains(&run_dir))
            .map(str::to_string)
            .collect()
    };
    assert!(java_of_run().len() >= 5, "expected ZooKeeper and 4 brokers running: {:#?}", java_of_run());
    // SAFETY: signals the okp process this test started.
    unsafe {
        libc_kill(child.id() as i32, 2);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", std::fs::read_to_string(&log).unwrap_or_default());
    let t1 = Instant::now();
    while !java_of_run().is_empty() && t1.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(java_of_run().is_empty(), "left running after Ctrl-C: {:#?}", java_of_run());
    let _ = std::fs::remove_dir_all(&run_dir);
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let cases: &[(&[&str], &str)] = &[
        (&["verify", "--version", "3.9.2", "--scenarios", "S9"], "unknown scenario `S9`; known: INIT, LAT, S1"),
        (&["verify", "--version", "2.7.2", "--mode", "kraft"], "release 2.7.2 has no kraft mode"),
        (&["verify", "--version", "9.9.9"], "unknown Kafka release 9.9.9"),
        (&["verify", "--version", "4.2.2"], "no -sources.jar"),
        (&["verify", "--version", "3.9.2", "--lag-ms", "10"], "--lag-ms must be at least 500"),
        (
            &["verify", "--version", "3.9.2", "--layer", "core", "--scenarios", "MET"],
            "scenario MET needs the metrics layer: pass --layer metrics",
        ),
        (
            &["verify", "--version", "3.9.2", "--upstream", "--scenarios", "INIT,MET"],
            "scenario MET needs the metrics layer: upstream jars carry no layer",
        ),
        (
            &["verify", "--version", "3.9.2", "--upstream", "--scenarios", "ROLL"],
            "scenario ROLL rolls okp's bundle: an --upstream run has no bundle",
        ),
        (
            &["verify", "--version", "3.9.2", "--upstream", "--scenarios", "MM2"],
            "scenario MM2 compares okp's observer with MirrorMaker 2: it runs on the patched jars, not --upstream",
        ),
        (&["verify", "--version", "3.2.3", "--scenarios", "MM2"], "production-ready from 3.3; 3.2.3 is older"),
        (
            &["verify", "--version", "3.4.1", "--scenarios", "MM2", "--mm2-exactly-once"],
            "exactly-once from 3.5 (KIP-618); 3.4.1 is older",
        ),
        (
            &["verify", "--version", "3.9.2", "--mm2-exactly-once"],
            "--mm2-exactly-once configures scenario MM2's worker",
        ),
        (&["verify", "--version", "3.9.2", "--wan-rtt", "20ms"], "--wan-rtt and --wan-bandwidth shape the link"),
        (&["verify", "--version", "3.9.2", "--scenarios", "MM2", "--wan-rtt", "20 parsecs"], "20 parsecs"),
        (&["verify", "--version", "3.9.2", "--layer", "gauges"], "invalid value 'gauges' for '--layer <L>'"),
        (&["verify", "--version", "3.9.2", "--lanes", "5"], "invalid value '5' for '--lanes <N>'"),
        (
            &["verify", "--version", "3.9.2", "--base-port", "65500", "--lanes", "2"],
            "--base-port 65500: lane 2's ports would pass port 65535",
        ),
        // UPGRADE and MIGRATE (docs/upgrade.md): every hop and mode checked before anything is built.
        (&["verify", "--version", "3.9.2", "--mode", "zk", "--upgrade-to", "4.0.2"], "4.0.2 has no zk mode"),
        (&["verify", "--version", "4.3.1", "--upgrade-to", "4.3.0"], "4.3.0 is not newer than 4.3.1"),
        (&["verify", "--version", "4.2.1", "--upgrade-to", "4.3.1,4.3.0"], "4.3.0 is not newer than 4.3.1"),
        (&["verify", "--version", "4.3.1", "--upgrade-to", "4.4.0"], "no -sources.jar"),
        (&["verify", "--version", "3.9.2", "--scenarios", "UPGRADE"], "pass --upgrade-to VERSION"),
        (
            &["verify", "--version", "3.9.2", "--mode", "kraft", "--upgrade-to", "4.0.2", "--scenarios", "S1"],
            "--upgrade-to runs the UPGRADE scenario alone",
        ),
        (
            &["verify", "--version", "3.9.1", "--mode", "kraft", "--upgrade-to", "3.9.2,4.0.2", "--scenarios", "HOSTS"],
            "--scenarios HOSTS --upgrade-to takes one release",
        ),
        (&["verify", "--version", "3.9.2", "--mode", "kraft", "--migrate"], "--migrate starts from ZooKeeper mode"),
        (&["verify", "--version", "4.0.2", "--migrate"], "4.0.2 does not have both modes"),
        (&["verify", "--version", "3.6.2", "--migrate"], "3.6.2 does not have both modes"),
        (&["verify", "--version", "3.9.2", "--scenarios", "MIGRATE"], "scenario MIGRATE runs with --migrate"),
        (&["verify", "--version", "3.9.2", "--migrate-back"], "--migrate"),
        (&["verify", "--version", "3.9.2", "--migrate", "--upgrade-to", "3.9.1"], "3.9.1 is not newer than 3.9.2"),
    ];
    for (args, want) in cases {
        let ev = tempfile::tempdir().unwrap();
        let o = okp().args(*args).arg("--evidence").arg(ev.path().join("ev")).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!ev.path().join("ev").exists(), "{args:?} wrote evidence");
    }
}

/// `okp upgrade-plan` prints the runbook UPGRADE runs, for the operator's node ids, and refuses a
/// hop that cannot roll (exit 2), writing nothing.
#[test]
fn upgrade_plan_prints_the_roll_for_the_given_nodes() {
    let o = okp()
        .args(["upgrade-plan", "--from", "3.9.2", "--to", "4.0.2", "--mode", "kraft", "--controllers", "3001,3002"])
        .args(["--brokers", "7,8,9"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit())).collect();
    assert!(lines[0].starts_with("1. controller 3001: stop it"), "{out}");
    assert!(lines[2].starts_with("3. broker 7:"), "{out}");
    assert!(out.contains("rollback drill") && out.contains("upgrade --release-version 4.0"), "{out}");
    for (args, want) in [
        (&["--from", "3.9.2", "--to", "4.0.2", "--mode", "zk", "--brokers", "1"][..], "release 4.0.2 has no zk mode"),
        (
            &["--from", "4.3.1", "--to", "4.3.0", "--mode", "kraft", "--controllers", "9", "--brokers", "1"][..],
            "not newer",
        ),
        (&["--from", "3.8.1", "--to", "3.9.2", "--mode", "kraft", "--brokers", "1"][..], "name them"),
        (&["--from", "3.8.1", "--to", "3.9.2", "--mode", "zk", "--brokers", "1,1"][..], "node id 1 is named twice"),
    ] {
        let o = okp().arg("upgrade-plan").args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}
