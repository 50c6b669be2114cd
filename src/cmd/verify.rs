//! `okp verify`: one (release, mode), or the matrix with `--all` (`--jobs N`
//! clusters at once, a summary at the end), or `--merge` (the VERIFY.md pages
//! from run.json files already there); picks the scenarios and the layers, then
//! hands each run to `verify`.
//!
//! Not here: the run and its evidence (`verify`), the scenarios (`scenarios`).

use std::sync::Mutex;
use std::time::Instant;

use crate::build::record::BuildRecord;
use crate::cli::{ListFormat, VerifyArgs};
use crate::error::{Error, Outcome, Result};
use crate::model::{Layers, Mode, ModeDefault, PairFilter};
use crate::out::note;
use crate::scenarios::{self, Flavor};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, args: VerifyArgs) -> Result<Outcome> {
    if args.merge {
        return merge(ws, &args);
    }
    if let Some(file) = &args.soak_recheck {
        let history = crate::soak::History::read(file)?;
        let verdict = crate::soak::check(&history);
        crate::out::print(&crate::soak::report(&history, &verdict))?;
        return Ok(Outcome::check(verdict.ok()));
    }
    if let (Some(d), Some(seed)) = (&args.soak, args.seed) {
        return soak(ws, &args, d, seed);
    }
    if !args.all {
        return one(ws, args);
    }
    // An --upstream run needs no sources jar: it runs the release's own jars.
    let filter = PairFilter { reference: args.reference, mode: args.release.mode, sources: !args.upstream };
    let pairs: Vec<(KafkaVersion, Mode)> =
        ws.model.matrix.pairs(filter).into_iter().map(|p| (p.release, p.mode)).collect();
    // Workers take the next pair from one queue; each pair's outcome lands in its slot.
    let queue = Mutex::new(pairs.iter().enumerate());
    let results: Mutex<Vec<Option<(Outcome, String)>>> = Mutex::new(vec![None; pairs.len()]);
    let t0 = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..args.jobs.min(pairs.len().max(1) as u16) {
            scope.spawn(|| loop {
                // After Ctrl-C no further pair starts (the ones running unwind with Interrupted).
                if crate::cluster::node::interrupted() {
                    break;
                }
                let Some((i, &(v, m))) = queue.lock().unwrap_or_else(|e| e.into_inner()).next() else { break };
                let each = VerifyArgs {
                    release: crate::cli::ClusterRelease { version: v, mode: Some(m) },
                    all: false,
                    reference: false,
                    jars: None,
                    sources: Default::default(),
                    ..args.clone()
                };
                let t = Instant::now();
                let (outcome, why) = match one(ws, each) {
                    Ok(o) => (o, String::new()),
                    Err(e) => {
                        note(format!("verify {v} {m}: error: {e}"));
                        (Outcome::Failed(e.failure()), e.to_string())
                    }
                };
                let line = format!("{:>6.0} s  {}", t.elapsed().as_secs_f64(), if why.is_empty() { "" } else { &why });
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some((outcome, line));
            });
        }
    });
    crate::cluster::node::check_interrupt()?;
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut worst = Outcome::Done;
    let mut table = format!("okp verify --all: {} pairs, {} at once\n\n", pairs.len(), args.jobs);
    let mut failed = 0;
    for ((v, m), r) in pairs.iter().zip(results) {
        let (outcome, line) = r.unwrap_or((Outcome::Failed(crate::error::Failure::External), "did not run".into()));
        if outcome != Outcome::Done {
            failed += 1;
        }
        let word = if outcome == Outcome::Done { "ok" } else { "FAILED" };
        table.push_str(&format!("{:<14} {word:<7}{}\n", format!("{v} {m}"), line.trim_end()));
        worst = worst.worst(outcome);
    }
    table.push_str(&format!(
        "\n{} ok, {failed} failed, in {:.0} s; matrix: {}\n",
        pairs.len() - failed,
        t0.elapsed().as_secs_f64(),
        args.evidence.join("VERIFY.md").display()
    ));
    crate::out::print(&table)?;
    Ok(worst)
}

/// `--soak DURATION --seed N` on one (release, mode).
fn soak(ws: &Workspace, args: &VerifyArgs, duration: &str, seed: u64) -> Result<Outcome> {
    let Some(duration) = crate::soak::parse_duration(duration) else {
        return Err(Error::Usage(format!("--soak {duration}: not a duration (e.g. 600, 600s, 10m, 1h)")));
    };
    let release = ws.release(args.release.version)?.clone();
    release.require_sources_jar("okp verify --soak builds its patched jars from those sources")?;
    let mode = release.mode_for(args.release.mode, ModeDefault::ZkFirst)?;
    let opts = crate::soak::run::Options {
        release,
        mode,
        layers: Layers::with(&args.layers),
        duration,
        seed,
        timers: crate::cluster::Timers { lag_ms: args.lag_ms, session_ms: args.session_ms },
        evidence: args.evidence.clone(),
        base_port: args.base_port,
        unclean: args.soak_unclean,
    };
    crate::soak::run::run(ws, opts)
}

/// `--merge`: the VERIFY.md pages from the run.json files already under the evidence directory.
fn merge(ws: &Workspace, args: &VerifyArgs) -> Result<Outcome> {
    if !args.evidence.is_dir() {
        return Err(Error::Usage(format!("--evidence {}: no such directory", args.evidence.display())));
    }
    let partial = args.evidence.join(crate::verify::PARTIAL_DIR);
    if partial.is_dir() {
        crate::verify::write_matrix(&partial, None)?;
    }
    crate::verify::write_matrix(&args.evidence, Some(&ws.model.matrix.pairs(PairFilter::default())))?;
    note(format!("verify --merge: wrote {}", args.evidence.join("VERIFY.md").display()));
    Ok(Outcome::Done)
}

fn one(ws: &Workspace, args: VerifyArgs) -> Result<Outcome> {
    let version = args.release.version;
    let release = ws.release(version)?.clone();
    let jars_source = jars_source(&args)?;
    if !args.upstream && args.jars.is_none() {
        release.require_sources_jar(
            "okp verify builds its patched jars from those sources (--upstream still runs the negative control; \
             a build from a tree is verified with --jars DIR and --tree or --git --rev)",
        )?;
    }
    let mode = release.mode_for(args.release.mode, ModeDefault::ZkFirst)?;
    let flavor = if args.upstream { Flavor::Upstream } else { Flavor::Patched };
    let ids: Vec<String> = if !args.scenarios.is_empty() {
        args.scenarios.clone()
    } else {
        let flavor = if args.upstream { Flavor::Upstream } else { Flavor::Patched };
        scenarios::default_suite(flavor).map(|s| s.id.to_string()).collect()
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
            _ if scenarios::unavailable(s.id).is_some() => {
                note(format!(
                    "verify: scenario {} skipped: {}",
                    s.id,
                    scenarios::unavailable(s.id).unwrap_or_default()
                ));
            }
            _ if (s.id == "ROLL" || s.id == "HOSTS") && args.upstream => {
                return Err(Error::Usage(format!(
                    "scenario {} rolls okp's bundle: an --upstream run has no bundle",
                    s.id
                )));
            }
            _ => selected.push(s),
        }
    }
    if selected.is_empty() && explicit {
        note("verify: no scenario left to run");
        return Ok(Outcome::Done);
    }
    if args.lag_ms < 500 || args.session_ms < 1000 {
        return Err(Error::Usage("--lag-ms must be at least 500 and --session-ms at least 1000".into()));
    }
    let opts = crate::verify::Options {
        release,
        mode,
        flavor,
        jars_source,
        jars: args.jars,
        layers,
        scenarios: selected,
        timers: crate::cluster::Timers { lag_ms: args.lag_ms, session_ms: args.session_ms },
        evidence: args.evidence,
        keep: args.keep,
        base_port: args.base_port,
        json: args.format == ListFormat::Json,
        lanes: args.lanes as usize,
    };
    crate::verify::run(ws, opts)
}

/// `--tree DIR` or `--git REPO --rev REV`: the sources `--jars`' build read, which the re-check needs
/// for a release without a sources jar; meaningless without `--jars`.
fn jars_source(args: &VerifyArgs) -> Result<Option<crate::verify::JarsSource>> {
    let s = &args.sources;
    let source = match (&s.tree, &s.git.repo, &s.git.rev) {
        (Some(d), _, _) => Some(crate::verify::JarsSource::Tree(d.clone())),
        (None, Some(repo), Some(rev)) => Some(crate::verify::JarsSource::Git { repo: repo.clone(), rev: rev.clone() }),
        _ => None,
    };
    if source.is_some() && args.jars.is_none() {
        return Err(Error::Usage(
            "--tree/--git name the sources a --jars build read (for a release without a sources jar); pass --jars DIR"
                .into(),
        ));
    }
    Ok(source)
}
