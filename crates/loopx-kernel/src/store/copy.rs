//! `loopx store copy --to postgres://…`: moves a project's store to another backend, every
//! table row for row (entities, indexes, counters, quota state and the whole event log), and
//! checks the copy before saying it is done.

use sha2::{Digest, Sha256};

use super::kv::{ALL_KEYS, KvRead, KvReadExt, Table};
use super::open::Store;
use super::pg::PgStore;
use crate::errors::{KernelError, StoreError};

/// What a copy moved: rows per table, and the digest both sides agreed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// `(table, rows)` for every table, in copy order.
    pub tables: Vec<(&'static str, u64)>,
    /// The number of events (the newest event's `seq`).
    pub events: u64,
    /// SHA-256 over every table's rows, in key order, as hex.
    pub digest: String,
}

/// Rows and digest of one table.
fn digest_table(kv: &dyn KvRead, table: Table, hash: &mut Sha256) -> Result<u64, KernelError> {
    let mut rows = 0;
    hash.update(table.name().as_bytes());
    kv.scan(table, ALL_KEYS, false, &mut |key, value| {
        rows += 1;
        let key = key.ordered_bytes();
        hash.update((key.len() as u64).to_be_bytes());
        hash.update(&key);
        hash.update((value.len() as u64).to_be_bytes());
        hash.update(value);
        Ok(true)
    })?;
    Ok(rows)
}

/// Rows per table, and the digest of them all.
type Summary = (Vec<(&'static str, u64)>, String);

fn digest(kv: &dyn KvRead) -> Result<Summary, KernelError> {
    let mut hash = Sha256::new();
    let mut tables = Vec::new();
    for &table in Table::ALL {
        tables.push((table.name(), digest_table(kv, table, &mut hash)?));
    }
    Ok((tables, hex::encode(hash.finalize())))
}

impl Store {
    /// Copies this store into the empty PostgreSQL database (or schema) at `url`, in one
    /// transaction, while holding this store's write lock so nothing changes meanwhile; then
    /// reads the copy back and compares every table's rows. A database that already holds a
    /// loopx project is refused and left as it is.
    pub fn copy_to(&self, url: &str) -> Result<CopyReport, KernelError> {
        if !loopx_vocab::is_postgres_url(url) {
            return Err(StoreError::Config {
                path: super::pg::redact_url(url).into(),
                why: "`--to` takes a PostgreSQL URL (postgres://user@host:port/database)"
                    .to_owned(),
            }
            .into());
        }
        let settings = self.project.store_settings();
        let target = PgStore::open(url, settings.wait, settings)?;
        let shown = target.shown();
        let _still = self.lock_writes()?;
        let (source_tables, source_digest) = self.read(|snap| digest(snap.kv()))?;
        let txn = target.begin_write()?;
        if txn.meta(super::tables::SCHEMA_KEY)?.is_some() {
            txn.abort()?;
            return Err(StoreError::Config {
                path: shown,
                why: "the database already holds a loopx project; copy into an empty database or schema".to_owned(),
            }
            .into());
        }
        self.read(|snap| {
            let source = snap.kv();
            for &table in Table::ALL {
                source.scan(table, ALL_KEYS, false, &mut |key, value| {
                    super::kv::KvWrite::put(&txn, table, &key, value)?;
                    Ok(true)
                })?;
            }
            Ok(())
        })?;
        txn.commit()?;
        let check = target.begin_read()?;
        let (tables, copied_digest) = digest(&check)?;
        if tables != source_tables || copied_digest != source_digest {
            return Err(StoreError::Damaged {
                path: shown,
                why: format!(
                    "the copy does not match the source (rows {tables:?} against {source_tables:?})"
                ),
            }
            .into());
        }
        let events = tables
            .iter()
            .find(|(name, _)| *name == Table::Events.name())
            .map_or(0, |(_, rows)| *rows);
        Ok(CopyReport {
            tables,
            events,
            digest: copied_digest,
        })
    }
}
