//! Terminal output made safe to show, to store and to parse: the one recogniser of escape
//! sequences every crate uses (the PTY's capture, `loopx log`, the board, the output parser,
//! the redactor), so that a sequence one of them removes the others remove too.

/// A streaming stripper of terminal control sequences. Feed it output in chunks of any size;
/// a sequence split across chunks is still removed whole.
///
/// It removes CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ST`), DCS/SOS/PM/APC strings
/// (`ESC P|X|^|_ … ST`) and other escape sequences. Text is decoded as UTF-8 lossily later by
/// [`clean_text`], which also drops the remaining control characters.
///
/// ```
/// let mut strip = loopx_vocab::AnsiStripper::default();
/// let mut out = Vec::new();
/// strip.feed(b"\x1b[1;31mred\x1b[0m \x1b]0;title\x07", &mut out);
/// strip.feed(b"done\x1b[", &mut out);
/// strip.feed(b"2K!", &mut out);
/// assert_eq!(loopx_vocab::clean_text(&out), "red done!");
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AnsiStripper {
    state: State,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and an intermediate byte (0x20..=0x2F).
    EscapeIntermediate,
    /// Inside `ESC [` parameters.
    Csi,
    /// Inside an OSC or DCS/SOS/PM/APC string, which ends at BEL (OSC) or ST (`ESC \`).
    String,
    /// After ESC inside a string: `\` ends it, anything else is part of it.
    StringEscape,
}

impl AnsiStripper {
    /// Strips `input`, appending the text to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &byte in input {
            self.state = match (self.state, byte) {
                (State::Ground, 0x1b) => State::Escape,
                (State::Ground, _) => {
                    out.push(byte);
                    State::Ground
                }
                (State::Escape, b'[') => State::Csi,
                (State::Escape, b']' | b'P' | b'X' | b'^' | b'_') => State::String,
                (State::Escape, 0x20..=0x2f) => State::EscapeIntermediate,
                (State::Escape, 0x1b) => State::Escape,
                // No escape goes on with a non-ASCII byte: the ESC alone is dropped, and the
                // byte starts a character, kept whole (taking it would leave the rest of a
                // UTF-8 sequence to decode as one replacement character per byte).
                (State::Escape | State::EscapeIntermediate, 0x80..=0xff) => {
                    out.push(byte);
                    State::Ground
                }
                // Any other byte ends a two-byte escape (e.g. `ESC 7`, `ESC c`).
                (State::Escape, _) => State::Ground,
                (State::EscapeIntermediate, 0x20..=0x2f) => State::EscapeIntermediate,
                (State::EscapeIntermediate, _) => State::Ground,
                // CSI final bytes are 0x40..=0x7E; parameters and intermediates come before.
                (State::Csi, 0x40..=0x7e) => State::Ground,
                (State::Csi, 0x1b) => State::Escape,
                // A control character inside CSI cancels it (CAN/SUB) or is executed; either
                // way nothing of it belongs in the text.
                (State::Csi, 0x18 | 0x1a) => State::Ground,
                (State::Csi, _) => State::Csi,
                (State::String, 0x07 | 0x18 | 0x1a) => State::Ground,
                (State::String, 0x1b) => State::StringEscape,
                (State::String, _) => State::String,
                (State::StringEscape, b'\\') => State::Ground,
                (State::StringEscape, 0x1b) => State::StringEscape,
                (State::StringEscape, _) => State::String,
            };
        }
    }
}

/// `output` without its escape sequences, decoded as UTF-8 (invalid bytes become U+FFFD);
/// every other character, control characters included, is kept. For text that is stored or
/// read further; what is shown to a person goes through [`clean_text`] as well.
pub fn strip_escapes(output: &[u8]) -> String {
    let mut out = Vec::with_capacity(output.len());
    AnsiStripper::default().feed(output, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Decodes stripped output as UTF-8 (invalid bytes become U+FFFD) and keeps only what is safe
/// to print: `\r\n` and lone `\r` become `\n`, tabs stay, every other C0/C1 control, DEL and
/// bidirectional override is dropped.
pub fn clean_text(stripped: &[u8]) -> String {
    let decoded = String::from_utf8_lossy(stripped);
    let mut text = String::with_capacity(decoded.len());
    let mut chars = decoded.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    text.push('\n');
                }
            }
            '\n' | '\t' => text.push(c),
            c if c.is_control() => {}
            // Bidi embeddings, overrides and isolates can make shown text lie about its order.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => text.push(c),
        }
    }
    text
}

/// One line read through a PTY as plain text: [`clean_text`] of it without its escape
/// sequences, and without line breaks (a `\r` the PTY added, or one meant to overwrite).
pub fn strip_ansi(line: &str) -> String {
    let mut stripped = Vec::with_capacity(line.len());
    AnsiStripper::default().feed(line.as_bytes(), &mut stripped);
    let mut text = clean_text(&stripped);
    text.retain(|c| c != '\n');
    text
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn strip(input: &[u8]) -> String {
        clean_text(strip_escapes(input).as_bytes())
    }

    #[test]
    fn removes_common_sequences() {
        assert_eq!(strip(b"a\x1b[38;5;196mb\x1b[0mc"), "abc");
        assert_eq!(strip(b"\x1b]0;title\x1b\\x"), "x");
        assert_eq!(strip(b"\x1b]8;;http://e\x07link\x1b]8;;\x07"), "link");
        assert_eq!(strip(b"\x1bPq#0;2;0;0;0\x1b\\y"), "y");
        assert_eq!(strip(b"\x1bXsos string\x1b\\z"), "z");
        assert_eq!(strip(b"\x1b(Bz\x1b7\x1b8"), "z");
        assert_eq!(strip(b"line1\r\nline2\rover\x08\x07"), "line1\nline2\nover");
    }

    /// A lone ESC before a character of several bytes is dropped, and the character kept
    /// whole: stripping never makes a text longer (the kernel checks a stored text's length
    /// on what it stores).
    #[test]
    fn an_escape_before_a_multibyte_character_keeps_the_character() {
        assert_eq!(strip("\u{1b}\u{10000}*=".as_bytes()), "\u{10000}*=");
        assert_eq!(strip("a\u{1b}é".as_bytes()), "aé");
        assert_eq!(strip("\u{1b}(✓".as_bytes()), "✓");
    }

    #[test]
    fn keeps_valid_utf8_and_replaces_invalid() {
        assert_eq!(strip("héllo ✓".as_bytes()), "héllo ✓");
        assert_eq!(strip(b"a\xff\xfeb"), "a\u{fffd}\u{fffd}b");
        // C1 controls encoded in UTF-8 (U+009B is CSI in 8-bit terminals) are dropped.
        assert_eq!(strip("a\u{9b}31mb".as_bytes()), "a31mb");
        assert_eq!(strip("x\u{202e}y".as_bytes()), "xy");
    }

    #[test]
    fn escapes_go_and_other_controls_stay_when_only_escapes_are_stripped() {
        assert_eq!(
            strip_escapes(b"pw=hunt\x1b[0mer2\r\n\x1b]0;x\x07\tend"),
            "pw=hunter2\r\n\tend"
        );
    }

    #[test]
    fn a_line_loses_colour_title_and_cursor_sequences() {
        let line = "\u{1b}]0;claude\u{7}\u{1b}[?25l\u{1b}[1;32m{\"type\":\"x\"}\u{1b}[0m\r";
        assert_eq!(strip_ansi(line), "{\"type\":\"x\"}");
        assert_eq!(strip_ansi("over\rwritten\x08"), "overwritten");
    }

    #[test]
    fn a_line_keeps_plain_text() {
        assert_eq!(
            strip_ansi("resets 3pm · (UTC)\tok"),
            "resets 3pm · (UTC)\tok"
        );
    }

    proptest! {
        #[test]
        fn any_input_gives_printable_text(input in proptest::collection::vec(any::<u8>(), 0..512)) {
            let text = strip(&input);
            prop_assert!(text.chars().all(|c| c == '\n' || c == '\t' || !c.is_control()));
            let line = strip_ansi(&String::from_utf8_lossy(&input));
            prop_assert!(line.chars().all(|c| c == '\t' || !c.is_control()));
        }

        #[test]
        fn chunking_does_not_change_the_result(
            input in proptest::collection::vec(any::<u8>(), 0..512),
            split in 0usize..512,
        ) {
            let split = split.min(input.len());
            let mut whole = Vec::new();
            AnsiStripper::default().feed(&input, &mut whole);
            let mut parts = Vec::new();
            let mut stripper = AnsiStripper::default();
            stripper.feed(&input[..split], &mut parts);
            stripper.feed(&input[split..], &mut parts);
            prop_assert_eq!(whole, parts);
        }
    }
}
