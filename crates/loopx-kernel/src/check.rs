//! The kernel's invariants, checked over a snapshot: used by `loopx doctor` and by the property
//! tests, so that what the tests prove is what a user can verify on their own store.

use std::collections::BTreeSet;

use crate::errors::KernelError;
use crate::ids::GoalId;
use crate::model::{GateState, Todo, TodoState};
use crate::store::Snapshot;
use crate::store::tables::counter;

/// Every broken invariant, in words; empty when the state is consistent.
pub fn check_consistency(snap: &Snapshot<'_>) -> Result<Vec<String>, KernelError> {
    let mut problems = Vec::new();
    let goals = snap.goals()?;
    let goal_ids: BTreeSet<_> = goals.iter().map(|g| g.id).collect();
    let todos = snap.todos()?;
    check_todos(&todos, &goal_ids, &mut problems);
    for gate in snap.gates()? {
        if (gate.state == GateState::Answered) != gate.answer.is_some() {
            problems.push(format!(
                "gate {} is {} but its answer is {:?}",
                gate.id,
                gate.state.as_str(),
                gate.answer
            ));
        }
    }
    for slice in snap.running_slices()? {
        if slice.ended_at.is_some() {
            problems.push(format!(
                "slice {} is listed as running but has ended",
                slice.id
            ));
        }
    }
    check_counters(snap, &mut problems)?;
    check_todo_counts(snap, &todos, &mut problems)?;
    check_todo_index(snap, &todos, &mut problems)?;
    check_events(snap, &mut problems)?;
    Ok(problems)
}

/// Each todo's lease matches its state and epoch; its goal and dependencies exist.
fn check_todos(todos: &[Todo], goal_ids: &BTreeSet<GoalId>, problems: &mut Vec<String>) {
    let todo_ids: BTreeSet<_> = todos.iter().map(|t| t.id).collect();
    for todo in todos {
        let id = todo.id;
        match (&todo.state, &todo.lease) {
            (TodoState::Claimed, None) => problems.push(format!("{id} is claimed without a lease")),
            (TodoState::Claimed, Some(lease)) if lease.epoch != todo.epoch => {
                problems.push(format!(
                    "{id} lease carries epoch {} but the todo is at {}",
                    lease.epoch, todo.epoch
                ))
            }
            (TodoState::Open | TodoState::Done | TodoState::Dropped, Some(_)) => {
                problems.push(format!(
                    "{id} is {} but still has a lease",
                    todo.state.as_str()
                ));
            }
            _ => {}
        }
        if !goal_ids.contains(&todo.goal) {
            problems.push(format!("{id} belongs to missing goal {}", todo.goal));
        }
        for dep in &todo.after {
            if !todo_ids.contains(dep) {
                problems.push(format!("{id} waits on missing todo {dep}"));
            }
        }
    }
}

/// The active-todo index and the done and dropped counts agree with the todos.
fn check_todo_counts(
    snap: &Snapshot<'_>,
    todos: &[Todo],
    problems: &mut Vec<String>,
) -> Result<(), KernelError> {
    let mut indexed: Vec<_> = snap.active_todos_by_index()?;
    indexed.sort_unstable();
    let active: Vec<_> = todos
        .iter()
        .filter(|t| !t.state.is_final())
        .map(|t| t.id.0)
        .collect();
    if indexed != active {
        problems.push(format!(
            "the active-todo index lists {indexed:?} but the open and claimed todos are {active:?}"
        ));
    }
    let counts = snap.todo_counts()?;
    let dropped = todos
        .iter()
        .filter(|t| t.state == TodoState::Dropped)
        .count() as u64;
    let done = todos.iter().filter(|t| t.state == TodoState::Done).count() as u64;
    if (counts.dropped, counts.done) != (dropped, done) {
        problems.push(format!(
            "counts say {} done and {} dropped, the todos {done} and {dropped}",
            counts.done, counts.dropped
        ));
    }
    Ok(())
}

/// The todo indexes (`store/todo_index.rs`) hold what the todos say they should, row for row.
fn check_todo_index(
    snap: &Snapshot<'_>,
    todos: &[Todo],
    problems: &mut Vec<String>,
) -> Result<(), KernelError> {
    let Some(mut stored) = snap.todo_index_rows()? else {
        return Ok(());
    };
    let want = expected_todo_index(todos);
    stored.waiting_counts.sort_unstable();
    stored.claimed.sort_unstable();
    if stored != want {
        problems.push(format!(
            "the todo indexes do not match the todos: stored {stored:?}, expected {want:?}"
        ));
    }
    Ok(())
}

/// What the todo indexes hold for `todos`, in the order the check compares them.
fn expected_todo_index(todos: &[Todo]) -> crate::store::TodoIndexRows {
    let state: std::collections::BTreeMap<_, _> = todos.iter().map(|t| (t.id, t.state)).collect();
    let unfinished = |t: &Todo| -> Vec<u64> {
        let mut deps: Vec<u64> = t
            .after
            .iter()
            .filter(|d| state.get(d).is_some_and(|s| !s.is_final()))
            .map(|d| d.0)
            .collect();
        deps.sort_unstable();
        deps.dedup();
        deps
    };
    let mut want = crate::store::TodoIndexRows::default();
    for todo in todos {
        match todo.state {
            TodoState::Open => {
                want.open_count += 1;
                let waits = unfinished(todo);
                if waits.is_empty() && todo.is_monitor() {
                    want.monitors.push((todo.goal.0, todo.id.0));
                } else if waits.is_empty() {
                    if let crate::store::kv::Key::Ready(g, r, n, p, id) =
                        crate::store::ready_key(todo)
                    {
                        want.ready.push((g, r, n, p, id));
                    }
                } else {
                    want.waiting.push((todo.goal.0, todo.id.0));
                    want.dependents
                        .extend(waits.into_iter().map(|d| (d, todo.id.0)));
                }
            }
            TodoState::Claimed => {
                want.claimed_count += 1;
                want.claimed.push(todo.id.0);
            }
            TodoState::Done | TodoState::Dropped => {}
        }
    }
    want.ready.sort();
    want.waiting.sort_unstable();
    for (goal, _) in &want.waiting {
        match want.waiting_counts.last_mut() {
            Some((g, n)) if g == goal => *n += 1,
            _ => want.waiting_counts.push((*goal, 1)),
        }
    }
    want.dependents.sort_unstable();
    want.monitors.sort_unstable();
    want
}

fn check_counters(snap: &Snapshot<'_>, problems: &mut Vec<String>) -> Result<(), KernelError> {
    for (table, last, next) in snap.counter_check()? {
        if let Some(last) = last
            && last >= next
        {
            problems.push(format!(
                "the {table} counter {next} is not above the newest record {last}"
            ));
        }
    }
    let mut running = snap.running_by_index()?;
    running.sort_unstable();
    let unended: Vec<u64> = snap
        .slices()?
        .iter()
        .filter(|s| s.ended_at.is_none())
        .map(|s| s.id.0)
        .collect();
    if running != unended {
        problems.push(format!("the running-slice index lists {running:?} but the slices without an end are {unended:?}"));
    }
    Ok(())
}

/// Events are numbered 1..=N without gaps, and the counter is N + 1.
fn check_events(snap: &Snapshot<'_>, problems: &mut Vec<String>) -> Result<(), KernelError> {
    let count = snap.event_count()?;
    let next = snap.meta(counter::EVENT)?.unwrap_or(0);
    if next != count + 1 {
        problems.push(format!(
            "the event counter is {next} but there are {count} events"
        ));
    }
    let mut expected = 1;
    loop {
        let batch = snap.events_from(expected, 4096)?;
        if batch.is_empty() {
            break;
        }
        for event in &batch {
            if event.seq != expected {
                problems.push(format!(
                    "event {} follows event {}: the log has a gap",
                    event.seq,
                    expected - 1
                ));
                return Ok(());
            }
            expected += 1;
        }
    }
    Ok(())
}
