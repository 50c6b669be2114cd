//! `cargo run --release --example rules_scale -- DIR`: okp's reader of topic rules at scale, for
//! docs/benchmarks.md ("Rules at scale"). DIR holds the inputs `bench/rules_scale.py` writes
//! (`rules-R.ids`: R rules, `topics-N.txt`: N topic names, one a line), the same files the
//! registries' benchmark reads. For each pair it prints one tab-separated line per measure:
//! `okp R N MEASURE VALUE`, each the median of 5 runs after one warm-up run.
//!
//! Measures: `parse_ms` (reading the rules, an edit's first cost), `pass_linear_ms` and
//! `pass_index_ms` (deciding the rule of every topic by the scan the index replaced, and by the
//! index), `first_pass_ms` (the index's first pass over freshly read rules: the regex automaton is
//! built then), `decide_ns` (one topic's decision by the index). The linear pass is timed on at most
//! 2000 of the names and scaled to N (the names are drawn alike), so a 10k-rule scan of 100k names
//! does not take minutes per run.
//!
//! Not here: the registries' numbers (bench/rules/RulesScale.java).

use std::path::Path;
use std::time::Instant;

use okp::observers::idfile::{rules, Rules};

const RUNS: usize = 5;
const LINEAR_SAMPLE: usize = 2000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The median of `RUNS` timings of `f` in milliseconds, after one warm-up run.
fn time_ms(mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

fn decided(rules: &Rules, topics: &[String], linear: bool) -> usize {
    let pick = |t: &str| if linear { rules.in_force_linear(t) } else { rules.in_force(t) };
    topics.iter().filter(|t| pick(t).is_some()).count()
}

fn numbered(dir: &Path, stem: &str) -> Vec<usize> {
    let mut out: Vec<usize> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix(stem)?.split('.').next()?.parse().ok())
        .collect();
    out.sort_unstable();
    out
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: rules_scale DIR (written by bench/rules_scale.py)");
    let dir = Path::new(&dir);
    let read =
        |name: String| std::fs::read_to_string(dir.join(&name)).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
    for n in numbered(dir, "topics-") {
        let topics: Vec<String> = read(format!("topics-{n}.txt")).lines().map(str::to_string).collect();
        let sample = &topics[..topics.len().min(LINEAR_SAMPLE)];
        for r in numbered(dir, "rules-") {
            let text = read(format!("rules-{r}.ids"));
            let parsed = rules(&text).unwrap_or_else(|e| panic!("rules-{r}.ids: {e}"));
            let show = |measure: &str, value: f64| println!("okp\t{r}\t{n}\t{measure}\t{value:.4}");
            show("parse_ms", time_ms(|| drop(std::hint::black_box(rules(&text)))));
            let scale = topics.len() as f64 / sample.len() as f64;
            show(
                "pass_linear_ms",
                time_ms(|| {
                    std::hint::black_box(decided(&parsed, sample, true));
                }) * scale,
            );
            show(
                "first_pass_ms",
                median(
                    (0..RUNS)
                        .map(|_| {
                            let fresh = rules(&text).unwrap_or_default();
                            let t = Instant::now();
                            std::hint::black_box(decided(&fresh, &topics, false));
                            t.elapsed().as_secs_f64() * 1e3
                        })
                        .collect(),
                ),
            );
            let pass = time_ms(|| {
                std::hint::black_box(decided(&parsed, &topics, false));
            });
            show("pass_index_ms", pass);
            show("decide_ns", pass * 1e6 / topics.len() as f64);
            assert_eq!(decided(&parsed, sample, false), decided(&parsed, sample, true), "index and scan differ");
        }
    }
}
