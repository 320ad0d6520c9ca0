//! The loops in a goal's lineage (`docs/history.md`): an executor and a reviewer handing the
//! same work back and forth ask a person before a fifth round, instead of going on for ever.

use crate::support::{LOOPX, Loopx, script_agent, todo_state};

/// `exec` does its todo and asks for a review; `rev` reviews and hands a fix back.
fn ping_pong() -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the parser"]);
    let exec = format!(
        "cat > /dev/null\n\
         '{LOOPX}' report todo \"Review $LOOPX_TODO\" --role reviewer --after \"$LOOPX_TODO\" > /dev/null\n\
         '{LOOPX}' report done --summary written > /dev/null"
    );
    let rev = format!(
        "cat > /dev/null\n\
         '{LOOPX}' report todo \"Fix what $LOOPX_TODO found\" --role executor --after \"$LOOPX_TODO\" > /dev/null\n\
         '{LOOPX}' report done --summary reviewed > /dev/null"
    );
    script_agent(&loopx, "exec", &exec, "max_time = \"1m\"");
    script_agent(&loopx, "rev", &rev, "max_time = \"1m\"");
    // Each takes only its role's todos: who works which round is fixed.
    loopx.ok(&["agent", "set", "exec", "--role", "executor"]);
    loopx.ok(&["agent", "set", "rev", "--role", "reviewer"]);
    loopx.ok(&["todo", "add", "Write the parser", "--role", "executor"]);
    loopx
}

#[test]
fn work_handed_back_a_fifth_time_asks_a_person_with_the_chain() {
    let loopx = ping_pong();
    let run = loopx.run(&["run", "--on-gate", "exit", "--max-slices", "20"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    // Four rounds ran (t1 → t2 → t3 → t4 → t5 is four hand-backs); the fifth waits.
    for done in ["t1", "t2", "t3", "t4"] {
        assert_eq!(todo_state(&loopx, done), "done", "{}", run.stderr);
    }
    assert_eq!(todo_state(&loopx, "t5"), "open", "{}", run.stderr);
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    let question = gate["gate"]["question"].as_str().unwrap_or_default();
    let context = gate["gate"]["context"].as_str().unwrap_or_default();
    assert!(
        question.contains("t5") && question.contains("handed back and forth"),
        "{question}"
    );
    assert!(context.contains("t1 → t2 → t3 → t4 → t5"), "{context}");
    // `retry` lets the chain go on: the next round runs.
    loopx.ok(&["gate", "answer", "q1", "retry"]);
    let run = loopx.run(&["run", "--max-slices", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t5"), "done", "{}", run.stderr);
}

#[test]
fn a_project_sets_how_many_hand_backs_it_allows() {
    let loopx = ping_pong();
    loopx.write_config("[limits]\nhandbacks = 2\n");
    let run = loopx.run(&["run", "--on-gate", "exit", "--max-slices", "20"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    assert_eq!(todo_state(&loopx, "t2"), "done", "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t3"), "open", "{}", run.stderr);
    loopx.write_config("[limits]\nhandbacks = 0\n");
    let bad = loopx.run(&["quota", "should-run", "--agent", "exec"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("limits.handbacks") && bad.stderr.contains("1 to 100"),
        "{}",
        bad.stderr
    );
}
