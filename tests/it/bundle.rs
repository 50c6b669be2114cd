//! okp bundle / verify-bundle / keygen / install / rollback, checked with
//! independent tools: the real `minisign` (Debian package), `sha256sum -c`,
//! `sha512sum -c`, GNU tar, gpg, and a directory laid out like a Kafka
//! installation holding the real upstream jars from Maven Central.
//!
//! The patched jars come from real splice builds of 3.9.2 kraft and 2.7.2 zk,
//! built once per build directory (target/okp-test-bundles/) and shared.

use crate::common::bundle::*;
use crate::common::*;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn real_minisign_and_sha_sums_accept_the_bundle() {
    let b = shared_bundle();
    let dir = b.parent().unwrap();
    let o = run(Command::new("minisign").arg("-V").arg("-p").arg(shared_pub()).arg("-m").arg(&b));
    assert!(o.status.success(), "minisign -V: {}{}", stdout(&o), stderr(&o));
    let said = stdout(&o) + &stderr(&o);
    for bound in
        [&format!("file:{NAME_3_9}.tar.gz"), "release:3.9.2", "mode:kraft", "target:linux-x86_64", "patch_set:"]
    {
        assert!(said.contains(bound), "trusted comment lacks {bound}: {said}");
    }
    for tool in ["sha256sum", "sha512sum"] {
        let ext = &tool[..6];
        let o = run(Command::new(tool).arg("-c").arg(format!("{NAME_3_9}.tar.gz.{ext}")).current_dir(dir));
        assert!(o.status.success(), "{tool} -c: {}{}", stdout(&o), stderr(&o));
        assert_eq!(stdout(&o).trim(), format!("{NAME_3_9}.tar.gz: OK"));
    }
    let o = verify(&b, &shared_pub());
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).ends_with(&format!("{NAME_3_9}.tar.gz: verified\n")), "{}", stdout(&o));
    // The public key given inline (its base64 line), as minisign -P takes it.
    let inline = std::fs::read_to_string(shared_pub()).unwrap().lines().nth(1).unwrap().to_string();
    let o = okp().arg("verify-bundle").arg(&b).args(["--pubkey", &inline, "--format", "json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verified"], true);
    assert_eq!(v["manifest"]["release"], "3.9.2");
    // Renamed, the bundle no longer is what its signature and manifest say, even
    // with checksum files made for the new name (they are not signed).
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_bundle(&b, dir.path());
    let renamed = dir.path().join("okp-observer-3.9.2-kraft-linux-aarch64.tar.gz");
    for ext in ["", ".minisig", ".sha256", ".sha512"] {
        std::fs::rename(format!("{}{ext}", copy.display()), format!("{}{ext}", renamed.display())).unwrap();
    }
    let o = verify(&renamed, &shared_pub());
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("does not list okp-observer-3.9.2-kraft-linux-aarch64.tar.gz"), "{}", stdout(&o));
    for tool in ["sha256sum", "sha512sum"] {
        let o = run(Command::new(tool).arg(renamed.file_name().unwrap()).current_dir(dir.path()));
        std::fs::write(format!("{}.{}", renamed.display(), &tool[..6]), o.stdout).unwrap();
    }
    let o = verify(&renamed, &shared_pub());
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("the file is called okp-observer-3.9.2-kraft-linux-aarch64.tar.gz"), "{}", stdout(&o));
    assert!(stdout(&o).contains("file is \"okp-observer-3.9.2-kraft-linux-x86_64.tar.gz\""), "{}", stdout(&o));
}

/// The verify report with hashes, key ids and times replaced.
fn scrub_report(s: &str) -> String {
    let hex = regex::Regex::new(r"[0-9a-fA-F]{16,}").unwrap();
    let ts = regex::Regex::new(r"timestamp:\d+").unwrap();
    ts.replace_all(&hex.replace_all(s, "[HEX]"), "timestamp:[T]").into_owned()
}

#[test]
fn verify_reports_read_like_this() {
    insta::assert_snapshot!("verified", scrub_report(&stdout(&verify(&shared_bundle(), &shared_pub()))));
    let (_kd, key, public) = keys();
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join(format!("{NAME_3_9}.tar.gz"));
    std::fs::write(&b, evil_tar("symlink")).unwrap();
    resign(&b, &key);
    insta::assert_snapshot!("symlink_refused", scrub_report(&stdout(&verify(&b, &public))));
}

#[test]
fn the_manifest_describes_the_bundle() {
    let b = shared_bundle();
    let m = manifest_of(&b);
    assert_eq!(m["schema"], "okp-bundle/1");
    assert_eq!(m["name"], NAME_3_9);
    assert_eq!(
        (m["release"].as_str(), m["mode"].as_str(), m["target"].as_str()),
        (Some("3.9.2"), Some("kraft"), Some("linux-x86_64"))
    );
    assert_eq!(m["architecture_independent"], true);
    assert_eq!(m["native_libraries"], serde_json::json!([]));
    assert_eq!(m["build"]["backend"], "splice");
    assert!(m["build"]["compilers"]["scalac"].as_str().unwrap().contains("scala-compiler:2.13.15"));
    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(built("3.9.2", "kraft").join("okp-build.json")).unwrap()).unwrap();
    assert_eq!(m["patch_set_hash"], rec["patch_set_hash"]);
    // Upstream identity: each jar's Maven Central coordinate and the sha256 of the real file there.
    for j in m["jars"].as_array().unwrap() {
        let coord = j["upstream"]["coordinate"].as_str().unwrap();
        let parts: Vec<&str> = coord.split(':').collect();
        let up = m2()
            .join(parts[0].replace('.', "/"))
            .join(parts[1])
            .join(parts[2])
            .join(format!("{}-{}.jar", parts[1], parts[2]));
        let o = run(Command::new("sha256sum").arg(&up));
        assert!(stdout(&o).starts_with(j["upstream"]["sha256"].as_str().unwrap()), "{coord}");
    }
    for (module, a) in m["upstream"]["sources"].as_object().unwrap() {
        assert!(a["coordinate"].as_str().unwrap().ends_with(":3.9.2:sources"), "{module}");
    }
    // The build's provenance proofs travel with the bundle: the changed members per class.
    assert_eq!(m["provenance"], rec["provenance"]);
    assert_eq!(m["provenance"]["delta"]["passed"], true);
    assert!(!m["provenance"]["delta"]["changed_members"].as_object().unwrap().is_empty(), "{m}");
    // Every file's sha256, recomputed with sha256sum from an extraction by GNU tar.
    let x = tempfile::tempdir().unwrap();
    assert!(run(Command::new("tar").arg("-xzf").arg(&b).current_dir(x.path())).status.success());
    let root = x.path().join(NAME_3_9);
    let files = m["files"].as_object().unwrap();
    let on_disk: Vec<String> = tree(&root).into_keys().filter(|k| !k.ends_with('/') && k != "MANIFEST.json").collect();
    assert_eq!(on_disk, files.keys().cloned().collect::<Vec<_>>());
    for (path, info) in files {
        let o = run(Command::new("sha256sum").arg(root.join(path)));
        assert!(stdout(&o).starts_with(info["sha256"].as_str().unwrap()), "{path}");
    }
    let notice = std::fs::read_to_string(root.join("NOTICE")).unwrap();
    assert!(notice.contains("MODIFIED BUILD OF APACHE KAFKA"));
    assert!(notice.contains("The Apache Software Foundation"), "upstream NOTICE carried");
    assert!(std::fs::read_to_string(root.join("LICENSE")).unwrap().contains("Apache License"));
    assert!(std::fs::read_to_string(root.join("config/observer.ids.template"))
        .unwrap()
        .contains("KAFKA_OBSERVER_IDS_FILE"));
    let observers = std::fs::read_to_string(root.join("OBSERVERS.md")).unwrap();
    assert!(observers.contains("okp observers demote") && observers.contains("--broker 4"), "{observers}");
    assert_eq!(std::fs::metadata(root.join("install.sh")).unwrap().permissions().mode() & 0o777, 0o755);
}

/// Only jars with a passing provenance proof are shipped: a record without one (an older okp's,
/// or `OKP_NO_PROOF=1`) is refused, naming the record and the command that shows it.
#[test]
fn a_build_without_a_passing_proof_is_not_bundled() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("build");
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(built("3.9.2", "kraft")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("okp-build.json")).unwrap()).unwrap();
    rec.as_object_mut().unwrap().remove("provenance");
    std::fs::write(dir.join("okp-build.json"), serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    let (_k, key, _public) = keys();
    let out = tempfile::tempdir().unwrap();
    let o = bundle(&dir, "x86_64", &key, out.path());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no passing provenance proof") && stderr(&o).contains("okp show --build"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing written");
}

/// The SBOM lists the edits of okp's patch set, so a build made with another one (here: one
/// edit's `why` reworded, as a --patches directory) is refused before anything is written.
#[test]
fn a_build_of_another_patch_set_is_not_bundled() {
    let patches = tempfile::tempdir().unwrap();
    assert!(run(Command::new("cp").arg("-r").arg(repo_root().join("patches/.")).arg(patches.path())).status.success());
    let edits = patches.path().join("edits.yaml");
    let text = std::fs::read_to_string(&edits).unwrap();
    let why = "an observer is never added to the ISR, so no AlterIsr/AlterPartition is sent for it";
    assert!(text.contains(why));
    std::fs::write(&edits, text.replacen(why, "an observer never joins the ISR", 1)).unwrap();
    let (_k, key, _public) = keys();
    let out = tempfile::tempdir().unwrap();
    let mut c = okp();
    c.arg("--patches").arg(patches.path()).args(["bundle", "--target", "x86_64", "--build"]);
    let o = c.arg(built("3.9.2", "kraft")).arg("--key").arg(&key).arg("--out").arg(out.path()).output().unwrap();
    // Re-derived from okp's own data (here the --patches given): the record's hash is not it (exit 1).
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(built("3.9.2", "kraft").join("okp-build.json")).unwrap()).unwrap();
    let said = stderr(&o);
    assert!(
        said.contains(&format!("patch_set_hash: says {}", &rec["patch_set_hash"].as_str().unwrap()[..16])),
        "{said}"
    );
    assert!(said.contains("bundle with the okp (or the --patches) that built it"), "{said}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing written");
    // The same files, unchanged, as a --patches directory: bundled.
    std::fs::write(&edits, text).unwrap();
    let mut c = okp();
    c.arg("--patches").arg(patches.path()).args(["bundle", "--target", "x86_64", "--build"]);
    let o = c.arg(built("3.9.2", "kraft")).arg("--key").arg(&key).arg("--out").arg(out.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A build with the metrics layer: the record, the manifest and the files say so,
/// and the jar holds the gauges' class; a core build's manifest names no layer.
#[test]
fn a_metrics_layer_bundle_names_its_layers_and_ships_the_gauge_docs() {
    let dir = cached_output(
        "okp-test-bundles",
        "build-3.9.2-kraft-metrics",
        "okp-build.json",
        &["build", "--version", "3.9.2", "--mode", "kraft", "--layer", "metrics"],
    );
    let _ = std::fs::remove_dir_all(dir.join("work"));
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("okp-build.json")).unwrap()).unwrap();
    assert_eq!(rec["layers"], serde_json::json!(["core", "metrics"]));
    let core: serde_json::Value =
        serde_json::from_slice(&std::fs::read(built("3.9.2", "kraft").join("okp-build.json")).unwrap()).unwrap();
    // (A record cached before layers existed has no field; okp reads that as core.)
    assert!(core.get("layers").is_none_or(|l| l == &serde_json::json!(["core"])), "{core}");
    let jar = dir.join("kafka_2.13-3.9.2.jar");
    let listing = run(Command::new("unzip").arg("-l").arg(&jar));
    assert!(stdout(&listing).contains("kafka/observer/ObserverMetrics$.class"), "no gauge class in {}", jar.display());
    let (_k, key, _public) = keys();
    let out = tempfile::tempdir().unwrap();
    let o = bundle(&dir, "x86_64", &key, out.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let b = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let m = manifest_of(&b);
    assert_eq!(m["layers"], serde_json::json!(["core", "metrics"]));
    assert!(m["files"].as_object().unwrap().contains_key("OBSERVER-METRICS.md"), "{m}");
    assert!(manifest_of(&shared_bundle()).get("layers").is_none(), "a core bundle's manifest is unchanged");
    assert!(!manifest_of(&shared_bundle())["files"].as_object().unwrap().contains_key("OBSERVER-METRICS.md"));
}

#[test]
fn the_install_scripts_are_posix_sh() {
    let x = tempfile::tempdir().unwrap();
    assert!(run(Command::new("tar").arg("-xzf").arg(shared_bundle()).current_dir(x.path())).status.success());
    for script in ["install.sh", "rollback.sh"] {
        let p = x.path().join(NAME_3_9).join(script);
        let o = run(Command::new("dash").arg("-n").arg(&p));
        assert!(o.status.success(), "dash -n {script}: {}", stderr(&o));
        assert!(std::fs::read_to_string(&p).unwrap().starts_with("#!/bin/sh\n"));
        // scripts/setup.sh installs shellcheck; every finding, down to style, fails.
        let o = run(Command::new("shellcheck").args(["-s", "sh"]).arg(&p));
        assert!(o.status.success(), "shellcheck {script}:\n{}", stdout(&o));
        let o = run(Command::new("sh").arg(&p).arg("--help"));
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains("Exit status"), "{script} --help: {}", stdout(&o));
    }
}

#[test]
fn two_bundles_in_a_row_are_identical_bytes() {
    let build = built("3.9.2", "kraft");
    let (_k1, key1, _) = keys();
    let (_k2, key2, _) = keys();
    let (a, b, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert_eq!(bundle(&build, "linux-x86_64", &key1, a.path()).status.code(), Some(0));
    assert_eq!(bundle(&build, "amd64", &key1, b.path()).status.code(), Some(0));
    assert_eq!(bundle(&build, "x86_64", &key2, c.path()).status.code(), Some(0));
    let read = |d: &Path, ext: &str| std::fs::read(d.join(format!("{NAME_3_9}.tar.gz{ext}"))).unwrap();
    assert!(read(a.path(), "") == read(b.path(), ""), "two bundles of the same build and key differ");
    assert_eq!(read(a.path(), ".sha256"), read(b.path(), ".sha256"));
    assert_eq!(read(a.path(), ".sha512"), read(b.path(), ".sha512"));
    // The key signs the provenance inside the bundle (deterministic Ed25519): another key changes
    // that envelope and its line in the manifest, and nothing else.
    assert_ne!(read(a.path(), ".minisig"), read(c.path(), ".minisig"));
    let (_xa, ra) = untar(&a.path().join(format!("{NAME_3_9}.tar.gz")));
    let (_xc, rc) = untar(&c.path().join(format!("{NAME_3_9}.tar.gz")));
    let (ta, tc) = (tree(&ra), tree(&rc));
    assert_eq!(ta.keys().collect::<Vec<_>>(), tc.keys().collect::<Vec<_>>());
    let differ: Vec<&String> = ta.iter().filter(|(k, v)| tc[*k] != **v).map(|(k, _)| k).collect();
    assert_eq!(differ, ["MANIFEST.json", "provenance.intoto.jsonl"]);

    // What makes it so, as GNU tar and the gzip header show it.
    let bytes = read(a.path(), "");
    assert_eq!(&bytes[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255], "gzip: no name, mtime 0, level 9, OS unknown");
    let o = run(Command::new("tar")
        .args(["--numeric-owner", "--full-time", "-tvzf"])
        .arg(a.path().join(format!("{NAME_3_9}.tar.gz"))));
    let listing = stdout(&o);
    let names: Vec<&str> = listing.lines().map(|l| l.rsplit(' ').next().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "entries sorted");
    for l in listing.lines() {
        assert!(l.contains(" 0/0 ") && l.contains("1970-01-01 00:00:00"), "{l}");
    }

    // SOURCE_DATE_EPOCH sets the entries' mtime, reproducibly.
    let (c, d) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [&c, &d] {
        let o =
            bundle_cmd(&build, "x86_64", &key1, dir.path()).env("SOURCE_DATE_EPOCH", "1700000000").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(read(c.path(), ""), read(d.path(), ""));
    assert_ne!(read(c.path(), ""), read(a.path(), ""));
    let o = run(Command::new("tar")
        .args(["--numeric-owner", "--full-time", "-tvzf"])
        .arg(c.path().join(format!("{NAME_3_9}.tar.gz")))
        .env("TZ", "UTC"));
    assert!(stdout(&o).lines().all(|l| l.contains("2023-11-14 22:13:20")), "{}", stdout(&o));
    // ... and the SBOM's timestamp; without it the SBOM has none (no wall-clock time in a bundle).
    let timestamp = |d: &Path| {
        let (_x, root) = untar(&d.join(format!("{NAME_3_9}.tar.gz")));
        let sbom: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join("sbom.cdx.json")).unwrap()).unwrap();
        sbom["metadata"]["timestamp"].clone()
    };
    assert_eq!(timestamp(c.path()), "2023-11-14T22:13:20Z");
    assert_eq!(timestamp(a.path()), serde_json::Value::Null);
}

/// Offsets spread over `len` bytes, plus the first and last ones.
fn offsets(len: usize, n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).map(|i| i * len / n + (i * 7919) % (len / n).max(1)).collect();
    v.extend([0, 1, len / 2, len - 1]);
    v.sort();
    v.dedup();
    v
}

/// Flips bit 0 of `file_ext` (the bundle: "") at each offset, in two worker
/// threads with private copies, and checks that verification fails every time.
fn each_flip_fails(file_ext: &str, offsets: &[usize], expect: &str) {
    std::thread::scope(|s| {
        for chunk in offsets.chunks(offsets.len().div_ceil(2)) {
            s.spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                let b = copy_bundle(&shared_bundle(), dir.path());
                let target = PathBuf::from(format!("{}{file_ext}", b.display()));
                let original = std::fs::read(&target).unwrap();
                for &off in chunk {
                    let mut bytes = original.clone();
                    bytes[off] ^= 0x01;
                    std::fs::write(&target, &bytes).unwrap();
                    let o = verify(&b, &shared_pub());
                    assert_eq!(o.status.code(), Some(1), "byte {off} of {file_ext:?} flipped, yet: {}", stdout(&o));
                    assert!(stdout(&o).contains(expect), "byte {off} of {file_ext:?}: {}", stdout(&o));
                }
                std::fs::write(&target, &original).unwrap();
                assert_eq!(verify(&b, &shared_pub()).status.code(), Some(0), "restored");
            });
        }
    });
}

#[test]
fn flipping_bytes_of_the_bundle_fails_verification() {
    let len = std::fs::metadata(shared_bundle()).unwrap().len() as usize;
    each_flip_fails("", &offsets(len, 40), "FAILED   signature");
}

#[test]
fn flipping_bytes_of_the_signature_and_checksum_files_fails_verification() {
    let sig = std::fs::read(format!("{}.minisig", shared_bundle().display())).unwrap();
    // Line 1 is the untrusted (unsigned, free-text) comment; after it every byte
    // counts: the signature, the trusted comment (each byte), the global signature.
    let signed_from = sig.iter().position(|&c| c == b'\n').unwrap() + 1;
    let comment = (signed_from..sig.len()).filter(|&i| sig[i] == b'\n').nth(1).unwrap();
    let offsets: Vec<usize> = (signed_from..sig.len() - 1)
        .filter(|&i| i % 4 == 0 || ((comment - 250..comment).contains(&i) && i % 2 == 0))
        .collect();
    assert!(offsets.len() > 150, "{}", offsets.len());
    each_flip_fails(".minisig", &offsets, "FAILED   signature");
    for ext in [".sha256", ".sha512"] {
        let len = std::fs::metadata(format!("{}{ext}", shared_bundle().display())).unwrap().len() as usize;
        each_flip_fails(ext, &offsets_upto(len - 1, 16), &format!("FAILED   sha{} file", &ext[4..]));
    }
}

fn offsets_upto(len: usize, n: usize) -> Vec<usize> {
    offsets(len, n).into_iter().filter(|&o| o < len).collect()
}

/// Rewrites the bundle's tar with `alter` applied to its files, keeping entry
/// order and headers (as an attacker with a tar tool would), and re-gzips it.
fn repack(bundle: &[u8], alter: impl Fn(&str, &mut Vec<u8>)) -> Vec<u8> {
    let mut tar_in = tar::Archive::new(flate2::read::GzDecoder::new(bundle));
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(9)));
    for e in tar_in.entries().unwrap() {
        let mut e = e.unwrap();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        let path = e.path().unwrap().to_string_lossy().into_owned();
        alter(&path, &mut data);
        let mut h = e.header().clone();
        h.set_size(data.len() as u64);
        h.set_cksum();
        builder.append(&h, data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

#[test]
fn flipping_bytes_of_the_manifest_fails_verification_even_when_re_signed() {
    let (_kd, key, public) = keys();
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join(format!("{NAME_3_9}.tar.gz"));
    let original = std::fs::read(shared_bundle()).unwrap();
    let manifest_text = String::from_utf8(
        std::process::Command::new("tar")
            .arg("-xzOf")
            .arg(shared_bundle())
            .arg(format!("{NAME_3_9}/MANIFEST.json"))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    // Offsets inside the "files" section: hashes, sizes, modes, names and JSON structure.
    let files_at = manifest_text.find("\"files\"").unwrap();
    let region = manifest_text.len() - files_at;
    for off in offsets(region, 40).into_iter().map(|o| files_at + o) {
        let tampered = repack(&original, |path, data| {
            if path.ends_with("/MANIFEST.json") {
                data[off] ^= 0x01;
            }
        });
        // With the original signature: the signature fails.
        std::fs::write(&b, &tampered).unwrap();
        std::fs::copy(format!("{}.minisig", shared_bundle().display()), format!("{}.minisig", b.display())).unwrap();
        let o = verify(&b, &shared_pub());
        assert_eq!(o.status.code(), Some(1), "manifest byte {off}: {}", stdout(&o));
        assert!(stdout(&o).contains("FAILED   signature"));
        // Re-signed by a key holder: the manifest no longer matches the files it lists.
        resign(&b, &key);
        let o = verify(&b, &public);
        assert_eq!(
            o.status.code(),
            Some(1),
            "manifest byte {off} ({:?}), re-signed: {}",
            &manifest_text[off.saturating_sub(8)..off + 8],
            stdout(&o)
        );
        assert!(
            stdout(&o).contains("FAILED   manifest")
                || stdout(&o).contains("FAILED   files")
                || stdout(&o).contains("FAILED   trusted comment"),
            "manifest byte {off}: {}",
            stdout(&o)
        );
    }
    // A file changed inside, re-signed: its sha256 no longer matches the manifest.
    let tampered = repack(&original, |path, data| {
        if path.ends_with("/install.sh") {
            let i = data.len() / 2;
            data[i] ^= 0x01;
        }
    });
    std::fs::write(&b, &tampered).unwrap();
    resign(&b, &key);
    let o = verify(&b, &public);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("FAILED   files") && stdout(&o).contains("install.sh: sha256"), "{}", stdout(&o));
}

#[test]
fn unsafe_entries_are_refused_before_anything_is_written() {
    let (_kd, key, public) = keys();
    for (kind, says) in [
        ("dotdot", "climbs out with `..`"),
        ("absolute", "absolute path"),
        ("symlink", "a symbolic link"),
        ("hardlink", "a hard link"),
        ("device", "a device"),
    ] {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("in");
        let tmp = work.path().join("tmp");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let b = dir.join(format!("{NAME_3_9}.tar.gz"));
        std::fs::write(&b, evil_tar(kind)).unwrap();
        resign(&b, &key);
        let o = verify(&b, &public);
        assert_eq!(o.status.code(), Some(1), "{kind}: {}", stdout(&o));
        assert!(stdout(&o).contains("ok       signature"), "{kind}: the signature holds, the content does not");
        assert!(stdout(&o).contains(says), "{kind}: {}", stdout(&o));

        let home = kafka_home("3.9.2");
        let before = tree(home.path());
        let o = okp()
            .env("TMPDIR", &tmp)
            .current_dir(&dir)
            .arg("install")
            .arg(&b)
            .arg("--kafka-home")
            .arg(home.path())
            .arg("--pubkey")
            .arg(&public)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{kind}: {}", stderr(&o));
        assert!(stderr(&o).contains("refusing to install"), "{kind}: {}", stderr(&o));
        assert_eq!(tree(home.path()), before, "{kind}: the installation changed");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{kind}: something was unpacked");
        assert!(
            !work.path().join("okp-evil").exists() && !Path::new("/tmp/okp-evil-absolute").exists(),
            "{kind}: escaped"
        );
        // Not even --allow-unverified unpacks it.
        let o = okp()
            .env("TMPDIR", &tmp)
            .arg("install")
            .arg(&b)
            .arg("--kafka-home")
            .arg(home.path())
            .arg("--allow-unverified")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{kind}: {}", stderr(&o));
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        assert_eq!(tree(home.path()), before);
    }
}

#[test]
fn install_then_rollback_round_trips_byte_for_byte() {
    let b = shared_bundle();
    let home = kafka_home("3.9.2");
    let before = tree(home.path());
    let o = install(&b, home.path(), Some(&shared_pub()), &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree(home.path()), before, "--dry-run changed nothing");

    let o = install(&b, home.path(), Some(&shared_pub()), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = tree(home.path());
    let m = manifest_of(&b);
    for j in m["jars"].as_array().unwrap() {
        let path = j["path"].as_str().unwrap();
        let o = run(Command::new("sha256sum").arg(home.path().join(path)));
        assert!(stdout(&o).starts_with(j["sha256"].as_str().unwrap()), "{path} is the bundle's jar");
        let o = run(Command::new("sha256sum")
            .arg(home.path().join(".okp-observer/backup").join(Path::new(path).file_name().unwrap())));
        assert!(
            stdout(&o).starts_with(j["upstream"]["sha256"].as_str().unwrap()),
            "{path}: the backup is the original"
        );
    }
    let changed: Vec<&String> = after.keys().filter(|k| before.get(*k) != after.get(*k)).collect();
    assert!(
        changed.iter().all(|k| k.starts_with("libs/kafka") || k.starts_with(".okp-observer")),
        "install touched {changed:?}"
    );
    assert!(
        !after.keys().any(|k| k.starts_with("libs/") && k.ends_with(".jar") && !before.contains_key(k)),
        "no extra jar on the classpath"
    );

    let o = install(&b, home.path(), Some(&shared_pub()), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("already installed"), "{}", stderr(&o));
    assert_eq!(tree(home.path()), after, "a second install changed something");

    let o = rollback(home.path(), &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree(home.path()), after);
    let o = rollback(home.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree(home.path()), before, "rollback is not byte for byte");
    let o = rollback(home.path(), &[]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("nothing to roll back"));
}

#[test]
fn the_bundle_scripts_work_without_okp_on_a_zk_release() {
    // 2.7.2 zk, unpacked with GNU tar, installed and rolled back with plain sh (dash).
    let (_kd, key, _) = keys();
    let out = tempfile::tempdir().unwrap();
    let o = bundle(&built("2.7.2", "zk"), "x86_64", &key, out.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let name = "okp-observer-2.7.2-zk-linux-x86_64";
    assert!(run(Command::new("tar")
        .arg("-xzf")
        .arg(out.path().join(format!("{name}.tar.gz")))
        .current_dir(out.path()))
    .status
    .success());
    let home = kafka_home("2.7.2");
    let before = tree(home.path());
    let sh = |script: &Path, args: &[&str]| run(Command::new("dash").arg(script).args(args).arg(home.path()));
    let o = sh(&out.path().join(name).join("install.sh"), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let changed: Vec<String> = tree(home.path())
        .into_iter()
        .filter(|(k, v)| before.get(k) != Some(v))
        .map(|(k, _)| k)
        .filter(|k| !k.starts_with(".okp-observer"))
        .collect();
    assert_eq!(changed, vec!["libs/kafka_2.13-2.7.2.jar".to_string()], "zk replaces only the core jar");
    let o = sh(&out.path().join(name).join("install.sh"), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("already installed"));
    let o = sh(&home.path().join(".okp-observer/rollback.sh"), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree(home.path()), before);
}

#[test]
fn an_install_failing_at_any_copy_or_rename_is_finished_or_rolled_back_cleanly() {
    let x = tempfile::tempdir().unwrap();
    assert!(run(Command::new("tar").arg("-xzf").arg(shared_bundle()).current_dir(x.path())).status.success());
    let scripts = x.path().join(NAME_3_9);
    let template = kafka_home("3.9.2");
    let before = tree(template.path());
    let path = std::env::var("PATH").unwrap();
    let sh = |script: &str, home: &Path, shims: Option<&Path>| {
        let p = shims.map(|s| format!("{}:{path}", s.display())).unwrap_or_else(|| path.clone());
        run(Command::new("sh").arg(scripts.join(script)).arg(home).env("PATH", p))
    };
    let mut injected = 0;
    for tool in ["cp", "mv"] {
        for fail_at in 1.. {
            // Then finish by running install again, or give up by rolling back.
            let mut done = false;
            for finish in ["install.sh", "rollback.sh"] {
                let shims = failing_tools(tool, fail_at);
                let home = tempfile::tempdir().unwrap();
                copy_into(template.path(), home.path());
                let o = sh("install.sh", home.path(), Some(shims.path()));
                if o.status.code() == Some(0) {
                    done = true;
                    break;
                }
                assert_eq!(o.status.code(), Some(3), "{tool} #{fail_at}: {}", stderr(&o));
                assert!(stderr(&o).contains("failed:"), "{}", stderr(&o));
                let o = sh(finish, home.path(), None);
                assert_eq!(o.status.code(), Some(0), "{tool} #{fail_at}, then {finish}: {}", stderr(&o));
                if finish == "install.sh" {
                    let o = sh("rollback.sh", home.path(), None);
                    assert_eq!(o.status.code(), Some(0), "{tool} #{fail_at}: {}", stderr(&o));
                }
                assert_eq!(
                    tree(home.path()),
                    before,
                    "{tool} failing at call {fail_at}, then {finish}: not back to the original bytes"
                );
                injected += 1;
            }
            if done {
                break;
            }
        }
    }
    // 2 backups, rollback.sh, MANIFEST.json, 2 jars (cp) and those plus the two records (mv).
    assert!(injected >= 2 * (6 + 8), "failures injected: {injected}");
}

#[test]
fn install_refuses_an_installation_that_does_not_match() {
    let b = shared_bundle();
    let pk = shared_pub();
    let refused = |home: &Path, extra: &[&str], says: &str| {
        let before = tree(home);
        let o = install(&b, home, Some(&pk), extra);
        assert_eq!(o.status.code(), Some(2), "{says}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "expected `{says}` in {}", stderr(&o));
        assert!(stderr(&o).contains("nothing was changed"));
        assert_eq!(tree(home), before, "{says}: changed");
    };
    // Another release.
    let other = kafka_home("2.7.2");
    refused(other.path(), &[], "is not Kafka 3.9.2 for Scala 2.13");
    // Not a Kafka installation.
    let empty = tempfile::tempdir().unwrap();
    refused(empty.path(), &[], "is not a Kafka installation");
    // Mixed releases in libs/.
    let mixed = kafka_home("3.9.2");
    std::fs::copy(
        m2().join("org/apache/kafka/kafka_2.13/2.7.2/kafka_2.13-2.7.2.jar"),
        mixed.path().join("libs/kafka_2.13-2.7.2.jar"),
    )
    .unwrap();
    refused(mixed.path(), &[], "mixes releases");
    // A jar that is neither Maven Central's nor ours.
    let local = kafka_home("3.9.2");
    let jar = local.path().join("libs/kafka-metadata-3.9.2.jar");
    let mut bytes = std::fs::read(&jar).unwrap();
    bytes.extend(b"local build");
    std::fs::write(&jar, &bytes).unwrap();
    refused(local.path(), &[], "--accept-local-jars");
    // ... accepted when told, and rolled back to exactly those bytes.
    let before = tree(local.path());
    let o = install(&b, local.path(), Some(&pk), &["--accept-local-jars"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rollback(local.path(), &[]).status.code(), Some(0));
    assert_eq!(tree(local.path()), before);
    // Another okp bundle installed.
    let taken = kafka_home("3.9.2");
    std::fs::create_dir_all(taken.path().join(".okp-observer")).unwrap();
    std::fs::write(
        taken.path().join(".okp-observer/installed"),
        "bundle=okp-observer-3.9.2-zk-linux-x86_64\npatch_set=abc\n",
    )
    .unwrap();
    refused(taken.path(), &[], "roll it back first");
    // Another architecture (the bundle for the other one than this machine's).
    let here = String::from_utf8(run(Command::new("uname").arg("-m")).stdout).unwrap();
    let other_target = if here.trim() == "aarch64" { "x86_64" } else { "aarch64" };
    let (_kd, key, public) = keys();
    let out = tempfile::tempdir().unwrap();
    assert_eq!(bundle(&built("3.9.2", "kraft"), other_target, &key, out.path()).status.code(), Some(0));
    let foreign = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let home = kafka_home("3.9.2");
    let before = tree(home.path());
    let o = install(&foreign, home.path(), Some(&public), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--ignore-arch"));
    assert_eq!(tree(home.path()), before);
    let o = install(&foreign, home.path(), Some(&public), &["--ignore-arch"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Rollback refuses a jar changed after install, unless --force.
    let jar = home.path().join("libs/kafka_2.13-3.9.2.jar");
    let mut bytes = std::fs::read(&jar).unwrap();
    bytes.push(0);
    std::fs::write(&jar, &bytes).unwrap();
    let mid = tree(home.path());
    let o = rollback(home.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("changed after"), "{}", stderr(&o));
    assert_eq!(tree(home.path()), mid);
    let o = rollback(home.path(), &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree(home.path()), before);
}

#[test]
fn install_refuses_a_bundle_that_does_not_verify_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let b = copy_bundle(&shared_bundle(), dir.path());
    let home = kafka_home("3.9.2");
    let before = tree(home.path());
    // Another key.
    let (_kd, _key, other_pub) = keys();
    let o = install(&b, home.path(), Some(&other_pub), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("refusing to install") && stderr(&o).contains("FAILED   signature"), "{}", stderr(&o));
    assert_eq!(tree(home.path()), before);
    // No signature beside it.
    std::fs::remove_file(format!("{}.minisig", b.display())).unwrap();
    let o = install(&b, home.path(), Some(&shared_pub()), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no signature file"));
    assert_eq!(tree(home.path()), before);
    // Neither a key nor --allow-unverified: a usage error.
    let o = install(&b, home.path(), None, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Told: a well-formed bundle installs, with a warning.
    let o = install(&b, home.path(), None, &["--allow-unverified"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("WITHOUT a verified signature"), "{}", stderr(&o));
    assert_eq!(rollback(home.path(), &[]).status.code(), Some(0));
    assert_eq!(tree(home.path()), before);
}

/// The first 64 bytes of an ELF shared object for `machine` (62 x86_64, 183 aarch64).
fn elf_header(machine: u16) -> Vec<u8> {
    let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    h.extend([0u8; 8]);
    h.extend(3u16.to_le_bytes());
    h.extend(machine.to_le_bytes());
    h.extend([0u8; 44]);
    h
}

#[test]
fn native_code_must_be_for_the_target() {
    // A copy of the real build in which the metadata jar carries an aarch64 .so.
    let build = tempfile::tempdir().unwrap();
    copy_into(&built("3.9.2", "kraft"), build.path());
    let jar = build.path().join("kafka-metadata-3.9.2.jar");
    let mut zin = zip::ZipArchive::new(std::fs::File::open(&jar).unwrap()).unwrap();
    let mut zout = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for i in 0..zin.len() {
        zout.raw_copy_file(zin.by_index(i).unwrap()).unwrap();
    }
    zout.start_file("native/linux-aarch64/libobserver.so", zip::write::SimpleFileOptions::default()).unwrap();
    zout.write_all(&elf_header(183)).unwrap();
    let bytes = zout.finish().unwrap().into_inner();
    std::fs::write(&jar, &bytes).unwrap();
    let rec_path = build.path().join("okp-build.json");
    let old = String::from_utf8(
        run(Command::new("sha256sum").arg(built("3.9.2", "kraft").join("kafka-metadata-3.9.2.jar"))).stdout,
    )
    .unwrap();
    let new = String::from_utf8(run(Command::new("sha256sum").arg(&jar)).stdout).unwrap();
    let rec = std::fs::read_to_string(&rec_path).unwrap().replace(&old[..64], &new[..64]);
    std::fs::write(&rec_path, rec).unwrap();

    // A jar is the release plus okp's edits, so native code in it is no release entry: the
    // re-derivation refuses it for either target (exit 1), naming the entry, before the native-code
    // check of the target would run (that check stays for whatever else a bundle ever carries).
    let (_kd, key, _public) = keys();
    let out = tempfile::tempdir().unwrap();
    for target in ["linux-x86_64", "arm64"] {
        let o = bundle(build.path(), target, &key, out.path());
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o)
                .contains("kafka-metadata-3.9.2.jar: native/linux-aarch64/libobserver.so: not in the release jar"),
            "{}",
            stderr(&o)
        );
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing written");
    }

    // A jar changed after the build (its sha256 no longer the record's) is refused.
    std::fs::write(&jar, b"not the built jar").unwrap();
    let o = bundle(build.path(), "arm64", &key, tempfile::tempdir().unwrap().path());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("changed after the build"), "{}", stderr(&o));
}

#[test]
fn keys_encrypted_and_interoperable_with_minisign() {
    let d = tempfile::tempdir().unwrap();
    let prefix = d.path().join("release");
    let o = okp().env("OKP_KEY_PASSWORD", "correct horse").arg("keygen").arg("--out").arg(&prefix).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let secret = std::fs::read_to_string(prefix.with_extension("key")).unwrap();
    let secret_line = secret.lines().nth(1).unwrap();
    assert!(!stdout(&o).contains(secret_line) && !stderr(&o).contains(secret_line), "the secret key was printed");
    assert_eq!(stdout(&o), std::fs::read_to_string(prefix.with_extension("pub")).unwrap(), "stdout is the public key");
    assert_eq!(std::fs::metadata(prefix.with_extension("key")).unwrap().permissions().mode() & 0o777, 0o600);
    // Never overwritten.
    let o = okp().env("OKP_KEY_PASSWORD", "x").arg("keygen").arg("--out").arg(&prefix).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(prefix.with_extension("key")).unwrap(), secret);
    // No password source: refused, not hung on a prompt.
    let o =
        okp().env_remove("OKP_KEY_PASSWORD").arg("keygen").arg("--out").arg(d.path().join("other")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("OKP_KEY_PASSWORD"), "{}", stderr(&o));

    let build = built("3.9.2", "kraft");
    let out = tempfile::tempdir().unwrap();
    let o = bundle_cmd(&build, "x86_64", &prefix.with_extension("key"), out.path())
        .env("OKP_KEY_PASSWORD", "wrong")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("Wrong password"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing written with a wrong password");
    let o = bundle_cmd(&build, "x86_64", &prefix.with_extension("key"), out.path())
        .env("OKP_KEY_PASSWORD", "correct horse")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b = out.path().join(format!("{NAME_3_9}.tar.gz"));
    let o = run(Command::new("minisign").arg("-Vq").arg("-p").arg(prefix.with_extension("pub")).arg("-m").arg(&b));
    assert!(o.status.success(), "{}", stderr(&o));

    // A key made by minisign itself signs bundles okp and minisign accept.
    let mk = d.path().join("mini");
    let o = run(Command::new("minisign")
        .arg("-G")
        .arg("-W")
        .arg("-p")
        .arg(mk.with_extension("pub"))
        .arg("-s")
        .arg(mk.with_extension("key")));
    assert!(o.status.success(), "minisign -G: {}", stderr(&o));
    let out2 = tempfile::tempdir().unwrap();
    let o = bundle(&build, "x86_64", &mk.with_extension("key"), out2.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b2 = out2.path().join(format!("{NAME_3_9}.tar.gz"));
    assert!(run(Command::new("minisign").arg("-Vq").arg("-p").arg(mk.with_extension("pub")).arg("-m").arg(&b2))
        .status
        .success());
    assert_eq!(verify(&b2, &mk.with_extension("pub")).status.code(), Some(0));
    // And a signature minisign makes with okp's unencrypted key verifies in okp (over a bundle
    // okp made with that key: the key also signed the provenance inside).
    let (_kd, key, public) = keys();
    let out3 = tempfile::tempdir().unwrap();
    assert_eq!(bundle(&build, "x86_64", &key, out3.path()).status.code(), Some(0));
    let b2 = out3.path().join(format!("{NAME_3_9}.tar.gz"));
    let o = run(Command::new("minisign").arg("-S").arg("-s").arg(&key).arg("-m").arg(&b2).arg("-t").arg(format!(
        "file:{NAME_3_9}.tar.gz\tokp-bundle:{NAME_3_9}\trelease:3.9.2\tmode:kraft\ttarget:linux-x86_64\tpatch_set:{}",
        manifest_of(&b2)["patch_set_hash"].as_str().unwrap()
    )));
    assert!(o.status.success(), "minisign -S with okp's key: {}", stderr(&o));
    let o = verify(&b2, &public);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn gpg_sign_writes_a_detached_signature_gpg_verifies() {
    let gnupg = tempfile::tempdir().unwrap();
    std::fs::set_permissions(gnupg.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let gpg = |args: &[&str]| {
        run(Command::new("gpg")
            .env("GNUPGHOME", gnupg.path())
            .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args))
    };
    let o = gpg(&["--quick-gen-key", "okp test <release@okp.invalid>", "ed25519", "sign", "never"]);
    assert!(o.status.success(), "gpg key: {}", stderr(&o));
    let (_kd, key, _) = keys();
    let out = tempfile::tempdir().unwrap();
    let o = bundle_cmd(&built("3.9.2", "kraft"), "x86_64", &key, out.path())
        .env("GNUPGHOME", gnupg.path())
        .args(["--gpg-sign", "release@okp.invalid"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b = out.path().join(format!("{NAME_3_9}.tar.gz"));
    let asc = out.path().join(format!("{NAME_3_9}.tar.gz.asc"));
    assert!(std::fs::read_to_string(&asc).unwrap().starts_with("-----BEGIN PGP SIGNATURE-----"));
    let o = run(Command::new("gpg").env("GNUPGHOME", gnupg.path()).arg("--verify").arg(&asc).arg(&b));
    assert!(o.status.success(), "gpg --verify: {}", stderr(&o));
    // An unknown gpg key is an external failure.
    let o = bundle_cmd(&built("3.9.2", "kraft"), "x86_64", &key, out.path())
        .env("GNUPGHOME", gnupg.path())
        .args(["--gpg-sign", "nobody@okp.invalid"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!asc.exists(), "no stale .asc left beside the bundle");
    let _ = Command::new("gpgconf").env("GNUPGHOME", gnupg.path()).args(["--kill", "gpg-agent"]).output();
}

#[test]
fn bad_input_is_exit_2() {
    let (_kd, key, public) = keys();
    okp_run(okp().args(["bundle", "--target", "sparc", "--build", "x", "--key"]).arg(&key))
        .code(2)
        .err_has("linux-x86_64 or linux-aarch64");
    let empty = tempfile::tempdir().unwrap();
    let o = bundle(empty.path(), "x86_64", &key, empty.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("okp-build.json"), "{}", stderr(&o));
    // A build record whose values would reach the install script unquoted is refused, nothing written.
    let build = tempfile::tempdir().unwrap();
    copy_into(&built("3.9.2", "kraft"), build.path());
    let rec = build.path().join("okp-build.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    v["jars"][0]["upstream_sha256"] = "x'; rm -rf \"$HOME\"; echo '".into();
    std::fs::write(&rec, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = bundle(build.path(), "x86_64", &key, out.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("64 lower-case hex digits"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    let o = verify(&empty.path().join("missing.tar.gz"), &public);
    assert_eq!(o.status.code(), Some(2));
    let o = verify(&shared_bundle(), &empty.path().join("missing.pub"));
    assert_eq!(o.status.code(), Some(2));
    let o = rollback(empty.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a Kafka installation"));
}

// ---- Attestations (provenance.intoto.jsonl, sbom.cdx.json), checked with tools okp did not write:
// PyNaCl (libsodium's Ed25519) over a PAE the script computes itself, the official CycloneDX
// validator, packageurl-python, GNU tar, sha256sum, git apply (tests/fixtures/attest/).

/// `sha256sum FILE`'s digest.
fn sha256sum(file: &Path) -> String {
    let o = run(Command::new("sha256sum").arg(file));
    assert!(o.status.success(), "sha256sum {}", file.display());
    stdout(&o).split(' ').next().unwrap().to_string()
}

/// Each `libs/*.jar` under `root` (a bundle extracted by tar), with its sha256sum.
fn jar_sums(root: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_dir(root.join("libs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (format!("libs/{}", p.file_name().unwrap().to_str().unwrap()), sha256sum(&p)))
        .collect()
}

/// The Maven Central jar of `libs/<artifact>-3.9.2.jar` in the local repository.
fn release_jar(path: &str) -> PathBuf {
    let file = path.strip_prefix("libs/").unwrap();
    let artifact = file.strip_suffix("-3.9.2.jar").unwrap();
    m2().join("org/apache/kafka").join(artifact).join("3.9.2").join(file)
}

fn json_of(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

#[test]
fn the_provenance_verifies_with_pynacl_and_its_subjects_are_the_jars_tar_extracts() {
    let (_x, root) = untar(&shared_bundle());
    let envelope = root.join("provenance.intoto.jsonl");
    let o = attest_tool("check_dsse.py", &[OsStr::new("verify"), shared_pub().as_os_str(), envelope.as_os_str()]);
    assert!(o.status.success(), "PyNaCl refused the DSSE signature: {}", stderr(&o));
    let v = json_of(&o);
    // The key id is minisign's, as the public key file's own comment names it.
    let keyid = v["keyid"].as_str().unwrap();
    assert!(std::fs::read_to_string(shared_pub()).unwrap().lines().next().unwrap().ends_with(keyid), "{keyid}");
    assert_eq!(v["payloadType"], "application/vnd.in-toto+json");
    let s = &v["statement"];
    assert_eq!(s["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(s["predicateType"], "https://slsa.dev/provenance/v1");
    let subjects: std::collections::BTreeMap<String, String> = s["subject"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["name"].as_str().unwrap().to_string(), d["digest"]["sha256"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(subjects, jar_sums(&root), "the subjects are exactly the jars tar extracts, by sha256sum");
    assert_eq!(subjects.len(), 2);
    let m = manifest_of(&shared_bundle());
    let b = &s["predicate"]["buildDefinition"];
    assert_eq!(b["buildType"], "https://okp.dev/buildtypes/splice/v1");
    assert_eq!(
        b["externalParameters"],
        serde_json::json!({"release": "3.9.2", "mode": "kraft", "layers": ["core"],
            "patch_set_hash": m["patch_set_hash"], "target": "linux-x86_64"})
    );
    // Each release jar, by purl and the sha256sum of the real Maven Central file.
    let deps = b["resolvedDependencies"].as_array().unwrap();
    for jar in subjects.keys() {
        let up = release_jar(jar);
        let artifact = up.parent().unwrap().parent().unwrap().file_name().unwrap().to_str().unwrap();
        let purl = format!("pkg:maven/org.apache.kafka/{artifact}@3.9.2");
        assert!(
            deps.iter().any(|d| d["uri"] == purl.as_str() && d["digest"]["sha256"] == sha256sum(&up).as_str()),
            "{purl} with the sha256 of {}: {deps:?}",
            up.display()
        );
    }
    assert!(deps.iter().any(|d| d["uri"].as_str().is_some_and(|u| u.ends_with("@3.9.2?classifier=sources"))));
    assert!(deps
        .iter()
        .any(|d| d["uri"].as_str().is_some_and(|u| u.starts_with("pkg:maven/org.scala-lang/scala-compiler@"))));
    assert_eq!(s["predicate"]["runDetails"]["builder"]["version"]["okp"], env!("CARGO_PKG_VERSION"));

    // Ed25519 is deterministic: PyNaCl, signing okp's statement with the seed it reads from the
    // minisign key file, makes okp's very signature.
    let payload = {
        use ct_codecs::Decoder;
        let env: serde_json::Value = serde_json::from_slice(&std::fs::read(&envelope).unwrap()).unwrap();
        ct_codecs::Base64::decode_to_vec(env["payload"].as_str().unwrap(), None).unwrap()
    };
    let statement = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(statement.path(), &payload).unwrap();
    let o = attest_tool("check_dsse.py", &[OsStr::new("sign"), shared_key().as_os_str(), statement.path().as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_of(&o)["signatures"][0]["sig"], v["sig"], "PyNaCl's signature of the same PAE differs from okp's");
}

#[test]
fn the_sbom_is_valid_cyclonedx_1_6_and_its_patches_apply_to_the_release_sources() {
    let (_x, root) = untar(&shared_bundle());
    let o = attest_tool("check_sbom.py", &[root.join("sbom.cdx.json")]);
    assert!(o.status.success(), "the CycloneDX validator refused the SBOM: {}", stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["specVersion"], "1.6");
    assert_eq!(v["metadata"]["component"], NAME_3_9);
    let serial =
        regex::Regex::new(r"^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$").unwrap();
    assert!(serial.is_match(v["serialNumber"].as_str().unwrap()), "{}", v["serialNumber"]);
    let patch_set = patch_set();
    let sums = jar_sums(&root);
    let components = v["components"].as_array().unwrap();
    assert_eq!(components.len(), sums.len());
    let mut hooks = std::collections::BTreeSet::new();
    for c in components {
        let path = c["bom-ref"].as_str().unwrap();
        let artifact = path.strip_prefix("libs/").unwrap().strip_suffix("-3.9.2.jar").unwrap();
        assert_eq!(c["sha256"], serde_json::json!([sums[path]]), "{path}: the SBOM's hash is not the jar's");
        assert_eq!(
            c["purl"],
            serde_json::json!({"type": "maven", "namespace": "org.apache.kafka", "name": artifact, "version": "3.9.2",
                "qualifiers": {"okp-patch-set": patch_set}, "subpath": null}),
            "{path}"
        );
        let up = release_jar(path);
        assert_eq!(
            c["ancestors"],
            serde_json::json!([{"purl": {"type": "maven", "namespace": "org.apache.kafka", "name": artifact,
                "version": "3.9.2", "qualifiers": null, "subpath": null}, "sha256": [sha256sum(&up)]}]),
            "{path}: the ancestor is the Maven Central jar"
        );
        assert!(c["notes"].as_str().unwrap().contains(&patch_set));
        for p in c["patches"].as_array().unwrap() {
            assert_eq!(p["type"], "unofficial");
            hooks.extend(p["resolves"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string()));
            let diff = p["diff"].as_str().unwrap();
            for f in diff.lines().filter_map(|l| l.strip_prefix("+++ b/")) {
                let module = if artifact == "kafka_2.13" { "core/" } else { "metadata/" };
                assert!(f.starts_with(module), "{path}: a patch of {f}");
            }
        }
    }
    for h in ["promotion-gate", "demotion", "hw-gate", "read-replica", "kraft-election-gate", "kraft-initial-isr"] {
        assert!(hooks.contains(h), "no patch resolves hook {h}: {hooks:?}");
    }
    patches_in_order_give_the_export(&root.join("sbom.cdx.json"), "3.9.2", "kraft");
}

/// The SBOM's patches, applied in their order with `git apply` to a copy of the release's sources,
/// give the tree `okp export`'s diff gives: each hunk is in exactly one patch (a hunk listed under
/// two hooks fails to apply the second time), and none is missing.
fn patches_in_order_give_the_export(sbom: &Path, version: &str, mode: &str) {
    let bom: serde_json::Value = serde_json::from_slice(&std::fs::read(sbom).unwrap()).unwrap();
    let pristine = release_tree(version);
    let by_sbom = copy_all(&pristine);
    let mut n = 0;
    for c in bom["components"].as_array().unwrap() {
        for p in c["pedigree"]["patches"].as_array().unwrap() {
            let diff = p["diff"]["text"]["content"].as_str().unwrap();
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), diff).unwrap();
            let o = run(Command::new("git").args(["apply", "-v"]).arg(file.path()).current_dir(by_sbom.path()));
            assert!(
                o.status.success(),
                "{version} {mode}: patch {n} ({}) does not apply after the ones before it: {}",
                p["resolves"],
                stderr(&o)
            );
            n += 1;
        }
    }
    let by_export = copy_all(&pristine);
    let o = okp().args(["export", "--version", version, "--mode", mode]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &o.stdout).unwrap();
    let o = run(Command::new("git").arg("apply").arg(file.path()).current_dir(by_export.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (snapshot(by_sbom.path()), snapshot(by_export.path()));
    let differ: Vec<&String> = a.keys().chain(b.keys()).filter(|k| a.get(*k) != b.get(*k)).collect();
    assert!(differ.is_empty(), "{version} {mode}: the SBOM's {n} patches in order and okp export differ in {differ:?}");
}

/// 4.3.1 kraft, whose PartitionChangeBuilder.java hunk serves two hooks: in one patch only.
#[test]
fn the_4_3_1_sboms_patches_applied_in_order_give_okp_exports_tree() {
    let (_k, key, _) = keys();
    let out = tempfile::tempdir().unwrap();
    let o = bundle(&built("4.3.1", "kraft"), "x86_64", &key, out.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (_x, root) = untar(&out.path().join("okp-observer-4.3.1-kraft-linux-x86_64.tar.gz"));
    patches_in_order_give_the_export(&root.join("sbom.cdx.json"), "4.3.1", "kraft");
}

/// The bundle with files (paths below its top directory) replaced (`Some`) or removed (`None`),
/// and MANIFEST.json's `files` made to agree: what a tamperer holding the key would ship.
fn rewritten(bundle: &[u8], changes: &[(&str, Option<Vec<u8>>)]) -> Vec<u8> {
    rewritten_with(bundle, changes, &|_| {})
}

/// A change a forger makes to MANIFEST.json.
type ManifestEdit = dyn Fn(&mut serde_json::Value);

/// `rewritten`, with MANIFEST.json also passed through `edit` (before its `files` are mended).
fn rewritten_with(bundle: &[u8], changes: &[(&str, Option<Vec<u8>>)], edit: &ManifestEdit) -> Vec<u8> {
    use sha2::Digest;
    let mut tar_in = tar::Archive::new(flate2::read::GzDecoder::new(bundle));
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(9)));
    for e in tar_in.entries().unwrap() {
        let mut e = e.unwrap();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        let path = e.path().unwrap().to_string_lossy().into_owned();
        let below = path.split_once('/').map(|(_, p)| p).unwrap_or_default();
        if below == "MANIFEST.json" {
            let mut m: serde_json::Value = serde_json::from_slice(&data).unwrap();
            edit(&mut m);
            let files = m["files"].as_object_mut().unwrap();
            for (p, c) in changes {
                match c {
                    None => assert!(files.remove(*p).is_some(), "{p}"),
                    Some(b) => {
                        files[*p]["sha256"] = okp::hash::hex(&sha2::Sha256::digest(b)).into();
                        files[*p]["size"] = b.len().into();
                    }
                }
            }
            data = serde_json::to_vec_pretty(&m).unwrap();
        } else if let Some((_, c)) = changes.iter().find(|(p, _)| *p == below) {
            match c {
                None => continue,
                Some(b) => data = b.clone(),
            }
        }
        let mut h = e.header().clone();
        h.set_size(data.len() as u64);
        h.set_cksum();
        builder.append(&h, data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// `bytes` as the 3.9.2 bundle in a fresh directory, signed with the shared key as okp signs, and
/// okp verify-bundle's report on it with the shared public key.
fn verify_resigned(bytes: &[u8]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join(format!("{NAME_3_9}.tar.gz"));
    std::fs::write(&b, bytes).unwrap();
    resign_with(&b, &shared_key(), &okp_comment());
    verify(&b, &shared_pub())
}

/// The shared bundle's statement (decoded payload) and envelope.
fn statement_and_envelope(root: &Path) -> (serde_json::Value, serde_json::Value) {
    use ct_codecs::Decoder;
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("provenance.intoto.jsonl")).unwrap()).unwrap();
    let payload = ct_codecs::Base64::decode_to_vec(env["payload"].as_str().unwrap(), None).unwrap();
    (serde_json::from_slice(&payload).unwrap(), env)
}

/// `statement` changed by `alter` and signed with the shared key by PyNaCl: an envelope line whose
/// DSSE signature is good.
fn resigned_statement(statement: &serde_json::Value, alter: &dyn Fn(&mut serde_json::Value)) -> Vec<u8> {
    let mut s = statement.clone();
    alter(&mut s);
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), serde_json::to_vec(&s).unwrap()).unwrap();
    let o = attest_tool("check_dsse.py", &[OsStr::new("sign"), shared_key().as_os_str(), f.path().as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

/// A forged attestation inside a bundle whose minisign signature, checksums and manifest all
/// hold (its maker has the key) is refused, naming the file and the field; the independent
/// tools show the forgery is well-formed (valid CycloneDX, a good DSSE signature) where it is.
#[test]
fn a_tampered_envelope_or_sbom_is_refused_even_when_re_signed() {
    let original = std::fs::read(shared_bundle()).unwrap();
    let (_x, root) = untar(&shared_bundle());
    let core = "libs/kafka_2.13-3.9.2.jar";
    let core_sha = sha256sum(&root.join(core));
    let refused = |changes: &[(&str, Option<Vec<u8>>)], says: &[&str]| {
        let o = verify_resigned(&rewritten(&original, changes));
        assert_eq!(o.status.code(), Some(1), "{says:?}: {}", stdout(&o));
        for s in says {
            assert!(stdout(&o).contains(s), "expected `{s}` in {}", stdout(&o));
        }
        for held in ["signature  ", "trusted comment", "manifest  ", "files  "] {
            assert!(stdout(&o).contains(&format!("ok       {held}")), "{held} should hold: {}", stdout(&o));
        }
        o
    };
    let sbom = std::fs::read_to_string(root.join("sbom.cdx.json")).unwrap();
    let forged = sbom.replacen(&core_sha, &"0".repeat(64), 1);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &forged).unwrap();
    assert!(attest_tool("check_sbom.py", &[file.path()]).status.success(), "schema-valid: the schema cannot tell");
    refused(
        &[("sbom.cdx.json", Some(forged.into_bytes()))],
        &["FAILED   sbom", &format!("sbom.cdx.json: components[{core}].hashes[SHA-256] is \"{}\"", "0".repeat(64))],
    );
    let other_release = sbom.replacen("kafka_2.13@3.9.2?okp-patch-set", "kafka_2.13@3.9.1?okp-patch-set", 1);
    refused(
        &[("sbom.cdx.json", Some(other_release.into_bytes()))],
        &["FAILED   sbom", &format!("components[{core}].purl")],
    );

    // The statement changed and signed again with the bundle's key, by PyNaCl: a good signature
    // over a statement that disagrees with the bundle.
    let (statement, envelope) = statement_and_envelope(&root);
    let resigned = |alter: &dyn Fn(&mut serde_json::Value)| resigned_statement(&statement, alter);
    let wrong_jar = resigned(&|s| {
        for d in s["subject"].as_array_mut().unwrap() {
            if d["name"] == core {
                d["digest"]["sha256"] = "0".repeat(64).into();
            }
        }
    });
    let o = refused(
        &[("provenance.intoto.jsonl", Some(wrong_jar))],
        &["FAILED   provenance", &format!("provenance.intoto.jsonl: subject {core}: sha256 {}", "0".repeat(64))],
    );
    assert!(stdout(&o).contains("ok       dsse signature"), "{}", stdout(&o));
    let zk = resigned(&|s| s["predicate"]["buildDefinition"]["externalParameters"]["mode"] = "zk".into());
    refused(
        &[("provenance.intoto.jsonl", Some(zk))],
        &["FAILED   provenance", "externalParameters.mode is \"zk\", expected \"kraft\""],
    );
    // The payload changed under the old signature: PyNaCl refuses it, and so does okp.
    let mut s = statement.clone();
    s["predicate"]["buildDefinition"]["externalParameters"]["mode"] = "zk".into();
    let mut forged = envelope.clone();
    forged["payload"] = {
        use ct_codecs::Encoder;
        ct_codecs::Base64::encode_to_string(serde_json::to_vec(&s).unwrap()).unwrap().into()
    };
    let forged = (forged.to_string() + "\n").into_bytes();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), &forged).unwrap();
    let o = attest_tool("check_dsse.py", &[OsStr::new("verify"), shared_pub().as_os_str(), f.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(1), "PyNaCl accepted a changed payload: {}", stdout(&o));
    refused(&[("provenance.intoto.jsonl", Some(forged))], &["FAILED   dsse signature", "does not verify"]);
}

/// `text` (an SBOM) with its serial number made again as okp makes it (a UUIDv8 of the document's
/// SHA-256 with the serial zeroed): what a forger who read docs/bundles.md writes.
fn with_own_serial(text: &str) -> String {
    use sha2::Digest;
    let placeholder = "urn:uuid:00000000-0000-0000-0000-000000000000";
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let zeroed = text.replacen(v["serialNumber"].as_str().unwrap(), placeholder, 1);
    let mut b: [u8; 16] = sha2::Sha256::digest(zeroed.as_bytes())[..16].try_into().unwrap();
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = okp::hash::hex(&b);
    let serial = format!("urn:uuid:{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]);
    zeroed.replacen(placeholder, &serial, 1)
}

/// Every field of the attestations okp can derive is derived (issue 45): a bundle re-signed with the
/// release key whose SBOM's patches were edited (a diff's text changed, all of a jar's patches but
/// one removed, a SHA-512 added), or whose provenance (signed again with the key, a good DSSE
/// signature) carries a wrong sha512 for a jar or another backend, is refused (exit 1) by
/// verify-bundle, naming the field, and by install. Each used to verify: the checks in the bundle
/// alone read only SHA-256 digests, no backend, and no patch beyond there being one.
#[test]
fn attestations_whose_derivable_fields_were_edited_are_refused_by_verify_bundle_and_install() {
    let original = std::fs::read(shared_bundle()).unwrap();
    let (_x, root) = untar(&shared_bundle());
    let core = "libs/kafka_2.13-3.9.2.jar";
    let sbom = std::fs::read_to_string(root.join("sbom.cdx.json")).unwrap();
    let refused = |changes: &[(&str, Option<Vec<u8>>)], says: &str| {
        let bytes = rewritten(&original, changes);
        let o = verify_resigned(&bytes);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{says}: {out}");
        assert!(out.contains("FAILED   attested fields") && out.contains(says), "expected `{says}` in {out}");
        for held in ["signature  ", "dsse signature", "files  ", "jars  "] {
            assert!(out.contains(&format!("ok       {held}")), "{held} should hold: {out}");
        }
        bytes
    };
    let edited = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&sbom).unwrap();
        f(&mut v);
        with_own_serial(&(serde_json::to_string_pretty(&v).unwrap() + "\n")).into_bytes()
    };
    let core_at =
        |v: &serde_json::Value| v["components"].as_array().unwrap().iter().position(|c| c["bom-ref"] == core).unwrap();
    // A diff's text changed.
    assert!(sbom.contains("OBSERVER PATCH"));
    let text = with_own_serial(&sbom.replacen("OBSERVER PATCH", "OBSERVER PATCX", 1)).into_bytes();
    let first = refused(&[("sbom.cdx.json", Some(text))], ".pedigree.patches[0].diff.text.content: ");
    // All the core jar's patches but the first removed.
    let one = edited(&|v| {
        let i = core_at(v);
        v["components"][i]["pedigree"]["patches"].as_array_mut().unwrap().truncate(1);
    });
    refused(&[("sbom.cdx.json", Some(one))], &format!("components[{core}].pedigree.patches: 1 entries, expected"));
    // A SHA-512 that is not the jar's, beside its true SHA-256.
    let sha512 = edited(&|v| {
        let i = core_at(v);
        v["components"][i]["hashes"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"alg": "SHA-512", "content": "0".repeat(128)}));
    });
    refused(&[("sbom.cdx.json", Some(sha512))], &format!("components[{core}].hashes: 2 entries, expected 1"));

    // The statement changed and signed again with the bundle's key (PyNaCl): the signature is good.
    let (statement, _) = statement_and_envelope(&root);
    let resigned = |alter: &dyn Fn(&mut serde_json::Value)| resigned_statement(&statement, alter);
    let wrong_sha512 = resigned(&|s| {
        for d in s["subject"].as_array_mut().unwrap() {
            if d["name"] == core {
                d["digest"]["sha512"] = "0".repeat(128).into();
            }
        }
    });
    refused(
        &[("provenance.intoto.jsonl", Some(wrong_sha512))],
        &format!("provenance.intoto.jsonl: statement.subject[{core}].digest.sha512: "),
    );
    let backend = resigned(&|s| s["predicate"]["buildDefinition"]["internalParameters"]["backend"] = "gradle".into());
    refused(
        &[("provenance.intoto.jsonl", Some(backend))],
        "statement.predicate.buildDefinition.internalParameters.backend: \"gradle\", expected \"splice\"",
    );

    // MANIFEST.json's record of the build, forged where the attestations do not repeat it: a
    // patched file's sha256, a recompiled source left out, the Scala compiler's digest.
    let edits: [(&str, &ManifestEdit); 3] = [
        ("MANIFEST.json.provenance.sources[0].patched_sha256: ", &|m| {
            m["provenance"]["sources"][0]["patched_sha256"] = "0".repeat(64).into()
        }),
        ("MANIFEST.json.build.recompiled_sources: ", &|m| {
            m["build"]["recompiled_sources"].as_array_mut().unwrap().pop();
        }),
        ("MANIFEST.json.provenance.compilers.scala-compiler: ", &|m| {
            let v = m["provenance"]["compilers"]["scala-compiler"].as_str().unwrap().to_string();
            m["provenance"]["compilers"]["scala-compiler"] = format!("{}{}", &v[..v.len() - 64], "0".repeat(64)).into()
        }),
    ];
    for (says, edit) in edits {
        let o = verify_resigned(&rewritten_with(&original, &[], edit));
        assert_eq!(o.status.code(), Some(1), "{says}: {}", stdout(&o));
        assert!(stdout(&o).contains("FAILED   attested fields") && stdout(&o).contains(says), "{says}: {}", stdout(&o));
    }

    // install runs the same function: the first forgery changes nothing there either.
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join(format!("{NAME_3_9}.tar.gz"));
    std::fs::write(&b, first).unwrap();
    resign_with(&b, &shared_key(), &okp_comment());
    let home = kafka_home("3.9.2");
    let before = tree(home.path());
    let o = okp()
        .arg("install")
        .arg(&b)
        .arg("--kafka-home")
        .arg(home.path())
        .arg("--pubkey")
        .arg(shared_pub())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("FAILED   attested fields"), "{}", stderr(&o));
    assert_eq!(tree(home.path()), before, "install changed the installation");
}

/// A bundle made before okp wrote attestations (none in the archive nor the manifest) still
/// verifies, and says so; a bundle with one of the two gone does not.
#[test]
fn a_bundle_without_attestations_still_verifies_and_says_so() {
    let original = std::fs::read(shared_bundle()).unwrap();
    let o = verify_resigned(&rewritten(&original, &[("provenance.intoto.jsonl", None), ("sbom.cdx.json", None)]));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("ok       attestations     none: no provenance.intoto.jsonl nor sbom.cdx.json"),
        "{}",
        stdout(&o)
    );
    let o = verify_resigned(&rewritten(&original, &[("sbom.cdx.json", None)]));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("FAILED   sbom             no sbom.cdx.json"), "{}", stdout(&o));
    // An operator who takes no bundle without them says so: a key holder cannot pass one off as
    // made before okp wrote attestations.
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join(format!("{NAME_3_9}.tar.gz"));
    std::fs::write(&b, rewritten(&original, &[("provenance.intoto.jsonl", None), ("sbom.cdx.json", None)])).unwrap();
    resign_with(&b, &shared_key(), &okp_comment());
    let o =
        okp().args(["verify-bundle", "--require-attestations", "--pubkey"]).arg(shared_pub()).arg(&b).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("--require-attestations refuses a bundle without them"), "{}", stdout(&o));
    let o = okp()
        .args(["verify-bundle", "--require-attestations", "--pubkey"])
        .arg(shared_pub())
        .arg(shared_bundle())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "okp's own bundle carries them: {}", stdout(&o));
}

/// The fenced block of `lang` that follows `heading` in docs/bundles.md.
fn documented(heading: &str, lang: &str) -> String {
    let doc = std::fs::read_to_string(repo_root().join("docs/bundles.md")).unwrap();
    let after = &doc[doc.find(heading).unwrap_or_else(|| panic!("no {heading} in docs/bundles.md"))..];
    let start = after.find(&format!("```{lang}\n")).unwrap() + lang.len() + 4;
    after[start..start + after[start..].find("```\n").unwrap()].to_string()
}

/// docs/bundles.md's commands for checking the attestations without okp (openssl, jq, sha256sum;
/// PyNaCl and the CycloneDX validator), run as written: they pass on okp's bundle and fail on a
/// forged envelope.
#[test]
fn the_documented_standard_tool_checks_pass_and_catch_a_forgery() {
    let heading = "### Checking them with standard tools";
    let (shell, python_lines) = (documented(heading, "sh"), documented(heading, "python"));
    let run_docs = |bundle: &[u8]| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(format!("{NAME_3_9}.tar.gz")), bundle).unwrap();
        std::fs::copy(shared_pub(), d.path().join("release.pub")).unwrap();
        let sh = run(Command::new("sh").arg("-ec").arg(&shell).current_dir(d.path()));
        let py = run(Command::new(python()).arg("-c").arg(&python_lines).current_dir(d.path().join(NAME_3_9)));
        (sh, py)
    };
    let original = std::fs::read(shared_bundle()).unwrap();
    let (sh, py) = run_docs(&original);
    assert!(sh.status.success(), "the documented shell check failed: {}{}", stdout(&sh), stderr(&sh));
    assert!(stdout(&sh).contains("libs/kafka_2.13-3.9.2.jar: OK"), "{}", stdout(&sh));
    assert!(stdout(&sh).contains("Signature Verified Successfully"), "{}", stdout(&sh));
    assert!(py.status.success(), "the documented Python check failed: {}", stderr(&py));
    // One byte of the statement changed: openssl and PyNaCl both refuse the signature.
    let (_x, root) = untar(&shared_bundle());
    let (_, envelope) = statement_and_envelope(&root);
    let payload = envelope["payload"].as_str().unwrap();
    let flipped = if payload.as_bytes()[20] == b'A' { "B" } else { "A" };
    let mut forged = envelope.clone();
    forged["payload"] = format!("{}{flipped}{}", &payload[..20], &payload[21..]).into();
    let forged = rewritten(&original, &[("provenance.intoto.jsonl", Some((forged.to_string() + "\n").into_bytes()))]);
    let (sh, py) = run_docs(&forged);
    assert!(!sh.status.success(), "the shell check passed a forged envelope: {}", stdout(&sh));
    assert!(!stdout(&sh).contains("Signature Verified Successfully"), "{}", stdout(&sh));
    assert!(!py.status.success() && stderr(&py).contains("BadSignatureError"), "{}", stderr(&py));
    // A second signature that does not verify (one byte flipped), after or before the good one: the
    // recipes check every signature, as okp does, so both orders fail (they checked only the first).
    use ct_codecs::{Decoder, Encoder};
    let good = envelope["signatures"][0].clone();
    let mut sig = ct_codecs::Base64::decode_to_vec(good["sig"].as_str().unwrap(), None).unwrap();
    sig[10] ^= 1;
    let mut bad = good.clone();
    bad["sig"] = ct_codecs::Base64::encode_to_string(&sig).unwrap().into();
    for signatures in [vec![good.clone(), bad.clone()], vec![bad.clone(), good.clone()]] {
        let mut two = envelope.clone();
        two["signatures"] = signatures.into();
        let line = (two.to_string() + "\n").into_bytes();
        let (sh, py) = run_docs(&rewritten(&original, &[("provenance.intoto.jsonl", Some(line.clone()))]));
        assert!(!sh.status.success(), "the shell check passed a bad second signature: {}", stdout(&sh));
        assert!(!py.status.success() && stderr(&py).contains("BadSignatureError"), "{}", stderr(&py));
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), &line).unwrap();
        let o = attest_tool("check_dsse.py", &[OsStr::new("verify"), shared_pub().as_os_str(), f.path().as_os_str()]);
        assert_eq!(o.status.code(), Some(1), "check_dsse.py passed a bad signature: {}", stdout(&o));
        assert!(stderr(&o).contains("does not verify"), "{}", stderr(&o));
    }
    // Two good ones pass all three.
    let mut two = envelope.clone();
    two["signatures"] = vec![good.clone(), good].into();
    let line = (two.to_string() + "\n").into_bytes();
    let (sh, py) = run_docs(&rewritten(&original, &[("provenance.intoto.jsonl", Some(line))]));
    assert!(sh.status.success() && py.status.success(), "{}{}", stderr(&sh), stderr(&py));
}
