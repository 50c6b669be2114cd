//! How okp reads and writes a node's observer.ids: the transport, either local files or a
//! command template run through `sh -c` (for example `ssh {host} cat {path}`), so remote nodes
//! need nothing but a shell on the far side. `nodes`: where each node's file lives.
//!
//! A template is filled in one pass, each value (a node's `host` and `path`, checked where they
//! entered: `nodes`) shell-quoted and never read again.
//!
//! Every write replaces the file atomically: a temporary file in the same
//! directory, fsync, rename, fsync of the directory (local); the write
//! template is expected to do the same remotely (the README's example does).
//! A broker never sees half a file, and a failed write leaves the old one.
//!
//! Not here: what the new content is (idfile/), in which order nodes are
//! written (change/), reading YAML safely (model::yaml).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::fsx::read::{read_regular, ReadError};
use crate::observers::idfile;
use crate::out::sh_word as sh_quote;

mod nodes;

pub use nodes::{check_host, check_nodes, check_path, load_nodes_file, parse_node_flag, NodeRole, NodeSpec};

pub enum Transport {
    Local,
    /// The `--read-cmd` / `--write-cmd` templates, each run by `sh -c`; the
    /// write gets the content on stdin. `{host}`, `{path}` and `{id}` are
    /// filled in one pass from left to right, each value shell-quoted and
    /// never read again (a host holding `{path}` stays that text). The values
    /// were checked where they entered: a host is letters, digits and
    /// `. - _ : @ [ ]`, a path is absolute and letters, digits and
    /// `/ . _ - + , : @ %`, neither starts with `-`, so a value is one inert
    /// word in any template, however many shells (sh -c, ssh) read it
    /// (docs/observers-transport.md).
    Command {
        read: String,
        write: String,
        /// Each template run is killed (its whole process group) after this long.
        timeout: Duration,
    },
}

/// How long one template run may take unless `--transport-timeout` says otherwise: an ssh
/// with `ConnectTimeout=5` to a host that is down ends well before it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `template` with `{host}`, `{path}` and `{id}` replaced, in one pass: the
/// text after a placeholder is scanned next, never the value put in its place.
fn fill(template: &str, n: &NodeSpec) -> String {
    fill_cas(template, n, None)
}

/// `fill`, and `{cas}` with `cas` (okp's compare-and-swap script, swap.rs) when given; without,
/// `{cas}` stays as written (a read template, a plan shown).
pub(super) fn fill_cas(template: &str, n: &NodeSpec, cas: Option<&str>) -> String {
    let id = n.id.to_string();
    let host = ("{host}", n.host.as_deref().unwrap_or("localhost"));
    let mut values = vec![host, ("{path}", n.path.as_str()), ("{id}", &id)];
    values.extend(cas.map(|c| ("{cas}", c)));
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match values.iter().find(|(placeholder, _)| rest.starts_with(placeholder)) {
            Some((placeholder, value)) => {
                out.push_str(&sh_quote(value));
                rest = &rest[placeholder.len()..];
            }
            None => {
                out.push('{');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// At most `n` characters of `s`, with `…` when cut (a message quotes stderr, not all of it).
fn first_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// What a template printed and how it ended.
struct Ran {
    /// None: killed at the deadline (or past the stdout cap).
    status: Option<std::process::ExitStatus>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
}

/// Signals the process group `pgid` (the template's `sh` and everything it started: ssh).
fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group this module created for the template.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// `sh -c cmd` in a process group of its own, `input` on its stdin (else /dev/null), stdout kept
/// to `cap` + 1 bytes and stderr to 64 KiB. At `deadline` (or once stdout passes the cap) the
/// whole group is killed: `sh`, the `ssh` it started, anything else of the template's. So a
/// host that accepts the connection and then answers nothing (a stopped sshd, a command that
/// sleeps) costs at most `deadline`, and a read that never stops printing (`cat /dev/zero` on
/// the far side) is cut, instead of filling okp's memory or keeping it waiting.
fn run_sh(cmd: &str, input: Option<&[u8]>, cap: u64, deadline: Duration) -> std::io::Result<Ran> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::sync::mpsc;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let pgid = child.id() as i32;
    let t0 = Instant::now();
    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), input) {
        let bytes = bytes.to_vec();
        // A far side that never reads must not block okp: the writer is a thread of its own.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let (out_tx, out_rx) = mpsc::channel();
    let mut out_pipe = child.stdout.take().expect("piped");
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut out_pipe).take(cap + 1).read_to_end(&mut kept);
        if kept.len() as u64 > cap {
            kill_group(pgid);
        }
        let _ = out_tx.send(kept);
    });
    let (err_tx, err_rx) = mpsc::channel();
    let mut err_pipe = child.stderr.take().expect("piped");
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        // Past the cap the pipe is closed: a writer that goes on gets EPIPE, okp never waits on it.
        let _ = (&mut err_pipe).take(STDERR_CAP).read_to_end(&mut kept);
        let _ = err_tx.send(kept);
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if t0.elapsed() >= deadline {
            timed_out = true;
            kill_group(pgid);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the template left running in its group (a backgrounded ssh) holds the pipes open: end it.
    kill_group(pgid);
    let grace = Duration::from_secs(2);
    let stdout = out_rx.recv_timeout(grace).unwrap_or_default();
    let stderr = err_rx.recv_timeout(grace).unwrap_or_default();
    let status = if stdout.len() as u64 > cap { None } else { status };
    Ok(Ran { status, stdout, stderr, timed_out })
}

/// The stderr okp keeps of a template (ssh's messages are a few lines).
const STDERR_CAP: u64 = 64 << 10;

/// What stderr says, for a message: its last two lines that say something (ssh's banner of `@`
/// and its blank lines left out), cut to 600 characters. ssh ends with its reason (`Connection
/// refused`, `Host key verification failed.`), a remote command with its own.
fn stderr_summary(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> =
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.chars().all(|c| c == '@')).collect();
    let last = &lines[lines.len().saturating_sub(2)..];
    if last.is_empty() {
        return "(nothing on stderr)".into();
    }
    crate::escape::one_line(&first_chars(&last.join(" | "), 600))
}

/// The largest observer.ids okp reads (a real one is a few lines); a FIFO or a
/// device at the path is refused, never read.
pub const MAX_IDS_FILE: u64 = 1 << 20;

impl Transport {
    /// The file's text. A missing local file is an error: it freezes the
    /// node's set (or leaves it to the env var), so okp cannot know what the
    /// node believes; create it first.
    pub fn read(&self, n: &NodeSpec) -> Result<String> {
        match self {
            Transport::Local => {
                let p = Path::new(&n.path);
                match read_regular(p, MAX_IDS_FILE) {
                    Ok(b) => Ok(idfile::text_of(&b)),
                    Err(ReadError::Missing) => Err(Error::Usage(format!(
                        "{}: observer.ids does not exist; a missing file keeps the node's last good set (or env KAFKA_OBSERVER_BROKER_IDS), so okp cannot tell what it believes: create the file first (see config/observer.ids.template)",
                        n.label()
                    ))),
                    Err(ReadError::Io(e)) => Err(Error::io(format!("cannot read observer.ids of {}", n.label()), e)),
                    Err(e) => Err(Error::Usage(format!("{}: cannot read observer.ids: {e}", n.label()))),
                }
            }
            Transport::Command { read, timeout, .. } => {
                let cmd = fill(read, n);
                let out = run_sh(&cmd, None, MAX_IDS_FILE, *timeout)
                    .map_err(|e| Error::External(format!("cannot run sh for `{cmd}` ({e})")))?;
                if out.stdout.len() as u64 > MAX_IDS_FILE {
                    return Err(Error::Usage(format!(
                        "reading observer.ids of {}: `{cmd}` printed more than {MAX_IDS_FILE} bytes (stopped there); an observer.ids file is a few lines",
                        n.label()
                    )));
                }
                if out.timed_out {
                    return Err(Error::External(format!(
                        "reading observer.ids of {}: `{cmd}` did not finish within {} s (--transport-timeout) and was killed: the host is down, unreachable or not answering; stderr: {}",
                        n.label(),
                        timeout.as_secs(),
                        stderr_summary(&out.stderr)
                    )));
                }
                match out.status {
                    Some(s) if s.success() => Ok(idfile::text_of(&out.stdout)),
                    s => Err(Error::External(format!(
                        "reading observer.ids of {}: `{cmd}` exited with {}: {}",
                        n.label(),
                        s.and_then(|s| s.code()).map(|c| c.to_string()).unwrap_or_else(|| "a signal".into()),
                        stderr_summary(&out.stderr)
                    ))),
                }
            }
        }
    }

    /// Replaces the file with `text`, atomically.
    pub fn write(&self, n: &NodeSpec, text: &str) -> Result<()> {
        match self {
            Transport::Local => write_replacing(Path::new(&n.path), &idfile::bytes_of(text)),
            Transport::Command { write, timeout, .. } => {
                let cmd = fill(write, n);
                run_write(n, (&cmd, &cmd), text, *timeout)?.map_err(|why| {
                    Error::External(format!("writing observer.ids of {}: `{cmd}` exited with 75: {why}", n.label()))
                })
            }
        }
    }

    /// How a write reaches the node, for `--dry-run`.
    pub fn describe_write(&self, n: &NodeSpec) -> String {
        match self {
            Transport::Local => format!("temp file + fsync + rename onto {}", n.path),
            Transport::Command { write, .. } => format!("sh -c {}", sh_quote(&fill(write, n))),
        }
    }
}

/// Runs the write command `cmd` of node `n` with `text` on its stdin. Err: it could not run, ran
/// past `timeout` (killed), or failed; Ok(Err(stderr)): it exited with 75, which okp's
/// compare-and-swap script uses for "the file changed since okp read it" (swap.rs).
/// `shown`: the command as messages quote it (with `{cas}` unfilled: the script is long).
pub(super) fn run_write(
    n: &NodeSpec,
    (cmd, shown): (&str, &str),
    text: &str,
    timeout: Duration,
) -> Result<std::result::Result<(), String>> {
    let out = run_sh(cmd, Some(&idfile::bytes_of(text)), STDERR_CAP, timeout)
        .map_err(|e| Error::External(format!("cannot run sh for `{shown}` ({e})")))?;
    let cmd = shown;
    if out.timed_out {
        return Err(Error::External(format!(
            "writing observer.ids of {}: `{cmd}` did not finish within {} s (--transport-timeout) and was killed: the host is down, unreachable or not answering; stderr: {}",
            n.label(),
            timeout.as_secs(),
            stderr_summary(&out.stderr)
        )));
    }
    match out.status {
        Some(s) if s.success() => Ok(Ok(())),
        Some(s) if s.code() == Some(75) => Ok(Err(stderr_summary(&out.stderr))),
        s => Err(Error::External(format!(
            "writing observer.ids of {}: `{cmd}` exited with {}: {}",
            n.label(),
            s.and_then(|s| s.code()).map(|c| c.to_string()).unwrap_or_else(|| "a signal".into()),
            stderr_summary(&out.stderr)
        ))),
    }
}

/// Temp file beside `path` with the old file's permissions (a broker running as
/// another user must still read it), fsync, rename, fsync of the directory.
pub(super) fn write_replacing(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mode = std::fs::metadata(path).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.okp-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        crate::fsx::sync_dir(dir)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(format!("cannot replace {}", path.display()), e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_quote_what_they_fill() {
        let n = NodeSpec {
            id: 4,
            role: NodeRole::Broker,
            path: "/opt/my kafka/observer.ids".into(),
            host: Some("b4.dc2".into()),
        };
        assert_eq!(fill("ssh {host} cat {path} # {id}", &n), "ssh b4.dc2 cat '/opt/my kafka/observer.ids' # 4");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn node_flags_and_files() {
        assert_eq!(parse_node_flag("101=/c/observer.ids", NodeRole::Controller).unwrap().id, 101);
        assert!(parse_node_flag("x=/p", NodeRole::Broker).is_err());
        assert!(parse_node_flag("4", NodeRole::Broker).is_err());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("nodes.yaml");
        std::fs::write(
            &f,
            "nodes:\n  - {id: 101, role: controller, path: /c/o.ids}\n  - {id: 4, path: /b/o.ids, host: b4}\n",
        )
        .unwrap();
        let nodes = load_nodes_file(&f).unwrap();
        assert_eq!(
            (nodes[0].role, nodes[1].role, nodes[1].host.as_deref()),
            (NodeRole::Controller, NodeRole::Broker, Some("b4"))
        );
        std::fs::write(&f, "- {id: 4, path: /b/o.ids, colour: red}\n").unwrap();
        assert!(load_nodes_file(&f).is_err(), "unknown fields are refused");
        assert!(check_nodes(&[nodes[1].clone(), nodes[1].clone()]).is_err());
    }

    fn node(host: &str, path: &str) -> NodeSpec {
        NodeSpec { id: 4, role: NodeRole::Broker, path: path.into(), host: Some(host.into()) }
    }

    #[test]
    fn fill_is_one_pass_a_value_is_never_read_again() {
        // Before: `{host}` was replaced first and `{path}` then replaced inside the result.
        assert_eq!(fill("ssh {host} cat {path}", &node("{path}", "/o/x")), "ssh '{path}' cat /o/x");
        assert_eq!(fill("cat {path} # {id}", &node("h", "/a/{id}/x")), "cat '/a/{id}/x' # 4");
        assert_eq!(fill("{nope} {host {path}{id}", &node("h", "/p")), "{nope} {host /p4");
        assert_eq!(fill("", &node("h", "/p")), "");
    }

    /// The values reach a real sh through fill(): each comes back verbatim as
    /// one word, and nothing in them runs. (Load-time checks refuse all of
    /// these; fill() must not rely on that.)
    #[test]
    fn fill_keeps_hostile_values_inert_in_a_real_shell() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("marker");
        let m = marker.display();
        let hostile = [
            format!("$(touch {m})"),
            format!("`touch {m}`"),
            format!("x; touch {m}"),
            format!("x\ntouch {m}"),
            format!("x' ; touch {m} ; '"),
            format!("x && touch {m}"),
            "{path}".to_string(),
            format!("$(touch {m}){{path}}{{id}}"),
            "-oProxyCommand=x".to_string(),
        ];
        for v in &hostile {
            for (host, path) in [(v.as_str(), "/p"), ("h", v.as_str()), (v.as_str(), v.as_str())] {
                let cmd = fill("printf '%s|' {host} {path} {id}", &node(host, path));
                let out = Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
                assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
                assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{host}|{path}|4|"), "{cmd}");
                assert!(!marker.exists(), "`{cmd}` ran part of a value");
            }
        }
    }

    #[test]
    fn a_read_template_that_never_stops_printing_is_cut_at_the_cap() {
        let t = |read: &str| Transport::Command {
            read: read.into(),
            write: "cat > /dev/null".into(),
            timeout: DEFAULT_TIMEOUT,
        };
        let e = t("yes 4").read(&node("h", "/p")).unwrap_err().to_string();
        assert!(e.contains("printed more than 1048576 bytes"), "{e}");
        let e = t("head -c 2000000 /dev/zero; echo gone >&2; exit 1").read(&node("h", "/p")).unwrap_err().to_string();
        assert!(e.contains("printed more than"), "{e}");
        let r = t("printf '4\\n'; yes err | head -c 3000000 >&2 || true").read(&node("h", "/p"));
        assert_eq!(r.map_err(|e| e.to_string().chars().take(300).collect::<String>()).unwrap(), "4\n");
        let e = t("yes why >&2; exit 3").read(&node("h", "/p")).unwrap_err().to_string();
        assert!(e.contains("exited with ") && e.len() < 2000, "{}", &e[..300.min(e.len())]);
        let e = t("echo 4; echo why >&2; exit 3").read(&node("h", "/p")).unwrap_err().to_string();
        assert!(e.contains("exited with 3: why"), "{e}");
    }

    /// A host that answers nothing (here: a template that sleeps) costs the deadline, not
    /// forever, and whatever the template started in the background dies with it; a template
    /// that leaves a child holding stdout open is not waited for.
    #[test]
    fn a_template_that_hangs_is_killed_at_the_deadline_with_everything_it_started() {
        let t = |read: &str, write: &str| Transport::Command {
            read: read.into(),
            write: write.into(),
            timeout: Duration::from_secs(1),
        };
        let hung = t("sleep 30 & sleep 30; echo 4", "sleep 30");
        let t0 = Instant::now();
        let e = hung.read(&node("h", "/p")).unwrap_err().to_string();
        assert!(e.contains("did not finish within 1 s (--transport-timeout) and was killed"), "{e}");
        let e = hung.write(&node("h", "/p"), "4\n").unwrap_err().to_string();
        assert!(
            e.contains("writing observer.ids of broker 4 (h:/p)") && e.contains("did not finish within 1 s"),
            "{e}"
        );
        assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
        let lingering = t("(sleep 30 &); echo 4", "cat > /dev/null");
        let t0 = Instant::now();
        assert_eq!(lingering.read(&node("h", "/p")).unwrap(), "4\n");
        assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    }

    #[test]
    fn stderr_is_summed_up_by_its_last_lines_without_sshs_banner() {
        let changed = b"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nIT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\nHost key for b2 has changed and you have requested strict checking.\nHost key verification failed.\n";
        assert_eq!(
            stderr_summary(changed),
            "Host key for b2 has changed and you have requested strict checking. | Host key verification failed."
        );
        assert_eq!(stderr_summary(b"\n\n"), "(nothing on stderr)");
        assert_eq!(
            stderr_summary(b"ssh: connect to host b2 port 22: Connection refused\n"),
            "ssh: connect to host b2 port 22: Connection refused"
        );
    }

    #[test]
    fn hosts_and_paths_are_checked() {
        for ok in ["b4", "b4.dc2.example.com", "10.0.0.4", "[::1]", "[fe80::1]", "kafka@b4", "b_4", "b4:22"] {
            assert_eq!(check_host(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "is empty"),
            ("-oProxyCommand=touch /tmp/x", "starts with `-`"),
            ("b4;id", "holds ';'"),
            ("$(id)", "holds '$'"),
            ("`id`", "holds '`'"),
            ("b 4", "holds ' '"),
            ("b4\nid", "holds '\\n'"),
            ("{path}", "holds '{'"),
            ("b4/x", "holds '/'"),
        ] {
            let e = check_host(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        for ok in
            ["/opt/kafka/observer.ids", "/var/lib/kafka-3.9/config/observer.ids", "/a/b_c+d,e:f@g%h", "/a/..b/c..", "/"]
        {
            assert_eq!(check_path(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "is empty"),
            ("-oProxyCommand=x", "starts with `-`"),
            ("observer.ids", "is not absolute"),
            ("/a/../etc/passwd", "`..` component"),
            ("/a/..", "`..` component"),
            ("/a\nb", "control character"),
            ("/a\0b", "control character"),
            ("/a b", "holds ' '"),
            ("/a/$(id)", "holds '$'"),
            ("/a/`id`", "holds '`'"),
            ("/a;b", "holds ';'"),
            ("/a/{id}", "holds '{'"),
            ("/a'b", "holds '\\''"),
            ("/a\"b", "holds '\"'"),
            ("/a\\b", "holds '\\\\'"),
            ("/a/~b", "holds '~'"),
        ] {
            let e = check_path(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(parse_node_flag("4=observer.ids", NodeRole::Broker)
            .unwrap_err()
            .to_string()
            .contains("is not absolute"));
        assert!(parse_node_flag("-1=/o.ids", NodeRole::Broker).unwrap_err().to_string().contains("is not a node id"));
        assert!(parse_node_flag("4=/a/$(id)", NodeRole::Broker).unwrap_err().to_string().contains("holds '$'"));
    }

    /// Every malformed nodes file: `FILE:LINE:COL: message`, naming the field
    /// where there is one (serde_yaml's untagged enum said only "data did not
    /// match any variant of untagged enum NodesFile" for many of these).
    #[test]
    fn every_malformed_nodes_file_names_line_column_and_field() {
        let cases: &[(&str, &str, &str)] = &[
            ("- {id: 4, pth: /x}\n", "1:11", "unknown field `pth`, expected one of id, role, path, host"),
            ("- {id: 4}\n", "1:4", "missing field `path`"),
            ("- {path: /x}\n", "1:4", "missing field `id`"),
            ("- {id: x, path: /x}\n", "1:8", "`id` takes a node id (an integer, 0 or more): invalid i64"),
            ("- {id: -1, path: /x}\n", "1:8", "`id` -1 is not a node id"),
            ("- {id: 4.5, path: /x}\n", "1:8", "`id` takes a node id"),
            ("- {id: 99999999999, path: /x}\n", "1:8", "`id` 99999999999 is not a node id (an integer from 0 to"),
            ("- {id: 4, path: /x, role: boss}\n", "1:27", "`role` takes broker or controller: unknown variant `boss`"),
            ("- {id: 4, path: }\n", "1:15", "`path` takes the absolute path"),
            ("- {id: 4, path: ''}\n", "1:17", "broker 4: `path` \"\" is empty"),
            ("- {id: 4, path: [/x]}\n", "1:17", "`path` takes the absolute path"),
            ("- {id: 4, path: x/y}\n", "1:17", "broker 4: `path` \"x/y\" is not absolute"),
            ("- {id: 4, path: /a/../b}\n", "1:17", "`path` \"/a/../b\" has a `..` component"),
            ("- {id: 4, path: \"/x\\ny\"}\n", "1:17", "`path` \"/x\\ny\" holds a control character"),
            ("- {id: 4, path: '/x/$(touch y)'}\n", "1:17", "`path` \"/x/$(touch y)\" holds '$'"),
            ("- {id: 4, path: /x, host: ''}\n", "1:27", "broker 4: `host` \"\" is empty"),
            ("- {id: 4, path: /x, host: -oProxyCommand=x}\n", "1:27", "`host` \"-oProxyCommand=x\" starts with `-`"),
            ("- {id: 4, path: /x, host: [a]}\n", "1:27", "`host` takes a host name or address"),
            ("- {id: 101, role: controller, path: /x, host: '{path}'}\n", "1:47", "controller 101: `host` \"{path}\""),
            ("- {id: 4, path: /x}\n- {id: 4, path: /y}\n", "2:8", "broker 4 is listed twice (first on line 1)"),
            ("- {id: 4, path: /x, path: /y}\n", "1:21", "duplicate mapping key: path"),
            ("- id: 4\n  path: /x\n  host: b4\n  colour: red\n", "4:3", "unknown field `colour`"),
            ("nodes:\n  - {id: 4, pth: /y}\n", "2:13", "unknown field `pth`"),
            ("nodes:\n  - {id: 4, path: /x, host: -x}\n", "2:29", "broker 4: `host` \"-x\" starts with `-`"),
            (
                "nodes: {id: 4, path: /x}\n",
                "1:8",
                "`nodes` must hold a list of {id, role, path, host}; it holds a mapping",
            ),
            ("nodes: 4\n", "1:8", "`nodes` must hold a list of {id, role, path, host}; it holds integer `4`"),
            ("nodes:\n", "1:6", "`nodes` must hold a list of {id, role, path, host}; it holds nothing"),
            ("nodes: x\n", "1:8", "; it holds string \"x\""),
            ("# only a comment\n", "1:1", "no nodes"),
            ("nodez:\n  - {id: 4, path: /x}\n", "1:1", "unknown field `nodez`, expected one of nodes"),
            ("nodes:\n  - {id: 4, path: /x}\nextra: 1\n", "3:1", "unknown field `extra`"),
            ("{}\n", "1:1", "missing field `nodes`"),
            ("", "1:1", "no nodes: expected a list of {id, role: broker|controller, path, host}"),
            ("[]\n", "1:1", "no nodes"),
            ("nodes: []\n", "1:1", "no nodes"),
            ("4\n", "1:1", "expected a list of {id, role: broker|controller, path, host}, or `nodes:` holding one; the file holds integer `4`"),
            ("just text\n", "1:1", "; the file holds string \"just text\""),
            ("- 4\n", "1:3", "expected mapping"),
            ("- {id: 4, path: /x\n", "1:3", "unclosed bracket"),
            ("---\n- {id: 4, path: /x}\n---\n- {id: 5, path: /y}\n", "4:1", "more than one YAML document"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("nodes.yaml");
        let mut wrong = Vec::new();
        for (text, at, needle) in cases {
            std::fs::write(&f, text).unwrap();
            let got = match load_nodes_file(&f) {
                Ok(n) => format!("accepted: {n:?}"),
                Err(e) => e.to_string(),
            };
            let want = format!("{}:{at}: ", f.display());
            if !(got.starts_with(&want) && got.contains(needle)) {
                wrong.push(format!("{text:?}\n  want {at}: …{needle}…\n  got  {got}"));
            }
        }
        assert!(wrong.is_empty(), "{} of {} cases:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
        // Both forms load, and one id may be a broker and a controller.
        for text in [
            "- {id: 4, path: /b/o.ids}\n- {id: 4, role: controller, path: /c/o.ids, host: '[::1]'}\n",
            "nodes:\n  - {id: 4, path: /b/o.ids}\n  - {id: 4, role: controller, path: /c/o.ids, host: '[::1]'}\n",
        ] {
            std::fs::write(&f, text).unwrap();
            let n = load_nodes_file(&f).unwrap();
            assert_eq!((n.len(), n[1].role, n[1].host.as_deref()), (2, NodeRole::Controller, Some("[::1]")), "{text}");
        }
    }

    #[test]
    fn local_writes_keep_the_mode_and_leave_no_temp_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("observer.ids");
        std::fs::write(&p, "4\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_replacing(&p, b"5\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "5\n");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
