//! `claude -p --output-format stream-json --verbose`: one JSON event per line.

use jiff::Timestamp;
use serde_json::Value;

use super::json::{Lookup, str_at, u64_at};
use crate::adapter::{SignalRule, SignalScope};
use crate::event::{
    AgentEvent, Finish, FinishKind, LimitSignal, LimitStatus, LimitWindow, TokenUsage, UsageScope,
};
use crate::reset::epoch_to_timestamp;
use crate::signals::{bounded, detect};

/// Events for one Claude stream-json event; `None` for an unknown event type.
pub(super) fn event(v: &Value, rules: &[SignalRule], now: Timestamp) -> Option<Vec<AgentEvent>> {
    let events = match str_at(v, "/type")? {
        "system" => system(v),
        "assistant" => assistant(v, rules, now),
        // Tool results: never read for signals, since a tool can print any sentence. The echo
        // of a line of loopx's stream-json input says the CLI took it (`crate::live`).
        "user" => crate::live::used_echo(v)
            .map(|uuid| AgentEvent::InputUsed {
                uuid: uuid.to_owned(),
            })
            .into_iter()
            .collect(),
        "rate_limit_event" => rate_limit(v).into_iter().collect(),
        "result" => result(v, rules, now),
        _ => return None,
    };
    Some(events)
}

fn system(v: &Value) -> Vec<AgentEvent> {
    match str_at(v, "/subtype") {
        Some("init") => str_at(v, "/session_id")
            .map(|id| AgentEvent::Session {
                id: id.to_owned(),
                model: str_at(v, "/model").map(str::to_owned),
            })
            .into_iter()
            .collect(),
        Some("api_retry") => {
            let code = u64_at(v, "/error_status");
            let status = code.map(|s| s.to_string());
            let error = str_at(v, "/error").map(str::to_owned);
            let refused = matches!(code, Some(401 | 403))
                || error.as_deref() == Some("authentication_failed");
            let reason = [status, error]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            // Claude Code (2.1.197) retries a refused key ten times over two minutes and more;
            // a retry cannot log anyone in.
            let auth = refused.then(|| AgentEvent::AuthFailed {
                text: format!("the API refused the credentials ({reason}); Claude Code retries it"),
            });
            auth.into_iter()
                .chain([AgentEvent::Retry {
                    attempt: u64_at(v, "/attempt").and_then(|n| u32::try_from(n).ok()),
                    max_attempts: u64_at(v, "/max_retries").and_then(|n| u32::try_from(n).ok()),
                    delay: v
                        .at("/retry_delay_ms")
                        .and_then(Value::as_f64)
                        .filter(|ms| ms.is_finite() && *ms >= 0.0)
                        .map(|ms| std::time::Duration::from_millis(ms as u64)),
                    reason,
                }])
                .collect()
        }
        _ => Vec::new(),
    }
}

fn assistant(v: &Value, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    let text: String = text_blocks(v).collect::<Vec<_>>().join("\n");
    // A `<synthetic>` message is Claude Code speaking, not the model: API errors and limits.
    let synthetic = str_at(v, "/message/model") == Some("<synthetic>")
        || v.at("/is_api_error_message").and_then(Value::as_bool) == Some(true);
    if synthetic {
        out.extend(detect(&text, now, rules, SignalScope::Final));
        let has_limit = out.iter().any(|e| matches!(e, AgentEvent::Limit(_)));
        if str_at(v, "/error") == Some("rate_limit") && !has_limit {
            out.push(AgentEvent::Limit(rejected(None, Some(&text))));
        }
        return out;
    }
    for block in v
        .at("/message/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if str_at(block, "/type") == Some("tool_use") {
            out.push(AgentEvent::ToolCall {
                name: str_at(block, "/name").unwrap_or("unknown").to_owned(),
            });
        }
    }
    if !text.is_empty() {
        out.push(AgentEvent::Message { text });
    }
    if let (Some(usage), Some(id)) = (v.at("/message/usage").map(usage), str_at(v, "/message/id")) {
        out.push(AgentEvent::Usage {
            usage,
            scope: UsageScope::Message(id.to_owned()),
        });
    }
    out
}

/// The `text` blocks of a message's content (Claude Code's shape, which Cursor shares).
pub(super) fn text_blocks(v: &Value) -> impl Iterator<Item = &str> {
    v.at("/message/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| str_at(block, "/type") == Some("text"))
        .filter_map(|block| str_at(block, "/text"))
}

fn rate_limit(v: &Value) -> Option<AgentEvent> {
    let info = v.at("/rate_limit_info")?;
    let status = match str_at(info, "/status")? {
        "rejected" => LimitStatus::Rejected,
        "allowed_warning" => LimitStatus::Warning,
        _ => LimitStatus::Allowed,
    };
    Some(AgentEvent::Limit(LimitSignal {
        status,
        resets_at: info
            .at("/resetsAt")
            .and_then(Value::as_i64)
            .and_then(epoch_to_timestamp),
        window: str_at(info, "/rateLimitType").map(LimitWindow::from_name),
        used_percent: info
            .at("/utilization")
            .and_then(Value::as_f64)
            .map(|u| if u <= 1.0 { u * 100.0 } else { u }),
        text: None,
    }))
}

/// A refused limit, with the vendor's words when its reset time (if any) came from them.
pub(super) fn rejected(resets_at: Option<Timestamp>, text: Option<&str>) -> LimitSignal {
    LimitSignal {
        status: LimitStatus::Rejected,
        resets_at,
        window: None,
        used_percent: None,
        text: text.map(bounded),
    }
}

fn result(v: &Value, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    // A result can be the only line (e.g. `error_max_turns`); its session id is the resume id.
    if let Some(id) = str_at(v, "/session_id") {
        out.push(AgentEvent::Session {
            id: id.to_owned(),
            model: None,
        });
    }
    if let Some(usage) = v.at("/usage").map(usage) {
        out.push(AgentEvent::Usage {
            usage,
            scope: UsageScope::Answer,
        });
    }
    if let Some(usd) = v.at("/total_cost_usd").and_then(Value::as_f64) {
        out.push(AgentEvent::Cost { usd });
    }
    let subtype = str_at(v, "/subtype").unwrap_or_default();
    let is_error = v.at("/is_error").and_then(Value::as_bool).unwrap_or(false);
    let api_status = u64_at(v, "/api_error_status").and_then(|s| u16::try_from(s).ok());
    // `subtype:"success"` with `is_error:true` is an API error (anthropics/claude-code#79500).
    let kind = match subtype {
        "error_max_turns" => FinishKind::MaxTurns,
        "error_max_budget_usd" => FinishKind::MaxBudget,
        _ if is_error || subtype.starts_with("error") => FinishKind::Error,
        _ => FinishKind::Success,
    };
    let mut text = str_at(v, "/result").map(str::to_owned);
    let errors: Vec<&str> = v
        .at("/errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if text.is_none() && !errors.is_empty() {
        text = Some(errors.join("\n"));
    }
    if kind == FinishKind::Error {
        let words = text.clone().unwrap_or_default();
        out.extend(detect(&words, now, rules, SignalScope::Final));
        if api_status == Some(429) && !out.iter().any(|e| matches!(e, AgentEvent::Limit(_))) {
            out.push(AgentEvent::Limit(rejected(None, Some(&words))));
        }
    }
    out.push(AgentEvent::Finished(Finish {
        kind,
        api_status,
        text: text.as_deref().map(bounded_result),
    }));
    out
}

/// The result text is the final message when it succeeded (the report block lives there), so
/// it gets a generous bound.
fn bounded_result(text: &str) -> String {
    const MAX: usize = 1 << 20;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut start = text.len() - MAX;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

fn usage(u: &Value) -> TokenUsage {
    let n = |p: &str| u64_at(u, p).unwrap_or(0);
    TokenUsage {
        input: n("/input_tokens").saturating_add(n("/cache_creation_input_tokens")),
        output: n("/output_tokens"),
        cached_input: n("/cache_read_input_tokens"),
    }
}
