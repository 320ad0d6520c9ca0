//! Spawn checks and the launched process's environment and limits.

use std::path::PathBuf;

use loopx_pty::{
    ChildStatus, ExecHelper, ResourceLimits, SLICE_MARKER_VAR, SliceExit, SpawnError, spawn_slice,
};

use crate::support::{agent, exec_helper, spec};

/// True if any process carries this slice's marker: proof that an agent was started.
fn marker_present(slice: &str) -> bool {
    let marker = format!("{SLICE_MARKER_VAR}={slice}");
    std::fs::read_dir("/proc")
        .expect("read /proc")
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("environ")).ok())
        .any(|environ| environ.split(|&b| b == 0).any(|e| e == marker.as_bytes()))
}

#[tokio::test]
async fn a_missing_interpreter_is_a_spawn_error_naming_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "missing-interpreter.sh", &[]);
    let id = spec.slice_id.to_string();
    let err = spawn_slice(spec).expect_err("must not spawn");
    assert!(matches!(err, SpawnError::BadInterpreter { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("`/nonexistent/interpreter`"), "{text}");
    assert!(text.contains("missing-interpreter.sh"), "{text}");
    assert!(!marker_present(&id));
}

#[tokio::test]
async fn a_missing_working_directory_is_a_spawn_error_naming_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ok.sh", &[]);
    spec.cwd = tmp.path().join("no-such-dir");
    let id = spec.slice_id.to_string();
    let err = spawn_slice(spec).expect_err("must not spawn");
    assert!(matches!(err, SpawnError::CwdMissing { .. }), "{err:?}");
    assert!(
        err.to_string().contains("no-such-dir` does not exist"),
        "{err}"
    );
    assert!(!marker_present(&id));
}

#[tokio::test]
async fn a_bare_name_is_looked_up_in_the_slice_path_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ok.sh", &[]);
    spec.program = PathBuf::from("ok.sh");
    spec.env.inherit.clear();
    let dir = agent("ok.sh").parent().expect("fixture dir").to_owned();
    spec.env.set = vec![("PATH".into(), "/nonexistent".into())];
    let err = spawn_slice(spec.clone()).expect_err("not in the slice's PATH");
    assert!(err.to_string().contains("`ok.sh` not found"), "{err}");
    spec.env.set = vec![("PATH".into(), dir.into_os_string())];
    let (mut slice, _events) = spawn_slice(spec).expect("found in the slice's PATH");
    assert_eq!(
        slice.wait().await.expect("report").exit,
        SliceExit::Exited(0)
    );
}

#[tokio::test]
async fn a_failed_exec_after_fork_is_reported_as_a_spawn_failure() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "fails-exec.sh", &[]);
    let (mut slice, _events) = spawn_slice(spec).expect("passes the pre-checks");
    let report = slice.wait().await.expect("report");
    assert_eq!(report.status, Some(ChildStatus::Exited(127)));
    match &report.exit {
        SliceExit::SpawnFailed(why) => {
            assert!(
                why.contains("fails-exec.sh") && why.contains("not found"),
                "{why}"
            )
        }
        other => panic!("expected a spawn failure, got {other:?}"),
    }
}

#[tokio::test]
async fn exit_codes_and_output_are_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "ok.sh", &["3"]);
    let (mut slice, _events) = spawn_slice(spec).expect("spawn");
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(3));
    assert_eq!(report.text, "hello from agent\n");
    assert_eq!(report.bytes_total, "hello from agent\r\n".len() as u64);
    assert_eq!((report.leftover_count, report.bytes_dropped), (0, 0));
    assert!(report.capture_complete && report.capture_error.is_none());
}

#[tokio::test]
async fn the_environment_is_an_allowlist_plus_the_marker() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "prints-env.sh", &[]);
    spec.env.set = vec![("GIVEN".into(), "value".into())];
    let id = spec.slice_id.to_string();
    let (mut slice, _events) = spawn_slice(spec).expect("spawn");
    let report = slice.wait().await.expect("report");
    let lines: Vec<&str> = report.text.lines().collect();
    assert!(
        lines.contains(&format!("LOOPX_SLICE={id}").as_str()),
        "{lines:?}"
    );
    assert!(lines.contains(&"TERM=xterm-256color"), "{lines:?}");
    assert!(lines.contains(&"GIVEN=value"), "{lines:?}");
    let cwd = tmp.path().canonicalize().expect("canonical tempdir");
    assert!(
        lines.contains(&format!("cwd={}", cwd.display()).as_str()),
        "{lines:?}"
    );
    // HOME is set in the test's own environment but not allowed, so it must not pass.
    assert!(std::env::var_os("HOME").is_some());
    assert!(!lines.iter().any(|l| l.starts_with("HOME=")), "{lines:?}");
}

#[tokio::test]
async fn resource_limits_are_applied_before_the_agent_starts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "prints-limits.sh", &[]);
    spec.resources = ResourceLimits {
        cpu_seconds: Some(7),
        data_bytes: Some(3 << 30),
        open_files: Some(77),
        file_size_bytes: Some(5 << 20),
    };
    spec.exec_helper = Some(ExecHelper {
        program: exec_helper(),
        args: Vec::new(),
    });
    let (mut slice, _events) = spawn_slice(spec).expect("spawn");
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    let limit = |name: &str| -> Vec<String> {
        let line = report
            .text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing from {}", report.text));
        line[name.len()..]
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(limit("Max cpu time")[..2], ["7", "7"]);
    assert_eq!(limit("Max open files")[..2], ["77", "77"]);
    assert_eq!(
        limit("Max data size")[..2],
        [(3u64 << 30).to_string(), (3u64 << 30).to_string()]
    );
    assert_eq!(
        limit("Max file size")[..2],
        [(5u64 << 20).to_string(), (5u64 << 20).to_string()]
    );
}

#[tokio::test]
async fn limits_without_a_helper_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ok.sh", &[]);
    spec.resources.open_files = Some(64);
    let err = spawn_slice(spec).expect_err("limits need the helper");
    assert!(matches!(err, SpawnError::NeedsHelper), "{err:?}");
}

#[test]
fn spawning_outside_a_runtime_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "ok.sh", &[]);
    let err = spawn_slice(spec).expect_err("no runtime");
    assert!(matches!(err, SpawnError::NoRuntime), "{err:?}");
}

/// Through the helper (spawned without a fork of the test process), the agent is still what
/// portable-pty made it: the leader of its own session and process group, with the slice's
/// terminal as its controlling terminal, and holding no descriptor but the terminal's three.
#[tokio::test]
async fn through_the_helper_the_agent_leads_a_session_on_its_terminal_with_nothing_else_open() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A descriptor of ours without close-on-exec: it must not reach the agent.
    let leaked = nix::fcntl::open(
        "/dev/null",
        nix::fcntl::OFlag::O_RDONLY,
        nix::sys::stat::Mode::empty(),
    )
    .expect("open");
    let number = std::os::fd::AsRawFd::as_raw_fd(&leaked).to_string();
    let mut spec = spec(tmp.path(), "prints-session.sh", &[&number]);
    spec.resources = ResourceLimits {
        open_files: Some(64),
        ..ResourceLimits::default()
    };
    spec.exec_helper = Some(ExecHelper {
        program: exec_helper(),
        args: Vec::new(),
    });
    let (mut slice, _events) = spawn_slice(spec).expect("spawn");
    let report = slice.wait().await.expect("report");
    drop(leaked);
    assert_eq!(report.exit, SliceExit::Exited(0), "{}", report.text);
    let field = |name: &str| -> Vec<String> {
        let line = report
            .text
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} missing from {}", report.text));
        line.split_whitespace().map(str::to_owned).collect()
    };
    let pid = &field("PID ")[0];
    // state ppid pgrp session tty_nr …
    let stat = field("STAT ");
    assert_eq!(&stat[2], pid, "its own process group: {stat:?}");
    assert_eq!(&stat[3], pid, "its own session: {stat:?}");
    assert_ne!(stat[4], "0", "a controlling terminal: {stat:?}");
    assert_eq!(
        field("LEAKED "),
        ["no"],
        "descriptor {number}: {}",
        report.text
    );
}

/// A symlink planted where the slice's log goes is refused, not followed: the agent's output
/// never becomes a write into the file it points to, and nothing is started.
#[tokio::test]
async fn a_symlink_in_place_of_the_log_is_refused_and_its_target_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let target = tmp.path().join("bashrc");
    std::fs::write(&target, "keep me\n").expect("target");
    let spec = spec(tmp.path(), "ok.sh", &[]);
    std::os::unix::fs::symlink(&target, &spec.log.path).expect("symlink");
    let id = spec.slice_id.to_string();
    let err = spawn_slice(spec).expect_err("must not spawn");
    assert!(matches!(err, SpawnError::Log { .. }), "{err:?}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("target"),
        "keep me\n"
    );
    assert!(!marker_present(&id));
}
