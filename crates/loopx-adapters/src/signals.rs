//! Built-in text detectors for limit, auth, context and transient wording, plus the adapter's
//! extra rules. Callers apply them only to text the CLI itself produced (result and error
//! events, `<synthetic>` messages, its own stderr lines), never to tool output, which can
//! contain any sentence.

use std::sync::LazyLock;

use jiff::Timestamp;
use regex::Regex;

use crate::adapter::{SignalKind, SignalRule, SignalScope};
use crate::event::{AgentEvent, LimitSignal, LimitStatus, LimitWindow, WaitKind};
use crate::reset::{epoch_to_timestamp, parse_reset_time};

static LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(usage limit|\b(?:session|weekly|daily|hour) limit|\blimit reached|hit your (?:\w+ )?limit",
        r"|out of extra usage|rate[ _]limit|exhausted your capacity|quota (?:will reset|exceeded|exhausted)",
        r"|resource_exhausted|quota_exhausted|usage_limit_reached|too many requests)"
    ))
    .expect("static regex")
});

static RAW_RESETS_AT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"resets_?at\\?"?\s*:\s*(\d{9,13})"#).expect("static regex"));

static AUTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(invalid api key|not logged in|please run /login|authentication_error|\b401\b|unauthorized|invalid auth method|oauth token (?:has )?expired)")
        .expect("static regex")
});

static CONTEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(prompt is too long|context_length_exceeded|maximum context length|context window (?:exceeded|is full)|input is too long)")
        .expect("static regex")
});

static TRANSIENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(overloaded|high demand|internal server error|service unavailable|bad gateway|temporar(?:y|ily)|timed? ?out|connection (?:reset|refused|error|closed)|econnreset|\b50[0-4]\b|\b529\b|server_error|stream disconnected)")
        .expect("static regex")
});

static GEMINI_RETRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)attempt (\d+) failed:.*retrying after (\d+)\s*ms").expect("static regex")
});

static CODEX_RECONNECT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^reconnecting\.*\s*(\d+)/(\d+)").expect("static regex"));

/// The start of a line that reports something (a symbol or bullet, an `Error:` label).
const LINE_START: &str = r"(?i)^(?:[^\w\s]+\s*)*(?:(?:error|fatal|warning)\b\W*)?";
/// What follows the phrase of a line that reports something: the line's end, punctuation
/// (`· resets 5am`, `|1790003600`, `.`), or the few words such reports go on with. "Rate limit
/// exceeded errors are now logged" is a sentence about limits, not a limit.
const LINE_END: &str = r"(?:\s*$|\s*[^\w\s]|\s+(?:resets?|try|please|to|until)\b)";

static LIMIT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        "{LINE_START}(?:claude ai usage limit reached|usage limit (?:reached|exceeded)|you(?:'ve| have|’ve) hit your (?:\\w+ )?limit|you(?:'re| are|’re) out of extra usage|rate limit (?:reached|exceeded)|quota (?:exceeded|exhausted)|\\d+-hour limit reached|(?:session|weekly|daily) limit reached|too many requests){LINE_END}"
    ))
    .expect("static regex")
});

static AUTH_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        "{LINE_START}(?:not logged in|invalid api key|authentication (?:failed|error)|unauthorized\\b|please run /login|login required|oauth token (?:has )?expired|api key (?:is )?(?:missing|invalid)){LINE_END}"
    ))
    .expect("static regex")
});

static CONTEXT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        "{LINE_START}(?:prompt is too long|context (?:length|window) (?:exceeded|is full)|maximum context length){LINE_END}"
    ))
    .expect("static regex")
});

/// A plain-text agent's signals, from its last lines only, oldest first. Every line is the
/// agent's own words, and words about a limit are not a limit: only a line that *reports* one
/// (it starts with the wording, after a bullet or an `Error:`) counts — "Log a warning when the
/// API rate limit is exceeded" or "All 401 tests passed" does not. The adapter's `final` rules
/// run on the same lines. (Waiting for input counts only when the agent was still running at
/// the end: `classify` sees to that.)
pub fn detect_final(lines: &[&str], now: Timestamp, rules: &[SignalRule]) -> Vec<AgentEvent> {
    let mut out: Vec<AgentEvent> = Vec::new();
    let push = |event: AgentEvent, out: &mut Vec<AgentEvent>| {
        if !out
            .iter()
            .any(|e| std::mem::discriminant(e) == std::mem::discriminant(&event))
        {
            out.push(event);
        }
    };
    for line in lines {
        if LIMIT_LINE.is_match(line)
            && let Some(signal) = limit_from_text(line, now)
        {
            push(AgentEvent::Limit(signal), &mut out);
        }
        if AUTH_LINE.is_match(line) {
            push(
                AgentEvent::AuthFailed {
                    text: bounded(line),
                },
                &mut out,
            );
        }
        if CONTEXT_LINE.is_match(line) {
            push(
                AgentEvent::ContextOverflow {
                    text: bounded(line),
                },
                &mut out,
            );
        }
        for rule in rules
            .iter()
            .filter(|r| r.on == SignalScope::Final && r.pattern.is_match(line))
        {
            push(rule_event(rule.kind, line, now), &mut out);
        }
    }
    out
}

/// A limit signal, when `text` is limit wording (with the reset time and window it names).
pub fn limit_from_text(text: &str, now: Timestamp) -> Option<LimitSignal> {
    if !LIMIT.is_match(text) {
        return None;
    }
    let resets_at = RAW_RESETS_AT
        .captures(text)
        .and_then(|c| c[1].parse().ok())
        .and_then(epoch_to_timestamp)
        .or_else(|| parse_reset_time(text, now));
    let lower = text.to_lowercase();
    let window = if lower.contains("weekly") {
        Some(LimitWindow::SevenDay)
    } else if lower.contains("session limit") || lower.contains("5-hour") {
        Some(LimitWindow::FiveHour)
    } else {
        None
    };
    Some(LimitSignal {
        status: LimitStatus::Rejected,
        resets_at,
        window,
        used_percent: None,
        text: Some(bounded(text)),
    })
}

/// Whether `text` reads like temporary server trouble.
pub fn is_transient_text(text: &str) -> bool {
    TRANSIENT.is_match(text)
}

/// Retry chatter on a line: Codex "Reconnecting... 2/5", Gemini "Attempt 1 failed: … Retrying
/// after 6173ms". Checked before limit wording, because Gemini's short quota waits read like
/// limits but are retried by the CLI itself.
pub fn retry_from_text(text: &str) -> Option<AgentEvent> {
    let trimmed = text.trim();
    if let Some(c) = CODEX_RECONNECT.captures(trimmed) {
        return Some(AgentEvent::Retry {
            attempt: c[1].parse().ok(),
            max_attempts: c[2].parse().ok(),
            delay: None,
            reason: bounded(trimmed),
        });
    }
    GEMINI_RETRY.captures(trimmed).map(|c| AgentEvent::Retry {
        attempt: c[1].parse().ok(),
        max_attempts: None,
        delay: c[2].parse().ok().map(std::time::Duration::from_millis),
        reason: bounded(trimmed),
    })
}

/// Events for text the CLI reported as a result or error (or a line of its own stderr).
/// `rules` are the adapter's extra rules for `scope`.
pub fn detect(
    text: &str,
    now: Timestamp,
    rules: &[SignalRule],
    scope: SignalScope,
) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    if let Some(signal) = limit_from_text(text, now) {
        out.push(AgentEvent::Limit(signal));
    }
    if AUTH.is_match(text) {
        out.push(AgentEvent::AuthFailed {
            text: bounded(text),
        });
    }
    if CONTEXT.is_match(text) {
        out.push(AgentEvent::ContextOverflow {
            text: bounded(text),
        });
    }
    for event in detect_rules(text, now, rules, scope) {
        if !out
            .iter()
            .any(|e| std::mem::discriminant(e) == std::mem::discriminant(&event))
        {
            out.push(event);
        }
    }
    out
}

/// Only the adapter's own `scope` rules on `text`, one event per kind: what a CLI's log line
/// says, as the adapter that knows that CLI's wording reads it.
pub(crate) fn detect_rules(
    text: &str,
    now: Timestamp,
    rules: &[SignalRule],
    scope: SignalScope,
) -> Vec<AgentEvent> {
    let mut out: Vec<AgentEvent> = Vec::new();
    for rule in rules
        .iter()
        .filter(|r| r.on == scope && r.pattern.is_match(text))
    {
        let event = rule_event(rule.kind, text, now);
        if !out
            .iter()
            .any(|e| std::mem::discriminant(e) == std::mem::discriminant(&event))
        {
            out.push(event);
        }
    }
    out
}

fn rule_event(kind: SignalKind, text: &str, now: Timestamp) -> AgentEvent {
    let text = bounded(text);
    match kind {
        SignalKind::UsageLimit => AgentEvent::Limit(LimitSignal {
            status: LimitStatus::Rejected,
            resets_at: parse_reset_time(&text, now),
            window: None,
            used_percent: None,
            text: Some(text),
        }),
        SignalKind::AuthFailed => AgentEvent::AuthFailed { text },
        SignalKind::WaitingInput => AgentEvent::Waiting {
            kind: WaitKind::Human,
            text,
        },
        SignalKind::Stalled => AgentEvent::Waiting {
            kind: WaitKind::Stdin,
            text,
        },
        SignalKind::ContextOverflow => AgentEvent::ContextOverflow { text },
        SignalKind::Transient => AgentEvent::Retry {
            attempt: None,
            max_attempts: None,
            delay: None,
            reason: text,
        },
    }
}

/// Vendor text kept in events is bounded: it is evidence, not a transcript.
pub(crate) fn bounded(text: &str) -> String {
    const MAX: usize = 2048;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-09-21T10:00:00Z".parse().expect("valid timestamp")
    }

    #[test]
    fn raw_codex_body_gives_the_exact_reset() {
        let line = r#"ERROR codex_api: error=http 429: Some("{\"error\":{\"type\":\"usage_limit_reached\",\"resets_at\":1790004000}}")"#;
        let signal = limit_from_text(line, now()).expect("a usage limit");
        assert_eq!(
            signal.resets_at.map(Timestamp::as_second),
            Some(1_790_004_000)
        );
    }

    #[test]
    fn retry_chatter_is_recognised() {
        let gemini = "Attempt 2 failed: You have exhausted your capacity on this model. Your quota will reset after 0s.. Retrying after 5710ms...";
        assert!(matches!(
            retry_from_text(gemini),
            Some(AgentEvent::Retry {
                attempt: Some(2),
                ..
            })
        ));
        let codex = "Reconnecting... 3/5 (We’re currently experiencing high demand)";
        assert!(matches!(
            retry_from_text(codex),
            Some(AgentEvent::Retry {
                attempt: Some(3),
                max_attempts: Some(5),
                ..
            })
        ));
        assert!(retry_from_text("all tests passed").is_none());
    }

    #[test]
    fn bounded_cuts_on_a_char_boundary() {
        let long = "é".repeat(3000);
        assert!(bounded(&long).len() <= 2048 + '…'.len_utf8());
    }
}
