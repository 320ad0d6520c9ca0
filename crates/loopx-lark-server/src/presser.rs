//! Lark's side of a callback to loopx's listener: a card's button press, or a record-change
//! event, signed and encrypted as Lark does (`docs/lark.md`), or tampered with.

use std::net::TcpStream;

use serde_json::{Value, json};

/// Lark's side of a card callback: what it sends when a person presses a button, signed and
/// encrypted as Lark does (`docs/lark.md`), to loopx's listener.
#[derive(Debug, Clone)]
pub struct Presser {
    pub verification_token: String,
    pub encrypt_key: String,
}

/// One change a person made to a record, as a record-change event tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordChange {
    pub event_id: String,
    /// The event's `create_time`, Unix ms.
    pub at_ms: u64,
    pub open_id: String,
    /// The Base's token, the table's and the record's ids.
    pub base: String,
    pub table: String,
    pub record: String,
    /// `record_edited` or `record_added`.
    pub action: String,
    /// The changed cells before and after: (field id, value).
    pub before: Vec<(String, Value)>,
    pub after: Vec<(String, Value)>,
}

/// How a press is sent: as Lark would, or tampered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signing {
    Good,
    /// No signature headers.
    None,
    /// A signature made with another key.
    Wrong,
}

impl Presser {
    /// The `card.action.trigger` event (schema 2.0) of `open_id` pressing the button whose
    /// value is `value` on message `message_id`.
    pub fn button_event(&self, open_id: &str, message_id: &str, value: &Value) -> Value {
        json!({
            "schema": "2.0",
            "header": {
                "event_id": format!("ev_{message_id}_{open_id}"),
                "token": self.verification_token,
                "create_time": "1700000000000000",
                "event_type": "card.action.trigger",
                "tenant_key": "tk_scripted",
                "app_id": "cli_scripted",
            },
            "event": {
                "operator": {"open_id": open_id, "user_id": "u_scripted", "union_id": "on_scripted"},
                "token": "c-scripted",
                "action": {"value": value, "tag": "button"},
                "host": "im_message",
                "context": {"open_message_id": message_id, "open_chat_id": "oc_scripted"},
            },
        })
    }

    /// The `drive.file.bitable_record_changed_v1` event (schema 2.0) of `change`, each value
    /// JSON-encoded as a string as Lark sends it.
    pub fn record_event(&self, change: &RecordChange) -> Value {
        let cells = |cells: &[(String, Value)]| -> Vec<Value> {
            cells
                .iter()
                .map(|(field, value)| json!({"field_id": field, "field_value": value.to_string()}))
                .collect()
        };
        json!({
            "schema": "2.0",
            "header": {
                "event_id": change.event_id,
                "token": self.verification_token,
                "create_time": change.at_ms.to_string(),
                "event_type": "drive.file.bitable_record_changed_v1",
                "tenant_key": "tk_scripted",
                "app_id": "cli_scripted",
            },
            "event": {
                "file_token": change.base,
                "file_type": "bitable",
                "table_id": change.table,
                "revision": 1,
                "operator_id": {"open_id": change.open_id, "union_id": "on_scripted", "user_id": "u_scripted"},
                "action_list": [{
                    "record_id": change.record,
                    "action": change.action,
                    "before_value": cells(&change.before),
                    "after_value": cells(&change.after),
                }],
                "subscriber_id_list": [],
                "update_time": change.at_ms / 1000,
            },
        })
    }

    /// `{"encrypt": base64(iv ‖ AES-256-CBC(event))}` with the key SHA-256(encrypt_key).
    pub fn seal(&self, event: &Value, iv: [u8; 16]) -> Vec<u8> {
        use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
        use base64::Engine;
        use sha2::Digest;
        let key = sha2::Sha256::digest(self.encrypt_key.as_bytes());
        let cipher = cbc::Encryptor::<aes::Aes256>::new_from_slices(&key, &iv)
            .expect("a 32-byte key and a 16-byte IV")
            .encrypt_padded_vec_mut::<Pkcs7>(event.to_string().as_bytes());
        let mut sealed = iv.to_vec();
        sealed.extend(cipher);
        json!({"encrypt": base64::engine::general_purpose::STANDARD.encode(sealed)})
            .to_string()
            .into_bytes()
    }

    /// POSTs `body` to `url` (`http://127.0.0.1:PORT/lark/callback`) with the signature headers
    /// for `timestamp` (Unix seconds) and `nonce`; the status and the answer's JSON, or status 0
    /// when no answer came (nothing listens, the connection was cut).
    pub fn post(
        &self,
        url: &str,
        body: &[u8],
        timestamp: u64,
        nonce: &str,
        signing: Signing,
    ) -> (u16, Value) {
        use sha2::Digest;
        let key = match signing {
            Signing::Wrong => format!("{}-not", self.encrypt_key),
            _ => self.encrypt_key.clone(),
        };
        let mut hasher = sha2::Sha256::new();
        hasher.update(timestamp.to_string().as_bytes());
        hasher.update(nonce.as_bytes());
        hasher.update(key.as_bytes());
        hasher.update(body);
        let signature = hex::encode(hasher.finalize());
        let headers = match signing {
            Signing::None => String::new(),
            _ => format!(
                "X-Lark-Request-Timestamp: {timestamp}\r\nX-Lark-Request-Nonce: {nonce}\r\nX-Lark-Signature: {signature}\r\n"
            ),
        };
        exchange(url, &headers, body).unwrap_or((0, Value::Null))
    }
}

/// One request to loopx's listener with `headers` besides the usual ones: the status and the
/// answer's JSON.
fn exchange(url: &str, headers: &str, body: &[u8]) -> std::io::Result<(u16, Value)> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut stream = TcpStream::connect(host)?;
    let head = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let json = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    Ok((status, json))
}
