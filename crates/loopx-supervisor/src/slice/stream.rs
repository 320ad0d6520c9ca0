//! Spawning the slice and reading its output through the adapter's parser.

use loopx_adapters::{Parser, StreamSummary};
use loopx_pty::{LaunchSpec, SliceControl, SliceEvent, SliceExit, SliceReport, spawn_slice};

/// What running the process gave.
#[derive(Debug)]
pub(crate) struct Ran {
    /// The PTY's report, or why the process never started.
    pub report: Result<SliceReport, String>,
    /// The parsed stream (empty when nothing started).
    pub summary: StreamSummary,
}

/// Spawns `spec`, calls `spawned(pid, control)` once the process exists (to record it and
/// make it stoppable), feeds every
/// output chunk to `parser` as it arrives, and waits for the end and the sweep.
pub(crate) async fn run_slice(
    spec: LaunchSpec,
    stdin: Option<Vec<u8>>,
    mut parser: Parser,
    spawned: impl FnOnce(u32, SliceControl),
) -> Ran {
    let (mut slice, mut events) = match spawn_slice(spec) {
        Ok(pair) => pair,
        Err(e) => {
            return Ran {
                report: Err(crate::errors::chain(&e)),
                summary: parser.into_summary(),
            };
        }
    };
    spawned(slice.pid(), slice.control());
    if let Some(bytes) = stdin
        && let Err(e) = slice.send_input(bytes)
    {
        tracing::warn!(error = %e, "could not type the prompt into the agent's terminal");
    }
    while let Some(event) = events.next().await {
        match event {
            SliceEvent::Output(bytes) => {
                parser.feed_bytes(&bytes, jiff::Timestamp::now());
            }
            SliceEvent::WaitingForInput { screen } => {
                tracing::info!(screen = %screen, "the agent seems to wait for input");
            }
            SliceEvent::Stopping(why) => tracing::info!(?why, "stopping the slice"),
            SliceEvent::WaitingEnded | SliceEvent::Exited(_) => {}
        }
    }
    parser.finish(jiff::Timestamp::now());
    let report = slice.wait().await.map_err(|e| crate::errors::chain(&e));
    Ran {
        report,
        summary: parser.into_summary(),
    }
}

/// The exit code to classify with: the agent's own code when it exited by itself.
pub(crate) fn exit_code(exit: &SliceExit) -> Option<i32> {
    match exit {
        SliceExit::Exited(code) => Some(*code),
        _ => None,
    }
}
