//! The outcome of a slice: the stream first, the exit code last, and loopx's own limits over
//! a stream that never finished.

use loopx_adapters::{Classification, FinishKind, StreamSummary, classify};
use loopx_pty::{SliceExit, StopReason};

use super::stream::{Ran, exit_code};

/// A slice's outcome, why, and how its process ended.
#[derive(Debug, Clone)]
pub(crate) struct Judged {
    pub outcome: String,
    pub reason: String,
    /// `exit 0`, `signal SIGKILL`, `timed out`; `None` when nothing started.
    pub exit: Option<String>,
    /// The stream's classification (with the report), when a process ran.
    pub classification: Option<Classification>,
}

pub(crate) fn judge(ran: &Ran) -> Judged {
    let report = match &ran.report {
        Ok(report) => report,
        Err(why) => {
            return Judged {
                outcome: "spawn_failed".to_owned(),
                reason: format!("the agent could not be started: {why}"),
                exit: None,
                classification: None,
            };
        }
    };
    let c = classify(&ran.summary, exit_code(&report.exit));
    let (outcome, reason) = match enforced(&report.exit, &ran.summary) {
        Some((outcome, reason)) => (outcome.to_owned(), reason),
        None => (c.outcome.name().to_owned(), c.reason.clone()),
    };
    let reason = if report.leftover_count > 0 {
        format!(
            "{reason}; {} leftover process(es) were stopped after the agent exited",
            report.leftover_count
        )
    } else {
        reason
    };
    Judged {
        outcome,
        reason,
        exit: Some(describe_exit(&report.exit)),
        classification: Some(c),
    }
}

/// An outcome loopx decided itself, unless the stream had already finished successfully (then
/// the work is done and only the exit was late).
fn enforced(exit: &SliceExit, summary: &StreamSummary) -> Option<(&'static str, String)> {
    let finished = summary
        .finish
        .as_ref()
        .is_some_and(|f| f.kind == FinishKind::Success);
    if finished {
        return None;
    }
    match exit {
        SliceExit::TimedOut => Some((
            "timed_out",
            "the slice reached its wall-time limit and was stopped".to_owned(),
        )),
        SliceExit::Idle => Some((
            "stalled",
            "the agent printed nothing for its idle limit and was stopped".to_owned(),
        )),
        SliceExit::OutputCapped => Some((
            "failed",
            "the agent's output passed the profile's cap and the slice was stopped".to_owned(),
        )),
        SliceExit::Stopped(_) => Some(("interrupted", "the slice was stopped".to_owned())),
        SliceExit::SpawnFailed(why) => Some((
            "spawn_failed",
            format!("the agent could not be started: {why}"),
        )),
        SliceExit::Exited(_) | SliceExit::Signaled(_) | SliceExit::StatusLost => None,
    }
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
