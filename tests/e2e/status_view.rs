//! `loopx status` as a person reads it after an amendment, while work waits, on a second
//! goal, and once a todo's evidence went stale.

use crate::support::Loopx;

#[test]
fn status_after_an_amendment_names_the_revision_what_changed_and_the_pending_re_plan() {
    let loopx = Loopx::new();
    loopx.ok(&[
        "goal",
        "start",
        "Add retries to the HTTP client",
        "--scope",
        "src/**",
        "--scope",
        "proto/**",
    ]);
    let before = loopx.ok(&["status"]).stdout;
    assert!(!before.contains("Revision"), "{before}");
    loopx.ok(&[
        "goal",
        "amend",
        "--scope",
        "src/**",
        "--why",
        "the protos are frozen",
    ]);
    let after = loopx.ok(&["status"]).stdout;
    assert!(
        after.contains("Revision 2: scope changed (why: the protos are frozen)"),
        "{after}"
    );
    assert!(
        after.contains("scope narrowed: src/** (was src/**, proto/**)"),
        "{after}"
    );
    assert!(
        after.contains("re-plan pending: the next planning slice re-plans the goal"),
        "{after}"
    );
    let json = loopx.ok(&["status", "--json"]).json();
    assert_eq!(json["revision"]["number"], 2, "{json:#}");
    assert_eq!(json["revision"]["replan_pending"], true, "{json:#}");
    assert_eq!(
        json["revision"]["changed"],
        serde_json::json!(["scope"]),
        "{json:#}"
    );
}

#[test]
fn status_says_what_open_work_waits_for_rather_than_that_nothing_is_open() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship once CI is green"]);
    loopx.ok(&[
        "todo",
        "add",
        "Wait for CI",
        "--check",
        "false",
        "--every",
        "10m",
    ]);
    loopx.ok(&["todo", "add", "Tag the release", "--after", "t1"]);
    loopx.ok(&["todo", "add", "Write the notes", "--after", "t2"]);
    let status = loopx.ok(&["status"]).stdout;
    assert!(!status.contains("nothing open"), "{status}");
    assert!(
        status.contains("waits on monitor t1 (Wait for CI), next poll"),
        "{status}"
    );
    assert!(status.contains("waits on t2 (Tag the release)"), "{status}");
    assert!(
        status.contains("nothing ready: 2 todos wait (see Waiting above)"),
        "{status}"
    );
}

#[test]
fn a_new_goal_s_status_lists_only_its_own_evidence() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "First goal"]);
    loopx.ok(&["todo", "add", "Old work"]);
    loopx.ok(&[
        "evidence",
        "add",
        "what the first goal found",
        "--todo",
        "t1",
    ]);
    loopx.ok(&["evidence", "add", "a note of the first goal"]);
    let first = loopx.ok(&["status"]).stdout;
    assert!(first.contains("what the first goal found"), "{first}");
    loopx.ok(&["goal", "done", "g1"]);
    loopx.ok(&["goal", "start", "Second goal"]);
    let second = loopx.ok(&["status"]).stdout;
    assert!(!second.contains("first goal"), "{second}");
    assert!(!second.contains("Latest evidence"), "{second}");
    loopx.ok(&["evidence", "add", "what the second goal found"]);
    let second = loopx.ok(&["status"]).stdout;
    assert!(second.contains("what the second goal found"), "{second}");
    assert!(!second.contains("first goal"), "{second}");
}

/// A todo done on a test result whose pinned file changes afterwards rests on stale evidence,
/// and so does its `--next` successor (`goal history`'s definition): `status` counts both,
/// names them and why, and leaves a todo done on fresh evidence out.
#[test]
fn status_counts_the_todos_resting_on_stale_evidence_with_a_next_successor() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the notes"]);
    loopx.ok(&["todo", "add", "Check the notes"]);
    loopx.ok(&["todo", "add", "Check the summary"]);
    std::fs::write(loopx.path().join("notes.txt"), "a\n").expect("write");
    std::fs::write(loopx.path().join("summary.txt"), "b\n").expect("write");
    for (todo, file) in [("t1", "notes.txt"), ("t2", "summary.txt")] {
        loopx.ok(&[
            "evidence",
            "add",
            "read back",
            "--kind",
            "test",
            "--todo",
            todo,
            "--file",
            file,
        ]);
    }
    loopx.ok(&["todo", "done", "t1", "--next", "Publish the notes"]);
    loopx.ok(&["todo", "done", "t2"]);
    let fresh = loopx.ok(&["status", "--json"]).json();
    assert_eq!(fresh["rests_on_stale_total"], 0, "{fresh:#}");
    assert_eq!(fresh["rests_on_stale"], serde_json::json!([]), "{fresh:#}");
    assert!(!loopx.ok(&["status"]).stdout.contains("stale evidence"));

    std::fs::write(loopx.path().join("notes.txt"), "a, changed\n").expect("write");
    let stale = loopx.ok(&["status", "--json"]).json();
    assert_eq!(stale["rests_on_stale_total"], 2, "{stale:#}");
    let named: Vec<(&str, &str)> = stale["rests_on_stale"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| {
            (
                t["todo"].as_str().unwrap_or(""),
                t["because"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(named.len(), 2, "{stale:#}");
    assert_eq!(named[0].0, "t1", "{stale:#}");
    assert!(named[0].1.contains("notes.txt"), "{stale:#}");
    assert_eq!(named[1], ("t3", "after t1"), "{stale:#}");
    // The same todos the history marks.
    let history = loopx.ok(&["goal", "history", "--json"]).json();
    let marked: Vec<&str> = history["lineage"]["todos"]
        .as_array()
        .expect("todos")
        .iter()
        .filter(|t| t["rests_on_stale"] == true)
        .map(|t| t["todo"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(marked, ["t1", "t3"], "{history:#}");
    let text = loopx.ok(&["status"]).stdout;
    assert!(text.contains("Resting on stale evidence (2)"), "{text}");
    assert!(text.contains("after t1"), "{text}");
}
