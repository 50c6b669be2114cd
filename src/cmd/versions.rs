//! `okp versions`: the release matrix as a table or JSON.
//!
//! Not here: loading the matrix (`model`), its layout (`report`).

use crate::cli::{ListFormat, VersionsArgs};
use crate::error::{Outcome, Result};
use crate::report;
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, a: VersionsArgs) -> Result<Outcome> {
    let out = match a.format {
        ListFormat::Table => report::versions_table(&ws.model.matrix),
        ListFormat::Json => report::versions_json(&ws.model.matrix),
    };
    crate::out::print(&out)?;
    Ok(Outcome::Done)
}
