//! Answering a gate: the answer's text, the record, and what the answer does to the gate's
//! subject (a stalled todo, a held account, a goal's budget, a monitor, a proposal).

use super::op::{AnswerChoice, Applied};
use crate::errors::{Conflict, Invalid, KernelError, Refused};
use crate::ids::GateId;
use crate::limits;
use crate::model::{
    Answer, BUDGET_OPTIONS, EventKind, GOAL_MET_OPTIONS, Gate, GateKind, GateState, LAND_OPTIONS,
    ROLLBACK_OPTIONS, STALL_OPTIONS,
};
use crate::store::tables;
use crate::store::writer::Writer;

pub(super) fn gate_answer(
    w: &Writer<'_>,
    id: GateId,
    choice: AnswerChoice,
    slice: Option<String>,
    note: Option<String>,
) -> Result<Applied, KernelError> {
    let mut gate: Gate = w.require(tables::GATES, id.0, "gate", id)?;
    if let Some(slice) = slice {
        return Err(Refused::AnswerFromSlice { slice }.into());
    }
    if gate.state != GateState::Open {
        return Err(Conflict::GateState {
            gate: id,
            state: gate.state.as_str(),
        }
        .into());
    }
    let (text, option) = answer_text(&gate, choice, note)?;
    gate.answer = Some(Answer {
        text: text.clone(),
        option,
        by: w.actor.to_owned(),
        at: w.now,
    });
    gate.state = GateState::Answered;
    gate.answered_under = answered_under(w, &gate)?;
    w.put(tables::GATES, id.0, &gate)?;
    w.event(EventKind::GateAnswered {
        gate: id,
        answer: text,
    })?;
    let chosen = option
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| gate.options.get(n.checked_sub(1)?));
    answer_follows(w, &gate, chosen.map(String::as_str))?;
    Ok(Applied::Gate(gate))
}

/// The answer's text and option number: an option by its number (with the note after it), or
/// words, which a question with options does not take.
fn answer_text(
    gate: &Gate,
    choice: AnswerChoice,
    note: Option<String>,
) -> Result<(String, Option<u32>), KernelError> {
    let choice = choice.resolve(gate)?;
    Ok(match choice {
        AnswerChoice::Option(n) => {
            let index = usize::try_from(n)
                .ok()
                .filter(|i| (1..=gate.options.len()).contains(i));
            let Some(index) = index else {
                return Err(Invalid::NoSuchOption {
                    gate: gate.id,
                    given: n,
                    count: gate.options.len(),
                }
                .into());
            };
            let chosen = gate.options[index - 1].clone();
            match note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                Some(note) => {
                    limits::check_text("note", note, limits::DETAIL, "")?;
                    (format!("{chosen}: {note}"), Some(n))
                }
                None => (chosen, Some(n)),
            }
        }
        // A question with options is answered by one of them: words that name none (a
        // literal `N` copied from a hint, `ok`) would be taken as some choice, silently.
        AnswerChoice::Text(text) if !gate.options.is_empty() => {
            return Err(Invalid::NotAnOption {
                gate: gate.id,
                given: limits::clip(text.trim(), 80),
                options: crate::model::option_list(&gate.options),
            }
            .into());
        }
        AnswerChoice::Text(text) => {
            limits::check_text("answer", &text, limits::DETAIL, "")?;
            let text = match note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                Some(note) => format!("{}: {note}", text.trim()),
                None => text,
            };
            (text.trim().to_owned(), None)
        }
    })
}

/// What an answer does to the gate's subject, by the gate's kind; `chosen` is the option
/// picked, if any.
fn answer_follows(w: &Writer<'_>, gate: &Gate, chosen: Option<&str>) -> Result<(), KernelError> {
    let id = gate.id;
    match &gate.kind {
        GateKind::Question => {}
        GateKind::Stall { todo } => {
            let drop = chosen.is_some_and(|o| o == STALL_OPTIONS[1]);
            super::todo::stall_answered(w, *todo, id, drop)?;
        }
        // Whoever answers has logged in (or wants the agent to try): the account may run.
        // A hold a person already lifted is not an error.
        GateKind::Login { account } => {
            if super::quota::held(w, account)? {
                super::quota::resume(w, Some(account.clone()))?;
            }
        }
        GateKind::Budget { goal } => {
            let pause = chosen.is_some_and(|o| o == BUDGET_OPTIONS[1]);
            super::budget::answered(w, *goal, id, pause)?;
        }
        GateKind::GoalMet { goal } => {
            let done = chosen.is_some_and(|o| o == GOAL_MET_OPTIONS[0]);
            super::budget::goal_met_answered(w, *goal, done)?;
        }
        // Whoever records the answer has already carried out a rollback (the kernel touches
        // no files); either way the todo gets a fresh budget of attempts.
        GateKind::Rollback { todo, .. } => super::todo::stall_answered(w, *todo, id, false)?,
        // `drop` drops the todo; `rebase` (with any note) reaches its next slice.
        GateKind::Land { todo } => {
            let drop = chosen.is_some_and(|o| o == LAND_OPTIONS[1]);
            super::todo::stall_answered(w, *todo, id, drop)?;
        }
        // `keep` of a slice that reported its todo done finishes it as the agent said; any
        // other answer (`rollback`) gives it a fresh budget for the next slice.
        GateKind::Scope {
            todo: Some(todo),
            reported_done,
        } => {
            let keep = chosen.is_some_and(|o| o == ROLLBACK_OPTIONS[0]);
            super::todo::scope_answered(w, *todo, id, keep && *reported_done)?;
        }
        GateKind::Scope { todo: None, .. } => {}
        // Answering unblocks the agent: its next slice tries again.
        GateKind::Spawn { .. } => {}
        GateKind::Monitor { todo } => {
            super::monitor::answered(w, *todo, chosen)?;
        }
        GateKind::GoalProposal { .. } => {
            if chosen.is_some_and(|o| o == crate::model::PROPOSAL_OPTIONS[0]) {
                super::amend::proposal_accepted(w, gate)?;
            }
        }
        // `promote` and `keep exploring` are words for the next prompts; `stop` pauses.
        GateKind::Best { goal, .. } => {
            let (_, stop) = crate::model::best_answer(gate);
            super::budget::answered_pause(w, *goal, stop)?;
        }
        GateKind::ScopeNarrowed { .. } => {
            let drop = chosen.is_some_and(|o| o == crate::model::NARROWED_OPTIONS[1]);
            super::amend::narrowed_answered(w, gate, drop)?;
        }
    }
    Ok(())
}

/// The revision of the goal `gate` is about (its first todo's, else the active one) as it is
/// answered; 0 without a goal.
fn answered_under(w: &Writer<'_>, gate: &Gate) -> Result<u32, KernelError> {
    let goal = super::which_goal::gate_goal(w, gate)?;
    super::entities::revision_of(w, goal, None)
}
