//! An agent whose stdin is `/dev/null` or a pipe the caller writes to, while its output stays
//! the terminal.

use loopx_pty::{SliceExit, Stdin, spawn_slice};

use crate::support::{exec_helper, spec, wait_for_text};

/// `spec` with `stdin`, through the helper that sets it up.
fn with_stdin(spec: &mut loopx_pty::LaunchSpec, stdin: Stdin) {
    spec.stdin = stdin;
    spec.exec_helper = Some(loopx_pty::ExecHelper {
        program: exec_helper(),
        args: vec![],
    });
}

/// A script that says what its streams are, then echoes every line it reads with its length.
fn line_reader(dir: &std::path::Path) -> std::path::PathBuf {
    let script = dir.join("lines.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n\
         [ -t 0 ] && echo stdin=tty || echo stdin=other\n\
         [ -t 1 ] && echo stdout=tty || echo stdout=other\n\
         while IFS= read -r line; do echo \"got ${#line}: $(printf %s \"$line\" | cut -c1-12)\"; done\n\
         echo eof\n",
    )
    .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    script
}

#[tokio::test]
async fn a_pipe_carries_whole_lines_in_order_and_its_close_is_end_of_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ok.sh", &[]);
    spec.program = line_reader(tmp.path());
    with_stdin(&mut spec, Stdin::Pipe);
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    let control = slice.control();
    let seen = wait_for_text(&mut events, "stdout=tty").await;
    assert!(seen.contains("stdin=other"), "{seen}");
    control
        .write_stdin(b"first line\n".to_vec())
        .expect("write");
    // A terminal in canonical mode would cut this line at 4,095 bytes.
    let long = format!("{}\n", "x".repeat(300_000));
    control.write_stdin(long.into_bytes()).expect("write");
    wait_for_text(&mut events, "got 300000: xxxxxxxxxxxx").await;
    control.close_stdin().expect("close");
    let err = control.write_stdin(b"late\n".to_vec()).expect_err("closed");
    assert!(err.to_string().contains("no open stdin pipe"), "{err}");
    wait_for_text(&mut events, "eof").await;
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    let first = report.text.find("got 10: first line").expect("first line");
    assert!(first < report.text.find("got 300000").expect("long line"));
    assert!(!report.text.contains("late"), "{}", report.text);
}

#[tokio::test]
async fn a_null_stdin_reads_end_of_file_at_once_and_a_terminal_s_has_no_pipe() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ok.sh", &[]);
    spec.program = line_reader(tmp.path());
    with_stdin(&mut spec, Stdin::Null);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert!(
        report.text.contains("stdin=other\nstdout=tty\neof"),
        "{}",
        report.text
    );

    let mut spec = crate::support::spec(tmp.path(), "ok.sh", &[]);
    spec.program = line_reader(tmp.path());
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    wait_for_text(&mut events, "stdin=tty").await;
    let err = slice
        .control()
        .write_stdin(b"x\n".to_vec())
        .expect_err("no pipe");
    assert!(err.to_string().contains("no open stdin pipe"), "{err}");
    slice.kill_now();
    drop(events);
    slice.wait().await.expect("report");
}

#[tokio::test]
async fn a_stdin_other_than_the_terminal_needs_the_helper() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ok.sh", &[]);
    spec.stdin = Stdin::Pipe;
    let err = spawn_slice(spec).expect_err("no helper");
    assert!(err.to_string().contains("no exec helper"), "{err}");
}

/// A close asked for while the agent has not read what was written still comes, after it.
#[tokio::test]
async fn a_close_behind_a_full_queue_still_comes_after_what_was_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = tmp.path().join("slow.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 1\nwc -c\n").expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut spec = spec(tmp.path(), "ok.sh", &[]);
    spec.program = script;
    with_stdin(&mut spec, Stdin::Pipe);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    let control = slice.control();
    let chunk = vec![b'x'; 64 * 1024];
    let mut written = 0usize;
    for _ in 0..10_000 {
        match control.write_stdin(chunk.clone()) {
            Ok(()) => written += chunk.len(),
            Err(e) => {
                assert!(e.to_string().contains("is full"), "{e}");
                break;
            }
        }
    }
    control.close_stdin().expect("close behind a full queue");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert!(
        report.text.contains(&written.to_string()),
        "{written}: {}",
        report.text
    );
}
