//! Every error a user can meet here: its exit code and its exact message.

use crate::support::Loopx;

/// Runs `args` and snapshots `exit <code>` plus stderr under `name`; checks the code.
fn check(loopx: &Loopx, name: &str, args: &[&str], env: &[(&str, &str)], code: i32) {
    let run = loopx.run_env(args, env);
    assert_eq!(
        run.code, code,
        "{name}: loopx {args:?}\nstdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.starts_with("error: "),
        "{name}: errors go to stderr as `error: …`: {}",
        run.stderr
    );
    insta::assert_snapshot!(
        name,
        format!("exit {}\n{}", run.code, loopx.stable(&run.stderr))
    );
}

#[test]
fn project_errors() {
    let empty = Loopx::empty();
    check(&empty, "no_project", &["status"], &[], 3);
    let loopx = Loopx::new();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        loopx.path().join(".loopx"),
        std::fs::Permissions::from_mode(0o777),
    )
    .expect("chmod");
    check(&loopx, "world_writable_state_dir", &["status"], &[], 3);

    let linked = Loopx::empty();
    let real = linked.path().join("elsewhere");
    std::fs::create_dir(&real).expect("mkdir");
    std::os::unix::fs::symlink(&real, linked.path().join(".loopx")).expect("symlink");
    check(&linked, "symlinked_state_dir", &["status"], &[], 3);
}

#[test]
fn usage_errors() {
    let loopx = Loopx::with_work();
    check(&loopx, "malformed_todo_id", &["todo", "show", "T1"], &[], 2);
    check(&loopx, "unknown_todo", &["todo", "show", "t99"], &[], 2);
    check(
        &loopx,
        "unknown_gate",
        &["gate", "answer", "q9", "yes"],
        &[],
        2,
    );
    check(
        &loopx,
        "bad_duration",
        &[
            "todo",
            "claim",
            "t1",
            "--agent",
            "exec",
            "--ttl",
            "5 minuets",
        ],
        &[],
        2,
    );
    check(
        &loopx,
        "unregistered_agent",
        &["todo", "claim", "t1", "--agent", "ghost"],
        &[],
        2,
    );
    check(
        &loopx,
        "bad_agent_name",
        &["agent", "add", "Bad Name", "--profile", "executor"],
        &[],
        2,
    );
    check(&loopx, "empty_title", &["todo", "add", "   "], &[], 2);
    let long = "x".repeat(201);
    check(&loopx, "title_too_long", &["todo", "add", &long], &[], 2);
    check(
        &loopx,
        "missing_evidence_file",
        &["evidence", "add", "report", "--file", "nope.txt"],
        &[],
        2,
    );
    check(
        &loopx,
        "ttl_too_long",
        &[
            "todo",
            "claim",
            "t1",
            "--agent",
            "exec",
            "--ttl",
            "10000years",
        ],
        &[],
        2,
    );
    check(
        &loopx,
        "hold_in_the_past",
        &[
            "quota",
            "hold",
            "--account",
            "x",
            "--until",
            "2020-01-01T00:00:00Z",
        ],
        &[],
        2,
    );
    check(
        &loopx,
        "clap_unknown_flag",
        &["todo", "list", "--colour"],
        &[],
        2,
    );
    check(
        &loopx,
        "scope_outside_project",
        &["goal", "start", "x", "--scope", "../elsewhere/**"],
        &[],
        2,
    );
    check(
        &loopx,
        "scope_not_a_glob",
        &["goal", "start", "x", "--scope", "src/{a,b"],
        &[],
        2,
    );
    check(
        &loopx,
        "share_out_of_range",
        &["goal", "start", "x", "--share", "1.5"],
        &[],
        2,
    );

    let fresh = Loopx::new();
    check(
        &fresh,
        "todo_without_goal",
        &["todo", "add", "Something"],
        &[],
        2,
    );
}

#[test]
fn vague_questions_are_refused_with_a_hint() {
    let loopx = Loopx::with_work();
    check(
        &loopx,
        "question_placeholder",
        &["gate", "ask", "what should I do?"],
        &[],
        2,
    );
    check(
        &loopx,
        "question_without_mark",
        &["gate", "ask", "Should we use backoff for retries"],
        &[],
        2,
    );
    check(
        &loopx,
        "question_too_short",
        &["gate", "ask", "Merge it?"],
        &[],
        2,
    );
    loopx.ok(&[
        "gate",
        "ask",
        "Should t1 retry with exponential backoff or fail fast?",
        "--option",
        "backoff",
    ]);
    check(
        &loopx,
        "no_such_option",
        &["gate", "answer", "q1", "--option", "3"],
        &[],
        2,
    );
}

#[test]
fn conflicts() {
    let loopx = Loopx::with_work();
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    check(
        &loopx,
        "already_claimed",
        &["todo", "claim", "t1", "--agent", "exec"],
        &[],
        5,
    );
    check(
        &loopx,
        "stale_epoch",
        &["todo", "renew", "t1", "--agent", "exec", "--epoch", "7"],
        &[],
        5,
    );
    check(
        &loopx,
        "not_the_holder",
        &["todo", "release", "t1", "--agent", "rev", "--epoch", "1"],
        &[],
        5,
    );
    check(
        &loopx,
        "done_under_live_lease",
        &["todo", "done", "t1"],
        &[],
        5,
    );
    check(
        &loopx,
        "waits_on_dependency",
        &["todo", "claim", "t2", "--agent", "exec"],
        &[],
        5,
    );
    check(
        &loopx,
        "wrong_role",
        &["todo", "claim", "t3", "--agent", "exec"],
        &[],
        5,
    );
    loopx.ok(&["todo", "add", "Train the ranking model", "--needs", "gpu"]);
    check(
        &loopx,
        "missing_capability",
        &["todo", "claim", "t4", "--agent", "rev"],
        &[],
        5,
    );
    loopx.ok(&["todo", "done", "t1", "--agent", "exec", "--epoch", "1"]);
    check(&loopx, "done_twice", &["todo", "done", "t1"], &[], 5);
    // A second goal starts beside the first; a command that needs a goal then asks which.
    loopx.ok(&["goal", "start", "Another goal"]);
    check(&loopx, "which_goal", &["goal", "pause"], &[], 2);
    loopx.ok(&["goal", "done", "g2"]);
    check(
        &loopx,
        "agent_exists",
        &["agent", "add", "exec", "--profile", "executor"],
        &[],
        5,
    );
    loopx.ok(&[
        "gate",
        "ask",
        "Should the review cover the retry jitter as well?",
        "--blocks",
        "t3",
    ]);
    check(
        &loopx,
        "gated_todo",
        &["todo", "claim", "t3", "--agent", "rev"],
        &[],
        5,
    );
    loopx.ok(&["gate", "answer", "q1", "yes"]);
    check(
        &loopx,
        "answer_twice",
        &["gate", "answer", "q1", "no"],
        &[],
        5,
    );
    loopx.ok(&["goal", "done"]);
    check(
        &loopx,
        "resume_a_done_goal",
        &["goal", "resume", "g1"],
        &[],
        5,
    );
}

#[test]
fn a_gate_cannot_be_answered_from_inside_a_slice() {
    let loopx = Loopx::with_work();
    loopx.ok(&[
        "gate",
        "ask",
        "Should t1 retry with exponential backoff or fail fast?",
    ]);
    let slice = [("LOOPX_SLICE", "s4"), ("LOOPX_AGENT", "exec")];
    check(
        &loopx,
        "answer_from_slice",
        &["gate", "answer", "q1", "backoff"],
        &slice,
        6,
    );
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(
        gate["gate"]["state"], "open",
        "the refused answer changed nothing"
    );
    let log = loopx.ok(&["log", "--json", "-n", "1"]);
    assert!(
        log.stdout.contains("gate_answer_refused"),
        "the refusal is on record: {}",
        log.stdout
    );
}

#[test]
fn json_errors_are_objects_on_stdout_too() {
    let loopx = Loopx::with_work();
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    let run = loopx.run(&["todo", "claim", "t1", "--agent", "exec", "--json"]);
    assert_eq!(run.code, 5);
    let error = &run.json()["error"];
    assert_eq!(error["code"], "conflict");
    assert_eq!(error["exit_code"], 5);
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("claimed by `exec`")
    );
}

#[test]
fn a_stale_epoch_refusal_is_recorded() {
    let loopx = Loopx::with_work();
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    let run = loopx.run(&["todo", "done", "t1", "--agent", "exec", "--epoch", "0"]);
    assert_eq!(run.code, 5);
    let last = loopx.ok(&["log", "--json", "-n", "1"]);
    let event: serde_json::Value = serde_json::from_str(last.stdout.trim()).expect("json");
    assert_eq!(event["kind"], "stale_epoch_refused");
    assert_eq!(event["data"]["presented"], 0);
    assert_eq!(event["data"]["current"], 1);
    assert_eq!(event["data"]["action"], "done");
}

#[test]
fn a_non_utf8_environment_does_not_break_commands() {
    use std::os::unix::ffi::OsStrExt;
    let loopx = Loopx::with_work();
    let value = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let out = loopx
        .command(&["todo", "list"])
        .env("LANG_NOTE", value)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_epoch_alone_does_not_finish_a_live_claim() {
    let loopx = Loopx::with_work();
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    let run = loopx.run(&["todo", "drop", "t1", "--epoch", "1"]);
    assert_eq!(run.code, 5, "the holder must name itself: {}", run.stderr);
    loopx.ok(&["todo", "drop", "t1", "--epoch", "1", "--agent", "exec"]);
}

#[test]
fn report_errors() {
    let loopx = Loopx::with_work();
    check(
        &loopx,
        "report_outside_a_slice",
        &["report", "evidence", "note", "hello"],
        &[],
        2,
    );
    // A channel that is gone: the slice ended (its room was removed).
    check(
        &loopx,
        "report_channel_gone",
        &["report", "done"],
        &[("LOOPX_REPORT_SOCKET", "/nonexistent/loopx-0/s1/report.sock")],
        5,
    );
}
