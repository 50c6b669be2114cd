//! A Prometheus server (Debian's package) scraping a cluster's JMX exporters on loopback, with
//! node_exporter serving `okp observers status --format prometheus` written every few seconds
//! into its textfile directory; the HTTP API reads (instant queries, the alerts); a poller that
//! writes down every alert's state change with its time, so a scenario can hold the alerts'
//! timeline against its own.
//!
//! Everything listens on 127.0.0.1 only, runs in its own process group (given to the caller's
//! hooks: the cluster harness registers it, so Ctrl-C stops it with the nodes) and is stopped
//! when `Prom` is dropped.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, Result};

pub const PROMETHEUS: &str = "/usr/bin/prometheus";
pub const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";

/// Why Prometheus cannot run here, if it cannot (scripts/setup.sh installs Debian's packages).
pub fn unavailable() -> Option<String> {
    [PROMETHEUS, NODE_EXPORTER].iter().find(|p| !Path::new(p).is_file()).map(|p| {
        format!(
            "{p} is missing (Debian packages prometheus and prometheus-node-exporter; scripts/setup.sh installs them)"
        )
    })
}

/// One scrape target: a node's exporter.
#[derive(Debug, Clone)]
pub struct Target {
    pub node: String,
    pub role: &'static str,
    pub port: u16,
}

/// `okp observers status --format prometheus`, run every `every` into node_exporter's textfile
/// directory: the okp binary and its arguments after `observers status`.
pub struct StatusJob {
    pub okp: PathBuf,
    pub args: Vec<String>,
    pub every: Duration,
}

/// One change of an alert's state, as the poller saw it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Transition {
    /// Seconds since the server started.
    pub at: f64,
    pub alert: String,
    /// The alert's labels but alertname and severity.
    pub labels: BTreeMap<String, String>,
    /// pending, firing, or inactive (gone from the list).
    pub state: String,
}

impl Transition {
    /// The labels as `k=v` joined by commas.
    pub fn shown(&self) -> String {
        self.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    }
}

pub struct Prom {
    pub port: u16,
    pub dir: PathBuf,
    pub started: Instant,
    /// `started` as unix time (the API's clock).
    pub started_unix: f64,
    children: Vec<Child>,
    stop: Arc<AtomicBool>,
    /// The status job's arguments now; None: the job is paused (its file left as it is).
    status_args: Arc<Mutex<Option<Vec<String>>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    timeline: Arc<Mutex<Vec<Transition>>>,
    hooks: Hooks,
}

/// What the caller does with each process started and stopped here (the cluster harness
/// registers them, so Ctrl-C stops them with the nodes).
#[derive(Clone, Copy)]
pub struct Hooks {
    pub started: fn(i32),
    pub stopped: fn(i32),
}

fn spawn(cmd: &mut Command, log: &Path, what: &str, hooks: Hooks) -> Result<Child> {
    let out = crate::fsx::open_append(log).map_err(|e| Error::io(format!("cannot open {}", log.display()), e))?;
    let err = out.try_clone().map_err(|e| Error::io("cannot duplicate a log handle", e))?;
    use std::os::unix::process::CommandExt;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::External(format!("cannot start {what} ({e})")))?;
    (hooks.started)(child.id() as i32);
    Ok(child)
}

/// The server's configuration: every target in job `kafka` with its `node` and `role` labels,
/// and node_exporter in job `okp-status`.
pub fn config(targets: &[Target], status_port: Option<u16>, scrape_s: u64) -> String {
    let mut s = format!(
        "# okp: written for one run; every target on 127.0.0.1.\nglobal:\n  scrape_interval: {scrape_s}s\n  scrape_timeout: {scrape_s}s\n  evaluation_interval: {scrape_s}s\nrule_files:\n  - alerts.yml\nscrape_configs:\n  - job_name: kafka\n    static_configs:\n"
    );
    for t in targets {
        s.push_str(&format!(
            "      - targets: ['127.0.0.1:{}']\n        labels: {{node: '{}', role: '{}'}}\n",
            t.port, t.node, t.role
        ));
    }
    if let Some(p) = status_port {
        s.push_str(&format!("  - job_name: okp-status\n    static_configs:\n      - targets: ['127.0.0.1:{p}']\n"));
    }
    s
}

impl Prom {
    /// Starts Prometheus on 127.0.0.1:`port` in `dir` (config, rules, data, log) scraping
    /// `targets` every `scrape_s` seconds with `rules`; with `status`, node_exporter on
    /// `status_port` and the status job. Returns once the server answers ready.
    pub fn start(
        dir: &Path,
        port: u16,
        targets: &[Target],
        rules: &str,
        scrape_s: u64,
        status: Option<(u16, StatusJob)>,
        hooks: Hooks,
    ) -> Result<Prom> {
        if let Some(why) = unavailable() {
            return Err(Error::External(why));
        }
        crate::fsx::create_dir(dir)?;
        let textfiles = dir.join("textfile");
        crate::fsx::create_dir(&textfiles)?;
        let cfg = config(targets, status.as_ref().map(|s| s.0), scrape_s);
        crate::fsx::write_atomic(&dir.join("prometheus.yml"), cfg.as_bytes())?;
        crate::fsx::write_atomic(&dir.join("alerts.yml"), rules.as_bytes())?;
        let mut p = Prom {
            port,
            dir: dir.to_path_buf(),
            started: Instant::now(),
            started_unix: unix_now(),
            children: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            status_args: Arc::new(Mutex::new(status.as_ref().map(|s| s.1.args.clone()))),
            threads: Vec::new(),
            timeline: Arc::new(Mutex::new(Vec::new())),
            hooks,
        };
        if let Some((ne_port, job)) = status {
            // The first textfile before node_exporter's first scrape.
            write_status(&job.okp, &job.args, &textfiles);
            p.children.push(spawn(
                Command::new(NODE_EXPORTER).args([
                    format!("--web.listen-address=127.0.0.1:{ne_port}"),
                    "--collector.disable-defaults".into(),
                    "--collector.textfile".into(),
                    format!("--collector.textfile.directory={}", textfiles.display()),
                ]),
                &dir.join("node-exporter.log"),
                "prometheus-node-exporter",
                hooks,
            )?);
            let (stop, args) = (p.stop.clone(), p.status_args.clone());
            p.threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let now = args.lock().ok().and_then(|a| a.clone());
                    if let Some(a) = now {
                        write_status(&job.okp, &a, &textfiles);
                    }
                    while t0.elapsed() < job.every && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }));
        }
        p.children.push(spawn(
            Command::new(PROMETHEUS).current_dir(dir).args([
                format!("--config.file={}", dir.join("prometheus.yml").display()),
                format!("--storage.tsdb.path={}", dir.join("data").display()),
                format!("--web.listen-address=127.0.0.1:{port}"),
                "--storage.tsdb.retention.time=1d".into(),
            ]),
            &dir.join("prometheus.log"),
            "prometheus",
            hooks,
        )?);
        let t0 = Instant::now();
        loop {
            if get(port, "/-/ready").is_ok() {
                break;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                return Err(Error::External(format!(
                    "Prometheus on 127.0.0.1:{port} not ready after 30 s (its log: {})",
                    dir.join("prometheus.log").display()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        p.started = Instant::now();
        p.started_unix = unix_now();
        let (stop, timeline, started) = (p.stop.clone(), p.timeline.clone(), p.started);
        p.threads.push(std::thread::spawn(move || poll_alerts(port, started, &stop, &timeline)));
        Ok(p)
    }

    /// Gives the status job other arguments from its next run on, or pauses it (None).
    pub fn set_status_args(&self, args: Option<Vec<String>>) {
        if let Ok(mut a) = self.status_args.lock() {
            *a = args;
        }
    }

    /// Every state change of every alert so far.
    pub fn timeline(&self) -> Vec<Transition> {
        self.timeline.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Seconds since the server started.
    pub fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The API's answer to `path_query` (its `data`), refused unless its status is success.
    fn api(&self, path_query: &str, what: &str) -> Result<serde_json::Value> {
        let body = get(self.port, path_query)?;
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| Error::External(format!("Prometheus answered {what}: {e}")))?;
        if v["status"] != "success" {
            return Err(Error::External(format!("Prometheus refused {what}: {}", v["error"])));
        }
        Ok(v)
    }

    /// A range query from `from` to `to` (seconds since the server started) every `step_s`:
    /// each series' labels (its name as `__name__`) and its values, None where it had none.
    #[allow(clippy::type_complexity)]
    pub fn query_range(
        &self,
        expr: &str,
        from: f64,
        to: f64,
        step_s: u64,
    ) -> Result<Vec<(BTreeMap<String, String>, Vec<Option<f64>>)>> {
        let (start, end) = ((self.started_unix + from).floor(), (self.started_unix + to).floor());
        let v = self
            .api(&format!("/api/v1/query_range?query={}&start={start}&end={end}&step={step_s}", encode(expr)), expr)?;
        let n = ((end - start) / step_s as f64) as usize + 1;
        let mut out = Vec::new();
        for r in v["data"]["result"].as_array().cloned().unwrap_or_default() {
            let labels: BTreeMap<String, String> = labels(&r["metric"]);
            let mut values = vec![None; n];
            for pair in r["values"].as_array().cloned().unwrap_or_default() {
                let t = pair[0].as_f64().unwrap_or(0.0);
                let i = ((t - start) / step_s as f64).round() as usize;
                if i < n {
                    values[i] = pair[1].as_str().and_then(|s| s.parse::<f64>().ok());
                }
            }
            out.push((labels, values));
        }
        Ok(out)
    }

    /// An instant query: each series' labels and value.
    pub fn query(&self, expr: &str) -> Result<Vec<(BTreeMap<String, String>, f64)>> {
        let v = self.api(&format!("/api/v1/query?query={}", encode(expr)), expr)?;
        let mut out = Vec::new();
        for r in v["data"]["result"].as_array().cloned().unwrap_or_default() {
            let labels = labels(&r["metric"]);
            let value = r["value"][1].as_str().and_then(|s| s.parse::<f64>().ok()).unwrap_or(f64::NAN);
            out.push((labels, value));
        }
        Ok(out)
    }

    /// Waits until every target of job `job` is up (one scrape each succeeded).
    pub fn wait_targets_up(&self, job: &str, n: usize, timeout: Duration) -> Result<()> {
        let t0 = Instant::now();
        loop {
            let up = self.query(&format!("up{{job=\"{job}\"}} == 1")).map(|r| r.len()).unwrap_or(0);
            if up >= n {
                return Ok(());
            }
            if t0.elapsed() > timeout {
                return Err(Error::External(format!(
                    "{up} of {n} targets of job {job} up after {} s (Prometheus's targets: http://127.0.0.1:{}/targets)",
                    timeout.as_secs(),
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prom {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for c in &mut self.children {
            let pid = c.id() as i32;
            unsafe {
                libc::kill(-pid, libc::SIGTERM);
            }
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            if matches!(c.try_wait(), Ok(None)) {
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
                let _ = c.wait();
            }
            (self.hooks.stopped)(pid);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One run of the status job, its stdout written atomically as `okp.prom` (node_exporter reads
/// only `*.prom`; the temporary file has another suffix). A run that printed nothing leaves the
/// last file; its stderr goes to status.log.
fn write_status(okp: &Path, args: &[String], dir: &Path) {
    let out = Command::new(okp).arg("observers").arg("status").args(args).stdin(Stdio::null()).output();
    let log = dir.parent().unwrap_or(dir).join("status.log");
    if let Ok(o) = out {
        if let Ok(mut f) = crate::fsx::open_append(&log) {
            let _ = f.write_all(&o.stderr);
        }
        if !o.stdout.is_empty() {
            let _ = crate::fsx::write_atomic(&dir.join("okp.prom"), &o.stdout);
        }
    }
}

fn poll_alerts(port: u16, started: Instant, stop: &AtomicBool, timeline: &Mutex<Vec<Transition>>) {
    type Key = (String, BTreeMap<String, String>);
    let mut now: BTreeMap<Key, String> = BTreeMap::new();
    while !stop.load(Ordering::Relaxed) {
        if let Ok(seen) = alerts(port) {
            let at = started.elapsed().as_secs_f64();
            let mut changes = Vec::new();
            for (k, state) in &seen {
                if now.get(k) != Some(state) {
                    changes.push(Transition { at, alert: k.0.clone(), labels: k.1.clone(), state: state.clone() });
                }
            }
            for k in now.keys() {
                if !seen.contains_key(k) {
                    changes.push(Transition { at, alert: k.0.clone(), labels: k.1.clone(), state: "inactive".into() });
                }
            }
            if let Ok(mut t) = timeline.lock() {
                t.extend(changes);
            }
            now = seen;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The alerts Prometheus holds now: (name, labels but alertname and severity) → state.
#[allow(clippy::type_complexity)]
fn alerts(port: u16) -> Result<BTreeMap<(String, BTreeMap<String, String>), String>> {
    let body = get(port, "/api/v1/alerts")?;
    let v: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| Error::External(format!("/api/v1/alerts: {e}")))?;
    let mut out = BTreeMap::new();
    for a in v["data"]["alerts"].as_array().cloned().unwrap_or_default() {
        let mut rest = labels(&a["labels"]);
        let name = rest.remove("alertname").unwrap_or_default();
        rest.remove("severity");
        out.insert((name, rest), a["state"].as_str().unwrap_or("").to_string());
    }
    Ok(out)
}

/// A JSON object of label names to values (the API's `metric`, an alert's `labels`) as a map.
fn labels(v: &serde_json::Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

/// `s` percent-encoded for a query string (everything but the unreserved characters).
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET `path` from 127.0.0.1:`port` (HTTP/1.0: the server closes, no chunking); the body of a
/// 200 answer, an error naming the status otherwise.
pub fn get(port: u16, path: &str) -> Result<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let io = |e: std::io::Error| Error::External(format!("GET http://127.0.0.1:{port}{path}: {e}"));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(10))).map_err(io)?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes()).map_err(io)?;
    let mut raw = Vec::new();
    s.take(64 << 20).read_to_end(&mut raw).map_err(io)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(Error::External(format!("GET http://127.0.0.1:{port}{path}: {status}")));
    }
    Ok(body.to_string())
}

/// Unix time now, in seconds.
pub fn unix_now() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_percent_encoded() {
        assert_eq!(encode("up{job=\"kafka\"} == 1"), "up%7Bjob%3D%22kafka%22%7D%20%3D%3D%201");
    }

    #[test]
    fn the_config_names_every_target_with_its_labels() {
        let c = config(&[Target { node: "broker-1".into(), role: "broker", port: 20017 }], Some(20025), 1);
        assert!(c.contains("targets: ['127.0.0.1:20017']") && c.contains("node: 'broker-1'"), "{c}");
        assert!(c.contains("job_name: okp-status") && c.contains("scrape_interval: 1s"), "{c}");
    }
}
