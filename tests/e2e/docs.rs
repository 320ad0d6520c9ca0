//! The docs say what the binary does: `docs/cli.md` lists exactly the exit codes of
//! `exit_code.rs` and every command `loopx --help` knows.

use crate::support::Loopx;

fn cli_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md");
    std::fs::read_to_string(path).expect("docs/cli.md exists")
}

#[test]
fn docs_list_exactly_the_exit_codes() {
    let docs = cli_md();
    let table = regex::Regex::new(r"(?m)^\| *`(\d+)` *\| *`([A-Z_]+)` *\|").expect("regex");
    let documented: Vec<(u8, String)> = table
        .captures_iter(&docs)
        .map(|c| (c[1].parse().expect("code"), c[2].to_owned()))
        .collect();
    let actual: Vec<(u8, String)> = loopx_cli::exit_code::ALL
        .iter()
        .map(|(c, n)| (*c, (*n).to_owned()))
        .collect();
    assert_eq!(
        documented, actual,
        "docs/cli.md's exit-code table must match exit_code.rs"
    );
}

#[test]
fn docs_mention_every_command_and_flag() {
    let docs = cli_md();
    let loopx = Loopx::empty();
    let commands = subcommands(&loopx.ok(&["--help"]).stdout);
    assert!(
        commands.len() >= 10,
        "parsed the command list: {commands:?}"
    );
    let mut checked_flags = 0;
    for command in commands {
        let subs = subcommands(&loopx.ok(&[&command, "--help"]).stdout);
        let usages: Vec<Vec<String>> = if subs.is_empty() {
            vec![vec![command.clone()]]
        } else {
            subs.into_iter()
                .map(|sub| vec![command.clone(), sub])
                .collect()
        };
        for usage in usages {
            let shown = format!("loopx {}", usage.join(" "));
            assert!(
                docs.contains(&shown),
                "docs/cli.md does not document `{shown}`"
            );
            let mut args: Vec<&str> = usage.iter().map(String::as_str).collect();
            args.push("--help");
            for flag in flags(&loopx.ok(&args).stdout) {
                assert!(
                    docs.contains(&flag),
                    "docs/cli.md does not mention `{flag}` of `{shown}`"
                );
                checked_flags += 1;
            }
        }
    }
    assert!(
        checked_flags > 40,
        "the flag parser found the flags: {checked_flags}"
    );
}

/// The names in the `Commands:` section of a `--help` text.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  ") || l.trim().is_empty())
        // A command sits two spaces in; wrapped descriptions are indented further.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long flags in the `Options:` section of a `--help` text.
fn flags(help: &str) -> Vec<String> {
    let flag = regex::Regex::new(r"^\s+(?:-\w, )?(--[a-z][a-z-]*)").expect("regex");
    help.lines()
        .skip_while(|l| !l.starts_with("Options:"))
        .filter_map(|l| flag.captures(l).map(|c| c[1].to_owned()))
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}
