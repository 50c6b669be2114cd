//! `okp bundle`: from a build directory (patched jars + okp-build.json) to a
//! signed, reproducible bundle and its sidecars. Stages: read and check the
//! build record against the jars and the release matrix → gather the upstream
//! identity → lay out the files (pure, `layout`) and the attestations
//! (`attest`) → check native code for the target → manifest → archive → sign →
//! write everything atomically → verify the result as a user would.
//!
//! Not here: reading okp-build.json (`build::record`), the manifest's schema
//! (`manifest`), checking a bundle (`verify`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::archive;
use super::attest;
use super::layout::{self, JarInput};
use super::manifest::{is_sha256, Artifact, Build, Identity, Manifest};
use super::sign;
use super::target::{self, Target};
use super::verify;
use crate::build::record::{self, BuildRecord};
use crate::error::{Error, Result};
use crate::model::Coordinate;
use crate::workspace::Workspace;

pub struct Options<'a> {
    pub build_dir: &'a Path,
    pub target: Target,
    pub key: &'a Path,
    pub out: &'a Path,
    pub gpg_key: Option<&'a str>,
    /// For a release without a sources jar: the tree the build read (`recheck`).
    pub source: Option<&'a dyn crate::source::SourceTree>,
}

/// What was written.
pub struct Made {
    pub bundle: PathBuf,
    pub sidecars: Vec<PathBuf>,
    pub manifest: Manifest,
    pub size: u64,
}

fn bad(dir: &Path, msg: String) -> Error {
    Error::Tree { path: dir.join(record::FILE_NAME), msg }
}

/// An entry of the jar `jar` (its bytes; `path` names it in errors), by name (LICENSE, NOTICE at
/// its root): None when the jar has no such entry or cannot be read as one, an error when the
/// entry is over `fsx::read::MAX_ENTRY`.
fn jar_entry(jar: &[u8], path: &Path, name: &str) -> Result<Option<Vec<u8>>> {
    let Ok(mut z) = zip::ZipArchive::new(std::io::Cursor::new(jar)) else { return Ok(None) };
    let Ok(mut e) = z.by_name(name) else { return Ok(None) };
    crate::fsx::zip_entry::read(&mut e, path, crate::fsx::read::MAX_ENTRY).map(Some)
}

/// Reads the build record and checks it against the jars beside it, the matrix, and what the
/// jars' bytes show (`BuildRecord::read_and_recheck`: nothing the record says is taken on trust).
fn inputs(
    ws: &Workspace,
    dir: &Path,
    target: Target,
    source: Option<&dyn crate::source::SourceTree>,
) -> Result<layout::Inputs> {
    let model = &ws.model;
    let rec = BuildRecord::read(dir)?;
    // The record's values that end up inside install.sh, checked for form first (bad input, exit 2):
    // only hex, plain jar names, coordinates of the release.
    if !is_sha256(&rec.patch_set_hash) {
        return Err(bad(
            dir,
            format!("patch_set_hash `{}` is not a sha256", crate::escape::one_line(&rec.patch_set_hash)),
        ));
    }
    for j in &rec.jars {
        if !is_sha256(&j.upstream_sha256) || !is_sha256(&j.sha256) {
            return Err(bad(dir, format!("jar {}: sha256 values must be 64 lower-case hex digits", j.splice.jar)));
        }
        let coord: Coordinate = j.upstream.parse().map_err(|e: String| bad(dir, e))?;
        let expected_name = format!("{}-{}.jar", coord.artifact, coord.version);
        if j.splice.jar != expected_name
            || !record::plain_file_name(&j.splice.jar)
            || coord.version != rec.release.to_string()
        {
            return Err(bad(
                dir,
                format!("jar {} does not match its upstream {} of release {}", j.splice.jar, j.upstream, rec.release),
            ));
        }
    }
    // Only jars shown to be the release plus exactly our edits are shipped: the jars' bytes must show
    // what the record says, re-derived here with okp's own data (release, mode, layers, the jar set,
    // the patch-set hash, every entry and member, and that the recorded proof passed, enforced).
    let (bytes, facts) = rec.read_and_recheck(ws, dir, source)?;
    facts.note("");
    let provenance = rec.provenance.clone().ok_or_else(|| Error::Check("no provenance (a defect in okp)".into()))?;
    let (release_v, mode) = (rec.release, rec.mode);
    let release = model.matrix.require(release_v)?;
    let id = Identity { release: release_v, mode, target };
    let mut jars = Vec::new();
    for (j, bytes) in rec.jars.iter().zip(bytes) {
        jars.push(JarInput {
            file_name: j.splice.jar.clone(),
            bytes,
            module: j.module.clone(),
            upstream: Artifact { coordinate: j.upstream.clone(), sha256: j.upstream_sha256.clone() },
            replaced: j.splice.replaced.clone(),
            added: j.splice.added.clone(),
            removed: j.splice.removed.clone(),
        });
    }
    jars.sort_by(|a, b| a.file_name.cmp(&b.file_name));

    // The upstream sources the build read: the release's sources jars, by sha256 (as the proof
    // recorded them). A build from a checkout or a git revision read no sources jar: the
    // manifest's provenance names its tree instead.
    let modules: Vec<(&String, &Coordinate)> =
        release.sources.iter().filter(|(m, _)| jars.iter().any(|j| &j.module == *m)).collect();
    let mut sources = BTreeMap::new();
    for (module, c) in modules {
        let coordinate = format!("{c}:sources");
        if let Some(a) = provenance.sources_jars.iter().find(|a| a.coordinate == coordinate) {
            sources.insert(module.clone(), Artifact { coordinate, sha256: a.sha256.clone() });
        }
    }

    let core = jars.iter().find(|j| j.module == "core").ok_or_else(|| bad(dir, "no core jar".into()))?;
    let core_path = dir.join(&core.file_name);
    let license = jar_entry(&core.bytes, &core_path, "LICENSE")?
        .ok_or_else(|| bad(dir, format!("{} has no LICENSE entry to ship", core.file_name)))?;
    let notice = jar_entry(&core.bytes, &core_path, "NOTICE")?
        .ok_or_else(|| bad(dir, format!("{} has no NOTICE entry to ship", core.file_name)))?;
    Ok(layout::Inputs {
        id,
        family: rec.family,
        patch_set_hash: rec.patch_set_hash,
        layers: rec.layers,
        build: Build { backend: rec.backend, compilers: rec.compilers, recompiled_sources: rec.sources },
        sources,
        provenance: Some(provenance),
        jars,
        license,
        upstream_notice: String::from_utf8_lossy(&notice).into_owned(),
    })
}

/// Writes `bytes` to `path` through a temporary file in the same directory.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| Error::io(format!("cannot create a file in {}", dir.display()), e))?;
    std::io::Write::write_all(&mut tmp, bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(path).map_err(|e| Error::io(format!("cannot write {}", path.display()), e.error))?;
    Ok(())
}

pub fn make(ws: &Workspace, o: &Options) -> Result<Made> {
    let inputs = inputs(ws, o.build_dir, o.target, o.source)?;
    // The key signs the provenance inside the bundle as well as the bundle: loaded before anything
    // is laid out, so a wrong password leaves no half-made bundle.
    let sk = sign::load_secret(o.key)?;
    let mtime = archive::source_date_epoch().map_err(Error::Usage)?;
    let mut files = layout::files(&inputs);
    files.extend(attest::files(&inputs, &attest::edits(ws, &inputs)?, &sign::Ed25519Signer::new(&sk)?, mtime));
    files.sort_by(|a, b| a.path.cmp(&b.path));

    let mut native = Vec::new();
    let mut problems = Vec::new();
    for f in &files {
        match target::scan(&f.path, &f.bytes, o.target) {
            Ok(found) => native.extend(found),
            Err(p) => problems.extend(p),
        }
    }
    if !problems.is_empty() {
        return Err(Error::Usage(format!(
            "native code in the bundle does not fit {}:\n  {}",
            o.target,
            problems.join("\n  ")
        )));
    }
    let manifest = layout::manifest(&inputs, &files, native);
    if let Err(problems) = manifest.validate() {
        return Err(Error::Usage(format!("the bundle's manifest would be inconsistent:\n  {}", problems.join("\n  "))));
    }
    let mut all = files;
    all.push(archive::File {
        path: super::manifest::FILE_NAME.into(),
        mode: archive::MODE_FILE,
        bytes: manifest.to_json().into_bytes(),
    });

    let name = inputs.id.name();
    let file_name = format!("{name}.tar.gz");
    let bytes = archive::write(&name, &all, mtime).map_err(|e| Error::io("cannot write the bundle archive", e))?;

    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let minisig = sign::sign(&sk, &bytes, &sign::trusted_comment(&file_name, &inputs.id, &inputs.patch_set_hash, now))?;
    let (s256, s512) = verify::sidecars(&file_name, &bytes);

    // Check the result the way a user will, before anything is written.
    let pk = minisign::PublicKey::from_secret_key(&sk)
        .map_err(|e| Error::Usage(format!("cannot derive the public key: {e}")))?;
    let outcome = verify::verify(&verify::Inputs {
        file_name: &file_name,
        bundle: &bytes,
        pubkey: Some(&pk),
        minisig: verify::Sidecar::Text(&minisig),
        sha256_file: verify::Sidecar::Text(&s256),
        sha512_file: verify::Sidecar::Text(&s512),
        pins: &super::pins::Pins::default(),
        read_unauthenticated: false,
    });
    if !outcome.verified() {
        return Err(Error::External(format!(
            "the bundle okp just made does not verify (a defect in okp); nothing was written:\n{}",
            verify::render(&outcome, &file_name)
        )));
    }
    std::fs::create_dir_all(o.out).map_err(|e| Error::io(format!("cannot create {}", o.out.display()), e))?;
    let bundle = o.out.join(&file_name);
    let mut sidecars = Vec::new();
    for (ext, content) in [("sha256", s256.as_bytes()), ("sha512", s512.as_bytes()), ("minisig", minisig.as_bytes())] {
        let p = o.out.join(format!("{file_name}.{ext}"));
        write_atomic(&p, content)?;
        sidecars.push(p);
    }
    write_atomic(&bundle, &bytes)?;
    // A stale .asc from an earlier run would sign other bytes.
    let asc = o.out.join(format!("{file_name}.asc"));
    let _ = std::fs::remove_file(&asc);
    if let Some(k) = o.gpg_key {
        sidecars.push(sign::gpg_sign(&bundle, k)?);
    }

    Ok(Made { bundle, sidecars, manifest, size: bytes.len() as u64 })
}
