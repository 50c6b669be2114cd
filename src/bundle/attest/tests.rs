use super::*;
use crate::build::proof::{Artifact as ProofArtifact, Provenance, SourceHash};
use crate::bundle::layout::{self, JarInput};
use crate::bundle::manifest::{Artifact, Build, Identity};
use crate::bundle::target::Target;
use crate::model::{Layer, Mode};

const JAR: &str = "libs/kafka_2.13-3.9.2.jar";

fn inputs() -> Inputs {
    let h = |c: char| c.to_string().repeat(64);
    let provenance = Provenance {
        schema: Provenance::SCHEMA,
        tree: "Maven Central release 3.9.2 (org.apache.kafka:kafka_2.13:3.9.2:sources)".into(),
        sources: vec![
            SourceHash {
                path: "core/src/main/scala/kafka/cluster/Partition.scala".into(),
                upstream_sha256: Some(h('1')),
                patched_sha256: h('2'),
            },
            SourceHash {
                path: "core/src/main/scala/kafka/observer/ObserverIds.scala".into(),
                upstream_sha256: None,
                patched_sha256: h('3'),
            },
        ],
        sources_jars: vec![ProofArtifact {
            coordinate: "org.apache.kafka:kafka_2.13:3.9.2:sources".into(),
            sha256: h('4'),
        }],
        compilers: [
            ("scala-compiler".to_string(), format!("org.scala-lang:scala-compiler:2.13.15 sha256 {}", h('5'))),
            ("scalac-options".to_string(), "-release 8 -opt:l:inline".to_string()),
            ("javac".to_string(), "javac 17.0.15".to_string()),
        ]
        .into(),
        ..Provenance::default()
    };
    Inputs {
        id: Identity { release: "3.9.2".parse().unwrap(), mode: Mode::Zk, target: Target::LinuxX86_64 },
        family: "f3.8".into(),
        patch_set_hash: h('b'),
        layers: vec![Layer::Core, Layer::Metrics],
        build: Build {
            backend: "splice".into(),
            compilers: [(
                "scalac".to_string(),
                "org.scala-lang:scala-compiler:2.13.15 -release 8 -opt:l:inline".to_string(),
            )]
            .into(),
            recompiled_sources: vec!["core/src/main/scala/kafka/cluster/Partition.scala".into()],
        },
        sources: [(
            "core".to_string(),
            Artifact { coordinate: "org.apache.kafka:kafka_2.13:3.9.2:sources".into(), sha256: h('4') },
        )]
        .into(),
        provenance: Some(Box::new(provenance)),
        jars: vec![JarInput {
            file_name: "kafka_2.13-3.9.2.jar".into(),
            bytes: b"patched jar".to_vec(),
            module: "core".into(),
            upstream: Artifact { coordinate: "org.apache.kafka:kafka_2.13:3.9.2".into(), sha256: h('c') },
            replaced: vec!["kafka/cluster/Partition.class".into()],
            added: vec![],
            removed: vec![],
        }],
        license: b"Apache License".to_vec(),
        upstream_notice: "Apache Kafka\nCopyright".into(),
    }
}

fn edits() -> Edits {
    let patch = |module: &str, hook: Option<&str>, diff: &str| edits::HookPatch {
        module: module.into(),
        hook: hook.map(|id| edits::Hook {
            id: id.into(),
            site: "Partition.canAddReplicaToIsr".into(),
            rule: "an observer is never added to the ISR".into(),
        }),
        also: vec![],
        diff: Some(diff.into()),
    };
    Edits {
        patches: vec![
            patch("core", Some("promotion-gate"), "diff --git a/core/x b/core/x\n"),
            patch("metadata", Some("kraft-election-gate"), "diff --git a/metadata/y b/metadata/y\n"),
            patch("core", None, "diff --git a/core/new b/core/new\nnew file mode 100644\n"),
        ],
        without_diffs: None,
    }
}

/// A bundle's files and manifest as `okp bundle` makes them, signed by a fresh key.
struct Made {
    kp: minisign::KeyPair,
    files: Vec<File>,
    manifest: Manifest,
}

fn made(mtime: u64) -> Made {
    let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let i = inputs();
    let mut files = layout::files(&i);
    files.extend(super::files(&i, &edits(), &Ed25519Signer::new(&kp.sk).unwrap(), mtime));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let manifest = layout::manifest(&i, &files, vec![]);
    Made { kp, files, manifest }
}

fn file<'f>(files: &'f [File], path: &str) -> &'f File {
    files.iter().find(|f| f.path == path).unwrap()
}

fn text(files: &[File], path: &str) -> String {
    String::from_utf8(file(files, path).bytes.clone()).unwrap()
}

fn statement_of(files: &[File]) -> serde_json::Value {
    let env: dsse::Envelope = serde_json::from_str(text(files, PROVENANCE_FILE).trim_end()).unwrap();
    serde_json::from_slice(&env.payload().unwrap()).unwrap()
}

/// The checks as (name, Ok detail or Err detail).
fn run(files: &[File], m: &Manifest, pk: Option<&PublicKey>) -> Vec<(&'static str, Result<String, String>)> {
    check(files, m, pk).into_iter().map(|(n, _, r)| (n, r)).collect()
}

fn failure(checks: &[(&'static str, Result<String, String>)], name: &str) -> String {
    let r = &checks.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no {name} check in {checks:?}")).1;
    r.clone().expect_err(&format!("{name} should fail: {checks:?}"))
}

#[test]
fn made_twice_they_are_the_same_bytes_and_check_against_their_manifest() {
    let a = made(0);
    let i = inputs();
    let again = super::files(&i, &edits(), &Ed25519Signer::new(&a.kp.sk).unwrap(), 0);
    for f in &again {
        assert_eq!(f.bytes, file(&a.files, &f.path).bytes, "{} is not reproducible", f.path);
        assert!(a.manifest.files.contains_key(&f.path), "the manifest lists {}", f.path);
    }
    let checks = check(&a.files, &a.manifest, Some(&a.kp.pk));
    let names: Vec<(&str, bool)> = checks.iter().map(|(n, auth, _)| (*n, *auth)).collect();
    assert_eq!(names, [("provenance", false), ("dsse signature", true), ("sbom", false)]);
    for (n, _, r) in &checks {
        assert!(r.is_ok(), "{n}: {r:?}");
    }
    // Without a key, the signature is not checked and the rest still is.
    let checks = run(&a.files, &a.manifest, None);
    assert_eq!(checks[1].1.as_deref(), Ok("not checked: no public key given"));
    // One line of JSON: the JSON Lines form attestation tools read.
    let line = text(&a.files, PROVENANCE_FILE);
    assert!(line.ends_with("}\n") && line.matches('\n').count() == 1, "{line}");
}

#[test]
fn the_statement_is_slsa_provenance_of_the_jars() {
    let a = made(0);
    let s = statement_of(&a.files);
    assert_eq!(s["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(s["predicateType"], "https://slsa.dev/provenance/v1");
    assert_eq!(
        s["subject"],
        serde_json::json!([{"name": JAR, "digest": {"sha256": crate::hash::sha256(b"patched jar")}}])
    );
    let b = &s["predicate"]["buildDefinition"];
    assert_eq!(b["buildType"], "https://okp.dev/buildtypes/splice/v1");
    assert_eq!(
        b["externalParameters"],
        serde_json::json!({"release": "3.9.2", "mode": "zk", "layers": ["core", "metrics"],
            "patch_set_hash": "b".repeat(64), "target": "linux-x86_64"})
    );
    let uris: Vec<&str> =
        b["resolvedDependencies"].as_array().unwrap().iter().filter_map(|d| d["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            "pkg:maven/org.apache.kafka/kafka_2.13@3.9.2",
            "pkg:maven/org.apache.kafka/kafka_2.13@3.9.2?classifier=sources",
            "pkg:generic/javac@17.0.15",
            "pkg:maven/org.scala-lang/scala-compiler@2.13.15",
        ]
    );
    // The upstream file compiled, with the tree it came from; our own file is not a dependency.
    let files: Vec<&serde_json::Value> =
        b["resolvedDependencies"].as_array().unwrap().iter().filter(|d| d["uri"].is_null()).collect();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["name"], "core/src/main/scala/kafka/cluster/Partition.scala");
    assert!(files[0]["annotations"]["tree"].as_str().unwrap().starts_with("Maven Central release 3.9.2"));
    assert_eq!(s["predicate"]["runDetails"]["builder"]["version"]["okp"], env!("CARGO_PKG_VERSION"));
    assert!(s["predicate"]["runDetails"].get("metadata").is_none(), "no wall-clock time");
}

#[test]
fn serialized_forms() {
    let a = made(1_700_000_000);
    let env: dsse::Envelope = serde_json::from_str(text(&a.files, PROVENANCE_FILE).trim_end()).unwrap();
    let typed: provenance::Statement = serde_json::from_slice(&env.payload().unwrap()).unwrap();
    let statement = serde_json::to_string_pretty(&typed).unwrap();
    insta::assert_snapshot!("statement", statement.replace(env!("CARGO_PKG_VERSION"), "[OKP_VERSION]"));
    // The serial number is a hash of the whole text, the okp version included: pinned by its own test.
    let serial = regex::Regex::new(r"urn:uuid:[0-9a-f-]{36}").unwrap();
    let sbom = text(&a.files, SBOM_FILE).replace(env!("CARGO_PKG_VERSION"), "[OKP_VERSION]");
    insta::assert_snapshot!("sbom", serial.replace(&sbom, "urn:uuid:[SERIAL]"));
}

#[test]
fn the_sbom_names_each_jar_with_its_ancestor_and_the_patches_of_its_module() {
    let a = made(1_700_000_000);
    let bom: serde_json::Value = serde_json::from_str(&text(&a.files, SBOM_FILE)).unwrap();
    assert_eq!(bom["metadata"]["timestamp"], "2023-11-14T22:13:20Z", "SOURCE_DATE_EPOCH");
    assert!(made(0)
        .files
        .iter()
        .any(|f| f.path == SBOM_FILE && !String::from_utf8_lossy(&f.bytes).contains("timestamp")));
    let c = &bom["components"][0];
    assert_eq!(c["purl"], format!("pkg:maven/org.apache.kafka/kafka_2.13@3.9.2?okp-patch-set={}", "b".repeat(64)));
    assert_eq!(c["pedigree"]["ancestors"][0]["purl"], "pkg:maven/org.apache.kafka/kafka_2.13@3.9.2");
    let patches = c["pedigree"]["patches"].as_array().unwrap();
    assert_eq!(patches.len(), 2, "the metadata module's patch is not the core jar's");
    assert_eq!(patches[0]["resolves"][0]["id"], "promotion-gate");
    assert_eq!(patches[0]["resolves"][0]["type"], "enhancement");
    assert!(patches[1].get("resolves").is_none(), "a new file resolves no hook of its own");
    let serial = bom["serialNumber"].as_str().unwrap();
    let uuid =
        regex::Regex::new(r"^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$").unwrap();
    assert!(uuid.is_match(serial), "{serial}");
    assert_ne!(
        serial,
        serde_json::from_str::<serde_json::Value>(&text(&made(0).files, SBOM_FILE)).unwrap()["serialNumber"]
    );
}

/// Each change to what the files say is found, naming the file and the field.
#[test]
fn a_statement_or_sbom_that_disagrees_with_the_bundle_fails_naming_the_field() {
    let a = made(0);
    let signer = Ed25519Signer::new(&a.kp.sk).unwrap();
    let with = |path: &str, bytes: Vec<u8>| -> Vec<File> {
        a.files
            .iter()
            .map(|f| if f.path == path { File { bytes: bytes.clone(), ..f.clone() } } else { f.clone() })
            .collect()
    };
    // The statement re-signed with the right key, but saying something else.
    let resigned = |alter: &dyn Fn(&mut serde_json::Value)| {
        let mut s = statement_of(&a.files);
        alter(&mut s);
        let e = dsse::Envelope::sign(provenance::PAYLOAD_TYPE, &serde_json::to_vec(&s).unwrap(), &signer.key_id, |m| {
            signer.sign(m)
        });
        with(PROVENANCE_FILE, (serde_json::to_string(&e).unwrap() + "\n").into_bytes())
    };
    type Alter = fn(&mut serde_json::Value);
    let cases: [(Alter, &str); 6] = [
        (
            |s| s["subject"][0]["digest"]["sha256"] = "0".repeat(64).into(),
            "subject libs/kafka_2.13-3.9.2.jar: sha256 000",
        ),
        (|s| s["subject"][0]["name"] = "libs/other.jar".into(), "subject: no libs/kafka_2.13-3.9.2.jar"),
        (
            |s| s["predicate"]["buildDefinition"]["externalParameters"]["mode"] = "kraft".into(),
            "externalParameters.mode is \"kraft\", expected \"zk\"",
        ),
        (
            |s| s["predicate"]["buildDefinition"]["externalParameters"]["layers"] = serde_json::json!(["core"]),
            "externalParameters.layers",
        ),
        (
            |s| s["predicate"]["buildDefinition"]["externalParameters"]["patch_set_hash"] = "a".repeat(64).into(),
            "externalParameters.patch_set_hash",
        ),
        (
            |s| s["predicate"]["buildDefinition"]["resolvedDependencies"] = serde_json::json!([]),
            "resolvedDependencies: no org.apache.kafka:kafka_2.13:3.9.2",
        ),
    ];
    for (alter, want) in cases {
        let checks = run(&resigned(&alter), &a.manifest, Some(&a.kp.pk));
        let e = failure(&checks, "provenance");
        assert!(e.starts_with("provenance.intoto.jsonl: ") && e.contains(want), "{want}: {e}");
        assert!(checks.iter().any(|(n, r)| *n == "dsse signature" && r.is_ok()), "signed by the key: {checks:?}");
    }
    // The payload changed without a new signature, or signed by another key.
    let env: dsse::Envelope = serde_json::from_str(text(&a.files, PROVENANCE_FILE).trim_end()).unwrap();
    let mut forged = env.clone();
    forged.payload = forged.payload.replacen('e', "f", 1);
    let checks = run(
        &with(PROVENANCE_FILE, (serde_json::to_string(&forged).unwrap() + "\n").into_bytes()),
        &a.manifest,
        Some(&a.kp.pk),
    );
    assert!(failure(&checks, "dsse signature").contains("does not verify"), "{checks:?}");
    let other = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let checks = run(&a.files, &a.manifest, Some(&other.pk));
    assert!(failure(&checks, "dsse signature").contains(&format!("none by key {}", sign::public_key_id(&other.pk))));
    // Two lines, or not JSON.
    let two = with(PROVENANCE_FILE, [text(&a.files, PROVENANCE_FILE).as_bytes(), b"{}\n"].concat());
    assert!(failure(&run(&two, &a.manifest, None), "provenance").contains("not one JSON line"));

    // The SBOM: the hash, the purl, the ancestor, the serial number, the patches, a component more.
    let sbom = text(&a.files, SBOM_FILE);
    let jar_sha = crate::hash::sha256(b"patched jar");
    let ps = "b".repeat(64);
    let cases: Vec<(String, &str)> = vec![
        (sbom.replacen(&jar_sha, &"0".repeat(64), 1), "components[libs/kafka_2.13-3.9.2.jar].hashes[SHA-256]"),
        (
            sbom.replacen("kafka_2.13@3.9.2?okp", "kafka_2.13@3.9.1?okp", 1),
            "components[libs/kafka_2.13-3.9.2.jar].purl",
        ),
        (sbom.replacen(&"c".repeat(64), &"d".repeat(64), 1), "pedigree.ancestors[0].hashes[SHA-256]"),
        (sbom.replacen("\"serialNumber\": \"urn:uuid:", "\"serialNumber\": \"urn:uuid:0", 1), "serialNumber"),
        (sbom.replacen(&format!("set {ps}"), "set (none)", 1), "pedigree.notes"),
        (
            sbom.replacen(
                "\"version\": \"3.9.2\",\n      \"description\"",
                "\"version\": \"3.9.1\",\n      \"description\"",
                1,
            ),
            "metadata.component.version",
        ),
    ];
    for (changed, want) in cases {
        assert_ne!(changed, sbom, "{want}: the case changes nothing");
        let e = failure(&run(&with(SBOM_FILE, changed.into_bytes()), &a.manifest, Some(&a.kp.pk)), "sbom");
        assert!(e.starts_with("sbom.cdx.json: ") && e.contains(want), "{want}: {e}");
    }
    // One file without the other.
    let only: Vec<File> = a.files.iter().filter(|f| f.path != SBOM_FILE).cloned().collect();
    assert!(failure(&run(&only, &a.manifest, None), "sbom").contains("no sbom.cdx.json"));
}

#[test]
fn a_bundle_made_before_attestations_has_none_and_that_passes() {
    let a = made(0);
    let old: Vec<File> = a.files.into_iter().filter(|f| f.path != PROVENANCE_FILE && f.path != SBOM_FILE).collect();
    let checks = check(&old, &a.manifest, Some(&a.kp.pk));
    assert_eq!(checks.len(), 1);
    let (name, auth, r) = &checks[0];
    assert_eq!((*name, *auth), ("attestations", false));
    assert!(r.as_ref().unwrap().starts_with("none: no provenance.intoto.jsonl nor sbom.cdx.json"), "{r:?}");
}

#[test]
fn maven_coordinates_become_purls() {
    assert_eq!(
        maven_purl("org.apache.kafka:kafka_2.13:3.9.2").as_deref(),
        Some("pkg:maven/org.apache.kafka/kafka_2.13@3.9.2")
    );
    assert_eq!(
        maven_purl("org.apache.kafka:kafka-metadata:4.3.1:sources").as_deref(),
        Some("pkg:maven/org.apache.kafka/kafka-metadata@4.3.1?classifier=sources")
    );
    for odd in ["kafka", "a:b", "a:b c:1", "a:b:1:c:d", "a::1", "a:b:1/2"] {
        assert_eq!(maven_purl(odd), None, "{odd}");
    }
}

/// A release with no sources jar on Maven Central: the patches name their hooks, carry no diff,
/// and the notes say why; the SBOM still checks.
#[test]
fn without_the_release_sources_the_patches_name_their_hooks_and_the_notes_say_why() {
    let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let i = inputs();
    let mut e = edits();
    e.patches.iter_mut().for_each(|p| p.diff = None);
    e.without_diffs = Some("release 3.9.2 has no sources jar on Maven Central (a test)".into());
    let mut files = layout::files(&i);
    files.extend(super::files(&i, &e, &Ed25519Signer::new(&kp.sk).unwrap(), 0));
    let m = layout::manifest(&i, &files, vec![]);
    for (n, _, r) in check(&files, &m, Some(&kp.pk)) {
        assert!(r.is_ok(), "{n}: {r:?}");
    }
    let bom: serde_json::Value = serde_json::from_str(&text(&files, SBOM_FILE)).unwrap();
    let pedigree = &bom["components"][0]["pedigree"];
    assert!(pedigree["patches"].as_array().unwrap().iter().all(|p| p.get("diff").is_none()));
    assert_eq!(pedigree["patches"][0]["resolves"][0]["id"], "promotion-gate");
    assert!(pedigree["notes"]
        .as_str()
        .unwrap()
        .ends_with("The patches carry no diff: release 3.9.2 has no sources jar on Maven Central (a test)."));
}
