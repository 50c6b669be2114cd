//! The Gradle backend: runs a checkout's own `./gradlew` with the tasks
//! versions.yaml lists for the mode, shows progress, keeps the whole log, and
//! collects the jars a deployment replaces.
//!
//! Gradle cannot be downloaded on okp's own CI machine, so its tests drive a
//! stand-in wrapper script (tests/fixtures/gradlew-standin); the real path is
//! the same process with the real wrapper.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::model::{Mode, Release};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Progress {
    /// A bar on a terminal, step lines otherwise.
    Auto,
    Always,
    Never,
}

/// How a build ended: the jars it produced, or the failure to show.
pub enum GradleResult {
    Built(Vec<PathBuf>),
    /// The build ran and failed: the failing task (when Gradle named one) and the log's tail.
    Failed {
        task: Option<String>,
        tail: String,
        log: PathBuf,
    },
}

/// Lines of the log shown when a build fails.
const TAIL_LINES: usize = 40;

pub fn build(root: &Path, release: &Release, mode: Mode, out: &Path, progress: Progress) -> Result<GradleResult> {
    let wrapper = root.join("gradlew");
    if !wrapper.is_file() {
        return Err(Error::Tree {
            path: root.to_path_buf(),
            msg: "has no ./gradlew; the Gradle backend runs the checkout's own wrapper (or use --backend splice)"
                .into(),
        });
    }
    let tasks = release.gradle_tasks.get(&mode).cloned().unwrap_or_default();
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
    let log_path = out.join(format!("gradle-{}-{mode}.log", release.version));
    let mut log =
        std::fs::File::create(&log_path).map_err(|e| Error::io(format!("cannot create {}", log_path.display()), e))?;

    let mut cmd = Command::new(&wrapper);
    cmd.current_dir(root).arg("--console=plain").args(&tasks).args(["-x", "test"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let shown = format!("./gradlew --console=plain {} -x test", tasks.join(" "));
    let _ = writeln!(log, "$ {shown}   (in {})", root.display());
    crate::out::note(format!("{shown}   (log: {})", log_path.display()));
    let mut child = cmd.spawn().map_err(|e| Error::External(format!("cannot run {}: {e}", wrapper.display())))?;

    // stderr is drained on its own thread so neither pipe can fill and stall Gradle.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let err = child.stderr.take().map(|e| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(e).lines().map_while(std::result::Result::ok) {
                let _ = tx.send(l);
            }
        })
    });
    let outp = child.stdout.take().map(|o| {
        std::thread::spawn(move || {
            for l in BufReader::new(o).lines().map_while(std::result::Result::ok) {
                let _ = tx.send(l);
            }
        })
    });
    let bar = match progress {
        Progress::Always => true,
        Progress::Never => false,
        Progress::Auto => crate::out::stderr_live(),
    };
    let started = std::time::Instant::now();
    let mut failed_task = None;
    let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut done = 0usize;
    for line in rx {
        let _ = writeln!(log, "{line}");
        if let Some(task) = line.strip_prefix("> Task ") {
            done += 1;
            let task = task.split_whitespace().next().unwrap_or(task);
            if bar {
                crate::out::progress(&format!("[{done} tasks, {:>4}s] {task}", started.elapsed().as_secs()));
            } else {
                crate::out::note(format!("gradle step {done}: {task}"));
            }
        }
        if let Some(rest) = line.split("Execution failed for task '").nth(1) {
            failed_task = rest.split('\'').next().map(str::to_string);
        }
        tail.push_back(line);
        if tail.len() > TAIL_LINES {
            tail.pop_front();
        }
    }
    for h in [err, outp].into_iter().flatten() {
        let _ = h.join();
    }
    let status = child.wait().map_err(|e| Error::External(format!("waiting for gradle: {e}")))?;
    if bar {
        crate::out::progress_end();
    }
    if !status.success() {
        return Ok(GradleResult::Failed {
            task: failed_task,
            tail: tail.into_iter().collect::<Vec<_>>().join("\n"),
            log: log_path,
        });
    }
    let mut jars = Vec::new();
    for dir in release.jars.get(&mode).into_iter().flatten() {
        let coord = &release.sources[dir];
        let name = format!("{}-{}.jar", coord.artifact, coord.version);
        let built = root.join(dir).join("build").join("libs").join(&name);
        if !built.is_file() {
            return Err(Error::External(format!(
                "gradle succeeded but {} was not built (expected it from {})",
                built.display(),
                tasks.join(" ")
            )));
        }
        let dest = out.join(&name);
        std::fs::copy(&built, &dest)
            .map_err(|e| Error::io(format!("cannot copy {} to {}", built.display(), dest.display()), e))?;
        jars.push(dest);
    }
    Ok(GradleResult::Built(jars))
}
