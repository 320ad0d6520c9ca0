//! Lark's record-change events, as the scripted server sends them: once the app subscribed to
//! the Base (`POST drive/v1/files/:file_token/subscribe?file_type=bitable`), every change a
//! person makes ([`LarkServer::edit_as`], [`LarkServer::add_as`]) is posted to the callback URL
//! of [`LarkServer::send_events_to`], signed and sealed as a card press is. Changes the app
//! makes through the API send none. [`LarkServer::hold_events`] keeps them back (Lark slow, or
//! its delivery failing) until [`LarkServer::release_events`].

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use crate::presser::{Presser, RecordChange, Signing};
use crate::{LarkServer, State};

/// Where events go, and those held back.
#[derive(Debug, Default)]
pub struct Events {
    /// The callback URL and the app's secrets.
    to: Option<(String, Presser)>,
    /// `Some`: events are held, not sent.
    held: Option<Vec<RecordChange>>,
    /// Each event sent: the listener's status (0: no answer).
    pub answers: Vec<u16>,
}

impl LarkServer {
    /// Record-change events go to `url` (`http://127.0.0.1:PORT/lark/callback`), sealed and
    /// signed with `lark`'s secrets.
    pub fn send_events_to(&self, url: &str, lark: Presser) {
        self.state().events.to = Some((url.to_owned(), lark));
    }

    /// Events are held back from now on, until [`LarkServer::release_events`].
    pub fn hold_events(&self) {
        self.state().events.held.get_or_insert_with(Vec::new);
    }

    /// Sends the events held back, in order, and sends each one as it comes from now on.
    pub fn release_events(&self) {
        let held = self.state().events.held.take().unwrap_or_default();
        self.send(held);
    }

    /// The events the listener was sent, and its answers' statuses.
    pub fn event_answers(&self) -> Vec<u16> {
        self.state().events.answers.clone()
    }

    /// Sends `changes` (or holds them back), outside the state's lock: loopx's listener
    /// answers while its board may be reading the table.
    pub(crate) fn send(&self, changes: Vec<RecordChange>) {
        let (to, changes) = {
            let mut state = self.state();
            match &mut state.events.held {
                Some(held) => {
                    held.extend(changes);
                    return;
                }
                None => (state.events.to.clone(), changes),
            }
        };
        let Some((url, lark)) = to else {
            return;
        };
        for change in changes {
            let body = lark.seal(&lark.record_event(&change), iv());
            let now = now_ms() / 1000;
            // Nothing listening, or the connection cut: Lark's delivery failed (status 0).
            let (status, _) = lark.post(&url, &body, now, &change.event_id, Signing::Good);
            self.state().events.answers.push(status);
        }
    }
}

/// The event of `open_id` changing `fields` of record `record` (`action`), as Lark tells it,
/// when the app subscribed to the Base; the record must exist.
pub(crate) fn change_of(
    state: &mut State,
    open_id: &str,
    record: &str,
    action: &str,
    before: &Map<String, Value>,
    fields: &Map<String, Value>,
) -> Option<RecordChange> {
    if !state.subscribed.contains(&state.app_token) {
        return None;
    }
    let (table_id, table) = state.tables.iter().next()?;
    let cells = |values: &Map<String, Value>, names: &mut dyn Iterator<Item = &String>| {
        names
            .filter_map(|name| {
                let field = table.fields.iter().find(|f| &f.name == name)?;
                let value = values.get(name).cloned().unwrap_or(Value::Null);
                Some((field.id.clone(), as_event_value(field.kind, value)))
            })
            .collect::<Vec<_>>()
    };
    let after = cells(fields, &mut fields.keys());
    let before = cells(before, &mut fields.keys());
    let (table_id, base) = (table_id.clone(), state.app_token.clone());
    Some(RecordChange {
        event_id: state.id("ev_"),
        at_ms: now_ms(),
        open_id: open_id.to_owned(),
        base,
        table: table_id,
        record: record.to_owned(),
        action: action.to_owned(),
        before,
        after,
    })
}

/// A text cell comes in an event as its segments; other cells as their value.
fn as_event_value(kind: i64, value: Value) -> Value {
    match (kind, value) {
        (1, Value::String(s)) => json!([{"type": "text", "text": s}]),
        (_, value) => value,
    }
}

/// The subscription call: Lark sends the Base's record changes from now on.
pub(crate) fn subscribe(
    state: &mut State,
    token: &str,
    target: &str,
) -> loopx_model_server::http::Response {
    if !target.contains("file_type=bitable") {
        return crate::refuse(1_061_002, "params error: file_type");
    }
    if token != state.app_token {
        return crate::refuse(1_061_004, "forbidden: not a file the app can read");
    }
    state.subscribed.insert(token.to_owned());
    crate::ok(json!({}))
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A fresh IV for each event.
fn iv() -> [u8; 16] {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let mut iv = [0u8; 16];
    iv[..8].copy_from_slice(&n.to_le_bytes());
    iv
}
