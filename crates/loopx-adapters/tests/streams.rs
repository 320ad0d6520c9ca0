//! Every recorded stream is classified as `tests/fixtures/streams/README.md` says, through the
//! built-in adapter for its format.

use jiff::Timestamp;
use loopx_adapters::fixtures::{RECORDED_STREAMS, RecordedStream};
use loopx_adapters::inspect::replay;
use loopx_adapters::{
    AdapterCatalog, AgentEvent, LimitWindow, Outcome, OutputFormat, Parser, ReportStatus,
    StreamSummary, classify,
};

fn adapter_for(format: OutputFormat) -> loopx_adapters::Adapter {
    let name = match format {
        OutputFormat::ClaudeStreamJson => "claude-code",
        OutputFormat::CodexJson | OutputFormat::CodexRollout => "codex",
        OutputFormat::GeminiStreamJson | OutputFormat::GeminiJson => "gemini",
        OutputFormat::CursorStreamJson => "cursor",
        OutputFormat::QwenStreamJson => "qwen",
        OutputFormat::OpencodeJson => "opencode",
        OutputFormat::Text => "generic",
    };
    AdapterCatalog::builtin()
        .load(name)
        .expect("builtin adapter loads")
        .expect("builtin adapter exists")
}

fn summary_of(stream: &RecordedStream) -> StreamSummary {
    let now: Timestamp = stream.now.parse().expect("fixture now is RFC 3339");
    let mut parser = Parser::for_adapter(&adapter_for(stream.format)).with_format(stream.format);
    for contents in stream.contents {
        for line in contents.lines() {
            parser.feed_line(line, now);
        }
    }
    parser.finish(now);
    parser.into_summary()
}

fn stream(path: &str) -> &'static RecordedStream {
    RECORDED_STREAMS
        .iter()
        .find(|s| s.path == path)
        .expect("fixture is listed")
}

#[test]
fn every_recorded_stream_is_classified_as_documented() {
    let mut failures = Vec::new();
    for stream in RECORDED_STREAMS {
        let replay = replay(&adapter_for(stream.format), stream);
        if !replay.passed {
            failures.push(format!(
                "{}: expected {:?} (resets {:?}), got {} (resets {:?}); signals {:?}",
                stream.path,
                stream.outcome,
                stream.resets_at,
                replay.got,
                replay.got_resets_at,
                replay.signals
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fixture_file_is_covered() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/streams");
    for sub in [
        "claude", "codex", "cursor", "gemini", "opencode", "pty", "qwen", "text",
    ] {
        for entry in std::fs::read_dir(dir.join(sub)).expect("fixture dir exists") {
            let name = format!(
                "{sub}/{}",
                entry.expect("dir entry").file_name().to_string_lossy()
            );
            let covered = RECORDED_STREAMS.iter().any(|s| s.path == name)
                // Read together with its .jsonl, by the variants table test, or not a stream.
                || ["codex/captured-usage-limit.stderr.txt", "claude/usage-limit-text-variants.txt", "pty/prompt-markers.tsv"].contains(&name.as_str());
            assert!(covered, "{name} has no expectation in fixtures.rs");
        }
    }
}

#[test]
fn claude_normal_stream_reports_session_cost_usage_and_tools() {
    let s = summary_of(stream("claude/stream-json-normal.jsonl"));
    assert_eq!(
        s.session_id.as_deref(),
        Some("f083f30c-3989-459d-b192-2b7fd7eb5c32")
    );
    assert_eq!(s.cost_usd, Some(0.0731));
    assert_eq!(s.tool_calls, 3);
    let usage = s.usage();
    assert_eq!(
        (usage.input, usage.output, usage.cached_input),
        (18 + 3030, 348, 63820)
    );
    // The rate_limit_event says `allowed`: not a limit.
    assert_eq!(classify(&s, Some(0)).outcome, Outcome::Completed);
}

#[test]
fn cursor_streams_give_session_tools_usage_and_report_but_never_read_the_prompt_or_tool_output() {
    let s = summary_of(stream("cursor/stream-json-normal.jsonl"));
    assert_eq!(
        s.session_id.as_deref(),
        Some("7c1d2a40-5b9e-4f3a-9d2e-1a6b3c8e0f11")
    );
    assert_eq!(
        s.tool_calls, 1,
        "the write, counted once (started, not completed)"
    );
    // The prompt echoed in the `user` event names a usage limit: loopx's words, not a signal.
    let c = classify(&s, Some(0));
    assert_eq!(c.outcome, Outcome::Completed);
    assert_eq!(
        c.report.and_then(Result::ok).map(|r| r.status),
        Some(ReportStatus::Done)
    );
    let s = summary_of(stream("cursor/stream-json-tool-calls.jsonl"));
    assert_eq!(s.tool_calls, 3);
    let usage = s.usage();
    assert_eq!(
        (usage.input, usage.output, usage.cached_input),
        (18_234 + 1_024, 912, 40_960)
    );
    // A file and a test run that talk about limits are tool output.
    assert_eq!(classify(&s, Some(0)).outcome, Outcome::Progress);
}

#[test]
fn qwen_api_errors_reported_as_success_are_errors_and_never_the_agent_s_words() {
    let s = summary_of(stream("qwen/captured-quota-429.jsonl"));
    let finish = s.finish.as_ref().expect("a result event");
    assert_eq!(
        (finish.kind, finish.api_status),
        (loopx_adapters::FinishKind::Error, Some(429))
    );
    assert_eq!(
        s.final_message, None,
        "Qwen Code's own error text is not a message"
    );
    assert_eq!(classify(&s, Some(0)).outcome, Outcome::UsageLimited);
    let s = summary_of(stream("qwen/captured-write-file.jsonl"));
    assert_eq!(s.tool_calls, 1);
    // Per message (16016 + 10, then 16111 + 18), as the total on the result says.
    let usage = s.usage();
    assert_eq!((usage.input, usage.output), (32_127, 28));
    let c = classify(&s, Some(0));
    assert_eq!(c.outcome, Outcome::Completed);
    assert_eq!(
        c.report.and_then(Result::ok).map(|r| r.status),
        Some(ReportStatus::Done)
    );
}

#[test]
fn opencode_steps_add_up_and_its_errors_say_why() {
    let s = summary_of(stream("opencode/captured-usage-cost.jsonl"));
    let usage = s.usage();
    assert_eq!(
        (usage.input, usage.output, usage.cached_input),
        (800, 450 + 50, 200)
    );
    assert_eq!(s.cost_usd, Some(0.00996));
    assert_eq!(
        s.session_id.as_deref(),
        Some("ses_dc9a2a57affezXyWDu3109wZEq")
    );
    // Two model requests of 100 in / 20 out each: a write, then the report.
    let s = summary_of(stream("opencode/captured-write-file.jsonl"));
    let usage = s.usage();
    assert_eq!((usage.input, usage.output), (200, 40));
    assert_eq!(s.tool_calls, 1);
    let c = classify(&s, Some(0));
    assert_eq!(c.outcome, Outcome::Completed);
    assert_eq!(
        c.report.and_then(Result::ok).map(|r| r.status),
        Some(ReportStatus::Done)
    );
    let s = summary_of(stream("opencode/captured-auth-401.jsonl"));
    assert_eq!(s.finish.as_ref().and_then(|f| f.api_status), Some(401));
    assert_eq!(classify(&s, Some(1)).outcome, Outcome::AuthFailed);
}

#[test]
fn claude_success_subtype_with_is_error_is_not_success() {
    let s = summary_of(stream("claude/captured-claude429.jsonl"));
    let finish = s.finish.as_ref().expect("a result event");
    assert_eq!(finish.kind, loopx_adapters::FinishKind::Error);
    assert_eq!(finish.api_status, Some(429));
    // Exit 0 does not rescue it either.
    let c = classify(&s, Some(0));
    assert_eq!(c.outcome, Outcome::UsageLimited);
    assert_eq!(c.limit.expect("a limit").resets_at, None);
}

#[test]
fn claude_subscription_limit_uses_resets_at_and_window() {
    let s = summary_of(stream("claude/captured-subscription-limit.jsonl"));
    let c = classify(&s, Some(1));
    let expected: Timestamp = "2026-11-30T04:20:06Z".parse().expect("valid");
    assert_eq!(c.outcome, Outcome::UsageLimited);
    assert_eq!(
        c.limit,
        Some(loopx_adapters::VendorLimit {
            resets_at: Some(expected),
            window: Some(LimitWindow::FiveHour)
        })
    );
}

#[test]
fn claude_retries_are_counted_and_are_not_progress() {
    let now = Timestamp::UNIX_EPOCH;
    let mut parser = Parser::new(OutputFormat::ClaudeStreamJson);
    let mut retries = 0;
    for line in stream("claude/captured-claude500.jsonl").contents[0].lines() {
        for event in parser.feed_line(line, now) {
            if let AgentEvent::Retry { attempt, .. } = &event {
                retries += 1;
                assert_eq!(*attempt, Some(retries));
                assert!(!event.is_progress());
            }
        }
    }
    assert_eq!(retries, 5);
}

#[test]
fn claude_max_turns_is_progress_with_a_resume_hint() {
    let s = summary_of(stream("claude/stream-json-max-turns-result.jsonl"));
    let c = classify(&s, Some(1));
    assert_eq!(c.outcome, Outcome::Progress);
    assert!(
        c.reason.contains("a7c2e9f1-5d3b-4e80-9f14-2b6d8c0a3e57"),
        "{}",
        c.reason
    );
}

#[test]
fn reports_are_read_from_the_final_message() {
    for path in [
        "claude/captured-write-tool.jsonl",
        "codex/captured-text-report.jsonl",
        "gemini/captured-write-file.jsonl",
    ] {
        let c = classify(&summary_of(stream(path)), Some(0));
        let report = c.report.expect("a report block").expect("well formed");
        assert_eq!(report.status, ReportStatus::Done, "{path}");
    }
}

#[test]
fn codex_reconnects_are_retries_then_transient() {
    let s = summary_of(stream("codex/captured-codex500.jsonl"));
    assert_eq!(s.retries, 5);
    assert_eq!(classify(&s, Some(1)).outcome, Outcome::Transient);
}

#[test]
fn codex_usage_and_thread_id() {
    let s = summary_of(stream("codex/exec-json-normal.jsonl"));
    assert_eq!(
        s.session_id.as_deref(),
        Some("0199f3a1-6c2e-7b40-9a15-3d8e0f7c2b61")
    );
    let usage = s.usage();
    assert_eq!(
        (usage.input, usage.cached_input, usage.output),
        (31844 - 27392, 27392, 1206)
    );
    assert_eq!(s.tool_calls, 3);
}

#[test]
fn gemini_deltas_join_into_the_final_message() {
    let s = summary_of(stream("gemini/stream-json-normal.jsonl"));
    assert_eq!(
        s.final_message.as_deref(),
        Some("Done: blank headers now return `HeaderError::Empty`; all 14 tests pass.")
    );
    assert_eq!(s.usage().cached_input, 18200);
}

/// The events `lines` give as they arrive, through the built-in adapter `name`.
fn as_they_arrive(name: &str, format: OutputFormat, lines: &[&str]) -> Vec<AgentEvent> {
    let adapter = AdapterCatalog::builtin()
        .load(name)
        .expect("loads")
        .expect("exists");
    let mut parser = Parser::for_adapter(&adapter);
    assert_eq!(parser.summary().format, format);
    lines
        .iter()
        .flat_map(|line| parser.feed_line(line, Timestamp::UNIX_EPOCH))
        .collect()
}

#[test]
fn only_the_adapter_s_own_log_format_stops_a_slice_as_the_line_comes() {
    let refusal = |events: &[AgentEvent]| {
        events.iter().any(|e| {
            matches!(e, AgentEvent::Limit(l) if l.status == loopx_adapters::LimitStatus::Rejected)
                || matches!(e, AgentEvent::AuthFailed { .. })
        })
    };
    let logged = as_they_arrive(
        "opencode",
        OutputFormat::OpencodeJson,
        &[
            include_str!("../../../tests/fixtures/streams/opencode/stream-error-retry-after.txt")
                .trim(),
        ],
    );
    assert!(refusal(&logged), "OpenCode's own log line: {logged:?}");
    // What OpenCode echoes when it refuses a permission names a path the model chose; a tool
    // can print anything. Neither stops a slice as it comes.
    let echoed = as_they_arrive(
        "opencode",
        OutputFormat::OpencodeJson,
        &[
            r#"! permission requested: external_directory (/x/error.error="AI_APICallError: You exceeded your current quota"); auto-rejecting"#,
            "Error: You've hit your usage limit. 401 Unauthorized",
            r#"timestamp=2026-12-02T10:45:11.035Z level=ERROR message="stream error" error.error="AI_APICallError: Rate limit reached for requests""#,
        ],
    );
    assert!(!refusal(&echoed), "{echoed:?}");
}

#[test]
fn qwen_text_that_the_model_wrote_is_its_words_even_when_it_reads_like_an_api_error() {
    let lines = [
        r#"{"type":"system","subtype":"init","session_id":"q1","model":"m"}"#,
        r#"{"type":"assistant","session_id":"q1","message":{"id":"a1","role":"assistant","model":"m","content":[{"type":"text","text":"[API Error: 429 You exceeded your current quota] is what the log said; fixed"}],"usage":{"input_tokens":900,"output_tokens":31}}}"#,
        r#"{"type":"result","subtype":"success","session_id":"q1","is_error":false,"result":"[API Error: 429 You exceeded your current quota] is what the log said; fixed","usage":{"input_tokens":900,"output_tokens":31}}"#,
    ];
    let events = as_they_arrive("qwen", OutputFormat::QwenStreamJson, &lines);
    assert!(
        !events.iter().any(|e| matches!(e, AgentEvent::Limit(_))),
        "{events:?}"
    );
    let mut parser = Parser::new(OutputFormat::QwenStreamJson);
    for line in lines {
        parser.feed_line(line, Timestamp::UNIX_EPOCH);
    }
    parser.finish(Timestamp::UNIX_EPOCH);
    assert_eq!(
        classify(&parser.into_summary(), Some(0)).outcome,
        Outcome::Completed
    );
}

#[test]
fn an_opencode_step_that_stops_is_the_end_only_when_nothing_follows() {
    let step = |reason: &str| {
        format!(
            r#"{{"type":"step_finish","sessionID":"o1","part":{{"reason":"{reason}","tokens":{{"input":1,"output":1}},"cost":1e308}}}}"#
        )
    };
    let start = r#"{"type":"step_start","sessionID":"o1","part":{}}"#;
    let error = r#"{"type":"error","sessionID":"o1","error":{"name":"APIError","data":{"message":"Internal server error","statusCode":500}}}"#;
    let (stop, stop_again) = (step("stop"), step("stop"));
    let mut parser = Parser::new(OutputFormat::OpencodeJson);
    for line in [start, stop.as_str(), start, error] {
        let events = parser.feed_line(line, Timestamp::UNIX_EPOCH);
        assert!(
            !events.iter().any(|e| matches!(e, AgentEvent::Finished(f) if f.kind == loopx_adapters::FinishKind::Success)),
            "a stopped step is not yet the end: {events:?}"
        );
    }
    parser.feed_line(start, Timestamp::UNIX_EPOCH);
    parser.feed_line(&stop_again, Timestamp::UNIX_EPOCH);
    let end = parser.finish(Timestamp::UNIX_EPOCH);
    assert!(
        end.iter().any(|e| matches!(e, AgentEvent::Finished(f) if f.kind == loopx_adapters::FinishKind::Success)),
        "{end:?}"
    );
    // Two costs of 1e308 do not make an infinite debt.
    let cost = parser.summary().cost_usd.expect("a cost");
    assert!(cost.is_finite(), "{cost}");
}

#[test]
fn limit_text_in_tool_output_is_never_a_limit() {
    // A tool result quoting a limit sentence, then a clean result.
    let lines = [
        r#"{"type":"system","subtype":"init","session_id":"s1","model":"m"}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"You've hit your session limit · resets 3pm (UTC)"}]}}"#,
        r#"{"type":"assistant","message":{"id":"m1","model":"claude","content":[{"type":"text","text":"The log says: Claude AI usage limit reached|1790004000"}]}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"fixed"}"#,
    ];
    let mut parser = Parser::new(OutputFormat::ClaudeStreamJson);
    for line in lines {
        parser.feed_line(line, Timestamp::UNIX_EPOCH);
    }
    assert!(parser.summary().limit.is_none());
    assert_eq!(
        classify(parser.summary(), Some(0)).outcome,
        Outcome::Completed
    );
}

#[test]
fn pty_noise_and_split_bytes_are_tolerated() {
    let text = stream("claude/stream-json-usage-limit.jsonl").contents[0];
    let noisy = text
        .replace('\n', "\u{1b}[0m\r\n")
        .replace("{\"type\":\"result\"", "\u{1b}[?25l{\"type\":\"result\"");
    let now = Timestamp::UNIX_EPOCH;
    let mut parser = Parser::new(OutputFormat::ClaudeStreamJson);
    for chunk in noisy.as_bytes().chunks(7) {
        parser.feed_bytes(chunk, now);
    }
    parser.finish(now);
    let c = classify(parser.summary(), Some(1));
    assert_eq!(c.outcome, Outcome::UsageLimited);
    assert!(c.limit.and_then(|l| l.resets_at).is_some());
    assert_eq!(parser.summary().skipped_lines, 0);
}

#[test]
fn unknown_events_and_garbage_are_skipped() {
    let mut parser = Parser::new(OutputFormat::CodexJson);
    let now = Timestamp::UNIX_EPOCH;
    assert!(
        parser
            .feed_line(r#"{"type":"brand.new.event","x":1}"#, now)
            .is_empty()
    );
    assert!(parser.feed_line("not json at all", now).is_empty());
    assert!(
        parser
            .feed_line(r#"{"type":"turn.completed","usage":"wrong shape"}"#, now)
            .iter()
            .any(|e| matches!(e, AgentEvent::Finished(_)))
    );
    // The line outside the stream is the CLI's own: read (and found to say nothing) at the end.
    assert!(parser.finish(now).is_empty());
    assert_eq!(parser.summary().skipped_lines, 2);
}

/// A plain-text agent's final lines as the `generic` adapter reads them.
fn generic(lines: &[&str], exit: Option<i32>) -> String {
    let mut parser = Parser::for_adapter(&adapter_for(OutputFormat::Text));
    let now: Timestamp = "2026-09-21T10:00:00Z".parse().expect("a time");
    for line in lines {
        parser.feed_line(line, now);
    }
    parser.finish(now);
    classify(&parser.into_summary(), exit)
        .outcome
        .as_str()
        .to_owned()
}

#[test]
fn words_about_limits_401s_and_questions_are_not_signals() {
    for words in [
        "Working on: Log a warning when the API rate limit is exceeded",
        "Fix issue #401 in login",
        "All 401 tests passed",
        "I checked that unauthorized requests get a 401.",
        "The usage limit is reached when the counter hits 100; see limits.rs",
        "Do you want to proceed? I did, and the tests pass.",
    ] {
        assert_eq!(generic(&[words, "done"], Some(0)), "completed", "{words}");
    }
    // A question the agent printed before it exited is not a wait.
    assert_eq!(
        generic(&["Do you want to proceed? [y/N]"], Some(0)),
        "completed"
    );
}

#[test]
fn a_plain_text_agent_reporting_a_limit_or_a_login_is_read() {
    assert_eq!(
        generic(
            &["working", "Error: rate limit exceeded, try again later"],
            Some(1)
        ),
        "usage_limited"
    );
    assert_eq!(
        generic(
            &["You've hit your session limit · resets 4:20am (UTC)"],
            Some(1)
        ),
        "usage_limited"
    );
    assert_eq!(
        generic(&["error: not logged in (run `agent login`)"], Some(1)),
        "auth_failed"
    );
    // Still waiting at the end, when the slice was stopped: a question.
    assert_eq!(
        generic(
            &["Deleting 3 files.", "Do you want to proceed? [y/N]"],
            None
        ),
        "asked"
    );
}

/// Each line of stream-json input is answered with a `result` of its own, whose `usage` is
/// that answer's only (measured with Claude Code 2.1.197 against the scripted model server:
/// 100/10, then 7/3); the cost is the process's so far.
#[test]
fn claude_answers_to_each_line_of_input_add_up() {
    let s = summary_of(stream("claude/captured-live-two-turns.jsonl"));
    let usage = s.usage();
    assert_eq!((usage.input, usage.output), (107, 13));
    assert_eq!(s.cost_usd, Some(0.00086));
    assert_eq!(s.final_message.as_deref(), Some("second answer"));
}

fn used_inputs(path: &str) -> Vec<String> {
    let stream = stream(path);
    as_they_arrive(
        "claude-code",
        OutputFormat::ClaudeStreamJson,
        &stream.contents[0].lines().collect::<Vec<_>>(),
    )
    .into_iter()
    .filter_map(|e| match e {
        AgentEvent::InputUsed { uuid } => Some(uuid),
        _ => None,
    })
    .collect()
}

/// Claude echoes each line of its input as it uses it: the prompt at once, a line written
/// while a tool ran after the tool's result. A line whose uuid was used before is echoed
/// without a timestamp and never reaches the model: not used.
#[test]
fn claude_s_echoes_say_which_lines_of_its_input_it_used() {
    assert_eq!(
        used_inputs("claude/captured-live-injected.jsonl"),
        ["aaaaaaaa-0000-4000-8000-000000000001", "loopx-inject-1"]
    );
    assert_eq!(
        used_inputs("claude/captured-live-reused-uuid.jsonl"),
        ["loopx-same"]
    );
}

/// The summary of Claude Code `lines`, as the supervisor folds them.
fn claude_summary(lines: &[&str]) -> StreamSummary {
    let adapter = adapter_for(OutputFormat::ClaudeStreamJson);
    let mut parser = Parser::for_adapter(&adapter);
    for line in lines {
        parser.feed_line(line, Timestamp::UNIX_EPOCH);
    }
    parser.finish(Timestamp::UNIX_EPOCH);
    parser.into_summary()
}

/// A person's message that starts another answer does not take back the report of the one
/// before; an answer whose result says nothing of usage keeps its messages' usage.
#[test]
fn a_later_answer_without_a_report_keeps_the_earlier_report_and_every_answer_s_usage() {
    let summary = claude_summary(&[
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":100,"output_tokens":10}}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"tidied\"}\n```"}"#,
        r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Noted: tabs."}],"usage":{"input_tokens":7,"output_tokens":3}}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Noted: tabs.","usage":{"input_tokens":7,"output_tokens":3}}"#,
    ]);
    let usage = summary.usage();
    assert_eq!((usage.input, usage.output), (107, 13));
    let verdict = loopx_adapters::classify(&summary, Some(0));
    assert!(verdict.done, "{verdict:?}");
    assert_eq!(summary.final_message.as_deref(), Some("Noted: tabs."));
}
