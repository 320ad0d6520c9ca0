//! `opencode run --format json` (OpenCode): one JSON event per line, each with a `sessionID`
//! and a `part` — `step_start`, `text` (a finished text part), `tool_use` (a finished or failed
//! tool call: `part.tool`, `part.state.status`), `step_finish` (one model request: `reason`,
//! `tokens{input,output,reasoning,cache{read,write}}`, `cost`), and `error` (`error.name`,
//! `error.data{message,statusCode,isRetryable,responseBody}`) when the run fails. There is no
//! result event: a run whose last step finished with `reason:"stop"` succeeded — known only at
//! the end, since a step can stop and the loop go on (a compaction summary, say).
//! Captured from OpenCode 1.18 in `tests/fixtures/streams/opencode/`.

use jiff::Timestamp;
use serde_json::Value;

use super::claude;
use super::json::{Lookup, str_at, u64_at};
use crate::adapter::{SignalRule, SignalScope};
use crate::event::{AgentEvent, Finish, FinishKind, TokenUsage, UsageScope};
use crate::signals::{bounded, detect};

/// Events for one OpenCode event; `None` for an unknown event type. `cost` is the run's cost
/// so far: each step reports its own, and loopx keeps the total. `stopped`: the last step
/// ended with `reason:"stop"` and nothing has followed it yet ([`finished`] at the end).
pub(super) fn event(
    v: &Value,
    cost: &mut f64,
    stopped: &mut bool,
    rules: &[SignalRule],
    now: Timestamp,
) -> Option<Vec<AgentEvent>> {
    let kind = str_at(v, "/type")?;
    if matches!(kind, "step_start" | "error") {
        *stopped = false;
    }
    let events = match kind {
        "step_start" => str_at(v, "/sessionID")
            .map(|id| AgentEvent::Session {
                id: id.to_owned(),
                model: None,
            })
            .into_iter()
            .collect(),
        "text" => str_at(v, "/part/text")
            .filter(|t| !t.trim().is_empty())
            .map(|text| AgentEvent::Message {
                text: text.to_owned(),
            })
            .into_iter()
            .collect(),
        // The tool's output is never read: a tool can print any sentence.
        "tool_use" => vec![AgentEvent::ToolCall {
            name: str_at(v, "/part/tool").unwrap_or("unknown").to_owned(),
        }],
        "step_finish" => {
            *stopped = str_at(v, "/part/reason") == Some("stop");
            step_finish(v, cost)
        }
        "error" => error(v, rules, now),
        _ => return None,
    };
    Some(events)
}

fn step_finish(v: &Value, cost: &mut f64) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    if let Some(tokens) = v.at("/part/tokens") {
        let n = |p: &str| u64_at(tokens, p).unwrap_or(0);
        out.push(AgentEvent::Usage {
            usage: TokenUsage {
                input: n("/input").saturating_add(n("/cache/write")),
                output: n("/output").saturating_add(n("/reasoning")),
                cached_input: n("/cache/read"),
            },
            scope: UsageScope::Turn,
        });
    }
    if let Some(usd) = v
        .at("/part/cost")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 0.0 && (*cost + c).is_finite())
    {
        *cost += usd;
        out.push(AgentEvent::Cost { usd: *cost });
    }
    out
}

/// The end of a run whose last step stopped: a success (its final message is the last text).
pub(super) fn finished() -> AgentEvent {
    AgentEvent::Finished(Finish {
        kind: FinishKind::Success,
        api_status: None,
        text: None,
    })
}

fn error(v: &Value, rules: &[SignalRule], now: Timestamp) -> Vec<AgentEvent> {
    let data = v.at("/error/data");
    let message = data
        .and_then(|d| str_at(d, "/message"))
        .or_else(|| str_at(v, "/error/message"))
        .unwrap_or_else(|| str_at(v, "/error/name").unwrap_or("error"));
    let status = data
        .and_then(|d| u64_at(d, "/statusCode"))
        .and_then(|s| u16::try_from(s).ok());
    // The vendor's body says more than the client's summary ("insufficient_quota").
    let body = data.and_then(|d| str_at(d, "/responseBody")).unwrap_or("");
    let words = format!("{message}\n{body}");
    let mut out = detect(&words, now, rules, SignalScope::Final);
    let has = |out: &[AgentEvent], f: fn(&AgentEvent) -> bool| out.iter().any(f);
    if matches!(status, Some(401 | 403))
        && !has(&out, |e| matches!(e, AgentEvent::AuthFailed { .. }))
    {
        out.push(AgentEvent::AuthFailed {
            text: bounded(message),
        });
    }
    if status == Some(429) && !has(&out, |e| matches!(e, AgentEvent::Limit(_))) {
        out.push(AgentEvent::Limit(claude::rejected(None, Some(message))));
    }
    out.push(AgentEvent::Finished(Finish {
        kind: FinishKind::Error,
        api_status: status,
        text: Some(bounded(message)),
    }));
    out
}
