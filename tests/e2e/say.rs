//! `loopx say AGENT TEXT` (docs/watch.md, "Messages"): a person's message goes into a running
//! Claude Code session (a stand-in that reads stream-json input as Claude does), or heads the
//! agent's next slice's prompt, once; the log says who sent it, which slice it reached and how.

use crate::support::{Background, LOOPX, Loopx, cli_stand_in, script_agent};

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

/// An agent on the claude-code adapter, whose program is a stand-in that reads its input as
/// Claude Code does with `--input-format stream-json` (`tests/fixtures/agents/claude-stream-json.py`).
fn live_agent(loopx: &Loopx, echo: bool) -> std::path::PathBuf {
    live_agent_env(loopx, &format!("STAND_IN_ECHO={}", u8::from(echo)))
}

/// [`live_agent`] with the stand-in's environment `env` (`NAME=VALUE …`).
fn live_agent_env(loopx: &Loopx, env: &str) -> std::path::PathBuf {
    let dir = loopx.path().join("stand-in");
    std::fs::create_dir_all(&dir).expect("dir");
    let program = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/agents/claude-stream-json.py");
    let script = format!(
        "STAND_IN_DIR='{}' {env} WAIT_SECS=60 exec python3 '{}' \"$@\"",
        dir.display(),
        program.display()
    );
    cli_stand_in(
        loopx,
        "exec",
        "claude-code",
        &script,
        "[limits]\nmax_time = \"2m\"",
    );
    dir
}

fn events(loopx: &Loopx, kinds: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["log", "--json"];
    for kind in kinds {
        args.extend(["--kind", kind]);
    }
    loopx
        .ok(&args)
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn wait_for_file(path: &std::path::Path) {
    let found = loopx_testkit::poll(std::time::Duration::from_secs(60), || {
        path.exists().then_some(())
    });
    assert!(found.is_some(), "{} never appeared", path.display());
}

#[test]
fn a_message_reaches_a_running_claude_code_session_at_once_and_the_log_says_it_went_live() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs", "--isolation", "shared"]);
    let dir = live_agent(&loopx, true);
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let run = Background::start(&loopx, &["--max-slices", "1"]);
    // The agent runs a tool; the person speaks meanwhile.
    wait_for_file(&dir.join("in-tool"));
    let said = loopx.ok(&["say", "exec", "Use tabs,\nnot spaces."]);
    assert!(
        said.stdout
            .contains("Message m1 to exec: it goes into exec's running session"),
        "{}",
        said.stdout
    );
    let (code, _) = run.finish();
    assert_eq!(code, 0);
    // The prompt went on stdin as the first line, never in argv; the pipe was closed after the
    // last turn, so the agent ended on its own.
    let prompt = std::fs::read_to_string(dir.join("prompt.txt")).expect("prompt");
    assert!(prompt.contains("Tidy the README"), "{prompt}");
    assert!(dir.join("closed").exists(), "stdin was never closed");
    // The transcript shows the message where the agent took it, after the tool's result, and
    // the agent's answer in the same turn quotes it.
    let transcript = loopx.ok(&["log", "--slice", "s1"]).stdout;
    let took = transcript
        .find("» A message to you from human:")
        .unwrap_or_else(|| panic!("{transcript}"));
    let slept = transcript
        .find("slept")
        .unwrap_or_else(|| panic!("{transcript}"));
    let heard = transcript
        .find("Heard: A message to you from human:")
        .unwrap_or_else(|| panic!("{transcript}"));
    assert!(slept < took && took < heard, "{transcript}");
    assert!(
        transcript.contains("> Use tabs,") && transcript.contains("> not spaces."),
        "{transcript}"
    );
    let log = events(
        &loopx,
        &["message_sent", "message_delivered", "message_returned"],
    );
    let kinds: Vec<_> = log
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["message_sent", "message_delivered"], "{log:#?}");
    assert_eq!(log[1]["data"]["slice"], "s1");
    assert_eq!(log[1]["data"]["how"], "live");
}

#[test]
fn a_message_a_running_session_never_took_heads_the_agent_s_next_prompt() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs", "--isolation", "shared"]);
    // A CLI that never echoes its input: loopx cannot know the message reached it.
    let dir = live_agent(&loopx, false);
    loopx.ok(&["todo", "add", "Tidy the README"]);
    loopx.ok(&["todo", "add", "Tidy the changelog"]);
    let run = Background::start(&loopx, &["--max-slices", "1"]);
    wait_for_file(&dir.join("in-tool"));
    loopx.ok(&["say", "exec", "Start with the examples."]);
    let (code, _) = run.finish();
    assert_eq!(code, 0);
    // The session still ended: loopx closed its stdin when no echo came after the result.
    assert!(dir.join("closed").exists(), "stdin was never closed");
    let log = events(&loopx, &["message_delivered", "message_returned"]);
    let kinds: Vec<_> = log
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["message_returned"], "{log:#?}");
    // Nobody speaks during the next slice's tool: it need not wait for anyone. This time the
    // CLI echoes its input, as Claude Code does: the prompt it read delivers the message.
    std::fs::write(dir.join("wait_secs"), "0").expect("reset");
    std::fs::write(dir.join("echo"), "1").expect("echo");
    let run = Background::start(&loopx, &["--max-slices", "1"]);
    let (code, _) = run.finish();
    assert_eq!(code, 0);
    let prompt = std::fs::read_to_string(dir.join("prompt.txt")).expect("prompt");
    assert!(
        prompt.starts_with("A message to you from human:")
            && prompt.contains("> Start with the examples."),
        "{prompt}"
    );
    let log = events(&loopx, &["message_delivered"]);
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!(log[0]["data"]["how"], "prompt");
    assert_eq!(log[0]["data"]["slice"], "s2");
}

/// A message written while the model answers without a tool waits in Claude's input and
/// starts a turn of its own after the first answer: the session stays open for it, and the
/// first answer's report still finishes the todo though the second has none.
#[test]
fn a_message_queued_for_a_next_turn_is_answered_and_the_first_answer_s_report_stands() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs", "--isolation", "shared"]);
    let dir = live_agent_env(&loopx, "STAND_IN_QUEUE=1");
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let run = Background::start(&loopx, &["--max-slices", "1"]);
    wait_for_file(&dir.join("in-tool"));
    loopx.ok(&["say", "exec", "Use tabs."]);
    let (code, _) = run.finish();
    assert_eq!(code, 0);
    assert!(dir.join("closed").exists(), "stdin was never closed");
    let transcript = loopx.ok(&["log", "--slice", "s1"]).stdout;
    assert!(
        transcript.contains("Next turn. Heard: A message to you from human:"),
        "{transcript}"
    );
    let log = events(&loopx, &["message_delivered", "message_returned"]);
    let kinds: Vec<_> = log
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["message_delivered"], "{log:#?}");
    assert_eq!(log[0]["data"]["how"], "live");
    assert_eq!(crate::support::todo_state(&loopx, "t1"), "done");
}
