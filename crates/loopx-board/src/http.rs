//! The board on `loopx-http`: its limits, the refusals that come before the board's own checks
//! (a slice's connection, a chunked body), and the headers every answer carries.

use std::net::TcpStream;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use loopx_http::{Limits, Request, Response};

use crate::Board;

/// One browser on loopback: a form's JSON is small, and a request must arrive whole within
/// 5 s of connecting (a trickle does not hold a connection).
pub(crate) const LIMITS: Limits = Limits {
    max_body: 64 * 1024,
    max_head: 16 * 1024,
    max_headers: 64,
    header_timeout: Duration::from_secs(5),
    request_timeout: Duration::from_secs(5),
    // A page that stops reading its stream is let go after this long.
    write_timeout: Duration::from_secs(10),
    max_connections: 64,
    // Unused: the board serves until its process ends (Ctrl-C).
    shutdown_grace: Duration::from_secs(2),
};

/// The policy every answer carries: scripts and styles only from the board itself, and one
/// inline stylesheet more, by its hash: the History page's (`loopx goal history --html`'s, the
/// same text), which the page shows in a sandboxed frame that inherits this policy. No other
/// inline style or script runs, so a title with markup stays text even if a bug rendered it as
/// HTML.
static CSP: LazyLock<String> = LazyLock::new(|| {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(loopx_app::history::page_style().as_bytes());
    let history_style = base64::engine::general_purpose::STANDARD.encode(digest);
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self' 'sha256-{history_style}'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
});

/// Headers every answer carries: nothing cached, nothing framed, no referrer (the stream's
/// address carries the session), and the policy above.
fn security_headers() -> [(&'static str, &'static str); 5] {
    [
        ("cache-control", "no-store"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("content-security-policy", CSP.as_str()),
    ]
}

pub(crate) fn respond(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
    Response::new(status, content_type, body).with_headers(&security_headers())
}

pub(crate) fn text(status: u16, body: &str) -> Response {
    respond(status, "text/plain", body)
}

pub(crate) fn json(status: u16, body: &serde_json::Value) -> Response {
    respond(status, "application/json", body.to_string())
}

/// A server-sent event stream written by `produce`.
pub(crate) fn events(produce: impl FnOnce(loopx_http::Sender) + Send + 'static) -> Response {
    Response::stream(200, "text/event-stream", produce).with_headers(&security_headers())
}

/// The board as `loopx-http` serves it.
pub(crate) struct Served(pub(crate) Arc<Board>);

impl loopx_http::Service for Served {
    type Conn = ();

    fn accept(&self, stream: &TcpStream) -> Result<(), Response> {
        // An agent shares the host's loopback: its connections would hold the person's
        // slots (and the board is the person's, never an agent's).
        if let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr())
            && loopx_os::tcp_peer_in_slice(local, peer)
        {
            return Err(text(
                403,
                "the board is the person's: connections from inside a slice are refused\n",
            ));
        }
        Ok(())
    }

    fn head(&self, _: &(), request: &Request) -> Result<(), Response> {
        match request.header("transfer-encoding") {
            Some(_) => Err(text(411, "send a Content-Length")),
            None => Ok(()),
        }
    }

    fn handle(&self, _: &(), request: Request) -> Response {
        self.0.answer(&request)
    }

    fn refused(&self, status: u16, why: &str) -> Response {
        text(status, &format!("{why}\n"))
    }
}
