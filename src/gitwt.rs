//! The two things okp asks of a git work tree: which of the files it is
//! about to touch carry uncommitted changes, and committing the patched
//! files on a new branch.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

fn open(root: &Path) -> Option<(git2::Repository, PathBuf)> {
    let repo = git2::Repository::discover(root).ok()?;
    let wt = repo.workdir()?.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    let prefix = root.strip_prefix(&wt).ok()?.to_path_buf();
    Some((repo, prefix))
}

/// `None` when `root` is not inside a git work tree; else the paths (relative
/// to `root`) that differ from HEAD or the index, or exist untracked.
pub fn dirty(root: &Path, paths: &[String]) -> Result<Option<Vec<String>>> {
    let Some((repo, prefix)) = open(root) else { return Ok(None) };
    let mut out = Vec::new();
    for p in paths {
        let rel = prefix.join(p);
        match repo.status_file(&rel) {
            Ok(s) if s.is_empty() || s == git2::Status::IGNORED => {}
            Ok(_) => out.push(p.clone()),
            Err(e) if e.code() == git2::ErrorCode::NotFound => {}
            Err(e) => return Err(Error::Source(format!("git status of {p}: {}", e.message()))),
        }
    }
    Ok(Some(out))
}

/// Creates `branch` at HEAD, switches to it (the work tree already holds the
/// patched files) and commits `paths` there. Returns the commit id.
pub fn commit_on_branch(root: &Path, paths: &[String], branch: &str, message: &str) -> Result<String> {
    let err = |e: git2::Error| Error::Source(format!("git: {}", e.message()));
    let (repo, prefix) = open(root)
        .ok_or_else(|| Error::Usage(format!("--commit needs a git work tree; {} is not in one", root.display())))?;
    let head = repo.head().and_then(|h| h.peel_to_commit()).map_err(err)?;
    if repo.find_branch(branch, git2::BranchType::Local).is_ok() {
        return Err(Error::Usage(format!("branch {branch} already exists; delete it or commit by hand")));
    }
    let b = repo.branch(branch, &head, false).map_err(err)?;
    let refname = b.get().name().unwrap_or_default().to_string();
    repo.set_head(&refname).map_err(err)?;
    let mut index = repo.index().map_err(err)?;
    for p in paths {
        index.add_path(&prefix.join(p)).map_err(err)?;
    }
    index.write().map_err(err)?;
    let tree = repo.find_tree(index.write_tree().map_err(err)?).map_err(err)?;
    let sig = repo.signature().or_else(|_| git2::Signature::now("okp", "okp@localhost")).map_err(err)?;
    let id = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&head]).map_err(err)?;
    Ok(id.to_string())
}
