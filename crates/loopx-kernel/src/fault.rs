//! Faults injected by the deterministic simulation (`loopx sim`), and by nothing else.
//!
//! A simulation installs an [`Injector`] on its own thread (it runs the whole loop on one
//! thread). Every write the kernel is asked to make on that thread asks the injector first,
//! which may make the store busy or full for that write, or crash the process just before or
//! just after the write commits. Production never installs one: the cost is one thread-local
//! read per write.
//!
//! A crash is an unwind whose payload is [`Crashed`]: the simulation catches it where the
//! process would have died. While it unwinds the thread is [`dying`]: a dead process writes
//! nothing more, so destructors that would record something (a slice's guard) must not, and
//! the kernel refuses every write until the simulation [`revive`]s the thread as the next
//! supervisor.
//!
//! With the `planted-bugs` feature a simulation can also switch on a known bug ([`plant`]), to
//! prove that its invariants find it. Without the feature [`planted`] is always false.

use std::cell::{Cell, RefCell};
use std::path::Path;

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
pub type Injector = Box<dyn FnMut(&'static str) -> Option<Fault>>;

thread_local! {
    static INJECTOR: RefCell<Option<Injector>> = const { RefCell::new(None) };
    static DYING: Cell<bool> = const { Cell::new(false) };
}

/// Installs `injector` for this thread until the returned value is dropped.
pub fn install(injector: Injector) -> Installed {
    INJECTOR.with(|slot| *slot.borrow_mut() = Some(injector));
    Installed(())
}

/// Removes the injector when dropped.
#[derive(Debug)]
pub struct Installed(());

impl Drop for Installed {
    fn drop(&mut self) {
        INJECTOR.with(|slot| slot.borrow_mut().take());
        DYING.with(|d| d.set(false));
    }
}

/// Whether this thread is unwinding from a simulated crash: nothing may be written.
pub fn dying() -> bool {
    DYING.with(Cell::get)
}

/// The crashed process is gone; the thread goes on as the next one.
pub fn revive() {
    DYING.with(|d| d.set(false));
}

/// Crashes the simulated process here.
pub fn crash() -> ! {
    crash_with(Crashed)
}

/// Ends the simulated process here, unwinding with `payload` (a simulation that halts on a
/// broken invariant): like a crash, nothing more is written on the way out.
pub fn crash_with<P: std::any::Any + Send + 'static>(payload: P) -> ! {
    DYING.with(|d| d.set(true));
    std::panic::panic_any(payload)
}

/// Asks the injector about a write to the store at `path`. `Ok(true)`: crash once it
/// committed.
pub(crate) fn before_write(path: &Path, action: &'static str) -> Result<bool, KernelError> {
    if dying() {
        return Err(StoreError::Damaged {
            path: path.to_path_buf(),
            why: "the process writing it has crashed (simulated)".to_owned(),
        }
        .into());
    }
    // `try_with`: a write from a destructor at thread exit finds no injector, not a panic.
    let fault = INJECTOR
        .try_with(|slot| slot.borrow_mut().as_mut().and_then(|inject| inject(action)))
        .ok()
        .flatten();
    match fault {
        None => Ok(false),
        Some(Fault::Busy) => Err(StoreError::Busy {
            path: path.to_path_buf(),
            waited_ms: 0,
            holders: " (simulated)".to_owned(),
        }
        .into()),
        Some(Fault::NoSpace) => Err(StoreError::NoSpace {
            path: path.to_path_buf(),
            source: std::io::Error::from_raw_os_error(libc_enospc()),
        }
        .into()),
        Some(Fault::CrashBefore) => crash(),
        Some(Fault::CrashAfter) => Ok(true),
    }
}

/// `ENOSPC`, without a libc dependency for one number.
fn libc_enospc() -> i32 {
    nix::errno::Errno::ENOSPC as i32
}

/// A bug planted on purpose, for proving that the simulation finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedBug {
    /// A renewal re-arms the lease under whatever epoch it presents, without the fence: a
    /// slice whose claim a person took back keeps (and resurrects) it.
    RenewIgnoresEpoch,
}

#[cfg(feature = "planted-bugs")]
thread_local! {
    static PLANTED: Cell<Option<PlantedBug>> = const { Cell::new(None) };
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
