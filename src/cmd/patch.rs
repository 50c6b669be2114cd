//! `okp show`, `apply`, `revert`, `status`, `export`: the patch set on a tree.
//!
//! Not here: planning and writing (`patch`, `apply`, `tx`).

use crate::cli::{ApplyArgs, ExportArgs, RevertArgs, ShowArgs, StatusArgs};
use crate::error::{Outcome, Result};
use crate::patch::{self as lib, ApplyOpts};
use crate::source::Spec;
use crate::workspace::Workspace;

pub fn show(ws: &Workspace, a: ShowArgs) -> Result<Outcome> {
    if let Some(dir) = &a.build {
        let rec = crate::build::record::BuildRecord::read(dir)?;
        // Nothing the record says is shown as fact before the jars' bytes are re-derived.
        let derived = rec.read_and_recheck(ws, dir, None).map(|(_, facts)| facts);
        let text = match super::json(a.format) {
            true => serde_json::to_string_pretty(&rec).unwrap_or_default() + "\n",
            false => crate::build::show::render(&rec, dir, &crate::build::show::release_hashes(ws, &rec)),
        };
        crate::out::print(&text)?;
        return match derived {
            Ok(facts) => {
                facts.note("");
                Ok(Outcome::Done)
            }
            Err(e) => {
                crate::out::error(&e);
                Ok(Outcome::Failed(e.failure()))
            }
        };
    }
    let version =
        a.version.ok_or_else(|| crate::error::Error::Usage("show needs --version V or --build DIR".into()))?;
    lib::show(ws, version, a.mode.mode, &super::layers(&a.layer.layers), super::json(a.format))
}

pub fn apply(ws: &Workspace, a: ApplyArgs) -> Result<Outcome> {
    let opts = ApplyOpts {
        force: a.force,
        allow_modified: a.allow_modified,
        dry_run: a.dry_run,
        commit: a.commit,
        layers: super::layers(&a.layer.layers),
    };
    lib::apply(ws, &a.source, a.release.version, a.release.mode, opts)
}

pub fn revert(a: RevertArgs) -> Result<Outcome> {
    lib::revert(&a.source, a.force)
}

pub fn status(a: StatusArgs) -> Result<Outcome> {
    lib::status(&a.source)
}

pub fn export(ws: &Workspace, a: ExportArgs) -> Result<Outcome> {
    let version = a.release.version;
    let spec = match (&a.source, &a.git.repo) {
        (Some(d), _) => Spec::Dir(d),
        (_, Some(g)) => Spec::Git { repo: g, rev: a.git.rev.as_deref().unwrap_or("HEAD") },
        _ => {
            ws.release(version)?;
            Spec::Release { version, hint: "export reads a checkout instead with --source DIR or --git REPO --rev REV" }
        }
    };
    let tree = ws.open(spec)?;
    lib::export(ws, version, a.release.mode, &super::layers(&a.layer.layers), tree.as_ref(), a.output.as_deref())
}
