//! `okp show --build DIR`: what a build directory's okp-build.json says about its jars, for a
//! reviewer: where the upstream sources came from, every file compiled with its sha256, the
//! compilers, and both provenance proofs (source ≡ release, patch delta) with the members our
//! edits changed in each class.
//!
//! Not here: making the proofs (`proof`), the record's format (`record`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::hash::sha256;
use crate::source::Spec;
use crate::workspace::Workspace;

use super::proof::Provenance;
use super::record::BuildRecord;

/// The sha256 of each upstream file the record names, as the release's sources jars hold it: what
/// a file compiled may be called "release" against. Empty when the release has no sources jar.
pub fn release_hashes(ws: &Workspace, rec: &BuildRecord) -> BTreeMap<String, String> {
    let Some(p) = rec.provenance.as_deref() else { return BTreeMap::new() };
    let hint = "no sources jar";
    let Ok(tree) = ws.open(Spec::Release { version: rec.release, hint }) else { return BTreeMap::new() };
    p.sources
        .iter()
        .filter(|f| f.upstream_sha256.is_some())
        .filter_map(|f| tree.read(&f.path).ok().flatten().map(|b| (f.path.clone(), sha256(&b))))
        .collect()
}

/// The report on the build record `rec` read from `dir`; `release` holds the release's own sha256
/// of each upstream file (`release_hashes`).
pub fn render(rec: &BuildRecord, dir: &Path, release: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Build {}: Kafka {} {}, family {}, layers {}, patch set {}, backend {}, okp {}",
        clean(&dir.display().to_string()),
        rec.release,
        rec.mode,
        clean(&rec.family),
        rec.layers.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("+"),
        clean(rec.patch_set_hash.get(..16).unwrap_or(&rec.patch_set_hash)),
        clean(&rec.backend),
        clean(&rec.okp_version)
    );
    if !rec.source.is_empty() {
        let _ = writeln!(s, "  upstream sources: {}", clean(&rec.source));
    }
    let _ = writeln!(s, "  jars:");
    for j in &rec.jars {
        let _ = writeln!(
            s,
            "    {}  sha256 {}  (a copy of {} sha256 {}: {} classes replaced, {} added, {} removed)",
            clean(&j.splice.jar),
            clean(&j.sha256),
            clean(&j.upstream),
            clean(&j.upstream_sha256),
            j.splice.replaced.len(),
            j.splice.added.len(),
            j.splice.removed.len()
        );
    }
    match rec.provenance.as_deref() {
        None => {
            let _ = writeln!(
                s,
                "  provenance: none recorded: nothing shows these jars are the release plus exactly our edits \
                 (`okp verify --jars` and `okp bundle` refuse them; build again with this okp)"
            );
        }
        Some(p) => provenance(&mut s, p, release),
    }
    s
}

fn clean(v: &str) -> String {
    crate::escape::one_line(v)
}

fn provenance(s: &mut String, p: &Provenance, release: &BTreeMap<String, String>) {
    let verdict = if p.passed() { "passed" } else { "NOT passed" };
    let _ = writeln!(s, "  provenance (schema {}): {verdict}", p.schema);
    for a in &p.sources_jars {
        let _ = writeln!(s, "    read from {} sha256 {}", clean(&a.coordinate), clean(&a.sha256));
    }
    for (k, v) in &p.compilers {
        let _ = writeln!(s, "    compiler {}: {}", clean(k), clean(v));
    }
    let _ = writeln!(s, "    files compiled ({}):", p.sources.len());
    for f in &p.sources {
        // "release" only where the release's sources jar holds those very bytes.
        let upstream = match (f.upstream_sha256.as_deref(), release.get(&f.path)) {
            (None, _) => "(our own file)".to_string(),
            (Some(u), Some(r)) if u == r => format!("release {}", clean(u)),
            (Some(u), Some(r)) => format!("read {} (NOT the release's sources jar: {})", clean(u), clean(r)),
            (Some(u), None) => format!("read {} (no release sources jar to compare with)", clean(u)),
        };
        let _ = writeln!(s, "      {}  {upstream}  compiled {}", clean(&f.path), clean(&f.patched_sha256));
    }
    if !p.not_built.is_empty() {
        let _ = writeln!(
            s,
            "    NOT BUILT: the tree read differs from the release's sources in {} file(s) the splice does not compile \
             (built with --allow-modified); those changes are not in these jars:",
            p.not_built.len()
        );
        for f in &p.not_built {
            let _ = writeln!(s, "      {}", clean(f));
        }
    }
    let r = &p.release;
    let _ = writeln!(
        s,
        "    source ≡ release: {} ({} classes compared: {} byte-identical, {} equal after normalisation; {})",
        if r.passed {
            "passed"
        } else if r.enforced {
            "REFUSED"
        } else {
            "differences recorded, not enforced for this release"
        },
        r.classes_compared,
        r.byte_identical,
        r.normalised_equal,
        if r.enforced { "enforced" } else { "not enforced" }
    );
    for e in &r.exceptions_used {
        let _ =
            writeln!(s, "      forgiven: {} {} ({:?}, {}×)", clean(&e.class), clean(&e.member), e.relaxation, e.count);
    }
    for d in &r.differences {
        let _ = writeln!(s, "      difference: {}", clean(d));
    }
    for d in &r.not_established {
        let _ = writeln!(s, "      difference in a unit not yet established (recorded, not judged): {}", clean(d));
    }
    let d = &p.delta;
    let members: usize = d.changed_members.values().map(Vec::len).sum();
    let _ = writeln!(
        s,
        "    patch delta: {} ({} classes compared, {} unchanged; {} classes with {} changed members; {} new classes)",
        if d.passed { "passed" } else { "REFUSED" },
        d.classes_compared,
        d.unchanged,
        d.changed_members.len(),
        members,
        d.new_classes.len()
    );
    for (class, changed) in &d.changed_members {
        let _ = writeln!(s, "      {}:", clean(class));
        for m in changed {
            let _ = writeln!(s, "        {}", clean(m));
        }
    }
    if !d.new_classes.is_empty() {
        let _ = writeln!(s, "      new classes (our files): {}", clean(&d.new_classes.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_from_the_record_cannot_reach_the_terminal_as_control_characters() {
        assert_eq!(clean("a\u{1b}[31mb\nc"), "a\\x1b[31mb\\nc");
        assert_eq!(clean("method fetch(int)"), "method fetch(int)");
    }
}
