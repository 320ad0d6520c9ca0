//! What a goal spent since a todo was last done: the figures a goal's budget (`[budget]` in
//! `loopx.toml`) is checked against. Every slice's end adds to them; a todo done, or a person
//! answering the budget gate with anything but `pause`, starts them again.

use serde::{Deserialize, Serialize};

use crate::errors::KernelError;
use crate::ids::{GateId, GoalId};
use crate::model::{EventKind, Goal, GoalStatus};
use crate::store::tables;
use crate::store::writer::Writer;
use crate::time::Timestamp;

/// A goal's spending since a todo was last done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub slices: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    /// When the count started again; `None` for since the goal began.
    pub since: Option<Timestamp>,
}

pub(crate) fn spent_key(goal: GoalId) -> String {
    format!("spent/{goal}")
}

/// Adds one ended slice to `goal`'s spending.
pub(super) fn charge(
    w: &Writer<'_>,
    goal: GoalId,
    tokens: u64,
    cost_usd: f64,
) -> Result<(), KernelError> {
    let key = spent_key(goal);
    let mut spent: Spent = w.quota_get(&key)?.unwrap_or_default();
    spent.slices += 1;
    spent.tokens = spent.tokens.saturating_add(tokens);
    if cost_usd.is_finite() && cost_usd > 0.0 {
        spent.cost_usd += cost_usd;
    }
    w.quota_put(&key, &spent)
}

/// Starts `goal`'s spending again from now.
pub(super) fn restart(w: &Writer<'_>, goal: GoalId) -> Result<(), KernelError> {
    w.quota_put(
        &spent_key(goal),
        &Spent {
            since: Some(w.now),
            ..Spent::default()
        },
    )
}

/// A person answered the budget gate of `goal`: `pause` pauses it, anything else gives it a
/// fresh budget.
pub(super) fn answered(
    w: &Writer<'_>,
    goal: GoalId,
    gate: GateId,
    pause: bool,
) -> Result<(), KernelError> {
    if pause {
        return answered_pause(w, goal, true);
    }
    restart(w, goal)?;
    w.event(EventKind::BudgetRestarted { goal, gate })?;
    Ok(())
}

/// A person's answer that pauses `goal` (`pause` of a budget gate, `stop` of a new best's):
/// an active goal is paused, any other is left as it is.
pub(super) fn answered_pause(w: &Writer<'_>, goal: GoalId, pause: bool) -> Result<(), KernelError> {
    if pause {
        let current: Goal = w.require(tables::GOALS, goal.0, "goal", goal)?;
        if current.status == GoalStatus::Active {
            super::entities::goal_set_status(w, Some(goal), GoalStatus::Paused)?;
        }
    }
    Ok(())
}

pub(crate) fn plans_key(goal: GoalId) -> String {
    format!("plans/{goal}")
}

/// The open goal-met gate of `goal`, if one is open: found by key, so that adding a todo costs
/// one lookup rather than a scan of every gate.
fn goal_met_gate_key(goal: GoalId) -> String {
    format!("goal-met-gate/{goal}")
}

/// A goal-met gate was opened for `goal`.
pub(super) fn goal_met_asked(
    w: &Writer<'_>,
    goal: GoalId,
    gate: GateId,
) -> Result<(), KernelError> {
    w.quota_put(&goal_met_gate_key(goal), &gate.0)
}

/// The question "is `goal` met, with no todo left?" no longer applies (a todo was added, or the
/// goal is no longer active): its open gate is withdrawn, so it blocks nobody.
pub(super) fn goal_met_moot(w: &Writer<'_>, goal: GoalId) -> Result<(), KernelError> {
    let key = goal_met_gate_key(goal);
    let Some(id) = w.quota_get::<u64>(&key)? else {
        return Ok(());
    };
    w.quota_remove(&key)?;
    let gate: Option<crate::model::Gate> = w.get(tables::GATES, id)?;
    if gate.is_some_and(|g| g.state == crate::model::GateState::Open) {
        super::entities::gate_withdraw(w, GateId(id))?;
    }
    Ok(())
}

/// A person answered whether `goal` is met: `done` marks it done; anything else starts its
/// planning afresh (only planning slices begun after now count against it).
pub(super) fn goal_met_answered(
    w: &Writer<'_>,
    goal: GoalId,
    done: bool,
) -> Result<(), KernelError> {
    let current: Goal = w.require(tables::GOALS, goal.0, "goal", goal)?;
    if matches!(current.status, GoalStatus::Done | GoalStatus::Archived) {
        return Ok(());
    }
    if done {
        super::entities::goal_set_status(w, Some(goal), GoalStatus::Done)?;
        return Ok(());
    }
    // Slices are numbered in the order they began: the next one is past every one so far.
    let last = w
        .peek_id(crate::store::tables::counter::SLICE)?
        .saturating_sub(1);
    w.quota_put(&plans_key(goal), &last)
}
