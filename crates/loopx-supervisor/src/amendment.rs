//! What a slice is told about a goal a person amended: the change, at the top of every prompt
//! once the goal is past its first revision (whatever the profile's template says), and, for
//! the planning slice that re-plans after it, the open todos to review.

use loopx_kernel::model::Goal;
use loopx_kernel::{KernelError, Snapshot};

/// How many open todos a re-planning slice is shown.
const OPEN_TODOS_SHOWN: usize = 50;

/// `The goal changed in revision 2 …`, or `None` for a goal never amended.
pub fn goal_change_note(snap: &Snapshot<'_>, goal: &Goal) -> Result<Option<String>, KernelError> {
    if goal.revision <= 1 {
        return Ok(None);
    }
    let Some(now) = snap.goal_revision(goal.id, goal.revision)? else {
        return Ok(None);
    };
    let before = snap.goal_revision(goal.id, goal.revision - 1)?;
    let mut lines = vec![format!(
        "The goal changed in revision {} ({}, by {} at {}). Work to the goal as it is now; what \
         was planned or recorded before may no longer fit.",
        now.number,
        now.summary(),
        now.by,
        now.at
    )];
    for field in &now.changed {
        let (was, is) = match field.as_str() {
            "objective" => (
                before.as_ref().map(|b| b.objective.clone()),
                now.objective.clone(),
            ),
            "scope" => (
                before.as_ref().map(|b| b.scope.join(", ")),
                now.scope.join(", "),
            ),
            "permission" => (
                before.as_ref().map(|b| b.permission.as_str().to_owned()),
                now.permission.as_str().to_owned(),
            ),
            _ => continue,
        };
        lines.push(format!("- {field} now: {is}"));
        if let Some(was) = was {
            lines.push(format!("  {field} before: {was}"));
        }
    }
    Ok(Some(lines.join("\n")))
}

/// The task of the planning slice that re-plans after an amendment: the open todos, to keep,
/// replace or add to.
pub fn replan_task(snap: &Snapshot<'_>, goal: &Goal) -> Result<String, KernelError> {
    let open: Vec<String> = snap
        .active_todos()?
        .into_iter()
        .filter(|t| t.goal == goal.id)
        .take(OPEN_TODOS_SHOWN)
        .map(|t| format!("- {}: {}", t.id, t.title))
        .collect();
    let open = match open.is_empty() {
        true => "none".to_owned(),
        false => open.join("\n"),
    };
    Ok(format!(
        "The goal was amended (see the top of this prompt): re-plan for it. The open todos were \
         planned for the goal as it was:\n{open}\n\nPropose as `next_todos` the work the goal \
         now needs that none of them covers. Say in your handoff which open todos no longer fit \
         and why: a person drops them. Report `progress` when you are done; the goal is not over \
         while todos are open."
    ))
}
