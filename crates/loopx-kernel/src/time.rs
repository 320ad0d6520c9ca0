//! Wall-clock instants as stored and shown.
//!
//! Persisted times are wall time in milliseconds since the Unix epoch (durations inside one
//! process use a [`Clock`]'s monotonic time). JSON shows RFC 3339 in UTC; the store keeps the
//! integer.
//!
//! The supervisor reads time only through a [`Clock`]: [`SystemClock`] in production, a virtual
//! clock in `loopx sim`, where a sleep advances time at once and the wall clock can be stepped
//! (`docs/design/simulation.md`). The kernel itself never reads the clock: every operation is
//! given its time. Its one reading of the machine's clock, [`WallClock`], is a value the
//! surface builds (with the skew it was told) and the project carries (`StoreSettings`), so
//! that a store on a database server can move it onto the server's clock: no process-wide
//! setting.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Milliseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The machine's wall-clock time as it is, for tests and benches; loopx itself reads a
    /// [`WallClock`] (a host's skew, a store's clock).
    pub fn now() -> Self {
        WallClock::default().host_now()
    }

    /// This instant moved `ms` (negative: earlier), saturating.
    fn moved(self, ms: i64) -> Self {
        let ms = i128::from(self.0) + i128::from(ms);
        Timestamp(u64::try_from(ms.max(0)).unwrap_or(u64::MAX))
    }

    /// This instant plus a duration, saturating.
    pub fn plus(self, d: Duration) -> Self {
        Timestamp(
            self.0
                .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        )
    }

    /// Time from `earlier` to `self`, zero when `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }

    /// Parses RFC 3339 (`2026-11-30T04:00:00Z`).
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let at = humantime::parse_rfc3339_weak(text).ok()?;
        let since = at.duration_since(UNIX_EPOCH).ok()?;
        Some(Timestamp(u64::try_from(since.as_millis()).ok()?))
    }
}

/// Where the supervisor gets its time from.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The wall-clock time (it may step back or forward).
    fn now(&self) -> Timestamp;
    /// Monotonic time since the clock's own origin: never steps, only comparable with other
    /// readings of the same clock.
    fn monotonic(&self) -> Duration;
    /// Waits `d` (a virtual clock advances by `d` instead).
    fn sleep(&self, d: Duration);
}

/// A clock shared by everything one supervisor runs.
pub type SharedClock = Arc<dyn Clock>;

/// The machine's clocks: a [`WallClock`] for the wall, `Instant` for the monotonic time.
#[derive(Debug, Clone)]
pub struct SystemClock {
    origin: Instant,
    wall: WallClock,
}

impl SystemClock {
    /// The machine's clock, read as `wall` reads it, as a [`SharedClock`].
    pub fn shared(wall: WallClock) -> SharedClock {
        Arc::new(SystemClock {
            origin: Instant::now(),
            wall,
        })
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        self.wall.now()
    }

    fn monotonic(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// This host's wall clock as loopx reads it: the machine's, put a skew off as the surface was
/// told (`LOOPX_CLOCK_SKEW_MS`: a host whose clock is wrong, for tests and drills of several
/// hosts on one machine), then moved onto a shared store's clock once that is known to differ
/// (`store/pg.rs`; every host must agree on when a lease ends). Clones share the move: a
/// project's store settings and the supervisor's clock are one clock.
#[derive(Debug, Clone, Default)]
pub struct WallClock {
    skew_ms: i64,
    offset_ms: Arc<AtomicI64>,
}

impl WallClock {
    /// The machine's clock put `ms` off (negative: behind).
    pub fn skewed(ms: i64) -> WallClock {
        WallClock {
            skew_ms: ms,
            offset_ms: Arc::default(),
        }
    }

    /// The current wall-clock time: this host's, moved onto the shared store's clock once that
    /// is known to differ.
    pub fn now(&self) -> Timestamp {
        self.host_now()
            .moved(self.offset_ms.load(Ordering::Relaxed))
    }

    /// This host's wall clock (with its skew), before any move onto a store's clock.
    pub fn host_now(&self) -> Timestamp {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(u64::try_from(since.as_millis()).unwrap_or(u64::MAX)).moved(self.skew_ms)
    }

    /// Moves this clock `ms` from the host's: a store on a database server found this host's
    /// clock that far behind its own.
    pub(crate) fn follow(&self, ms: i64) {
        self.offset_ms.store(ms, Ordering::Relaxed);
    }
}

/// The latest time loopx stores: leases, holds and windows further out are refused as input.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 86_400);

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // RFC 3339 stops at year 9999; a time past it (never stored by loopx itself) is shown
        // as raw milliseconds rather than failing whatever prints it.
        if self.0 >= 253_402_300_800_000 {
            return write!(f, "@{}ms", self.0);
        }
        let at = UNIX_EPOCH + Duration::from_secs(self.0 / 1000);
        write!(f, "{}", humantime::format_rfc3339_seconds(at))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.collect_str(self)
        } else {
            s.serialize_u64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            let text = String::deserialize(d)?;
            Timestamp::parse_rfc3339(&text)
                .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {text}")))
        } else {
            u64::deserialize(d).map(Timestamp)
        }
    }
}

/// `5m ago`, `in 2h`, `now`: a time as seen from `now` (within a second is now).
pub fn relative(now: Timestamp, at: Timestamp) -> String {
    if at.0.saturating_add(1_000) < now.0 {
        format!("{} ago", short_duration(now.since(at)))
    } else if at.0 > now.0.saturating_add(1_000) {
        format!("in {}", short_duration(at.since(now)))
    } else {
        "now".to_owned()
    }
}

/// A short human duration: `45s`, `12m`, `3h 5m`, `2d 4h`.
pub fn short_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 if secs % 3600 / 60 == 0 => format!("{}h", secs / 3600),
        3600..86400 => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
        _ if secs % 86400 / 3600 == 0 => format!("{}d", secs / 86400),
        _ => format!("{}d {}h", secs / 86400, secs % 86400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip() {
        let t = Timestamp::parse_rfc3339("2026-09-21T15:20:00Z").expect("parses");
        assert_eq!(t.0, 1_790_004_000_000);
        assert_eq!(t.to_string(), "2026-09-21T15:20:00Z");
    }

    #[test]
    fn short_durations_read_naturally() {
        assert_eq!(short_duration(Duration::from_secs(45)), "45s");
        assert_eq!(short_duration(Duration::from_secs(720)), "12m");
        assert_eq!(short_duration(Duration::from_secs(3 * 3600 + 300)), "3h 5m");
        assert_eq!(
            short_duration(Duration::from_secs(2 * 86400 + 4 * 3600)),
            "2d 4h"
        );
    }
}
