//! `okp verify`: one (release, mode), or the matrix with `--all`; picks the
//! scenarios and the layers, then hands the run to `verify`.
//!
//! Not here: the run and its evidence (`verify`), the scenarios (`scenarios`).

use crate::build::record::BuildRecord;
use crate::cli::{ListFormat, VerifyArgs};
use crate::error::{Error, Outcome, Result};
use crate::model::{Layers, Mode, ModeDefault};
use crate::out::note;
use crate::scenarios::{self, Flavor};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

/// The release `okp verify` proves when none is named: the last one with both modes.
pub const DEFAULT_RELEASE: KafkaVersion = KafkaVersion::new(3, 9, 2);

pub fn run(ws: &Workspace, args: VerifyArgs) -> Result<Outcome> {
    if !args.all {
        return one(ws, args);
    }
    let pairs: Vec<(KafkaVersion, Mode)> = ws
        .model
        .matrix
        .releases
        .iter()
        .filter(|r| !args.reference || r.reference)
        .filter(|r| r.no_sources_jar.is_none() || args.upstream)
        .flat_map(|r| r.modes.iter().filter(|m| args.mode.is_none_or(|x| x == **m)).map(move |m| (r.version, *m)))
        .collect();
    let mut worst = Outcome::Done;
    let mut failed = Vec::new();
    for (v, m) in pairs {
        let each = VerifyArgs {
            version: Some(v),
            mode: Some(m),
            all: false,
            reference: false,
            scenarios: args.scenarios.clone(),
            jars: None,
            evidence: args.evidence.clone(),
            layers: args.layers.clone(),
            ..args
        };
        let outcome = one(ws, each).unwrap_or_else(|e| {
            note(format!("verify {v} {m}: error: {e}"));
            Outcome::Failed(e.failure())
        });
        if outcome != Outcome::Done {
            failed.push(format!("{v} {m}"));
        }
        worst = worst.worst(outcome);
    }
    note(format!(
        "verify --all: {} failed{}; matrix: {}",
        failed.len(),
        if failed.is_empty() { String::new() } else { format!(" ({})", failed.join(", ")) },
        args.evidence.join("VERIFY.md").display()
    ));
    Ok(worst)
}

fn one(ws: &Workspace, args: VerifyArgs) -> Result<Outcome> {
    let version = args.version.unwrap_or(DEFAULT_RELEASE);
    let release = ws.release(version)?.clone();
    if !args.upstream && args.jars.is_none() {
        release.require_sources_jar(
            "okp verify builds its patched jars from those sources (--upstream still runs the negative control)",
        )?;
    }
    let mode = release.mode_for(args.mode, ModeDefault::ZkFirst)?;
    let flavor = if args.upstream { Flavor::Upstream } else { Flavor::Patched };
    let ids: Vec<String> = if !args.scenarios.is_empty() {
        args.scenarios.clone()
    } else {
        scenarios::SCENARIOS.iter().filter(|s| s.gate || !args.upstream).map(|s| s.id.to_string()).collect()
    };
    // With --jars the build record says which layers the jars carry.
    let layers = match &args.jars {
        Some(dir) => Layers::with(&BuildRecord::read(dir).map(|r| r.layers).unwrap_or_default()),
        None => Layers::with(&args.layers),
    };
    let explicit = !args.scenarios.is_empty();
    let mut selected = Vec::new();
    for id in &ids {
        let Some(s) = scenarios::by_id(id.trim()) else {
            let known: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.id).collect();
            return Err(Error::Usage(format!("unknown scenario `{id}`; known: {}", known.join(", "))));
        };
        match scenarios::needs_layer(s.id) {
            Some(l) if args.upstream || !layers.contains(l) => {
                if explicit {
                    let why = if args.upstream {
                        "upstream jars carry no layer".to_string()
                    } else if args.jars.is_some() {
                        "the --jars build record does not list it (build with --layer)".to_string()
                    } else {
                        format!("pass --layer {l}")
                    };
                    return Err(Error::Usage(format!("scenario {} needs the {l} layer: {why}", s.id)));
                }
                note(format!("verify: scenario {} left out: it needs the {l} layer", s.id));
            }
            _ if s.id == "ROLL" && args.upstream => {
                return Err(Error::Usage(
                    "scenario ROLL rolls okp's bundle on and off: an --upstream run has no bundle".into(),
                ));
            }
            _ => selected.push(s),
        }
    }
    if args.lag_ms < 500 || args.session_ms < 1000 {
        return Err(Error::Usage("--lag-ms must be at least 500 and --session-ms at least 1000".into()));
    }
    let opts = crate::verify::Options {
        release,
        mode,
        flavor,
        jars: args.jars,
        layers,
        scenarios: selected,
        timers: crate::cluster::Timers { lag_ms: args.lag_ms, session_ms: args.session_ms },
        evidence: args.evidence,
        keep: args.keep,
        base_port: args.base_port,
        json: args.format == ListFormat::Json,
    };
    crate::verify::run(ws, opts)
}
