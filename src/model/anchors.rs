//! anchors.yaml: the hook sites of the observer contract and the upstream
//! lines (anchors) that locate each edit, per release range.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::confine::confine;
use super::versions::{Matrix, Mode, Release};
use super::Origin;
use crate::error::Error;
use crate::version::KafkaVersion;

/// Which process a hook lives in; decides the modes that need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    Broker,
    ZkController,
    KraftController,
}

impl Scope {
    /// The scopes a (release, mode) needs. KRaft mode keeps the ZooKeeper
    /// controller hooks where the release still has a ZooKeeper controller,
    /// so one jar set serves a ZK->KRaft migration without a gap.
    pub fn needed(release: &Release, mode: Mode) -> Vec<Scope> {
        match mode {
            Mode::Zk => vec![Scope::Broker, Scope::ZkController],
            Mode::Kraft if release.supports(Mode::Zk) => {
                vec![Scope::Broker, Scope::ZkController, Scope::KraftController]
            }
            Mode::Kraft => vec![Scope::Broker, Scope::KraftController],
        }
    }
}

/// A part of the patch set a build takes as a whole. `core` is the observer
/// contract and always goes in; every other layer is optional and is chosen
/// per build (`--layer`), so a release can take it or leave it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    #[default]
    Core,
    /// JMX gauges of observer state, per broker and per partition.
    Metrics,
}

impl Layer {
    pub const ALL: [Layer; 2] = [Layer::Core, Layer::Metrics];
    /// The layers a user can choose with `--layer`.
    pub const OPTIONAL: [Layer; 1] = [Layer::Metrics];

    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Core => "core",
            Layer::Metrics => "metrics",
        }
    }
}

/// The layers a record (okp-build.json, a bundle manifest) written before
/// layers existed carries: core only.
pub fn core_only() -> Vec<Layer> {
    vec![Layer::Core]
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The layers of one build: always core, plus the optional ones chosen.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Layers(std::collections::BTreeSet<Layer>);

impl Layers {
    pub fn core() -> Layers {
        Layers([Layer::Core].into_iter().collect())
    }
    pub fn all() -> Layers {
        Layers(Layer::ALL.into_iter().collect())
    }
    pub fn with(chosen: &[Layer]) -> Layers {
        Layers(std::iter::once(Layer::Core).chain(chosen.iter().copied()).collect())
    }
    pub fn contains(&self, l: Layer) -> bool {
        self.0.contains(&l)
    }
    pub fn iter(&self) -> impl Iterator<Item = Layer> + '_ {
        self.0.iter().copied()
    }
    /// `core` or `core+metrics`, for reports and branch names.
    pub fn label(&self) -> String {
        self.0.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("+")
    }
}

/// The contract's hook ids (shared/DESIGN.md); anchors.yaml must define each.
pub const CONTRACT_HOOKS: &[&str] = &[
    "promotion-gate",
    "demotion",
    "hw-gate",
    "zk-initial-isr",
    "zk-unclean-election",
    "zk-election-gate",
    "kraft-initial-isr",
    "kraft-election-gate",
    "kraft-alterpartition-defense",
    "read-replica",
    // edge: reassignment (docs/contract.md#reassignment)
    "zk-reassignment-complete",
    "zk-reassignment-refusal",
    "kraft-reassignment-complete",
    "kraft-reassignment-refusal",
];

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    pub id: String,
    /// The layer the hook belongs to; the contract's hooks are `core`.
    #[serde(default)]
    pub layer: Layer,
    pub scope: Scope,
    pub site: String,
    pub rule: String,
    /// The first release the hook is needed in (none: every release of its
    /// scope); before it, upstream code already keeps the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<KafkaVersion>,
}

/// What an anchor matches: exact lines (the rule) or a regex (the exception).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Consecutive whole lines, byte-exact including indentation.
    Lines(Vec<String>),
    /// A regex over one whole line, with the reason text could not do.
    Regex {
        #[serde(serialize_with = "ser_regex")]
        regex: regex::Regex,
        reason: String,
    },
}

fn ser_regex<S: serde::Serializer>(r: &regex::Regex, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.as_str())
}

impl Pattern {
    /// A one-line rendering for reports.
    pub fn display_lines(&self) -> Vec<String> {
        match self {
            Pattern::Lines(l) => l.clone(),
            Pattern::Regex { regex, .. } => vec![format!("/{}/", regex.as_str())],
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Anchor {
    pub id: String,
    pub file: String,
    pub pattern: Pattern,
    pub from: KafkaVersion,
    /// Last release it holds in; `None` = still holds in the newest, so it
    /// carries to releases newer than the matrix.
    pub to: Option<KafkaVersion>,
    pub hooks: Vec<String>,
    pub why: String,
    /// Text that must appear on one of the lines enclosing the match (a method
    /// or class header), so an anchor moved into another method is caught.
    pub enclosing: Option<String>,
    /// Line number of the entry in anchors.yaml, for error messages.
    pub line: usize,
}

impl Anchor {
    pub fn covers(&self, v: KafkaVersion) -> bool {
        self.from <= v && self.to.is_none_or(|to| v <= to)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSet {
    schema: u32,
    hooks: Vec<Hook>,
    anchors: Vec<RawAnchor>,
    #[serde(default)]
    guards: Vec<super::guards::RawGuard>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnchor {
    id: String,
    file: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    regex_reason: Option<String>,
    from: String,
    #[serde(default)]
    to: Option<String>,
    hooks: Vec<String>,
    why: String,
    #[serde(default)]
    enclosing: Option<String>,
}

#[derive(Clone, Debug)]
pub struct AnchorSet {
    pub hooks: Vec<Hook>,
    pub anchors: Vec<Anchor>,
    /// Upstream code each hook depends on without an edit there (`okp diff` reviews its changes).
    pub guards: Vec<super::guards::Guard>,
}

impl AnchorSet {
    pub fn parse(origin: &Origin) -> Result<AnchorSet, Error> {
        let raw: RawSet = super::yaml::parse(origin)?;
        if raw.schema != 1 {
            return Err(
                origin.error_at("schema", format!("unsupported schema {} (this okp reads schema 1)", raw.schema))
            );
        }
        let mut hook_ids = BTreeSet::new();
        for h in &raw.hooks {
            if !hook_ids.insert(h.id.clone()) {
                return Err(origin.error_at(&format!("id: {}", h.id), format!("hook `{}` is defined twice", h.id)));
            }
        }
        for &c in CONTRACT_HOOKS {
            if !hook_ids.contains(c) {
                return Err(origin.error_at("hooks:", format!("hook `{c}` of the observer contract is not defined")));
            }
        }
        for h in &raw.hooks {
            if CONTRACT_HOOKS.contains(&h.id.as_str()) && h.layer != Layer::Core {
                return Err(origin.error_at(
                    &format!("id: {}", h.id),
                    format!("hook `{}` is part of the observer contract: its layer is core", h.id),
                ));
            }
        }
        let mut ids = BTreeSet::new();
        let mut anchors = Vec::with_capacity(raw.anchors.len());
        for a in raw.anchors {
            let at = format!("id: {}", a.id);
            let line = origin.locate(&at).map_or(1, |(l, _)| l);
            let err = |msg: String| origin.error_at(&at, format!("anchor {}: {msg}", a.id));
            if a.id.is_empty()
                || !a.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
            {
                return Err(err("ids use lowercase letters, digits, dots and dashes".into()));
            }
            if !ids.insert(a.id.clone()) {
                return Err(err("is defined twice".into()));
            }
            if let Err(why) = confine(&a.file, None) {
                return Err(err(format!("file {:?} {why}", a.file)));
            }
            let pattern = match (a.text, a.regex) {
                (Some(t), None) => {
                    let lines: Vec<String> =
                        t.strip_suffix('\n').unwrap_or(&t).split('\n').map(str::to_string).collect();
                    if lines.iter().all(|l| l.trim().is_empty()) {
                        return Err(err("text is blank".into()));
                    }
                    if a.regex_reason.is_some() {
                        return Err(err("regex_reason goes with regex, not text".into()));
                    }
                    Pattern::Lines(lines)
                }
                (None, Some(r)) => {
                    let reason = a
                        .regex_reason
                        .filter(|s| !s.trim().is_empty())
                        .ok_or_else(|| err("a regex anchor needs regex_reason: why exact text cannot work".into()))?;
                    let regex = regex::Regex::new(&format!("^(?:{r})$")).map_err(|e| err(format!("bad regex: {e}")))?;
                    Pattern::Regex { regex, reason }
                }
                _ => return Err(err("needs exactly one of `text` or `regex`".into())),
            };
            let from: KafkaVersion = a.from.parse().map_err(|e: String| err(e))?;
            let to: Option<KafkaVersion> = a.to.as_deref().map(str::parse).transpose().map_err(|e: String| err(e))?;
            if let Some(to) = to {
                if to < from {
                    return Err(err(format!("`to` {to} is before `from` {from}")));
                }
            }
            if a.hooks.is_empty() {
                return Err(err("names no hook".into()));
            }
            for h in &a.hooks {
                if !hook_ids.contains(h) {
                    return Err(err(format!(
                        "names unknown hook `{h}` (defined: {})",
                        hook_ids.iter().cloned().collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            let layers: BTreeSet<Layer> =
                a.hooks.iter().filter_map(|h| raw.hooks.iter().find(|x| &x.id == h)).map(|h| h.layer).collect();
            if layers.len() > 1 {
                return Err(err("names hooks of different layers; an anchor belongs to one layer".into()));
            }
            if a.why.trim().is_empty() {
                return Err(err("needs a `why`".into()));
            }
            anchors.push(Anchor {
                id: a.id,
                file: a.file,
                pattern,
                from,
                to,
                hooks: a.hooks,
                why: a.why,
                enclosing: a.enclosing,
                line,
            });
        }
        let guards = super::guards::validate(raw.guards, &hook_ids, &ids, origin)?;
        Ok(AnchorSet { hooks: raw.hooks, anchors, guards })
    }

    /// The guards of the hooks a release carries in any of its modes, for `version`.
    pub fn guards_for(&self, release: &Release, version: KafkaVersion) -> Vec<&super::guards::Guard> {
        let hooks: BTreeSet<&str> =
            release.modes.iter().flat_map(|&m| self.hooks_for(release, m)).map(|h| h.id.as_str()).collect();
        self.guards.iter().filter(|g| hooks.contains(g.hook.as_str()) && g.covers(version)).collect()
    }

    /// Hooks a (release, mode) must carry, in every layer.
    pub fn hooks_for(&self, release: &Release, mode: Mode) -> Vec<&Hook> {
        self.hooks_in(release, mode, &Layers::all())
    }

    /// Hooks a (release, mode) must carry in `layers`.
    pub fn hooks_in(&self, release: &Release, mode: Mode, layers: &Layers) -> Vec<&Hook> {
        let scopes = Scope::needed(release, mode);
        self.hooks
            .iter()
            .filter(|h| scopes.contains(&h.scope) && layers.contains(h.layer))
            .filter(|h| h.from.is_none_or(|from| from <= release.version))
            .collect()
    }

    /// Anchors of every layer that must match exactly once in `version` for
    /// `mode` (what check-anchors and okp diff look at).
    /// `release` supplies the mode rules; for a release newer than the matrix
    /// pass the newest known release with `version` set to the new one.
    pub fn applicable<'a>(&'a self, release: &Release, version: KafkaVersion, mode: Mode) -> Vec<&'a Anchor> {
        self.applicable_in(release, version, mode, &Layers::all())
    }

    /// The anchors of `layers` only (what a build with those layers needs).
    pub fn applicable_in<'a>(
        &'a self,
        release: &Release,
        version: KafkaVersion,
        mode: Mode,
        layers: &Layers,
    ) -> Vec<&'a Anchor> {
        let hooks = self.hooks_in(release, mode, layers);
        self.anchors
            .iter()
            .filter(|a| a.covers(version))
            .filter(|a| a.hooks.iter().any(|h| hooks.iter().any(|x| &x.id == h)))
            .collect()
    }

    /// Every (release, mode) of the matrix must have an anchor for every hook it needs.
    pub fn check_coverage(&self, matrix: &Matrix, origin: &Origin) -> Result<(), Error> {
        let mut gaps: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &matrix.releases {
            for &mode in &r.modes {
                let anchors = self.applicable(r, r.version, mode);
                for h in self.hooks_for(r, mode) {
                    if !anchors.iter().any(|a| a.hooks.contains(&h.id)) {
                        gaps.entry(h.id.clone()).or_default().push(format!("{} {}", r.version, mode));
                    }
                }
            }
        }
        if let Some((hook, where_)) = gaps.into_iter().next() {
            return Err(origin
                .error_at(&format!("id: {hook}"), format!("hook `{hook}` has no anchor for {}", where_.join(", "))));
        }
        Ok(())
    }
}
