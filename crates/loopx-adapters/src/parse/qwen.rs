//! `qwen --output-format stream-json` (Qwen Code, a Gemini CLI fork): Claude Code's event
//! shapes (`system`/`init`, `assistant`, `user`, `result` with `usage`), read by the Claude
//! parser, with one difference. Qwen Code 0.15 reports a failed API call as an assistant message
//! and a `result` that say `subtype:"success"`, `is_error:false` and exit 0, whose text is
//! `[API Error: 401 …]` (captured in `tests/fixtures/streams/qwen/`; 0.24 sets `is_error`).
//! That text is Qwen Code speaking, not the model — when its assistant message carries no
//! output tokens (a model that writes `[API Error: …]` itself was paid for its words): it is
//! read for signals, never kept as the agent's message, and it ends the run as an error.

use jiff::Timestamp;
use serde_json::Value;

use super::claude;
use super::json::{str_at, u64_at};
use crate::adapter::{SignalRule, SignalScope};
use crate::event::{AgentEvent, FinishKind};
use crate::signals::detect;

const API_ERROR: &str = "[API Error: ";

/// Events for one Qwen Code stream-json event; `None` for an unknown event type.
/// `api_error`: the last assistant message was Qwen Code's own error report.
pub(super) fn event(
    v: &Value,
    api_error: &mut bool,
    rules: &[SignalRule],
    now: Timestamp,
) -> Option<Vec<AgentEvent>> {
    let mut events = claude::event(v, rules, now)?;
    match str_at(v, "/type") {
        Some("assistant") => {
            let unpaid = u64_at(v, "/message/usage/output_tokens").unwrap_or(0) == 0;
            *api_error = unpaid
                && events
                    .iter()
                    .any(|e| matches!(e, AgentEvent::Message { text } if is_api_error(text)));
            if *api_error {
                events.retain(|e| !matches!(e, AgentEvent::Message { .. }));
            }
        }
        Some("result") => {
            let Some(text) = str_at(v, "/result").filter(|t| *api_error && is_api_error(t)) else {
                return Some(events);
            };
            let status = api_status(text);
            let mut signals = detect(text, now, rules, SignalScope::Final);
            if status == Some(429) && !signals.iter().any(|e| matches!(e, AgentEvent::Limit(_))) {
                signals.push(AgentEvent::Limit(claude::rejected(None, Some(text))));
            }
            for event in &mut events {
                if let AgentEvent::Finished(finish) = event {
                    finish.kind = FinishKind::Error;
                    finish.api_status = finish.api_status.or(status);
                }
            }
            // The signals come before the end, as the Claude parser orders them.
            let at = events
                .iter()
                .position(|e| matches!(e, AgentEvent::Finished(_)))
                .unwrap_or(events.len());
            events.splice(at..at, signals);
        }
        _ => {}
    }
    Some(events)
}

fn is_api_error(text: &str) -> bool {
    text.trim_start().starts_with(API_ERROR)
}

/// `[API Error: 429 You exceeded …]` → 429.
fn api_status(text: &str) -> Option<u16> {
    let rest = text.trim_start().strip_prefix(API_ERROR)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|s| (100..600).contains(s))
}
