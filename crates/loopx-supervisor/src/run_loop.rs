//! `loopx run`: every agent's loop, concurrently, until the goal is done or a limit is reached
//! (`docs/design/run-loop.md`, "Shape").
//!
//! One coordinator thread owns the schedule; each decision-and-slice ([`run_once`]) runs on a
//! worker thread of its own, so peers work at the same time. The coordinator keeps, per agent,
//! only when to decide next and what it last showed the user; everything else is re-read from
//! the kernel at every decision, so a second supervisor, a person at another terminal and the
//! agents' own `loopx report` calls all act on the same state.
//!
//! Sleeping: an agent told to `wait` sleeps until its `wake_at`; `quiet` and `ask` sleep until
//! something changes. Every committed change rings the project's doorbell
//! ([`loopx_kernel::doorbell`]), which wakes the coordinator within a moment; a periodic
//! re-check (and recovery of orphans) covers changes that ring nothing, such as a peer's lease
//! expiring. A sleeping coordinator blocks in `recv_timeout` and uses no CPU.
//!
//! Messages from workers, the doorbell and the signal handler arrive on one channel, and the
//! coordinator emits every [`RunEvent`] itself, through one queue that releases slices' starts
//! and ends in the order the kernel recorded them (`event_order.rs`): a worker that reports
//! its slice's end late does not have a peer's later start shown before it.
//!
//! The coordinator reaches the world only through a [`Host`]: its clock, starting a worker,
//! the next message, recovery. [`run_loop`] runs it on threads, a channel and the doorbell;
//! the simulation (`loopx sim`) runs the same coordinator on one thread and a virtual clock,
//! with simulated agents in place of PTY processes.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use loopx_kernel::{AgentName, GateId, Project, SharedClock, SliceId, Store, Timestamp};
use loopx_quota::{Decision, DecisionKind};

use loopx_domain::run_end::{AgentLoop, Standing};
pub use loopx_domain::run_end::{EndReason, OnGate};
pub use loopx_domain::run_event::RunEvent;

use crate::errors::SupervisorError;
use crate::event_order::{EventOrder, Owed};
use crate::once::{Once, RunOnce, Step, World};
use crate::recover::Recovered;
use crate::shutdown::Shutdown;

mod threads;
mod waits;

/// How often an agent that is quiet, asked or held until resumed decides again even when
/// nothing rang: a peer's lease may expire, and a doorbell may be unavailable.
const RECHECK: Duration = Duration::from_secs(30);
/// How often orphaned slices of dead peers are looked for while running.
pub(crate) const RECOVER_EVERY: Duration = Duration::from_secs(60);
/// How often orphans are looked for: [`RECOVER_EVERY`], or half the longest lease when that is
/// shorter, so that a dead peer's slice (on another host, judged by its lapsed lease) is
/// closed soon after its lease ends.
fn recover_every(lease_max: Duration) -> Duration {
    RECOVER_EVERY.min(lease_max / 2)
}

/// How long a store that stayed busy, or another passing error, keeps an agent waiting.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(5);

/// What to run.
#[derive(Debug, Clone)]
pub struct RunLoop {
    pub project: Project,
    /// The agents to run; empty means every registered agent.
    pub agents: Vec<String>,
    pub loopx_exe: PathBuf,
    /// Stop after this many slices (counting every agent's).
    pub max_slices: Option<u64>,
    /// Start no slice after this long; running ones finish.
    pub run_for: Option<Duration>,
    pub on_gate: OnGate,
    pub shutdown: Arc<Shutdown>,
    /// The clock and the identity the supervisor runs with.
    pub world: World,
}

/// How the loop ended.
#[derive(Debug)]
pub struct RunEnd {
    pub reason: EndReason,
    pub slices: u64,
    /// A stop found slices running, and stopped them (they are recorded `interrupted`).
    pub stopped_slices: bool,
    /// The first error that stopped an agent, for [`EndReason::Error`].
    pub error: Option<SupervisorError>,
}

/// What a worker or the outside world tells the coordinator.
#[derive(Debug)]
pub enum Msg {
    /// The decision a worker made (it may go on to run a slice), and the goal it was for.
    Decided(usize, Decision, Option<loopx_kernel::GoalId>),
    /// Worker `idx`'s slice started.
    Started(usize, RunEvent),
    /// A worker finished.
    Done(usize, Result<Once, SupervisorError>),
    /// The doorbell rang, or a stop was requested: look again.
    Wake,
    /// A round of monitor polls ended.
    Polled(Result<crate::poll::Polled, SupervisorError>),
}

impl Msg {
    /// The message worker `idx`'s step becomes, if the coordinator cares.
    pub fn from_step(idx: usize, step: &Step<'_>) -> Option<Msg> {
        threads::step_msg(idx, step)
    }
}

/// Where the coordinator's workers run and its messages come from.
pub trait Host {
    /// The supervisor's clock (the same as every worker's `RunOnce::world`).
    fn clock(&self) -> SharedClock;
    /// Starts a worker for agent `idx`: its messages, and at last its [`Msg::Done`], arrive
    /// through [`Host::next`]. An error: no worker could be started.
    fn start(&mut self, idx: usize, once: RunOnce) -> Result<(), String>;
    /// The next message, waiting for it at most `timeout`.
    fn next(&mut self, timeout: Duration) -> Option<Msg>;
    /// Closes orphaned slices of dead supervisors.
    fn recover(
        &mut self,
        project: &Project,
        world: &World,
    ) -> Result<Vec<Recovered>, SupervisorError>;
    /// A random number in `range`, to spread peers apart.
    fn random(&mut self, range: Range<u64>) -> u64;
    /// Housekeeping between messages.
    fn tidy(&mut self) {}
    /// Starts a round of monitor polls, whose [`Msg::Polled`] arrives through [`Host::next`];
    /// `false`: this host polls nothing (the simulation has no checks to run).
    fn start_polls(&mut self, job: crate::poll::PollJob) -> bool {
        let _ = job;
        false
    }
}

/// What the coordinator knows of one agent.
#[derive(Debug)]
struct Slot {
    name: AgentName,
    busy: bool,
    /// When to decide next (on the clock's monotonic time); `None`: when something changes.
    due: Option<Duration>,
    /// The last decision, for `--on-gate exit`.
    last: Option<DecisionKind>,
    /// Paused (so the next slice is announced as a resume).
    paused: bool,
    /// Its last attempt failed with an error a person may have to fix (a broken profile):
    /// for `--on-gate exit` it cannot go on by itself either.
    erring: bool,
    /// What was last shown for it, so a repeated decision is not shown again.
    shown: Option<String>,
    /// The agent's loop ended, and why.
    ended: Option<String>,
    /// The doorbell rang while it was deciding or running: what it decided may have been read
    /// before that change, so it decides again at once.
    rung: bool,
    /// The slice its worker runs (its start came, its end has not).
    running: Option<SliceId>,
    /// Its newest slice this run heard of.
    last_slice: Option<SliceId>,
}

/// Runs every agent until the goal is done, a limit is reached, or a stop is requested.
pub fn run_loop(req: &RunLoop, emit: &mut dyn FnMut(&RunEvent)) -> Result<RunEnd, SupervisorError> {
    let names = agent_names(req)?;
    // macOS has no subreaper (launchd reaps orphans there): nothing to warn about.
    if let Err(e) = loopx_pty::become_child_subreaper()
        && e.kind() != std::io::ErrorKind::Unsupported
    {
        tracing::warn!(error = %e, "cannot become a child subreaper; orphans go to init");
    }
    let mut host = threads::Threads::start(req);
    let end = run_loop_on(req, names, &mut host, emit);
    host.bell.stop(&req.project);
    end
}

/// Runs the loop's coordinator for the agents `names` on `host`.
pub fn run_loop_on(
    req: &RunLoop,
    names: Vec<AgentName>,
    host: &mut dyn Host,
    emit: &mut dyn FnMut(&RunEvent),
) -> Result<RunEnd, SupervisorError> {
    emit(&RunEvent::Running {
        agents: names.clone(),
        pid: req.world.me.pid,
    });
    let clock = host.clock();
    let now = clock.monotonic();
    let mut coordinator = Coordinator {
        req,
        host,
        clock,
        slots: names
            .into_iter()
            .map(|name| Slot {
                name,
                busy: false,
                due: Some(now),
                last: None,
                paused: false,
                erring: false,
                shown: None,
                ended: None,
                rung: false,
                running: None,
                last_slice: None,
            })
            .collect(),
        slices: 0,
        asked: BTreeSet::new(),
        started: now,
        first_error: None,
        recover_at: None,
        unrecorded: BTreeSet::new(),
        interrupted: false,
        poller: crate::poll::Poller::new(now),
        time_up: Arc::new(AtomicBool::new(false)),
        waits: waits::Waits::default(),
    };
    coordinator.recover(emit);
    coordinator.run(emit)
}

/// The agents to run: the named ones (each must exist), or every registered one.
fn agent_names(req: &RunLoop) -> Result<Vec<AgentName>, SupervisorError> {
    let registered: Vec<AgentName> = Store::open_read(&req.project)?
        .read(|s| s.agents())?
        .into_iter()
        .map(|a| a.name)
        .collect();
    if req.agents.is_empty() {
        if registered.is_empty() {
            return Err(loopx_domain::agent::AgentError::NoAgent.into());
        }
        return Ok(registered);
    }
    let mut names = Vec::new();
    for name in &req.agents {
        let Some(known) = registered.iter().find(|r| r.as_str() == name) else {
            return Err(
                loopx_domain::agent::AgentError::UnknownAgent { name: name.clone() }.into(),
            );
        };
        if !names.contains(known) {
            names.push(known.clone());
        }
    }
    Ok(names)
}

struct Coordinator<'r> {
    req: &'r RunLoop,
    host: &'r mut dyn Host,
    clock: SharedClock,
    slots: Vec<Slot>,
    /// Slices run so far.
    slices: u64,
    /// Gates whose question was shown.
    asked: BTreeSet<GateId>,
    started: Duration,
    first_error: Option<SupervisorError>,
    /// A slice of this process could not be recorded as ended: recover it at this moment
    /// instead of waiting for the minute.
    recover_at: Option<Duration>,
    /// Slices of this process whose end could not be recorded, until the store shows them
    /// ended: recovery is tried again every few seconds until then (a try can fail, or find
    /// the store still busy, on a loaded machine), not once and then a minute later.
    unrecorded: BTreeSet<String>,
    /// A stop ended a slice of this run (`interrupted`): the run was interrupted, not only
    /// stopped while it waited. A worker that was deciding when the stop came is not one.
    interrupted: bool,
    /// When monitors are polled next.
    poller: crate::poll::Poller,
    /// Set once `--for` ran out: a round of polls under way stops.
    time_up: Arc<AtomicBool>,
    /// What each agent was last recorded waiting on.
    waits: waits::Waits,
}

impl Coordinator<'_> {
    fn run(&mut self, emit: &mut dyn FnMut(&RunEvent)) -> Result<RunEnd, SupervisorError> {
        let mut announced_stop = false;
        let mut announced_kill = false;
        let mut last_recovery = self.clock.monotonic();
        let mut order = EventOrder::after_log(&self.req.world.stores, &self.req.project);
        loop {
            let now = self.clock.monotonic();
            let stopping = self.req.shutdown.requested();
            if stopping && !announced_stop {
                announced_stop = true;
                order.push(&RunEvent::Stopping {
                    reason: self.req.shutdown.reason().unwrap_or_default(),
                    at_once: false,
                });
            }
            // A second signal: the person must see that the running slices are killed.
            if self.req.shutdown.level() == crate::shutdown::Stopping::Now && !announced_kill {
                announced_kill = true;
                order.push(&RunEvent::Stopping {
                    reason: format!("{} again", self.req.shutdown.reason().unwrap_or_default()),
                    at_once: true,
                });
            }
            let out_of_time = self.req.run_for.is_some_and(|d| now >= self.started + d);
            if out_of_time {
                self.time_up.store(true, Ordering::Relaxed);
            }
            let busy = self.slots.iter().filter(|s| s.busy).count() as u64;
            let budget_spent = self
                .req
                .max_slices
                .is_some_and(|max| self.slices + busy >= max);
            if !stopping && !out_of_time && !budget_spent {
                self.start_due(now);
            }
            if !stopping && !out_of_time && self.poller.is_due(now) {
                self.start_polls(now);
            }
            if self.slots.iter().all(|s| !s.busy)
                && !self.poller.busy
                && let Some((reason, detail)) = self.end(stopping, out_of_time)
            {
                let ended = format!("loopx run ended: {detail}");
                order.push(&RunEvent::Finished {
                    reason,
                    slices: self.slices,
                    detail,
                });
                // No worker is busy: nothing is owed, and everything is released.
                self.release(&mut order, emit);
                order.release_all(emit);
                self.waits.stopped(
                    (&self.req.world.stores, &self.req.project),
                    self.slots.iter().map(|s| &s.name),
                    &ended,
                    self.clock.now(),
                );
                return Ok(RunEnd {
                    reason,
                    slices: self.slices,
                    stopped_slices: self.interrupted,
                    error: self.first_error.take(),
                });
            }
            self.release(&mut order, emit);
            let timeout = self.sleep_for(now, stopping || out_of_time || budget_spent);
            if let Some(msg) = self.host.next(timeout) {
                self.handle(msg, &mut |e| order.push(e));
                while let Some(msg) = self.host.next(Duration::ZERO) {
                    self.handle(msg, &mut |e| order.push(e));
                }
            }
            let now = self.clock.monotonic();
            let recovery_due = self.recover_at.is_some_and(|at| at <= now);
            let every = recover_every(self.req.world.lease_max);
            if (now.saturating_sub(last_recovery) >= every || recovery_due) && !stopping {
                last_recovery = now;
                self.recover_at = None;
                self.recover(&mut |e| order.push(e));
            }
            self.release(&mut order, emit);
            self.host.tidy();
        }
    }

    /// Emits the queued events that may be shown now, in the kernel's order
    /// (`event_order.rs`). With one agent its worker's messages come in their own order.
    fn release(&self, order: &mut EventOrder, emit: &mut dyn FnMut(&RunEvent)) {
        if self.slots.len() < 2 {
            return order.release_all(emit);
        }
        let owed: Vec<Owed> = self
            .slots
            .iter()
            .filter(|s| s.busy)
            .map(|s| match s.running {
                Some(slice) => Owed::End(slice),
                None => Owed::Start {
                    agent: s.name.clone(),
                    after: s.last_slice,
                },
            })
            .collect();
        order.release_in(&owed, &self.req.world.stores, &self.req.project, emit);
    }

    /// Starts a worker for every idle agent whose time has come.
    fn start_due(&mut self, now: Duration) {
        let budget = self.req.max_slices.map(|max| {
            let busy = self.slots.iter().filter(|s| s.busy).count() as u64;
            max.saturating_sub(self.slices + busy)
        });
        let mut left = budget.unwrap_or(u64::MAX);
        for (idx, slot) in self.slots.iter_mut().enumerate() {
            if left == 0 {
                break;
            }
            if slot.busy || slot.ended.is_some() || slot.due.is_none_or(|due| due > now) {
                continue;
            }
            slot.busy = true;
            left -= 1;
            let once = RunOnce {
                project: self.req.project.clone(),
                agent: Some(slot.name.to_string()),
                loopx_exe: self.req.loopx_exe.clone(),
                shutdown: Arc::clone(&self.req.shutdown),
                world: self.req.world.clone(),
            };
            if let Err(e) = self.host.start(idx, once) {
                tracing::error!(error = %e, "cannot start a worker thread");
                slot.busy = false;
                slot.due = Some(now + RETRY_AFTER_ERROR);
            }
        }
    }

    /// Starts a round of monitor polls (checks run by loopx, no agent, no quota).
    fn start_polls(&mut self, now: Duration) {
        let job = crate::poll::PollJob {
            project: self.req.project.clone(),
            world: self.req.world.clone(),
            loopx_exe: self.req.loopx_exe.clone(),
            shutdown: Arc::clone(&self.req.shutdown),
            time_up: Arc::clone(&self.time_up),
        };
        if self.host.start_polls(job) {
            self.poller.busy = true;
        } else {
            self.poller.due = None;
        }
        let _ = now;
    }

    /// Whether the loop is over, once no worker runs (`loopx_domain::run_end`'s rule).
    fn end(&self, stopping: bool, out_of_time: bool) -> Option<(EndReason, String)> {
        let standing = Standing {
            stopping: stopping.then(|| self.req.shutdown.reason().unwrap_or_default()),
            agents: (self.slots.iter())
                .map(|s| AgentLoop {
                    ended: s.ended.as_deref(),
                    erring: s.erring,
                    last: s.last,
                })
                .collect(),
            errored: self.first_error.is_some(),
            out_of_time,
            slices: self.slices,
            max_slices: self.req.max_slices,
            on_gate: self.req.on_gate,
        };
        standing.end()
    }

    /// How long to block for the next message.
    fn sleep_for(&self, now: Duration, draining: bool) -> Duration {
        let every = recover_every(self.req.world.lease_max);
        if draining {
            // Only workers' ends matter now, and the recovery of a slice whose end could not
            // be recorded; the ends arrive as messages.
            return self
                .recover_at
                .map_or(every, |at| at.saturating_sub(now).min(every));
        }
        let mut until = now + every;
        for slot in self.slots.iter().filter(|s| !s.busy && s.ended.is_none()) {
            if let Some(due) = slot.due {
                until = until.min(due);
            }
        }
        if let Some(run_for) = self.req.run_for {
            until = until.min(self.started + run_for);
        }
        if let Some(at) = self.recover_at {
            until = until.min(at);
        }
        if let Some(due) = self.poller.due.filter(|_| !self.poller.busy) {
            until = until.min(due);
        }
        until.saturating_sub(now)
    }

    fn handle(&mut self, msg: Msg, emit: &mut dyn FnMut(&RunEvent)) {
        match msg {
            Msg::Wake => {
                let now = self.clock.monotonic();
                self.poller.rung(now);
                for slot in &mut self.slots {
                    if slot.busy {
                        slot.rung = true;
                    } else {
                        slot.due = Some(now);
                    }
                }
            }
            Msg::Decided(idx, decision, goal) => {
                let slot = &mut self.slots[idx];
                self.waits.decided(
                    (&self.req.world.stores, &self.req.project),
                    &slot.name,
                    (&decision, goal),
                    self.clock.now(),
                );
                // Any decision but `wait` ends a pause: the hold or the window is over.
                if decision.kind() != DecisionKind::Wait && slot.paused {
                    slot.paused = false;
                    slot.shown = None;
                    emit(&RunEvent::Resumed {
                        agent: slot.name.clone(),
                    });
                }
            }
            Msg::Started(idx, event) => {
                if let RunEvent::SliceStarted { slice, .. } = &event {
                    let slot = &mut self.slots[idx];
                    slot.running = Some(*slice);
                    slot.last_slice = Some(*slice);
                }
                emit(&event);
            }
            Msg::Done(idx, result) => self.done(idx, result, emit),
            Msg::Polled(result) => {
                let clock = (self.clock.monotonic(), self.clock.now());
                let next = match result {
                    Ok(polled) => {
                        for poll in polled.polls {
                            emit(&RunEvent::Polled(poll));
                        }
                        polled.next_due
                    }
                    Err(e) => {
                        tracing::warn!(error = %crate::errors::chain(&e), "polling monitors failed; trying again later");
                        let wall = clock.1;
                        Some(Timestamp(wall.0 + RETRY_AFTER_ERROR.as_millis() as u64))
                    }
                };
                self.poller.finished(next, clock, RECHECK);
            }
        }
    }

    fn done(
        &mut self,
        idx: usize,
        result: Result<Once, SupervisorError>,
        emit: &mut dyn FnMut(&RunEvent),
    ) {
        let now = self.clock.monotonic();
        let wall = self.clock.now();
        let slot = &mut self.slots[idx];
        slot.busy = false;
        slot.erring = false;
        slot.running = None;
        let rung = std::mem::take(&mut slot.rung);
        let agent = slot.name.clone();
        match result {
            Ok(Once::Ran { decision, slice }) => {
                self.slices += 1;
                self.interrupted |= slice.outcome == loopx_adapters::Outcome::Interrupted
                    && self.req.shutdown.requested();
                slot.last = Some(decision.kind());
                slot.due = Some(now);
                slot.shown = None;
                let disk_full = slice
                    .disk_full
                    .clone()
                    .map(|why| SupervisorError::DiskFull {
                        slice: slice.id.to_string(),
                        why,
                    });
                emit(&RunEvent::SliceEnded(slice));
                // Every slice after it would fail the same way: the agent stops, and the run
                // ends with the error.
                if let Some(e) = disk_full {
                    self.failed(idx, e, emit);
                }
            }
            Ok(Once::Contended { why, .. }) => {
                tracing::debug!(%agent, why, "a peer got there first; deciding again");
                slot.due = Some(now + Duration::from_millis(self.host.random(50..250)));
            }
            Ok(Once::Refused { until, reason, .. }) => {
                slot.last = Some(DecisionKind::Wait);
                pause(slot, (now, wall), until, reason, emit);
            }
            Ok(Once::Decided { decision, .. }) => {
                self.decided(idx, decision, emit);
                // A ring while it decided (a hold, a gate, a todo): the decision may not have
                // seen it. Without this, an agent decided `quiet` on the old state slept until
                // the next ring.
                let slot = &mut self.slots[idx];
                if rung && slot.ended.is_none() {
                    slot.due = Some(now);
                }
            }
            // The loop is stopping: nothing more for this agent.
            Ok(Once::Stopped { .. }) => {}
            Err(e) => self.failed(idx, e, emit),
        }
    }

    fn decided(&mut self, idx: usize, decision: Decision, emit: &mut dyn FnMut(&RunEvent)) {
        let now = self.clock.monotonic();
        let wall = self.clock.now();
        let slot = &mut self.slots[idx];
        slot.last = Some(decision.kind());
        let agent = slot.name.clone();
        match decision.kind() {
            DecisionKind::Stop => {
                slot.ended = Some(decision.reason().to_owned());
                emit(&RunEvent::AgentStopped {
                    agent,
                    reason: decision.reason().to_owned(),
                });
            }
            DecisionKind::Wait => {
                let until = decision.wake_at().map(Timestamp);
                pause(slot, (now, wall), until, decision.reason().to_owned(), emit);
            }
            DecisionKind::Ask => {
                slot.due = Some(now + RECHECK);
                if let Some((gate, question)) = decision.gate()
                    && self.asked.insert(gate)
                {
                    let options = gate_options(&self.req.project, gate);
                    emit(&RunEvent::Question {
                        agent,
                        answer_with: loopx_kernel::model::answer_command(
                            &gate.to_string(),
                            &options,
                        ),
                        gate,
                        question: question.to_owned(),
                        options,
                    });
                }
            }
            DecisionKind::Quiet => {
                slot.due = Some(now + RECHECK);
                // Shown when the agent becomes quiet, not each time the reason changes (which
                // it does as peers take and finish todos).
                if slot.shown.as_deref() != Some("quiet") {
                    slot.shown = Some("quiet".to_owned());
                    emit(&RunEvent::Quiet {
                        agent,
                        reason: decision.reason().to_owned(),
                    });
                }
            }
            // `run_once` runs these; deciding them again at once is right if it did not.
            DecisionKind::Deliver | DecisionKind::Repair => slot.due = Some(now),
        }
    }

    fn failed(&mut self, idx: usize, e: SupervisorError, emit: &mut dyn FnMut(&RunEvent)) {
        let agent = self.slots[idx].name.clone();
        let error = crate::errors::chain(&e);
        let lasting = e.is_lasting();
        if let SupervisorError::Unrecorded { slice, .. } = &e {
            self.unrecorded.insert(slice.clone());
            self.recover_at = Some(self.clock.monotonic() + RETRY_AFTER_ERROR);
        }
        let slot = &mut self.slots[idx];
        slot.erring = e.needs_a_person();
        // A passing error that repeats every few seconds is shown once.
        let key = format!("error:{error}");
        if slot.shown.as_deref() != Some(key.as_str()) {
            slot.shown = Some(key);
            emit(&RunEvent::AgentError {
                agent: agent.clone(),
                error: error.clone(),
            });
        }
        if lasting {
            slot.ended = Some(format!("{agent} cannot run: {error}"));
            emit(&RunEvent::AgentStopped {
                agent,
                reason: format!("cannot run: {error}"),
            });
            if self.first_error.is_none() {
                self.first_error = Some(e);
            }
        } else {
            slot.due = Some(self.clock.monotonic() + RETRY_AFTER_ERROR);
        }
    }

    /// Closes orphaned slices of dead supervisors.
    fn recover(&mut self, emit: &mut dyn FnMut(&RunEvent)) {
        match self.host.recover(&self.req.project, &self.req.world) {
            Ok(recovered) => {
                for r in recovered {
                    self.unrecorded.remove(&r.slice);
                    emit(&RunEvent::Recovered(r));
                }
            }
            Err(e) => tracing::warn!(error = %e, "recovery of orphaned slices failed"),
        }
        if self.unrecorded.is_empty() {
            return;
        }
        // Ended meanwhile (a peer's recovery closed it): nothing left to do for it.
        let running: Option<BTreeSet<String>> = Store::open_read(&self.req.project)
            .and_then(|store| store.read(|s| s.running_slices()))
            .ok()
            .map(|slices| slices.iter().map(|s| s.id.to_string()).collect());
        if let Some(running) = running {
            self.unrecorded.retain(|slice| running.contains(slice));
        }
        if !self.unrecorded.is_empty() {
            self.recover_at = Some(self.clock.monotonic() + RETRY_AFTER_ERROR);
        }
    }
}

/// Marks the agent paused until `until` and shows it once; `now` on the monotonic and the wall
/// clock.
fn pause(
    slot: &mut Slot,
    (now, wall): (Duration, Timestamp),
    until: Option<Timestamp>,
    reason: String,
    emit: &mut dyn FnMut(&RunEvent),
) {
    // At most a re-check away: `Instant` stands still while the machine sleeps, so a long wait
    // measured on it would outlast a reset that passed on the wall clock meanwhile. Deciding
    // again reads the wall clock; a pause that still holds is not shown twice.
    slot.due = Some(match until {
        Some(until) => {
            let wait = Duration::from_millis(until.0.saturating_sub(wall.0));
            now + wait.min(RECHECK)
        }
        None => now + RECHECK,
    });
    slot.paused = true;
    let key = format!("wait:{until:?}");
    if slot.shown.as_deref() != Some(key.as_str()) {
        slot.shown = Some(key);
        emit(&RunEvent::Paused {
            agent: slot.name.clone(),
            until,
            reason,
        });
    }
}

/// A gate's options, for showing its question.
fn gate_options(project: &Project, gate: GateId) -> Vec<String> {
    Store::open_read(project)
        .and_then(|s| s.read(|s| s.gate(gate)))
        .ok()
        .flatten()
        .map(|g| g.options)
        .unwrap_or_default()
}
