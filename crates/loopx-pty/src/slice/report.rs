//! How a slice ended, as types.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::spec::SliceId;

/// How a slice ended. Reasons decided by loopx (time, idle, output, a stop request) win over
/// the agent's own exit status, which is kept in [`SliceReport::status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceExit {
    /// The agent exited by itself with this code (0 included).
    Exited(i32),
    /// The agent was killed by a signal loopx did not send.
    Signaled(Signal),
    /// The wall-time limit was reached; loopx stopped the slice.
    TimedOut,
    /// No output for the idle limit; loopx stopped the slice.
    Idle,
    /// The output cap was exceeded; loopx stopped the slice.
    OutputCapped,
    /// Stopped on request.
    Stopped(StopReason),
    /// The agent never really started: it exited within 200 ms with status 127 or SIGABRT,
    /// which is how a failed `exec` after portable-pty's fork shows up. The text says why.
    SpawnFailed(String),
    /// The agent ended but its status was taken by another `waitpid` caller in this process
    /// (e.g. a `SIGCHLD` handler reaping every child), so it is unknown.
    StatusLost,
}

/// Why a slice was stopped on request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// [`SliceControl::stop`](crate::SliceControl::stop) or
    /// [`SliceControl::kill_now`](crate::SliceControl::kill_now).
    Requested,
    /// The [`RunningSlice`](crate::RunningSlice) handle was dropped before the slice ended.
    HandleDropped,
}

/// What `waitpid` said about the agent (the session leader).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStatus {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(Signal),
}

/// Everything known about a finished slice.
#[derive(Debug, Clone)]
pub struct SliceReport {
    /// The slice.
    pub slice_id: SliceId,
    /// The agent's pid (also its process group and session id).
    pub pid: u32,
    /// How it ended.
    pub exit: SliceExit,
    /// The agent's own status; `None` if it could not be reaped (reaped elsewhere).
    pub status: Option<ChildStatus>,
    /// From spawn to the end of the sweep.
    pub duration: Duration,
    /// Every byte the agent printed.
    pub bytes_total: u64,
    /// Bytes of output kept in the log.
    pub bytes_logged: u64,
    /// Bytes dropped from the middle of the log.
    pub bytes_dropped: u64,
    /// Processes of the slice still running after the agent had exited: found by the final
    /// sweep (same session, or carrying `LOOPX_SLICE=<id>`) and terminated by it.
    pub leftover_count: usize,
    /// Their pids.
    pub leftover_pids: Vec<u32>,
    /// Processes that survived even SIGKILL (e.g. stuck in uninterruptible I/O). Normally empty.
    pub survivors: Vec<u32>,
    /// The screen had been unchanged for the waiting threshold when the slice ended.
    pub waiting_for_input: bool,
    /// ANSI-stripped head and tail of the output: valid UTF-8, no control sequences.
    pub text: String,
    /// The final screen contents.
    pub screen: String,
    /// The raw output log.
    pub log_path: PathBuf,
    /// False if the terminal never reached EOF (a leftover survived the sweep and holds it);
    /// then the log lacks its tail and `bytes_logged`/`bytes_dropped` are zero.
    pub capture_complete: bool,
    /// A log write error (e.g. disk full: logging stopped there, counting did not) or a
    /// terminal read error (capture ended early).
    pub capture_error: Option<String>,
    /// The kernel killed processes of the slice for its cgroup's memory limit (the agent
    /// itself, when its [`SliceReport::status`] is SIGKILL and loopx sent none).
    pub memory_limit_hit: Option<crate::MemoryLimitHit>,
}

/// Something observed while a slice runs. The stream ends after [`SliceEvent::Exited`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceEvent {
    /// Raw output, in order, every byte.
    Output(Vec<u8>),
    /// The screen has been unchanged for the waiting threshold; it shows this text. loopx never
    /// answers: the caller decides (a gate, a timeout).
    WaitingForInput {
        /// The visible screen, trailing blank lines removed.
        screen: String,
    },
    /// The screen changed again after [`SliceEvent::WaitingForInput`].
    WaitingEnded,
    /// loopx started stopping the slice (SIGTERM sent) for this reason.
    Stopping(SliceExit),
    /// The slice is over and swept; the full report comes from `wait`.
    Exited(SliceExit),
}
