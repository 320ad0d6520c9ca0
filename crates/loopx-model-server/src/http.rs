//! The answers this server gives, served by `loopx-http` (one request per connection; a
//! streamed answer is rendered whole, then sent with `Content-Length`: the clients parse
//! events as they arrive either way, and the scripts are small).

pub use loopx_http::Request;

use std::time::Duration;

/// Generous, for a test server on loopback (this one and the scripted Lark server): the real
/// agent CLIs' requests with every tool schema are ~100 KiB, a Lark batch is 500 records; a
/// stuck client is still let go, so a test cannot pin a connection.
pub const LIMITS: loopx_http::Limits = loopx_http::Limits {
    max_body: 64 * 1024 * 1024,
    max_head: 64 * 1024,
    max_headers: 128,
    header_timeout: Duration::from_secs(30),
    request_timeout: Duration::from_secs(60),
    write_timeout: Duration::from_secs(30),
    max_connections: 256,
    shutdown_grace: Duration::from_secs(2),
};

/// An answer about to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: body.to_string().into_bytes(),
        }
    }

    pub fn sse(body: String) -> Self {
        Self {
            status: 200,
            headers: vec![
                ("content-type".to_owned(), "text/event-stream".to_owned()),
                ("cache-control".to_owned(), "no-cache".to_owned()),
            ],
            body: body.into_bytes(),
        }
    }
}

impl From<Response> for loopx_http::Response {
    fn from(response: Response) -> Self {
        loopx_http::Response {
            status: response.status,
            headers: response.headers,
            body: loopx_http::Body::Full(response.body),
        }
    }
}
