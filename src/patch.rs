//! The patch-set commands: show, apply, revert, status, export. Each reads
//! the model and the patch set, asks `check` whether the anchors hold, asks
//! `apply` for the plan and hands writing to `tx`.

use std::fmt::Write as _;
use std::path::Path;

use crate::apply::{self, Plan};
use crate::check;
use crate::error::{Error, Outcome, Result};
use crate::gitwt;
use crate::hash::sha256;
use crate::model::{Layers, Mode, ModeDefault, Model, Release};
use crate::out::print;
use crate::patchset::{marked_block, Effective, Op};
use crate::report::{self, Format};
use crate::source::{DirTree, SourceTree, Spec};
use crate::tx::{State, Tx};
use crate::version::KafkaVersion;
use crate::workspace::Workspace;

pub struct ApplyOpts {
    pub force: bool,
    /// Apply even to edited upstream files that are not the release's own bytes (a fork).
    pub allow_modified: bool,
    pub dry_run: bool,
    pub commit: bool,
    pub layers: Layers,
}

/// Checks the anchors; on drift prints the report to stderr and says so.
fn anchors_hold(model: &Model, release: &Release, mode: Mode, layers: &Layers, tree: &dyn SourceTree) -> Result<bool> {
    let targets = check::check_tree(&model.anchors, release, release.version, &[mode], layers, tree)?;
    let rep = check::Report { targets };
    if rep.ok() {
        return Ok(true);
    }
    crate::out::block(&report::check_report(&rep, Format::Table, false));
    crate::out::note(format!("anchor drift in {}: nothing was written", tree.describe()));
    Ok(false)
}

pub fn show(ws: &Workspace, version: KafkaVersion, mode: Option<Mode>, layers: &Layers, json: bool) -> Result<Outcome> {
    let (model, ps) = (&ws.model, ws.patch_set()?);
    let release = model.matrix.require(version)?;
    let modes = release.modes_for(mode)?;
    let effs: Vec<Effective> = modes.iter().map(|&m| ps.effective(model, release, version, m, layers)).collect();
    if json {
        print(&(serde_json::to_string_pretty(&effs).unwrap_or_default() + "\n"))?;
        return Ok(Outcome::Done);
    }
    let mut s = String::new();
    for eff in &effs {
        let _ = writeln!(
            s,
            "Kafka {} {}: family {}, layers {}, patch set {}",
            eff.release,
            eff.mode,
            eff.family,
            eff.layers.label(),
            &eff.hash[..16]
        );
        let _ = writeln!(s, "  new files:");
        for f in &eff.new_files {
            let _ = writeln!(s, "    {}  (from patches/{}, {} lines)", f.path, f.source, f.contents.lines().count());
        }
        let _ = writeln!(s, "  edits:");
        for (e, a) in &eff.edits {
            let op = match e.op {
                Op::InsertBefore => "insert before",
                Op::InsertAfter => "insert after",
                Op::Replace => "replace",
            };
            let _ = writeln!(s, "\n    [{}] {} — {op} anchor `{}` in {}", a.hooks.join(", "), e.id, a.id, a.file);
            for l in a.pattern.display_lines() {
                let _ = writeln!(s, "      {} {l}", if e.op == Op::Replace { "-" } else { "|" });
            }
            for l in marked_block(e) {
                let _ = writeln!(s, "      + {l}");
            }
        }
        s.push('\n');
    }
    print(&s)?;
    Ok(Outcome::Done)
}

/// Whether each upstream file apply edits holds the release's own bytes (its Maven Central sources
/// jar): a fork or a locally changed checkout is refused unless `allow_modified`. Returns the
/// modified files (allowed) and, when there was nothing to compare with (no sources jar of the
/// release, Maven unreachable), why not: both are recorded in the tree's state.
fn release_check(
    ws: &Workspace,
    version: KafkaVersion,
    plan: &Plan,
    allow_modified: bool,
) -> Result<(Vec<String>, Option<String>)> {
    let edited: Vec<(&str, &[u8])> =
        plan.changes.iter().filter_map(|c| c.before.as_deref().map(|b| (c.path.as_str(), b))).collect();
    let hint = "nothing to compare the checkout's files with";
    let release = match ws.open(Spec::Release { version, hint }) {
        Ok(t) => t,
        Err(e) => {
            // One line of plain text: the state records it and `okp status` prints it.
            let why = crate::escape::one_line(&e.to_string());
            crate::out::note(format!(
                "warning: cannot tell whether the {} upstream files okp edits are Kafka {version}'s own: {why}",
                edited.len()
            ));
            return Ok((Vec::new(), Some(why)));
        }
    };
    let mut modified = Vec::new();
    for (path, here) in &edited {
        match release.read(path)? {
            Some(theirs) if theirs.as_slice() == *here => {}
            Some(theirs) => modified.push(format!(
                "{path} (sha256 {} here, {} in {version}'s sources jar)",
                sha256(here),
                sha256(&theirs)
            )),
            None => modified.push(format!("{path} (not in {version}'s sources jar)")),
        }
    }
    if modified.is_empty() {
        crate::out::note(format!(
            "the {} upstream files okp edits are byte-identical to Kafka {version}'s ({})",
            edited.len(),
            release.describe()
        ));
    } else if allow_modified {
        crate::out::note(format!(
            "warning: applying to files that are not Kafka {version}'s own (--allow-modified; recorded in \
             .okp/state.json):\n  {}",
            modified.join("\n  ")
        ));
    } else {
        return Err(Error::Check(format!(
            "files okp would edit are not Kafka {version}'s own (a fork, or changed since the release):\n  {}\n\
             nothing was changed; the patch set was ported and proven on the release's sources. To patch a fork \
             anyway pass --allow-modified (recorded in .okp/state.json and shown by `okp status`)",
            modified.join("\n  ")
        )));
    }
    Ok((modified, None))
}

/// The release a checkout is: refuses a mismatch with --version unless forced.
fn checkout_version(tree: &DirTree, flag: Option<KafkaVersion>, force: bool) -> Result<KafkaVersion> {
    let declared = tree.declared_version()?;
    match (flag, declared) {
        (Some(v), Some(d)) if d == v.to_string() => Ok(v),
        (Some(v), Some(d)) if force => {
            crate::out::note(format!(
                "note: {} declares {d}; applying {v}'s patch set as --force asks",
                tree.describe()
            ));
            Ok(v)
        }
        (Some(v), Some(d)) => Err(Error::Usage(format!(
            "{} declares version {d}, not {v}: refusing to apply {v}'s patch set (pass --force to do it anyway)",
            tree.describe()
        ))),
        (Some(v), None) => Ok(v),
        (None, Some(d)) => d.parse().map_err(|_| {
            Error::Usage(format!(
                "{} declares version {d}, which is not a final release; pass --version",
                tree.describe()
            ))
        }),
        (None, None) => {
            Err(Error::Usage(format!("{} does not say which release it is; pass --version", tree.describe())))
        }
    }
}

pub fn apply(
    ws: &Workspace,
    root: &Path,
    version: Option<KafkaVersion>,
    mode: Option<Mode>,
    opts: ApplyOpts,
) -> Result<Outcome> {
    let tree = DirTree::open(root)?;
    let mut tx = if opts.dry_run { Tx::open_to_read(root)? } else { Tx::open(root)? };
    if !opts.dry_run {
        if let Some(msg) = tx.recover()? {
            crate::out::note(&msg);
        }
    }
    let version = checkout_version(&tree, version, opts.force)?;
    let (model, ps) = (&ws.model, ws.patch_set()?);
    let release = model.matrix.require(version)?;
    let mode = release.mode_for(mode, ModeDefault::Ask)?;
    let eff = ps.effective(model, release, version, mode, &opts.layers);
    if let Some(st) = tx.state()? {
        if st.patch_set_hash == eff.hash && st.release == version && st.mode == mode {
            crate::out::note(format!(
                "{} already carries patch set {} ({version} {mode}); nothing to do",
                root.display(),
                &eff.hash[..16]
            ));
            return Ok(Outcome::Done);
        }
        return Err(Error::Usage(format!(
            "{} already carries another okp patch set ({} {} patch set {}, okp {}); run `okp revert` first",
            root.display(),
            st.release,
            st.mode,
            st.short_hash(),
            st.okp_version
        )));
    }
    if !anchors_hold(model, release, mode, &eff.layers, &tree)? {
        return Ok(Outcome::Failed(crate::error::Failure::Drift));
    }
    let plan = apply::plan(&eff, &tree)?;
    let paths: Vec<String> = plan.changes.iter().map(|c| c.path.clone()).collect();
    if let Some(dirty) = gitwt::dirty(root, &paths)? {
        if !dirty.is_empty() {
            return Err(Error::Usage(format!(
                "uncommitted changes in files okp would touch: {}; commit or stash them first (nothing was changed)",
                dirty.join(", ")
            )));
        }
    }
    let (modified, unchecked) = release_check(ws, version, &plan, opts.allow_modified)?;
    if opts.dry_run {
        print(&apply::unified_diff(&plan))?;
        return Ok(Outcome::Done);
    }
    tx.preflight(&plan)?;
    let state = State {
        schema: 1,
        txn: String::new(),
        okp_version: env!("CARGO_PKG_VERSION").to_string(),
        release: version,
        mode,
        family: eff.family.clone(),
        patch_set_hash: eff.hash.clone(),
        layers: eff.layers.label(),
        files: Vec::new(),
        created_dirs: Vec::new(),
        modified,
        unchecked,
    };
    tx.apply(&plan, state)?;
    crate::out::note(format!("applied {}", summary(&eff, &plan)));
    if opts.commit {
        let branch = format!("okp/observer-{version}-{mode}");
        let msg = format!(
            "Observer replicas: okp patch set for Kafka {version} ({mode})\n\nFamily {}, layers {}, patch set {}.\n",
            eff.family,
            eff.layers.label(),
            eff.hash
        );
        let id = gitwt::commit_on_branch(root, &paths, &branch, &msg)?;
        crate::out::note(format!("committed {} on branch {branch}", &id[..12]));
    }
    Ok(Outcome::Done)
}

fn summary(eff: &Effective, plan: &Plan) -> String {
    format!(
        "patch set {} (family {}, layers {}, Kafka {} {}): {} edits, {} new files, {} files, +{} lines",
        &eff.hash[..16],
        eff.family,
        eff.layers.label(),
        eff.release,
        eff.mode,
        eff.edits.len(),
        eff.new_files.len(),
        plan.changes.len(),
        plan.added_lines()
    )
}

pub fn revert(root: &Path, force: bool) -> Result<Outcome> {
    DirTree::open(root)?;
    let mut tx = Tx::open(root)?;
    if let Some(msg) = tx.recover()? {
        crate::out::note(&msg);
    }
    match tx.state()? {
        None => {
            crate::out::note(format!("{} carries no okp patch set; nothing to revert", root.display()));
            Ok(Outcome::Done)
        }
        Some(st) => {
            let n = tx.revert(&st, force)?;
            crate::out::note(format!(
                "reverted patch set {} ({} {}): {n} files restored to pristine",
                st.short_hash(),
                st.release,
                st.mode
            ));
            Ok(Outcome::Done)
        }
    }
}

pub fn status(root: &Path) -> Result<Outcome> {
    DirTree::open(root)?;
    let mut tx = Tx::open_to_read(root)?;
    if let Some(msg) = tx.recover()? {
        crate::out::note(&msg);
    }
    match tx.state()? {
        None => print(&format!("{}: pristine (no okp patch set)\n", root.display()))?,
        Some(st) => {
            let mut s = format!(
                "{}: patch set {} applied (Kafka {} {}, family {}, layers {}, okp {}), {} files\n",
                root.display(),
                st.short_hash(),
                st.release,
                st.mode,
                st.family,
                if st.layers.is_empty() { "core" } else { &st.layers },
                st.okp_version,
                st.files.len()
            );
            for m in &st.modified {
                let _ = writeln!(s, "  applied with --allow-modified: {m}");
            }
            if let Some(why) = &st.unchecked {
                let _ = writeln!(s, "  not compared with the release's own files: {why}");
            }
            print(&s)?
        }
    }
    Ok(Outcome::Done)
}

pub fn export(
    ws: &Workspace,
    version: KafkaVersion,
    mode: Option<Mode>,
    layers: &Layers,
    tree: &dyn SourceTree,
    output: Option<&Path>,
) -> Result<Outcome> {
    let (model, ps) = (&ws.model, ws.patch_set()?);
    let release = model.matrix.require(version)?;
    let mode = release.mode_for(mode, ModeDefault::Ask)?;
    let eff = ps.effective(model, release, version, mode, layers);
    if !anchors_hold(model, release, mode, layers, tree)? {
        return Ok(Outcome::Failed(crate::error::Failure::Drift));
    }
    let plan = apply::plan(&eff, tree)?;
    let diff = apply::unified_diff(&plan);
    match output {
        None => print(&diff)?,
        Some(p) => {
            crate::fsx::write_atomic(p, diff.as_bytes())?;
            crate::out::note(format!("wrote {} ({})", p.display(), summary(&eff, &plan)));
        }
    }
    Ok(Outcome::Done)
}
