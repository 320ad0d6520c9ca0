//! The listener (`loopx-http`, under [`crate::http::LIMITS`]) and the routing from a request to a script
//! turn or a side answer.

use std::fs::File;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};

use crate::errors::StartError;
use crate::http::{Request, Response};
use crate::record::{Answer, RecordedRequest, redact};
use crate::render::{anthropic_message, chat_completion, count_tokens, openai_response};
use crate::script::{Script, Turn, WhenDone};

/// A running scripted model server on 127.0.0.1. Dropping it stops the listener.
#[derive(Debug)]
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: Option<loopx_http::Server>,
}

#[derive(Debug)]
struct Shared {
    script: Script,
    next_turn: Mutex<usize>,
    next_seq: AtomicU64,
    requests: Mutex<Vec<RecordedRequest>>,
    log: Option<Mutex<File>>,
}

/// Which API a model request speaks.
#[derive(Debug, Clone, Copy)]
enum Api {
    Anthropic,
    OpenAi,
    Chat,
}

impl ModelServer {
    /// Starts a server for `script` on an ephemeral port.
    pub fn start(script: Script) -> Result<Self, StartError> {
        Self::start_with(script, 0, None)
    }

    /// Starts a server on `port` (0 = any free one), appending each request as one JSON line
    /// to `request_log` if given.
    pub fn start_with(
        script: Script,
        port: u16,
        request_log: Option<&Path>,
    ) -> Result<Self, StartError> {
        script.check()?;
        let log = match request_log {
            Some(path) => Some(Mutex::new(
                File::options()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| StartError::RequestLog {
                        path: path.to_owned(),
                        source,
                    })?,
            )),
            None => None,
        };
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|source| StartError::Bind { port, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { port, source })?;
        let shared = Arc::new(Shared {
            script,
            next_turn: Mutex::new(0),
            next_seq: AtomicU64::new(0),
            requests: Mutex::new(Vec::new()),
            log,
        });
        let server =
            loopx_http::Server::start(listener, crate::http::LIMITS, Served(Arc::clone(&shared)))
                .map_err(StartError::Thread)?;
        Ok(Self {
            addr,
            shared,
            server: Some(server),
        })
    }

    /// `http://127.0.0.1:PORT`, the value for `ANTHROPIC_BASE_URL`; Codex wants `{url}/v1`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many script turns have been played.
    pub fn turns_played(&self) -> usize {
        *lock(&self.shared.next_turn)
    }

    /// Blocks until the listener stops, which only happens when the server is dropped; for the
    /// binary, which runs until it is killed.
    pub fn wait(mut self) {
        if let Some(server) = self.server.take() {
            server.wait();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave these plain values half-written.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The server as `loopx-http` serves it; dropping the [`ModelServer`] (and so its
/// `loopx_http::Server`) frees the port.
struct Served(Arc<Shared>);

impl loopx_http::Service for Served {
    type Conn = ();

    fn accept(&self, _: &std::net::TcpStream) -> Result<(), loopx_http::Response> {
        Ok(())
    }

    fn handle(&self, _: &(), request: Request) -> loopx_http::Response {
        let seq = self.0.next_seq.fetch_add(1, Ordering::SeqCst);
        let (response, body, answer) = self.0.answer(&request, seq);
        self.0.record(seq, &request, body, answer);
        response.into()
    }

    /// A request that could not be read is answered and recorded like a malformed one.
    fn refused(&self, status: u16, why: &str) -> loopx_http::Response {
        let seq = self.0.next_seq.fetch_add(1, Ordering::SeqCst);
        let message = why.to_owned();
        self.0.record(
            seq,
            &Request::default(),
            Value::Null,
            Answer::BadRequest { message },
        );
        Response::json(status, &error_body("invalid_request_error", why)).into()
    }
}

impl Shared {
    /// Chooses the answer to one request.
    fn answer(&self, request: &Request, seq: u64) -> (Response, Value, Answer) {
        let body = parse_body(&request.body);
        let api = match (request.method.as_str(), request.path.as_str()) {
            ("POST", "/v1/messages") => Api::Anthropic,
            ("POST", "/v1/responses") => Api::OpenAi,
            ("POST", "/v1/chat/completions" | "/chat/completions") => Api::Chat,
            ("POST", "/v1/messages/count_tokens") => {
                let Ok(json) = &body else {
                    return side(bad_request("body is not JSON"), body);
                };
                return side(count_tokens(json), body);
            }
            ("GET" | "HEAD", "/" | "/v1" | "/health") => {
                return side(Response::json(200, &json!({"ok": true})), body);
            }
            ("GET", "/v1/models") => return side(models(), body),
            (_, path) => {
                let message = format!("no route for {} {path}", request.method);
                let not_found = Response::json(404, &error_body("not_found_error", &message));
                return side(not_found, body);
            }
        };
        let json = match body {
            Ok(json) if json.is_object() => json,
            Ok(other) => {
                let message = "body is not a JSON object".to_owned();
                return (bad_request(&message), other, Answer::BadRequest { message });
            }
            Err(text) => {
                let message = "body is not JSON".to_owned();
                return (bad_request(&message), text, Answer::BadRequest { message });
            }
        };
        let stream = json["stream"].as_bool().unwrap_or(false);
        let model = json["model"].as_str().unwrap_or("mock-model").to_owned();
        let Some((turn, index)) = self.take_turn() else {
            let response = Response::json(500, &error_body("api_error", "script exhausted"));
            return (response, json, Answer::Exhausted);
        };
        let response = match (turn, api) {
            (Turn::Reply(reply), Api::Anthropic) => anthropic_message(reply, &model, stream, seq),
            (Turn::Reply(reply), Api::OpenAi) => openai_response(reply, &model, stream, seq),
            (Turn::Reply(reply), Api::Chat) => chat_completion(reply, &model, stream, seq),
            (Turn::Error(error), _) => {
                let mut response = Response::json(error.status, &error.body);
                response.headers.extend(error.headers.clone());
                response
            }
        };
        let answer = Answer::Turn {
            turn: index,
            status: response.status,
        };
        (response, json, answer)
    }

    /// The next turn to play and its index, or `None` when the script is used up and says fail.
    fn take_turn(&self) -> Option<(&Turn, usize)> {
        let mut next = lock(&self.next_turn);
        let last = self.script.turns.len().checked_sub(1)?;
        let index = if *next <= last {
            *next
        } else if self.script.when_done == WhenDone::RepeatLast {
            last
        } else {
            return None;
        };
        *next += 1;
        Some((self.script.turns.get(index)?, index))
    }

    fn record(&self, seq: u64, request: &Request, body: Value, answer: Answer) {
        let recorded = RecordedRequest {
            seq,
            method: request.method.clone(),
            target: request.target.clone(),
            headers: request
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), redact(name, value)))
                .collect(),
            body,
            answer,
        };
        if let Some(log) = &self.log
            && let Ok(line) = serde_json::to_string(&recorded)
        {
            // The log is a debugging aid; a full disk must not fail the request.
            let _ = writeln!(lock(log), "{line}");
        }
        lock(&self.requests).push(recorded);
    }
}

/// The body as JSON, or as text (`Err`) when it is not JSON; an empty body is JSON `null`.
fn parse_body(body: &[u8]) -> Result<Value, Value> {
    if body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(body).map_err(|_| Value::String(String::from_utf8_lossy(body).into()))
}

fn side(response: Response, body: Result<Value, Value>) -> (Response, Value, Answer) {
    let status = response.status;
    let body = body.unwrap_or_else(|text| text);
    (response, body, Answer::Side { status })
}

fn bad_request(message: &str) -> Response {
    Response::json(400, &error_body("invalid_request_error", message))
}

/// An error body both CLIs can read: Anthropic's `type`/`error` and OpenAI's `error.message`.
fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn models() -> Response {
    Response::json(
        200,
        &json!({"object": "list", "has_more": false, "data": [
            {"id": "mock-model", "type": "model", "object": "model", "display_name": "Mock model"}
        ]}),
    )
}
