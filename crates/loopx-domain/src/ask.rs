//! What loopx asks a person before a slice instead of running one (`docs/design/run-loop.md`,
//! "Shape"), and which decisions go on to a slice at all: only `deliver` and `repair` do.
//!
//! The decision (`loopx-quota`) says *ask* when a goal spent its budget without a todo done,
//! when a goal has no todo left and its planning proposed none, or when a todo went several
//! slices without progress; no gate asks yet, so one is opened here, with the context a person
//! needs to answer it. The kernel gives back the open gate instead when a peer asked first.

use loopx_kernel::limits::{QUESTION, bounded};
use loopx_kernel::model::{
    BEST_OPTIONS, BUDGET_OPTIONS, Blocks, GOAL_MET_OPTIONS, GateKind, Goal, GoalStatus,
    STALL_OPTIONS, SliceKind,
};
use loopx_kernel::store::NewGate;
use loopx_kernel::{KernelError, Store, Timestamp, TodoId};
use loopx_quota::{Decision, DecisionKind};

/// The slice a decision goes on to: `deliver` and `repair` only; every other decision ends
/// before anything is claimed.
pub fn slice(decision: &Decision) -> Option<SliceKind> {
    match (decision.kind(), decision.slice()) {
        (DecisionKind::Deliver | DecisionKind::Repair, Some(kind)) => Some(kind),
        _ => None,
    }
}

/// `stop` with the goal's state when it is over (done, paused, archived, or none at all):
/// what an agent whose profile is broken is told then, instead of the profile's error.
pub fn goal_over(goal: Option<&Goal>) -> Option<Decision> {
    let reason = match goal {
        Some(goal) if goal.status == GoalStatus::Active => return None,
        Some(goal) => format!("goal {} is {}", goal.id, goal.status.as_str()),
        None => "there is no active goal".to_owned(),
    };
    Some(Decision::stop(reason))
}

/// Whether `decision` asks a person and no gate asks yet: [`open_gate`] opens one.
pub fn needs_gate(decision: &Decision) -> bool {
    decision.kind() == DecisionKind::Ask && decision.gate().is_none()
}

/// Opens the gate a decision for `goal` that [needs one](needs_gate) asks (a goal past its
/// budget, a goal that may be met, a stalled todo, a new best), and shows it in the decision.
pub fn open_gate(
    store: &Store,
    decision: &mut Decision,
    goal: Option<loopx_kernel::GoalId>,
    now: Timestamp,
) -> Result<(), KernelError> {
    let gate = if decision.over_budget() || decision.goal_met() {
        let Some(goal) = goal
            .map(|id| store.read(|s| s.goal(id)))
            .transpose()?
            .flatten()
        else {
            return Ok(());
        };
        if decision.over_budget() {
            budget_gate(store, decision, &goal)?
        } else {
            goal_met_gate(decision, &goal)
        }
    } else if let Some(id) = decision.stalled() {
        stall_gate(store, decision, id)?
    } else if let (Some(evidence), Some(goal)) = (decision.new_best(), goal) {
        let Some(gate) = best_gate(store, decision, goal, evidence)? else {
            return Ok(());
        };
        gate
    } else {
        return Ok(());
    };
    let gate = store.run(gate, loopx_vocab::actor::LOOPX, now)?;
    decision.gate_opened((gate.id, gate.question));
    Ok(())
}

/// The gate a goal past its budget needs: what it spent since a todo was last done.
fn budget_gate(store: &Store, decision: &Decision, goal: &Goal) -> Result<NewGate, KernelError> {
    let spent = store.read(|s| s.goal_spent(goal.id))?;
    Ok(NewGate {
        question: bounded(decision.reason(), QUESTION),
        options: BUDGET_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        context: format!(
            "Since {} goal {} spent {} slices, {} tokens and ${:.2} without a todo done.\n`continue` gives it a fresh budget; `pause` pauses the goal.",
            spent
                .since
                .map_or_else(|| "it began".to_owned(), |t| t.to_string()),
            goal.id,
            spent.slices,
            spent.tokens,
            spent.cost_usd
        ),
        blocks: Blocks::Global,
        kind: GateKind::Budget { goal: goal.id },
    })
}

/// The gate that asks whether the goal is met.
fn goal_met_gate(decision: &Decision, goal: &Goal) -> NewGate {
    NewGate {
        question: bounded(
            &format!(
                "Goal {} ({}) has no todo left, and its last planning slices proposed none: is it met?",
                goal.id, goal.objective
            ),
            QUESTION,
        ),
        options: GOAL_MET_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        context: format!(
            "{}\n`done` marks the goal done; `plan` plans again (guidance for the planning slice goes in `--note`). Adding a todo and answering `plan` puts the agents on it.",
            decision.reason()
        ),
        blocks: Blocks::Global,
        kind: GateKind::GoalMet { goal: goal.id },
    }
}

/// The gate a new best asks (`docs/history.md`, "Metrics"): promote it, keep exploring, or
/// stop; `None` when the measurement is gone.
fn best_gate(
    store: &Store,
    decision: &Decision,
    goal: loopx_kernel::GoalId,
    evidence: loopx_kernel::EvidenceId,
) -> Result<Option<NewGate>, KernelError> {
    let Some(best) = store.read(|s| s.evidence(evidence))? else {
        return Ok(None);
    };
    let name = best.metric.as_ref().map_or("", |m| m.name.as_str());
    Ok(Some(NewGate {
        question: bounded(
            &format!(
                "Promote {}, the best so far?",
                crate::metrics::measured_by(&best)
            ),
            QUESTION,
        ),
        options: BEST_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        context: format!(
            "{}\nMeasured by {} at {} ({}).\n`promote` tells the goal's agents to build on it; `keep exploring` goes on; `stop` pauses the goal (end it with `loopx goal done`). Guidance goes in `--note`. [metrics.{name}] ask_on_best asked this.",
            decision.reason(),
            best.actor,
            best.at,
            best.id,
        ),
        blocks: Blocks::Goal(goal),
        kind: GateKind::Best { goal, evidence },
    }))
}

/// The gate a stalled todo needs: retry it or drop it.
fn stall_gate(store: &Store, decision: &Decision, id: TodoId) -> Result<NewGate, KernelError> {
    let title = store
        .read(|s| s.todo(id))?
        .map(|t| t.title)
        .unwrap_or_default();
    Ok(NewGate {
        question: bounded(
            &match decision.handed_back() {
                true => format!(
                    "Todo {id} ({title}) would be one more round of the same work handed back and forth: go on with it, or drop it?"
                ),
                false => format!(
                    "Todo {id} ({title}) has gone several slices without progress: retry it with a fresh budget of attempts, or drop it?"
                ),
            },
            QUESTION,
        ),
        options: STALL_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        context: format!(
            "{}\n`retry` gives it a fresh budget; `drop` drops it. Guidance for its next slice goes in `--note` (`loopx gate answer ID 1 --note \"…\"`).",
            decision.reason()
        ),
        blocks: Blocks::Todos(vec![id]),
        kind: GateKind::Stall { todo: id },
    })
}
