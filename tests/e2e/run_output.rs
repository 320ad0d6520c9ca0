//! What `loopx run` prints for the person watching it (`docs/logging.md`, `docs/cli.md`,
//! `docs/quota.md`): its lines in the kernel's order, a refused item of a report in loopx's own
//! words with the raw log in the run's file, and a pacing wait that names where the pace is set.

use crate::logging::run_logs;
use crate::support::{LOOPX, Loopx, committed_repo, script_agent, todo_state};

/// The index of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle))
}

/// A committed git project whose `build/` is ignored, with a goal scoped to `src/` worked in
/// worktrees.
fn git_project() -> Loopx {
    let loopx = Loopx::new();
    let root = loopx.path();
    committed_repo(
        root,
        &[
            ("src/a.txt", "a\n"),
            ("src/b.txt", "b\n"),
            (".gitignore", "build/\n*.sh\n"),
        ],
    );
    loopx.ok(&["goal", "start", "Edit the files", "--scope", "src/"]);
    loopx
}

/// t2 comes after t1, and two agents are free to take each. The slice on t1 leaves a large
/// ignored build tree in its worktree, so that removing the worktree once t1 is done takes a
/// while: time in which the idle peer, woken by t1's end, takes t2. The kernel records t1's end
/// before t2's start; so must the output, however late t1's worker reports.
#[test]
fn a_todo_after_another_starts_in_the_output_after_the_first_one_ended() {
    let loopx = git_project();
    let body = format!(
        r#"cat > /dev/null
case "$LOOPX_TODO" in
  t1) mkdir -p build/objects && (cd build/objects && seq 1 40000 | xargs touch)
      echo one >> src/a.txt ;;
  t2) echo two >> src/b.txt ;;
esac
'{LOOPX}' report done --summary edited > /dev/null"#
    );
    for name in ["ann", "bob"] {
        script_agent(
            &loopx,
            name,
            &body,
            "max_time = \"2m\"\nidle_timeout = \"1m\"",
        );
    }
    loopx.ok(&["todo", "add", "Edit a"]);
    loopx.ok(&["todo", "add", "Edit b", "--after", "t1"]);
    let run = loopx.run(&["run", "--max-slices", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t2"), "done", "{}", run.stderr);
    let ended = line_of(&run.stderr, ": t1 done").expect("t1's end is printed");
    let started = line_of(&run.stderr, "started: work on t2").expect("t2's start is printed");
    assert!(
        ended < started,
        "t2's start was printed before t1's end:\n{}",
        run.stderr
    );
}

/// A work slice's report that drops a todo (only a re-planning slice may): the kernel refuses
/// that item when the writeback is applied, and the rest is written.
const REFUSED_REPORT: &str = r#"cat > /dev/null
printf '%s\n' '```loopx-report' '{"status":"done","summary":"edited","drop_todos":[{"todo":"t2","why":"not needed"}]}' '```'"#;

/// The raw tracing warning of a refused report item (whichever module writes it).
fn refused_warning(text: &str) -> bool {
    text.lines()
        .any(|l| l.contains(" WARN loopx_") && l.contains(": the kernel refused an item"))
}

#[test]
fn a_refused_item_of_a_report_is_a_loopx_line_and_the_raw_warning_is_in_the_run_log() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(&loopx, "exec", REFUSED_REPORT, "max_time = \"1m\"");
    loopx.ok(&["todo", "add", "Tidy the README"]);
    loopx.ok(&["todo", "add", "Tidy the guide"]);
    let run = loopx.run(&["run", "--max-slices", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t1"), "done", "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t2"), "open", "the drop was refused");
    assert!(
        run.stderr
            .contains("exec: slice s1: loopx refused one item of the report: "),
        "{}",
        run.stderr
    );
    for out in [&run.stdout, &run.stderr] {
        assert!(
            !out.contains("WARN") && !out.contains(" loopx_"),
            "raw tracing in the person's output:\n{out}"
        );
    }
    let logs = run_logs(&loopx);
    let [log] = logs.as_slice() else {
        panic!("one run log: {logs:?}")
    };
    let text = std::fs::read_to_string(log).expect("the run's log");
    assert!(refused_warning(&text), "{text}");

    // `-v` asks for the log on stderr as well.
    let verbose = loopx.run(&["-v", "run", "--max-slices", "1"]);
    assert_eq!(verbose.code, 0, "{}", verbose.stderr);
    assert!(refused_warning(&verbose.stderr), "{}", verbose.stderr);
}

#[test]
fn a_paced_agent_s_wait_names_the_profile_file_and_key_that_set_the_pace() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "exec",
        "cat > /dev/null\nprintf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"tidied\"}' '```'",
        "max_time = \"1m\"\n[quota]\nslices_per_hour = 1",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    loopx.ok(&["todo", "add", "Tidy the guide"]);
    let first = loopx.run(&["run", "--once"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second = loopx.run(&["run", "--once"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.contains(
            "exec is paced at 1 slices an hour (quota.slices_per_hour in .loopx/profiles/exec.toml)"
        ),
        "{}",
        second.stderr
    );
}
