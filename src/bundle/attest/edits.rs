//! okp's edits as the SBOM lists them: one patch per hook (and module) with the unified diff of
//! that hook's edits alone against the release's file, then one per new file of the patch set.
//! The edits are okp's own data (the effective patch set of the build's release, mode and
//! layers), never read from the build record; their hash must be the build's, or the SBOM would
//! describe edits the jars do not carry.
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
    let mut patches = Vec::new();
    for h in ws.model.anchors.hooks_in(release, mode, &layers) {
        let mut by_module: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for e in eff.edits.iter().filter(|(_, a)| a.hooks.contains(&h.id)) {
            by_module.entry(module_of(&e.1.file)).or_default().push(*e);
        }
        for (module, edits) in by_module {
            let diff = match &tree {
                None => None,
                Some(t) => {
                    let only = crate::patchset::Effective { edits, new_files: vec![], ..eff.clone() };
                    Some(apply::unified_diff(&apply::plan(&only, t.as_ref())?))
                }
            };
            let hook = Hook { id: h.id.clone(), site: h.site.clone(), rule: h.rule.clone() };
            patches.push(HookPatch { module, hook: Some(hook), diff });
        }
    }
    for f in &eff.new_files {
        let change = Change { path: f.path.clone(), before: None, after: f.contents.clone().into_bytes() };
        let diff = apply::unified_diff(&Plan { changes: vec![change] });
        patches.push(HookPatch { module: module_of(&f.path), hook: None, diff: Some(diff) });
    }
    let without_diffs = release.no_sources_jar.as_ref().map(|why| {
        format!(
            "release {version} has no sources jar on Maven Central ({why}); `okp export --version {version} \
             --mode {mode} --source DIR` renders the diff on a checkout"
        )
    });
    Ok(Edits { patches, without_diffs })
}
