//! Separate hosts on one machine, for tests that cross a network as production does: one Linux
//! network namespace per host (`okp-<run>-<name>`), each with its own address on a /24 of its
//! run (`10.213.<run>.<n>`), its own hostname (a UTS namespace per process, set to the host's
//! name), its own `/etc/hosts` (`/etc/netns/<ns>/hosts`, which `ip netns exec` mounts over
//! `/etc/hosts`), its own directory (its Kafka home, its observer.ids) and a real OpenSSH
//! server (Debian's `openssh-server`) with host keys made for the run, root login by key only
//! and one authorized key made for the run. An operator host (`ctl`) is where okp, ssh and
//! ansible-playbook run. The hosts meet on a bridge inside a namespace of the run (`hub`):
//! nothing is routed outside the run's namespaces and no address is added outside them.
//!
//! `Topology::teardown` (also from Drop, so a failing test cleans up too) kills every process
//! in the run's namespaces, deletes them (their links and the bridge go with them), removes
//! `/etc/netns/okp-<run>-*` and the run's directory. `sweep` removes what a killed run left
//! (its owner process is gone).
//!
//! The faults the tests inject live here too: sshd stopped, frozen (SIGSTOP: the kernel accepts
//! the connection, nothing answers), the host's link down, a new host key, a directory mounted
//! read-only in the host's own mount namespace, and a port (`STALL_PORT`) whose sessions sleep.
//!
//! Not here: Kafka on these hosts (`hosts::cluster`), what is asserted (`scenarios`).

pub mod cluster;
pub(crate) mod netns;
pub mod wan;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
pub use netns::in_netns;

/// The first two octets of every run's /24 (`10.213.<run>.0/24`).
pub const NET: &str = "10.213";
/// A second port of every host's sshd whose sessions run `sleep` instead of the command: a host
/// that accepts the connection, authenticates, and then answers nothing.
pub const STALL_PORT: u16 = 2222;
/// Where runs say who owns them (tmpfs: gone at a reboot, like the namespaces).
const OWNERS: &str = "/run/okp-hosts";
const SSHD: &str = "/usr/sbin/sshd";

/// Why this machine cannot make the hosts, if it cannot: root, `ip netns`, `unshare`,
/// `nsenter`, Debian's sshd and ssh are needed.
pub fn available() -> std::result::Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("network namespaces need root (okp runs as another user)".into());
    }
    for (tool, package) in [
        ("/usr/sbin/ip", "iproute2"),
        ("/usr/bin/unshare", "util-linux"),
        ("/usr/bin/nsenter", "util-linux"),
        (SSHD, "openssh-server (scripts/setup.sh installs it)"),
        ("/usr/bin/ssh", "openssh-client"),
        ("/usr/bin/ssh-keygen", "openssh-client"),
    ] {
        if !Path::new(tool).exists() {
            return Err(format!("{tool} is missing (Debian package {package})"));
        }
    }
    // One name per call: tests of one process ask at once, and a name taken by a probe a killed
    // process left would read as "this machine cannot".
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = format!("okp-probe-{}-{n}", std::process::id());
    let made = Command::new("ip").args(["netns", "add", &probe]).output();
    let _ = Command::new("ip").args(["netns", "del", &probe]).output();
    match made {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("`ip netns add` failed here: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("cannot run ip ({e})")),
    }
}

/// One host of a run.
#[derive(Debug, Clone)]
pub struct Host {
    /// Its name: hostname, /etc/hosts entry, ssh destination (`root@<name>`).
    pub name: String,
    /// Its network namespace, `okp-<run>-<name>`.
    pub ns: String,
    pub addr: String,
    /// Its own directory under the run's (sshd's files, the Kafka home, observer.ids).
    pub dir: PathBuf,
}

/// The run's hosts, their sshd processes, and the operator host.
pub struct Topology {
    pub run: u8,
    pub dir: PathBuf,
    pub hosts: Vec<Host>,
    /// The operator host's namespace, where ssh, okp and ansible-playbook run.
    pub ctl: Host,
    /// ssh's ConnectTimeout in the run's templates, seconds (default 5).
    pub connect_timeout: u32,
    hub: String,
    /// The hosts' regions and the WAN link between them (`wan`); None: one bridge for all.
    pub regions: Option<wan::Regions>,
    /// Processes started in the hosts (sshd), by host name.
    sshd: BTreeMap<String, Child>,
    torn_down: bool,
}

/// The namespaces of run `run`, all of whose names start with this.
fn prefix(run: u8) -> String {
    format!("okp-{run}-")
}

/// Runs a command to its end; an error names it and says what it printed.
fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::External(format!("cannot run {program} ({e})")))?;
    if !out.status.success() {
        return Err(Error::External(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Topology {
    /// Makes the hosts `names` (each a hostname: letters, digits, `-`) and the operator host,
    /// each sshd started and answering. On any error, what was made is removed.
    pub fn create(names: &[&str]) -> Result<Topology> {
        Topology::create_with(names, None)
    }

    /// As `create`, the hosts in `regions` (each host's region named there; the operator host in
    /// the first), joined by the WAN link of `regions` (`wan`).
    pub fn create_in_regions(names: &[&str], regions: wan::Regions) -> Result<Topology> {
        if regions.names.len() < 2 || regions.names.len() > 3 || names.len() > 39 {
            return Err(Error::Usage("regions: 2 or 3 of them, at most 39 hosts".into()));
        }
        if let Some(h) = names.iter().find(|n| regions.of.get(**n).is_none_or(|r| *r >= regions.names.len())) {
            return Err(Error::Usage(format!("host {h} is in no region")));
        }
        if regions.toxiproxy.is_none() {
            wan::toxiproxy()?;
        }
        Topology::create_with(names, Some(regions))
    }

    fn create_with(names: &[&str], regions: Option<wan::Regions>) -> Result<Topology> {
        if names.is_empty() || names.len() > 200 {
            return Err(Error::Usage("a topology has 1 to 200 hosts".into()));
        }
        if let Some(bad) = names.iter().find(|n| {
            n.is_empty() || n.len() > 20 || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') || **n == "ctl"
        }) {
            return Err(Error::Usage(format!("host name {bad:?}: letters, digits and - only, at most 20, not `ctl`")));
        }
        available().map_err(Error::External)?;
        sweep();
        let (run, dir) = claim()?;
        let mut t = Topology {
            run,
            hosts: Vec::new(),
            ctl: host(run, &dir, "ctl", 1),
            hub: format!("{}hub", prefix(run)),
            dir,
            sshd: BTreeMap::new(),
            regions,
            torn_down: false,
            connect_timeout: 5,
        };
        t.hosts = names.iter().enumerate().map(|(i, n)| host(run, &t.dir, n, 11 + i as u8)).collect();
        match t.build() {
            Ok(()) => Ok(t),
            Err(e) => {
                t.teardown();
                Err(e)
            }
        }
    }

    fn build(&mut self) -> Result<()> {
        // The hub namespace was made by `claim` (that is what reserves the run number).
        let bridges = self.regions.as_ref().map_or(1, |r| r.names.len());
        for b in 0..bridges {
            run("ip", &["-n", &self.hub, "link", "add", &format!("br{b}"), "type", "bridge"])?;
            run("ip", &["-n", &self.hub, "link", "set", &format!("br{b}"), "up"])?;
        }
        let all: Vec<Host> = std::iter::once(self.ctl.clone()).chain(self.hosts.iter().cloned()).collect();
        let mut etc_hosts = String::from("127.0.0.1 localhost\n");
        for h in &all {
            etc_hosts.push_str(&format!("{} {}\n", h.addr, h.name));
        }
        for (i, h) in all.iter().enumerate() {
            std::fs::create_dir_all(&h.dir).map_err(|e| Error::io(format!("cannot create {}", h.dir.display()), e))?;
            run("ip", &["netns", "add", &h.ns])?;
            let port = format!("p{i}");
            // Both ends are made inside namespaces of the run: nothing appears in the machine's own.
            run(
                "ip",
                &["link", "add", &port, "netns", &self.hub, "type", "veth", "peer", "name", "eth0", "netns", &h.ns],
            )?;
            let bridge = format!("br{}", self.regions.as_ref().map_or(0, |r| r.region_of(&h.name)));
            run("ip", &["-n", &self.hub, "link", "set", &port, "master", &bridge, "up"])?;
            run("ip", &["-n", &h.ns, "addr", "add", &format!("{}/24", h.addr), "dev", "eth0"])?;
            run("ip", &["-n", &h.ns, "link", "set", "eth0", "up"])?;
            run("ip", &["-n", &h.ns, "link", "set", "lo", "up"])?;
            crate::fsx::write_atomic(&Path::new("/etc/netns").join(&h.ns).join("hosts"), etc_hosts.as_bytes())?;
        }
        if let Some(regions) = &self.regions {
            wan::build(self, regions, &self.hub)?;
        }
        std::fs::create_dir_all("/run/sshd")
            .map_err(|e| Error::io("cannot create /run/sshd (sshd's privilege separation directory)", e))?;
        let key = self.key();
        run(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                &format!("okp-hosts-run-{}", self.run),
                "-f",
                &key.display().to_string(),
            ],
        )?;
        std::fs::copy(key.with_extension("pub"), self.dir.join("authorized_keys"))
            .map_err(|e| Error::io("cannot write the run's authorized_keys", e))?;
        let mut known = String::new();
        for h in self.hosts.clone() {
            known.push_str(&self.host_key(&h)?);
        }
        crate::fsx::write_atomic(&self.known_hosts(), known.as_bytes())?;
        crate::fsx::write_atomic(&self.ssh_config(), self.ssh_config_text().as_bytes())?;
        for h in self.hosts.clone() {
            self.start_sshd(&h.name)?;
        }
        Ok(())
    }

    /// The run's client key (its public half is the one authorized key of every host).
    pub fn key(&self) -> PathBuf {
        self.dir.join("id_ed25519")
    }

    /// The run's known_hosts: every host's key under its name and address.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.join("known_hosts")
    }

    /// An ssh_config for the run: no system-wide known hosts, and for each host `NAME-stall`,
    /// the host's `STALL_PORT` (checked against its own key).
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.join("ssh_config")
    }

    fn ssh_config_text(&self) -> String {
        let mut s = String::from("# okp's test hosts of one run: made by okp, removed with the run.\nHost *\n  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n");
        for h in &self.hosts {
            s.push_str(&format!(
                "Host {}-stall\n  HostName {}\n  Port {STALL_PORT}\n  HostKeyAlias {}\n",
                h.name, h.addr, h.name
            ));
        }
        s
    }

    /// The ssh command line okp's templates and Ansible use on this run's hosts: batch mode
    /// (never a prompt), the run's own known_hosts checked strictly, a connect and handshake
    /// timeout, the run's key.
    pub fn ssh(&self) -> String {
        format!(
            "ssh -F {} -o BatchMode=yes -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes -o ConnectTimeout={} -i {} -l root",
            self.ssh_config().display(),
            self.known_hosts().display(),
            self.connect_timeout,
            self.key().display()
        )
    }

    /// `okp observers`' read template over ssh.
    pub fn read_template(&self) -> String {
        format!("{} {{host}} cat {{path}}", self.ssh())
    }

    /// `okp observers`' write template over ssh: okp's compare-and-swap script (`{cas}`,
    /// observers/swap.rs), one word the remote shell runs: a temporary file beside the target,
    /// flushed to disk, renamed over it only if the file still holds what okp read.
    pub fn write_template(&self) -> String {
        format!("{} {{host}} {{cas}}", self.ssh())
    }

    pub fn host(&self, name: &str) -> Result<&Host> {
        self.hosts.iter().find(|h| h.name == name).ok_or_else(|| Error::Usage(format!("no host {name} in this run")))
    }

    /// Writes `host`'s sshd_config and host key; returns its known_hosts line.
    fn host_key(&self, h: &Host) -> Result<String> {
        let key = h.dir.join("ssh_host_ed25519_key");
        let _ = std::fs::remove_file(&key);
        let _ = std::fs::remove_file(key.with_extension("pub"));
        run("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-C", &h.name, "-f", &key.display().to_string()])?;
        let config = format!(
            "# sshd of okp's test host {name} (run {run}): made by okp, removed with the run.\n\
             ListenAddress {addr}:22\nListenAddress {addr}:{STALL_PORT}\nHostKey {key}\nPidFile none\n\
             AuthorizedKeysFile {auth}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPrintMotd no\nX11Forwarding no\n\
             AllowTcpForwarding no\nSubsystem sftp internal-sftp\n\
             Match LocalPort {STALL_PORT}\n  ForceCommand sleep 3600\n",
            name = h.name,
            run = self.run,
            addr = h.addr,
            key = key.display(),
            auth = self.dir.join("authorized_keys").display(),
        );
        crate::fsx::write_atomic(&h.dir.join("sshd_config"), config.as_bytes())?;
        known_line(h)
    }

    /// The argv that runs `argv` on host `h`: in its namespace (with its /etc/hosts), in a UTS
    /// namespace of its own whose hostname is the host's name.
    pub fn on_host(h: &Host, argv: &[String]) -> Vec<String> {
        let mut a: Vec<String> =
            ["netns", "exec", &h.ns, "unshare", "--uts", "--", "sh", "-c", "hostname \"$0\" && exec \"$@\"", &h.name]
                .iter()
                .map(|s| s.to_string())
                .collect();
        a.extend(argv.iter().cloned());
        a
    }

    /// A command on the operator host (its namespace and /etc/hosts): `ip netns exec ctl …`.
    pub fn on_ctl(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ctl.ns, program]);
        c
    }

    /// Starts (or restarts) `name`'s sshd and waits until it answers ssh from the operator host.
    pub fn start_sshd(&mut self, name: &str) -> Result<()> {
        self.stop_sshd(name);
        let h = self.spawn_sshd(name)?;
        let t0 = Instant::now();
        loop {
            let o = self.ssh_run(name, "true", Duration::from_secs(10))?;
            if o.0 == Some(0) {
                return Ok(());
            }
            if t0.elapsed() > Duration::from_secs(20) {
                return Err(Error::External(format!(
                    "sshd on {name} ({}) does not answer ssh after 20 s: {}; its log:\n{}",
                    h.addr,
                    o.2.trim(),
                    crate::fsx::read::lossy_text(&h.dir.join("sshd.log"), crate::fsx::read::MAX_LOG)
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Starts `name`'s sshd in its namespace and hostname (its output to `sshd.log`), not waiting.
    fn spawn_sshd(&mut self, name: &str) -> Result<Host> {
        use std::os::unix::process::CommandExt;
        let h = self.host(name)?.clone();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(h.dir.join("sshd.log"))
            .map_err(|e| Error::io("cannot open sshd.log", e))?;
        let err = log.try_clone().map_err(|e| Error::io("cannot duplicate a log handle", e))?;
        let config = h.dir.join("sshd_config").display().to_string();
        let argv = Topology::on_host(&h, &[SSHD.into(), "-D".into(), "-e".into(), "-f".into(), config]);
        let child = Command::new("ip")
            .args(&argv)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| Error::External(format!("cannot start sshd on {name} ({e})")))?;
        self.sshd.insert(name.to_string(), child);
        Ok(h)
    }

    /// `ssh root@name CMD` from the operator host with the run's options: (exit code, stdout,
    /// stderr); None when it was killed at `timeout`.
    pub fn ssh_run(&self, name: &str, cmd: &str, timeout: Duration) -> Result<(Option<i32>, String, String)> {
        let mut argv: Vec<String> = vec!["netns".into(), "exec".into(), self.ctl.ns.clone()];
        argv.extend(self.ssh().split(' ').map(String::from));
        argv.push(name.into());
        argv.push(cmd.into());
        netns::output_within("ip", &argv, timeout)
    }

    /// Stops `name`'s sshd (SIGKILL to its process group); connections are refused from then on.
    pub fn stop_sshd(&mut self, name: &str) {
        if let Some(mut c) = self.sshd.remove(name) {
            netns::signal_group(c.id() as i32, libc::SIGCONT);
            netns::signal_group(c.id() as i32, libc::SIGKILL);
            let _ = c.wait();
        }
    }

    /// SIGSTOP (`frozen`) or SIGCONT to `name`'s listening sshd: frozen, the kernel still
    /// completes TCP handshakes into its backlog, and nothing answers the client.
    pub fn freeze_sshd(&self, name: &str, frozen: bool) -> Result<()> {
        let c = self.sshd.get(name).ok_or_else(|| Error::Usage(format!("sshd of {name} is not running")))?;
        netns::signal_group(c.id() as i32, if frozen { libc::SIGSTOP } else { libc::SIGCONT });
        Ok(())
    }

    /// `name`'s link up or down (down: its address stops answering, ARP included).
    pub fn link(&self, name: &str, up: bool) -> Result<()> {
        let h = self.host(name)?;
        run("ip", &["-n", &h.ns, "link", "set", "eth0", if up { "up" } else { "down" }]).map(|_| ())
    }

    /// Gives `name` a new host key and restarts its sshd; the run's known_hosts keeps the old one.
    pub fn rekey(&mut self, name: &str) -> Result<()> {
        let h = self.host(name)?.clone();
        self.stop_sshd(name);
        self.host_key(&h)?;
        self.sshd_start_unchecked(name)
    }

    /// Writes the run's known_hosts again from every host's current key (after `rekey`).
    pub fn trust_current_key(&mut self) -> Result<()> {
        let known: Vec<String> = self.hosts.iter().map(known_line).collect::<Result<_>>()?;
        crate::fsx::write_atomic(&self.known_hosts(), known.concat().as_bytes())
    }

    /// Starts sshd without asking it (its key is no longer the one known).
    fn sshd_start_unchecked(&mut self, name: &str) -> Result<()> {
        let h = self.spawn_sshd(name)?;
        // Listening is enough here: the handshake would fail on the key, as it must.
        let t0 = Instant::now();
        while !netns::listening(&h.ns, 22) {
            if t0.elapsed() > Duration::from_secs(10) {
                return Err(Error::External(format!("sshd on {name} does not listen after 10 s")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// Makes `dir` read-only (`ro`) or writable again as `name`'s sshd sees it: a read-only
    /// bind mount in that sshd's own mount namespace, so the file system, the other hosts and
    /// the brokers keep writing it. Root ignores file modes; a read-only mount it cannot.
    pub fn read_only(&self, name: &str, dir: &Path, ro: bool) -> Result<()> {
        let c = self.sshd.get(name).ok_or_else(|| Error::Usage(format!("sshd of {name} is not running")))?;
        let pid = c.id().to_string();
        let d = dir.display().to_string();
        if ro {
            run("nsenter", &["-t", &pid, "-m", "mount", "--bind", &d, &d])?;
            run("nsenter", &["-t", &pid, "-m", "mount", "-o", "remount,bind,ro", &d])?;
        } else {
            run("nsenter", &["-t", &pid, "-m", "umount", &d])?;
        }
        Ok(())
    }

    /// Every process in the run's namespaces killed, the namespaces deleted (links and bridge go
    /// with them), `/etc/netns/okp-<run>-*` and the run's directory removed. Idempotent.
    pub fn teardown(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        let names: Vec<String> = self.sshd.keys().cloned().collect();
        for n in names {
            self.stop_sshd(&n);
        }
        remove_run(self.run);
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// `host`'s known_hosts line: its name and address, its current host key.
fn known_line(h: &Host) -> Result<String> {
    let key = h.dir.join("ssh_host_ed25519_key.pub");
    let public = crate::fsx::read::text(&key, crate::fsx::read::MAX_KEY, "host key")?;
    let mut parts = public.split_whitespace();
    let (kind, b64) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    Ok(format!("{},{} {kind} {b64}\n", h.name, h.addr))
}

fn host(run: u8, dir: &Path, name: &str, octet: u8) -> Host {
    Host {
        name: name.to_string(),
        ns: format!("{}{name}", prefix(run)),
        addr: format!("{NET}.{run}.{octet}"),
        dir: dir.join(name),
    }
}

/// A run number no other run holds: its hub namespace made (the claim), its owner recorded
/// (this process, and its start time against a reused pid), its directory made.
fn claim() -> Result<(u8, PathBuf)> {
    std::fs::create_dir_all(OWNERS).map_err(|e| Error::io(format!("cannot create {OWNERS}"), e))?;
    let start = (std::process::id() % 250) as u8;
    for i in 0..250u16 {
        let run = ((start as u16 + i) % 250 + 1) as u8;
        let hub = format!("{}hub", prefix(run));
        if Command::new("ip").args(["netns", "add", &hub]).output().is_ok_and(|o| o.status.success()) {
            crate::fsx::write_atomic(
                &Path::new(OWNERS).join(run.to_string()),
                owner_line(std::process::id()).as_bytes(),
            )?;
            let dir = tempfile::Builder::new()
                .prefix(&format!("okp-hosts-{run}-"))
                .tempdir()
                .map_err(|e| Error::io("cannot create the run directory", e))?
                .keep();
            crate::fsx::write_atomic(
                &Path::new(OWNERS).join(format!("{run}.dir")),
                dir.display().to_string().as_bytes(),
            )?;
            return Ok((run, dir));
        }
    }
    Err(Error::External("no free run number: 250 runs of okp's test hosts exist (okp sweeps dead ones first)".into()))
}

/// `pid start-time` of a process (the start time tells a reused pid apart).
fn owner_line(pid: u32) -> String {
    format!("{pid} {}\n", start_time(pid).unwrap_or_default())
}

fn start_time(pid: u32) -> Option<String> {
    let stat =
        crate::fsx::read::read_optional_text(Path::new(&format!("/proc/{pid}/stat")), crate::fsx::read::MAX_SIDECAR)
            .ok()??;
    // Field 22, counted after the command name's closing parenthesis (it may hold spaces).
    stat.rsplit_once(')')?.1.split_whitespace().nth(19).map(String::from)
}

/// Whether the run's owner is alive (the same process that claimed it).
fn owner_alive(run: u8) -> bool {
    let Ok(Some(text)) =
        crate::fsx::read::read_optional_text(&Path::new(OWNERS).join(run.to_string()), crate::fsx::read::MAX_SIDECAR)
    else {
        return false;
    };
    let mut parts = text.split_whitespace();
    let (Some(pid), Some(t)) = (parts.next().and_then(|p| p.parse::<u32>().ok()), parts.next()) else { return false };
    start_time(pid).as_deref() == Some(t)
}

/// Removes run `run`: every process in its namespaces, the namespaces, its /etc/netns entries,
/// its directory and its owner record.
fn remove_run(run: u8) {
    let p = prefix(run);
    let names: Vec<String> = run_namespaces().into_iter().filter(|n| n.starts_with(&p)).collect();
    for ns in &names {
        netns::kill_all_in(ns);
    }
    for ns in &names {
        let _ = Command::new("ip").args(["netns", "del", ns]).output();
        let _ = std::fs::remove_dir_all(Path::new("/etc/netns").join(ns));
    }
    if let Ok(entries) = std::fs::read_dir("/etc/netns") {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&p) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir_file = Path::new(OWNERS).join(format!("{run}.dir"));
    if let Ok(Some(dir)) = crate::fsx::read::read_optional_text(&dir_file, crate::fsx::read::MAX_SIDECAR) {
        let dir = PathBuf::from(dir.trim());
        if dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("okp-hosts-{run}-"))) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let _ = std::fs::remove_file(dir_file);
    let _ = std::fs::remove_file(Path::new(OWNERS).join(run.to_string()));
}

/// Whether run `run` is gone: its directory `dir` and every namespace of it (after `teardown`).
pub fn run_gone(run: u8, dir: &Path) -> bool {
    !dir.exists() && !run_namespaces().iter().any(|n| n.starts_with(&prefix(run)))
}

/// The namespaces named like a run's (`okp-<run>-…`).
fn run_namespaces() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| run_of(n).is_some())
        .map(String::from)
        .collect()
}

/// The run number of a namespace named `okp-<run>-<name>`.
fn run_of(ns: &str) -> Option<u8> {
    let rest = ns.strip_prefix("okp-")?;
    let (num, name) = rest.split_once('-')?;
    (!name.is_empty()).then_some(())?;
    num.parse::<u8>().ok().filter(|r| *r >= 1)
}

/// Removes what killed runs left: every run whose owner is gone (its namespaces and their
/// processes, /etc/netns entries, directory). A live run is left alone. Returns the runs removed.
pub fn sweep() -> Vec<u8> {
    let mut runs: Vec<u8> = run_namespaces().iter().filter_map(|n| run_of(n)).collect();
    if let Ok(entries) = std::fs::read_dir(OWNERS) {
        runs.extend(entries.flatten().filter_map(|e| e.file_name().to_string_lossy().parse::<u8>().ok()));
    }
    if let Ok(entries) = std::fs::read_dir("/etc/netns") {
        runs.extend(entries.flatten().filter_map(|e| run_of(&e.file_name().to_string_lossy())));
    }
    runs.sort_unstable();
    runs.dedup();
    runs.retain(|r| !owner_alive(*r));
    for r in &runs {
        remove_run(*r);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_numbers_come_only_from_names_of_okps_shape() {
        assert_eq!(run_of("okp-7-b1"), Some(7));
        assert_eq!(run_of("okp-250-hub"), Some(250));
        for other in ["okp-0-b1", "okp-7-", "okp-x-b1", "okp7-b1", "docker-7-b1", "okp-300-b1", "okp-probe-123"] {
            assert_eq!(run_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_process_start_time_is_read_past_a_name_with_spaces() {
        let me = start_time(std::process::id()).expect("this process has a start time");
        assert!(me.parse::<u64>().is_ok(), "{me}");
        assert_eq!(owner_line(std::process::id()), format!("{} {me}\n", std::process::id()));
    }
}
