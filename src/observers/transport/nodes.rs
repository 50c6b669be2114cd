//! Where each node's observer.ids lives: the node list (`--node`, `--controller-node`, or a
//! nodes file), each node's id, role, path and host.
//!
//! A node's `host` and `path` reach a shell, often two (`sh -c`, then ssh's
//! remote shell), so they are checked where they enter (`check_host`,
//! `check_path`, docs/observers-transport.md): only characters no shell treats
//! specially, no leading `-`.
//!
//! Not here: reading or writing the files (`super`), reading YAML safely (model::yaml).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, Spanned};

use crate::error::{Error, Result};
use crate::model::{yaml, Origin};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// A KRaft controller (its registry guards elections and AlterPartition).
    Controller,
    /// A broker (in ZooKeeper mode also the one that may be the controller).
    Broker,
}

impl NodeRole {
    pub(crate) fn word(self) -> &'static str {
        match self {
            NodeRole::Controller => "controller",
            NodeRole::Broker => "broker",
        }
    }
}

/// One node that reads an observer.ids file. `load_nodes_file` and
/// `parse_node_flag` build it, after `check_host` and `check_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// broker.id / node.id (0 or more): for messages and ordering only.
    pub id: i32,
    pub role: NodeRole,
    /// The file the node reads (its KAFKA_OBSERVER_IDS_FILE).
    pub path: String,
    /// For command templates: the value of `{host}`.
    pub host: Option<String>,
}

impl NodeSpec {
    pub fn label(&self) -> String {
        let role = self.role.word();
        match &self.host {
            Some(h) => format!("{role} {} ({h}:{})", self.id, self.path),
            None => format!("{role} {} ({})", self.id, self.path),
        }
    }
}

/// Why `host` cannot be a node's host, if it cannot: it must be one word that
/// is not an option, made of what a hostname, an IPv4 address, a bracketed
/// IPv6 address or `user@host` is made of.
pub fn check_host(host: &str) -> std::result::Result<(), String> {
    let why = if host.is_empty() {
        "is empty".to_string()
    } else if host.starts_with('-') {
        "starts with `-`: ssh and other commands would read it as an option".to_string()
    } else if let Some(c) = host.chars().find(|c| !(c.is_ascii_alphanumeric() || ".-_:@[]".contains(*c))) {
        format!("holds {c:?}: a host is letters, digits and . - _ : @ [ ] only (a hostname, IPv4, [IPv6] or user@host)")
    } else {
        return Ok(());
    };
    Err(format!("{host:?} {why}"))
}

/// Why `path` cannot be a node's observer.ids path, if it cannot: absolute, no
/// `..` component, and only characters no shell reads specially, so the value
/// stays one inert word however many shells a template passes it through.
pub fn check_path(path: &str) -> std::result::Result<(), String> {
    let why = if path.is_empty() {
        "is empty".to_string()
    } else if path.starts_with('-') {
        "starts with `-`: a command would read it as an option".to_string()
    } else if !path.starts_with('/') {
        "is not absolute".to_string()
    } else if path.chars().any(char::is_control) {
        "holds a control character (NUL, newline, ...)".to_string()
    } else if path.split('/').any(|c| c == "..") {
        "has a `..` component".to_string()
    } else if let Some(c) = path.chars().find(|c| !(c.is_ascii_alphanumeric() || "/._-+,:@%".contains(*c))) {
        format!("holds {c:?}, which a shell may read specially: a path is letters, digits and / . _ - + , : @ % only")
    } else {
        return Ok(());
    };
    Err(format!("{path:?} {why}"))
}

/// `ID=PATH` of `--node` / `--controller-node`.
pub fn parse_node_flag(s: &str, role: NodeRole) -> Result<NodeSpec> {
    let (id, path) = s
        .split_once('=')
        .ok_or_else(|| Error::Usage(format!("--node {s}: expected ID=PATH, e.g. 4=/opt/kafka/observer.ids")))?;
    let id = id
        .trim()
        .parse::<i32>()
        .ok()
        .filter(|i| *i >= 0)
        .ok_or_else(|| Error::Usage(format!("--node {s}: `{id}` is not a node id (an integer, 0 or more)")))?;
    check_path(path).map_err(|why| Error::Usage(format!("--node {s}: the path {why}")))?;
    Ok(NodeSpec { id, role, path: path.to_string(), host: None })
}

/// One entry of a nodes file as written, with where each value stands. Each
/// field's deserializer names the field in its errors.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    #[serde(deserialize_with = "field_id")]
    id: Spanned<i64>,
    #[serde(default = "broker_role", deserialize_with = "field_role")]
    role: NodeRole,
    #[serde(deserialize_with = "field_path")]
    path: Spanned<String>,
    #[serde(default, deserialize_with = "field_host")]
    host: Option<Spanned<String>>,
}

fn broker_role() -> NodeRole {
    NodeRole::Broker
}

/// Deserializes one field; an error names the field and what it takes.
fn field<'de, D: Deserializer<'de>, T: Deserialize<'de>>(name: &str, takes: &str, d: D) -> Result<T, D::Error> {
    T::deserialize(d).map_err(|e| de::Error::custom(format_args!("`{name}` takes {takes}: {e}")))
}

fn field_id<'de, D: Deserializer<'de>>(d: D) -> Result<Spanned<i64>, D::Error> {
    field("id", "a node id (an integer, 0 or more)", d)
}

fn field_role<'de, D: Deserializer<'de>>(d: D) -> Result<NodeRole, D::Error> {
    field("role", "broker or controller", d)
}

fn field_path<'de, D: Deserializer<'de>>(d: D) -> Result<Spanned<String>, D::Error> {
    field("path", "the absolute path of the node's observer.ids", d)
}

fn field_host<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Spanned<String>>, D::Error> {
    field("host", "a host name or address", d)
}

const NODES_FILE_SHAPE: &str = "a list of {id, role: broker|controller, path, host}, or `nodes:` holding one";

/// A nodes file: a list, or a mapping whose one key `nodes` holds the list.
struct NodesFile(Vec<RawNode>);

impl<'de> Deserialize<'de> for NodesFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        NodeList { top: true }.deserialize(d).map(NodesFile)
    }
}

/// The entries, at the top of the file (a list, or `nodes:` holding one) or
/// under `nodes:` (a list). The YAML node's own kind picks the form, with no
/// guessing between variants, so an error inside an entry keeps its line,
/// column and field.
#[derive(Clone, Copy)]
struct NodeList {
    top: bool,
}

impl NodeList {
    /// A custom error, which the parser places at the value itself (serde's
    /// invalid_type error for a scalar would be placed at 1:1).
    fn holds<E: de::Error>(self, got: &dyn fmt::Display) -> E {
        if self.top {
            E::custom(format_args!("expected {NODES_FILE_SHAPE}; the file holds {got}"))
        } else {
            E::custom(format_args!("`nodes` must hold a list of {{id, role, path, host}}; it holds {got}"))
        }
    }
}

impl<'de> DeserializeSeed<'de> for NodeList {
    type Value = Vec<RawNode>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<RawNode>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeList {
    type Value = Vec<RawNode>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(NODES_FILE_SHAPE)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<RawNode>, A::Error> {
        let mut nodes = Vec::new();
        while let Some(n) = seq.next_element()? {
            nodes.push(n);
        }
        Ok(nodes)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<RawNode>, A::Error> {
        if !self.top {
            return Err(self.holds(&"a mapping"));
        }
        let mut nodes = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "nodes" {
                return Err(de::Error::unknown_field(&key, &["nodes"]));
            }
            nodes = Some(map.next_value_seed(NodeList { top: false })?);
        }
        nodes.ok_or_else(|| de::Error::missing_field("nodes"))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Vec<RawNode>, E> {
        Err(self.holds(&de::Unexpected::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Vec<RawNode>, E> {
        Err(self.holds(&de::Unexpected::Signed(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<RawNode>, E> {
        Err(self.holds(&de::Unexpected::Unsigned(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Vec<RawNode>, E> {
        Err(self.holds(&de::Unexpected::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<RawNode>, E> {
        Err(self.holds(&de::Unexpected::Str(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<RawNode>, E> {
        Err(self.holds(&"nothing"))
    }

    fn visit_none<E: de::Error>(self) -> Result<Vec<RawNode>, E> {
        Err(self.holds(&"nothing"))
    }
}

/// The nodes file: a YAML list (or `nodes:` holding one) of `{id, role, path, host}`.
/// Every refusal is `FILE:LINE:COL: message` naming the field (and the node).
pub fn load_nodes_file(path: &Path) -> Result<Vec<NodeSpec>> {
    let origin = yaml::read(path, yaml::Input::Nodes)?;
    // A file of nothing but comments is no YAML node at all: say what it lacks.
    if origin.text.lines().map(str::trim).all(|l| l.is_empty() || l.starts_with('#') || l == "---" || l == "...") {
        return nodes_from(&origin, Vec::new());
    }
    let parsed: NodesFile = yaml::parse(&origin)?;
    nodes_from(&origin, parsed.0)
}

fn nodes_from(origin: &Origin, raw: Vec<RawNode>) -> Result<Vec<NodeSpec>> {
    let at = |l: Location, msg: String| Error::Manifest {
        file: origin.name.clone(),
        line: (l.line() as usize).max(1),
        col: (l.column() as usize).max(1),
        msg,
    };
    if raw.is_empty() {
        return Err(at(Location::UNKNOWN, format!("no nodes: expected {NODES_FILE_SHAPE}")));
    }
    let mut first_line: BTreeMap<(NodeRole, i32), u64> = BTreeMap::new();
    let mut nodes = Vec::new();
    for r in raw {
        let id = i32::try_from(r.id.value).ok().filter(|i| *i >= 0).ok_or_else(|| {
            at(r.id.referenced, format!("`id` {} is not a node id (an integer from 0 to {})", r.id.value, i32::MAX))
        })?;
        let role = r.role.word();
        check_path(&r.path.value).map_err(|why| at(r.path.referenced, format!("{role} {id}: `path` {why}")))?;
        if let Some(h) = &r.host {
            check_host(&h.value).map_err(|why| at(h.referenced, format!("{role} {id}: `host` {why}")))?;
        }
        if let Some(line) = first_line.insert((r.role, id), r.id.referenced.line()) {
            return Err(at(r.id.referenced, format!("{role} {id} is listed twice (first on line {line})")));
        }
        nodes.push(NodeSpec { id, role: r.role, path: r.path.value, host: r.host.map(|h| h.value) });
    }
    Ok(nodes)
}

/// Rejects an empty list and two entries for one (role, id).
pub fn check_nodes(nodes: &[NodeSpec]) -> Result<()> {
    if nodes.is_empty() {
        return Err(Error::Usage("no nodes: name every node's observer.ids with --node ID=PATH (brokers), --controller-node ID=PATH (KRaft controllers) or --nodes FILE".into()));
    }
    let mut seen = BTreeSet::new();
    for n in nodes {
        if !seen.insert((n.role, n.id)) {
            return Err(Error::Usage(format!("{} {} is listed twice", n.role.word(), n.id)));
        }
    }
    Ok(())
}
