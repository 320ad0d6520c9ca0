//! A re-planning slice's changes to the open todos.
//!
//! After a person amends a goal, the first decision is a planning slice that sees the change
//! and the open todos (`amend.rs`, `replan_key`). That slice — and only that one — may drop
//! the open todos that no longer fit and rewrite the ones that fit differently, besides
//! proposing new ones: the todos were planned for a goal that no longer is, and the agent that
//! re-plans has read both. Everywhere else a todo's words are a person's (`edit.rs`): an agent
//! that could rewrite its task could rewrite what its done is judged against.
//!
//! "That slice" is exact: a planning slice without a todo, begun after the goal's latest
//! amendment, while re-planning was due — it is running, or it is the one whose end finished
//! the re-planning (`replanned_key`). A todo another agent holds under a live claim is left
//! alone: its slice is working on it and finishes as it began.
//!
//! Only agents' todos are re-planned. A todo or monitor a person made stays as the person made
//! it: the re-planner says in its handoff why it no longer fits, and the person drops it. An
//! agent that could drop a person's work could end the goal over it, and one that could rewrite
//! it could rewrite what the person asked for.

use super::edit::EditTodo;
use super::op::Applied;
use crate::errors::{Conflict, KernelError, Refused};
use crate::ids::{GoalId, SliceId, TodoId};
use crate::limits;
use crate::model::{EventKind, Goal, GoalRevision, GoalStatus, SliceKind, SliceRecord, Todo};
use crate::store::tables;
use crate::store::writer::Writer;

/// What a re-planning slice does to one open todo, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplanTodo {
    /// The planning slice, whose agent must be the writer.
    pub slice: SliceId,
    pub todo: TodoId,
    pub change: Replanning,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Replanning {
    /// It no longer fits the goal.
    Drop,
    /// It fits as these words say (`None` keeps a field).
    Rewrite {
        title: Option<String>,
        detail: Option<String>,
        priority: Option<i32>,
    },
}

impl ReplanTodo {
    pub(super) fn redact(&mut self, r: &crate::redact::Redactor) {
        r.redact_in_place(&mut self.why);
        if let Replanning::Rewrite { title, detail, .. } = &mut self.change {
            for text in [title, detail].into_iter().flatten() {
                r.redact_in_place(text);
            }
        }
    }
}

/// The quota-table key of the planning slice whose end finished re-planning `goal` after its
/// latest amendment: its writeback, applied after its end, may still change todos.
pub(super) fn replanned_key(goal: GoalId) -> String {
    format!("replanned/{}", goal.0)
}

pub(super) fn apply(w: &Writer<'_>, op: ReplanTodo) -> Result<Applied, KernelError> {
    let ReplanTodo {
        slice,
        todo: id,
        change,
        why,
    } = op;
    limits::check_len("why", &why, limits::DETAIL)?;
    let todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    let record: SliceRecord = w.require(tables::SLICES, slice.0, "slice", slice)?;
    re_planning(w, &record, &todo)?;
    if loopx_vocab::Actor::of(&todo.created_by).is_person() {
        return Err(Refused::PersonsTodo {
            todo: id,
            person: todo.created_by.clone(),
            what: if todo.is_monitor() { "monitor" } else { "todo" },
        }
        .into());
    }
    if todo.state.is_final() {
        return Err(Conflict::TodoState {
            todo: id,
            state: todo.state.as_str(),
            action: "re-planned",
        }
        .into());
    }
    if let Some(lease) = todo.lease.as_ref().filter(|l| l.is_live(w.now))
        && lease.agent != record.agent
    {
        return Err(super::todo::claimed(id, lease));
    }
    let (dropped, changed) = match change {
        Replanning::Drop => {
            // Its holder's lease (this agent's, or one lapsed) ends with it.
            let mut todo = todo;
            todo.lease = None;
            w.put_todo(&todo)?;
            super::todo::finish(w, id, crate::model::TodoState::Dropped, None, None)?;
            w.replan_dropped.set(w.replan_dropped.get() + 1);
            (true, Vec::new())
        }
        Replanning::Rewrite {
            title,
            detail,
            priority,
        } => {
            let edit = EditTodo {
                todo: id,
                title,
                detail,
                priority,
            };
            (false, super::edit::rewrite(w, edit)?.1)
        }
    };
    w.event(EventKind::TodoReplanned {
        todo: id,
        slice,
        dropped,
        changed,
        why: why.trim().to_owned(),
    })?;
    let todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    Ok(Applied::Todo(todo))
}

/// Refuses unless `slice` is the planning slice that re-plans `todo`'s goal now, written by
/// its own agent.
fn re_planning(w: &Writer<'_>, slice: &SliceRecord, todo: &Todo) -> Result<(), KernelError> {
    let not = |why: String| -> KernelError { Refused::NotReplanning { why }.into() };
    if loopx_vocab::Actor::of(w.actor).agent() != Some(slice.agent.as_str()) {
        return Err(not(format!(
            "`{}` does not write for slice {} (agent `{}`)",
            w.actor, slice.id, slice.agent
        )));
    }
    if slice.kind != SliceKind::Plan || slice.todo.is_some() {
        return Err(not(format!(
            "slice {} is a {} slice, not a planning one",
            slice.id,
            slice.kind.as_str()
        )));
    }
    // A planning slice re-plans its own goal: another goal's todos are not its to drop.
    if let Some(planned) = super::which_goal::slice_goal(w, slice)?
        && planned != todo.goal
    {
        return Err(not(format!(
            "slice {} plans goal {planned}, and {} is goal {}'s",
            slice.id, todo.id, todo.goal
        )));
    }
    let goal: Goal = w.require(tables::GOALS, todo.goal.0, "goal", todo.goal)?;
    if goal.status != GoalStatus::Active {
        return Err(Conflict::GoalState {
            goal: goal.id,
            state: goal.status.as_str(),
            action: "re-planned",
        }
        .into());
    }
    let amended: Option<GoalRevision> = match goal.revision {
        0 | 1 => None,
        n => w.get(tables::GOAL_REVISIONS, tables::revision_key(goal.id.0, n))?,
    };
    let Some(amended) = amended else {
        return Err(not(format!("goal {} was never amended", goal.id)));
    };
    if slice.id.0 <= amended.after_slice {
        return Err(not(format!(
            "slice {} began before goal {} was amended to revision {}",
            slice.id, goal.id, goal.revision
        )));
    }
    let due = w
        .quota_get::<u64>(&super::amend::replan_key(goal.id))?
        .is_some();
    let finished_it = w.quota_get::<u64>(&replanned_key(goal.id))? == Some(slice.id.0);
    if !(due || finished_it) {
        return Err(not(format!(
            "goal {} was re-planned for revision {} already",
            goal.id, goal.revision
        )));
    }
    Ok(())
}
