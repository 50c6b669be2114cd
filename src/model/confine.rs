//! Confinement: the one check every relative path okp reads from a file
//! passes before it is joined onto a directory okp reads or writes. The paths
//! come from `.okp/state.json` and `.okp/journal.json` (files okp wrote, but
//! anyone can plant or edit them), from `new_files` in edits.yaml, `sources:`
//! keys in versions.yaml and `file:` in anchors.yaml.
//!
//! A path is taken when it is relative, made of `/`-separated names none of
//! which is empty, `.` or `..`, and does not start with okp's own `.okp`.
//! Given the directory it will be joined onto, it is also taken only when no
//! component below that directory is a symlink, so the joined path is inside
//! the directory after resolving symlinks: okp refuses a symlinked directory
//! or file on the way rather than deciding where it leads (docs/apply-safety.md).
//!
//! Not here: naming the file and field of a refused path (each caller does,
//! with the [`Escape`] as the reason), or a tree changed by someone else
//! *while* okp runs: the check runs before each use, not atomically with it.

use std::fmt;
use std::path::{Path, PathBuf};

/// okp's state directory at the top of a tree; no path read from a file may name it.
pub const STATE_DIR: &str = ".okp";

/// Why a path was refused; reads as the end of a sentence that starts with the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Escape {
    Empty,
    Absolute,
    Parent,
    /// An empty or `.` component, or a NUL byte.
    Malformed(&'static str),
    StateDir,
    /// The components, from the root, up to the symlink.
    Symlink(String),
    /// A component okp could not look at (e.g. permission denied), and why.
    Unchecked(String, String),
}

impl fmt::Display for Escape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Escape::Empty => f.write_str("is empty"),
            Escape::Absolute => f.write_str("leaves the tree (it is absolute)"),
            Escape::Parent => f.write_str("leaves the tree (it has a `..` component)"),
            Escape::Malformed(what) => write!(f, "is not a plain relative path (it has {what})"),
            Escape::StateDir => write!(f, "names okp's own state directory {STATE_DIR}"),
            Escape::Symlink(at) => {
                write!(f, "passes through the symlink {at}: okp follows no symlink inside the trees it works on")
            }
            Escape::Unchecked(at, e) => write!(f, "cannot be checked at {at}: {e}"),
        }
    }
}

/// Checks `raw` and returns it joined onto `root` (or as a path, without a
/// root). With a root, each existing component below it is looked at without
/// following symlinks; a missing component ends the walk (what does not exist
/// cannot be a symlink, and okp creates it as a plain directory or file).
pub fn confine(raw: &str, root: Option<&Path>) -> Result<PathBuf, Escape> {
    if raw.is_empty() {
        return Err(Escape::Empty);
    }
    if raw.starts_with('/') {
        return Err(Escape::Absolute);
    }
    if raw.contains('\0') {
        return Err(Escape::Malformed("a NUL byte"));
    }
    let parts: Vec<&str> = raw.split('/').collect();
    for p in &parts {
        match *p {
            ".." => return Err(Escape::Parent),
            "" => return Err(Escape::Malformed("an empty component")),
            "." => return Err(Escape::Malformed("a `.` component")),
            _ => {}
        }
    }
    if parts[0] == STATE_DIR {
        return Err(Escape::StateDir);
    }
    let Some(root) = root else { return Ok(PathBuf::from(raw)) };
    let mut at = root.to_path_buf();
    for (i, p) in parts.iter().enumerate() {
        at.push(p);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(Escape::Symlink(parts[..=i].join("/"))),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            // A file where a directory should be: using the path fails on its own, inside the root.
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => break,
            Err(e) => return Err(Escape::Unchecked(parts[..=i].join("/"), e.to_string())),
        }
    }
    Ok(root.join(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_plain_relative_paths_only() {
        assert_eq!(confine("core/src/A.scala", None), Ok(PathBuf::from("core/src/A.scala")));
        assert_eq!(confine(".okp-source.json", None), Ok(PathBuf::from(".okp-source.json")));
        assert_eq!(confine("a/.hidden/b", None), Ok(PathBuf::from("a/.hidden/b")));
        for (raw, why) in [
            ("", Escape::Empty),
            ("/etc/passwd", Escape::Absolute),
            ("../victim", Escape::Parent),
            ("core/../../victim", Escape::Parent),
            ("core/..", Escape::Parent),
            ("core//a", Escape::Malformed("an empty component")),
            ("core/", Escape::Malformed("an empty component")),
            ("./core", Escape::Malformed("a `.` component")),
            ("a\0b", Escape::Malformed("a NUL byte")),
            (".okp/state.json", Escape::StateDir),
            (".okp", Escape::StateDir),
        ] {
            assert_eq!(confine(raw, None), Err(why), "{raw:?}");
        }
    }

    #[test]
    fn refuses_a_symlink_anywhere_below_the_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(root.join("core/src")).unwrap();
        std::fs::write(root.join("core/src/A.scala"), "a").unwrap();
        let outside = t.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("core/link")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), root.join("core/src/B.scala")).unwrap();
        // A symlinked root is the caller's choice and is followed.
        std::os::unix::fs::symlink(&root, t.path().join("root-link")).unwrap();

        assert_eq!(confine("core/src/A.scala", Some(&root)), Ok(root.join("core/src/A.scala")));
        assert_eq!(confine("core/new/dir/N.java", Some(&root)), Ok(root.join("core/new/dir/N.java")));
        assert_eq!(confine("core/src/A.scala/x", Some(&root)), Ok(root.join("core/src/A.scala/x")));
        let via = t.path().join("root-link");
        assert_eq!(confine("core/src/A.scala", Some(&via)), Ok(via.join("core/src/A.scala")));
        assert_eq!(confine("core/link/x", Some(&root)), Err(Escape::Symlink("core/link".into())));
        assert_eq!(confine("core/link", Some(&root)), Err(Escape::Symlink("core/link".into())));
        // A dangling symlink is refused too: writing would create its target.
        assert_eq!(confine("core/src/B.scala", Some(&root)), Err(Escape::Symlink("core/src/B.scala".into())));
        assert_eq!(confine("../tree/core/src/A.scala", Some(&root)), Err(Escape::Parent));
    }

    #[test]
    fn reasons_read_as_the_end_of_a_sentence() {
        assert_eq!(format!("\"../v\" {}", Escape::Parent), "\"../v\" leaves the tree (it has a `..` component)");
        assert!(Escape::Symlink("core/link".into()).to_string().starts_with("passes through the symlink core/link"));
    }
}
