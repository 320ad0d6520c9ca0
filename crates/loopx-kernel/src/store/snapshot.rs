//! Reading a consistent snapshot of the store.

use std::path::Path;

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata, TableHandle};
use serde::de::DeserializeOwned;

use super::codec::decode;
use super::tables::{self, META, Numbered};
use crate::errors::KernelError;
use crate::ids::{EvidenceId, GateId, GoalId, HandoffId, SliceId, TodoId};
use crate::model::{Agent, Event, Evidence, Gate, Goal, GoalStatus, Handoff, SliceRecord, Todo};

/// How many todos are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TodoCounts {
    pub open: u64,
    pub claimed: u64,
    pub done: u64,
    pub dropped: u64,
}

/// The rows of the todo indexes, as stored (`store/todo_index.rs`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TodoIndexRows {
    pub ready: Vec<(u64, String, u8, i64, u64)>,
    /// `(goal, count)` of waiting todos, goals with none left out, by goal.
    pub waiting_counts: Vec<(u64, u64)>,
    pub waiting: Vec<(u64, u64)>,
    pub dependents: Vec<(u64, u64)>,
    pub claimed: Vec<u64>,
    pub open_count: u64,
    pub claimed_count: u64,
}

/// A numbered table's name, its highest key, and the counter that must be above it.
pub(crate) type CounterCheck = (&'static str, Option<u64>, u64);

/// A read transaction with typed accessors.
pub struct Snapshot<'a> {
    txn: ReadTransaction,
    path: &'a Path,
}

impl std::fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl<'a> Snapshot<'a> {
    pub(crate) fn new(txn: ReadTransaction, path: &'a Path) -> Self {
        Snapshot { txn, path }
    }

    fn redb(&self, e: impl Into<redb::Error>) -> KernelError {
        super::open::redb_error(self.path, e.into()).into()
    }

    fn get<T: DeserializeOwned>(
        &self,
        table: Numbered,
        key: u64,
    ) -> Result<Option<T>, KernelError> {
        let t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
        super::reads::get(&t, key, table.name(), |e| self.redb(e))
    }

    /// Every record of a table in creation order, or the newest `limit` of them (newest first)
    /// that pass `keep`.
    fn scan<T: DeserializeOwned>(
        &self,
        table: Numbered,
        newest_first: bool,
        limit: usize,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, KernelError> {
        let t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
        let rows = t.iter().map_err(|e| self.redb(e))?;
        let rows: Box<dyn Iterator<Item = _>> = if newest_first {
            Box::new(rows.rev())
        } else {
            Box::new(rows)
        };
        let mut out = Vec::new();
        for row in rows {
            if out.len() >= limit {
                break;
            }
            let (_, bytes) = row.map_err(|e| self.redb(e))?;
            let value: T = decode(table.name(), bytes.value())?;
            if keep(&value) {
                out.push(value);
            }
        }
        Ok(out)
    }

    /// A value of the `meta` table (`schema_version`, `next_todo`, …).
    pub fn meta(&self, key: &str) -> Result<Option<u64>, KernelError> {
        let t = self.txn.open_table(META).map_err(|e| self.redb(e))?;
        Ok(t.get(key).map_err(|e| self.redb(e))?.map(|v| v.value()))
    }

    pub fn goal(&self, id: GoalId) -> Result<Option<Goal>, KernelError> {
        self.get(tables::GOALS, id.0)
    }

    pub fn goals(&self) -> Result<Vec<Goal>, KernelError> {
        self.scan(tables::GOALS, false, usize::MAX, |_| true)
    }

    /// The goal commands act on by default: the active one, else the newest paused one.
    pub fn current_goal(&self) -> Result<Option<Goal>, KernelError> {
        let goals = self.scan::<Goal>(tables::GOALS, true, usize::MAX, |g| {
            matches!(g.status, GoalStatus::Active | GoalStatus::Paused)
        })?;
        Ok(goals
            .iter()
            .find(|g| g.status == GoalStatus::Active)
            .or(goals.first())
            .cloned())
    }

    pub fn todo(&self, id: TodoId) -> Result<Option<Todo>, KernelError> {
        self.get(tables::TODOS, id.0)
    }

    /// Every todo, oldest first.
    pub fn todos(&self) -> Result<Vec<Todo>, KernelError> {
        self.scan(tables::TODOS, false, usize::MAX, |_| true)
    }

    /// The todos that pass `keep`, oldest first.
    pub fn todos_where(&self, keep: impl FnMut(&Todo) -> bool) -> Result<Vec<Todo>, KernelError> {
        self.scan(tables::TODOS, false, usize::MAX, keep)
    }

    /// Open and claimed todos, oldest first. Reads the active-todo index and only those todos,
    /// unless most todos are active, when one sequential scan is cheaper than many lookups.
    pub fn active_todos(&self) -> Result<Vec<Todo>, KernelError> {
        let index = self
            .txn
            .open_table(tables::ACTIVE_TODOS)
            .map_err(|e| self.redb(e))?;
        let active = index.len().map_err(|e| self.redb(e))?;
        let total = self
            .meta(tables::counter::TODO)?
            .unwrap_or(1)
            .saturating_sub(1);
        if active * 4 > total {
            return self.todos_where(|t| !t.state.is_final());
        }
        let todos = self
            .txn
            .open_table(tables::TODOS)
            .map_err(|e| self.redb(e))?;
        let mut out = Vec::new();
        for row in index.iter().map_err(|e| self.redb(e))? {
            let (id, ()) = row
                .map(|(k, v)| (k.value(), v.value()))
                .map_err(|e| self.redb(e))?;
            if let Some(bytes) = todos.get(id).map_err(|e| self.redb(e))? {
                out.push(decode("todos", bytes.value())?);
            }
        }
        Ok(out)
    }

    /// A page of todos in the order they were added: those after the todo numbered `after`
    /// that pass `keep`, at most `limit`, and whether more follow. With `active_only`, reads
    /// the open and claimed todos only (through their index).
    pub fn todos_page(
        &self,
        after: u64,
        limit: usize,
        active_only: bool,
        mut keep: impl FnMut(&Todo) -> bool,
    ) -> Result<(Vec<Todo>, bool), KernelError> {
        let todos = self
            .txn
            .open_table(tables::TODOS)
            .map_err(|e| self.redb(e))?;
        let mut out = Vec::new();
        let mut take = |todo: Todo| -> bool {
            if !keep(&todo) {
                return true;
            }
            if out.len() == limit {
                return false;
            }
            out.push(todo);
            true
        };
        let from = after.saturating_add(1);
        if active_only {
            let index = self
                .txn
                .open_table(tables::ACTIVE_TODOS)
                .map_err(|e| self.redb(e))?;
            for row in index.range(from..).map_err(|e| self.redb(e))? {
                let id = row.map_err(|e| self.redb(e))?.0.value();
                let Some(bytes) = todos.get(id).map_err(|e| self.redb(e))? else {
                    continue;
                };
                if !take(decode("todos", bytes.value())?) {
                    return Ok((out, true));
                }
            }
        } else {
            for row in todos.range(from..).map_err(|e| self.redb(e))? {
                let (_, bytes) = row.map_err(|e| self.redb(e))?;
                if !take(decode("todos", bytes.value())?) {
                    return Ok((out, true));
                }
            }
        }
        Ok((out, false))
    }

    /// Claimed todos (live or expired leases), oldest first.
    pub fn claimed_todos(&self) -> Result<Vec<Todo>, KernelError> {
        let index = self
            .txn
            .open_table(tables::CLAIMED_TODOS)
            .map_err(|e| self.redb(e))?;
        self.todos_by_id(super::reads::index_keys(&index, |e| self.redb(e))?)
    }

    fn todos_by_id(&self, ids: impl IntoIterator<Item = u64>) -> Result<Vec<Todo>, KernelError> {
        let todos = self
            .txn
            .open_table(tables::TODOS)
            .map_err(|e| self.redb(e))?;
        let mut out = Vec::new();
        for id in ids {
            if let Some(bytes) = todos.get(id).map_err(|e| self.redb(e))? {
                out.push(decode("todos", bytes.value())?);
            }
        }
        Ok(out)
    }

    /// The first `limit` open todos of `goal` for `role` (`None`: todos for any role) that
    /// need a capability (`needs`) or need none, whose dependencies are all finished, in the
    /// order an agent takes them: highest priority first, then oldest. Reads `limit` rows of
    /// the ready index, whatever the number of todos.
    pub fn ready_todos(
        &self,
        goal: GoalId,
        role: Option<&str>,
        needs: bool,
        limit: usize,
    ) -> Result<Vec<Todo>, KernelError> {
        let index = self
            .txn
            .open_table(tables::READY_TODOS)
            .map_err(|e| self.redb(e))?;
        let role = role.unwrap_or("");
        let needs = u8::from(needs);
        let mut ids = Vec::new();
        for row in index
            .range((goal.0, role, needs, i64::MIN, 0)..=(goal.0, role, needs, i64::MAX, u64::MAX))
            .map_err(|e| self.redb(e))?
            .take(limit)
        {
            ids.push(row.map_err(|e| self.redb(e))?.0.value().4);
        }
        self.todos_by_id(ids)
    }

    /// The roles the ready todos of `goal` are for (`None`: for any role), each once: one
    /// lookup per role, not a scan.
    pub fn ready_roles(&self, goal: GoalId) -> Result<Vec<Option<String>>, KernelError> {
        let index = self
            .txn
            .open_table(tables::READY_TODOS)
            .map_err(|e| self.redb(e))?;
        let mut roles = Vec::new();
        let mut from = String::new();
        loop {
            let next = index
                .range((goal.0, from.as_str(), 0, i64::MIN, 0)..(goal.0 + 1, "", 0, i64::MIN, 0))
                .map_err(|e| self.redb(e))?
                .next();
            let Some(row) = next else { break };
            let role = row.map_err(|e| self.redb(e))?.0.value().1.to_owned();
            roles.push((!role.is_empty()).then(|| role.clone()));
            // The smallest string after every key of this role: the role and a NUL.
            from = format!("{role}\0");
        }
        Ok(roles)
    }

    /// The first `limit` open todos of `goal` that wait on an unfinished dependency, oldest
    /// first.
    pub fn waiting_todos(&self, goal: GoalId, limit: usize) -> Result<Vec<Todo>, KernelError> {
        let index = self
            .txn
            .open_table(tables::WAITING_TODOS)
            .map_err(|e| self.redb(e))?;
        let mut ids = Vec::new();
        for row in index
            .range((goal.0, 0)..=(goal.0, u64::MAX))
            .map_err(|e| self.redb(e))?
            .take(limit)
        {
            ids.push(row.map_err(|e| self.redb(e))?.0.value().1);
        }
        self.todos_by_id(ids)
    }

    /// How many open todos of `goal` wait on an unfinished dependency.
    pub fn waiting_count(&self, goal: GoalId) -> Result<u64, KernelError> {
        let t = self.txn.open_table(META).map_err(|e| self.redb(e))?;
        Ok(t.get(tables::waiting_key(goal.0).as_str())
            .map_err(|e| self.redb(e))?
            .map_or(0, |v| v.value()))
    }

    /// The rows of every todo index, for the consistency check; `None` before they are built
    /// (a store written by an older loopx, opened for inspection only).
    pub(crate) fn todo_index_rows(&self) -> Result<Option<TodoIndexRows>, KernelError> {
        if self.meta(tables::TODO_INDEX_KEY)?.is_none() {
            return Ok(None);
        }
        let mut rows = TodoIndexRows::default();
        let ready = self
            .txn
            .open_table(tables::READY_TODOS)
            .map_err(|e| self.redb(e))?;
        for row in ready.iter().map_err(|e| self.redb(e))? {
            let (key, _) = row.map_err(|e| self.redb(e))?;
            let (g, r, n, p, id) = key.value();
            rows.ready.push((g, r.to_owned(), n, p, id));
        }
        for (table, out) in [
            (tables::WAITING_TODOS, &mut rows.waiting),
            (tables::DEPENDENTS, &mut rows.dependents),
        ] {
            let t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
            for row in t.iter().map_err(|e| self.redb(e))? {
                out.push(row.map_err(|e| self.redb(e))?.0.value());
            }
        }
        let claimed = self
            .txn
            .open_table(tables::CLAIMED_TODOS)
            .map_err(|e| self.redb(e))?;
        rows.claimed = super::reads::index_keys(&claimed, |e| self.redb(e))?;
        let meta = self.txn.open_table(META).map_err(|e| self.redb(e))?;
        // `todos_waiting0` is the first key after every `todos_waiting/…` (`0` follows `/`).
        for row in meta
            .range("todos_waiting/".."todos_waiting0")
            .map_err(|e| self.redb(e))?
        {
            let (key, count) = row.map_err(|e| self.redb(e))?;
            let goal = key.value()["todos_waiting/".len()..].parse().unwrap_or(0);
            rows.waiting_counts.push((goal, count.value()));
        }
        rows.open_count = self.meta(tables::OPEN_KEY)?.unwrap_or(0);
        rows.claimed_count = self.meta(tables::CLAIMED_KEY)?.unwrap_or(0);
        Ok(Some(rows))
    }

    /// A quota value (`pacing/<agent>`, `window/<account>/<ms>`), if set.
    /// What `goal` spent since a todo was last done (or a person gave it a fresh budget).
    pub fn goal_spent(
        &self,
        goal: crate::ids::GoalId,
    ) -> Result<crate::store::apply::budget::Spent, KernelError> {
        Ok(self
            .quota_value(&crate::store::apply::budget::spent_key(goal))?
            .unwrap_or_default())
    }

    /// The last slice before a person last said to plan `goal` afresh (a goal-met gate answered
    /// with anything but `done`): planning slices up to it no longer count.
    pub fn goal_plans_after(&self, goal: crate::ids::GoalId) -> Result<Option<u64>, KernelError> {
        self.quota_value(&crate::store::apply::budget::plans_key(goal))
    }

    pub fn quota_value<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KernelError> {
        let t = self
            .txn
            .open_table(tables::QUOTA)
            .map_err(|e| self.redb(e))?;
        super::reads::get(&t, key, "quota", |e| self.redb(e))
    }

    /// Every hold, by key.
    pub fn quota_holds(&self) -> Result<Vec<crate::model::QuotaHold>, KernelError> {
        let t = self
            .txn
            .open_table(tables::QUOTA)
            .map_err(|e| self.redb(e))?;
        super::reads::holds(&t, |e| self.redb(e))
    }

    /// Spends at or after `since`, oldest first.
    pub fn spends_since(
        &self,
        since: crate::time::Timestamp,
    ) -> Result<Vec<crate::model::Spend>, KernelError> {
        let t = self
            .txn
            .open_table(tables::SPENDS)
            .map_err(|e| self.redb(e))?;
        super::reads::spends_since(&t, since, |e| self.redb(e))
    }

    /// The newest `limit` slices, oldest first.
    pub fn slices_tail(&self, limit: usize) -> Result<Vec<SliceRecord>, KernelError> {
        let mut slices: Vec<SliceRecord> = self.scan(tables::SLICES, true, limit, |_| true)?;
        slices.reverse();
        Ok(slices)
    }

    /// The highest key of a numbered table, and the counter that should be above it.
    pub(crate) fn counter_check(&self) -> Result<Vec<CounterCheck>, KernelError> {
        let pairs: [(&'static str, Numbered, &'static str); 7] = [
            ("goals", tables::GOALS, tables::counter::GOAL),
            ("todos", tables::TODOS, tables::counter::TODO),
            ("gates", tables::GATES, tables::counter::GATE),
            ("evidence", tables::EVIDENCE, tables::counter::EVIDENCE),
            ("handoffs", tables::HANDOFFS, tables::counter::HANDOFF),
            ("slices", tables::SLICES, tables::counter::SLICE),
            ("spends", tables::SPENDS, tables::counter::SPEND),
        ];
        let mut out = Vec::new();
        for (name, table, counter) in pairs {
            let t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
            let last = t.last().map_err(|e| self.redb(e))?.map(|(k, _)| k.value());
            out.push((name, last, self.meta(counter)?.unwrap_or(0)));
        }
        Ok(out)
    }

    /// The ids in the running-slice index.
    pub(crate) fn running_by_index(&self) -> Result<Vec<u64>, KernelError> {
        let index = self
            .txn
            .open_table(tables::RUNNING)
            .map_err(|e| self.redb(e))?;
        super::reads::index_keys(&index, |e| self.redb(e))
    }

    /// The ids in the active-todo index (for the consistency check).
    pub(crate) fn active_todos_by_index(&self) -> Result<Vec<u64>, KernelError> {
        let index = self
            .txn
            .open_table(tables::ACTIVE_TODOS)
            .map_err(|e| self.redb(e))?;
        super::reads::index_keys(&index, |e| self.redb(e))
    }

    /// How many todos there are in each state, from the counts kept with the indexes.
    pub fn todo_counts(&self) -> Result<TodoCounts, KernelError> {
        let total = self
            .meta(tables::counter::TODO)?
            .unwrap_or(1)
            .saturating_sub(1);
        let dropped = self.meta(tables::DROPPED_KEY)?.unwrap_or(0);
        let open = self.meta(tables::OPEN_KEY)?.unwrap_or(0);
        let claimed = self.meta(tables::CLAIMED_KEY)?.unwrap_or(0);
        Ok(TodoCounts {
            open,
            claimed,
            done: total.saturating_sub(open + claimed + dropped),
            dropped,
        })
    }

    pub fn gate(&self, id: GateId) -> Result<Option<Gate>, KernelError> {
        self.get(tables::GATES, id.0)
    }

    pub fn gates(&self) -> Result<Vec<Gate>, KernelError> {
        self.scan(tables::GATES, false, usize::MAX, |_| true)
    }

    /// The newest `limit` pieces of evidence that pass `keep`, newest first.
    pub fn evidence_newest(
        &self,
        limit: usize,
        keep: impl FnMut(&Evidence) -> bool,
    ) -> Result<Vec<Evidence>, KernelError> {
        self.scan(tables::EVIDENCE, true, limit, keep)
    }

    /// One piece of evidence.
    pub fn evidence(&self, id: EvidenceId) -> Result<Option<Evidence>, KernelError> {
        self.get(tables::EVIDENCE, id.0)
    }

    pub fn handoff(&self, id: HandoffId) -> Result<Option<Handoff>, KernelError> {
        self.get(tables::HANDOFFS, id.0)
    }

    /// The newest handoff for `todo`, or the newest one written for no todo.
    pub fn latest_handoff(&self, todo: Option<TodoId>) -> Result<Option<Handoff>, KernelError> {
        if let Some(id) = todo {
            let Some(todo) = self.todo(id)? else {
                return Ok(None);
            };
            return match todo.latest_handoff {
                Some(h) => self.handoff(h),
                None => Ok(None),
            };
        }
        Ok(self
            .scan::<Handoff>(tables::HANDOFFS, true, 1, |h| h.todo.is_none())?
            .pop())
    }

    pub fn agent(&self, name: &str) -> Result<Option<Agent>, KernelError> {
        let t = self
            .txn
            .open_table(tables::AGENTS)
            .map_err(|e| self.redb(e))?;
        super::reads::get(&t, name, "agents", |e| self.redb(e))
    }

    /// Every registered agent, by name.
    pub fn agents(&self) -> Result<Vec<Agent>, KernelError> {
        let t = self
            .txn
            .open_table(tables::AGENTS)
            .map_err(|e| self.redb(e))?;
        let mut out = Vec::new();
        for row in t.iter().map_err(|e| self.redb(e))? {
            let (_, bytes) = row.map_err(|e| self.redb(e))?;
            out.push(decode("agents", bytes.value())?);
        }
        Ok(out)
    }

    pub fn slice(&self, id: SliceId) -> Result<Option<SliceRecord>, KernelError> {
        self.get(tables::SLICES, id.0)
    }

    /// Slices recorded as running, oldest first.
    pub fn running_slices(&self) -> Result<Vec<SliceRecord>, KernelError> {
        let mut out = Vec::new();
        for key in self.running_by_index()? {
            if let Some(slice) = self.slice(SliceId(key))? {
                out.push(slice);
            }
        }
        Ok(out)
    }

    /// The supervisor recorded as running a slice; `None` once it ended, or when the store
    /// predates owners (then the table does not exist yet in a read-only open).
    pub fn slice_owner(
        &self,
        id: SliceId,
    ) -> Result<Option<crate::model::ProcessIdentity>, KernelError> {
        match self.txn.open_table(tables::SLICE_OWNERS) {
            Ok(t) => super::reads::get(&t, id.0, tables::SLICE_OWNERS.name(), |e| self.redb(e)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(self.redb(e)),
        }
    }

    /// Every slice, oldest first.
    pub fn slices(&self) -> Result<Vec<SliceRecord>, KernelError> {
        self.scan(tables::SLICES, false, usize::MAX, |_| true)
    }

    /// How many events there are (the newest has this `seq`).
    pub fn event_count(&self) -> Result<u64, KernelError> {
        let t = self
            .txn
            .open_table(tables::EVENTS)
            .map_err(|e| self.redb(e))?;
        t.len().map_err(|e| self.redb(e))
    }

    /// Events with `seq` in `from..`, at most `limit`, oldest first.
    pub fn events_from(&self, from: u64, limit: usize) -> Result<Vec<Event>, KernelError> {
        let t = self
            .txn
            .open_table(tables::EVENTS)
            .map_err(|e| self.redb(e))?;
        let mut out = Vec::new();
        for row in t.range(from..).map_err(|e| self.redb(e))?.take(limit) {
            let (_, bytes) = row.map_err(|e| self.redb(e))?;
            out.push(decode("events", bytes.value())?);
        }
        Ok(out)
    }

    /// The newest `limit` events, oldest first.
    pub fn events_tail(&self, limit: usize) -> Result<Vec<Event>, KernelError> {
        let mut events: Vec<Event> = self.scan(tables::EVENTS, true, limit, |_| true)?;
        events.reverse();
        Ok(events)
    }
}
