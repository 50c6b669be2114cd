//! A Kafka source tree at one git revision, read from the object database:
//! no checkout, so it works on bare repositories and leaves the work tree alone.

use std::path::{Path, PathBuf};

use super::{declared_from, RevKind, SourceTree, MAX_SOURCE_FILE};
use crate::error::{Error, Result};

pub struct GitTree {
    repo_path: PathBuf,
    repo: git2::Repository,
    rev: String,
    commit: git2::Oid,
    tree: git2::Oid,
}

impl GitTree {
    pub fn open(repo_path: &Path, rev: &str) -> Result<GitTree> {
        let repo = git2::Repository::open(repo_path).map_err(|e| Error::Tree {
            path: repo_path.to_path_buf(),
            msg: format!("is not a git repository: {}", e.message()),
        })?;
        let obj = repo.revparse_single(rev).map_err(|_| {
            Error::Source(format!(
                "{}: no revision `{rev}` (is the tag fetched? `git -C {} tag --list` shows the tags)",
                repo_path.display(),
                repo_path.display()
            ))
        })?;
        let commit = obj.peel_to_commit().map_err(|e| {
            Error::Source(format!("{}: `{rev}` does not name a commit: {}", repo_path.display(), e.message()))
        })?;
        let (commit_id, tree_id) = (commit.id(), commit.tree_id());
        drop(commit);
        drop(obj);
        Ok(GitTree { repo_path: repo_path.to_path_buf(), repo, rev: rev.to_string(), commit: commit_id, tree: tree_id })
    }
}

impl SourceTree for GitTree {
    fn describe(&self) -> String {
        let short = &self.commit.to_string()[..10];
        format!("git {} at {} ({short})", self.repo_path.display(), self.rev)
    }

    fn declared_version(&self) -> Result<Option<String>> {
        declared_from(|p| self.read(p))
    }

    fn rev_kind(&self) -> Option<RevKind> {
        let has = |r: String| self.repo.find_reference(&r).is_ok();
        Some(if has(format!("refs/tags/{}", self.rev)) {
            RevKind::Tag
        } else if has(format!("refs/heads/{}", self.rev)) || has(format!("refs/remotes/origin/{}", self.rev)) {
            RevKind::Branch
        } else {
            RevKind::Commit
        })
    }

    fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let git_err = |e: git2::Error| {
            Error::Source(format!("{}: reading {path} at {}: {}", self.repo_path.display(), self.rev, e.message()))
        };
        let tree = self.repo.find_tree(self.tree).map_err(git_err)?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(git_err(e)),
        };
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return Ok(None);
        }
        if entry.filemode() == 0o120000 {
            return Err(Error::Source(format!(
                "{}: {path} at {} is a symbolic link: okp reads a tree's own files only",
                self.repo_path.display(),
                self.rev
            )));
        }
        // The size from the object's header, before its content is inflated into memory.
        let odb = self.repo.odb().map_err(git_err)?;
        let (size, _) = odb.read_header(entry.id()).map_err(git_err)?;
        if size as u64 > MAX_SOURCE_FILE {
            return Err(Error::Source(format!(
                "{}: {path} at {} is {size} bytes, over okp's cap of {MAX_SOURCE_FILE} bytes for a source file",
                self.repo_path.display(),
                self.rev
            )));
        }
        let obj = entry.to_object(&self.repo).map_err(git_err)?;
        match obj.as_blob() {
            Some(b) => Ok(Some(b.content().to_vec())),
            None => Ok(None),
        }
    }

    fn files_under(&self, dir: &str) -> Result<Vec<String>> {
        let git_err = |e: git2::Error| {
            Error::Source(format!("{}: listing {dir} at {}: {}", self.repo_path.display(), self.rev, e.message()))
        };
        let tree = self.repo.find_tree(self.tree).map_err(git_err)?;
        let sub = match tree.get_path(Path::new(dir)) {
            Ok(e) if e.kind() == Some(git2::ObjectType::Tree) => self.repo.find_tree(e.id()).map_err(git_err)?,
            Ok(_) => return Ok(Vec::new()),
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(git_err(e)),
        };
        let mut out = Vec::new();
        sub.walk(git2::TreeWalkMode::PreOrder, |root, e| {
            if e.kind() == Some(git2::ObjectType::Blob) {
                out.push(format!("{}/{root}{}", dir.trim_end_matches('/'), e.name().unwrap_or_default()));
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(git_err)?;
        out.sort();
        Ok(out)
    }
}
