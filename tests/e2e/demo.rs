//! `loopx demo`: the whole loop on the simulated agent, as a newcomer first sees it.

use crate::support::Loopx;

#[test]
fn the_demo_shows_every_part_of_the_loop_and_ends_with_the_goal_done() {
    let scratch = Loopx::empty();
    let dir = scratch.path().join("tour");
    let run = scratch.run(&["demo", "--dir", dir.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for part in [
        "slice s1 started: plan",
        "new todos t1, t2, t3",
        "ended: usage_limited",
        "paused until",
        "executor: resumed",
        "reviewer: resumed",
        "waiting on gate q1: ",
        "no terminal to ask you, so the demo answers with its first option",
        "q1 answered: Markdown list",
        "the goal is done",
        "loopx run ended (done)",
        &format!("Look around: cd {}", dir.display()),
    ] {
        assert!(run.stderr.contains(part), "no `{part}` in:\n{}", run.stderr);
    }
    // Both peers worked: the reviewer took the review todo.
    assert!(
        run.stderr.contains("reviewer: slice") && run.stderr.contains("executor: slice"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("Goal g1 (done): Write the demo notes"),
        "{}",
        run.stdout
    );
    // Each todo was worked in its own worktree and landed on the goal's branch; the demo's
    // own checkout is untouched, and no peer was blamed for another's work.
    let notes = std::process::Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["show", "loopx/g1:demo/NOTES.md"])
        .output()
        .expect("git runs");
    let notes = String::from_utf8_lossy(&notes.stdout);
    assert!(notes.contains(": Markdown list"), "{notes}");
    assert!(
        !dir.join("demo/NOTES.md").exists(),
        "the checkout is untouched"
    );
    // The goal is done: the person is told how to bring its branch in.
    assert!(
        run.stdout.contains("git merge --no-ff loopx/g1"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("landed on the goal's branch"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("changed files it may not change"),
        "{}",
        run.stderr
    );
    let evidence = scratch.ok(&[
        "--project",
        dir.to_str().expect("utf-8"),
        "evidence",
        "list",
        "--limit",
        "500",
        "--json",
    ]);
    assert!(
        !evidence.stdout.contains("\"kind\":\"violation\""),
        "{}",
        evidence.stdout
    );
    // The project stays for a look around, and is consistent.
    let status = scratch.run(&["--project", dir.to_str().expect("utf-8"), "doctor"]);
    assert_eq!(status.code, 0, "{}{}", status.stdout, status.stderr);
}

#[test]
fn the_demo_refuses_a_directory_that_holds_a_project() {
    let loopx = Loopx::new();
    let run = loopx.run(&["demo", "--dir", loopx.path().to_str().expect("utf-8")]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("already holds a loopx project"),
        "{}",
        run.stderr
    );
}
