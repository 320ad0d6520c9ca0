//! `watch` under load: 8 slices each printing 1 MiB/s of coloured text, followed the way
//! `loopx watch` follows them (every log read every 250 ms into its `vt100` screen and its
//! adapter's parser, redacted,
//! and the whole view drawn four times a second at 200×60). Prints the CPU the watching thread
//! used as a share of one core, and the process's peak RSS. The budget (docs/benchmarks.md):
//! a fifth of a core and 64 MiB.
//!
//! `cargo bench -p loopx-watch --bench watch [-- SECONDS]` (default 10 s).

use std::io::Write;
use std::time::{Duration, Instant};

use loopx_kernel::Timestamp;
use loopx_kernel::redact::Redactor;
use loopx_watch::model::{Model, Pane};
use loopx_watch::screen::LiveScreen;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const SLICES: usize = 8;
const BYTES_PER_SEC: usize = 1 << 20;
const TICK: Duration = Duration::from_millis(250);

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().expect("temp dir");
    let paths: Vec<_> = (0..SLICES)
        .map(|i| dir.path().join(format!("s{i}.log")))
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || print_at_rate(&path, i, &stop))
        })
        .collect();

    let redactor = Redactor::for_process_env(&[]);
    let mut screens: Vec<LiveScreen> = paths
        .iter()
        .map(|p| {
            // A plain-text agent's parser reads every byte, as the generic adapter's does.
            let tokens = loopx_adapters::Parser::new(loopx_adapters::OutputFormat::Text);
            LiveScreen::new(p.clone(), Some(tokens))
        })
        .collect();
    let mut model = Model {
        now: Timestamp::now(),
        panes: (0..SLICES).map(pane).collect(),
        ..Model::default()
    };
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    let cpu_before = thread_cpu();
    let started = Instant::now();
    let mut read = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        let tick = Instant::now();
        for (screen, pane) in screens.iter_mut().zip(model.panes.iter_mut()) {
            while screen.read_new() {
                read += 1;
            }
            (pane.screen, pane.focus_row) = screen.lines(&redactor);
        }
        terminal
            .draw(|f| loopx_watch::view::draw(f, &model))
            .expect("draw");
        std::thread::sleep(TICK.saturating_sub(tick.elapsed()));
    }
    let cpu = thread_cpu() - cpu_before;
    let wall = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        let _ = w.join();
    }
    let logged: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    println!(
        "watch: {SLICES} slices, {:.1} MiB printed in {:.1} s ({read} reads); CPU {:.1}% of one core; peak RSS {} MiB",
        logged as f64 / f64::from(1 << 20),
        wall.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        peak_rss_kib() / 1024,
    );
}

fn pane(i: usize) -> Pane {
    Pane {
        agent: format!("agent{i}"),
        slice: format!("s{i}"),
        todo: format!("t{i} Print a flood"),
        started_at: Timestamp::now(),
        limit_secs: 1800,
        tokens: None,
        ended: None,
        orphaned: false,
        screen: Vec::new(),
        focus_row: 0,
    }
}

/// Appends coloured numbered lines to `path` at 1 MiB/s, in 64 KiB steps, until `stop`.
fn print_at_rate(path: &std::path::Path, slice: usize, stop: &std::sync::atomic::AtomicBool) {
    let mut file = std::fs::File::create(path).expect("log");
    let mut chunk = Vec::with_capacity(64 << 10);
    let mut n = 0u64;
    let started = Instant::now();
    let mut written = 0usize;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        chunk.clear();
        while chunk.len() < (64 << 10) - 100 {
            n += 1;
            let _ = writeln!(
                chunk,
                "\x1b[3{}mslice {slice}\x1b[0m line {n}: compiling crate {} of the workspace, all is well",
                n % 7 + 1,
                n % 400
            );
        }
        file.write_all(&chunk).expect("write");
        written += chunk.len();
        // Keep to the rate: ahead of it, wait.
        let due = Duration::from_secs_f64(written as f64 / BYTES_PER_SEC as f64);
        std::thread::sleep(due.saturating_sub(started.elapsed()));
    }
}

/// CPU time of the calling thread, from `/proc` (Linux; no `unsafe` call needed).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // utime and stime are fields 14 and 15, in clock ticks (100 per second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// The process's peak resident set, in KiB (`VmHWM`).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
