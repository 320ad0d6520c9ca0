//! OpenAI Responses API (`POST /v1/responses`), the `wire_api = "responses"` that Codex speaks:
//! `response.created`, per output item `response.output_item.added` … `.done` (with
//! `response.output_text.delta` for a message and `response.function_call_arguments.delta` for
//! a function call), then `response.completed` carrying every item and the `usage`.

use serde_json::{Value, json};

use super::{pieces, push_event};
use crate::http::Response;
use crate::script::{Reply, ToolKind};

/// Answers a Responses request with `reply`. `seq` makes the response and item ids unique.
pub(crate) fn openai_response(reply: &Reply, model: &str, stream: bool, seq: u64) -> Response {
    let id = format!("resp_mock{seq:04}");
    let items = output_items(reply, seq);
    let usage = json!({
        "input_tokens": reply.usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
    });
    let completed = json!({
        "id": id, "object": "response", "created_at": 1_790_004_000, "status": "completed",
        "model": model, "output": items, "usage": usage,
    });
    if !stream {
        return Response::json(200, &completed);
    }
    let mut events = Events::default();
    events.push(
        "response.created",
        json!({"response": {
            "id": id, "object": "response", "created_at": 1_790_004_000,
            "status": "in_progress", "model": model, "output": [],
        }}),
    );
    for (index, item) in items.iter().enumerate() {
        events.push_item(index, item);
    }
    events.push("response.completed", json!({"response": completed}));
    Response::sse(events.out)
}

fn output_items(reply: &Reply, seq: u64) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(text) = &reply.text {
        items.push(json!({
            "id": format!("msg_mock{seq:04}"), "type": "message", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }));
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let (id, call_id) = (
            format!("fc_mock{seq:04}_{i}"),
            format!("call_mock{seq:04}_{i}"),
        );
        items.push(match call.kind {
            ToolKind::Function => json!({
                "id": id, "type": "function_call", "status": "completed", "call_id": call_id,
                "name": call.name, "arguments": call.input.to_string(),
            }),
            ToolKind::Custom => json!({
                "id": id, "type": "custom_tool_call", "status": "completed", "call_id": call_id,
                "name": call.name, "input": call.input.as_str().unwrap_or_default(),
            }),
        });
    }
    items
}

/// The SSE body, with the `sequence_number` every Responses event carries.
#[derive(Default)]
struct Events {
    out: String,
    sequence: u64,
}

impl Events {
    fn push(&mut self, name: &str, mut data: Value) {
        data["type"] = json!(name);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        push_event(&mut self.out, name, &data);
    }

    fn push_item(&mut self, index: usize, item: &Value) {
        let item_id = item["id"].clone();
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        match item["type"].as_str() {
            Some("message") => added["content"] = json!([]),
            Some("function_call") => added["arguments"] = json!(""),
            _ => added["input"] = json!(""),
        }
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
        );
        if item["type"] == "message" {
            let part = &item["content"][0];
            let text = part["text"].as_str().unwrap_or_default();
            let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
            self.push(
                "response.content_part.added",
                with(
                    &at,
                    "part",
                    json!({"type": "output_text", "text": "", "annotations": []}),
                ),
            );
            self.push_streamed(&at, "response.output_text", "text", text);
            self.push(
                "response.content_part.done",
                with(&at, "part", part.clone()),
            );
        } else {
            let at = json!({"item_id": item_id, "output_index": index});
            let (event, field) = if item["type"] == "function_call" {
                ("response.function_call_arguments", "arguments")
            } else {
                ("response.custom_tool_call_input", "input")
            };
            let value = item[field].as_str().unwrap_or_default();
            self.push_streamed(&at, event, field, value);
        }
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }
}

impl Events {
    /// `{event}.delta` per piece of `value`, then `{event}.done` carrying it whole as `field`.
    fn push_streamed(&mut self, at: &Value, event: &str, field: &str, value: &str) {
        for piece in pieces(value, 40) {
            self.push(&format!("{event}.delta"), with(at, "delta", json!(piece)));
        }
        self.push(&format!("{event}.done"), with(at, field, json!(value)));
    }
}

fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut out = base.clone();
    out[key] = value;
    out
}
