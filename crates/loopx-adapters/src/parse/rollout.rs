//! Codex session rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): the exact rate
//! limit state, which `codex exec` only prints as prose.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::json::{Lookup, str_at, timestamp_or, u64_at};
use crate::event::{AgentEvent, LimitSignal, LimitStatus, LimitWindow, TokenUsage, UsageScope};
use crate::reset::epoch_to_timestamp;

/// At or above this share of a window, a limit is reported as a warning.
const WARN_PERCENT: f64 = 70.0;

/// Events for one rollout line; `None` for an unknown line type.
pub(super) fn event(v: &Value, now: Timestamp) -> Option<Vec<AgentEvent>> {
    let events = match str_at(v, "/type")? {
        "session_meta" => str_at(v, "/payload/id")
            .map(|id| AgentEvent::Session {
                id: id.to_owned(),
                model: None,
            })
            .into_iter()
            .collect(),
        "event_msg" if str_at(v, "/payload/type") == Some("token_count") => token_count(v, now),
        "event_msg" | "turn_context" | "response_item" => Vec::new(),
        _ => return None,
    };
    Some(events)
}

fn token_count(v: &Value, now: Timestamp) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    if let Some(total) = v.at("/payload/info/total_token_usage") {
        let n = |p: &str| u64_at(total, p).unwrap_or(0);
        let cached = n("/cached_input_tokens");
        out.push(AgentEvent::Usage {
            usage: TokenUsage {
                input: n("/input_tokens").saturating_sub(cached),
                output: n("/output_tokens"),
                cached_input: cached,
            },
            scope: UsageScope::Total,
        });
    }
    // Legacy `resets_in_seconds` counts from the line's own timestamp.
    let said_at = timestamp_or(v, now);
    for key in ["primary", "secondary"] {
        if let Some(limit) = v
            .at(&format!("/payload/rate_limits/{key}"))
            .and_then(|w| window(w, said_at))
        {
            out.push(AgentEvent::Limit(limit));
        }
    }
    out
}

fn window(w: &Value, said_at: Timestamp) -> Option<LimitSignal> {
    let used = w.at("/used_percent").and_then(Value::as_f64)?;
    let resets_at = w
        .at("/resets_at")
        .and_then(Value::as_i64)
        .and_then(epoch_to_timestamp)
        .or_else(|| {
            let secs = w.at("/resets_in_seconds").and_then(Value::as_i64)?;
            said_at.checked_add(SignedDuration::from_secs(secs)).ok()
        });
    let status = if used >= 100.0 {
        LimitStatus::Rejected
    } else if used >= WARN_PERCENT {
        LimitStatus::Warning
    } else {
        LimitStatus::Allowed
    };
    Some(LimitSignal {
        status,
        resets_at,
        window: u64_at(w, "/window_minutes")
            .and_then(|m| u32::try_from(m).ok())
            .map(LimitWindow::from_minutes),
        used_percent: Some(used),
        text: None,
    })
}
