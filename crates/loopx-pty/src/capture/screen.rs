//! The agent's terminal screen, emulated with `vt100`: what a human would see, for
//! waiting-for-input detection, and the source of answers to terminal queries.

use crate::spec::TerminalSize;

/// Collects answers to queries that full-screen programs send and then block on until the
/// terminal replies (cursor position, status, device attributes).
#[derive(Debug, Default)]
pub(crate) struct QueryAnswers {
    pending: Vec<Vec<u8>>,
}

impl vt100::Callbacks for QueryAnswers {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        _i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied();
        let answer = match (i1, c, first) {
            // DSR 6: cursor position report, 1-based.
            (None, 'n', Some(6)) => {
                let (row, col) = screen.cursor_position();
                format!("\x1b[{};{}R", u32::from(row) + 1, u32::from(col) + 1)
            }
            // DSR 5: "are you OK" -> "OK".
            (None, 'n', Some(5)) => "\x1b[0n".to_owned(),
            // DA1: a VT102-class terminal.
            (None, 'c', None | Some(0)) => "\x1b[?6c".to_owned(),
            _ => return,
        };
        self.pending.push(answer.into_bytes());
    }
}

/// What the screen shows at one moment; equal snapshots mean nothing visible changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScreenSnapshot {
    pub(crate) contents: String,
    pub(crate) cursor: (u16, u16),
}

pub(crate) struct Screen {
    parser: vt100::Parser<QueryAnswers>,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screen").finish_non_exhaustive()
    }
}

impl Screen {
    pub(crate) fn new(size: TerminalSize) -> Self {
        // No scrollback: only the visible screen matters, and memory must stay bounded.
        Self {
            parser: vt100::Parser::new_with_callbacks(
                size.rows,
                size.cols,
                0,
                QueryAnswers::default(),
            ),
        }
    }

    /// Feeds output; returns the answers to any terminal queries in it, in order.
    pub(crate) fn process(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.parser.process(bytes);
        std::mem::take(&mut self.parser.callbacks_mut().pending)
    }

    pub(crate) fn snapshot(&self) -> ScreenSnapshot {
        let screen = self.parser.screen();
        ScreenSnapshot {
            contents: screen.contents(),
            cursor: screen.cursor_position(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_cursor_position_where_the_cursor_is() {
        let mut screen = Screen::new(TerminalSize { rows: 5, cols: 20 });
        let answers = screen.process(b"hello\r\nab\x1b[6n");
        assert_eq!(answers, [b"\x1b[2;3R".to_vec()]);
        assert!(screen.process(b"\x1b[?6n\x1b[6q").is_empty());
        assert_eq!(
            screen.process(b"\x1b[5n\x1b[c"),
            [b"\x1b[0n".to_vec(), b"\x1b[?6c".to_vec()]
        );
    }

    #[test]
    fn snapshots_change_only_with_visible_output() {
        let mut screen = Screen::new(TerminalSize { rows: 5, cols: 20 });
        screen.process(b"Proceed? [y/N] ");
        let before = screen.snapshot();
        assert!(before.contents.contains("Proceed? [y/N]"));
        screen.process(b"\x1b[6n\x1b]0;title\x07");
        assert_eq!(screen.snapshot(), before);
        screen.process(b"y");
        assert_ne!(screen.snapshot(), before);
    }
}
