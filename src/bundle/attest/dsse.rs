//! DSSE v1, the envelope in-toto attestations travel in
//! (<https://github.com/secure-systems-lab/dsse/blob/master/protocol.md>): the payload's bytes,
//! its type, and signatures over the pre-authentication encoding
//! `PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body` (LEN: the byte length
//! in ASCII decimal, SP: one space), so a signature covers the type as well as the bytes and
//! the payload is never parsed before it is authenticated.
//!
//! Not here: what the payload says (`provenance`), where the key comes from (`sign`).

use ct_codecs::{Base64, Decoder, Encoder};
use serde::{Deserialize, Serialize};

/// `PAE(payload_type, payload)`, byte for byte as the DSSE v1 protocol defines it.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// The envelope as JSON (standard base64 with padding for `payload` and `sig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub payload: String,
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub signatures: Vec<Signature>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    /// A hint saying which key signed (okp: the minisign key id); never trusted on its own.
    #[serde(default)]
    pub keyid: String,
    pub sig: String,
}

fn b64(bytes: &[u8]) -> String {
    Base64::encode_to_string(bytes).unwrap_or_default()
}

pub fn unb64(text: &str, what: &str) -> Result<Vec<u8>, String> {
    Base64::decode_to_vec(text, None).map_err(|_| format!("{what} is not standard base64"))
}

impl Envelope {
    /// Signs `payload` of `payload_type`: `sign` gets the PAE and returns a raw signature.
    pub fn sign(payload_type: &str, payload: &[u8], keyid: &str, sign: impl Fn(&[u8]) -> [u8; 64]) -> Envelope {
        Envelope {
            payload: b64(payload),
            payload_type: payload_type.into(),
            signatures: vec![Signature { keyid: keyid.into(), sig: b64(&sign(&pae(payload_type, payload))) }],
        }
    }

    /// The payload's bytes (not yet authenticated).
    pub fn payload(&self) -> Result<Vec<u8>, String> {
        unb64(&self.payload, "payload")
    }

    /// Whether the envelope is signed by the trusted key `keyid` and by nothing else: at least one
    /// signature, and every signature present names that key (or no key: the id is an optional
    /// hint) and verifies over the PAE with `verify` (a raw signature check). One rule, whatever
    /// the order: a signature that does not verify refuses the envelope, however many others do,
    /// so a reader that checks only the first or only the last one it finds cannot be told
    /// something else than okp. The error names every signature that failed, by index and key id.
    pub fn verify(&self, keyid: &str, verify: impl Fn(&[u8], &[u8]) -> Result<(), String>) -> Result<(), String> {
        let ours = |s: &Signature| s.keyid.is_empty() || s.keyid == keyid;
        if !self.signatures.iter().any(ours) {
            let ids: Vec<&str> = self.signatures.iter().map(|s| s.keyid.as_str()).collect();
            return Err(format!("signatures: none by key {keyid} (the envelope names {ids:?})"));
        }
        let pae = pae(&self.payload_type, &self.payload()?);
        let failed: Vec<String> = self
            .signatures
            .iter()
            .enumerate()
            .filter_map(|(n, s)| {
                let r = if ours(s) {
                    unb64(&s.sig, "sig").and_then(|sig| verify(&pae, &sig))
                } else {
                    Err("by another key than the trusted one".to_string())
                };
                r.err().map(|e| format!("signatures[{n}] (keyid {:?}): {e}", s.keyid))
            })
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} (of {} signatures; every one must verify with key {keyid})",
                failed.join("; "),
                self.signatures.len()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding of the DSSE protocol's own test vector.
    #[test]
    fn pae_is_the_protocols_encoding() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ");
    }

    #[test]
    fn an_envelope_round_trips_and_its_signature_covers_type_and_payload() {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let signer = crate::bundle::sign::Ed25519Signer::new(&kp.sk).unwrap();
        let e = Envelope::sign("application/vnd.in-toto+json", b"{}", &signer.key_id, |m| signer.sign(m));
        let check = |pae: &[u8], sig: &[u8]| crate::bundle::sign::ed25519_verify(&kp.pk, pae, sig);
        let back: Envelope = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back, e);
        assert!(e.verify(&signer.key_id, check).is_ok());
        assert_eq!(e.payload().unwrap(), b"{}");
        let mut t = e.clone();
        t.payload_type = "application/json".into();
        assert!(t.verify(&signer.key_id, check).unwrap_err().contains("does not verify"));
        let mut t = e.clone();
        t.payload = b64(b"{ }");
        assert!(t.verify(&signer.key_id, check).is_err());
        assert!(e.verify("0000000000000000", check).unwrap_err().contains("none by key 0000000000000000"));
        let mut none = e.clone();
        none.signatures.clear();
        assert!(none.verify(&signer.key_id, check).unwrap_err().contains("none by key"));
    }

    /// Two signatures, one good and one not: refused in both orders (a reader that stopped at the
    /// first signature naming the key accepted the good one first, refused it second).
    #[test]
    fn every_signature_must_verify_whatever_the_order() {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let signer = crate::bundle::sign::Ed25519Signer::new(&kp.sk).unwrap();
        let other_kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let other = crate::bundle::sign::Ed25519Signer::new(&other_kp.sk).unwrap();
        let check = |pae: &[u8], sig: &[u8]| crate::bundle::sign::ed25519_verify(&kp.pk, pae, sig);
        let payload_type = "application/vnd.in-toto+json";
        let e = Envelope::sign(payload_type, b"{}", &signer.key_id, |m| signer.sign(m));
        let good = e.signatures[0].clone();
        // Another key's signature under the trusted key's id, one of a flipped byte, another
        // key's signature under its own id, one that is no base64.
        let forged = Signature { keyid: signer.key_id.clone(), sig: b64(&other.sign(&pae(payload_type, b"{}"))) };
        let mut flipped_sig = unb64(&good.sig, "sig").unwrap();
        flipped_sig[10] ^= 1;
        let flipped = Signature { keyid: signer.key_id.clone(), sig: b64(&flipped_sig) };
        let foreign = Envelope::sign(payload_type, b"{}", &other.key_id, |m| other.sign(m)).signatures[0].clone();
        let garbled = Signature { keyid: signer.key_id.clone(), sig: "!".into() };
        for bad in [forged, flipped, foreign, garbled] {
            for (signatures, bad_at) in [(vec![good.clone(), bad.clone()], 1), (vec![bad.clone(), good.clone()], 0)] {
                let t = Envelope { signatures, ..e.clone() };
                let err = t.verify(&signer.key_id, check).unwrap_err();
                assert!(err.contains(&format!("signatures[{bad_at}] (keyid {:?})", bad.keyid)), "{err}");
                assert!(err.contains("of 2 signatures"), "{err}");
            }
        }
        // Two good ones (the same key twice, one without a key id) verify.
        let unnamed = Signature { keyid: String::new(), ..good.clone() };
        let t = Envelope { signatures: vec![good.clone(), unnamed], ..e.clone() };
        assert!(t.verify(&signer.key_id, check).is_ok());
    }
}
