//! The patch set as data (patches/edits.yaml): our new source files and the
//! hook edits, each attached to an anchor. An edit applies to a (release,
//! mode) exactly when its anchor does, so the effective edits of a release
//! follow from anchors.yaml; versions.yaml's `family` names each distinct
//! set, and loading checks that the names tell the truth.
//!
//! Not here: finding anchors in files (see `anchor`) or writing (see `apply`).

use std::collections::BTreeMap;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::model::anchors::Scope;
use crate::model::confine::confine;
use crate::model::{yaml, Anchor, Layer, Layers, Mode, Model, Origin, Release};
use crate::version::KafkaVersion;

include!(concat!(env!("OUT_DIR"), "/patch_files.rs"));

/// Text that opens and closes every block okp inserts, so `grep` finds all of it.
pub const MARK_BEGIN: &str = "// OBSERVER PATCH:";
pub const MARK_END: &str = "// END OBSERVER PATCH";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// The block goes on the lines right before the anchor.
    InsertBefore,
    /// The block goes on the lines right after the anchor (after its last line).
    InsertAfter,
    /// The anchor's lines are replaced by the block.
    Replace,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Edit {
    pub id: String,
    pub anchor: String,
    pub op: Op,
    pub why: String,
    /// Lines as they stand in the patched file, indentation included.
    pub code: Vec<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct NewFile {
    /// Where it goes in the Kafka tree.
    pub path: String,
    /// Where it lives under patches/.
    pub source: String,
    pub scope: Scope,
    pub layer: Layer,
    #[serde(skip)]
    pub contents: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSet {
    schema: u32,
    new_files: Vec<RawNewFile>,
    edits: Vec<RawEdit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNewFile {
    path: String,
    source: String,
    scope: Scope,
    #[serde(default)]
    layer: Layer,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEdit {
    id: String,
    anchor: String,
    op: Op,
    why: String,
    code: String,
}

#[derive(Clone, Debug)]
pub struct PatchSet {
    pub new_files: Vec<NewFile>,
    pub edits: Vec<Edit>,
}

/// What a (release, mode) gets.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Effective<'a> {
    pub release: KafkaVersion,
    pub mode: Mode,
    pub family: String,
    /// The layers taken: core, plus the optional ones asked for.
    pub layers: Layers,
    pub new_files: Vec<&'a NewFile>,
    pub edits: Vec<(&'a Edit, &'a Anchor)>,
    /// sha256 over the edits and new files, identifying this patch set version.
    pub hash: String,
}

impl PatchSet {
    /// Loads patches/ from `dir`, or the copy embedded at build time.
    pub fn load(dir: Option<&std::path::Path>, model: &Model) -> Result<PatchSet, Error> {
        let file = |rel: &str| -> Result<Option<String>, Error> {
            match dir {
                Some(d) => crate::fsx::read::text_if_any(&d.join(rel), crate::fsx::read::MAX_SOURCE, "patch set file"),
                None => Ok(PATCH_FILES.iter().find(|(p, _)| *p == rel).map(|(_, c)| c.to_string())),
            }
        };
        let origin = match dir {
            Some(d) => {
                let path = d.join("edits.yaml");
                match yaml::read(&path, yaml::Input::Data) {
                    Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                        return Err(Error::Usage(format!("{} does not exist", path.display())))
                    }
                    read => read?,
                }
            }
            None => {
                let name = "patches/edits.yaml (embedded)";
                Origin::new(name, file("edits.yaml")?.ok_or_else(|| Error::Usage(format!("{name} does not exist")))?)
            }
        };
        let raw: RawSet = yaml::parse(&origin)?;
        if raw.schema != 1 {
            return Err(
                origin.error_at("schema", format!("unsupported schema {} (this okp reads schema 1)", raw.schema))
            );
        }
        let mut new_files = Vec::new();
        for (i, f) in raw.new_files.into_iter().enumerate() {
            let err = |m: String| origin.error_at(&format!("path: {}", f.path), m);
            if let Err(why) = confine(&f.path, None) {
                return Err(err(format!("new_files[{i}].path {:?} {why}", f.path)));
            }
            // Read from the --patches directory: nothing may lead out of it, a symlink neither.
            if let Err(why) = confine(&f.source, dir) {
                return Err(err(format!("new_files[{i}].source {:?} {why}", f.source)));
            }
            let contents =
                file(&f.source)?.ok_or_else(|| err(format!("new file source patches/{} does not exist", f.source)))?;
            // The header's words are split here so this file does not carry them itself.
            if contents.contains(concat!("Licensed to the Apache ", "Software Foundation")) {
                return Err(err(format!(
                    "patches/{} carries the ASF licence header: only our own code belongs here",
                    f.source
                )));
            }
            new_files.push(NewFile { path: f.path, source: f.source, scope: f.scope, layer: f.layer, contents });
        }
        let mut edits: Vec<Edit> = Vec::new();
        for e in raw.edits {
            let err = |m: String| origin.error_at(&format!("id: {}", e.id), format!("edit {}: {m}", e.id));
            if edits.iter().any(|x| x.id == e.id) {
                return Err(err("is defined twice".into()));
            }
            let Some(anchor) = model.anchors.anchors.iter().find(|a| a.id == e.anchor) else {
                return Err(err(format!("names unknown anchor `{}`", e.anchor)));
            };
            let code: Vec<String> =
                e.code.strip_suffix('\n').unwrap_or(&e.code).split('\n').map(str::to_string).collect();
            if code.iter().all(|l| l.trim().is_empty()) {
                return Err(err("has no code".into()));
            }
            // The proof reads which method holds an edit from the marker's indentation: a
            // replacement indented less than the line it replaces would be placed outside it.
            if let (Op::Replace, crate::model::anchors::Pattern::Lines(want)) = (e.op, &anchor.pattern) {
                let indent = |l: &str| l.len() - l.trim_start().len();
                let (first, at) = (code.iter().find(|l| !l.trim().is_empty()), want.first());
                if let (Some(first), Some(at)) = (first, at) {
                    if indent(first) != indent(at) {
                        return Err(err(format!(
                            "replaces anchor `{}` (indented {}) with code indented {}: a replacement starts at \
                             its anchor's indentation",
                            e.anchor,
                            indent(at),
                            indent(first)
                        )));
                    }
                }
            }
            if e.why.trim().is_empty() || e.why.contains('\n') {
                return Err(err("needs a one-line `why` (it becomes the marker comment)".into()));
            }
            edits.push(Edit { id: e.id, anchor: e.anchor, op: e.op, why: e.why, code });
        }
        for l in Layer::OPTIONAL {
            if !new_files.iter().any(|f| f.layer == l) && !model.anchors.hooks.iter().any(|h| h.layer == l) {
                return Err(origin.error_at("edits:", format!("layer {l} has neither hooks nor new files")));
            }
        }
        let set = PatchSet { new_files, edits };
        set.check_families(model, &origin)?;
        Ok(set)
    }

    /// The edits and files a (release, mode) gets with `layers`. `release` gives the mode
    /// rules; `version` places the anchors (they differ for a release newer than the matrix).
    pub fn effective<'a>(
        &'a self,
        model: &'a Model,
        release: &Release,
        version: KafkaVersion,
        mode: Mode,
        layers: &Layers,
    ) -> Effective<'a> {
        let anchors = model.anchors.applicable_in(release, version, mode, layers);
        let scopes = Scope::needed(release, mode);
        let edits: Vec<(&Edit, &Anchor)> =
            self.edits.iter().filter_map(|e| anchors.iter().find(|a| a.id == e.anchor).map(|a| (e, *a))).collect();
        let new_files: Vec<&NewFile> =
            self.new_files.iter().filter(|f| scopes.contains(&f.scope) && layers.contains(f.layer)).collect();
        let hash = hash_of(&edits, &new_files);
        Effective {
            release: version,
            mode,
            family: release.family.clone(),
            layers: layers.clone(),
            new_files,
            edits,
            hash,
        }
    }

    /// Releases that share a family name must get the same core edits (same
    /// anchors, same code) per mode, or the name would lie. Optional layers
    /// have release ranges of their own (docs/hook-sites.md), so a family
    /// names the core set only; every layer must still cover every hook.
    fn check_families(&self, model: &Model, origin: &Origin) -> Result<(), Error> {
        let mut seen: BTreeMap<(String, Mode), (KafkaVersion, String)> = BTreeMap::new();
        for r in &model.matrix.releases {
            for &m in &r.modes {
                let eff = self.effective(model, r, r.version, m, &Layers::core());
                let fingerprint = eff.hash.clone();
                match seen.get(&(r.family.clone(), m)) {
                    Some((first, fp)) if *fp != fingerprint => {
                        return Err(origin.error_at(
                            "edits:",
                            format!("releases {first} and {} are both family {} but get different {m} edits; give one of them its own family in versions.yaml", r.version, r.family),
                        ));
                    }
                    Some(_) => {}
                    None => {
                        seen.insert((r.family.clone(), m), (r.version, fingerprint));
                    }
                }
                // Every hook a mode needs must have at least one edit, in every layer.
                let eff = self.effective(model, r, r.version, m, &Layers::all());
                for h in model.anchors.hooks_for(r, m) {
                    if !eff.edits.iter().any(|(_, a)| a.hooks.contains(&h.id)) {
                        return Err(origin
                            .error_at("edits:", format!("release {} {m}: hook `{}` has no edit", r.version, h.id)));
                    }
                }
            }
        }
        Ok(())
    }
}

fn hash_of(edits: &[(&Edit, &Anchor)], files: &[&NewFile]) -> String {
    let mut h = Sha256::new();
    h.update(b"okp-patch-set-v1\n");
    for (e, a) in edits {
        h.update(format!("edit {} {} {:?} {}\n", e.id, a.id, e.op, e.why).as_bytes());
        for l in a.pattern.display_lines().iter().chain(e.code.iter()) {
            h.update(l.as_bytes());
            h.update(b"\n");
        }
    }
    for f in files {
        h.update(format!("file {}\n", f.path).as_bytes());
        h.update(Sha256::digest(f.contents.as_bytes()));
    }
    crate::hash::hex(&h.finalize())
}

/// The block an edit inserts: its code between the markers, at the
/// indentation of its first non-blank line.
pub fn marked_block(edit: &Edit) -> Vec<String> {
    let indent: String = edit
        .code
        .iter()
        .find(|l| !l.trim().is_empty())
        .map(|l| l[..l.len() - l.trim_start().len()].to_string())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(edit.code.len() + 2);
    out.push(format!("{indent}{MARK_BEGIN} {}", edit.why));
    out.extend(edit.code.iter().cloned());
    out.push(format!("{indent}{MARK_END}"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patch set in the binary is this checkout's: the same files under patches/ (but
    /// patches/tests/), byte for byte. Fails when a build embedded another checkout's copy.
    #[test]
    fn the_embedded_patch_set_is_this_checkouts() {
        fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<(String, String)>) {
            for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
                let p = e.path();
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                if p.is_dir() {
                    if rel != "tests" {
                        walk(&p, root, out);
                    }
                } else {
                    out.push((rel, String::from_utf8(std::fs::read(&p).unwrap()).unwrap()));
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("patches");
        let mut on_disk = Vec::new();
        walk(&root, &root, &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<(String, String)> =
            PATCH_FILES.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect();
        embedded.sort();
        let names = |v: &[(String, String)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
        assert_eq!(names(&embedded), names(&on_disk), "the files embedded are not patches/'s");
        for ((p, a), (_, b)) in embedded.iter().zip(&on_disk) {
            assert!(a == b, "patches/{p}: the embedded copy differs from the checkout's");
        }
    }
}
