//! `cursor-agent -p --output-format stream-json`: one JSON event per line, in the shape Cursor
//! documents (cursor.com/docs/cli/reference/output-format): `system`/`init` with the session
//! and model, `user` (the prompt echoed: never the agent's words), one `assistant` line per
//! message between tool calls, `tool_call` `started`/`completed` with the call under a
//! `<name>ToolCall` key, and a terminal `result`. On failure the stream ends early and the
//! CLI writes its error to stderr, which the PTY merges: those lines reach the adapter's line
//! signals. Cursor does not document usage or cost in the stream; a `usage` object on the
//! result (camelCase, as later versions print it) is read when present.

use jiff::Timestamp;
use serde_json::Value;

use super::json::{Lookup, str_at, u64_at};
use crate::adapter::{SignalRule, SignalScope};
use crate::event::{AgentEvent, Finish, FinishKind, TokenUsage, UsageScope};
use crate::signals::detect;

/// Events for one Cursor stream-json event; `None` for an unknown event type.
pub(super) fn event(v: &Value, rules: &[SignalRule], now: Timestamp) -> Option<Vec<AgentEvent>> {
    let events = match str_at(v, "/type")? {
        "system" => str_at(v, "/session_id")
            .filter(|_| str_at(v, "/subtype") == Some("init"))
            .map(|id| AgentEvent::Session {
                id: id.to_owned(),
                model: str_at(v, "/model").map(str::to_owned),
            })
            .into_iter()
            .collect(),
        // The prompt, echoed: loopx's own words, never read for signals.
        "user" => Vec::new(),
        "assistant" => assistant(v),
        // Only the start is counted: the result is tool output, which can say anything.
        "tool_call" => match str_at(v, "/subtype") {
            Some("started") => vec![AgentEvent::ToolCall { name: tool_name(v) }],
            _ => Vec::new(),
        },
        "result" => result(v, rules, now),
        _ => return None,
    };
    Some(events)
}

fn assistant(v: &Value) -> Vec<AgentEvent> {
    // One line per message: its blocks are pieces of one text.
    let text: String = super::claude::text_blocks(v).collect();
    if text.is_empty() {
        return Vec::new();
    }
    vec![AgentEvent::Message { text }]
}

/// `{"tool_call":{"writeToolCall":{…}}}` → `write`; a function call names itself.
fn tool_name(v: &Value) -> String {
    let Some(call) = v.at("/tool_call").and_then(Value::as_object) else {
        return "unknown".to_owned();
    };
    if let Some(name) = call
        .get("function")
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
    {
        return name.to_owned();
    }
    call.keys()
        .next()
        .map(|key| key.strip_suffix("ToolCall").unwrap_or(key).to_owned())
        .unwrap_or_else(|| "unknown".to_owned())
}

fn result(v: &Value, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    if let Some(id) = str_at(v, "/session_id") {
        out.push(AgentEvent::Session {
            id: id.to_owned(),
            model: None,
        });
    }
    if let Some(usage) = v.at("/usage").filter(|u| u.is_object()) {
        let n = |p: &str| u64_at(usage, p).unwrap_or(0);
        out.push(AgentEvent::Usage {
            usage: TokenUsage {
                input: n("/inputTokens").saturating_add(n("/cacheWriteTokens")),
                output: n("/outputTokens"),
                cached_input: n("/cacheReadTokens"),
            },
            scope: UsageScope::Total,
        });
    }
    let is_error = v.at("/is_error").and_then(Value::as_bool).unwrap_or(false);
    let subtype = str_at(v, "/subtype").unwrap_or_default();
    let kind = if is_error || subtype != "success" {
        FinishKind::Error
    } else {
        FinishKind::Success
    };
    let text = str_at(v, "/result").map(str::to_owned);
    if kind == FinishKind::Error {
        out.extend(detect(
            text.as_deref().unwrap_or_default(),
            now,
            rules,
            SignalScope::Final,
        ));
    }
    out.push(AgentEvent::Finished(Finish {
        kind,
        api_status: None,
        text,
    }));
    out
}
