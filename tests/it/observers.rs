//! `okp observers` on real patched clusters (3.9.2 ZooKeeper mode, and 4.3.1
//! KRaft for the controllers-first order), each started
//! once by the hidden `okp dev-cluster` (okp verify's machinery) and driven
//! over its stdin: status on a healthy cluster, dry-run, promote and demote
//! end to end (also through the command transport), each pre-check refusing
//! the case it exists for, and bad input. Rack items in topic rules, and `status --format
//! prometheus` (checked by promtool and served by node_exporter), run against a stand-in broker
//! that answers Metadata only (`fake_metadata`), without a cluster.
//!
//! One cluster for every case, in one test function: a cluster costs a
//! minute to start on a 2-core machine, and two would measure each other.

use crate::common::dev_cluster::*;
use crate::common::*;

use std::path::Path;
use std::time::Instant;

/// One cluster at a time in this file: the two cluster tests would measure each other.
static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn observers_status_promote_demote_and_every_precheck_on_a_real_3_9_2_zk_cluster() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let t_all = Instant::now();
    let mut c =
        DevCluster::up("3.9.2", "zk", &["pair=1:4,min.insync.replicas=1", "demo=1:2:3:4,min.insync.replicas=1"]);
    let nodes = c.nodes_file();
    let nodes = nodes.to_str().unwrap().to_string();
    let command_transport = [
        "--transport",
        "command",
        "--read-cmd",
        "cat {path}",
        "--write-cmd",
        "cat > {path}.okp-tmp && mv {path}.okp-tmp {path}",
    ];
    eprintln!("cluster up in {:.1} s", t_all.elapsed().as_secs_f64());

    // Status on a healthy cluster: 4 is an observer, out of the ISR, caught up after a produce.
    assert!(c.send("produce obs 200").contains("acked=200"));
    c.wait("obs", "caught up", |r| replica(r, 4)["lag"] == 0 && replica(r, 1)["log_end_offset"] == 200);
    let s = c.status("obs");
    assert_eq!(s["observers"]["source"], "observer.ids of 4 nodes (all agree)");
    let r4 = replica(s["replicas"].as_array().unwrap(), 4);
    assert_eq!(
        (r4["role"].as_str(), r4["is_observer"].as_bool(), r4["in_isr"].as_bool(), r4["caught_up"].as_bool()),
        (Some("observer"), Some(true), Some(false), Some(true)),
        "{r4}"
    );
    assert_eq!((r4["log_end_offset"].as_i64(), r4["high_watermark"].as_i64()), (Some(200), Some(200)));
    let table = c.okp(&["status", "--topic", "obs", "--observers", "4"]);
    assert_eq!(table.status.code(), Some(0), "{}", stderr(&table));
    assert!(
        stdout(&table).contains("observers: [4] from --observers")
            && stdout(&table).lines().any(|l| l.starts_with("obs ") && l.contains(" observer ")),
        "{}",
        stdout(&table)
    );
    let mut remote = vec!["status", "--topic", "obs", "--format", "json", "--nodes", &nodes];
    remote.extend(command_transport);
    let via_command = c.okp(&remote);
    assert_eq!(via_command.status.code(), Some(0), "{}", stderr(&via_command));
    assert!(stdout(&via_command).contains("\"is_observer\": true"));

    // Bad input: exit 2, nothing written.
    let before = c.files();
    let o = c.okp(&["promote", "--broker", "9", "--nodes", &nodes]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("broker 9 is not in the cluster"), "{}", stderr(&o));
    let o = c.okp(&["promote", "--broker", "4", "--nodes", "/nonexistent/nodes.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot read the nodes file /nonexistent/nodes.yaml"), "{}", stderr(&o));
    let bad = c.dir.path().join("bad.yaml");
    std::fs::write(&bad, "- {id: 4, pth: /x}\n").unwrap();
    let o = c.okp(&["promote", "--broker", "4", "--nodes", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    unchanged(&before, &c, "bad input");

    // --dry-run prints the plan and changes no byte.
    let o = c.okp(&["promote", "--broker", "4", "--nodes", &nodes, "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("[4] → [] (\"4\\n\" → \"\")") && stdout(&o).contains("dry run: nothing written"),
        "{}",
        stdout(&o)
    );
    unchanged(&before, &c, "--dry-run");

    // Promote through the command transport (the remote path, run locally): 4 joins every ISR.
    let t = Instant::now();
    let mut promote = vec!["promote", "--broker", "4", "--nodes", &nodes, "--timeout", "60"];
    promote.extend(command_transport);
    let o = c.okp(&promote);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("broker 4 promoted: in the ISR of 7 partition(s)"), "{}", stdout(&o));
    eprintln!("promote: {:.1} s", t.elapsed().as_secs_f64());
    all_files_say(&c, "");
    assert!(in_isr(c.status("obs")["replicas"].as_array().unwrap(), 4));

    // Demote refused: the ISR of rf3 (1:2:4, min.insync.replicas=2) would drop to 1.
    c.send("kill 2");
    c.wait("rf3", "without 2 in the ISR", |r| !in_isr(r, 2) && in_isr(r, 4));
    let before = c.files();
    let o = c.okp(&["demote", "--broker", "4", "--nodes", &nodes]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("refused (min.insync.replicas): rf3-0: ISR 1,4 (2) would become 1 (1) < min.insync.replicas=2"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("nothing was written"));
    unchanged(&before, &c, "min.insync refusal");
    c.send("start 2");
    c.wait("rf3", "with 2 back in the ISR", |r| in_isr(r, 2));

    // Demote live: 4 leaves every ISR, leaders unchanged.
    let t = Instant::now();
    let o = c.okp(&["demote", "--broker", "4", "--nodes", &nodes, "--timeout", "60"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("broker 4 demoted: in no ISR"), "{}", stdout(&o));
    eprintln!("demote: {:.1} s", t.elapsed().as_secs_f64());
    all_files_say(&c, "4\n");
    let s = c.status("obs");
    assert!(!in_isr(s["replicas"].as_array().unwrap(), 4) && leader(s["replicas"].as_array().unwrap()) != Some(4));

    // The issue's attack: a rule okp's old reading and the brokers' matched differently
    // (`[[:alpha:]]+` was ASCII letters to Rust's regex crate, the set {: a l p h} to
    // java.util.regex), so demo's observers were 3 to okp and 4 (the cluster-wide ids) to the
    // brokers. `demote --broker 2 --topic demo` wrote `topic:demo observers=2,3`: the brokers
    // dropped 3 from demo's ISR and promoted 4, neither named, and okp exited 0. Now okp and every
    // node read patterns with one engine, which refuses this one: the nodes keep their last good
    // set (`4`, frozen) and okp will not plan a write from a file that does not read (exit 2,
    // naming the line and column), --force or not. The role diff (roles.rs) and the reading check
    // stay behind it for what the engine cannot see (a node on an older patch set).
    let attack = "4\nregex:[[:alpha:]]+ observers=3\n";
    for (p, _) in c.files() {
        std::fs::write(&p, attack).unwrap();
    }
    let before = c.files();
    let demo = ["demote", "--broker", "2", "--topic", "demo", "--nodes", &nodes, "--timeout", "60"];
    for force in [false, true] {
        let o = c.okp(&[&demo[..], if force { &["--force"][..] } else { &[][..] }].concat());
        assert_eq!(o.status.code(), Some(2), "{}\n{}", stdout(&o), stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("line 2, column 8: not a pattern of observer.ids ('[' in a class): [[:alpha:]]+"),
            "{err}"
        );
        unchanged(&before, &c, "a rule no reader accepts");
    }
    let r = c.status("demo");
    let r = r["replicas"].as_array().unwrap();
    assert!(in_isr(r, 3) && !in_isr(r, 4), "3 and 4 keep their roles: {r:?}");
    for (p, _) in c.files() {
        std::fs::write(&p, "4\n").unwrap();
    }

    // Demote refused: 4 leads pair (1:4) once 1 is gone; --force does not override leadership.
    let o = c.okp(&["promote", "--broker", "4", "--nodes", &nodes, "--timeout", "60"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    c.send("kill 1");
    c.wait("pair", "led by 4", |r| leader(r) == Some(4));
    let before = c.files();
    let o = c.okp(&["demote", "--broker", "4", "--nodes", &nodes, "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("refused (leadership): pair-0: broker 4 leads it"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--force never overrides leadership"), "{}", stderr(&o));
    unchanged(&before, &c, "leadership refusal");
    // Leadership back to 1 (kill 4 once 1 is in the ISR), then demote 4 while it is down.
    c.send("start 1");
    c.wait("pair", "with 1 in the ISR", |r| in_isr(r, 1));
    c.send("kill 4");
    c.wait("pair", "led by 1", |r| leader(r) == Some(1));
    let o = c.okp(&["demote", "--broker", "4", "--nodes", &nodes, "--timeout", "60"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));

    // Unclean promote refused: rf3 (1:2:4) leaderless, 1 live with records 4 never saw.
    assert!(c.send("produce rf3 300").contains("acked=300"));
    c.send("kill 1");
    c.wait("rf3", "led by 2 alone", |r| leader(r) == Some(2) && !in_isr(r, 1));
    c.send("kill 2");
    c.wait("rf3", "leaderless", |r| leader(r).is_none());
    c.send("start 4");
    c.send("start 1");
    c.wait("rf3", "with 1 and 4 answering", |r| {
        replica(r, 1)["log_end_offset"].is_i64() && replica(r, 4)["log_end_offset"].is_i64()
    });
    let before = c.files();
    let o = c.okp(&["promote", "--broker", "4", "--nodes", &nodes]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("refused (log end offset): rf3-0: broker 4 has log end offset 0, live replica 1 has 300"),
        "{err}"
    );
    assert!(err.contains("(300 records)"), "{err}");
    unchanged(&before, &c, "unclean-promotion refusal");
    eprintln!("whole test: {:.1} s", t_all.elapsed().as_secs_f64());
}

/// The KRaft order on a real 4.3.1 cluster (3 controllers, 4 brokers): promote
/// writes the controllers' files first and, after the nodes' re-read interval,
/// the brokers'; demote the other way round. Both end as the cluster shows.
#[test]
fn observers_promote_and_demote_in_kraft_order_on_a_real_4_3_1_cluster() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let t_all = Instant::now();
    let mut c = DevCluster::up("4.3.1", "kraft", &[]);
    let nodes = c.nodes_file();
    let nodes = nodes.to_str().unwrap().to_string();
    eprintln!("kraft cluster up in {:.1} s", t_all.elapsed().as_secs_f64());
    assert!(c.send("produce obs 200").contains("acked=200"));
    c.wait("obs", "caught up", |r| replica(r, 4)["lag"] == 0 && replica(r, 1)["log_end_offset"] == 200);
    let s = c.status("obs");
    assert_eq!(s["observers"]["source"], "observer.ids of 7 nodes (all agree)");
    let leaders_before: Vec<Option<i64>> =
        ["obs", "rf3", "tx"].iter().map(|t| leader(c.status(t)["replicas"].as_array().unwrap())).collect();

    // The order of the writes, as okp reports them (`okp: wrote controller 101 (…)`).
    let wrote = |err: &str| -> Vec<String> {
        err.lines()
            .filter_map(|l| l.strip_prefix("okp: wrote "))
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect()
    };

    let t = Instant::now();
    let o = c.okp(&["promote", "--broker", "4", "--nodes", &nodes, "--timeout", "90"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("KRaft controllers first, then brokers"), "{}", stdout(&o));
    assert_eq!(
        wrote(&stderr(&o)),
        ["controller", "controller", "controller", "broker", "broker", "broker", "broker"],
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("before writing the brokers"), "{}", stderr(&o));
    assert!(stdout(&o).contains("broker 4 promoted: in the ISR of"), "{}", stdout(&o));
    eprintln!("kraft promote: {:.1} s", t.elapsed().as_secs_f64());
    all_files_say(&c, "");
    assert!(in_isr(c.status("obs")["replicas"].as_array().unwrap(), 4));

    let t = Instant::now();
    let o = c.okp(&["demote", "--broker", "4", "--nodes", &nodes, "--timeout", "90"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("brokers first, then KRaft controllers"), "{}", stdout(&o));
    assert_eq!(
        wrote(&stderr(&o)),
        ["broker", "broker", "broker", "broker", "controller", "controller", "controller"],
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("broker 4 demoted: in no ISR"), "{}", stdout(&o));
    eprintln!("kraft demote: {:.1} s", t.elapsed().as_secs_f64());
    all_files_say(&c, "4\n");
    let leaders_after: Vec<Option<i64>> =
        ["obs", "rf3", "tx"].iter().map(|t| leader(c.status(t)["replicas"].as_array().unwrap())).collect();
    assert_eq!(leaders_before, leaders_after, "a promote and demote of a follower moved no leader");
    assert!(!in_isr(c.status("obs")["replicas"].as_array().unwrap(), 4));
    eprintln!("whole kraft test: {:.1} s", t_all.elapsed().as_secs_f64());
}

#[test]
fn bad_input_without_a_cluster() {
    let o = okp().args(["observers", "status", "--bootstrap", "127.0.0.1:1", "--observers", "4"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no bootstrap server answered"), "{}", stderr(&o));
    let o = okp().args(["observers", "status", "--bootstrap", "127.0.0.1:1", "--observers", "4,5x"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--observers 4,5x: `5x` is not a broker id"), "{}", stderr(&o));
    let o = okp()
        .args(["observers", "promote", "--broker", "4", "--bootstrap", "127.0.0.1:1", "--transport", "command"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--transport command needs both --read-cmd and --write-cmd"));
    okp_run(okp().args(["observers", "demote", "--broker", "4", "--bootstrap", "127.0.0.1:1"]))
        .code(2)
        .err_has("no nodes");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("observer.ids");
    let arg = format!("4={}", missing.display());
    let o = okp()
        .args(["observers", "demote", "--broker", "4", "--bootstrap", "127.0.0.1:1", "--node", &arg])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("observer.ids does not exist"), "{}", stderr(&o));
    assert!(!Path::new(&missing).exists());
    // A malformed rack item stops a change before the cluster is asked: bad input naming the
    // node's file, the line and the column, nothing written.
    let ids = dir.path().join("rack.ids");
    std::fs::write(&ids, "4\ntopic:audit observers=7,rack:\n").unwrap();
    let arg = format!("1={}", ids.display());
    okp_run(okp().args(["observers", "promote", "--broker", "7", "--topic", "audit", "--bootstrap", "127.0.0.1:1", "--node", &arg]))
        .code(2)
        .err_has(&format!(
            "broker 1 ({}): observer.ids: line 2, column 25: not a rack: \"rack:\" (a rack is rack:NAME, NAME of 1-255 letters, digits, '.', '_', '-' or '/'); nothing was written",
            ids.display()
        ));
    assert_eq!(std::fs::read_to_string(&ids).unwrap(), "4\ntopic:audit observers=7,rack:\n");
    // A FIFO or a device where observer.ids should be is refused, never read (a read would block
    // forever, or never end).
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (flag, value, says) in [
        ("--node", format!("4={}", fifo.display()), "cannot read observer.ids: a FIFO, not a regular file"),
        ("--node", "4=/dev/zero".to_string(), "a character device, not a regular file"),
        ("--observers-file", fifo.display().to_string(), "a FIFO, not a regular file"),
    ] {
        let o = okp()
            .args(["observers", "status", "--bootstrap", "127.0.0.1:1", flag, &value])
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{flag} {value}: {}", stderr(&o));
    }
}

/// A stand-in for a Kafka broker that answers ApiVersions v0 and Metadata v4 only, with the
/// brokers `brokers` (id, broker.rack; each at 127.0.0.1:1, where nothing answers, so no log end
/// offset is read) and the partitions `parts` (topic, leader, replicas, ISR; index 0). Enough for
/// the observer rows and for a promotion up to its pre-checks, without a cluster. Its address.
fn fake_metadata(brokers: &[(i32, Option<&str>)], parts: &[(&str, i32, &[i32], &[i32])]) -> String {
    use std::io::{Read, Write};
    fn string(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&(s.len() as i16).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    fn ids(b: &mut Vec<u8>, v: &[i32]) {
        b.extend_from_slice(&(v.len() as i32).to_be_bytes());
        v.iter().for_each(|i| b.extend_from_slice(&i.to_be_bytes()));
    }
    let mut meta = 0i32.to_be_bytes().to_vec(); // throttle_time_ms
    meta.extend_from_slice(&(brokers.len() as i32).to_be_bytes());
    for (id, rack) in brokers {
        meta.extend_from_slice(&id.to_be_bytes());
        string(&mut meta, "127.0.0.1");
        meta.extend_from_slice(&1i32.to_be_bytes());
        match rack {
            Some(r) => string(&mut meta, r),
            None => meta.extend_from_slice(&(-1i16).to_be_bytes()),
        }
    }
    string(&mut meta, "fake-cluster");
    meta.extend_from_slice(&brokers[0].0.to_be_bytes()); // controller_id
    meta.extend_from_slice(&(parts.len() as i32).to_be_bytes());
    for (topic, leader, replicas, isr) in parts {
        meta.extend_from_slice(&0i16.to_be_bytes());
        string(&mut meta, topic);
        meta.push(0); // is_internal
        meta.extend_from_slice(&1i32.to_be_bytes());
        meta.extend_from_slice(&0i16.to_be_bytes());
        meta.extend_from_slice(&0i32.to_be_bytes());
        meta.extend_from_slice(&leader.to_be_bytes());
        ids(&mut meta, replicas);
        ids(&mut meta, isr);
    }
    let mut versions = 0i16.to_be_bytes().to_vec();
    versions.extend_from_slice(&2i32.to_be_bytes());
    for (api, min, max) in [(18i16, 0i16, 0i16), (3, 4, 4)] {
        [api, min, max].iter().for_each(|v| versions.extend_from_slice(&v.to_be_bytes()));
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let (meta, versions) = (meta.clone(), versions.clone());
            std::thread::spawn(move || loop {
                let mut len = [0u8; 4];
                if s.read_exact(&mut len).is_err() {
                    return;
                }
                let mut req = vec![0u8; i32::from_be_bytes(len) as usize];
                if s.read_exact(&mut req).is_err() {
                    return;
                }
                let body = match i16::from_be_bytes([req[0], req[1]]) {
                    18 => &versions,
                    3 => &meta,
                    _ => return,
                };
                let mut out = ((body.len() + 4) as i32).to_be_bytes().to_vec();
                out.extend_from_slice(&req[4..8]); // the correlation id
                out.extend_from_slice(body);
                if s.write_all(&out).is_err() {
                    return;
                }
            });
        }
    });
    addr
}

/// Rack items (`rack:NAME`) in a topic rule, without a cluster: `status` resolves them against the
/// brokers' broker.rack from Metadata (a replica Metadata does not list has an unknown rack, which
/// the nodes hold an observer, fail safe, but status cannot tell: `?`, no red state), and a
/// promotion that a rack item would undo is refused before any write.
#[test]
fn rack_items_in_status_and_a_promotion_they_refuse() {
    let bootstrap = fake_metadata(
        &[(1, Some("east")), (2, Some("east")), (7, Some("dr")), (8, None)],
        &[("audit", 1, &[1, 2, 7, 8, 9], &[1, 2, 7, 8]), ("orders", 1, &[1, 2, 7], &[1, 2, 7])],
    );
    let dir = tempfile::tempdir().unwrap();
    let text = "4\n# the DR site keeps a copy of audit\ntopic:audit observers=rack:dr # DR\n";
    let files: Vec<std::path::PathBuf> = (1..=2).map(|i| dir.path().join(format!("b{i}.ids"))).collect();
    files.iter().for_each(|f| std::fs::write(f, text).unwrap());
    let nodes: Vec<String> = files.iter().enumerate().map(|(i, f)| format!("{}={}", i + 1, f.display())).collect();
    let with_nodes = |args: &[&str]| {
        let mut c = okp();
        c.args(["observers"]).args(args).args(["--bootstrap", &bootstrap]);
        nodes.iter().for_each(|n| {
            c.args(["--node", n]);
        });
        c.output().unwrap()
    };

    let o = with_nodes(&["status", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "an observer in the ISR is a red state: {}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["observers"]["topic_rules"], serde_json::json!(["topic:audit=rack:dr"]));
    let row = |t: &str, id: i64| {
        let r = j["replicas"].as_array().unwrap().iter().find(|r| r["topic"] == t && r["replica"] == id).unwrap();
        (r["role"].as_str().unwrap().to_string(), r["is_observer"].as_bool(), r["flags"].clone())
    };
    assert_eq!(row("audit", 7), ("isr".into(), Some(true), serde_json::json!(["observer-in-isr"])), "in rack dr");
    assert_eq!(row("audit", 8), ("isr".into(), Some(false), serde_json::json!([])), "no broker.rack");
    assert_eq!(
        row("audit", 9),
        ("down".into(), None, serde_json::json!([])),
        "unknown rack, a rack item only: unknown"
    );
    assert_eq!(row("audit", 2), ("isr".into(), Some(false), serde_json::json!([])));
    assert_eq!(row("orders", 7), ("isr".into(), Some(false), serde_json::json!([])), "no rule for orders");
    let o = with_nodes(&["status"]);
    assert!(stdout(&o).contains("topic rules: topic:audit=rack:dr"), "{}", stdout(&o));

    // Broker 7 observes audit through rack:dr: no edit of the ids promotes it. Refused, --force
    // or not, dry run or not, with every file as it was.
    let f1 = files[0].display().to_string();
    for extra in [&[][..], &["--force"], &["--dry-run"]] {
        let args = [&["promote", "--topic", "audit", "--broker", "7"][..], extra].concat();
        let o = with_nodes(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("promote broker 7: refused (rack item): audit: broker 7 observes topic audit through rack:dr (line 3 of {f1} on broker 1: `topic:audit observers=rack:dr`); edit that rule by hand, or list the brokers by id (the same rule on broker 2)")),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("refused by 1 pre-check(s); nothing was written; --force never overrides a rack item"),
            "{err}"
        );
        assert!(!stdout(&o).contains("plan:"), "{}", stdout(&o));
        for f in &files {
            assert_eq!(std::fs::read(f).unwrap(), text.as_bytes(), "{args:?}: {} unchanged", f.display());
        }
    }
    // Broker 9 is not in Metadata: its rack is unknown, and the rule names a rack.
    let o = with_nodes(&["promote", "--topic", "audit", "--broker", "9"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("broker 9 observes topic audit through rack:dr: its broker.rack is unknown"),
        "{}",
        stderr(&o)
    );

    // Through a prefix rule, broker 2 listed by id: the promotion writes audit's exact rule,
    // copying the prefix rule's rack items. (rack:west, where no broker is: with rack:dr, broker 7
    // would be an observer of audit by okp's reading while the stand-in has it in the ISR, and okp
    // plans no change from a reading the cluster contradicts.)
    let text = "prefix:aud observers=2,rack:west\n";
    files.iter().for_each(|f| std::fs::write(f, text).unwrap());
    let o = with_nodes(&["promote", "--topic", "audit", "--broker", "2", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(r#"("prefix:aud observers=2,rack:west\n" → "prefix:aud observers=2,rack:west\ntopic:audit observers=rack:west\n")"#),
        "{}",
        stdout(&o)
    );
    assert!(files.iter().all(|f| std::fs::read(f).unwrap() == text.as_bytes()), "a dry run writes nothing");

    // A malformed rack item: a red state naming the node, line and column.
    std::fs::write(&files[1], "topic:audit observers=7,rack:dr!\n").unwrap();
    let o = with_nodes(&["status"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let f2 = files[1].display().to_string();
    assert!(
        stdout(&o).contains(&format!("malformed rule: broker 2 ({f2}): line 1, column 25: not a rack: \"rack:dr!\" (a rack is rack:NAME, NAME of 1-255 letters, digits, '.', '_', '-' or '/')")),
        "{}",
        stdout(&o)
    );
}

/// A read template that prints a banner before the file (hardening_transport.rs has promote and
/// demote): status shows the banner's words as text the registries ignore (red, exit 1), and place
/// refuses to plan a rule from that text (exit 1, naming the node, file, line and words), the file
/// untouched.
#[test]
fn a_banner_before_the_file_is_red_in_status_and_refused_by_place() {
    let bootstrap =
        fake_metadata(&[(1, Some("east")), (2, Some("east")), (7, Some("dr"))], &[("audit", 1, &[1, 2, 7], &[1, 2])]);
    let dir = tempfile::tempdir().unwrap();
    let ids = dir.path().join("observer.ids");
    std::fs::write(&ids, "7\n").unwrap();
    let node = format!("1={}", ids.display());
    let run = |args: &[&str]| {
        okp()
            .arg("observers")
            .args(args)
            .args(["--bootstrap", &bootstrap, "--node", &node, "--transport", "command"])
            .args(["--read-cmd", "printf 'Welcome to host7\\n'; cat {path}", "--write-cmd", "cat > {path}"])
            .output()
            .unwrap()
    };
    let o = run(&["status"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("`Welcome`, `to`, `host7`"), "{}", stdout(&o));
    for extra in [&[][..], &["--execute"]] {
        let args = [&["place", "--topic", "audit", "--replicas", "east:2", "--observers", "dr:1"][..], extra].concat();
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "broker 1 ({}): observer.ids line 1: `Welcome`, `to`, `host7`: not broker ids, text the registries ignore",
                ids.display()
            )),
            "{args:?}: {err}"
        );
        assert!(!stdout(&o).contains("plan:"), "{}", stdout(&o));
        assert_eq!(std::fs::read_to_string(&ids).unwrap(), "7\n");
    }
}

/// Three brokers' observer.ids holding `text`, in a temp dir, as `--node ID=PATH` flags.
fn three_files(text: &str) -> (tempfile::TempDir, Vec<std::path::PathBuf>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<std::path::PathBuf> = (1..=3).map(|i| dir.path().join(format!("b{i}.ids"))).collect();
    files.iter().for_each(|f| std::fs::write(f, text).unwrap());
    let mut flags = Vec::new();
    for (i, f) in files.iter().enumerate() {
        flags.extend(["--node".to_string(), format!("{}={}", i + 1, f.display())]);
    }
    (dir, files, flags)
}

/// A write template that takes a second (a slow ssh) before okp's compare-and-swap script runs.
const SLOW_CAS: [&str; 6] =
    ["--transport", "command", "--read-cmd", "cat {path}", "--write-cmd", "sleep 1; sh -c {cas}"];

/// The issue's attack on serialised writers: two okp (two operators' machines: each its own
/// OKP_STATE_DIR) change one cluster's observer.ids at once through a slow write template. Before,
/// both exited 0 and one change was lost (two demotes, 5 of 5 tries): each read the file, then
/// wrote its plan over the other's. With `{cas}` every node compares as it swaps: the second
/// writer of a node finds it changed, puts back what it wrote and exits 3 naming the node; no
/// change that exited 0 is lost. (Promotions of brokers that host nothing: the stand-in broker
/// answers Metadata only, and such a promotion needs nothing else.)
#[test]
fn two_concurrent_changes_lose_no_update() {
    let bootstrap =
        fake_metadata(&[(1, None), (2, None), (3, None), (5, None), (6, None)], &[("t", 1, &[1, 2], &[1, 2])]);
    let mut lost_races = 0;
    for round in 0..3 {
        let (dir, files, nodes) = three_files("4\n5\n6\n");
        let spawn = |broker: &str, state: &str| {
            okp_process()
                .args(["observers", "promote", "--broker", broker, "--bootstrap", &bootstrap, "--timeout", "10"])
                .args(&nodes)
                .args(SLOW_CAS)
                .env("OKP_STATE_DIR", dir.path().join(state))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn("5", "a"), spawn("6", "b"));
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
        let mut ok = 0;
        for (o, id) in [(&a, "5"), (&b, "6")] {
            match o.status.code() {
                Some(0) => {
                    ok += 1;
                    for t in &texts {
                        assert!(!idset(t).contains(&id), "round {round}: promote {id} exited 0 but a node holds {t:?}");
                    }
                }
                Some(3) => {
                    lost_races += 1;
                    let err = stderr(o);
                    assert!(
                        err.contains("observer.ids changed since okp read it")
                            && err.contains(&format!("promote broker {id} failed on broker ")),
                        "round {round}: {err}"
                    );
                }
                other => panic!("round {round}: promote {id}: exit {other:?}: {}", stderr(o)),
            }
        }
        assert!(ok >= 1, "round {round}: {}\n{}", stderr(&a), stderr(&b));
        assert!(texts.iter().all(|t| t == &texts[0]), "round {round}: the nodes disagree: {texts:?}");
    }
    assert!(lost_races > 0, "two writers started together never met on a node: the test proves nothing");
}

/// okp as a plain process (to send it a signal, or run two at once).
fn okp_process() -> std::process::Command {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("okp"))
}

fn idset(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

/// Runs `okp observers promote --broker 4` over three nodes with the slow template and sends
/// `signal` once okp says it wrote broker 1; what it printed and how it ended.
fn promote_then_signal(bootstrap: &str, nodes: &[String], state: &Path, signal: &str) -> (Option<i32>, String) {
    use std::io::BufRead;
    let mut child = okp_process()
        .args(["observers", "promote", "--broker", "4", "--bootstrap", bootstrap, "--timeout", "10"])
        .args(nodes)
        .args(SLOW_CAS)
        .env("OKP_STATE_DIR", state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.starts_with("okp: wrote broker 1") {
            let k = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
            assert!(k.success());
        }
        line.clear();
    }
    (child.wait().unwrap().code(), seen)
}

/// SIGINT or SIGTERM during a promote across three nodes: before, okp died at once with no
/// message, nodes half changed, and the write in flight finished after it. Now the write in
/// flight is waited for, every node written is put back, and okp exits 130 naming each node.
#[test]
fn an_interrupted_change_puts_back_every_node_and_exits_130() {
    let bootstrap = fake_metadata(&[(1, None), (2, None), (3, None), (4, None)], &[("t", 1, &[1, 2, 4], &[1, 2])]);
    for signal in ["-INT", "-TERM"] {
        let (dir, files, nodes) = three_files("4\n");
        let (code, err) = promote_then_signal(&bootstrap, &nodes, dir.path(), signal);
        assert_eq!(code, Some(130), "{signal}: {err}");
        assert!(err.contains("promote broker 4 interrupted (SIGINT or SIGTERM) after writing"), "{signal}: {err}");
        assert!(err.contains("every node's observer.ids is as before ("), "{signal}: {err}");
        assert!(err.contains(&format!("broker 1 ({}): as before (put back)", files[0].display())), "{signal}: {err}");
        assert!(err.contains(&format!("broker 3 ({}): as before (", files[2].display())), "{signal}: {err}");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        for f in &files {
            assert_eq!(std::fs::read_to_string(f).unwrap(), "4\n", "{signal}: {}", f.display());
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().filter(|e| e.as_ref().unwrap().path().is_dir()).count(),
            0,
            "the record is gone"
        );
    }
}

/// SIGKILL during the same promote: nothing in okp runs, so the next okp that plans a change of
/// these nodes finds the record of the unfinished one, says which node holds which file, and
/// writes nothing (exit 1) until `okp observers recover --undo` (or `--finish`) has run.
#[test]
fn a_change_cut_short_by_sigkill_is_found_and_undone_or_finished_by_the_next_okp() {
    let bootstrap = fake_metadata(&[(1, None), (2, None), (3, None), (4, None)], &[("t", 1, &[1, 2, 4], &[1, 2])]);
    for way in ["--undo", "--finish"] {
        let (dir, files, nodes) = three_files("4\n");
        let (code, _) = promote_then_signal(&bootstrap, &nodes, dir.path(), "-KILL");
        assert_eq!(code, None, "killed");
        // The template in flight (its own process group) may still finish its write.
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
        assert_eq!(texts[0], "", "broker 1 was written");
        assert_eq!(texts[2], "4\n", "broker 3 was not");
        let again = |args: &[&str]| {
            okp()
                .arg("observers")
                .args(args)
                .args(&nodes)
                .args(SLOW_CAS)
                .env("OKP_STATE_DIR", dir.path())
                .output()
                .unwrap()
        };
        let o = again(&["demote", "--broker", "4", "--bootstrap", &bootstrap, "--dry-run"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("an earlier `promote broker 4` (okp pid ") && err.contains("did not finish"), "{err}");
        assert!(err.contains(&format!("broker 1 ({}): holds the new file", files[0].display())), "{err}");
        assert!(err.contains(&format!("broker 3 ({}): holds its old file", files[2].display())), "{err}");
        assert!(err.contains("okp observers recover --finish"), "{err}");
        let o = again(&["status", "--bootstrap", &bootstrap]);
        assert!(stderr(&o).contains("an earlier `promote broker 4` (okp pid "), "status says so too: {}", stderr(&o));
        let o = again(&["recover", way, "--dry-run"]);
        assert!(o.status.code() == Some(0) && stdout(&o).contains("dry run: nothing written"), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&files[2]).unwrap(), "4\n", "--dry-run wrote");
        if way == "--finish" {
            // A record is a file, not an authority: one whose bytes would not read cleanly is not
            // written, and what it says is escaped.
            let record = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().contains("observers-change-"))
                .unwrap();
            let good = std::fs::read_to_string(&record).unwrap();
            let mut j: serde_json::Value = serde_json::from_str(&good).unwrap();
            j["asked"] = "promote broker 4\u{1b}[31m".into();
            j["nodes"][2]["after"] = "Welcome to b3\n".into();
            std::fs::write(&record, j.to_string()).unwrap();
            let o = again(&["recover", way]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(err.contains("does not read cleanly") && err.contains("`Welcome`"), "{err}");
            assert!(!err.contains('\u{1b}'), "{err:?}");
            assert_eq!(std::fs::read_to_string(&files[2]).unwrap(), "4\n");
            std::fs::write(&record, good).unwrap();
        }
        let o = again(&["recover", way]);
        assert_eq!(o.status.code(), Some(0), "{way}: {}\n{}", stdout(&o), stderr(&o));
        let want = if way == "--undo" { "4\n" } else { "" };
        for f in &files {
            assert_eq!(std::fs::read_to_string(f).unwrap(), want, "{way}: {}", f.display());
        }
        let o = again(&["recover", way]);
        assert!(stdout(&o).contains("nothing to do"), "{}", stdout(&o));
    }
}

/// `promtool check metrics` (Prometheus's own parser and linter, Debian's `prometheus` package)
/// on `text`: Err with its complaint; None when promtool is not installed.
fn promtool_check(text: &str) -> Option<Result<(), String>> {
    use std::io::Write;
    let Ok(mut child) = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("SKIPPED promtool check: promtool is not installed (scripts/setup.sh installs Debian's prometheus)");
        return None;
    };
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let said = format!("{}{}", stdout(&o), stderr(&o));
    Some(if o.status.success() && said.trim().is_empty() { Ok(()) } else { Err(said) })
}

/// `status --format prometheus` against the Metadata stand-in: the exposition passes promtool's
/// parser and linter, names the node whose file disagrees and the rule that names no live broker
/// (its backslash escaped), and exits 1 on a red state as the table does; with no cluster it still
/// prints a valid exposition, `okp_observers_status_up 0`, and exits 3.
#[test]
fn status_as_a_prometheus_exposition_that_promtool_accepts() {
    let bootstrap = fake_metadata(
        &[(1, Some("east")), (2, Some("east")), (7, Some("dr")), (8, None)],
        &[("audit", 1, &[1, 2, 7, 8, 9], &[1, 2, 7, 8]), ("orders", 1, &[1, 2, 7], &[1, 2, 7])],
    );
    let dir = tempfile::tempdir().unwrap();
    let (b1, b2) = (dir.path().join("b1.ids"), dir.path().join("b2.ids"));
    std::fs::write(&b1, "4\ntopic:audit observers=rack:dr\nregex:ord\\.x observers=rack:gone\n").unwrap();
    std::fs::write(&b2, "4 4x\ntopic:audit observers=rack:dr\n").unwrap();
    let (n1, n2) = (format!("1={}", b1.display()), format!("2={}", b2.display()));
    let o = okp()
        .args([
            "observers",
            "status",
            "--format",
            "prometheus",
            "--bootstrap",
            &bootstrap,
            "--node",
            &n1,
            "--node",
            &n2,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "7 observes audit from inside its ISR: red\n{}", stderr(&o));
    let text = stdout(&o);
    if let Some(checked) = promtool_check(&text) {
        checked.unwrap_or_else(|e| panic!("promtool check metrics: {e}\n{text}"));
    }
    for line in [
        "okp_observers_status_up 1",
        "okp_observer_ids_files 2",
        "okp_observer_ids_files_agree 0",
        &format!("okp_observer_ids_file_disagrees{{node=\"broker 2 ({})\"}} 1", b2.display()),
        "okp_observer_ids_ignored_tokens 1",
        "okp_observer_ids_malformed_rules 0",
        "okp_observer_ids_set_size 1",
        "okp_observer_rule_live_brokers{rule=\"regex:ord\\\\.x=rack:gone\"} 0",
        "okp_observer_rule_live_brokers{rule=\"topic:audit=rack:dr\"} 1",
        "okp_observer_replicas 1",
        "okp_observers_in_isr 1",
        "okp_observers_leading 0",
        "okp_observers_red_states 2",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    assert!(!text.contains("okp_observer_replica_lag{"), "no broker answered ListOffsets: no lag\n{text}");
    textfile_recipe_through_node_exporter(&bootstrap, &b1, &b2);

    let o = okp()
        .args(["observers", "status", "--format", "prometheus", "--bootstrap", "127.0.0.1:1", "--observers", "4"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no bootstrap server answered"), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.lines().any(|l| l == "okp_observers_status_up 0"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("okp_observers_status_timestamp_seconds ")), "{text}");
    if let Some(checked) = promtool_check(&text) {
        checked.unwrap_or_else(|e| panic!("promtool check metrics: {e}\n{text}"));
    }
}

/// docs/observers.md's textfile recipe, as written there, run by `sh` (a red state: exit 1, and the
/// file published all the same), then Debian's `prometheus-node-exporter` reading the directory:
/// it parses the file and serves the same samples (skipped with a message when it is absent).
fn textfile_recipe_through_node_exporter(bootstrap: &str, b1: &Path, b2: &Path) {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let nodes = dir.path().join("nodes.yaml");
    std::fs::write(&nodes, format!("- {{id: 1, path: {}}}\n- {{id: 2, path: {}}}\n", b1.display(), b2.display()))
        .unwrap();
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let doc = std::fs::read_to_string(repo_root().join("docs/observers.md")).unwrap();
    let recipe: Vec<&str> = doc
        .lines()
        .skip_while(|l| *l != "    dir=/var/lib/okp/textfile")
        .take_while(|l| !l.is_empty())
        .map(|l| l.trim_start())
        .collect();
    assert_eq!(recipe.len(), 4, "docs/observers.md's recipe: {recipe:?}");
    let script = recipe
        .join("\n")
        .replace("/var/lib/okp/textfile", &textfiles.display().to_string())
        .replace("okp observers", &format!("{} observers", env!("CARGO_BIN_EXE_okp")))
        .replace(
            "--bootstrap b1:9092 --nodes nodes.yaml",
            &format!("--bootstrap {bootstrap} --nodes {}", nodes.display()),
        );
    let o = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(o.status.success(), "{script}\n{}", stderr(&o));
    let published = std::fs::read_to_string(textfiles.join("okp.prom")).expect("the recipe publishes a red state");
    assert!(published.lines().any(|l| l == "okp_observers_red_states 2"), "{published}");
    assert_eq!(std::fs::read_dir(&textfiles).unwrap().count(), 1, "no temporary file left behind");

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let Ok(child) = std::process::Command::new("prometheus-node-exporter")
        .args(["--collector.disable-defaults", "--collector.textfile"])
        .arg(format!("--collector.textfile.directory={}", textfiles.display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("SKIPPED node_exporter: prometheus-node-exporter is not installed (scripts/setup.sh installs it)");
        return;
    };
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _stop = Stop(child);
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    let served = loop {
        if let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            c.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
            let mut body = String::new();
            c.read_to_string(&mut body).unwrap();
            break body;
        }
        assert!(Instant::now() < deadline, "node_exporter did not listen on 127.0.0.1:{port}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(served.lines().any(|l| l == "node_textfile_scrape_error 0"), "{served}");
    for line in published.lines().filter(|l| !l.starts_with('#') && !l.starts_with("okp_observers_status_timestamp")) {
        assert!(served.lines().any(|l| l == line), "node_exporter serves {line}\n{served}");
    }
}
