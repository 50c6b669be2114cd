//! `okp verify --all`: the pairs of the matrix run by a pool of `jobs` workers taking the next
//! pair from one queue, each pair's outcome and time kept in its slot, and the table printed at
//! the end. Ctrl-C starts no further pair (the running ones unwind with `Error::Interrupted`).
//!
//! Not here: what one pair's run is (the caller's `each`: `cmd::verify` picks its scenarios and
//! layers and calls `verify::run`).

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use crate::error::{Failure, Outcome, Result};
use crate::model::Mode;
use crate::version::KafkaVersion;

/// One pair's result in an `--all` run.
#[derive(Clone, Debug)]
pub struct PairResult {
    pub release: KafkaVersion,
    pub mode: Mode,
    pub outcome: Outcome,
    pub seconds: f64,
    /// Why it failed with an error ("did not run" when the pool stopped before it); empty otherwise.
    pub why: String,
}

/// The results of an `--all` run, in the order of the pairs given.
#[derive(Debug)]
pub struct AllRun {
    pub results: Vec<PairResult>,
    pub jobs: u16,
    pub seconds: f64,
}

/// Runs `each` on every pair, `jobs` at once (at least one). An error of one pair is noted and
/// becomes its failed outcome; the others go on.
pub fn run_all(
    pairs: &[(KafkaVersion, Mode)],
    jobs: u16,
    each: impl Fn(KafkaVersion, Mode) -> Result<Outcome> + Sync,
) -> Result<AllRun> {
    let queue = Mutex::new(pairs.iter().enumerate());
    let slots: Mutex<Vec<Option<PairResult>>> = Mutex::new(vec![None; pairs.len()]);
    let t0 = Instant::now();
    let workers = jobs.max(1).min(pairs.len().max(1) as u16);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                if crate::cluster::node::interrupted() {
                    break;
                }
                let Some((i, &(release, mode))) = queue.lock().unwrap_or_else(|e| e.into_inner()).next() else {
                    break;
                };
                let t = Instant::now();
                let (outcome, why) = match each(release, mode) {
                    Ok(o) => (o, String::new()),
                    Err(e) => {
                        crate::out::note(format!("verify {release} {mode}: error: {e}"));
                        (Outcome::Failed(e.failure()), e.to_string())
                    }
                };
                let r = PairResult { release, mode, outcome, seconds: t.elapsed().as_secs_f64(), why };
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    crate::cluster::node::check_interrupt()?;
    let results = slots
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .zip(pairs)
        .map(|(r, &(release, mode))| {
            r.unwrap_or(PairResult {
                release,
                mode,
                outcome: Outcome::Failed(Failure::External),
                seconds: 0.0,
                why: "did not run".into(),
            })
        })
        .collect();
    Ok(AllRun { results, jobs, seconds: t0.elapsed().as_secs_f64() })
}

impl AllRun {
    /// The worst outcome of all pairs (Done when there were none).
    pub fn worst(&self) -> Outcome {
        self.results.iter().fold(Outcome::Done, |w, r| w.worst(r.outcome))
    }

    /// The table printed at the end: one line per pair, then the counts and the matrix page.
    pub fn render(&self, evidence: &Path) -> String {
        let mut table = format!("okp verify --all: {} pairs, {} at once\n\n", self.results.len(), self.jobs);
        let mut failed = 0;
        for r in &self.results {
            let (word, time) = if r.outcome == Outcome::Done {
                ("ok", format!("{:>6.0} s", r.seconds))
            } else {
                failed += 1;
                ("FAILED", if r.why == "did not run" { String::new() } else { format!("{:>6.0} s", r.seconds) })
            };
            let line = format!("{time}  {}", r.why);
            table.push_str(&format!("{:<14} {word:<7}{}\n", format!("{} {}", r.release, r.mode), line.trim_end()));
        }
        table.push_str(&format!(
            "\n{} ok, {failed} failed, in {:.0} s; matrix: {}\n",
            self.results.len() - failed,
            self.seconds,
            evidence.join("VERIFY.md").display()
        ));
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_pair_runs_once_at_most_jobs_at_once_and_an_error_fails_only_its_pair() {
        let v = |s: &str| s.parse::<KafkaVersion>().unwrap();
        let pairs =
            vec![(v("3.9.2"), Mode::Zk), (v("3.9.2"), Mode::Kraft), (v("4.1.2"), Mode::Kraft), (v("2.8.2"), Mode::Zk)];
        let (running, most, calls) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        let run = run_all(&pairs, 2, |release, mode| {
            calls.fetch_add(1, Ordering::SeqCst);
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(30));
            running.fetch_sub(1, Ordering::SeqCst);
            match (release.to_string().as_str(), mode) {
                ("4.1.2", _) => Err(crate::error::Error::Harness("no port left".into())),
                ("2.8.2", _) => Ok(Outcome::Failed(Failure::CheckFailed)),
                _ => Ok(Outcome::Done),
            }
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert!(most.load(Ordering::SeqCst) <= 2);
        let got: Vec<_> = run.results.iter().map(|r| (r.release.to_string(), r.mode, r.outcome)).collect();
        assert_eq!(got[0], ("3.9.2".to_string(), Mode::Zk, Outcome::Done), "results stay in the pairs' order");
        assert_eq!(got[2].2, Outcome::Failed(crate::error::Error::Harness(String::new()).failure()));
        assert!(run.results[2].why.contains("no port left"));
        assert_ne!(run.worst(), Outcome::Done);
        let table = run.render(Path::new("evidence"));
        assert!(table.starts_with("okp verify --all: 4 pairs, 2 at once\n"), "{table}");
        assert!(table.contains("4.1.2 kraft    FAILED"), "{table}");
        assert!(table.contains("\n2 ok, 2 failed, in "), "{table}");
        assert!(table.ends_with("matrix: evidence/VERIFY.md\n"), "{table}");
    }
}
