//! Removing terminal escape sequences from a line read through a PTY.

/// `text` without ANSI/VT escape sequences (CSI, OSC, and two-byte escapes) and other C0
/// control characters except tab.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC (and DCS/PM/APC): until BEL or ESC \.
                Some(']' | 'P' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                // Charset selection takes one more character.
                Some('(' | ')' | '*' | '+') => {
                    chars.next();
                }
                _ => {}
            },
            '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colour_title_and_cursor_sequences() {
        let line = "\u{1b}]0;claude\u{7}\u{1b}[?25l\u{1b}[1;32m{\"type\":\"x\"}\u{1b}[0m\r";
        assert_eq!(strip_ansi(line), "{\"type\":\"x\"}");
    }

    #[test]
    fn keeps_plain_text() {
        assert_eq!(
            strip_ansi("resets 3pm · (UTC)\tok"),
            "resets 3pm · (UTC)\tok"
        );
    }
}
