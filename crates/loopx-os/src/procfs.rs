//! Linux's `/proc/<pid>/stat` line, parsed.

use crate::Process;

/// Parses a `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may
/// itself hold spaces and `)`, so the fixed fields are counted after the *last* `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Process> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text.get(..open)?.trim().parse().ok()?;
    let mut rest = text.get(close + 1..)?.split_ascii_whitespace();
    let state = *rest.next()?.as_bytes().first()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    let session = rest.next()?.parse().ok()?;
    // Field 22 (start time, clock ticks since boot) is the 16th after the session (field 6).
    let started = rest.nth(15).and_then(|t| t.parse().ok()).unwrap_or(0);
    Some(Process {
        pid,
        ppid,
        pgrp,
        session,
        // Zombie, dead (and `x`, dead on kernels before 3.13).
        dead: matches!(state, b'Z' | b'X' | b'x'),
        started,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parentheses() {
        let line = "4242 (evil) S 1 2 3 (x) R 17 4000 4001 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 999 1234 56";
        let stat = parse_stat(line).expect("parsable");
        assert_eq!(
            stat,
            Process {
                pid: 4242,
                ppid: 17,
                pgrp: 4000,
                session: 4001,
                dead: false,
                started: 999,
            }
        );
        let zombie = "7 (z) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
        assert!(parse_stat(zombie).expect("parsable").dead);
        assert_eq!(parse_stat(zombie).expect("parsable").started, 55);
    }

    #[test]
    fn rejects_truncated_lines_without_panicking() {
        for line in [
            "",
            "12",
            "12 (a",
            "12 (a) S",
            "12 (a) S 1 2",
            "x (a) S 1 2 3",
            "12 (a) S 1 2 q",
        ] {
            assert_eq!(parse_stat(line), None, "{line:?}");
        }
        // Without a start time the process is still known, with none.
        assert_eq!(parse_stat("12 (a) S 1 2 3").map(|p| p.started), Some(0));
    }
}
