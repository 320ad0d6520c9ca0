//! Capture benchmarks (not part of the test suite): `cargo bench -p loopx-pty --bench capture`.
//!
//! - raw PTY read: portable-pty alone, reading and discarding the flood (the ceiling);
//! - capture throughput and peak memory while an agent prints `LOOPX_BENCH_BYTES` (1 GiB);
//! - spawn-to-first-byte latency, median of `LOOPX_BENCH_SPAWNS` (30) slices.
//!
//! Peak memory is this process's VmHWM after the flood, so the flood runs first.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use loopx_pty::{LaunchSpec, SliceEvent, SliceExit, SliceId, spawn_slice};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

fn agent(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/agents")
        .join(name)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib / 1024.0
}

fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64()
}

fn spec(dir: &Path, id: &str, script: &str, args: &[String]) -> LaunchSpec {
    let mut spec = LaunchSpec::new(
        SliceId::new(id).expect("valid id"),
        agent(script),
        dir,
        dir.join(format!("{id}.log")),
    );
    spec.args = args.iter().map(Into::into).collect();
    spec.env.inherit = vec!["PATH".into()];
    spec
}

/// `masked`: with three API-key-sized credential values to mask in the log, as a slice of a
/// real agent has. `script`: `flood.sh` (plain text) or `flood-colour.sh` (escape sequences on
/// every line: masking looks through them).
async fn capture_flood(dir: &Path, bytes: u64, masked: bool, script: &str) {
    let mut spec = spec(dir, "bench-flood", script, &[bytes.to_string()]);
    if masked {
        spec.log.mask = (0..3)
            .map(|n| format!("sk-ant-api03-{n}{}", "x".repeat(80)).into_bytes())
            .collect();
    }
    let started = Instant::now();
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn flood");
    let mut streamed = 0u64;
    while let Some(event) = events.next().await {
        if let SliceEvent::Output(chunk) = event {
            streamed += chunk.len() as u64;
        }
    }
    let report = slice.wait().await.expect("report");
    let elapsed = started.elapsed();
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert_eq!((report.bytes_total, streamed), (bytes, bytes));
    let with = match (masked, script) {
        (false, _) => "",
        (true, "flood.sh") => ", 3 values masked",
        (true, _) => ", 3 values masked, coloured output",
    };
    println!(
        "capture (events read{with}): {bytes} bytes in {:.2} s = {:.0} MB/s, peak RSS {:.1} MiB",
        elapsed.as_secs_f64(),
        mb_per_s(bytes, elapsed),
        peak_rss_mib()
    );
}

async fn capture_flood_no_events(dir: &Path, bytes: u64) {
    let spec = spec(dir, "bench-flood-quiet", "flood.sh", &[bytes.to_string()]);
    let started = Instant::now();
    let (mut slice, events) = spawn_slice(spec).expect("spawn flood");
    drop(events);
    let report = slice.wait().await.expect("report");
    let elapsed = started.elapsed();
    assert_eq!(report.bytes_total, bytes);
    println!(
        "capture (events dropped): {bytes} bytes in {:.2} s = {:.0} MB/s",
        elapsed.as_secs_f64(),
        mb_per_s(bytes, elapsed)
    );
}

fn raw_pty(bytes: u64) {
    let pair = native_pty_system()
        .openpty(PtySize::default())
        .expect("openpty");
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let _writer = pair.master.take_writer().expect("writer");
    let mut cmd = CommandBuilder::new(agent("flood.sh"));
    cmd.arg(bytes.to_string());
    let started = Instant::now();
    let mut child = pair.slave.spawn_command(cmd).expect("spawn");
    drop(pair.slave);
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0u64;
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n as u64,
        }
    }
    let elapsed = started.elapsed();
    child.wait().expect("reap");
    assert_eq!(total, bytes);
    println!(
        "raw PTY read (ceiling): {bytes} bytes in {:.2} s = {:.0} MB/s",
        elapsed.as_secs_f64(),
        mb_per_s(bytes, elapsed)
    );
}

async fn first_byte_latency(dir: &Path, runs: u64) {
    let mut samples = Vec::new();
    for run in 0..runs {
        let spec = spec(dir, &format!("bench-spawn-{run}"), "ok.sh", &[]);
        let started = Instant::now();
        let (mut slice, mut events) = spawn_slice(spec).expect("spawn ok.sh");
        while let Some(event) = events.next().await {
            if matches!(event, SliceEvent::Output(_)) {
                samples.push(started.elapsed());
                break;
            }
        }
        drop(events);
        slice.wait().await.expect("report");
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    println!(
        "spawn to first byte: median {:.2} ms over {runs} runs (min {:.2}, max {:.2})",
        median.as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
}

/// The terminal emulator alone, fed the flood's text in 4 KiB reads.
fn screen_only(bytes: u64) {
    let line = b"the quick brown fox jumps over the lazy dog\n";
    let chunk: Vec<u8> = line.iter().copied().cycle().take(4096).collect();
    let mut parser = vt100::Parser::new(40, 120, 0);
    let started = Instant::now();
    let mut fed = 0u64;
    while fed < bytes {
        parser.process(&chunk);
        fed += chunk.len() as u64;
    }
    let elapsed = started.elapsed();
    println!(
        "vt100 screen alone: {fed} bytes in {:.2} s = {:.0} MB/s",
        elapsed.as_secs_f64(),
        mb_per_s(fed, elapsed)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    let bytes = env_u64("LOOPX_BENCH_BYTES", 1 << 30);
    let spawns = env_u64("LOOPX_BENCH_SPAWNS", 30);
    loopx_pty::become_child_subreaper().expect("subreaper");
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "loopx-pty capture bench: {} cores",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    runtime.block_on(capture_flood(dir.path(), bytes, false, "flood.sh"));
    runtime.block_on(capture_flood(dir.path(), bytes, true, "flood.sh"));
    runtime.block_on(capture_flood(dir.path(), bytes, true, "flood-colour.sh"));
    runtime.block_on(capture_flood_no_events(dir.path(), bytes));
    raw_pty(bytes);
    screen_only(bytes / 4);
    runtime.block_on(first_byte_latency(dir.path(), spawns));
}
