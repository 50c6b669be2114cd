//! `okp releases`: Maven Central's final releases against the matrix. On a recorded metadata file
//! (tests/fixtures/releases/, written for these tests: a new release 4.5.0, a release candidate, a
//! release before okp's scope) read offline, and on Maven Central's live metadata: a release the
//! matrix lacks, releases without sources jars, the cache read by --offline, --strict, JSON.

use crate::common::*;

use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    repo_root().join("tests/fixtures/releases/maven-metadata.xml")
}

/// `okp [pre] releases [args]` with the Maven local repository `m2`; (exit, stdout, stderr).
fn releases(m2: &Path, pre: &[&str], args: &[&str]) -> (i32, String, String) {
    let o = okp()
        .env("OKP_MAVEN_REPO_LOCAL", m2)
        .args(pre)
        .arg("releases")
        .arg("--evidence")
        .arg(repo_root().join("evidence"))
        .args(args)
        .output()
        .unwrap();
    (o.status.code().unwrap(), stdout(&o), stderr(&o))
}

fn json(out: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["schema"], 1, "the json carries its schema (docs/records.md)");
    v
}

fn row<'a>(v: &'a serde_json::Value, version: &str) -> &'a serde_json::Value {
    v["releases"].as_array().unwrap().iter().find(|r| r["version"] == version).unwrap_or_else(|| panic!("no {version}"))
}

fn versions(v: &serde_json::Value) -> Vec<String> {
    v["releases"].as_array().unwrap().iter().map(|r| r["version"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_recorded_metadata_file_read_offline() {
    let m2 = tempfile::tempdir().unwrap();
    let f = fixture();
    let (code, out, err) =
        releases(m2.path(), &[], &["--metadata", f.to_str().unwrap(), "--offline", "--format", "json"]);
    assert_eq!(code, 1, "4.5.0 is missing from the matrix: {err}");
    let v = json(&out);
    // Final releases from 2.7.0 on only: no 2.6.3, no release candidate.
    assert_eq!(versions(&v), ["3.9.2", "4.2.2", "4.3.1", "4.3.2", "4.4.0", "4.5.0"]);
    let new = row(&v, "4.5.0");
    assert_eq!((new["state"].as_str(), new["in_matrix"].as_bool()), (Some("missing"), Some(false)));
    assert_eq!(new["port_from"], "4.3.1", "the newest release of the matrix with sources jars (4.4.0 has none)");
    // Offline with an empty cache: nothing is known about the artifacts, nothing is claimed.
    assert_eq!((new["sources_jars"].as_str(), new["test_jars"].as_str()), (Some("unknown"), Some("unknown")));
    for no_sources in ["4.2.2", "4.3.2", "4.4.0"] {
        assert_eq!(row(&v, no_sources)["state"], "not-buildable", "{no_sources}");
    }
    let supported = row(&v, "3.9.2");
    assert_eq!(supported["state"], "supported");
    for mode in ["zk", "kraft"] {
        assert_eq!(supported["evidence"][mode]["run"], format!("3.9.2-{mode}/"));
        assert_eq!(supported["evidence"][mode]["proof"], format!("build/proof/3.9.2-{mode}.json"));
    }
    // The matrix's releases the file does not list are named.
    assert!(v["unlisted"].as_array().unwrap().iter().any(|x| x == "4.3.0"), "{v}");
    assert!(err.contains("missing from the matrix: 4.5.0"), "{err}");
    // The table says the same, and nothing was written to the cache.
    let (code, table, _) = releases(m2.path(), &[], &["--metadata", f.to_str().unwrap(), "--offline"]);
    assert_eq!(code, 1);
    assert!(table.lines().any(|l| l.starts_with("4.5.0") && l.contains("MISSING from the matrix")), "{table}");
    assert!(!m2.path().join("okp-releases").exists());

    // Without the new release: 0, and --strict 1 for the three releases without sources jars.
    let t = tempfile::tempdir().unwrap();
    let small = t.path().join("maven-metadata.xml");
    std::fs::write(&small, "<metadata><versioning><versions><version>4.3.1</version><version>4.3.2</version></versions></versioning></metadata>").unwrap();
    let args = ["--metadata", small.to_str().unwrap(), "--offline"];
    let (code, _, err) = releases(m2.path(), &[], &args);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = releases(m2.path(), &[], &[&args[..], &["--strict"]].concat());
    assert_eq!(code, 1);
    assert!(err.contains("not buildable from Maven Central (no sources jars): 4.3.2"), "{err}");
    // A file that is not the metadata is refused, naming it.
    std::fs::write(&small, "<html>gateway timeout</html>").unwrap();
    let (code, _, err) = releases(m2.path(), &[], &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lists no <version>"), "{err}");
    // Hostile files are refused naming the file and the cap (exit 2), not a stack overflow (134).
    let deep =
        format!("<metadata><version>4.3.1</version>{}{}</metadata>", "<a>".repeat(20_000), "</a>".repeat(20_000));
    std::fs::write(&small, deep).unwrap();
    let (code, _, err) = releases(m2.path(), &[], &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{} nests elements deeper than okp's cap of 32", small.display())), "{err}");
    std::fs::write(&small, "<version>4.3.1</version>".repeat(50_000)).unwrap();
    let (code, _, err) = releases(m2.path(), &[], &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("over okp's cap of 1048576 bytes"), "{err}");
}

#[test]
fn offline_without_a_cache_and_without_curl_say_what_to_do() {
    let m2 = tempfile::tempdir().unwrap();
    let (code, _, err) = releases(m2.path(), &[], &["--offline"]);
    assert_eq!(code, 2);
    assert!(err.contains("no cached metadata yet; run `okp releases` once online"), "{err}");
    let o = okp()
        .env("OKP_MAVEN_REPO_LOCAL", m2.path())
        .env("OKP_CURL", "/nonexistent/curl")
        .arg("releases")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("install it (apt-get install curl) or set OKP_CURL"), "{}", stderr(&o));
}

/// A server that streams a body without Content-Length (curl's --max-filesize cannot refuse it):
/// okp stops reading one byte past its cap and names it, exit 2. The stand-in for such a server is
/// an OKP_CURL script that prints 8 MiB and never ends on its own.
#[test]
fn a_body_streamed_past_the_cap_is_cut_there() {
    let m2 = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let curl = bin.path().join("curl");
    std::fs::write(&curl, "#!/bin/sh\nwhile :; do head -c 1048576 /dev/zero | tr '\\0' a; done\n").unwrap();
    std::fs::set_permissions(&curl, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = okp().env("OKP_MAVEN_REPO_LOCAL", m2.path()).env("OKP_CURL", &curl).arg("releases").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("sent more than okp's cap of 1048576 bytes (stopped there)"), "{}", stderr(&o));
}

/// Maven Central's own metadata (the network), with a matrix that lacks 4.3.2: a new release
/// without sources jars (its test jars are there); then the same from the cache alone.
#[test]
fn the_live_metadata_a_new_release_and_the_cache() {
    let m2 = m2();
    let (d, _, _) = matrix_without("4.3.2");
    let without = d.path().join("versions.yaml");
    let pre = ["--versions", without.to_str().unwrap()];
    let (code, out, err) = releases(&m2, &pre, &["--format", "json"]);
    let v = json(&out);
    assert_eq!(code, 1, "4.3.2 is missing: {err}");
    assert!(v["metadata"].as_str().unwrap().contains("org/apache/kafka/kafka_2.13/maven-metadata.xml as fetched"));
    let new = row(&v, "4.3.2");
    assert_eq!(new["state"], "missing");
    assert_eq!((new["sources_jars"].as_str(), new["test_jars"].as_str()), (Some("no"), Some("yes")), "{new}");
    assert_eq!(new["port_from"], "4.3.1");
    assert!(new["note"].as_str().unwrap().contains("okp diff --from 4.3.1 --to 4.3.2 compares the releases' jars"));
    let old = row(&v, "4.3.1");
    assert_eq!((old["state"].as_str(), old["sources_jars"].as_str()), (Some("supported"), Some("yes")));
    for no_sources in ["4.2.2", "4.4.0"] {
        assert_eq!(
            (row(&v, no_sources)["state"].as_str(), row(&v, no_sources)["sources_jars"].as_str()),
            (Some("not-buildable"), Some("no"))
        );
    }
    assert!(versions(&v).iter().all(|x| x.parse::<okp::version::KafkaVersion>().unwrap() >= okp::releases::FIRST));

    // --offline: the same list and answers, from the cache.
    let (code, offline, _) = releases(&m2, &pre, &["--format", "json", "--offline"]);
    assert_eq!(code, 1);
    let o = json(&offline);
    assert!(o["metadata"].as_str().unwrap().ends_with("(cached; --offline)"));
    assert_eq!(o["releases"], v["releases"]);

    // The real matrix: exit 1 only if Maven Central lists a release it lacks; --strict names the
    // releases that cannot be built from Maven Central.
    let (code, out, _) = releases(&m2, &[], &["--format", "json"]);
    let real = json(&out);
    let missing = real["releases"].as_array().unwrap().iter().any(|r| r["state"] == "missing");
    assert_eq!(code, i32::from(missing));
    assert_eq!(row(&real, "4.3.2")["state"], "not-buildable");
    let (code, _, err) = releases(&m2, &[], &["--strict"]);
    assert_eq!(code, 1);
    assert!(err.contains("4.2.2, 4.3.2, 4.4.0"), "{err}");
}
