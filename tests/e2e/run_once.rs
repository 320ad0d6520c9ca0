//! `loopx run --once`: one real slice of the built-in demo agent, end to end, through the real
//! binary: decide, claim, record, spawn in a PTY, parse, classify, write back.

use serde_json::Value;

use crate::support::{Loopx, todo_state};

/// A project with a goal and the demo agent registered as `exec`.
pub(crate) fn project() -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    loopx.ok(&[
        "agent",
        "add",
        "exec",
        "--profile",
        "demo",
        "--capability",
        "demo",
    ]);
    loopx
}

/// `loopx run --once --json`, insisting on success; the slice it ran.
fn run_once(loopx: &Loopx, env: &[(&str, &str)]) -> Value {
    let run = loopx.run_once(env);
    let out = run.json();
    assert_eq!(out["format_version"], 1);
    assert!(
        out["slice"].is_object(),
        "no slice ran: {out}\n{}",
        run.stderr
    );
    out["slice"].clone()
}

#[test]
fn a_work_slice_does_the_todo_and_writes_everything_back() {
    let loopx = project();
    loopx.ok(&["todo", "add", "Write the notes"]);
    let run = loopx.run(&["run", "--once"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "results only with --json: {}",
        run.stdout
    );
    for step in [
        "exec: deliver t1 (work)",
        "exec: claimed t1 (epoch 1)",
        "slice s1 started: work on t1 (log .loopx/slices/s1.log)",
        "slice s1 spawned: pid ",
        "slice s1 ended: completed in ",
        "slice s1: t1 done",
    ] {
        assert!(run.stderr.contains(step), "no `{step}` in:\n{}", run.stderr);
    }

    assert_eq!(todo_state(&loopx, "t1"), "done");
    let notes = std::fs::read_to_string(loopx.path().join("demo/NOTES.md")).expect("notes");
    assert!(notes.contains("Write the notes"), "{notes}");
    let log = loopx.path().join(".loopx/slices/s1.log");
    let logged = std::fs::read_to_string(&log).expect("the slice log exists");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&log).expect("metadata").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "agent output may hold secrets");
    assert!(logged.contains("loopx-report"), "the raw stream is logged");

    let evidence = loopx.ok(&["evidence", "list", "--json"]).json();
    let evidence = evidence["evidence"].as_array().expect("a list");
    let slice = evidence
        .iter()
        .find(|e| e["kind"] == "slice")
        .expect("slice evidence");
    let summary = slice["summary"].as_str().expect("summary");
    assert!(summary.contains("s1 on t1: completed"), "{summary}");
    assert!(
        slice["detail"]
            .as_str()
            .expect("detail")
            .contains("outcome: completed")
    );
    assert_eq!(slice["slice"], "s1");
    for kind in ["test", "diff"] {
        assert!(
            evidence
                .iter()
                .any(|e| e["kind"] == kind && e["todo"] == "t1"),
            "the report's {kind} evidence: {evidence:?}"
        );
    }

    let handoff = loopx.ok(&["handoff", "--todo", "t1"]).stdout;
    assert!(handoff.contains("demo/NOTES.md"), "{handoff}");

    let kinds: Vec<String> = loopx
        .ok(&["log", "--json"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .filter(|k| k.starts_with("slice_") || k == "todo_claimed" || k == "todo_done")
        .collect();
    assert_eq!(
        kinds,
        [
            "todo_claimed",
            "slice_started",
            "slice_spawned",
            "slice_ended",
            "todo_done"
        ],
        "events in order"
    );
}

#[test]
fn the_json_object_describes_the_slice() {
    let loopx = project();
    loopx.ok(&["todo", "add", "Write the notes"]);
    let slice = run_once(&loopx, &[]);
    let expected = serde_json::json!({
        "id": "s1", "agent": "exec", "kind": "work", "todo": "t1", "epoch": 1,
        "outcome": "completed", "exit": "exit 0", "report": "done", "todo_state": "done",
        "writeback": "applied", "log": ".loopx/slices/s1.log", "new_todos": [], "gate": null,
        "hold_until": null,
    });
    for (key, want) in expected.as_object().expect("an object") {
        assert_eq!(&slice[key], want, "`{key}` in {slice}");
    }
    assert!(slice["tokens"].as_u64().expect("tokens") > 0);
    assert!(slice["cost_usd"].as_f64().expect("cost") > 0.0);
    assert!(slice["output_bytes"].as_u64().expect("bytes") > 0);
    assert!(slice["pid"].as_u64().is_some());
}

#[test]
fn a_planning_slice_creates_the_proposed_todos() {
    let loopx = project();
    let slice = run_once(&loopx, &[]);
    assert_eq!(slice["kind"], "plan");
    assert_eq!(slice["todo"], Value::Null);
    assert_eq!(slice["new_todos"], serde_json::json!(["t1", "t2", "t3"]));
    let todos = loopx.ok(&["todo", "list", "--json"]).json();
    let todos = todos["todos"].as_array().expect("todos");
    assert_eq!(todos.len(), 3, "{todos:?}");
    assert!(todos.iter().any(|t| t["role"] == "reviewer"), "{todos:?}");
    assert!(todos.iter().all(|t| t["created_by"] == "agent:exec"));
}

#[test]
fn a_question_becomes_a_gate_that_blocks_the_todo_until_answered() {
    let loopx = project();
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    let slice = run_once(&loopx, &[]);
    assert_eq!(slice["outcome"], "asked");
    assert_eq!(slice["report"], "blocked");
    assert_eq!(slice["todo_state"], "released");
    assert_eq!(slice["gate"], "q1");
    assert_eq!(todo_state(&loopx, "t1"), "open");
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    let gate = &gates["gates"][0];
    assert!(gate["question"].as_str().expect("question").ends_with('?'));
    assert_eq!(gate["blocks"]["todos"], serde_json::json!(["t1"]));

    // Blocked: the next run asks, names the gate and how to answer it, and runs nothing.
    let run = loopx.run(&["run", "--once"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("exec: ask"), "{}", run.stderr);
    assert!(
        run.stderr.contains("loopx gate answer q1"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("started"), "{}", run.stderr);

    // Answered: the answer reaches the agent through the prompt, and the todo is done.
    loopx.ok(&["gate", "answer", "q1", "--option", "1"]);
    let slice = run_once(&loopx, &[]);
    assert_eq!(slice["outcome"], "completed");
    assert_eq!(todo_state(&loopx, "t1"), "done");
    let notes = std::fs::read_to_string(loopx.path().join("demo/NOTES.md")).expect("notes");
    assert!(notes.contains("Markdown list"), "{notes}");
}

#[test]
fn a_usage_limit_holds_the_account_until_it_resets() {
    let loopx = project();
    loopx.ok(&["todo", "add", "Write the notes [demo:usage-limit]"]);
    let before = jiff::Timestamp::now().as_second();
    let slice = run_once(&loopx, &[("LOOPX_DEMO_RESET_SECS", "5")]);
    assert_eq!(slice["outcome"], "usage_limited");
    assert_eq!(slice["todo_state"], "released");

    let quota = loopx.ok(&["quota", "status", "--json"]).json();
    let hold = &quota["holds"][0];
    assert_eq!(hold["key"], "demo");
    assert_eq!(hold["source"], "vendor");
    let until: jiff::Timestamp = hold["until"]
        .as_str()
        .expect("until")
        .parse()
        .expect("RFC 3339");
    let ahead = until.as_second() - before;
    assert!((3..=8).contains(&ahead), "held {ahead}s ahead");

    let decision = loopx
        .ok(&["quota", "should-run", "--agent", "exec", "--json"])
        .json();
    assert_eq!(decision["decision"], "wait", "{decision}");
    let run = loopx.run(&["run", "--once"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("exec: wait until"), "{}", run.stderr);
}

#[test]
fn run_needs_a_registered_agent() {
    let loopx = Loopx::new();
    let run = loopx.run(&["run"]);
    assert_eq!(run.code, i32::from(loopx_cli::exit_code::USAGE));
    assert!(
        run.stderr.contains("no agent is registered"),
        "{}",
        run.stderr
    );
    let run = loopx.run(&["run", "--once"]);
    assert_eq!(run.code, i32::from(loopx_cli::exit_code::USAGE));
    assert!(
        run.stderr.contains("no agent is registered"),
        "{}",
        run.stderr
    );
    let run = loopx.run(&["run", "--once", "--agent", "nobody"]);
    assert!(
        run.stderr.contains("`nobody` is not registered"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_agent_that_cannot_start_ends_its_slice_and_releases_the_todo() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    let profile =
        "adapter = \"demo\"\nprogram = \"/nonexistent/agent\"\npermission = \"workspace-write\"\n";
    std::fs::write(loopx.path().join(".loopx/profiles/broken.toml"), profile).expect("profile");
    loopx.ok(&["agent", "add", "exec", "--profile", "broken"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    let slice = run_once(&loopx, &[]);
    assert_eq!(slice["outcome"], "spawn_failed", "{slice}");
    assert_eq!(slice["todo_state"], "released");
    assert_eq!(slice["pid"], Value::Null);
    assert_eq!(todo_state(&loopx, "t1"), "open");
    let decision = loopx
        .ok(&["quota", "should-run", "--agent", "exec", "--json"])
        .json();
    // One question names the fix; the agent waits on it rather than trying again at its pace.
    assert_eq!(decision["decision"], "ask", "{decision}");
    let question = decision["gate"]["question"].as_str().unwrap_or_default();
    assert!(
        question.contains("`exec` could not be started"),
        "{decision}"
    );
    // Answered, the agent tries again: a repair slice on the todo.
    let gate = decision["gate"]["id"].as_str().expect("a gate");
    loopx.ok(&["gate", "answer", gate, "retry"]);
    let decision = loopx
        .ok(&["quota", "should-run", "--agent", "exec", "--json"])
        .json();
    assert_eq!(decision["decision"], "repair", "{decision}");
}
