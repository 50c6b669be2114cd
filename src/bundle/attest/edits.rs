//! okp's edits as the SBOM lists them: per module, one patch per hook with the unified diff of
//! that hook's edits, then one per new file of the patch set. An edit whose anchor serves several
//! hooks sits under the first of them (in anchors.yaml's order) and nowhere else; that patch's
//! `resolves` names the others too. Each diff is taken against the file as the patches before it
//! left it, so the patches applied in order (`git apply`, one after another, on the release's
//! sources) give exactly `okp export`'s tree. The edits are okp's own data (the effective patch set
//! of the build's release, mode and layers), never read from the build record; their hash must be
//! the build's, or the SBOM would describe edits the jars do not carry.
//!
//! The upstream text comes from the release's sources jars (the tree `okp export` reads by
//! default); a release Maven Central has no sources jar of gets patches that name their hook
//! but carry no diff, and the SBOM says why.
//!
//! Not here: planning the edits (`apply`), the SBOM's form (`sbom`).

use std::collections::BTreeMap;

use crate::apply::{self, Change, Plan};
use crate::bundle::layout::Inputs;
use crate::error::{Error, Result};
use crate::model::Layers;
use crate::source::Spec;
use crate::workspace::Workspace;

/// A hook as the SBOM names it (`anchors.yaml`).
#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    pub id: String,
    pub site: String,
    pub rule: String,
}

/// One patch: the edits of one hook in one module, or one new file (`hook` none).
#[derive(Clone, Debug, PartialEq)]
pub struct HookPatch {
    /// The source module (`core`, `metadata`): the jar the patch went into.
    pub module: String,
    pub hook: Option<Hook>,
    /// Other hooks one of its edits also serves (the anchor names several): no other patch holds them.
    pub also: Vec<Hook>,
    /// A unified diff `git apply` takes on the release's sources; none when they are not published.
    pub diff: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Edits {
    pub patches: Vec<HookPatch>,
    /// Why the patches carry no diff, when they do not.
    pub without_diffs: Option<String>,
}

/// The module of a repository path: its first directory (`core/src/...` → `core`).
fn module_of(path: &str) -> String {
    path.split('/').next().unwrap_or(path).to_string()
}

/// The edits of the build `i` describes, with their diffs.
pub fn edits(ws: &Workspace, i: &Inputs) -> Result<Edits> {
    let (version, mode) = (i.id.release, i.id.mode);
    let release = ws.release(version)?;
    let layers = Layers::with(&i.layers);
    let eff = ws.patch_set()?.effective(&ws.model, release, version, mode, &layers);
    if eff.hash != i.patch_set_hash {
        return Err(Error::Usage(format!(
            "the build's patch set is {}, but the one this okp holds for {version} {mode} ({}) is {}: the \
             bundle's SBOM could not tell its edits; bundle with the okp (or the --patches) that built it",
            i.patch_set_hash,
            layers.label(),
            eff.hash
        )));
    }
    let tree = match &release.no_sources_jar {
        Some(_) => None,
        None => {
            Some(ws.open(Spec::Release { version, hint: "the SBOM's diffs are against the release's sources jars" })?)
        }
    };
    let hooks = ws.model.anchors.hooks_in(release, mode, &layers);
    let hook = |id: &str| {
        hooks.iter().find(|h| h.id == id).map(|h| Hook { id: h.id.clone(), site: h.site.clone(), rule: h.rule.clone() })
    };
    // Each edit under the first of its hooks that applies here, exactly once.
    let first_hook = |a: &crate::model::Anchor| hooks.iter().position(|h| a.hooks.contains(&h.id));
    let mut patches = Vec::new();
    // The edits already in a patch, and the text they make of each file: the next diff is taken
    // against it.
    let mut done: Vec<(&crate::patchset::Edit, &crate::model::Anchor)> = Vec::new();
    let mut state: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (n, h) in hooks.iter().enumerate() {
        let mut by_module: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for e in eff.edits.iter().filter(|(_, a)| first_hook(a) == Some(n)) {
            by_module.entry(module_of(&e.1.file)).or_default().push(*e);
        }
        for (module, edits) in by_module {
            let mut also: Vec<Hook> = Vec::new();
            for (_, a) in &edits {
                for id in a.hooks.iter().filter(|id| **id != h.id) {
                    if let Some(k) = hook(id).filter(|k| !also.contains(k)) {
                        also.push(k);
                    }
                }
            }
            let diff = match &tree {
                None => None,
                Some(t) => {
                    // The files this patch touches, with every edit already in a patch and its own.
                    let files: Vec<&str> = edits.iter().map(|(_, a)| a.file.as_str()).collect();
                    let cumulative: Vec<_> = done
                        .iter()
                        .filter(|(_, a)| files.contains(&a.file.as_str()))
                        .chain(edits.iter())
                        .copied()
                        .collect();
                    let only = crate::patchset::Effective { edits: cumulative, new_files: vec![], ..eff.clone() };
                    let mut changes = Vec::new();
                    for c in apply::plan(&only, t.as_ref())?.changes {
                        let from = state.get(&c.path).cloned().or(c.before);
                        state.insert(c.path.clone(), c.after.clone());
                        if from.as_deref() != Some(c.after.as_slice()) {
                            changes.push(Change { path: c.path, before: from, after: c.after });
                        }
                    }
                    Some(apply::unified_diff(&Plan { changes }))
                }
            };
            done.extend(edits.iter().copied());
            patches.push(HookPatch { module, hook: hook(&h.id), also, diff });
        }
    }
    for f in &eff.new_files {
        let change = Change { path: f.path.clone(), before: None, after: f.contents.clone().into_bytes() };
        let diff = apply::unified_diff(&Plan { changes: vec![change] });
        patches.push(HookPatch { module: module_of(&f.path), hook: None, also: vec![], diff: Some(diff) });
    }
    let without_diffs = release.no_sources_jar.as_ref().map(|why| {
        format!(
            "release {version} has no sources jar on Maven Central ({why}); `okp export --version {version} \
             --mode {mode} --source DIR` renders the diff on a checkout"
        )
    });
    Ok(Edits { patches, without_diffs })
}
