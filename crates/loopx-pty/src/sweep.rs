//! Stopping every process of a slice and proving none is left.
//!
//! See `docs/design/termination.md`. A slice's processes are (1) every process whose session
//! is the slice's (the leader is a session leader, so its pid is the session id), which covers
//! job-control shells with several process groups and `nohup`'d grandchildren, and (2) every
//! process whose environment carries `LOOPX_SLICE=<id>`, which covers `setsid` escapees, plus
//! the sessions such escapees lead.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getsid};

use loopx_os::Process as ProcStat;

/// How often the sweep looks again while waiting for processes to exit.
const POLL: Duration = Duration::from_millis(20);
/// How long after SIGKILL the sweep keeps looking before it reports survivors (processes in
/// uninterruptible sleep die only when their I/O returns).
const KILL_WAIT: Duration = Duration::from_secs(3);

/// Makes this process adopt orphaned descendants (Linux's `PR_SET_CHILD_SUBREAPER`; macOS has
/// none, and says so with an error of kind `Unsupported`: there launchd reaps them).
///
/// Without it, a slice's orphaned grandchildren are re-parented to PID 1, and where PID 1 does
/// not reap (some containers and VMs) every swept process stays a zombie forever. With it they
/// become loopx's children and the sweep reaps them. Call once at supervisor start-up.
pub fn become_child_subreaper() -> std::io::Result<()> {
    loopx_os::adopt_orphans()
}

/// What [`stop_orphaned_slice`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanSweep {
    /// Every process of the slice it found alive (and stopped).
    pub found: Vec<u32>,
    /// Processes still alive after SIGKILL (uninterruptible I/O). Normally empty.
    pub survivors: Vec<u32>,
}

/// Stops what is left of a slice whose supervisor died: every process carrying the slice's
/// marker, and the session `session` leads. Pass `session` only when its leader was identified
/// as the slice's agent by pid *and* start time *and* boot id: a bare pid may have been reused by
/// an unrelated program since. SIGTERM, up to `grace` for them to exit, then SIGKILL.
pub fn stop_orphaned_slice(
    session: Option<u32>,
    slice: &crate::SliceId,
    grace: std::time::Duration,
) -> OrphanSweep {
    // No process has a negative session id: -1 matches nothing.
    let session = session.and_then(|s| i32::try_from(s).ok()).unwrap_or(-1);
    let procs = SliceProcesses::of_slice(session, slice);
    let outcome = procs.sweep(-1, Instant::now() + grace, &AtomicBool::new(false));
    let pids = |set: BTreeSet<i32>| {
        set.into_iter()
            .filter_map(|p| u32::try_from(p).ok())
            .collect()
    };
    OrphanSweep {
        found: pids(outcome.found),
        survivors: pids(outcome.survivors),
    }
}

/// Which processes belong to a slice.
#[derive(Debug, Clone)]
pub(crate) struct SliceProcesses {
    /// The session leader's pid: the slice's session id.
    pub(crate) session: i32,
    /// `LOOPX_SLICE=<id>` as bytes, or `None` to look at the session only.
    pub(crate) marker: Option<Vec<u8>>,
}

/// What a sweep found.
#[derive(Debug, Clone, Default)]
pub(crate) struct SweepOutcome {
    /// Every live process of the slice the sweep saw (and signalled).
    pub(crate) found: BTreeSet<i32>,
    /// Processes still alive when the sweep gave up after SIGKILL.
    pub(crate) survivors: BTreeSet<i32>,
}

impl SliceProcesses {
    /// The processes of `slice`: the session `session` leads, and any that carry the slice's
    /// marker in their environment (they left the session).
    pub(crate) fn of_slice(session: i32, slice: &crate::SliceId) -> Self {
        let marker = format!("{}={slice}", crate::SLICE_MARKER_VAR).into_bytes();
        SliceProcesses {
            session,
            marker: Some(marker),
        }
    }

    /// The live processes of the slice, never loopx itself, its process group, or PID 1.
    /// Zombies among them that are loopx's children (other than `leader`, which the waiter
    /// thread reaps) are reaped on the way. `seen` carries what earlier scans of the same sweep
    /// found: a killed escapee's environment is unreadable, yet its session and its zombie
    /// are still the slice's.
    pub(crate) fn scan(&self, leader: i32, seen: &mut Seen) -> Targets {
        let stats = loopx_os::processes();
        let me = getpid().as_raw();
        let own_group = getpgrp().as_raw();
        let own_session = getsid(None).map_or(-1, Pid::as_raw);
        let marked: BTreeSet<i32> = match &self.marker {
            Some(marker) => stats
                .iter()
                .filter(|s| !s.dead && s.pid != me && loopx_os::environ_has(s.pid, marker))
                .map(|s| s.pid)
                .collect(),
            None => BTreeSet::new(),
        };
        // A marked process that leads its own session escaped with `setsid`; everything it
        // started in that session is the slice's too, marked or not.
        let mut sessions: BTreeSet<i32> = stats
            .iter()
            .filter(|s| marked.contains(&s.pid) && s.session == s.pid)
            .map(|s| s.session)
            .collect();
        sessions.insert(self.session);
        sessions.extend(&seen.sessions);
        sessions.remove(&own_session);
        seen.sessions.clone_from(&sessions);
        let safe = |s: &ProcStat| s.pid != me && s.pid > 1 && s.pgrp != own_group;
        let belongs =
            |s: &ProcStat| (sessions.contains(&s.session) || marked.contains(&s.pid)) && safe(s);
        let was_seen = |s: &ProcStat| seen.pids.contains(&s.pid) && safe(s);
        for stat in stats
            .iter()
            .filter(|s| s.dead && (belongs(s) || was_seen(s)))
        {
            if stat.ppid == me && stat.pid != leader && !crate::children::is_owned(stat.pid) {
                // Non-blocking, by pid: never steals another child's status.
                let _ = waitpid(Pid::from_raw(stat.pid), Some(WaitPidFlag::WNOHANG));
            }
        }
        let procs: Vec<ProcStat> = stats
            .into_iter()
            .filter(|s| !s.dead && belongs(s))
            .collect();
        seen.pids.extend(procs.iter().map(|s| s.pid));
        Targets { procs, sessions }
    }

    /// Sends `signal` to every process of the slice: to each process group in the slice's
    /// sessions (atomic against forks within a group) and to each process by pid. Returns the
    /// processes signalled.
    pub(crate) fn signal_all(&self, signal: Signal, leader: i32, seen: &mut Seen) -> Targets {
        let targets = self.scan(leader, seen);
        targets.signal(signal);
        targets
    }

    /// Terminates whatever of the slice is still running: SIGTERM, up to `kill_at` for them to
    /// exit, then SIGKILL, re-scanning throughout so that processes forked meanwhile are caught.
    /// `kill_now` turns the wait into an immediate SIGKILL (a second stop request).
    pub(crate) fn sweep(
        &self,
        leader: i32,
        kill_at: Instant,
        kill_now: &AtomicBool,
    ) -> SweepOutcome {
        let mut outcome = SweepOutcome::default();
        let mut termed = BTreeSet::new();
        let mut seen = Seen::default();
        loop {
            let targets = self.scan(leader, &mut seen);
            if targets.procs.is_empty() {
                return outcome;
            }
            outcome.found.extend(targets.procs.iter().map(|s| s.pid));
            let now = Instant::now();
            if now >= kill_at + KILL_WAIT {
                outcome.survivors = targets.procs.iter().map(|s| s.pid).collect();
                tracing::warn!(survivors = ?outcome.survivors, "slice processes survived SIGKILL");
                return outcome;
            }
            if now >= kill_at || kill_now.load(Ordering::Relaxed) {
                targets.signal(Signal::SIGKILL);
            } else {
                // Only newcomers get SIGTERM: repeating it would restart some programs' own
                // shutdown sequences.
                let fresh = Targets {
                    procs: targets
                        .procs
                        .into_iter()
                        .filter(|s| termed.insert(s.pid))
                        .collect(),
                    sessions: targets.sessions,
                };
                fresh.signal(Signal::SIGTERM);
            }
            std::thread::sleep(POLL);
        }
    }

    /// SIGKILL everything now, a few rounds to catch forks; for `Drop`, where nothing may wait.
    pub(crate) fn kill_now(&self, leader: i32) {
        let mut seen = Seen::default();
        for _ in 0..3 {
            if self
                .signal_all(Signal::SIGKILL, leader, &mut seen)
                .procs
                .is_empty()
            {
                return;
            }
        }
    }
}

/// What earlier scans of one sweep found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    sessions: BTreeSet<i32>,
    pids: BTreeSet<i32>,
}

/// The live processes of a slice at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Targets {
    pub(crate) procs: Vec<ProcStat>,
    /// The slice's sessions: their process groups belong wholly to the slice.
    pub(crate) sessions: BTreeSet<i32>,
}

impl Targets {
    /// Signals each process group inside the slice's sessions (atomic against forks within a
    /// group), then each process by pid (marked processes in foreign sessions, whose groups
    /// may hold processes that are not the slice's).
    pub(crate) fn signal(&self, signal: Signal) {
        let groups: BTreeSet<i32> = self
            .procs
            .iter()
            .filter(|s| self.sessions.contains(&s.session) && s.pgrp > 1)
            .map(|s| s.pgrp)
            .collect();
        for group in groups {
            // ESRCH (the group emptied meanwhile) is the desired outcome.
            let _ = killpg(Pid::from_raw(group), signal);
        }
        for target in &self.procs {
            let _ = kill(Pid::from_raw(target.pid), signal);
        }
        tracing::debug!(
            ?signal,
            count = self.procs.len(),
            "signalled slice processes"
        );
    }
}
