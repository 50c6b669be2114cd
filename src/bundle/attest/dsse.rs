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

    /// Whether a signature with `keyid` verifies over the PAE with `verify` (a raw signature
    /// check); the error says which key ids the envelope holds.
    pub fn verify(&self, keyid: &str, verify: impl Fn(&[u8], &[u8]) -> Result<(), String>) -> Result<(), String> {
        let pae = pae(&self.payload_type, &self.payload()?);
        let Some(s) = self.signatures.iter().find(|s| s.keyid == keyid) else {
            let ids: Vec<&str> = self.signatures.iter().map(|s| s.keyid.as_str()).collect();
            return Err(format!("signatures: none by key {keyid} (the envelope names {ids:?})"));
        };
        verify(&pae, &unb64(&s.sig, "signatures[].sig")?).map_err(|e| format!("signatures[keyid {keyid}]: {e}"))
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
    }
}
