//! Typed access inside one write transaction.

use redb::{ReadableTable, TableHandle, WriteTransaction};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::codec::{decode, encode};
use super::open::Store;
use super::tables::{self, META, Numbered};
use crate::errors::{Invalid, KernelError};
use crate::model::{Agent, EventKind};
use crate::time::Timestamp;

/// How far behind the last commit a process's clock may be and still be taken as queueing, not
/// as the clock stepping back.
pub(crate) const SKEW: std::time::Duration = std::time::Duration::from_secs(5);

/// One write transaction, with the time and actor every record of it carries.
pub(crate) struct Writer<'t> {
    pub(super) txn: &'t WriteTransaction,
    store: &'t Store,
    pub(crate) now: Timestamp,
    pub(crate) actor: &'t str,
}

impl<'t> Writer<'t> {
    /// A writer whose `now` is never earlier than the last committed change's, within
    /// [`SKEW`]: processes take the time before they queue for the write lock, so a later
    /// commit could otherwise carry a slightly earlier time (and pacing would judge it against
    /// a future arrival time). A larger gap is the wall clock itself stepping back (or a past
    /// step forward being corrected): then the clock is taken as it is, so that one excursion
    /// into the future does not stamp every later change in the future too.
    pub(crate) fn new(
        txn: &'t WriteTransaction,
        store: &'t Store,
        now: Timestamp,
        actor: &'t str,
    ) -> Result<Self, KernelError> {
        let meta = txn.open_table(META).map_err(|e| store.redb(e))?;
        let last = Timestamp(
            meta.get(tables::LAST_AT_KEY)
                .map_err(|e| store.redb(e))?
                .map_or(0, |v| v.value()),
        );
        let now = if last > now && last.since(now) <= SKEW {
            last
        } else {
            now
        };
        Ok(Writer {
            txn,
            store,
            now,
            actor,
        })
    }

    /// The store file, for errors.
    pub(super) fn path(&self) -> &std::path::Path {
        &self.store.path
    }

    pub(super) fn redb(&self, e: impl Into<redb::Error>) -> KernelError {
        self.store.redb(e)
    }

    pub(crate) fn get<T: DeserializeOwned>(
        &self,
        table: Numbered,
        key: u64,
    ) -> Result<Option<T>, KernelError> {
        let t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
        super::reads::get(&t, key, table.name(), |e| self.redb(e))
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
        let mut t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
        t.insert(key, encode(value).as_slice())
            .map_err(|e| self.redb(e))?;
        Ok(())
    }

    pub(crate) fn remove(&self, table: Numbered, key: u64) -> Result<(), KernelError> {
        let mut t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
        t.remove(key).map_err(|e| self.redb(e))?;
        Ok(())
    }

    /// Every record of a numbered table, in creation order.
    pub(crate) fn all<T: DeserializeOwned>(&self, table: Numbered) -> Result<Vec<T>, KernelError> {
        let t = self.txn.open_table(table).map_err(|e| self.redb(e))?;
        let mut out = Vec::new();
        for row in t.iter().map_err(|e| self.redb(e))? {
            let (_, bytes) = row.map_err(|e| self.redb(e))?;
            out.push(decode(table.name(), bytes.value())?);
        }
        Ok(out)
    }

    /// Writes a todo and keeps the todo indexes and counts in step with it.
    pub(crate) fn put_todo(&self, todo: &crate::model::Todo) -> Result<(), KernelError> {
        let previous: Option<crate::model::Todo> = self.get(tables::TODOS, todo.id.0)?;
        self.put(tables::TODOS, todo.id.0, todo)?;
        super::todo_index::reindex(self, previous.as_ref(), todo)?;
        let mut active = self
            .txn
            .open_table(tables::ACTIVE_TODOS)
            .map_err(|e| self.redb(e))?;
        if todo.state.is_final() {
            active.remove(todo.id.0).map_err(|e| self.redb(e))?;
        } else {
            active.insert(todo.id.0, ()).map_err(|e| self.redb(e))?;
        }
        let was_dropped = previous.is_some_and(|p| p.state == crate::model::TodoState::Dropped);
        if todo.state == crate::model::TodoState::Dropped && !was_dropped {
            let mut meta = self.txn.open_table(META).map_err(|e| self.redb(e))?;
            let dropped = meta
                .get(tables::DROPPED_KEY)
                .map_err(|e| self.redb(e))?
                .map_or(0, |v| v.value());
            meta.insert(tables::DROPPED_KEY, dropped + 1)
                .map_err(|e| self.redb(e))?;
        }
        Ok(())
    }

    pub(crate) fn agent(&self, name: &str) -> Result<Option<Agent>, KernelError> {
        let t = self
            .txn
            .open_table(tables::AGENTS)
            .map_err(|e| self.redb(e))?;
        super::reads::get(&t, name, "agents", |e| self.redb(e))
    }

    pub(crate) fn put_agent(&self, agent: &Agent) -> Result<(), KernelError> {
        let mut t = self
            .txn
            .open_table(tables::AGENTS)
            .map_err(|e| self.redb(e))?;
        t.insert(agent.name.as_str(), encode(agent).as_slice())
            .map_err(|e| self.redb(e))?;
        Ok(())
    }

    pub(crate) fn quota_get<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, KernelError> {
        let t = self
            .txn
            .open_table(tables::QUOTA)
            .map_err(|e| self.redb(e))?;
        super::reads::get(&t, key, "quota", |e| self.redb(e))
    }

    pub(crate) fn quota_put<T: Serialize>(&self, key: &str, value: &T) -> Result<(), KernelError> {
        let mut t = self
            .txn
            .open_table(tables::QUOTA)
            .map_err(|e| self.redb(e))?;
        t.insert(key, encode(value).as_slice())
            .map_err(|e| self.redb(e))?;
        Ok(())
    }

    pub(crate) fn quota_remove(&self, key: &str) -> Result<bool, KernelError> {
        let mut t = self
            .txn
            .open_table(tables::QUOTA)
            .map_err(|e| self.redb(e))?;
        Ok(t.remove(key).map_err(|e| self.redb(e))?.is_some())
    }

    /// Every hold, by key.
    pub(crate) fn quota_holds(&self) -> Result<Vec<crate::model::QuotaHold>, KernelError> {
        let t = self
            .txn
            .open_table(tables::QUOTA)
            .map_err(|e| self.redb(e))?;
        super::reads::holds(&t, |e| self.redb(e))
    }

    /// Spends at or after `since`, oldest first.
    pub(crate) fn spends_since(
        &self,
        since: crate::time::Timestamp,
    ) -> Result<Vec<crate::model::Spend>, KernelError> {
        let t = self
            .txn
            .open_table(tables::SPENDS)
            .map_err(|e| self.redb(e))?;
        super::reads::spends_since(&t, since, |e| self.redb(e))
    }

    /// The ids of the slices recorded as running.
    pub(crate) fn running_ids(&self) -> Result<Vec<u64>, KernelError> {
        let t = self
            .txn
            .open_table(tables::RUNNING)
            .map_err(|e| self.redb(e))?;
        super::reads::index_keys(&t, |e| self.redb(e))
    }

    pub(crate) fn set_running(&self, slice: u64, running: bool) -> Result<(), KernelError> {
        let mut t = self
            .txn
            .open_table(tables::RUNNING)
            .map_err(|e| self.redb(e))?;
        if running {
            t.insert(slice, ()).map_err(|e| self.redb(e))?;
        } else {
            t.remove(slice).map_err(|e| self.redb(e))?;
        }
        Ok(())
    }

    /// The next number a counter will give (`next_slice`, …), without taking it.
    pub(crate) fn counter(&self, counter: &'static str) -> Result<u64, KernelError> {
        let meta = self.txn.open_table(META).map_err(|e| self.redb(e))?;
        Ok(meta
            .get(counter)
            .map_err(|e| self.redb(e))?
            .map_or(1, |v| v.value()))
    }

    /// The id `next_id` would give next, without taking it.
    pub(crate) fn peek_id(&self, counter: &'static str) -> Result<u64, KernelError> {
        let meta = self.txn.open_table(META).map_err(|e| self.redb(e))?;
        Ok(meta
            .get(counter)
            .map_err(|e| self.redb(e))?
            .map_or(1, |v| v.value()))
    }

    /// Takes the next number of a counter (`next_todo`, …).
    pub(crate) fn next_id(&self, counter: &'static str) -> Result<u64, KernelError> {
        let mut meta = self.txn.open_table(META).map_err(|e| self.redb(e))?;
        let next = meta
            .get(counter)
            .map_err(|e| self.redb(e))?
            .map_or(1, |v| v.value());
        meta.insert(counter, next + 1).map_err(|e| self.redb(e))?;
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
        let mut meta = self.txn.open_table(META).map_err(|e| self.redb(e))?;
        meta.insert(tables::LAST_AT_KEY, self.now.0)
            .map_err(|e| self.redb(e))?;
        Ok(seq)
    }
}
