//! The goals `status` shows: the one goal as before, or every active goal when several are
//! (each with its own first todos), or the one goal `status --goal` names.

use loopx_kernel::model::{Gate, Goal, GoalStatus, Todo};
use loopx_kernel::store::TodoCounts;
use loopx_kernel::{GoalId, Invalid, KernelError, Snapshot, Timestamp};
use serde::Serialize;

use super::first::{FirstTodos, first_todos};
use super::{Next, next_in_line};

/// One goal as `status` shows it: where it stands among the others and its first todos.
#[derive(Debug, Serialize)]
pub struct GoalNow {
    pub id: GoalId,
    pub objective: String,
    pub status: GoalStatus,
    /// Which active goal the agents serve first (higher first).
    pub priority: i32,
    /// Its duty share of a rolling window, 0..=1.
    pub share: f64,
    /// How many of its todos are claimed.
    pub claimed: u64,
    /// How many of its todos wait on a dependency.
    pub waiting: u64,
    /// Its first todos in line, in the order agents take them.
    pub next: Vec<Next>,
}

/// The goals a status shows: the one `only` names (an unknown one is an error), else every
/// active goal when several are, else the goal a view shows (`Snapshot::goal_shown`).
pub(super) fn goals_shown(
    s: &Snapshot<'_>,
    only: Option<GoalId>,
) -> Result<Vec<Goal>, KernelError> {
    if let Some(id) = only {
        return match s.goal(id)? {
            Some(goal) => Ok(vec![goal]),
            None => Err(Invalid::NotFound {
                what: "goal",
                id: id.to_string(),
            }
            .into()),
        };
    }
    let active = s.active_goals()?;
    if active.len() > 1 {
        return Ok(active);
    }
    Ok(s.goal_shown()?.into_iter().collect())
}

/// Each goal's first todos, and all of them together for the screen's sections (every claimed
/// todo once; the waiting, gated, ready todos and monitors of each goal shown).
pub(super) fn todos_of(
    s: &Snapshot<'_>,
    goals: &[Goal],
    gates: &[Gate],
    counts: TodoCounts,
    now: Timestamp,
) -> Result<(Vec<GoalNow>, FirstTodos), KernelError> {
    if goals.is_empty() {
        return Ok((Vec::new(), first_todos(s, None, gates, counts)?));
    }
    let mut all = FirstTodos {
        counts,
        ..FirstTodos::default()
    };
    let mut shown = Vec::with_capacity(goals.len());
    for goal in goals {
        let mut first = first_todos(s, Some(goal.id), gates, counts)?;
        let claimed: Vec<Todo> = (first.claimed.iter())
            .filter(|t| t.goal == goal.id)
            .cloned()
            .collect();
        shown.push(GoalNow {
            id: goal.id,
            objective: goal.objective.clone(),
            status: goal.status,
            priority: goal.priority,
            share: goal.share,
            claimed: claimed.len() as u64,
            waiting: first.waiting_total,
            next: next_in_line(&claimed, &first.ready, gates, now),
        });
        // Every claimed todo is read each time: keep one copy.
        all.claimed = std::mem::take(&mut first.claimed);
        all.waiting.append(&mut first.waiting);
        all.gated.append(&mut first.gated);
        all.ready.append(&mut first.ready);
        all.monitors.append(&mut first.monitors);
        all.waiting_total += first.waiting_total;
    }
    Ok((shown, all))
}
