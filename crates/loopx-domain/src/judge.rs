//! Judging a slice: its outcome from the stream first, the exit code last, and loopx's own
//! limits over a stream that never finished; then whether a `progress` moved anything a person
//! could see ([`progress`]) and whether a `done` holds the proof the project asks for
//! ([`verified`]). The same for an agent in a PTY and a simulated one.

pub mod progress;
pub mod verified;

use loopx_adapters::{Classification, DoneWhen, FinishKind, Outcome, StreamSummary, classify_for};
use loopx_git::scope::SliceChanges;
use loopx_git::worktree::SliceCommit;
use loopx_kernel::Timestamp;
use loopx_pty::{SliceExit, SliceReport, StopReason};

/// How an agent ended, in a PTY or simulated: what it printed (parsed), how its process
/// ended, when, what it reported through the channel, its claim, and (once the slice checked
/// them) the changes it left. The same for both, so that everything after it (judging, the
/// scope check, the writeback) is one path.
#[derive(Debug)]
pub struct AgentEnd {
    /// How its process ended: its own exit, or one of loopx's limits; or why it never started.
    pub exit: Result<SliceExit, String>,
    /// The parsed stream (empty when nothing started).
    pub summary: StreamSummary,
    /// loopx stopped the agent because the vendor refused it (a `rejected` limit event, or
    /// credentials refused).
    pub stopped_for_refusal: bool,
    /// loopx stopped the agent at the slice's token ceiling (the figure), by the usage it
    /// reported.
    pub stopped_at_ceiling: Option<u64>,
    /// Processes it left behind, stopped after it exited.
    pub leftovers: u32,
    /// Bytes it printed.
    pub bytes: u64,
    /// Why its log was cut short, if it was.
    pub capture_error: Option<String>,
    /// The kernel killed processes of the slice for its memory limit.
    pub memory_limit_hit: Option<loopx_pty::MemoryLimitHit>,
    /// Its pid (none when it never spawned, or was simulated).
    pub pid: Option<u32>,
    /// What contained the agent (`Sandbox::describe`).
    pub containment: &'static str,
    /// What the agent wrote through the report channel: its todo done (in a worktree goal the
    /// todo is finished when its branch lands, at the writeback), and other items.
    pub reported: ChannelReports,
    /// When it ended, on the wall clock.
    pub at: Timestamp,
    /// How long it ran, on the monotonic clock: a wall clock stepped meanwhile does not make
    /// a slice look a day long.
    pub elapsed: std::time::Duration,
    /// Why its claim was lost, if it was.
    pub lost: Option<String>,
    /// What it changed, checked against the goal's scope (filled in once it ended).
    pub changes: SliceChanges,
    /// Its commit in its todo's worktree (a worktree goal).
    pub commit: Option<SliceCommit>,
}

impl AgentEnd {
    /// An agent in a PTY that printed `summary`, its process ended as the PTY's `report` says
    /// (or never started, and why); when, what it reported and its claim are the caller's.
    pub fn new(report: Result<SliceReport, String>, summary: StreamSummary) -> AgentEnd {
        let mut end = AgentEnd {
            exit: Err(String::new()),
            summary,
            stopped_for_refusal: false,
            stopped_at_ceiling: None,
            leftovers: 0,
            bytes: 0,
            capture_error: None,
            memory_limit_hit: None,
            pid: None,
            containment: "",
            reported: ChannelReports::default(),
            at: Timestamp(0),
            elapsed: std::time::Duration::ZERO,
            lost: None,
            changes: SliceChanges::default(),
            commit: None,
        };
        match report {
            Ok(report) => {
                end.exit = Ok(report.exit);
                end.leftovers = u32::try_from(report.leftover_count).unwrap_or(u32::MAX);
                end.bytes = report.bytes_total;
                end.capture_error = report.capture_error;
                end.memory_limit_hit = report.memory_limit_hit;
            }
            Err(why) => end.exit = Err(why),
        }
        end
    }
}

/// The exit code to classify with: the agent's own code when it exited by itself.
pub fn exit_code(exit: &SliceExit) -> Option<i32> {
    match exit {
        SliceExit::Exited(code) => Some(*code),
        _ => None,
    }
}

/// What an agent wrote through its slice's channel: whether it reported its todo done, and how
/// many other items (todos, evidence, handoffs, questions) were written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelReports {
    pub done: bool,
    pub items: u32,
}

/// A slice's outcome, why, and how its process ended.
#[derive(Debug, Clone)]
pub struct Judged {
    pub outcome: Outcome,
    pub reason: String,
    /// Processes the agent left behind that were stopped after it exited.
    pub leftovers: u32,
    /// `exit 0`, `signal SIGKILL`, `timed out`; `None` when nothing started.
    pub exit: Option<String>,
    /// The stream's classification (with the report), when a process ran.
    pub classification: Option<Classification>,
    /// The disk was full at the slice's end, in words naming it and what to do: the slice
    /// failed, and the run stops with this error.
    pub disk_full: Option<String>,
}

/// Judges a slice of a profile whose todos are done `done_when`.
pub fn judge(end: &AgentEnd, done_when: &DoneWhen) -> Judged {
    let exit = match &end.exit {
        Ok(exit) => exit,
        Err(why) => {
            return Judged {
                outcome: Outcome::SpawnFailed,
                reason: format!("the agent could not be started: {why}"),
                leftovers: 0,
                exit: None,
                classification: None,
                disk_full: None,
            };
        }
    };
    let c = classify_for(&end.summary, exit_code(exit), done_when);
    // loopx stopped the agent itself because the vendor refused it: the refusal is the outcome.
    let enforced = match end.stopped_for_refusal {
        true => None,
        false => enforced(exit, &end.summary),
    };
    let (outcome, reason) = match enforced {
        Some((outcome, reason)) => (outcome, reason),
        None if end.stopped_for_refusal => (
            c.outcome,
            format!(
                "{}; loopx stopped the agent at once (it may hang after a refusal)",
                c.reason
            ),
        ),
        None => (c.outcome, c.reason.clone()),
    };
    let reason = match end.stopped_at_ceiling {
        Some(max) if outcome == Outcome::Interrupted => format!(
            "loopx stopped the agent when it had spent {max} tokens, the slice's ceiling: more would take its account's window more than 25 % past its budget"
        ),
        _ => reason,
    };
    let (reason, exit) = match end.memory_limit_hit {
        Some(hit) => out_of_memory(hit, exit, reason, finished(&end.summary)),
        None => (reason, describe_exit(exit)),
    };
    let reason = if end.leftovers > 0 {
        format!(
            "{reason}; {} leftover process(es) were stopped after the agent exited",
            end.leftovers
        )
    } else {
        reason
    };
    Judged {
        outcome,
        reason,
        leftovers: end.leftovers,
        exit: Some(exit),
        classification: Some(c),
        disk_full: None,
    }
}

/// An outcome loopx decided itself, unless the stream had already finished successfully (then
/// the work is done and only the exit was late).
fn enforced(exit: &SliceExit, summary: &StreamSummary) -> Option<(Outcome, String)> {
    if finished(summary) {
        return None;
    }
    match exit {
        SliceExit::TimedOut => Some((
            Outcome::TimedOut,
            "the slice reached its wall-time limit and was stopped".to_owned(),
        )),
        SliceExit::Idle => Some((
            Outcome::Stalled,
            "the agent printed nothing for its idle limit and was stopped".to_owned(),
        )),
        SliceExit::OutputCapped => Some((
            Outcome::Failed,
            "the agent's output passed the profile's `max_output` and `kill_on_output` stopped it"
                .to_owned(),
        )),
        SliceExit::Stopped(_) => Some((Outcome::Interrupted, "the slice was stopped".to_owned())),
        SliceExit::SpawnFailed(why) => Some((
            Outcome::SpawnFailed,
            format!("the agent could not be started: {why}"),
        )),
        SliceExit::Exited(_) | SliceExit::Signaled(_) | SliceExit::StatusLost => None,
    }
}

/// Whether the stream reported the agent's work finished successfully.
fn finished(summary: &StreamSummary) -> bool {
    summary
        .finish
        .as_ref()
        .is_some_and(|f| f.kind == FinishKind::Success)
}

/// The reason and exit text of a slice whose processes the kernel killed for its memory limit:
/// the agent itself (SIGKILL that loopx did not send; a stream that had finished keeps its
/// reason), or processes it started (the agent went on, and the reason says what happened).
fn out_of_memory(
    hit: loopx_pty::MemoryLimitHit,
    exit: &SliceExit,
    reason: String,
    finished: bool,
) -> (String, String) {
    let limit = format!(
        "its memory limit ({})",
        loopx_git::checkpoint::size(hit.limit_bytes)
    );
    let agent_killed = *exit == SliceExit::Signaled(nix::sys::signal::Signal::SIGKILL);
    let exit_text = match agent_killed {
        true => format!("{} (memory limit)", describe_exit(exit)),
        false => describe_exit(exit),
    };
    let reason = match (agent_killed, finished) {
        (true, false) => format!(
            "the agent was killed by {limit}: the slice's processes together used all the memory `[limits] memory_total` allows"
        ),
        _ => format!(
            "{reason}; {} process(es) of the slice were killed by {limit}",
            hit.kills
        ),
    };
    (reason, exit_text)
}

fn describe_exit(exit: &SliceExit) -> String {
    match exit {
        SliceExit::Exited(code) => format!("exit {code}"),
        SliceExit::Signaled(signal) => format!("signal {}", signal.as_str()),
        SliceExit::TimedOut => "timed out".to_owned(),
        SliceExit::Idle => "idle".to_owned(),
        SliceExit::OutputCapped => "output capped".to_owned(),
        SliceExit::Stopped(StopReason::Requested) => "stopped".to_owned(),
        SliceExit::Stopped(StopReason::HandleDropped) => "stopped (handle dropped)".to_owned(),
        SliceExit::SpawnFailed(_) => "spawn failed".to_owned(),
        SliceExit::StatusLost => "status lost".to_owned(),
    }
}
