//! The todo indexes: what the decision, `status` and `todo claim` read instead of every open
//! todo, kept in step with each todo write ([`reindex`], called by `Writer::put_todo`).
//!
//! Every open or claimed todo is in exactly one place:
//! - `ready_todos` `(goal, role or "", needs, -priority, id)`: open, every dependency finished;
//!   `needs` is 1 when the todo needs a capability. A range of it is the order an agent takes
//!   todos in (priority, then age), so "what is next for a reviewer of g1 with no capabilities"
//!   is the first rows of two ranges (`""` and `reviewer`, needing nothing), at any scale;
//! - `waiting_todos` `(goal, id)`: open, waiting on an unfinished dependency, with a row
//!   `(dependency, todo)` in `todo_dependents` per dependency it waits on. Finishing a todo
//!   reads its rows there and moves each dependent whose dependencies are now all finished to
//!   `ready_todos`: the cost is the number of dependents, not of todos;
//! - `monitor_todos` `(goal, id)`: an open monitor with every dependency finished. Monitors
//!   are never ready: loopx polls them, no agent takes them;
//! - `claimed_todos` `id`: claimed, its lease live or expired.
//!
//! The counts of open and claimed todos sit in `meta` beside the dropped count, and each
//! goal's count of waiting todos beside them (`todos_waiting/<goal>`). Done and
//! dropped todos never change again (`TodoState::is_final`), and a todo's dependencies,
//! priority and role are fixed when it is added, so these are all the moves there are.
//! `check_consistency` recomputes every index from the todos and compares.

use std::ops::Bound;

use super::codec::decode;
use super::kv::{ALL_KEYS, Key, KvReadExt, KvWrite, meta_bytes};
use super::tables::{self, META};
use super::writer::Writer;
use crate::errors::KernelError;
use crate::model::{Todo, TodoState};

/// The write transaction the indexes are kept in.
type Ix<'t> = &'t dyn KvWrite;

fn get_todo(ix: Ix<'_>, id: u64) -> Result<Option<Todo>, KernelError> {
    ix.get(tables::TODOS, &Key::Num(id))?
        .map(|bytes| decode("todos", &bytes))
        .transpose()
        .map_err(KernelError::from)
}

fn set_meta(ix: Ix<'_>, key: &str, value: u64) -> Result<(), KernelError> {
    ix.put(META, &Key::text(key), &meta_bytes(value))
}

/// The version of the todo indexes `meta.todo_index` records once they are built.
pub(crate) const TODO_INDEX_VERSION: u64 = 1;

/// A todo's key in `ready_todos`.
pub(crate) fn ready_key(todo: &Todo) -> Key {
    Key::Ready(
        todo.goal.0,
        todo.role.clone().unwrap_or_default(),
        u8::from(!todo.needs.is_empty()),
        -i64::from(todo.priority),
        todo.id.0,
    )
}

/// Adds `delta` to the count of `goal`'s waiting todos.
fn count_waiting(ix: Ix<'_>, goal: u64, delta: i64) -> Result<(), KernelError> {
    let key = tables::waiting_key(goal);
    let count = ix.meta(&key)?.unwrap_or(0);
    match count.saturating_add_signed(delta) {
        0 => ix.remove(META, &Key::Text(key)).map(drop),
        n => set_meta(ix, &key, n),
    }
}

/// Moves `todo` from where `previous` was indexed to where it belongs now, and keeps the counts.
pub(crate) fn reindex(
    w: &Writer<'_>,
    previous: Option<&Todo>,
    todo: &Todo,
) -> Result<(), KernelError> {
    let ix = w.kv;
    if let Some(previous) = previous {
        unplace(ix, previous)?;
    }
    place(ix, todo)?;
    if todo.state.is_final() && previous.is_none_or(|p| !p.state.is_final()) {
        release_dependents(ix, todo.id.0)?;
    }
    let before = previous.map(|p| p.state);
    if before != Some(todo.state) {
        for (state, key) in [
            (TodoState::Open, tables::OPEN_KEY),
            (TodoState::Claimed, tables::CLAIMED_KEY),
        ] {
            let delta = i64::from(todo.state == state) - i64::from(before == Some(state));
            if delta != 0 {
                let count = ix.meta(key)?.unwrap_or(0);
                set_meta(ix, key, count.saturating_add_signed(delta))?;
            }
        }
    }
    Ok(())
}

/// Takes `todo` out of whichever index holds it.
fn unplace(ix: Ix<'_>, todo: &Todo) -> Result<(), KernelError> {
    match todo.state {
        TodoState::Open => {
            ix.remove(tables::READY_TODOS, &ready_key(todo))?;
            ix.remove(tables::MONITOR_TODOS, &Key::Pair(todo.goal.0, todo.id.0))?;
            let waited = ix.remove(tables::WAITING_TODOS, &Key::Pair(todo.goal.0, todo.id.0))?;
            if waited {
                for dep in &todo.after {
                    ix.remove(tables::DEPENDENTS, &Key::Pair(dep.0, todo.id.0))?;
                }
                count_waiting(ix, todo.goal.0, -1)?;
            }
        }
        TodoState::Claimed => {
            ix.remove(tables::CLAIMED_TODOS, &Key::Num(todo.id.0))?;
        }
        TodoState::Done | TodoState::Dropped => {}
    }
    Ok(())
}

/// Puts `todo` where its state says: ready or waiting when open, claimed, or nowhere.
fn place(ix: Ix<'_>, todo: &Todo) -> Result<(), KernelError> {
    match todo.state {
        TodoState::Open => {
            let unfinished = unfinished_deps(ix, todo)?;
            if unfinished.is_empty() {
                put_ready(ix, todo)?;
            } else {
                ix.put(
                    tables::WAITING_TODOS,
                    &Key::Pair(todo.goal.0, todo.id.0),
                    &[],
                )?;
                for dep in unfinished {
                    ix.put(tables::DEPENDENTS, &Key::Pair(dep, todo.id.0), &[])?;
                }
                count_waiting(ix, todo.goal.0, 1)?;
            }
        }
        TodoState::Claimed => {
            ix.put(tables::CLAIMED_TODOS, &Key::Num(todo.id.0), &[])?;
        }
        TodoState::Done | TodoState::Dropped => {}
    }
    Ok(())
}

/// The dependencies of `todo` that are not finished (a missing one counts as finished: it can
/// never finish, and `check_consistency` reports it).
fn unfinished_deps(ix: Ix<'_>, todo: &Todo) -> Result<Vec<u64>, KernelError> {
    let mut out = Vec::new();
    for dep in &todo.after {
        if get_todo(ix, dep.0)?.is_some_and(|d| !d.state.is_final()) {
            out.push(dep.0);
        }
    }
    Ok(out)
}

/// `finished` is done or dropped: every todo waiting on it that waits on nothing else now is
/// ready.
fn release_dependents(ix: Ix<'_>, finished: u64) -> Result<(), KernelError> {
    let range = (
        Bound::Included(Key::Pair(finished, 0)),
        Bound::Included(Key::Pair(finished, u64::MAX)),
    );
    let waiting_on_it: Vec<u64> = ix
        .keys(tables::DEPENDENTS, range, usize::MAX)?
        .iter()
        .map(Key::num)
        .collect();
    for id in &waiting_on_it {
        ix.remove(tables::DEPENDENTS, &Key::Pair(finished, *id))?;
    }
    for id in waiting_on_it {
        let Some(todo) = get_todo(ix, id)? else {
            continue;
        };
        if todo.state != TodoState::Open || !unfinished_deps(ix, &todo)?.is_empty() {
            continue;
        }
        ix.remove(tables::WAITING_TODOS, &Key::Pair(todo.goal.0, todo.id.0))?;
        count_waiting(ix, todo.goal.0, -1)?;
        put_ready(ix, &todo)?;
    }
    Ok(())
}

/// Puts an open todo whose dependencies are all finished where it is worked from: the ready
/// index for agents, or the monitors' for loopx's polls.
fn put_ready(ix: Ix<'_>, todo: &Todo) -> Result<(), KernelError> {
    match todo.is_monitor() {
        true => ix.put(
            tables::MONITOR_TODOS,
            &Key::Pair(todo.goal.0, todo.id.0),
            &[],
        ),
        false => ix.put(tables::READY_TODOS, &ready_key(todo), &[]),
    }
}

/// Builds the indexes of a store written before they existed (or of a new one), from the
/// active-todo index, and marks them built. Runs inside the caller's write transaction.
pub(crate) fn build(ix: Ix<'_>) -> Result<(), KernelError> {
    // Built from nothing: rows left from before (a rebuild) go first.
    for table in [
        tables::READY_TODOS,
        tables::WAITING_TODOS,
        tables::DEPENDENTS,
        tables::CLAIMED_TODOS,
        tables::MONITOR_TODOS,
    ] {
        ix.clear(table)?;
    }
    // Counted afresh below. `todos_waiting0` is the first key after every `todos_waiting/…`.
    let range = (
        Bound::Included(Key::text("todos_waiting/")),
        Bound::Excluded(Key::text("todos_waiting0")),
    );
    for key in ix.keys(META, range, usize::MAX)? {
        ix.remove(META, &key)?;
    }
    let ids = super::reads::index_keys(ix, tables::ACTIVE_TODOS)?;
    let (mut open, mut claimed) = (0u64, 0u64);
    for id in ids {
        let Some(todo) = get_todo(ix, id)? else {
            continue;
        };
        open += u64::from(todo.state == TodoState::Open);
        claimed += u64::from(todo.state == TodoState::Claimed);
        place(ix, &todo)?;
    }
    set_meta(ix, tables::OPEN_KEY, open)?;
    set_meta(ix, tables::CLAIMED_KEY, claimed)?;
    set_meta(ix, tables::TODO_INDEX_KEY, TODO_INDEX_VERSION)?;
    let _ = ALL_KEYS;
    Ok(())
}
