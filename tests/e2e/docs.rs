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
fn docs_mention_every_command() {
    let docs = cli_md();
    let loopx = Loopx::empty();
    let help = loopx.ok(&["--help"]).stdout;
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(
        commands.len() >= 10,
        "parsed the command list: {commands:?}"
    );
    for command in commands {
        let sub_help = loopx.ok(&[command, "--help"]).stdout;
        let subs: Vec<String> = sub_help
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(|sub| format!("loopx {command} {sub}"))
            .collect();
        let wanted = if subs.is_empty() {
            vec![format!("loopx {command}")]
        } else {
            subs
        };
        for usage in wanted {
            assert!(
                docs.contains(&usage),
                "docs/cli.md does not document `{usage}`"
            );
        }
    }
}
