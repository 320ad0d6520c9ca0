//! The incremental output parser. Feed it raw PTY bytes as they arrive ([`Parser::feed`]);
//! it hands each [`AgentEvent`] to a sink and keeps a [`StreamSummary`].
//!
//! It streams in bounded memory and linear time, whatever the agent prints: a partial line, one
//! JSON event at a time, and a tail of the last bytes. A plain-text agent's words are read once,
//! at the end ([`Parser::finish`]): its final message is the tail, and only its last lines are
//! matched against signal wording — a sentence about a rate limit in the middle of its work is
//! not a rate limit. In a structured stream, a line that is not JSON is the CLI's own stderr
//! (a PTY merges both): the adapter's `line` rules read it as it arrives, the built-in wording
//! at the end.
//!
//! Robustness rules: a line may end in `\r\n` and carry ANSI escape sequences (a PTY adds both);
//! a line that is not JSON, or a JSON event of an unknown type, is skipped (counted in
//! `skipped_lines`), never fatal; a line longer than [`MAX_LINE_BYTES`] is dropped whole.

mod claude;
mod codex;
mod cursor;
mod gemini;
mod json;
mod opencode;
mod qwen;
mod rollout;
mod tail;

use jiff::Timestamp;

use crate::adapter::{Adapter, OutputFormat, SignalRule, SignalScope};
use crate::event::{AgentEvent, StreamSummary};
use crate::signals::{detect, detect_final, detect_rules, retry_from_text};

use loopx_vocab::strip_ansi;
use tail::Tail;

/// Longest line kept; longer lines are skipped (Claude tool results can be megabytes).
pub const MAX_LINE_BYTES: usize = 8 << 20;
/// The bytes of a plain-text agent's output kept as its final message: room for a report block.
const TEXT_TAIL: usize = 256 << 10;
/// The CLI's own lines outside a structured stream kept for the end.
const FOREIGN_TAIL: usize = 64 << 10;
/// How many of a plain-text agent's last lines are matched against signal wording.
const FINAL_LINES: usize = 12;

/// Reads one agent's output.
#[derive(Debug)]
pub struct Parser {
    format: OutputFormat,
    rules: Vec<SignalRule>,
    summary: StreamSummary,
    pending: Vec<u8>,
    overlong: bool,
    /// Gemini: the assistant message being streamed in deltas.
    gemini_message: String,
    /// OpenCode: the run's cost so far (each step reports its own).
    opencode_cost: f64,
    /// OpenCode: the last step ended the run (`reason:"stop"`) and nothing followed yet.
    opencode_stopped: bool,
    /// Qwen Code: the last assistant message was its own report of a failed request.
    qwen_api_error: bool,
    /// `gemini-json`: a pretty-printed document being collected.
    document: Option<String>,
    /// The last bytes of a plain-text agent's output, or the lines outside a structured
    /// stream.
    tail: Tail,
}

impl Parser {
    /// A parser for `format` with the built-in detectors only.
    pub fn new(format: OutputFormat) -> Self {
        let cap = if format == OutputFormat::Text {
            TEXT_TAIL
        } else {
            FOREIGN_TAIL
        };
        Self {
            format,
            rules: Vec::new(),
            summary: StreamSummary::new(format),
            pending: Vec::new(),
            overlong: false,
            gemini_message: String::new(),
            opencode_cost: 0.0,
            opencode_stopped: false,
            qwen_api_error: false,
            document: None,
            tail: Tail::new(cap),
        }
    }

    /// A parser for an adapter: its format, its extra signal rules and its exit-code meanings.
    pub fn for_adapter(adapter: &Adapter) -> Self {
        let mut parser = Self::new(adapter.output);
        parser.rules.clone_from(&adapter.signals);
        parser.summary.exit_codes.clone_from(&adapter.exit_codes);
        parser
    }

    /// The same parser reading another format (e.g. a Codex adapter's rollout files).
    pub fn with_format(self, format: OutputFormat) -> Self {
        let mut parser = Self::new(format);
        parser.rules = self.rules;
        parser.summary.exit_codes = self.summary.exit_codes;
        parser
    }

    /// The summary so far.
    pub fn summary(&self) -> &StreamSummary {
        &self.summary
    }

    /// Feed raw bytes; complete lines are parsed, a partial line waits for more (or
    /// [`Parser::finish`]). Invalid UTF-8 is replaced, not rejected. `now` dates relative
    /// reset times ("try again in 5 hours") when an event carries no timestamp of its own.
    pub fn feed(&mut self, bytes: &[u8], now: Timestamp, sink: &mut dyn FnMut(AgentEvent)) {
        let mut rest = bytes;
        while let Some(newline) = memchr::memchr(b'\n', rest) {
            let (head, tail) = rest.split_at(newline);
            rest = &tail[1..];
            if self.overlong {
                self.overlong = false;
                self.summary.lines += 1;
                self.summary.skipped_lines += 1;
                continue;
            }
            if self.pending.is_empty() {
                self.line(head, now, sink);
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(head);
                self.line(&line, now, sink);
                line.clear();
                self.pending = line;
            }
        }
        if !self.overlong {
            self.pending.extend_from_slice(rest);
            if self.pending.len() > MAX_LINE_BYTES {
                self.pending = Vec::new();
                self.overlong = true;
            }
        }
    }

    /// [`Parser::feed`], collecting the events.
    pub fn feed_bytes(&mut self, bytes: &[u8], now: Timestamp) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        self.feed(bytes, now, &mut |e| events.push(e));
        events
    }

    /// Feed one line (with or without its line ending).
    pub fn feed_line(&mut self, line: &str, now: Timestamp) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        let line = line.trim_end_matches(['\n', '\r']);
        self.feed(line.as_bytes(), now, &mut |e| events.push(e));
        self.feed(b"\n", now, &mut |e| events.push(e));
        events
    }

    /// End of output: parse a trailing partial line and any document still being collected,
    /// and read what was kept for the end (a plain-text agent's final message and last lines;
    /// the lines outside a structured stream, for the built-in wording). Returns the events it
    /// adds.
    pub fn finish(&mut self, now: Timestamp) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        let mut sink = |e: AgentEvent| events.push(e);
        if !self.pending.is_empty() && !self.overlong {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, now, &mut sink);
        }
        if let Some(doc) = self.document.take() {
            // An unfinished document: try it anyway; a truncated one is simply skipped.
            for event in gemini::document(&doc, &self.rules, now) {
                self.emit(event, &mut sink);
            }
        }
        if std::mem::take(&mut self.opencode_stopped) {
            self.emit(opencode::finished(), &mut sink);
        }
        let kept: String = String::from_utf8_lossy(&self.tail.take())
            .lines()
            .map(|line| strip_ansi(line) + "\n")
            .collect();
        if self.format == OutputFormat::Text {
            for event in detect_final(&last_lines(&kept, FINAL_LINES), now, &self.rules) {
                self.emit(event, &mut sink);
            }
            if !kept.trim().is_empty() {
                self.emit(AgentEvent::Message { text: kept }, &mut sink);
            }
        } else {
            for line in kept.lines().map(str::trim).filter(|l| !l.is_empty()) {
                for event in self.foreign_line(line, now) {
                    self.emit(event, &mut sink);
                }
            }
        }
        events
    }

    /// Consume the parser, returning the summary.
    pub fn into_summary(self) -> StreamSummary {
        self.summary
    }

    fn emit(&mut self, event: AgentEvent, sink: &mut dyn FnMut(AgentEvent)) {
        self.summary.apply(&event);
        sink(event);
    }

    /// One complete line, without its `\n`.
    fn line(&mut self, bytes: &[u8], now: Timestamp, sink: &mut dyn FnMut(AgentEvent)) {
        self.summary.lines += 1;
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if self.format == OutputFormat::Text {
            // Read once, at the end: every line is the agent's own words.
            self.tail.push_line(bytes);
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let cleaned = if memchr::memchr2(0x1b, 0x07, bytes).is_some() || bytes.contains(&0x08) {
            std::borrow::Cow::Owned(strip_ansi(&text))
        } else {
            text
        };
        let line = cleaned.trim();
        if line.is_empty() {
            return;
        }
        if self.format == OutputFormat::GeminiJson
            && let Some(events) = self.collect_document(line, now)
        {
            for event in events {
                self.emit(event, sink);
            }
            return;
        }
        let json = match line.starts_with('{') {
            true => serde_json::from_str::<serde_json::Value>(line).ok(),
            false => None,
        };
        let Some(value) = json else {
            // Outside the stream: the CLI's stderr, in a PTY — or anything the agent's tools
            // print to the terminal, or a path the CLI echoes. Only the adapter's own `line`
            // rules, which know the CLI's log format, are read as the line comes: a CLI may log
            // a refused request and then sleep an hour before retrying it (OpenCode on a long
            // `retry-after`), and that refusal stops the slice. The built-in wording is read at
            // the end, where it only weighs in the outcome.
            for event in detect_rules(line, now, &self.rules, SignalScope::Line) {
                self.emit(event, sink);
            }
            self.tail.push_line(line.as_bytes());
            return;
        };
        let events = match self.format {
            OutputFormat::ClaudeStreamJson => claude::event(&value, &self.rules, now),
            OutputFormat::CodexJson => codex::event(&value, &self.rules, now),
            OutputFormat::CursorStreamJson => cursor::event(&value, &self.rules, now),
            OutputFormat::QwenStreamJson => {
                qwen::event(&value, &mut self.qwen_api_error, &self.rules, now)
            }
            OutputFormat::OpencodeJson => opencode::event(
                &value,
                &mut self.opencode_cost,
                &mut self.opencode_stopped,
                &self.rules,
                now,
            ),
            OutputFormat::GeminiStreamJson | OutputFormat::GeminiJson => {
                gemini::event(&value, &mut self.gemini_message, &self.rules, now)
            }
            OutputFormat::CodexRollout => rollout::event(&value, now),
            OutputFormat::Text => unreachable!("plain text is kept for the end"),
        };
        match events {
            Some(events) => {
                for event in events {
                    self.emit(event, sink);
                }
            }
            None => self.summary.skipped_lines += 1,
        }
    }

    /// A line outside a structured stream, at the end: retries and the built-in wording (the
    /// adapter's `line` rules ran when it came).
    fn foreign_line(&mut self, line: &str, now: Timestamp) -> Vec<AgentEvent> {
        if let Some(retry) = retry_from_text(line) {
            return vec![retry];
        }
        let events = detect(line, now, &[], SignalScope::Line);
        if events.is_empty() {
            self.summary.skipped_lines += 1;
        }
        events
    }

    /// `gemini-json` prints one pretty-printed document: collect from a line `{` to the line
    /// `}` that closes it. `None` when the line is not part of a document.
    fn collect_document(&mut self, line: &str, now: Timestamp) -> Option<Vec<AgentEvent>> {
        let doc = match self.document.as_mut() {
            Some(doc) => doc,
            None if line == "{" => self.document.insert(String::new()),
            None => return None,
        };
        doc.push_str(line);
        doc.push('\n');
        if doc.len() > MAX_LINE_BYTES {
            self.document = None;
            self.summary.skipped_lines += 1;
            return Some(Vec::new());
        }
        if line == "}" && serde_json::from_str::<serde_json::Value>(doc).is_ok() {
            let doc = self.document.take().unwrap_or_default();
            return Some(gemini::document(&doc, &self.rules, now));
        }
        Some(Vec::new())
    }
}

/// The last `n` non-blank lines of `text`, oldest first.
fn last_lines(text: &str, n: usize) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(n)
        .collect();
    lines.reverse();
    lines
}
