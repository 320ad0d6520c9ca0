//! Reading `/proc`: who is in a session, who carries a slice marker.

use std::collections::BTreeSet;
use std::io::Read;

/// The fields of `/proc/<pid>/stat` the sweep needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) pid: i32,
    pub(crate) state: u8,
    pub(crate) ppid: i32,
    pub(crate) pgrp: i32,
    pub(crate) session: i32,
}

impl ProcStat {
    /// A zombie (`Z`) or dead (`X`) process runs no code; it only waits to be reaped.
    pub(crate) fn is_dead(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

/// Parses a `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may
/// itself contain spaces and `)`, so the fixed fields are read after the *last* `)`.
pub(crate) fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text.get(..open)?.trim().parse().ok()?;
    let mut rest = text.get(close + 1..)?.split_ascii_whitespace();
    let state = *rest.next()?.as_bytes().first()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    let session = rest.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        ppid,
        pgrp,
        session,
    })
}

/// Reads one process's stat; `None` if it is gone (or unreadable).
pub(crate) fn read_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Every process visible in `/proc`, in pid order.
pub(crate) fn all_stats() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let pids: BTreeSet<i32> = dir
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.into_iter().filter_map(read_stat).collect()
}

/// True if `/proc/<pid>/environ` has exactly the entry `marker` (`LOOPX_SLICE=<id>`).
/// Unreadable environments (other users, zombies, exited processes) never match.
pub(crate) fn has_marker(pid: i32, marker: &[u8]) -> bool {
    let Ok(mut file) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    // Environments are bounded by ARG_MAX-like limits in practice; cap the read anyway so a
    // hostile process cannot make the sweep allocate without bound.
    let mut environ = Vec::new();
    if file
        .by_ref()
        .take(4 << 20)
        .read_to_end(&mut environ)
        .is_err()
    {
        return false;
    }
    environ.split(|&b| b == 0).any(|entry| entry == marker)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parentheses() {
        let line = "4242 (evil) S 1 2 3 (x) R 17 4000 4001 4002 34816 0 0 0 0 0 0 20 0 1 0 999";
        let stat = parse_stat(line).expect("parsable");
        assert_eq!(
            stat,
            ProcStat {
                pid: 4242,
                state: b'R',
                ppid: 17,
                pgrp: 4000,
                session: 4001
            }
        );
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
    }

    #[test]
    fn reads_our_own_process() {
        let me = i32::try_from(std::process::id()).expect("pid fits i32");
        let stat = read_stat(me).expect("own stat");
        assert_eq!(stat.pid, me);
        assert!(!stat.is_dead());
        assert!(all_stats().iter().any(|s| s.pid == me));
    }

    #[test]
    fn finds_a_marker_only_as_a_whole_entry() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("LOOPX_SLICE", "abc")
            .spawn()
            .expect("spawn sleep");
        let pid = i32::try_from(child.id()).expect("pid fits i32");
        // Until the child has exec'd, its environment is still the parent's copy.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut found = false;
        while !found && std::time::Instant::now() < deadline {
            found = has_marker(pid, b"LOOPX_SLICE=abc");
            std::thread::yield_now();
        }
        let prefix = has_marker(pid, b"LOOPX_SLICE=ab");
        child.kill().expect("kill sleep");
        child.wait().expect("reap sleep");
        assert!(found);
        assert!(!prefix);
    }
}
