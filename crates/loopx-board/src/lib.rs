//! `loopx board`: the kernel as a page in a browser — a projection, never a second truth.
//!
//! # Theory of operation
//!
//! - **Served on loopback only** (`127.0.0.1`, a random port unless `--port`) by `loopx-http`,
//!   under the limits in `http.rs`: at most 64 connections at once (more are answered 503),
//!   a request whole within 5 s of connecting, a head of 16 KiB and 64 headers, a body of
//!   64 KiB (413 past it), one request per connection. A connection from a process inside a
//!   slice (agents share the loopback) is refused at accept, so an agent cannot take the
//!   person's slots. The page, its script and its style are embedded in the binary, so it
//!   works without a network and with no build step.
//! - **A one-time code, then a session in the tab**: the printed address carries a 128-bit
//!   code in its fragment (`/#code=…`), which the browser never sends to any server. The page
//!   trades it once (`POST /api/session`) for this run's 128-bit session, keeps that in the
//!   tab's `sessionStorage` (scoped to this origin, port included) and removes the code from
//!   the address. So the address left in the browser's history opens nothing, and no cookie
//!   exists for another server on 127.0.0.1 (any port) to receive or overwrite. Enter in the
//!   board's terminal prints a fresh address for another tab or browser.
//! - Every request for data needs the session — `X-Loopx-Session` on fetches, `?session=` on
//!   the live stream (`EventSource` cannot send headers). A change also needs the
//!   `X-Loopx-Board: 1` header and a JSON body, which a page of another origin cannot send
//!   without a CORS preflight the board never grants. The `Host` header must name the board
//!   itself (no DNS rebinding) and an `Origin`, when sent, must be the board's. The page, its
//!   script and its style hold no data and are served to anyone who can reach the port.
//!   Answers carry `Content-Security-Policy` allowing only the board's own script and style, so
//!   a title with markup stays text even if a bug rendered it as HTML. Changes are made one at
//!   a time (a double click answers a gate once).
//! - **State** (`state.rs`) is the application layer's status and quota snapshots (what
//!   `status --json` and `quota status --json` print), plus the cards by column, the newest events and the tail of each running slice's
//!   transcript.
//! - **Live**: `/api/stream` is a server-sent event stream. It sends the state when it is
//!   opened, and again when the kernel's doorbell rings (every commit rings it) and the state
//!   changed; while a slice runs it also looks every second, for the transcript tails and the
//!   elapsed times. The page never polls.
//! - **History** (`history.rs`): `/api/history/<goal>` is the page `loopx goal history --html`
//!   writes, made by the same function, behind the session like every read; the goal is
//!   parsed as a goal id before anything is read. The board's page shows it in a frame
//!   without scripts; the policy allows that page's one inline stylesheet by its hash.
//! - **Changes are the application layer's operations** (`actions.rs`), the ones the CLI's
//!   commands call: the same validation, the same kernel operation and git work, the same
//!   actor (`human:<user>`, fixed when the board starts).
//! - **`--all`** (`all.rs`): the same listener, session and checks, serving every project in
//!   the person's registry. The state is each project's glance and board; a change names its
//!   project by id (`/api/projects/<id>/answer`) and goes to that project's store alone,
//!   opened for it and closed after. With no doorbell for all of them, the stream looks every
//!   [`ALL_REFRESH`].

mod actions;
pub mod all;
mod history;
mod http;
mod state;

use std::net::TcpListener;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http::{json, respond, text};
use loopx_http::{Request, Response};
/// While a slice runs, the stream looks for changes this often (transcript tails, elapsed
/// times); otherwise only when the doorbell rings.
const RUNNING_REFRESH: Duration = Duration::from_secs(1);
/// The shortest time between two builds of the state for one stream.
const MIN_REFRESH: Duration = Duration::from_millis(250);
/// A comment line keeps an idle stream open through proxies and tells us the page is gone.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// How often a waiting stream looks whether its page closed it.
const CLOSED_CHECK: Duration = Duration::from_millis(500);
/// How often the stream of `--all` looks for changes in any project.
const ALL_REFRESH: Duration = Duration::from_secs(2);

const INDEX_HTML: &str = include_str!("assets/index.html");
const BOARD_JS: &str = include_str!("assets/board.js");
const BOARD_CSS: &str = include_str!("assets/board.css");

/// What a board serves.
enum Scope {
    /// One project: the operations, as the person who started the board.
    One(Box<loopx_app::App>),
    /// Every registered project (`--all`).
    All(all::Projects),
}

/// A running board.
pub struct Board {
    scope: Scope,
    /// Codes printed and not yet traded for the session: each is good once.
    codes: Mutex<Vec<String>>,
    /// What a page holds once it traded a code.
    session: String,
    /// Changes are made one at a time.
    changing: Mutex<()>,
    port: u16,
}

impl std::fmt::Debug for Board {
    /// The port only: the session and the codes are secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Board {
    /// Binds `127.0.0.1:port` (0: any free port) for the project `app` works on.
    pub fn bind(app: loopx_app::App, port: u16) -> std::io::Result<(Board, TcpListener)> {
        Board::bind_scope(Scope::One(Box::new(app)), port)
    }

    /// Binds `127.0.0.1:port` for every project in the registry (`loopx board --all`).
    pub fn bind_all(projects: all::Projects, port: u16) -> std::io::Result<(Board, TcpListener)> {
        Board::bind_scope(Scope::All(projects), port)
    }

    fn bind_scope(scope: Scope, port: u16) -> std::io::Result<(Board, TcpListener)> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let port = listener.local_addr()?.port();
        let board = Board {
            scope,
            codes: Mutex::new(Vec::new()),
            session: new_secret()?,
            changing: Mutex::new(()),
            port,
        };
        Ok((board, listener))
    }

    /// A new address to open, with a code good for one opening.
    pub fn new_url(&self) -> std::io::Result<String> {
        let code = new_secret()?;
        let url = format!("http://127.0.0.1:{}/#code={code}", self.port);
        self.codes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(code);
        Ok(url)
    }

    /// Serves until the process ends.
    pub fn serve(self: Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        loopx_http::Server::start(listener, http::LIMITS, http::Served(self))?.wait();
        Ok(())
    }

    fn answer(self: &Arc<Self>, request: &Request) -> Response {
        if !self.host_is_ours(request) {
            return text(403, "this board answers only to its own address\n");
        }
        let page = |body: &str, kind| respond(200, kind, body);
        match (request.method.as_str(), request.path.as_str()) {
            // No data: the page needs a session for everything it shows.
            ("GET", "/") => return page(INDEX_HTML, "text/html; charset=utf-8"),
            ("GET", "/board.js") => return page(BOARD_JS, "text/javascript; charset=utf-8"),
            ("GET", "/board.css") => return page(BOARD_CSS, "text/css; charset=utf-8"),
            _ => {}
        }
        if request.method == "POST" {
            // A header a link or a form of another site cannot send.
            if request.header("x-loopx-board") != Some("1") {
                return text(403, "changes need the X-Loopx-Board: 1 header\n");
            }
            // The page's origin exactly: `http://` and this host and port, nothing else.
            if let Some(origin) = request.header("origin")
                && !origin
                    .strip_prefix("http://")
                    .is_some_and(|host| self.is_ours(host))
            {
                return text(403, "changes are accepted only from the board's own page\n");
            }
            if !request
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json"))
            {
                return text(415, "send JSON (Content-Type: application/json)\n");
            }
            if request.path == "/api/session" {
                return self.trade_code(&request.body);
            }
        }
        let session = match request.path.as_str() {
            "/api/stream" => request.query("session"),
            _ => request.header("x-loopx-session"),
        };
        if !session.is_some_and(|s| same_secret(s, &self.session)) {
            return text(
                401,
                "no session: open an address `loopx board` printed (each works once; Enter in its terminal prints another)\n",
            );
        }
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", path) => match path {
                "/api/state" => match self.state() {
                    Ok(state) => json(200, &state),
                    Err(problem) => json(503, &problem),
                },
                "/api/stream" => {
                    let board = Arc::clone(self);
                    http::events(move |mut events| {
                        let _ = board.stream(&mut events);
                    })
                }
                path => self.history(path),
            },
            ("POST", path) => {
                let _one_at_a_time = self.changing.lock().unwrap_or_else(PoisonError::into_inner);
                let (status, body) = match &self.scope {
                    Scope::One(app) => actions::act(app, path, &request.body),
                    Scope::All(projects) => all::act(projects, path, &request.body),
                };
                json(status, &body)
            }
            _ => text(405, "GET or POST only\n"),
        }
    }

    /// The History page at `path` (`/api/history/<goal>`, with `--all`
    /// `/api/projects/<id>/history/<goal>`), or 404 for any other path.
    fn history(&self, path: &str) -> Response {
        match &self.scope {
            Scope::One(app) => match path.strip_prefix("/api/history/") {
                Some(goal) => history::page(app, goal),
                None => text(404, "not found\n"),
            },
            Scope::All(projects) => all::history(projects, path),
        }
    }

    /// The state the page shows: one project's board, or every registered project's.
    fn state(&self) -> Result<serde_json::Value, serde_json::Value> {
        match &self.scope {
            Scope::One(app) => state::board(app).map_err(|e| actions::error_body(&e)),
            Scope::All(projects) => all::state(projects),
        }
    }

    /// The live stream: the state now, then whenever it changed, until the page is gone.
    fn stream(&self, events: &mut loopx_http::Sender) -> std::io::Result<()> {
        // Bound before the first read, so a commit in between still wakes us. `--all` has
        // no one doorbell: it looks every `ALL_REFRESH`.
        let listener = match &self.scope {
            Scope::One(app) => Some(loopx_kernel::doorbell::Listener::bind(app.project())),
            Scope::All(_) => None,
        };
        let mut sent = String::new();
        let mut last_write = Instant::now();
        loop {
            let built = Instant::now();
            let (event, key, body, running) = match self.state() {
                Ok(mut state) => {
                    let running = match &self.scope {
                        Scope::One(_) => state["status"]["running"]
                            .as_array()
                            .is_some_and(|r| !r.is_empty()),
                        Scope::All(_) => true,
                    };
                    // Sent when something but the clock changed.
                    let key = without_clock(&mut state);
                    ("state", key, state.to_string(), running)
                }
                Err(problem) => {
                    let body = problem.to_string();
                    ("problem", body.clone(), body, false)
                }
            };
            let build_time = built.elapsed();
            if key != sent {
                events.send(format!("event: {event}\ndata: {body}\n\n"))?;
                last_write = Instant::now();
                sent = key;
            } else if last_write.elapsed() >= KEEPALIVE {
                events.send(": still here\n\n")?;
                last_write = Instant::now();
            }
            let until = Instant::now()
                + match (&self.scope, running) {
                    (Scope::All(_), _) => ALL_REFRESH,
                    (Scope::One(_), true) => RUNNING_REFRESH,
                    (Scope::One(_), false) => KEEPALIVE,
                };
            if !wait_for_news(listener.as_ref(), events, until) {
                return Ok(());
            }
            // Busy agents ring many times a second: the state is built again no sooner than
            // 4× what building it took (and 250 ms), so a big project's board stays a small
            // share of a core per open page.
            let gap = MIN_REFRESH.max(build_time * 4);
            std::thread::sleep(gap.saturating_sub(built.elapsed()));
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

    /// A printed code, once, for the session.
    fn trade_code(&self, body: &[u8]) -> Response {
        let code = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["code"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let traded = {
            let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            let found = codes.iter().position(|c| same_secret(&code, c));
            found.map(|i| codes.swap_remove(i)).is_some()
        };
        if !traded {
            return json(
                401,
                &serde_json::json!({"error": "this address was used already or is wrong: press Enter in the terminal of `loopx board` for a new one", "code": "refused"}),
            );
        }
        json(200, &serde_json::json!({"session": self.session}))
    }
}

/// Waits until `until` or the doorbell rings (`listener`; none with `--all`), looking every
/// `CLOSED_CHECK` whether the page is still there; `false` when it is gone, so a closed stream
/// ends its thread now, not at its next keep-alive.
fn wait_for_news(
    listener: Option<&loopx_kernel::doorbell::Listener>,
    events: &loopx_http::Sender,
    until: Instant,
) -> bool {
    loop {
        if events.is_closed() {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        let step = left.min(CLOSED_CHECK);
        let rang = match listener {
            Some(listener) => listener.wait(step),
            None => {
                std::thread::sleep(step);
                false
            }
        };
        if left.is_zero() || rang {
            return true;
        }
    }
}

/// The state as a key that changes when anything but the clock does (each project's clock
/// too, with `--all`); the state keeps its clocks.
fn without_clock(state: &mut serde_json::Value) -> String {
    fn clocks(state: &mut serde_json::Value) -> Vec<&mut serde_json::Value> {
        let mut clocks = Vec::new();
        let Some(fields) = state.as_object_mut() else {
            return clocks;
        };
        let mut projects = None;
        for (key, value) in fields.iter_mut() {
            match key.as_str() {
                "now" => clocks.push(value),
                "projects" => projects = value.as_array_mut(),
                _ => {}
            }
        }
        for project in projects.into_iter().flatten() {
            if let Some(now) = project
                .get_mut("board")
                .and_then(|b| b.as_object_mut())
                .and_then(|b| b.get_mut("now"))
            {
                clocks.push(now);
            }
        }
        clocks
    }
    let taken: Vec<serde_json::Value> = clocks(state).into_iter().map(|c| c.take()).collect();
    let key = state.to_string();
    for (clock, now) in clocks(state).into_iter().zip(taken) {
        *clock = now;
    }
    key
}

/// Compared in constant time: the code and the session are the only secrets between a page and
/// the board.
fn same_secret(given: &str, secret: &str) -> bool {
    let (a, b) = (given.as_bytes(), secret.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 128 bits from the kernel's random source, as hex.
fn new_secret() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(hex::encode(bytes))
}
