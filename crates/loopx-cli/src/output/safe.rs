//! Untrusted text made safe for a person's terminal.
//!
//! Titles, questions, evidence, handoffs and slice output are written by agents. Printed raw,
//! an escape sequence in them could hide text (`ESC[8m`), write the person's clipboard (OSC
//! 52), retitle the window, or move the cursor and overwrite a line with `\r` — for example a
//! fake "approve everything" over a gate's real question. Every line loopx prints for people
//! passes through [`safe_line`]: control characters, escape sequences, and the Unicode
//! characters that reorder or hide text (bidi overrides and isolates, zero-width characters,
//! line separators) are shown as visible escapes (`^[`, `^M`, `\u{202e}`). The only escape
//! sequences that pass are loopx's own colours (`output::Style`), and only when colour is on;
//! agent text using the same colour codes can colour text, never hide or move it.
//! `--json` needs none of this: JSON escapes control characters itself.

use std::borrow::Cow;
use std::fmt::Write;

/// loopx's own styling sequences (`Style::paint`): bold, dim, colours, reset; and those of its
/// log on a terminal (`tracing_subscriber`'s italic field names, blue and purple levels).
const STYLE_SEQUENCES: [&str; 10] = [
    "\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[3m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[34m",
    "\x1b[35m", "\x1b[36m",
];

/// `text` with every control character shown visibly; newlines and tabs kept, and loopx's own
/// colour sequences kept when `colour` is on.
pub fn safe_line(text: &str, colour: bool) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b'
            && colour
            && let Some(seq) = STYLE_SEQUENCES.iter().find(|s| rest.starts_with(**s))
        {
            out.push_str(seq);
            rest = &rest[seq.len()..];
            continue;
        }
        if needs_escape(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// Whether `c` must not reach a terminal as it is.
pub fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true, // C0, DEL and C1 (U+0080..U+009F, e.g. the 8-bit CSI)
        // Bidi embeddings, overrides and isolates; marks; zero-width characters; BOM.
        '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{061c}' => true,
        _ => false,
    }
}

fn escape(c: char, out: &mut String) {
    match c as u32 {
        // Caret notation for C0 and DEL, as `cat -v` shows them: ESC is `^[`, CR `^M`.
        code @ 0..=0x1f => {
            out.push('^');
            out.push(char::from(u8::try_from(code).expect("below 0x20") + 0x40));
        }
        0x7f => out.push_str("^?"),
        code => {
            let _ = write!(out, "\\u{{{code:x}}}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        let cases = [
            ("plain text", "plain text"),
            ("tabs\tand\nnewlines", "tabs\tand\nnewlines"),
            ("hidden \x1b[8msecret\x1b[0m", "hidden ^[[8msecret^[[0m"),
            ("\x1b]52;c;ZXZpbA==\x07", "^[]52;c;ZXZpbA==^G"),
            ("\x1b]0;title\x1b\\", "^[]0;title^[\\"),
            (
                "real\rFAKE: approve everything",
                "real^MFAKE: approve everything",
            ),
            ("8-bit \u{9b}2J csi", "8-bit \\u{9b}2J csi"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("zero\u{200b}width", "zero\\u{200b}width"),
            ("del\x7f", "del^?"),
        ];
        for (given, shown) in cases {
            assert_eq!(safe_line(given, false), shown, "{given:?}");
        }
    }

    #[test]
    fn loopx_s_own_colours_pass_only_when_colour_is_on() {
        let styled = "\x1b[1mt3\x1b[0m \x1b[33mopen\x1b[0m";
        assert_eq!(safe_line(styled, true), styled);
        assert_eq!(safe_line(styled, false), "^[[1mt3^[[0m ^[[33mopen^[[0m");
        // Same prefix, other parameters: not loopx's.
        assert_eq!(safe_line("\x1b[1;8m", true), "^[[1;8m");
        assert_eq!(safe_line("\x1b[30m", true), "^[[30m");
    }
}
