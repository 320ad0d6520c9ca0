//! `codex exec --json`: one JSON event per line (`thread.started`, `item.*`, `turn.*`, `error`).

use jiff::Timestamp;
use serde_json::Value;

use super::json::{Lookup, str_at, u64_at};
use crate::adapter::{SignalRule, SignalScope};
use crate::event::{AgentEvent, Finish, FinishKind, TokenUsage, UsageScope};
use crate::signals::{bounded, detect, is_transient_text, retry_from_text};

/// Item types that are the agent acting on the world.
const TOOL_ITEMS: [&str; 4] = [
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "web_search",
];

/// Events for one Codex event; `None` for an unknown event type.
pub(super) fn event(v: &Value, rules: &[SignalRule], now: Timestamp) -> Option<Vec<AgentEvent>> {
    let events = match str_at(v, "/type")? {
        "thread.started" => str_at(v, "/thread_id")
            .map(|id| AgentEvent::Session {
                id: id.to_owned(),
                model: None,
            })
            .into_iter()
            .collect(),
        "turn.started" | "item.started" | "item.updated" => Vec::new(),
        "item.completed" => item(v),
        "turn.completed" => {
            let u = |p: &str| u64_at(v, p).unwrap_or(0);
            let cached = u("/usage/cached_input_tokens");
            let usage = TokenUsage {
                // OpenAI counts cached tokens inside `input_tokens`.
                input: u("/usage/input_tokens").saturating_sub(cached),
                output: u("/usage/output_tokens"),
                cached_input: cached,
            };
            vec![
                AgentEvent::Usage {
                    usage,
                    scope: UsageScope::Turn,
                },
                AgentEvent::Finished(Finish {
                    kind: FinishKind::Success,
                    api_status: None,
                    text: None,
                }),
            ]
        }
        "turn.failed" => {
            let message = str_at(v, "/error/message").unwrap_or("turn failed");
            let mut out = error(message, rules, now);
            out.push(AgentEvent::Finished(Finish {
                kind: FinishKind::Error,
                api_status: None,
                text: Some(bounded(message)),
            }));
            out
        }
        "error" => error(str_at(v, "/message").unwrap_or("error"), rules, now),
        _ => return None,
    };
    Some(events)
}

fn item(v: &Value) -> Vec<AgentEvent> {
    let Some(item) = v.at("/item") else {
        return Vec::new();
    };
    match str_at(item, "/type") {
        Some("agent_message") => str_at(item, "/text")
            .map(|t| AgentEvent::Message { text: t.to_owned() })
            .into_iter()
            .collect(),
        Some(kind) if TOOL_ITEMS.contains(&kind) => vec![AgentEvent::ToolCall {
            name: kind.to_owned(),
        }],
        Some("error") => {
            let message = str_at(item, "/message").unwrap_or("error item");
            vec![AgentEvent::Error {
                message: bounded(message),
                transient: is_transient_text(message),
            }]
        }
        _ => Vec::new(),
    }
}

/// An `error` or `turn.failed` message: a reconnect is a retry; otherwise limit, auth and
/// context wording; otherwise a plain error.
fn error(message: &str, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    if let Some(retry) = retry_from_text(message) {
        return vec![retry];
    }
    let found = detect(message, now, rules, SignalScope::Final);
    if !found.is_empty() {
        return found;
    }
    vec![AgentEvent::Error {
        message: bounded(message),
        transient: is_transient_text(message),
    }]
}
