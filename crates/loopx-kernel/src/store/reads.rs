//! Reads shared by a snapshot (read transaction) and a writer (write transaction): written once
//! against redb's `ReadableTable`, which both kinds of table implement.

use redb::ReadableTable;

use super::codec::decode;
use crate::errors::KernelError;
use crate::model::{QuotaHold, Spend};
use crate::time::Timestamp;

/// One record by key, decoded; `None` when absent. `table_name` names it in decode errors.
pub(crate) fn get<'k, K, T>(
    table: &impl ReadableTable<K, &'static [u8]>,
    key: impl std::borrow::Borrow<K::SelfType<'k>>,
    table_name: &str,
    redb: impl Fn(redb::StorageError) -> KernelError,
) -> Result<Option<T>, KernelError>
where
    K: redb::Key + 'static,
    T: serde::de::DeserializeOwned,
{
    let Some(bytes) = table.get(key).map_err(&redb)? else {
        return Ok(None);
    };
    Ok(Some(decode(table_name, bytes.value())?))
}

/// Every key of an index table (a set of numbers, such as the running slices).
pub(crate) fn index_keys(
    table: &impl ReadableTable<u64, ()>,
    redb: impl Fn(redb::StorageError) -> KernelError,
) -> Result<Vec<u64>, KernelError> {
    let mut out = Vec::new();
    for row in table.iter().map_err(&redb)? {
        out.push(row.map_err(&redb)?.0.value());
    }
    Ok(out)
}

/// Every hold in the quota table (keys `hold/…`), by key.
pub(crate) fn holds(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    redb: impl Fn(redb::StorageError) -> KernelError,
) -> Result<Vec<QuotaHold>, KernelError> {
    let mut out = Vec::new();
    // `hold0` is the first key after every `hold/…` key (`0` follows `/`).
    for row in table.range("hold/".."hold0").map_err(&redb)? {
        let (_, bytes) = row.map_err(&redb)?;
        out.push(decode("quota", bytes.value())?);
    }
    Ok(out)
}

/// Spends at or after `since`, oldest first. The ledger is in time order, so this reads
/// backwards from the newest and stops at the first older spend.
pub(crate) fn spends_since(
    table: &impl ReadableTable<u64, &'static [u8]>,
    since: Timestamp,
    redb: impl Fn(redb::StorageError) -> KernelError,
) -> Result<Vec<Spend>, KernelError> {
    let mut spends = Vec::new();
    for row in table.iter().map_err(&redb)?.rev() {
        let (_, bytes) = row.map_err(&redb)?;
        let spend: Spend = decode("spends", bytes.value())?;
        if spend.at < since {
            break;
        }
        spends.push(spend);
    }
    spends.reverse();
    Ok(spends)
}
