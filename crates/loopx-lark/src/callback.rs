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
use serde::Deserialize;
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
        let outer: Sealed = crate::answers::from_bytes(body)
            .map_err(|e| Refusal::Undecryptable(format!("not the JSON of a callback: {e}")))?;
        let plain = decrypt(&self.encrypt_key, &outer.encrypt).map_err(Refusal::Undecryptable)?;
        let event: Value = serde_json::from_slice(&plain)
            .map_err(|e| Refusal::Undecryptable(format!("not JSON inside: {e}")))?;
        self.read(event)
    }

    fn read(&self, event: Value) -> Result<Callback, Refusal> {
        let inside: Inside = crate::answers::from_value(&event).map_err(Refusal::Unknown)?;
        if inside.kind.as_deref() == Some("url_verification") {
            if !self.token_is(inside.token.as_deref()) {
                return Err(Refusal::BadToken);
            }
            return Ok(Callback::Challenge(inside.challenge.unwrap_or_default()));
        }
        let header = inside.header.unwrap_or_default();
        if !self.token_is(header.token.as_deref()) {
            return Err(Refusal::BadToken);
        }
        let kind = header.event_type.unwrap_or_default();
        if kind == crate::changes::EVENT_TYPE {
            return Ok(Callback::RecordChanged(event));
        }
        if kind != "card.action.trigger" {
            return Err(Refusal::Unknown(format!("event type `{kind}`")));
        }
        let press: Press = crate::answers::from_value(&event)
            .map_err(|e| Refusal::Unknown(format!("a button press: {e}")))?;
        let e = press.event;
        if !self.answerers.contains(&e.operator.open_id) {
            return Err(Refusal::NotAnAnswerer(format!("`{}`", e.operator.open_id)));
        }
        let (Some(gate), Some(option)) = (e.action.value.gate, e.action.value.option) else {
            return Err(Refusal::Unknown(
                "a button without a gate and an option".into(),
            ));
        };
        Ok(Callback::Press {
            open_id: e.operator.open_id,
            gate,
            option,
            message_id: e.context.and_then(|c| c.open_message_id),
        })
    }

    fn token_is(&self, token: Option<&str>) -> bool {
        token.is_some_and(|t| same(t.as_bytes(), self.verification_token.as_bytes()))
    }
}

/// The body Lark posts: `{"encrypt": …}`.
#[derive(Deserialize)]
struct Sealed {
    encrypt: String,
}

/// A callback, decrypted: the URL check (`{type: "url_verification", token, challenge}`) or
/// an event of schema 2.0 (`{schema, header: {token, event_type, …}, event}`), as
/// `docs/lark.md` cites them.
#[derive(Deserialize)]
struct Inside {
    #[serde(rename = "type")]
    kind: Option<String>,
    token: Option<String>,
    challenge: Option<String>,
    header: Option<Header>,
}

#[derive(Default, Deserialize)]
struct Header {
    token: Option<String>,
    event_type: Option<String>,
}

/// `card.action.trigger`: `event: {operator: {open_id}, action: {value}, context:
/// {open_message_id}}`; the value is the one loopx put on the button ([`crate::cards`]).
#[derive(Deserialize)]
struct Press {
    event: PressEvent,
}

#[derive(Deserialize)]
struct PressEvent {
    operator: Operator,
    action: Action,
    context: Option<Context>,
}

#[derive(Deserialize)]
struct Operator {
    open_id: String,
}

#[derive(Deserialize)]
struct Action {
    value: Button,
}

#[derive(Deserialize)]
struct Button {
    gate: Option<String>,
    option: Option<u32>,
}

#[derive(Deserialize)]
struct Context {
    open_message_id: Option<String>,
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

    fn press(value: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "schema": "2.0",
            "header": {"event_id": "e1", "token": "tok", "create_time": "1700000000000",
                       "event_type": "card.action.trigger", "tenant_key": "k", "app_id": "cli_a"},
            "event": {"operator": {"tenant_key": "k", "user_id": "u1", "open_id": "ou_a"},
                      "token": "c-1", "action": {"value": value, "tag": "button"},
                      "host": "im_message",
                      "context": {"open_message_id": "om_1", "open_chat_id": "oc_1"}},
        })
    }

    /// A press as Lark's "Card callback communication" page shows it, and one whose button
    /// value is not loopx's: the refusal names the field and what came.
    #[test]
    fn a_press_is_read_as_documented_and_a_mistyped_value_is_named() {
        let v = Verifier::new("tok", "key", &["ou_a".to_owned()]);
        let read = v.read(press(serde_json::json!({"gate": "q3", "option": 2})));
        assert_eq!(
            read,
            Ok(Callback::Press {
                open_id: "ou_a".into(),
                gate: "q3".into(),
                option: 2,
                message_id: Some("om_1".into()),
            })
        );
        match v.read(press(serde_json::json!({"gate": "q3", "option": "2"}))) {
            Err(Refusal::Unknown(why)) => assert!(
                why.contains(r#"event.action.value.option: invalid type: string "2""#),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        let challenge =
            serde_json::json!({"type": "url_verification", "token": "tok", "challenge": "c"});
        assert_eq!(v.read(challenge), Ok(Callback::Challenge("c".into())));
    }
}
