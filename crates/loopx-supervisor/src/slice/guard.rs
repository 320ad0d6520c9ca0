//! The obligation "this slice must end", owned by one value from the transaction that began
//! the slice to the one that ends it.
//!
//! A [`SliceGuard`] is made when the slice's begin commits. The normal path disarms it after
//! the writeback landed. Every other path — an error returned by a stage, a panic unwinding
//! through it, a stop before the spawn — drops it armed, and the drop records the slice
//! `interrupted` with the cause as the reason and releases its claim (one kernel operation,
//! [`Op::SliceInterrupt`]), retrying a busy or full store with backoff for a while.
//!
//! If the store stays unwritable past that, the guard gives up and the slice stays recorded as
//! running. It is then an orphan of this very process: [`LiveSlices`] knows which running
//! slices a live worker of this process still owns, and recovery (`recover.rs`, every minute in
//! `loopx run`, and at the start of the next one) closes every other.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::store_cache::StoreCache;
use loopx_kernel::store::Interrupt;
use loopx_kernel::store::QuotaRequest;
use loopx_kernel::{Clock, Conflict, KernelError, Op, Project, SharedClock, SliceId, StoreError};

/// Who records what loopx itself decided about a slice.
pub(crate) const ACTOR: &str = "loopx";

/// The slices that a live worker of this process owns, and the begins in flight (whose slice
/// id is not known until their transaction commits).
#[derive(Debug, Default)]
struct Owned {
    slices: BTreeSet<(PathBuf, u64)>,
    beginning: usize,
}

static OWNED: Mutex<Owned> = Mutex::new(Owned {
    slices: BTreeSet::new(),
    beginning: 0,
});

fn owned() -> MutexGuard<'static, Owned> {
    OWNED.lock().unwrap_or_else(|p| p.into_inner())
}

/// What recovery asks about this process's own running slices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveSlices;

impl LiveSlices {
    /// Whether `slice` of `project`, recorded as running by this process, has no live owner:
    /// no guard holds it and no begin is in flight that might be about to.
    pub(crate) fn is_abandoned(project: &Project, slice: SliceId) -> bool {
        let owned = owned();
        owned.beginning == 0
            && !owned
                .slices
                .contains(&(project.root().to_path_buf(), slice.0))
    }
}

/// Marks a begin in flight until it commits (then [`SliceGuard::new`] takes over) or fails.
#[derive(Debug)]
pub(crate) struct Beginning(());

impl Beginning {
    pub(crate) fn start() -> Beginning {
        owned().beginning += 1;
        Beginning(())
    }
}

impl Drop for Beginning {
    fn drop(&mut self) {
        let mut owned = owned();
        owned.beginning = owned.beginning.saturating_sub(1);
    }
}

/// Owns one begun slice until its end is recorded.
#[derive(Debug)]
pub(crate) struct SliceGuard {
    project: Project,
    /// The supervisor's store handles: the end goes through the same handle as the slice's
    /// other writes (a handle that met an I/O failure is replaced by the cache).
    stores: StoreCache,
    clock: SharedClock,
    slice: SliceId,
    armed: bool,
    /// Why the slice is ending abnormally, once a stage failed.
    cause: Option<String>,
    /// How the agent's process ended, once it did.
    exit: Option<String>,
    output_bytes: u64,
    /// What the agent spent, once known: charged even when the slice ends interrupted.
    usage: Option<QuotaRequest>,
    /// How long to keep trying to record the end.
    patience: Duration,
}

impl SliceGuard {
    /// Takes the slice over from the begin that recorded it (in flight until now).
    pub(crate) fn new(
        project: &Project,
        stores: &StoreCache,
        clock: &SharedClock,
        slice: SliceId,
        begun: Beginning,
    ) -> SliceGuard {
        owned()
            .slices
            .insert((project.root().to_path_buf(), slice.0));
        drop(begun);
        SliceGuard {
            project: project.clone(),
            stores: stores.clone(),
            clock: clock.clone(),
            slice,
            armed: true,
            cause: None,
            exit: None,
            output_bytes: 0,
            usage: None,
            patience: patience(project),
        }
    }

    /// Notes why the slice cannot finish normally; the end recorded on drop says so.
    pub(crate) fn fail(&mut self, cause: impl Into<String>) {
        self.cause.get_or_insert_with(|| cause.into());
    }

    /// Notes how the agent's process ended and what it spent, for an end recorded on drop.
    pub(crate) fn ran(&mut self, exit: Option<String>, output_bytes: u64, usage: QuotaRequest) {
        self.exit = exit;
        self.output_bytes = output_bytes;
        self.usage = Some(usage);
    }

    /// The slice's end was recorded by its writeback: nothing more to do.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }

    /// The supervisor died (a simulated crash): nothing is recorded, and the slice stays
    /// running in the store until recovery finds it.
    pub(crate) fn vanish(mut self) {
        self.armed = false;
    }

    /// Records the slice `interrupted` now, for `reason`; the error when even that could not
    /// be written (then recovery closes the slice later).
    pub(crate) fn interrupt(mut self, reason: &str) -> Result<(), KernelError> {
        self.armed = false;
        self.close(reason)
    }

    /// Records the slice `interrupted` (with its claim released), retrying while the store
    /// is busy or full, for at most the guard's patience. `Ok` also when someone else ended it.
    fn close(&self, reason: &str) -> Result<(), KernelError> {
        let op = |usage: Option<QuotaRequest>| {
            Op::SliceInterrupt(Interrupt {
                slice: self.slice,
                reason: reason.to_owned(),
                exit: self.exit.clone(),
                output_bytes: self.output_bytes,
                usage,
            })
        };
        let apply = |op: Op| {
            self.stores.with(&self.project, |store| {
                store.apply(op, ACTOR, self.clock.now())
            })
        };
        let mut ended = retrying(&*self.clock, self.patience, || {
            apply(op(self.usage.clone()))
        });
        // On a full disk the end matters more than the charge: try the smaller write.
        if self.usage.is_some()
            && matches!(&ended, Err(KernelError::Store(StoreError::NoSpace { .. })))
        {
            ended = apply(op(None));
        }
        match ended {
            Ok(_) | Err(KernelError::Conflict(Conflict::SliceEnded { .. })) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for SliceGuard {
    fn drop(&mut self) {
        // A crashed process records nothing (the simulation's crash unwinds through here).
        if self.armed && !self.stores.dying() {
            let reason = match (&self.cause, std::thread::panicking()) {
                (Some(cause), _) => cause.clone(),
                (None, true) => match loopx_kernel::panic_site::last() {
                    Some(site) => {
                        format!("a bug in loopx stopped the slice's supervisor (a panic at {site})")
                    }
                    None => "a bug in loopx stopped the slice's supervisor (a panic)".to_owned(),
                },
                (None, false) => "the slice's supervisor ended before its writeback".to_owned(),
            };
            match self.close(&reason) {
                Ok(()) => {
                    tracing::warn!(slice = %self.slice, %reason, "slice recorded interrupted")
                }
                Err(e) => tracing::error!(
                    slice = %self.slice,
                    error = %crate::errors::chain(&e),
                    "cannot record the slice's end; recovery will close it"
                ),
            }
        }
        owned()
            .slices
            .remove(&(self.project.root().to_path_buf(), self.slice.0));
    }
}

/// How long a slice's end keeps being retried: six times the project's store's busy wait
/// (`LOOPX_STORE_WAIT_MS`, 5 s by default), so 30 s unless configured.
pub(crate) fn patience(project: &Project) -> Duration {
    project.store_settings().wait * 6
}

/// Runs `write` until it succeeds, fails for a reason other than a busy or full store, or
/// `patience` has passed; backing off from 50 ms to 2 s between tries.
pub(crate) fn retrying<T>(
    clock: &dyn Clock,
    patience: Duration,
    mut write: impl FnMut() -> Result<T, KernelError>,
) -> Result<T, KernelError> {
    let deadline = clock.monotonic() + patience;
    let mut pause = Duration::from_millis(50);
    loop {
        match write() {
            Err(KernelError::Store(e)) if e.is_transient() && clock.monotonic() < deadline => {
                tracing::warn!(error = %e, "the store is not writable; trying again");
                clock.sleep(pause.min(deadline.saturating_sub(clock.monotonic())));
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            other => return other,
        }
    }
}
