//! Reads shared by a snapshot and a writer: written once against the storage interface.

use std::ops::Bound;

use super::codec::decode;
use super::kv::{ALL_KEYS, Key, KvRead, Table};
use super::tables;
use crate::errors::KernelError;
use crate::model::{QuotaHold, Spend};
use crate::time::Timestamp;

/// Every key of an index table (a set of numbers, such as the running slices).
pub(crate) fn index_keys(
    kv: &(impl KvRead + ?Sized),
    table: Table,
) -> Result<Vec<u64>, KernelError> {
    let mut out = Vec::new();
    kv.scan(table, ALL_KEYS, false, &mut |key, _| {
        out.push(key.num());
        Ok(true)
    })?;
    Ok(out)
}

/// Every hold in the quota table (keys `hold/…`), by key.
pub(crate) fn holds(kv: &(impl KvRead + ?Sized)) -> Result<Vec<QuotaHold>, KernelError> {
    let mut out = Vec::new();
    // `hold0` is the first key after every `hold/…` key (`0` follows `/`).
    let range = (
        Bound::Included(Key::text("hold/")),
        Bound::Excluded(Key::text("hold0")),
    );
    kv.scan(tables::QUOTA, range, false, &mut |_, bytes| {
        out.push(decode("quota", bytes)?);
        Ok(true)
    })?;
    Ok(out)
}

/// Spends at or after `since`, oldest first. The ledger is in time order, so this reads
/// backwards from the newest and stops at the first older spend.
pub(crate) fn spends_since(
    kv: &(impl KvRead + ?Sized),
    since: Timestamp,
) -> Result<Vec<Spend>, KernelError> {
    let mut spends = Vec::new();
    kv.scan(tables::SPENDS, ALL_KEYS, true, &mut |_, bytes| {
        let spend: Spend = decode("spends", bytes)?;
        if spend.at < since {
            return Ok(false);
        }
        spends.push(spend);
        Ok(true)
    })?;
    spends.reverse();
    Ok(spends)
}
