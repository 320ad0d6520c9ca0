//! A readable transcript of a structured agent stream (Claude Code `stream-json`, Codex
//! `exec --json`, Gemini CLI `stream-json`, Cursor `stream-json`, Qwen Code `stream-json`,
//! OpenCode `run --format json`): what the agent wrote, each tool call with its
//! arguments summarised, tool results clipped, and the final result with tokens and cost.
//!
//! The shape is recognised per line, not per adapter: a log is whatever the agent printed, and
//! a CLI may print plain lines (warnings, a stack trace) between its JSON events; those are kept
//! as they are. A stream that is not mostly JSON events is not a transcript ([`render`] gives
//! `None`) and is shown as text instead. Everything returned is the agent's text: callers show
//! it with control characters made visible, never obeyed.

use serde_json::Value;

/// Longest argument value shown in a tool call's summary.
const ARG_CHARS: usize = 60;
/// Longest tool-call summary.
const CALL_CHARS: usize = 200;
/// Lines of a tool result shown.
const RESULT_LINES: usize = 3;
/// Longest line of a tool result shown.
const RESULT_CHARS: usize = 160;

/// The transcript of `bytes`, or `None` when they are not a structured stream (fewer than half
/// of the non-empty lines are JSON events).
pub fn render(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut transcript = Transcript::default();
    let (mut events, mut lines) = (0usize, 0usize);
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        lines += 1;
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(Value::Object(event)) if event.get("type").is_some_and(Value::is_string) => {
                events += 1;
                transcript.event(&Value::Object(event));
            }
            _ => transcript.plain(line),
        }
    }
    (events > 0 && events * 2 >= lines).then(|| transcript.finish())
}

/// A transcript built line by line, for a stream that is still being written (`loopx log
/// --follow`): each call returns the transcript lines completed so far. Gemini's text deltas
/// are held until their paragraph ends, so they read as one paragraph here too.
#[derive(Debug, Default)]
pub struct LiveTranscript {
    transcript: Transcript,
    /// Bytes of the transcript already returned.
    taken: usize,
}

impl LiveTranscript {
    /// Takes one line of the stream (an event, or a plain line the caller made safe to show).
    pub fn line(&mut self, line: &str) -> String {
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(event @ Value::Object(_)) if event.get("type").is_some_and(Value::is_string) => {
                self.transcript.event(&event);
            }
            _ => self.transcript.plain(line),
        }
        self.take(false)
    }

    /// Everything not returned yet: the stream ended.
    pub fn finish(&mut self) -> String {
        self.take(true)
    }

    fn take(&mut self, all: bool) -> String {
        if all {
            self.transcript.close_delta();
        }
        let out = &self.transcript.out;
        let end = if all {
            out.len()
        } else {
            out.rfind('\n')
                .map_or(self.taken, |i| (i + 1).max(self.taken))
        };
        let new = out[self.taken..end].to_owned();
        self.taken = end;
        new
    }
}

#[derive(Debug, Default)]
struct Transcript {
    out: String,
    /// Gemini streams assistant text in deltas: they are joined into one paragraph.
    open_delta: bool,
}

impl Transcript {
    fn finish(mut self) -> String {
        self.close_delta();
        self.out
    }

    fn line(&mut self, line: &str) {
        self.close_delta();
        self.out.push_str(line);
        self.out.push('\n');
    }

    fn close_delta(&mut self) {
        if std::mem::take(&mut self.open_delta) && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// A line outside the event stream: the CLI's own words, shown without its terminal
    /// escapes. A line of escapes alone (Claude Code restores the cursor and the terminal's
    /// modes as it exits) is dropped: a transcript ended with `^[[?25h^[[?1004l…`.
    fn plain(&mut self, line: &str) {
        let text = loopx_vocab::strip_ansi(line);
        if !text.trim().is_empty() {
            self.line(text.trim_end());
        }
    }

    fn text(&mut self, text: &str) {
        let text = text.trim_end();
        if !text.is_empty() {
            self.line(text);
        }
    }

    fn event(&mut self, event: &Value) {
        let kind = str_at(event, "type");
        match kind {
            // Claude Code.
            "system" if str_at(event, "subtype") == "init" => self.session(event, "session_id"),
            "assistant" => self.claude_message(event),
            "user" => self.claude_results(event),
            "result" if event.get("stats").is_some() || event.get("status").is_some() => {
                self.gemini_result(event)
            }
            "result" => self.claude_result(event),
            // Codex.
            "thread.started" => self.session(event, "thread_id"),
            "item.started" | "item.completed" => self.codex_item(kind, &event["item"]),
            "turn.completed" => self.codex_turn(event),
            "turn.failed" => {
                let line = format!("✗ turn failed: {}", str_at(&event["error"], "message"));
                self.line(&line);
            }
            "error" => {
                let message = event
                    .get("message")
                    .and_then(Value::as_str)
                    .or_else(|| event["error"].get("message").and_then(Value::as_str))
                    // OpenCode.
                    .unwrap_or_else(|| str_at(&event["error"]["data"], "message"));
                self.line(&format!("✗ {}", clip_line(message, RESULT_CHARS)));
            }
            // OpenCode: every event carries a `part`.
            "text" if event.get("part").is_some() => self.text(str_at(&event["part"], "text")),
            "tool_use" if event.get("part").is_some() => self.opencode_tool(event),
            "step_finish" => self.opencode_step(event),
            // Cursor.
            "tool_call" if str_at(event, "subtype") == "started" => self.cursor_call(event),
            // Gemini CLI.
            "init" => self.session(event, "session_id"),
            "message" if str_at(event, "role") == "assistant" => self.gemini_message(event),
            "tool_use" => {
                let call = call(str_at(event, "tool_name"), &event["parameters"]);
                self.line(&call);
            }
            "tool_result" => {
                let status = str_at(event, "status");
                let output = event
                    .get("output")
                    .and_then(Value::as_str)
                    .or_else(|| event["error"].get("message").and_then(Value::as_str))
                    .unwrap_or("");
                self.result(status == "error", status, output);
            }
            _ => {}
        }
    }

    /// Codex: a turn's end, with its tokens.
    fn codex_turn(&mut self, event: &Value) {
        let usage = &event["usage"];
        let line = format!(
            "■ turn done · {}",
            tokens(
                u64_at(usage, "input_tokens"),
                u64_at(usage, "output_tokens"),
                u64_at(usage, "cached_input_tokens")
            )
        );
        self.line(&line);
    }

    /// OpenCode: a tool's call and its result, in one event.
    fn opencode_tool(&mut self, event: &Value) {
        let (part, state) = (&event["part"], &event["part"]["state"]);
        self.line(&call(str_at(part, "tool"), &state["input"]));
        let status = str_at(state, "status");
        let output = state
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or_else(|| str_at(state, "error"));
        self.result(status == "error", status, output);
    }

    /// OpenCode: a step's end, with its tokens.
    fn opencode_step(&mut self, event: &Value) {
        let t = &event["part"]["tokens"];
        let line = format!(
            "■ step {} · {}",
            str_at(&event["part"], "reason"),
            tokens(
                u64_at(t, "input"),
                u64_at(t, "output"),
                u64_at(&t["cache"], "read")
            )
        );
        self.line(&line);
    }

    /// Cursor: the call sits under a `<name>ToolCall` key (or `function`).
    fn cursor_call(&mut self, event: &Value) {
        if let Some((key, inner)) = event["tool_call"].as_object().and_then(|c| c.iter().next()) {
            let line = match key.as_str() {
                "function" => call(str_at(inner, "name"), &inner["arguments"]),
                _ => call(key.strip_suffix("ToolCall").unwrap_or(key), &inner["args"]),
            };
            self.line(&line);
        }
    }

    /// Gemini CLI: the assistant's text, whole or in deltas.
    fn gemini_message(&mut self, event: &Value) {
        let content = str_at(event, "content");
        if event.get("delta").and_then(Value::as_bool) == Some(true) {
            if !self.open_delta {
                self.close_delta();
                self.open_delta = true;
            }
            self.out.push_str(content);
        } else {
            self.text(content);
        }
    }

    fn session(&mut self, event: &Value, id_key: &str) {
        let mut line = format!("● session {}", str_at(event, id_key));
        if let Some(model) = event.get("model").and_then(Value::as_str) {
            line.push_str(&format!(" · {model}"));
        }
        self.line(&line);
    }

    fn claude_message(&mut self, event: &Value) {
        let Some(content) = event["message"]["content"].as_array() else {
            return;
        };
        for block in content {
            match str_at(block, "type") {
                "text" => self.text(str_at(block, "text")),
                "tool_use" => {
                    let call = call(str_at(block, "name"), &block["input"]);
                    self.line(&call);
                }
                _ => {}
            }
        }
    }

    fn claude_results(&mut self, event: &Value) {
        let Some(content) = event["message"]["content"].as_array() else {
            return;
        };
        // A line of loopx's stream-json input (the prompt, a person's message), where Claude
        // took it; one it skipped has no timestamp (`crate::live`).
        if crate::live::used_echo(event).is_some() {
            let text: Vec<&str> = content.iter().map(|b| str_at(b, "text")).collect();
            self.input(&text.concat());
        }
        for block in content
            .iter()
            .filter(|b| str_at(b, "type") == "tool_result")
        {
            let output = match &block["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .map(|part| str_at(part, "text"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            let failed = block["is_error"].as_bool() == Some(true);
            self.result(failed, if failed { "error" } else { "ok" }, &output);
        }
    }

    /// Input the agent took while it ran: its first lines.
    fn input(&mut self, text: &str) {
        const SHOWN: usize = 4;
        let lines: Vec<&str> = text.trim().lines().collect();
        for (i, line) in lines.iter().take(SHOWN).enumerate() {
            let mark = if i == 0 { "» " } else { "  " };
            self.line(&format!("{mark}{}", clip_line(line, RESULT_CHARS)));
        }
        if lines.len() > SHOWN {
            self.line(&format!("  … {} more lines", lines.len() - SHOWN));
        }
    }

    fn claude_result(&mut self, event: &Value) {
        let usage = &event["usage"];
        let input = u64_at(usage, "input_tokens") + u64_at(usage, "cache_creation_input_tokens");
        let mut line = format!(
            "■ {} · {} turns · {}",
            if event["is_error"].as_bool() == Some(true) {
                "failed"
            } else {
                str_at(event, "subtype")
            },
            u64_at(event, "num_turns"),
            tokens(
                input,
                u64_at(usage, "output_tokens"),
                u64_at(usage, "cache_read_input_tokens")
            )
        );
        if let Some(usd) = event["total_cost_usd"].as_f64() {
            line.push_str(&format!(" · ${usd:.4}"));
        }
        if let Some(ms) = event["duration_ms"].as_u64() {
            line.push_str(&format!(" · {:.1} s", ms as f64 / 1000.0));
        }
        if event["is_error"].as_bool() == Some(true) {
            let why = str_at(event, "result");
            line.push_str(&format!(": {}", clip_line(why, RESULT_CHARS)));
        }
        self.line(&line);
    }

    fn gemini_result(&mut self, event: &Value) {
        let stats = &event["stats"];
        let mut line = format!(
            "■ {} · {}",
            str_at(event, "status"),
            tokens(
                u64_at(stats, "input_tokens"),
                u64_at(stats, "output_tokens"),
                u64_at(stats, "cached")
            )
        );
        if let Some(ms) = stats["duration_ms"].as_u64() {
            line.push_str(&format!(" · {:.1} s", ms as f64 / 1000.0));
        }
        if let Some(message) = event["error"]["message"].as_str() {
            line.push_str(&format!(": {}", clip_line(message, RESULT_CHARS)));
        }
        self.line(&line);
    }

    fn codex_item(&mut self, kind: &str, item: &Value) {
        let done = kind == "item.completed";
        match (str_at(item, "type"), done) {
            ("agent_message", true) => self.text(str_at(item, "text")),
            ("command_execution", false) => {
                let line = clip_line(&format!("→ $ {}", str_at(item, "command")), CALL_CHARS);
                self.line(&line);
            }
            ("command_execution", true) => {
                let exit = item["exit_code"].as_i64();
                let status = exit.map_or_else(|| "done".to_owned(), |code| format!("exit {code}"));
                self.result(
                    exit.is_some_and(|code| code != 0),
                    &status,
                    str_at(item, "aggregated_output"),
                );
            }
            ("file_change", true) => {
                let changes = item["changes"]
                    .as_array()
                    .map(|changes| {
                        changes
                            .iter()
                            .map(|c| format!("{} {}", str_at(c, "kind"), str_at(c, "path")))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                self.line(&clip_line(&format!("→ edit {changes}"), CALL_CHARS));
            }
            ("mcp_tool_call", false) => {
                let name = format!("{}.{}", str_at(item, "server"), str_at(item, "tool"));
                let call = call(&name, &item["arguments"]);
                self.line(&call);
            }
            ("web_search", true) => {
                let line = clip_line(&format!("→ search {}", str_at(item, "query")), CALL_CHARS);
                self.line(&line);
            }
            ("error", true) => {
                let line = format!("✗ {}", clip_line(str_at(item, "message"), RESULT_CHARS));
                self.line(&line);
            }
            _ => {}
        }
    }

    /// A tool's result: its status and the first lines of its output, clipped.
    fn result(&mut self, failed: bool, status: &str, output: &str) {
        let mark = if failed { "✗" } else { "←" };
        let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        let mut text = format!("  {mark} {status}");
        for line in lines.iter().take(RESULT_LINES) {
            text.push_str("\n    ");
            text.push_str(&clip_line(line, RESULT_CHARS));
        }
        if lines.len() > RESULT_LINES {
            text.push_str(&format!(
                "\n    … {} more lines",
                lines.len() - RESULT_LINES
            ));
        }
        self.line(&text);
    }
}

/// `→ Name(key=value, …)`, each value clipped, the whole clipped.
fn call(name: &str, args: &Value) -> String {
    let summary = match args {
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| {
                let value = match value {
                    Value::String(text) => format!("{text:?}"),
                    other => other.to_string(),
                };
                format!("{key}={}", clip_line(&value, ARG_CHARS))
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => clip_line(&other.to_string(), ARG_CHARS),
    };
    clip_line(&format!("→ {name}({summary})"), CALL_CHARS)
}

fn tokens(input: u64, output: u64, cached: u64) -> String {
    let mut text = format!("{input} in / {output} out tokens");
    if cached > 0 {
        text.push_str(&format!(" ({cached} cached)"));
    }
    text
}

/// The first line of `text`, at most `max` characters, marked when cut.
fn clip_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let more_lines = text.trim_end().contains('\n');
    if first.chars().count() > max {
        let kept: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    } else if more_lines {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn u64_at(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/streams/");
        std::fs::read(format!("{dir}{path}")).expect("fixture")
    }

    #[test]
    fn a_claude_run_reads_as_text_calls_results_and_cost() {
        let text = render(&fixture("claude/captured-write-tool.jsonl")).expect("a transcript");
        assert!(
            text.contains("→ Write(file_path=\"hello.txt\", content=\"hi\\n\")"),
            "{text}"
        );
        assert!(
            text.contains("  ← ok\n    File created successfully"),
            "{text}"
        );
        assert!(text.contains("Done."), "{text}");
        assert!(text.contains("· $0.2173"), "{text}");
        assert!(!text.contains("\"type\""), "no raw JSON: {text}");
    }

    /// A person's message shows where Claude took it: after the running tool's result.
    #[test]
    fn input_claude_took_while_it_ran_shows_where_it_took_it() {
        let text = render(&fixture("claude/captured-live-injected.jsonl")).expect("a transcript");
        let slept = text.find("  ← ok\n    slept").expect("the tool's result");
        let injected = text
            .find("» INJECTED: also check the README")
            .expect("the message");
        let done = text.find("done").expect("the answer");
        assert!(slept < injected && injected < done, "{text}");
        assert!(text.contains("» please sleep"), "the prompt: {text}");
        let skipped =
            render(&fixture("claude/captured-live-reused-uuid.jsonl")).expect("a transcript");
        assert!(!skipped.contains("» same uuid second"), "{skipped}");
        assert!(skipped.contains("» same uuid first"), "{skipped}");
    }

    #[test]
    fn a_codex_run_shows_commands_with_exit_codes_and_clipped_output() {
        let text = render(&fixture("codex/exec-json-normal.jsonl")).expect("a transcript");
        assert!(
            text.contains("→ $ bash -lc 'cargo test -p widget parse_header'"),
            "{text}"
        );
        assert!(text.contains("  ✗ exit 101\n    running 1 test"), "{text}");
        assert!(text.contains("→ edit update src/header.rs"), "{text}");
        assert!(
            text.contains("■ turn done · 31844 in / 1206 out tokens (27392 cached)"),
            "{text}"
        );
    }

    #[test]
    fn a_cursor_run_shows_its_tool_calls_by_name() {
        let text = render(&fixture("cursor/stream-json-tool-calls.jsonl")).expect("a transcript");
        assert!(text.contains("→ read(path=\"src/lib.rs\")"), "{text}");
        assert!(text.contains("→ shell(command=\"cargo test\")"), "{text}");
        assert!(text.contains("→ edit_file("), "{text}");
        assert!(text.contains("Fixed one test; two remain."), "{text}");
    }

    #[test]
    fn gemini_deltas_join_into_one_paragraph() {
        let text = render(&fixture("gemini/captured-write-file.jsonl")).expect("a transcript");
        assert!(
            text.contains("→ write_file(file_path=\"hello.txt\""),
            "{text}"
        );
        assert!(text.contains("  ← success"), "{text}");
        assert!(text.contains("Done.\n```loopx-report"), "{text}");
        assert!(
            text.contains("■ success · 21937 in / 68 out tokens"),
            "{text}"
        );
    }

    #[test]
    fn a_live_transcript_holds_a_paragraph_until_it_ends() {
        let mut live = LiveTranscript::default();
        let delta = |text: &str| {
            format!(r#"{{"type":"message","role":"assistant","content":"{text}","delta":true}}"#)
        };
        assert_eq!(live.line(&delta("Writing ")), "");
        assert_eq!(live.line(&delta("the file.")), "");
        assert_eq!(
            live.line(
                r#"{"type":"tool_use","tool_name":"write_file","parameters":{"file_path":"a"}}"#
            ),
            "Writing the file.\n→ write_file(file_path=\"a\")\n"
        );
        assert_eq!(live.line("a plain line"), "a plain line\n");
        assert_eq!(live.line(&delta("Done.")), "");
        assert_eq!(live.finish(), "Done.\n");
    }

    #[test]
    fn terminal_escapes_around_a_stream_are_not_part_of_its_transcript() {
        let stream = "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Done.\"}]}}\n\
                      {\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"Done.\"}\n\
                      \u{1b}[?25h\u{1b}[?1004l\u{1b}[?2004l\r\n";
        let text = render(stream.as_bytes()).expect("a transcript");
        assert!(
            !text.contains('\u{1b}') && !text.contains("[?25h"),
            "{text:?}"
        );
        assert!(text.contains("Done."), "{text}");
    }

    #[test]
    fn plain_output_is_not_a_transcript_and_long_results_are_clipped() {
        assert_eq!(render(b"hello\nworld\n{\"type\":\"x\"}\n"), None);
        assert_eq!(render(b""), None);
        let long = "x".repeat(500);
        let stream = format!(
            "{{\"type\":\"item.completed\",\"item\":{{\"type\":\"command_execution\",\"exit_code\":0,\"aggregated_output\":\"1\\n2\\n3\\n4\\n5\\n{long}\"}}}}\n"
        );
        let text = render(stream.as_bytes()).expect("a transcript");
        assert!(text.contains("… 3 more lines"), "{text}");
        assert!(!text.contains(&long), "{text}");
    }
}
