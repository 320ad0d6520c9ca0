//! Evidence that ages: a pinned file that changed, a test result about code that changed since,
//! and a `done` that rested on it (`docs/goals.md`, "Evidence that ages").

use serde_json::Value;

use crate::support::{LOOPX, Loopx, git, script_agent};

/// The evidence of `kind` in `evidence list --json`.
fn listed(loopx: &Loopx, kind: &str) -> Value {
    listed_where(loopx, "kind", kind)
}

/// The newest evidence in `evidence list --json` whose `field` is `value`.
fn listed_where(loopx: &Loopx, field: &str, value: &str) -> Value {
    let list = loopx.ok(&["evidence", "list", "--json"]).json();
    list["evidence"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|e| e[field] == value)
        .cloned()
        .unwrap_or_else(|| panic!("no evidence with {field} {value} in {list:#}"))
}

/// A project in git with `src/lib.rs` committed, whose agents' dones need a fresh test result.
fn tested_git_project() -> Loopx {
    let loopx = Loopx::new();
    let dir = loopx.path();
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    std::fs::write(dir.join("src/lib.rs"), "v1\n").expect("write");
    std::fs::write(dir.join(".gitignore"), ".loopx/\n*.sh\nprompt-*.txt\n").expect("write");
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "v1"]);
    loopx.write_config("[evidence]\ndone_needs = [\"test\"]\n");
    loopx
}

#[test]
fn a_pinned_file_changed_after_its_evidence_was_recorded_is_stale() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Make the benchmark faster"]);
    std::fs::write(loopx.path().join("results.txt"), "p50 12ms\n").expect("write");
    loopx.ok(&[
        "evidence",
        "add",
        "p50 is 12 ms",
        "--kind",
        "artifact",
        "--file",
        "results.txt",
    ]);
    let fresh = listed(&loopx, "artifact");
    assert_eq!(fresh["stale"], false, "{fresh:#}");
    assert_eq!(fresh["stale_reason"], Value::Null, "{fresh:#}");
    std::fs::write(loopx.path().join("results.txt"), "p50 30ms\n").expect("write");
    let stale = listed(&loopx, "artifact");
    assert_eq!(stale["stale"], true, "{stale:#}");
    let why = stale["stale_reason"].as_str().expect("a reason");
    assert!(
        why.starts_with("results.txt changed since it was pinned"),
        "{why}"
    );
    for command in [&["evidence", "list"][..], &["status"]] {
        let text = loopx.ok(command).stdout;
        assert!(
            text.contains("stale: results.txt changed since it was pinned"),
            "{command:?}: {text}"
        );
    }
    let status = loopx.ok(&["status", "--json"]).json();
    let latest = &status["latest_evidence"][0];
    assert_eq!(latest["kind"], "artifact", "{status:#}");
    assert_eq!(latest["stale"], true, "{status:#}");
    std::fs::remove_file(loopx.path().join("results.txt")).expect("remove");
    let gone = listed(&loopx, "artifact");
    assert_eq!(gone["stale_reason"], "results.txt is gone", "{gone:#}");
}

#[test]
fn a_test_result_from_before_a_commit_that_touched_the_scope_is_stale_and_proves_no_done() {
    let loopx = tested_git_project();
    let dir = loopx.path();
    // The project's own tree, which a person commits to meanwhile (a worktree goal's todo
    // is the next test).
    loopx.ok(&[
        "goal",
        "start",
        "Fix the parser",
        "--scope",
        "src/**",
        "--isolation",
        "shared",
    ]);
    // First slice: changes the code, runs the tests, says progress. Second: says done with no
    // evidence of its own. Third: tests again and says done.
    script_agent(
        &loopx,
        "worker",
        &format!(
            r#"n=$(ls prompt-*.txt 2>/dev/null | wc -l)
cat > "prompt-$n.txt"
case $n in
0) echo v2 > src/lib.rs
   '{LOOPX}' report evidence test "unit tests: 3 passed" > /dev/null
   printf '%s\n' '```loopx-report' '{{"status":"progress","summary":"fixed and tested"}}' '```' ;;
1) printf '%s\n' '```loopx-report' '{{"status":"done","summary":"it was tested"}}' '```' ;;
*) printf '%s\n' '```loopx-report' '{{"status":"done","summary":"tested again","evidence":[{{"kind":"test","summary":"unit tests: 4 passed"}}]}}' '```' ;;
esac"#
        ),
        "max_time = \"30s\"",
    );
    loopx.ok(&["todo", "add", "Fix the off-by-one in the parser"]);
    let first = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(first["slice"]["outcome"], "progress", "{first:#}");
    let fresh = listed(&loopx, "test");
    assert_eq!(fresh["stale"], false, "{fresh:#}");
    // Committing the very content the tests ran on changes nothing they saw.
    git(dir, &["commit", "-qam", "v2"]);
    assert_eq!(listed(&loopx, "test")["stale"], false);
    // A commit that changes the code in scope does.
    std::fs::write(dir.join("src/lib.rs"), "v3\n").expect("write");
    git(dir, &["commit", "-qam", "v3"]);
    let stale = listed(&loopx, "test");
    assert_eq!(stale["stale"], true, "{stale:#}");
    assert_eq!(
        stale["stale_reason"], "src/lib.rs changed since it was recorded",
        "{stale:#}"
    );
    // A done that rests on it is not taken.
    let second = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(second["slice"]["outcome"], "unverified", "{second:#}");
    assert_eq!(second["slice"]["todo_state"], "released", "{second:#}");
    let reason = second["slice"]["reason"].as_str().expect("a reason");
    let id = stale["id"].as_str().expect("an id");
    assert!(
        reason.contains(&format!(
            "its done was not taken: no fresh `test` evidence on t1 ({id} is stale: src/lib.rs changed since it was recorded)"
        )),
        "{reason}"
    );
    assert_eq!(crate::support::todo_state(&loopx, "t1"), "open");
    // The next slice re-verifies, told that the evidence it has is stale.
    let third = loopx.ok(&["run", "--json", "--once"]).json();
    assert_eq!(third["slice"]["kind"], "repair", "{third:#}");
    let prompt = std::fs::read_to_string(dir.join("prompt-2.txt")).expect("a prompt");
    assert!(
        prompt.contains(&format!(
            "unit tests: 3 passed ({id}; stale: src/lib.rs changed since it was recorded)"
        )),
        "{prompt}"
    );
    assert_eq!(third["slice"]["outcome"], "completed", "{third:#}");
    assert_eq!(third["slice"]["todo_state"], "done", "{third:#}");
}

#[test]
fn in_a_worktree_goal_the_checkpoint_keeps_a_test_fresh_and_a_later_edit_keeps_the_todo_from_landing()
 {
    let loopx = tested_git_project();
    loopx.ok(&["goal", "start", "Fix the parser", "--scope", "src/**"]);
    // Each todo's first slice changes its file and runs the tests. t1's second slice says done
    // as it is; t2's changes the file again first; its third tests again.
    script_agent(
        &loopx,
        "worker",
        &format!(
            r#"n=$(ls prompt-*.txt 2>/dev/null | wc -l)
cat > "prompt-$n.txt"
case "$LOOPX_TODO-$n" in
*-0) echo "first" > "src/$LOOPX_TODO.rs"
   '{LOOPX}' report evidence test "unit tests: 3 passed" > /dev/null
   printf '%s\n' '```loopx-report' '{{"status":"progress","summary":"fixed and tested"}}' '```' ;;
t2-1) echo "second" > "src/$LOOPX_TODO.rs"
   printf '%s\n' '```loopx-report' '{{"status":"done","summary":"tidied"}}' '```' ;;
*-1) printf '%s\n' '```loopx-report' '{{"status":"done","summary":"it was tested"}}' '```' ;;
*) printf '%s\n' '```loopx-report' '{{"status":"done","summary":"tested again","evidence":[{{"kind":"test","summary":"unit tests: 4 passed"}}]}}' '```' ;;
esac"#
        ),
        "max_time = \"30s\"",
    );
    loopx.ok(&["todo", "add", "Fix the lexer", "--priority", "2"]);
    loopx.ok(&["todo", "add", "Fix the parser"]);
    let run = |want_todo: &str| {
        let out = loopx.ok(&["run", "--json", "--once"]).json();
        assert_eq!(out["slice"]["todo"], want_todo, "{out:#}");
        out["slice"].clone()
    };
    assert_eq!(run("t1")["outcome"], "progress");
    // The slice's checkpoint committed what the tests ran on: still fresh, so t1 lands.
    let done = run("t1");
    assert_eq!(done["todo_state"], "done", "{done:#}");
    assert!(done["landed"].is_string(), "{done:#}");
    assert_eq!(run("t2")["outcome"], "progress");
    // Changed after its tests: not done, and its branch does not land.
    let unverified = run("t2");
    assert_eq!(unverified["outcome"], "unverified", "{unverified:#}");
    assert_eq!(unverified["landed"], Value::Null, "{unverified:#}");
    let reason = unverified["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("src/t2.rs changed since it was recorded"),
        "{reason}"
    );
    let again = run("t2");
    assert_eq!(again["kind"], "repair", "{again:#}");
    assert_eq!(again["todo_state"], "done", "{again:#}");
    assert!(again["landed"].is_string(), "{again:#}");
}

#[test]
fn a_scope_change_ages_only_evidence_pinning_a_file_it_took_out() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the parser", "--scope", "src/**"]);
    std::fs::create_dir_all(loopx.path().join("src")).expect("mkdir");
    std::fs::write(loopx.path().join("src/grammar.txt"), "g\n").expect("write");
    std::fs::write(loopx.path().join("bench.txt"), "12ms\n").expect("write");
    for file in ["src/grammar.txt", "bench.txt"] {
        loopx.ok(&[
            "evidence", "add", file, "--kind", "artifact", "--file", file,
        ]);
    }
    let stale_of = |file: &str| listed_where(&loopx, "summary", file)["stale_reason"].clone();
    // Widening the scope takes nothing out: a file that was never in it does not age.
    loopx.ok(&["goal", "amend", "--scope", "src/**", "--scope", "proto/**"]);
    assert_eq!(stale_of("bench.txt"), Value::Null);
    assert_eq!(stale_of("src/grammar.txt"), Value::Null);
    loopx.ok(&["goal", "amend", "--scope", "proto/**"]);
    assert_eq!(
        stale_of("src/grammar.txt"),
        "recorded under revision 1; revision 3 took src/grammar.txt out of the scope"
    );
    assert_eq!(stale_of("bench.txt"), Value::Null);
}

/// Issue 47, item 6: an amendment aged loopx's record that a slice changed a file (`stale:
/// recorded under revision 1`), though such a record says what happened. Only evidence that
/// judges the work (the test result here) ages with the objective.
#[test]
fn an_objective_change_ages_a_test_result_and_not_the_record_of_what_a_slice_changed() {
    let loopx = tested_git_project();
    loopx.ok(&["goal", "start", "Ship v2"]);
    script_agent(
        &loopx,
        "coder",
        "cat >/dev/null\necho v2 > src/lib.rs\nprintf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"wrote v2\",\"evidence\":[{\"kind\":\"test\",\"summary\":\"unit tests: 3 passed\"}]}' '```'",
        "max_time = \"20s\"",
    );
    loopx.ok(&["todo", "add", "Write v2"]);
    let once = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(
        once.json()["slice"]["todo_state"],
        "done",
        "{}",
        once.stdout
    );
    loopx.ok(&["goal", "amend", "--objective", "Ship v3"]);
    let diff = listed(&loopx, "diff");
    assert_eq!(diff["stale"], false, "{diff:#}");
    let test = listed(&loopx, "test");
    assert_eq!(
        test["stale_reason"], "recorded under revision 1; the objective changed in revision 2",
        "{test:#}"
    );
    let text = loopx.ok(&["evidence", "list"]).stdout;
    assert_eq!(text.matches("stale:").count(), 1, "only the test: {text}");
}
