//! Anthropic Messages API (`POST /v1/messages`): the SSE event sequence
//! `message_start`, `ping`, per block `content_block_start` / `_delta` / `_stop`,
//! `message_delta` (stop reason, output tokens), `message_stop`; or one JSON message.

use serde_json::{Value, json};

use super::{pieces, push_event};
use crate::http::Response;
use crate::script::{Reply, ToolKind};

/// Answers a Messages request with `reply`. `seq` makes the message and tool-use ids unique.
pub(crate) fn anthropic_message(reply: &Reply, model: &str, stream: bool, seq: u64) -> Response {
    let blocks = content_blocks(reply, seq);
    let stop_reason = if reply.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let usage = json!({
        "input_tokens": reply.usage.input_tokens,
        "output_tokens": reply.usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    });
    let id = format!("msg_mock{seq:04}");
    if !stream {
        return Response::json(
            200,
            &json!({
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop_reason, "stop_sequence": null,
                "usage": usage,
            }),
        );
    }
    let mut out = String::new();
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    push_event(
        &mut out,
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": start_usage,
        }}),
    );
    push_event(&mut out, "ping", &json!({"type": "ping"}));
    for (index, block) in blocks.iter().enumerate() {
        push_block(&mut out, index, block);
    }
    push_event(
        &mut out,
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": reply.usage.output_tokens}}),
    );
    push_event(&mut out, "message_stop", &json!({"type": "message_stop"}));
    let mut response = Response::sse(out);
    response
        .headers
        .push(("request-id".to_owned(), format!("req_mock{seq:04}")));
    response
}

fn content_blocks(reply: &Reply, seq: u64) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(text) = &reply.text {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let input = match call.kind {
            ToolKind::Function => call.input.clone(),
            ToolKind::Custom => json!({"input": call.input}),
        };
        blocks.push(json!({
            "type": "tool_use", "id": format!("toolu_mock{seq:04}_{i}"),
            "name": call.name, "input": input,
        }));
    }
    blocks
}

/// One content block as start, deltas, stop. A tool's input starts empty and arrives as
/// `input_json_delta` pieces, as the real API sends it.
fn push_block(out: &mut String, index: usize, block: &Value) {
    let (start, deltas) = if block["type"] == "text" {
        let text = block["text"].as_str().unwrap_or_default();
        let deltas: Vec<Value> = pieces(text, 40)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        (json!({"type": "text", "text": ""}), deltas)
    } else {
        let input = block["input"].to_string();
        let deltas: Vec<Value> = pieces(&input, 40)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect();
        let mut start = block.clone();
        start["input"] = json!({});
        (start, deltas)
    };
    push_event(
        out,
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    );
    for delta in deltas {
        push_event(
            out,
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
    }
    push_event(
        out,
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    );
}

/// `POST /v1/messages/count_tokens`: a rough count (about four bytes a token) of the body.
pub(crate) fn count_tokens(body: &Value) -> Response {
    let bytes = body.to_string().len();
    Response::json(200, &json!({"input_tokens": bytes / 4 + 1}))
}
