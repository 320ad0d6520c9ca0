//! Faults injected by the deterministic simulation (`loopx sim`) and by tests, and by nothing
//! else: a wrapper around the storage interface, attached to a store handle
//! ([`Store::with_faults`](crate::Store::with_faults)). A handle without one (every handle
//! production opens) writes as it always does; a handle with one asks it before each write,
//! and it may make the store busy or full for that write, or crash the process just before or
//! just after the write commits.
//!
//! One [`Faults`] stands for one simulated process: every handle of that process carries a
//! clone. A crash is an unwind whose payload is [`Crashed`]: the simulation catches it where
//! the process would have died. From then on the process is [`dying`](Faults::dying): a dead
//! process writes nothing more, so every handle carrying it refuses writes, and destructors
//! that would record something (a slice's guard) ask first. The next supervisor the
//! simulation starts gets a new `Faults`.
//!
//! With the `planted-bugs` feature a simulation can also switch on a known bug ([`plant`]), to
//! prove that its invariants find it. Without the feature [`planted`] is always false.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::errors::{KernelError, StoreError};

/// What happens to one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The store stays busy: the write is refused as if another process held it too long.
    Busy,
    /// The disk is full: the write is refused.
    NoSpace,
    /// The process dies before the write commits.
    CrashBefore,
    /// The process dies right after the write commits, before anyone sees its result.
    CrashAfter,
}

/// The unwind payload of a simulated crash.
#[derive(Debug, Clone, Copy)]
pub struct Crashed;

/// Decides the fault (if any) for a write, given the name of its first operation.
pub type Injector = Arc<dyn Fn(&'static str) -> Option<Fault> + Send + Sync>;

/// The faults of one simulated process, for every store handle it opens.
#[derive(Clone)]
pub struct Faults {
    inject: Injector,
    dying: Arc<AtomicBool>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("dying", &self.dying())
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// A process whose writes `inject` decides about.
    pub fn new(inject: Injector) -> Faults {
        Faults {
            inject,
            dying: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the process has crashed: it writes nothing more.
    pub fn dying(&self) -> bool {
        self.dying.load(Ordering::SeqCst)
    }

    /// Crashes the simulated process here.
    pub fn crash(&self) -> ! {
        self.crash_with(Crashed)
    }

    /// Ends the simulated process here, unwinding with `payload` (a simulation that halts on
    /// a broken invariant): like a crash, nothing more is written on the way out.
    pub fn crash_with<P: std::any::Any + Send + 'static>(&self, payload: P) -> ! {
        self.dying.store(true, Ordering::SeqCst);
        std::panic::panic_any(payload)
    }

    /// Asks the injector about a write to the store at `path`. `Ok(true)`: crash once it
    /// committed.
    pub(crate) fn before_write(
        &self,
        path: &Path,
        action: &'static str,
    ) -> Result<bool, KernelError> {
        if self.dying() {
            return Err(StoreError::Damaged {
                path: path.to_path_buf(),
                why: "the process writing it has crashed (simulated)".to_owned(),
            }
            .into());
        }
        match (self.inject)(action) {
            None => Ok(false),
            Some(Fault::Busy) => Err(StoreError::Busy {
                path: path.to_path_buf(),
                waited_ms: 0,
                holders: " (simulated)".to_owned(),
            }
            .into()),
            Some(Fault::NoSpace) => Err(StoreError::NoSpace {
                path: path.to_path_buf(),
                source: std::io::Error::from_raw_os_error(nix::errno::Errno::ENOSPC as i32),
            }
            .into()),
            Some(Fault::CrashBefore) => self.crash(),
            Some(Fault::CrashAfter) => Ok(true),
        }
    }
}

/// A bug planted on purpose, for proving that the simulation finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedBug {
    /// A renewal re-arms the lease under whatever epoch it presents, without the fence: a
    /// slice whose claim a person took back keeps (and resurrects) it.
    RenewIgnoresEpoch,
}

// Not on the write path of a build without the feature: `planted` is a constant there.
#[cfg(feature = "planted-bugs")]
thread_local! {
    static PLANTED: std::cell::Cell<Option<PlantedBug>> = const { std::cell::Cell::new(None) };
}

/// Switches `bug` on (or every bug off, with `None`) for this thread.
#[cfg(feature = "planted-bugs")]
pub fn plant(bug: Option<PlantedBug>) {
    PLANTED.with(|p| p.set(bug));
}

/// Whether `bug` is switched on for this thread.
pub fn planted(bug: PlantedBug) -> bool {
    #[cfg(feature = "planted-bugs")]
    {
        PLANTED.with(|p| p.get() == Some(bug))
    }
    #[cfg(not(feature = "planted-bugs"))]
    {
        let _ = bug;
        false
    }
}
