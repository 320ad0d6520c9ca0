//! Slices per hour with a burst: governor's GCRA with a persisted arrival time.
//!
//! governor keeps its state (the "theoretical arrival time", TAT) in memory, so a restart would
//! forget that the agent just ran. Here the state store is one `u64` the caller loads from the
//! kernel and saves back, and the clock is pinned to the `now` passed in: the limiter is built
//! fresh for every check, at a clock whose origin is the Unix epoch.
//!
//! GCRA is a leaky bucket, not a window: `6/h, burst 2` admits two slices at once and then one
//! every ten minutes, which over any rolling hour can exceed six. `docs/quota.md` shows it.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{NotKeyed, StateStore};
use governor::{Quota, RateLimiter};
use serde::{Deserialize, Serialize};

use crate::Millis;

/// An agent's pacing: at most `slices_per_hour` on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pacing {
    pub slices_per_hour: f64,
    pub burst: u32,
}

/// `u64::MAX` stands for "never measured".
const UNSET: u64 = u64::MAX;

/// The persisted TAT, in nanoseconds since the Unix epoch.
#[derive(Debug)]
struct PersistedTat(AtomicU64);

impl StateStore for PersistedTat {
    type Key = NotKeyed;

    fn measure_and_replace<T, F, E>(&self, _key: &Self::Key, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let previous = self.0.load(Ordering::SeqCst);
        let (result, next) = f((previous != UNSET).then(|| Nanos::from(previous)))?;
        self.0.store(next.as_u64(), Ordering::SeqCst);
        Ok(result)
    }
}

const NANOS_PER_MILLI: u64 = 1_000_000;

/// Checks one slice against `pacing` at `now`, given the stored arrival time (`None` before the
/// first slice). `Ok(tat)` admits it and gives the arrival time to store; `Err(at)` is the
/// earliest moment it would be admitted.
///
/// A GCRA arrival time never lies more than a full burst of periods ahead of the clock. One
/// that does was stored before the wall clock stepped back; it is taken as a full burst ahead,
/// so the agent waits at most as if it had just used its whole burst, not the size of the step.
pub fn pacing_check(pacing: Pacing, tat: Option<Millis>, now: Millis) -> Result<Millis, Millis> {
    let Some(quota) = quota(pacing) else {
        return Ok(tat.unwrap_or(now));
    };
    let lead = u64::try_from(quota.burst_size_replenished_in().as_millis()).unwrap_or(u64::MAX);
    let tat = tat.map(|t| t.min(now.saturating_add(lead)));
    let clock = FakeRelativeClock::default();
    let state = PersistedTat(AtomicU64::new(
        tat.map_or(UNSET, |t| t.saturating_mul(NANOS_PER_MILLI)),
    ));
    // Built at clock zero (= the epoch), then moved to `now`: governor measures from its start.
    let limiter: RateLimiter<NotKeyed, PersistedTat, FakeRelativeClock, NoOpMiddleware<Nanos>> =
        RateLimiter::new(quota, state, clock.clone());
    clock.advance(Duration::from_millis(now));
    match limiter.check() {
        Ok(()) => {
            let nanos = limiter.into_state_store().0.load(Ordering::SeqCst);
            Ok(nanos.div_ceil(NANOS_PER_MILLI))
        }
        Err(not_until) => {
            let not_until: governor::NotUntil<Nanos> = not_until;
            let at = not_until.earliest_possible();
            Err(at.as_u64().div_ceil(NANOS_PER_MILLI).max(now))
        }
    }
}

fn quota(pacing: Pacing) -> Option<Quota> {
    if !(pacing.slices_per_hour.is_finite() && pacing.slices_per_hour > 0.0) {
        return None;
    }
    let period = Duration::from_secs_f64(3600.0 / pacing.slices_per_hour);
    let burst = NonZeroU32::new(pacing.burst.max(1)).expect("max(1) is not zero");
    Some(Quota::with_period(period)?.allow_burst(burst))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Millis = 3_600_000;
    const T0: Millis = 1_790_000_000_000;

    #[test]
    fn burst_then_one_per_period() {
        let pacing = Pacing {
            slices_per_hour: 6.0,
            burst: 2,
        };
        let tat = pacing_check(pacing, None, T0).expect("first");
        let tat = pacing_check(pacing, Some(tat), T0).expect("second: the burst");
        let wake = pacing_check(pacing, Some(tat), T0).expect_err("third waits");
        assert_eq!(
            wake,
            T0 + HOUR / 6,
            "one slice every ten minutes after the burst"
        );
        assert!(
            pacing_check(pacing, Some(tat), wake).is_ok(),
            "admitted at the wake time"
        );
    }

    #[test]
    fn state_survives_a_restart() {
        let pacing = Pacing {
            slices_per_hour: 1.0,
            burst: 1,
        };
        let tat = pacing_check(pacing, None, T0).expect("first");
        // A "restart" is just a new call with the stored value.
        assert_eq!(pacing_check(pacing, Some(tat), T0 + 60_000), Err(T0 + HOUR));
    }

    #[test]
    fn a_clock_stepped_back_a_day_waits_a_period_not_a_day() {
        let pacing = Pacing {
            slices_per_hour: 6.0,
            burst: 1,
        };
        let tat = pacing_check(pacing, None, T0).expect("first");
        let day_earlier = T0 - 24 * HOUR;
        let wake = pacing_check(pacing, Some(tat), day_earlier).expect_err("paced");
        assert_eq!(wake, day_earlier + HOUR / 6, "one period from the new now");
    }

    #[test]
    fn no_pacing_admits_everything() {
        let pacing = Pacing {
            slices_per_hour: 0.0,
            burst: 0,
        };
        assert!(pacing_check(pacing, Some(T0 * 2), T0).is_ok());
    }
}
