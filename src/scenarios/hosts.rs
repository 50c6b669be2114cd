//! HOSTS: the cluster on separate hosts (network namespaces with their own address, hostname
//! and sshd; `hosts`), operated as production does, from an operator host over real ssh:
//!
//! 1. Ansible rolls the signed bundle onto the brokers one host at a time (okp's role,
//!    contrib/ansible/okp_observer, by the real `ansible-playbook`) under acks=all writes: on
//!    the first run b3's newly installed jar is damaged before its restart, so b3 does not come
//!    back, is rolled back by `okp rollback` and the roll stops; the second run finishes it.
//!    No acked record is lost, and broker 4 is an observer after the roll.
//! 2. `okp observers promote` and `demote` over ssh (command templates), then each fault:
//!    sshd stopped, a host's link down, sshd frozen, a changed host key, a session that stalls
//!    after login, a read-only directory on the last host written. Each gives exit 3 naming the
//!    host within a bounded time, and every node's observer.ids (read here, beside okp) is as
//!    before.
//! 3. `okp observers watch --once` over ssh: two primaries stopped, 4 promoted on every host.
//! 4. With `--upgrade-to B`, after 1 and instead of 2 and 3: okp's upgrade play
//!    (contrib/ansible/upgrade.yml) rolls every node from A to B, KRaft controllers first, under
//!    acks=all writes: B's home unpacked beside A's from B's distribution, B's bundle installed,
//!    the host's link `current` swapped, restarted. Every node runs B after it, 4 is never in
//!    obs's ISR nor leading it, no acked record is lost.
//!
//! It borrows the lane's runtime, bundle (and release B's) and okp's Java client; the lane's own
//! cluster is not touched. Everything that reaches the hosts runs on a thread in the operator
//! host's network.
//!
//! Not here: the hosts and their cluster (`hosts`), the role (contrib/ansible).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{round, Ctx, ScenarioResult};
use crate::cluster::homes::{self, Bundle};
use crate::cluster::runtime::Runtime;
use crate::cluster::tools::Tool;
use crate::error::{Error, Result};
use crate::hosts;
use crate::hosts::cluster::{HostCluster, HostNode};

/// The role and the example playbook, as okp ships them (written into the run for ansible-playbook).
const ROLE: &[(&str, &str)] = &[
    ("okp_observer/tasks/main.yml", include_str!("../../contrib/ansible/okp_observer/tasks/main.yml")),
    ("okp_observer/tasks/wait.yml", include_str!("../../contrib/ansible/okp_observer/tasks/wait.yml")),
    ("okp_observer/tasks/upgrade.yml", include_str!("../../contrib/ansible/okp_observer/tasks/upgrade.yml")),
    (
        "okp_observer/tasks/wait_controller.yml",
        include_str!("../../contrib/ansible/okp_observer/tasks/wait_controller.yml"),
    ),
    ("okp_observer/defaults/main.yml", include_str!("../../contrib/ansible/okp_observer/defaults/main.yml")),
    ("okp_observer/meta/main.yml", include_str!("../../contrib/ansible/okp_observer/meta/main.yml")),
    ("playbook.yml", include_str!("../../contrib/ansible/playbook.yml")),
    ("upgrade.yml", include_str!("../../contrib/ansible/upgrade.yml")),
];

/// ansible-playbook: on PATH, else in the virtualenv scripts/setup.sh makes.
fn ansible_playbook() -> Option<PathBuf> {
    let venv = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/okp/venv/bin/ansible-playbook"));
    let on_path = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("ansible-playbook")).find(|p| p.is_file()));
    on_path.or(venv.filter(|p| p.is_file()))
}

/// The real path of this okp (not /proc/self/exe, which names another program once exec'd by ip).
/// When the binary was replaced or removed while this okp runs, `/proc/<pid>/exe`: the kernel
/// still serves the running one's bytes there as long as this process lives.
fn okp_path() -> Result<PathBuf> {
    let real = std::fs::read_link("/proc/self/exe")
        .or_else(|_| std::env::current_exe())
        .map_err(|e| Error::io("cannot find the okp binary", e))?;
    if real.is_file() {
        Ok(real)
    } else {
        Ok(PathBuf::from(format!("/proc/{}/exe", std::process::id())))
    }
}

pub fn hosts(ctx: &mut Ctx, o: &mut ScenarioResult) -> Result<()> {
    if let Err(why) = hosts::available() {
        return Err(Error::External(format!("HOSTS needs network namespaces: {why}")));
    }
    let bundle =
        ctx.c.bundle.clone().ok_or_else(|| Error::Usage("HOSTS rolls okp's bundle: this run has none".into()))?;
    let classes = ctx.c.okp_client_classes()?;
    // With `--upgrade-to B`: B's runtime and signed bundle, for part 4.
    let next = ctx.c.next.as_ref().map(|n| (n.rt.clone(), n.bundle.clone()));
    let t0 = Instant::now();
    let mut hc = HostCluster::up(ctx.c.mode, ctx.c.rt.clone(), bundle, classes, ctx.c.timers.lag_ms)?;
    o.fact("cluster_up_seconds", round(t0.elapsed().as_secs_f64()));
    let hosts: Vec<String> = hc.topo.hosts.iter().map(|h| format!("{} {} ({})", h.name, h.addr, h.ns)).collect();
    ctx.c.journal.note(&format!(
        "hosts of run {} (operator host {} {}):\n  {}",
        hc.topo.run,
        hc.topo.ctl.name,
        hc.topo.ctl.addr,
        hosts.join("\n  ")
    ));
    let ctl = hc.topo.ctl.ns.clone();
    let journal = &mut ctx.c.journal;
    let r = hosts::in_netns(&ctl, || run(&mut hc, o, &mut |s: &str| journal.note(s), next.as_ref()))?;
    let log = std::mem::take(&mut hc.log);
    ctx.c.journal.note(&log.join("\n"));
    let audit = hc.observer_log_lines();
    ctx.c.journal.note(&format!("observer.ids as the nodes logged it:\n  {}", audit.join("\n  ")));
    let dir = hc.topo.dir.clone();
    hc.down();
    o.check(
        "every namespace, process and file of the hosts removed",
        hosts::run_gone(hc.topo.run, &dir),
        format!("run {} gone", hc.topo.run),
    );
    r
}

fn run(
    hc: &mut HostCluster,
    o: &mut ScenarioResult,
    note: &mut dyn FnMut(&str),
    next: Option<&(Runtime, Bundle)>,
) -> Result<()> {
    hc.create_topic("obs", "1:2:3:4", &["min.insync.replicas=2"])?;
    // Before the roll the brokers run the release's jars. In ZooKeeper mode the controller is a
    // broker too, so 4 is a normal replica; in KRaft the controllers already carry the patch
    // and keep 4 out of the initial ISR (and refuse the leader's AlterPartition adding it).
    let kraft = hc.mode == crate::model::Mode::Kraft;
    let (s, _) = hc.wait_state("obs", Duration::from_secs(30), |s| {
        s.leader.is_some() && s.isr.len() == if kraft { 3 } else { 4 } && s.isr.contains(&4) != kraft
    });
    o.check(
        if kraft {
            "topic obs on 1:2:3:4 across four hosts, brokers on the release's jars: the patched controllers keep 4 out of the ISR"
        } else {
            "topic obs on 1:2:3:4 across four hosts, brokers on the release's jars: 4 is a normal replica, in the ISR"
        },
        s.is_some(),
        s.map(|s| s.show()).unwrap_or_else(|| format!("{} within 30 s", hc.state("obs").map(|s| s.show()).unwrap_or_else(|| "no state".into()))),
    );
    let nodes = hc.topo.dir.join("nodes.yaml");
    crate::fsx::write_atomic(&nodes, hc.nodes_yaml().as_bytes())?;
    note(&format!("nodes file {}:\n{}", nodes.display(), hc.nodes_yaml()));
    roll(hc, o, note)?;
    // With a release to roll to, the upgrade play follows the bundle's roll; promote, demote,
    // the ssh faults and the watchdog are HOSTS' own run (they do not depend on a second release).
    match next {
        Some((rt, bundle)) => upgrade(hc, o, note, rt, bundle),
        None => observers_over_ssh(hc, o, note, &nodes),
    }
}

/// Every node's observer.ids, read here (the hosts share this machine's file system).
pub(super) fn files(hc: &HostCluster) -> Vec<(String, String)> {
    hc.kafka_nodes()
        .iter()
        .map(|n| {
            (
                n.host.name.clone(),
                crate::fsx::read::read_regular(&HostCluster::observer_file(n), crate::fsx::read::MAX_TEXT)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_else(|e| format!("unreadable: {e}")),
            )
        })
        .collect()
}

fn show(files: &[(String, String)]) -> String {
    files.iter().map(|(h, t)| format!("{h}={t:?}")).collect::<Vec<_>>().join(" ")
}

/// One node's line of an inventory: its host, its id, and `vars` (name, value).
fn host_line(n: &HostNode, vars: &[(&str, String)]) -> String {
    let mut s = format!("{} okp_observer_broker_id={}", n.host.name, n.node.id);
    for (k, v) in vars {
        s.push_str(&format!(" okp_observer_{k}={v}"));
    }
    s.push('\n');
    s
}

/// `[all:vars]` of this run's inventories: ssh to the hosts, the bundle, okp, the cluster.
fn common_vars(hc: &HostCluster, okp: &Path, bundle: &Bundle) -> String {
    let t = &hc.topo;
    format!(
        "ansible_user=root\nansible_ssh_private_key_file={key}\nansible_ssh_common_args='-F {cfg} -o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=5'\nansible_python_interpreter=/usr/bin/python3\nokp_observer_bundle={bundle}\nokp_observer_pubkey={pubkey}\nokp_observer_okp={okp}\nokp_observer_okp_local={okp}\nokp_observer_ids=[4]\nokp_observer_bootstrap={boot}\n",
        key = t.key().display(),
        cfg = t.ssh_config().display(),
        kh = t.known_hosts().display(),
        bundle = bundle.archive.display(),
        pubkey = bundle.pubkey.display(),
        okp = okp.display(),
        boot = hc.bootstrap(),
    )
}

/// Where a node's files are, for the role: its observer.ids, its stage directory, its restart.
fn node_vars(n: &HostNode) -> Vec<(&'static str, String)> {
    vec![
        ("ids_file", HostCluster::observer_file(n).display().to_string()),
        ("stage_dir", n.host.dir.join("stage").display().to_string()),
        ("restart_command", HostCluster::restart_command(n).display().to_string()),
    ]
}

/// The inventory of this run for the role: every broker host, its home, its restart command.
fn inventory(hc: &HostCluster, okp: &Path) -> String {
    let mut s = String::from("[kafka_brokers]\n");
    for id in hc.brokers() {
        let n = hc.node(id).expect("a broker of this cluster");
        let mut vars = vec![("kafka_home", n.home.display().to_string())];
        vars.extend(node_vars(n));
        s.push_str(&host_line(n, &vars));
    }
    s.push_str(&format!(
        "\n[kafka_brokers:vars]\n{}okp_observer_rejoin_retries=30\nokp_observer_rejoin_delay=2\n",
        common_vars(
            hc,
            okp,
            hc.bundle.as_ref().expect("HOSTS's cluster is made with okp's bundle (`HostCluster::up`)")
        )
    ));
    s
}

/// B's home on node `n`'s host, beside A's (`kafka/`).
fn home_b(n: &HostNode, b: &Runtime) -> PathBuf {
    n.host.dir.join(format!("kafka-{}", b.version))
}

/// The inventory of the upgrade play: the KRaft controllers (played first) and the brokers, each
/// with its link and B's home; B's distribution and bundle; the controllers' check.
fn upgrade_inventory(hc: &HostCluster, okp: &Path, b: &Runtime, bundle: &Bundle, dist: &Path, check: &Path) -> String {
    let mut controllers = String::from("[kafka_controllers]\n");
    let mut brokers = String::from("[kafka_brokers]\n");
    for n in hc.kafka_nodes() {
        let mut vars = vec![
            ("current", HostCluster::current(n).display().to_string()),
            ("upgrade_home", home_b(n, b).display().to_string()),
        ];
        vars.extend(node_vars(n));
        let group = if n.node.role == crate::cluster::node::Role::Controller { &mut controllers } else { &mut brokers };
        group.push_str(&host_line(n, &vars));
    }
    format!(
        "{controllers}\n{brokers}\n[kafka_controllers:vars]\nokp_observer_controller_check={}\n\n[all:vars]\n{}okp_observer_upgrade_dist={}\nokp_observer_rejoin_retries=60\nokp_observer_rejoin_delay=2\n",
        check.display(),
        common_vars(hc, okp, bundle),
        dist.display()
    )
}

/// The controllers' check of the upgrade play, on the operator host: exits 0 when controller ID
/// is a voter caught up with the quorum's leader, as the release's kafka-metadata-quorum shows it.
fn controller_check(hc: &HostCluster) -> Result<PathBuf> {
    let t = &hc.tools;
    let text = format!(
        "#!/bin/sh\n# Exits 0 when KRaft controller $1 is caught up with the quorum's leader: at most 10 records\n# behind and its last fetch within 3 s, as `kafka-metadata-quorum describe --replication` shows.\nout=$(CLASSPATH={cp} {java} {jvm} {class} --bootstrap-server {boot} describe --replication 2>/dev/null) || exit 1\nnow=$(date +%s%3N)\necho \"$out\" | awk -v id=\"$1\" -v now=\"$now\" 'NR == 1 {{ for (i = 1; i <= NF; i++) col[$i] = i; next }} $1 == id && $col[\"Lag\"] <= 10 && now - $col[\"LastFetchTimestamp\"] < 3000 {{ ok = 1 }} END {{ exit !ok }}'\n",
        cp = t.classpath,
        java = t.java.display(),
        jvm = t.jvm.join(" "),
        class = t.class(Tool::Quorum)?,
        boot = hc.bootstrap(),
    );
    let p = hc.topo.dir.join("bin/okp-controller-caught-up");
    crate::fsx::write_executable(&p, text.as_bytes())?;
    Ok(p)
}

/// ansible-playbook of the role on the operator host: (exit code, output, seconds).
fn play(
    hc: &HostCluster,
    playbook: &Path,
    inventory: &Path,
    during: impl FnOnce(&AtomicBool) + Send,
) -> Result<(i32, String, f64)> {
    let bin = ansible_playbook().ok_or_else(|| {
        Error::External(
            "ansible-playbook is not installed (scripts/setup.sh puts ansible-core into $HOME/.local/share/okp/venv)"
                .into(),
        )
    })?;
    let home = hc.topo.dir.join("ansible");
    let t0 = Instant::now();
    let mut cmd = hc.topo.on_ctl(&bin.display().to_string());
    cmd.args(["-i", &inventory.display().to_string(), &playbook.display().to_string()])
        .env("ANSIBLE_ROLES_PATH", playbook.parent().unwrap_or(Path::new(".")))
        .env("ANSIBLE_HOME", &home)
        .env("ANSIBLE_LOCAL_TEMP", home.join("tmp"))
        .env("ANSIBLE_REMOTE_TMP", home.join("remote-tmp"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_FORCE_COLOR", "0")
        .env("ANSIBLE_HOST_KEY_CHECKING", "True")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "False")
        .env("PATH", format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin.parent().unwrap_or(Path::new("/")).display()));
    // `during` runs beside the play and is told when it ended.
    let ended = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| during(&ended));
        let out = cmd.output();
        ended.store(true, Ordering::SeqCst);
        out
    })
    .map_err(|e| Error::External(format!("cannot run {} ({e})", bin.display())))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Ok((out.status.code().unwrap_or(-1), text, t0.elapsed().as_secs_f64()))
}

/// `host : ok=N changed=N unreachable=N failed=N …` of PLAY RECAP, by host.
fn recap(text: &str) -> Vec<(String, String)> {
    let Some((_, tail)) = text.rsplit_once("PLAY RECAP") else { return Vec::new() };
    tail.lines()
        .filter_map(|l| {
            l.split_once(" : ").map(|(h, r)| (h.trim().to_string(), r.split_whitespace().collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

fn failed_in(recap: &[(String, String)], host: &str) -> Option<bool> {
    recap.iter().find(|(h, _)| h == host).map(|(_, r)| !r.contains("failed=0"))
}

fn installed(hc: &HostCluster, id: i32) -> bool {
    hc.node(id).is_ok_and(|n| n.home.join(".okp-observer/installed").is_file())
}

/// Part 1: the Ansible roll under acks=all writes, with its failure case.
fn roll(hc: &mut HostCluster, o: &mut ScenarioResult, note: &mut dyn FnMut(&str)) -> Result<()> {
    let okp = okp_path()?;
    let dir = hc.topo.dir.join("ansible-role");
    for (file, text) in ROLE {
        crate::fsx::write_atomic(&dir.join(file), text.as_bytes())?;
    }
    let inv = dir.join("inventory.ini");
    crate::fsx::write_atomic(&inv, inventory(hc, &okp).as_bytes())?;
    note(&format!("inventory {}:\n{}", inv.display(), crate::fsx::read::lossy_text(&inv, crate::fsx::read::MAX_TEXT)));
    let playbook = dir.join("playbook.yml");
    let producer = hc.producer("obs", "roll", 20)?;

    // First run: b3's installed jar is damaged before its restart (a bad copy on its disk).
    let b3 = hc.node(3)?;
    let marker = b3.home.join(".okp-observer/installed");
    let jar = hc
        .rt
        .swapped
        .iter()
        .filter_map(|(up, _, _)| up.file_name().map(|n| b3.home.join("libs").join(n)))
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("kafka_2.13")))
        .ok_or_else(|| Error::Source("the bundle replaces no kafka_2.13 jar".into()))?;
    let damaged = AtomicBool::new(false);
    let (rc, text, secs) = play(hc, &playbook, &inv, |ended| {
        while !ended.load(Ordering::SeqCst) {
            if marker.is_file() {
                if std::fs::write(&jar, b"not a jar: damaged on purpose by okp's HOSTS scenario\n").is_ok() {
                    damaged.store(true, Ordering::SeqCst);
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })?;
    note(&format!(
        "$ ansible-playbook -i {} {} (b3's jar damaged after its install)\n  exit {rc} in {secs:.1} s\n{text}",
        inv.display(),
        playbook.display()
    ));
    let r = recap(&text);
    o.fact("roll_with_failure", serde_json::json!({"exit": rc, "seconds": round(secs), "recap": r}));
    o.check(
        "Ansible roll, b3's new jar damaged: the playbook fails, b1 and b2 rolled, b3 rolled back by okp rollback and back in the ISR on its previous jars, b4 not reached",
        rc != 0
            && damaged.load(Ordering::SeqCst)
            && failed_in(&r, "b1") == Some(false)
            && failed_in(&r, "b2") == Some(false)
            && failed_in(&r, "b3") == Some(true)
            && text.contains("rolled back with okp rollback")
            && failed_in(&r, "b4").is_none()
            && installed(hc, 1)
            && installed(hc, 2)
            && !installed(hc, 3)
            && !installed(hc, 4),
        format!(
            "exit {rc}; recap {r:?}; installed: b1 {} b2 {} b3 {} b4 {}",
            installed(hc, 1),
            installed(hc, 2),
            installed(hc, 3),
            installed(hc, 4)
        ),
    );
    let (s, _) = hc.wait_state("obs", Duration::from_secs(60), |s| s.isr.contains(&3));
    o.check(
        "b3 back in the ISR on its previous jars",
        s.is_some(),
        s.map(|s| s.show()).unwrap_or_else(|| "3 not in the ISR within 60 s".into()),
    );

    // Second run: the roll finishes (b1 and b2 are already installed and not restarted).
    let (rc, text, secs) = play(hc, &playbook, &inv, |_| {})?;
    note(&format!(
        "$ ansible-playbook -i {} {}\n  exit {rc} in {secs:.1} s\n{text}",
        inv.display(),
        playbook.display()
    ));
    let r = recap(&text);
    o.fact("roll", serde_json::json!({"exit": rc, "seconds": round(secs), "recap": r}));
    o.check(
        "Ansible roll again: exit 0, every broker installed, b1 and b2 left as they were (already installed: nothing changed, not restarted)",
        rc == 0
            && (1..=4).all(|id| installed(hc, id))
            && ["b1", "b2"].iter().all(|h| r.iter().any(|(x, line)| x == h && line.contains("changed=0"))),
        format!("exit {rc}; recap {r:?}"),
    );
    let (s, secs) = hc.wait_state("obs", Duration::from_secs(60), |s| !s.isr.contains(&4) && s.isr.len() == 3);
    o.check(
        "after the roll broker 4 is the observer: out of the ISR of obs, the three primaries in it",
        s.is_some(),
        s.map(|s| format!("{} after {secs:.1} s", s.show())).unwrap_or_else(|| "4 still in the ISR after 60 s".into()),
    );
    writes(hc, o, producer, "roll_writes", "acks=all writes through both rolls: every acked record read back")
}

/// Stops `producer` and reads obs back: fact `fact` (acked, errors, read, missing), and the
/// check `what` that every acked record was read.
fn writes(
    hc: &HostCluster,
    o: &mut ScenarioResult,
    producer: crate::cluster::client::Client,
    fact: &str,
    what: &str,
) -> Result<()> {
    let (lines, _) = producer.stop(Duration::from_secs(60));
    let acked: Vec<String> = lines
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.text.split('\t').collect();
            (f.first() == Some(&"ack") && f.len() >= 3).then(|| f[2].to_string())
        })
        .collect();
    let errors = lines.iter().filter(|l| l.text.starts_with("err\t")).count();
    // Everything in obs, earlier writers' records too: the reader stops 5 s after the last one.
    let read = hc.read_all("obs", u32::MAX as usize)?;
    let set: std::collections::BTreeSet<&str> = read.iter().map(String::as_str).collect();
    let missing = acked.iter().filter(|v| !set.contains(v.as_str())).count();
    o.fact(fact, serde_json::json!({"acked": acked.len(), "errors": errors, "read": read.len(), "missing": missing}));
    o.check(
        what,
        !acked.is_empty() && missing == 0,
        format!("acked {}, send errors {errors}, read {}, missing {missing}", acked.len(), read.len()),
    );
    Ok(())
}

/// What was seen of obs and of the nodes' links while the upgrade play ran.
#[derive(Default)]
struct Watched {
    samples: u32,
    /// Moments 4 was in obs's ISR or led it.
    broken: Vec<String>,
    /// Each node's link found on B's home, seconds after the play started, in that order.
    switched: Vec<(String, f64)>,
}

/// Part 4 (with `--upgrade-to B`): the upgrade play (contrib/ansible/upgrade.yml) rolls every
/// node from A to B, KRaft controllers first, under acks=all writes, obs watched throughout.
fn upgrade(
    hc: &mut HostCluster,
    o: &mut ScenarioResult,
    note: &mut dyn FnMut(&str),
    b: &Runtime,
    bundle: &Bundle,
) -> Result<()> {
    let (from, to) = (hc.rt.version, b.version);
    let okp = okp_path()?;
    let t0 = Instant::now();
    let dist = crate::hosts::cluster::distribution(b, &hc.topo.dir.join("dist"))?;
    o.fact("distribution_seconds", round(t0.elapsed().as_secs_f64()));
    if hc.mode == crate::model::Mode::Zk {
        // The protocol pinned to A's before the roll (docs/upgrade.md); read at each broker's restart.
        for id in hc.brokers() {
            let cfg = hc.node(id)?.host.dir.join("server.properties");
            let text = crate::fsx::read::text(&cfg, crate::fsx::read::MAX_SIDECAR, "server.properties")?;
            let pin = format!("{text}inter.broker.protocol.version={}.{}\n", from.major, from.minor);
            crate::fsx::write_atomic(&cfg, pin.as_bytes())?;
        }
    }
    let check = controller_check(hc)?;
    let dir = hc.topo.dir.join("ansible-role");
    let inv = dir.join("inventory-upgrade.ini");
    crate::fsx::write_atomic(&inv, upgrade_inventory(hc, &okp, b, bundle, &dist, &check).as_bytes())?;
    note(&format!("inventory {}:\n{}", inv.display(), crate::fsx::read::lossy_text(&inv, crate::fsx::read::MAX_TEXT)));
    let playbook = dir.join("upgrade.yml");
    let a_jars: Vec<_> = hc.kafka_nodes().iter().map(|n| homes::replaced_jar_digests(&hc.rt, &n.home)).collect();
    let producer = hc.producer("obs", "upgrade", 20)?;
    std::thread::sleep(Duration::from_secs(3));

    let seen = std::sync::Mutex::new(Watched::default());
    // The watcher sees the cluster through its addresses and the nodes' links only.
    let boot = hc.bootstrap();
    let links: Vec<(String, PathBuf, PathBuf)> =
        hc.kafka_nodes().iter().map(|n| (n.host.name.clone(), HostCluster::current(n), home_b(n, b))).collect();
    let (rc, text, secs) = play(hc, &playbook, &inv, |ended| {
        let t0 = Instant::now();
        while !ended.load(Ordering::SeqCst) {
            let state = crate::hosts::cluster::state_at(&boot, "obs");
            let mut w = seen.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = state {
                w.samples += 1;
                if s.isr.contains(&4) || s.leader == Some(4) {
                    let line = format!("{:.1} s: {}", t0.elapsed().as_secs_f64(), s.show());
                    w.broken.push(line);
                }
            }
            for (name, link, home) in &links {
                let on_b = std::fs::read_link(link).is_ok_and(|p| &p == home);
                if on_b && !w.switched.iter().any(|(x, _)| x == name) {
                    w.switched.push((name.clone(), round(t0.elapsed().as_secs_f64())));
                }
            }
            drop(w);
            std::thread::sleep(Duration::from_millis(250));
        }
    })?;
    let w = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    note(&format!(
        "$ ansible-playbook -i {} {} ({from} → {to})\n  exit {rc} in {secs:.1} s\n{text}",
        inv.display(),
        playbook.display()
    ));
    let r = recap(&text);
    let names: Vec<String> = hc.kafka_nodes().iter().map(|n| n.host.name.clone()).collect();
    let order: Vec<String> = w.switched.iter().map(|(n, _)| n.clone()).collect();
    // Seconds per node: from the previous node's switch (the first: from the play's start).
    let per_node: Vec<serde_json::Value> = w
        .switched
        .iter()
        .enumerate()
        .map(|(i, (n, t))| serde_json::json!({"node": n, "switched_at": t, "seconds": round(t - if i == 0 { 0.0 } else { w.switched[i - 1].1 })}))
        .collect();
    o.fact(
        "upgrade",
        serde_json::json!({"from": from.to_string(), "to": to.to_string(), "exit": rc, "seconds": round(secs), "recap": r, "per_node": per_node, "obs_samples": w.samples}),
    );
    o.check(
        &format!("Ansible upgrade play {from} → {to}: exit 0, every node switched one at a time in the play's order (KRaft controllers first), none failed"),
        rc == 0 && order == names && names.iter().all(|n| failed_in(&r, n) == Some(false)),
        format!("exit {rc} in {secs:.1} s; switched {order:?}; recap {r:?}"),
    );
    let mut wrong = Vec::new();
    for (n, before) in hc.kafka_nodes().iter().zip(&a_jars) {
        let (home, version) = HostCluster::running(n);
        let want = std::fs::canonicalize(home_b(n, b)).ok();
        let link = std::fs::read_link(HostCluster::current(n)).ok();
        let a_same = &homes::replaced_jar_digests(&hc.rt, &n.home) == before;
        if home.and_then(|h| std::fs::canonicalize(h).ok()) != want
            || version.as_deref() != Some(&to.to_string())
            || link.as_deref() != Some(home_b(n, b).as_path())
            || !a_same
        {
            wrong.push(format!("{}: version {version:?}, link {link:?}, A's home as before {a_same}", n.host.name));
        }
    }
    o.check(
        &format!("every node runs {to} afterwards (its JVM's classpath from its {to} home, its log's `Kafka version: {to}`, its link on that home); A's home beside it as it was"),
        wrong.is_empty(),
        if wrong.is_empty() { format!("{} nodes", names.len()) } else { wrong.join("; ") },
    );
    let (s, secs) = hc.wait_state("obs", Duration::from_secs(60), |s| !s.isr.contains(&4) && s.isr.len() == 3);
    o.check(
        &format!("broker 4 an observer through the upgrade: never in obs's ISR nor leading it ({} samples while the play ran), out of the ISR after it, the primaries in it", w.samples),
        w.broken.is_empty() && w.samples > 0 && s.is_some(),
        match (&s, w.broken.is_empty()) {
            (Some(s), true) => format!("{} after {secs:.1} s", s.show()),
            _ => format!("broken: {:?}; after: {}", w.broken, s.map(|s| s.show()).unwrap_or_else(|| "4 in the ISR or a primary out after 60 s".into())),
        },
    );
    writes(
        hc,
        o,
        producer,
        "upgrade_writes",
        &format!("acks=all writes through the upgrade to {to}: every acked record read back"),
    )
}

/// `okp observers SUB ARGS --nodes … --transport command …` on the operator host.
/// `okp observers SUB…` on the operator host over ssh to the hosts: (exit, stdout, stderr, seconds).
pub(super) fn observers(
    hc: &HostCluster,
    sub: &[&str],
    nodes: &Path,
    timeout_s: u64,
) -> Result<(i32, String, String, f64)> {
    let okp = okp_path()?;
    let t = &hc.topo;
    let mut cmd = t.on_ctl(&okp.display().to_string());
    cmd.arg("observers")
        .args(sub)
        .args(["--bootstrap", &hc.bootstrap(), "--nodes"])
        .arg(nodes)
        .args(["--transport", "command", "--read-cmd", &t.read_template(), "--write-cmd", &t.write_template()])
        .args(["--transport-timeout", &timeout_s.to_string()]);
    let t0 = Instant::now();
    let out = cmd.output().map_err(|e| Error::External(format!("cannot run okp ({e})")))?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        t0.elapsed().as_secs_f64(),
    ))
}

/// One scan of `okp observers watch --enable --once` over ssh, `policy` flags added, its state
/// and audit log in the run's directory: (exit, stdout, stderr, seconds, the audit log).
pub(super) fn watch_once(
    hc: &HostCluster,
    policy: &[&str],
    nodes: &Path,
    timeout_s: u64,
) -> Result<(i32, String, String, f64, String)> {
    let (state, audit) = (hc.topo.dir.join("watch-state.json"), hc.topo.dir.join("watch-audit.log"));
    let (state_s, audit_s) = (state.display().to_string(), audit.display().to_string());
    let mut sub = vec!["watch", "--enable", "--once"];
    sub.extend_from_slice(policy);
    sub.extend(["--timeout", "60", "--state", &state_s, "--audit-log", &audit_s]);
    let (rc, out, err, secs) = observers(hc, &sub, nodes, timeout_s)?;
    Ok((rc, out, err, secs, crate::fsx::read::lossy_text(&audit, crate::fsx::read::MAX_LOG)))
}

/// A fault on one host, and how it is lifted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    Stopped,
    LinkDown,
    Frozen,
    Rekeyed,
    /// Reached through the host's port whose sessions sleep: nothing to set.
    Stalled,
    /// The directory of observer.ids read-only as the host's sshd sees it.
    ReadOnly,
}

impl Fault {
    fn label(self) -> &'static str {
        match self {
            Fault::Stopped => "sshd stopped",
            Fault::LinkDown => "link down",
            Fault::Frozen => "sshd frozen (SIGSTOP)",
            Fault::Rekeyed => "changed host key",
            Fault::Stalled => "session stalls after login",
            Fault::ReadOnly => "read-only directory on the last host written",
        }
    }

    /// Puts the fault on `host` (`on`), or lifts it.
    fn set(self, t: &mut crate::hosts::Topology, host: &str, dir: &Path, on: bool) -> Result<()> {
        match (self, on) {
            (Fault::Stopped, true) => t.stop_sshd(host),
            (Fault::Stopped, false) => t.start_sshd(host)?,
            (Fault::LinkDown, up) => t.link(host, !up)?,
            (Fault::Frozen, frozen) => t.freeze_sshd(host, frozen)?,
            (Fault::Rekeyed, true) => t.rekey(host)?,
            (Fault::Rekeyed, false) => t.trust_current_key()?,
            (Fault::Stalled, _) => {}
            (Fault::ReadOnly, ro) => t.read_only(host, dir, ro)?,
        }
        Ok(())
    }
}

/// Part 2 and 3: promote, demote, each fault, and the watchdog, over ssh.
fn observers_over_ssh(
    hc: &mut HostCluster,
    o: &mut ScenarioResult,
    note: &mut dyn FnMut(&str),
    nodes: &Path,
) -> Result<()> {
    let as_before = files(hc);
    let (rc, out, err, secs) = observers(hc, &["promote", "--broker", "4", "--timeout", "60"], nodes, 20)?;
    note(&format!("$ okp observers promote --broker 4 (over ssh)\n  exit {rc} in {secs:.1} s\n{out}{err}"));
    let after = files(hc);
    let (s, _) = hc.wait_state("obs", Duration::from_secs(30), |s| s.isr.contains(&4));
    o.fact("promote_seconds", round(secs));
    o.check(
        "okp observers promote over ssh: exit 0, 4 removed from observer.ids on every host, 4 joins the ISR",
        rc == 0 && after.iter().all(|(_, t)| t.is_empty()) && s.is_some(),
        format!("exit {rc} in {secs:.1} s; files {}", show(&after)),
    );
    let (rc, out, err, secs) = observers(hc, &["demote", "--broker", "4", "--timeout", "60"], nodes, 20)?;
    note(&format!("$ okp observers demote --broker 4 (over ssh)\n  exit {rc} in {secs:.1} s\n{out}{err}"));
    let after = files(hc);
    o.fact("demote_seconds", round(secs));
    o.check(
        "okp observers demote over ssh: exit 0, every host's observer.ids back to its bytes, 4 out of the ISR",
        rc == 0 && after == as_before && hc.state("obs").is_some_and(|s| !s.isr.contains(&4)),
        format!("exit {rc} in {secs:.1} s; files {}", show(&after)),
    );

    // The faults: each on one host, a promote that must fail naming it and change nothing.
    let first_broker_host = "b1".to_string();
    // Written first by a promote: a KRaft controller; in ZooKeeper mode every node is a broker.
    let quorum_host = if hc.mode == crate::model::Mode::Kraft { "c101".to_string() } else { "b3".to_string() };
    let last = "b4".to_string();
    let ids_dir = hc.topo.host(&last)?.dir.clone();
    let stalled = hc.topo.dir.join("nodes-stalled.yaml");
    crate::fsx::write_atomic(&stalled, hc.nodes_yaml().replace("host: b2,", "host: b2-stall,").as_bytes())?;
    let mut table = Vec::new();
    let faults = [
        (Fault::Stopped, "b2".to_string(), "Connection refused", 10.0),
        (Fault::LinkDown, "b3".into(), "exited with 255", 15.0),
        (Fault::Frozen, first_broker_host.clone(), "banner exchange", 15.0),
        (Fault::Rekeyed, quorum_host.clone(), "Host key verification failed", 10.0),
        (Fault::Stalled, "b2".into(), "did not finish within 10 s", 20.0),
        (Fault::ReadOnly, last.clone(), "Read-only file system", 40.0),
    ];
    for (fault, base, needle, bound) in faults {
        fault.set(&mut hc.topo, &base, &ids_dir, true)?;
        // The stalled host is reached through its `-stall` name (its port whose sessions sleep).
        let (host, file) =
            if fault == Fault::Stalled { (format!("{base}-stall"), stalled.as_path()) } else { (base.clone(), nodes) };
        let (rc, _, err, secs) = observers(hc, &["promote", "--broker", "4", "--timeout", "60"], file, 10)?;
        let after = files(hc);
        let same = after == as_before;
        let named = err.contains(&format!(" ({host}:")) && err.contains(needle);
        let what = fault.label();
        note(&format!("FAULT {what} on {host}: okp observers promote --broker 4 exit {rc} in {secs:.1} s\n{err}\n  files after: {}", show(&after)));
        o.check(
            &format!("fault `{what}` on {host}: exit 3 naming {host} ({needle}) within {bound} s; every node's observer.ids as before"),
            rc == 3 && named && secs < bound && same,
            format!("exit {rc} in {secs:.1} s; named {named}; all as before {same}"),
        );
        table.push(
            serde_json::json!({"fault": what, "host": host, "exit": rc, "seconds": round(secs), "all_as_before": same}),
        );
        fault.set(&mut hc.topo, &base, &ids_dir, false)?;
    }
    o.fact("faults", table);

    // The watchdog over ssh: primaries 2 and 3 stopped, one scan promotes 4 on every host.
    hc.stop(2)?;
    hc.stop(3)?;
    let (s, _) = hc.wait_state("obs", Duration::from_secs(30), |s| s.isr == vec![1] || s.isr.len() == 1);
    note(&format!("brokers 2 and 3 stopped: {}", s.map(|s| s.show()).unwrap_or_default()));
    let (rc, out, err, secs, audit) = watch_once(hc, &[], nodes, 20)?;
    note(&format!(
        "$ okp observers watch --enable --once (over ssh)\n  exit {rc} in {secs:.1} s\n{out}{err}\naudit log:\n{audit}"
    ));
    let after = files(hc);
    let (s, _) = hc.wait_state("obs", Duration::from_secs(30), |s| s.isr.contains(&4));
    o.fact("watch_seconds", round(secs));
    o.check(
        "okp observers watch --once over ssh, primaries 2 and 3 down: 4 promoted on every host and in the ISR",
        rc == 0 && after.iter().all(|(_, t)| t.is_empty()) && s.is_some(),
        format!("exit {rc} in {secs:.1} s; files {}; {}", show(&after), s.map(|s| s.show()).unwrap_or_default()),
    );
    hc.start(2)?;
    hc.start(3)?;
    let (s, _) = hc.wait_state("obs", Duration::from_secs(60), |s| s.isr.contains(&2) && s.isr.contains(&3));
    note(&format!("brokers 2 and 3 back: {}", s.map(|s| s.show()).unwrap_or_default()));
    let (rc, _, err, secs) = observers(hc, &["demote", "--broker", "4", "--timeout", "60"], nodes, 20)?;
    o.check(
        "4 demoted again over ssh after the primaries are back",
        rc == 0 && files(hc) == as_before,
        format!("exit {rc} in {secs:.1} s {}", err.lines().last().unwrap_or("")),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recap_is_read_per_host() {
        let text = "PLAY RECAP *****\nb1                         : ok=9    changed=3    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0\nb3                         : ok=8    changed=4    unreachable=0    failed=1    skipped=0    rescued=1    ignored=0\n";
        let r = recap(text);
        assert_eq!((failed_in(&r, "b1"), failed_in(&r, "b3"), failed_in(&r, "b4")), (Some(false), Some(true), None));
    }

    #[test]
    fn every_role_file_okp_ships_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/ansible");
        for (file, text) in ROLE {
            assert_eq!(&std::fs::read_to_string(root.join(file)).unwrap(), text, "{file}");
        }
    }
}
