//! Ship only what is proven (issue 32): with real releases' sources, jars and compilers, every
//! tampering of a build — its jars or its okp-build.json — is refused by every consumer, which
//! re-derives the proof from the jars' bytes (src/build/recheck.rs); a tampered source is refused
//! by the build; a refused build leaves no jar; a fork's changes outside the compiled files are
//! refused or recorded; pristine trees of the releases whose recompile needed explaining build.

use crate::common::bundle::{built, bundle, kafka_home, keys, resign_with, tree as home_tree};
use crate::common::*;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A change an attacker makes to a build record.
type RecordEdit = Box<dyn Fn(&mut serde_json::Value)>;
/// A change to an upstream source file's text.
type SourceEdit = Box<dyn Fn(&str) -> String>;

fn record(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("okp-build.json")).unwrap()).unwrap()
}

fn write_record(dir: &Path, v: &serde_json::Value) {
    std::fs::write(dir.join("okp-build.json"), serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// A copy of a build directory (its jars and record), for one attack.
fn copy_build(src: &Path) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, d.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    d
}

fn upstream_jar(coordinate: &str) -> PathBuf {
    let p: Vec<&str> = coordinate.split(':').collect();
    m2().join(p[0].replace('.', "/")).join(p[1]).join(p[2]).join(format!("{}-{}.jar", p[1], p[2]))
}

fn jar_entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..z.len())
        .map(|i| {
            let mut f = z.by_index(i).unwrap();
            let mut b = Vec::new();
            f.read_to_end(&mut b).unwrap();
            (f.name().to_string(), b)
        })
        .collect()
}

fn write_jar(path: &Path, entries: &[(String, Vec<u8>)]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (n, b) in entries {
        z.start_file(n.as_str(), zip::write::SimpleFileOptions::default()).unwrap();
        z.write_all(b).unwrap();
    }
    z.finish().unwrap();
}

/// The core jar's record entry and its path in `dir`.
fn core_jar(rec: &serde_json::Value, dir: &Path) -> (usize, PathBuf) {
    let jars = rec["jars"].as_array().unwrap();
    let i = jars.iter().position(|j| j["module"] == "core").unwrap();
    (i, dir.join(jars[i]["splice"]["jar"].as_str().unwrap()))
}

/// Puts the jars' true sha256 into the record, as an attacker who edits it would.
fn fix_shas(rec: &mut serde_json::Value, dir: &Path) {
    for j in rec["jars"].as_array_mut().unwrap() {
        let p = dir.join(j["splice"]["jar"].as_str().unwrap());
        j["sha256"] = sha256_hex(&std::fs::read(p).unwrap()).into();
    }
}

fn bundle_it(dir: &Path, key: &Path) -> Output {
    okp()
        .args(["bundle", "--target", "x86_64", "--build"])
        .arg(dir)
        .arg("--key")
        .arg(key)
        .arg("--out")
        .arg(dir.join("dist"))
        .output()
        .unwrap()
}

/// `okp bundle` and `okp show --build` both refuse `dir` with exit 1, saying `needle`; nothing is written.
fn refused(what: &str, dir: &Path, key: &Path, needle: &str) {
    let o = bundle_it(dir, key);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{what}: bundle: {e}");
    assert!(e.contains(needle), "{what}: bundle says no `{needle}`:\n{e}");
    assert!(!dir.join("dist").exists(), "{what}: bundle wrote something");
    let s = okp().args(["show", "--build"]).arg(dir).output().unwrap();
    assert_eq!(s.status.code(), Some(1), "{what}: show --build: {}", stderr(&s));
    assert!(stderr(&s).contains(needle), "{what}: show --build says no `{needle}`:\n{}", stderr(&s));
}

/// Every attack of the issue on a real build of (version, mode).
fn attacks(version: &str, mode: &str) {
    let good = built(version, mode);
    let (_k, key, _) = keys();
    // The untouched build bundles, and says what it re-derived.
    let ok = copy_build(&good);
    let o = bundle_it(ok.path(), &key);
    assert_eq!(o.status.code(), Some(0), "{version} {mode}: {}", stderr(&o));
    assert!(stderr(&o).contains("re-derived from its bytes"), "{}", stderr(&o));

    let rec0 = record(&good);
    let upstream = upstream_jar(rec0["jars"][core_jar(&rec0, &good).0]["upstream"].as_str().unwrap());
    let release_entries = jar_entries(&upstream);
    let partition = "kafka/cluster/Partition.class".to_string();

    // 1. The upstream jar copied over the patched one, its sha256 put into the record.
    let d = copy_build(&good);
    let mut rec = record(d.path());
    std::fs::copy(&upstream, core_jar(&rec, d.path()).1).unwrap();
    fix_shas(&mut rec, d.path());
    write_record(d.path(), &rec);
    refused("upstream jar", d.path(), &key, "changed nothing in the shipped classes");

    // 2. One class swapped for upstream's.
    let d = copy_build(&good);
    let mut rec = record(d.path());
    let jar = core_jar(&rec, d.path()).1;
    let upstream_partition = release_entries.iter().find(|(n, _)| *n == partition).unwrap().1.clone();
    let swapped: Vec<(String, Vec<u8>)> = jar_entries(&jar)
        .into_iter()
        .map(|(n, b)| if n == partition { (n, upstream_partition.clone()) } else { (n, b) })
        .collect();
    write_jar(&jar, &swapped);
    fix_shas(&mut rec, d.path());
    write_record(d.path(), &rec);
    refused("swapped class", d.path(), &key, "Partition.scala: the edit at line");

    // 3. An extra class, listed as added.
    let d = copy_build(&good);
    let mut rec = record(d.path());
    let (i, jar) = core_jar(&rec, d.path());
    let mut more = jar_entries(&jar);
    more.push(("kafka/server/OkpEvil.class".into(), upstream_partition.clone()));
    write_jar(&jar, &more);
    fix_shas(&mut rec, d.path());
    rec["jars"][i]["splice"]["added"].as_array_mut().unwrap().push("kafka/server/OkpEvil.class".into());
    write_record(d.path(), &rec);
    refused(
        "extra class",
        d.path(),
        &key,
        "kafka/server/OkpEvil.class: not in the release jar, and from no source okp compiles",
    );

    // 4. Garbage class bytes.
    let d = copy_build(&good);
    let mut rec = record(d.path());
    let jar = core_jar(&rec, d.path()).1;
    let garbage: Vec<(String, Vec<u8>)> = jar_entries(&jar)
        .into_iter()
        .map(|(n, b)| if n == partition { (n, b"\xca\xfe\xba\xbe garbage".to_vec()) } else { (n, b) })
        .collect();
    write_jar(&jar, &garbage);
    fix_shas(&mut rec, d.path());
    write_record(d.path(), &rec);
    refused("garbage class", d.path(), &key, "kafka/cluster/Partition.class");

    // 5–9. The record edited, the jars as built.
    let edits: Vec<(&str, RecordEdit, &str)> = vec![
        (
            "emptied changed_members",
            Box::new(|r| r["provenance"]["delta"]["changed_members"] = serde_json::json!({})),
            "provenance.delta.changed_members: kafka/cluster/Partition: changed in the jar, not recorded",
        ),
        (
            "forged patch_set_hash",
            Box::new(|r| r["patch_set_hash"] = "ab".repeat(32).into()),
            "patch_set_hash: says abababab",
        ),
        (
            "layers: metrics on a core build",
            Box::new(|r| r["layers"] = serde_json::json!(["core", "metrics"])),
            "patch_set_hash: says",
        ),
        (
            "release.passed false, enforced false",
            Box::new(|r| {
                r["provenance"]["release"]["passed"] = false.into();
                r["provenance"]["release"]["enforced"] = false.into();
                r["provenance"]["release"]["differences"] = serde_json::json!(["x"]);
            }),
            "provenance: the recorded proof did not pass enforced",
        ),
        (
            "a class's member list emptied",
            Box::new(|r| {
                r["provenance"]["delta"]["changed_members"]["kafka/cluster/Partition"] = serde_json::json!([])
            }),
            "kafka/cluster/Partition: changed in the jar, not recorded",
        ),
    ];
    for (what, edit, needle) in edits {
        let d = copy_build(&good);
        let mut rec = record(d.path());
        edit(&mut rec);
        write_record(d.path(), &rec);
        refused(what, d.path(), &key, needle);
    }
    // A build relabelled to the other mode: what the jars hold is not that mode's patch set.
    let other = if mode == "zk" { "kraft" } else { "zk" };
    let d = copy_build(&good);
    let mut rec = record(d.path());
    rec["mode"] = other.into();
    write_record(d.path(), &rec);
    refused("relabelled mode", d.path(), &key, "okp-build.json");
}

#[test]
fn every_tampering_of_a_4_3_1_kraft_build_is_refused_by_bundle_and_show() {
    attacks("4.3.1", "kraft");
}

#[test]
fn every_tampering_of_a_3_9_2_zk_build_is_refused_by_bundle_and_show() {
    attacks("3.9.2", "zk");
}

/// The 4.3.1 kraft bundle of a fresh build, its core jar replaced by `alter(core jar)`, its
/// MANIFEST.json's hashes mended, its attestations dropped (they would name the patched jar's
/// sha256, as from a bundle made before they existed), signed again with the release key and the
/// real bundle's trusted comment: a builder's key misused. Returns (key dir, bundle dir, bundle,
/// public key).
fn resigned_with_core_jar(
    alter: impl Fn(Vec<u8>) -> Vec<u8>,
) -> (tempfile::TempDir, tempfile::TempDir, PathBuf, PathBuf) {
    let (k, key, public) = keys();
    let build = copy_build(&built("4.3.1", "kraft"));
    let o = bundle_it(build.path(), &key);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let name = "okp-observer-4.3.1-kraft-linux-x86_64";
    let bundle = build.path().join("dist").join(format!("{name}.tar.gz"));
    // Unpack, swap the jar, mend MANIFEST.json's hashes, pack, sign again with the same key.
    let mut files: Vec<(String, u32, Vec<u8>)> = Vec::new();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(std::fs::File::open(&bundle).unwrap()));
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().into_owned();
        let mode = e.header().mode().unwrap();
        let mut b = Vec::new();
        e.read_to_end(&mut b).unwrap();
        files.push((path, mode, b));
    }
    let jar_path = format!("{name}/libs/kafka_2.13-4.3.1.jar");
    let i = files.iter().position(|f| f.0 == jar_path).unwrap();
    files[i].2 = alter(std::mem::take(&mut files[i].2));
    let (sha, size) = (sha256_hex(&files[i].2), files[i].2.len() as u64);
    files.retain(|f| !f.0.ends_with("/provenance.intoto.jsonl") && !f.0.ends_with("/sbom.cdx.json"));
    let mi = files.iter().position(|f| f.0 == format!("{name}/MANIFEST.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(&files[mi].2).unwrap();
    for f in ["provenance.intoto.jsonl", "sbom.cdx.json"] {
        m["files"].as_object_mut().unwrap().remove(f);
    }
    for j in m["jars"].as_array_mut().unwrap() {
        if j["path"] == "libs/kafka_2.13-4.3.1.jar" {
            j["sha256"] = sha.clone().into();
        }
    }
    m["files"]["libs/kafka_2.13-4.3.1.jar"]["sha256"] = sha.clone().into();
    m["files"]["libs/kafka_2.13-4.3.1.jar"]["size"] = size.into();
    files[mi].2 = serde_json::to_vec_pretty(&m).unwrap();
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
    for (path, mode, bytes) in &files {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(*mode);
        h.set_entry_type(if path.ends_with('/') { tar::EntryType::Directory } else { tar::EntryType::Regular });
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, path, &bytes[..]).unwrap();
    }
    let evil_dir = tempfile::tempdir().unwrap();
    let evil = evil_dir.path().join(format!("{name}.tar.gz"));
    std::fs::write(&evil, b.into_inner().unwrap().finish().unwrap()).unwrap();
    let sig = std::fs::read_to_string(format!("{}.minisig", bundle.display())).unwrap();
    let comment = sig.lines().find_map(|l| l.strip_prefix("trusted comment: ")).unwrap().to_string();
    resign_with(&evil, &key, &comment);
    (k, evil_dir, evil, public)
}

fn verify_bundle(bundle: &Path, public: &Path) -> Output {
    okp().arg("verify-bundle").arg(bundle).arg("--pubkey").arg(public).output().unwrap()
}

/// `okp install` of `bundle` on a fresh 4.3.1 installation: it must exit 1 and change nothing.
fn install_refused(bundle: &Path, public: &Path) -> String {
    let home = kafka_home("4.3.1");
    let before = home_tree(home.path());
    let o = okp()
        .arg("install")
        .arg(bundle)
        .arg("--kafka-home")
        .arg(home.path())
        .arg("--pubkey")
        .arg(public)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(home_tree(home.path()), before, "install changed the installation");
    e
}

const UNPATCHED: &str = "changed nothing in the shipped classes";

/// A signed bundle whose core jar is the upstream one (a builder's key misused, the attestations
/// dropped): `install` re-derives the jars before it changes anything, and refuses.
#[test]
fn install_refuses_a_signed_bundle_carrying_the_unpatched_jar_before_anything_changes() {
    let upstream = std::fs::read(upstream_jar("org.apache.kafka:kafka_2.13:4.3.1")).unwrap();
    let (_k, _d, evil, public) = resigned_with_core_jar(|_| upstream.clone());
    let e = install_refused(&evil, &public);
    assert!(e.contains("MANIFEST.json of") && e.contains(UNPATCHED), "{e}");
    assert!(e.contains("FAILED   jars") && e.contains("its jars are not what its manifest says"), "{e}");
}

/// install's twin: `verify-bundle` runs the same re-derivation (it used to exit 0 on this bundle,
/// whose signature is good), refuses with exit 1 and install's very finding.
#[test]
fn verify_bundle_refuses_a_signed_bundle_carrying_the_unpatched_jar_as_install_does() {
    let upstream = std::fs::read(upstream_jar("org.apache.kafka:kafka_2.13:4.3.1")).unwrap();
    let (_k, _d, evil, public) = resigned_with_core_jar(|_| upstream.clone());
    let v = verify_bundle(&evil, &public);
    let out = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{out}{}", stderr(&v));
    assert!(out.contains("ok       signature"), "the signature is good: {out}");
    let finding = out.lines().find(|l| l.starts_with("FAILED   jars")).unwrap_or_else(|| panic!("{out}"));
    assert!(finding.contains("the jars are not what MANIFEST.json of") && out.contains(UNPATCHED), "{out}");
    assert!(out.ends_with("NOT VERIFIED\n"), "{out}");
    // The same check, the same words, under install.
    let e = install_refused(&evil, &public);
    assert!(e.contains(finding), "install says otherwise:\n{e}\nverify-bundle said:\n{out}");
    let json =
        okp().arg("verify-bundle").arg(&evil).arg("--pubkey").arg(&public).args(["--format", "json"]).output().unwrap();
    assert_eq!(json.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(j["verified"], false);
    assert!(j["checks"].as_array().unwrap().iter().any(|c| c["check"] == "jars" && c["status"] == "failed"), "{j}");
}

/// A class entry of `jar` whose CRC-32 (in its local header and in the central directory) no
/// longer matches its bytes; the bytes themselves unchanged.
fn broken_crc(mut jar: Vec<u8>) -> Vec<u8> {
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as usize;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as usize;
    let eocd = (0..jar.len() - 21).rev().find(|&i| u32_at(&jar, i) == 0x0605_4b50).unwrap();
    let mut at = u32_at(&jar, eocd + 16);
    loop {
        assert_eq!(u32_at(&jar, at), 0x0201_4b50, "a central directory entry");
        let (n, extra, comment) = (u16_at(&jar, at + 28), u16_at(&jar, at + 30), u16_at(&jar, at + 32));
        let name = String::from_utf8_lossy(&jar[at + 46..at + 46 + n]).into_owned();
        if name.ends_with(".class") && u32_at(&jar, at + 24) > 256 {
            let local = u32_at(&jar, at + 42);
            jar[at + 16] ^= 0xff;
            jar[local + 14] ^= 0xff;
            return jar;
        }
        at += 46 + n + extra + comment;
    }
}

/// A jar whose entry's CRC is broken, in a bundle re-signed with the release key: a check that
/// failed (exit 1) under both commands, naming the jar, never bad input (it was exit 2 under
/// install, exit 0 under verify-bundle).
#[test]
fn a_jar_with_a_broken_crc_fails_verify_bundle_and_install_with_exit_1() {
    let (_k, _d, evil, public) = resigned_with_core_jar(broken_crc);
    let v = verify_bundle(&evil, &public);
    let out = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{out}{}", stderr(&v));
    let finding = out.lines().find(|l| l.starts_with("FAILED   jars")).unwrap_or_else(|| panic!("{out}"));
    assert!(finding.contains("kafka_2.13-4.3.1.jar") && finding.to_lowercase().contains("checksum"), "{finding}");
    let e = install_refused(&evil, &public);
    assert!(e.contains(finding), "{e}");
}

/// `jar` with the bytes of its entry `entry` passed through `alter`.
fn with_entry(jar: Vec<u8>, entry: &str, alter: impl Fn(Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("x.jar");
    std::fs::write(&p, jar).unwrap();
    let mut found = false;
    let entries: Vec<(String, Vec<u8>)> = jar_entries(&p)
        .into_iter()
        .map(|(n, b)| {
            if n == entry {
                found = true;
                let after = alter(b.clone());
                assert_ne!(after, b, "{entry}: the alteration changed nothing");
                (n, after)
            } else {
                (n, b)
            }
        })
        .collect();
    assert!(found, "no {entry} in the jar");
    write_jar(&p, &entries);
    std::fs::read(&p).unwrap()
}

/// `bytes` with the first `from` replaced by `to` (the same length: a constant-pool string).
fn replace_once(mut bytes: Vec<u8>, from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = bytes.windows(from.len()).position(|w| w == from).unwrap_or_else(|| panic!("no {from:?}"));
    bytes[at..at + from.len()].copy_from_slice(to);
    bytes
}

/// One of okp's own added classes changed, the bundle re-signed with the release key: its name is
/// still okp's, its bytes are not what okp's sources compile to. verify-bundle and install refuse it
/// (exit 1, the same finding naming the class); both used to exit 0, checking okp's classes by name.
fn okps_own_class_changed_is_refused(entry: &str, from: &[u8], to: &[u8]) {
    let (_k, _d, evil, public) = resigned_with_core_jar(|jar| with_entry(jar, entry, |b| replace_once(b, from, to)));
    let v = verify_bundle(&evil, &public);
    let out = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{out}{}", stderr(&v));
    assert!(out.contains("ok       signature"), "the signature is good: {out}");
    let finding = out.lines().find(|l| l.starts_with("FAILED   jars")).unwrap_or_else(|| panic!("{out}"));
    let said = format!("kafka_2.13-4.3.1.jar: {entry}: okp's own class differs from what okp's sources compile to");
    assert!(out.contains(&said), "{out}");
    let e = install_refused(&evil, &public);
    assert!(e.contains(finding) && e.contains(&said), "install says otherwise:\n{e}\nverify-bundle said:\n{out}");
}

#[test]
fn okps_own_class_with_another_default_path_is_refused_by_verify_bundle_and_install() {
    okps_own_class_changed_is_refused("kafka/observer/ObserverIds$.class", b"/opt/kafka", b"/tmp/kafka");
}

#[test]
fn okps_own_class_with_a_class_name_byte_changed_is_refused_by_verify_bundle_and_install() {
    okps_own_class_changed_is_refused(
        "kafka/observer/ObserverIdCache$.class",
        b"kafka/observer/ObserverIdCache$TopicRules",
        b"kafka/observer/ObserverIdCache$TopicRulez",
    );
}

/// okp's own sources compiled alone (what verify-bundle and install compare okp's added classes
/// with) give the very classes the splice build made compiling them with the edited upstream files,
/// byte for byte, for every cached build: 2.7.2 zk (optimizer off), 3.9.2 zk and kraft, 3.9.2 kraft
/// with the metrics layer, 4.3.1 kraft. Compiled afresh (OKP_NO_OURS_CACHE), not from okp's cache.
#[test]
fn okps_own_classes_compiled_alone_are_the_builds() {
    let (_k, key, public) = keys();
    let metrics = cached_output(
        "okp-test-bundles",
        "build-3.9.2-kraft-metrics",
        "okp-build.json",
        &["build", "--version", "3.9.2", "--mode", "kraft", "--layer", "metrics"],
    );
    let builds =
        [built("2.7.2", "zk"), built("3.9.2", "zk"), built("3.9.2", "kraft"), metrics, built("4.3.1", "kraft")];
    for b in builds {
        let out = tempfile::tempdir().unwrap();
        let o = bundle(&b, "x86_64", &key, out.path());
        assert_eq!(o.status.code(), Some(0), "{}: {}", b.display(), stderr(&o));
        let bundle = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
            .unwrap();
        let v = okp()
            .arg("verify-bundle")
            .arg(&bundle)
            .arg("--pubkey")
            .arg(&public)
            .env("OKP_NO_OURS_CACHE", "1")
            .output()
            .unwrap();
        let said = stdout(&v);
        assert_eq!(v.status.code(), Some(0), "{}: {said}{}", b.display(), stderr(&v));
        let n: usize = said
            .match_indices(
                " of okp's own classes byte-identical to okp's sources compiled with the release's compilers",
            )
            .map(|(at, _)| said[..at].rsplit('(').next().unwrap().parse::<usize>().unwrap())
            .sum();
        assert!(n >= 12, "{}: {n} of okp's own classes compared: {said}", b.display());
    }
}

/// A KRaft build refused at its second module (a metadata source changed in the tree) leaves no
/// jar anywhere under --out, nor a staging directory beside it.
#[test]
fn a_refused_kraft_build_leaves_no_jar_under_out() {
    let t = copy_all(&release_tree("4.3.1"));
    let f = t.path().join("metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java");
    let text = std::fs::read_to_string(&f).unwrap();
    let changed = text.replacen("return true;", "return false;", 1);
    assert_ne!(text, changed);
    std::fs::write(&f, changed).unwrap();
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("out");
    let o = okp()
        .args(["build", "--version", "4.3.1", "--mode", "kraft", "--tree"])
        .arg(t.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("PartitionChangeBuilder"), "{}", stderr(&o));
    let jars: Vec<String> = snapshot(parent.path()).into_keys().filter(|p| p.ends_with(".jar")).collect();
    assert!(jars.is_empty(), "jars left behind: {jars:?}");
    let left: Vec<String> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "out")
        .collect();
    assert!(left.is_empty(), "left beside --out: {left:?}");
}

/// A fork's change where the splice compiles nothing is refused naming the file; with
/// --allow-modified it builds, says the change is not in the jars, and records it.
#[test]
fn a_fork_change_outside_the_compiled_files_is_refused_or_recorded() {
    let t = copy_all(&release_tree("3.9.2"));
    let f = t.path().join("core/src/main/scala/kafka/cluster/Replica.scala");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("\n// a fork's change\n");
    std::fs::write(&f, text).unwrap();
    let out = tempfile::tempdir().unwrap();
    let build = |extra: &[&str]| {
        okp()
            .args(["build", "--version", "3.9.2", "--mode", "zk", "--tree"])
            .arg(t.path())
            .arg("--out")
            .arg(out.path().join("o"))
            .args(extra)
            .output()
            .unwrap()
    };
    let o = build(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("core/src/main/scala/kafka/cluster/Replica.scala (differs)"), "{}", stderr(&o));
    assert!(!out.path().join("o/okp-build.json").exists());
    let o = build(&["--allow-modified"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("those changes are NOT in these jars"), "{}", stderr(&o));
    let rec = record(&out.path().join("o"));
    assert_eq!(
        rec["provenance"]["not_built"],
        serde_json::json!(["core/src/main/scala/kafka/cluster/Replica.scala (differs)"])
    );
    let s = okp().args(["show", "--build"]).arg(out.path().join("o")).output().unwrap();
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    assert!(stdout(&s).contains("NOT BUILT") && stdout(&s).contains("Replica.scala (differs)"), "{}", stdout(&s));
}

/// Tampered upstream sources in a --tree build are refused by the build's own proof, each naming
/// the member: a widened acks check, a constant in a member an edit sits in, a new public method.
#[test]
fn tampered_replica_manager_sources_are_refused_naming_the_member() {
    let rm = "core/src/main/scala/kafka/server/ReplicaManager.scala";
    let pristine = std::fs::read_to_string(release_tree("3.9.2").join(rm)).unwrap();
    let cases: [(&str, SourceEdit, &str); 3] = [
        (
            "acks=2 accepted",
            Box::new(|s: &str| s.replacen("requiredAcks == -1 ||", "requiredAcks == -1 || requiredAcks == 2 ||", 1)),
            "isValidRequiredAcks",
        ),
        (
            "a constant in findPreferredReadReplica",
            Box::new(|s: &str| {
                let at = s.find("def findPreferredReadReplica").unwrap();
                let (head, tail) = s.split_at(at);
                let rel = tail.find("0L").unwrap();
                format!("{head}{}1L{}", &tail[..rel], &tail[rel + 2..])
            }),
            "findPreferredReadReplica",
        ),
        (
            "a new public method",
            Box::new(|s: &str| {
                s.replacen("  def startup(): Unit = {", "  def okpBackdoor(): Int = 42\n\n  def startup(): Unit = {", 1)
            }),
            "okpBackdoor",
        ),
    ];
    for (what, change, member) in cases {
        let changed = change(&pristine);
        assert_ne!(changed, pristine, "{what}: the change did not apply");
        let t = copy_all(&release_tree("3.9.2"));
        std::fs::write(t.path().join(rm), changed).unwrap();
        let out = tempfile::tempdir().unwrap();
        let o = okp()
            .args(["build", "--version", "3.9.2", "--mode", "zk", "--tree"])
            .arg(t.path())
            .arg("--out")
            .arg(out.path())
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {e}");
        assert!(e.contains("not the release's 3.9.2") && e.contains(member), "{what}: {e}");
        assert!(!out.path().join("okp-build.json").exists(), "{what}");
    }
}

/// Pristine `okp sources` trees of the releases whose recompile needed explaining build, enforced.
#[test]
fn pristine_trees_of_the_releases_that_needed_explaining_build() {
    for (version, mode) in [("3.2.3", "zk"), ("3.6.2", "zk"), ("4.0.2", "kraft")] {
        let out = tempfile::tempdir().unwrap();
        let o = okp()
            .args(["build", "--version", version, "--mode", mode, "--tree"])
            .arg(release_tree(version))
            .arg("--out")
            .arg(out.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{version}: {}", stderr(&o));
        let p = &record(out.path())["provenance"]["release"];
        assert_eq!((p["passed"].as_bool(), p["enforced"].as_bool()), (Some(true), Some(true)), "{version}: {p:#}");
    }
}
