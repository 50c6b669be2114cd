//! Where a JDK's tools are: `$JAVA_HOME/bin/<tool>` when JAVA_HOME is set, else the tool on PATH,
//! and the JDK's version line (what a class-data-sharing archive is keyed by).
//!
//! Not here: what the tools are run with (`build::splice`, `cluster`, `verify::unit`).

use std::path::{Path, PathBuf};

/// The JDK tool `tool` (`java`, `javac`, `jar`): `$JAVA_HOME/bin/<tool>` when JAVA_HOME is set
/// and not empty (an empty value counts as unset, as an empty NO_COLOR does), else `tool` itself,
/// found on PATH when it runs.
pub fn java_bin(tool: &str) -> PathBuf {
    bin_under(std::env::var_os("JAVA_HOME").as_deref(), tool)
}

fn bin_under(java_home: Option<&std::ffi::OsStr>, tool: &str) -> PathBuf {
    match java_home.filter(|h| !h.is_empty()) {
        Some(h) => Path::new(h).join("bin").join(tool),
        None => PathBuf::from(tool),
    }
}

/// The first line `java -version` prints (on stderr), e.g. `openjdk version "17.0.13" 2024-10-15`:
/// which JDK runs, for keying what only that JDK can use.
pub fn version_line(java: &Path) -> std::io::Result<String> {
    let o = std::process::Command::new(java).arg("-version").output()?;
    Ok(String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or_default().to_string())
}

/// What identifies the JDK of `tool` without starting a JVM (a `-version` costs 0.1–0.4 s): the
/// tool's canonical path, the JDK's `release` file (its version, build and vendor) and the size of
/// its `lib/modules` (the JDK's own classes). None when the tool is not found, or does not sit in a
/// JDK's layout (`<jdk>/bin/<tool>` beside `<jdk>/release`): ask the tool itself then.
pub fn identity(tool: &str) -> Option<String> {
    let real = resolved(tool)?;
    let jdk = real.parent()?.parent()?;
    let release =
        crate::fsx::read::input(&jdk.join("release"), crate::fsx::read::MAX_SIDECAR, "JDK release file").ok()?;
    let modules = std::fs::metadata(jdk.join("lib").join("modules")).ok()?.len();
    Some(format!("{}\n{}\nlib/modules {modules}", real.display(), String::from_utf8_lossy(&release).trim()))
}

/// `tool`'s canonical path (`java_bin`, found on PATH when it is a bare name).
fn resolved(tool: &str) -> Option<PathBuf> {
    let bin = java_bin(tool);
    let found = if bin.components().count() > 1 {
        Some(bin)
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(&bin)).find(|p| p.is_file())
    }?;
    std::fs::canonicalize(found).ok()
}

/// The JDK directory `tool` belongs to (`<jdk>/bin/<tool>`): whether `java` and `javac` are one
/// JDK's. None when the tool is not found.
pub fn home_of(tool: &str) -> Option<PathBuf> {
    Some(resolved(tool)?.parent()?.parent()?.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JDK okp's tests run on: named by its files (its release file's version), without a JVM;
    /// a tool that is not there has no identity.
    #[test]
    fn a_jdk_is_named_by_its_files() {
        let id = identity("javac").expect("javac of a JDK on PATH or under JAVA_HOME");
        assert!(id.contains("JAVA_VERSION=") && id.contains("lib/modules "), "{id}");
        assert_eq!(identity("javac"), Some(id));
        assert_eq!(identity("okp-no-such-jdk-tool"), None);
    }
    use std::ffi::OsStr;

    #[test]
    fn java_home_names_the_bin_directory_and_an_empty_one_counts_as_unset() {
        assert_eq!(bin_under(Some(OsStr::new("/opt/jdk")), "javac"), PathBuf::from("/opt/jdk/bin/javac"));
        assert_eq!(bin_under(Some(OsStr::new("")), "java"), PathBuf::from("java"));
        assert_eq!(bin_under(None, "jar"), PathBuf::from("jar"));
    }
}
