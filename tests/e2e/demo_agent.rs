//! The simulated agent (`loopx __demo-agent`): the real binary, its stream read by the real
//! parser and classifier, one test per behaviour of `docs/design/demo-agent.md`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use loopx_adapters::{
    AdapterCatalog, Classification, DEFAULT_PROMPT_TEMPLATE, Outcome, Parser, Report, ReportStatus,
    StreamSummary, classify, render_prompt,
};

use crate::support::{LOOPX, Loopx};

/// What one run of the demo agent printed, and what loopx makes of it.
struct AgentRun {
    code: i32,
    stdout: String,
    summary: StreamSummary,
    class: Classification,
}

impl AgentRun {
    fn report(&self) -> Report {
        self.class
            .report
            .clone()
            .expect("the final message has a report block")
            .expect("the report block is well formed")
    }
}

/// A prompt as the supervisor renders it from the default template.
fn prompt(role: &str, todo: &str, gates: &str) -> String {
    let values = BTreeMap::from([
        ("agent", "demo".to_owned()),
        ("role", role.to_owned()),
        ("goal", "Show newcomers the loopx loop".to_owned()),
        ("scope", "demo/**".to_owned()),
        ("todo", todo.to_owned()),
        ("handoff", "none".to_owned()),
        ("gates", gates.to_owned()),
        ("evidence", "none".to_owned()),
        (
            "report_protocol",
            "End with a ```loopx-report block.".to_owned(),
        ),
    ]);
    render_prompt(DEFAULT_PROMPT_TEMPLATE, &values)
}

/// Runs `loopx __demo-agent FLAGS --prompt-file P` in `dir` and reads its stream line by line.
fn run_agent(dir: &Path, prompt: &str, flags: &[&str], env: &[(&str, &str)]) -> AgentRun {
    let prompt_dir = tempfile::tempdir().expect("prompt dir");
    let prompt_file = prompt_dir.path().join("prompt.md");
    std::fs::write(&prompt_file, prompt).expect("write prompt");
    let mut cmd = Command::new(LOOPX);
    cmd.arg("__demo-agent")
        .args(flags)
        .arg("--prompt-file")
        .arg(&prompt_file)
        .current_dir(dir)
        .env_remove("LOOPX_DEMO_DELAY_MS")
        .env_remove("LOOPX_DEMO_RESET_SECS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().expect("demo agent runs");
    read_stream(
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).expect("UTF-8 stream"),
    )
}

fn read_stream(code: i32, stdout: String) -> AgentRun {
    let adapter = AdapterCatalog::builtin()
        .load("demo")
        .expect("the demo adapter loads")
        .expect("the demo adapter is built in");
    let mut parser = Parser::for_adapter(&adapter);
    let now = jiff::Timestamp::now();
    for line in stdout.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
        parser.feed_line(line, now);
    }
    let summary = parser.summary().clone();
    assert_eq!(
        summary.skipped_lines, 0,
        "every line is understood: {stdout}"
    );
    let class = classify(&summary, Some(code));
    AgentRun {
        code,
        stdout,
        summary,
        class,
    }
}

fn workdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("work dir")
}

#[test]
fn version_answers_the_health_check() {
    let out = Command::new(LOOPX)
        .args(["__demo-agent", "--version"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("loopx-demo-agent "), "{text}");
}

#[test]
fn adapter_test_demo_passes_in_a_fresh_project() {
    let loopx = Loopx::new();
    let run = loopx.run(&["adapter", "test", "demo"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("__demo-agent --version` answered"),
        "{}",
        run.stdout
    );
}

#[test]
fn plan_proposes_todos_including_a_review_and_is_deterministic() {
    let dir = workdir();
    let first = run_agent(dir.path(), &prompt("planner", "", "none"), &[], &[]);
    assert_eq!(first.code, 0, "{}", first.stdout);
    assert_eq!(
        first.class.outcome,
        Outcome::Progress,
        "{}",
        first.class.reason
    );
    let report = first.report();
    assert_eq!(report.status, ReportStatus::Progress);
    assert!((2..=3).contains(&report.next_todos.len()), "{report:?}");
    assert!(
        report
            .next_todos
            .iter()
            .any(|t| t.role.as_deref() == Some("reviewer"))
    );
    assert!(first.summary.session_id.is_some());
    let again = run_agent(dir.path(), &prompt("planner", "", "none"), &[], &[]);
    assert_eq!(
        first.stdout, again.stdout,
        "same prompt and files, same stream"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "planning writes nothing"
    );
}

#[test]
fn work_writes_a_file_and_reports_done_with_evidence() {
    let dir = workdir();
    let todo = "Write the demo notes [demo:file=demo/NOTES.md]";
    let run = run_agent(dir.path(), &prompt("executor", todo, "none"), &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.class.outcome,
        Outcome::Completed,
        "{}",
        run.class.reason
    );
    let notes = std::fs::read_to_string(dir.path().join("demo/NOTES.md")).expect("notes");
    assert!(
        notes.contains("Goal: Show newcomers the loopx loop"),
        "{notes}"
    );
    assert!(notes.contains("- Write the demo notes\n"), "{notes}");
    let report = run.report();
    assert_eq!(report.status, ReportStatus::Done);
    assert!(report.handoff.is_some());
    assert!(
        report
            .evidence
            .iter()
            .any(|e| e.kind.as_deref() == Some("test") && e.summary.contains("1 item")),
        "{report:?}"
    );
    assert!(run.summary.tool_calls >= 2);
    assert!(run.summary.usage().output > 0);
    let cost = run.summary.cost_usd.expect("a cost");
    assert!(cost > 0.0 && cost < 0.1, "{cost}");
    assert!(run.stdout.contains(r#""name":"Write""#), "{}", run.stdout);

    // Doing it again changes nothing: a repair slice can repeat the work safely.
    let repair = format!("Slice: repair\n{}", prompt("executor", todo, "none"));
    let again = run_agent(dir.path(), &repair, &[], &[]);
    assert_eq!(again.class.outcome, Outcome::Completed);
    assert!(again.report().summary.starts_with("Repaired"));
    let after = std::fs::read_to_string(dir.path().join("demo/NOTES.md")).expect("notes");
    assert_eq!(notes, after);
}

#[test]
fn review_reads_the_file_and_suggests_a_follow_up_when_needed() {
    let dir = workdir();
    let review = "Review the demo notes [demo:file=demo/NOTES.md]";
    let missing = run_agent(dir.path(), &prompt("reviewer", review, "none"), &[], &[]);
    assert_eq!(missing.class.outcome, Outcome::Completed);
    assert_eq!(missing.report().next_todos.len(), 1, "asks for the file");

    std::fs::create_dir(dir.path().join("demo")).expect("mkdir");
    std::fs::write(dir.path().join("demo/NOTES.md"), "# Notes\n\n- one\n").expect("write");
    let run = run_agent(dir.path(), &prompt("reviewer", review, "none"), &[], &[]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.class.outcome,
        Outcome::Completed,
        "{}",
        run.class.reason
    );
    let report = run.report();
    assert!(
        report.summary.contains("does not state the goal"),
        "{report:?}"
    );
    assert_eq!(report.next_todos[0].role.as_deref(), Some("executor"));
    assert!(run.stdout.contains(r#""name":"Read""#));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("demo/NOTES.md")).expect("notes"),
        "# Notes\n\n- one\n",
        "a review never writes"
    );
}

#[test]
fn a_decision_is_asked_then_used_once_answered() {
    let dir = workdir();
    let todo = "Choose the format of the demo notes [demo:ask]";
    let run = run_agent(dir.path(), &prompt("executor", todo, "none"), &[], &[]);
    assert_eq!(run.code, 0);
    assert_eq!(run.class.outcome, Outcome::Asked, "{}", run.class.reason);
    let question = run.class.question.as_ref().expect("a question");
    assert!(question.text.ends_with('?'), "{}", question.text);
    assert_eq!(question.options.len(), 2);
    assert_eq!(run.report().status, ReportStatus::Blocked);

    let gates = "g1: Should it be a list or a table? -> Markdown list";
    let answered = run_agent(dir.path(), &prompt("executor", todo, gates), &[], &[]);
    assert_eq!(answered.class.outcome, Outcome::Completed);
    let notes = std::fs::read_to_string(dir.path().join("demo/NOTES.md")).expect("notes");
    assert!(notes.contains("Markdown list"), "{notes}");
}

#[test]
fn usage_limit_first_then_normal_work() {
    let dir = workdir();
    let todo = "Write the demo notes [demo:usage-limit]";
    let before = jiff::Timestamp::now();
    let env = [("LOOPX_DEMO_RESET_SECS", "60")];
    let run = run_agent(dir.path(), &prompt("executor", todo, "none"), &[], &env);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.class.outcome,
        Outcome::UsageLimited,
        "{}",
        run.class.reason
    );
    let limit = run.class.limit.as_ref().expect("the limit");
    let (resets_at, window) = (limit.resets_at, &limit.window);
    let resets_at = resets_at.expect("an exact reset time");
    let ahead = resets_at.as_second() - before.as_second();
    assert!((58..=62).contains(&ahead), "resets {ahead}s ahead");
    assert!(window.is_some());
    assert!(run.stdout.contains("You've hit your session limit"));
    assert!(dir.path().join(".loopx-demo-limit-hit").exists());
    assert!(
        !dir.path().join("demo").exists(),
        "no work before the limit"
    );

    let next = run_agent(dir.path(), &prompt("executor", todo, "none"), &[], &env);
    assert_eq!(next.code, 0);
    assert_eq!(
        next.class.outcome,
        Outcome::Completed,
        "{}",
        next.class.reason
    );
}

#[test]
fn read_only_never_writes_and_reports_blocked() {
    let dir = workdir();
    let run = run_agent(
        dir.path(),
        &prompt("executor", "Write the demo notes", "none"),
        &["--read-only"],
        &[],
    );
    assert_eq!(run.code, 0);
    assert_eq!(run.class.outcome, Outcome::Asked, "{}", run.class.reason);
    let question = run.class.question.as_ref().expect("a question");
    assert!(
        question.text.contains("workspace-write"),
        "{}",
        question.text
    );
    assert_eq!(run.report().status, ReportStatus::Blocked);
    assert!(
        run.stdout.contains(r#""permission_denials":[{"#),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(r#""permissionMode":"plan""#));
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
}

#[test]
fn max_turns_stops_early_as_claude_does() {
    let dir = workdir();
    let run = run_agent(
        dir.path(),
        &prompt("executor", "Write the demo notes", "none"),
        &["--workspace-write", "--max-turns", "1"],
        &[],
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.class.outcome, Outcome::Progress);
    assert!(
        run.class.reason.contains("turn limit"),
        "{}",
        run.class.reason
    );
    assert!(run.stdout.contains(r#""subtype":"error_max_turns""#));
    assert!(run.class.report.is_none());
}

#[test]
fn the_prompt_may_come_on_stdin_and_lines_may_end_in_crlf() {
    let dir = workdir();
    let mut child = Command::new(LOOPX)
        .args(["__demo-agent", "--workspace-write"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(prompt("executor", "Write the demo notes", "none").as_bytes())
        .expect("write prompt");
    let out = child.wait_with_output().expect("wait");
    // A PTY turns `\n` into `\r\n`; the parser must read the same thing.
    let crlf = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .replace('\n', "\r\n");
    let run = read_stream(out.status.code().unwrap_or(-1), crlf);
    assert_eq!(
        run.class.outcome,
        Outcome::Completed,
        "{}",
        run.class.reason
    );
}

#[test]
fn refuses_a_file_outside_the_working_directory() {
    let outer = workdir();
    let inner = outer.path().join("work");
    std::fs::create_dir(&inner).expect("mkdir");
    let todo = "Write it [demo:file=../escape.md]";
    let run = run_agent(&inner, &prompt("executor", todo, "none"), &[], &[]);
    assert_eq!(run.class.outcome, Outcome::Asked);
    assert!(!outer.path().join("escape.md").exists());
}

#[test]
fn delay_paces_the_lines() {
    let dir = workdir();
    let started = std::time::Instant::now();
    let run = run_agent(
        dir.path(),
        &prompt("planner", "", "none"),
        &[],
        &[("LOOPX_DEMO_DELAY_MS", "20")],
    );
    let gaps = run.stdout.lines().count() - 1;
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(20 * gaps as u64),
        "{gaps} pauses of 20 ms"
    );
    assert_eq!(run.class.outcome, Outcome::Progress);
}
