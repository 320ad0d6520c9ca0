//! `loopx board` in a real headless Chromium, on a project with a running `loopx run`
//! (issue 16): the todos in their columns, the open gate answered from the page waking the run,
//! requests without the session refused, and an agent's markup shown as text. Screenshots go
//! to `target/test-output/board/`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::browser::{Browser, output_dir};
use crate::support::{Background, Loopx, demo_project};

/// A `loopx board` in the background; killed when dropped.
pub(crate) struct BoardProcess {
    child: Child,
    /// Its standard input: a line asks for another address.
    ask: std::process::ChildStdin,
    printed: std::io::Lines<BufReader<std::process::ChildStdout>>,
    pub(crate) url: String,
    pub(crate) port: u16,
    code: String,
}

impl BoardProcess {
    fn start(loopx: &Loopx) -> BoardProcess {
        BoardProcess::start_with(loopx, &["board", "--json"], &[])
    }

    pub(crate) fn start_with(loopx: &Loopx, args: &[&str], env: &[(&str, &str)]) -> BoardProcess {
        let mut command = loopx.command(args);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("loopx board starts");
        let ask = child.stdin.take().expect("stdin");
        let printed = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut board = BoardProcess {
            child,
            ask,
            printed,
            url: String::new(),
            port: 0,
            code: String::new(),
        };
        board.url = board.next_url();
        let rest = board.url.trim_start_matches("http://127.0.0.1:");
        board.port = rest
            .split('/')
            .next()
            .expect("port")
            .parse()
            .expect("a port");
        board.code = code_of(&board.url);
        board
    }

    /// The next address the board prints.
    fn next_url(&mut self) -> String {
        let line = self
            .printed
            .next()
            .expect("the board prints an address")
            .expect("a line");
        let printed: Value = serde_json::from_str(&line).expect("JSON");
        let url = printed["url"].as_str().expect("a url").to_owned();
        assert!(
            url.contains("/#code="),
            "the code is in the fragment: {url}"
        );
        url
    }

    /// Trades `code` for the session, as the page does.
    fn trade(&self, code: &str) -> (u16, String) {
        self.request(
            "POST /api/session HTTP/1.1\r\nX-Loopx-Board: 1\r\nContent-Type: application/json",
            &format!(r#"{{"code":"{code}"}}"#),
        )
    }

    pub(crate) fn session(&self) -> String {
        let (status, body) = self.trade(&self.code);
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).expect("JSON");
        answer["session"].as_str().expect("a session").to_owned()
    }

    /// A raw request; the status code and body.
    pub(crate) fn request(&self, head: &str, body: &str) -> (u16, String) {
        let (status, _, body) = self.request_full(head, body);
        (status, body)
    }

    fn request_full(&self, head: &str, body: &str) -> (u16, String, String) {
        raw_request(self.port, head, body)
    }
}

/// A raw request to the board on `port`: the status code, head and body.
pub(crate) fn raw_request(port: u16, head: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let request = format!(
        "{head}\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (status, head.to_owned(), body.to_owned())
}

impl Drop for BoardProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn code_of(url: &str) -> String {
    let code = url.split("code=").nth(1).expect("a code").to_owned();
    assert_eq!(code.len(), 32, "128 random bits: {url}");
    code
}

/// The same secret with its first digit changed.
fn other_than(secret: &str) -> String {
    let first = if secret.starts_with('0') { '1' } else { '0' };
    format!("{first}{}", &secret[1..])
}

const MARKUP: &str = "Write <img src=x onerror=\"window.__pwned=1\"> the <b>intro</b>";

#[test]
fn the_board_shows_the_work_and_a_gate_answered_from_the_page_wakes_the_run() {
    let loopx = demo_project(&["exec"]);
    loopx.agents_close_goals();
    loopx.ok(&[
        "todo",
        "add",
        "Choose the format [demo:ask]",
        "--priority",
        "5",
    ]);
    loopx.ok(&["todo", "add", MARKUP]);
    loopx.ok(&["todo", "add", "Write the outro", "--after", "t1"]);
    let board = BoardProcess::start(&loopx);
    let shots = output_dir("board");
    let mut run = Background::start(&loopx, &[]);
    run.wait_for("the question", |e| e["event"] == "question");
    run.saw_or_wait_for("the intro done", |e| {
        e["event"] == "slice_ended" && e["todo"] == "t2" && e["todo_state"] == "done"
    });

    let mut browser = Browser::start();
    browser.open(&board.url);
    browser.wait_for(
        "the open gate under Needs you",
        r#"document.querySelector('#gates [data-gate="q1"]')"#,
        Duration::from_secs(20),
    );
    browser.wait_for(
        "the todos in their columns",
        r#"document.querySelector('#col-blocked [data-todo="t1"]')
            && document.querySelector('#col-done [data-todo="t2"]')
            && document.querySelector('#col-open [data-todo="t3"]')"#,
        Duration::from_secs(20),
    );
    // Issue 47, item 12: the tab says how many questions wait.
    assert_eq!(browser.eval("document.title"), "(1) loopx board");
    let question = browser.eval(r#"document.querySelector('#gates [data-gate="q1"]').innerText"#);
    assert!(
        question.as_str().is_some_and(|q| q.contains("1. ")),
        "the options are offered: {question}"
    );
    // The agent's markup is text: no element was made from it, no script ran.
    let title = browser.eval(r#"document.querySelector('[data-todo="t2"] .title').textContent"#);
    assert_eq!(title, Value::String(format!("t2{MARKUP}")));
    assert_eq!(
        browser.eval("document.querySelectorAll('main img, main b').length"),
        0
    );
    assert_eq!(browser.eval("typeof window.__pwned"), "undefined");
    // The code is gone from the address (it worked once), and nothing is served without the
    // session the page keeps in its tab.
    assert_eq!(
        browser.eval("location.hash"),
        "",
        "the code left the address"
    );
    assert_eq!(
        browser.eval(&format!(
            "fetch('/api/session', {{method: 'POST', headers: {{'Content-Type': 'application/json', 'X-Loopx-Board': '1'}}, body: JSON.stringify({{code: '{}'}})}}).then(r => r.status)",
            board.code
        )),
        401,
        "the code works once"
    );
    assert_eq!(
        browser.eval("fetch('/api/state').then(r => r.status)"),
        401,
        "a request without the session"
    );
    assert_eq!(
        browser.eval("document.cookie"),
        "",
        "no cookie for other local servers"
    );
    browser.screenshot(&shots.join("board-question.png"));

    // Answer from the page: option 1.
    let answered = Instant::now();
    browser.eval(
        r#"document.querySelector('#gates [data-gate="q1"] button.option[data-option="1"]').click()"#,
    );
    run.wait_for("the answered todo's slice", |e| {
        e["event"] == "slice_started" && e["todo"] == "t1"
    });
    assert!(
        answered.elapsed() < Duration::from_secs(10),
        "the answer woke the run"
    );
    browser.wait_for(
        "the answered todo done and the gate gone",
        r#"document.querySelector('#col-done [data-todo="t1"]')
            && !document.querySelector('#gates [data-gate="q1"]')"#,
        Duration::from_secs(30),
    );
    browser.screenshot(&shots.join("board-done.png"));
    assert_eq!(
        browser.eval("document.title"),
        "loopx board",
        "none waits now"
    );
    let (code, _) = run.finish();
    assert_eq!(code, 0);

    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(gate["gate"]["answer"]["option"], 1, "{gate}");
    assert_eq!(gate["gate"]["answer"]["by"], "human:tester", "{gate}");
}

#[test]
fn every_request_needs_the_session_and_changes_need_the_board_s_header() {
    let loopx = demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Write the intro"]);
    let mut board = BoardProcess::start(&loopx);
    // The page holds no data; the data needs the session.
    let (status, page) = board.request("GET / HTTP/1.1", "");
    assert_eq!(status, 200);
    assert!(!page.contains("Write the intro"), "{page}");
    for path in ["/api/state", "/api/stream"] {
        let (status, _) = board.request(&format!("GET {path} HTTP/1.1"), "");
        assert_eq!(status, 401, "{path} without a session");
    }
    let (status, _) = board.trade(&other_than(&board.code));
    assert_eq!(status, 401, "a wrong code");
    let session = board.session();
    let (status, _) = board.trade(&board.code);
    assert_eq!(status, 401, "the printed address works once");
    // Enter in the board's terminal: a fresh address, good once too.
    writeln!(board.ask).expect("ask for another address");
    let second = code_of(&board.next_url());
    assert_ne!(second, board.code);
    assert_eq!(board.trade(&second).0, 200);
    assert_eq!(board.trade(&second).0, 401);
    let (status, _) = board.request(
        &format!(
            "GET /api/state HTTP/1.1\r\nX-Loopx-Session: {}",
            other_than(&session)
        ),
        "",
    );
    assert_eq!(status, 401, "a wrong session");
    let (status, state) = board.request(
        &format!("GET /api/state HTTP/1.1\r\nX-Loopx-Session: {session}"),
        "",
    );
    assert_eq!(status, 200);
    assert!(state.contains("Write the intro"), "{state}");
    // The stream takes the session in its address (EventSource sends no headers).
    let mut stream = TcpStream::connect(("127.0.0.1", board.port)).expect("connect");
    write!(
        stream,
        "GET /api/stream?session={session} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        board.port
    )
    .expect("send");
    let mut first = [0u8; 64];
    let read = stream.read(&mut first).expect("read");
    assert!(
        String::from_utf8_lossy(&first[..read]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&first[..read])
    );
    drop(stream);

    let add = r#"{"title":"From a forged form"}"#;
    // The session without the board's header (what a form of another site could send) is
    // refused.
    let (status, _) = board.request(
        &format!(
            "POST /api/todo/add HTTP/1.1\r\nX-Loopx-Session: {session}\r\nContent-Type: application/json"
        ),
        add,
    );
    assert_eq!(status, 403);
    // Nor from another site's page.
    let (status, _) = board.request(
        &format!(
            "POST /api/todo/add HTTP/1.1\r\nX-Loopx-Session: {session}\r\nX-Loopx-Board: 1\r\nContent-Type: application/json\r\nOrigin: http://evil.example"
        ),
        add,
    );
    assert_eq!(status, 403);
    // Nor from an origin that only ends like the board's: no scheme, or a doubled one.
    for origin in [
        format!("127.0.0.1:{}", board.port),
        format!("http://http://127.0.0.1:{}", board.port),
    ] {
        let (status, _) = board.request(
            &format!(
                "POST /api/todo/add HTTP/1.1\r\nX-Loopx-Session: {session}\r\nX-Loopx-Board: 1\r\nContent-Type: application/json\r\nOrigin: {origin}"
            ),
            add,
        );
        assert_eq!(status, 403, "{origin}");
    }
    // Nor a form's body.
    let (status, _) = board.request(
        &format!(
            "POST /api/todo/add HTTP/1.1\r\nX-Loopx-Session: {session}\r\nX-Loopx-Board: 1\r\nContent-Type: text/plain"
        ),
        add,
    );
    assert_eq!(status, 415);
    // Nor the board's header without the session.
    let (status, _) = board.request(
        "POST /api/todo/add HTTP/1.1\r\nX-Loopx-Board: 1\r\nContent-Type: application/json",
        add,
    );
    assert_eq!(status, 401);
    let listed = loopx.ok(&["todo", "list", "--json"]).stdout;
    assert!(!listed.contains("forged"), "nothing was added: {listed}");

    // With all of it, the CLI's own validation answers.
    let post = format!(
        "HTTP/1.1\r\nX-Loopx-Session: {session}\r\nX-Loopx-Board: 1\r\nContent-Type: application/json"
    );
    let (status, body) = board.request(
        &format!("POST /api/todo/add {post}"),
        r#"{"title":"Write the outro"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = board.request(&format!("POST /api/todo/drop {post}"), r#"{"todo":"t99"}"#);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("t99"), "{body}");
    // A button sends its option's place: on options that are numbers themselves, the first
    // button is the first option, `4`.
    loopx.ok(&[
        "gate",
        "ask",
        "How many parallel workers should the test run use?",
        "--option",
        "4",
        "--option",
        "1",
        "--global",
    ]);
    let (status, body) = board.request(
        &format!("POST /api/answer {post}"),
        r#"{"gate":"q1","option":1}"#,
    );
    assert_eq!(status, 200, "{body}");
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(gate["gate"]["answer"]["text"], "4", "{gate}");
    // A message to an agent, as `loopx say` sends it: the person's, waiting for its next slice.
    let (status, body) = board.request(
        &format!("POST /api/say {post}"),
        r#"{"agent":"exec","text":"Start with the intro"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"id\":\"m1\"") && body.contains("human:tester"),
        "{body}"
    );
    let (status, body) = board.request(
        &format!("POST /api/say {post}"),
        r#"{"agent":"nobody","text":"hello"}"#,
    );
    assert_eq!(status, 400, "{body}");
    let events = loopx.ok(&["log", "--json"]).stdout;
    let added = events
        .lines()
        .find(|l| l.contains("Write the outro"))
        .expect("the todo was added");
    assert!(added.contains("\"actor\":\"human:tester\""), "{added}");
    // A page served under another name (DNS rebinding) is refused.
    let mut stream = TcpStream::connect(("127.0.0.1", board.port)).expect("connect");
    write!(
        stream,
        "GET /api/state HTTP/1.1\r\nHost: attacker.example:{}\r\nX-Loopx-Session: {session}\r\n\r\n",
        board.port
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    // A request trickled in byte by byte does not hold a connection past its deadline.
    let mut slow = TcpStream::connect(("127.0.0.1", board.port)).expect("connect");
    let started = Instant::now();
    slow.write_all(b"GET / HTTP/1.1\r\nX-A: ").expect("send");
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "closed after {:?}",
        started.elapsed()
    );
}

#[test]
fn a_running_slice_shows_its_agent_elapsed_time_and_a_live_tail() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Count slowly"]);
    let script = "cat >/dev/null\nfor i in 1 2 3 4 5 6 7 8; do echo \"tick $i\"; sleep 0.5; done\nprintf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"counted\"}' '```'";
    crate::support::script_agent(&loopx, "a", script, "max_time = \"2m\"");
    loopx.ok(&["todo", "add", "Count to eight"]);
    let board = BoardProcess::start(&loopx);
    let mut browser = Browser::start();
    browser.open(&board.url);
    browser.wait_for(
        "the page",
        "document.querySelector('#col-open [data-todo=\"t1\"]')",
        Duration::from_secs(20),
    );
    let mut run = Background::start(&loopx, &["--max-slices", "1"]);
    browser.wait_for(
        "the running card with its live tail",
        r#"(() => {
            const card = document.querySelector('#col-claimed [data-todo="t1"]');
            return card && /tick [2-7]/.test(card.querySelector('.tail').textContent)
                && /running \d+s of 2m/.test(card.querySelector('.elapsed').textContent)
                && /a · epoch 1/.test(card.innerText)
                && /running s1/.test(document.querySelector('#agents [data-agent="a"]').innerText);
        })()"#,
        Duration::from_secs(20),
    );
    browser.screenshot(&output_dir("board").join("board-running.png"));
    run.wait_for("the slice's end", |e| e["event"] == "slice_ended");
    browser.wait_for(
        "the card done",
        "document.querySelector('#col-done [data-todo=\"t1\"]')",
        Duration::from_secs(20),
    );
    assert_eq!(run.finish().0, 0);
}

/// Issue 28: a monitor has a column of its own, with its check, its cadence, when it is polled
/// next and what its last poll saw.
#[test]
fn a_monitor_shows_in_its_column_with_its_last_poll() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Wait for the job"]);
    loopx.ok(&["agent", "add", "exec", "--profile", "demo"]);
    loopx.ok(&[
        "todo",
        "add",
        "Wait for job 7",
        "--check",
        "echo 'step 3 of 10'; exit 1",
        "--every",
        "10m",
    ]);
    loopx.ok(&["todo", "add", "Evaluate job 7", "--after", "t1"]);
    let mut run = Background::start(&loopx, &["--for", "30s"]);
    run.wait_for("the first poll", |e| e["event"] == "polled");
    let board = BoardProcess::start(&loopx);
    let mut browser = Browser::start();
    browser.open(&board.url);
    browser.wait_for(
        "the monitor's card",
        r#"(() => {
            const card = document.querySelector('#col-monitors [data-todo="t1"]');
            return card && /every 10m/.test(card.innerText)
                && /next poll in \d+m/.test(card.innerText)
                && /last: not yet \(exit 1\): step 3 of 10 · 1 poll/.test(card.innerText)
                && document.querySelector('#col-open [data-todo="t2"]');
        })()"#,
        Duration::from_secs(20),
    );
    browser.screenshot(&output_dir("board").join("board-monitor.png"));
    run.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = run.finish();
}

/// Issue 33, gap 5: slices share the host's loopback, so an agent held all 64 of the board's
/// connection slots and the person got 503 until it stopped. A connection from inside a slice
/// is now refused at accept; the person's still get through.
#[test]
fn an_agent_cannot_take_the_person_s_board() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    let board = BoardProcess::start(&loopx);
    crate::support::script_agent(
        &loopx,
        "exec",
        &format!(
            r#"cat > /dev/null
python3 -c '
import socket, time
held = [socket.create_connection(("127.0.0.1", {port})) for _ in range(70)]
open("holding", "w").write("1")
time.sleep(4)
refused = 0
for s in held:
    s.settimeout(1)
    try:
        if b"403" in s.recv(100):
            refused += 1
    except OSError:
        pass
open("refused.txt", "w").write(str(refused))
'"#,
            port = board.port
        ),
        "max_time = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let run = loopx
        .command(&["run", "--once", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("loopx run");
    crate::support::wait_file(&loopx.path().join("holding"));
    let (status, body) = board.request("GET / HTTP/1.1", "");
    assert_eq!(
        status, 200,
        "the person is served while the agent tries: {body}"
    );
    let mut run = run;
    assert!(run.wait().expect("run ends").success());
    let refused = std::fs::read_to_string(loopx.path().join("refused.txt")).expect("refused.txt");
    assert_eq!(
        refused.trim(),
        "70",
        "every connection of the agent was refused"
    );
}

/// Issue 29: a done card's evidence says when it went stale, as `evidence list` does.
#[test]
fn a_done_card_shows_its_stale_evidence_as_stale() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Measure the cache"]);
    loopx.ok(&["todo", "add", "Measure the hit rate"]);
    std::fs::write(loopx.path().join("hits.txt"), "hit rate 91%\n").expect("write");
    loopx.ok(&[
        "evidence",
        "add",
        "hit rate 91%",
        "--kind",
        "artifact",
        "--file",
        "hits.txt",
        "--todo",
        "t1",
    ]);
    loopx.ok(&["todo", "done", "t1"]);
    std::fs::write(loopx.path().join("hits.txt"), "hit rate 40%\n").expect("write");
    let board = BoardProcess::start(&loopx);
    let mut browser = Browser::start();
    browser.open(&board.url);
    browser.wait_for(
        "the done card with its evidence marked stale",
        r#"(() => {
            const card = document.querySelector('#col-done [data-todo="t1"]');
            return card && /artifact: hit rate 91%/.test(card.innerText)
                && /stale: hits\.txt changed since it was pinned/.test(card.innerText);
        })()"#,
        Duration::from_secs(20),
    );
}
