//! `run_once`: one decision and, when it says so, one slice of one agent, end to end.

use std::path::PathBuf;
use std::sync::Arc;

use loopx_kernel::model::SliceKind;
use loopx_kernel::{Project, SliceId, Timestamp, TodoId};
use loopx_quota::Decision;

use crate::commit::SliceSummary;
use crate::errors::SupervisorError;
use crate::shutdown::Shutdown;
use crate::slice::{self, Began, Next};

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOnce {
    pub project: Project,
    /// The agent; default: the first registered agent in name order.
    pub agent: Option<String>,
    /// The running loopx executable (the demo adapter launches it).
    pub loopx_exe: PathBuf,
    /// Stops the slice when the supervisor is asked to stop.
    pub shutdown: Arc<Shutdown>,
}

/// A step worth telling the user about, as it happens.
#[derive(Debug)]
pub enum Step<'a> {
    Decided {
        agent: &'a str,
        decision: &'a Decision,
        now: Timestamp,
    },
    Claimed {
        agent: &'a str,
        todo: TodoId,
        epoch: u64,
        /// The agent already held the lease.
        held: bool,
    },
    Started {
        agent: &'a str,
        slice: SliceId,
        kind: SliceKind,
        todo: Option<TodoId>,
        log: &'a str,
    },
    Spawned {
        slice: SliceId,
        pid: u32,
    },
    Ended(&'a SliceSummary),
}

/// How `run_once` ended.
#[derive(Debug, Clone)]
pub enum Once {
    /// The decision was not to run (stop, ask, wait, quiet).
    Decided { agent: String, decision: Decision },
    /// The decision was to run, and quota admission said wait.
    Refused {
        agent: String,
        decision: Decision,
        until: Option<Timestamp>,
        reason: String,
    },
    /// Someone else got there between the decision and the begin (a peer claimed the todo, or
    /// another supervisor started a slice on it): decide again. Nothing was left behind.
    Contended {
        agent: String,
        decision: Decision,
        why: String,
    },
    /// A stop was requested before the agent was spawned: nothing ran (a slice already begun
    /// is recorded `interrupted`).
    Stopped { agent: String, why: String },
    /// A slice ran.
    Ran {
        decision: Decision,
        /// Boxed: a summary is several times the size of the other variants.
        slice: Box<SliceSummary>,
    },
}

/// Decides for the agent and, on `deliver` or `repair`, runs one slice and writes it back.
///
/// Reads top to bottom as the slice's life (`slice.rs`): each stage consumes the previous
/// one's state. From the begin on, the slice's guard records it `interrupted` if a later stage
/// fails, panics, or is stopped.
pub fn run_once(req: &RunOnce, on_step: &mut dyn FnMut(Step<'_>)) -> Result<Once, SupervisorError> {
    let decided = match slice::decide(req, on_step)? {
        Next::Run(decided) => *decided,
        Next::Done(once) => return Ok(*once),
    };
    let agent = decided.setup.agent.name.to_string();
    if let Some(why) = req.shutdown.reason() {
        return Ok(Once::Stopped { agent, why });
    }
    let decision = decided.decision.clone();
    let begun = match decided.begin(req, on_step)? {
        Began::Begun(begun) => *begun,
        Began::Not(once) => return Ok(*once),
    };
    let Some(launched) = begun.launch(req, on_step)? else {
        let why = req.shutdown.reason().unwrap_or_default();
        return Ok(Once::Stopped { agent, why });
    };
    let observed = launched.observe(req);
    let summary = observed.write_back(req)?;
    on_step(Step::Ended(&summary));
    Ok(Once::Ran {
        decision,
        slice: Box::new(summary),
    })
}
