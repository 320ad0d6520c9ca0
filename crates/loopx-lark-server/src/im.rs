//! The IM side of the scripted server: the cards the app sends to a chat and changes.

use serde_json::{Value, json};

use loopx_model_server::http::Response;

use crate::{State, ok, refuse};

/// Messages the app sent (IM), by id: the card as its last content.
pub(crate) fn im(
    state: &mut State,
    method: &str,
    parts: &[&str],
    body: &Value,
    target: &str,
) -> Response {
    match (method, parts) {
        ("POST", []) => {
            if !target.contains("receive_id_type=chat_id") {
                return refuse(230_001, "receive_id_type must be chat_id here");
            }
            if body["msg_type"] != "interactive" {
                return refuse(230_001, "only interactive cards in the scripted server");
            }
            let Some(card) = body["content"]
                .as_str()
                .and_then(|c| serde_json::from_str::<Value>(c).ok())
            else {
                return refuse(230_099, "content is not a card's JSON as a string");
            };
            let chat = body["receive_id"].as_str().unwrap_or_default().to_owned();
            let id = state.id("om_");
            state.messages.insert(
                id.clone(),
                Message {
                    chat,
                    card,
                    patches: 0,
                },
            );
            ok(json!({"message_id": id, "msg_type": "interactive"}))
        }
        ("PATCH", [id]) => {
            let Some(card) = body["content"]
                .as_str()
                .and_then(|c| serde_json::from_str::<Value>(c).ok())
            else {
                return refuse(230_099, "content is not a card's JSON as a string");
            };
            match state.messages.get_mut(*id) {
                Some(message) => {
                    message.card = card;
                    message.patches += 1;
                    ok(json!({}))
                }
                None => refuse(230_011, "message not found"),
            }
        }
        _ => refuse(404, "no such endpoint in the scripted server"),
    }
}

/// A message the app sent to a chat.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub chat: String,
    pub card: Value,
    /// Times the app changed it.
    pub patches: u32,
}

impl State {
    /// The card asking gate `gate` (its buttons name it), and its message id.
    pub fn card_of(&self, gate: &str) -> Option<(String, Value)> {
        self.messages.iter().find_map(|(id, m)| {
            let text = m.card.to_string();
            let asks = text.contains(&format!("({gate})"));
            asks.then(|| (id.clone(), m.card.clone()))
        })
    }
}
