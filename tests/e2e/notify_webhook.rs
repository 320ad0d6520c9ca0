//! Word when a person is needed (issue 51): the webhook (`[notify] webhook_env`) gets the
//! notifications as Slack-compatible JSON, a webhook that hangs or refuses costs the loop
//! nothing, and `loopx run` in a terminal rings the bell when a question opens.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{LOOPX, Loopx, demo_project, script_agent, todo_state};

const VAR: &str = "LOOPX_TEST_WEBHOOK";
/// The webhook's path: its token, which must never be written anywhere.
const TOKEN_PATH: &str = "/services/T0001/B0002/s3cr3tw3bh00ktok3n";

/// A webhook on a local port: every POST's body, as JSON, on the channel.
fn webhook_server() -> (String, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!(
        "http://{}{TOKEN_PATH}",
        listener.local_addr().expect("bound")
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            if let Some(body) = read_post(stream) {
                let _ = tx.send(body);
            }
        }
    });
    (url, rx)
}

/// Reads one request, answers 200, and returns its body when it was a POST to the token's path
/// with a JSON body.
fn read_post(stream: TcpStream) -> Option<Value> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = n.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let _ =
        (&stream).write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    let post = head.starts_with(&format!("POST {TOKEN_PATH} HTTP/1.1"));
    let json = head
        .to_ascii_lowercase()
        .contains("content-type: application/json");
    (post && json).then(|| serde_json::from_slice(&body).ok())?
}

fn with_webhook(loopx: &Loopx) {
    loopx.write_config(format!("[notify]\nwebhook_env = \"{VAR}\"\n"));
}

/// Every file under `dir`, read whole (lossily).
fn every_file(dir: &std::path::Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            every_file(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
}

#[test]
fn the_webhook_hears_a_pause_and_a_question_and_never_keeps_its_url() {
    let (url, posts) = webhook_server();
    let loopx = demo_project(&["exec"]);
    with_webhook(&loopx);
    loopx.ok(&["todo", "add", "Write the notes [demo:usage-limit]"]);
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    let run = loopx.run_env(
        &["run", "--on-gate", "exit"],
        &[("LOOPX_DEMO_RESET_SECS", "2"), (VAR, &url)],
    );
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("notifications are posted to the webhook in LOOPX_TEST_WEBHOOK"),
        "{}",
        run.stderr
    );
    // The run waits for its last notifications before it exits: they are all here.
    let notes: Vec<Value> = posts.try_iter().collect();
    let kinds: Vec<&str> = notes.iter().filter_map(|n| n["kind"].as_str()).collect();
    assert_eq!(kinds, ["paused", "resumed", "gate_opened"], "{notes:#?}");
    let paused = notes[0]["text"].as_str().expect("Slack's `text`");
    assert!(
        paused.starts_with("loopx: exec is paused until "),
        "{paused}"
    );
    let asked = notes[2]["text"].as_str().expect("Slack's `text`");
    assert!(
        asked.starts_with("loopx: exec needs an answer to q1: ")
            && asked.contains("loopx gate answer q1"),
        "{asked}"
    );
    assert_eq!(notes[2]["agent"], "exec");
    let shown = loopx.ok(&["notify", "show"]).stdout;
    assert!(
        shown.contains("No notification command")
            && shown
                .contains("the webhook whose URL is in LOOPX_TEST_WEBHOOK (not set in this shell)"),
        "{shown}"
    );
    // The URL is the person's secret: on no disk, in no output.
    let mut written = run.stderr.clone() + &run.stdout;
    every_file(loopx.path(), &mut written);
    every_file(loopx.state.path(), &mut written);
    assert!(
        !written.contains("s3cr3tw3bh00ktok3n"),
        "the token was written"
    );
}

#[test]
fn the_webhook_hears_a_goal_waiting_to_be_closed() {
    let (url, posts) = webhook_server();
    let loopx = demo_project(&["exec"]);
    with_webhook(&loopx);
    loopx.ok(&["todo", "add", "Write the notes"]);
    let run = loopx.run_env(&["run", "--on-gate", "exit"], &[(VAR, &url)]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    let notes: Vec<Value> = posts.try_iter().collect();
    let asked: Vec<&str> = notes
        .iter()
        .filter(|n| n["kind"] == "gate_opened")
        .filter_map(|n| n["text"].as_str())
        .collect();
    assert!(
        matches!(asked.as_slice(), [text] if text.contains("goal") && text.contains("loopx gate answer q1")),
        "{notes:#?}"
    );
}

/// A run of three todos (a usage limit first: a pause and a resume to notify, then the goal
/// done), with the webhook at `url`; how long it took.
fn three_todos(url: Option<&str>) -> Duration {
    let loopx = demo_project(&["exec"]);
    with_webhook(&loopx);
    loopx.agents_close_goals();
    loopx.ok(&["todo", "add", "Write the notes [demo:usage-limit]"]);
    loopx.ok(&["todo", "add", "Write the intro"]);
    loopx.ok(&["todo", "add", "Write the outro"]);
    let mut env = vec![("LOOPX_DEMO_RESET_SECS", "1")];
    if let Some(url) = url {
        env.push((VAR, url));
    }
    let started = Instant::now();
    let run = loopx.run_env(&["run"], &env);
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    for todo in ["t1", "t2", "t3"] {
        assert_eq!(todo_state(&loopx, todo), "done", "{}", run.stderr);
    }
    took
}

#[test]
fn a_webhook_that_hangs_or_refuses_does_not_hold_the_loop_back() {
    let usual = three_todos(None);
    // Hangs: takes the connection, never answers.
    let hanging = TcpListener::bind("127.0.0.1:0").expect("a port");
    let hangs = format!(
        "http://{}{TOKEN_PATH}",
        hanging.local_addr().expect("bound")
    );
    std::thread::spawn(move || {
        let held: Vec<TcpStream> = hanging.incoming().flatten().collect();
        drop(held);
    });
    // Refuses: nothing listens on the port any more.
    let refused = {
        let gone = TcpListener::bind("127.0.0.1:0").expect("a port");
        format!("http://{}{TOKEN_PATH}", gone.local_addr().expect("bound"))
    };
    for url in [hangs, refused] {
        let took = three_todos(Some(&url));
        // Each notification would cost a hanging webhook over 20 s of tries if the loop
        // waited (three of them: over a minute); the end of the run gives the queue 5 s of
        // grace, no more (a loop waiting even 3 s per notification would take 14 s more). The
        // rest of the bound is room for a busy machine.
        assert!(
            took < usual + Duration::from_secs(12),
            "{url}: {took:?}, against {usual:?} with no webhook"
        );
    }
}

#[test]
fn a_bad_webhook_url_stops_the_run_before_anything_runs_and_the_slice_never_sees_it() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "peek",
        &format!(
            "cat > /dev/null\necho \"${{{VAR}:-unset}}\" > seen.txt\n'{LOOPX}' report done --summary looked > /dev/null"
        ),
        "max_time = \"20s\"",
    );
    loopx.ok(&["todo", "add", "Look around"]);
    with_webhook(&loopx);
    let bad = loopx.run_env(
        &["run", "--max-slices", "1"],
        &[(VAR, "ftp://example.invalid/x")],
    );
    assert_eq!(
        bad.code,
        i32::from(loopx_cli::exit_code::CONFIG),
        "{}",
        bad.stderr
    );
    assert!(
        bad.stderr.contains("notify.webhook_env")
            && bad.stderr.contains(VAR)
            && !bad.stderr.contains("example.invalid"),
        "{}",
        bad.stderr
    );
    assert_eq!(todo_state(&loopx, "t1"), "open", "nothing ran");
    let (url, _posts) = webhook_server();
    let run = loopx.run_env(&["run", "--max-slices", "1"], &[(VAR, &url)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen = std::fs::read_to_string(loopx.path().join("seen.txt")).expect("the agent ran");
    assert_eq!(seen.trim(), "unset", "the webhook's URL reached the slice");
}

/// `loopx run` in a terminal rings the bell and prints the question when one opens; piped, it
/// rings nothing.
#[test]
fn a_question_rings_the_bell_in_a_terminal_only() {
    let loopx = demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    let cmd = loopx.command(&["run", "--on-gate", "exit"]);
    // `script` gives the run a terminal and copies what it wrote to its stdout.
    let mut script = std::process::Command::new("script");
    script
        .args([
            "-qec",
            &format!("'{LOOPX}' run --on-gate exit"),
            "/dev/null",
        ])
        .current_dir(loopx.path());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => script.env(key, value),
            None => script.env_remove(key),
        };
    }
    let out = script.output().expect("script runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    let bell = screen
        .find('\x07')
        .unwrap_or_else(|| panic!("no bell: {screen:?}"));
    let after = &screen[bell..];
    assert!(
        after.contains("waiting on gate q1") && after.contains("answer with: loopx gate answer q1"),
        "{screen:?}"
    );
    let piped = loopx.run(&["run", "--on-gate", "exit"]);
    assert!(
        piped.stderr.contains("waiting on gate q1"),
        "{}",
        piped.stderr
    );
    assert!(!piped.stderr.contains('\x07'), "{:?}", piped.stderr);
}
