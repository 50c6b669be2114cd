//! Turning effective edits into new file contents (pure), and rendering the
//! change as a unified diff that `git apply` accepts.
//!
//! Not here: writing to disk (see `tx`).

use crate::anchor;
use crate::error::{Error, Result};
use crate::patchset::{marked_block, Effective, Op};
use crate::source::SourceTree;

/// One file's change: `before` is `None` for a file the patch set adds.
#[derive(Clone, Debug)]
pub struct Change {
    pub path: String,
    pub before: Option<Vec<u8>>,
    pub after: Vec<u8>,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub changes: Vec<Change>,
}

impl Plan {
    /// Inserted lines (markers included) per file, for summaries.
    pub fn added_lines(&self) -> usize {
        self.changes
            .iter()
            .map(|c| {
                let old = String::from_utf8_lossy(c.before.as_deref().unwrap_or_default()).into_owned();
                let new = String::from_utf8_lossy(&c.after).into_owned();
                similar::TextDiff::from_lines(&old, &new)
                    .iter_all_changes()
                    .filter(|x| x.tag() == similar::ChangeTag::Insert)
                    .count()
            })
            .sum()
    }
}

/// Computes every file the effective patch set changes or adds in `tree`.
/// Anchors must already have been checked; a failure here is reported, not assumed away.
pub fn plan(eff: &Effective, tree: &dyn SourceTree) -> Result<Plan> {
    let mut changes = Vec::new();
    let mut files: Vec<&str> = eff.edits.iter().map(|(_, a)| a.file.as_str()).collect();
    files.sort();
    files.dedup();
    for file in files {
        let before =
            tree.read(file)?.ok_or_else(|| Error::Source(format!("{file} does not exist in {}", tree.describe())))?;
        let text = String::from_utf8(before.clone()).map_err(|_| Error::Source(format!("{file} is not UTF-8 text")))?;
        let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
        let bare: Vec<&str> = anchor::lines(&text);
        // (start, length, op, block) per edit, applied bottom-up so indices hold.
        let mut sites = Vec::new();
        for (edit, a) in eff.edits.iter().filter(|(_, a)| a.file == file) {
            let found = anchor::find(&bare, &a.pattern);
            if found.len() != 1 {
                return Err(Error::Source(format!(
                    "{file}: anchor `{}` matches {} times; run okp check-anchors",
                    a.id,
                    found.len()
                )));
            }
            let len = match &a.pattern {
                crate::model::Pattern::Lines(l) => l.len(),
                crate::model::Pattern::Regex { .. } => 1,
            };
            sites.push((found[0], len, edit.op, marked_block(edit), edit.id.as_str()));
        }
        sites.sort_by(|a, b| b.0.cmp(&a.0).then((b.2 as u8).cmp(&(a.2 as u8))));
        for w in sites.windows(2) {
            let (hi, lo) = (&w[0], &w[1]);
            if lo.0 + lo.1 > hi.0 && (lo.2 == Op::Replace || hi.2 == Op::Replace) {
                return Err(Error::Source(format!("{file}: edits `{}` and `{}` overlap", lo.4, hi.4)));
            }
        }
        for (start, len, op, block, _) in sites {
            let eol = if lines[start].ends_with("\r\n") { "\r\n" } else { "\n" };
            let last = start + len - 1;
            if !lines[last].ends_with('\n') {
                lines[last].push_str(eol);
            }
            let block: Vec<String> = block.into_iter().map(|l| format!("{l}{eol}")).collect();
            match op {
                Op::InsertBefore => {
                    lines.splice(start..start, block);
                }
                Op::InsertAfter => {
                    lines.splice(last + 1..last + 1, block);
                }
                Op::Replace => {
                    lines.splice(start..=last, block);
                }
            }
        }
        changes.push(Change { path: file.to_string(), before: Some(before), after: lines.concat().into_bytes() });
    }
    for f in &eff.new_files {
        if tree.read(&f.path)?.is_some() {
            return Err(Error::Source(format!(
                "{} already exists in {}; is this tree already patched by hand?",
                f.path,
                tree.describe()
            )));
        }
        changes.push(Change { path: f.path.clone(), before: None, after: f.contents.clone().into_bytes() });
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Plan { changes })
}

/// A git-style unified diff (3 lines of context) of the plan.
pub fn unified_diff(plan: &Plan) -> String {
    let mut out = String::new();
    for c in &plan.changes {
        let old = String::from_utf8_lossy(c.before.as_deref().unwrap_or_default()).into_owned();
        let new = String::from_utf8_lossy(&c.after).into_owned();
        out.push_str(&format!("diff --git a/{p} b/{p}\n", p = c.path));
        let (from, to) = match c.before {
            Some(_) => (format!("a/{}", c.path), format!("b/{}", c.path)),
            None => {
                out.push_str("new file mode 100644\n");
                ("/dev/null".to_string(), format!("b/{}", c.path))
            }
        };
        let diff = similar::TextDiff::from_lines(&old, &new);
        out.push_str(&diff.unified_diff().context_radius(3).header(&from, &to).to_string());
    }
    out
}
