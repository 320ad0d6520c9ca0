//! A minimal blocking HTTP/1.1 client: enough for a server that closes after each answer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use loopx_model_server::ModelServer;
use serde_json::Value;

#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends raw bytes and reads the answer up to the close.
pub fn send(server: &ModelServer, raw: &[u8]) -> RawResponse {
    let mut stream =
        TcpStream::connect(("127.0.0.1", server.port())).expect("the server accepts connections");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout can be set");
    stream.write_all(raw).expect("the request is sent");
    let mut bytes = Vec::new();
    stream
        .read_to_end(&mut bytes)
        .expect("the server answers and closes");
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("the answer has a head");
    let head = String::from_utf8(bytes[..split].to_vec()).expect("the head is UTF-8");
    let body = bytes[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a numeric status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    let response = RawResponse {
        status,
        headers,
        body,
    };
    if let Some(length) = response.header("content-length") {
        let length: usize = length.parse().expect("a numeric content-length");
        if !head.starts_with("HTTP/1.1 200") || !response.body.is_empty() {
            assert_eq!(
                response.body.len(),
                length,
                "content-length matches the body"
            );
        }
    }
    response
}

pub fn post_json(server: &ModelServer, target: &str, body: &Value) -> RawResponse {
    let body = body.to_string();
    let raw = format!(
        "POST {target} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    send(server, raw.as_bytes())
}

/// Splits an SSE body into (event name, JSON data) pairs, checking each event is well-formed.
pub fn sse_events(body: &[u8]) -> Vec<(String, Value)> {
    let text = std::str::from_utf8(body).expect("SSE is UTF-8");
    assert!(
        text.ends_with("\n\n"),
        "the stream ends with a complete event"
    );
    text.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut lines = block.lines();
            let name = lines
                .next()
                .and_then(|l| l.strip_prefix("event: "))
                .expect("an event line first");
            let data = lines
                .next()
                .and_then(|l| l.strip_prefix("data: "))
                .expect("a data line second");
            assert!(lines.next().is_none(), "one data line per event");
            let data = serde_json::from_str(data).expect("data is JSON");
            (name.to_owned(), data)
        })
        .collect()
}
