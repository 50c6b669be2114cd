//! `okp releases`: Maven Central's list of releases against the matrix, with each release's
//! artifacts and evidence; exit 1 on a release missing from the matrix (`--strict`: also on one
//! that cannot be built from Maven Central).
//!
//! Not here: asking Maven Central and the states (`releases`), what counts as evidence
//! (`verify::pair_evidence`).

use crate::cli::ReleasesArgs;
use crate::error::{Failure, Outcome, Result};
use crate::releases::{self, Cache, Http, MetadataSource};
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, args: ReleasesArgs) -> Result<Outcome> {
    let http = Http::from_env();
    let cache_file = releases::cache_path(&ws.maven);
    let mut cache = Cache::read(&cache_file)?;
    let source = match (&args.metadata, args.offline) {
        // A recorded file with --offline: the list from the file, the artifacts from the cache alone.
        (Some(f), _) => MetadataSource::File(f),
        (None, true) => MetadataSource::Offline,
        (None, false) => MetadataSource::Live,
    };
    let (metadata, from) = releases::metadata(source, &http, &mut cache)?;
    let mut listed = releases::in_scope(&metadata.versions);
    listed.extend(args.also.iter().copied());
    listed.sort();
    listed.dedup();
    let matrix = &ws.model.matrix;
    let wanted = releases::wanted(matrix, &listed)?;
    let avail = releases::availability(&wanted, &ws.maven, &http, &mut cache, args.offline)?;
    if !args.offline {
        cache.schema = Cache::SCHEMA.current;
        cache.write(&cache_file)?;
    }
    let evidence = |v, m| crate::verify::pair_evidence(&args.evidence, v, m);
    let bytecode = crate::verify::bytecode_verdicts(&args.evidence);
    let report = releases::report(matrix, &listed, from, metadata.last_updated.clone(), &avail, &evidence, &bytecode)?;
    let json = crate::schema::to_json(&report);
    crate::out::print(&if super::json(args.format) { json.clone() } else { releases::table(&report) })?;
    if let Some(dir) = &args.report {
        let stamp = format!("okp {} releases, written {}\n\n", env!("CARGO_PKG_VERSION"), crate::report::utc_now());
        crate::fsx::write_atomic(&dir.join("releases.txt"), format!("{stamp}{}", releases::table(&report)).as_bytes())?;
        crate::fsx::write_atomic(&dir.join("releases.json"), json.as_bytes())?;
        crate::out::note(format!("report written to {}", dir.display()));
    }
    let (missing, unbuildable) = (report.missing(), report.not_buildable());
    let list = |v: &[crate::version::KafkaVersion]| v.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
    if !missing.is_empty() {
        crate::out::note(format!(
            "missing from the matrix: {} (okp diff --from OLD --to NEW --write ports each)",
            list(&missing)
        ));
    }
    if args.strict && !unbuildable.is_empty() {
        crate::out::note(format!(
            "--strict: not buildable from Maven Central (no sources jars): {}; build each from its release tag",
            list(&unbuildable)
        ));
    }
    Ok(if !missing.is_empty() || (args.strict && !unbuildable.is_empty()) {
        Outcome::Failed(Failure::Drift)
    } else {
        Outcome::Done
    })
}
