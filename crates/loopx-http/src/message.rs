//! The plain request a handler gets and the response it gives back, and their conversion from
//! and to hyper's types.

use http_body_util::channel::{self, Channel};
use http_body_util::{Either, Full};
use hyper::body::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A request read whole, under the limits.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// The target as sent, query included (`/v1/messages?beta=true`).
    pub target: String,
    /// The target's path, percent-decoded (`+` is a space, as a form encodes it).
    pub path: String,
    /// Query parameters, percent-decoded, in the order sent.
    pub query: Vec<(String, String)>,
    /// Names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        find(&self.headers, name)
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        find(&self.query, name)
    }

    /// The head hyper read; the body comes later.
    pub(crate) fn of(parts: &hyper::http::request::Parts) -> Request {
        let target = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.to_string(), |p| p.as_str().to_owned());
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let query = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                (form_decoded(name), form_decoded(value))
            })
            .collect();
        let headers = parts
            .headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes());
                (name.as_str().to_owned(), value.trim().to_owned())
            })
            .collect();
        Request {
            method: parts.method.as_str().to_owned(),
            path: form_decoded(path),
            query,
            headers,
            target,
            body: Vec::new(),
        }
    }
}

fn find<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A query or path as a form encodes it: `+` is a space, `%2B` a plus.
fn form_decoded(text: &str) -> String {
    loopx_vocab::percent_decoded(&text.replace('+', " "))
}

/// An answer: its status, headers (`Content-Length` is added) and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

/// A body whole, or one written as it is made (server-sent events).
pub enum Body {
    Full(Vec<u8>),
    /// Run on a blocking thread once the head is sent; it ends the body by returning, and
    /// learns the peer is gone when [`Sender::send`] fails.
    Stream(Box<dyn FnOnce(Sender) + Send>),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Full(bytes) => write!(f, "Full({} bytes)", bytes.len()),
            Body::Stream(_) => f.write_str("Stream"),
        }
    }
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body: Body::Full(body.into()),
        }
    }

    pub fn text(status: u16, text: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", text)
    }

    /// A body written by `produce` as it goes, on a blocking thread of its own.
    pub fn stream(
        status: u16,
        content_type: &str,
        produce: impl FnOnce(Sender) + Send + 'static,
    ) -> Response {
        Response {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body: Body::Stream(Box::new(produce)),
        }
    }

    pub fn with_headers(mut self, headers: &[(&str, &str)]) -> Response {
        let owned = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()));
        self.headers.extend(owned);
        self
    }

    /// Hyper's response; a stream's producer is started here.
    pub(crate) fn into_hyper(self) -> hyper::Response<OutBody> {
        let mut out = hyper::Response::new(match self.body {
            Body::Full(bytes) => Either::Left(Full::new(Bytes::from(bytes))),
            Body::Stream(produce) => {
                // One chunk in flight: a peer that stops reading stops the producer.
                let (tx, body) = Channel::new(1);
                let runtime = tokio::runtime::Handle::current();
                let closed = Arc::new(AtomicBool::new(false));
                let sender = Sender {
                    tx,
                    runtime,
                    closed: Arc::clone(&closed),
                };
                tokio::task::spawn_blocking(move || produce(sender));
                Either::Right(Watched { body, closed })
            }
        });
        *out.status_mut() = hyper::StatusCode::from_u16(self.status)
            .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        for (name, value) in &self.headers {
            if let (Ok(name), Ok(value)) = (
                hyper::header::HeaderName::from_bytes(name.as_bytes()),
                hyper::header::HeaderValue::from_str(value),
            ) {
                out.headers_mut().append(name, value);
            }
        }
        out
    }

    /// The answer as bytes, for a connection hyper never read from (refused at accept) or
    /// gave up on: `Connection: close`, a stream's body left out.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let body: &[u8] = match &self.body {
            Body::Full(bytes) => bytes,
            Body::Stream(_) => &[],
        };
        let reason = hyper::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Status");
        let mut head = format!("HTTP/1.1 {} {reason}\r\n", self.status);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        ));
        [head.as_bytes(), body].concat()
    }
}

/// Writes a streamed body.
#[derive(Debug)]
pub struct Sender {
    tx: channel::Sender<Bytes>,
    runtime: tokio::runtime::Handle,
    /// Set once the connection let go of the body: the peer is gone.
    closed: Arc<AtomicBool>,
}

impl Sender {
    /// Waits while the peer is behind; `Err` when it is gone (or cut for not reading).
    pub fn send(&mut self, bytes: impl Into<Vec<u8>>) -> std::io::Result<()> {
        let chunk = Bytes::from(bytes.into());
        self.runtime
            .block_on(self.tx.send_data(chunk))
            .map_err(|_| std::io::ErrorKind::BrokenPipe.into())
    }
}

impl Sender {
    /// Whether the peer is gone: a producer that waits between chunks (for news to send)
    /// looks, so that it ends with its connection rather than at its next write.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// The body hyper sends.
pub(crate) type OutBody = Either<Full<Bytes>, Watched>;

/// A streamed body that says when the connection let go of it ([`Sender::is_closed`]).
pub(crate) struct Watched {
    body: Channel<Bytes>,
    closed: Arc<AtomicBool>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

impl hyper::body::Body for Watched {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
