//! What `loopx run` shows as it goes: one [`RunEvent`] a line (`--json`: one JSON object a
//! line; fields in `docs/cli.md`). The supervisor's coordinator emits them; a notification
//! carries one ([`crate::notify`]).

use loopx_kernel::{AgentName, GateId, SliceId, Timestamp, TodoId};
use serde::Serialize;

use crate::monitor::PollSummary;
use crate::recovery::Recovered;
use crate::run_end::EndReason;
use crate::writeback::SliceSummary;

/// One line of progress (`--json`: one JSON object per line; fields in `docs/cli.md`).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// The loop started.
    Running {
        agents: Vec<AgentName>,
        pid: u32,
    },
    /// An orphaned slice of a dead supervisor was closed.
    Recovered(Recovered),
    SliceStarted {
        agent: AgentName,
        slice: SliceId,
        kind: &'static str,
        todo: Option<TodoId>,
        log: String,
    },
    SliceEnded(Box<SliceSummary>),
    /// The agent waits for quota or a vendor limit (`until: None`: until a person resumes).
    Paused {
        agent: AgentName,
        until: Option<Timestamp>,
        reason: String,
    },
    /// The agent runs again after a pause.
    Resumed {
        agent: AgentName,
    },
    /// A person must answer; shown once per gate.
    Question {
        agent: AgentName,
        gate: GateId,
        question: String,
        options: Vec<String>,
        answer_with: String,
    },
    /// loopx polled a monitor.
    Polled(PollSummary),
    /// Nothing for the agent to do now.
    Quiet {
        agent: AgentName,
        reason: String,
    },
    /// The agent's loop ended (the goal is done or paused, or the agent cannot run).
    AgentStopped {
        agent: AgentName,
        reason: String,
    },
    /// Something went wrong deciding for or running the agent; it tries again later.
    AgentError {
        agent: AgentName,
        error: String,
    },
    /// A stop was requested; running slices are being stopped (`at_once`: killed, after a
    /// second request).
    Stopping {
        reason: String,
        at_once: bool,
    },
    /// The loop ended.
    Finished {
        reason: EndReason,
        slices: u64,
        detail: String,
    },
}
