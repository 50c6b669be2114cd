//! `okp bench broker` and `okp bench scale`: resolves the release, mode and output directory, then
//! hands the run to `bench`.
//!
//! Not here: the clusters and the measurements (`bench`).

use crate::cli::{BenchArgs, BenchCommand};
use crate::error::{Outcome, Result};
use crate::model::ModeDefault;
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, args: BenchArgs) -> Result<Outcome> {
    match args.command {
        BenchCommand::Broker(a) => {
            let release = ws.release(a.release.version)?.clone();
            let mode = release.mode_for(a.release.mode, ModeDefault::ZkFirst)?;
            let rules = a.rules.as_deref().map(crate::bench::rules_file).transpose()?;
            let out = a.out.unwrap_or_else(|| crate::bench::default_out(&release, mode, a.control, rules.is_some()));
            crate::bench::broker(
                ws,
                crate::bench::Options {
                    release,
                    mode,
                    rounds: a.rounds,
                    rate_records: a.rate_records,
                    rate: a.rate,
                    max_records: a.max_records,
                    record_size: a.record_size,
                    out,
                    control: a.control,
                    rules,
                },
            )
        }
        BenchCommand::Scale(a) => {
            let release = ws.release(a.release.version)?.clone();
            let mode = release.mode_for(a.release.mode, ModeDefault::ZkFirst)?;
            let out = a.out.unwrap_or_else(|| crate::bench::scale::default_out(&release, mode, a.control));
            crate::bench::scale::scale(
                ws,
                crate::bench::scale::Options {
                    release,
                    mode,
                    sizes: a.sizes,
                    rounds: a.rounds,
                    per_topic: a.per_topic,
                    idle: std::time::Duration::from_secs(a.idle_secs),
                    out,
                    control: a.control,
                    base_port: a.base_port,
                    heap: a.heap,
                },
            )
        }
    }
}
