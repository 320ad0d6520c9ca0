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
use loopx_kernel::{GateId, KernelError, Project, SliceId, Store, Timestamp, TodoId};
use serde::Serialize;

use crate::approval::{self, Verdict};

/// Slice outcomes a person is not told about: work went fine, or another notification covers
/// it (a usage limit pauses; a question opens a gate).
const UNREMARKABLE: [&str; 4] = ["completed", "progress", "asked", "usage_limited"];

/// A run event, as far as a notification needs it (the supervisor's events map to this).
#[derive(Debug, Clone, Copy)]
pub enum News<'a> {
    /// A person must answer `gate`.
    Question {
        agent: &'a str,
        gate: GateId,
        question: &'a str,
        answer_with: &'a str,
    },
    /// The agent waits (`until: None`: until a person resumes it).
    Paused {
        agent: &'a str,
        until: Option<Timestamp>,
        reason: &'a str,
    },
    Resumed {
        agent: &'a str,
    },
    /// A slice ended, `outcome` as its record says.
    SliceEnded {
        agent: &'a str,
        slice: SliceId,
        todo: Option<TodoId>,
        outcome: &'a str,
        reason: &'a str,
        log: &'a str,
        goal_done: bool,
    },
}

/// What the command reads on stdin: the notification, with the loop's `event` as `loopx run
/// --json` prints it.
#[derive(Debug, Serialize)]
pub struct Notification<'a, E> {
    /// `gate_opened`, `paused`, `resumed`, `slice_failed` or `goal_done`.
    pub kind: &'static str,
    /// The agent concerned, when one is.
    pub agent: Option<&'a str>,
    /// One line for a person: who needs what.
    pub message: String,
    pub project: String,
    /// The loop's event, as `loopx run --json` prints it.
    pub event: &'a E,
}

/// The notification for `news` (of the loop's `event`) in the project at `root`, if it calls
/// for one.
pub fn notification<'a, E>(
    news: News<'a>,
    event: &'a E,
    root: &std::path::Path,
) -> Option<Notification<'a, E>> {
    let (kind, agent, message) = news.say()?;
    Some(Notification {
        kind,
        agent: Some(agent),
        message,
        project: root.display().to_string(),
        event,
    })
}

impl<'a> News<'a> {
    /// The notification's kind, the agent concerned and what it says; `None`: a person is not
    /// told.
    fn say(self) -> Option<(&'static str, &'a str, String)> {
        Some(match self {
            News::Question {
                agent,
                gate,
                question,
                answer_with,
            } => (
                "gate_opened",
                agent,
                format!("{agent} needs an answer to {gate}: {question} ({answer_with})"),
            ),
            News::Paused {
                agent,
                until,
                reason,
            } => {
                let until =
                    until.map_or_else(|| "a person resumes it".to_owned(), |u| u.to_string());
                (
                    "paused",
                    agent,
                    format!("{agent} is paused until {until}: {reason}"),
                )
            }
            News::Resumed { agent } => ("resumed", agent, format!("{agent} resumed work")),
            News::SliceEnded {
                agent,
                slice,
                goal_done: true,
                ..
            } => (
                "goal_done",
                agent,
                format!("the goal is done ({agent} declared it in slice {slice})"),
            ),
            News::SliceEnded {
                agent,
                slice,
                todo,
                outcome,
                reason,
                log,
                ..
            } if !UNREMARKABLE.contains(&outcome) => {
                let on = todo.map(|t| format!(" on {t}")).unwrap_or_default();
                (
                    "slice_failed",
                    agent,
                    format!("{agent}'s slice {slice}{on} ended {outcome}: {reason} (log {log})"),
                )
            }
            News::SliceEnded { .. } => return None,
        })
    }
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
