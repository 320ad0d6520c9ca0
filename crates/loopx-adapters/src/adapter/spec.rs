//! The validated adapter: no spans, no defaulted options.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use regex::Regex;
use serde::Serialize;

use crate::PermissionLevel;

/// What an agent prints on stdout, and so which parser reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// `claude -p --output-format stream-json --verbose`.
    ClaudeStreamJson,
    /// `codex exec --json`.
    CodexJson,
    /// `gemini --output-format stream-json`.
    GeminiStreamJson,
    /// `cursor-agent -p --output-format stream-json`.
    CursorStreamJson,
    /// `qwen --output-format stream-json` (Qwen Code).
    QwenStreamJson,
    /// `opencode run --format json`.
    OpencodeJson,
    /// `gemini --output-format json`: one (pretty-printed) JSON document at the end.
    GeminiJson,
    /// Plain text: only the adapter's signal rules and the report block are read.
    Text,
    /// Codex session rollout files (`~/.codex/sessions/…/rollout-*.jsonl`). Not an adapter output:
    /// the supervisor reads these files after a Codex slice for exact reset times.
    CodexRollout,
}

impl OutputFormat {
    /// The formats an adapter's `output` key may name.
    pub const ADAPTER_FORMATS: [Self; 8] = [
        Self::ClaudeStreamJson,
        Self::CodexJson,
        Self::GeminiStreamJson,
        Self::CursorStreamJson,
        Self::QwenStreamJson,
        Self::OpencodeJson,
        Self::GeminiJson,
        Self::Text,
    ];

    /// The spelling used in TOML.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeStreamJson => "claude-stream-json",
            Self::CodexJson => "codex-json",
            Self::GeminiStreamJson => "gemini-stream-json",
            Self::CursorStreamJson => "cursor-stream-json",
            Self::QwenStreamJson => "qwen-stream-json",
            Self::OpencodeJson => "opencode-json",
            Self::GeminiJson => "gemini-json",
            Self::Text => "text",
            Self::CodexRollout => "codex-rollout",
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the prompt reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptDeliveryKind {
    /// As one argv element, through the `{prompt}` placeholder.
    Argument,
    /// Written to a file whose path is the `{prompt_file}` placeholder.
    File,
    /// Written to the agent's stdin, then end-of-file.
    Stdin,
    /// The first line of Claude Code's stream-json input, on a stdin pipe that stays open
    /// while the agent works, so that a person's message can follow (`crate::live`).
    StreamJson,
}

/// What the agent's stdin must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StdinMode {
    /// The PTY (the default: agents see a terminal).
    Pty,
    /// `/dev/null`: for CLIs that would block reading an open stdin.
    Null,
}

/// Argument fragments rendered only when the value is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AdapterOptions {
    /// Rendered when the profile sets `model` (uses `{model}`).
    pub model: Vec<String>,
    /// Rendered when the profile sets `limits.max_turns` (uses `{max_turns}`).
    pub max_turns: Vec<String>,
    /// Always rendered when non-empty (uses `{workdir}`); loopx also sets the process cwd.
    pub workdir: Vec<String>,
}

/// How to check that the CLI is installed and answers.
#[derive(Debug, Clone, Serialize)]
pub struct HealthCheck {
    /// Arguments (default `["--version"]`).
    pub args: Vec<String>,
    /// A regex the output must match (default: anything).
    #[serde(serialize_with = "serialize_regex_opt")]
    pub expect: Option<Regex>,
    /// How long to wait (default 10 s).
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub timeout: Duration,
}

/// What a signal rule detects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// A usage or rate limit; the reset time is parsed from the matched text.
    UsageLimit,
    /// Credentials missing, expired or refused.
    AuthFailed,
    /// The agent waits for a human answer (a permission dialog, a question).
    WaitingInput,
    /// The conversation no longer fits the model's context.
    ContextOverflow,
    /// A retry or temporary server trouble: not progress, not a failure yet.
    Transient,
    /// The agent blocks for a reason a human cannot answer (e.g. reading an open stdin).
    Stalled,
}

impl SignalKind {
    /// Every kind, with its TOML spelling.
    pub const ALL: [(Self, &'static str); 6] = [
        (Self::UsageLimit, "usage_limit"),
        (Self::AuthFailed, "auth_failed"),
        (Self::WaitingInput, "waiting_input"),
        (Self::ContextOverflow, "context_overflow"),
        (Self::Transient, "transient"),
        (Self::Stalled, "stalled"),
    ];
}

/// Which text a signal rule is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalScope {
    /// Result and error events and `<synthetic>` messages of a structured stream (never tool
    /// output), and every line of a `text` stream.
    Final,
    /// Lines that are not part of the structured stream (the CLI's own stderr in a PTY).
    Line,
}

/// An extra detection rule from the adapter file.
#[derive(Debug, Clone, Serialize)]
pub struct SignalRule {
    /// What a match means.
    pub kind: SignalKind,
    /// The regex.
    #[serde(serialize_with = "serialize_regex")]
    pub pattern: Regex,
    /// Where it is matched.
    pub on: SignalScope,
}

/// What an exit code means when the stream said nothing decisive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitMeaning {
    /// Success.
    Completed,
    /// A turn or budget limit: work was done, more remains.
    TurnLimit,
    /// Credentials refused.
    AuthFailed,
    /// A usage limit without a known reset time.
    UsageLimited,
    /// Temporary trouble.
    Transient,
    /// The context was too long.
    ContextOverflow,
    /// A failure (bad input, config, sandbox).
    Failed,
}

impl ExitMeaning {
    /// Every meaning, with its TOML spelling.
    pub const ALL: [(Self, &'static str); 7] = [
        (Self::Completed, "completed"),
        (Self::TurnLimit, "turn_limit"),
        (Self::AuthFailed, "auth_failed"),
        (Self::UsageLimited, "usage_limited"),
        (Self::Transient, "transient"),
        (Self::ContextOverflow, "context_overflow"),
        (Self::Failed, "failed"),
    ];
}

/// A validated adapter.
#[derive(Debug, Clone, Serialize)]
pub struct Adapter {
    /// The name (file stem), e.g. `claude-code`.
    pub name: String,
    /// One line for `loopx adapter list`.
    pub description: String,
    /// How a person logs the CLI in, for the gate a failed login opens.
    pub login: Option<String>,
    /// Where the CLI keeps a login once it is logged in (`~/…` or `$VAR/…`): `loopx connect`
    /// says whether one is there. A sign, not a proof: the vendor may refuse it.
    pub login_files: Vec<String>,
    /// How a person installs the CLI (`npm install -g @openai/codex`), named when its program
    /// is not on `PATH`.
    pub install: Option<String>,
    /// The executable; `None` means the profile must set `program` (the generic adapter).
    pub program: Option<String>,
    /// The argument template.
    pub args: Vec<String>,
    /// The output format, which picks the parser.
    pub output: OutputFormat,
    /// How the prompt is passed.
    pub prompt_delivery: PromptDeliveryKind,
    /// Optional argument fragments.
    pub options: AdapterOptions,
    /// Flags per permission level; a missing level cannot be expressed.
    pub permissions: BTreeMap<PermissionLevel, Vec<String>>,
    /// The health check.
    pub health: HealthCheck,
    /// Environment variables passed through from loopx's environment when present.
    pub env_pass: Vec<String>,
    /// Credential variables the CLI reads: passed when present, and redacted everywhere.
    pub env_secrets: Vec<String>,
    /// Fixed environment values.
    pub env_set: BTreeMap<String, String>,
    /// What stdin must be.
    pub stdin: StdinMode,
    /// Where the CLI keeps its state (`~/.claude`, `$CODEX_HOME`): writable inside the slice's
    /// sandbox besides the work tree (see [`crate::sandbox`]).
    pub sandbox_writable: Vec<String>,
    /// Extra detection rules.
    pub signals: Vec<SignalRule>,
    /// Meanings of exit codes, consulted last.
    pub exit_codes: BTreeMap<i32, ExitMeaning>,
    /// Where it was loaded from (`adapters/NAME.toml`, or `<builtin>/NAME.toml`).
    pub file: String,
    /// The file's bytes, for the profile content hash.
    #[serde(skip)]
    pub(crate) bytes: Vec<u8>,
}

impl Adapter {
    /// The permission levels this adapter can express, lowest first.
    pub fn supported_levels(&self) -> Vec<PermissionLevel> {
        self.permissions.keys().copied().collect()
    }
}

fn serialize_regex<S: serde::Serializer>(re: &Regex, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(re.as_str())
}

fn serialize_regex_opt<S: serde::Serializer>(re: &Option<Regex>, s: S) -> Result<S::Ok, S::Error> {
    match re {
        Some(re) => s.serialize_some(re.as_str()),
        None => s.serialize_none(),
    }
}
