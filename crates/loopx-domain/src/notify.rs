//! Notifications (`docs/cli.md`, "Notifications"): which run event a person should hear about,
//! what it says, and whether the project's `[notify] command` may run at all. Running the
//! command (on a thread, with a timeout) is the supervisor's.
//!
//! A person hears about a gate opened, an agent paused or resumed, a slice that failed, and the
//! goal done; not about a slice that went fine, nor one another notification covers (a usage
//! limit pauses; a question opens a gate).
//!
//! The command runs outside every slice with loopx's whole environment, so it runs only once a
//! person approved its exact text, like a `full` profile (`approval.rs`): a gate loopx opens,
//! bound by the line `approval: notify sha256=HASH` in its context. A command an agent planted
//! (or any edit) has another hash and waits for its own approval; until then nothing runs.

use loopx_adapters::NotifyConfig;
use loopx_kernel::model::Gate;
use loopx_kernel::{KernelError, Project, Store, Timestamp};
use serde::Serialize;

use crate::approval::{self, Verdict};
use crate::run_event::RunEvent;

/// Slice outcomes a person is not told about: work went fine, or another notification covers
/// it (a usage limit pauses; a question opens a gate).
const UNREMARKABLE: [&str; 4] = ["completed", "progress", "asked", "usage_limited"];

/// What the command reads on stdin: the notification, with the loop's `event` as `loopx run
/// --json` prints it.
#[derive(Debug, Serialize)]
pub struct Notification<'a> {
    /// `gate_opened`, `paused`, `resumed`, `slice_failed` or `goal_done`.
    pub kind: &'static str,
    /// The agent concerned, when one is.
    pub agent: Option<&'a str>,
    /// One line for a person: who needs what.
    pub message: String,
    pub project: String,
    /// The loop's event, as `loopx run --json` prints it.
    pub event: &'a RunEvent,
}

/// The notification for the loop's `event` in the project at `root`, if it calls for one.
pub fn notification<'a>(event: &'a RunEvent, root: &std::path::Path) -> Option<Notification<'a>> {
    let (kind, agent, message) = say(event)?;
    Some(Notification {
        kind,
        agent: Some(agent),
        message,
        project: root.display().to_string(),
        event,
    })
}

/// The notification's kind, the agent concerned and what it says; `None`: a person is not
/// told.
fn say(event: &RunEvent) -> Option<(&'static str, &str, String)> {
    Some(match event {
        RunEvent::Question {
            agent,
            gate,
            question,
            answer_with,
            ..
        } => (
            "gate_opened",
            agent.as_str(),
            format!("{agent} needs an answer to {gate}: {question} ({answer_with})"),
        ),
        RunEvent::Paused {
            agent,
            until,
            reason,
        } => {
            let until = until.map_or_else(|| "a person resumes it".to_owned(), |u| u.to_string());
            (
                "paused",
                agent.as_str(),
                format!("{agent} is paused until {until}: {reason}"),
            )
        }
        RunEvent::Resumed { agent } => ("resumed", agent.as_str(), format!("{agent} resumed work")),
        RunEvent::SliceEnded(s) if s.goal_done => (
            "goal_done",
            s.agent.as_str(),
            format!(
                "the goal is done ({} declared it in slice {})",
                s.agent, s.id
            ),
        ),
        RunEvent::SliceEnded(s) if !UNREMARKABLE.contains(&s.outcome.as_str()) => {
            let on = s.todo.map(|t| format!(" on {t}")).unwrap_or_default();
            let (agent, slice, outcome) = (&s.agent, s.id, s.outcome.as_str());
            (
                "slice_failed",
                s.agent.as_str(),
                format!(
                    "{agent}'s slice {slice}{on} ended {outcome}: {} (log {})",
                    s.reason, s.log
                ),
            )
        }
        _ => return None,
    })
}

/// Whether a person approved the command `config`; opens the approval gate when none was asked
/// (or the last was withdrawn). `Ok(Some(gate))`: not approved yet (or denied), and the gate
/// that says so.
pub fn seek_approval(
    project: &Project,
    config: &NotifyConfig,
    now: Timestamp,
) -> Result<Option<Gate>, KernelError> {
    let store = Store::open(project)?;
    let gates = store.read(|s| s.gates())?;
    match approval::verdict_of(&gates, &approval::notify_approval_line(config)) {
        Verdict::Approved => Ok(None),
        Verdict::Open(gate) | Verdict::Denied(gate) => Ok(Some(gate)),
        Verdict::Unasked => {
            let ask = approval::notify_approval_gate(config);
            Ok(Some(store.run(ask, approval::ACTOR, now)?))
        }
    }
}

/// Whether a person approved the command `config` (read from the store now; `false` when it
/// cannot be read).
pub fn approved(project: &Project, config: &NotifyConfig) -> bool {
    let gates = Store::open_read(project).and_then(|s| s.read(|s| s.gates()));
    gates.is_ok_and(|gates| {
        approval::verdict_of(&gates, &approval::notify_approval_line(config)) == Verdict::Approved
    })
}
