//! Permission levels and the vendor flags that must never leak below `full`.

pub use loopx_vocab::PermissionLevel;

/// Vendor flags (or flag values) that switch off the agent's own safety: allowed only at `full`.
pub const BYPASS_MARKERS: [&str; 6] = [
    "--dangerously-skip-permissions",
    "bypassPermissions",
    "danger-full-access",
    "--dangerously-bypass-approvals-and-sandbox",
    "yolo",
    // OpenCode `run`: allow every permission that would ask.
    "--auto",
];

/// Flags (or values) that let an agent write files: never allowed at `read-only`.
pub const WRITE_MARKERS: [&str; 6] = [
    "acceptEdits",
    "workspace-write",
    "auto_edit",
    "auto-edit",
    "--full-auto",
    // Cursor: applies edits and runs commands without asking.
    "--force",
];

/// The first bypass marker found in `args`, if any.
pub fn find_bypass(args: &[String]) -> Option<&'static str> {
    find_marker(args, &BYPASS_MARKERS)
}

/// The first write-granting or bypass marker found in `args`, if any.
pub fn find_write_grant(args: &[String]) -> Option<&'static str> {
    find_marker(args, &WRITE_MARKERS).or_else(|| find_bypass(args))
}

fn find_marker(args: &[String], markers: &[&'static str]) -> Option<&'static str> {
    markers
        .iter()
        .copied()
        .find(|m| args.iter().any(|a| has_marker(a, m)))
}

/// A value marker (`yolo`, `bypassPermissions`) counts anywhere in an argument:
/// `--permission-mode=bypassPermissions` and `--approval-mode=yolo` do. A flag marker
/// (`--force`, `--auto`) counts as a whole word of it, or a word's name before `=`: `--force`,
/// `--auto=true` and `sh -c "opencode run --auto"` do; `--force-with-lease` and Aider's
/// `--auto-commits` do not.
fn has_marker(arg: &str, marker: &str) -> bool {
    if !marker.starts_with("--") {
        return arg.contains(marker);
    }
    arg.split(|c: char| c.is_whitespace() || c == '\'' || c == '"')
        .any(|word| word.split('=').next() == Some(marker))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn flag_markers_are_whole_words_and_value_markers_are_anywhere() {
        for granting in [
            &["--force"][..],
            &["--auto=true"],
            &["-c", "opencode run --auto -- 'go'"],
            &["--approval-mode=yolo"],
            &["--permission-mode", "bypassPermissions"],
            &["sh", "-c", "claude --dangerously-skip-permissions -p x"],
        ] {
            assert!(find_write_grant(&args(granting)).is_some(), "{granting:?}");
        }
        for harmless in [
            &["--force-with-lease"][..],
            &["--auto-commits", "--auto-test"],
            &["--message", "forced"],
        ] {
            assert_eq!(find_write_grant(&args(harmless)), None, "{harmless:?}");
        }
    }
}
