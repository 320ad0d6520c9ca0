//! What one agent may keep open at once.
//!
//! A slice's report channel bounds what one slice writes (`docs/cli.md`), but not what an
//! agent keeps open across slices: one agent's slices opened 3,000 questions in 40 s — each a
//! card in the team's chat — and one slice 933 goal proposals. Each is a person's attention,
//! so an agent may keep at most so many of each open; past that, the kernel refuses the next
//! one, whichever surface wrote it (the channel, a report block's writeback), with the reason,
//! which the agent reads in its refused report or in the note of the dropped item in its next
//! prompt. A person is never capped, nor is loopx.

use super::op::NewTodo;
use crate::errors::{KernelError, Refused};
use crate::model::{Gate, GateKind, GateState, Todo};
use crate::store::tables;
use crate::store::writer::Writer;

/// Questions one agent may keep open (waiting on a person).
pub const OPEN_QUESTIONS: usize = 20;
/// Goal proposals one agent may keep open.
pub const OPEN_PROPOSALS: usize = 3;
/// Monitors one agent may keep open (each a check loopx runs on a cadence).
pub const OPEN_MONITORS: usize = 20;
/// Other todos one agent may keep open (proposed, and not done or dropped).
pub const OPEN_TODOS: usize = 200;

/// Refuses a question or goal proposal from an agent that keeps its cap of them open.
pub(super) fn admit_gate(w: &Writer<'_>, kind: &GateKind) -> Result<(), KernelError> {
    if !loopx_vocab::Actor::of(w.actor).is_agent() {
        return Ok(());
    }
    let (proposal, what, cap, hint) = match kind {
        GateKind::Question => (
            false,
            "questions",
            OPEN_QUESTIONS,
            "wait for the answers, or ask one question that covers several",
        ),
        GateKind::GoalProposal { .. } => (
            true,
            "goal proposals",
            OPEN_PROPOSALS,
            "wait for a person to answer the ones open",
        ),
        _ => return Ok(()),
    };
    let gates: Vec<Gate> = w.all(tables::GATES)?;
    let open = gates
        .iter()
        .filter(|g| g.state == GateState::Open && g.asked_by == w.actor)
        .filter(|g| matches!(g.kind, GateKind::GoalProposal { .. }) == proposal)
        .count();
    refuse_at(w, open, cap, what, hint)
}

/// Refuses a todo or monitor from an agent that keeps its cap of them open.
pub(super) fn admit_todo(w: &Writer<'_>, new: &NewTodo) -> Result<(), KernelError> {
    if !loopx_vocab::Actor::of(w.actor).is_agent() {
        return Ok(());
    }
    let monitor = new.monitor.is_some();
    let mut open = 0;
    for id in crate::store::reads::index_keys(w.kv, tables::ACTIVE_TODOS)? {
        let todo: Option<Todo> = w.get(tables::TODOS, id)?;
        if todo.is_some_and(|t| {
            t.created_by == w.actor && !t.state.is_final() && t.is_monitor() == monitor
        }) {
            open += 1;
        }
    }
    match monitor {
        true => refuse_at(
            w,
            open,
            OPEN_MONITORS,
            "monitors",
            "let the ones open be met, or drop yours that no longer matter in your handoff",
        ),
        false => refuse_at(
            w,
            open,
            OPEN_TODOS,
            "todos it proposed",
            "finish the ones open before proposing more",
        ),
    }
}

fn refuse_at(
    w: &Writer<'_>,
    open: usize,
    cap: usize,
    what: &'static str,
    hint: &'static str,
) -> Result<(), KernelError> {
    if open < cap {
        return Ok(());
    }
    Err(Refused::OverCap {
        actor: w.actor.to_owned(),
        open,
        what,
        hint,
    }
    .into())
}
