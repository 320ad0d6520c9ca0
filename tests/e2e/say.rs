//! `loopx say AGENT TEXT` (docs/watch.md, "Messages"): a person's message heads the agent's
//! next slice's prompt, once, and the log says who sent it and which slice it reached.

use crate::support::{LOOPX, Loopx, script_agent};

fn one_agent() -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs", "--isolation", "shared"]);
    let script = format!("cat > /dev/null\n'{LOOPX}' report done --summary tidied > /dev/null");
    script_agent(&loopx, "exec", &script, "max_time = \"1m\"");
    loopx.ok(&["todo", "add", "Tidy the README"]);
    loopx.ok(&["todo", "add", "Tidy the changelog"]);
    loopx
}

fn prompt(loopx: &Loopx, slice: &str) -> String {
    let path = loopx.path().join(format!(".loopx/slices/{slice}.prompt"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_message_heads_the_agent_s_next_prompt_once_and_the_log_says_where_it_went() {
    let loopx = one_agent();
    let said = loopx.ok(&[
        "say",
        "exec",
        "Use",
        "tabs,",
        "not spaces.\nAnd keep it short.",
    ]);
    assert!(
        said.stdout
            .contains("Message m1 to exec: it heads exec's next slice's prompt"),
        "{}",
        said.stdout
    );
    let run = loopx.run(&["run", "--max-slices", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first = prompt(&loopx, "s1");
    assert!(
        first.starts_with("A message to you from human:")
            && first.contains("(m1, ")
            && first.contains("> Use tabs, not spaces.\n> And keep it short."),
        "{first}"
    );
    // It reached one slice: the next prompt does not carry it again.
    assert!(
        !prompt(&loopx, "s2").contains("tabs"),
        "{}",
        prompt(&loopx, "s2")
    );
    let log = loopx.ok(&[
        "log",
        "--json",
        "--kind",
        "message_sent",
        "--kind",
        "message_delivered",
    ]);
    let events: Vec<serde_json::Value> = log
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(events.len(), 2, "{}", log.stdout);
    assert_eq!(events[0]["kind"], "message_sent");
    assert!(
        events[0]["actor"]
            .as_str()
            .is_some_and(|a| a.starts_with("human:"))
    );
    assert_eq!(events[0]["data"]["agent"], "exec");
    assert_eq!(events[1]["kind"], "message_delivered");
    assert_eq!(events[1]["data"]["slice"], "s1");
    assert_eq!(events[1]["data"]["how"], "prompt");
}

#[test]
fn say_is_a_person_s_command_to_an_agent_that_exists() {
    let loopx = one_agent();
    let unknown = loopx.run(&["say", "nobody", "hello"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("nobody"), "{}", unknown.stderr);
    let blank = loopx.run(&["say", "exec", "  "]);
    assert_eq!(blank.code, 2, "{}", blank.stderr);
    let inside = loopx.run_env(
        &["say", "exec", "do as I say"],
        &[("LOOPX_SLICE", "s1.0123456789abcdef")],
    );
    assert_eq!(
        inside.code,
        i32::from(loopx_cli::exit_code::REFUSED),
        "{}",
        inside.stderr
    );
    let waiting = loopx.ok(&["log", "--json", "--kind", "message_sent"]);
    assert!(waiting.stdout.trim().is_empty(), "{}", waiting.stdout);
}

#[test]
fn a_message_a_slice_could_not_use_waits_again_and_one_for_a_removed_agent_goes_with_it() {
    let loopx = one_agent();
    loopx.ok(&["say", "exec", "Start with the README"]);
    // The agent's program is gone: its slice cannot start it.
    std::fs::remove_file(loopx.path().join("exec.sh")).expect("remove the program");
    let run = loopx.run(&["run", "--max-slices", "1", "--on-gate", "exit"]);
    assert!(
        run.stderr.contains("spawn_failed") || run.stderr.contains("could not"),
        "{}",
        run.stderr
    );
    let returned = loopx
        .ok(&["log", "--json", "--kind", "message_returned"])
        .stdout;
    assert!(returned.contains("\"message\":\"m1\""), "{returned}");
    let delivered = loopx
        .ok(&["log", "--json", "--kind", "message_delivered"])
        .stdout;
    assert!(delivered.trim().is_empty(), "{delivered}");
    let again = loopx.ok(&["say", "exec", "And then the changelog"]).stdout;
    assert!(again.contains("(2 wait for it now)"), "{again}");
    // Removed, the agent's messages go with it: a new agent of that name starts with none.
    loopx.ok(&["agent", "remove", "exec"]);
    loopx.ok(&["agent", "add", "exec", "--profile", "exec"]);
    let fresh = loopx.ok(&["say", "exec", "Hello"]).stdout;
    assert!(!fresh.contains("wait for it now"), "{fresh}");
}
