//! Gemini CLI: `--output-format stream-json` (one event per line) and `--output-format json`
//! (one pretty-printed document; also the raw Code Assist 429 body).

use jiff::Timestamp;
use serde_json::Value;

use super::json::{Lookup, str_at, timestamp_or, u64_at};
use crate::adapter::{SignalRule, SignalScope};
use crate::event::{
    AgentEvent, Finish, FinishKind, LimitSignal, LimitStatus, TokenUsage, UsageScope,
};
use crate::signals::{bounded, detect, is_transient_text};

/// Events for one stream-json event; `None` for an unknown event type. `message` holds the
/// assistant message being streamed in deltas.
pub(super) fn event(
    v: &Value,
    message: &mut String,
    rules: &[SignalRule],
    now: Timestamp,
) -> Option<Vec<AgentEvent>> {
    let now = timestamp_or(v, now);
    let events = match str_at(v, "/type")? {
        "init" => str_at(v, "/session_id")
            .map(|id| AgentEvent::Session {
                id: id.to_owned(),
                model: str_at(v, "/model").map(str::to_owned),
            })
            .into_iter()
            .collect(),
        "message" if str_at(v, "/role") == Some("assistant") => {
            let content = str_at(v, "/content").unwrap_or_default();
            if v.at("/delta").and_then(Value::as_bool) != Some(true) {
                message.clear();
            }
            message.push_str(content);
            vec![AgentEvent::Message {
                text: message.clone(),
            }]
        }
        "message" => {
            message.clear();
            Vec::new()
        }
        "tool_use" => {
            message.clear();
            vec![AgentEvent::ToolCall {
                name: str_at(v, "/tool_name").unwrap_or("unknown").to_owned(),
            }]
        }
        "tool_result" => Vec::new(),
        "error" => error_text(str_at(v, "/message").unwrap_or("error"), rules, now),
        "result" => result(v, rules, now),
        _ => {
            // A `--output-format json` document on one line has no `type`.
            return (v.get("session_id").is_some() || v.get("error").is_some())
                .then(|| json_document(v, rules, now));
        }
    };
    Some(events)
}

fn result(v: &Value, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    if let Some(stats) = v.at("/stats") {
        out.push(AgentEvent::Usage {
            usage: usage(stats),
            scope: UsageScope::Total,
        });
    }
    if str_at(v, "/status") == Some("success") {
        out.push(AgentEvent::Finished(Finish {
            kind: FinishKind::Success,
            api_status: None,
            text: None,
        }));
        return out;
    }
    let text = str_at(v, "/error/message").unwrap_or("error");
    out.extend(error_text(text, rules, now));
    out.push(AgentEvent::Finished(Finish {
        kind: FinishKind::Error,
        api_status: None,
        text: Some(bounded(text)),
    }));
    out
}

fn error_text(text: &str, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    let found = detect(text, now, rules, SignalScope::Final);
    if found.is_empty() {
        vec![AgentEvent::Error {
            message: bounded(text),
            transient: is_transient_text(text),
        }]
    } else {
        found
    }
}

/// Token stats: `input` is the uncached part (`input_tokens` counts cached tokens too).
fn usage(stats: &Value) -> TokenUsage {
    let cached = u64_at(stats, "/cached").unwrap_or(0);
    let input_total = u64_at(stats, "/input_tokens").unwrap_or(0);
    TokenUsage {
        input: u64_at(stats, "/input").unwrap_or_else(|| input_total.saturating_sub(cached)),
        output: u64_at(stats, "/output_tokens").unwrap_or(0),
        cached_input: cached,
    }
}

/// A whole `--output-format json` document (or a raw API error body).
pub(super) fn document(text: &str, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => json_document(&v, rules, now),
        Err(_) => Vec::new(),
    }
}

fn json_document(v: &Value, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    if let Some(id) = str_at(v, "/session_id") {
        out.push(AgentEvent::Session {
            id: id.to_owned(),
            model: None,
        });
    }
    if let Some(response) = str_at(v, "/response") {
        out.push(AgentEvent::Message {
            text: response.to_owned(),
        });
    }
    let Some(error) = v.get("error").filter(|e| e.is_object()) else {
        if v.get("response").is_some() {
            out.push(AgentEvent::Finished(Finish {
                kind: FinishKind::Success,
                api_status: None,
                text: None,
            }));
        }
        return out;
    };
    let message = str_at(error, "/message").unwrap_or("error");
    let code = u64_at(error, "/code").and_then(|c| u16::try_from(c).ok());
    let mut found = error_text(message, rules, now);
    // The raw Code Assist body carries the exact reset instant; prefer it to the prose.
    if let Some(exact) = quota_reset(error) {
        found.retain(|e| !matches!(e, AgentEvent::Limit(_) | AgentEvent::Error { .. }));
        found.insert(
            0,
            AgentEvent::Limit(LimitSignal {
                status: LimitStatus::Rejected,
                resets_at: Some(exact),
                window: None,
                used_percent: None,
                text: Some(bounded(message)),
            }),
        );
    } else if code == Some(429) && !found.iter().any(|e| matches!(e, AgentEvent::Limit(_))) {
        found.insert(
            0,
            AgentEvent::Limit(LimitSignal {
                status: LimitStatus::Rejected,
                resets_at: None,
                window: None,
                used_percent: None,
                text: Some(bounded(message)),
            }),
        );
    }
    out.extend(found);
    out.push(AgentEvent::Finished(Finish {
        kind: FinishKind::Error,
        api_status: code,
        text: Some(bounded(message)),
    }));
    out
}

fn quota_reset(error: &Value) -> Option<Timestamp> {
    error
        .at("/details")?
        .as_array()?
        .iter()
        .find_map(|d| str_at(d, "/metadata/quotaResetTimeStamp"))
        .and_then(|t| t.parse().ok())
}
