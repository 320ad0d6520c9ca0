//! The todos of the goals `status` shows that rest on stale evidence (the history's one
//! definition, `crate::history::resting_on_stale`): how many, and the first few named.

use loopx_kernel::model::{Goal, Todo};
use loopx_kernel::store::TodoCounts;
use loopx_kernel::{GoalId, KernelError, Snapshot, TodoId};
use serde::Serialize;

use crate::evidence::EvidenceJudge;
use crate::history::{resting_on_stale, stale_evidence};

/// A todo that rests on stale evidence, as `status` names it.
#[derive(Debug, Serialize)]
pub struct RestsOnStale {
    pub todo: TodoId,
    pub title: String,
    pub goal: GoalId,
    /// `e4 is stale (notes.txt changed since it was recorded)`, or `after t2`.
    pub because: String,
}

/// Every todo of `goals` that rests on stale evidence, oldest first. Only a done todo's
/// evidence can make one, so with no todo done nothing is read; otherwise the goals' todos
/// and the evidence of their done ones, once.
pub(super) fn rests_on_stale(
    s: &Snapshot<'_>,
    goals: &[Goal],
    counts: &TodoCounts,
    judge: &EvidenceJudge,
) -> Result<Vec<RestsOnStale>, KernelError> {
    if counts.done == 0 || goals.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<GoalId> = goals.iter().map(|g| g.id).collect();
    let todos: Vec<Todo> = s.todos_where(|t| ids.contains(&t.goal))?;
    let done: std::collections::BTreeSet<TodoId> = (todos.iter())
        .filter(|t| t.state == loopx_kernel::model::TodoState::Done)
        .map(|t| t.id)
        .collect();
    if done.is_empty() {
        return Ok(Vec::new());
    }
    let mut evidence =
        s.evidence_newest(usize::MAX, |e| e.todo.is_some_and(|t| done.contains(&t)))?;
    // Oldest first, as the history reads it: the first stale piece is the reason given.
    evidence.reverse();
    let stale = stale_evidence(s, &mut judge.freshness(), &todos, &evidence)?;
    let resting = resting_on_stale(&todos, &evidence, &stale);
    Ok(todos
        .into_iter()
        .filter_map(|t| {
            let because = resting.get(&t.id)?.clone();
            Some(RestsOnStale {
                todo: t.id,
                title: t.title,
                goal: t.goal,
                because,
            })
        })
        .collect())
}
