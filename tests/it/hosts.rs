//! `okp observers` over real ssh between separate hosts (network namespaces, each with its own
//! address, hostname and Debian's sshd; src/hosts), without Kafka: every way a host can fail
//! while okp reads or writes observer.ids gives a clear error naming that host within a bounded
//! time, and afterwards every host's file is read to show it is as before.
//!
//! Reads: `okp observers status` reads every node's file before it asks the cluster, so run from
//! the operator host with a bootstrap nobody answers it shows the read faults end to end (a
//! healthy read gets as far as the bootstrap: exit 3 naming it). Writes: the library's
//! `change::plan_files` and `change::write` (what promote and demote run after their
//! pre-checks) on a thread inside the operator host's network.
//!
//! Skipped, saying why, where namespaces cannot be made (not root, no `ip netns`, no sshd).

use crate::common::*;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use okp::hosts::{self, Topology};
use okp::observers::change::{self, Direction};
use okp::observers::transport::{NodeRole, NodeSpec, Transport};

/// One topology at a time: each makes namespaces and sshd processes, and the timings of one
/// should not be another's load.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn skip() -> bool {
    match hosts::available() {
        Ok(()) => false,
        Err(why) => {
            eprintln!("SKIPPED: namespaces cannot be made here: {why}");
            true
        }
    }
}

const HOSTS: [&str; 3] = ["b1", "b2", "b3"];

/// The hosts with `4` in every observer.ids, and the nodes file naming them by `host`.
fn setup(t: &Topology, by_address: bool) -> (std::path::PathBuf, Vec<NodeSpec>) {
    let mut yaml = String::from("nodes:\n");
    let mut nodes = Vec::new();
    for (i, h) in t.hosts.iter().enumerate() {
        let path = h.dir.join("observer.ids");
        std::fs::write(&path, "4\n").unwrap();
        let host = if by_address { h.addr.clone() } else { h.name.clone() };
        yaml.push_str(&format!("  - {{id: {}, path: {}, host: {host}}}\n", i + 1, path.display()));
        nodes.push(NodeSpec {
            id: i as i32 + 1,
            role: NodeRole::Broker,
            path: path.display().to_string(),
            host: Some(host),
        });
    }
    let file = t.dir.join("nodes.yaml");
    std::fs::write(&file, yaml).unwrap();
    (file, nodes)
}

fn files(t: &Topology) -> Vec<String> {
    t.hosts.iter().map(|h| std::fs::read_to_string(h.dir.join("observer.ids")).unwrap()).collect()
}

/// `okp observers status` from the operator host over ssh, with a bootstrap nobody answers.
fn status(t: &Topology, nodes: &Path, timeout_s: u64) -> (Output, f64) {
    let okp_bin = assert_cmd::cargo::cargo_bin("okp");
    let t0 = Instant::now();
    let o = t
        .on_ctl(okp_bin.to_str().unwrap())
        .args(["observers", "status", "--bootstrap", &format!("{}:1", t.ctl.addr), "--nodes"])
        .arg(nodes)
        .args(["--transport", "command", "--read-cmd", &t.read_template(), "--write-cmd", &t.write_template()])
        .args(["--transport-timeout", &timeout_s.to_string()])
        .output()
        .unwrap();
    (o, t0.elapsed().as_secs_f64())
}

#[test]
fn every_read_fault_names_its_host_within_bounded_time_and_changes_nothing() {
    if skip() {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topology::create(&HOSTS).unwrap();
    t.connect_timeout = 2;
    let (nodes, _) = setup(&t, false);

    // Healthy: every file read over ssh (by name, through the operator host's /etc/hosts), so
    // okp gets as far as the cluster, which does not answer.
    let (o, secs) = status(&t, &nodes, 20);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!stderr(&o).contains("observer.ids"), "every read went through: {}", stderr(&o));
    eprintln!("healthy reads of 3 hosts: {secs:.1} s");

    // Each fault on b2, then b2 healthy again: (what, the phrase okp's error must hold, the bound).
    let mut table = Vec::new();
    let mut fault = |t: &mut Topology, what: &str, needle: &str, bound: f64| {
        let before = files(t);
        let (o, secs) = status(t, &nodes, 6);
        let err = stderr(&o);
        table.push(format!("{what}: exit {:?} in {secs:.1} s", o.status.code()));
        assert_eq!(o.status.code(), Some(3), "{what}: {err}");
        assert!(err.contains("broker 2 (b2:") && err.contains(needle), "{what}: {err}");
        assert!(!err.contains("broker 1 (") && !err.contains("broker 3 ("), "{what}: only b2 is named: {err}");
        assert!(secs < bound, "{what}: {secs:.1} s, bound {bound} s");
        assert_eq!(files(t), before, "{what}: every file as before");
    };
    t.stop_sshd("b2");
    fault(&mut t, "sshd stopped", "Connection refused", 8.0);
    t.start_sshd("b2").unwrap();
    t.link("b2", false).unwrap();
    fault(&mut t, "link down", "exited with 255", 12.0);
    t.link("b2", true).unwrap();
    t.freeze_sshd("b2", true).unwrap();
    fault(&mut t, "sshd frozen (SIGSTOP)", "banner exchange", 12.0);
    t.freeze_sshd("b2", false).unwrap();
    t.rekey("b2").unwrap();
    fault(&mut t, "changed host key", "Host key verification failed", 8.0);
    t.trust_current_key().unwrap();
    let (o, _) = status(&t, &nodes, 20);
    assert_eq!(o.status.code(), Some(3));
    assert!(!stderr(&o).contains("observer.ids"), "b2 healthy again: {}", stderr(&o));

    // A host that authenticates and then runs nothing (its port whose sessions sleep): okp's own
    // deadline (--transport-timeout 4) ends it.
    let stalled = t.dir.join("nodes-stalled.yaml");
    std::fs::write(&stalled, std::fs::read_to_string(&nodes).unwrap().replace("host: b2}", "host: b2-stall}")).unwrap();
    let before = files(&t);
    let (o, secs) = status(&t, &stalled, 4);
    let err = stderr(&o);
    table.push(format!("session stalls after login: exit {:?} in {secs:.1} s", o.status.code()));
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("broker 2 (b2-stall:") && err.contains("did not finish within 4 s"), "{err}");
    assert!((4.0..10.0).contains(&secs), "{secs:.1} s");
    assert_eq!(files(&t), before);

    // Two hosts down: both named in one error, in the time of one.
    t.stop_sshd("b1");
    t.freeze_sshd("b3", true).unwrap();
    let (o, secs) = status(&t, &nodes, 6);
    let err = stderr(&o);
    table.push(format!("b1 stopped and b3 frozen: exit {:?} in {secs:.1} s", o.status.code()));
    assert!(err.contains("cannot read observer.ids of 2 of 3 nodes; nothing was written"), "{err}");
    assert!(err.contains("broker 1 (b1:") && err.contains("broker 3 (b3:") && secs < 12.0, "{secs:.1} s: {err}");
    eprintln!("{}", table.join("\n"));
    let dir = t.dir.clone();
    drop(t);
    assert!(!dir.exists(), "the run's directory is removed");
}

/// The library's write on a thread inside the operator host's network.
fn write_in_ctl(
    t: &Topology,
    nodes: &[NodeSpec],
    dir: Direction,
    during: impl Fn() + Send,
) -> (okp::error::Result<()>, f64) {
    let transport =
        Transport::Command { read: t.read_template(), write: t.write_template(), timeout: Duration::from_secs(8) };
    hosts::in_netns(&t.ctl.ns, || {
        std::thread::scope(|s| {
            s.spawn(during);
            let t0 = Instant::now();
            let r = change::plan_files(nodes, &transport, 4, dir, None).and_then(|p| change::write(&transport, &p));
            (r, t0.elapsed().as_secs_f64())
        })
    })
    .unwrap()
}

#[test]
fn a_write_that_fails_on_one_host_leaves_every_host_as_before() {
    if skip() {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // The writes' change records (observers/journal.rs) stay with the test, not in $HOME: the
    // frozen host below leaves one, as it should (a node UNKNOWN).
    let state = tempfile::tempdir().unwrap();
    std::env::set_var("OKP_STATE_DIR", state.path());
    let mut t = Topology::create(&HOSTS).unwrap();
    t.connect_timeout = 2;
    let (_, nodes) = setup(&t, true);

    // Healthy: promote 4 (remove it) on every host, demote it back.
    let (r, secs) = write_in_ctl(&t, &nodes, Direction::Promote, || {});
    r.unwrap();
    assert_eq!(files(&t), ["", "", ""]);
    eprintln!("promote over ssh on 3 hosts: {secs:.1} s");
    let (r, _) = write_in_ctl(&t, &nodes, Direction::Demote, || {});
    r.unwrap();
    assert_eq!(files(&t), ["4\n", "4\n", "4\n"]);

    // b3's directory read-only (as its sshd sees it): b1 and b2 are written, b3's write fails,
    // b1 and b2 are put back.
    let b3_dir = t.host("b3").unwrap().dir.clone();
    t.read_only("b3", &b3_dir, true).unwrap();
    let (r, secs) = write_in_ctl(&t, &nodes, Direction::Promote, || {});
    let err = r.unwrap_err().to_string();
    eprintln!("read-only on b3: {secs:.1} s\n{err}");
    assert!(
        err.contains("failed on broker 3")
            && err.contains("every node's observer.ids is as before (2 put back, 0 never written)"),
        "{err}"
    );
    assert!(err.contains("Read-only file system"), "{err}");
    assert_eq!(files(&t), ["4\n", "4\n", "4\n"], "all as before");
    t.read_only("b3", &b3_dir, false).unwrap();

    // b3's sshd stops the moment b1's file changes (a host lost in the middle of a promote):
    // b3 cannot be reached for its write or afterwards, so okp names it unknown; b1 and b2 are
    // put back, and b3's file (read here, beside okp) never changed.
    let b1 = t.hosts[0].dir.join("observer.ids");
    let tr = &t;
    let (r, secs) = write_in_ctl(&t, &nodes, Direction::Promote, || {
        let t0 = Instant::now();
        while std::fs::read_to_string(&b1).unwrap_or_default() == "4\n" && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
        tr.freeze_sshd("b3", true).unwrap();
    });
    let err = r.unwrap_err().to_string();
    eprintln!("b3 frozen after b1's write: {secs:.1} s\n{err}");
    assert!(err.contains("failed on broker 3") && err.contains("NOT every node's observer.ids is as before"), "{err}");
    assert!(err.contains("broker 3 (10.") && err.contains("UNKNOWN"), "{err}");
    assert!(err.contains("broker 1 (10.") && err.contains(": as before (put back)"), "{err}");
    assert!(secs < 30.0, "{secs:.1} s");
    assert_eq!(files(&t), ["4\n", "4\n", "4\n"], "all as before");
    t.freeze_sshd("b3", false).unwrap();
}

#[test]
fn a_killed_run_is_swept_and_a_live_one_is_left_alone() {
    if skip() {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // A child okp-less process claims nothing: make a run, then forget it (as a killed test
    // would), pretending its owner is gone by rewriting the owner record.
    let t = Topology::create(&["x1"]).unwrap();
    let run = t.run;
    let dir = t.dir.clone();
    let netns_list = || {
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .into_owned()
    };
    assert!(hosts::sweep().is_empty() || !hosts::sweep().contains(&run), "a live run is left alone");
    assert!(netns_list().contains(&format!("okp-{run}-x1")));
    std::mem::forget(t);
    std::fs::write(format!("/run/okp-hosts/{run}"), "1 0\n").unwrap();
    let swept = hosts::sweep();
    assert!(swept.contains(&run), "{swept:?}");
    let list = netns_list();
    assert!(!list.contains(&format!("okp-{run}-")), "{list}");
    assert!(!Path::new(&format!("/etc/netns/okp-{run}-x1")).exists());
    assert!(!dir.exists(), "{}", dir.display());
    let left = std::process::Command::new("pgrep").args(["-f", &format!("okp-hosts-{run}-")]).output().unwrap();
    assert!(left.stdout.is_empty(), "no process of the run is left: {}", String::from_utf8_lossy(&left.stdout));
}

/// Two regions, a1 in the first (with the operator host) and b1 in the second, the link given.
fn two_regions(rtt: &str, bandwidth: &str) -> Topology {
    let regions = hosts::wan::Regions {
        names: vec!["a".into(), "b".into()],
        of: [("a1".to_string(), 0), ("b1".to_string(), 1)].into_iter().collect(),
        link: hosts::wan::Link::parse(rtt, bandwidth).unwrap(),
        toxiproxy: None,
    };
    Topology::create_in_regions(&["a1", "b1"], regions).unwrap()
}

#[test]
fn the_wan_link_has_the_delay_and_rate_it_was_given_and_only_between_regions() {
    if skip() || hosts::wan::toxiproxy().is_err() {
        eprintln!("SKIPPED: namespaces or Toxiproxy (scripts/setup.sh builds it) missing");
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let t = two_regions("60ms", "8mbit");
    let (a1, b1) = (t.host("a1").unwrap().clone(), t.host("b1").unwrap().clone());
    // Across the link: a known delay of 60 ms is measured as 60 ms and a little more (the
    // proxies' copies), never less; 1 MB each way at 8 Mbit/s takes about a second.
    let m = hosts::wan::measure(&b1, &a1, 1 << 20).unwrap();
    eprintln!("{}", m.show());
    assert!(m.rtt_ms[0] >= 59.0 && m.rtt_ms[1] < 75.0, "{}", m.show());
    for mbit in [m.upload_mbit, m.download_mbit] {
        assert!((5.0..=9.5).contains(&mbit), "{}", m.show());
    }
    // Inside a region: no delay (the operator host and a1 share region a's bridge).
    let local = hosts::wan::measure(&t.ctl, &a1, 1 << 20).unwrap();
    assert!(local.rtt_ms[1] < 5.0, "{}", local.show());
    // Only the gateway leads out of a region: with region b's gateway gone, b1 reaches a1's
    // address no more (the bridges are not joined).
    let gw = format!("okp-{}-wan1", t.run);
    let ok = std::process::Command::new("ip").args(["netns", "exec", &gw, "ip", "link", "set", "lan", "down"]).status();
    assert!(ok.unwrap().success());
    let reach = hosts::in_netns(&b1.ns, || {
        std::net::TcpStream::connect_timeout(&format!("{}:22", a1.addr).parse().unwrap(), Duration::from_secs(2))
    })
    .unwrap();
    assert!(reach.is_err(), "b1 reached a1 around the link");
    // The link goes with the run: every gateway and its Toxiproxy removed.
    let run = t.run;
    drop(t);
    let list =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .into_owned();
    assert!(!list.contains(&format!("okp-{run}-")), "{list}");
    // Each Toxiproxy was started with its config in the run's directory.
    let left = std::process::Command::new("pgrep").args(["-f", &format!("okp-hosts-{run}-")]).output().unwrap();
    assert!(left.stdout.is_empty(), "a process of the run is left: {}", String::from_utf8_lossy(&left.stdout));
}

#[test]
fn a_killed_run_with_regions_is_swept_with_its_gateways() {
    if skip() || hosts::wan::toxiproxy().is_err() {
        eprintln!("SKIPPED: namespaces or Toxiproxy (scripts/setup.sh builds it) missing");
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let t = two_regions("10ms", "50mbit");
    let run = t.run;
    std::mem::forget(t);
    std::fs::write(format!("/run/okp-hosts/{run}"), "1 0\n").unwrap();
    assert!(hosts::sweep().contains(&run));
    let list =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .into_owned();
    assert!(!list.contains(&format!("okp-{run}-")), "{list}");
}

#[test]
fn a_link_that_cannot_start_leaves_nothing_behind_and_says_why() {
    if skip() {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("toxiproxy-server");
    std::fs::write(&broken, "#!/bin/sh\necho 'listen tcp: address already in use' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let regions = hosts::wan::Regions {
        names: vec!["a".into(), "b".into()],
        of: [("a1".to_string(), 0), ("b1".to_string(), 1)].into_iter().collect(),
        link: hosts::wan::Link::parse("10ms", "10mbit").unwrap(),
        toxiproxy: Some(broken),
    };
    let t0 = Instant::now();
    let err = Topology::create_in_regions(&["a1", "b1"], regions)
        .err()
        .expect("a link whose proxy dies is an error")
        .to_string();
    assert!(err.contains("Toxiproxy") && err.contains("address already in use"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(15), "told at once, not after the API's 20 s: {:?}", t0.elapsed());
    // No run of this process is left (other processes' runs may come and go meanwhile).
    let mine = std::fs::read_dir("/run/okp-hosts")
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().parse::<u8>().is_ok())
                .filter(|e| {
                    std::fs::read_to_string(e.path())
                        .is_ok_and(|t| t.split_whitespace().next() == Some(&std::process::id().to_string()))
                })
                .count()
        })
        .unwrap_or(0);
    assert_eq!(mine, 0, "a run of this process is left in /run/okp-hosts");
    // A host in no region is refused before anything is made.
    let regions = hosts::wan::Regions {
        names: vec!["a".into(), "b".into()],
        of: [("a1".to_string(), 0)].into_iter().collect(),
        link: hosts::wan::Link::parse("10ms", "10mbit").unwrap(),
        toxiproxy: None,
    };
    let err = Topology::create_in_regions(&["a1", "b1"], regions).err().unwrap().to_string();
    assert!(err.contains("host b1 is in no region"), "{err}");
}
