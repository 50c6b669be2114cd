//! Where a run's evidence goes: the staging directory renamed into the evidence directory (a
//! partial run under `partial/`), then the VERIFY.md pages written again.
//!
//! Not here: where a run belongs (`plan::placement`), the pages (`matrix`).

use std::path::{Path, PathBuf};

use super::matrix::write_matrix;
use super::record::RunRecord;
use super::render::summary_page;
use super::{Pair, PARTIAL_DIR};
use crate::error::{Error, Result};

/// A new run directory `$TMPDIR/okp-<command>-<name>-…` (node homes, configs and logs; kept
/// until the caller removes it) and the staging directory inside it where the evidence is
/// written before `publish` moves it into place.
pub fn run_dir(command: &str, name: &str) -> Result<(PathBuf, PathBuf)> {
    let run_dir = tempfile::Builder::new()
        .prefix(&format!("okp-{command}-{name}-"))
        .tempdir()
        .map_err(|e| Error::io("cannot create the run directory", e))?
        .keep();
    crate::out::note(format!("{command} {name}: run directory {}", run_dir.display()));
    let staging = run_dir.join("evidence");
    Ok((run_dir, staging))
}

/// Writes a finished run into its staging directory, beside its journals: run.json, summary.md
/// and observer-audit.txt (where the run directory's path is written `$RUN`).
pub fn stage(staging: &Path, record: &RunRecord, audit: &[String], run_dir: &Path) -> Result<()> {
    record.write(staging)?;
    write(&staging.join("summary.md"), &summary_page(record))?;
    let run_str = run_dir.display().to_string();
    write(&staging.join("observer-audit.txt"), &(audit.join("\n").replace(&run_str, "$RUN") + "\n"))
}

/// Publishes a run's `staging` directory as `evidence/<at>` (see `placement`) and writes the
/// VERIFY.md pages: the partial runs' own page when `at` is under `partial/`, and the main
/// page over the whole matrix of `pairs`. Runs of one okp (`--all --jobs N`) take turns here,
/// so each page is read and written whole.
pub fn write_evidence(staging: &Path, evidence: &Path, at: &Path, pairs: &[Pair]) -> Result<PathBuf> {
    static PAGES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = PAGES.lock().unwrap_or_else(|e| e.into_inner());
    let dest = evidence.join(at);
    publish(staging, &dest)?;
    if at.starts_with(PARTIAL_DIR) {
        write_matrix(&evidence.join(PARTIAL_DIR), None)?;
    }
    write_matrix(evidence, Some(pairs))?;
    Ok(dest)
}

/// Publishes an UPGRADE run's `staging` directory as `evidence/upgrade/<name>` and writes that
/// directory's page over every upgrade run in it (`upgrades::write_page`).
pub fn write_upgrade_evidence(staging: &Path, evidence: &Path, name: &str) -> Result<PathBuf> {
    write_own_page_evidence(staging, evidence, super::upgrades::DIR, name, super::upgrades::write_page)
}

/// Publishes a run of scenario WAN alone as `evidence/wan/<name>` and writes that directory's
/// page over every WAN run in it (`wan_page::write_page`).
pub fn write_wan_evidence(staging: &Path, evidence: &Path, name: &str) -> Result<PathBuf> {
    write_own_page_evidence(staging, evidence, super::wan_page::DIR, name, super::wan_page::write_page)
}

/// A run whose scenario has a page of its own: published as `evidence/<dir>/<name>`, then the
/// page of `dir` written again. Runs of one okp take turns here, so the page is written whole.
fn write_own_page_evidence(
    staging: &Path,
    evidence: &Path,
    dir: &str,
    name: &str,
    write_page: fn(&Path) -> Result<()>,
) -> Result<PathBuf> {
    static PAGE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = PAGE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = evidence.join(dir);
    let dest = dir.join(name);
    publish(staging, &dest)?;
    write_page(&dir)?;
    Ok(dest)
}

/// Replaces `dest` with `staging` as one rename (the old run goes only once the new one is complete).
pub(crate) fn publish(staging: &Path, dest: &Path) -> Result<()> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
    let tmp = parent.join(format!(
        ".{}.new-{}",
        dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(staging, &tmp)?;
    let old = parent.join(format!(
        ".{}.old-{}",
        dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    if dest.exists() {
        std::fs::rename(dest, &old).map_err(|e| Error::io(format!("cannot move {} aside", dest.display()), e))?;
    }
    std::fs::rename(&tmp, dest).map_err(|e| Error::io(format!("cannot write {}", dest.display()), e))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(format!("cannot create {}", to.display()), e))?;
    let entries = std::fs::read_dir(from).map_err(|e| Error::io(format!("cannot read {}", from.display()), e))?;
    for e in entries.flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))
                .map_err(|er| Error::io(format!("cannot copy {}", e.path().display()), er))?;
        } else if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()))?;
        }
    }
    Ok(())
}

fn write(p: &Path, text: &str) -> Result<()> {
    std::fs::write(p, text).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::{self, Flavor};
    use crate::verify::plan::placement;
    use crate::verify::record::RunRecord;
    use crate::verify::tests::{evidence, matrix_pairs, runs_of};
    use crate::version::KafkaVersion;

    /// The reported bug: `okp verify --version 4.3.1 --mode kraft --scenarios S4` in the
    /// repository replaced evidence/4.3.1-kraft/ with a one-journal run. Now the full run's
    /// files and its VERIFY.md row stay as they were, and the partial run has its own page.
    #[test]
    fn a_pair_with_only_partial_runs_shows_its_widest_marked_partial() {
        let t = tempfile::tempdir().unwrap();
        let pairs = matrix_pairs();
        let full = RunRecord::read(&evidence().join("4.3.1-kraft")).unwrap();
        let v430: KafkaVersion = "4.3.0".parse().unwrap();
        for ids in [&["S4"][..], &["S4", "S7"][..]] {
            let staging = tempfile::tempdir().unwrap();
            let mut rec = full.clone();
            rec.release = v430;
            rec.scenarios.retain(|o| ids.contains(&o.id.as_str()));
            rec.write(staging.path()).unwrap();
            let at = placement("4.3.0-kraft", Flavor::Patched, ids);
            write_evidence(staging.path(), t.path(), &at, &pairs).unwrap();
        }
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        let row = page.lines().find(|l| l.starts_with("| [4.3.0-kraft]")).unwrap_or_else(|| panic!("{page}"));
        let suite = scenarios::default_suite(Flavor::Patched).count();
        assert!(
            row.starts_with(&format!(
                "| [4.3.0-kraft](partial/4.3.0-kraft-S7-S4/summary.md) | pass (partial; 2 of {suite} shown) |"
            )),
            "{row}"
        );
        assert!(row.contains("](partial/4.3.0-kraft-S7-S4/S4.txt)"), "{row}");
        assert!(!page.contains("| 4.3.0-kraft | not run"), "{page}");
        assert!(page.contains("1 of them only a partial run"), "{page}");
    }

    #[test]
    fn a_partial_run_leaves_the_full_run_and_its_row_alone() {
        let t = runs_of(&evidence());
        let full = evidence().join("4.3.1-kraft");
        copy_dir(&full, &t.path().join("4.3.1-kraft")).unwrap();
        let pairs = matrix_pairs();
        write_matrix(t.path(), Some(&pairs)).unwrap();
        let page_before = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();

        for id in ["S4", "S7"] {
            let staging = tempfile::tempdir().unwrap();
            let mut rec = RunRecord::read(&full).unwrap();
            rec.scenarios.retain(|o| o.id == id);
            rec.write(staging.path()).unwrap();
            std::fs::write(staging.path().join(format!("{id}.txt")), "the partial run's journal\n").unwrap();
            let at = placement("4.3.1-kraft", Flavor::Patched, &[id]);
            let dest = write_evidence(staging.path(), t.path(), &at, &pairs).unwrap();
            assert_eq!(dest, t.path().join(format!("partial/4.3.1-kraft-{id}")));
            assert!(dest.join(format!("{id}.txt")).is_file());
        }

        // Every file of the full run is still there, byte for byte.
        let mut n = 0;
        for e in std::fs::read_dir(&full).unwrap().flatten().filter(|e| e.path().is_file()) {
            let kept = std::fs::read(t.path().join("4.3.1-kraft").join(e.file_name())).unwrap();
            assert_eq!(kept, std::fs::read(e.path()).unwrap(), "{:?} changed", e.file_name());
            n += 1;
        }
        assert!(n >= 13, "{n} files in the full run");
        let page = std::fs::read_to_string(t.path().join("VERIFY.md")).unwrap();
        assert_eq!(
            page,
            format!("{page_before}\nPartial runs (fewer scenarios than the suite) are kept apart and never replace a run above: [partial/VERIFY.md](partial/VERIFY.md).\n")
        );
        let partial = std::fs::read_to_string(t.path().join("partial/VERIFY.md")).unwrap();
        for id in ["S4", "S7"] {
            assert!(
                partial.contains(&format!("| [4.3.1-kraft-{id}](4.3.1-kraft-{id}/summary.md) | pass |")),
                "{partial}"
            );
        }
        assert!(!partial.contains("not run"), "the partial page claims no matrix: {partial}");
    }
}
