//! Capturing hostile output: floods, huge lines, random bytes, control sequences. Exact counts,
//! bounded memory, safe text.

use std::time::{Duration, Instant};

use loopx_pty::{SliceEvent, SliceExit, spawn_slice};

use crate::support::{peak_rss_bytes, spec, wait_for_text};

const MIB: u64 = 1 << 20;

/// Asserts the log is exactly head + marker + tail, and the counts add up.
fn assert_capped_log(report: &loopx_pty::SliceReport, head: usize, tail: usize) {
    let log = std::fs::read(&report.log_path).expect("read log");
    assert_eq!(report.bytes_logged, (head + tail) as u64);
    assert_eq!(
        report.bytes_logged + report.bytes_dropped,
        report.bytes_total
    );
    let marker = format!("[loopx: {} bytes dropped here;", report.bytes_dropped);
    let text = String::from_utf8_lossy(&log[head..log.len() - tail]);
    assert!(text.contains(&marker), "marker missing: {text:?}");
    assert!(log.len() < head + tail + 200, "log is {} bytes", log.len());
}

/// Floods `size` bytes while reading every event, as a supervisor feeding a parser would;
/// checks exact counts, the capped log, memory, and the stated time bound.
async fn flood(size: u64) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "flood.sh", &[&size.to_string()]);
    let (head, tail) = (spec.log.head_bytes, spec.log.tail_bytes);
    let started = Instant::now();
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    let mut streamed = 0u64;
    while let Some(event) = events.next().await {
        if let SliceEvent::Output(bytes) = event {
            streamed += bytes.len() as u64;
        }
    }
    let report = slice.wait().await.expect("report");
    let elapsed = started.elapsed();
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert_eq!(report.bytes_total, size);
    assert_eq!(streamed, size);
    assert_capped_log(&report, head, tail);
    assert!(
        report
            .text
            .starts_with("the quick brown fox jumps over the lazy dog\n")
    );
    assert!(
        report
            .text
            .contains(&format!("[loopx: {} bytes dropped]", report.bytes_dropped))
    );
    let peak = peak_rss_bytes();
    assert!(peak < 64 * MIB, "peak RSS {} MiB", peak / MIB);
    assert!(elapsed < Duration::from_secs(60), "took {elapsed:?}");
}

#[tokio::test]
async fn a_256_mib_flood_is_counted_exactly_in_bounded_memory() {
    flood(256 * MIB).await;
}

#[tokio::test]
#[ignore = "about 40 s in a debug build on 2 cores; run with `--run-ignored all`, or see the capture bench"]
async fn a_one_gib_flood_is_counted_exactly_in_bounded_memory() {
    flood(1024 * MIB).await;
}

#[tokio::test]
async fn a_single_256_mib_line_is_counted_exactly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let size: u64 = 256 * MIB;
    let spec = spec(tmp.path(), "long-line.sh", &[&size.to_string()]);
    let (head, tail) = (spec.log.head_bytes, spec.log.tail_bytes);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert_eq!(report.bytes_total, size);
    assert_capped_log(&report, head, tail);
    // The head survives whole; the tail has no newline to resynchronise on, so only the head
    // and the marker are shown.
    assert!(
        report.text.starts_with(&"x".repeat(head)),
        "head of text view"
    );
    assert!(
        report
            .text
            .contains(&format!("[loopx: {} bytes dropped]", report.bytes_dropped))
    );
    assert!(
        peak_rss_bytes() < 64 * MIB,
        "peak RSS {} MiB",
        peak_rss_bytes() / MIB
    );
}

#[tokio::test]
async fn random_bytes_give_exact_counts_and_printable_text() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let size: u64 = 32 * MIB;
    let spec = spec(tmp.path(), "random-bytes.sh", &[&size.to_string()]);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert_eq!(report.bytes_total, size);
    assert_eq!(report.bytes_logged + report.bytes_dropped, size);
    assert_printable(&report.text);
    assert_printable(&report.screen);
}

#[tokio::test]
async fn control_sequences_are_stripped_from_the_text_view() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "control-sequences.sh", &[]);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    let raw = std::fs::read(&report.log_path).expect("read log");
    assert_eq!(raw.len() as u64, report.bytes_total);
    assert!(raw.contains(&0x1b), "the raw log keeps everything");
    let text = &report.text;
    assert_printable(text);
    for expected in [
        "visible-red\n",
        "bad-utf8:\u{fffd}\u{fffd}\u{fffd}\n",
        "c1:[31mX\n",
        "bidi:reversed\n",
        "link\n",
        "END-OF-SEQUENCES",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from {text:?}"
        );
    }
    assert!(!text.contains("evil title"), "{text:?}");
}

#[tokio::test]
async fn cursor_position_queries_are_answered() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "asks-cursor-position.sh", &[]);
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    wait_for_text(&mut events, "reply=").await;
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    assert!(report.text.contains("reply=E[1;6R"), "{:?}", report.text);
}

fn assert_printable(text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && c != '\t' && c.is_control())
        .take(5)
        .collect();
    assert!(bad.is_empty(), "control characters in text: {bad:?}");
}

#[tokio::test]
async fn a_credential_never_reaches_the_log_even_split_across_reads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "prints-secret-slowly.sh", &[]);
    spec.log.mask = vec![b"deploy-3f9a8b7c6d5e".to_vec()];
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    let log = std::fs::read_to_string(&report.log_path).expect("read log");
    assert!(!log.contains("deploy-3f9a"), "{log:?}");
    assert!(log.contains("token=*******************"), "{log:?}");
    assert!(log.contains("bye"), "{log:?}");
    assert!(!report.text.contains("deploy-3f9a"), "{:?}", report.text);
    assert_eq!(
        report.bytes_logged, report.bytes_total,
        "masking keeps the counts"
    );
    assert_eq!(report.bytes_total, log.len() as u64);
}
