//! The incremental output parser. Feed it lines (or raw PTY bytes, which it splits into lines)
//! as they arrive; it yields [`AgentEvent`]s and keeps a [`StreamSummary`].
//!
//! Robustness rules: a line may end in `\r\n` and carry ANSI escape sequences (a PTY adds both);
//! a line that is not JSON, or a JSON event of an unknown type, is skipped (counted in
//! `skipped_lines`), never fatal; a line longer than [`MAX_LINE_BYTES`] is dropped whole, so
//! memory stays bounded whatever the agent prints.

mod ansi;
mod claude;
mod codex;
mod gemini;
mod json;
mod rollout;

use jiff::Timestamp;

use crate::adapter::{Adapter, OutputFormat, SignalRule, SignalScope};
use crate::event::{AgentEvent, StreamSummary};
use crate::signals::{detect, retry_from_text};

pub use ansi::strip_ansi;

/// Longest line kept; longer lines are skipped (Claude tool results can be megabytes).
pub const MAX_LINE_BYTES: usize = 8 << 20;

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
    /// `gemini-json`: a pretty-printed document being collected.
    document: Option<String>,
}

impl Parser {
    /// A parser for `format` with the built-in detectors only.
    pub fn new(format: OutputFormat) -> Self {
        Self {
            format,
            rules: Vec::new(),
            summary: StreamSummary::new(format),
            pending: Vec::new(),
            overlong: false,
            gemini_message: String::new(),
            document: None,
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
    pub fn with_format(mut self, format: OutputFormat) -> Self {
        self.format = format;
        self.summary.format = format;
        self
    }

    /// The summary so far.
    pub fn summary(&self) -> &StreamSummary {
        &self.summary
    }

    /// Feed one line (with or without its line ending). `now` dates relative reset times
    /// ("try again in 5 hours") when the event carries no timestamp of its own.
    pub fn feed_line(&mut self, line: &str, now: Timestamp) -> Vec<AgentEvent> {
        self.summary.lines += 1;
        let cleaned = strip_ansi(line.trim_end_matches(['\n', '\r']));
        let events = self.parse_line(cleaned.trim(), now);
        events.iter().for_each(|e| self.summary.apply(e));
        events
    }

    /// Feed raw bytes; complete lines are parsed, a partial line waits for more (or
    /// [`Parser::finish`]). Invalid UTF-8 is replaced, not rejected.
    pub fn feed_bytes(&mut self, bytes: &[u8], now: Timestamp) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        let mut rest = bytes;
        while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
            let (head, tail) = rest.split_at(newline);
            rest = &tail[1..];
            if self.overlong {
                self.overlong = false;
                self.summary.lines += 1;
                self.summary.skipped_lines += 1;
                continue;
            }
            self.pending.extend_from_slice(head);
            let line = String::from_utf8_lossy(&self.pending).into_owned();
            self.pending.clear();
            events.extend(self.feed_line(&line, now));
        }
        if !self.overlong {
            self.pending.extend_from_slice(rest);
            if self.pending.len() > MAX_LINE_BYTES {
                self.pending = Vec::new();
                self.overlong = true;
            }
        }
        events
    }

    /// End of output: parse a trailing partial line and any document still being collected.
    pub fn finish(&mut self, now: Timestamp) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        if !self.pending.is_empty() && !self.overlong {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            events.extend(self.feed_line(&line, now));
        }
        if let Some(doc) = self.document.take() {
            // An unfinished document: try it anyway; a truncated one is simply skipped.
            let parsed = gemini::document(&doc, &self.rules, now);
            parsed.iter().for_each(|e| self.summary.apply(e));
            events.extend(parsed);
        }
        events
    }

    /// Consume the parser, returning the summary.
    pub fn into_summary(self) -> StreamSummary {
        self.summary
    }

    fn parse_line(&mut self, line: &str, now: Timestamp) -> Vec<AgentEvent> {
        if line.is_empty() {
            return Vec::new();
        }
        if self.format == OutputFormat::GeminiJson
            && let Some(events) = self.collect_document(line, now)
        {
            return events;
        }
        let json = match line.starts_with('{') {
            true => serde_json::from_str::<serde_json::Value>(line).ok(),
            false => None,
        };
        let events = match (json, self.format) {
            (Some(value), OutputFormat::ClaudeStreamJson) => {
                claude::event(&value, &self.rules, now)
            }
            (Some(value), OutputFormat::CodexJson) => codex::event(&value, &self.rules, now),
            (Some(value), OutputFormat::GeminiStreamJson | OutputFormat::GeminiJson) => {
                gemini::event(&value, &mut self.gemini_message, &self.rules, now)
            }
            (Some(value), OutputFormat::CodexRollout) => rollout::event(&value, now),
            (_, OutputFormat::Text) => return self.text_line(line, now),
            (None, _) => return self.foreign_line(line, now),
        };
        if events.is_none() {
            self.summary.skipped_lines += 1;
        }
        events.unwrap_or_default()
    }

    /// A plain-text agent: every line is the agent's words, so the adapter's `final` rules run
    /// on it; the last lines are kept as the final message for the report block.
    fn text_line(&mut self, line: &str, now: Timestamp) -> Vec<AgentEvent> {
        let mut events = detect(line, now, &self.rules, SignalScope::Final);
        let mut message = self.summary.final_message.take().unwrap_or_default();
        message.push_str(line);
        message.push('\n');
        // Keep a bounded tail: the report block comes at the end.
        const TAIL: usize = 256 << 10;
        if message.len() > TAIL {
            let mut cut = message.len() - TAIL;
            while !message.is_char_boundary(cut) {
                cut += 1;
            }
            message.drain(..cut);
        }
        events.push(AgentEvent::Message { text: message });
        events
    }

    /// A line outside a structured stream: the CLI's own stderr, in a PTY.
    fn foreign_line(&mut self, line: &str, now: Timestamp) -> Vec<AgentEvent> {
        if let Some(retry) = retry_from_text(line) {
            return vec![retry];
        }
        let events = detect(line, now, &self.rules, SignalScope::Line);
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
