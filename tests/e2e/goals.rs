//! `loopx goal amend`: a person's change reaches the next slice, which re-plans.

use crate::support::{LOOPX, Loopx, git, script_agent};
use serde_json::Value;

/// A project whose goal is `Add retries to the HTTP client`, in `src/**`.
fn http_client_goal() -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&[
        "goal",
        "start",
        "Add retries to the HTTP client",
        "--scope",
        "src/**",
    ]);
    loopx
}

/// A person moves the goal to gRPC; the next slice is the re-planning one, its summary.
fn amend_to_grpc_and_re_plan(loopx: &Loopx) -> serde_json::Value {
    loopx.ok(&[
        "goal",
        "amend",
        "--objective",
        "Move the client to gRPC, with retries",
        "--why",
        "the service dropped HTTP",
    ]);
    let plan = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(plan["slice"]["kind"], "plan", "{plan:#}");
    plan
}

/// An agent `worker` that keeps each prompt it is given (`prompt-0.txt`, `prompt-1.txt`, …) and
/// reports `report` (a report block's JSON).
fn prompt_keeper(loopx: &Loopx, report: &str) {
    keeper_reporting(loopx, &format!("report='{report}'"));
}

/// Like [`prompt_keeper`], but its first slice plans the goal: it proposes `t1` "Retry on HTTP
/// 503" and `t2` "Add retries", agents' todos a re-planner may change. Its prompts after the
/// first are `prompt-1.txt`, …
fn planning_prompt_keeper(loopx: &Loopx, report: &str) {
    let planned = r#"{"status":"progress","summary":"planned","next_todos":[{"title":"Retry on HTTP 503"},{"title":"Add retries"}]}"#;
    keeper_reporting(
        loopx,
        &format!("if [ \"$n\" = 0 ]; then report='{planned}'; else report='{report}'; fi"),
    );
    let plan = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(plan["slice"]["kind"], "plan", "{plan:#}");
    let t2 = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    assert_eq!(t2["todo"]["created_by"], "agent:worker", "{t2:#}");
}

/// The prompt keeper whose `choose` sets `$report` (`$n` is the slice's number, from 0).
fn keeper_reporting(loopx: &Loopx, choose: &str) {
    script_agent(
        loopx,
        "worker",
        &format!(
            r#"n=$(ls prompt-*.txt 2>/dev/null | wc -l)
cat > "prompt-$n.txt"
{choose}
printf '%s\n' '```loopx-report' "$report" '```'"#
        ),
        "max_time = \"30s\"",
    );
}

#[test]
fn an_amended_objective_heads_the_next_slice_s_prompt_and_that_slice_re_plans() {
    let loopx = http_client_goal();
    prompt_keeper(
        &loopx,
        // Its note is what it moved: outside git a `progress` slice that changed nothing in the
        // scope and said nothing of its own rests its todo.
        r#"{"status":"progress","summary":"looked","handoff":"t1 no longer fits: the client is gRPC now","evidence":[{"kind":"note","summary":"the client speaks gRPC now"}]}"#,
    );
    loopx.ok(&["todo", "add", "Retry on HTTP 503"]);
    let before = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(before["slice"]["kind"], "work", "{before:#}");
    // A person changes the goal; an agent cannot.
    let refused = loopx
        .command(&["goal", "amend", "--objective", "Anything"])
        .env("LOOPX_SLICE", "s9")
        .output()
        .expect("run");
    assert_eq!(
        refused.status.code(),
        Some(6),
        "refused as a person's command"
    );
    let amended = loopx.ok(&[
        "goal",
        "amend",
        "--objective",
        "Move the client to gRPC, with retries",
        "--scope",
        "src/**",
        "--scope",
        "proto/**",
        "--why",
        "the service dropped HTTP",
    ]);
    assert!(
        amended
            .stdout
            .contains("Amended goal g1 to revision 2: objective and scope changed (why: the service dropped HTTP)"),
        "{}",
        amended.stdout
    );
    // The next slice plans, and its prompt starts with the change and lists the open todo.
    let after = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(after["slice"]["kind"], "plan", "{after:#}");
    let prompt = std::fs::read_to_string(loopx.path().join("prompt-1.txt")).expect("a prompt");
    assert!(
        prompt.starts_with("The goal changed in revision 2 (objective and scope changed (why: the service dropped HTTP)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("- objective now: Move the client to gRPC, with retries\n  objective before: Add retries to the HTTP client"),
        "{prompt}"
    );
    assert!(prompt.contains("- t1: Retry on HTTP 503"), "{prompt}");
    // Re-planned, the agent goes back to the todo, still told of the change.
    let next = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(next["slice"]["kind"], "work", "{next:#}");
    let prompt = std::fs::read_to_string(loopx.path().join("prompt-2.txt")).expect("a prompt");
    assert!(
        prompt.starts_with("The goal changed in revision 2"),
        "{prompt}"
    );
    // `goal show` lists the revisions.
    let shown = loopx.ok(&["goal", "show", "--json"]).json();
    let revisions = shown["goal"]["revisions"].as_array().expect("revisions");
    assert_eq!(revisions.len(), 2, "{shown:#}");
    assert_eq!(
        revisions[1]["changed"],
        serde_json::json!(["objective", "scope"])
    );
    assert_eq!(shown["goal"]["revision"], 2, "{shown:#}");
    let text = loopx.ok(&["goal", "show"]).stdout;
    assert!(text.contains("Revisions:"), "{text}");
}

#[test]
fn an_agent_proposes_a_change_and_only_a_person_s_accept_makes_it_a_revision() {
    let loopx = http_client_goal();
    // First through the CLI, then through its report block's `propose_goal`.
    script_agent(
        &loopx,
        "worker",
        &format!(
            r#"cat > /dev/null
if [ ! -e proposed-once ]; then
  touch proposed-once
  '{LOOPX}' report propose-goal --objective "Retry in the gRPC client" --why "the service moved to gRPC" > propose.out 2>&1
  printf '%s\n' '```loopx-report' '{{"status":"progress","summary":"proposed"}}' '```'
else
  printf '%s\n' '```loopx-report' '{{"status":"progress","summary":"proposed again","propose_goal":{{"scope":["src/**","proto/**"],"why":"the protos live in proto/"}}}}' '```'
fi"#
        ),
        "max_time = \"30s\"",
    );
    loopx.ok(&["todo", "add", "Retry on HTTP 503"]);
    loopx.ok(&["run", "--json", "--once"]);
    let out = std::fs::read_to_string(loopx.path().join("propose.out")).expect("output");
    assert!(out.contains("q1"), "{out}");
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(
        gate["gate"]["question"], "`worker` proposes to change the objective of goal g1: accept?",
        "{gate:#}"
    );
    let context = gate["gate"]["context"].as_str().expect("context");
    assert!(
        context.contains(
            "objective now: Add retries to the HTTP client\nproposed: Retry in the gRPC client"
        ),
        "{context}"
    );
    // A proposal holds nothing back: the agent works on while it waits.
    let next = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(next["slice"]["kind"], "work", "{next:#}");
    // Rejected, nothing changes; accepted, the goal is amended by the person who answered.
    loopx.ok(&["gate", "answer", "q1", "2"]);
    let goal = loopx.ok(&["goal", "show", "--json"]).json();
    assert_eq!(goal["goal"]["revision"], 1, "{goal:#}");
    loopx.ok(&["gate", "answer", "q2", "1"]);
    let goal = loopx.ok(&["goal", "show", "--json"]).json();
    assert_eq!(goal["goal"]["revision"], 2, "{goal:#}");
    assert_eq!(
        goal["goal"]["scope"],
        serde_json::json!(["src/**", "proto/**"])
    );
    assert_eq!(goal["goal"]["objective"], "Add retries to the HTTP client");
    let revision = &goal["goal"]["revisions"][1];
    assert!(
        revision["by"]
            .as_str()
            .is_some_and(|by| by.starts_with("human:")),
        "{revision:#}"
    );
    assert_eq!(
        revision["why"],
        "the protos live in proto/ (proposed by `worker`, accepted in q2)"
    );
}

#[test]
fn todo_done_next_finishes_a_todo_and_creates_its_successor_in_one_step() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the parser"]);
    loopx.ok(&[
        "todo",
        "add",
        "Write the parser",
        "--priority",
        "3",
        "--role",
        "exec",
    ]);
    let out = loopx
        .ok(&[
            "todo",
            "done",
            "t1",
            "--next",
            "Review the parser",
            "--json",
        ])
        .json();
    assert_eq!(out["todo"]["state"], "done", "{out:#}");
    let next = &out["next"];
    assert_eq!(next["id"], "t2", "{out:#}");
    assert_eq!(next["title"], "Review the parser");
    assert_eq!(
        (next["priority"].as_i64(), next["role"].as_str()),
        (Some(3), Some("exec"))
    );
    assert_eq!(next["after"], serde_json::json!(["t1"]));
    assert_eq!(next["state"], "open");
    // A successor the kernel refuses leaves the todo as it was: both or neither.
    loopx.ok(&["todo", "add", "Write the lexer"]);
    let refused = loopx.run(&["todo", "done", "t3", "--next", "   "]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let t3 = loopx.ok(&["todo", "show", "t3", "--json"]).json();
    assert_eq!(t3["todo"]["state"], "open", "{t3:#}");
    let text = loopx
        .ok(&["todo", "done", "t3", "--next", "Test the lexer"])
        .stdout;
    assert!(text.contains("Next: t4 Test the lexer"), "{text}");
}

#[test]
fn a_scope_narrowed_under_open_todos_asks_one_question_naming_them_and_refuses_their_claims() {
    let loopx = Loopx::new();
    // The files a slice changed are recorded where git can tell them.
    std::fs::write(loopx.path().join(".gitignore"), ".loopx/\n*.sh\n").expect("write");
    git(loopx.path(), &["init", "-q"]);
    git(loopx.path(), &["add", "-A"]);
    git(loopx.path(), &["commit", "-qm", "start"]);
    loopx.ok(&[
        "goal",
        "start",
        "Move the client to gRPC",
        "--isolation",
        "shared",
        "--scope",
        "src/**",
        "--scope",
        "proto/**",
    ]);
    // t1's slice changes a file in proto/; t3 has a proto file pinned as evidence; t2's work
    // stays in src/, and t4 has none recorded.
    script_agent(
        &loopx,
        "worker",
        r#"mkdir -p proto && echo "service Api {}" > proto/api.proto
printf '%s\n' '```loopx-report' '{"status":"progress","summary":"drafted the service"}' '```'"#,
        "max_time = \"30s\"",
    );
    loopx.ok(&[
        "todo",
        "add",
        "Write the service definition",
        "--priority",
        "3",
    ]);
    loopx.ok(&["todo", "add", "Retry on UNAVAILABLE"]);
    loopx.ok(&["todo", "add", "Drop the old proto"]);
    loopx.ok(&["todo", "add", "Document the client"]);
    let first = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(first["slice"]["todo"], "t1", "{first:#}");
    std::fs::create_dir_all(loopx.path().join("src")).expect("mkdir");
    std::fs::write(loopx.path().join("src/retry.rs"), "// retries\n").expect("write");
    std::fs::write(loopx.path().join("proto/old.proto"), "// old\n").expect("write");
    for (todo, file) in [("t2", "src/retry.rs"), ("t3", "proto/old.proto")] {
        loopx.ok(&[
            "evidence", "add", "drafted", "--kind", "artifact", "--file", file, "--todo", todo,
        ]);
    }
    loopx.ok(&[
        "goal",
        "amend",
        "--scope",
        "src/**",
        "--why",
        "the proto lives in its own repository now",
    ]);
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    let open: Vec<&Value> = gates["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .filter(|g| g["state"] == "open")
        .collect();
    assert_eq!(open.len(), 1, "one question: {gates:#}");
    let gate = open[0];
    assert_eq!(
        gate["question"],
        "Revision 2 narrowed the scope of goal g1: 2 open todos with work outside it (t1, t3). Keep or drop them?",
        "{gate:#}"
    );
    assert_eq!(
        gate["blocks"],
        serde_json::json!({"todos": ["t1", "t3"]}),
        "{gate:#}"
    );
    let context = gate["context"].as_str().expect("context");
    assert!(
        context.contains("t1 Write the service definition: proto/api.proto"),
        "{context}"
    );
    assert!(
        context.contains("t3 Drop the old proto: proto/old.proto"),
        "{context}"
    );
    // No agent takes a held todo; the others go on.
    let refused = loopx.run(&["todo", "claim", "t1", "--agent", "worker"]);
    assert_eq!(refused.code, 5, "{}", refused.stderr);
    assert!(refused.stderr.contains("q1"), "{}", refused.stderr);
    loopx.ok(&["todo", "claim", "t2", "--agent", "worker"]);
    // `drop` drops the todos still held.
    loopx.ok(&["gate", "answer", "q1", "drop"]);
    for (todo, state) in [
        ("t1", "dropped"),
        ("t2", "claimed"),
        ("t3", "dropped"),
        ("t4", "open"),
    ] {
        assert_eq!(crate::support::todo_state(&loopx, todo), state, "{todo}");
    }
}

#[test]
fn a_handoff_written_before_its_todo_changed_and_an_answer_given_under_an_older_objective_are_marked()
 {
    let loopx = http_client_goal();
    prompt_keeper(&loopx, r#"{"status":"progress","summary":"looked"}"#);
    loopx.ok(&["todo", "add", "Retry on HTTP 503"]);
    loopx.ok(&[
        "handoff",
        "write",
        "--todo",
        "t1",
        "--done",
        "read the client",
        "--next",
        "add backoff",
    ]);
    let fresh = loopx.ok(&["handoff", "--todo", "t1", "--json"]).json();
    assert_eq!(fresh["handoff"]["stale"], false, "{fresh:#}");
    // A person rewrites the task under the handoff.
    let changed = loopx.ok(&[
        "todo",
        "set",
        "t1",
        "--title",
        "Retry on HTTP 503 and 429",
        "--priority",
        "5",
    ]);
    assert!(changed.stdout.contains("Changed t1"), "{}", changed.stdout);
    let stale = loopx.ok(&["handoff", "--todo", "t1", "--json"]).json();
    assert_eq!(stale["handoff"]["stale"], true, "{stale:#}");
    assert_eq!(
        stale["handoff"]["stale_reason"],
        "written before the todo's title (was \"Retry on HTTP 503\"); the todo's priority (0 → 5) changed",
        "{stale:#}"
    );
    let shown = loopx.ok(&["todo", "show", "t1"]).stdout;
    assert!(
        shown.contains("stale: written before the todo's title"),
        "{shown}"
    );
    // Nothing to change, a finished todo and an agent are refused.
    assert_eq!(loopx.run(&["todo", "set", "t1", "--priority", "5"]).code, 2);
    let refused = loopx.run_env(
        &["todo", "set", "t1", "--priority", "1"],
        &[("LOOPX_SLICE", "s9")],
    );
    assert_eq!(refused.code, 6, "{}", refused.stderr);

    // A question that held t1 was answered under revision 1; the objective changes.
    loopx.ok(&[
        "gate",
        "ask",
        "Should t1 retry POST requests too?",
        "--option",
        "yes",
        "--option",
        "no",
        "--blocks",
        "t1",
    ]);
    loopx.ok(&["gate", "answer", "q1", "no"]);
    loopx.ok(&[
        "goal",
        "amend",
        "--objective",
        "Move the client to gRPC, with retries",
    ]);
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    let again = gates["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .find(|g| g["state"] == "open")
        .cloned()
        .unwrap_or_else(|| panic!("asked again: {gates:#}"));
    assert_eq!(
        again["question"], "Should t1 retry POST requests too?",
        "{again:#}"
    );
    assert_eq!(
        again["blocks"],
        serde_json::json!({"todos": ["t1"]}),
        "{again:#}"
    );
    let context = again["context"].as_str().expect("context");
    assert!(
        context.starts_with(
            "Asked again: revision 2 changed the objective of goal g1 after q1 was answered `no`"
        ),
        "{context}"
    );
    assert_eq!(
        loopx
            .run(&["todo", "claim", "t1", "--agent", "worker"])
            .code,
        5
    );
    let id = again["id"].as_str().expect("id");
    loopx.ok(&["gate", "answer", id, "yes"]);
    // The re-planning slice, then t1's: its prompt marks the handoff and the old answer.
    loopx.ok(&["run", "--once"]);
    let work = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(work["slice"]["todo"], "t1", "{work:#}");
    let prompt = std::fs::read_to_string(loopx.path().join("prompt-1.txt")).expect("a prompt");
    assert!(
        prompt.contains("(stale: written before the todo's title (was \"Retry on HTTP 503\"); the todo's priority (0 → 5); the goal (revision 1 → 2) changed; read it as history, not as the task)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Answer: no\n(answered under revision 1; the goal is at revision 2: check it still holds)"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(
            "{id}: Should t1 retry POST requests too?\nAnswer: yes\n"
        )),
        "{prompt}"
    );
}

#[test]
fn a_re_planning_slice_drops_and_rewrites_the_todos_the_amendment_left_behind() {
    let loopx = http_client_goal();
    // After planning t1 and t2, the agent always asks to drop t1 and rewrite t2: only the
    // re-planning slice may.
    planning_prompt_keeper(
        &loopx,
        r#"{"status":"progress","summary":"re-planned","drop_todos":[{"todo":"t1","why":"HTTP is gone"}],"rewrite_todos":[{"todo":"t2","title":"Add retries around the gRPC stub","why":"the client is gRPC now"}]}"#,
    );
    let work = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(work["slice"]["kind"], "work", "{work:#}");
    let t1 = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(
        t1["todo"]["state"], "open",
        "a work slice drops nothing: {t1:#}"
    );
    let notes = loopx.ok(&["evidence", "list", "--json"]).stdout;
    assert!(
        notes.contains("dropping t1: only the planning slice that re-plans"),
        "the refusal is noted: {notes}"
    );
    amend_to_grpc_and_re_plan(&loopx);
    let prompt = std::fs::read_to_string(loopx.path().join("prompt-2.txt")).expect("a prompt");
    assert!(
        prompt.contains("\"drop_todos\""),
        "the task says how: {prompt}"
    );
    let t1 = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(t1["todo"]["state"], "dropped", "{t1:#}");
    let t2 = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    assert_eq!(t2["todo"]["title"], "Add retries around the gRPC stub");
    let log = loopx.ok(&["log"]).stdout;
    assert!(
        log.contains("t1 dropped in re-planning by slice s3: HTTP is gone"),
        "{log}"
    );
    assert!(
        log.contains("t2 rewritten (title) in re-planning by slice s3: the client is gRPC now"),
        "{log}"
    );
    // Re-planned: the next slice works on t2, and may no longer drop it.
    let next = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(
        (
            next["slice"]["kind"].as_str(),
            next["slice"]["todo"].as_str()
        ),
        (Some("work"), Some("t2")),
        "{next:#}"
    );
    let t2 = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    assert_eq!(t2["todo"]["state"], "open", "{t2:#}");
}

#[test]
fn a_continuation_is_held_for_the_agent_that_did_the_work_before_it() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the config loader"]);
    script_agent(
        &loopx,
        "worker",
        r#"if [ -e proposed ]; then next='[]'; else next='[{"title":"Validate the config","same_agent":true}]'; touch proposed; fi
printf '%s\n' '```loopx-report' "{\"status\":\"done\",\"summary\":\"parsed\",\"next_todos\":$next}" '```'"#,
        "max_time = \"30s\"",
    );
    script_agent(
        &loopx,
        "other",
        r#"printf '%s\n' '```loopx-report' '{"status":"progress","summary":"looked"}' '```'"#,
        "max_time = \"30s\"",
    );
    loopx.ok(&["todo", "add", "Parse the config"]);
    loopx.ok(&["run", "--once", "--agent", "worker"]);
    let t2 = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    assert_eq!(t2["todo"]["state"], "claimed", "{t2:#}");
    assert_eq!(t2["todo"]["lease"]["agent"], "worker", "{t2:#}");
    // Another agent passes it over while it is held; its agent takes it next.
    let other = loopx
        .ok(&["run", "--once", "--json", "--agent", "other"])
        .json();
    assert_ne!(other["slice"]["todo"], "t2", "{other:#}");
    let worker = loopx
        .ok(&["run", "--once", "--json", "--agent", "worker"])
        .json();
    assert_eq!(worker["slice"]["todo"], "t2", "{worker:#}");
    // A person's continuation goes to the agent that worked on the todo.
    loopx.ok(&["todo", "add", "Write the docs"]);
    let other = loopx
        .ok(&["run", "--once", "--json", "--agent", "other"])
        .json();
    assert_eq!(other["slice"]["todo"], "t3", "{other:#}");
    let text = loopx
        .ok(&[
            "todo",
            "done",
            "t3",
            "--next",
            "Publish the docs",
            "--same-agent",
        ])
        .stdout;
    assert!(
        text.contains("Next: t4 Publish the docs (held for other until "),
        "{text}"
    );
    loopx.ok(&["todo", "add", "Tidy up"]);
    let refused = loopx.run(&["todo", "done", "t5", "--next", "x", "--same-agent"]);
    assert_eq!(refused.code, 2, "nobody worked on t5: {}", refused.stderr);
    assert!(
        refused.stderr.contains("leave out --same-agent"),
        "{}",
        refused.stderr
    );
}

/// Issue 46, hole 3: after an amendment the re-planning slice's report dropped every open todo
/// — a person's priority-9 todo and a person's monitor among them — and said `done`; the drops
/// were written before the goal's status, so nothing was open and the goal ended. A re-planner
/// changes only agents' todos, and the goal's end is judged against the todos as they were
/// before its own drops: the `done` and the person's drops are refused and noted, the rest of
/// the report stands.
#[test]
fn a_re_planner_that_drops_every_todo_does_not_end_the_goal() {
    let loopx = http_client_goal();
    planning_prompt_keeper(
        &loopx,
        r#"{"status":"done","summary":"nothing left to do","drop_todos":[{"todo":"t1","why":"gone"},{"todo":"t2","why":"gone"},{"todo":"t3","why":"gone"},{"todo":"t4","why":"gone"}]}"#,
    );
    loopx.ok(&["todo", "add", "Deploy after the review", "--priority", "9"]);
    loopx.ok(&[
        "todo",
        "add",
        "Wait for the release build",
        "--check",
        "test -e released",
        "--every",
        "1h",
    ]);
    let plan = amend_to_grpc_and_re_plan(&loopx);
    assert_eq!(plan["slice"]["goal_done"], false, "{plan:#}");
    let goal = loopx.ok(&["goal", "show", "--json"]).json();
    assert_eq!(goal["goal"]["status"], "active", "{goal:#}");
    for (todo, state) in [
        ("t1", "dropped"),
        ("t2", "dropped"),
        ("t3", "open"),
        ("t4", "open"),
    ] {
        let shown = loopx.ok(&["todo", "show", todo, "--json"]).json();
        assert_eq!(shown["todo"]["state"], state, "{shown:#}");
    }
    let notes = loopx.ok(&["evidence", "list", "--json"]).stdout;
    assert!(
        notes.contains("t3 is a todo `human:"),
        "the refusal is noted: {notes}"
    );
    assert!(
        notes.contains("t4 is a monitor `human:"),
        "the refusal is noted: {notes}"
    );
}
