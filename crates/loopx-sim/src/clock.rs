//! The virtual clock: monotonic time that moves only when the simulation says so, and a wall
//! clock that is that time plus the scenario's start plus any steps injected.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use loopx_kernel::{Clock, Timestamp};

/// One simulation's time. Shared (through `Arc`) by the supervisor and the simulation; only
/// the simulation's thread moves it.
#[derive(Debug)]
pub struct VirtualClock {
    /// The wall time at monotonic zero, in ms since the Unix epoch.
    start: u64,
    /// Monotonic time, in ms.
    mono: AtomicU64,
    /// What clock steps added to the wall time, in ms.
    offset: AtomicI64,
}

impl VirtualClock {
    pub fn new(start: Timestamp) -> VirtualClock {
        VirtualClock {
            start: start.0,
            mono: AtomicU64::new(0),
            offset: AtomicI64::new(0),
        }
    }

    /// Monotonic time in ms.
    pub fn mono_ms(&self) -> u64 {
        self.mono.load(Ordering::SeqCst)
    }

    /// Moves monotonic time to `at` ms (never back).
    pub fn advance_to(&self, at: u64) {
        self.mono.fetch_max(at, Ordering::SeqCst);
    }

    /// Steps the wall clock by `by` ms (a negative step goes back).
    pub fn step(&self, by: i64) {
        self.offset.fetch_add(by, Ordering::SeqCst);
    }

    /// What steps added to the wall clock so far.
    pub fn offset_ms(&self) -> i64 {
        self.offset.load(Ordering::SeqCst)
    }

    /// The true time: the wall clock as it would be without steps (the vendors' clock).
    pub fn true_now(&self) -> Timestamp {
        Timestamp(self.start.saturating_add(self.mono_ms()))
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        let true_now = i64::try_from(self.true_now().0).unwrap_or(i64::MAX);
        Timestamp(u64::try_from(true_now.saturating_add(self.offset_ms())).unwrap_or(0))
    }

    fn monotonic(&self) -> Duration {
        Duration::from_millis(self.mono_ms())
    }

    /// A sleep inside the supervisor (a retry's backoff) passes at once, moving time on.
    fn sleep(&self, d: Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.mono.fetch_add(ms, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_move_the_wall_clock_but_not_the_monotonic_one() {
        let clock = VirtualClock::new(Timestamp(1_000_000));
        clock.advance_to(5_000);
        clock.step(-2_000_000);
        assert_eq!(clock.monotonic(), Duration::from_secs(5));
        assert_eq!(clock.now(), Timestamp(0), "clamped at the epoch");
        clock.step(4_000_000);
        assert_eq!(clock.now(), Timestamp(3_005_000));
        assert_eq!(clock.true_now(), Timestamp(1_005_000));
        clock.advance_to(1_000);
        assert_eq!(clock.mono_ms(), 5_000, "never back");
        clock.sleep(Duration::from_secs(1));
        assert_eq!(clock.mono_ms(), 6_000);
    }
}
