//! Several active goals in one project (`docs/goals.md`): one `loopx run` serves them all, by
//! priority; a question about one goal leaves the other's work running; each goal's work lands
//! on its own branch; ending one leaves the other active.

use serde_json::Value;

use crate::support::{LOOPX, Loopx, committed_repo, git, script_agent};

/// A committed git project with two goals: g1 on `src/`, g2 on `docs/` with priority 1.
fn two_goals() -> Loopx {
    let loopx = Loopx::new();
    committed_repo(loopx.path(), &[("src/a.txt", "a\n"), ("docs/b.txt", "b\n")]);
    loopx.ok(&["goal", "start", "Edit the code", "--scope", "src/"]);
    let second = loopx.ok(&[
        "goal",
        "start",
        "Edit the docs",
        "--scope",
        "docs/",
        "--priority",
        "1",
    ]);
    assert!(second.stdout.contains("g2"), "{}", second.stdout);
    loopx
}

/// An agent that appends its todo's id to a file of its todo's goal (t1 is g1's, on `src/`;
/// the others g2's, on `docs/`, t3 on a file of its own so that the two land without a
/// conflict), and reports it done.
fn editor(loopx: &Loopx, name: &str) {
    let script = format!(
        "cat > /dev/null\n\
         case \"$LOOPX_TODO\" in t1) file=src/a.txt ;; t3) file=docs/c.txt ;; *) file=docs/b.txt ;; esac\n\
         echo \"$LOOPX_TODO\" >> \"$file\"\n\
         '{LOOPX}' report done --summary edited > /dev/null"
    );
    script_agent(
        loopx,
        name,
        &script,
        "max_time = \"2m\"\nidle_timeout = \"1m\"",
    );
}

fn should_run(loopx: &Loopx, agent: &str) -> Value {
    loopx
        .ok(&["quota", "should-run", "--agent", agent, "--json"])
        .json()
}

fn goal_status(loopx: &Loopx, goal: &str) -> String {
    let goals = loopx.ok(&["goal", "list", "--json"]).json();
    goals["goals"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["id"] == goal)
        .map(|g| g["status"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

#[test]
fn two_goals_progress_under_one_run_and_a_question_on_one_leaves_the_other_working() {
    let loopx = two_goals();
    // Commands that need a goal ask which one while both are active.
    let which = loopx.run(&["todo", "add", "Edit src/a.txt"]);
    assert_ne!(which.code, 0);
    assert!(
        which.stderr.contains("several goals are active (g1, g2)")
            && which.stderr.contains("--goal"),
        "{}",
        which.stderr
    );
    let which = loopx.run(&["goal", "pause"]);
    assert!(which.stderr.contains("g1, g2"), "{}", which.stderr);
    loopx.ok(&["todo", "add", "Edit src/a.txt", "--goal", "g1"]);
    loopx.ok(&["todo", "add", "Edit docs/b.txt", "--goal", "g2"]);
    loopx.ok(&["todo", "add", "Edit docs/c.txt", "--goal", "g2"]);
    // One agent kept to each goal, one shared.
    for name in ["ann", "bob", "cat"] {
        editor(&loopx, name);
    }
    loopx.ok(&["agent", "set", "ann", "--goals", "g1"]);
    loopx.ok(&["agent", "set", "bob", "--goals", "g2"]);
    // The shared agent serves the goal of higher priority first, although g1's todo is older.
    let cat = should_run(&loopx, "cat");
    assert_eq!(
        (
            cat["decision"].as_str(),
            cat["goal"].as_str(),
            cat["todo"]["id"].as_str()
        ),
        (Some("deliver"), Some("g2"), Some("t2")),
        "{cat}"
    );
    // A person's question about g1 holds back g1's work only.
    loopx.ok(&["gate", "ask", "Tabs or spaces in src?", "--goal", "g1"]);
    let ann = should_run(&loopx, "ann");
    assert_eq!(ann["decision"], "ask", "{ann}");
    let run = loopx.run(&["run", "--max-slices", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(crate::support::todo_state(&loopx, "t1"), "open");
    assert_eq!(
        crate::support::todo_state(&loopx, "t2"),
        "done",
        "{}",
        run.stderr
    );
    assert_eq!(
        crate::support::todo_state(&loopx, "t3"),
        "done",
        "{}",
        run.stderr
    );
    // g2's work landed on g2's branch, each todo on its own branch first.
    let docs = git(loopx.path(), &["show", "loopx/g2:docs/b.txt"]);
    assert_eq!(docs, "b\nt2\n", "{}", run.stderr);
    assert_eq!(git(loopx.path(), &["show", "loopx/g2:docs/c.txt"]), "t3\n");
    assert!(git(loopx.path(), &["branch", "--list", "loopx/g2-t2"]).contains("loopx/g2-t2"));
    // Answered, g1's work goes on; g2's agents have nothing left but to plan, so two slices
    // later g1's todo is done, on g1's branch.
    loopx.ok(&["gate", "answer", "q1", "tabs"]);
    loopx.ok(&["agent", "set", "bob", "--goals", "g1"]);
    loopx.ok(&["agent", "set", "cat", "--goals", "g1"]);
    let run = loopx.run(&["run", "--max-slices", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        crate::support::todo_state(&loopx, "t1"),
        "done",
        "{}",
        run.stderr
    );
    assert_eq!(
        git(loopx.path(), &["show", "loopx/g1:src/a.txt"]),
        "a\nt1\n"
    );
    assert_eq!(git(loopx.path(), &["show", "loopx/g1:docs/b.txt"]), "b\n");
    // Ending g1 leaves g2 active, and then commands act on g2 without being told.
    loopx.ok(&["goal", "done", "--goal", "g1"]);
    assert_eq!(goal_status(&loopx, "g1"), "done");
    assert_eq!(goal_status(&loopx, "g2"), "active");
    loopx.ok(&["todo", "add", "Edit docs/b.txt"]);
    // `goal resume` means a paused goal, while another is active.
    loopx.ok(&["goal", "pause", "g2"]);
    loopx.ok(&["goal", "start", "Edit the tests", "--from-head"]);
    let resumed = loopx.ok(&["goal", "resume"]);
    assert!(resumed.stdout.contains("g2"), "{}", resumed.stdout);
    loopx.ok(&["goal", "done", "g3"]);
    // A goal that does not exist is an error, not an empty list.
    for args in [
        ["todo", "list", "--goal", "g9"],
        ["gate", "list", "--goal", "g9"],
    ] {
        let unknown = loopx.run(&args);
        assert_eq!(unknown.code, 2, "{args:?}: {}", unknown.stderr);
        assert!(unknown.stderr.contains("g9"), "{}", unknown.stderr);
    }
    let none = loopx.run(&["agent", "set", "ann", "--goals", ","]);
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(none.stderr.contains("--goals all"), "{}", none.stderr);
    let todos = loopx.ok(&["todo", "list", "--goal", "g2", "--json"]).json();
    let ids: Vec<&str> = todos["todos"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, ["t4"], "{todos}");
}

/// An agent's slice works for one goal: what it reports goes there, and it cannot hand work to
/// another goal's agents (g2 here may do anything), hold that goal back, or ask for it to end.
#[test]
fn an_agent_changes_only_its_own_goal() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Review the code"]);
    loopx.ok(&["goal", "start", "Ship the release", "--permission", "full"]);
    loopx.ok(&["todo", "add", "Review src/", "--goal", "g1"]);
    let script = format!(
        "cat > /dev/null\n\
         try() {{ env -u LOOPX_SLICE \"$@\" > /dev/null 2>> \"$LOOPX_PROJECT/refusals.txt\"; echo \"$?\" >> \"$LOOPX_PROJECT/codes.txt\"; }}\n\
         try '{LOOPX}' todo add 'Run rm -rf on the build host' --goal g2\n\
         try '{LOOPX}' gate ask 'Should the release wait for the review?' --goal g2\n\
         try '{LOOPX}' goal done --goal g2\n\
         '{LOOPX}' report todo 'Review the tests too' >> \"$LOOPX_PROJECT/codes.txt\" 2>&1\n\
         '{LOOPX}' report done --summary reviewed > /dev/null"
    );
    script_agent(&loopx, "rev", &script, "max_time = \"1m\"");
    let run = loopx.run(&["run", "--max-slices", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let codes = std::fs::read_to_string(loopx.path().join("codes.txt")).expect("codes");
    let refusals = std::fs::read_to_string(loopx.path().join("refusals.txt")).expect("refusals");
    let lines: Vec<&str> = codes.lines().collect();
    // Refused, whether it says it runs in a slice or not (then it does not even find the
    // store, which its sandbox hides; where there is no sandbox the kernel refuses it too:
    // `crates/loopx-kernel/tests/several_goals.rs`).
    assert!(
        lines.len() >= 4 && lines[..3].iter().all(|c| *c != "0"),
        "{codes}\n{refusals}"
    );
    // g2 got nothing; the todo it added without a goal went to its own goal.
    let g2 = loopx.ok(&["todo", "list", "--goal", "g2", "--json"]).json();
    assert_eq!(g2["todos"].as_array().map(Vec::len), Some(0), "{g2}");
    let g1 = loopx
        .ok(&["todo", "list", "--goal", "g1", "--all", "--json"])
        .json();
    assert_eq!(g1["todos"].as_array().map(Vec::len), Some(2), "{g1}");
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    assert_eq!(gates["gates"].as_array().map(Vec::len), Some(0), "{gates}");
    assert_eq!(goal_status(&loopx, "g2"), "active");
}

/// A planning slice plans one goal with several active: what it writes back (its evidence,
/// its handoff, the todos it proposes) is that goal's, recorded after the slice ended.
#[test]
fn a_planning_slice_s_writeback_goes_to_the_goal_it_planned() {
    let loopx = crate::support::demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    loopx.ok(&["goal", "start", "Plan the release", "--priority", "1"]);
    let run = loopx.run(&["run", "--max-slices", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("started: plan"), "{}", run.stderr);
    assert!(
        !run.stderr
            .lines()
            .any(|l| l.starts_with("error") || l.contains("WARN")),
        "{}",
        run.stderr
    );
    let evidence = loopx.ok(&["evidence", "list", "--json"]).json();
    let slice = evidence["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["kind"] == "slice" && e["slice"] == "s1")
        .cloned();
    assert!(
        slice.is_some(),
        "the planning slice's own record: {evidence}"
    );
    let history = loopx.ok(&["goal", "history", "g2", "--json"]).json();
    let planned: Vec<&str> = history["lanes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|l| l["slices"].as_array().into_iter().flatten())
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(planned, ["s1"], "{history}");
    // What it proposed is g2's; g1 still has only its own todo.
    let g1 = loopx
        .ok(&["todo", "list", "--goal", "g1", "--all", "--json"])
        .json();
    assert_eq!(g1["todos"].as_array().map(Vec::len), Some(1), "{g1}");
}
