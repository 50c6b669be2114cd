//! The jars under test: `--jars DIR` or the patched-jar cache (a splice build per release, mode
//! and patch-set hash), either taken only after the build re-check (`build::recheck`: the jars
//! re-derived from their bytes against their build record). `okp unit-tests`, `playground`,
//! `dev-cluster`, `bench` and `--soak` take their jars here too, so its notes name the jars, not
//! a command.
//!
//! Not here: building (`build::splice`), the re-check itself (`build::recheck`), the runtime
//! classpath (`cluster::runtime`).

use std::path::{Path, PathBuf};

use crate::build::record::BuildRecord;
use crate::build::splice;
use crate::error::{Error, Result};
use crate::model::{Layers, Mode, Release};
use crate::workspace::Workspace;

/// What the notes of this stage start with (`okp: patched jars: …`).
const NOTE: &str = "patched jars: ";

/// The release's sources a `--jars` build read (`--tree DIR`, `--git REPO --rev REV`): where the
/// re-check finds okp's edits in a release Maven Central has no sources jar of (4.2.2, 4.3.2, 4.4.0).
#[derive(Clone, Debug)]
pub enum JarsSource {
    Tree(PathBuf),
    Git { repo: PathBuf, rev: String },
}

/// Patched jars: `--jars DIR` (a build's output), else a splice build cached
/// per release, mode and patch-set hash (a changed patch set builds anew).
pub fn patched_jars(
    ws: &Workspace,
    release: &Release,
    mode: Mode,
    layers: &Layers,
    jars: Option<&Path>,
) -> Result<BuildRecord> {
    patched_jars_from(ws, release, mode, layers, jars, None)
}

/// [`patched_jars`], with `--jars`' re-check reading the release's sources from `source`.
pub fn patched_jars_from(
    ws: &Workspace,
    release: &Release,
    mode: Mode,
    layers: &Layers,
    jars: Option<&Path>,
    source: Option<&JarsSource>,
) -> Result<BuildRecord> {
    if let Some(dir) = jars {
        let rec = BuildRecord::read(dir)?;
        if rec.release != release.version || rec.mode != mode {
            return Err(Error::Usage(format!(
                "{}: built for {} {}, not {} {}",
                dir.display(),
                rec.release,
                rec.mode,
                release.version,
                mode
            )));
        }
        if !rec.proven() {
            return Err(Error::Check(format!(
                "{}: okp-build.json holds no passing provenance proof, so nothing shows these jars are the \
                 release plus exactly our edits; build them again with this okp",
                dir.display()
            )));
        }
        let tree = match source {
            Some(JarsSource::Tree(d)) => Some(ws.open(crate::source::Spec::Dir(d))?),
            Some(JarsSource::Git { repo, rev }) => Some(ws.open(crate::source::Spec::Git { repo, rev })?),
            None => None,
        };
        let (_, rechecked) = rec.read_and_recheck(ws, dir, tree.as_deref())?;
        rechecked.note(NOTE);
        return Ok(rec);
    }
    let hash = ws.patch_set()?.effective(&ws.model, release, release.version, mode, layers).hash;
    let dir = ws.maven.repo_local.join("okp-verify-jars").join(format!("{}-{}-{}", release.version, mode, &hash[..16]));
    // A record this okp cannot read (another schema, damaged) is a miss: the jars are built anew;
    // so is one without a passing provenance proof, or whose jars' bytes do not show what it says.
    match BuildRecord::read(&dir) {
        Ok(rec) if rec.patch_set_hash == hash && rec.proven() => match rec.read_and_recheck(ws, &dir, None) {
            Ok((_, rechecked)) => {
                crate::out::note(format!("{NOTE}from the cache {}", dir.display()));
                rechecked.note(NOTE);
                return Ok(rec);
            }
            Err(e) => crate::out::note(format!("{NOTE}the cached ones not used ({e})")),
        },
        Err(e) if dir.exists() => crate::out::note(format!("{NOTE}the cached ones not used ({e})")),
        _ => {}
    }
    crate::out::note(format!("{NOTE}a splice build of {} {}", release.version, mode));
    let upstream = splice::release_sources(ws, release)?;
    match splice::splice(ws, release, mode, layers, upstream.as_ref(), &dir, false)? {
        splice::SpliceOutcome::Built(rec) => Ok(*rec),
        splice::SpliceOutcome::CompileFailed(f) => {
            Err(Error::Check(format!("the {} build failed to compile {}:\n{}", release.version, f.module, f.output)))
        }
    }
}
