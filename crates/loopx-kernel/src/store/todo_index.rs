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
//! - `claimed_todos` `id`: claimed, its lease live or expired.
//!
//! The counts of open and claimed todos sit in `meta` beside the dropped count, and each
//! goal's count of waiting todos beside them (`todos_waiting/<goal>`). Done and
//! dropped todos never change again (`TodoState::is_final`), and a todo's dependencies,
//! priority and role are fixed when it is added, so these are all the moves there are.
//! `check_consistency` recomputes every index from the todos and compares.

use std::path::Path;

use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};

use super::codec::decode;
use super::tables::{self, META};
use super::writer::Writer;
use crate::errors::KernelError;
use crate::model::{Todo, TodoState};

/// A write transaction and the store file its errors name.
#[derive(Clone, Copy)]
pub(crate) struct Ix<'t> {
    pub(crate) txn: &'t WriteTransaction,
    pub(crate) path: &'t Path,
}

impl<'t> Ix<'t> {
    /// A redb result as the kernel reports it (naming the store file).
    fn ok<T, E: Into<redb::Error>>(&self, result: Result<T, E>) -> Result<T, KernelError> {
        result.map_err(|e| super::open::redb_error(self.path, e.into()).into())
    }

    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'static, K, V>,
    ) -> Result<Table<'t, K, V>, KernelError> {
        self.ok(self.txn.open_table(def))
    }

    fn todo(&self, id: u64) -> Result<Option<Todo>, KernelError> {
        let todos = self.table(tables::TODOS)?;
        let Some(bytes) = self.ok(todos.get(id))? else {
            return Ok(None);
        };
        Ok(Some(decode("todos", bytes.value())?))
    }
}

/// The version of the todo indexes `meta.todo_index` records once they are built.
pub(crate) const TODO_INDEX_VERSION: u64 = 1;

/// A todo's key in `ready_todos`.
pub(crate) fn ready_key(todo: &Todo) -> (u64, &str, u8, i64, u64) {
    (
        todo.goal.0,
        todo.role.as_deref().unwrap_or(""),
        u8::from(!todo.needs.is_empty()),
        -i64::from(todo.priority),
        todo.id.0,
    )
}

/// Adds `delta` to the count of `goal`'s waiting todos.
fn count_waiting(ix: Ix<'_>, goal: u64, delta: i64) -> Result<(), KernelError> {
    let key = tables::waiting_key(goal);
    let mut meta = ix.table(META)?;
    let count = ix.ok(meta.get(key.as_str()))?.map_or(0, |v| v.value());
    match count.saturating_add_signed(delta) {
        0 => ix.ok(meta.remove(key.as_str())).map(drop),
        n => ix.ok(meta.insert(key.as_str(), n)).map(drop),
    }
}

/// Moves `todo` from where `previous` was indexed to where it belongs now, and keeps the counts.
pub(crate) fn reindex(
    w: &Writer<'_>,
    previous: Option<&Todo>,
    todo: &Todo,
) -> Result<(), KernelError> {
    let ix = Ix {
        txn: w.txn,
        path: w.path(),
    };
    if let Some(previous) = previous {
        unplace(ix, previous)?;
    }
    place(ix, todo)?;
    if todo.state.is_final() && previous.is_none_or(|p| !p.state.is_final()) {
        release_dependents(ix, todo.id.0)?;
    }
    let before = previous.map(|p| p.state);
    if before != Some(todo.state) {
        let mut meta = ix.table(META)?;
        for (state, key) in [
            (TodoState::Open, tables::OPEN_KEY),
            (TodoState::Claimed, tables::CLAIMED_KEY),
        ] {
            let delta = i64::from(todo.state == state) - i64::from(before == Some(state));
            if delta != 0 {
                let count = ix.ok(meta.get(key))?.map_or(0, |v| v.value());
                ix.ok(meta.insert(key, count.saturating_add_signed(delta)))?;
            }
        }
    }
    Ok(())
}

/// Takes `todo` out of whichever index holds it.
fn unplace(ix: Ix<'_>, todo: &Todo) -> Result<(), KernelError> {
    match todo.state {
        TodoState::Open => {
            ix.ok(ix.table(tables::READY_TODOS)?.remove(ready_key(todo)))?;
            let waited = ix
                .ok(ix
                    .table(tables::WAITING_TODOS)?
                    .remove((todo.goal.0, todo.id.0)))?
                .is_some();
            if waited {
                let mut dependents = ix.table(tables::DEPENDENTS)?;
                for dep in &todo.after {
                    ix.ok(dependents.remove((dep.0, todo.id.0)))?;
                }
                drop(dependents);
                count_waiting(ix, todo.goal.0, -1)?;
            }
        }
        TodoState::Claimed => {
            ix.ok(ix.table(tables::CLAIMED_TODOS)?.remove(todo.id.0))?;
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
                ix.ok(ix.table(tables::READY_TODOS)?.insert(ready_key(todo), ()))?;
            } else {
                ix.ok(ix
                    .table(tables::WAITING_TODOS)?
                    .insert((todo.goal.0, todo.id.0), ()))?;
                let mut dependents = ix.table(tables::DEPENDENTS)?;
                for dep in unfinished {
                    ix.ok(dependents.insert((dep, todo.id.0), ()))?;
                }
                drop(dependents);
                count_waiting(ix, todo.goal.0, 1)?;
            }
        }
        TodoState::Claimed => {
            ix.ok(ix.table(tables::CLAIMED_TODOS)?.insert(todo.id.0, ()))?;
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
        if ix.todo(dep.0)?.is_some_and(|d| !d.state.is_final()) {
            out.push(dep.0);
        }
    }
    Ok(out)
}

/// `finished` is done or dropped: every todo waiting on it that waits on nothing else now is
/// ready.
fn release_dependents(ix: Ix<'_>, finished: u64) -> Result<(), KernelError> {
    let mut dependents = ix.table(tables::DEPENDENTS)?;
    let mut waiting_on_it = Vec::new();
    for row in ix.ok(dependents.range((finished, 0)..=(finished, u64::MAX)))? {
        waiting_on_it.push(ix.ok(row)?.0.value().1);
    }
    for id in &waiting_on_it {
        ix.ok(dependents.remove((finished, *id)))?;
    }
    drop(dependents);
    for id in waiting_on_it {
        let Some(todo) = ix.todo(id)? else {
            continue;
        };
        if todo.state != TodoState::Open || !unfinished_deps(ix, &todo)?.is_empty() {
            continue;
        }
        ix.ok(ix
            .table(tables::WAITING_TODOS)?
            .remove((todo.goal.0, todo.id.0)))?;
        count_waiting(ix, todo.goal.0, -1)?;
        ix.ok(ix.table(tables::READY_TODOS)?.insert(ready_key(&todo), ()))?;
    }
    Ok(())
}

/// Builds the indexes of a store written before they existed (or of a new one), from the
/// active-todo index, and marks them built. Runs inside the caller's write transaction.
pub(crate) fn build(ix: Ix<'_>) -> Result<(), KernelError> {
    // Built from nothing: rows left from before (a rebuild) go first. Every table exists once
    // the indexes count as built, even those left empty: readers (read-only opens) cannot
    // create one.
    ix.ok(ix.txn.delete_table(tables::READY_TODOS))?;
    ix.ok(ix.txn.delete_table(tables::WAITING_TODOS))?;
    ix.ok(ix.txn.delete_table(tables::DEPENDENTS))?;
    ix.ok(ix.txn.delete_table(tables::CLAIMED_TODOS))?;
    ix.table(tables::READY_TODOS)?;
    ix.table(tables::WAITING_TODOS)?;
    ix.table(tables::DEPENDENTS)?;
    ix.table(tables::CLAIMED_TODOS)?;
    // Counted afresh below.
    let mut meta = ix.table(META)?;
    let mut stale = Vec::new();
    for row in ix.ok(meta.range("todos_waiting/".."todos_waiting0"))? {
        stale.push(ix.ok(row)?.0.value().to_owned());
    }
    for key in stale {
        ix.ok(meta.remove(key.as_str()))?;
    }
    drop(meta);
    let mut ids = Vec::new();
    for row in ix.ok(ix.table(tables::ACTIVE_TODOS)?.iter())? {
        ids.push(ix.ok(row)?.0.value());
    }
    let (mut open, mut claimed) = (0u64, 0u64);
    for id in ids {
        let Some(todo) = ix.todo(id)? else {
            continue;
        };
        open += u64::from(todo.state == TodoState::Open);
        claimed += u64::from(todo.state == TodoState::Claimed);
        place(ix, &todo)?;
    }
    let mut meta = ix.table(META)?;
    ix.ok(meta.insert(tables::OPEN_KEY, open))?;
    ix.ok(meta.insert(tables::CLAIMED_KEY, claimed))?;
    ix.ok(meta.insert(tables::TODO_INDEX_KEY, TODO_INDEX_VERSION))?;
    Ok(())
}
