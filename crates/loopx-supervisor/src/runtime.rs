//! The supervisor's one tokio runtime, which every PTY it spawns (an agent's slice, a monitor's
//! check) is supervised on.
//!
//! It is multi-threaded on purpose: agents' loops run on OS threads of their own and wait for
//! their slices with [`Handle::block_on`], which drives IO and timers only on a multi-thread
//! runtime (its workers drive them; a current-thread runtime drives them only inside its own
//! `Runtime::block_on`). Two workers are plenty: a slice's output is pumped by the PTY's own
//! threads, and its task only selects over channels and timers.
//!
//! Built at the supervisor's first process, not before: a supervisor that never spawns one
//! (recovery, a run that only decides) starts no threads, and a runtime that cannot be built
//! fails that slice or check, as it always did.

use std::sync::{Arc, Mutex};

use tokio::runtime::{Builder, Handle, Runtime};

/// Shared by every clone of the supervisor's [`World`](crate::World); the last one dropped
/// shuts it down.
#[derive(Clone, Debug, Default)]
pub struct SharedRuntime(Arc<Mutex<Option<Runtime>>>);

/// Worker threads of the supervisor's runtime.
const WORKERS: usize = 2;

impl SharedRuntime {
    /// A handle to the runtime, built now if this is its first use.
    pub(crate) fn handle(&self) -> std::io::Result<Handle> {
        // A poisoned lock only means a thread panicked while building: the value is still
        // either a runtime or none.
        let mut runtime = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(runtime) = runtime.as_ref() {
            return Ok(runtime.handle().clone());
        }
        let built = Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("loopx-runtime")
            .enable_all()
            .build()?;
        let handle = built.handle().clone();
        *runtime = Some(built);
        Ok(handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clone_shares_one_runtime_that_runs_timers_for_any_thread() {
        let runtime = SharedRuntime::default();
        let first = runtime.handle().expect("a runtime");
        let again = runtime.clone().handle().expect("the same runtime");
        assert_eq!(first.id(), again.id());
        // From a thread of its own, as an agent's loop waits for its slice.
        let slept = std::thread::spawn(move || {
            again.block_on(async {
                let nap = tokio::time::sleep(std::time::Duration::from_millis(10));
                tokio::time::timeout(std::time::Duration::from_secs(5), nap).await
            })
        })
        .join()
        .expect("the thread ends");
        assert!(slept.is_ok(), "the timer fired on the shared runtime");
    }
}
