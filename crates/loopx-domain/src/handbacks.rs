//! The loops in a goal's lineage: agents of two roles (an executor and a reviewer) handing the
//! same work back and forth, each round a new todo proposed after the last. The stall guard
//! counts slices on one todo and never sees it: every todo of such a chain is done, and the
//! next one is new. Along the chain, more than `[limits] handbacks` rounds ask a person
//! (`docs/history.md`): before the next round starts, not after it.

use loopx_kernel::model::{Todo, TodoState};
use loopx_kernel::{KernelError, Snapshot, TodoId};
use loopx_quota::{AskAbout, Decision, SliceKind};

/// The chain `todo` ends, oldest first: each todo after the one before it (its only `after`),
/// proposed by an agent, the one before it done, the roles alternating between two. A person's
/// todo begins a chain; a person's `retry` on a todo of it (its stall gate) begins it afresh.
pub fn chain(snap: &Snapshot<'_>, todo: &Todo) -> Result<Vec<TodoId>, KernelError> {
    let mut chain = vec![todo.id];
    let mut roles = vec![todo.role.clone()];
    let mut current = todo.clone();
    while current.attempts_since.is_none()
        && loopx_vocab::Actor::of(&current.created_by).is_agent()
        && let [before] = current.after.as_slice()
        && let Some(before) = snap.todo(*before)?
        && before.state == TodoState::Done
        && before.role != current.role
    {
        if !roles.contains(&before.role) {
            if roles.len() == 2 {
                break;
            }
            roles.push(before.role.clone());
        }
        chain.push(before.id);
        current = before;
    }
    chain.reverse();
    Ok(chain)
}

/// `decision`, or a question instead when it would start the round of a chain past
/// `handbacks` hand-backs.
pub fn guard(
    snap: &Snapshot<'_>,
    decision: Decision,
    handbacks: u32,
) -> Result<Decision, KernelError> {
    let Decision::Deliver { run, .. } = &decision else {
        return Ok(decision);
    };
    let (Some(id), SliceKind::Work) = (run.todo.as_ref().map(|(id, _)| *id), run.slice) else {
        return Ok(decision);
    };
    let Some(todo) = snap.todo(id)? else {
        return Ok(decision);
    };
    let chain = chain(snap, &todo)?;
    let rounds = chain.len().saturating_sub(1);
    if rounds < handbacks as usize {
        return Ok(decision);
    }
    let path: Vec<String> = chain.iter().map(ToString::to_string).collect();
    Ok(Decision::Ask {
        about: AskAbout::HandedBack((todo.id, todo.title.clone())),
        gate: None,
        reason: format!(
            "the same work was handed back and forth {rounds} times ({}): {} would be one more round, so a person is asked first (`[limits] handbacks` = {handbacks})",
            path.join(" → "),
            todo.id
        ),
    })
}
