//! Typed access inside one write transaction, on either backend.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::codec::{decode, encode};
use super::kv::{ALL_KEYS, Key, KvReadExt, KvWrite, meta_bytes};
use super::tables::{self, META, Numbered};
use crate::errors::{Invalid, KernelError};
use crate::model::{Agent, EventKind};
use crate::time::Timestamp;

/// How far behind the last commit a process's clock may be and still be taken as queueing, not
/// as the clock stepping back.
pub(crate) const SKEW: std::time::Duration = std::time::Duration::from_secs(5);

/// One write transaction, with the time and actor every record of it carries.
pub(crate) struct Writer<'t> {
    pub(super) kv: &'t dyn KvWrite,
    pub(crate) now: Timestamp,
    pub(crate) actor: &'t str,
    /// The database's clock when this transaction took the writer lock (PostgreSQL).
    pub(crate) db_now: Option<Timestamp>,
    /// Open todos a re-planning slice dropped in this transaction: an agent's "the goal is
    /// met" later in the same batch is judged against the todos as they were before
    /// (`entities.rs`).
    pub(crate) replan_dropped: std::cell::Cell<usize>,
    /// The goal of the slice this batch reports from (`Op::InSlice`): what an agent's report
    /// item that names no goal is about, with several goals active.
    pub(crate) slice_goal: std::cell::Cell<Option<crate::ids::GoalId>>,
    /// The account book, when the project's ledger is shared (`account_book.rs`).
    pub(crate) book: Option<&'t super::account_book::BookCell<'t>>,
}

impl<'t> Writer<'t> {
    /// A writer whose `now` is never earlier than the last committed change's, within
    /// [`SKEW`]: processes take the time before they queue for the write lock, so a later
    /// commit could otherwise carry a slightly earlier time (and pacing would judge it against
    /// a future arrival time). A larger gap is the wall clock itself stepping back (or a past
    /// step forward being corrected): then the clock is taken as it is, so that one excursion
    /// into the future does not stamp every later change in the future too.
    pub(crate) fn new(
        kv: &'t dyn KvWrite,
        now: Timestamp,
        actor: &'t str,
    ) -> Result<Self, KernelError> {
        let last = Timestamp(kv.meta(tables::LAST_AT_KEY)?.unwrap_or(0));
        let now = if last > now && last.since(now) <= SKEW {
            last
        } else {
            now
        };
        Ok(Writer {
            kv,
            now,
            actor,
            db_now: None,
            replan_dropped: std::cell::Cell::new(0),
            slice_goal: std::cell::Cell::new(None),
            book: None,
        })
    }

    /// The time by the store's own clock: the database's on PostgreSQL (every host agrees on
    /// it), else this transaction's `now`.
    pub(crate) fn store_now(&self) -> Timestamp {
        self.db_now.unwrap_or(self.now)
    }

    pub(crate) fn get<T: DeserializeOwned>(
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

    /// Like [`Self::get`], but a missing record is an error naming `what` and `id`.
    pub(crate) fn require<T: DeserializeOwned>(
        &self,
        table: Numbered,
        key: u64,
        what: &'static str,
        id: impl ToString,
    ) -> Result<T, KernelError> {
        self.get(table, key)?.ok_or_else(|| {
            Invalid::NotFound {
                what,
                id: id.to_string(),
            }
            .into()
        })
    }

    pub(crate) fn put<T: Serialize>(
        &self,
        table: Numbered,
        key: u64,
        value: &T,
    ) -> Result<(), KernelError> {
        self.kv.put(table, &Key::Num(key), &encode(value))
    }

    pub(crate) fn remove(&self, table: Numbered, key: u64) -> Result<(), KernelError> {
        self.kv.remove(table, &Key::Num(key)).map(drop)
    }

    /// Every record of a numbered table, in creation order.
    pub(crate) fn all<T: DeserializeOwned>(&self, table: Numbered) -> Result<Vec<T>, KernelError> {
        let mut out = Vec::new();
        self.kv.scan(table, ALL_KEYS, false, &mut |_, bytes| {
            out.push(decode(table.name(), bytes)?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// A `meta` number.
    pub(crate) fn meta(&self, key: &str) -> Result<Option<u64>, KernelError> {
        self.kv.meta(key)
    }

    pub(crate) fn set_meta(&self, key: &str, value: u64) -> Result<(), KernelError> {
        self.kv.put(META, &Key::text(key), &meta_bytes(value))
    }

    /// Writes a todo and keeps the todo indexes and counts in step with it.
    pub(crate) fn put_todo(&self, todo: &crate::model::Todo) -> Result<(), KernelError> {
        let previous: Option<crate::model::Todo> = self.get(tables::TODOS, todo.id.0)?;
        self.put(tables::TODOS, todo.id.0, todo)?;
        super::todo_index::reindex(self, previous.as_ref(), todo)?;
        let key = Key::Num(todo.id.0);
        if todo.state.is_final() {
            self.kv.remove(tables::ACTIVE_TODOS, &key)?;
        } else {
            self.kv.put(tables::ACTIVE_TODOS, &key, &[])?;
        }
        let was_dropped = previous.is_some_and(|p| p.state == crate::model::TodoState::Dropped);
        if todo.state == crate::model::TodoState::Dropped && !was_dropped {
            let dropped = self.meta(tables::DROPPED_KEY)?.unwrap_or(0);
            self.set_meta(tables::DROPPED_KEY, dropped + 1)?;
        }
        Ok(())
    }

    pub(crate) fn agent(&self, name: &str) -> Result<Option<Agent>, KernelError> {
        self.kv
            .get(tables::AGENTS, &Key::text(name))?
            .map(|bytes| decode("agents", &bytes))
            .transpose()
            .map_err(KernelError::from)
    }

    pub(crate) fn put_agent(&self, agent: &Agent) -> Result<(), KernelError> {
        self.kv.put(
            tables::AGENTS,
            &Key::text(agent.name.as_str()),
            &encode(agent),
        )
    }

    pub(crate) fn remove_agent(&self, name: &str) -> Result<bool, KernelError> {
        self.kv.remove(tables::AGENTS, &Key::text(name))
    }

    pub(crate) fn quota_get<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, KernelError> {
        self.kv
            .get(tables::QUOTA, &Key::text(key))?
            .map(|bytes| decode("quota", &bytes))
            .transpose()
            .map_err(KernelError::from)
    }

    pub(crate) fn quota_put<T: Serialize>(&self, key: &str, value: &T) -> Result<(), KernelError> {
        self.kv.put(tables::QUOTA, &Key::text(key), &encode(value))
    }

    pub(crate) fn quota_remove(&self, key: &str) -> Result<bool, KernelError> {
        self.kv.remove(tables::QUOTA, &Key::text(key))
    }

    /// The account book, opened (and created) if the project's ledger is shared.
    pub(crate) fn account_book(
        &self,
    ) -> Result<Option<&'t super::account_book::AccountBook>, KernelError> {
        match self.book {
            Some(cell) => cell.get(true),
            None => Ok(None),
        }
    }

    /// Every hold, by key.
    pub(crate) fn quota_holds(&self) -> Result<Vec<crate::model::QuotaHold>, KernelError> {
        super::reads::holds(self.kv)
    }

    /// Spends at or after `since`, oldest first.
    pub(crate) fn spends_since(
        &self,
        since: crate::time::Timestamp,
    ) -> Result<Vec<crate::model::Spend>, KernelError> {
        super::reads::spends_since(self.kv, since)
    }

    /// The ids of the slices recorded as running.
    pub(crate) fn running_ids(&self) -> Result<Vec<u64>, KernelError> {
        super::reads::index_keys(self.kv, tables::RUNNING)
    }

    pub(crate) fn set_running(&self, slice: u64, running: bool) -> Result<(), KernelError> {
        let key = Key::Num(slice);
        if running {
            self.kv.put(tables::RUNNING, &key, &[])
        } else {
            self.kv.remove(tables::RUNNING, &key).map(drop)
        }
    }

    /// The next number a counter will give (`next_slice`, …), without taking it.
    pub(crate) fn counter(&self, counter: &'static str) -> Result<u64, KernelError> {
        Ok(self.meta(counter)?.unwrap_or(1))
    }

    /// The id `next_id` would give next, without taking it.
    pub(crate) fn peek_id(&self, counter: &'static str) -> Result<u64, KernelError> {
        self.counter(counter)
    }

    /// Takes the next number of a counter (`next_todo`, …).
    pub(crate) fn next_id(&self, counter: &'static str) -> Result<u64, KernelError> {
        let next = self.counter(counter)?;
        self.set_meta(counter, next + 1)?;
        Ok(next)
    }

    /// Appends the event that records this transaction's change.
    pub(crate) fn event(&self, kind: EventKind) -> Result<u64, KernelError> {
        let seq = self.next_id(tables::counter::EVENT)?;
        let event = crate::model::Event {
            seq,
            at: self.now,
            actor: self.actor.to_owned(),
            kind,
        };
        self.put(tables::EVENTS, seq, &event)?;
        self.set_meta(tables::LAST_AT_KEY, self.now.0)?;
        Ok(seq)
    }
}
