//! Where each node's observer.ids lives and how okp reads and writes it: the
//! node list (`--node`, `--controller-node`, or a nodes file) and the
//! transport, either local files or a command template run through `sh -c`
//! (for example `ssh {host} cat {path}`), so remote nodes need nothing but a
//! shell on the far side.
//!
//! Every write replaces the file atomically: a temporary file in the same
//! directory, fsync, rename, fsync of the directory (local); the write
//! template is expected to do the same remotely (the README's example does).
//! A broker never sees half a file, and a failed write leaves the old one.
//!
//! Not here: what the new content is (idfile.rs), in which order nodes are
//! written (change.rs).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::out::sh_word as sh_quote;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// A KRaft controller (its registry guards elections and AlterPartition).
    Controller,
    /// A broker (in ZooKeeper mode also the one that may be the controller).
    Broker,
}

/// One node that reads an observer.ids file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// broker.id / node.id: for messages and ordering only.
    pub id: i32,
    #[serde(default = "broker_role")]
    pub role: NodeRole,
    /// The file the node reads (its KAFKA_OBSERVER_IDS_FILE).
    pub path: String,
    /// For command templates: the value of `{host}`.
    #[serde(default)]
    pub host: Option<String>,
}

fn broker_role() -> NodeRole {
    NodeRole::Broker
}

impl NodeSpec {
    pub fn label(&self) -> String {
        let role = match self.role {
            NodeRole::Controller => "controller",
            NodeRole::Broker => "broker",
        };
        match &self.host {
            Some(h) => format!("{role} {} ({h}:{})", self.id, self.path),
            None => format!("{role} {} ({})", self.id, self.path),
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum NodesFile {
    Wrapped { nodes: Vec<NodeSpec> },
    List(Vec<NodeSpec>),
}

/// `ID=PATH` of `--node` / `--controller-node`.
pub fn parse_node_flag(s: &str, role: NodeRole) -> Result<NodeSpec> {
    let (id, path) = s
        .split_once('=')
        .ok_or_else(|| Error::Usage(format!("--node {s}: expected ID=PATH, e.g. 4=/opt/kafka/observer.ids")))?;
    let id = id.trim().parse::<i32>().map_err(|_| Error::Usage(format!("--node {s}: `{id}` is not a node id")))?;
    if path.is_empty() {
        return Err(Error::Usage(format!("--node {s}: the path is empty")));
    }
    Ok(NodeSpec { id, role, path: path.to_string(), host: None })
}

/// The nodes file: a YAML list (or `nodes:` holding one) of `{id, role, path, host}`.
pub fn load_nodes_file(path: &Path) -> Result<Vec<NodeSpec>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read the nodes file {}", path.display()), e))?;
    let parsed: NodesFile = serde_yaml::from_str(&text).map_err(|e| {
        let at = e.location().map(|l| format!(":{}:{}", l.line(), l.column())).unwrap_or_default();
        Error::Usage(format!(
            "{}{at}: not a nodes file ({e}); expected a list of {{id, role: broker|controller, path, host}}",
            path.display()
        ))
    })?;
    Ok(match parsed {
        NodesFile::Wrapped { nodes } | NodesFile::List(nodes) => nodes,
    })
}

/// Rejects an empty list and two entries for one (role, id).
pub fn check_nodes(nodes: &[NodeSpec]) -> Result<()> {
    if nodes.is_empty() {
        return Err(Error::Usage("no nodes: name every node's observer.ids with --node ID=PATH (brokers), --controller-node ID=PATH (KRaft controllers) or --nodes FILE".into()));
    }
    let mut seen = BTreeSet::new();
    for n in nodes {
        if !seen.insert((n.role, n.id)) {
            return Err(Error::Usage(format!(
                "{} {} is listed twice",
                if n.role == NodeRole::Controller { "controller" } else { "broker" },
                n.id
            )));
        }
    }
    Ok(())
}

pub enum Transport {
    Local,
    /// `sh -c` templates with `{host}`, `{path}` and `{id}` (each substituted shell-quoted); the write gets the content on stdin.
    Command {
        read: String,
        write: String,
    },
}

fn fill(template: &str, n: &NodeSpec) -> String {
    template
        .replace("{host}", &sh_quote(n.host.as_deref().unwrap_or("localhost")))
        .replace("{path}", &sh_quote(&n.path))
        .replace("{id}", &n.id.to_string())
}

impl Transport {
    /// The file's text. A missing local file is an error: it freezes the
    /// node's set (or leaves it to the env var), so okp cannot know what the
    /// node believes; create it first.
    pub fn read(&self, n: &NodeSpec) -> Result<String> {
        match self {
            Transport::Local => {
                let p = Path::new(&n.path);
                std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned()).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        Error::Usage(format!(
                            "{}: observer.ids does not exist; a missing file keeps the node's last good set (or env KAFKA_OBSERVER_BROKER_IDS), so okp cannot tell what it believes: create the file first (see config/observer.ids.template)",
                            n.label()
                        ))
                    } else {
                        Error::io(format!("cannot read observer.ids of {}", n.label()), e)
                    }
                })
            }
            Transport::Command { read, .. } => {
                let cmd = fill(read, n);
                let out = Command::new("sh")
                    .arg("-c")
                    .arg(&cmd)
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| Error::External(format!("cannot run sh for `{cmd}` ({e})")))?;
                if !out.status.success() {
                    return Err(Error::External(format!(
                        "reading observer.ids of {}: `{cmd}` exited with {}: {}",
                        n.label(),
                        out.status.code().map(|c| c.to_string()).unwrap_or_else(|| "a signal".into()),
                        String::from_utf8_lossy(&out.stderr).trim()
                    )));
                }
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            }
        }
    }

    /// Replaces the file with `text`, atomically.
    pub fn write(&self, n: &NodeSpec, text: &str) -> Result<()> {
        match self {
            Transport::Local => write_replacing(Path::new(&n.path), text.as_bytes()),
            Transport::Command { write, .. } => {
                let cmd = fill(write, n);
                let mut child = Command::new("sh")
                    .arg("-c")
                    .arg(&cmd)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| Error::External(format!("cannot run sh for `{cmd}` ({e})")))?;
                if let Some(mut stdin) = child.stdin.take() {
                    stdin
                        .write_all(text.as_bytes())
                        .map_err(|e| Error::External(format!("writing to `{cmd}`: {e}")))?;
                }
                let out = child.wait_with_output().map_err(|e| Error::External(format!("waiting for `{cmd}`: {e}")))?;
                if !out.status.success() {
                    return Err(Error::External(format!(
                        "writing observer.ids of {}: `{cmd}` failed: {}",
                        n.label(),
                        String::from_utf8_lossy(&out.stderr).trim()
                    )));
                }
                Ok(())
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

/// Temp file beside `path` with the old file's permissions (a broker running as
/// another user must still read it), fsync, rename, fsync of the directory.
fn write_replacing(path: &Path, bytes: &[u8]) -> Result<()> {
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
        std::fs::File::open(dir)?.sync_all()
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
