//! Stopping the supervisor: the first request stops every running slice gracefully (SIGTERM,
//! the profile's grace, SIGKILL) and starts nothing new; the second kills them at once.
//!
//! Slices register their PTY control here while they run, so a request reaches every one of
//! them whichever thread runs it. A slice that registers after a request is stopped on the spot.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

use loopx_pty::SliceControl;

/// How far stopping has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stopping {
    /// Running normally.
    No,
    /// Stop new slices; stop running ones gracefully.
    Gracefully,
    /// Kill running slices now.
    Now,
}

type Waker = Box<dyn Fn() + Send + Sync>;

/// Shared by the signal handler, the run loop and every running slice.
#[derive(Default)]
pub struct Shutdown {
    level: AtomicU8,
    why: Mutex<Option<String>>,
    slices: Mutex<BTreeMap<u64, SliceControl>>,
    /// Wakes the run loop when a request comes in.
    wake: Mutex<Option<Waker>>,
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shutdown")
            .field("level", &self.level())
            .field("why", &self.reason())
            .finish_non_exhaustive()
    }
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    /// Asks to stop (`why`: "SIGTERM", …). A second request kills at once. Returns how far
    /// stopping has gone now.
    pub fn request(&self, why: &str) -> Stopping {
        // Saturating: a held-down Ctrl-C must never wrap the count back to "running".
        let before = self
            .level
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| {
                Some(l.saturating_add(1).min(2))
            })
            .unwrap_or(2);
        let level = before.saturating_add(1).min(2);
        if let Ok(mut slot) = self.why.lock()
            && slot.is_none()
        {
            *slot = Some(why.to_owned());
        }
        let stopping = Self::stopping(level);
        let slices = self.slices.lock().unwrap_or_else(|p| p.into_inner());
        for control in slices.values() {
            match stopping {
                Stopping::Now => control.kill_now(),
                _ => control.stop(),
            }
        }
        drop(slices);
        if let Ok(wake) = self.wake.lock()
            && let Some(wake) = wake.as_ref()
        {
            wake();
        }
        stopping
    }

    /// How far stopping has gone.
    pub fn level(&self) -> Stopping {
        Self::stopping(self.level.load(Ordering::SeqCst))
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        self.level() > Stopping::No
    }

    /// What the first request said.
    pub fn reason(&self) -> Option<String> {
        self.why.lock().ok().and_then(|w| w.clone())
    }

    /// What to call when a request comes in (the run loop's wake-up).
    pub(crate) fn wake_with(&self, wake: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut slot) = self.wake.lock() {
            *slot = Some(Box::new(wake));
        }
    }

    /// Registers a running slice's control; stops it at once if a stop was already requested.
    ///
    /// The level is read after the control is in the table, under the table's lock: a request
    /// raises the level before it takes the lock, so it either finds the control in the table
    /// or is seen here. (Reading it first would let a request land in between and miss it.)
    pub(crate) fn register(&self, slice: u64, control: SliceControl) {
        let mut slices = self.slices.lock().unwrap_or_else(|p| p.into_inner());
        match self.level() {
            Stopping::No => {}
            Stopping::Gracefully => control.stop(),
            Stopping::Now => control.kill_now(),
        }
        slices.insert(slice, control);
    }

    pub(crate) fn unregister(&self, slice: u64) {
        if let Ok(mut slices) = self.slices.lock() {
            slices.remove(&slice);
        }
    }

    fn stopping(level: u8) -> Stopping {
        match level {
            0 => Stopping::No,
            1 => Stopping::Gracefully,
            _ => Stopping::Now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_request_kills_and_the_first_reason_stays() {
        let s = Shutdown::new();
        assert!(!s.requested());
        assert_eq!(s.request("SIGTERM"), Stopping::Gracefully);
        for _ in 0..300 {
            assert_eq!(s.request("SIGINT"), Stopping::Now);
        }
        assert_eq!(s.reason().as_deref(), Some("SIGTERM"));
    }

    #[test]
    fn a_slice_registered_after_a_stop_request_is_stopped_as_it_registers() {
        let dir = tempfile::tempdir().expect("dir");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut spec = loopx_pty::LaunchSpec::new(
            loopx_pty::SliceId::new("s1").expect("an id"),
            "sleep",
            dir.path(),
            dir.path().join("s1.log"),
        );
        spec.args = vec!["30".into()];
        spec.env.inherit = vec!["PATH".into()];
        let (mut slice, mut events) = {
            let _inside = runtime.enter();
            loopx_pty::spawn_slice(spec).expect("spawns")
        };
        let s = Shutdown::new();
        s.request("SIGTERM");
        s.register(1, slice.control());
        let report = runtime.block_on(async {
            while events.next().await.is_some() {}
            slice.wait().await
        });
        let report = report.expect("a report");
        assert!(
            matches!(report.exit, loopx_pty::SliceExit::Stopped(_)),
            "{:?}",
            report.exit
        );
        assert!(report.duration < std::time::Duration::from_secs(20));
    }
}
