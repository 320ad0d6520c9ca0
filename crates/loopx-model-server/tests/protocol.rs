//! Speaks raw HTTP/1.1 to a running server and checks what each API's client would see.

#[path = "protocol/client.rs"]
mod client;

use loopx_model_server::{
    Answer, ErrorAnswer, ModelServer, Reply, Script, ToolCall, ToolKind, Turn, Usage, WhenDone,
};
use serde_json::{Value, json};

use client::{post_json, send, sse_events};

fn start(turns: impl IntoIterator<Item = Turn>) -> ModelServer {
    ModelServer::start(Script::new(turns)).expect("a server starts on an ephemeral port")
}

fn write_then_text() -> [Turn; 2] {
    [
        Turn::Reply(Reply {
            text: Some("Writing it.".to_owned()),
            tool_calls: vec![ToolCall {
                name: "Write".to_owned(),
                input: json!({"file_path": "hello.txt", "content": "hi, wörld — a long enough line to be split\n"}),
                kind: ToolKind::Function,
            }],
            usage: Usage {
                input_tokens: 1200,
                output_tokens: 30,
            },
        }),
        Turn::text("Done."),
    ]
}

#[test]
fn anthropic_stream_has_the_messages_event_sequence() {
    let server = start(write_then_text());
    let response = post_json(
        &server,
        "/v1/messages?beta=true",
        &json!({"model": "claude-test", "stream": true, "max_tokens": 64, "messages": []}),
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events = sse_events(&response.body);
    let mut names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    // How many deltas a block takes depends on its length; the order of kinds does not.
    names.dedup();
    let mut want = vec!["message_start", "ping", "content_block_start"];
    want.extend([
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
    ]);
    want.extend(["content_block_delta", "content_block_stop"]);
    want.extend(["message_delta", "message_stop"]);
    assert_eq!(names, want);
    for (name, data) in &events {
        assert_eq!(data["type"], json!(name), "the data repeats the event name");
    }
    assert_eq!(events[0].1["message"]["model"], "claude-test");
    assert_eq!(events[0].1["message"]["usage"]["input_tokens"], 1200);
    assert_eq!(
        events[2].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(events[3].1["delta"]["text"], "Writing it.");
    let tool = &events[5].1["content_block"];
    assert_eq!(
        (&tool["type"], &tool["name"], &tool["input"]),
        (&json!("tool_use"), &json!("Write"), &json!({}))
    );
    let pieces: Vec<&str> = events
        .iter()
        .filter_map(|(_, data)| data["delta"]["partial_json"].as_str())
        .collect();
    assert!(pieces.len() > 1, "a long input arrives in several deltas");
    let partial: String = pieces.concat();
    let input: Value = serde_json::from_str(&partial).expect("the pieces join into JSON");
    assert_eq!(
        input["content"],
        "hi, wörld — a long enough line to be split\n"
    );
    let message_delta = &events[events.len() - 2].1;
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"]["output_tokens"], 30);

    let second = post_json(&server, "/v1/messages", &json!({"stream": true}));
    let events = sse_events(&second.body);
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "end_turn"
    );
    assert_eq!(server.turns_played(), 2);
}

#[test]
fn anthropic_without_stream_answers_one_message() {
    let server = start(write_then_text());
    let response = post_json(&server, "/v1/messages", &json!({"model": "m"}));
    assert_eq!(response.status, 200);
    let message: Value = serde_json::from_slice(&response.body).expect("a JSON message");
    assert_eq!(message["type"], "message");
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(
        message["content"][0],
        json!({"type": "text", "text": "Writing it."})
    );
    assert_eq!(message["content"][1]["input"]["file_path"], "hello.txt");
    assert_eq!(message["usage"]["output_tokens"], 30);
}

#[test]
fn responses_stream_has_the_responses_event_sequence() {
    let server = start(write_then_text());
    let response = post_json(
        &server,
        "/v1/responses",
        &json!({"model": "gpt-test", "stream": true, "input": []}),
    );
    assert_eq!(response.status, 200);
    let events = sse_events(&response.body);
    let mut names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    names.dedup();
    let mut want = vec!["response.created", "response.output_item.added"];
    want.extend(["response.content_part.added", "response.output_text.delta"]);
    want.extend(["response.output_text.done", "response.content_part.done"]);
    want.extend(["response.output_item.done", "response.output_item.added"]);
    want.push("response.function_call_arguments.delta");
    want.extend([
        "response.function_call_arguments.done",
        "response.output_item.done",
    ]);
    want.push("response.completed");
    assert_eq!(names, want);
    for (seq, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], json!(name));
        assert_eq!(data["sequence_number"], json!(seq));
    }
    assert_eq!(events[3].1["delta"], "Writing it.");
    let message = &events[6].1["item"];
    assert_eq!(message["content"][0]["text"], "Writing it.");
    let last = events.len() - 1;
    let call = &events[last - 1].1["item"];
    assert_eq!(
        (&call["type"], &call["name"]),
        (&json!("function_call"), &json!("Write"))
    );
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().expect("a string"))
        .expect("arguments are JSON text");
    assert_eq!(arguments["file_path"], "hello.txt");
    let completed = &events[last].1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["model"], "gpt-test");
    assert_eq!(completed["output"].as_array().map(Vec::len), Some(2));
    assert_eq!(completed["usage"]["input_tokens"], 1200);
    assert_eq!(completed["usage"]["output_tokens"], 30);
    assert_eq!(completed["usage"]["total_tokens"], 1230);
}

#[test]
fn responses_custom_tool_call_carries_string_input() {
    let exec = ToolCall {
        name: "exec".to_owned(),
        input: json!("await tools.exec_command({cmd: \"true\"})"),
        kind: ToolKind::Custom,
    };
    let server = start([Turn::Reply(Reply {
        tool_calls: vec![exec],
        ..Reply::default()
    })]);
    let response = post_json(&server, "/v1/responses", &json!({"stream": true}));
    let events = sse_events(&response.body);
    let done = events
        .iter()
        .find(|(name, _)| name == "response.output_item.done")
        .expect("the item is finished");
    assert_eq!(done.1["item"]["type"], "custom_tool_call");
    assert_eq!(
        done.1["item"]["input"],
        "await tools.exec_command({cmd: \"true\"})"
    );
}

#[test]
fn error_turns_are_sent_verbatim_and_repeat_when_done() {
    let server = start([
        Turn::Error(ErrorAnswer::anthropic_rate_limit(3600)),
        Turn::Error(ErrorAnswer::anthropic_session_limit(1_790_004_000)),
        Turn::Error(ErrorAnswer::codex_usage_limit(1_790_004_000)),
    ]);
    let first = post_json(&server, "/v1/messages", &json!({"stream": true}));
    assert_eq!(first.status, 429);
    assert_eq!(first.header("retry-after"), Some("3600"));
    let body: Value = serde_json::from_slice(&first.body).expect("a JSON error");
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let second = post_json(&server, "/v1/messages", &json!({"stream": true}));
    assert_eq!(second.status, 429);
    assert_eq!(
        second.header("anthropic-ratelimit-unified-status"),
        Some("rejected")
    );
    assert_eq!(
        second.header("anthropic-ratelimit-unified-reset"),
        Some("1790004000")
    );
    assert_eq!(
        second.header("anthropic-ratelimit-unified-representative-claim"),
        Some("five_hour")
    );

    for _ in 0..2 {
        let codex = post_json(&server, "/v1/responses", &json!({"stream": true}));
        assert_eq!(codex.status, 429);
        let body: Value = serde_json::from_slice(&codex.body).expect("a JSON error");
        assert_eq!(body["error"]["type"], "usage_limit_reached");
        assert_eq!(body["error"]["resets_at"], 1_790_004_000);
    }
    let answers: Vec<Answer> = server.requests().into_iter().map(|r| r.answer).collect();
    let turns: Vec<usize> = answers
        .iter()
        .map(|answer| match answer {
            Answer::Turn { turn, status: 429 } => *turn,
            other => panic!("unexpected answer {other:?}"),
        })
        .collect();
    assert_eq!(turns, [0, 1, 2, 2], "the last turn repeats");
}

#[test]
fn when_done_fail_answers_500() {
    let server = ModelServer::start(Script::new([Turn::text("only")]).when_done(WhenDone::Fail))
        .expect("a server starts");
    assert_eq!(post_json(&server, "/v1/messages", &json!({})).status, 200);
    let extra = post_json(&server, "/v1/messages", &json!({}));
    assert_eq!(extra.status, 500);
    assert!(String::from_utf8_lossy(&extra.body).contains("script exhausted"));
    assert_eq!(server.requests()[1].answer, Answer::Exhausted);
}

#[test]
fn side_requests_do_not_consume_turns() {
    let server = start([Turn::text("the only turn")]);
    let head = send(&server, b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty(), "HEAD has no body");
    let count = post_json(
        &server,
        "/v1/messages/count_tokens",
        &json!({"messages": [{"role": "user", "content": "hello there"}]}),
    );
    assert_eq!(count.status, 200);
    let count: Value = serde_json::from_slice(&count.body).expect("JSON");
    assert!(count["input_tokens"].as_u64().is_some_and(|n| n > 0));
    let models = send(&server, b"GET /v1/models HTTP/1.1\r\n\r\n");
    assert_eq!(models.status, 200);
    assert_eq!(send(&server, b"GET /nope HTTP/1.1\r\n\r\n").status, 404);
    assert_eq!(server.turns_played(), 0);
    let reply = post_json(&server, "/v1/messages", &json!({}));
    let message: Value = serde_json::from_slice(&reply.body).expect("JSON");
    assert_eq!(message["content"][0]["text"], "the only turn");
}

#[test]
fn malformed_requests_get_400_with_a_message() {
    let server = start([Turn::text("never played")]);
    let cases: [&[u8]; 5] = [
        b"POST /v1/messages HTTP/1.1\r\ncontent-length: 8\r\n\r\nnot json",
        b"POST /v1/responses HTTP/1.1\r\ncontent-length: 2\r\n\r\n[]",
        b"POST /v1/messages/count_tokens HTTP/1.1\r\ncontent-length: 1\r\n\r\n{",
        b"BROKEN\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\ncontent-length: -1\r\n\r\n",
    ];
    for raw in cases {
        let response = send(&server, raw);
        assert_eq!(response.status, 400, "{}", String::from_utf8_lossy(raw));
        let body: Value = serde_json::from_slice(&response.body).expect("a JSON error");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
    assert_eq!(server.turns_played(), 0);
    // The server is still healthy afterwards.
    assert_eq!(post_json(&server, "/v1/messages", &json!({})).status, 200);
}

#[test]
fn requests_are_recorded_without_credentials() {
    let server = start([Turn::text("hi")]);
    let raw = b"POST /v1/messages?beta=true HTTP/1.1\r\nx-api-key: sk-secret\r\nauthorization: Bearer sk-secret\r\nanthropic-version: 2023-06-01\r\ncontent-length: 13\r\n\r\n{\"model\":\"m\"}";
    assert_eq!(send(&server, raw).status, 200);
    let requests = server.requests();
    let request = &requests[0];
    assert_eq!(request.path(), "/v1/messages");
    assert_eq!(request.target, "/v1/messages?beta=true");
    assert_eq!(request.header("x-api-key"), Some("[redacted]"));
    assert_eq!(request.header("authorization"), Some("[redacted]"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.body, json!({"model": "m"}));
    let line = serde_json::to_string(request).expect("a request serialises");
    assert!(!line.contains("sk-secret"), "{line}");
}

#[test]
fn dropping_the_server_frees_the_port() {
    let server = start([Turn::text("hi")]);
    let addr = format!("127.0.0.1:{}", server.port());
    drop(server);
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "nothing listens on {addr} after drop"
    );
}

#[test]
fn every_shipped_script_loads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/scripts exists") {
        let path = entry.expect("a directory entry").path();
        Script::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        loaded += 1;
    }
    assert!(
        loaded >= 4,
        "found only {loaded} scripts in {}",
        dir.display()
    );
}
