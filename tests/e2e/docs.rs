//! The docs say what the binary does: `docs/cli.md` lists exactly the exit codes of
//! `exit_code.rs`, every command and flag `loopx --help` knows, and every field the `--json`
//! outputs hold.

use crate::support::{Loopx, Run};

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

/// Every field name any `--json` output holds, and the first command that printed it.
#[derive(Default)]
struct JsonFields(std::collections::BTreeMap<String, String>);

/// Objects keyed by data rather than by field names, all in `profile show`: the profile's
/// `env.set` and the adapter's `env_set` (variable names), `permissions` (permission levels) and
/// `exit_codes` (exit codes). Their keys are values the docs cannot list (`{NAME:VALUE}`), so
/// only their values are searched for fields.
const KEYED_BY_DATA: &[&str] = &["set", "env_set", "permissions", "exit_codes"];

impl JsonFields {
    /// Runs `loopx ARGS --json` in `loopx`, insisting on exit code `code`, and notes its fields.
    fn run(&mut self, loopx: &Loopx, args: &[&str], env: &[(&str, &str)], code: u8) -> Run {
        let run = loopx.run_env(&[args, &["--json"]].concat(), env);
        assert_eq!(
            run.code,
            i32::from(code),
            "loopx {args:?}: {}{}",
            run.stdout,
            run.stderr
        );
        self.note(&format!("loopx {}", args.join(" ")), &run.stdout);
        run
    }

    /// `run` for a command that succeeds.
    fn ok(&mut self, loopx: &Loopx, args: &[&str]) -> Run {
        self.run(loopx, args, &[], loopx_cli::exit_code::OK)
    }

    /// Notes the fields of `text`: one JSON value, or JSON Lines.
    fn note(&mut self, what: &str, text: &str) {
        let values: Vec<serde_json::Value> = match serde_json::from_str(text) {
            Ok(value) => vec![value],
            Err(_) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: {e}: {l}")))
                .collect(),
        };
        assert!(!values.is_empty(), "{what} printed no JSON");
        for value in &values {
            self.walk(what, None, value);
        }
    }

    fn walk(&mut self, what: &str, parent: Option<&str>, value: &serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                let by_data = parent.is_some_and(|p| KEYED_BY_DATA.contains(&p));
                for (key, inner) in map {
                    if !by_data {
                        self.0.entry(key.clone()).or_insert_with(|| what.to_owned());
                    }
                    self.walk(what, Some(key), inner);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    self.walk(what, parent, item);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn docs_name_every_json_field() {
    let mut fields = JsonFields::default();
    people_at_work(&mut fields);
    agents_at_work(&mut fields);
    let docs = cli_md();
    let missing: Vec<String> = fields
        .0
        .iter()
        .filter(|(key, _)| !docs.contains(&format!("\"{key}\"")))
        .map(|(key, what)| format!("`\"{key}\"` (from `{what}`)"))
        .collect();
    assert!(
        fields.0.len() > 100,
        "the walk found the fields: {:?}",
        fields.0.keys()
    );
    assert!(
        missing.is_empty(),
        "docs/cli.md does not name these JSON fields:\n{}",
        missing.join("\n")
    );
}

/// A profile of the demo agent with a quota window, so `quota status` shows one.
const WINDOWED: &str = "adapter = \"demo\"\ncapabilities = [\"demo\"]\nrole = \"reviewer\"\n\
permission = \"workspace-write\"\n\n[quota]\naccount = \"demo\"\nslices_per_hour = 60\n\n\
[[quota.windows]]\nwindow = \"5h\"\ntokens = 100000\ncost_usd = 5.0\n";

/// The commands people (and scripts) run, in a project with every kind of record.
fn people_at_work(fields: &mut JsonFields) {
    let loopx = Loopx::empty();
    fields.ok(&loopx, &["init"]);
    fields.ok(
        &loopx,
        &["goal", "start", "Write the demo notes", "--scope", "**"],
    );
    fields.ok(&loopx, &["goal", "list"]);
    fields.ok(&loopx, &["goal", "show"]);
    let profiles = loopx.path().join(".loopx/profiles");
    std::fs::write(profiles.join("windowed.toml"), WINDOWED).expect("a profile");
    std::fs::write(
        profiles.join("broken.toml"),
        "adapter = \"demo\"\npermision = 1\n",
    )
    .expect("a profile");
    fields.ok(&loopx, &["agent", "add", "exec", "--profile", "demo"]);
    fields.ok(&loopx, &["agent", "add", "rev", "--profile", "windowed"]);
    fields.ok(&loopx, &["agent", "list"]);

    fields.ok(
        &loopx,
        &[
            "todo",
            "add",
            "Write the notes",
            "--detail",
            "d",
            "--needs",
            "demo",
        ],
    );
    fields.ok(
        &loopx,
        &[
            "todo", "add", "Review", "--after", "t1", "--role", "reviewer",
        ],
    );
    fields.ok(&loopx, &["todo", "add", "Pick a format", "--priority", "3"]);
    fields.ok(&loopx, &["todo", "add", "Tidy up"]);
    fields.ok(&loopx, &["todo", "claim", "t1", "--agent", "exec"]);
    fields.ok(&loopx, &["todo", "done", "t4"]);
    fields.ok(&loopx, &["todo", "list", "--all"]);
    std::fs::write(loopx.path().join("notes.md"), "notes").expect("a file");
    let evidence = [
        "evidence",
        "add",
        "Notes drafted",
        "--todo",
        "t1",
        "--kind",
        "test",
    ];
    fields.ok(
        &loopx,
        &[&evidence[..], &["--file", "notes.md", "--detail", "d"]].concat(),
    );
    fields.ok(&loopx, &["evidence", "list"]);
    let handoff = [
        "handoff", "write", "--todo", "t1", "--done", "d", "--next", "n",
    ];
    fields.ok(
        &loopx,
        &[&handoff[..], &["--file", "notes.md", "--question", "q?"]].concat(),
    );
    fields.ok(&loopx, &["handoff", "--todo", "t1"]);
    fields.ok(&loopx, &["todo", "show", "t1"]);

    let question = "Which format should the demo notes use?";
    let ask = [
        "gate", "ask", question, "--option", "Markdown", "--option", "Plain",
    ];
    fields.ok(
        &loopx,
        &[&ask[..], &["--context", "c", "--blocks", "t3"]].concat(),
    );
    fields.ok(
        &loopx,
        &[
            "gate",
            "ask",
            "Should the reviewer wait for the notes?",
            "--agent",
            "rev",
        ],
    );
    let global = "Should every agent stop for the release?";
    fields.ok(&loopx, &["gate", "ask", global, "--global"]);
    fields.ok(&loopx, &["gate", "answer", "q1", "--option", "1"]);
    fields.ok(&loopx, &["gate", "show", "q1"]);
    fields.ok(&loopx, &["gate", "list", "--all"]);

    // `loopx report …` prints the same documents as `evidence add`, `handoff write`,
    // `todo add`, `gate ask` and `todo done` (tests/e2e/report.rs runs it in real slices).
    fields.ok(&loopx, &["status"]);

    fields.ok(&loopx, &["quota", "should-run", "--agent", "rev"]);
    fields.ok(
        &loopx,
        &[
            "quota", "spend", "--agent", "rev", "--tokens", "10", "--cost", "0.5",
        ],
    );
    fields.ok(
        &loopx,
        &[
            "quota",
            "hold",
            "--account",
            "demo",
            "--until",
            "1h",
            "--reason",
            "r",
        ],
    );
    fields.ok(&loopx, &["quota", "pause", "--agent", "exec"]);
    fields.ok(&loopx, &["quota", "status"]);
    fields.ok(&loopx, &["quota", "resume"]);

    fields.ok(&loopx, &["doctor"]);
    fields.ok(&loopx, &["profile", "list"]);
    fields.ok(&loopx, &["profile", "show", "demo"]);
    let config = loopx_cli::exit_code::CONFIG;
    fields.run(&loopx, &["profile", "check"], &[], config);
    fields.ok(&loopx, &["profile", "check", ".loopx/profiles/demo.toml"]);
    fields.ok(&loopx, &["adapter", "test", "demo"]);

    // Errors: a stale epoch (recorded as an event) and a gate answered from inside a slice.
    let stale = ["todo", "renew", "t1", "--agent", "exec", "--epoch", "9"];
    fields.run(&loopx, &stale, &[], loopx_cli::exit_code::CONFLICT);
    let inside = [("LOOPX_SLICE", "s1.0123456789abcdef")];
    let answer = ["gate", "answer", "q2", "yes"];
    fields.run(&loopx, &answer, &inside, loopx_cli::exit_code::REFUSED);
    fields.ok(&loopx, &["log", "-n", "1000"]);
}

/// `loopx run`, once and as a loop, with the demo agent, a broken agent and notifications.
fn agents_at_work(fields: &mut JsonFields) {
    let loopx = crate::run_once::project();
    loopx.write_config("[notify]\ncommand = \"cat >> notified.jsonl\"\n");
    crate::support::approve_notifications(&loopx);
    loopx.ok(&["agent", "add", "broken", "--profile", "executor"]);
    std::fs::write(
        loopx.path().join(".loopx/profiles/executor.toml"),
        "adapter = 1\n",
    )
    .expect("a broken profile");
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    loopx.ok(&["todo", "add", "Write the notes"]);

    loopx.ok(&["quota", "hold", "--account", "demo", "--until", "2s"]);
    let run = fields.run(
        &loopx,
        &["run", "--max-slices", "3", "--on-gate", "exit"],
        &[],
        loopx_cli::exit_code::HALTED_ON_GATE,
    );
    for event in [
        "agent_error",
        "paused",
        "resumed",
        "slice_ended",
        "question",
        "finished",
    ] {
        let tag = format!("\"event\":\"{event}\"");
        assert!(run.stdout.contains(&tag), "no {event} in:\n{}", run.stdout);
    }
    fields.ok(&loopx, &["status"]);
    let run = fields.ok(&loopx, &["run", "--once", "--agent", "exec"]);
    assert_eq!(run.json()["decision"], "ask", "{}", run.stdout);
    // q1 approved the notification command; q2 is the agent's question.
    loopx.ok(&["gate", "answer", "q2", "--option", "1"]);
    let run = fields.ok(&loopx, &["run", "--once", "--agent", "exec"]);
    assert_eq!(
        run.json()["slice"]["outcome"],
        "completed",
        "{}",
        run.stdout
    );
    let notified = std::fs::read_to_string(loopx.path().join("notified.jsonl"))
        .expect("notifications were sent");
    fields.note("the notify command's stdin", &notified);
    fields.ok(&loopx, &["goal", "history"]);
    fields.ok(&loopx, &["log", "-n", "1000"]);
}
