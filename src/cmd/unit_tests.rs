//! `okp unit-tests`: resolves the release, mode and data file, then hands the
//! run to `unit_tests`.
//!
//! Not here: running the tests and judging them (`unit_tests`).

use std::time::Duration;

use crate::cli::{ListFormat, UnitTestsArgs};
use crate::error::{Error, Outcome, Result};
use crate::model::ModeDefault;
use crate::unit_tests::{self as unit, data::UnitData};
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, args: UnitTestsArgs) -> Result<Outcome> {
    let version = args.release.version;
    let release = ws.release(version)?.clone();
    let mode = release.mode_for(args.release.mode, ModeDefault::ZkFirst)?;
    let data = UnitData::load(args.data.as_deref())?;
    if args.class_timeout < 10 {
        return Err(Error::Usage("--class-timeout must be at least 10 seconds".into()));
    }
    let opts = unit::Options {
        release,
        mode,
        data,
        classes: args.classes,
        jars: args.jars,
        class_timeout: Duration::from_secs(args.class_timeout),
        evidence: args.evidence,
        rejudge: args.rejudge,
        json: args.format == ListFormat::Json,
    };
    unit::run(ws, opts)
}
