//! What the server saw: every request, with secrets removed, and what it answered.

use serde::Serialize;
use serde_json::Value;

/// One request as received, for assertions and for the `--requests-log` file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    /// 0-based arrival order.
    pub seq: u64,
    pub method: String,
    /// The target as sent, query included.
    pub target: String,
    /// Lowercased names; values of credential headers are replaced by `[redacted]`.
    pub headers: Vec<(String, String)>,
    /// The JSON body, or the body as (lossy) text when it is not JSON, or `null` when empty.
    pub body: Value,
    pub answer: Answer,
}

/// How the server answered a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Played script turn `turn` (0-based) with this HTTP status.
    Turn { turn: usize, status: u16 },
    /// The script was used up and `when_done` is `fail`: 500.
    Exhausted,
    /// A request that is not a model turn (token counting, probes), answered without the script.
    Side { status: u16 },
    /// A request the server could not understand: 400 with this message.
    BadRequest { message: String },
}

impl RecordedRequest {
    /// The path without the query string.
    pub fn path(&self) -> &str {
        self.target
            .split_once('?')
            .map_or(self.target.as_str(), |(path, _)| path)
    }

    /// The first value of a header (name in lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Headers whose values are credentials. Tests pass dummy keys, but a recorded request may end
/// up in a fixture or a log, so no key is ever kept.
pub(crate) fn redact(name: &str, value: &str) -> String {
    let secret = ["authorization", "key", "token", "cookie", "secret"]
        .iter()
        .any(|word| name.contains(word));
    if secret {
        "[redacted]".to_owned()
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_and_the_rest_kept() {
        assert_eq!(redact("x-api-key", "sk-1"), "[redacted]");
        assert_eq!(redact("authorization", "Bearer sk-1"), "[redacted]");
        assert_eq!(redact("cookie", "a=b"), "[redacted]");
        assert_eq!(redact("anthropic-version", "2023-06-01"), "2023-06-01");
    }
}
