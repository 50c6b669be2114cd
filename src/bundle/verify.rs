//! Verification of a bundle, entirely in memory: signature and trusted comment,
//! pins, the sidecar checksum files, the archive's entries, the manifest, every
//! file's sha256, the attestations (`attest`), native code. Nothing is extracted; `install` extracts only
//! what passed here. The jars' re-derivation, which needs okp's data and Maven Central, is added
//! to these checks by `rederive`.
//!
//! Checks come in two kinds. Authenticity (signature, pins, trusted comment,
//! checksum files) says who made the bundle; `--allow-unverified` may waive it,
//! except the pins. Integrity (archive, manifest, files, native code) says the
//! bundle is well-formed and safe to unpack; nothing waives it.
//!
//! Order matters: the signature, the pins and the checksums are checked over
//! the raw bytes first, and the archive is decompressed only when they hold
//! (or when the caller waives authenticity), so untrusted bytes never reach
//! the gzip and tar readers of a plain `verify-bundle`.

use minisign::PublicKey;
use sha2::{Digest, Sha256, Sha512};

use super::archive::{self, Unpacked};
use super::manifest::{self, Identity, Manifest};
use super::pins::Pins;
use super::sign;
use super::target;
use crate::hash::hex;
use crate::hash::sha256;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
    /// Not checked (no key given, no sidecar file): neither passes nor fails.
    Skipped,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Check {
    pub check: &'static str,
    pub status: Status,
    pub detail: String,
    /// True for authenticity checks (waivable with --allow-unverified).
    pub authenticity: bool,
}

/// What verification saw: each check, and the content when it could be read.
pub struct Verification {
    pub checks: Vec<Check>,
    pub content: Option<(Unpacked, Manifest, Identity)>,
}

impl Verification {
    /// Every check passed and the signature was checked.
    pub fn verified(&self) -> bool {
        self.integral()
            && self.checks.iter().filter(|c| c.authenticity).all(|c| c.status != Status::Failed)
            && self.checks.iter().any(|c| c.check == "signature" && c.status == Status::Ok)
    }

    /// The integrity checks passed (the bundle is safe to unpack and well-formed).
    pub fn integral(&self) -> bool {
        self.content.is_some() && self.checks.iter().filter(|c| !c.authenticity).all(|c| c.status == Status::Ok)
    }

    /// No pin failed (pins are never waived, not even by --allow-unverified).
    pub fn pins_hold(&self) -> bool {
        !self.checks.iter().any(|c| c.check == PINS && c.status == Status::Failed)
    }

    /// The jars' re-derivation (`rederive`) found nothing, or did not run.
    pub fn jars_hold(&self) -> bool {
        !self.checks.iter().any(|c| c.check == JARS && c.status == Status::Failed)
    }
}

const PINS: &str = "pins";
/// The check `rederive` adds: the jars re-derived from their bytes.
pub const JARS: &str = "jars";

/// A sidecar file (`.minisig`, `.sha256`, `.sha512`) as found beside the bundle.
#[derive(Clone, Copy, Debug)]
pub enum Sidecar<'a> {
    Absent,
    /// Present but not readable as a small text file: the reason. A failure, never "absent".
    Unreadable(&'a str),
    Text(&'a str),
}

/// What `verify` reads: the bundle and whatever lies beside it.
pub struct Inputs<'a> {
    pub file_name: &'a str,
    pub bundle: &'a [u8],
    pub pubkey: Option<&'a PublicKey>,
    pub minisig: Sidecar<'a>,
    pub sha256_file: Sidecar<'a>,
    pub sha512_file: Sidecar<'a>,
    pub pins: &'a Pins,
    /// Decompress the archive even when an authenticity check failed (install
    /// --allow-unverified). A failed pin still stops it.
    pub read_unauthenticated: bool,
}

/// Looks up `name` in a `sha256sum`-style file (`<hex>  <name>` or `<hex> *<name>`).
fn listed_digest<'s>(sums: &'s str, name: &str) -> Option<&'s str> {
    sums.lines().find_map(|l| {
        let (hex, rest) = l.split_once(' ')?;
        (rest.strip_prefix(['*', ' ']).unwrap_or(rest) == name).then_some(hex)
    })
}

/// Records a check: `Ok` passes (or is skipped when it says "not checked"), `Err` fails.
fn push(checks: &mut Vec<Check>, check: &'static str, authenticity: bool, r: Result<String, String>) {
    let (status, detail) = match r {
        Ok(d) if d.starts_with("not checked") => (Status::Skipped, d),
        Ok(d) => (Status::Ok, d),
        Err(d) => (Status::Failed, d),
    };
    checks.push(Check { check, status, detail, authenticity });
}

pub fn verify(i: &Inputs) -> Verification {
    let mut checks = Vec::new();

    // Authenticity of the bytes as a whole, before anything parses them.
    let comment = match (i.pubkey, i.minisig) {
        (None, _) => {
            push(&mut checks, "signature", true, Ok("not checked: no public key given".into()));
            None
        }
        (Some(_), Sidecar::Absent) => {
            push(
                &mut checks,
                "signature",
                true,
                Err(format!("no signature file {}.minisig beside the bundle", i.file_name)),
            );
            None
        }
        (Some(_), Sidecar::Unreadable(why)) => {
            push(&mut checks, "signature", true, Err(format!("cannot read {}.minisig: {why}", i.file_name)));
            None
        }
        (Some(pk), Sidecar::Text(sig)) => match sign::verify(pk, i.bundle, sig) {
            Ok(c) => {
                push(
                    &mut checks,
                    "signature",
                    true,
                    Ok(format!("good minisign signature; trusted comment: {}", c.replace('\t', " "))),
                );
                Some(c)
            }
            Err(e) => {
                push(&mut checks, "signature", true, Err(e));
                None
            }
        },
    };
    if i.pins.any() {
        let r = match &comment {
            Some(c) if sign::duplicate_comment_field(c).is_some() => {
                Err("the trusted comment names a field twice: pins are not checked against it".into())
            }
            Some(c) => i.pins.check(&sign::comment_fields(c)),
            None => Err("not checked against a good signature: pins hold only for a verified bundle".into()),
        };
        push(&mut checks, PINS, true, r);
    }
    for (check, sums, digest) in [
        ("sha256 file", i.sha256_file, hex(&Sha256::digest(i.bundle))),
        ("sha512 file", i.sha512_file, hex(&Sha512::digest(i.bundle))),
    ] {
        let r = match sums {
            Sidecar::Absent => Ok(format!("not checked: no {}.{} beside the bundle", i.file_name, &check[..6])),
            Sidecar::Unreadable(why) => Err(format!("cannot read {}.{}: {why}", i.file_name, &check[..6])),
            Sidecar::Text(text) => match listed_digest(text, i.file_name) {
                Some(h) if h.eq_ignore_ascii_case(&digest) => Ok(format!("matches {}", &digest[..16])),
                Some(h) => Err(format!("lists {h}, the bundle is {digest}")),
                None => Err(format!("does not list {}", i.file_name)),
            },
        };
        push(&mut checks, check, true, r);
    }
    let pin_failed = checks.iter().any(|c| c.check == PINS && c.status == Status::Failed);
    let authentic = checks.iter().all(|c| c.status != Status::Failed);
    if pin_failed || !(authentic || i.read_unauthenticated) {
        push(
            &mut checks,
            "archive",
            false,
            Ok("not checked: okp decompresses no bundle whose signature, pins or checksums failed".into()),
        );
        return Verification { checks, content: None };
    }

    // Integrity of the content; the archive is judged before anything else reads it.
    let unpacked = match archive::read(i.bundle) {
        Ok(u) => {
            push(
                &mut checks,
                "archive",
                false,
                Ok(format!("{} files under {}/, all regular files with safe paths", u.files.len(), u.top)),
            );
            u
        }
        Err(problems) => {
            push(&mut checks, "archive", false, Err(problems.join("; ")));
            return Verification { checks, content: None };
        }
    };
    let parsed = match unpacked.files.iter().find(|f| f.path == manifest::FILE_NAME) {
        None => Err(vec![format!("no {}/{} in the bundle", unpacked.top, manifest::FILE_NAME)]),
        Some(f) => Manifest::parse(&f.bytes),
    };
    let (m, id) = match parsed {
        Ok((m, id)) => {
            let expected_file = format!("{}.tar.gz", m.name);
            let mut problems = Vec::new();
            if unpacked.top != m.name {
                problems.push(format!("top directory {}/ is not the manifest's name {}", unpacked.top, m.name));
            }
            if i.file_name != expected_file {
                problems.push(format!("the file is called {}, the manifest says {expected_file}", i.file_name));
            }
            push(
                &mut checks,
                "manifest",
                false,
                if problems.is_empty() {
                    Ok(format!("{} {}", manifest::SCHEMA, m.name))
                } else {
                    Err(problems.join("; "))
                },
            );
            (m, id)
        }
        Err(problems) => {
            push(&mut checks, "manifest", false, Err(problems.join("; ")));
            return Verification { checks, content: None };
        }
    };

    if let Some(c) = &comment {
        let f = sign::comment_fields(c);
        let twice = sign::duplicate_comment_field(c);
        let mut want = vec![
            ("file", i.file_name.to_string()),
            ("okp-bundle", m.name.clone()),
            ("release", m.release.clone()),
            ("mode", m.mode.clone()),
            ("target", m.target.clone()),
            ("patch_set", m.patch_set_hash.clone()),
        ];
        // Signed since okp signs its version; older bundles' comments lack it.
        if f.contains_key("okp_version") {
            want.push(("okp_version", m.okp_version.clone()));
        }
        let mut wrong: Vec<String> = want
            .iter()
            .filter(|(k, v)| f.get(*k) != Some(v))
            .map(|(k, v)| format!("{k} is {:?}, expected {v}", f.get(*k).map(String::as_str).unwrap_or("(missing)")))
            .collect();
        if let Some(k) = twice {
            wrong.insert(0, format!("it names {k:?} twice (each reader could take another value)"));
        }
        push(
            &mut checks,
            "trusted comment",
            true,
            if wrong.is_empty() {
                Ok(if f.contains_key("okp_version") {
                    "binds this file name, release, mode, target, patch set and okp version".into()
                } else {
                    "binds this file name, release, mode, target and patch set".into()
                })
            } else {
                Err(wrong.join("; "))
            },
        );
    }

    let mut problems = Vec::new();
    let mut listed = 0;
    for f in unpacked.files.iter().filter(|f| f.path != manifest::FILE_NAME) {
        match m.files.get(&f.path) {
            None => problems.push(format!("{} is not in the manifest", f.path)),
            Some(info) => {
                listed += 1;
                let h = sha256(&f.bytes);
                if info.sha256 != h {
                    problems.push(format!("{}: sha256 {h}, manifest {}", f.path, info.sha256));
                }
                if info.size != f.bytes.len() as u64 {
                    problems.push(format!("{}: {} bytes, manifest {}", f.path, f.bytes.len(), info.size));
                }
                if info.mode != manifest::mode_string(f.mode) {
                    problems.push(format!(
                        "{}: mode {}, manifest {}",
                        f.path,
                        manifest::mode_string(f.mode),
                        info.mode
                    ));
                }
            }
        }
    }
    for path in m.files.keys() {
        if !unpacked.files.iter().any(|f| &f.path == path) {
            problems.push(format!("{path} is in the manifest but not in the bundle"));
        }
    }
    push(
        &mut checks,
        "files",
        false,
        if problems.is_empty() {
            Ok(format!("{listed} files match their sha256, size and mode"))
        } else {
            Err(problems.join("; "))
        },
    );

    for (check, authenticity, r) in super::attest::check(&unpacked.files, &m, i.pubkey) {
        let r = match r {
            // The one Ok the attestations check gives for a bundle without them.
            Ok(none) if check == "attestations" && i.pins.require_attestations => {
                Err(format!("{none}; --require-attestations refuses a bundle without them"))
            }
            r => r,
        };
        push(&mut checks, check, authenticity, r);
    }

    let mut natives = Vec::new();
    let mut problems = Vec::new();
    for f in &unpacked.files {
        match target::scan(&f.path, &f.bytes, id.target) {
            Ok(found) => natives.extend(found),
            Err(p) => problems.extend(p),
        }
    }
    if problems.is_empty() && natives != m.native_libraries {
        problems.push(format!(
            "native libraries found ({}) differ from the manifest's ({})",
            natives.len(),
            m.native_libraries.len()
        ));
    }
    push(
        &mut checks,
        "native code",
        false,
        if !problems.is_empty() {
            Err(problems.join("; "))
        } else if natives.is_empty() {
            Ok("none: architecture-independent".into())
        } else {
            Ok(format!("{} native libraries, all ELF for {}", natives.len(), id.target))
        },
    );
    Verification { checks, content: Some((unpacked, m, id)) }
}

/// The sidecar lines `okp bundle` writes and `sha256sum -c` / `sha512sum -c` read.
pub fn sidecars(file_name: &str, bundle: &[u8]) -> (String, String) {
    (
        format!("{}  {file_name}\n", hex(&Sha256::digest(bundle))),
        format!("{}  {file_name}\n", hex(&Sha512::digest(bundle))),
    )
}

/// The report, one line per check.
pub fn render(o: &Verification, file: &str) -> String {
    let mut s = String::new();
    for c in &o.checks {
        let mark = match c.status {
            Status::Ok => "ok",
            Status::Failed => "FAILED",
            Status::Skipped => "skipped",
        };
        // A detail of several lines (a finding per line) keeps them under the detail's column.
        let detail = c.detail.replace('\n', &format!("\n{:26}", ""));
        s.push_str(&format!("{mark:<8} {:<16} {detail}\n", c.check));
    }
    s.push_str(&if o.verified() {
        format!("{file}: verified\n")
    } else if o.integral() {
        format!("{file}: NOT VERIFIED (well-formed, but its authenticity is not established)\n")
    } else {
        format!("{file}: NOT VERIFIED\n")
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidecar_lines_are_found_in_both_spellings() {
        let (s256, _) = sidecars("b.tar.gz", b"x");
        assert_eq!(listed_digest(&s256, "b.tar.gz").map(str::len), Some(64));
        assert_eq!(listed_digest("abc *b.tar.gz\n", "b.tar.gz"), Some("abc"));
        assert_eq!(listed_digest("abc  c.tar.gz\n", "b.tar.gz"), None);
    }

    /// A signed archive named like the 3.9.2 kraft bundle (it holds no manifest:
    /// these tests are about what happens before and at the archive).
    fn signed(timestamp: u64) -> (minisign::KeyPair, Vec<u8>, String, String) {
        let id = Identity {
            release: "3.9.2".parse().unwrap(),
            mode: crate::model::Mode::Kraft,
            target: super::super::target::Target::LinuxX86_64,
        };
        let file_name = format!("{}.tar.gz", id.name());
        let f = archive::File { path: "install.sh".into(), mode: archive::MODE_EXEC, bytes: b"#!/bin/sh\n".to_vec() };
        let bytes = archive::write(&id.name(), &[f], 0).unwrap();
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let sig =
            sign::sign(&kp.sk, &bytes, &sign::trusted_comment(&file_name, &id, &"a".repeat(64), timestamp)).unwrap();
        (kp, bytes, sig, file_name)
    }

    fn run(pk: Option<&PublicKey>, bytes: &[u8], sig: &str, file_name: &str, pins: &Pins, waive: bool) -> Verification {
        verify(&Inputs {
            file_name,
            bundle: bytes,
            pubkey: pk,
            minisig: Sidecar::Text(sig),
            sha256_file: Sidecar::Absent,
            sha512_file: Sidecar::Absent,
            pins,
            read_unauthenticated: waive,
        })
    }

    fn status<'o>(o: &'o Verification, check: &str) -> (&'o Status, &'o str) {
        let c = o.checks.iter().find(|c| c.check == check).unwrap_or_else(|| panic!("no {check} check"));
        (&c.status, &c.detail)
    }

    #[test]
    fn pins_are_checked_against_the_signature_and_a_failing_one_stops_everything() {
        let (kp, bytes, sig, name) = signed(1_793_491_200);
        let pin = |date: &str| Pins { not_before: Some(date.parse().unwrap()), ..Pins::default() };
        let held = run(Some(&kp.pk), &bytes, &sig, &name, &pin("2026-11-01"), false);
        assert_eq!(
            status(&held, "pins"),
            (&Status::Ok, "signed 2026-11-01T00:00:00Z, not before 2026-11-01T00:00:00Z")
        );
        assert_eq!(status(&held, "archive").0, &Status::Ok, "the pins held: the archive is read");
        for waive in [false, true] {
            let o = run(Some(&kp.pk), &bytes, &sig, &name, &pin("2026-11-02"), waive);
            assert_eq!(
                status(&o, "pins"),
                (
                    &Status::Failed,
                    "not-before 2026-11-02T00:00:00Z: the bundle was signed 2026-11-01T00:00:00Z, earlier"
                )
            );
            assert_eq!(status(&o, "archive").0, &Status::Skipped, "waived: {waive}");
            assert!(o.content.is_none() && !o.pins_hold() && !o.verified());
        }
        let made_by = sign::comment_fields(&sign::verify(&kp.pk, &bytes, &sig).unwrap())["okp_version"].clone();
        assert_eq!(made_by, env!("CARGO_PKG_VERSION"), "the signature names the okp that made the bundle");
        let newer = Pins { min_okp_version: Some("999.0.0".parse().unwrap()), ..Pins::default() };
        let o = run(Some(&kp.pk), &bytes, &sig, &name, &newer, true);
        assert_eq!(status(&o, "pins").1, format!("min-okp-version 999.0.0: the bundle was made by okp {made_by}"));
        // Without a key there is no signed comment to hold pins against.
        let o = run(None, &bytes, &sig, &name, &pin("2026-11-01"), true);
        assert_eq!(status(&o, "pins").0, &Status::Failed);
        assert!(!o.pins_hold());
    }

    #[test]
    fn the_archive_is_read_only_after_the_signature_and_checksums_held_unless_waived() {
        let (kp, bytes, sig, name) = signed(0);
        let other = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let o = run(Some(&other.pk), &bytes, &sig, &name, &Pins::default(), false);
        assert_eq!(status(&o, "signature").0, &Status::Failed);
        assert_eq!(status(&o, "archive").0, &Status::Skipped);
        let o = run(Some(&other.pk), &bytes, &sig, &name, &Pins::default(), true);
        assert_eq!(status(&o, "archive").0, &Status::Ok, "install --allow-unverified still judges the archive");
        let unreadable = verify(&Inputs {
            file_name: &name,
            bundle: &bytes,
            pubkey: Some(&kp.pk),
            minisig: Sidecar::Text(&sig),
            sha256_file: Sidecar::Unreadable("a FIFO, not a regular file"),
            sha512_file: Sidecar::Absent,
            pins: &Pins::default(),
            read_unauthenticated: false,
        });
        assert_eq!(
            status(&unreadable, "sha256 file"),
            (&Status::Failed, &*format!("cannot read {name}.sha256: a FIFO, not a regular file"))
        );
        assert_eq!(status(&unreadable, "archive").0, &Status::Skipped);
    }
}
