//! Stopping a slice and sweeping what it leaves: nothing of it may survive.

use std::time::{Duration, Instant};

use loopx_pty::{ChildStatus, SliceEvent, SliceExit, StopReason, spawn_slice};
use nix::sys::signal::Signal;

use crate::support::{assert_all_gone, pids, spec, wait_for_text};

#[tokio::test]
async fn wall_timeout_kills_an_agent_that_ignores_sigterm() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ignores-sigterm.sh", &[]);
    spec.limits.wall = Some(Duration::from_secs(1));
    let grace = spec.limits.grace;
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    wait_for_text(&mut events, "ready pid=").await;
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::TimedOut);
    assert_eq!(report.status, Some(ChildStatus::Signaled(Signal::SIGKILL)));
    let wall = Duration::from_secs(1);
    assert!(report.duration >= wall, "{:?}", report.duration);
    assert!(
        report.duration <= wall + grace + Duration::from_secs(1),
        "took {:?}",
        report.duration
    );
    assert_all_gone(&[report.pid]).await;
}

#[tokio::test]
async fn idle_timeout_fires_after_output_stops() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "waits-for-input.sh", &[]);
    let idle = Duration::from_secs(1);
    spec.limits.idle = Some(idle);
    let grace = spec.limits.grace;
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    wait_for_text(&mut events, "Proceed?").await;
    let quiet_since = Instant::now();
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Idle);
    let after_output = quiet_since.elapsed();
    assert!(
        after_output <= idle + grace + Duration::from_secs(1),
        "idle stop took {after_output:?}"
    );
    assert_all_gone(&[report.pid]).await;
}

#[tokio::test]
async fn job_control_groups_are_all_stopped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "job-control.sh", &[]);
    let grace = spec.limits.grace;
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    let mut text = wait_for_text(&mut events, "ready pid=").await;
    if !text.contains("stubborn-ready") {
        text.push_str(&wait_for_text(&mut events, "stubborn-ready").await);
    }
    drop(events);
    let jobs = pids(&text, "job");
    assert_eq!(jobs.len(), 3, "{text}");
    // Each job leads its own process group: the groups really are separate.
    for &job in &jobs {
        let pgid =
            nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(job as i32))).expect("job alive");
        assert_eq!(pgid.as_raw() as u32, job);
    }
    let stop_at = Instant::now();
    slice.stop();
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Stopped(StopReason::Requested));
    assert!(
        stop_at.elapsed() <= grace + Duration::from_secs(1),
        "{:?}",
        stop_at.elapsed()
    );
    let mut all = jobs;
    all.push(report.pid);
    assert_all_gone(&all).await;
}

#[tokio::test]
async fn a_nohup_grandchild_is_swept_after_a_normal_exit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_str().expect("utf-8 tempdir").to_owned();
    let spec = spec(tmp.path(), "leaks-grandchild.sh", &[&dir]);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    let grandchild = pids(&report.text, "grandchild");
    assert_eq!(grandchild.len(), 1, "{}", report.text);
    assert_eq!(report.leftover_pids, grandchild);
    assert_eq!(report.leftover_count, 1);
    assert_all_gone(&[report.pid, grandchild[0]]).await;
}

#[tokio::test]
async fn a_setsid_escapee_is_found_by_its_marker() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_str().expect("utf-8 tempdir").to_owned();
    let spec = spec(tmp.path(), "escapes-setsid.sh", &[&dir]);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::Exited(0));
    let escapee = pids(&report.text, "escapee");
    let child = pids(&report.text, "escapee-child");
    assert_eq!((escapee.len(), child.len()), (1, 1), "{}", report.text);
    assert!(report.leftover_pids.contains(&escapee[0]), "{report:?}");
    assert!(report.leftover_pids.contains(&child[0]), "{report:?}");
    assert_eq!(report.leftover_count, report.leftover_pids.len());
    assert!(
        report.capture_complete,
        "the escapee held the terminal until swept"
    );
    assert_all_gone(&[report.pid, escapee[0], child[0]]).await;
}

#[tokio::test]
async fn a_second_stop_kills_without_waiting_for_the_grace_period() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "ignores-sigterm.sh", &[]);
    spec.limits.grace = Duration::from_secs(60);
    let (mut slice, mut events) = spawn_slice(spec).expect("spawn");
    wait_for_text(&mut events, "ready pid=").await;
    slice.stop();
    // The first stop is visible before the second is sent, so this tests escalation.
    loop {
        match events.next().await.expect("events until exit") {
            SliceEvent::Stopping(reason) => {
                assert_eq!(reason, SliceExit::Stopped(StopReason::Requested));
                break;
            }
            _ => continue,
        }
    }
    let second = Instant::now();
    slice.stop();
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.status, Some(ChildStatus::Signaled(Signal::SIGKILL)));
    assert!(
        second.elapsed() < Duration::from_secs(10),
        "{:?}",
        second.elapsed()
    );
    assert_all_gone(&[report.pid]).await;
}

#[tokio::test]
async fn dropping_the_handle_kills_the_slice() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = spec(tmp.path(), "ignores-sigterm.sh", &[]);
    let (slice, mut events) = spawn_slice(spec).expect("spawn");
    let text = wait_for_text(&mut events, "ready pid=").await;
    let pid = pids(&text, "pid")[0];
    assert_eq!(pid, slice.pid());
    drop(slice);
    let mut last = None;
    while let Some(event) = tokio::time::timeout(crate::support::DEADLINE, events.next())
        .await
        .expect("events end after the kill")
    {
        last = Some(event);
    }
    assert_eq!(
        last,
        Some(SliceEvent::Exited(SliceExit::Stopped(
            StopReason::HandleDropped
        )))
    );
    assert_all_gone(&[pid]).await;
}

#[tokio::test]
async fn output_over_the_cap_stops_the_slice() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = spec(tmp.path(), "flood.sh", &["104857600"]);
    spec.limits.output_bytes = Some(1 << 20);
    let (mut slice, events) = spawn_slice(spec).expect("spawn");
    drop(events);
    let report = slice.wait().await.expect("report");
    assert_eq!(report.exit, SliceExit::OutputCapped);
    assert!(report.bytes_total > 1 << 20, "{}", report.bytes_total);
    assert!(report.bytes_total < 100 << 20, "{}", report.bytes_total);
    assert_eq!(
        report.bytes_logged + report.bytes_dropped,
        report.bytes_total
    );
    assert_all_gone(&[report.pid]).await;
}

#[test]
fn shutting_down_the_runtime_kills_the_slice() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (slice, pid) = runtime.block_on(async {
        let spec = spec(tmp.path(), "ignores-sigterm.sh", &[]);
        let (slice, mut events) = spawn_slice(spec).expect("spawn");
        wait_for_text(&mut events, "ready pid=").await;
        let pid = slice.pid();
        (slice, pid)
    });
    // The control task is dropped mid-slice; its guard must kill everything synchronously.
    drop(runtime);
    let check = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    check.block_on(assert_all_gone(&[pid]));
    drop(slice);
}
