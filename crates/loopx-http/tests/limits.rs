//! Each limit of `loopx-http`, driven by a raw client over loopback.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loopx_http::{Limits, Request, Response, Server, Service};

/// Answers what it was asked; counts its calls; may hold a request until told to go on.
#[derive(Default)]
struct Echo {
    calls: Arc<AtomicUsize>,
    /// When set: the handler says it started, then waits for a go.
    hold: Option<(mpsc::Sender<()>, Mutex<mpsc::Receiver<()>>)>,
    /// Peers refused at accept (by port): nothing is read from them.
    refuse_all: bool,
}

impl Service for Echo {
    type Conn = ();

    fn accept(&self, _: &TcpStream) -> Result<(), Response> {
        match self.refuse_all {
            true => Err(Response::text(403, "not you\n")),
            false => Ok(()),
        }
    }

    fn handle(&self, _: &(), request: Request) -> Response {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some((started, go)) = &self.hold {
            let _ = started.send(());
            let _ = go.lock().expect("lock").recv();
        }
        let text = format!(
            "{} {} {:?} {:?} {}",
            request.method,
            request.path,
            request.query,
            request.header("x-a"),
            String::from_utf8_lossy(&request.body)
        );
        Response::text(200, &text)
    }

    fn refused(&self, status: u16, why: &str) -> Response {
        Response::new(
            status,
            "application/json",
            format!("{{\"error\":\"{why}\"}}"),
        )
    }
}

fn limits() -> Limits {
    Limits {
        max_body: 100,
        max_head: 8192,
        max_headers: 8,
        header_timeout: Duration::from_millis(400),
        request_timeout: Duration::from_millis(800),
        write_timeout: Duration::from_millis(400),
        max_connections: 4,
        shutdown_grace: Duration::from_secs(5),
    }
}

fn start(limits: Limits, service: impl Service) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bound");
    Server::start(listener, limits, service).expect("started")
}

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(server.local_addr()).expect("connected");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a timeout");
    stream
}

/// Sends `raw` and reads the answer to the close: status and body ("" when closed unanswered).
fn exchange(server: &Server, raw: &[u8]) -> (u16, String) {
    let mut stream = connect(server);
    stream.write_all(raw).expect("sent");
    read_answer(&mut stream)
}

fn read_answer(stream: &mut TcpStream) -> (u16, String) {
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_owned())
}

#[test]
fn a_request_reaches_the_handler_plain() {
    let server = start(limits(), Echo::default());
    let (status, body) = exchange(
        &server,
        b"POST /a%20b?x=1+2&y=%2B&z HTTP/1.1\r\nX-A: v \r\nContent-Length: 4\r\n\r\nbody",
    );
    assert_eq!(status, 200);
    assert_eq!(
        body,
        r#"POST /a b [("x", "1 2"), ("y", "+"), ("z", "")] Some("v") body"#
    );
    let (status, body) = exchange(
        &server,
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    );
    assert_eq!((status, body.ends_with(" abcde")), (200, true), "{body}");
}

#[test]
fn an_oversize_body_is_413_and_never_reaches_the_handler() {
    let echo = Echo::default();
    let calls = Arc::clone(&echo.calls);
    let server = start(limits(), echo);
    let declared = format!(
        "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n{}",
        "a".repeat(101)
    );
    assert_eq!(
        exchange(&server, declared.as_bytes()),
        (413, r#"{"error":"body too large"}"#.to_owned())
    );
    // Declared larger than the limit and never sent: refused at once, not at the deadline.
    let started = Instant::now();
    let promised = b"POST / HTTP/1.1\r\nContent-Length: 1000000000000000000\r\n\r\nab";
    assert_eq!(exchange(&server, promised).0, 413);
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    // Chunked, so the size is known only as it comes.
    let chunk = "a".repeat(60);
    let chunked = format!(
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3c\r\n{chunk}\r\n3c\r\n{chunk}\r\n0\r\n\r\n"
    );
    assert_eq!(exchange(&server, chunked.as_bytes()).0, 413);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler saw none");
    let fits = format!(
        "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n{}",
        "a".repeat(100)
    );
    assert_eq!(exchange(&server, fits.as_bytes()).0, 200);
}

#[test]
fn half_a_head_then_silence_is_cut_after_the_header_timeout() {
    let server = start(limits(), Echo::default());
    let began = Instant::now();
    let (status, _) = exchange(&server, b"GET / HTTP/1.1\r\nX-A: ");
    let took = began.elapsed();
    assert_eq!(status, 0, "closed unanswered");
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(2),
        "cut after {took:?}"
    );
}

#[test]
fn a_trickled_body_is_cut_at_the_request_timeout() {
    let echo = Echo::default();
    let calls = Arc::clone(&echo.calls);
    let server = start(limits(), echo);
    let mut stream = connect(&server);
    let began = Instant::now();
    stream
        .write_all(b"POST / HTTP/1.1\r\nContent-Length: 50\r\n\r\n")
        .expect("sent");
    // A byte at a time, each well within any per-read timeout.
    let mut cut = false;
    for _ in 0..50 {
        if stream.write_all(b"a").is_err() {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        stream
            .set_read_timeout(Some(Duration::from_millis(1)))
            .expect("a timeout");
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).is_ok() {
            cut = true;
            break;
        }
    }
    let took = began.elapsed();
    assert!(cut, "the trickle was never cut");
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(3),
        "cut after {took:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_head_too_large_or_malformed_is_answered_in_the_service_s_words() {
    let server = start(limits(), Echo::default());
    let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(9000));
    assert_eq!(
        exchange(&server, long.as_bytes()),
        (431, r#"{"error":"request head too large"}"#.to_owned())
    );
    let many: String = (0..9).map(|i| format!("X-{i}: y\r\n")).collect();
    let many = format!("GET / HTTP/1.1\r\n{many}\r\n");
    assert_eq!(exchange(&server, many.as_bytes()).0, 431);
    let (status, body) = exchange(&server, b"BROKEN\r\n\r\n");
    assert_eq!(status, 400);
    assert!(body.starts_with(r#"{"error":"malformed request"#), "{body}");
}

#[test]
fn past_the_connection_cap_a_connection_is_refused_with_503_at_once() {
    let server = start(limits(), Echo::default());
    // Four connections that have sent nothing hold every place.
    let held: Vec<TcpStream> = (0..4).map(|_| connect(&server)).collect();
    let began = Instant::now();
    let (status, body) = exchange(&server, b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(
        (status, body.as_str()),
        (503, r#"{"error":"too many connections"}"#)
    );
    assert!(began.elapsed() < Duration::from_millis(300), "at once");
    drop(held);
    // The places come back as the held connections close.
    let deadline = Instant::now() + Duration::from_secs(5);
    while exchange(&server, b"GET / HTTP/1.1\r\n\r\n").0 != 200 {
        assert!(Instant::now() < deadline, "no place came back");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_refusal_at_accept_is_written_before_anything_is_read() {
    let echo = Echo {
        refuse_all: true,
        ..Echo::default()
    };
    let server = start(limits(), echo);
    let mut stream = connect(&server);
    assert_eq!(read_answer(&mut stream), (403, "not you\n".to_owned()));
}

#[test]
fn shutdown_frees_the_port_and_lets_a_request_in_flight_finish() {
    let (started_tx, started) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let echo = Echo {
        hold: Some((started_tx, Mutex::new(go_rx))),
        ..Echo::default()
    };
    let server = start(limits(), echo);
    let addr = server.local_addr();
    let mut client = connect(&server);
    client
        .write_all(b"GET /slow HTTP/1.1\r\n\r\n")
        .expect("sent");
    started
        .recv_timeout(Duration::from_secs(5))
        .expect("the handler started");
    let idle = connect(&server);
    let stopping = std::thread::spawn(move || server.shutdown());
    // The port is freed first: nothing new is accepted while the request finishes.
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting");
        std::thread::sleep(Duration::from_millis(10));
    }
    go.send(()).expect("go");
    assert_eq!(
        read_answer(&mut client).0,
        200,
        "the request in flight finished"
    );
    stopping.join().expect("shut down");
    // A connection that had sent nothing was closed, unanswered.
    let mut idle = idle;
    assert_eq!(read_answer(&mut idle), (0, String::new()));
}

#[test]
fn a_stream_is_written_as_made_and_its_producer_learns_the_peer_left() {
    struct Ticks(mpsc::Sender<std::io::Error>);
    impl Service for Ticks {
        type Conn = ();
        fn accept(&self, _: &TcpStream) -> Result<(), Response> {
            Ok(())
        }
        fn handle(&self, _: &(), _: Request) -> Response {
            let ended = self.0.clone();
            Response::stream(200, "text/event-stream", move |mut events| {
                // Big chunks, so a peer that reads none fills the socket's buffers.
                let chunk = vec![b'x'; 64 * 1024];
                let why = loop {
                    if let Err(e) = events.send(b"data: tick\n\n".to_vec()) {
                        break e;
                    }
                    if let Err(e) = events.send(chunk.clone()) {
                        break e;
                    }
                };
                let _ = ended.send(why);
            })
        }
    }
    let (ended_tx, ended) = mpsc::channel();
    let server = start(limits(), Ticks(ended_tx));
    let mut stream = connect(&server);
    stream.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("sent");
    let mut first = [0u8; 256];
    let n = stream.read(&mut first).expect("the head and a first event");
    let text = String::from_utf8_lossy(&first[..n]);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    // The peer stops reading but stays connected: cut after the write timeout.
    let began = Instant::now();
    ended
        .recv_timeout(Duration::from_secs(10))
        .expect("the producer learned the peer is gone");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    drop(stream);
}

/// Accepts after a wait for the first connection only: its check is slow (a peer lookup on a
/// busy machine), the next one's is not.
struct SlowFirst {
    seen: AtomicUsize,
    /// Told when the first (slow) check has begun.
    begun: Mutex<mpsc::Sender<()>>,
}

impl Service for SlowFirst {
    type Conn = ();

    fn accept(&self, _: &TcpStream) -> Result<(), Response> {
        if self.seen.fetch_add(1, Ordering::SeqCst) == 0 {
            let _ = self.begun.lock().expect("lock").send(());
            std::thread::sleep(Duration::from_secs(3));
        }
        Ok(())
    }

    fn handle(&self, _: &(), _: Request) -> Response {
        Response::text(200, "ok")
    }

    fn refused(&self, status: u16, why: &str) -> Response {
        Response::text(status, why)
    }
}

#[test]
fn a_slow_check_of_one_connection_does_not_hold_up_the_next() {
    let (begun, first_check) = mpsc::channel();
    let server = start(
        Limits {
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            ..limits()
        },
        SlowFirst {
            seen: AtomicUsize::new(0),
            begun: Mutex::new(begun),
        },
    );
    let _first = connect(&server);
    first_check
        .recv_timeout(Duration::from_secs(5))
        .expect("the first connection's check began");
    let started = Instant::now();
    let mut second = connect(&server);
    second
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("sent");
    let mut answer = String::new();
    second.read_to_string(&mut answer).expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the second connection waited {:?} behind the first one's check",
        started.elapsed()
    );
}

/// Streams one chunk, then waits for news that never comes, looking whether its peer left.
struct Waits {
    ended: Mutex<mpsc::Sender<Duration>>,
}

impl Service for Waits {
    type Conn = ();

    fn accept(&self, _: &TcpStream) -> Result<(), Response> {
        Ok(())
    }

    fn handle(&self, _: &(), _: Request) -> Response {
        let ended = self.ended.lock().expect("lock").clone();
        Response::stream(200, "text/event-stream", move |mut events| {
            let _ = events.send(": hello\n\n");
            let start = Instant::now();
            while !events.is_closed() && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = ended.send(start.elapsed());
        })
    }

    fn refused(&self, status: u16, why: &str) -> Response {
        Response::text(status, why)
    }
}

#[test]
fn a_stream_s_producer_learns_at_once_that_its_peer_left() {
    let (ended, producer_end) = mpsc::channel();
    let server = start(
        Limits {
            request_timeout: Duration::from_secs(30),
            ..limits()
        },
        Waits {
            ended: Mutex::new(ended),
        },
    );
    let mut stream = connect(&server);
    stream
        .write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("sent");
    let mut first = [0u8; 256];
    let read = stream.read(&mut first).expect("the head");
    assert!(
        String::from_utf8_lossy(&first[..read]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&first[..read])
    );
    drop(stream);
    let waited = producer_end
        .recv_timeout(Duration::from_secs(25))
        .expect("the producer ended");
    assert!(
        waited < Duration::from_secs(3),
        "the producer waited {waited:?} after its peer left"
    );
}
