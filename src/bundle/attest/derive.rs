//! The attestations re-derived: what okp itself writes into `provenance.intoto.jsonl` and
//! `sbom.cdx.json` for the jars a bundle ships, made again from the jars' bytes, what the re-check
//! derived (`build::recheck`) and okp's own data, and compared field by field with what the bundle
//! carries. Any field okp would not write, with any value okp would not write, refuses the bundle
//! naming its path: a subject's digest of another algorithm, a patch removed or edited, a hash
//! added to a component, a changed build parameter.
//!
//! Derived: every subject (the jars' sha256); `externalParameters` (release, mode, layers and patch
//! set as the re-check found them, target as the signature binds it); `internalParameters.backend`
//! (`splice`: the re-check found each jar to be the release's jar with classes swapped in) and
//! `family`; `compilers.scalac` (the release's Scala compiler and the options okp compiles with);
//! the resolved dependencies' digests (the release jars, the sources jars and the Scala compiler's
//! jar from the Maven cache, every upstream file compiled from okp's patch set applied to the
//! release's sources); the SBOM's components, hashes, purls, ancestors, notes and serial number,
//! and its patches (okp's own patch set for the release, mode and layers: `edits`).
//!
//! MANIFEST.json's own `build`, `upstream.sources` and `provenance` are held to the same values
//! (its recompiled sources and their sha256, the sources jars' and the Scala compiler's digests,
//! backend and scalac options), so the record the documents are made from is itself derived.
//!
//! Only recorded (copied from MANIFEST.json or the SBOM, checked for nothing but their place):
//! javac's version line and the compilers' explanatory notes (`scalac_inputs`, `scalac_note`), the
//! tree the build read (`provenance.tree`), which sources jars the build read (a `--tree` build
//! read none), and the SBOM's `metadata.timestamp` (SOURCE_DATE_EPOCH of the bundle's maker).
//!
//! Not here: the checks that need only the bundle (`super::check`), the re-check (`build::recheck`).

use serde_json::Value;

use super::{provenance, sbom, Edits, PROVENANCE_FILE, SBOM_FILE};
use crate::build::recheck::Rechecked;
use crate::bundle::archive::File;
use crate::bundle::layout::{Inputs, JarInput};
use crate::bundle::manifest::{Artifact, Identity, Manifest};
use crate::error::{Error, Result};
use crate::hash::sha256;
use crate::workspace::Workspace;

/// At most this many differing fields are named.
const SHOWN: usize = 12;

/// Compares the bundle's attestations with the ones okp derives for it; none when the bundle has
/// none (made before okp wrote them: `super::check` says so). The outer error: okp could not
/// derive them (Maven Central unreachable, a JDK missing).
pub fn check(
    ws: &Workspace,
    files: &[File],
    m: &Manifest,
    id: &Identity,
    facts: &Rechecked,
) -> Result<Option<std::result::Result<String, String>>> {
    let find = |path: &str| files.iter().find(|f| f.path == path);
    let (Some(prov), Some(bom)) = (find(PROVENANCE_FILE), find(SBOM_FILE)) else { return Ok(None) };
    let inputs = derived_inputs(ws, files, m, id, facts)?;
    let mut problems = Vec::new();
    // The manifest's own record of the build, where it can be derived: what the attestations are
    // made from must be what they would be made from.
    let record = |b: &crate::bundle::manifest::Build,
                  u: &std::collections::BTreeMap<String, Artifact>,
                  p: &Option<Box<crate::build::proof::Provenance>>| {
        serde_json::json!({"build": b, "upstream.sources": u, "provenance": p})
    };
    diff(
        crate::bundle::manifest::FILE_NAME,
        &record(&m.build, &m.upstream.sources, &m.provenance),
        &record(&inputs.build, &inputs.sources, &inputs.provenance),
        &mut problems,
    );

    let want = serde_json::to_value(provenance::statement(&inputs)).unwrap_or_default();
    match statement_of(&prov.bytes) {
        Ok(found) => diff(&format!("{PROVENANCE_FILE}: statement"), &found, &want, &mut problems),
        Err(e) => problems.push(format!("{PROVENANCE_FILE}: {e}")),
    }

    match serde_json::from_slice::<Value>(&bom.bytes) {
        Ok(found) => {
            let timestamp = found.pointer("/metadata/timestamp").and_then(Value::as_str).map(str::to_string);
            let edits: Edits = super::edits(ws, &inputs)?;
            let want: Value = serde_json::from_str(&sbom::bom(&inputs, &edits, timestamp)).unwrap_or_default();
            diff(SBOM_FILE, &found, &want, &mut problems);
        }
        Err(e) => problems.push(format!("{SBOM_FILE}: not JSON: {e}")),
    }
    if problems.is_empty() {
        let patches = match serde_json::from_slice::<Value>(&bom.bytes) {
            Ok(v) => v["components"]
                .as_array()
                .map(|c| c.iter().map(|c| c["pedigree"]["patches"].as_array().map_or(0, Vec::len)).sum::<usize>())
                .unwrap_or(0),
            Err(_) => 0,
        };
        return Ok(Some(Ok(format!(
            "provenance and SBOM are what okp writes for these jars, field by field: subjects, parameters, \
             dependencies' digests and {patches} patches derived from the jars' bytes and okp's own data \
             (only recorded: javac's version, the tree read, the SBOM's timestamp)"
        ))));
    }
    let n = problems.len();
    let mut shown: Vec<String> = problems.into_iter().take(SHOWN).map(|p| crate::escape::one_line(&p)).collect();
    if n > SHOWN {
        shown.push(format!("… and {} more", n - SHOWN));
    }
    Ok(Some(Err(format!(
        "not what okp writes for these jars, derived from their bytes and okp's own data ({n} field(s)):\n{}",
        shown.join("\n")
    ))))
}

/// The statement inside the envelope, unauthenticated (the `dsse signature` check is separate).
fn statement_of(bytes: &[u8]) -> std::result::Result<Value, String> {
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let envelope: super::dsse::Envelope =
        serde_json::from_slice(line).map_err(|e| format!("not a DSSE envelope: {e}"))?;
    let payload = envelope.payload()?;
    serde_json::from_slice(&payload).map_err(|e| format!("payload: {e}"))
}

/// The inputs `okp bundle` had, as far as they can be derived: the manifest's, with every value
/// the re-check, the Maven cache or okp's own data gives put in its place.
fn derived_inputs(ws: &Workspace, files: &[File], m: &Manifest, id: &Identity, facts: &Rechecked) -> Result<Inputs> {
    let release = ws.release(id.release)?;
    let maven = &ws.maven;
    let file_sha = |c: &crate::model::Coordinate, classifier: Option<&str>| -> Result<String> {
        let p = maven.ensure(&[(c.clone(), classifier)])?.remove(0);
        Ok(sha256(&crate::fsx::read::input(&p, crate::fsx::read::MAX_JAR, "jar")?))
    };
    let mut jars = Vec::new();
    for j in &m.jars {
        let bytes = files
            .iter()
            .find(|f| f.path == j.path)
            .map(|f| f.bytes.clone())
            .ok_or_else(|| Error::Check(format!("MANIFEST.json: jars: {} is not in the bundle", j.path)))?;
        jars.push(JarInput {
            file_name: j.path.rsplit('/').next().unwrap_or(&j.path).to_string(),
            bytes,
            module: j.module.clone(),
            upstream: j.upstream.clone(),
            replaced: j.replaced.clone(),
            added: j.added.clone(),
            removed: j.removed.clone(),
        });
    }
    jars.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    // The sources jars the manifest names (a build from a tree names none): each the module's, with
    // the sha256 of Maven Central's.
    let mut sources = std::collections::BTreeMap::new();
    for module in m.upstream.sources.keys() {
        let c = release.sources.get(module).ok_or_else(|| {
            Error::Check(format!("MANIFEST.json: upstream.sources: {module} is not a source module of {}", id.release))
        })?;
        sources.insert(
            module.clone(),
            Artifact { coordinate: format!("{c}:sources"), sha256: file_sha(c, Some("sources"))? },
        );
    }
    let mut build = m.build.clone();
    build.backend = "splice".into();
    let scalac = crate::build::splice::scalac_recorded(release);
    if let Some(v) = build.compilers.get_mut("scalac") {
        v.clone_from(&scalac);
    }
    build.recompiled_sources = facts.sources.iter().map(|s| s.path.clone()).collect();
    let mut prov = m.provenance.clone();
    if let Some(p) = prov.as_mut() {
        p.sources = facts.sources.clone();
        if let Some(v) = p.compilers.get_mut("scala-compiler") {
            let c = crate::build::splice::scala_compiler(release);
            *v = format!("{c} sha256 {}", file_sha(&c, None)?);
        }
        if let Some(v) = p.compilers.get_mut("scalac-options") {
            *v = scalac.split_once(' ').map_or("", |(_, o)| o).to_string();
        }
        for a in &mut p.sources_jars {
            let c = release.sources.values().find(|c| format!("{c}:sources") == a.coordinate).ok_or_else(|| {
                Error::Check(format!(
                    "MANIFEST.json: provenance.sources_jars: {} is not a sources jar of {}",
                    a.coordinate, id.release
                ))
            })?;
            a.sha256 = file_sha(c, Some("sources"))?;
        }
    }
    Ok(Inputs {
        id: *id,
        family: ws
            .patch_set()?
            .effective(&ws.model, release, id.release, id.mode, &crate::model::Layers::with(&m.layers))
            .family,
        patch_set_hash: m.patch_set_hash.clone(),
        layers: m.layers.clone(),
        build,
        sources,
        provenance: prov,
        jars,
        license: Vec::new(),
        upstream_notice: String::new(),
    })
}

/// A value as a message shows it: short, or its length and sha256 when long (a diff's text).
fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 80 {
        s
    } else {
        let head: String = s.chars().take(60).collect();
        format!("{head}… ({} characters, sha256 {})", s.len(), &sha256(s.as_bytes())[..16])
    }
}

/// An array element's name in a path: its `bom-ref` or `name` when it has one.
fn label(i: usize, v: &Value) -> String {
    match v.get("bom-ref").or_else(|| v.get("name")).and_then(Value::as_str) {
        Some(n) => format!("[{n}]"),
        None => format!("[{i}]"),
    }
}

/// Every path where `found` is not `want`, as `path: found …, expected …`.
fn diff(path: &str, found: &Value, want: &Value, out: &mut Vec<String>) {
    match (found, want) {
        (Value::Object(f), Value::Object(w)) => {
            for (k, wv) in w {
                match f.get(k) {
                    Some(fv) => diff(&format!("{path}.{k}"), fv, wv, out),
                    None => out.push(format!("{path}.{k}: missing, expected {}", shown(wv))),
                }
            }
            for (k, fv) in f.iter().filter(|(k, _)| !w.contains_key(*k)) {
                out.push(format!("{path}.{k}: {} is not a field okp writes here", shown(fv)));
            }
        }
        (Value::Array(f), Value::Array(w)) => {
            if f.len() != w.len() {
                out.push(format!("{path}: {} entries, expected {}", f.len(), w.len()));
            }
            for (i, (fv, wv)) in f.iter().zip(w).enumerate() {
                diff(&format!("{path}{}", label(i, wv)), fv, wv, out);
            }
        }
        (Value::String(f), Value::String(w)) if f != w && (f.len() > 80 || w.len() > 80) => {
            // A long text (a diff): its first line that differs.
            let (fl, wl): (Vec<&str>, Vec<&str>) = (f.lines().collect(), w.lines().collect());
            let n = fl.iter().zip(&wl).position(|(a, b)| a != b).unwrap_or(fl.len().min(wl.len()));
            let line = |l: &[&str]| l.get(n).map_or("(none)".to_string(), |s| shown(&Value::String(s.to_string())));
            out.push(format!(
                "{path}: line {} is {}, expected {} ({} lines, expected {})",
                n + 1,
                line(&fl),
                line(&wl),
                fl.len(),
                wl.len()
            ));
        }
        (f, w) if f != w => out.push(format!("{path}: {}, expected {}", shown(f), shown(w))),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_names_each_path_that_differs() {
        let want = serde_json::json!({"a": [{"name": "x", "d": {"sha256": "1"}}], "b": 1});
        let found = serde_json::json!({"a": [{"name": "x", "d": {"sha256": "1", "sha512": "2"}}], "c": 3});
        let mut out = Vec::new();
        diff("f", &found, &want, &mut out);
        assert_eq!(
            out,
            [
                "f.a[x].d.sha512: \"2\" is not a field okp writes here",
                "f.b: missing, expected 1",
                "f.c: 3 is not a field okp writes here"
            ]
        );
        let mut out = Vec::new();
        diff("p", &serde_json::json!([1]), &serde_json::json!([1, 2]), &mut out);
        assert_eq!(out, ["p: 1 entries, expected 2"]);
        let long = |x: &str| serde_json::Value::String(format!("{}\n+ {x}\n", "context ".repeat(12)));
        let mut out = Vec::new();
        diff("d", &long("PATCX"), &long("PATCH"), &mut out);
        assert_eq!(out, ["d: line 2 is \"+ PATCX\", expected \"+ PATCH\" (2 lines, expected 2)"]);
    }
}
