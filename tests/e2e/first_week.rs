//! What a person meets in their first week (issue 47): each command's `--help` shows its own
//! options before the global ones, shell completions and a man page to install, and `profile
//! check` taking a name as `profile show` does.

use crate::support::Loopx;

/// The option lines of one section (`Options:`, `Global options:`) of a `--help` text.
fn section<'a>(help: &'a str, heading: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn a_command_s_help_lists_its_own_options_before_the_global_ones() {
    let loopx = Loopx::empty();
    for args in [
        &["todo", "add", "--help"][..],
        &["run", "--help"],
        &["--help"],
    ] {
        let help = loopx.ok(args).stdout;
        let own = section(&help, "Options:").join("\n");
        let global = section(&help, "Global options:").join("\n");
        for flag in ["--project", "--json", "--color", "--verbose"] {
            assert!(
                !own.contains(flag),
                "{args:?}: {flag} among own options\n{help}"
            );
            assert!(global.contains(flag), "{args:?}: {flag} not global\n{help}");
        }
        let (at_own, at_global) = (help.find("\nOptions:"), help.find("\nGlobal options:"));
        assert!(at_own < at_global, "{args:?}: own options first\n{help}");
    }
    let help = loopx.ok(&["todo", "add", "--help"]).stdout;
    assert!(
        section(&help, "Options:")
            .iter()
            .any(|l| l.contains("--priority")),
        "{help}"
    );
}
