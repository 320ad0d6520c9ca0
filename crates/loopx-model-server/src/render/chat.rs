//! OpenAI Chat Completions (`POST /v1/chat/completions`), the API that OpenAI-compatible
//! clients speak (Qwen Code, OpenCode's `@ai-sdk/openai-compatible` provider): one
//! `chat.completion` object, or when streaming a `chat.completion.chunk` per text piece and
//! per tool call, a last chunk with the `finish_reason`, the usage chunk (always sent: clients
//! that did not ask for it ignore a chunk with no choices) and `data: [DONE]`.

use serde_json::{Value, json};

use super::pieces;
use crate::http::Response;
use crate::script::Reply;

/// Answers a Chat Completions request with `reply`. `seq` makes the ids unique.
pub(crate) fn chat_completion(reply: &Reply, model: &str, stream: bool, seq: u64) -> Response {
    let id = format!("chatcmpl-mock{seq:04}");
    let calls: Vec<Value> = reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            json!({
                "id": format!("call_mock{seq:04}_{i}"), "type": "function",
                "function": {"name": call.name, "arguments": arguments(&call.input)},
            })
        })
        .collect();
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let usage = json!({
        "prompt_tokens": reply.usage.input_tokens,
        "completion_tokens": reply.usage.output_tokens,
        "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
    });
    let head = |extra: Value| {
        let mut chunk = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_790_004_000, "model": model,
        });
        if let (Some(chunk), Some(extra)) = (chunk.as_object_mut(), extra.as_object()) {
            chunk.extend(extra.clone());
        }
        chunk
    };
    if !stream {
        let mut message = json!({"role": "assistant", "content": reply.text});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        let mut whole = head(json!({
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }));
        whole["object"] = json!("chat.completion");
        return Response::json(200, &whole);
    }
    let mut out = String::new();
    let mut push = |chunk: Value| {
        out.push_str("data: ");
        out.push_str(&chunk.to_string());
        out.push_str("\n\n");
    };
    let choice = |delta: Value, finish: Value| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    push(head(choice(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )));
    for piece in reply
        .text
        .as_deref()
        .map(|t| pieces(t, 24))
        .unwrap_or_default()
    {
        push(head(choice(json!({"content": piece}), Value::Null)));
    }
    for (index, call) in calls.iter().enumerate() {
        let args = call["function"]["arguments"].as_str().unwrap_or_default();
        // The name and id first, then the arguments in pieces, as real servers stream them.
        push(head(choice(
            json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                   "function": {"name": call["function"]["name"], "arguments": ""}}]}),
            Value::Null,
        )));
        for piece in pieces(args, 32) {
            push(head(choice(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            )));
        }
    }
    push(head(choice(json!({}), json!(finish))));
    push(head(json!({"choices": [], "usage": usage})));
    out.push_str("data: [DONE]\n\n");
    Response::sse(out)
}

/// A tool call's arguments as the JSON text Chat Completions carries (a string input is sent
/// as it is, so a script can hand over arguments that are not even JSON).
fn arguments(input: &Value) -> String {
    match input {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{ToolCall, ToolKind, Usage};

    fn sse_chunks(response: &Response) -> Vec<Value> {
        String::from_utf8_lossy(&response.body)
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).expect("JSON chunk"))
            .collect()
    }

    #[test]
    fn a_streamed_reply_rejoins_to_its_text_and_tool_call_with_usage_last() {
        let reply = Reply {
            text: Some("I will write the file now, then report.".into()),
            tool_calls: vec![ToolCall {
                name: "write_file".into(),
                input: json!({"file_path": "/w/hello.txt", "content": "hi"}),
                kind: ToolKind::Function,
            }],
            usage: Usage {
                input_tokens: 7,
                output_tokens: 3,
            },
        };
        let response = chat_completion(&reply, "m", true, 1);
        assert!(String::from_utf8_lossy(&response.body).ends_with("data: [DONE]\n\n"));
        let chunks = sse_chunks(&response);
        let text: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "I will write the file now, then report.");
        let args: String = chunks
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            })
            .collect();
        let args: Value = serde_json::from_str(&args).expect("arguments rejoin to JSON");
        assert_eq!(args["file_path"], "/w/hello.txt");
        let finish: Vec<&str> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
            .collect();
        assert_eq!(finish, ["tool_calls"]);
        let last = chunks.last().expect("chunks");
        assert_eq!(last["usage"]["total_tokens"], 10);
    }

    #[test]
    fn an_unstreamed_reply_is_one_completion() {
        let reply = Reply {
            text: Some("done".into()),
            tool_calls: vec![],
            usage: Usage::default(),
        };
        let response = chat_completion(&reply, "m", false, 2);
        let body: Value = serde_json::from_slice(&response.body).expect("JSON");
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["choices"][0]["message"]["content"], "done");
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(body["usage"]["prompt_tokens"], 100);
    }
}
