//! The faults injected into the kernel's writes, drawn from the seed.

use std::sync::{Arc, Mutex, PoisonError};

use loopx_kernel::fault::{Fault, Faults};
use serde::Serialize;

use crate::scenario::Checked;

/// Whose write the kernel is making.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writer {
    /// The supervisor: its writes may crash it.
    Supervisor,
    /// An agent's `loopx report` or a person: busy or full, never a supervisor crash.
    Other,
}

/// Faults injected so far, by kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FaultCounts {
    pub store_busy: u64,
    pub disk_full: u64,
    pub crashes_at_writes: u64,
    pub kills: u64,
    pub clock_steps: u64,
}

#[derive(Debug)]
pub(crate) struct FaultState {
    rng: fastrand::Rng,
    busy: f64,
    full: f64,
    crash: f64,
    pub counts: FaultCounts,
}

impl FaultState {
    pub(crate) fn new(plan: &Checked, seed: u64) -> FaultState {
        let f = &plan.scenario.faults;
        FaultState {
            rng: fastrand::Rng::with_seed(seed ^ 0xFA17_0000),
            busy: f.store_busy,
            full: f.disk_full,
            crash: f.crash_per_write,
            counts: FaultCounts::default(),
        }
    }

    fn draw(&mut self, writer: Writer) -> Option<Fault> {
        if self.busy > 0.0 && self.rng.f64() < self.busy {
            self.counts.store_busy += 1;
            return Some(Fault::Busy);
        }
        if self.full > 0.0 && self.rng.f64() < self.full {
            self.counts.disk_full += 1;
            return Some(Fault::NoSpace);
        }
        if writer == Writer::Supervisor && self.crash > 0.0 && self.rng.f64() < self.crash {
            self.counts.crashes_at_writes += 1;
            return Some(match self.rng.bool() {
                true => Fault::CrashBefore,
                false => Fault::CrashAfter,
            });
        }
        None
    }
}

/// The draws of one simulation, shared by every writer in it (one thread, in a fixed order:
/// a seed replays exactly).
pub(crate) type SharedFaults = Arc<Mutex<FaultState>>;

/// The faults of `writer`'s store handles, drawn from `state`.
pub(crate) fn faults_of(state: &SharedFaults, writer: Writer) -> Faults {
    let state = Arc::clone(state);
    Faults::new(Arc::new(move |_action| {
        state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .draw(writer)
    }))
}
