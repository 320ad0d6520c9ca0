//! Parsers, report and reset readers never panic, whatever they are fed.

use jiff::Timestamp;
use loopx_adapters::{OutputFormat, Parser, classify, parse_report, parse_reset_time};
use proptest::prelude::*;

const FORMATS: [OutputFormat; 9] = [
    OutputFormat::ClaudeStreamJson,
    OutputFormat::OpencodeJson,
    OutputFormat::CursorStreamJson,
    OutputFormat::QwenStreamJson,
    OutputFormat::CodexJson,
    OutputFormat::GeminiStreamJson,
    OutputFormat::GeminiJson,
    OutputFormat::Text,
    OutputFormat::CodexRollout,
];

/// Lines that look like the real thing often enough to reach the deep branches.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\{\"type\":\"(result|assistant|system|rate_limit_event|error|turn\\.failed|item\\.completed|event_msg|message|init|tool_call|step_start|step_finish|text|tool_use)\"[^\\n]{0,80}",
        Just(r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":99999999,"result":7}"#.to_owned()),
        Just(r#"{"type":"result","subtype":"success","is_error":false,"result":"[API Error: 99999999999999999999 x"}"#.to_owned()),
        Just(r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":-9223372036854775808}}"#.to_owned()),
        Just(r#"{"type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":1e308,"resets_in_seconds":9223372036854775807}}}}"#.to_owned()),
        "(resets|try again (at|in)|reset after) [0-9a-zA-Z :,/()]{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn lines_never_panic(lines in proptest::collection::vec(line(), 0..24), format in 0..FORMATS.len(), exit in proptest::option::of(any::<i32>())) {
        let now = Timestamp::UNIX_EPOCH;
        let mut parser = Parser::new(FORMATS[format]);
        for line in &lines {
            parser.feed_line(line, now);
        }
        parser.finish(now);
        let _ = classify(parser.summary(), exit);
    }

    #[test]
    fn bytes_never_panic(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16), format in 0..FORMATS.len()) {
        let now = Timestamp::UNIX_EPOCH;
        let mut parser = Parser::new(FORMATS[format]);
        for chunk in &chunks {
            parser.feed_bytes(chunk, now);
        }
        parser.finish(now);
    }

    #[test]
    fn reports_and_reset_times_never_panic(text in any::<String>(), secs in any::<i64>()) {
        let _ = parse_report(&format!("```loopx-report\n{text}"));
        let _ = parse_report(&text);
        if let Ok(now) = Timestamp::from_second(secs.rem_euclid(253_402_207_200)) {
            let _ = parse_reset_time(&text, now);
            let _ = parse_reset_time(&format!("resets {text}"), now);
        }
    }
}

#[test]
fn an_overlong_line_is_dropped_and_the_next_one_read() {
    let now = Timestamp::UNIX_EPOCH;
    let mut parser = Parser::new(OutputFormat::CodexJson);
    let huge = vec![b'x'; loopx_adapters::MAX_LINE_BYTES + 10];
    parser.feed_bytes(&huge, now);
    parser.feed_bytes(
        b"\n{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n",
        now,
    );
    assert_eq!(parser.summary().session_id.as_deref(), Some("t1"));
    assert_eq!(parser.summary().skipped_lines, 1);
}
