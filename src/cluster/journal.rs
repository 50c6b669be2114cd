//! The run's journal: every action, tool command and tool output, in order,
//! one file per scenario, stamped with seconds since the run started. These
//! files are the raw evidence a reader checks a verdict against.
//!
//! Long outputs are cut to their head and tail, with the full line count and
//! sha256, so evidence stays readable and small.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::tools::Output;

const HEAD: usize = 30;
const TAIL: usize = 15;

pub struct Journal {
    dir: PathBuf,
    /// The run directory, written as `$RUN` so journals of two runs compare line by line.
    run_dir: String,
    file: Option<File>,
    name: String,
    t0: Instant,
}

impl Journal {
    pub fn new(dir: &Path, run_dir: &Path) -> Journal {
        Journal::for_lane(dir, run_dir, 1, Instant::now())
    }

    /// The journal of lane `lane` of a run (`setup.txt` for lane 1, `setup-lane-N.txt` for the
    /// others), stamped from `t0`, the run's start, so the lanes' stamps compare.
    /// `run_dir` is the run's own directory (a lane's nodes live below it), written `$RUN`.
    pub fn for_lane(dir: &Path, run_dir: &Path, lane: usize, t0: Instant) -> Journal {
        let _ = crate::fsx::create_dir(dir);
        let mut j = Journal {
            dir: dir.to_path_buf(),
            run_dir: run_dir.display().to_string(),
            file: None,
            name: String::new(),
            t0,
        };
        let (stem, title) = lane_section("setup", "cluster set-up", lane);
        j.begin(&stem, &title);
        j
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file (relative to the evidence directory) entries go to now.
    pub fn current(&self) -> &str {
        &self.name
    }

    /// Starts a new section file `<stem>.txt`.
    pub fn begin(&mut self, stem: &str, title: &str) {
        self.name = format!("{stem}.txt");
        self.file = crate::fsx::open_append(&self.dir.join(&self.name)).ok();
        self.write(&format!("# {title}\n"));
    }

    fn write(&mut self, s: &str) {
        let s = if self.run_dir.is_empty() { s.to_string() } else { s.replace(&self.run_dir, "$RUN") };
        if let Some(f) = self.file.as_mut() {
            let _ = f.write_all(s.as_bytes());
        }
    }

    fn stamp(&self) -> String {
        format!("[+{:7.2}s]", self.t0.elapsed().as_secs_f64())
    }

    pub fn note(&mut self, text: &str) {
        let s = format!("{} {text}\n", self.stamp());
        self.write(&s);
    }

    pub fn tool(&mut self, label: &str, out: &Output) {
        let mut s = format!("{} $ CLASSPATH=$RUNTIME_CLASSPATH {}\n", self.stamp(), shell_words(&out.argv));
        s.push_str(&format!(
            "  ({label}: rc={}{}, {:.2} s)\n",
            out.rc,
            if out.timed_out { ", killed at timeout" } else { "" },
            out.secs
        ));
        s.push_str(&excerpt("stdout", &out.stdout));
        s.push_str(&excerpt("stderr", &out.stderr));
        self.write(&s);
    }
}

/// A lane's section file and title: `stem` and `title` for lane 1, `stem-lane-N` and
/// `title, lane N` for the others.
pub fn lane_section(stem: &str, title: &str, lane: usize) -> (String, String) {
    if lane == 1 {
        (stem.to_string(), title.to_string())
    } else {
        (format!("{stem}-lane-{lane}"), format!("{title}, lane {lane}"))
    }
}

fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn excerpt(name: &str, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    if lines.len() <= HEAD + TAIL {
        s.push_str(&format!("  --- {name} ({} lines)\n", lines.len()));
        for l in &lines {
            s.push_str(&format!("  | {l}\n"));
        }
    } else {
        let digest = crate::hash::sha256(text.as_bytes());
        s.push_str(&format!(
            "  --- {name} ({} lines, sha256 {digest}; first {HEAD} and last {TAIL} shown)\n",
            lines.len()
        ));
        for l in &lines[..HEAD] {
            s.push_str(&format!("  | {l}\n"));
        }
        s.push_str(&format!("  | ... {} lines ...\n", lines.len() - HEAD - TAIL));
        for l in &lines[lines.len() - TAIL..] {
            s.push_str(&format!("  | {l}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_is_cut_with_count_and_digest() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let e = excerpt("stdout", &text);
        assert!(e.contains("(100 lines, sha256 "));
        assert!(e.contains("| line 0\n") && e.contains("| line 99\n") && !e.contains("| line 50\n"));
        assert!(e.contains("... 55 lines ..."));
        assert_eq!(excerpt("stderr", ""), "");
    }

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_words(&["java".into(), "a b".into(), "x".into()]), "java 'a b' x");
    }
}
