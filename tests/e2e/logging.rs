//! loopx's own log (`docs/logging.md`): `LOOPX_LOG` and `-v` on stderr for every command, and
//! one file per `loopx run` under `.loopx/logs/`, the newest ten kept.

use std::path::PathBuf;

use crate::run_once::project;
use crate::support::{Loopx, todo_state};

pub(crate) fn run_logs(loopx: &Loopx) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(loopx.path().join(".loopx/logs")) else {
        return Vec::new();
    };
    let mut logs: Vec<PathBuf> = entries.map(|e| e.expect("entry").path()).collect();
    logs.sort();
    logs
}

#[test]
fn loopx_log_and_v_print_log_lines_on_stderr_and_leave_stdout_alone() {
    let loopx = Loopx::new();
    let quiet = loopx.ok(&["status"]);
    assert_eq!(quiet.stderr, "", "no log lines by default");

    let debug = loopx.run_env(&["status"], &[("LOOPX_LOG", "debug")]);
    assert_eq!(debug.code, 0, "{}", debug.stderr);
    assert!(
        debug.stderr.contains("DEBUG") && debug.stderr.contains("command=\"status\""),
        "LOOPX_LOG=debug prints debug lines: {}",
        debug.stderr
    );
    assert_eq!(debug.stdout, quiet.stdout, "the log goes to stderr only");

    let verbose = loopx.ok(&["-vv", "status"]);
    assert!(verbose.stderr.contains("DEBUG"), "{}", verbose.stderr);
    let info = loopx.ok(&["status", "-v"]);
    assert!(
        !info.stderr.contains("DEBUG"),
        "-v is info, not debug: {}",
        info.stderr
    );
}

#[test]
fn a_loopx_log_that_is_not_a_filter_is_named_and_the_command_still_runs() {
    let loopx = Loopx::new();
    let run = loopx.run_env(&["status"], &[("LOOPX_LOG", "loopx=[[")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: LOOPX_LOG=`loopx=[[` is not a log filter"),
        "{}",
        run.stderr
    );
}

#[test]
fn run_once_leaves_its_log_under_loopx_logs_and_the_slice_is_not_charged_for_it() {
    let loopx = project();
    loopx.ok(&["todo", "add", "Write the notes"]);
    let run = loopx.run(&["run", "--once"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let logs = run_logs(&loopx);
    assert_eq!(logs.len(), 1, "{logs:?}");
    let name = logs[0].file_name().and_then(|n| n.to_str()).expect("name");
    assert!(name.starts_with("run-") && name.ends_with(".log"), "{name}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&logs[0])
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the log is private");
    let text = std::fs::read_to_string(&logs[0]).expect("the run's log");
    for line in [
        "loopx run started",
        "exec: deliver t1 (work)",
        "slice s1 started",
        "slice s1 ended: completed",
    ] {
        assert!(
            text.contains(line),
            "`{line}` missing from the log:\n{text}"
        );
    }
    // The supervisor writes its log while the slice runs: that is not the agent's change.
    assert_eq!(todo_state(&loopx, "t1"), "done", "{}", run.stderr);
    assert!(
        !run.stderr.contains("may not change"),
        "the run's own log was taken for the agent's change: {}",
        run.stderr
    );
}

#[test]
fn run_logs_rotate_keeping_the_newest_ten() {
    let loopx = project();
    let dir = loopx.path().join(".loopx/logs");
    std::fs::create_dir_all(&dir).expect("logs dir");
    for i in 0..12 {
        std::fs::write(dir.join(format!("run-20260101T0000{i:02}Z-1.log")), "old\n")
            .expect("an old log");
    }
    std::fs::write(dir.join("keep-me.txt"), "not a run log\n").expect("another file");
    // No todo: the run decides and ends; its log is written all the same.
    loopx.run(&["run", "--once"]);
    let logs = run_logs(&loopx);
    let runs: Vec<_> = logs
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .filter(|n| n.starts_with("run-"))
        .collect();
    assert_eq!(runs.len(), 10, "{runs:?}");
    assert!(
        !runs.contains(&"run-20260101T000000Z-1.log")
            && !runs.contains(&"run-20260101T000002Z-1.log"),
        "the oldest go first: {runs:?}"
    );
    assert!(
        runs.iter().any(|n| !n.starts_with("run-2026010")),
        "this run's log is among those kept: {runs:?}"
    );
    assert!(dir.join("keep-me.txt").exists(), "only run logs are pruned");
}

/// A profile's secret (`[env] secrets`) that the agent prints in its last words reaches neither
/// the run's log nor what `loopx run` prints, though its name does not look like a credential:
/// loopx knows it as a secret because the profile says so.
#[test]
fn a_profile_s_secret_in_the_agent_s_last_words_reaches_no_log() {
    const VALUE: &str = "lic-7f3a9c2e5b1d0a4c";
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    crate::support::cli_stand_in(
        &loopx,
        "exec",
        "claude-code",
        "printf '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"the mirror refused licence %s\"}\\n' \"$ACME_LICENSE\"\nexit 1",
        "\n[env]\nsecrets = [\"ACME_LICENSE\"]\n[limits]\nmax_time = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let run = loopx.run_env(&["run", "--once", "--json"], &[("ACME_LICENSE", VALUE)]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let slice = &run.json()["slice"];
    let reason = slice["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("the mirror refused licence"),
        "the agent's words are kept: {slice}"
    );
    assert!(!run.stdout.contains(VALUE), "{}", run.stdout);
    assert!(!run.stderr.contains(VALUE), "{}", run.stderr);
    let logs = run_logs(&loopx);
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = std::fs::read_to_string(&logs[0]).expect("the run's log");
    assert!(log.contains("the mirror refused licence"), "{log}");
    assert!(!log.contains(VALUE), "{log}");
}
