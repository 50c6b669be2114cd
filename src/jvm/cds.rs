//! Class-data-sharing archives as the JVM knows them: where okp keeps one (`okp-cds/` in the
//! local Maven repository, keyed by the JDK that writes it, since an archive serves only that
//! JVM), whether it is there or must still be dumped, the flags that map or dump one, and the
//! merge of class lists (`-XX:DumpLoadedClassList`) a static archive is dumped from.
//!
//! Not here: which JVMs use which archive and who dumps it (`build::splice` for scalac,
//! `cluster::cds` and `cluster::server_cds` for a test cluster's tools and servers).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The archive for the JVMs that run `what` on the JDK whose `java -version` first line is
/// `java_version`, under `repo_local`: (path, true) when it must still be dumped; None with
/// OKP_NO_CDS or when the cache directory cannot be made. Only a regular file counts as there: a
/// link or a FIFO at the path is dumped over, and staging files a killed okp left beside it are
/// removed first.
pub fn archive(repo_local: &Path, java_version: &str, what: &str) -> Option<(PathBuf, bool)> {
    if std::env::var_os("OKP_NO_CDS").is_some() {
        return None;
    }
    let dir = repo_local.join("okp-cds");
    crate::fsx::create_dir(&dir).ok()?;
    let archive = dir.join(file_name(java_version, what));
    let exists = crate::fsx::is_regular_file(&archive);
    if !exists {
        crate::fsx::sweep_stale_staging(&archive);
    }
    Some((archive, !exists))
}

/// `what-<the JDK's version line, letters, digits and dots kept>.jsa`.
fn file_name(java_version: &str, what: &str) -> String {
    let key: String =
        java_version.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect();
    format!("{what}-{key}.jsa")
}

/// The flag naming `archive`: the archive a JVM maps (one that cannot use it starts as without
/// one), or with `-Xshare:dump` the one it writes.
pub fn archive_flag(archive: &Path) -> String {
    format!("-XX:SharedArchiveFile={}", archive.display())
}

/// The flag that has a JVM write the classes it loaded to `staging` when it exits (a dynamic
/// archive, published by renaming `staging` into place).
pub fn dump_at_exit_flag(staging: &Path) -> String {
    format!("-XX:ArchiveClassesAtExit={}", staging.display())
}

/// The classes of one or more class lists (`-XX:DumpLoadedClassList`), each once, in first
/// order: comments and an incomplete last line (the list of a running JVM) left out.
pub fn merge_lists(texts: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let mut out = String::new();
    for text in texts {
        let complete = match text.rfind('\n') {
            Some(i) => &text[..=i],
            None => "",
        };
        for line in complete.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if seen.insert(line.to_string()) {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_is_named_after_the_jdk_with_only_safe_characters() {
        assert_eq!(
            file_name("openjdk version \"17.0.13\" 2024-10-15", "scalac-2.13.15"),
            "scalac-2.13.15-openjdk_version__17.0.13__2024_10_15.jsa"
        );
    }

    #[test]
    fn class_lists_merge_once_each_without_comments_or_a_cut_last_line() {
        let a = "# comment\njava/lang/Object id: 0\nkafka/A id: 1\nkafka/B id:".to_string();
        let b = "java/lang/Object id: 0\n@lambda-proxy kafka/A run ()V\nkafka/C id: 9\n".to_string();
        assert_eq!(
            merge_lists(&[a, b]),
            "java/lang/Object id: 0\nkafka/A id: 1\n@lambda-proxy kafka/A run ()V\nkafka/C id: 9\n"
        );
        assert_eq!(merge_lists(&["no newline".into()]), "");
    }
}
