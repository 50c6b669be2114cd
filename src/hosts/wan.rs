//! Regions: a run's hosts split into regions (two or three), every connection between regions
//! crossing a WAN link with a round-trip time (Toxiproxy's latency toxic, a userspace delay) and
//! a bandwidth (the kernel's token-bucket shaper, `tc tbf`). Addresses stay what they are: a
//! broker in region B reaches b1 at b1's own address, as in production; only the path differs.
//!
//! Each region has its own bridge in the hub and a gateway namespace `okp-<run>-wan<r>` on it.
//! The gateway of region r holds, on its bridge port, the address of every host of the other
//! regions (so region r's hosts reach them only through it: the bridges are not joined) and
//! runs Toxiproxy, one proxy per (foreign host, port), listening on that address and forwarding
//! to the host's transit address `10.214.<run>.<octet>` with the link's delay, half each way.
//! Gateways are joined pairwise by a veth (the link); the host's own gateway holds its transit
//! address and forwards it, undelayed, to the host. Each link end's egress goes through `tbf` at
//! the link's rate, so what crosses a link is shaped once in each direction.
//!
//! What it models: a fixed delay per direction on every byte, a bottleneck of fixed rate with a
//! queue (tbf's `latency` bounds it). What it does not: jitter, loss (no netem here), asymmetric
//! routes, and TCP's window over a long RTT (each TCP connection ends at a gateway; the delay is
//! in the proxy, so a single stream is not window-limited as it would be across a real ocean).
//!
//! The gateways and their processes are namespaces of the run: `Topology::teardown` and `sweep`
//! remove them with the rest.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{netns, run, Host, Topology, NET};
use crate::error::{Error, Result};

/// The first two octets of the transit addresses (inside the gateways only).
pub const TRANSIT: &str = "10.214";
/// A port every host's proxies forward too: okp's link probe (`measure`) listens on it.
pub const PROBE_PORT: u16 = 7070;
/// The ports proxied between regions: ssh, ZooKeeper, Kafka's broker and controller listeners,
/// the link probe.
pub const PORTS: [u16; 5] = [22, 2181, 9092, 9093, PROBE_PORT];
/// Toxiproxy's API port, on each gateway's loopback.
const API_PORT: u16 = 8474;

/// A WAN link: its round-trip time and bandwidth (each direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    pub rtt_ms: u32,
    pub rate_kbit: u64,
}

impl Link {
    /// `--wan-rtt` (`80ms`, `0.1s`) and `--wan-bandwidth` (`50mbit`, `800kbit`, `1gbit`).
    pub fn parse(rtt: &str, bandwidth: &str) -> Result<Link> {
        let rtt_ms = parse_duration_ms(rtt)
            .filter(|ms| (1..=2000).contains(ms))
            .ok_or_else(|| Error::Usage(format!("--wan-rtt {rtt:?}: a time from 1ms to 2000ms (`80ms`, `0.1s`)")))?;
        let rate_kbit = parse_rate_kbit(bandwidth).filter(|k| (64..=10_000_000).contains(k)).ok_or_else(|| {
            Error::Usage(format!("--wan-bandwidth {bandwidth:?}: a rate from 64kbit to 10gbit (`50mbit`, `800kbit`)"))
        })?;
        Ok(Link { rtt_ms: rtt_ms as u32, rate_kbit })
    }

    pub fn show(&self) -> String {
        format!("{} ms RTT, {}", self.rtt_ms, show_rate(self.rate_kbit))
    }
}

fn parse_duration_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1000.0)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * scale).round() as u64)
}

fn parse_rate_kbit(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    let (num, scale) = [("gbit", 1_000_000.0), ("mbit", 1000.0), ("kbit", 1.0)]
        .iter()
        .find_map(|(suffix, k)| s.strip_suffix(suffix).map(|n| (n.to_string(), *k)))?;
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then(|| (v * scale).round() as u64)
}

pub fn show_rate(kbit: u64) -> String {
    if kbit >= 1000 && kbit.is_multiple_of(1000) {
        format!("{} Mbit/s", kbit / 1000)
    } else {
        format!("{kbit} kbit/s")
    }
}

/// Which hosts are in which region, and the link between any two regions.
#[derive(Debug, Clone)]
pub struct Regions {
    /// The regions' names (`a`, `b`, `c`): the operator host is in the first.
    pub names: Vec<String>,
    /// Host name → region index.
    pub of: BTreeMap<String, usize>,
    pub link: Link,
    /// Toxiproxy's server to run (None: `toxiproxy()`'s).
    pub toxiproxy: Option<std::path::PathBuf>,
}

impl Regions {
    pub fn region_of(&self, host: &str) -> usize {
        if host == "ctl" {
            0
        } else {
            self.of.get(host).copied().unwrap_or(0)
        }
    }
}

fn gateway(run: u8, r: usize) -> String {
    format!("{}wan{r}", super::prefix(run))
}

fn octet(h: &Host) -> &str {
    h.addr.rsplit('.').next().unwrap_or("0")
}

/// The link ends of regions r < s: (address in r's gateway, address in s's gateway).
fn link_ends(run: u8, pair: usize) -> (String, String) {
    (format!("{TRANSIT}.{run}.{}", 240 + 2 * pair), format!("{TRANSIT}.{run}.{}", 241 + 2 * pair))
}

/// The pairs of regions, in order, each with its index (its link's).
fn pairs(n: usize) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    for r in 0..n {
        for s in r + 1..n {
            v.push((v.len(), r, s));
        }
    }
    v
}

/// The gateways, links and proxies of `t`'s regions (its hosts already on their regions'
/// bridges). Called by `Topology::build`.
pub(super) fn build(t: &Topology, regions: &Regions, hub: &str) -> Result<()> {
    let all: Vec<Host> = std::iter::once(t.ctl.clone()).chain(t.hosts.iter().cloned()).collect();
    let n = regions.names.len();
    let tox = match &regions.toxiproxy {
        Some(p) => p.clone(),
        None => toxiproxy()?,
    };
    for r in 0..n {
        let gw = gateway(t.run, r);
        run("ip", &["netns", "add", &gw])?;
        run("ip", &["-n", &gw, "link", "set", "lo", "up"])?;
        let port = format!("w{r}");
        run("ip", &["link", "add", &port, "netns", hub, "type", "veth", "peer", "name", "lan", "netns", &gw])?;
        run("ip", &["-n", hub, "link", "set", &port, "master", &format!("br{r}"), "up"])?;
        run("ip", &["-n", &gw, "link", "set", "lan", "up"])?;
        // Its own region's hosts on its bridge; every other region's host addresses are its own.
        run("ip", &["-n", &gw, "route", "add", &format!("{NET}.{}.0/24", t.run), "dev", "lan"])?;
        for h in all.iter().filter(|h| regions.region_of(&h.name) != r) {
            run("ip", &["-n", &gw, "addr", "add", &format!("{}/32", h.addr), "dev", "lan"])?;
        }
        // The transit addresses of its own region's hosts.
        for h in all.iter().filter(|h| regions.region_of(&h.name) == r) {
            run("ip", &["-n", &gw, "addr", "add", &format!("{TRANSIT}.{}.{}/32", t.run, octet(h)), "dev", "lo"])?;
        }
    }
    let burst = (regions.link.rate_kbit * 1000 / 8 / 100).max(16 * 1024);
    for (k, r, s) in pairs(n) {
        let (gr, gs) = (gateway(t.run, r), gateway(t.run, s));
        let (er, es) = link_ends(t.run, k);
        let (ir, is) = (format!("t{s}"), format!("t{r}"));
        run("ip", &["-n", &gr, "link", "add", &ir, "type", "veth", "peer", "name", &is, "netns", &gs])?;
        for (gw, dev, mine, peer, other) in [(&gr, &ir, &er, &es, s), (&gs, &is, &es, &er, r)] {
            run("ip", &["-n", gw, "addr", "add", &format!("{mine}/31"), "dev", dev])?;
            run("ip", &["-n", gw, "link", "set", dev, "up"])?;
            for h in all.iter().filter(|h| regions.region_of(&h.name) == other) {
                run(
                    "ip",
                    &[
                        "-n",
                        gw,
                        "route",
                        "add",
                        &format!("{TRANSIT}.{}.{}/32", t.run, octet(h)),
                        "via",
                        peer,
                        "dev",
                        dev,
                    ],
                )?;
            }
            run(
                "tc",
                &[
                    "-n",
                    gw,
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "root",
                    "tbf",
                    "rate",
                    &format!("{}kbit", regions.link.rate_kbit),
                    "burst",
                    &burst.to_string(),
                    "latency",
                    "200ms",
                ],
            )?;
        }
    }
    for r in 0..n {
        start_proxies(t, regions, r, &all, &tox)?;
    }
    Ok(())
}

/// Toxiproxy's server as scripts/setup.sh builds it, else on PATH.
pub fn toxiproxy() -> Result<std::path::PathBuf> {
    let built = std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share/okp/bin/toxiproxy-server"));
    let on_path = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("toxiproxy-server")).find(|p| p.is_file()));
    built.filter(|p| p.is_file()).or(on_path).ok_or_else(|| {
        Error::External(
            "the WAN link needs Toxiproxy's server: scripts/setup.sh builds it into ~/.local/share/okp/bin/toxiproxy-server"
                .into(),
        )
    })
}

/// Starts region r's Toxiproxy: a delayed proxy for every (foreign host, port), an undelayed
/// one from every own host's transit address to the host.
fn start_proxies(t: &Topology, regions: &Regions, r: usize, all: &[Host], tox: &Path) -> Result<()> {
    let gw = gateway(t.run, r);
    let mut proxies = Vec::new();
    for h in all {
        let home = regions.region_of(&h.name);
        for p in PORTS {
            if home == r {
                proxies.push(serde_json::json!({
                    "name": format!("in-{}-{p}", h.name),
                    "listen": format!("{TRANSIT}.{}.{}:{p}", t.run, octet(h)),
                    "upstream": format!("{}:{p}", h.addr),
                    "enabled": true,
                }));
            } else {
                proxies.push(serde_json::json!({
                    "name": format!("to-{}-{p}", h.name),
                    "listen": format!("{}:{p}", h.addr),
                    "upstream": format!("{TRANSIT}.{}.{}:{p}", t.run, octet(h)),
                    "enabled": true,
                }));
            }
        }
    }
    let dir = t.dir.join(format!("wan{r}"));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let config = dir.join("proxies.json");
    crate::fsx::write_atomic(&config, serde_json::to_string_pretty(&proxies).unwrap_or_default().as_bytes())?;
    let log =
        std::fs::File::create(dir.join("toxiproxy.log")).map_err(|e| Error::io("cannot create toxiproxy.log", e))?;
    let err = log.try_clone().map_err(|e| Error::io("cannot duplicate a log handle", e))?;
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("ip")
        .args(["netns", "exec", &gw, "env", "LOG_LEVEL=warn"])
        .arg(tox)
        .args(["-host", "127.0.0.1", "-port", &API_PORT.to_string(), "-config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::External(format!("cannot start Toxiproxy in {gw} ({e})")))?;
    let half = regions.link.rtt_ms / 2;
    let other = regions.link.rtt_ms - half;
    netns::in_netns(&gw, || -> Result<()> {
        let t0 = Instant::now();
        loop {
            let log = || crate::fsx::read::lossy_text(&dir.join("toxiproxy.log"), crate::fsx::read::MAX_LOG);
            if let Ok(Some(status)) = child.try_wait() {
                return Err(Error::External(format!(
                    "Toxiproxy ({}) in {gw} ended ({status}) before serving its proxies; its log:\n{}",
                    tox.display(),
                    log()
                )));
            }
            match api(Method::Get, "/proxies", None) {
                Ok((200, body)) if proxies_up(&body) == proxies.len() => break,
                _ if t0.elapsed() > Duration::from_secs(20) => {
                    return Err(Error::External(format!(
                        "Toxiproxy in {gw} did not serve its {} proxies within 20 s; its log:\n{}",
                        proxies.len(),
                        log()
                    )))
                }
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        for p in &proxies {
            let name = p["name"].as_str().unwrap_or_default();
            if !name.starts_with("to-") {
                continue;
            }
            for (stream, ms) in [("upstream", half), ("downstream", other)] {
                let toxic = serde_json::json!({
                    "name": format!("delay-{stream}"),
                    "type": "latency",
                    "stream": stream,
                    "toxicity": 1.0,
                    "attributes": {"latency": ms, "jitter": 0},
                });
                let (code, body) = api(Method::Post, &format!("/proxies/{name}/toxics"), Some(&toxic.to_string()))?;
                if code != 200 {
                    return Err(Error::External(format!(
                        "Toxiproxy in {gw} refused a toxic on {name} ({code}): {body}"
                    )));
                }
            }
        }
        Ok(())
    })?
}

fn proxies_up(body: &str) -> usize {
    serde_json::from_str::<serde_json::Value>(body).ok().and_then(|v| v.as_object().map(|m| m.len())).unwrap_or(0)
}

enum Method {
    Get,
    Post,
}

/// One request to the Toxiproxy API on this thread's namespace's loopback: (status, body).
fn api(method: Method, path: &str, body: Option<&str>) -> Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], API_PORT).into(), Duration::from_secs(2))
        .map_err(|e| Error::io("cannot reach Toxiproxy's API", e))?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let body = body.unwrap_or("");
    let verb = match method {
        Method::Get => "GET",
        Method::Post => "POST",
    };
    let req = format!(
        "{verb} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| Error::io("cannot write to Toxiproxy's API", e))?;
    let mut out = Vec::new();
    s.take(1 << 22).read_to_end(&mut out).map_err(|e| Error::io("cannot read Toxiproxy's answer", e))?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((code, body))
}

/// What okp measured of a link: round trips and throughput each way, from `from` to `to`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    pub from: String,
    pub to: String,
    /// Round trips of one byte each way, ms: min, median, max of `rtt_samples`.
    pub rtt_ms: [f64; 3],
    pub rtt_samples: usize,
    /// Bytes sent `from` → `to` and `to` → `from`, and what that took, as Mbit/s.
    pub upload_mbit: f64,
    pub download_mbit: f64,
    pub bytes_each_way: u64,
}

impl Measured {
    pub fn show(&self) -> String {
        format!(
            "{} → {}: RTT min {:.1} / median {:.1} / max {:.1} ms over {} round trips; {:.1} Mbit/s {}→{}, {:.1} Mbit/s {}→{} ({} bytes each)",
            self.from,
            self.to,
            self.rtt_ms[0],
            self.rtt_ms[1],
            self.rtt_ms[2],
            self.rtt_samples,
            self.upload_mbit,
            self.from,
            self.to,
            self.download_mbit,
            self.to,
            self.from,
            self.bytes_each_way
        )
    }
}

/// `measure` with one second of `link`'s rate each way (at least 256 KiB, at most 16 MiB).
pub fn measure_link(from: &Host, to: &Host, link: Link) -> Result<Measured> {
    measure(from, to, (link.rate_kbit * 1000 / 8).clamp(256 << 10, 16 << 20))
}

/// Measures the path from host `from` to host `to` (any two hosts; across regions it crosses
/// the link): a server on `to`'s `PROBE_PORT`, a client in `from`'s namespace. 20 round trips
/// of one byte, then `bytes` each way.
pub fn measure(from: &Host, to: &Host, bytes: u64) -> Result<Measured> {
    let listener = netns::in_netns(&to.ns, || TcpListener::bind((to.addr.as_str(), PROBE_PORT)))?
        .map_err(|e| Error::io(format!("cannot listen on {}:{PROBE_PORT}", to.addr), e))?;
    let server = std::thread::spawn(move || serve_probe(listener));
    let addr = format!("{}:{PROBE_PORT}", to.addr);
    let stream = netns::in_netns(&from.ns, || TcpStream::connect(&addr))?
        .map_err(|e| Error::io(format!("cannot connect from {} to {addr}", from.name), e));
    let out = stream.and_then(|s| probe(s, bytes));
    let _ = server.join();
    let (rtts, up, down) = out?;
    let mut sorted = rtts.clone();
    sorted.sort_by(f64::total_cmp);
    let rtt_ms = [sorted[0], sorted[sorted.len() / 2], sorted[sorted.len() - 1]];
    let mbit = |secs: f64| (bytes as f64 * 8.0 / 1e6) / secs.max(1e-6);
    // A transfer's time less the one round trip its request and final answer take.
    let base = rtt_ms[0] / 1000.0;
    Ok(Measured {
        from: from.name.clone(),
        to: to.name.clone(),
        rtt_ms,
        rtt_samples: rtts.len(),
        upload_mbit: mbit(up - base),
        download_mbit: mbit(down - base),
        bytes_each_way: bytes,
    })
}

const PINGS: usize = 20;

fn io(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(format!("link probe: {what}"), e)
}

/// The client: round trips (ms), upload and download times (s).
fn probe(mut s: TcpStream, bytes: u64) -> Result<(Vec<f64>, f64, f64)> {
    s.set_nodelay(true).ok();
    s.set_read_timeout(Some(Duration::from_secs(120))).ok();
    let mut one = [0u8; 1];
    let mut rtts = Vec::new();
    for _ in 0..PINGS {
        let t0 = Instant::now();
        s.write_all(b"p").map_err(io("ping"))?;
        s.read_exact(&mut one).map_err(io("pong"))?;
        rtts.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    let chunk = vec![0x55u8; 64 * 1024];
    let t0 = Instant::now();
    s.write_all(b"u").map_err(io("upload"))?;
    s.write_all(&bytes.to_be_bytes()).map_err(io("upload"))?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n]).map_err(io("upload"))?;
        left -= n as u64;
    }
    s.read_exact(&mut one).map_err(io("upload's answer"))?;
    let up = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    s.write_all(b"d").map_err(io("download"))?;
    s.write_all(&bytes.to_be_bytes()).map_err(io("download"))?;
    drain(&mut s, bytes).map_err(io("download"))?;
    let down = t0.elapsed().as_secs_f64();
    Ok((rtts, up, down))
}

fn drain(s: &mut TcpStream, bytes: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = s.read(&mut buf[..left.min(64 * 1024) as usize])?;
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the probe's peer closed"));
        }
        left -= n as u64;
    }
    Ok(())
}

/// The server: one connection, then it ends (or after 30 s without one).
fn serve_probe(listener: TcpListener) {
    listener.set_nonblocking(true).ok();
    let t0 = Instant::now();
    let mut s = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(_) if t0.elapsed() < Duration::from_secs(30) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => return,
        }
    };
    s.set_nonblocking(false).ok();
    s.set_nodelay(true).ok();
    s.set_read_timeout(Some(Duration::from_secs(120))).ok();
    let mut cmd = [0u8; 1];
    let mut len = [0u8; 8];
    let chunk = vec![0xaau8; 64 * 1024];
    while s.read_exact(&mut cmd).is_ok() {
        let ok = match cmd[0] {
            b'p' => s.write_all(b"p").is_ok(),
            b'u' => {
                s.read_exact(&mut len).is_ok()
                    && drain(&mut s, u64::from_be_bytes(len)).is_ok()
                    && s.write_all(b"k").is_ok()
            }
            b'd' => {
                if s.read_exact(&mut len).is_err() {
                    break;
                }
                let mut left = u64::from_be_bytes(len);
                let mut ok = true;
                while left > 0 && ok {
                    let n = left.min(chunk.len() as u64) as usize;
                    ok = s.write_all(&chunk[..n]).is_ok();
                    left -= n as u64;
                }
                ok
            }
            _ => false,
        };
        if !ok {
            break;
        }
    }
}

/// The bytes each link end has sent since the run began (tbf's counters): (gateway of the
/// sending region, link end device) → bytes.
pub fn link_bytes(run_no: u8, regions: usize) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (_, r, s) in pairs(regions) {
        for (from, to) in [(r, s), (s, r)] {
            let gw = gateway(run_no, from);
            let dev = format!("t{to}");
            let text = Command::new("tc")
                .args(["-n", &gw, "-s", "qdisc", "show", "dev", &dev])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            if let Some(b) = sent_bytes(&text) {
                out.insert(format!("{from}->{to}"), b);
            }
        }
    }
    out
}

/// `Sent N bytes` of `tc -s qdisc show`.
fn sent_bytes(text: &str) -> Option<u64> {
    let rest = text.split_once("Sent ")?.1;
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_flags_parse_and_refuse() {
        assert_eq!(Link::parse("80ms", "50mbit").unwrap(), Link { rtt_ms: 80, rate_kbit: 50_000 });
        assert_eq!(Link::parse("0.1s", "800kbit").unwrap(), Link { rtt_ms: 100, rate_kbit: 800 });
        assert_eq!(Link::parse(" 20ms ", "1Gbit").unwrap(), Link { rtt_ms: 20, rate_kbit: 1_000_000 });
        for (rtt, bw) in [
            ("80", "50mbit"),
            ("0ms", "50mbit"),
            ("3s", "50mbit"),
            ("-5ms", "50mbit"),
            ("NaNms", "50mbit"),
            ("80ms", "50"),
            ("80ms", "10kbit"),
            ("80ms", "50mbps"),
            ("80ms", "infmbit"),
        ] {
            let e = Link::parse(rtt, bw).unwrap_err().to_string();
            assert!(e.contains("--wan-"), "{rtt} {bw}: {e}");
        }
    }

    #[test]
    fn tc_counters_are_read() {
        let text = "qdisc tbf 8001: root refcnt 2 rate 50Mbit burst 62500b lat 200ms \n Sent 123456 bytes 99 pkt (dropped 0, overlimits 3 requeues 0)\n";
        assert_eq!(sent_bytes(text), Some(123456));
        assert_eq!(sent_bytes("nothing"), None);
    }

    #[test]
    fn every_pair_of_regions_has_one_link_with_two_ends() {
        assert_eq!(pairs(2), vec![(0, 0, 1)]);
        assert_eq!(pairs(3), vec![(0, 0, 1), (1, 0, 2), (2, 1, 2)]);
        assert_eq!(link_ends(7, 2), ("10.214.7.244".to_string(), "10.214.7.245".to_string()));
    }
}
