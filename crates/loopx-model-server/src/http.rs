//! The answers this server gives, served by `loopx-http` (one request per connection; a
//! streamed answer is rendered whole, then sent with `Content-Length`: the clients parse
//! events as they arrive either way, and the scripts are small).

pub use loopx_http::Request;

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
