//! Polling monitors: the checks loopx runs itself, with no agent and no quota
//! (`docs/monitors.md`). What is due, what a check may do and what its result means are
//! `loopx_domain::monitor`'s rules; this runs them.
//!
//! [`poll_due`] reads the current goal's monitors, and for each one due: claims its poll
//! (`Op::PollClaim`, so two supervisors never run one check at once; an expired monitor asks a
//! person instead), runs the check ([`run_check`]) and records what it saw (`Op::PollRecord`,
//! which also finishes a met monitor and asks about one failing). It returns when the next
//! poll is due, which the run loop sleeps until.
//!
//! A check runs in the same containment as a read-only slice: a PTY in a room of its own, the
//! slice sandbox at `read-only` (its temp dir writable, `.loopx/` hidden), the resource limits,
//! its whole process tree stopped at the end, under the time limit and output cap its plan
//! ([`monitor::plan`]) gives it.

use std::path::Path;
use std::time::Duration;

use loopx_domain::monitor::{self, CHECK_OUTPUT_CAP};
pub use loopx_domain::monitor::{CheckRun, PollSummary, Polled};
use loopx_kernel::model::{Monitor, Todo};
use loopx_kernel::{KernelError, Project, Timestamp};
use loopx_pty::{LaunchSpec, SliceEvent};

use crate::errors::SupervisorError;
use crate::once::World;
use crate::shutdown::Shutdown;
use crate::slice::{ACTOR, Room, contain, slice_redactor};

/// Whether the round should stop (loopx is stopping, or the run's time is up): no more polls,
/// and the running check is stopped.
pub type Stopped<'s> = dyn Fn() -> bool + 's;

/// Runs one monitor's check: the todo, its monitor, the time limit.
pub type CheckRunner<'r> = dyn FnMut(&Todo, &Monitor, Duration) -> CheckRun + 'r;

/// Polls every due monitor of the current goal, one after another, running each check
/// contained ([`run_check`]).
pub fn poll_due(
    project: &Project,
    world: &World,
    loopx_exe: &Path,
    stopped: &Stopped<'_>,
) -> Result<Polled, SupervisorError> {
    poll_due_with(project, world, stopped, &mut |todo, monitor, limit| {
        run_check(project, world, loopx_exe, todo, monitor, limit, stopped)
    })
}

/// [`poll_due`] with another way to run a check (the simulation's, which runs no process).
pub fn poll_due_with(
    project: &Project,
    world: &World,
    stopped: &Stopped<'_>,
    check: &mut CheckRunner<'_>,
) -> Result<Polled, SupervisorError> {
    let due = monitor::due(read_monitors(project, world)?, world.clock.now());
    let mut polled = Polled::default();
    let mut agents_took = Duration::ZERO;
    for todo in due {
        if stopped() {
            break;
        }
        // A person's monitors first, then the agents' checks in a share of the round.
        let agents = monitor::by_an_agent(&todo);
        if agents && agents_took >= monitor::AGENT_SHARE_OF_A_ROUND {
            break;
        }
        let started = world.clock.monotonic();
        if let Some(summary) = poll_one(project, world, check, &todo)? {
            polled.polls.push(summary);
        }
        if agents {
            agents_took += world.clock.monotonic().saturating_sub(started);
        }
    }
    polled.next_due = monitor::next_due(&read_monitors(project, world)?);
    Ok(polled)
}

/// The current goal's monitors that may be polled.
fn read_monitors(project: &Project, world: &World) -> Result<Vec<Todo>, SupervisorError> {
    let read = world
        .stores
        .with(project, |store| store.read(monitor::monitors));
    Ok(read?)
}

/// Claims, runs and records one poll; `None` when a peer got there first, or a person answered
/// or finished it meanwhile.
fn poll_one(
    project: &Project,
    world: &World,
    run: &mut CheckRunner<'_>,
    todo: &Todo,
) -> Result<Option<PollSummary>, SupervisorError> {
    let Some(monitor) = &todo.monitor else {
        return Ok(None);
    };
    let limit = monitor::check_limit(todo, monitor);
    let claim = monitor::claim(todo, limit);
    let claimed = world
        .stores
        .with(project, |store| store.run(claim, ACTOR, world.clock.now()));
    let Some(claimed) = unless_moved_on(claimed)? else {
        return Ok(None);
    };
    let Some(m) = &claimed.monitor else {
        return Ok(None);
    };
    if let Some(gate) = m.asked {
        return Ok(Some(PollSummary::asked(&claimed, gate)));
    }
    let root = project.root();
    let (check, changed) = monitor::pinned(root, &m.pins, || run(&claimed, m, limit));
    let record = monitor::record(root, &claimed, &check, changed);
    let recorded = world
        .stores
        .with(project, |store| store.run(record, ACTOR, world.clock.now()));
    // The claim may have lapsed meanwhile (a long stall of this process).
    let after = unless_moved_on(recorded)?;
    Ok(after.map(|after| PollSummary::recorded(&after, check.exit)))
}

/// The monitor as a poll's claim or record left it; `None` when it moved on first (a peer
/// polls it, it was finished, or a person answered meanwhile): nothing to do here.
fn unless_moved_on(written: Result<Todo, KernelError>) -> Result<Option<Todo>, SupervisorError> {
    match written {
        Ok(todo) => Ok(Some(todo)),
        Err(KernelError::Invalid(_) | KernelError::Conflict(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Runs `monitor`'s check of `todo` once, contained, on the supervisor's runtime; never fails:
/// what went wrong is a failed poll, with why.
pub fn run_check(
    project: &Project,
    world: &World,
    loopx_exe: &Path,
    todo: &Todo,
    monitor: &Monitor,
    limit: Duration,
    stopped: &Stopped<'_>,
) -> CheckRun {
    let read_agent = |name: &str| {
        world
            .stores
            .with(project, |store| store.read(|s| s.agent(name)))
    };
    let plan = match monitor::plan(project, todo, monitor, limit, read_agent) {
        Ok(plan) => plan,
        Err(why) => return CheckRun::failed(why),
    };
    // Unique on the machine: the todo, its claim, and the project (rooms are per user).
    let project_marker =
        loopx_kernel::marker::slice_marker(project.root(), loopx_kernel::SliceId(0));
    let digest = project_marker.split_once('.').map_or("", |(_, d)| d);
    let marker = format!("poll-{}-e{}.{digest}", todo.id, todo.epoch);
    let room = match Room::create(&marker) {
        Ok(room) => room,
        Err(e) => {
            return CheckRun::failed(format!("cannot make the check's private directory: {e}"));
        }
    };
    let Ok(slice_id) = loopx_pty::SliceId::new(marker.clone()) else {
        return CheckRun::failed(format!("`{marker}` is not a valid marker"));
    };
    let mut spec = LaunchSpec::new(
        slice_id,
        &plan.program,
        &plan.workdir,
        room.dir().join("log"),
    );
    monitor::check_spec(&mut spec, todo, monitor, &plan);
    if let Err(why) = contain(&mut spec, &plan, project.root(), None, &room, loopx_exe) {
        return CheckRun::failed(why);
    }
    let runtime = match world.runtime.handle() {
        Ok(runtime) => runtime,
        Err(e) => return CheckRun::failed(format!("cannot start the check's runtime: {e}")),
    };
    let mut ran = run_spec(&runtime, spec, stopped);
    // As a slice's log is read: escapes out first (a secret split by colour codes is whole
    // again), then control characters, then the secrets.
    let text = loopx_vocab::clean_text(loopx_vocab::strip_escapes(&ran.output).as_bytes());
    ran.output = slice_redactor(&plan, project)
        .redact(&text)
        .into_owned()
        .into_bytes();
    ran
}

/// How often a running check looks whether loopx is stopping.
const STOP_CHECK: Duration = Duration::from_millis(200);

/// Spawns `spec` in its PTY and collects its output until it ends.
fn run_spec(runtime: &tokio::runtime::Handle, spec: LaunchSpec, stopped: &Stopped<'_>) -> CheckRun {
    runtime.block_on(async move {
        let (mut slice, mut events) = match loopx_pty::spawn_slice(spec) {
            Ok(spawned) => spawned,
            Err(e) => {
                let why = crate::errors::chain(&e);
                return CheckRun::failed(format!("the check could not start: {why}"));
            }
        };
        let mut output = Vec::new();
        let mut stopping = false;
        loop {
            let event = match tokio::time::timeout(STOP_CHECK, events.next()).await {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(_) => {
                    // loopx is stopping: the check goes with it (its whole tree).
                    if stopped() && !stopping {
                        stopping = true;
                        slice.stop();
                    }
                    continue;
                }
            };
            if let SliceEvent::Output(bytes) = event
                && (output.len() as u64) < CHECK_OUTPUT_CAP
            {
                output.extend_from_slice(&bytes);
            }
        }
        let end = slice.wait().await;
        CheckRun::ended(
            end.map(|r| r.exit).map_err(|e| crate::errors::chain(&e)),
            output,
        )
    })
}
/// A round of polls for a host to run ([`crate::Host::start_polls`]).
#[derive(Debug, Clone)]
pub struct PollJob {
    pub project: Project,
    pub world: World,
    pub loopx_exe: std::path::PathBuf,
    /// A stop requested stops the round, and its running check.
    pub shutdown: std::sync::Arc<Shutdown>,
    /// Set when the run's time is up: the same.
    pub time_up: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl PollJob {
    pub fn run(&self) -> Result<Polled, SupervisorError> {
        poll_due(&self.project, &self.world, &self.loopx_exe, &|| {
            self.stopped()
        })
    }

    /// Whether the round should stop.
    pub fn stopped(&self) -> bool {
        self.shutdown.requested() || self.time_up.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// When the run loop polls next: at the start, when the last round said, soon after the store
/// changed (a monitor may have been added or answered), and at least every re-check.
#[derive(Debug)]
pub(crate) struct Poller {
    pub busy: bool,
    /// On the clock's monotonic time; `None`: this host polls nothing.
    pub due: Option<Duration>,
}

/// How soon after a ring the monitors are read again: rings come in bursts while slices run.
const AFTER_RING: Duration = Duration::from_secs(1);

impl Poller {
    pub(crate) fn new(now: Duration) -> Poller {
        Poller {
            busy: false,
            due: Some(now),
        }
    }

    /// Whether a round should start at `now`.
    pub(crate) fn is_due(&self, now: Duration) -> bool {
        !self.busy && self.due.is_some_and(|due| due <= now)
    }

    /// The store changed: read the monitors again soon.
    pub(crate) fn rung(&mut self, now: Duration) {
        if let Some(due) = &mut self.due {
            *due = (*due).min(now + AFTER_RING);
        }
    }

    /// A round ended: the next is due when its monitors say (on the wall clock, `wall` now),
    /// at most `recheck` away (a monitor may be added without a ring).
    pub(crate) fn finished(
        &mut self,
        next: Option<Timestamp>,
        (now, wall): (Duration, Timestamp),
        recheck: Duration,
    ) {
        self.busy = false;
        let wait = next.map_or(recheck, |at| {
            Duration::from_millis(at.0.saturating_sub(wall.0)).min(recheck)
        });
        self.due = Some(now + wait);
    }
}
