//! "Is the goal met?": a person ends a goal, and the question says what they need to decide.
//!
//! An agent's planning slice that reports `done` with nothing more to do says the goal is met;
//! so does the decision when planning slices in a row proposed nothing. Neither ends the goal:
//! both open the `goal_met` gate (`done` ends it, `plan` plans again), whose context this module
//! fills from the store — the todos done and dropped, what landed, the evidence recorded under
//! an older revision of the goal, the monitors still open, the revision the goal is at. A
//! project that lets its agents end goals says so (`[goal] close = "agents"`); the supervisor
//! then marks the op, and the agent's `done` ends the goal as before.

use super::op::{Applied, NewGate};
use crate::errors::KernelError;
use crate::model::{
    Blocks, Evidence, EvidenceKind, GOAL_MET_OPTIONS, GateKind, Goal, Todo, TodoState,
};
use crate::store::tables;
use crate::store::writer::Writer;

/// The agent writing says `goal` is met: the question to a person, opened (or the open one).
pub(super) fn agent_says_met(w: &Writer<'_>, goal: &Goal) -> Result<Applied, KernelError> {
    let who = loopx_vocab::Actor::of(w.actor).name();
    let question = crate::limits::clip(
        &format!(
            "Agent `{who}` says goal {} ({}) is met: is it?",
            goal.id, goal.objective
        ),
        crate::limits::QUESTION,
    );
    super::entities::gate_ask(
        w,
        NewGate {
            question,
            options: GOAL_MET_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            context: "`done` ends the goal; `plan` plans again (guidance for the planning slice goes in `--note`).".to_owned(),
            blocks: Blocks::Global,
            kind: GateKind::GoalMet { goal: goal.id },
        },
    )
}

/// What a person deciding whether `goal` is met needs to see, in a few lines.
pub(super) fn facts(w: &Writer<'_>, goal: &Goal) -> Result<String, KernelError> {
    let todos: Vec<Todo> = w.all(tables::TODOS)?;
    let ours: Vec<&Todo> = todos.iter().filter(|t| t.goal == goal.id).collect();
    let count = |state: TodoState| ours.iter().filter(|t| t.state == state).count();
    let mut lines = vec![format!(
        "Todos: {} done, {} dropped, {} open.",
        count(TodoState::Done),
        count(TodoState::Dropped),
        ours.iter().filter(|t| !t.state.is_final()).count()
    )];
    let monitors: Vec<String> = ours
        .iter()
        .filter(|t| t.is_monitor() && !t.state.is_final())
        .map(|t| format!("{} ({})", t.id, t.title))
        .collect();
    if !monitors.is_empty() {
        lines.push(format!("Monitors still open: {}.", monitors.join(", ")));
    }
    let evidence: Vec<Evidence> = w.all(tables::EVIDENCE)?;
    let of_goal = |e: &&Evidence| e.todo.is_some_and(|t| ours.iter().any(|o| o.id == t));
    let landed = evidence
        .iter()
        .filter(of_goal)
        .filter(|e| e.kind == EvidenceKind::Land && e.summary.contains(" landed on "))
        .count();
    if landed > 0 {
        lines.push(format!("Landed on the goal's branch: {landed} todo(s)."));
    }
    // Only what judges something can be outdated by a change of the goal.
    let older = evidence
        .iter()
        .filter(of_goal)
        .filter(|e| matches!(e.kind, EvidenceKind::Test | EvidenceKind::Artifact))
        .filter(|e| e.revision != 0 && e.revision < goal.revision)
        .count();
    if older > 0 {
        lines.push(format!(
            "Test results and artifacts recorded under an older revision of the goal: {older}."
        ));
    }
    lines.push(format!("The goal is at revision {}.", goal.revision));
    Ok(lines.join("\n"))
}
