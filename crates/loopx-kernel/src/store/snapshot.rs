//! Reading a consistent snapshot of the store.

use std::ops::Bound;
use std::path::Path;

use serde::de::DeserializeOwned;

use super::codec::decode;
use super::kv::{ALL_KEYS, Key, KvRead, KvReadExt};
use super::tables::{self, Numbered};
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
    pub monitors: Vec<(u64, u64)>,
    pub claimed: Vec<u64>,
    pub open_count: u64,
    pub claimed_count: u64,
}

/// A numbered table's name, its highest key, and the counter that must be above it.
pub(crate) type CounterCheck = (&'static str, Option<u64>, u64);

/// A read transaction with typed accessors.
pub struct Snapshot<'a> {
    pub(super) kv: Box<dyn KvRead + 'a>,
    path: &'a Path,
    /// The account book, when the project's ledger is shared (`account_book.rs`).
    book: Option<&'a super::account_book::BookCell<'a>>,
}

impl std::fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl<'a> Snapshot<'a> {
    pub(crate) fn new(kv: Box<dyn KvRead + 'a>, path: &'a Path) -> Self {
        Snapshot {
            kv,
            path,
            book: None,
        }
    }

    /// The same snapshot, reading accounts' quota state from `book` when the ledger is shared.
    pub(crate) fn with_book(mut self, book: &'a super::account_book::BookCell<'a>) -> Self {
        self.book = Some(book);
        self
    }

    /// The account book, if the project's ledger is shared and the book exists.
    fn account_book(&self) -> Result<Option<&'a super::account_book::AccountBook>, KernelError> {
        match self.book {
            Some(cell) => cell.get(false),
            None => Ok(None),
        }
    }

    /// An account's quota state under `key` (see `Ledger::account_get`): in the account book
    /// when the ledger is shared (else, or while the book has none, in the project's).
    pub fn account_value<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KernelError> {
        if let Some(book) = self.account_book()?
            && let Some(found) = book.read(|kv| super::account_book::get(kv, key))?
        {
            return Ok(Some(found));
        }
        self.quota_value(key)
    }

    /// The storage under this snapshot.
    pub(crate) fn kv(&self) -> &dyn KvRead {
        &*self.kv
    }

    fn get<T: DeserializeOwned>(
        &self,
        table: Numbered,
        key: u64,
    ) -> Result<Option<T>, KernelError> {
        self.kv
            .get(table, &Key::Num(key))?
            .map(|bytes| decode(table.name(), &bytes))
            .transpose()
            .map_err(KernelError::from)
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
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.kv
            .scan(table, ALL_KEYS, newest_first, &mut |_, bytes| {
                let value: T = decode(table.name(), bytes)?;
                if keep(&value) {
                    out.push(value);
                }
                Ok(out.len() < limit)
            })?;
        Ok(out)
    }

    /// A value of the `meta` table (`schema_version`, `next_todo`, …).
    pub fn meta(&self, key: &str) -> Result<Option<u64>, KernelError> {
        self.kv.meta(key)
    }

    pub fn goal(&self, id: GoalId) -> Result<Option<Goal>, KernelError> {
        self.get(tables::GOALS, id.0)
    }

    pub fn goals(&self) -> Result<Vec<Goal>, KernelError> {
        self.scan(tables::GOALS, false, usize::MAX, |_| true)
    }

    /// The active goals, the one agents serve first first: the highest `priority`, then the
    /// oldest (the decision's order among goals of equal priority also weighs their share).
    pub fn active_goals(&self) -> Result<Vec<Goal>, KernelError> {
        let mut goals = self.scan::<Goal>(tables::GOALS, false, usize::MAX, |g| {
            g.status == GoalStatus::Active
        })?;
        goals.sort_by_key(|g| (std::cmp::Reverse(g.priority), g.id));
        Ok(goals)
    }

    /// The goal a command that names none acts on: the one active goal, else the newest
    /// paused one. With several active the person must say which
    /// ([`crate::errors::Invalid::WhichGoal`]), as the kernel's own operations ask.
    pub fn goal_meant(&self) -> Result<Option<Goal>, KernelError> {
        let active = self.active_goals()?;
        if active.len() > 1 {
            let goals: Vec<String> = active.iter().map(|g| g.id.to_string()).collect();
            return Err(crate::errors::Invalid::WhichGoal {
                goals: goals.join(", "),
            }
            .into());
        }
        self.current_goal()
    }

    /// The goal a view shows first: the active one served first, else the newest paused one.
    /// A command that acts on a goal it was not given asks which when several are active
    /// (`loopx_app`'s `App::goal`); a view shows them all.
    pub fn current_goal(&self) -> Result<Option<Goal>, KernelError> {
        if let Some(first) = self.active_goals()?.into_iter().next() {
            return Ok(Some(first));
        }
        Ok(self
            .scan::<Goal>(tables::GOALS, true, 1, |g| g.status == GoalStatus::Paused)?
            .pop())
    }

    /// The goal a view shows and the decision reads: the current one, else the newest, so that
    /// a finished goal shows as done (and its agents stop with "goal g1 is done", not "there is
    /// no active goal").
    pub fn goal_shown(&self) -> Result<Option<Goal>, KernelError> {
        match self.current_goal()? {
            Some(goal) => Ok(Some(goal)),
            None => Ok(self.scan(tables::GOALS, true, 1, |_| true)?.pop()),
        }
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

    /// The id the next `goal start` will take: what a caller names things after (a worktree
    /// goal's branches) before starting it, and gives back in [`Op::GoalStart`]'s `id` so that
    /// the kernel refuses the start if another took that id in between.
    ///
    /// [`Op::GoalStart`]: crate::Op::GoalStart
    pub fn next_goal_id(&self) -> Result<GoalId, KernelError> {
        Ok(GoalId(self.meta(tables::counter::GOAL)?.unwrap_or(1)))
    }

    /// Open and claimed todos, oldest first, through the active-todo index (one lookup each),
    /// unless most todos are active, when one sequential scan is cheaper than many lookups.
    pub fn active_todos(&self) -> Result<Vec<Todo>, KernelError> {
        // The counts kept with the indexes: a row count is a scan on a database server.
        let active = match (
            self.meta(tables::OPEN_KEY)?,
            self.meta(tables::CLAIMED_KEY)?,
        ) {
            (Some(open), Some(claimed)) => open + claimed,
            _ => self.kv.len(tables::ACTIVE_TODOS)?,
        };
        let total = self
            .meta(tables::counter::TODO)?
            .unwrap_or(1)
            .saturating_sub(1);
        if active * 4 > total {
            return self.todos_where(|t| !t.state.is_final());
        }
        self.todos_by_id(super::reads::index_keys(&*self.kv, tables::ACTIVE_TODOS)?)
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
        let mut out = Vec::new();
        let mut more = false;
        let mut take = |todo: Todo| -> bool {
            if !keep(&todo) {
                return true;
            }
            if out.len() == limit {
                more = true;
                return false;
            }
            out.push(todo);
            true
        };
        let from = (
            Bound::Included(Key::Num(after.saturating_add(1))),
            Bound::Unbounded,
        );
        if active_only {
            // Through the index, a page of ids at a time.
            let mut next = from;
            loop {
                let ids = self.kv.keys(tables::ACTIVE_TODOS, next, 256)?;
                let Some(last) = ids.last().cloned() else {
                    break;
                };
                for bytes in self.kv.get_many(tables::TODOS, &ids)?.into_iter().flatten() {
                    if !take(decode("todos", &bytes)?) {
                        return Ok((out, true));
                    }
                }
                if ids.len() < 256 {
                    break;
                }
                next = (Bound::Excluded(last), Bound::Unbounded);
            }
        } else {
            self.kv.scan(tables::TODOS, from, false, &mut |_, bytes| {
                Ok(take(decode("todos", bytes)?))
            })?;
        }
        Ok((out, more))
    }

    /// Claimed todos (live or expired leases), oldest first.
    pub fn claimed_todos(&self) -> Result<Vec<Todo>, KernelError> {
        self.todos_by_id(super::reads::index_keys(&*self.kv, tables::CLAIMED_TODOS)?)
    }

    fn todos_by_id(&self, ids: impl IntoIterator<Item = u64>) -> Result<Vec<Todo>, KernelError> {
        let keys: Vec<Key> = ids.into_iter().map(Key::Num).collect();
        self.kv
            .get_many(tables::TODOS, &keys)?
            .into_iter()
            .flatten()
            .map(|bytes| decode("todos", &bytes).map_err(KernelError::from))
            .collect()
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
        let role = role.unwrap_or("").to_owned();
        let needs = u8::from(needs);
        let range = (
            Bound::Included(Key::Ready(goal.0, role.clone(), needs, i64::MIN, 0)),
            Bound::Included(Key::Ready(goal.0, role, needs, i64::MAX, u64::MAX)),
        );
        let ids = self.kv.keys(tables::READY_TODOS, range, limit)?;
        self.todos_by_id(ids.iter().map(Key::num))
    }

    /// The roles the ready todos of `goal` are for (`None`: for any role), each once: one
    /// lookup per role, not a scan.
    pub fn ready_roles(&self, goal: GoalId) -> Result<Vec<Option<String>>, KernelError> {
        let mut roles = Vec::new();
        let mut from = String::new();
        loop {
            let range = (
                Bound::Included(Key::Ready(goal.0, from.clone(), 0, i64::MIN, 0)),
                Bound::Excluded(Key::Ready(goal.0 + 1, String::new(), 0, i64::MIN, 0)),
            );
            let Some(Key::Ready(_, role, ..)) = self.kv.keys(tables::READY_TODOS, range, 1)?.pop()
            else {
                break;
            };
            roles.push((!role.is_empty()).then(|| role.clone()));
            // The smallest string after every key of this role: the role and a NUL.
            from = format!("{role}\0");
        }
        Ok(roles)
    }

    /// The first `limit` open todos of `goal` that wait on an unfinished dependency, oldest
    /// first.
    pub fn waiting_todos(&self, goal: GoalId, limit: usize) -> Result<Vec<Todo>, KernelError> {
        let range = (
            Bound::Included(Key::Pair(goal.0, 0)),
            Bound::Included(Key::Pair(goal.0, u64::MAX)),
        );
        let ids = self.kv.keys(tables::WAITING_TODOS, range, limit)?;
        self.todos_by_id(ids.iter().map(Key::num))
    }

    /// The open monitors of `goal` whose dependencies are all finished, oldest first: what
    /// supervisors poll (and what the decision says the goal waits for).
    pub fn monitors(&self, goal: GoalId) -> Result<Vec<Todo>, KernelError> {
        let range = (
            Bound::Included(Key::Pair(goal.0, 0)),
            Bound::Included(Key::Pair(goal.0, u64::MAX)),
        );
        let ids = self.kv.keys(tables::MONITOR_TODOS, range, usize::MAX)?;
        self.todos_by_id(ids.iter().map(Key::num))
    }

    /// How many open todos of `goal` wait on an unfinished dependency.
    pub fn waiting_count(&self, goal: GoalId) -> Result<u64, KernelError> {
        Ok(self.meta(&tables::waiting_key(goal.0))?.unwrap_or(0))
    }

    /// The rows of every todo index, for the consistency check; `None` before they are built
    /// (a store written by an older loopx, opened for inspection only).
    pub(crate) fn todo_index_rows(&self) -> Result<Option<TodoIndexRows>, KernelError> {
        if self.meta(tables::TODO_INDEX_KEY)?.is_none() {
            return Ok(None);
        }
        let mut rows = TodoIndexRows::default();
        for key in self.kv.keys(tables::READY_TODOS, ALL_KEYS, usize::MAX)? {
            if let Key::Ready(g, r, n, p, id) = key {
                rows.ready.push((g, r, n, p, id));
            }
        }
        for (table, out) in [
            (tables::WAITING_TODOS, &mut rows.waiting),
            (tables::DEPENDENTS, &mut rows.dependents),
            (tables::MONITOR_TODOS, &mut rows.monitors),
        ] {
            for key in self.kv.keys(table, ALL_KEYS, usize::MAX)? {
                if let Key::Pair(a, b) = key {
                    out.push((a, b));
                }
            }
        }
        rows.claimed = super::reads::index_keys(&*self.kv, tables::CLAIMED_TODOS)?;
        // `todos_waiting0` is the first key after every `todos_waiting/…` (`0` follows `/`).
        let range = (
            Bound::Included(Key::text("todos_waiting/")),
            Bound::Excluded(Key::text("todos_waiting0")),
        );
        self.kv
            .scan(tables::META, range, false, &mut |key, bytes| {
                let Key::Text(key) = key else { return Ok(true) };
                let goal = key["todos_waiting/".len()..].parse().unwrap_or(0);
                rows.waiting_counts
                    .push((goal, super::kv::meta_value(bytes)?));
                Ok(true)
            })?;
        rows.open_count = self.meta(tables::OPEN_KEY)?.unwrap_or(0);
        rows.claimed_count = self.meta(tables::CLAIMED_KEY)?.unwrap_or(0);
        Ok(Some(rows))
    }

    /// A quota value (`pacing/<agent>`, `window/<account>/<ms>`), if set.
    pub fn quota_value<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KernelError> {
        self.kv
            .get(tables::QUOTA, &Key::text(key))?
            .map(|bytes| decode("quota", &bytes))
            .transpose()
            .map_err(KernelError::from)
    }

    /// The account `agent` last spent on.
    pub fn agent_account(&self, agent: &crate::AgentName) -> Result<Option<String>, KernelError> {
        self.quota_value(&super::apply::quota::account_key(agent))
    }

    /// Every hold, by key.
    pub fn quota_holds(&self) -> Result<Vec<crate::model::QuotaHold>, KernelError> {
        let mut holds = super::reads::holds(&*self.kv)?;
        if let Some(book) = self.account_book()? {
            holds.extend(book.read(|kv| super::reads::holds(kv))?);
        }
        Ok(holds)
    }

    /// Spends at or after `since`, oldest first.
    pub fn spends_since(
        &self,
        since: crate::time::Timestamp,
    ) -> Result<Vec<crate::model::Spend>, KernelError> {
        super::reads::spends_since(&*self.kv, since)
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
            let last = self.kv.last_key(table)?.map(|k| k.num());
            out.push((name, last, self.meta(counter)?.unwrap_or(0)));
        }
        Ok(out)
    }

    /// The ids in the running-slice index.
    pub(crate) fn running_by_index(&self) -> Result<Vec<u64>, KernelError> {
        super::reads::index_keys(&*self.kv, tables::RUNNING)
    }

    /// The ids in the active-todo index (for the consistency check).
    pub(crate) fn active_todos_by_index(&self) -> Result<Vec<u64>, KernelError> {
        super::reads::index_keys(&*self.kv, tables::ACTIVE_TODOS)
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

    /// The gates waiting for a person, oldest first.
    pub fn open_gates(&self) -> Result<Vec<Gate>, KernelError> {
        self.scan(tables::GATES, false, usize::MAX, |g: &Gate| {
            g.state == crate::model::GateState::Open
        })
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
        self.kv
            .get(tables::AGENTS, &Key::text(name))?
            .map(|bytes| decode("agents", &bytes))
            .transpose()
            .map_err(KernelError::from)
    }

    /// Every registered agent, by name.
    pub fn agents(&self) -> Result<Vec<Agent>, KernelError> {
        let mut out = Vec::new();
        self.kv
            .scan(tables::AGENTS, ALL_KEYS, false, &mut |_, bytes| {
                out.push(decode("agents", bytes)?);
                Ok(true)
            })?;
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
        self.get(tables::SLICE_OWNERS, id.0)
    }

    /// Every slice, oldest first.
    pub fn slices(&self) -> Result<Vec<SliceRecord>, KernelError> {
        self.scan(tables::SLICES, false, usize::MAX, |_| true)
    }

    /// How many events there are (the newest has this `seq`).
    pub fn event_count(&self) -> Result<u64, KernelError> {
        self.kv.len(tables::EVENTS)
    }

    /// Events with `seq` in `from..`, at most `limit`, oldest first.
    pub fn events_from(&self, from: u64, limit: usize) -> Result<Vec<Event>, KernelError> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let range = (Bound::Included(Key::Num(from)), Bound::Unbounded);
        self.kv
            .scan(tables::EVENTS, range, false, &mut |_, bytes| {
                out.push(decode("events", bytes)?);
                Ok(out.len() < limit)
            })?;
        Ok(out)
    }

    /// The newest `limit` events, oldest first.
    pub fn events_tail(&self, limit: usize) -> Result<Vec<Event>, KernelError> {
        let mut events: Vec<Event> = self.scan(tables::EVENTS, true, limit, |_| true)?;
        events.reverse();
        Ok(events)
    }
}
