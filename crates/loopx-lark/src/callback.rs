//! A card callback from Lark, opened and checked before anything it says is believed.
//!
//! Lark signs a callback when the app has an Encrypt Key: `X-Lark-Signature` is the hex
//! SHA-256 of `timestamp + nonce + encrypt_key + body` (the raw body as sent), and the body is
//! `{"encrypt": base64(iv ‖ AES-256-CBC(json))}` with the key SHA-256(encrypt_key) and PKCS#7
//! padding. loopx requires both the Encrypt Key and the Verification Token: without them a
//! press could come from anyone who finds the address. In order, a request must:
//!
//! 1. carry the three headers, with a timestamp within [`MAX_SKEW`] of now;
//! 2. match the signature (compared in constant time);
//! 3. not repeat a nonce seen within the window (a replay);
//! 4. decrypt, and carry the Verification Token (`header.token`, or `token` for the URL
//!    check);
//! 5. for a button press: come from an open_id in `answerers`, and name a gate and an option.
//!
//! Whether the answer is then taken is the kernel's rule, the same as for the CLI. A record-change
//! event (`drive.file.bitable_record_changed_v1`) passes the same checks 1–4 and is handed on
//! whole: it says who changed the board, whoever that is ([`crate::changes`]).

use std::collections::HashMap;
use std::time::Duration;

use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How far a callback's timestamp may be from now, either way.
pub const MAX_SKEW: Duration = Duration::from_secs(300);

/// What a checked callback asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callback {
    /// Lark checks the callback URL: answer `{"challenge": …}`.
    Challenge(String),
    /// A person pressed an option's button on a question's card.
    Press {
        open_id: String,
        gate: String,
        option: u32,
        /// The card's message, to update with the answer.
        message_id: Option<String>,
    },
    /// Lark says someone changed records of a Base the app subscribed to: the event, opened.
    RecordChanged(Value),
}

/// Why a callback was refused; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("not signed: the X-Lark-Request-Timestamp, -Nonce or -Signature header is missing")]
    Unsigned,
    #[error("the timestamp is more than 5 minutes from now")]
    Stale,
    #[error("the signature does not match")]
    BadSignature,
    #[error("the nonce was seen already: a replay")]
    Replayed,
    #[error("the body does not decrypt with the Encrypt Key: {0}")]
    Undecryptable(String),
    #[error("the Verification Token does not match")]
    BadToken,
    #[error("{0} is not one of [lark.questions] answerers")]
    NotAnAnswerer(String),
    #[error("not a callback loopx understands: {0}")]
    Unknown(String),
}

/// The secrets and rules a callback is checked against.
pub struct Verifier {
    verification_token: String,
    encrypt_key: String,
    answerers: Vec<String>,
    /// Nonces seen, with their timestamps, pruned past the window.
    seen: HashMap<String, u64>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("answerers", &self.answerers)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    pub fn new(verification_token: &str, encrypt_key: &str, answerers: &[String]) -> Verifier {
        Verifier {
            verification_token: verification_token.to_owned(),
            encrypt_key: encrypt_key.to_owned(),
            answerers: answerers.to_vec(),
            seen: HashMap::new(),
        }
    }

    /// Opens a request: `header` gives a header's value by lowercase name, `body` is the raw
    /// body, `now_secs` the wall clock in Unix seconds.
    pub fn open(
        &mut self,
        header: impl Fn(&str) -> Option<String>,
        body: &[u8],
        now_secs: u64,
    ) -> Result<Callback, Refusal> {
        let (Some(timestamp), Some(nonce), Some(signature)) = (
            header("x-lark-request-timestamp"),
            header("x-lark-request-nonce"),
            header("x-lark-signature"),
        ) else {
            return Err(Refusal::Unsigned);
        };
        let at: u64 = timestamp.trim().parse().map_err(|_| Refusal::Stale)?;
        if at.abs_diff(now_secs) > MAX_SKEW.as_secs() {
            return Err(Refusal::Stale);
        }
        let expected = signature_of(&timestamp, &nonce, &self.encrypt_key, body);
        if !same(
            expected.as_bytes(),
            signature.trim().to_ascii_lowercase().as_bytes(),
        ) {
            return Err(Refusal::BadSignature);
        }
        self.seen
            .retain(|_, t| t.abs_diff(now_secs) <= 2 * MAX_SKEW.as_secs());
        if self.seen.insert(nonce, at).is_some() {
            return Err(Refusal::Replayed);
        }
        let outer: Value = serde_json::from_slice(body)
            .map_err(|e| Refusal::Undecryptable(format!("not JSON: {e}")))?;
        let sealed = outer["encrypt"]
            .as_str()
            .ok_or_else(|| Refusal::Undecryptable("no `encrypt` field".into()))?;
        let plain = decrypt(&self.encrypt_key, sealed).map_err(Refusal::Undecryptable)?;
        let event: Value = serde_json::from_slice(&plain)
            .map_err(|e| Refusal::Undecryptable(format!("not JSON inside: {e}")))?;
        self.read(&event)
    }

    fn read(&self, event: &Value) -> Result<Callback, Refusal> {
        if event["type"] == "url_verification" {
            if !self.token_is(&event["token"]) {
                return Err(Refusal::BadToken);
            }
            let challenge = event["challenge"].as_str().unwrap_or_default();
            return Ok(Callback::Challenge(challenge.to_owned()));
        }
        if !self.token_is(&event["header"]["token"]) {
            return Err(Refusal::BadToken);
        }
        let kind = event["header"]["event_type"].as_str().unwrap_or_default();
        if kind == crate::changes::EVENT_TYPE {
            return Ok(Callback::RecordChanged(event.clone()));
        }
        if kind != "card.action.trigger" {
            return Err(Refusal::Unknown(format!("event type `{kind}`")));
        }
        let e = &event["event"];
        let open_id = e["operator"]["open_id"].as_str().unwrap_or_default();
        if !self.answerers.iter().any(|a| a == open_id) {
            return Err(Refusal::NotAnAnswerer(format!("`{open_id}`")));
        }
        let value = &e["action"]["value"];
        let (Some(gate), Some(option)) = (value["gate"].as_str(), value["option"].as_u64()) else {
            return Err(Refusal::Unknown(
                "a button without a gate and an option".into(),
            ));
        };
        Ok(Callback::Press {
            open_id: open_id.to_owned(),
            gate: gate.to_owned(),
            option: u32::try_from(option)
                .map_err(|_| Refusal::Unknown(format!("option {option}")))?,
            message_id: e["context"]["open_message_id"].as_str().map(str::to_owned),
        })
    }

    fn token_is(&self, token: &Value) -> bool {
        token
            .as_str()
            .is_some_and(|t| same(t.as_bytes(), self.verification_token.as_bytes()))
    }
}

/// `X-Lark-Signature`: hex SHA-256 of timestamp, nonce, Encrypt Key and the raw body.
pub fn signature_of(timestamp: &str, nonce: &str, encrypt_key: &str, body: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(timestamp.as_bytes());
    hasher.update(nonce.as_bytes());
    hasher.update(encrypt_key.as_bytes());
    hasher.update(body);
    hex::encode(hasher.finalize())
}

/// The plaintext of an `encrypt` field: base64 of a 16-byte IV and AES-256-CBC with the key
/// SHA-256(encrypt_key), PKCS#7 padded.
pub fn decrypt(encrypt_key: &str, sealed: &str) -> Result<Vec<u8>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(sealed.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    if bytes.len() < 32 || bytes.len() % 16 != 0 {
        return Err(format!("{} bytes is no IV and whole blocks", bytes.len()));
    }
    let key = Sha256::digest(encrypt_key.as_bytes());
    let (iv, cipher) = bytes.split_at(16);
    cbc::Decryptor::<aes::Aes256>::new_from_slices(&key, iv)
        .map_err(|e| e.to_string())?
        .decrypt_padded_vec_mut::<Pkcs7>(cipher)
        .map_err(|_| "the padding is wrong (another key?)".to_owned())
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of Lark's documentation for decrypting an event ("Encrypt Key" `test key`,
    /// plaintext `hello world`), so that loopx reads what Lark really sends rather than only
    /// what our own server encrypts.
    #[test]
    fn the_documented_example_decrypts() {
        let plain =
            decrypt("test key", "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=").expect("decrypts");
        assert_eq!(plain, b"hello world");
        assert!(
            decrypt(
                "another key",
                "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="
            )
            .is_err()
        );
    }

    #[test]
    fn the_signature_covers_every_part() {
        let base = signature_of("1700000000", "n1", "key", b"{}");
        assert_eq!(base.len(), 64);
        assert_ne!(base, signature_of("1700000001", "n1", "key", b"{}"));
        assert_ne!(base, signature_of("1700000000", "n2", "key", b"{}"));
        assert_ne!(base, signature_of("1700000000", "n1", "kez", b"{}"));
        assert_ne!(base, signature_of("1700000000", "n1", "key", b"{ }"));
    }

    #[test]
    fn unsigned_and_stale_requests_are_refused_before_anything_is_read() {
        let mut v = Verifier::new("tok", "key", &["ou_a".to_owned()]);
        assert_eq!(
            v.open(|_| None, b"{}", 1_700_000_000),
            Err(Refusal::Unsigned)
        );
        let headers = |name: &str| match name {
            "x-lark-request-timestamp" => Some("1700000000".to_owned()),
            "x-lark-request-nonce" => Some("n".to_owned()),
            "x-lark-signature" => Some(signature_of("1700000000", "n", "key", b"{}")),
            _ => None,
        };
        assert_eq!(v.open(headers, b"{}", 1_700_000_301), Err(Refusal::Stale));
    }
}
