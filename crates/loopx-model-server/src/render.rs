//! Renders a scripted [`Reply`](crate::Reply) in each API's wire format.

mod anthropic;
mod chat;
mod openai;

pub(crate) use anthropic::{anthropic_message, count_tokens};
pub(crate) use chat::chat_completion;
pub(crate) use openai::openai_response;

use serde_json::Value;

/// Appends one server-sent event.
fn push_event(out: &mut String, name: &str, data: &Value) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

/// Splits `text` into pieces of at most `size` bytes on character boundaries, so streaming
/// clients have to join deltas the way they would with a real model.
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_respect_char_boundaries_and_rejoin() {
        let text = "héllo wörld ✓ done";
        for size in 1..8 {
            let parts = pieces(text, size);
            assert_eq!(parts.concat(), text);
            assert!(parts.iter().all(|p| !p.is_empty()));
        }
        assert!(pieces("", 4).is_empty());
    }
}
