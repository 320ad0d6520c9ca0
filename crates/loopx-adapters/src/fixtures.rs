//! The recorded agent streams (copied from the shared fixtures into `tests/fixtures/streams/`)
//! embedded with their expected classification, so `loopx adapter test` can replay them
//! through an adapter's parser on any machine.

use crate::adapter::OutputFormat;

/// One recorded stream and what it must be classified as.
#[derive(Debug, Clone, Copy)]
pub struct RecordedStream {
    /// Path under `tests/fixtures/streams/`.
    pub path: &'static str,
    /// The parser it is read with.
    pub format: OutputFormat,
    /// The bytes (further files of the same run follow, e.g. stderr).
    pub contents: &'static [&'static str],
    /// The exit code the run had (`None`: killed or cut off).
    pub exit_code: Option<i32>,
    /// The `now` the run happened at (RFC 3339), for relative reset times.
    pub now: &'static str,
    /// The expected outcome name (`Outcome::name`), when the stream has one.
    pub outcome: Option<&'static str>,
    /// The expected reset time of the strongest limit signal (RFC 3339), when there is one.
    pub resets_at: Option<&'static str>,
}

macro_rules! stream {
    ($path:literal) => {
        include_str!(concat!("../../../tests/fixtures/streams/", $path))
    };
}

/// [`RecordedStream`]s, one a row: `Format "path" (+ "more"), exit_code, now, outcome, resets_at;`.
macro_rules! recorded {
    ($(
        $format:ident $path:literal $(+ $more:literal)*,
        $exit:expr, $now:expr, $outcome:expr, $resets:expr;
    )*) => {
        &[$(RecordedStream {
            path: $path,
            format: OutputFormat::$format,
            contents: &[stream!($path) $(, stream!($more))*],
            exit_code: $exit,
            now: $now,
            outcome: $outcome,
            resets_at: $resets,
        },)*]
    };
}

const SYNTHETIC_NOW: &str = "2026-09-21T10:00:00Z";
/// The captured runs happened around this instant (their own timestamps say 03:19–03:20 UTC).
const CAPTURED_NOW: &str = "2026-11-30T03:20:00Z";
/// When the Qwen Code and OpenCode runs were captured (their own timestamps say 10:30–10:50).
const QWEN_NOW: &str = "2026-12-02T10:30:00Z";

/// Every recorded stream with an expectation.
pub const RECORDED_STREAMS: &[RecordedStream] = recorded! {
    // format, path (+ further files of the run), exit code, now, outcome, reset time
    ClaudeStreamJson "claude/stream-json-normal.jsonl",
        Some(0), SYNTHETIC_NOW, Some("completed"), None;
    ClaudeStreamJson "claude/stream-json-usage-limit.jsonl",
        Some(0), SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:20:00Z");
    ClaudeStreamJson "claude/stream-json-max-turns-result.jsonl",
        Some(1), SYNTHETIC_NOW, Some("progress"), None;
    ClaudeStreamJson "claude/captured-claude429.jsonl",
        Some(1), CAPTURED_NOW, Some("usage_limited"), None;
    ClaudeStreamJson "claude/captured-claude500.jsonl",
        None, CAPTURED_NOW, Some("transient"), None;
    ClaudeStreamJson "claude/captured-subscription-limit.jsonl",
        Some(1), CAPTURED_NOW, Some("usage_limited"), Some("2026-11-30T04:20:06Z");
    ClaudeStreamJson "claude/captured-write-tool.jsonl",
        Some(0), CAPTURED_NOW, Some("completed"), None;
    ClaudeStreamJson "claude/captured-live-two-turns.jsonl",
        Some(0), CAPTURED_NOW, Some("completed"), None;
    ClaudeStreamJson "claude/captured-live-injected.jsonl",
        Some(0), CAPTURED_NOW, Some("completed"), None;
    ClaudeStreamJson "claude/captured-live-reused-uuid.jsonl",
        None, CAPTURED_NOW, Some("completed"), None;
    CodexJson "codex/exec-json-normal.jsonl",
        Some(0), SYNTHETIC_NOW, Some("completed"), None;
    CodexJson "codex/exec-json-usage-limit.jsonl",
        Some(1), SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:20:00Z");
    CodexJson "codex/exec-usage-limit.stderr.txt",
        Some(1), SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:20:00Z");
    CodexJson "codex/exec-stdin-hang.stderr.txt",
        None, SYNTHETIC_NOW, Some("stalled"), None;
    CodexJson "codex/captured-codex500.jsonl",
        Some(1), CAPTURED_NOW, Some("transient"), None;
    CodexJson "codex/captured-text-report.jsonl",
        Some(0), CAPTURED_NOW, Some("completed"), None;
    CodexJson "codex/captured-shell-command.jsonl",
        Some(0), CAPTURED_NOW, Some("completed"), None;
    CodexJson "codex/captured-usage-limit.jsonl" + "codex/captured-usage-limit.stderr.txt",
        Some(1), CAPTURED_NOW, Some("usage_limited"), Some("2026-11-30T04:20:00Z");
    CodexRollout "codex/rollout-token-count.jsonl",
        None, SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:20:00Z");
    CodexRollout "codex/rollout-token-count-legacy.jsonl",
        None, SYNTHETIC_NOW, None, Some("2025-10-29T05:30:38.856Z");
    GeminiStreamJson "gemini/stream-json-normal.jsonl",
        Some(0), SYNTHETIC_NOW, Some("completed"), None;
    GeminiStreamJson "gemini/stream-json-quota-error.jsonl",
        Some(1), SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:20:07.63Z");
    GeminiJson "gemini/json-quota-error.json",
        Some(1), "2026-09-21T10:51:40Z", Some("usage_limited"), Some("2026-09-21T15:20:00Z");
    GeminiJson "gemini/api-error-quota-exhausted.json",
        Some(1), SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:20:00Z");
    GeminiStreamJson "gemini/quota-error.stderr.txt",
        None, SYNTHETIC_NOW, Some("transient"), None;
    GeminiStreamJson "gemini/captured-write-file.jsonl",
        Some(0), CAPTURED_NOW, Some("completed"), None;
    Text "pty/claude-permission-dialog.screen.txt",
        None, SYNTHETIC_NOW, Some("asked"), None;
    ClaudeStreamJson "claude/stream-json-rejected-hang.jsonl",
        None, SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:13:20Z");
    ClaudeStreamJson "claude/captured-auth-401-retry.jsonl",
        None, CAPTURED_NOW, Some("auth_failed"), None;
    ClaudeStreamJson "claude/stream-json-allowed-warning.jsonl",
        Some(0), SYNTHETIC_NOW, Some("completed"), None;
    CodexJson "codex/captured-auth-401.jsonl",
        Some(1), CAPTURED_NOW, Some("auth_failed"), None;
    CursorStreamJson "cursor/stream-json-normal.jsonl",
        Some(0), SYNTHETIC_NOW, Some("completed"), None;
    CursorStreamJson "cursor/stream-json-tool-calls.jsonl",
        Some(0), SYNTHETIC_NOW, Some("progress"), None;
    CursorStreamJson "cursor/usage-limit.stderr.txt",
        Some(1), SYNTHETIC_NOW, Some("usage_limited"), None;
    CursorStreamJson "cursor/auth-failed.stderr.txt",
        Some(1), SYNTHETIC_NOW, Some("auth_failed"), None;
    QwenStreamJson "qwen/captured-write-file.jsonl",
        Some(0), QWEN_NOW, Some("completed"), None;
    QwenStreamJson "qwen/captured-auth-401.jsonl",
        Some(0), QWEN_NOW, Some("auth_failed"), None;
    QwenStreamJson "qwen/captured-quota-429.jsonl",
        Some(0), QWEN_NOW, Some("usage_limited"), None;
    OpencodeJson "opencode/captured-write-file.jsonl",
        Some(0), QWEN_NOW, Some("completed"), None;
    OpencodeJson "opencode/captured-usage-cost.jsonl",
        Some(0), QWEN_NOW, Some("completed"), None;
    OpencodeJson "opencode/captured-auth-401.jsonl",
        Some(1), QWEN_NOW, Some("auth_failed"), None;
    OpencodeJson "opencode/captured-quota-429.jsonl",
        Some(1), QWEN_NOW, Some("usage_limited"), None;
    OpencodeJson "opencode/stream-error-retry-after.txt",
        None, QWEN_NOW, Some("usage_limited"), None;
    Text "text/ordinary-words.txt",
        Some(0), SYNTHETIC_NOW, Some("completed"), None;
    Text "text/not-logged-in.txt",
        Some(1), SYNTHETIC_NOW, Some("auth_failed"), None;
    Text "text/context-overflow.txt",
        Some(1), SYNTHETIC_NOW, Some("context_overflow"), None;
    Text "text/usage-limit.txt",
        Some(1), SYNTHETIC_NOW, Some("usage_limited"), Some("2026-09-21T15:13:20Z");
};

/// The usage-limit wording table (`era <TAB> surface <TAB> text`, `#` comments).
pub const USAGE_LIMIT_TEXT_VARIANTS: &str = stream!("claude/usage-limit-text-variants.txt");

/// The recorded streams an adapter with output `format` can be tested against. Codex
/// adapters also get the rollout files, which the supervisor reads after a Codex slice.
pub fn streams_for(format: OutputFormat) -> impl Iterator<Item = &'static RecordedStream> {
    RECORDED_STREAMS.iter().filter(move |s| {
        s.format == format
            || (format == OutputFormat::CodexJson && s.format == OutputFormat::CodexRollout)
            || (format == OutputFormat::GeminiStreamJson && s.format == OutputFormat::GeminiJson)
            || (format == OutputFormat::GeminiJson && s.format == OutputFormat::GeminiStreamJson)
    })
}
