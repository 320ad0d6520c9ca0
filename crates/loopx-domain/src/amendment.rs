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
         now needs that none of them covers. In this slice only, you may also drop the open \
         todos that no longer fit (`\"drop_todos\":[{{\"todo\":\"t3\",\"why\":\"…\"}}]`) and \
         rewrite the ones that fit differently (`\"rewrite_todos\":[{{\"todo\":\"t4\",\"title\":\
         \"…\",\"detail\":\"…\",\"why\":\"…\"}}]`); a todo another agent is working on is left \
         as it is. Report `progress` when you are done; the goal is not over while todos are open."
    ))
}

/// The report's drops and rewrites of open todos (`drop_todos`, `rewrite_todos`) as the
/// kernel takes them from `slice`, each with what it is in words: an id that does not parse is
/// an error for that item alone. Whether `slice` may (it is the re-planning slice) is the
/// kernel's to say.
pub fn replan_ops(
    slice: loopx_kernel::SliceId,
    report: &loopx_adapters::Report,
) -> Vec<(String, Result<loopx_kernel::store::Op, String>)> {
    use loopx_kernel::limits::{self, bounded};
    use loopx_kernel::store::{Op, ReplanTodo, Replanning};
    let op = |todo: &str, change: Replanning, why: &str| {
        let todo = todo
            .trim()
            .parse::<loopx_kernel::TodoId>()
            .map_err(|e| e.to_string())?;
        Ok(Op::TodoReplan(ReplanTodo {
            slice,
            todo,
            change,
            why: bounded(why.trim(), limits::DETAIL),
        }))
    };
    let drops = report.drop_todos.iter().map(|d| {
        let what = format!("dropping `{}`", limits::clip(d.todo.trim(), 40));
        (what, op(&d.todo, Replanning::Drop, &d.why))
    });
    let rewrites = report.rewrite_todos.iter().map(|r| {
        let what = format!("rewriting `{}`", limits::clip(r.todo.trim(), 40));
        let change = Replanning::Rewrite {
            title: r.title.as_deref().map(|t| bounded(t.trim(), limits::TITLE)),
            detail: r
                .detail
                .as_deref()
                .map(|d| bounded(d.trim(), limits::DETAIL)),
            priority: r.priority,
        };
        (what, op(&r.todo, change, &r.why))
    });
    drops.chain(rewrites).collect()
}
