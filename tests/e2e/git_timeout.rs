//! `LOOPX_GIT_TIMEOUT` reaches every surface that runs git, not only `loopx run` (whose case
//! is `lifecycle::issue_11_a_hanging_git_costs_the_scope_check_not_the_loop`): the timeout
//! travels with the project each command opens, so a surface that dropped it would wait out the
//! hanging git (30 s) instead of stopping it after 1 s.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Loopx, Run, committed_repo, hanging_git, script_agent};

const SHORT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/sim/short.toml");

/// Far below the hanging git's 30 s, far above a few 1 s timeouts on a loaded machine.
const QUICK: Duration = Duration::from_secs(15);

/// `loopx ARGS` with a git that hangs first on `PATH` and a 1 s git timeout; insists that it
/// ended well before the hang would have.
fn with_hanging_git(loopx: &Loopx, args: &[&str]) -> Run {
    let (_bin, path) = hanging_git();
    let started = Instant::now();
    let run = loopx.run_env(args, &[("PATH", &path), ("LOOPX_GIT_TIMEOUT", "1s")]);
    assert!(
        started.elapsed() < QUICK,
        "loopx {args:?} stopped its git at the timeout, not after {:?}: {}{}",
        started.elapsed(),
        run.stdout,
        run.stderr
    );
    run
}

/// Insists that a slice's scope check (in the project `loopx PROJECT_ARGS` reads) said its
/// git was stopped after 1 s.
fn scope_check_stopped(loopx: &Loopx, project_args: &[&str]) {
    let list = [
        project_args,
        &["evidence", "list", "--json", "--limit", "100"],
    ]
    .concat();
    let evidence = loopx.ok(&list).json();
    let stopped = evidence["evidence"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|e| e["kind"] == "slice")
        .any(|e| {
            e["detail"]
                .as_str()
                .is_some_and(|d| d.contains("`git rev-parse` did not finish in 1s and was stopped"))
        });
    assert!(stopped, "a slice's scope check was stopped: {evidence}");
}

#[test]
fn run_once_stops_a_hanging_git_at_the_timeout() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "a",
        "cat >/dev/null\necho fine",
        "max_time = \"20s\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let run = with_hanging_git(&loopx, &["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    scope_check_stopped(&loopx, &[]);
}

#[test]
fn goal_start_says_git_did_not_finish_in_the_timeout() {
    let loopx = Loopx::new();
    committed_repo(loopx.path(), &[("README.md", "hello\n")]);
    let run = with_hanging_git(
        &loopx,
        &["goal", "start", "Tidy", "--isolation", "worktree"],
    );
    assert_ne!(run.code, 0, "no worktree goal without git: {}", run.stdout);
    assert!(
        run.stderr
            .contains("`git rev-parse` did not finish in 1s and was stopped"),
        "{}",
        run.stderr
    );
}

#[test]
fn evidence_about_the_work_is_recorded_after_the_timeout() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    let run = with_hanging_git(&loopx, &["evidence", "add", "tests pass", "--kind", "test"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The tree could not be read: the evidence is marked so, and counts as stale.
    let list = loopx.ok(&["evidence", "list", "--json"]).json();
    let added = list["evidence"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|e| e["summary"] == "tests pass")
        .cloned()
        .unwrap_or_else(|| panic!("the evidence: {list}"));
    assert_eq!(added["stale"], Value::Bool(true), "{added}");
}

#[test]
fn status_of_a_worktree_goal_stops_a_hanging_git_at_the_timeout() {
    let loopx = Loopx::new();
    committed_repo(loopx.path(), &[("README.md", "hello\n")]);
    loopx.ok(&["goal", "start", "Tidy", "--isolation", "worktree"]);
    let run = with_hanging_git(&loopx, &["status", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The goal's branches could not be read in time: none are listed.
    let status = run.json();
    assert_eq!(status["isolation"]["mode"], "worktree", "{status}");
    assert_eq!(
        status["isolation"]["todo_branches"],
        Value::Array(vec![]),
        "{status}"
    );
}

/// A `git` that hangs (2 min) when given `arg` (one only loopx's own git commands use), and is
/// the real git otherwise; and a `PATH` with it first.
fn git_hanging_on(arg: &str) -> (tempfile::TempDir, String) {
    let path = std::env::var("PATH").unwrap_or_default();
    let real = crate::support::real_git();
    let bin = tempfile::tempdir().expect("bin dir");
    let git = bin.path().join("git");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = {arg} ] && exec sleep 120; done\nexec '{}' \"$@\"\n",
        real.display()
    );
    std::fs::write(&git, script).expect("fake git");
    std::fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!("{}:{path}", bin.path().display());
    (bin, path)
}

#[test]
fn the_demo_stops_a_hanging_git_at_the_timeout_and_works_in_its_own_tree() {
    let scratch = Loopx::empty();
    let dir = scratch.path().join("tour");
    // Where the repository's common directory is: asked only by loopx's look for the
    // repository a worktree goal needs.
    let (_bin, path) = git_hanging_on("--git-common-dir");
    let started = Instant::now();
    let run = scratch.run_env(
        &["demo", "--dir", dir.to_str().expect("utf-8")],
        &[("PATH", &path), ("LOOPX_GIT_TIMEOUT", "1s")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The default minute would have passed before the demo's goal started.
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "the demo's git was stopped at the timeout, not after {:?}",
        started.elapsed()
    );
    // Without the repository found, the agents share the demo's own tree.
    assert!(
        dir.join("demo/NOTES.md").exists(),
        "worked in the shared tree: {}",
        run.stderr
    );
}

#[test]
fn a_simulation_stops_a_hanging_git_at_the_timeout() {
    let scratch = Loopx::empty();
    let keep = scratch.path().join("kept");
    let keep = keep.to_str().expect("utf-8");
    // Absolute paths are asked for only by the scope check's first git of a slice (the
    // simulation's own setup and commits never ask).
    let (_bin, path) = git_hanging_on("--path-format=absolute");
    let started = Instant::now();
    let run = scratch.run_env(
        &[
            "sim", SHORT, "--seed", "2", "--hours", "1", "--keep", keep, "--json",
        ],
        &[("PATH", &path), ("LOOPX_GIT_TIMEOUT", "1s")],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // The default minute would have passed at the first slice's scope check.
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "the simulation's git was stopped at the timeout, not after {:?}",
        started.elapsed()
    );
    scope_check_stopped(&scratch, &["--project", keep]);
}
