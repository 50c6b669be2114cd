//! `okp verify`: one (release, mode), or the matrix with `--all` (`--jobs N`
//! clusters at once, a summary at the end), or `--merge` (the VERIFY.md pages
//! from run.json files already there); picks the scenarios and the layers, then
//! hands each run to `verify` (the `--all` pool: `verify::all`).
//!
//! Not here: the run and its evidence (`verify`), the scenarios (`scenarios`).

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
    let all = crate::verify::run_all(&pairs, args.jobs, |v, m| {
        let each = VerifyArgs {
            release: crate::cli::ClusterRelease { version: v, mode: Some(m) },
            all: false,
            reference: false,
            jars: None,
            sources: Default::default(),
            ..args.clone()
        };
        one(ws, each)
    })?;
    crate::out::print(&all.render(&args.evidence))?;
    Ok(all.worst())
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
    let upgrades = args.evidence.join(crate::verify::upgrades::DIR);
    if upgrades.is_dir() {
        crate::verify::upgrades::write_page(&upgrades)?;
    }
    let wan = args.evidence.join(crate::verify::wan_page::DIR);
    if wan.is_dir() {
        crate::verify::wan_page::write_page(&wan)?;
    }
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
    if args.migrate {
        if args.release.mode == Some(Mode::Kraft) {
            return Err(Error::Usage("--migrate starts from ZooKeeper mode: leave out --mode kraft".into()));
        }
        if !(release.modes.contains(&Mode::Zk) && release.modes.contains(&Mode::Kraft)) {
            return Err(Error::Usage(format!(
                "--migrate: {version} does not have both modes in versions.yaml (the migration runs on 3.7–3.9)"
            )));
        }
    }
    let mode = release.mode_for(args.release.mode, ModeDefault::ZkFirst)?;
    let flavor = if args.upstream { Flavor::Upstream } else { Flavor::Patched };
    // --upgrade-to B[,C…]: the UPGRADE scenario alone, on one cluster, rolled from this release to
    // each in turn (after the migration to KRaft with --migrate).
    let mut upgrade_to = Vec::new();
    let mut from = version;
    let hop_mode = if args.migrate { Mode::Kraft } else { mode };
    for &b in &args.upgrade_to {
        let to = ws.release(b)?.clone();
        if !to.modes.contains(&hop_mode) {
            return Err(Error::Usage(format!("--upgrade-to {b}: {b} has no {hop_mode} mode in versions.yaml")));
        }
        if let Some(why) = scenarios::upgrade::refuse(hop_mode, from, b) {
            return Err(Error::Usage(format!("--upgrade-to {b}: {why}")));
        }
        to.require_sources_jar("okp verify --upgrade-to builds the patched jars of the release it rolls to")?;
        upgrade_to.push(to);
        from = b;
    }
    if args.upstream_controllers && !args.migrate && (upgrade_to.is_empty() || mode != Mode::Kraft) {
        return Err(Error::Usage(
            "--upstream-controllers runs the controllers on the release's own jars: with --migrate, or with --upgrade-to in KRaft mode (ZooKeeper mode has no controllers of its own)"
                .into(),
        ));
    }
    // HOSTS takes one hop too: after its steps, the Ansible upgrade play rolls its hosts to it.
    let hosts_upgrade = !upgrade_to.is_empty()
        && !args.scenarios.is_empty()
        && args.scenarios.iter().all(|s| s.trim().eq_ignore_ascii_case("HOSTS"));
    if hosts_upgrade && upgrade_to.len() > 1 {
        return Err(Error::Usage(
            "--scenarios HOSTS --upgrade-to takes one release (its Ansible upgrade play rolls one hop)".into(),
        ));
    }
    if !upgrade_to.is_empty()
        && !hosts_upgrade
        && args.scenarios.iter().any(|s| !s.trim().eq_ignore_ascii_case("UPGRADE"))
    {
        return Err(Error::Usage(
            "--upgrade-to runs the UPGRADE scenario alone (or HOSTS alone: its Ansible upgrade play); leave out --scenarios".into(),
        ));
    }
    if upgrade_to.is_empty() && args.scenarios.iter().any(|s| s.trim().eq_ignore_ascii_case("UPGRADE")) {
        return Err(Error::Usage("scenario UPGRADE needs the release to roll to: pass --upgrade-to VERSION".into()));
    }
    if !args.migrate && args.scenarios.iter().any(|s| s.trim().eq_ignore_ascii_case("MIGRATE")) {
        return Err(Error::Usage("scenario MIGRATE runs with --migrate".into()));
    }
    if args.prometheus {
        if let Some(why) = crate::monitoring::prom::unavailable() {
            return Err(Error::External(format!("--prometheus: {why}")));
        }
    }
    let mut ids: Vec<String> = if args.migrate {
        vec!["MIGRATE".to_string()]
    } else if !upgrade_to.is_empty() && !hosts_upgrade {
        vec!["UPGRADE".to_string()]
    } else if !args.scenarios.is_empty() {
        args.scenarios.clone()
    } else {
        let flavor = if args.upstream { Flavor::Upstream } else { Flavor::Patched };
        scenarios::default_suite(flavor).map(|s| s.id.to_string()).collect()
    };
    if args.prometheus && !args.upstream && !ids.iter().any(|s| s.trim().eq_ignore_ascii_case("PROM")) {
        ids.push("PROM".to_string());
    }
    // With --jars the build record says which layers the jars carry.
    let layers = match &args.jars {
        Some(dir) => Layers::with(&BuildRecord::read(dir).map(|r| r.layers).unwrap_or_default()),
        None => Layers::with(&args.layers),
    };
    let explicit = !args.scenarios.is_empty() || !upgrade_to.is_empty() || args.migrate;
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
            _ if s.id == "MM2" && args.upstream => {
                return Err(Error::Usage(
                    "scenario MM2 compares okp's observer with MirrorMaker 2: it runs on the patched jars, not --upstream"
                        .into(),
                ));
            }
            _ if s.id == "MM2" && release.version < crate::version::KafkaVersion::new(3, 3, 0) => {
                return Err(Error::Usage(format!(
                    "scenario MM2's target is a one-node KRaft cluster, production-ready from 3.3; {} is older",
                    release.version
                )));
            }
            _ if s.id == "MM2"
                && args.mm2_exactly_once
                && release.version < crate::version::KafkaVersion::new(3, 5, 0) =>
            {
                return Err(Error::Usage(format!(
                    "--mm2-exactly-once: MirrorMaker 2 supports exactly-once from 3.5 (KIP-618); {} is older",
                    release.version
                )));
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
    let monitored = args.prometheus || selected.iter().any(|s| s.id == "PROM");
    let wan = match (&args.wan_rtt, &args.wan_bandwidth) {
        (None, None) => None,
        _ if !selected.iter().any(|s| s.id == "WAN" || s.id == "MM2") => {
            return Err(Error::Usage(
                "--wan-rtt and --wan-bandwidth shape the link of scenarios WAN and MM2: add --scenarios WAN or MM2"
                    .into(),
            ))
        }
        (rtt, bw) => {
            let d = scenarios::wan::DEFAULT_LINK;
            Some(crate::hosts::wan::Link::parse(
                rtt.as_deref().unwrap_or(&format!("{}ms", d.rtt_ms)),
                bw.as_deref().unwrap_or(&format!("{}kbit", d.rate_kbit)),
            )?)
        }
    };
    if args.mm2_exactly_once && !selected.iter().any(|s| s.id == "MM2") {
        return Err(Error::Usage("--mm2-exactly-once configures scenario MM2's worker: add --scenarios MM2".into()));
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
        lanes: if !upgrade_to.is_empty() || args.migrate { 1 } else { args.lanes as usize },
        tuning: scenarios::Tuning {
            create_rounds: args.create_rounds,
            upstream_controllers: args.upstream_controllers,
            migrate_back: args.migrate_back,
            prometheus: monitored,
            wan,
            mm2_exactly_once: args.mm2_exactly_once,
        },
        upgrade_to,
        migrate: args.migrate,
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
