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

const SYNTHETIC_NOW: &str = "2026-09-21T10:00:00Z";
/// The captured runs happened around this instant (their own timestamps say 03:19–03:20 UTC).
const CAPTURED_NOW: &str = "2026-11-30T03:20:00Z";
/// When the Qwen Code and OpenCode runs were captured (their own timestamps say 10:30–10:50).
const QWEN_NOW: &str = "2026-12-02T10:30:00Z";

/// Every recorded stream with an expectation.
pub const RECORDED_STREAMS: &[RecordedStream] = &[
    RecordedStream {
        path: "claude/stream-json-normal.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/stream-json-normal.jsonl")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "claude/stream-json-usage-limit.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/stream-json-usage-limit.jsonl")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:20:00Z"),
    },
    RecordedStream {
        path: "claude/stream-json-max-turns-result.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/stream-json-max-turns-result.jsonl")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("progress"),
        resets_at: None,
    },
    RecordedStream {
        path: "claude/captured-claude429.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/captured-claude429.jsonl")],
        exit_code: Some(1),
        now: CAPTURED_NOW,
        outcome: Some("usage_limited"),
        resets_at: None,
    },
    RecordedStream {
        path: "claude/captured-claude500.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/captured-claude500.jsonl")],
        exit_code: None,
        now: CAPTURED_NOW,
        outcome: Some("transient"),
        resets_at: None,
    },
    RecordedStream {
        path: "claude/captured-subscription-limit.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/captured-subscription-limit.jsonl")],
        exit_code: Some(1),
        now: CAPTURED_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-11-30T04:20:06Z"),
    },
    RecordedStream {
        path: "claude/captured-write-tool.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/captured-write-tool.jsonl")],
        exit_code: Some(0),
        now: CAPTURED_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "codex/exec-json-normal.jsonl",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/exec-json-normal.jsonl")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "codex/exec-json-usage-limit.jsonl",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/exec-json-usage-limit.jsonl")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:20:00Z"),
    },
    RecordedStream {
        path: "codex/exec-usage-limit.stderr.txt",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/exec-usage-limit.stderr.txt")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:20:00Z"),
    },
    RecordedStream {
        path: "codex/exec-stdin-hang.stderr.txt",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/exec-stdin-hang.stderr.txt")],
        exit_code: None,
        now: SYNTHETIC_NOW,
        outcome: Some("stalled"),
        resets_at: None,
    },
    RecordedStream {
        path: "codex/captured-codex500.jsonl",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/captured-codex500.jsonl")],
        exit_code: Some(1),
        now: CAPTURED_NOW,
        outcome: Some("transient"),
        resets_at: None,
    },
    RecordedStream {
        path: "codex/captured-text-report.jsonl",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/captured-text-report.jsonl")],
        exit_code: Some(0),
        now: CAPTURED_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    // A real `command_execution` (Codex 0.171's exec tool) that wrote a file, then a reply.
    RecordedStream {
        path: "codex/captured-shell-command.jsonl",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/captured-shell-command.jsonl")],
        exit_code: Some(0),
        now: CAPTURED_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    // Codex printed the reset as a local clock time; the capture ran in UTC.
    RecordedStream {
        path: "codex/captured-usage-limit.jsonl",
        format: OutputFormat::CodexJson,
        contents: &[
            stream!("codex/captured-usage-limit.jsonl"),
            stream!("codex/captured-usage-limit.stderr.txt"),
        ],
        exit_code: Some(1),
        now: CAPTURED_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-11-30T04:20:00Z"),
    },
    RecordedStream {
        path: "codex/rollout-token-count.jsonl",
        format: OutputFormat::CodexRollout,
        contents: &[stream!("codex/rollout-token-count.jsonl")],
        exit_code: None,
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:20:00Z"),
    },
    // 2025-10-29T01:00:38.856Z plus `resets_in_seconds: 16200`.
    RecordedStream {
        path: "codex/rollout-token-count-legacy.jsonl",
        format: OutputFormat::CodexRollout,
        contents: &[stream!("codex/rollout-token-count-legacy.jsonl")],
        exit_code: None,
        now: SYNTHETIC_NOW,
        outcome: None,
        resets_at: Some("2025-10-29T05:30:38.856Z"),
    },
    RecordedStream {
        path: "gemini/stream-json-normal.jsonl",
        format: OutputFormat::GeminiStreamJson,
        contents: &[stream!("gemini/stream-json-normal.jsonl")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    // "reset after 4h28m20s", counted from the result event's own timestamp (10:51:47.630Z).
    RecordedStream {
        path: "gemini/stream-json-quota-error.jsonl",
        format: OutputFormat::GeminiStreamJson,
        contents: &[stream!("gemini/stream-json-quota-error.jsonl")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:20:07.63Z"),
    },
    RecordedStream {
        path: "gemini/json-quota-error.json",
        format: OutputFormat::GeminiJson,
        contents: &[stream!("gemini/json-quota-error.json")],
        exit_code: Some(1),
        now: "2026-09-21T10:51:40Z",
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:20:00Z"),
    },
    RecordedStream {
        path: "gemini/api-error-quota-exhausted.json",
        format: OutputFormat::GeminiJson,
        contents: &[stream!("gemini/api-error-quota-exhausted.json")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:20:00Z"),
    },
    RecordedStream {
        path: "gemini/quota-error.stderr.txt",
        format: OutputFormat::GeminiStreamJson,
        contents: &[stream!("gemini/quota-error.stderr.txt")],
        exit_code: None,
        now: SYNTHETIC_NOW,
        outcome: Some("transient"),
        resets_at: None,
    },
    RecordedStream {
        path: "gemini/captured-write-file.jsonl",
        format: OutputFormat::GeminiStreamJson,
        contents: &[stream!("gemini/captured-write-file.jsonl")],
        exit_code: Some(0),
        now: CAPTURED_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "pty/claude-permission-dialog.screen.txt",
        format: OutputFormat::Text,
        contents: &[stream!("pty/claude-permission-dialog.screen.txt")],
        exit_code: None,
        now: SYNTHETIC_NOW,
        outcome: Some("asked"),
        resets_at: None,
    },
    // Hand-written: a `rejected` limit event, then nothing (the CLI hung; loopx stopped it).
    RecordedStream {
        path: "claude/stream-json-rejected-hang.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/stream-json-rejected-hang.jsonl")],
        exit_code: None,
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:13:20Z"),
    },
    // Captured (the api_retry lines) from Claude Code 2.1.197 against a server answering 401:
    // it retries ten times over minutes; loopx stops it at the first.
    RecordedStream {
        path: "claude/captured-auth-401-retry.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/captured-auth-401-retry.jsonl")],
        exit_code: None,
        now: CAPTURED_NOW,
        outcome: Some("auth_failed"),
        resets_at: None,
    },
    // Hand-written: `allowed_warning` is not a limit, and words about limits are not either.
    RecordedStream {
        path: "claude/stream-json-allowed-warning.jsonl",
        format: OutputFormat::ClaudeStreamJson,
        contents: &[stream!("claude/stream-json-allowed-warning.jsonl")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "codex/captured-auth-401.jsonl",
        format: OutputFormat::CodexJson,
        contents: &[stream!("codex/captured-auth-401.jsonl")],
        exit_code: Some(1),
        now: CAPTURED_NOW,
        outcome: Some("auth_failed"),
        resets_at: None,
    },
    // Written from Cursor's documented stream-json format (the CLI cannot be installed from a
    // package registry): a run that writes a file and reports done, one with read, shell and
    // function tool calls whose results talk about limits (never read), usage on the result
    // and a progress report, and the two failures the CLI prints to stderr.
    RecordedStream {
        path: "cursor/stream-json-normal.jsonl",
        format: OutputFormat::CursorStreamJson,
        contents: &[stream!("cursor/stream-json-normal.jsonl")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "cursor/stream-json-tool-calls.jsonl",
        format: OutputFormat::CursorStreamJson,
        contents: &[stream!("cursor/stream-json-tool-calls.jsonl")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("progress"),
        resets_at: None,
    },
    RecordedStream {
        path: "cursor/usage-limit.stderr.txt",
        format: OutputFormat::CursorStreamJson,
        contents: &[stream!("cursor/usage-limit.stderr.txt")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: None,
    },
    RecordedStream {
        path: "cursor/auth-failed.stderr.txt",
        format: OutputFormat::CursorStreamJson,
        contents: &[stream!("cursor/auth-failed.stderr.txt")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("auth_failed"),
        resets_at: None,
    },
    // Captured from Qwen Code 0.15.10 against the scripted server (Chat Completions), paths
    // rewritten: a write_file call and a report; a refused key and an account out of quota,
    // both of which it reports as `subtype:"success"` with exit 0 and `[API Error: …]` text
    // (the 429 after seven tries over 87 s).
    RecordedStream {
        path: "qwen/captured-write-file.jsonl",
        format: OutputFormat::QwenStreamJson,
        contents: &[stream!("qwen/captured-write-file.jsonl")],
        exit_code: Some(0),
        now: QWEN_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "qwen/captured-auth-401.jsonl",
        format: OutputFormat::QwenStreamJson,
        contents: &[stream!("qwen/captured-auth-401.jsonl")],
        exit_code: Some(0),
        now: QWEN_NOW,
        outcome: Some("auth_failed"),
        resets_at: None,
    },
    RecordedStream {
        path: "qwen/captured-quota-429.jsonl",
        format: OutputFormat::QwenStreamJson,
        contents: &[stream!("qwen/captured-quota-429.jsonl")],
        exit_code: Some(0),
        now: QWEN_NOW,
        outcome: Some("usage_limited"),
        resets_at: None,
    },
    // Captured from OpenCode 1.18.33 (`opencode run --format json`, an `@ai-sdk/openai-compatible`
    // provider on the scripted server), paths rewritten: a write and a report; a plain answer
    // with usage and cost; a refused key (no retry, exit 1); an account out of quota after six
    // tries over 76 s (no `retry-after`); and the one stderr line (`--print-logs --log-level
    // ERROR`) it prints while it sleeps for a `retry-after` of an hour before retrying.
    RecordedStream {
        path: "opencode/captured-write-file.jsonl",
        format: OutputFormat::OpencodeJson,
        contents: &[stream!("opencode/captured-write-file.jsonl")],
        exit_code: Some(0),
        now: QWEN_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "opencode/captured-usage-cost.jsonl",
        format: OutputFormat::OpencodeJson,
        contents: &[stream!("opencode/captured-usage-cost.jsonl")],
        exit_code: Some(0),
        now: QWEN_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "opencode/captured-auth-401.jsonl",
        format: OutputFormat::OpencodeJson,
        contents: &[stream!("opencode/captured-auth-401.jsonl")],
        exit_code: Some(1),
        now: QWEN_NOW,
        outcome: Some("auth_failed"),
        resets_at: None,
    },
    RecordedStream {
        path: "opencode/captured-quota-429.jsonl",
        format: OutputFormat::OpencodeJson,
        contents: &[stream!("opencode/captured-quota-429.jsonl")],
        exit_code: Some(1),
        now: QWEN_NOW,
        outcome: Some("usage_limited"),
        resets_at: None,
    },
    RecordedStream {
        path: "opencode/stream-error-retry-after.txt",
        format: OutputFormat::OpencodeJson,
        contents: &[stream!("opencode/stream-error-retry-after.txt")],
        exit_code: None,
        now: QWEN_NOW,
        outcome: Some("usage_limited"),
        resets_at: None,
    },
    // Hand-written plain-text agents: their last lines report (or only talk about) a signal.
    RecordedStream {
        path: "text/ordinary-words.txt",
        format: OutputFormat::Text,
        contents: &[stream!("text/ordinary-words.txt")],
        exit_code: Some(0),
        now: SYNTHETIC_NOW,
        outcome: Some("completed"),
        resets_at: None,
    },
    RecordedStream {
        path: "text/not-logged-in.txt",
        format: OutputFormat::Text,
        contents: &[stream!("text/not-logged-in.txt")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("auth_failed"),
        resets_at: None,
    },
    RecordedStream {
        path: "text/context-overflow.txt",
        format: OutputFormat::Text,
        contents: &[stream!("text/context-overflow.txt")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("context_overflow"),
        resets_at: None,
    },
    RecordedStream {
        path: "text/usage-limit.txt",
        format: OutputFormat::Text,
        contents: &[stream!("text/usage-limit.txt")],
        exit_code: Some(1),
        now: SYNTHETIC_NOW,
        outcome: Some("usage_limited"),
        resets_at: Some("2026-09-21T15:13:20Z"),
    },
];

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
