//! `loopx board`: the kernel as a page in a browser — a projection, never a second truth.
//!
//! # Theory of operation
//!
//! - **Served on loopback only** (`127.0.0.1`, a random port unless `--port`), one thread per
//!   connection, at most [`MAX_CONNECTIONS`] at once. Plain HTTP/1.1 with one request per
//!   connection (`http.rs`); the page, its script and its style are embedded in the binary, so
//!   it works without a network and with no build step.
//! - **A token per run**: 128 random bits, printed in the URL the person opens. Every request
//!   needs it — the page, its assets, the state and the live stream in the query string
//!   (`EventSource` cannot send headers), a change only in the `X-Loopx-Token` header, which a
//!   page of another origin cannot send without a CORS preflight the board never grants. The
//!   `Host` header must name the board itself (no DNS rebinding) and an `Origin`, when sent,
//!   must be the board's. Answers carry `Content-Security-Policy` allowing only the board's own
//!   script and style, so a title with markup stays text even if a bug rendered it as HTML.
//! - **State** (`state.rs`) is `status --json` and `quota status --json` as the CLI prints
//!   them, plus the cards by column, the newest events and the tail of each running slice's
//!   transcript.
//! - **Live**: `/api/stream` is a server-sent event stream. It sends the state when it is
//!   opened, and again when the kernel's doorbell rings (every commit rings it) and the state
//!   changed; while a slice runs it also looks every second, for the transcript tails and the
//!   elapsed times. The page never polls.
//! - **Changes are the CLI's own commands** (`actions.rs`), run through a context that
//!   captures their JSON: the same validation, the same kernel operation, the same actor
//!   (`human:<user>`), the same refusal inside a slice.

mod actions;
mod http;
mod state;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::{ReadError, Request};

/// Connections served at once; more are answered 503.
const MAX_CONNECTIONS: usize = 64;
/// A request must arrive within this long of connecting.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// While a slice runs, the stream looks for changes this often (transcript tails, elapsed
/// times); otherwise only when the doorbell rings.
const RUNNING_REFRESH: Duration = Duration::from_secs(1);
/// A comment line keeps an idle stream open through proxies and tells us the page is gone.
const KEEPALIVE: Duration = Duration::from_secs(15);

const INDEX_HTML: &str = include_str!("board/assets/index.html");
const BOARD_JS: &str = include_str!("board/assets/board.js");
const BOARD_CSS: &str = include_str!("board/assets/board.css");

/// A running board.
pub struct Board {
    dir: PathBuf,
    token: String,
    port: u16,
    connections: AtomicUsize,
}

impl Board {
    /// Binds `127.0.0.1:port` (0: any free port) for the project in `dir`.
    pub fn bind(dir: PathBuf, port: u16) -> std::io::Result<(Board, TcpListener)> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let port = listener.local_addr()?.port();
        let board = Board {
            dir,
            token: new_token()?,
            port,
            connections: AtomicUsize::new(0),
        };
        Ok((board, listener))
    }

    /// The address to open, token included.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }

    /// Serves until the process ends.
    pub fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        let board = Arc::new(self);
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let board = Arc::clone(&board);
            if board.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                board.connections.fetch_sub(1, Ordering::SeqCst);
                let _ = http::respond(&stream, 503, "text/plain", b"too many connections\n");
                continue;
            }
            let spawned = std::thread::Builder::new()
                .name("loopx-board".into())
                .spawn({
                    let board = Arc::clone(&board);
                    move || {
                        board.connection(stream);
                        board.connections.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            if spawned.is_err() {
                board.connections.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    fn connection(&self, stream: TcpStream) {
        let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
        let request = match http::read_request(&stream) {
            Ok(request) => request,
            Err(ReadError::Closed) => return,
            Err(ReadError::Bad(status, why)) => {
                let _ = http::respond(&stream, status, "text/plain", why.as_bytes());
                return;
            }
        };
        let _ = self.answer(&stream, &request);
    }

    fn answer(&self, stream: &TcpStream, request: &Request) -> std::io::Result<()> {
        let text =
            |status, body: &str| http::respond(stream, status, "text/plain", body.as_bytes());
        if !self.host_is_ours(request) {
            return text(403, "this board answers only to its own address\n");
        }
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", path) => {
                if !self.token_matches(request.query("token")) {
                    return text(
                        401,
                        "missing or wrong token: open the address `loopx board` printed\n",
                    );
                }
                match path {
                    "/" => {
                        let page = INDEX_HTML.replace("{{TOKEN}}", &self.token);
                        http::respond(stream, 200, "text/html; charset=utf-8", page.as_bytes())
                    }
                    "/board.js" => http::respond(
                        stream,
                        200,
                        "text/javascript; charset=utf-8",
                        BOARD_JS.as_bytes(),
                    ),
                    "/board.css" => {
                        http::respond(stream, 200, "text/css; charset=utf-8", BOARD_CSS.as_bytes())
                    }
                    "/api/state" => match state::board(&self.dir) {
                        Ok(state) => json(stream, 200, &state),
                        Err(e) => json(stream, 503, &actions::error_body(&e)),
                    },
                    "/api/stream" => self.stream(stream),
                    _ => text(404, "not found\n"),
                }
            }
            ("POST", path) => {
                // Only in the header: a link or a form of another site cannot send it.
                if !self.token_matches(request.header("x-loopx-token")) {
                    return text(401, "changes need the token in the X-Loopx-Token header\n");
                }
                if let Some(origin) = request.header("origin")
                    && !self.is_ours(origin.trim_start_matches("http://"))
                {
                    return text(403, "changes are accepted only from the board's own page\n");
                }
                if !request
                    .header("content-type")
                    .is_some_and(|t| t.starts_with("application/json"))
                {
                    return text(415, "send JSON (Content-Type: application/json)\n");
                }
                let (status, body) = actions::act(&self.dir, path, &request.body);
                json(stream, status, &body)
            }
            _ => text(405, "GET or POST only\n"),
        }
    }

    /// The live stream: the state now, then whenever it changed.
    fn stream(&self, mut stream: &TcpStream) -> std::io::Result<()> {
        let Ok(project) = loopx_kernel::Project::at(&self.dir) else {
            return http::respond(stream, 503, "text/plain", b"the project is gone\n");
        };
        // Bound before the first read, so a commit in between still wakes us.
        let listener = loopx_kernel::doorbell::Listener::bind(&project);
        http::start_events(stream)?;
        let mut sent = String::new();
        let mut last_write = Instant::now();
        loop {
            let (event, key, body, running) = match state::board(&self.dir) {
                Ok(mut state) => {
                    let running = state["status"]["running"]
                        .as_array()
                        .is_some_and(|r| !r.is_empty());
                    // Sent when something but the clock changed.
                    let now = state["now"].take();
                    let key = state.to_string();
                    state["now"] = now;
                    ("state", key, state.to_string(), running)
                }
                Err(e) => {
                    let body = actions::error_body(&e).to_string();
                    ("problem", body.clone(), body, false)
                }
            };
            if key != sent {
                write!(stream, "event: {event}\ndata: {body}\n\n")?;
                stream.flush()?;
                last_write = Instant::now();
                sent = key;
            } else if last_write.elapsed() >= KEEPALIVE {
                stream.write_all(b": still here\n\n")?;
                stream.flush()?;
                last_write = Instant::now();
            }
            listener.wait(if running { RUNNING_REFRESH } else { KEEPALIVE });
        }
    }

    fn host_is_ours(&self, request: &Request) -> bool {
        request
            .header("host")
            .is_some_and(|host| self.is_ours(host))
    }

    fn is_ours(&self, host: &str) -> bool {
        host == format!("127.0.0.1:{}", self.port) || host == format!("localhost:{}", self.port)
    }

    /// Compared in constant time: the token is the only secret between a page and the board.
    fn token_matches(&self, given: Option<&str>) -> bool {
        let Some(given) = given else { return false };
        let (a, b) = (given.as_bytes(), self.token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

fn json(stream: &TcpStream, status: u16, body: &serde_json::Value) -> std::io::Result<()> {
    http::respond(
        stream,
        status,
        "application/json",
        body.to_string().as_bytes(),
    )
}

/// 128 bits from the kernel's random source, as hex.
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
