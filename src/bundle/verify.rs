//! Verification of a bundle, entirely in memory: signature and trusted comment,
//! the sidecar checksum files, the archive's entries, the manifest, every
//! file's sha256, native code. Nothing is extracted; `install` extracts only
//! what passed here.
//!
//! Checks come in two kinds. Authenticity (signature, trusted comment,
//! checksum files) says who made the bundle; `--allow-unverified` may waive it.
//! Integrity (archive, manifest, files, native code) says the bundle is
//! well-formed and safe to unpack; nothing waives it.

use minisign::PublicKey;
use sha2::{Digest, Sha256, Sha512};

use super::archive::{self, Unpacked};
use super::manifest::{self, Identity, Manifest};
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
pub struct Outcome {
    pub checks: Vec<Check>,
    pub content: Option<(Unpacked, Manifest, Identity)>,
}

impl Outcome {
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
}

/// What `verify` reads: the bundle and whatever lies beside it.
pub struct Inputs<'a> {
    pub file_name: &'a str,
    pub bundle: &'a [u8],
    pub pubkey: Option<&'a PublicKey>,
    pub minisig: Option<&'a str>,
    pub sha256_file: Option<&'a str>,
    pub sha512_file: Option<&'a str>,
}

/// Looks up `name` in a `sha256sum`-style file (`<hex>  <name>` or `<hex> *<name>`).
fn listed_digest<'s>(sums: &'s str, name: &str) -> Option<&'s str> {
    sums.lines().find_map(|l| {
        let (hex, rest) = l.split_once(' ')?;
        (rest.strip_prefix(['*', ' ']).unwrap_or(rest) == name).then_some(hex)
    })
}

pub fn verify(i: &Inputs) -> Outcome {
    let mut checks = Vec::new();
    let mut push = |check: &'static str, authenticity: bool, r: Result<String, String>| {
        let (status, detail) = match r {
            Ok(d) if d.starts_with("not checked") => (Status::Skipped, d),
            Ok(d) => (Status::Ok, d),
            Err(d) => (Status::Failed, d),
        };
        checks.push(Check { check, status, detail, authenticity });
    };

    // Authenticity of the bytes as a whole.
    let comment = match (i.pubkey, i.minisig) {
        (None, _) => {
            push("signature", true, Ok("not checked: no public key given".into()));
            None
        }
        (Some(_), None) => {
            push("signature", true, Err(format!("no signature file {}.minisig beside the bundle", i.file_name)));
            None
        }
        (Some(pk), Some(sig)) => match sign::verify(pk, i.bundle, sig) {
            Ok(c) => {
                push(
                    "signature",
                    true,
                    Ok(format!("good minisign signature; trusted comment: {}", c.replace('\t', " "))),
                );
                Some(c)
            }
            Err(e) => {
                push("signature", true, Err(e));
                None
            }
        },
    };
    for (check, sums, digest) in [
        ("sha256 file", i.sha256_file, hex(&Sha256::digest(i.bundle))),
        ("sha512 file", i.sha512_file, hex(&Sha512::digest(i.bundle))),
    ] {
        let r = match sums {
            None => Ok(format!("not checked: no {}.{} beside the bundle", i.file_name, &check[..6])),
            Some(text) => match listed_digest(text, i.file_name) {
                Some(h) if h.eq_ignore_ascii_case(&digest) => Ok(format!("matches {}", &digest[..16])),
                Some(h) => Err(format!("lists {h}, the bundle is {digest}")),
                None => Err(format!("does not list {}", i.file_name)),
            },
        };
        push(check, true, r);
    }

    // Integrity of the content; the archive is judged before anything else reads it.
    let unpacked = match archive::read(i.bundle) {
        Ok(u) => {
            push(
                "archive",
                false,
                Ok(format!("{} files under {}/, all regular files with safe paths", u.files.len(), u.top)),
            );
            u
        }
        Err(problems) => {
            push("archive", false, Err(problems.join("; ")));
            return Outcome { checks, content: None };
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
            push("manifest", false, Err(problems.join("; ")));
            return Outcome { checks, content: None };
        }
    };

    if let Some(c) = &comment {
        let f = sign::comment_fields(c);
        let want = [
            ("file", i.file_name.to_string()),
            ("okp-bundle", m.name.clone()),
            ("release", m.release.clone()),
            ("mode", m.mode.clone()),
            ("target", m.target.clone()),
            ("patch_set", m.patch_set_hash.clone()),
        ];
        let wrong: Vec<String> = want
            .iter()
            .filter(|(k, v)| f.get(*k) != Some(v))
            .map(|(k, v)| format!("{k} is {:?}, expected {v}", f.get(*k).map(String::as_str).unwrap_or("(missing)")))
            .collect();
        push(
            "trusted comment",
            true,
            if wrong.is_empty() {
                Ok("binds this file name, release, mode, target and patch set".into())
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
        "files",
        false,
        if problems.is_empty() {
            Ok(format!("{listed} files match their sha256, size and mode"))
        } else {
            Err(problems.join("; "))
        },
    );

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
    Outcome { checks, content: Some((unpacked, m, id)) }
}

/// The sidecar lines `okp bundle` writes and `sha256sum -c` / `sha512sum -c` read.
pub fn sidecars(file_name: &str, bundle: &[u8]) -> (String, String) {
    (
        format!("{}  {file_name}\n", hex(&Sha256::digest(bundle))),
        format!("{}  {file_name}\n", hex(&Sha512::digest(bundle))),
    )
}

/// The report, one line per check.
pub fn render(o: &Outcome, file: &str) -> String {
    let mut s = String::new();
    for c in &o.checks {
        let mark = match c.status {
            Status::Ok => "ok",
            Status::Failed => "FAILED",
            Status::Skipped => "skipped",
        };
        s.push_str(&format!("{mark:<8} {:<16} {}\n", c.check, c.detail));
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
}
