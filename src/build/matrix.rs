//! `okp build --all`: every selected (release, mode) splice-compiled in turn,
//! and build-matrix.json, the record of that run. `matrix` builds and returns
//! the typed record; `BuildMatrix::write` is its one writer, `BuildMatrix::read`
//! its one reader (CI and the tests read the file; okp itself does not).
//!
//! Schema 1. Files written before the field existed (no `schema`, and rows
//! without `status`) are refused: okp never read them, and their rows cannot
//! say whether a build failed except in prose. Run `okp build --all` again.
//!
//! Not here: one build (`splice`), choosing the releases from flags (`cmd::build`).

use std::fmt::Write;
use std::path::Path;

use super::splice::{self, SpliceOutcome};
use crate::error::Result;
use crate::model::{Layers, Mode, Release};
use crate::out::note;
use crate::schema::{Absent, Schema};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

pub const FILE_NAME: &str = "build-matrix.json";

/// The schema this okp writes and reads.
pub const SCHEMA: Schema = Schema {
    current: 1,
    absent: Absent::Refused,
    remedy: "it was written by another okp; run `okp build --all` again to replace it",
};

/// build-matrix.json, schema 1.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BuildMatrix {
    pub schema: u32,
    pub okp_version: String,
    /// When the run ended, `YYYY-MM-DDTHH:MM:SSZ`.
    pub written_at: String,
    pub builds: Vec<Row>,
}

/// One (release, mode) of the run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub release: KafkaVersion,
    pub mode: Mode,
    pub family: String,
    pub status: Status,
    /// What happened, for people: `ok (52 classes changed in kafka_2.13-2.7.2.jar)`.
    pub result: String,
    /// Wall time of the build, to a tenth of a second.
    pub seconds: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    /// Not built: Maven Central has no sources jar of the release.
    Skipped,
    CompileFailed,
}

/// Splice-builds every mode of `releases` (only `mode` when given) with `layers`,
/// each into `root/<release>-<mode>`, noting progress on stderr. A compile that
/// fails is a row, not an error; anchor drift or a missing artifact is an error.
pub fn matrix(
    ws: &Workspace,
    releases: &[&Release],
    mode: Option<Mode>,
    layers: &Layers,
    root: &Path,
) -> Result<BuildMatrix> {
    let mut builds = Vec::new();
    for r in releases {
        for m in r.modes_for(mode)? {
            let t = std::time::Instant::now();
            let (status, result) = match &r.no_sources_jar {
                Some(_) => (Status::Skipped, "skipped: no sources jar on Maven Central".to_string()),
                None => match splice::splice(
                    ws,
                    r,
                    m,
                    layers,
                    splice::release_sources(ws, r)?.as_ref(),
                    &root.join(format!("{}-{m}", r.version)),
                    false,
                )? {
                    SpliceOutcome::Built(rec) => {
                        let n: usize = rec
                            .jars
                            .iter()
                            .map(|j| j.splice.replaced.len() + j.splice.added.len() + j.splice.removed.len())
                            .sum();
                        let jars: Vec<&str> = rec.jars.iter().map(|j| j.splice.jar.as_str()).collect();
                        (Status::Ok, format!("ok ({n} classes changed in {})", jars.join(", ")))
                    }
                    SpliceOutcome::CompileFailed(f) => {
                        note(format!("{} {m}: {} compile failed:\n{}", r.version, f.module, f.output));
                        (Status::CompileFailed, format!("COMPILE FAILED ({})", f.module))
                    }
                },
            };
            let secs = t.elapsed().as_secs_f64();
            note(format!("{} {m}: {result} in {secs:.1}s", r.version));
            builds.push(Row {
                release: r.version,
                mode: m,
                family: r.family.clone(),
                status,
                result,
                seconds: (secs * 10.0).round() / 10.0,
            });
        }
    }
    Ok(BuildMatrix {
        schema: SCHEMA.current,
        okp_version: env!("CARGO_PKG_VERSION").to_string(),
        written_at: crate::report::utc_now(),
        builds,
    })
}

impl BuildMatrix {
    /// Rows whose compile failed.
    pub fn failed(&self) -> usize {
        self.builds.iter().filter(|b| b.status == Status::CompileFailed).count()
    }

    /// The table `okp build --all` prints.
    pub fn render_table(&self) -> String {
        let mut s = format!("{:<8} {:<6} {:<6} {:>7}  {}\n", "release", "mode", "family", "seconds", "result");
        for b in &self.builds {
            let _ = writeln!(
                s,
                "{:<8} {:<6} {:<6} {:>7.1}  {}",
                b.release.to_string(),
                b.mode.as_str(),
                b.family,
                b.seconds,
                b.result
            );
        }
        let _ = writeln!(s, "\n{} (release, mode) builds, {} failed", self.builds.len(), self.failed());
        s
    }

    /// The build-matrix.json in `dir`.
    pub fn read(dir: &Path) -> Result<BuildMatrix> {
        SCHEMA.read(&dir.join(FILE_NAME), "an okp build matrix", "is it the --out directory of `okp build --all`?")
    }

    /// Writes build-matrix.json into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        crate::schema::write(&dir.join(FILE_NAME), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BuildMatrix {
        let row = |v: (u32, u32, u32), mode, family: &str, status, result: &str, seconds| Row {
            release: KafkaVersion::new(v.0, v.1, v.2),
            mode,
            family: family.into(),
            status,
            result: result.into(),
            seconds,
        };
        BuildMatrix {
            schema: SCHEMA.current,
            okp_version: "0.1.0".into(),
            written_at: "2026-11-30T03:25:55Z".into(),
            builds: vec![
                row((2, 7, 2), Mode::Zk, "f2.7", Status::Ok, "ok (52 classes changed in kafka_2.13-2.7.2.jar)", 3.9),
                row((3, 9, 2), Mode::Kraft, "f3.7", Status::CompileFailed, "COMPILE FAILED (metadata)", 12.0),
                row((4, 3, 1), Mode::Kraft, "f4.3", Status::Skipped, "skipped: no sources jar on Maven Central", 0.0),
            ],
        }
    }

    #[test]
    fn serialized_form_and_table() {
        let m = sample();
        insta::assert_snapshot!("json", crate::schema::to_json(&m));
        insta::assert_snapshot!("table", m.render_table());
        assert_eq!(m.failed(), 1);
    }

    #[test]
    fn writes_and_reads_back() {
        assert_eq!(crate::schema::testing::round_trip(&sample(), BuildMatrix::write, BuildMatrix::read), sample());
    }

    #[test]
    fn an_unknown_or_missing_schema_is_refused_naming_the_file_and_the_schema() {
        let e = crate::schema::testing::assert_refused(&sample(), FILE_NAME, 3, BuildMatrix::read);
        assert!(e.contains("okp build --all"), "{e}");
        // A matrix from before the field (evidence/build/build-matrix.json) is refused too.
        let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence/build");
        let e = BuildMatrix::read(&old).unwrap_err().to_string();
        assert!(e.contains("build-matrix.json: has no `schema` field (this okp reads schema 1)"), "{e}");
    }
}
