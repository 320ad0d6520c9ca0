//! Waiting for input (reported, never answered), sending input, and prompts by file.

use std::time::Duration;

use loopx_pty::{PromptFile, SliceEvent, SliceExit, spawn_slice};

use crate::support::{DEADLINE, spec, wait_for_text};

#[tokio::test]
async fn a_question_is_reported_as_waiting_and_never_answered() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "waits-for-input.sh", &[]);
    spec.limits.waiting_after = Duration::from_millis(500);
    spec.limits.idle = Some(Duration::from_secs(3));
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    let screen = tokio::time::timeout(DEADLINE, async {
        loop {
            match events.next().await {
                Some(SliceEvent::WaitingForInput { screen }) => return screen,
                Some(_) => {}
                None => panic!("slice ended without waiting for input"),
            }
        }
    })
    .await
    .expect("waiting reported in time");
    assert!(screen.ends_with("Proceed? [y/N]"), "{screen:?}");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Idle);
    assert!(report.waiting_for_input);
    assert!(
        !report.text.contains("got:"),
        "loopx answered: {:?}",
        report.text
    );
}

#[tokio::test]
async fn the_caller_can_answer_through_the_terminal() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "waits-for-input.sh", &[]);
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    wait_for_text(&mut events, "Proceed?").await;
    slice.send_input(b"yes\r".to_vec()).expect("send input");
    wait_for_text(&mut events, "got: yes").await;
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert!(!report.waiting_for_input);
    // After the end, the terminal takes no more input.
    let err = slice
        .send_input(b"late".to_vec())
        .expect_err("slice has ended");
    assert!(err.to_string().contains("has ended"), "{err}");
}

#[tokio::test]
async fn a_long_prompt_goes_by_a_private_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "prints-prompt.sh", &["{prompt_file}"]);
    let path = tmp.path().join("prompt.md");
    let prompt = "line\n".repeat(20_000);
    spec.prompt = Some(PromptFile {
        path: path.clone(),
        contents: prompt.clone().into_bytes(),
    });
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    let shown = path.display();
    assert!(
        report.text.contains(&format!("arg={shown}\n")),
        "{}",
        &report.text[..200]
    );
    assert!(report.text.contains(&format!("env={shown}\n")));
    assert!(report.text.contains("mode=600\n"));
    assert_eq!(std::fs::read_to_string(&path).expect("prompt file"), prompt);
}

#[tokio::test]
async fn a_prompt_typed_without_echo_is_not_read_back_as_output() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = tmp.path().join("reads.sh");
    std::fs::write(&script, "#!/bin/sh\ncat >/dev/null\necho done reading\n").expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let typed = "Log a warning when the API rate limit is exceeded";
    for echo in [true, false] {
        let mut spec = spec(tmp.path(), "ok.sh", &[]);
        spec.program = script.clone();
        spec.echo = echo;
        let (mut slice, events) = spawn_slice(spec).expect("spawn");
        slice
            .send_input(format!("{typed}\n\u{4}").into_bytes())
            .expect("typed");
        drop(events);
        let report = slice.wait().await.expect("report");
        assert!(report.text.contains("done reading"), "{:?}", report.text);
        assert_eq!(
            report.text.contains(typed),
            echo,
            "echo {echo}: {:?}",
            report.text
        );
    }
}
