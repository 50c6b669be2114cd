//! anchors.yaml `guards:`: per hook, the upstream methods (or whole files)
//! whose change could route around the hook although its anchors still hold:
//! the callers that expand an ISR, the election paths, the AlterPartition
//! handlers, the sites that build a LeaderAcceptor. `okp diff` compares each
//! guarded region between two releases and lists every change for review.
//!
//! Not here: comparing the regions (`diff`), the anchors themselves (`anchors`).

use std::collections::BTreeSet;

use serde::Deserialize;

use super::Origin;
use crate::error::Error;
use crate::version::KafkaVersion;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuard {
    id: String,
    hook: String,
    file: String,
    #[serde(default)]
    method: Option<String>,
    from: String,
    #[serde(default)]
    to: Option<String>,
    why: String,
}

/// Upstream code a hook depends on without being edited there.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Guard {
    pub id: String,
    pub hook: String,
    pub file: String,
    /// Text on the header line of the guarded method or type (like an anchor's `enclosing`);
    /// `None` guards the whole file.
    pub method: Option<String>,
    pub from: KafkaVersion,
    /// Last release it applies to; `None` = still in the newest.
    pub to: Option<KafkaVersion>,
    pub why: String,
}

impl Guard {
    pub fn covers(&self, v: KafkaVersion) -> bool {
        self.from <= v && self.to.is_none_or(|to| v <= to)
    }
}

/// Validates the raw entries against the hooks defined and the anchor ids taken.
pub(super) fn validate(
    raw: Vec<RawGuard>,
    hooks: &BTreeSet<String>,
    anchor_ids: &BTreeSet<String>,
    origin: &Origin,
) -> Result<Vec<Guard>, Error> {
    let mut ids = BTreeSet::new();
    let mut out = Vec::with_capacity(raw.len());
    for g in raw {
        let at = format!("id: {}", g.id);
        let err = |msg: String| origin.error_in_section("guards:", &at, format!("guard {}: {msg}", g.id));
        if g.id.is_empty()
            || !g.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        {
            return Err(err("ids use lowercase letters, digits, dots and dashes".into()));
        }
        if !ids.insert(g.id.clone()) {
            return Err(err("is defined twice".into()));
        }
        if anchor_ids.contains(&g.id) {
            return Err(err("has the id of an anchor; guards and anchors are named apart".into()));
        }
        if !hooks.contains(&g.hook) {
            return Err(err(format!(
                "names unknown hook `{}` (defined: {})",
                g.hook,
                hooks.iter().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
        if g.file.is_empty() || g.file.starts_with('/') || g.file.split('/').any(|c| c == ".." || c.is_empty()) {
            return Err(err(format!("file `{}` must be a relative path inside the Kafka repository", g.file)));
        }
        if g.method.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(err("method is blank (leave it out to guard the whole file)".into()));
        }
        let from: KafkaVersion = g.from.parse().map_err(|e: String| err(e))?;
        let to: Option<KafkaVersion> = g.to.as_deref().map(str::parse).transpose().map_err(|e: String| err(e))?;
        if let Some(to) = to {
            if to < from {
                return Err(err(format!("`to` {to} is before `from` {from}")));
            }
        }
        if g.why.trim().is_empty() {
            return Err(err("needs a `why`: which path around the hook a change here could open".into()));
        }
        out.push(Guard { id: g.id, hook: g.hook, file: g.file, method: g.method, from, to, why: g.why });
    }
    Ok(out)
}
