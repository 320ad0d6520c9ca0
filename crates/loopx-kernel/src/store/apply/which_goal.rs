//! Which goal an operation is about when it names none.
//!
//! Several goals may be active at once (`docs/goals.md`). An agent's report item is about its
//! slice's goal; otherwise the one active goal is meant; with several active and none named
//! the caller must say which ([`Invalid::WhichGoal`]): loopx does not guess whose work a
//! change is. One definition, so that `todo add`, `goal pause`, `goal amend`, an agent's
//! question and a spend all resolve alike.

use crate::errors::{Invalid, KernelError};
use crate::ids::GoalId;
use crate::model::{Goal, GoalStatus};
use crate::store::tables;
use crate::store::writer::Writer;

/// The goal an operation that names none is about: the goal of the slice it reports from,
/// else the one active goal. With several active and none named the caller must say which
/// ([`Invalid::WhichGoal`]): loopx does not guess whose work a change is.
pub(crate) fn active_goal(w: &Writer<'_>) -> Result<Option<GoalId>, KernelError> {
    if let Some(goal) = agent_goal(w)? {
        return Ok(Some(goal));
    }
    the_one_active_goal(w)
}

/// [`active_goal`], where several goals active means none of them (a spend of no goal, a
/// person's question to everyone): only that answer becomes `None`, a store error stays one.
pub(crate) fn active_goal_if_one(w: &Writer<'_>) -> Result<Option<GoalId>, KernelError> {
    none_if_several(active_goal(w))
}

fn none_if_several(
    found: Result<Option<GoalId>, KernelError>,
) -> Result<Option<GoalId>, KernelError> {
    match found {
        Err(KernelError::Invalid(Invalid::WhichGoal { .. })) => Ok(None),
        found => found,
    }
}

/// The one active goal, or none; several is [`Invalid::WhichGoal`]. Whoever writes.
fn the_one_active_goal(w: &Writer<'_>) -> Result<Option<GoalId>, KernelError> {
    let active: Vec<Goal> = w
        .all::<Goal>(tables::GOALS)?
        .into_iter()
        .filter(|g| g.status == GoalStatus::Active)
        .collect();
    match active.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.id)),
        several => Err(which_goal(several.iter().map(|g| g.id))),
    }
}

/// The error that asks the caller to name one of `goals`.
pub(crate) fn which_goal(goals: impl Iterator<Item = GoalId>) -> KernelError {
    let goals: Vec<String> = goals.map(|g| g.to_string()).collect();
    Invalid::WhichGoal {
        goals: goals.join(", "),
    }
    .into()
}

/// The goal the writing agent works for: its report's slice's, else the goal of the slice it
/// runs now (an agent runs one slice at a time). `None` for a person, or an agent without a
/// running slice.
pub(crate) fn agent_goal(w: &Writer<'_>) -> Result<Option<GoalId>, KernelError> {
    if let Some(goal) = w.slice_goal.get() {
        return Ok(Some(goal));
    }
    let Some(agent) = loopx_vocab::Actor::of(w.actor).agent() else {
        return Ok(None);
    };
    for id in w.running_ids()? {
        let slice: Option<crate::model::SliceRecord> = w.get(tables::SLICES, id)?;
        if let Some(slice) = slice.filter(|s| s.agent.as_str() == agent) {
            return slice_goal(w, &slice);
        }
    }
    Ok(None)
}

/// Refuses an agent's change to a goal other than the one its slice works for: an agent of a
/// read-only goal must not hand work to another goal's agents, nor ask for it to end.
pub(crate) fn refuse_other_goal(w: &Writer<'_>, goal: GoalId) -> Result<(), KernelError> {
    if !loopx_vocab::Actor::of(w.actor).is_agent() {
        return Ok(());
    }
    match agent_goal(w)? {
        Some(own) if own != goal => Err(crate::errors::Conflict::OtherGoal {
            agent: loopx_vocab::Actor::of(w.actor).name().to_owned(),
            own,
            goal,
        }
        .into()),
        _ => Ok(()),
    }
}

/// The goal a slice works for: the one it recorded, else its todo's, else (a slice an older
/// loopx began) the one active goal.
pub(crate) fn slice_goal(
    w: &Writer<'_>,
    slice: &crate::model::SliceRecord,
) -> Result<Option<GoalId>, KernelError> {
    if let Some(goal) = slice.goal {
        return Ok(Some(goal));
    }
    match slice.todo {
        Some(todo) => Ok(w
            .get::<crate::model::Todo>(tables::TODOS, todo.0)?
            .map(|t| t.goal)),
        // Not `active_goal`, which asks the agent's running slice: that may be this one.
        None => none_if_several(the_one_active_goal(w)),
    }
}

/// The goal a record that names no todo is about: its slice's goal (loopx's own writeback
/// names the slice without an `InSlice` guard), else [`active_goal`].
pub(crate) fn record_goal(
    w: &Writer<'_>,
    slice: Option<crate::ids::SliceId>,
) -> Result<Option<GoalId>, KernelError> {
    let record = match slice {
        Some(id) => w.get::<crate::model::SliceRecord>(tables::SLICES, id.0)?,
        None => None,
    };
    match record {
        Some(record) => slice_goal(w, &record),
        None => active_goal(w),
    }
}

/// The goal a change that names none is about, when it may be a paused one: the slice's goal,
/// else the one active goal, else the newest paused one.
pub(crate) fn open_goal(w: &Writer<'_>) -> Result<Option<Goal>, KernelError> {
    if let Some(id) = active_goal(w)? {
        return w.get(tables::GOALS, id.0);
    }
    Ok(w.all::<Goal>(tables::GOALS)?
        .into_iter()
        .rev()
        .find(|g| g.status == GoalStatus::Paused))
}

/// The goal a gate is about: the goal it blocks, its todos' goal, the goal its kind names;
/// else (a person's question to everyone) the one active goal, or none with several.
pub(crate) fn gate_goal(
    w: &Writer<'_>,
    gate: &crate::model::Gate,
) -> Result<Option<GoalId>, KernelError> {
    use crate::model::{Blocks, GateKind};
    match (&gate.blocks, &gate.kind) {
        (Blocks::Goal(goal), _) => Ok(Some(*goal)),
        (
            _,
            GateKind::Budget { goal } | GateKind::GoalMet { goal } | GateKind::Best { goal, .. },
        ) => Ok(Some(*goal)),
        (Blocks::Todos(todos), _) if !todos.is_empty() => Ok(w
            .get::<crate::model::Todo>(tables::TODOS, todos[0].0)?
            .map(|t| t.goal)),
        _ => active_goal_if_one(w),
    }
}
