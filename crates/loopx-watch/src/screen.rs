//! One slice's screen, re-emulated: its raw log read as it grows, fed to a `vt100` terminal of
//! the slice's own size (the emulator the supervisor uses), and turned into styled lines with
//! every secret the log may still hold redacted.
//!
//! A running slice's log is redacted in full only when the slice ends (a copy replaces the
//! file); until then it holds what the agent printed, less the values loopx masked. So the
//! screen's text is redacted each time it is shown: a screen with something to redact is shown
//! as plain redacted text (its colours are lost, never a secret shown). The file is kept open:
//! at the slice's end the copy replaces it under its name, and this reads on in the file the
//! agent's output went into.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use loopx_kernel::redact::Redactor;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Where the supervisor writes a slice's output (as `loopx log --slice` and the board read it).
pub fn log_path(project: &loopx_kernel::Project, slice: &str) -> PathBuf {
    project
        .state_dir()
        .join("slices")
        .join(format!("{slice}.log"))
}

/// A log up to this size is emulated from its start when a pane opens on it.
const WHOLE_LOG: u64 = 4 << 20;
/// Of a larger one, the last this many bytes.
const TAIL_OF_LOG: u64 = 1 << 20;

/// The most read from a log in one look: a flood is emulated in steps, never all held.
const READ_AT_ONCE: u64 = 4 << 20;

/// Transcript lines kept for a structured stream's pane: a few screens' worth.
const TRANSCRIPT_LINES: usize = 200;

/// What a pane makes of the bytes.
enum Shown {
    /// The agent's terminal, emulated.
    Terminal(Box<vt100::Parser>),
    /// A structured stream (Claude Code's stream-json, Codex's JSON, …) is not a screen
    /// anyone reads: it is shown as its transcript, as `loopx log --follow` shows it.
    Transcript {
        live: loopx_adapters::transcript::LiveTranscript,
        /// The start of a line not yet whole.
        partial: Vec<u8>,
        lines: std::collections::VecDeque<String>,
    },
}

/// A slice's log followed into a terminal emulator (or its transcript).
pub struct LiveScreen {
    path: PathBuf,
    file: Option<File>,
    offset: u64,
    shown: Shown,
    /// The agent's stream read for the tokens it reports (its adapter's parser).
    tokens: Option<loopx_adapters::Parser>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for LiveScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveScreen")
            .field("path", &self.path)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl LiveScreen {
    /// Follows the log at `path` (it may not exist yet); `tokens` reads the agent's stream
    /// for its usage, when its adapter is known, and a structured stream's pane shows its
    /// transcript.
    pub fn new(path: PathBuf, tokens: Option<loopx_adapters::Parser>) -> LiveScreen {
        let structured = tokens
            .as_ref()
            .is_some_and(|p| p.summary().format != loopx_adapters::OutputFormat::Text);
        let size = loopx_pty::TerminalSize::default();
        let shown = match structured {
            true => Shown::Transcript {
                live: Default::default(),
                partial: Vec::new(),
                lines: Default::default(),
            },
            // No scrollback: the pane shows the screen, as the agent's terminal does.
            false => Shown::Terminal(Box::new(vt100::Parser::new(size.rows, size.cols, 0))),
        };
        LiveScreen {
            path,
            file: None,
            offset: 0,
            shown,
            tokens,
            buf: Vec::new(),
        }
    }

    /// Reads what the log gained and feeds it to the terminal; whether anything came.
    pub fn read_new(&mut self) -> bool {
        if self.file.is_none() {
            self.file = loopx_adapters::open_regular(&self.path).ok();
            // A log larger than a profile's default keeps (a raised `max_output`) is followed
            // from near its end: emulating all of it first would hold the view up for seconds.
            let len = self
                .file
                .as_ref()
                .and_then(|f| f.metadata().ok())
                .map_or(0, |m| m.len());
            if len > WHOLE_LOG {
                self.offset = len - TAIL_OF_LOG;
            }
        }
        let Some(file) = &mut self.file else {
            return false;
        };
        self.buf.clear();
        let read = file
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.take(READ_AT_ONCE).read_to_end(&mut self.buf));
        if read.is_err() || self.buf.is_empty() {
            return false;
        }
        self.offset += self.buf.len() as u64;
        match &mut self.shown {
            Shown::Terminal(terminal) => terminal.process(&self.buf),
            Shown::Transcript {
                live,
                partial,
                lines,
            } => transcribe(&self.buf, live, partial, lines),
        }
        if let Some(parser) = &mut self.tokens {
            parser.feed(&self.buf, jiff::Timestamp::now(), &mut |_| {});
        }
        true
    }

    /// Tokens the agent reported so far, when its stream says.
    pub fn tokens(&self) -> Option<u64> {
        let usage = self.tokens.as_ref()?.summary().usage();
        let total = usage.input.saturating_add(usage.output);
        (total > 0).then_some(total)
    }

    /// The screen as lines, redacted, and the row the agent last wrote near.
    pub fn lines(&self, redactor: &Redactor) -> (Vec<Line<'static>>, usize) {
        match &self.shown {
            Shown::Terminal(terminal) => lines(terminal.screen(), redactor),
            Shown::Transcript { lines, .. } => {
                let rows = usize::from(loopx_pty::TerminalSize::default().rows);
                let last: Vec<&str> = lines
                    .iter()
                    .skip(lines.len().saturating_sub(rows))
                    .map(String::as_str)
                    .collect();
                let text = redact_screen(&last.join("\n"), redactor);
                let shown: Vec<Line<'static>> =
                    text.lines().map(|l| Line::raw(l.to_owned())).collect();
                let focus = shown.len().saturating_sub(1);
                (shown, focus)
            }
        }
    }
}

/// Whole lines of a structured stream into its transcript: each event as its transcript line,
/// a plain line with its escape sequences stripped; control characters made visible.
fn transcribe(
    bytes: &[u8],
    live: &mut loopx_adapters::transcript::LiveTranscript,
    partial: &mut Vec<u8>,
    lines: &mut std::collections::VecDeque<String>,
) {
    partial.extend_from_slice(bytes);
    let Some(end) = partial.iter().rposition(|&b| b == b'\n') else {
        return;
    };
    let whole: Vec<u8> = partial.drain(..=end).collect();
    for line in String::from_utf8_lossy(&whole).lines() {
        let plain = match line.trim_start().starts_with('{') {
            true => line.to_owned(),
            false => loopx_vocab::strip_escapes(line.as_bytes()),
        };
        let text = live.line(&plain);
        lines.extend(
            loopx_vocab::clean_text(text.as_bytes())
                .lines()
                .map(str::to_owned),
        );
    }
    while lines.len() > TRANSCRIPT_LINES {
        lines.pop_front();
    }
}

/// `screen` as styled lines, or as plain redacted text when something on it is a secret; and
/// the row the agent last wrote near (its cursor, or below it the last row with text).
pub fn lines(screen: &vt100::Screen, redactor: &Redactor) -> (Vec<Line<'static>>, usize) {
    let (rows, cols) = screen.size();
    let texts: Vec<String> = screen.rows(0, cols).collect();
    let last_text = texts
        .iter()
        .rposition(|t| !t.trim().is_empty())
        .unwrap_or(0);
    let focus = usize::from(screen.cursor_position().0).max(last_text);
    let whole = texts.join("\n");
    let redacted = redact_screen(&whole, redactor);
    if redacted != whole {
        let plain = redacted
            .lines()
            .map(|l| Line::raw(loopx_vocab::clean_text(l.as_bytes())))
            .collect();
        return (plain, focus);
    }
    let styled = (0..rows).map(|row| styled_row(screen, row, cols)).collect();
    (styled, focus)
}

/// The screen's text redacted. A private key whose first line scrolled off shows none of
/// what is left of it: the redaction needs that line.
fn redact_screen(text: &str, redactor: &Redactor) -> String {
    let mut text = text.to_owned();
    if let Some(end) = text.find("-----END")
        && !text[..end].contains("-----BEGIN")
    {
        let after = text[end..].find('\n').map_or(text.len(), |i| end + i);
        let rows = text[..after].matches('\n').count();
        // As many rows as it covered, so the rows below stay where the agent put them.
        let hidden = "[redacted: the rest of a key]".to_owned() + &"\n".repeat(rows);
        text.replace_range(..after, &hidden);
    }
    redactor.redact(&text).into_owned()
}

/// One row of cells as spans of equal style.
fn styled_row(screen: &vt100::Screen, row: u16, cols: u16) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = Style::default();
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            continue;
        };
        if cell.is_wide_continuation() {
            continue;
        }
        let here = cell_style(cell);
        if here != style && !text.is_empty() {
            spans.push(Span::styled(std::mem::take(&mut text), style));
        }
        style = here;
        let contents = cell.contents();
        // Control characters never reach the person's terminal: the emulator keeps printable
        // text in cells, and anything else is shown as a space.
        match contents.chars().all(|c| !c.is_control()) && !contents.is_empty() {
            true => text.push_str(contents),
            false => text.push(' '),
        }
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style));
    }
    Line::from(spans)
}

fn cell_style(cell: &vt100::Cell) -> Style {
    let mut style = Style::default()
        .fg(color(cell.fgcolor()))
        .bg(color(cell.bgcolor()));
    let flags = [
        (cell.bold(), Modifier::BOLD),
        (cell.dim(), Modifier::DIM),
        (cell.italic(), Modifier::ITALIC),
        (cell.underline(), Modifier::UNDERLINED),
        (cell.inverse(), Modifier::REVERSED),
    ];
    for (on, modifier) in flags {
        if on {
            style = style.add_modifier(modifier);
        }
    }
    style
}

fn color(c: vt100::Color) -> Color {
    match c {
        vt100::Color::Default => Color::Reset,
        vt100::Color::Idx(i) => Color::Indexed(i),
        vt100::Color::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen_of(bytes: &[u8]) -> vt100::Parser {
        let mut parser = vt100::Parser::new(6, 30, 0);
        parser.process(bytes);
        parser
    }

    fn text(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_structured_stream_shows_its_transcript_and_its_tokens() {
        let stream = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/streams/claude/captured-write-tool.jsonl"
        ))
        .expect("fixture");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s1.log");
        std::fs::write(&path, &stream).expect("log");
        let parser = loopx_adapters::Parser::new(loopx_adapters::OutputFormat::ClaudeStreamJson);
        let mut screen = LiveScreen::new(path.clone(), Some(parser));
        assert!(screen.read_new());
        let shown = text(&screen.lines(&Redactor::new()).0);
        assert!(shown.contains("→ Write(file_path=\"hello.txt\""), "{shown}");
        assert!(!shown.contains("\"type\":\"assistant\""), "{shown}");
        assert!(screen.tokens().is_some_and(|t| t > 0));
        // A plain-text agent's pane is its terminal, escape sequences emulated.
        std::fs::write(&path, b"\x1b[1mbold\x1b[0m text\r\n").expect("log");
        let plain = loopx_adapters::Parser::new(loopx_adapters::OutputFormat::Text);
        let mut screen = LiveScreen::new(path, Some(plain));
        assert!(screen.read_new());
        let (lines, _) = screen.lines(&Redactor::new());
        assert!(lines[0].to_string().starts_with("bold text"));
        assert_eq!(screen.tokens(), None);
    }

    #[test]
    fn colours_and_cursor_moves_come_through_the_emulator() {
        let parser = screen_of(b"\x1b[31mred\x1b[0m plain\x1b[3;5Hthere");
        let (lines, focus) = lines(parser.screen(), &Redactor::new());
        assert!(lines[0].to_string().starts_with("red plain"));
        assert_eq!(lines[0].spans[0].style.fg, Some(Color::Indexed(1)));
        assert!(lines[2].to_string().starts_with("    there"));
        assert_eq!(focus, 2, "the cursor's row");
    }

    #[test]
    fn a_secret_on_the_screen_is_redacted_and_a_key_cut_at_the_top_is_hidden() {
        let parser = screen_of(b"token sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123\r\n");
        let shown = text(&lines(parser.screen(), &Redactor::new()).0);
        assert!(!shown.contains("abcdefghijklmnop"), "{shown}");
        let parser = screen_of(
            b"MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX\r\n-----END RSA PRIVATE KEY-----\r\nafter\r\n",
        );
        let shown = text(&lines(parser.screen(), &Redactor::new()).0);
        assert!(!shown.contains("MIIBOgIBAAJ"), "{shown}");
        assert!(shown.contains("after"), "{shown}");
    }
}
