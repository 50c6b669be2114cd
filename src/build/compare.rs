//! Two builds of one release compared class by class (`okp compare-builds`):
//! typically the Gradle backend's jars against the splice backend's of the
//! same release and mode (ci/okp-gradle-check.yml). Each class is identical
//! byte for byte, the same program after the normalisation `bytecode` defines
//! (constant-pool order, instruction encoding, member order, debug
//! information and stack maps do not count), or different, with the members
//! that differ named.
//!
//! Which classes: those a splice build changed (the `replaced` and `added` of
//! its okp-build.json, on either side), else every class of the jar.
//!
//! Not here: the normalisation itself (`bytecode`), what a difference means
//! for the provenance proofs (`proof`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::record::BuildRecord;
use crate::error::{Error, Result};
use crate::jvm::classfile::{self, MemberId};

/// The JSON form's schema (`okp compare-builds --format json`); no okp reader.
pub const JSON_SCHEMA: u32 = 1;

/// How one class of build A compares with the same class of build B.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum ClassVerdict {
    /// Byte for byte.
    Identical,
    /// Equal after normalisation.
    SameProgram,
    /// These members differ (or are only on one side).
    Differs {
        only_a: Vec<MemberId>,
        only_b: Vec<MemberId>,
        differ: Vec<MemberId>,
    },
    OnlyA,
    OnlyB,
    /// A class file okp cannot read; the reason.
    Unreadable {
        why: String,
    },
}

impl ClassVerdict {
    pub fn agrees(&self) -> bool {
        matches!(self, ClassVerdict::Identical | ClassVerdict::SameProgram)
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ClassRow {
    pub class: String,
    #[serde(flatten)]
    pub verdict: ClassVerdict,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JarRow {
    /// The jar's file name, the same on both sides.
    pub jar: String,
    /// Whether the classes compared are those a splice build changed (else every class).
    pub changed_classes_only: bool,
    pub classes: Vec<ClassRow>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub schema: u32,
    pub a: PathBuf,
    pub b: PathBuf,
    pub jars: Vec<JarRow>,
    /// Jars (by file name) found on one side only.
    pub jars_only_a: Vec<String>,
    pub jars_only_b: Vec<String>,
}

impl Comparison {
    /// Every compared class is the same program on both sides, and no jar is missing.
    pub fn agrees(&self) -> bool {
        self.jars_only_a.is_empty()
            && self.jars_only_b.is_empty()
            && self.jars.iter().all(|j| j.classes.iter().all(|c| c.verdict.agrees()))
    }
}

/// Compares two builds: two jars, or two directories whose jars are paired by file name.
pub fn compare(a: &Path, b: &Path) -> Result<Comparison> {
    let (jars_a, jars_b) = (jars_of(a)?, jars_of(b)?);
    let changed = changed_classes(a).or_else(|| changed_classes(b));
    let mut jars = Vec::new();
    let single = a.is_file() && b.is_file();
    for (name, pa) in &jars_a {
        let pb = if single { jars_b.values().next() } else { jars_b.get(name) };
        let Some(pb) = pb else { continue };
        let only = changed.as_ref().and_then(|c| c.get(name));
        jars.push(compare_jars(name, pa, pb, only)?);
    }
    let (jars_only_a, jars_only_b) = if single {
        (vec![], vec![])
    } else {
        (
            jars_a.keys().filter(|k| !jars_b.contains_key(*k)).cloned().collect(),
            jars_b.keys().filter(|k| !jars_a.contains_key(*k)).cloned().collect(),
        )
    };
    Ok(Comparison { schema: JSON_SCHEMA, a: a.to_path_buf(), b: b.to_path_buf(), jars, jars_only_a, jars_only_b })
}

/// The jars of a side: the file itself, or every `*.jar` directly in the directory, by file name.
/// Anything else (a FIFO, a device, nothing) is refused in okp's words before anything is opened.
fn jars_of(p: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let refuse = |what: &str| Error::Tree {
        path: p.to_path_buf(),
        msg: format!("{what}: compare-builds takes a jar or a directory of jars (a build's --out)"),
    };
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => return Ok(BTreeMap::from([(name(p), p.to_path_buf())])),
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(refuse("neither a regular file nor a directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(refuse("no such file or directory")),
        Err(e) => return Err(Error::io(format!("cannot look at {}", p.display()), e)),
    }
    let rd = std::fs::read_dir(p).map_err(|e| Error::io(format!("cannot list {}", p.display()), e))?;
    let jars: BTreeMap<String, PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jar"))
        .map(|p| (name(&p), p))
        .collect();
    if jars.is_empty() {
        return Err(Error::Usage(format!("{}: no jar there", p.display())));
    }
    Ok(jars)
}

/// The classes a splice build changed, per jar file name, from its okp-build.json (entry names,
/// `kafka/cluster/Partition.class`).
fn changed_classes(dir: &Path) -> Option<BTreeMap<String, BTreeSet<String>>> {
    let rec = BuildRecord::read(if dir.is_file() { dir.parent()? } else { dir }).ok()?;
    let mut out = BTreeMap::new();
    for j in rec.jars {
        let file = j.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let classes: BTreeSet<String> = j.splice.replaced.iter().chain(&j.splice.added).cloned().collect();
        out.insert(file, classes);
    }
    Some(out)
}

fn classes_of(jar: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let bytes = crate::fsx::read::input(jar, crate::fsx::read::MAX_JAR, "jar")?;
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| Error::Usage(format!("{}: not a jar: {e}", jar.display())))?;
    let mut out = BTreeMap::new();
    for i in 0..z.len() {
        let mut e = z.by_index(i).map_err(|e| Error::Usage(format!("{}: {e}", jar.display())))?;
        if !e.name().ends_with(".class") {
            continue;
        }
        let name = e.name().to_string();
        let bytes = crate::fsx::zip_entry::read(&mut e, jar, crate::fsx::read::MAX_CLASS)?;
        out.insert(name, bytes);
    }
    Ok(out)
}

fn compare_jars(name: &str, a: &Path, b: &Path, only: Option<&BTreeSet<String>>) -> Result<JarRow> {
    let (ca, cb) = (classes_of(a)?, classes_of(b)?);
    let keys: BTreeSet<&String> = ca.keys().chain(cb.keys()).filter(|k| only.is_none_or(|o| o.contains(*k))).collect();
    let classes =
        keys.into_iter().map(|k| ClassRow { class: k.clone(), verdict: compare_class(ca.get(k), cb.get(k)) }).collect();
    Ok(JarRow { jar: name.to_string(), changed_classes_only: only.is_some(), classes })
}

/// The verdict for one class present on either or both sides.
pub fn compare_class(a: Option<&Vec<u8>>, b: Option<&Vec<u8>>) -> ClassVerdict {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (Some(_), None) => return ClassVerdict::OnlyA,
        (None, _) => return ClassVerdict::OnlyB,
    };
    if a == b {
        return ClassVerdict::Identical;
    }
    match (classfile::read(a), classfile::read(b)) {
        (Ok(x), Ok(y)) => {
            let d = classfile::compare(&x, &y);
            if d.is_empty() {
                ClassVerdict::SameProgram
            } else {
                ClassVerdict::Differs { only_a: d.only_a, only_b: d.only_b, differ: d.differ }
            }
        }
        (Err(why), _) | (_, Err(why)) => ClassVerdict::Unreadable { why },
    }
}

/// The human report: one line per class that does not agree, and a count per jar.
pub fn render(c: &Comparison) -> String {
    let mut s = format!("okp compare-builds\n  A: {}\n  B: {}\n\n", c.a.display(), c.b.display());
    for j in &c.jars {
        let count = |f: fn(&ClassVerdict) -> bool| j.classes.iter().filter(|r| f(&r.verdict)).count();
        s.push_str(&format!(
            "{} ({}): {} classes, {} identical, {} the same program, {} differ\n",
            j.jar,
            if j.changed_classes_only { "the classes the splice build changed" } else { "every class" },
            j.classes.len(),
            count(|v| matches!(v, ClassVerdict::Identical)),
            count(|v| matches!(v, ClassVerdict::SameProgram)),
            count(|v| !v.agrees()),
        ));
        for r in j.classes.iter().filter(|r| !r.verdict.agrees()) {
            let what = match &r.verdict {
                ClassVerdict::OnlyA => "only in A".to_string(),
                ClassVerdict::OnlyB => "only in B".to_string(),
                ClassVerdict::Unreadable { why } => format!("unreadable: {why}"),
                ClassVerdict::Differs { only_a, only_b, differ } => {
                    let list = |v: &[MemberId]| v.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ");
                    let mut parts = Vec::new();
                    for (label, v) in [("differ", differ), ("only in A", only_a), ("only in B", only_b)] {
                        if !v.is_empty() {
                            parts.push(format!("{label}: {}", list(v)));
                        }
                    }
                    parts.join("; ")
                }
                ClassVerdict::Identical | ClassVerdict::SameProgram => unreachable!("filtered"),
            };
            s.push_str(&format!("  DIFFERS {}: {what}\n", r.class));
        }
    }
    for (side, v) in [("A", &c.jars_only_a), ("B", &c.jars_only_b)] {
        for j in v {
            s.push_str(&format!("{j}: only in {side}\n"));
        }
    }
    s.push_str(if c.agrees() { "\nverdict: the same program\n" } else { "\nverdict: DIFFERENT\n" });
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn jar(path: &Path, entries: &[(&str, &[u8])]) {
        let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        for (name, bytes) in entries {
            z.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap();
    }

    /// A real class file: one of the release jars in the Maven cache would do, but the
    /// test must not depend on the cache; the JDK's own jrt image is not a jar. So the
    /// smallest valid class, written out by hand: `public class A` with no members.
    fn class_a(major: u16) -> Vec<u8> {
        let mut v = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0];
        v.extend(major.to_be_bytes());
        // constant pool: 1 Utf8 "A", 2 Class #1, 3 Utf8 "java/lang/Object", 4 Class #3
        v.extend([0, 5]);
        v.extend([1, 0, 1, b'A', 7, 0, 1, 1, 0, 16]);
        v.extend(b"java/lang/Object");
        v.extend([7, 0, 3]);
        // access public|super, this #2, super #4, no interfaces, fields, methods, attributes
        v.extend([0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
        v
    }

    #[test]
    fn classes_compare_as_identical_the_same_program_or_different() {
        let a = class_a(52);
        assert_eq!(compare_class(Some(&a), Some(&a)), ClassVerdict::Identical);
        assert!(matches!(compare_class(Some(&a), Some(&class_a(55))), ClassVerdict::Differs { .. }));
        assert_eq!(compare_class(Some(&a), None), ClassVerdict::OnlyA);
        assert!(matches!(compare_class(Some(&a), Some(&vec![0xCA, 0xFE])), ClassVerdict::Unreadable { .. }));
    }

    #[test]
    fn two_directories_pair_their_jars_by_name() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        jar(&a.join("core-1.jar"), &[("A.class", &class_a(52)), ("x.txt", b"x")]);
        jar(&b.join("core-1.jar"), &[("A.class", &class_a(52))]);
        jar(&a.join("extra-1.jar"), &[("A.class", &class_a(52))]);
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.jars.len(), 1);
        assert_eq!(c.jars[0].classes, vec![ClassRow { class: "A.class".into(), verdict: ClassVerdict::Identical }]);
        assert_eq!(c.jars_only_a, vec!["extra-1.jar".to_string()]);
        assert!(!c.agrees(), "a jar on one side only is a difference");
        jar(&b.join("core-1.jar"), &[("A.class", &class_a(55))]);
        std::fs::remove_file(a.join("extra-1.jar")).unwrap();
        let c = compare(&a, &b).unwrap();
        assert!(!c.agrees());
        assert!(render(&c).contains("DIFFERS A.class: differ: class header"), "{}", render(&c));
    }
}
