//! Signing keys and signatures, minisign-compatible (Ed25519 over the BLAKE2b
//! prehash, the format `minisign -V` checks), through the `minisign` crate.
//!
//! The trusted comment (signed together with the signature) binds the bundle's
//! file name, release, mode, target and patch set, so a valid signature cannot
//! be moved onto another bundle or a renamed one; with its timestamp and the
//! okp version that made the bundle, it is also what pins are checked against.
//! Secret keys are never printed; their password comes from OKP_KEY_PASSWORD
//! or a prompt on a terminal, never from a flag (flags end up in shell history
//! and `ps`).

use std::io::{Cursor, IsTerminal, Write};
use std::path::{Path, PathBuf};

use minisign::{PublicKey, PublicKeyBox, SecretKey, SecretKeyBox, SignatureBox};

use super::manifest::Identity;
use crate::error::{Error, Result};
use crate::fsx::read as readfile;

pub const PASSWORD_ENV: &str = "OKP_KEY_PASSWORD";

/// A secret key's bytes: algorithm ids (6), salt (32), limits (16), key id (8),
/// Ed25519 key (64), checksum (32).
const UNENCRYPTED_KEY_BYTES: usize = 158;

fn crypto(context: &str, e: minisign::PError) -> Error {
    Error::Usage(format!("{context}: {e}"))
}

/// A key file: a small regular text file (never a FIFO or a device).
fn read_text(path: &Path, what: &str) -> Result<String> {
    let bytes = readfile::read_regular(path, readfile::MAX_KEY).map_err(|e| e.into_error(path, what))?;
    String::from_utf8(bytes)
        .map_err(|_| Error::Tree { path: path.to_path_buf(), msg: format!("the {what} is not UTF-8 text") })
}

/// The key id as minisign prints it (16 upper-case hex digits).
fn key_id(keynum: &[u8]) -> String {
    let mut n = [0u8; 8];
    n.copy_from_slice(&keynum[..8]);
    format!("{:016X}", u64::from_le_bytes(n))
}

/// The password: OKP_KEY_PASSWORD, or asked on the terminal (twice when `confirm`).
fn password(purpose: &str, confirm: bool) -> Result<String> {
    if let Ok(p) = std::env::var(PASSWORD_ENV) {
        return Ok(p);
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::Usage(format!(
            "{purpose} needs a password: set {PASSWORD_ENV}, or run on a terminal to be asked (for CI keys without a password: okp keygen --unencrypted)"
        )));
    }
    let ask = |prompt: &str| {
        rpassword::prompt_password(prompt).map_err(|e| Error::io("cannot read the password from the terminal", e))
    };
    let p = ask(&format!("{purpose}: password: "))?;
    if confirm && ask("again: ")? != p {
        return Err(Error::Usage("the passwords differ".into()));
    }
    Ok(p)
}

/// The files `okp keygen` wrote.
pub struct KeyFiles {
    pub secret: PathBuf,
    pub public: PathBuf,
    pub id: String,
    pub public_box: String,
}

/// Writes PREFIX.key (mode 0600, never overwritten) and PREFIX.pub.
pub fn keygen(prefix: &Path, unencrypted: bool) -> Result<KeyFiles> {
    let secret = PathBuf::from(format!("{}.key", prefix.display()));
    let public = PathBuf::from(format!("{}.pub", prefix.display()));
    for p in [&secret, &public] {
        if p.exists() {
            return Err(Error::Tree {
                path: p.clone(),
                msg: "already exists; okp never overwrites a key (move it away first)".into(),
            });
        }
    }
    let kp = if unencrypted {
        minisign::KeyPair::generate_unencrypted_keypair()
    } else {
        let pw = password("new secret key", true)?;
        if pw.is_empty() {
            return Err(Error::Usage("an empty password protects nothing; use --unencrypted to say so".into()));
        }
        minisign::KeyPair::generate_encrypted_keypair(Some(pw))
    }
    .map_err(|e| crypto("cannot generate a key", e))?;
    let id = key_id(kp.pk.keynum());
    let comment =
        if unencrypted { format!("okp secret key {id} (unencrypted)") } else { format!("okp secret key {id}") };
    let sk_box = kp.sk.to_box(Some(&comment)).map_err(|e| crypto("cannot encode the secret key", e))?;
    let pk_box = kp.pk.to_box().map_err(|e| crypto("cannot encode the public key", e))?.into_string();
    if let Some(d) = secret.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| Error::io(format!("cannot create {}", d.display()), e))?;
    }
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&secret)
            .map_err(|e| Error::io(format!("cannot create {}", secret.display()), e))?;
        f.write_all(&sk_box.to_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(format!("cannot write {}", secret.display()), e))?;
    }
    std::fs::write(&public, &pk_box).map_err(|e| Error::io(format!("cannot write {}", public.display()), e))?;
    Ok(KeyFiles { secret, public, id, public_box: pk_box })
}

/// Loads a secret key; asks for the password only when the key has one.
pub fn load_secret(path: &Path) -> Result<SecretKey> {
    let text = read_text(path, "secret key")?;
    let encoded = text.lines().nth(1).map(str::trim).unwrap_or_default();
    use ct_codecs::Decoder;
    let raw = ct_codecs::Base64::decode_to_vec(encoded, None).map_err(|_| {
        Error::Usage(format!("{}: not a minisign secret key (second line is not base64)", path.display()))
    })?;
    // Bytes 2..4 name the key derivation: "\0\0" none (unencrypted), "Sc" scrypt.
    let sk_box = SecretKeyBox::from_string(&text).map_err(|e| crypto(&path.display().to_string(), e))?;
    let sk = match raw.get(2..4) {
        // minisign's own unencrypted keys (`minisign -G -W`) carry an all-zero checksum,
        // which the crate rejects; their integrity is checked when signing instead
        // (the signature is verified against the key's public half before use).
        Some([0, 0])
            if raw.len() == UNENCRYPTED_KEY_BYTES && raw[UNENCRYPTED_KEY_BYTES - 32..].iter().all(|&b| b == 0) =>
        {
            SecretKey::from_bytes(&raw)
        }
        Some([0, 0]) => sk_box.into_unencrypted_secret_key(),
        Some(b"Sc") => sk_box.into_secret_key(Some(password(&format!("secret key {}", path.display()), false)?)),
        _ => return Err(Error::Usage(format!("{}: not a minisign secret key", path.display()))),
    };
    sk.map_err(|e| crypto(&format!("cannot open the secret key {}", path.display()), e))
}

/// A public key from a file (minisign's two-line .pub) or given inline (the
/// base64 line, `RW…`, as `minisign -P` takes it).
pub fn load_public(arg: &str) -> Result<PublicKey> {
    let p = Path::new(arg);
    // Whatever is at the path is read as a key file (and refused when it is not a
    // regular file); only a path with nothing there is taken as an inline key.
    if std::fs::symlink_metadata(p).is_err() {
        return PublicKey::from_base64(arg.trim()).map_err(|_| Error::Tree {
            path: p.to_path_buf(),
            msg: "no such public key file (nor a minisign public key in base64)".into(),
        });
    }
    let text = read_text(p, "public key")?;
    PublicKeyBox::from_string(&text)
        .and_then(|b| b.into_public_key())
        .map_err(|e| crypto(&format!("{}: not a minisign public key", arg), e))
}

/// The trusted comment of a bundle signature: tab-separated `key:value` pairs,
/// minisign's own `timestamp` and `file` first, the okp version that made it last.
pub fn trusted_comment(file_name: &str, id: &Identity, patch_set: &str, timestamp: u64) -> String {
    format!(
        "timestamp:{timestamp}\tfile:{file_name}\tokp-bundle:{}\trelease:{}\tmode:{}\ttarget:{}\tpatch_set:{patch_set}\tokp_version:{}",
        id.name(),
        id.release,
        id.mode,
        id.target,
        env!("CARGO_PKG_VERSION")
    )
}

/// Reads the pairs back out of a trusted comment.
pub fn comment_fields(comment: &str) -> std::collections::BTreeMap<String, String> {
    comment.split('\t').filter_map(|kv| kv.split_once(':')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A key the trusted comment holds twice (`file:a\tfile:b`): such a comment is refused, since a
/// reader that takes the first value and one that takes the last would see two bundles.
pub fn duplicate_comment_field(comment: &str) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    comment.split('\t').filter_map(|kv| kv.split_once(':')).map(|(k, _)| k).find(|k| !seen.insert(*k)).map(String::from)
}

/// Signs `data`; the result is the text of a `.minisig` file.
pub fn sign(sk: &SecretKey, data: &[u8], trusted: &str) -> Result<String> {
    let pk = PublicKey::from_secret_key(sk).map_err(|e| crypto("cannot derive the public key", e))?;
    let untrusted = format!("signature from okp secret key {}", key_id(pk.keynum()));
    let sig = minisign::sign(Some(&pk), sk, Cursor::new(data), Some(trusted), Some(&untrusted))
        .map_err(|e| crypto("cannot sign", e))?;
    Ok(sig.into_string())
}

/// Checks a `.minisig` text over `data`; returns the trusted comment.
pub fn verify(pk: &PublicKey, data: &[u8], minisig: &str) -> std::result::Result<String, String> {
    let sig = SignatureBox::from_string(minisig).map_err(|e| format!("not a minisign signature: {e}"))?;
    minisign::verify(pk, &sig, Cursor::new(data), true, false, false).map_err(|e| e.to_string())?;
    sig.trusted_comment().map_err(|e| e.to_string())
}

/// Where the Ed25519 secret key sits in a decrypted minisign secret key's bytes (after the
/// algorithm ids, salt, limits and key id; before the checksum), and the public key in a public
/// key's bytes (after the algorithm id and key id).
const ED25519_SECRET: std::ops::Range<usize> = 62..126;
const ED25519_PUBLIC: std::ops::Range<usize> = 10..42;

/// The Ed25519 key inside a minisign secret key, for the signatures okp makes in formats other
/// than minisign's (the DSSE envelope of a bundle's provenance). minisign signs a BLAKE2b
/// prehash with random noise added; this signs the message itself, deterministically (RFC 8032),
/// so the same key and message always give the same signature.
pub struct Ed25519Signer {
    key: ed25519_compact::SecretKey,
    /// The minisign key id, as `minisign` prints it.
    pub key_id: String,
}

impl Ed25519Signer {
    pub fn new(sk: &SecretKey) -> Result<Ed25519Signer> {
        let mut bytes = sk.to_bytes();
        let key = bytes.get(ED25519_SECRET).and_then(|k| ed25519_compact::SecretKey::from_slice(k).ok());
        bytes.iter_mut().for_each(|b| *b = 0);
        let key = key.ok_or_else(|| Error::Usage("the secret key holds no Ed25519 key".into()))?;
        let pk = PublicKey::from_secret_key(sk).map_err(|e| crypto("cannot derive the public key", e))?;
        let signer = Ed25519Signer { key, key_id: key_id(pk.keynum()) };
        // A key whose two halves disagree would sign what its public key does not verify.
        if ed25519_verify(&pk, b"okp", &signer.sign(b"okp")).is_err() {
            return Err(Error::Usage("the secret key's Ed25519 half does not match its public key".into()));
        }
        Ok(signer)
    }

    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        *self.key.sign(message, None)
    }
}

/// The key id of a public key, as `minisign` prints it (16 upper-case hex digits).
pub fn public_key_id(pk: &PublicKey) -> String {
    key_id(pk.keynum())
}

/// Checks a plain Ed25519 signature (not minisign's prehashed one) with a minisign public key.
pub fn ed25519_verify(pk: &PublicKey, message: &[u8], signature: &[u8]) -> std::result::Result<(), String> {
    let raw = pk.to_bytes();
    let pk = raw
        .get(ED25519_PUBLIC)
        .and_then(|k| ed25519_compact::PublicKey::from_slice(k).ok())
        .ok_or("the public key holds no Ed25519 key")?;
    let sig = ed25519_compact::Signature::from_slice(signature)
        .map_err(|_| format!("a signature is 64 bytes, this one {}", signature.len()))?;
    pk.verify(message, &sig).map_err(|_| "the Ed25519 signature does not verify with this key".to_string())
}

/// Runs gpg for a detached ASCII-armoured signature (`FILE.asc`), the Apache convention.
pub fn gpg_sign(file: &Path, key_id: &str) -> Result<PathBuf> {
    let asc = PathBuf::from(format!("{}.asc", file.display()));
    let gpg = std::env::var("OKP_GPG").unwrap_or_else(|_| "gpg".into());
    let o = std::process::Command::new(&gpg)
        .args(["--batch", "--yes", "--armor", "--detach-sign", "--local-user", key_id, "--output"])
        .arg(&asc)
        .arg(file)
        .stdin(std::process::Stdio::inherit())
        .output()
        .map_err(|e| Error::External(format!("cannot run {gpg}: {e}")))?;
    if !o.status.success() {
        let _ = std::fs::remove_file(&asc);
        return Err(Error::External(format!(
            "{gpg} could not sign with key {key_id}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(asc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    fn id() -> Identity {
        Identity {
            release: "3.9.2".parse().unwrap(),
            mode: Mode::Kraft,
            target: super::super::target::Target::LinuxX86_64,
        }
    }

    /// The raw signature is plain Ed25519 over the message, by the key minisign uses: the same
    /// key and message give the same bytes, another key or message does not verify.
    #[test]
    fn the_ed25519_half_signs_deterministically_and_verifies_with_the_public_key() {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let s = Ed25519Signer::new(&kp.sk).unwrap();
        assert_eq!(s.key_id, public_key_id(&kp.pk));
        assert_eq!(s.key_id.len(), 16);
        let sig = s.sign(b"statement");
        assert_eq!(sig, s.sign(b"statement"), "deterministic");
        assert!(ed25519_verify(&kp.pk, b"statement", &sig).is_ok());
        assert!(ed25519_verify(&kp.pk, b"statemenT", &sig).is_err());
        let other = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        assert!(ed25519_verify(&other.pk, b"statement", &sig).is_err());
        assert!(ed25519_verify(&kp.pk, b"statement", &sig[..63]).unwrap_err().contains("64 bytes"));
        // An encrypted key, once opened, is the same key.
        let enc = minisign::KeyPair::generate_encrypted_keypair(Some("pw".into())).unwrap();
        let text = enc.sk.to_box(None).unwrap().into_string();
        let opened = SecretKeyBox::from_string(&text).unwrap().into_secret_key(Some("pw".into())).unwrap();
        let sig = Ed25519Signer::new(&opened).unwrap().sign(b"m");
        assert!(ed25519_verify(&enc.pk, b"m", &sig).is_ok());
    }

    #[test]
    fn a_signature_verifies_and_binds_its_comment() {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let tc = trusted_comment("b.tar.gz", &id(), "abc", 7);
        let sig = sign(&kp.sk, b"bundle bytes", &tc).unwrap();
        assert_eq!(verify(&kp.pk, b"bundle bytes", &sig).unwrap(), tc);
        assert!(verify(&kp.pk, b"bundle bytez", &sig).is_err());
        let f = comment_fields(&tc);
        assert_eq!(f["release"], "3.9.2");
        assert_eq!(f["target"], "linux-x86_64");
        assert_eq!(f["okp-bundle"], "okp-observer-3.9.2-kraft-linux-x86_64");
        assert_eq!(f["okp_version"], env!("CARGO_PKG_VERSION"));
        // Another key, or an edited trusted comment, fails.
        let other = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        assert!(verify(&other.pk, b"bundle bytes", &sig).is_err());
        let edited = sig.replace("target:linux-x86_64", "target:linux-aarch64");
        assert!(verify(&kp.pk, b"bundle bytes", &edited).is_err());
    }

    #[test]
    fn a_trusted_comment_naming_a_field_twice_is_found() {
        assert_eq!(duplicate_comment_field("file:a.tar.gz\trelease:3.9.2\tfile:b.tar.gz"), Some("file".into()));
        assert_eq!(duplicate_comment_field("file:a.tar.gz\trelease:3.9.2"), None);
    }
}
