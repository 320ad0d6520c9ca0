//! Output parsing at volume (`docs/benchmarks.md`, "Budgets and the latest figures": 1 GiB of
//! short lines through `generic` and through `claude-stream-json`, at least 50 MB/s and under
//! 64 MiB RSS for the whole `loopx run` process): the parser alone, then the release binary
//! with the PTY.
//!
//! `cargo bench -p loopx-cli --bench parse [-- --runs 3 --only parser|loopx]`;
//! `LOOPX_BENCH_BYTES=268435456` floods less (default 1 GiB, 1073741824);
//! `LOOPX_BENCH_BIN=/path/to/loopx` measures another build of loopx instead.
//!
//! Method. *Parser alone*: `loopx_adapters::Parser` for `text` and for `claude-stream-json`
//! reads a 64 MiB buffer of short lines (a sentence; a one-word assistant event, which the
//! parser turns into a message, checked) over and over, in 64 KiB chunks cut anywhere in a
//! line, until `LOOPX_BENCH_BYTES` went through `feed`, then `finish`; MB/s over the whole.
//! *Through loopx*: per format, a fresh project (`loopx init`, a goal, one todo) and one agent
//! whose program is a shell script printing exactly `LOOPX_BENCH_BYTES` bytes of the same
//! lines (`yes LINE | head -c N` after `stty -opost`, so the terminal adds no `\r`), on the
//! `generic` adapter (which reads its prompt from stdin first) and on `claude-code` (the
//! profile's `program` replaces `claude`; the prompt is an argument, stdin is not read).
//! `loopx run --once --json` runs under a helper process (this bench re-run with
//! `--measure-run DIR`) that waits for it and reads `getrusage(RUSAGE_CHILDREN)`: its
//! `ru_maxrss` is the peak resident set of the largest process it waited for, i.e. of
//! `loopx run` itself (the agent's `sh`, `yes` and `head` are far smaller). Throughput is the
//! slice's own `output_bytes / duration_ms` (spawn to the agent's end, PTY included); the wall
//! time of the whole process (start-up, decide, writeback) is shown beside it. For scale, the
//! same flood is also run without loopx or a PTY, into a pipe read by this bench.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loopx_adapters::{AgentEvent, OutputFormat, Parser};
use serde_json::{Value, json};

/// A plain-text agent's line.
const TEXT_LINE: &str = "the quick brown fox jumps over the lazy dog";
/// A Claude stream-json assistant event: one message ("ok") per line.
const CLAUDE_LINE: &str = r#"{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"ok"}]},"session_id":"s"}"#;
/// The parser-alone buffer, fed round and round.
const BUFFER: usize = 64 << 20;
const CHUNK: usize = 64 << 10;

/// The release binary; `LOOPX_BENCH_BIN` runs another build (to compare before and after).
fn loopx_bin() -> PathBuf {
    std::env::var_os("LOOPX_BENCH_BIN")
        .map_or_else(|| env!("CARGO_BIN_EXE_loopx").into(), Into::into)
}

fn bytes_to_flood() -> u64 {
    std::env::var("LOOPX_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30)
}

struct Format {
    /// The name in the tables.
    name: &'static str,
    parser: OutputFormat,
    adapter: &'static str,
    line: &'static str,
    /// The agent's script: the generic adapter types the prompt into stdin (read it to its
    /// end first); Claude gets it as an argument (a PTY's stdin would never end: leave it).
    script_head: &'static str,
}

const FORMATS: [Format; 2] = [
    Format {
        name: "generic (text)",
        parser: OutputFormat::Text,
        adapter: "generic",
        line: TEXT_LINE,
        script_head: "cat >/dev/null\n",
    },
    Format {
        name: "claude-code (claude-stream-json)",
        parser: OutputFormat::ClaudeStreamJson,
        adapter: "claude-code",
        line: CLAUDE_LINE,
        script_head: "",
    },
];

fn main() {
    if let Some(dir) = arg::<PathBuf>("--measure-run") {
        measure_run(&dir);
        return;
    }
    let runs: usize = arg("--runs").unwrap_or(3);
    let only: Option<String> = arg("--only");
    let bytes = bytes_to_flood();
    println!(
        "machine: {} cores, Linux {}, load average {}; binary {}",
        cores(),
        command_output("uname", &["-r"]),
        load(),
        loopx_bin().display()
    );
    println!("flood: {bytes} bytes of short lines, {runs} runs each");
    println!();
    if only.as_deref().is_none_or(|o| o == "parser") {
        parser_alone(bytes, runs);
    }
    if only.as_deref().is_none_or(|o| o == "loopx") {
        through_loopx(bytes, runs);
    }
    println!("load average at the end: {}", load());
}

fn arg<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::args()
        .skip_while(|a| a != name)
        .nth(1)
        .and_then(|n| n.parse().ok())
}

/// `Parser::feed` over `bytes` bytes in 64 KiB chunks, `runs` times per format.
fn parser_alone(bytes: u64, runs: usize) {
    println!("### Parser alone (`Parser::feed`, 64 KiB chunks, then `finish`)");
    println!();
    println!("| format | run | time | MB/s | lines | messages | skipped |");
    println!("|---|---|---|---|---|---|---|");
    let mut summary = Vec::new();
    for format in &FORMATS {
        let buffer = lines_buffer(format.line, BUFFER);
        let mut speeds = Vec::new();
        for run in 1..=runs {
            let (took, lines, messages, skipped) = parse_once(format.parser, &buffer, bytes);
            let expected = bytes / (format.line.len() as u64 + 1);
            // Text: one message at the end (the tail). Claude: one per complete line, plus
            // the partial line `finish` reads (skipped: it is cut, so not JSON).
            if format.parser == OutputFormat::ClaudeStreamJson {
                assert_eq!(messages, expected, "every assistant line is a message");
            } else {
                assert_eq!(
                    messages, 1,
                    "a plain-text agent's words are one final message"
                );
            }
            let speed = mb_per_s(bytes, took);
            speeds.push(speed);
            println!(
                "| {} | {run} | {:.2} s | {speed:.0} | {lines} | {messages} | {skipped} |",
                format.name,
                took.as_secs_f64()
            );
        }
        summary.push((format.name, speeds));
    }
    println!();
    for (name, speeds) in summary {
        let (median, min, max) = spread(&speeds);
        println!("parser alone, {name}: median {median:.0} MB/s ({min:.0}–{max:.0})");
    }
    println!();
}

/// Whole lines of `line` up to about `size` bytes.
fn lines_buffer(line: &str, size: usize) -> Vec<u8> {
    let one = format!("{line}\n");
    one.repeat(size / one.len()).into_bytes()
}

/// One parser reading `bytes` bytes of `buffer`, round and round: (time, lines, messages,
/// skipped lines).
fn parse_once(format: OutputFormat, buffer: &[u8], bytes: u64) -> (Duration, u64, u64, u64) {
    let now = jiff::Timestamp::now();
    let mut parser = Parser::new(format);
    let mut messages = 0u64;
    let mut count = |e: AgentEvent| {
        if matches!(e, AgentEvent::Message { .. }) {
            messages += 1;
        }
    };
    let started = Instant::now();
    let mut left = bytes;
    let mut at = 0usize;
    while left > 0 {
        let len = CHUNK.min(buffer.len() - at).min(left as usize);
        parser.feed(&buffer[at..at + len], now, &mut count);
        left -= len as u64;
        at = (at + len) % buffer.len();
    }
    let last = parser.finish(now);
    let took = started.elapsed();
    messages += last
        .iter()
        .filter(|e| matches!(e, AgentEvent::Message { .. }))
        .count() as u64;
    let summary = parser.summary();
    (took, summary.lines, messages, summary.skipped_lines)
}

/// One `loopx run --once` measured by the helper.
struct Run {
    /// The slice's own duration (spawn to end), from its JSON.
    slice: Duration,
    /// The whole `loopx run` process.
    wall: Duration,
    output_bytes: u64,
    outcome: String,
    reason: String,
    /// Peak resident set of `loopx run`, KiB.
    rss_kib: u64,
    /// User + system CPU of `loopx run` and the agent it waited for.
    cpu: Duration,
}

/// Per format, `runs` runs of `loopx run --once --json` on fresh projects.
fn through_loopx(bytes: u64, runs: usize) {
    println!("### Through `loopx run --once --json` (release binary, PTY included)");
    println!();
    println!(
        "| format | run | output_bytes | outcome | slice time | slice MB/s | process wall | wall MB/s | CPU (loopx + agent) | loopx peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut summary = Vec::new();
    for format in &FORMATS {
        let mut speeds = Vec::new();
        let mut rss = Vec::new();
        for run in 1..=runs {
            let dir = tempfile::tempdir().expect("temp dir");
            project(dir.path(), format, bytes);
            let r = measure(dir.path());
            let speed = mb_per_s(r.output_bytes, r.slice);
            speeds.push(speed);
            rss.push(r.rss_kib as f64 / 1024.0);
            println!(
                "| {} | {run} | {} ({:+}) | {} ({}) | {:.2} s | {speed:.0} | {:.2} s | {:.0} | {:.2} s | {:.1} MiB |",
                format.name,
                r.output_bytes,
                r.output_bytes as i64 - bytes as i64,
                r.outcome,
                r.reason,
                r.slice.as_secs_f64(),
                r.wall.as_secs_f64(),
                mb_per_s(r.output_bytes, r.wall),
                r.cpu.as_secs_f64(),
                r.rss_kib as f64 / 1024.0,
            );
        }
        summary.push((format, speeds, rss));
    }
    println!();
    for (format, speeds, rss) in summary {
        let (median, min, max) = spread(&speeds);
        let (rss_median, rss_min, rss_max) = spread(&rss);
        let bare = bare_flood(format.line, bytes);
        println!(
            "through loopx, {}: median {median:.0} MB/s ({min:.0}–{max:.0}); peak RSS median {rss_median:.1} MiB ({rss_min:.1}–{rss_max:.1}); the flood alone into a pipe: {:.0} MB/s",
            format.name,
            mb_per_s(bytes, bare)
        );
    }
    println!();
}

/// A project whose one agent `flood` prints `bytes` bytes of `format.line`.
fn project(dir: &Path, format: &Format, bytes: u64) {
    loopx(dir, &["init"]);
    loopx(dir, &["goal", "start", "Bench"]);
    let script = dir.join("flood.sh");
    let text = format!(
        "#!/bin/sh\n{}stty -opost\nyes '{}' | head -c {bytes}\n",
        format.script_head, format.line
    );
    std::fs::write(&script, text).expect("script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).expect("chmod");
    let profile = format!(
        "adapter = \"{}\"\nprogram = \"{}\"\npermission = \"workspace-write\"\n[limits]\nmax_time = \"30m\"\n",
        format.adapter,
        script.display()
    );
    std::fs::write(dir.join(".loopx/profiles/flood.toml"), profile).expect("profile");
    loopx(dir, &["agent", "add", "flood", "--profile", "flood"]);
    loopx(dir, &["todo", "add", "Flood"]);
}

fn loopx(dir: &Path, args: &[&str]) {
    let out = Command::new(loopx_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("loopx runs");
    assert!(
        out.status.success(),
        "loopx {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the helper (`--measure-run DIR`) and reads its answer.
fn measure(dir: &Path) -> Run {
    let exe = std::env::current_exe().expect("this bench's path");
    let out = Command::new(exe)
        .arg("--measure-run")
        .arg(dir)
        .stderr(Stdio::inherit())
        .output()
        .expect("the helper runs");
    assert!(out.status.success(), "the helper failed");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("the helper's JSON");
    assert_eq!(answer["status"], 0, "loopx run failed: {answer}");
    let slice = &answer["run"]["slice"];
    assert!(slice.is_object(), "no slice ran: {answer}");
    let num = |v: &Value| v.as_u64().expect("a number");
    Run {
        slice: Duration::from_millis(num(&slice["duration_ms"])),
        wall: Duration::from_micros(num(&answer["wall_us"])),
        output_bytes: num(&slice["output_bytes"]),
        outcome: slice["outcome"].as_str().unwrap_or("?").to_owned(),
        reason: slice["reason"].as_str().unwrap_or("?").to_owned(),
        rss_kib: num(&answer["rss_kib"]),
        cpu: Duration::from_micros(num(&answer["cpu_us"])),
    }
}

/// The helper: `loopx run --once --json` in `dir`, its only child, then its rusage.
fn measure_run(dir: &Path) {
    let started = Instant::now();
    let out = Command::new(loopx_bin())
        .args(["run", "--once", "--json"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("loopx run starts");
    let wall = started.elapsed();
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    let micros = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    let run: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&out.stdout).into_owned()));
    let answer = json!({
        "status": out.status.code(),
        "stderr": String::from_utf8_lossy(&out.stderr),
        "wall_us": wall.as_micros() as u64,
        // Linux: KiB.
        "rss_kib": usage.max_rss(),
        "cpu_us": micros(usage.user_time()) + micros(usage.system_time()),
        "run": run,
    });
    println!("{answer}");
}

/// The same flood without loopx or a PTY: the script's pipeline into a pipe this bench drains.
fn bare_flood(line: &str, bytes: u64) -> Duration {
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("yes '{line}' | head -c {bytes}"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; CHUNK];
    let mut read = 0u64;
    loop {
        let n = stdout.read(&mut buf).expect("read the flood");
        if n == 0 {
            break;
        }
        read += n as u64;
    }
    assert!(child.wait().expect("sh ends").success());
    assert_eq!(read, bytes);
    started.elapsed()
}

/// Median, min and max.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1],
    )
}

fn mb_per_s(bytes: u64, took: Duration) -> f64 {
    bytes as f64 / 1e6 / took.as_secs_f64()
}

fn cores() -> String {
    std::thread::available_parallelism().map_or_else(|_| "?".into(), |n| n.to_string())
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "?".into(),
        |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "?".into())
}
