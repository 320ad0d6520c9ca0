//! The production host of the run loop: a thread per worker, one channel, the doorbell's
//! listening thread, and the reaping of adopted orphans. The coordinator (`run_loop.rs`) sees
//! only the [`Host`] it implements, as the simulation's host does.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use loopx_kernel::doorbell::{self, Listener};
use loopx_kernel::{Project, SharedClock};

use super::{Host, Msg, RECOVER_EVERY, RunEvent, RunLoop};
use crate::errors::SupervisorError;
use crate::once::{RunOnce, Step, World, run_once};
use crate::recover::{Recovered, recover_in};

/// How often the orphans loopx adopts as a subreaper (a daemon a notification command or git
/// left behind) are reaped, so that a run of days collects no zombies.
const REAP_EVERY: Duration = Duration::from_secs(5);

/// The production host: a thread per worker, one channel, the doorbell.
pub(super) struct Threads {
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    pub(super) bell: Bell,
    clock: SharedClock,
    last_reap: Duration,
}

impl Threads {
    pub(super) fn start(req: &RunLoop) -> Threads {
        let (tx, rx) = mpsc::channel::<Msg>();
        let waker = tx.clone();
        req.shutdown.wake_with(move || {
            let _ = waker.send(Msg::Wake);
        });
        let bell = Bell::start(&req.project, tx.clone());
        let clock = req.world.clock.clone();
        Threads {
            tx,
            rx,
            bell,
            last_reap: clock.monotonic(),
            clock,
        }
    }
}

impl Host for Threads {
    fn clock(&self) -> SharedClock {
        self.clock.clone()
    }

    fn start(&mut self, idx: usize, once: RunOnce) -> Result<(), String> {
        let tx = self.tx.clone();
        std::thread::Builder::new()
            .name(format!(
                "loopx-agent-{}",
                once.agent.as_deref().unwrap_or("?")
            ))
            .spawn(move || {
                // A panic must still report the worker done, or its agent would stay busy
                // (and the loop alive) forever.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_once(&once, &mut |step| {
                        if let Some(msg) = step_msg(idx, &step) {
                            let _ = tx.send(msg);
                        }
                    })
                }))
                .unwrap_or_else(|panic| {
                    let text = panic_text(&panic);
                    Err(SupervisorError::Panicked(
                        match loopx_kernel::panic_site::last() {
                            Some(site) => format!("{text} (at {site})"),
                            None => text,
                        },
                    ))
                });
                let _ = tx.send(Msg::Done(idx, result));
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn next(&mut self, timeout: Duration) -> Option<Msg> {
        match self.rx.recv_timeout(timeout) {
            Ok(msg) => Some(msg),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => unreachable!("the host holds a sender"),
        }
    }

    fn recover(
        &mut self,
        project: &Project,
        world: &World,
    ) -> Result<Vec<Recovered>, SupervisorError> {
        recover_in(project, world)
    }

    fn random(&mut self, range: Range<u64>) -> u64 {
        fastrand::u64(range)
    }

    fn start_polls(&mut self, job: crate::poll::PollJob) -> bool {
        let tx = self.tx.clone();
        let spawned = std::thread::Builder::new()
            .name("loopx-polls".to_owned())
            .spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run()))
                    .unwrap_or_else(|panic| Err(SupervisorError::Panicked(panic_text(&panic))));
                let _ = tx.send(Msg::Polled(result));
            });
        if let Err(e) = spawned {
            // Reported as a failed round: the coordinator tries again a little later.
            let _ = self
                .tx
                .send(Msg::Polled(Err(SupervisorError::Panicked(format!(
                    "cannot start the polling thread: {e}"
                )))));
        }
        true
    }

    fn tidy(&mut self) {
        let now = self.clock.monotonic();
        if now.saturating_sub(self.last_reap) >= REAP_EVERY {
            self.last_reap = now;
            let reaped = loopx_pty::reap_adopted();
            if !reaped.is_empty() {
                tracing::debug!(?reaped, "reaped adopted orphans");
            }
        }
    }
}

/// What a panic said.
pub(super) fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned())
}

/// The message a worker's step becomes, if the coordinator cares.
pub(super) fn step_msg(idx: usize, step: &Step<'_>) -> Option<Msg> {
    match step {
        Step::Decided { decision, goal, .. } => Some(Msg::Decided(idx, (*decision).clone(), *goal)),
        Step::Started {
            slice,
            kind,
            todo,
            log,
            agent,
        } => Some(Msg::Started(
            idx,
            RunEvent::SliceStarted {
                agent: (*agent).clone(),
                slice: *slice,
                kind: kind.as_str(),
                todo: *todo,
                log: (*log).to_owned(),
            },
        )),
        Step::Claimed { .. } | Step::Spawned { .. } | Step::Ended(_) => None,
    }
}

/// The doorbell's listening thread: a ring becomes a [`Msg::Wake`].
pub(super) struct Bell {
    closing: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Bell {
    fn start(project: &Project, tx: Sender<Msg>) -> Bell {
        let closing = Arc::new(AtomicBool::new(false));
        let listener = Listener::bind(project);
        let flag = Arc::clone(&closing);
        let thread = std::thread::Builder::new()
            .name("loopx-doorbell".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    if listener.wait(RECOVER_EVERY) && tx.send(Msg::Wake).is_err() {
                        return;
                    }
                }
            })
            .inspect_err(|e| {
                tracing::warn!(error = %e, "cannot start the doorbell thread; the loop wakes on its timer alone")
            })
            .ok();
        Bell { closing, thread }
    }

    /// Ends the thread (ringing it awake) and removes its socket.
    pub(super) fn stop(mut self, project: &Project) {
        self.closing.store(true, Ordering::SeqCst);
        doorbell::ring(project);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
