//! Renewing a slice's claim while it runs.
//!
//! A claim is taken for at most ten minutes (`once.rs`, `lease_ttl`), so a supervisor that dies
//! frees its todo soon. While the slice runs, a thread renews the claim every third of that;
//! if the kernel refuses (the claim moved on: a person released it, or it expired while the
//! machine slept and a peer took it), the slice is stopped, because two agents must never work
//! on one todo. A renewal that finds the todo finished under the slice's own claim (the agent
//! ran `loopx report done` and went on working) is a success: renewing simply stops.
//! A claim that could not be renewed before it runs out (the store stayed busy, or its
//! database unreachable, for a whole lease) is lost too: the slice is stopped before a peer
//! on another host may take the todo. What a renewal's answer means is `loopx_domain::renewal`'s.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use loopx_kernel::store::RenewClaim;
use loopx_kernel::{AgentName, Op, Project, SharedClock, TodoId};

use crate::store_cache::StoreCache;
pub use loopx_domain::renewal::Renewed;
use loopx_pty::SliceControl;

/// Renews `agent`'s claim on `todo` under `epoch` for `ttl`, once, through the supervisor's
/// store handle.
pub(crate) fn renew_once(
    stores: &StoreCache,
    project: &Project,
    clock: &SharedClock,
    agent: &AgentName,
    todo: TodoId,
    epoch: u64,
    ttl: Duration,
) -> Renewed {
    let op = Op::TodoRenew(RenewClaim {
        todo,
        agent: agent.clone(),
        epoch,
        ttl,
    });
    let actor = loopx_vocab::actor::agent(agent.as_str());
    Renewed::of(stores.with(project, |s| s.apply(op, &actor, clock.now())))
}

#[derive(Debug, Default)]
struct Shared {
    control: Option<SliceControl>,
    /// Why the claim was lost, once it was.
    lost: Option<String>,
}

/// The renewing thread of one slice.
#[derive(Debug)]
pub(crate) struct Renewal {
    done: mpsc::Sender<()>,
    shared: Arc<Mutex<Shared>>,
    thread: Option<JoinHandle<()>>,
}

impl Renewal {
    pub(crate) fn start(
        stores: StoreCache,
        project: Project,
        clock: SharedClock,
        agent: AgentName,
        todo: TodoId,
        epoch: u64,
        ttl: Duration,
    ) -> Renewal {
        let (done, stop) = mpsc::channel::<()>();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let mine = Arc::clone(&shared);
        let every = ttl / 3;
        let thread = std::thread::Builder::new()
            .name("loopx-renew".into())
            .spawn(move || {
                // The claim lasts until about a ttl after it was last taken or renewed; this
                // thread starts after the claim, so the first deadline is already short of it.
                let mut renewed_at = clock.monotonic();
                while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
                    let tried_at = clock.monotonic();
                    let outcome = match renew_once(&stores, &project, &clock, &agent, todo, epoch, ttl) {
                        // No renewal left before the claim runs out (the store, or its
                        // database on another host, stayed unreachable): a peer may take the
                        // todo once it has, and two agents must never work on one todo.
                        // The next try (and the time it takes) would come after that.
                        Renewed::Failed(why) if clock.monotonic() + 2 * every >= renewed_at + ttl => {
                            Renewed::Lost(format!(
                                "its claim could not be renewed before it ran out ({why})"
                            ))
                        }
                        other => other,
                    };
                    match outcome {
                        Renewed::Kept => renewed_at = tried_at,
                        Renewed::Finished => return,
                        Renewed::Lost(why) => {
                            tracing::warn!(%todo, error = %why, "the slice lost its claim; stopping it");
                            let mut shared = mine.lock().unwrap_or_else(|p| p.into_inner());
                            shared.lost = Some(why);
                            if let Some(control) = &shared.control {
                                control.stop();
                            }
                            return;
                        }
                        Renewed::Failed(why) => {
                            tracing::warn!(%todo, error = %why, "could not renew the claim")
                        }
                    }
                }
            })
            .inspect_err(|e| {
                tracing::error!(error = %e, "cannot start the claim's renewal thread; the claim lapses at its expiry")
            })
            .ok();
        Renewal {
            done,
            shared,
            thread,
        }
    }

    /// The slice to stop if the claim is lost (at once if it already was).
    pub(crate) fn stop_slice_if_lost(&self, control: SliceControl) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if shared.lost.is_some() {
            control.stop();
        }
        shared.control = Some(control);
    }

    /// Why the claim was lost, if it was by now (renewing goes on).
    pub(crate) fn lost(&self) -> Option<String> {
        let shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.lost.clone()
    }

    /// Stops renewing; returns why the claim was lost, if it was.
    pub(crate) fn finish(mut self) -> Option<String> {
        let _ = self.done.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.lost.clone()
    }
}
