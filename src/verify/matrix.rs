//! VERIFY.md: release × scenario over every run.json in an evidence directory, with the proof and
//! unit columns; and what the evidence holds for one pair (`okp releases`).
//!
//! Not here: one run's own page (`render`), writing a run (`publish`).

use std::collections::BTreeMap;
use std::path::Path;

use super::plan::run_name;
use super::record::{self, RunRecord, RunVerdict};
use super::unit_record::{self, Config, UnitRecord};
use super::{Pair, PARTIAL_DIR};
use crate::error::{Error, Result};
use crate::model::Mode;
use crate::scenarios::{self, Flavor};
use crate::version::KafkaVersion;

/// What `evidence` holds for one (release, mode), for `okp releases`: a passing patched run (the
/// full run `<release>-<mode>/`, else the newest passing partial run `partial/<release>-<mode>-…/`)
/// and a passing provenance proof (`build/proof/<release>-<mode>.json`), as paths relative to it.
pub fn pair_evidence(evidence: &Path, release: KafkaVersion, mode: Mode) -> crate::releases::PairEvidence {
    let name = run_name(&release.to_string(), mode, Flavor::Patched);
    let passed = |dir: &Path| RunRecord::read(dir).is_ok_and(|r| r.verdict.ok() && r.flavor == Flavor::Patched);
    let run = if passed(&evidence.join(&name)) {
        Some(format!("{name}/"))
    } else {
        // The widest partial run, as VERIFY.md shows it.
        let mut partial: Vec<((usize, String), String)> = std::fs::read_dir(evidence.join(PARTIAL_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let dir = e.file_name().to_string_lossy().into_owned();
                let r = RunRecord::read(&e.path()).ok()?;
                let ours = r.release == release && r.mode == mode && r.flavor == Flavor::Patched && r.verdict.ok();
                ours.then(|| ((r.scenarios.len(), r.written_utc), format!("{PARTIAL_DIR}/{dir}/")))
            })
            .collect();
        partial.sort();
        partial.pop().map(|(_, d)| d)
    };
    let rel = format!("{PROOF_DIR}/{name}.json");
    let proof = crate::schema::read_file(&evidence.join(&rel))
        .ok()
        .and_then(|b| serde_json::from_slice::<crate::build::proof::Provenance>(&b).ok())
        .filter(|p| p.passed())
        .map(|_| rel);
    crate::releases::PairEvidence { run, proof }
}

/// evidence/VERIFY.md: release × scenario over every run.json in the evidence
/// directory, each cell linking to that scenario's journal. With `pairs`, every
/// (release, mode) of the matrix has a row, and one without a patched run here
/// says `not run` (it claims nothing). A run.json okp cannot read (another
/// schema, damaged) is left out of the table and named below it and on stderr.
pub fn write_matrix(evidence: &Path, pairs: Option<&[Pair]>) -> Result<()> {
    let mut runs: Vec<(String, RunRecord)> = Vec::new();
    let mut left_out: Vec<(String, String)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(evidence) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !e.path().join(record::FILE_NAME).is_file() {
                continue;
            }
            match RunRecord::read(&e.path()) {
                Ok(r) => runs.push((name, r)),
                Err(err) => {
                    crate::out::note(format!("verify: VERIFY.md leaves out {err}"));
                    let why = match err {
                        Error::UnknownSchema { found: Some(found), reads, .. } => {
                            format!("schema {found}, and this okp reads schema {reads}")
                        }
                        Error::Tree { msg, .. } => msg,
                        other => other.to_string(),
                    };
                    left_out.push((name, why));
                }
            }
        }
    }
    // The main page: a pair (and flavor) with no run of the whole suite shows its widest partial
    // run instead, marked as such, rather than `not run`.
    let partials = if pairs.is_some() { partial_runs(&evidence.join(PARTIAL_DIR)) } else { Vec::new() };
    if pairs.is_some() {
        for (name, r) in partials.clone() {
            let full = |x: &RunRecord| x.release == r.release && x.mode == r.mode && x.flavor == r.flavor;
            if runs.iter().any(|(n, x)| !n.starts_with(PARTIAL_DIR) && full(x)) {
                continue;
            }
            match runs.iter().position(|(_, x)| full(x)) {
                Some(i)
                    if (runs[i].1.scenarios.len(), &runs[i].1.written_utc) >= (r.scenarios.len(), &r.written_utc) => {}
                Some(i) => runs[i] = (name, r),
                None => runs.push((name, r)),
            }
        }
    }
    runs.sort_by(|(a, x), (b, y)| (x.release, a).cmp(&(y.release, b)));
    left_out.sort();
    let p = evidence.join("VERIFY.md");
    std::fs::create_dir_all(evidence).map_err(|e| Error::io(format!("cannot create {}", evidence.display()), e))?;
    let labels: Vec<String> = runs.iter().map(|(n, r)| row_label(n, r)).collect();
    let unit: BTreeMap<String, String> =
        labels.iter().filter_map(|l| Some((l.clone(), unit_cell(evidence, l)?))).collect();
    // The proof column covers every pair of the matrix, run here or not.
    let mut names: Vec<String> = labels.clone();
    names.extend(pairs.unwrap_or_default().iter().map(|p| run_name(&p.release.to_string(), p.mode, Flavor::Patched)));
    let proof: BTreeMap<String, String> =
        names.iter().filter_map(|name| Some((name.clone(), proof_cell(evidence, name)?))).collect();
    let partial = evidence.join(PARTIAL_DIR).join("VERIFY.md").is_file();
    let columns = [Column { header: "proof", cells: proof }, Column { header: "unit", cells: unit }];
    let bytecode = bytecode_verdicts(evidence);
    crate::fsx::write_atomic(
        &p,
        matrix_page(&runs, &partials, &left_out, pairs, partial, &columns, &bytecode).as_bytes(),
    )
}

/// A row's name on the main page: the run's directory, or for a partial run standing in for its
/// pair, the pair's run name.
fn row_label(name: &str, r: &RunRecord) -> String {
    if name.starts_with(PARTIAL_DIR) {
        run_name(&r.release.to_string(), r.mode, r.flavor)
    } else {
        name.to_string()
    }
}

/// The runs under `dir` (the partial runs' directory), as `partial/<dir name>`; unreadable ones
/// are left to that directory's own page, which names them.
fn partial_runs(dir: &Path) -> Vec<(String, RunRecord)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, RunRecord)> = rd
        .flatten()
        .filter(|e| e.path().join(record::FILE_NAME).is_file())
        .filter_map(|e| {
            let r = RunRecord::read(&e.path()).ok()?;
            Some((format!("{PARTIAL_DIR}/{}", e.file_name().to_string_lossy()), r))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A column of VERIFY.md between `seconds` and the scenarios, left out when no row has a cell.
struct Column {
    header: &'static str,
    cells: BTreeMap<String, String>,
}

/// Where `scripts/proof-evidence.sh` keeps each pair's provenance proofs, below the evidence directory.
pub(super) const PROOF_DIR: &str = "build/proof";

/// The proof column's cell of `run` (`3.9.2-zk`): its build's provenance proofs, where
/// `build/proof/<run>.json` holds them (okp's own provenance.json of a splice build).
fn proof_cell(evidence: &Path, run: &str) -> Option<String> {
    let rel = format!("{PROOF_DIR}/{run}.json");
    let path = evidence.join(&rel);
    if !path.is_file() {
        return None;
    }
    let read = crate::schema::read_file(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<crate::build::proof::Provenance>(&b).ok());
    Some(match read {
        Some(p) if p.passed() => format!("[proved]({rel})"),
        Some(_) => format!("[NOT proved]({rel})"),
        None => format!("[unreadable]({rel})"),
    })
}

/// The cell of scenario `id` for a row whose own run did not run it: from the newest other
/// partial run of the same pair and flavor that did, marked `†`; None when no run did.
fn filled_cell(row: &str, r: &RunRecord, id: &str, partials: &[(String, RunRecord)]) -> Option<(bool, String)> {
    let (name, o) = partials
        .iter()
        .filter(|(n, x)| n != row && x.release == r.release && x.mode == r.mode && x.flavor == r.flavor)
        .filter_map(|(n, x)| Some((n, x, x.scenarios.iter().find(|o| o.id == id)?)))
        .max_by(|a, b| a.1.written_utc.cmp(&b.1.written_utc).then(a.0.cmp(b.0)))
        .map(|(n, _, o)| (n, o))?;
    let word = if o.pass { "pass" } else { "FAIL" };
    Some((o.pass, format!("[{word} {:.0}s †]({name}/{})", o.seconds, o.evidence)))
}

/// Where `okp diff --binary --evidence` put a release's verdict from its own jars
/// (`releases/diff-V1-V2-bytecode.{md,json}`): release -> (verdict, the markdown's path).
pub fn bytecode_verdicts(evidence: &Path) -> BTreeMap<KafkaVersion, (String, String)> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(evidence.join(RELEASES_DIR)) else { return out };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix("-bytecode.json").filter(|s| !s.ends_with("-tree-and")) else { continue };
        let Ok(bytes) = crate::schema::read_file(&e.path()) else { continue };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else { continue };
        let to = v["to"]["version"].as_str().and_then(|t| t.parse::<KafkaVersion>().ok());
        if let (Some(to), Some(verdict)) = (to, v["verdict"].as_str()) {
            let verdict = match verdict {
                "carries-over-review" => "carries over with review".to_string(),
                v => v.replace('-', " "),
            };
            out.insert(to, (verdict, format!("{RELEASES_DIR}/{stem}-bytecode.md")));
        }
    }
    out
}

/// Where `okp releases --report` and `okp diff --evidence` keep the releases' reports, below the
/// evidence directory.
pub(super) const RELEASES_DIR: &str = "releases";

/// The VERIFY.md page of `runs` (name, record), of the runs `left_out` (name, why), and,
/// with `pairs`, of the matrix's pairs that have no patched run here.
/// `columns`: the proof and unit-tests columns (a cell per row name, where there is one).
fn matrix_page(
    runs: &[(String, RunRecord)],
    partials: &[(String, RunRecord)],
    left_out: &[(String, String)],
    pairs: Option<&[Pair]>,
    partial: bool,
    columns: &[Column],
    bytecode: &BTreeMap<KafkaVersion, (String, String)>,
) -> String {
    let columns: Vec<&Column> = columns.iter().filter(|c| !c.cells.is_empty()).collect();
    let extra = |name: &str| -> String {
        columns.iter().map(|c| format!("{} | ", c.cells.get(name).map_or("–", String::as_str))).collect()
    };
    let ids: Vec<&str> =
        scenarios::SCENARIOS.iter().map(|s| s.id).filter(|id| !scenarios::OWN_PAGE.contains(id)).collect();
    let mut s = String::from("# okp verify: release × scenario\n\nWritten by `okp verify` after every run, from the `run.json` files in this directory. ");
    let gates: Vec<&str> = scenarios::SCENARIOS.iter().filter(|s| s.gate).map(|s| s.id).collect();
    s.push_str(&format!("Each cell links to the scenario's journal (every command and its output). `-upstream` rows are negative controls on unpatched jars: their gate scenarios ({}) are expected to FAIL.\n\n", gates.join(", ")));
    s.push_str(&format!("Opt-in scenarios ({}: `okp verify --scenarios ID`, docs/verify.md) are no part of the suite a row is counted against; their cells come from partial runs (†).\n\n", scenarios::OPT_IN.iter().filter(|id| !scenarios::OWN_PAGE.contains(id)).copied().collect::<Vec<_>>().join(", ")));
    if columns.iter().any(|c| c.header == "proof") {
        s.push_str(&format!("The `proof` column is the provenance proof of an `okp build` of the same release and mode (`{PROOF_DIR}/<pair>.json`, okp's provenance.json, written by `scripts/proof-evidence.sh`): the patch delta passed, and the sources compiled give the release's own classes, nothing forgiven beyond the release's named exceptions ([summary]({PROOF_DIR}/summary.md)).\n\n"));
    }
    if columns.iter().any(|c| c.header == "unit") {
        s.push_str("The `unit` column is `okp unit-tests` on the same release and mode: Kafka's own unit tests of the hooked classes on upstream jars, patched jars, and patched jars with observers ([evidence/unit](unit/)).\n\n");
    }
    // Rows: every run, then (with `pairs`) each pair with no patched run, sorted together by release.
    let mut rows: Vec<(KafkaVersion, String, String)> = Vec::new();
    for (name, r) in runs {
        // A partial run standing in for a pair's missing full run: labelled by its pair, marked.
        let label = row_label(name, r);
        let total = r.seconds.get("total").copied().unwrap_or(0.0);
        // Cells the row's run did not run come from the pair's other partial runs (main page only).
        let (mut filled, mut filled_failed) = (0, 0);
        let cells: Vec<String> = ids
            .iter()
            .map(|id| match r.scenarios.iter().find(|o| o.id == *id) {
                Some(o) => {
                    format!("[{} {:.0}s]({name}/{})", if o.pass { "pass" } else { "FAIL" }, o.seconds, o.evidence)
                }
                None => match filled_cell(name, r, id, partials) {
                    // An opt-in scenario (HOSTS) is no part of the suite a row is counted against.
                    Some((_, cell)) if scenarios::OPT_IN.contains(id) => cell,
                    Some((pass, cell)) => {
                        filled += 1;
                        filled_failed += usize::from(!pass);
                        cell
                    }
                    None => "–".into(),
                },
            })
            .collect();
        // A row of fewer scenarios than today's suite says so: a partial run, or a run of the
        // whole suite as it was before scenarios were added to it; cells from other runs say so.
        let suite = scenarios::default_suite(r.flavor).count();
        let ran = r.scenarios.iter().filter(|o| !scenarios::OPT_IN.contains(&o.id.as_str())).count();
        let shown = ran + filled;
        let mut notes = Vec::new();
        if name.starts_with(PARTIAL_DIR) {
            notes.push("partial".to_string());
        } else if pairs.is_some() && ran < suite {
            notes.push(format!("an older suite of {ran}"));
        }
        if filled > 0 {
            notes.push(format!("+{filled} from partial runs †"));
        }
        if filled_failed > 0 {
            notes.push(format!("{filled_failed} of those FAILED"));
        }
        if pairs.is_some() && (name.starts_with(PARTIAL_DIR) || filled > 0 || ran < suite) {
            notes.push(format!("{shown} of {suite} shown"));
        }
        let verdict = if notes.is_empty() {
            r.verdict.word().to_string()
        } else {
            format!("{} ({})", r.verdict.word(), notes.join("; "))
        };
        let row = format!(
            "| [{label}]({name}/summary.md) | {verdict} | {total:.0} | {}{} |\n",
            extra(&label),
            cells.join(" | ")
        );
        rows.push((r.release, label, row));
    }
    if let Some(pairs) = pairs {
        let run = |p: &Pair| {
            runs.iter().any(|(_, r)| r.release == p.release && r.mode == p.mode && r.flavor == Flavor::Patched)
        };
        let with_sources = pairs.iter().filter(|p| p.sources).count();
        let proven: Vec<&RunRecord> = runs.iter().map(|(_, r)| r).filter(|r| r.flavor == Flavor::Patched).collect();
        let passed = proven.iter().filter(|r| r.verdict == RunVerdict::Pass).count();
        let partial_only =
            runs.iter().filter(|(n, r)| n.starts_with(PARTIAL_DIR) && r.flavor == Flavor::Patched).count();
        s.push_str(&format!(
            "The matrix: {} (release, mode) pairs in versions.yaml, {with_sources} with sources jars. {} have a patched run here ({passed} pass; {partial_only} of them only a partial run, marked `partial` with how many of the suite's scenarios it ran); a pair marked `not run` has no evidence here and claims nothing.\n\n",
            pairs.len(),
            proven.len()
        ));
        for p in pairs.iter().filter(|p| !run(p)) {
            let name = run_name(&p.release.to_string(), p.mode, Flavor::Patched);
            let why = match (p.sources, bytecode.get(&p.release)) {
                (true, _) => "not run".to_string(),
                (false, None) => "not run (no sources jar on Maven Central)".to_string(),
                (false, Some((verdict, link))) => format!(
                    "not run (no sources jar on Maven Central: not built; its own jars against the release before: [{verdict}]({link}))"
                ),
            };
            let row = format!("| {name} | {why} | | {}{} |\n", extra(&name), vec!["–"; ids.len()].join(" | "));
            rows.push((p.release, name, row));
        }
    }
    rows.sort_by(|(a, x, _), (b, y, _)| (a, x).cmp(&(b, y)));
    s.push_str(&format!(
        "| run | verdict | seconds | {}{} |\n|---|---|---|{}{}\n",
        columns.iter().map(|c| format!("{} | ", c.header)).collect::<String>(),
        ids.join(" | "),
        "---|".repeat(columns.len()),
        "---|".repeat(ids.len())
    ));
    for (_, _, row) in &rows {
        s.push_str(row);
    }
    if rows.iter().any(|(_, _, row)| row.contains(" †](")) {
        s.push_str("\nA cell marked † is from a partial run of the same pair and flavor (the newest that ran that scenario; the link is its journal), filling a scenario the row's own run did not run.\n");
    }
    if partial {
        s.push_str(&format!(
            "\nPartial runs (fewer scenarios than the suite) are kept apart and never replace a run above: [{PARTIAL_DIR}/VERIFY.md]({PARTIAL_DIR}/VERIFY.md).\n"
        ));
    }
    if !left_out.is_empty() {
        s.push_str("\nLeft out: runs whose `run.json` this okp cannot read.\n\n");
        for (name, why) in left_out {
            s.push_str(&format!("- [{name}]({name}/{}): {why}\n", record::FILE_NAME));
        }
    }
    s
}

/// The unit column of VERIFY.md for `run` (`<release>-<mode>`): the verdict and counts,
/// linking to the summary; None when there is no unit run.
fn unit_cell(evidence: &Path, run: &str) -> Option<String> {
    let dir = evidence.join("unit").join(run);
    if !dir.join(unit_record::FILE_NAME).is_file() {
        return None;
    }
    Some(match UnitRecord::read(&dir) {
        Ok(r) => {
            let tests: usize = r
                .classes
                .iter()
                .filter_map(|c| c.runs.as_ref()?.get(&Config::Upstream))
                .map(|c| c.passed + c.failed + c.skipped)
                .sum();
            format!(
                "[{} {} tests, {} regr., {} changes](unit/{run}/summary.md)",
                r.verdict.word(),
                tests,
                r.regressions.len(),
                r.changes.len()
            )
        }
        Err(_) => format!("[unreadable](unit/{run}/unit.json)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::tests::{evidence, matrix_pairs, runs_of};

    #[test]
    fn the_proof_column_links_each_pairs_provenance_proof_run_or_not() {
        let t = runs_of(&evidence());
        // Without 3.1.0 zk's full run and the partial runs, which would stand in for it: a pair
        // with a proof and no run (whatever the evidence holds today).
        let _ = std::fs::remove_dir_all(t.path().join(PARTIAL_DIR));
        let _ = std::fs::remove_dir_all(t.path().join("3.1.0-zk"));
        write_matrix(t.path(), Some(&matrix_pairs())).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| run | verdict | seconds | proof | unit | INIT"), "{page}");
        let row =
            |start: &str| page.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {page}"));
        assert!(row("| [3.9.2-zk]").contains("| [proved](build/proof/3.9.2-zk.json) |"), "{page}");
        assert!(row("| 3.1.0-zk | not run").contains("| [proved](build/proof/3.1.0-zk.json) |"), "{page}");
        assert!(row("| [3.1.2-zk]").contains("| [proved](build/proof/3.1.2-zk.json) |"), "{page}");
        assert!(row("| 4.4.0-kraft |").contains("| – | – |"), "no proof, no unit run: {page}");
        // Damaged or not a proof: said so, never a pass.
        std::fs::write(t.path().join(PROOF_DIR).join("3.9.2-zk.json"), "{").unwrap();
        write_matrix(t.path(), Some(&matrix_pairs())).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| [unreadable](build/proof/3.9.2-zk.json) |"), "{page}");
    }

    #[test]
    fn the_unit_column_shows_a_unit_run_and_only_then() {
        let t = runs_of(&evidence());
        let _ = std::fs::remove_dir_all(t.path().join("unit"));
        let _ = std::fs::remove_dir_all(t.path().join(PROOF_DIR));
        write_matrix(t.path(), None).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(!page.contains("| unit |"), "{page}");
        let dir = t.path().join("unit").join("3.9.2-zk");
        std::fs::create_dir_all(&dir).unwrap();
        unit_record::tests::sample().write(&dir).unwrap();
        write_matrix(t.path(), None).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| run | verdict | seconds | unit | INIT"), "{page}");
        assert!(page.contains("| [pass 3 tests, 0 regr., 0 changes](unit/3.9.2-zk/summary.md) |"), "{page}");
        let other = page.lines().find(|l| l.starts_with("| [3.9.2-kraft]")).unwrap();
        assert!(other.contains(" | – | [pass"), "a run without a unit run has an empty cell: {other}");
    }

    #[test]
    fn a_run_of_an_unknown_schema_is_left_out_and_named() {
        let t = runs_of(&evidence());
        let run = t.path().join("3.9.2-zk").join(record::FILE_NAME);
        // Runs written since the schema field was added name it first; older ones lack it.
        let text = std::fs::read_to_string(&run).unwrap();
        let text = if text.contains("\"schema\": 1,") {
            text.replacen("\"schema\": 1,", "\"schema\": 2,", 1)
        } else {
            text.replacen('{', "{\n  \"schema\": 2,", 1)
        };
        std::fs::write(&run, text).unwrap();
        write_matrix(t.path(), None).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(!page.contains("| [3.9.2-zk](3.9.2-zk/summary.md)"), "{page}");
        assert!(page.contains("| [3.9.2-kraft](3.9.2-kraft/summary.md)"), "{page}");
        assert!(page.contains("- [3.9.2-zk](3.9.2-zk/run.json): schema 2, and this okp reads schema 1\n"), "{page}");
    }

    #[test]
    fn cells_a_run_did_not_run_come_from_the_pairs_partial_runs_marked() {
        let t = tempfile::tempdir().unwrap();
        let pairs = matrix_pairs();
        let full = RunRecord::read(&evidence().join("4.3.1-kraft")).unwrap();
        let mut base = full.clone();
        base.scenarios.retain(|o| o.id != "S7");
        base.write(&t.path().join("4.3.1-kraft")).unwrap();
        // Two partial runs of S7: the newer one fills the cell; a failing one is counted.
        for (dir, when, pass) in
            [("4.3.1-kraft-S7-old", "2026-01-01T00:00:00Z", true), ("4.3.1-kraft-S7", "2026-02-01T00:00:00Z", false)]
        {
            let mut rec = full.clone();
            rec.written_utc = when.into();
            rec.scenarios.retain(|o| o.id == "S7");
            rec.scenarios[0].pass = pass;
            rec.write(&t.path().join(PARTIAL_DIR).join(dir)).unwrap();
        }
        write_matrix(t.path(), Some(&pairs)).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        let row = page.lines().find(|l| l.starts_with("| [4.3.1-kraft]")).unwrap_or_else(|| panic!("{page}"));
        let s7 = full.scenarios.iter().find(|o| o.id == "S7").map(|o| o.seconds).unwrap_or_default();
        assert!(row.contains(&format!("[FAIL {s7:.0}s †](partial/4.3.1-kraft-S7/S7.txt)")), "{row}");
        let (ran, suite) = (base.scenarios.len(), scenarios::default_suite(Flavor::Patched).count());
        assert!(
            row.contains(&format!(
                "| pass (an older suite of {ran}; +1 from partial runs †; 1 of those FAILED; {} of {suite} shown) |",
                ran + 1
            )),
            "{row}"
        );
        assert!(page.contains("A cell marked † is from a partial run"), "{page}");
        // The partial page itself fills nothing.
        let partial = std::fs::read_to_string(t.path().join(PARTIAL_DIR).join("VERIFY.md")).unwrap_or_default();
        assert!(!partial.contains('†'), "{partial}");
    }

    #[test]
    fn the_matrix_page_lists_every_pair_and_claims_nothing_for_one_not_run() {
        let t = runs_of(&evidence());
        std::fs::remove_dir_all(t.path().join("3.9.2-zk")).unwrap();
        let _ = std::fs::remove_dir_all(t.path().join("3.4.0-zk"));
        // Partial runs would stand in for their pairs (tested above): without them, a pair with
        // no run claims nothing.
        let _ = std::fs::remove_dir_all(t.path().join(PARTIAL_DIR));
        write_matrix(t.path(), Some(&matrix_pairs())).unwrap();
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert!(page.contains("| 3.9.2-zk | not run | | [proved](build/proof/3.9.2-zk.json) | – |"), "{page}");
        assert!(page.contains("| 3.4.0-zk | not run | |"), "{page}");
        assert!(page.contains("| 4.2.2-kraft | not run (no sources jar on Maven Central"), "{page}");
        assert!(page.contains("| [3.9.2-kraft](3.9.2-kraft/summary.md) | pass"), "{page}");
        // The negative control of 3.9.2 zk is no patched run: it does not make the pair count as run.
        assert!(page.contains("| [3.9.2-zk-upstream](3.9.2-zk-upstream/summary.md) |"), "{page}");
        let rows = page.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| run ")).count();
        let controls = std::fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with("-upstream"))
            .count();
        assert!(controls >= 2);
        assert_eq!(rows, matrix_pairs().len() + controls, "every pair once, plus the negative controls: {page}");
    }
}
