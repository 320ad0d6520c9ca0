//! Just enough HTTP/1.1 for the CLIs' clients (Node's fetch, Rust's reqwest): one request per
//! connection, bodies by `Content-Length` or chunked, and every answer sent with
//! `Content-Length` and `Connection: close`. A streamed (SSE) answer is rendered in full before
//! it is sent: the clients parse events as they arrive either way, and the scripts are small.

use std::io::{BufRead, BufReader, Read, Write};

/// Bigger requests are refused: Claude Code's requests with every tool schema are ~100 KiB.
const MAX_BODY: usize = 64 * 1024 * 1024;
const MAX_HEAD: usize = 64 * 1024;

/// A parsed request.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The target as sent, query included (`/v1/messages?beta=true`).
    pub target: String,
    /// Names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The target without its query string.
    pub fn path(&self) -> &str {
        self.target
            .split_once('?')
            .map_or(self.target.as_str(), |(path, _)| path)
    }
}

/// Why a request could not be read; the message is sent back in a 400.
#[derive(Debug)]
pub enum ReadError {
    /// The peer closed or timed out before a full request head: nothing to answer.
    Closed,
    Malformed(String),
}

impl From<std::io::Error> for ReadError {
    fn from(_: std::io::Error) -> Self {
        ReadError::Closed
    }
}

pub fn read_request(stream: impl Read) -> Result<Request, ReadError> {
    let mut reader = BufReader::new(stream);
    let mut head_len = 0;
    let request_line = read_line(&mut reader, &mut head_len)?;
    if request_line.is_empty() {
        return Err(ReadError::Closed);
    }
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed(format!(
            "malformed request line `{request_line}`"
        )));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Malformed(format!(
            "unsupported protocol `{version}`"
        )));
    }
    let mut headers = Vec::new();
    loop {
        let line = read_line(&mut reader, &mut head_len)?;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Malformed(format!(
                "malformed header line `{line}`"
            )));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut request = Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body: Vec::new(),
    };
    request.body = read_body(&mut reader, &request)?;
    Ok(request)
}

fn read_line(reader: &mut impl BufRead, head_len: &mut usize) -> Result<String, ReadError> {
    let mut line = Vec::new();
    let limit = u64::try_from(MAX_HEAD.saturating_sub(*head_len)).unwrap_or(0);
    reader.take(limit).read_until(b'\n', &mut line)?;
    *head_len += line.len();
    if !line.ends_with(b"\n") {
        return if *head_len >= MAX_HEAD {
            Err(ReadError::Malformed("request head too large".to_owned()))
        } else if line.is_empty() {
            Ok(String::new())
        } else {
            Err(ReadError::Closed)
        };
    }
    let text = String::from_utf8(line)
        .map_err(|_| ReadError::Malformed("request head is not UTF-8".to_owned()))?;
    Ok(text.trim_end_matches(['\r', '\n']).to_owned())
}

fn read_body(reader: &mut impl BufRead, request: &Request) -> Result<Vec<u8>, ReadError> {
    if let Some(encoding) = request.header("transfer-encoding") {
        if !encoding.eq_ignore_ascii_case("chunked") {
            return Err(ReadError::Malformed(format!(
                "unsupported transfer-encoding `{encoding}`"
            )));
        }
        return read_chunked(reader);
    }
    let Some(length) = request.header("content-length") else {
        return Ok(Vec::new());
    };
    let length: usize = length
        .parse()
        .map_err(|_| ReadError::Malformed(format!("bad content-length `{length}`")))?;
    if length > MAX_BODY {
        return Err(ReadError::Malformed(format!(
            "body of {length} bytes is over the {MAX_BODY}-byte limit"
        )));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut head_len = 0;
    loop {
        let line = read_line(reader, &mut head_len)?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| ReadError::Malformed(format!("bad chunk size `{size_text}`")))?;
        if size == 0 {
            // Trailers, if any, end with an empty line.
            while !read_line(reader, &mut head_len)?.is_empty() {}
            return Ok(body);
        }
        if body.len().saturating_add(size) > MAX_BODY {
            return Err(ReadError::Malformed("chunked body too large".to_owned()));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        read_line(reader, &mut head_len)?;
        // Chunk-size lines are not part of the head limit.
        head_len = 0;
    }
}

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

    pub fn write_to(&self, mut out: impl Write, head_only: bool) -> std::io::Result<()> {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            self.body.len()
        ));
        out.write_all(head.as_bytes())?;
        if !head_only {
            out.write_all(&self.body)?;
        }
        out.flush()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8]) -> Result<Request, ReadError> {
        read_request(raw)
    }

    #[test]
    fn reads_content_length_and_chunked_bodies() {
        let request =
            parse(b"POST /v1/messages?beta=true HTTP/1.1\r\nContent-Length: 2\r\nX-A: b\r\n\r\n{}")
                .expect("a well-formed request");
        assert_eq!(request.path(), "/v1/messages");
        assert_eq!(request.header("x-a"), Some("b"));
        assert_eq!(request.body, b"{}");

        let request = parse(
            b"POST /v1/responses HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        )
        .expect("a well-formed chunked request");
        assert_eq!(request.body, b"abcde");
    }

    #[test]
    fn malformed_requests_are_reported_not_panicked_on() {
        for raw in [
            &b"GARBAGE\r\n\r\n"[..],
            b"GET / SPDY/3\r\n\r\n",
            b"POST / HTTP/1.1\r\nno colon here\r\n\r\n",
            b"POST / HTTP/1.1\r\ncontent-length: lots\r\n\r\n",
            b"POST / HTTP/1.1\r\ncontent-length: 999999999999\r\n\r\n",
            b"POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n",
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            b"\xff\xfe / HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(parse(raw), Err(ReadError::Malformed(_))),
                "{:?} should be malformed",
                String::from_utf8_lossy(raw)
            );
        }
        assert!(matches!(parse(b""), Err(ReadError::Closed)));
        assert!(matches!(
            parse(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nshort"),
            Err(ReadError::Closed)
        ));
    }

    #[test]
    fn oversized_heads_are_refused() {
        let mut raw = b"GET / HTTP/1.1\r\nx: ".to_vec();
        raw.extend(std::iter::repeat_n(b'a', MAX_HEAD));
        assert!(matches!(parse(&raw), Err(ReadError::Malformed(_))));
    }
}
