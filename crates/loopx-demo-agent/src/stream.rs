//! Claude Code's `stream-json` events, as the demo agent prints them: one JSON object per line,
//! in the shapes of the recorded streams in `tests/fixtures/streams/claude/`.
//!
//! Everything that varies in a real stream (ids, token counts, durations) is derived from the
//! prompt and the working directory, so the same input prints the same stream.

use std::io::{self, Write};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The model name the demo agent reports.
const MODEL: &str = "loopx-demo";
/// Tokens a real agent spends on its system prompt and tool definitions, before the prompt.
const BASE_CONTEXT_TOKENS: u64 = 1800;
/// Simulated time per turn, for `duration_ms`: real durations would make the stream vary.
const TURN_MS: u64 = 1400;

/// Why a run stopped before its final message.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The next turn would pass `--max-turns`.
    MaxTurns,
    /// Writing the stream failed.
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// What a simulated tool call returned.
#[derive(Debug)]
pub(crate) struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// The call was refused by the permission mode (listed in the result's
    /// `permission_denials`).
    pub denied: bool,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> ToolResult {
        ToolResult {
            content: content.into(),
            is_error: false,
            denied: false,
        }
    }

    pub fn error(content: impl Into<String>) -> ToolResult {
        ToolResult {
            content: content.into(),
            is_error: true,
            denied: false,
        }
    }

    /// Refused by the permission mode, not by the tool.
    pub fn denied(content: impl Into<String>) -> ToolResult {
        ToolResult {
            denied: true,
            ..ToolResult::error(content)
        }
    }
}

/// One run's stream: ids, turn count and token usage, and the writer.
#[derive(Debug)]
pub(crate) struct Stream<W: Write> {
    out: W,
    delay: Duration,
    lines: u64,
    seed: [u8; 32],
    counter: u64,
    session_id: String,
    max_turns: Option<u32>,
    turns: u32,
    context: u64,
    input_tokens: u64,
    output_tokens: u64,
    denials: Vec<Value>,
}

impl<W: Write> Stream<W> {
    pub fn new(out: W, prompt: &str, cwd: &str, delay: Duration, max_turns: Option<u32>) -> Self {
        let seed: [u8; 32] = Sha256::new()
            .chain_update(prompt.as_bytes())
            .chain_update([0])
            .chain_update(cwd.as_bytes())
            .finalize()
            .into();
        let mut stream = Stream {
            out,
            delay,
            lines: 0,
            seed,
            counter: 0,
            session_id: String::new(),
            max_turns,
            turns: 0,
            context: BASE_CONTEXT_TOKENS + prompt.len() as u64 / 4,
            input_tokens: 0,
            output_tokens: 0,
            denials: Vec::new(),
        };
        stream.session_id = stream.uuid();
        stream
    }

    /// `system/init`: the session id (the resume id) and the tools on offer.
    pub fn init(&mut self, cwd: &str, permission_mode: &str) -> io::Result<()> {
        let uuid = self.uuid();
        self.emit(json!({
            "type": "system", "subtype": "init", "cwd": cwd, "session_id": self.session_id,
            "tools": ["Bash", "Edit", "Glob", "Read", "Write"], "mcp_servers": [],
            "model": MODEL, "permissionMode": permission_mode, "apiKeySource": "none",
            "output_style": "default", "uuid": uuid,
        }))
    }

    /// A `rate_limit_event`, as a subscription login reports one.
    pub fn rate_limit(&mut self, status: &str, resets_at: Option<i64>) -> io::Result<()> {
        let mut info = json!({ "status": status, "isUsingOverage": false });
        if let Some(at) = resets_at {
            info["resetsAt"] = json!(at);
            info["rateLimitType"] = json!("five_hour");
        }
        let uuid = self.uuid();
        self.emit(json!({
            "type": "rate_limit_event", "rate_limit_info": info,
            "uuid": uuid, "session_id": self.session_id,
        }))
    }

    /// One turn with a tool call: optional narration, the `tool_use`, then `run` (the tool's
    /// effect happens between the two, as in a real agent) and its `tool_result`.
    pub fn tool(
        &mut self,
        narration: &str,
        name: &str,
        input: Value,
        run: impl FnOnce() -> ToolResult,
    ) -> Result<(), Stop> {
        self.begin_turn()?;
        let message_id = format!("msg_demo_{}", self.short_id());
        let tool_id = format!("toolu_demo_{}", self.short_id());
        let usage = self.spend(narration.len() + input.to_string().len());
        if !narration.is_empty() {
            let text = json!({ "type": "text", "text": narration });
            self.assistant(&message_id, text, Value::Null, &usage)?;
        }
        let call = json!({ "type": "tool_use", "id": tool_id, "name": name, "input": input });
        self.assistant(&message_id, call, Value::Null, &usage)?;
        let result = run();
        if result.denied {
            self.denials
                .push(json!({ "tool_name": name, "tool_use_id": tool_id, "tool_input": input }));
        }
        let uuid = self.uuid();
        self.emit(json!({
            "type": "user",
            "message": { "role": "user", "content": [{
                "tool_use_id": tool_id, "type": "tool_result",
                "content": result.content, "is_error": result.is_error,
            }]},
            "parent_tool_use_id": null, "session_id": self.session_id, "uuid": uuid,
        }))?;
        Ok(())
    }

    /// The final turn: the message (with its report block) and a successful `result`.
    pub fn finish(&mut self, text: &str) -> Result<(), Stop> {
        self.begin_turn()?;
        let message_id = format!("msg_demo_{}", self.short_id());
        let usage = self.spend(text.len());
        let content = json!({ "type": "text", "text": text });
        self.assistant(&message_id, content, json!("end_turn"), &usage)?;
        self.result("success", false, Some(text), &[])?;
        Ok(())
    }

    /// The `result` of a run stopped by `--max-turns`.
    pub fn max_turns_result(&mut self) -> io::Result<()> {
        let max = self.max_turns.unwrap_or(self.turns);
        let errors = [format!("Reached maximum number of turns ({max})")];
        self.result("error_max_turns", true, None, &errors)
    }

    /// A subscription usage limit, as Claude Code reports one: a `rejected` rate-limit event,
    /// a `<synthetic>` message with the vendor's words, and an error `result` with HTTP 429.
    pub fn usage_limit(&mut self, resets_at: i64, text: &str) -> io::Result<()> {
        self.rate_limit("rejected", Some(resets_at))?;
        self.turns += 1;
        let (id, uuid) = (self.uuid(), self.uuid());
        self.emit(json!({
            "type": "assistant",
            "message": {
                "id": id, "type": "message", "role": "assistant", "model": "<synthetic>",
                "content": [{ "type": "text", "text": text }],
                "stop_reason": "stop_sequence", "stop_sequence": "",
                "usage": { "input_tokens": 0, "output_tokens": 0,
                           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0 },
            },
            "parent_tool_use_id": null, "session_id": self.session_id, "uuid": uuid,
            "error": "rate_limit", "is_api_error_message": true,
        }))?;
        let mut result = self.result_value("success", true, Some(text), &[]);
        result["api_error_status"] = json!(429);
        result["stop_reason"] = json!("stop_sequence");
        self.emit(result)
    }

    fn begin_turn(&mut self) -> Result<(), Stop> {
        if self.max_turns.is_some_and(|max| self.turns >= max) {
            return Err(Stop::MaxTurns);
        }
        self.turns += 1;
        Ok(())
    }

    /// Charges one turn: the whole context is read again, and `written` bytes are produced.
    fn spend(&mut self, written: usize) -> Value {
        let output = 24 + written as u64 / 4;
        let input = self.context;
        self.input_tokens += input;
        self.output_tokens += output;
        self.context += output + 40;
        json!({ "input_tokens": input, "output_tokens": output,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0 })
    }

    fn assistant(&mut self, id: &str, block: Value, stop: Value, usage: &Value) -> io::Result<()> {
        let uuid = self.uuid();
        self.emit(json!({
            "type": "assistant",
            "message": {
                "id": id, "type": "message", "role": "assistant", "model": MODEL,
                "content": [block], "stop_reason": stop, "stop_sequence": null, "usage": usage,
            },
            "parent_tool_use_id": null, "session_id": self.session_id, "uuid": uuid,
        }))
    }

    fn result(
        &mut self,
        subtype: &str,
        is_error: bool,
        text: Option<&str>,
        errors: &[String],
    ) -> io::Result<()> {
        let value = self.result_value(subtype, is_error, text, errors);
        self.emit(value)
    }

    fn result_value(
        &mut self,
        subtype: &str,
        is_error: bool,
        text: Option<&str>,
        errors: &[String],
    ) -> Value {
        // Sonnet-like prices per token, so the demo shows a small, plausible spend.
        let cost = self.input_tokens as f64 * 3e-6 + self.output_tokens as f64 * 15e-6;
        let uuid = self.uuid();
        let mut value = json!({
            "type": "result", "subtype": subtype, "is_error": is_error,
            "api_error_status": null,
            "duration_ms": u64::from(self.turns) * TURN_MS,
            "duration_api_ms": u64::from(self.turns) * (TURN_MS - 200),
            "num_turns": self.turns,
            "stop_reason": if is_error { "tool_use" } else { "end_turn" },
            "session_id": self.session_id,
            "total_cost_usd": (cost * 1e6).round() / 1e6,
            "usage": {
                "input_tokens": self.input_tokens, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": self.output_tokens,
                "service_tier": "standard",
            },
            "permission_denials": self.denials,
            "uuid": uuid,
        });
        match text {
            Some(text) => value["result"] = json!(text),
            None => value["errors"] = json!(errors),
        }
        value
    }

    fn emit(&mut self, value: Value) -> io::Result<()> {
        if self.lines > 0 && !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        self.lines += 1;
        writeln!(self.out, "{value}")?;
        self.out.flush()
    }

    /// The next deterministic id bytes.
    fn next_bytes(&mut self) -> [u8; 32] {
        self.counter += 1;
        Sha256::new()
            .chain_update(self.seed)
            .chain_update(self.counter.to_le_bytes())
            .finalize()
            .into()
    }

    /// A version-4-shaped UUID (Claude's session ids and event uuids look like these).
    fn uuid(&mut self) -> String {
        let bytes = self.next_bytes();
        let mut first = [0u8; 16];
        first.copy_from_slice(&bytes[..16]);
        loopx_adapters::live::uuid_v4(first)
    }

    fn short_id(&mut self) -> String {
        hex::encode(&self.next_bytes()[..10])
    }
}
