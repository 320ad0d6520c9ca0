//! The script a [`ModelServer`](crate::ModelServer) plays: a list of turns, each answering one
//! model request, written as JSON or built in Rust.
//!
//! ```json
//! {
//!   "turns": [
//!     {"reply": {"tool_calls": [{"name": "Write", "input": {"file_path": "hello.txt", "content": "hi\n"}}]}},
//!     {"reply": {"text": "Done.", "usage": {"input_tokens": 900, "output_tokens": 12}}},
//!     {"error": {"status": 429, "headers": {"retry-after": "3600"},
//!                "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}}}
//!   ],
//!   "when_done": "repeat_last"
//! }
//! ```
//!
//! Turns are not tied to one API: the same reply is rendered as Anthropic Messages or as OpenAI
//! Responses, whichever the request asked for, so one script can drive either CLI.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::errors::ScriptError;

/// Turns in order, and what to do once they are used up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<Turn>,
    #[serde(default)]
    pub when_done: WhenDone,
}

/// What a model request gets after the last turn has been played.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenDone {
    /// Play the last turn again. A CLI that retries an error keeps getting the same error, and
    /// an unexpected extra request after the final reply gets the final reply again.
    #[default]
    RepeatLast,
    /// Answer 500 with `script exhausted`, so a test sees the extra request fail loudly.
    Fail,
}

/// One answer to one model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Turn {
    Reply(Reply),
    Error(ErrorAnswer),
}

/// A successful model answer: optional text, then tool calls in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Usage,
}

/// A tool call the model makes. For a function tool `input` is the argument object (the
/// Responses API gets it as the JSON-encoded `arguments` string it expects).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    pub input: Value,
    #[serde(default, skip_serializing_if = "ToolKind::is_function")]
    pub kind: ToolKind,
}

/// The Responses API's two tool shapes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// A JSON-schema tool: `function_call` with JSON `arguments` (Anthropic: `tool_use`).
    #[default]
    Function,
    /// A free-form tool: `custom_tool_call` whose `input` is a string. Codex 0.171 reaches the
    /// shell this way, through its `exec` tool taking JavaScript
    /// (`await tools.exec_command({cmd: "…"})`). The Messages API has no such tool; there it
    /// becomes a `tool_use` with input `{"input": "<the string>"}`.
    Custom,
}

impl ToolKind {
    fn is_function(&self) -> bool {
        *self == ToolKind::Function
    }
}

/// Token counts reported with a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        // Small non-zero numbers, so a test can tell "usage was passed through" from "absent".
        Self {
            input_tokens: 100,
            output_tokens: 20,
        }
    }
}

/// An HTTP error answer, sent as given: status, extra headers, JSON body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorAnswer {
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

impl Script {
    /// A script of the given turns, repeating the last one when they run out.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            turns: turns.into_iter().collect(),
            when_done: WhenDone::RepeatLast,
        }
    }

    /// Sets what happens after the last turn.
    pub fn when_done(mut self, when_done: WhenDone) -> Self {
        self.when_done = when_done;
        self
    }

    /// Reads and checks a JSON script file.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_owned(),
            source,
        })?;
        let script: Script = serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
            path: path.to_owned(),
            source,
        })?;
        script.check()?;
        Ok(script)
    }

    /// Rejects scripts the server could not play faithfully.
    pub fn check(&self) -> Result<(), ScriptError> {
        if self.turns.is_empty() {
            return Err(ScriptError::Empty);
        }
        for (index, turn) in self.turns.iter().enumerate() {
            if let Turn::Error(answer) = turn
                && !(400..=599).contains(&answer.status)
            {
                return Err(ScriptError::NotAnErrorStatus {
                    index,
                    status: answer.status,
                });
            }
            if let Turn::Reply(reply) = turn
                && let Some(call) = reply
                    .tool_calls
                    .iter()
                    .find(|call| call.kind == ToolKind::Custom && !call.input.is_string())
            {
                return Err(ScriptError::CustomInputNotString {
                    index,
                    name: call.name.clone(),
                });
            }
        }
        Ok(())
    }
}

impl Turn {
    /// A text-only reply.
    pub fn text(text: impl Into<String>) -> Self {
        Turn::Reply(Reply {
            text: Some(text.into()),
            ..Reply::default()
        })
    }

    /// A reply that is a single tool call.
    pub fn tool_call(name: impl Into<String>, input: Value) -> Self {
        Turn::Reply(Reply {
            tool_calls: vec![ToolCall {
                name: name.into(),
                input,
                kind: ToolKind::Function,
            }],
            ..Reply::default()
        })
    }
}

impl ErrorAnswer {
    /// Anthropic's API-key rate limit: 429 `rate_limit_error` with `retry-after`. Claude Code
    /// does not retry when `retry-after` is over a minute (an hour's was not retried:
    /// `docs/design/model-server.md`, "Observed (2026-11-30, this machine)").
    pub fn anthropic_rate_limit(retry_after_secs: u64) -> Self {
        Self {
            status: 429,
            headers: BTreeMap::from([("retry-after".to_owned(), retry_after_secs.to_string())]),
            body: anthropic_error_body(
                "rate_limit_error",
                "This request would exceed your organization's rate limit.",
            ),
        }
    }

    /// Anthropic's subscription limit: 429 with the `anthropic-ratelimit-unified-*` headers
    /// that Claude Code turns into a `rate_limit_event` (`rejected`, `resetsAt`, `five_hour`).
    pub fn anthropic_session_limit(reset_epoch_secs: u64) -> Self {
        Self {
            status: 429,
            headers: BTreeMap::from([
                (
                    "anthropic-ratelimit-unified-status".to_owned(),
                    "rejected".to_owned(),
                ),
                (
                    "anthropic-ratelimit-unified-reset".to_owned(),
                    reset_epoch_secs.to_string(),
                ),
                (
                    "anthropic-ratelimit-unified-representative-claim".to_owned(),
                    "five_hour".to_owned(),
                ),
            ]),
            body: anthropic_error_body("rate_limit_error", "Rate limited"),
        }
    }

    /// Codex's ChatGPT-plan usage limit: 429 `usage_limit_reached` with `resets_at`.
    pub fn codex_usage_limit(resets_at_epoch_secs: u64) -> Self {
        Self {
            status: 429,
            headers: BTreeMap::new(),
            body: json!({"error": {
                "type": "usage_limit_reached",
                "message": "The usage limit has been reached",
                "plan_type": "plus",
                "resets_at": resets_at_epoch_secs,
            }}),
        }
    }

    /// An OpenAI-compatible API's account out of credit: 429 `insufficient_quota` with a long
    /// `retry-after` (no reset time: a prepaid balance has none).
    pub fn openai_quota() -> Self {
        Self {
            status: 429,
            headers: BTreeMap::from([("retry-after".to_owned(), "3600".to_owned())]),
            body: openai_error_body(
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
            ),
        }
    }

    /// An OpenAI-compatible API refusing the key: 401 `invalid_api_key`.
    pub fn openai_invalid_key() -> Self {
        Self {
            status: 401,
            headers: BTreeMap::new(),
            body: openai_error_body("invalid_api_key", "Incorrect API key provided"),
        }
    }

    /// A plain 500, which both CLIs retry.
    pub fn server_error() -> Self {
        Self {
            status: 500,
            headers: BTreeMap::new(),
            body: anthropic_error_body("api_error", "Internal server error"),
        }
    }
}

fn openai_error_body(code: &str, message: &str) -> Value {
    let kind = match code {
        "invalid_api_key" => "invalid_request_error",
        other => other,
    };
    json!({"error": {"message": message, "type": kind, "code": code}})
}

fn anthropic_error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_form_round_trips_and_defaults_apply() {
        let text = r#"{"turns": [
            {"reply": {"text": "hi"}},
            {"reply": {"tool_calls": [{"name": "Write", "input": {"file_path": "a"}}]}},
            {"error": {"status": 429, "headers": {"retry-after": "3600"}, "body": {"x": 1}}}
        ]}"#;
        let script: Script = serde_json::from_str(text).expect("the example is valid");
        script.check().expect("the example passes the checks");
        assert_eq!(script.when_done, WhenDone::RepeatLast);
        assert_eq!(script.turns[0], Turn::text("hi"));
        let Turn::Error(answer) = &script.turns[2] else {
            panic!("third turn should be an error, got {:?}", script.turns[2]);
        };
        assert_eq!(answer.headers["retry-after"], "3600");
        let again: Script =
            serde_json::from_value(serde_json::to_value(&script).expect("a script serialises"))
                .expect("a serialised script parses");
        assert_eq!(again, script);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text = r#"{"turns": [{"reply": {"txt": "hi"}}]}"#;
        let error = serde_json::from_str::<Script>(text).expect_err("`txt` is a typo");
        assert!(error.to_string().contains("unknown field `txt`"), "{error}");
    }

    #[test]
    fn empty_scripts_and_success_statuses_are_rejected() {
        assert!(matches!(Script::new([]).check(), Err(ScriptError::Empty)));
        let mut answer = ErrorAnswer::server_error();
        answer.status = 200;
        assert!(matches!(
            Script::new([Turn::Error(answer)]).check(),
            Err(ScriptError::NotAnErrorStatus {
                index: 0,
                status: 200
            })
        ));
        let mut custom = Turn::tool_call("exec", json!({"not": "a string"}));
        if let Turn::Reply(reply) = &mut custom {
            reply.tool_calls[0].kind = ToolKind::Custom;
        }
        assert!(matches!(
            Script::new([Turn::text("a"), custom]).check(),
            Err(ScriptError::CustomInputNotString { index: 1, .. })
        ));
    }

    #[test]
    fn load_names_the_file_on_failure() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("script.json");
        std::fs::write(&path, "{not json").expect("the temp dir is writable");
        let error = Script::load(&path).expect_err("the file is not JSON");
        assert!(error.to_string().contains("script.json"), "{error}");
    }
}
