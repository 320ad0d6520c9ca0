//! The Lark callback listener keeps room for signed requests (issue 46, hole 5): slow clients
//! holding all 16 slots answered a person's press with 503.

use std::io::Write;
use std::net::TcpStream;

use loopx_lark_server::{LarkServer, Signing};
use serde_json::json;

use crate::lark::{SECRET, TOKEN, eventually, free_port, now_secs, project, run_listening_on};
use crate::lark_flowback::{board_with_events, lark, stop};

/// Sixteen clients that send half a request hold every general slot, and eight more claim the
/// signature headers and never send their body: a press Lark signed is answered all the same.
#[test]
fn a_signed_request_is_answered_while_slow_clients_hold_every_slot() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let (_loopx, run, url) = board_with_events(&server, &["Add retry"]);
    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("a host")
        .to_owned();
    let now = now_secs();
    let mut held = Vec::new();
    for i in 0..24 {
        let mut slow = TcpStream::connect(&host).expect("connected");
        let head = match i < 16 {
            true => "POST /lark/callback HTTP/1.1\r\nHost: x\r\n".to_owned(),
            false => format!(
                "POST /lark/callback HTTP/1.1\r\nX-Lark-Request-Timestamp: {now}\r\nX-Lark-Request-Nonce: fake-{i}\r\nX-Lark-Signature: 00\r\nContent-Length: 500\r\n\r\n"
            ),
        };
        slow.write_all(head.as_bytes()).expect("sent");
        held.push(slow);
    }
    let lark = lark();
    let body = lark.seal(
        &json!({"type": "url_verification", "challenge": "c-through", "token": TOKEN}),
        [4; 16],
    );
    // The slow clients hold every general slot once an unsigned request is turned away.
    eventually("every general slot held", || {
        lark.post(&url, &body, now_secs(), "n-unsigned", Signing::None)
            .0
            == 503
    });
    let answer = lark.post(&url, &body, now_secs(), "n-through", Signing::Good);
    assert_eq!(
        answer,
        (200, json!({"challenge": "c-through"})),
        "a signed request past slow clients"
    );
    // Unsigned, it is refused while the general slots are held.
    let (status, _) = lark.post(&url, &body, now_secs(), "n-unsigned", Signing::None);
    assert_eq!(status, 503);
    drop(held);
    stop(run);
}

/// Issue 46, hole 5: the listener's 5 s timeout was per read, so a client sending a byte every
/// 4 s held a slot as long as it liked, and an agent inside a slice could be that client for
/// all 16 slots (a person's press got 503). A request has 5 s in all now, and connections from
/// inside a slice are refused at accept, as the board's are.
#[test]
fn the_callback_listener_cannot_be_held_shut() {
    use std::io::{Read, Write};
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = project(&server, Some("tblTodos"));
    let port = free_port();
    crate::support::script_agent(
        &loopx,
        "exec",
        &format!(
            r#"cat > /dev/null
python3 -c '
import socket, time
def connect():
    for _ in range(100):
        try:
            return socket.create_connection(("127.0.0.1", {port}))
        except OSError:
            time.sleep(0.1)
refused = 0
for _ in range(20):
    s = connect()
    s.settimeout(5)
    try:
        got = b""
        while len(got) < 12:
            part = s.recv(100)
            if not part:
                break
            got += part
        if b"403" in got:
            refused += 1
        else:
            open("other.txt", "a").write(repr(got) + "\\n")
    except OSError as e:
        open("other.txt", "a").write(repr(e) + "\\n")
open("refused.txt", "w").write(str(refused))
'"#
        ),
        "max_time = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    // The person's trickling client first: one byte a second, cut at 5 s in all.
    let mut run = run_listening_on(&loopx, &server, port, &["--for", "40s"]);
    run.wait_for("the run", |e| e["event"] == "running");
    eventually("the listener", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let mut trickle = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connected");
    // Each read waits up to a second for the listener to answer or close: the client trickles
    // a byte a second (the attack under test), with no fixed sleep.
    trickle
        .set_read_timeout(Some(std::time::Duration::from_secs(1)))
        .expect("timeout");
    let began = std::time::Instant::now();
    let mut closed = false;
    for byte in b"POST /lark/callback HTTP/1.1\r\nHost: x\r\n"
        .iter()
        .cycle()
        .take(30)
    {
        let mut answer = [0u8; 64];
        closed = trickle.write_all(&[*byte]).is_err()
            || !trickle.read(&mut answer).is_err_and(|e| {
                matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            });
        if closed {
            break;
        }
    }
    let held = began.elapsed();
    assert!(closed, "a trickling client kept its slot for {held:?}");
    assert!(
        held < std::time::Duration::from_secs(9),
        "a trickling client kept its slot for {held:?}"
    );
    // The agent's connections, from inside its slice.
    crate::support::wait_file(&loopx.path().join("refused.txt"));
    run.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = run.finish();
    let refused = std::fs::read_to_string(loopx.path().join("refused.txt")).expect("refused");
    let other = std::fs::read_to_string(loopx.path().join("other.txt")).unwrap_or_default();
    assert_eq!(
        refused.trim(),
        "20",
        "every connection from the slice was refused: {other}"
    );
}
