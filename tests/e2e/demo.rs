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
        // An agent does not end the goal: it says the goal is met, and the person decides.
        "says goal g1 (Write the demo notes) is met: is it? [done / plan]",
        "answered: done",
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
    let notes = crate::support::git(&dir, &["show", "loopx/g1:demo/NOTES.md"]);
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
    // The "look around" commands work as printed, from the demo's directory, with a `loopx`
    // that is not on PATH (this test's binary): each names the binary it can run.
    let look = run
        .stderr
        .split("Look around: cd ")
        .nth(1)
        .expect("the look-around list");
    let mut ran = 0;
    for line in look.lines().skip(1).take_while(|l| l.starts_with("  ")) {
        let command = line.trim().split("   ").next().expect("a command").trim();
        if command.contains(" board") || command.starts_with("ls ") {
            continue;
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&dir)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "`{command}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 7, "{look}");
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
