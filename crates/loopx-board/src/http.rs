//! Just enough HTTP/1.1 for one browser on loopback: one request per connection, a body only
//! by `Content-Length` (at most [`MAX_BODY`]), every answer closing the connection. The request
//! head is parsed by `httparse` (hyper's own parser); the limits, the refusals and the one
//! request per connection are this file's. Anything else is refused with a status, never
//! guessed at.

use std::io::{Read, Write};

/// The request line and headers together.
const MAX_HEAD: usize = 16 * 1024;
/// A form's JSON: a todo title, an answer.
pub(crate) const MAX_BODY: usize = 64 * 1024;
/// Headers a request may carry: a browser sends a dozen or two.
const MAX_HEADERS: usize = 64;

#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Query parameters, percent-decoded.
    pub(crate) query: Vec<(String, String)>,
    /// Names lowercased.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request was not read: answered with this status and message, or not at all.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer went away or sent nothing.
    Closed,
    Bad(u16, &'static str),
}

pub(crate) fn read_request(stream: impl Read) -> Result<Request, ReadError> {
    let mut stream = stream.take((MAX_HEAD + MAX_BODY) as u64);
    let mut buf: Vec<u8> = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    let (head_len, mut request) = loop {
        let n = stream.read(&mut chunk).map_err(|_| ReadError::Closed)?;
        if n == 0 {
            // Nothing, or a head cut short: the peer went away.
            return Err(ReadError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(len)) if len > MAX_HEAD => {
                return Err(ReadError::Bad(431, "request head too large"));
            }
            Ok(httparse::Status::Complete(len)) => break (len, request_of(&parsed)?),
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(ReadError::Bad(431, "request head too large"));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ReadError::Bad(431, "too many headers"));
            }
            Err(httparse::Error::Version) => return Err(ReadError::Bad(505, "HTTP/1.x only")),
            Err(_) => return Err(ReadError::Bad(400, "malformed request")),
        }
    };
    if request.header("transfer-encoding").is_some() {
        return Err(ReadError::Bad(411, "send a Content-Length"));
    }
    let length = match request.header("content-length") {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| ReadError::Bad(400, "bad Content-Length"))?,
    };
    if length > MAX_BODY {
        return Err(ReadError::Bad(413, "body too large"));
    }
    // What came with the head, then the rest; anything after the body is not read (one
    // request per connection).
    let mut body: Vec<u8> = buf[head_len..].iter().copied().take(length).collect();
    let missing = length - body.len();
    if missing > 0 {
        let mut rest = vec![0; missing];
        stream
            .read_exact(&mut rest)
            .map_err(|_| ReadError::Closed)?;
        body.extend_from_slice(&rest);
    }
    request.body = body;
    Ok(request)
}

/// The request `httparse` read: its target split into path and query, header names lowercased.
fn request_of(parsed: &httparse::Request<'_, '_>) -> Result<Request, ReadError> {
    let (Some(method), Some(target)) = (parsed.method, parsed.path) else {
        return Err(ReadError::Bad(400, "malformed request line"));
    };
    let headers = parsed
        .headers
        .iter()
        .map(|h| {
            let value = std::str::from_utf8(h.value)
                .map_err(|_| ReadError::Bad(400, "request head is not UTF-8"))?;
            Ok((h.name.to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect::<Result<Vec<_>, ReadError>>()?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method: method.to_owned(),
        path: percent_decode(path),
        query: parse_query(query),
        headers,
        body: Vec::new(),
    })
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(name), percent_decode(value))
        })
        .collect()
}

/// A query or path as a form encodes it: `+` is a space, `%2B` a plus.
fn percent_decode(text: &str) -> String {
    loopx_vocab::percent_decoded(&text.replace('+', " "))
}

/// Headers every answer carries: nothing cached, nothing framed, no referrer (the stream's
/// address carries the session), scripts and styles only from the board itself.
pub(crate) const SECURITY_HEADERS: &str = "Cache-Control: no-store\r\n\
X-Content-Type-Options: nosniff\r\n\
Referrer-Policy: no-referrer\r\n\
X-Frame-Options: DENY\r\n\
Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'\r\n";

pub(crate) fn respond(
    mut stream: impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{SECURITY_HEADERS}Connection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// The head of a server-sent event stream; events follow until the browser goes away.
pub(crate) fn start_events(mut stream: impl Write) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{SECURITY_HEADERS}Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_with_its_query_and_body() {
        let raw = b"POST /api/answer?token=ab%20c&x HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 4\r\n\r\n{}\r\n";
        let request = read_request(&raw[..]).expect("a request");
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/api/answer");
        assert_eq!(request.query("token"), Some("ab c"));
        assert_eq!(request.query("x"), Some(""));
        assert_eq!(request.header("host"), Some("127.0.0.1:9"));
        assert_eq!(request.body, b"{}\r\n");
    }

    #[test]
    fn oversized_or_chunked_requests_are_refused() {
        let big = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(
            read_request(big.as_bytes()),
            Err(ReadError::Bad(431, _))
        ));
        let body = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert!(matches!(
            read_request(body.as_bytes()),
            Err(ReadError::Bad(413, _))
        ));
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(
            read_request(&chunked[..]),
            Err(ReadError::Bad(411, _))
        ));
        assert!(matches!(read_request(&b""[..]), Err(ReadError::Closed)));
        let cut_short = b"GET / HTTP/1.1\r\nHost: 127.0.0.1";
        assert!(matches!(
            read_request(&cut_short[..]),
            Err(ReadError::Closed)
        ));
        let http2 = b"GET / HTTP/2.0\r\n\r\n";
        assert!(matches!(
            read_request(&http2[..]),
            Err(ReadError::Bad(505 | 400, _))
        ));
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: y\r\n"))
            .collect();
        let many = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert!(matches!(
            read_request(many.as_bytes()),
            Err(ReadError::Bad(431, _))
        ));
        assert_eq!(percent_decode("a+b%2Bc%zz%4"), "a b+c%zz%4");
    }
}
