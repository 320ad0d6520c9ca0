//! Applying a slice's writeback (`docs/design/run-loop.md`, "A slice's life").
//!
//! The batch is applied as a whole. When the kernel refuses one of the agent's items, that item
//! is dropped (and noted as evidence) and the rest tried again; when the claim moved on, only
//! what does not depend on it is written (as loopx's own record); when recovery already closed
//! the slice, only loopx's evidence of it and its usage; when the kernel refuses loopx's own
//! part (a bug), the essentials. Retrying while the store is busy or full is the caller's.

use loopx_kernel::model::ClaimStanding;
use loopx_kernel::store::{Applied, BatchError};
use loopx_kernel::{Conflict, KernelError, Op, Store, Timestamp};
use loopx_vocab::actor::LOOPX;

use super::summary::{SliceSummary, summary};
use super::{Finished, Writeback, lost_claim, writeback};

/// The batch, redacted with the slice's redactor (which knows its profile's secret names).
fn apply_redacted(
    store: &Store,
    f: &Finished<'_>,
    ops: Vec<Op>,
    actor: &str,
    now: Timestamp,
) -> Result<Vec<Applied>, BatchError> {
    match f.redactor {
        Some(redactor) => store.apply_batch_redacted(ops, actor, now, redactor),
        None => store.apply_batch(ops, actor, now),
    }
}

/// One try at writing the slice back as `actor`: the whole batch, less what the kernel refuses
/// of the agent's items; the slice's summary once it is written. The caller tries again while
/// the store is busy or full.
pub fn apply(
    store: &Store,
    actor: &str,
    f: &Finished<'_>,
    now: Timestamp,
) -> Result<SliceSummary, KernelError> {
    let (wb, applied, result) = attempt(store, actor, f, now)?;
    Ok(summary(f, &wb, &applied, result))
}

/// The whole batch, less what the kernel refuses of the agent's items.
fn attempt(
    store: &Store,
    actor: &str,
    f: &Finished<'_>,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    let standing = match (f.record.todo, f.record.epoch) {
        (Some(id), Some(epoch)) => store
            .read(|s| s.todo(id))?
            .map(|t| t.claim_of(&f.record.agent, epoch)),
        _ => None,
    };
    let mut wb = writeback(f, standing == Some(ClaimStanding::Finished));
    if matches!(
        standing,
        Some(ClaimStanding::Stale | ClaimStanding::NotHolder)
    ) {
        return lost(store, f, wb, now);
    }
    loop {
        // Stamped when it commits, not when the agent ended: the ledger stays in time order
        // (the slice's own times travel in its records).
        match apply_redacted(store, f, wb.ops(), actor, now) {
            Ok(applied) => return Ok((wb, applied, "applied")),
            Err(BatchError {
                op: Some(_),
                error: KernelError::Conflict(Conflict::SliceEnded { .. }),
            }) => return superseded(store, f, wb, now),
            Err(BatchError {
                op: Some(index),
                error,
            }) if wb.parts[index].item.is_some() => {
                tracing::warn!(slice = %f.record.id, error = %error, "the kernel refused an item of the agent's report");
                wb.drop_item(f, index, &error.to_string());
            }
            Err(BatchError {
                op: Some(_),
                error:
                    KernelError::Conflict(
                        Conflict::StaleEpoch { .. }
                        | Conflict::NotHolder { .. }
                        | Conflict::TodoState { .. },
                    ),
            }) => return lost(store, f, wb, now),
            // loopx's own part refused: a bug in loopx. Keep what matters most.
            Err(BatchError {
                op: Some(index),
                error,
            }) => {
                tracing::error!(slice = %f.record.id, error = %error, op = ?wb.parts[index].op, "the kernel refused loopx's own writeback");
                return essentials(store, actor, f, wb, now);
            }
            Err(BatchError { op: None, error }) => return Err(error),
        }
    }
}

/// The claim moved on: record what does not depend on it, as loopx's own record.
fn lost(
    store: &Store,
    f: &Finished<'_>,
    wb: Writeback,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    tracing::warn!(slice = %f.record.id, "the slice's claim moved on; recording only its end and usage");
    match apply_redacted(store, f, lost_claim(f), LOOPX, now).map_err(|e| e.error) {
        Ok(_) => Ok((wb, Vec::new(), "stale_epoch")),
        Err(KernelError::Conflict(Conflict::SliceEnded { .. })) => superseded(store, f, wb, now),
        Err(e) => Err(e),
    }
}

/// The slice's end is already recorded: recovery on a live host closed it once its claim
/// lapsed by the store's clock (this supervisor could not reach its store, or write to it,
/// for longer than the lease) and released its todo. That record stands; what the agent
/// reported is not written, since its todo may already be another agent's. What is still
/// true is: loopx's own evidence of the slice (its log's digest, its exit) and the usage it
/// spent, which counts against its windows whoever closed it.
fn superseded(
    store: &Store,
    f: &Finished<'_>,
    wb: Writeback,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    tracing::warn!(slice = %f.record.id, "the slice was closed by recovery while its writeback waited; recording only its evidence and usage");
    let ops = lost_claim(f)
        .into_iter()
        .filter(|op| !matches!(op, Op::SliceEnd { .. }))
        .collect();
    apply_redacted(store, f, ops, LOOPX, now).map_err(|e| e.error)?;
    Ok((wb, Vec::new(), "superseded"))
}

/// The batch was refused for no reason the agent caused: the slice's end and evidence, its
/// usage and any vendor hold, and the release or finish of its todo — else what `lost` writes.
fn essentials(
    store: &Store,
    actor: &str,
    f: &Finished<'_>,
    wb: Writeback,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    let keep: Vec<Op> = wb
        .ops()
        .into_iter()
        .enumerate()
        .filter(|(i, op)| {
            *i < 2
                || matches!(
                    op,
                    Op::QuotaCharge(_) | Op::QuotaHold(_) | Op::TodoRelease(_) | Op::TodoFinish(_)
                )
        })
        .map(|(_, op)| op)
        .collect();
    match apply_redacted(store, f, keep, actor, now).map_err(|e| e.error) {
        Ok(_) => Ok((wb, Vec::new(), "refused")),
        Err(KernelError::Store(e)) => Err(e.into()),
        Err(_) => {
            let (wb, applied, _) = lost(store, f, wb, now)?;
            Ok((wb, applied, "refused"))
        }
    }
}
