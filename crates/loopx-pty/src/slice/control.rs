//! The control loop of one slice: one task owning all of its state, selecting over output,
//! the agent's exit, requests, and timers. Everything else talks to it through channels.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::Signal;
use portable_pty::MasterPty;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, sleep_until};

use super::report::{ChildStatus, SliceEvent, SliceExit, SliceReport, StopReason};
use crate::capture::pump::{CaptureSummary, Chunk, Inputs};
use crate::capture::screen::{Screen, ScreenSnapshot};
use crate::spec::{LaunchSpec, SliceLimits};
use crate::sweep::{Seen, SliceProcesses, SweepOutcome};

/// An exit this soon with 127 or SIGABRT is a failed exec, not an agent run.
const SPAWN_FAILURE_WINDOW: Duration = Duration::from_millis(200);
/// How often the screen is compared while output flows.
const SCREEN_CHECK: Duration = Duration::from_millis(200);
/// How long after the sweep to wait for the terminal's EOF.
const EOF_WAIT: Duration = Duration::from_secs(2);

/// Requests from [`SliceControl`](crate::SliceControl).
#[derive(Debug)]
pub(crate) enum Command {
    Stop(StopReason),
    KillNow(StopReason),
}

/// Kills the slice's processes if the control loop is dropped before finishing (its runtime
/// shut down, or it panicked): nothing of a slice may outlive loopx's interest in it.
pub(crate) struct KillGuard {
    pub(crate) procs: SliceProcesses,
    pub(crate) leader: i32,
    pub(crate) armed: bool,
}

impl Drop for KillGuard {
    fn drop(&mut self) {
        if self.armed {
            self.procs.kill_now(self.leader);
        }
    }
}

pub(crate) struct Control {
    pub(crate) spec: LaunchSpec,
    pub(crate) program: std::path::PathBuf,
    pub(crate) guard: KillGuard,
    pub(crate) started: Instant,
    pub(crate) chunks: mpsc::Receiver<Chunk>,
    pub(crate) summary: oneshot::Receiver<CaptureSummary>,
    pub(crate) exit: oneshot::Receiver<Option<ChildStatus>>,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) events: Option<mpsc::Sender<SliceEvent>>,
    pub(crate) want_bytes: Arc<AtomicBool>,
    pub(crate) screen: Arc<Mutex<Screen>>,
    pub(crate) input: Inputs,
    /// Tells every [`SliceControl`](crate::SliceControl) that the slice has ended.
    pub(crate) ended: Arc<AtomicBool>,
    /// Kept open until the end: closing the master hangs up the agent's terminal.
    #[expect(
        dead_code,
        reason = "held only to keep the terminal open until the slice ends"
    )]
    pub(crate) master: Box<dyn MasterPty + Send>,
    pub(crate) report: oneshot::Sender<SliceReport>,
}

/// The loop's mutable state.
struct State {
    pending: VecDeque<SliceEvent>,
    bytes: u64,
    last_output: Instant,
    last_change: Instant,
    screen_dirty: bool,
    next_screen_check: Instant,
    last_snapshot: ScreenSnapshot,
    waiting: bool,
    /// Why loopx is stopping the slice, once it is.
    reason: Option<SliceExit>,
    /// When SIGKILL follows the SIGTERM already sent.
    kill_at: Option<Instant>,
    killed: bool,
    kill_flag: Arc<AtomicBool>,
    /// `Some` once the leader is reaped (inner `None`: reaped elsewhere).
    status: Option<Option<ChildStatus>>,
    exited_at: Option<Instant>,
    sweep: Option<tokio::task::JoinHandle<SweepOutcome>>,
    swept: Option<SweepOutcome>,
    eof: bool,
    eof_deadline: Option<Instant>,
}

impl Control {
    fn limits(&self) -> &SliceLimits {
        &self.spec.limits
    }

    pub(crate) async fn run(mut self) {
        let now = self.started;
        let mut st = State {
            pending: VecDeque::new(),
            bytes: 0,
            last_output: now,
            last_change: now,
            screen_dirty: false,
            next_screen_check: now,
            last_snapshot: ScreenSnapshot::default(),
            waiting: false,
            reason: None,
            kill_at: None,
            killed: false,
            kill_flag: Arc::new(AtomicBool::new(false)),
            status: None,
            exited_at: None,
            sweep: None,
            swept: None,
            eof: false,
            eof_deadline: None,
        };
        loop {
            if st.status.is_some() && st.sweep.is_none() && st.swept.is_none() {
                self.start_sweep(&mut st);
            }
            if st.swept.is_some()
                && (st.eof || st.eof_deadline.is_some_and(|d| Instant::now() >= d))
            {
                break;
            }
            self.step(&mut st).await;
        }
        self.finish(st).await;
    }

    /// One `select!` over everything the slice waits on.
    async fn step(&mut self, st: &mut State) {
        let deadline = self.next_deadline(st);
        let events = self.events.clone();
        tokio::select! {
            biased;
            Some(command) = self.commands.recv() => self.on_command(command, st),
            status = &mut self.exit, if st.status.is_none() => {
                st.status = Some(status.unwrap_or(None));
                st.exited_at = Some(Instant::now());
            }
            outcome = async {
                match &mut st.sweep {
                    Some(handle) => handle.await.unwrap_or_default(),
                    None => std::future::pending().await,
                }
            } => {
                st.sweep = None;
                st.swept = Some(outcome);
                st.eof_deadline = Some(Instant::now() + EOF_WAIT);
            }
            permit = async {
                match &events {
                    Some(tx) => tx.reserve().await.ok(),
                    None => std::future::pending().await,
                }
            }, if !st.pending.is_empty() => match permit {
                Some(permit) => permit.send(st.pending.pop_front().expect("checked non-empty")),
                None => self.drop_events(st),
            },
            chunk = self.chunks.recv(), if !st.eof && st.pending.is_empty() => match chunk {
                Some(chunk) => self.on_chunk(chunk, st),
                None => st.eof = true,
            },
            () = sleep_until(deadline) => self.on_tick(st),
        }
    }

    fn on_command(&mut self, command: Command, st: &mut State) {
        match command {
            // A second stop request means "now", as with a second Ctrl-C.
            Command::Stop(reason) if st.reason.is_none() => {
                self.begin_stop(SliceExit::Stopped(reason), st);
            }
            Command::Stop(reason) | Command::KillNow(reason) => {
                st.reason.get_or_insert(SliceExit::Stopped(reason));
                self.kill(st);
            }
        }
    }

    fn on_chunk(&mut self, chunk: Chunk, st: &mut State) {
        let now = Instant::now();
        st.bytes += chunk.len as u64;
        st.last_output = now;
        st.screen_dirty = true;
        if let Some(bytes) = chunk.bytes {
            self.emit(SliceEvent::Output(bytes), st);
        }
        if st.reason.is_none() && self.limits().output_bytes.is_some_and(|cap| st.bytes > cap) {
            self.begin_stop(SliceExit::OutputCapped, st);
        }
    }

    fn on_tick(&mut self, st: &mut State) {
        let now = Instant::now();
        if st.reason.is_none() && st.status.is_none() {
            if self
                .limits()
                .wall
                .is_some_and(|wall| now >= self.started + wall)
            {
                self.begin_stop(SliceExit::TimedOut, st);
            } else if self
                .limits()
                .idle
                .is_some_and(|idle| now >= st.last_output + idle)
            {
                self.begin_stop(SliceExit::Idle, st);
            }
        }
        if st.screen_dirty && now >= st.next_screen_check {
            self.check_screen(st);
            st.next_screen_check = now + SCREEN_CHECK;
        }
        let quiet_for = now.saturating_duration_since(st.last_change);
        if !st.waiting
            && !st.screen_dirty
            && st.status.is_none()
            && quiet_for >= self.limits().waiting_after
        {
            st.waiting = true;
            let screen = self.screen_text();
            tracing::info!(slice = %self.spec.slice_id, "agent is waiting for input");
            self.emit(SliceEvent::WaitingForInput { screen }, st);
        }
        if st.kill_at.is_some_and(|at| now >= at) && !st.killed && st.status.is_none() {
            self.kill(st);
        }
    }

    /// Compares the screen with the last look; output that changes nothing visible (a cursor
    /// query, an identical redraw) does not count as activity.
    fn check_screen(&mut self, st: &mut State) {
        st.screen_dirty = false;
        let snapshot = self
            .screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .snapshot();
        if snapshot != st.last_snapshot {
            st.last_snapshot = snapshot;
            st.last_change = st.last_output;
            if st.waiting {
                st.waiting = false;
                self.emit(SliceEvent::WaitingEnded, st);
            }
        }
    }

    fn next_deadline(&self, st: &State) -> Instant {
        let limits = self.limits();
        let running = st.reason.is_none() && st.status.is_none();
        let candidates = [
            limits
                .wall
                .filter(|_| running)
                .map(|wall| self.started + wall),
            limits
                .idle
                .filter(|_| running)
                .map(|idle| st.last_output + idle),
            st.screen_dirty.then_some(st.next_screen_check),
            (!st.waiting && !st.screen_dirty && st.status.is_none())
                .then(|| st.last_change + limits.waiting_after),
            st.kill_at.filter(|_| !st.killed && st.status.is_none()),
            st.eof_deadline,
        ];
        candidates
            .into_iter()
            .flatten()
            .min()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600))
    }

    /// SIGTERM to every process group of the slice's session; SIGKILL after the grace period.
    fn begin_stop(&mut self, reason: SliceExit, st: &mut State) {
        tracing::info!(slice = %self.spec.slice_id, ?reason, "stopping slice");
        self.emit(SliceEvent::Stopping(reason.clone()), st);
        st.reason = Some(reason);
        st.kill_at = Some(Instant::now() + self.limits().grace);
        self.signal_session(Signal::SIGTERM);
    }

    fn kill(&mut self, st: &mut State) {
        st.killed = true;
        st.kill_at = Some(Instant::now());
        st.kill_flag.store(true, Ordering::Relaxed);
        self.signal_session(Signal::SIGKILL);
        // The whole slice at once, wherever its processes went.
        if let Some(cgroup) = self.spec.sandbox.cgroup.clone() {
            tokio::task::spawn_blocking(move || cgroup.kill());
        }
    }

    fn signal_session(&self, signal: Signal) {
        // Only the session here; escapees are the sweep's job once the leader is gone.
        let procs = SliceProcesses {
            session: self.guard.procs.session,
            marker: None,
        };
        let leader = self.guard.leader;
        tokio::task::spawn_blocking(move || procs.signal_all(signal, leader, &mut Seen::default()));
    }

    /// After the leader is reaped: terminate whatever of the slice remains, within what is
    /// left of the grace period when loopx is already stopping it.
    fn start_sweep(&mut self, st: &mut State) {
        let kill_at = st
            .kill_at
            .unwrap_or_else(|| Instant::now() + self.limits().grace)
            .into_std();
        let procs = self.guard.procs.clone();
        let leader = self.guard.leader;
        let flag = Arc::clone(&st.kill_flag);
        st.sweep = Some(tokio::task::spawn_blocking(move || {
            procs.sweep(leader, kill_at, &flag)
        }));
    }

    fn emit(&mut self, event: SliceEvent, st: &mut State) {
        match &self.events {
            Some(tx) if tx.is_closed() => self.drop_events(st),
            Some(_) => st.pending.push_back(event),
            None => {}
        }
    }

    /// Nobody listens: stop queueing events and stop copying output for them.
    fn drop_events(&mut self, st: &mut State) {
        self.events = None;
        st.pending.clear();
        self.want_bytes.store(false, Ordering::Relaxed);
    }

    fn screen_text(&self) -> String {
        let contents = self
            .screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .snapshot()
            .contents;
        contents.trim_end().to_owned()
    }

    async fn finish(mut self, mut st: State) {
        let summary = if st.eof {
            tokio::time::timeout(EOF_WAIT, &mut self.summary)
                .await
                .ok()
                .and_then(Result::ok)
        } else {
            tracing::warn!(slice = %self.spec.slice_id, "terminal still open after the sweep");
            None
        };
        self.ended.store(true, Ordering::SeqCst);
        self.input.close();
        self.guard.armed = false;
        // Its count of OOM kills goes with the cgroup: read it first.
        let memory_limit_hit = match self.spec.sandbox.cgroup.clone() {
            Some(cgroup) => tokio::task::spawn_blocking(move || {
                let hit = cgroup.memory_limit_hit();
                cgroup.remove();
                hit
            })
            .await
            .ok()
            .flatten(),
            None => None,
        };
        let swept = st.swept.take().unwrap_or_default();
        let status = st.status.flatten();
        let exit = self.classify(&st, status, summary.as_ref());
        let report = SliceReport {
            slice_id: self.spec.slice_id.clone(),
            pid: u32::try_from(self.guard.leader).unwrap_or_default(),
            exit: exit.clone(),
            status,
            duration: self.started.elapsed(),
            bytes_total: st.bytes,
            bytes_logged: summary.as_ref().map_or(0, |s| s.counts.bytes_logged),
            bytes_dropped: summary.as_ref().map_or(0, |s| s.counts.bytes_dropped),
            leftover_count: swept.found.len(),
            leftover_pids: to_u32(&swept.found),
            survivors: to_u32(&swept.survivors),
            waiting_for_input: st.waiting,
            text: summary.as_ref().map(|s| s.text.clone()).unwrap_or_default(),
            screen: self.screen_text(),
            log_path: self.spec.log.path.clone(),
            capture_complete: summary.is_some(),
            capture_error: summary.as_ref().and_then(CaptureSummary::error),
            memory_limit_hit,
        };
        tracing::info!(slice = %report.slice_id, exit = ?report.exit, leftovers = report.leftover_count, "slice finished");
        if let Some(tx) = &self.events {
            let _ = tx.send(SliceEvent::Exited(exit)).await;
        }
        let _ = self.report.send(report);
    }

    fn classify(
        &self,
        st: &State,
        status: Option<ChildStatus>,
        summary: Option<&CaptureSummary>,
    ) -> SliceExit {
        if let Some(reason) = &st.reason {
            return reason.clone();
        }
        let early = st
            .exited_at
            .is_some_and(|at| at.duration_since(self.started) < SPAWN_FAILURE_WINDOW);
        match status {
            Some(ChildStatus::Exited(127) | ChildStatus::Signaled(Signal::SIGABRT)) if early => {
                let last_line = summary
                    .and_then(|s| {
                        s.text
                            .lines()
                            .rev()
                            .find(|l| !l.trim().is_empty())
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                SliceExit::SpawnFailed(format!(
                    "`{}` ended with {:?} within {} ms of spawn: {last_line}",
                    self.program.display(),
                    status.expect("matched Some"),
                    SPAWN_FAILURE_WINDOW.as_millis()
                ))
            }
            Some(ChildStatus::Exited(code)) => SliceExit::Exited(code),
            Some(ChildStatus::Signaled(signal)) => SliceExit::Signaled(signal),
            // Reaped elsewhere: the status is unknown; say so rather than invent a code.
            None => SliceExit::StatusLost,
        }
    }
}

fn to_u32(pids: &std::collections::BTreeSet<i32>) -> Vec<u32> {
    pids.iter()
        .filter_map(|&pid| u32::try_from(pid).ok())
        .collect()
}
