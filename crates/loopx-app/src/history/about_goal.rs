//! What in the history is about one goal (`loopx log --goal`): the goal's own events, and the
//! events of its todos, its slices and the gates that hold it back.

use loopx_kernel::model::{Blocks, Gate};
use loopx_kernel::{EventKind, GoalId, KernelError, Snapshot, TodoId};

/// Whether `gate` holds back work of `goal`: a gate on the goal, on one of its todos, or on
/// everything (a gate on an agent or on nothing is no goal's).
pub fn gate_holds_goal(s: &Snapshot<'_>, gate: &Gate, goal: GoalId) -> Result<bool, KernelError> {
    if gate.blocks.holds_whole_goal(goal) {
        return Ok(true);
    }
    match &gate.blocks {
        Blocks::Todos(todos) => {
            for todo in todos {
                if todo_of_goal(s, *todo, goal)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// Whether `event` is about `goal`. Every kind is named: a new one must say whose it is.
pub fn event_about_goal(
    s: &Snapshot<'_>,
    event: &EventKind,
    goal: GoalId,
) -> Result<bool, KernelError> {
    use EventKind as E;
    match event {
        E::GoalStarted { goal: g, .. }
        | E::GoalStatusChanged { goal: g, .. }
        | E::BudgetRestarted { goal: g, .. }
        | E::GoalAmended { goal: g, .. }
        | E::TodoAdded { goal: g, .. } => Ok(*g == goal),
        E::TodoClaimed { todo, .. }
        | E::TodoRenewed { todo, .. }
        | E::TodoReleased { todo, .. }
        | E::TodoDone { todo, .. }
        | E::TodoDropped { todo, .. }
        | E::StaleEpochRefused { todo, .. }
        | E::TodoRetried { todo, .. }
        | E::MonitorPolled { todo, .. }
        | E::TodoEdited { todo, .. }
        | E::TodoReplanned { todo, .. }
        | E::EvidenceAdded {
            todo: Some(todo), ..
        }
        | E::HandoffWritten {
            todo: Some(todo), ..
        }
        | E::ChangeRefused {
            todo: Some(todo), ..
        } => todo_of_goal(s, *todo, goal),
        E::GateOpened { gate, .. }
        | E::GateAnswered { gate, .. }
        | E::GateWithdrawn { gate }
        | E::GateAnswerRefused { gate, .. } => match s.gate(*gate)? {
            Some(gate) => gate_holds_goal(s, &gate, goal),
            None => Ok(false),
        },
        E::SliceStarted { slice, .. }
        | E::SliceSpawned { slice, .. }
        | E::SliceEnded { slice, .. }
        | E::MessageDelivered { slice, .. }
        | E::MessageReturned { slice, .. } => {
            // A slice of an older loopx has no goal of its own: its todo's is.
            match s.slice(*slice)? {
                Some(record) => match (record.goal, record.todo) {
                    (Some(g), _) => Ok(g == goal),
                    (None, Some(todo)) => todo_of_goal(s, todo, goal),
                    (None, None) => Ok(false),
                },
                None => Ok(false),
            }
        }
        E::AgentWaits { goal: g, .. } => Ok(*g == Some(goal)),
        E::ProjectCreated
        | E::EvidenceAdded { todo: None, .. }
        | E::HandoffWritten { todo: None, .. }
        | E::ChangeRefused { todo: None, .. }
        | E::AgentAdded { .. }
        | E::AgentChanged { .. }
        | E::AgentRemoved { .. }
        | E::QuotaSpent { .. }
        | E::QuotaHeld { .. }
        | E::QuotaResumed { .. }
        // A message is to an agent, about no goal until a slice of one takes it.
        | E::MessageSent { .. } => Ok(false),
    }
}

fn todo_of_goal(s: &Snapshot<'_>, todo: TodoId, goal: GoalId) -> Result<bool, KernelError> {
    Ok(s.todo(todo)?.is_some_and(|t| t.goal == goal))
}
