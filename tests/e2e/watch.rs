//! Watching a running agent (issue 16): its output reaches `loopx log --follow --slice` while
//! the slice runs, and a structured stream reads as a transcript.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::{Background, Loopx, cli_stand_in, script_agent};

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis()
}

#[test]
fn a_followed_slice_shows_each_line_within_two_seconds_of_its_printing() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Count slowly"]);
    // One line a second, each stamped with the moment it was printed.
    // Midway it prints an API key and, in two parts, a private key: the log is redacted in full
    // only when the slice ends (a copy with fewer lines replaces the file), the follower reads
    // on in the file it opened and never shows a key.
    let script = "cat >/dev/null\nfor i in 1 2 3 4 5 6; do echo \"tick $i $(date +%s%3N)\"; [ $i = 3 ] && echo 'export ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789'; [ $i = 4 ] && printf '%s\\n' '-----BEGIN RSA PRIVATE KEY-----' 'MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu' && sleep 0.6 && printf '%s\\n' 'KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==' '-----END RSA PRIVATE KEY-----'; sleep 1; done\necho last line\nprintf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"counted\"}' '```'";
    script_agent(&loopx, "a", script, "max_time = \"2m\"");
    loopx.ok(&["todo", "add", "Count to six"]);
    let mut run = Background::start(&loopx, &["--max-slices", "1"]);
    let started = run.wait_for("the slice's start", |e| e["event"] == "slice_started");
    let slice = started["slice"].as_str().expect("a slice id").to_owned();

    let mut follow = loopx
        .command(&["log", "--follow", "--slice", &slice])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("log --follow starts");
    let stdout = follow.stdout.take().expect("stdout");
    let mut ticks = Vec::new();
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let seen = now_ms();
        if let Some(rest) = line.strip_prefix("tick ") {
            let printed: u128 = rest
                .split_whitespace()
                .nth(1)
                .and_then(|ms| ms.parse().ok())
                .unwrap_or_else(|| panic!("a stamped tick: {line}"));
            ticks.push(seen.saturating_sub(printed));
        }
        lines.push(line);
    }
    let status = follow.wait().expect("log --follow exits");
    assert!(status.success(), "{lines:#?}");
    let (code, _) = run.finish();
    assert_eq!(code, 0);
    // Ticks printed before `log` started came with the output so far: only the live ones
    // count, and there must be some.
    eprintln!("lag of each tick behind its printing, ms: {ticks:?}");
    let live: Vec<u128> = ticks.iter().copied().filter(|&lag| lag < 5_000).collect();
    assert_eq!(ticks.len(), 6, "every tick once: {lines:#?}");
    assert!(
        live.len() >= 4,
        "ticks followed live: {ticks:?}\n{lines:#?}"
    );
    assert!(
        live.iter().all(|&lag| lag <= 2_000),
        "a tick took longer than 2 s to show: {ticks:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("slice_ended") || l.contains("ended")),
        "the end of the slice is shown: {lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("abcdefghijklmnop")
            || l.contains("MIIBOgIBAAJBAKj34")
            || l.contains("KUpRKfFLfRYC9AIK")),
        "the keys are never shown, the private key printed in two parts included: {lines:#?}"
    );
    assert_eq!(
        lines.iter().filter(|l| *l == "last line").count(),
        1,
        "the lines after the end's rewrite, once: {lines:#?}"
    );
}

#[test]
fn a_structured_stream_reads_as_a_transcript_and_raw_gives_the_bytes() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write hello"]);
    let stream = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/streams/claude/captured-write-tool.jsonl"),
    )
    .expect("fixture");
    std::fs::write(loopx.path().join("stream.jsonl"), &stream).expect("stream");
    cli_stand_in(
        &loopx,
        "claude",
        "claude-code",
        &format!("cat {}/stream.jsonl", loopx.path().display()),
        "",
    );
    loopx.ok(&["todo", "add", "Write hello.txt"]);
    let started = Instant::now();
    loopx.ok(&["run", "--max-slices", "1"]);
    assert!(started.elapsed() < Duration::from_secs(60));
    let text = loopx.ok(&["log", "--slice", "s1"]).stdout;
    assert!(
        text.contains("→ Write(file_path=\"hello.txt\", content=\"hi\\n\")"),
        "{text}"
    );
    assert!(text.contains("· $0.2173"), "{text}");
    assert!(!text.contains("\"type\":\"assistant\""), "{text}");
    let raw = loopx.ok(&["log", "--slice", "s1", "--raw"]).stdout;
    assert!(raw.contains("\"type\":\"assistant\""), "{raw}");
}
