//! Polling monitors: the checks loopx runs itself, with no agent and no quota
//! (`docs/monitors.md`).
//!
//! [`poll_due`] reads the current goal's monitors, and for each one due: claims its poll
//! (`Op::PollClaim`, so two supervisors never run one check at once; an expired monitor asks a
//! person instead), runs the check ([`run_check`]) and records what it saw (`Op::PollRecord`,
//! which also finishes a met monitor and asks about one failing). It returns when the next
//! poll is due, which the run loop sleeps until.
//!
//! A check runs in the same containment as a read-only slice: a PTY in a room of its own, the
//! slice sandbox at `read-only` (its temp dir writable, `.loopx/` hidden), the resource limits,
//! its whole process tree stopped at the end; a time limit (a tenth of the cadence, 10 s to 5
//! min) and an output cap (64 KiB: more is a flood, and a failed poll). Its environment is
//! loopx's base allowlist, plus, for a check a person gave a profile, that profile's allowlist,
//! secrets and sandbox settings (still read-only); an agent's check never has one.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use loopx_adapters::{
    AdapterCatalog, DEFAULT_ENV_ALLOW, LaunchPlan, OutputFormat, PermissionLevel, PromptDelivery,
    SandboxMode, SandboxPolicy, StdinMode,
};
use loopx_kernel::model::{Monitor, Todo, check_limit_ms, output_hash};
use loopx_kernel::store::{ClaimPoll, RecordPoll};
use loopx_kernel::{AgentName, GateId, KernelError, Project, Timestamp, TodoId};
use loopx_pty::{EnvSpec, LaunchSpec, LogSpec, SliceEvent, SliceExit};
use serde::Serialize;

use crate::errors::SupervisorError;
use crate::once::World;
use crate::shutdown::Shutdown;
use crate::slice::{ACTOR, Room, contain, slice_redactor};

/// The most output a check may print: more is a flood (a failed poll).
pub const CHECK_OUTPUT_CAP: u64 = 64 * 1024;
/// The most polls one round runs; the rest come in the next round, at once.
const MAX_POLLS_PER_ROUND: usize = 16;
/// The longest an agent's check may run (a person's gets a tenth of its cadence, up to five
/// minutes): five agent checks that only slept held a person's 10 s monitor 50 s.
const AGENT_CHECK_LIMIT: Duration = Duration::from_secs(10);
/// How long the agents' checks may take of one round, after every person's monitor due in it
/// was polled; the rest wait for the next round.
const AGENT_SHARE_OF_A_ROUND: Duration = Duration::from_secs(10);
/// How long a poll's claim outlasts its check's time limit.
const CLAIM_MARGIN: Duration = Duration::from_secs(30);

/// One poll, as `loopx run` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PollSummary {
    pub todo: TodoId,
    pub title: String,
    /// `met`, `not yet`, `failed`, or `asked` (expired, or failing: a person is asked).
    pub result: String,
    pub exit: Option<i32>,
    /// The monitor's next poll, when it goes on.
    pub next_at: Option<Timestamp>,
    /// The gate asking a person, if one is open now.
    pub gate: Option<GateId>,
}

/// What a round of polls did, and when the next is due.
#[derive(Debug, Clone, Default)]
pub struct Polled {
    pub polls: Vec<PollSummary>,
    /// The earliest next poll of any monitor not waiting on a person.
    pub next_due: Option<Timestamp>,
}

/// What a check did.
#[derive(Debug, Clone)]
pub struct CheckRun {
    pub exit: Option<i32>,
    /// Why the poll failed whatever its exit.
    pub failed: Option<String>,
    /// What it printed, as text: terminal escapes stripped and secrets redacted (the slice's
    /// rules: its profile's secrets, and loopx's own environment it was not given).
    pub output: Vec<u8>,
}

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

/// The resource limits a check runs under: an agent's check (a monitor it reported) under the
/// limits of that agent's profile, since it is that agent's code (it ran 105 processes and
/// 600 MiB under a profile allowing 20 and 200 MiB, with the defaults); a person's under the
/// defaults (`None`). An agent's whose profile no longer loads is not run.
fn writer_resources(
    project: &Project,
    world: &World,
    todo: &Todo,
) -> Result<Option<loopx_adapters::ResourceLimits>, String> {
    let Some(name) = loopx_vocab::Actor::of(&todo.created_by).agent() else {
        return Ok(None);
    };
    let agent = world
        .stores
        .with(project, |store| store.read(|s| s.agent(name)))
        .map_err(|e| format!("cannot read agent `{name}`, whose check this is: {e}"))?
        .ok_or_else(|| {
            format!(
                "agent `{name}`, whose check this is, is gone: a person may run it as their own"
            )
        })?;
    let state = project.state_dir();
    let catalog = AdapterCatalog::with_dir(state.join("adapters"));
    let loaded = loopx_adapters::find_profile(&state.join("profiles"), &agent.profile, &catalog)
        .map_err(|e| {
            format!(
                "the profile `{}` of agent `{name}`, whose check this is, does not load: {e}",
                agent.profile
            )
        })?;
    Ok(Some(loaded.profile.limits.resources))
}

/// [`poll_due`] with another way to run a check (the simulation's, which runs no process).
pub fn poll_due_with(
    project: &Project,
    world: &World,
    stopped: &Stopped<'_>,
    check: &mut CheckRunner<'_>,
) -> Result<Polled, SupervisorError> {
    let now = world.clock.now();
    let monitors = read_monitors(project, world)?;
    let mut polled = Polled::default();
    // The earliest due first, at most a round's worth: a flood of monitors waits its turn
    // rather than holding the round (and a stop) for long.
    let mut due: Vec<Todo> = monitors
        .into_iter()
        .filter(|t| t.monitor.as_ref().is_some_and(|m| m.due(now)))
        .collect();
    // A person's monitors first, then the agents' checks in a share of the round.
    due.sort_by_key(|t| (by_an_agent(t), t.monitor.as_ref().map(|m| m.next_due())));
    due.truncate(MAX_POLLS_PER_ROUND);
    let mut agents_took = Duration::ZERO;
    for todo in due {
        if stopped() {
            break;
        }
        let agents = by_an_agent(&todo);
        if agents && agents_took >= AGENT_SHARE_OF_A_ROUND {
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
    polled.next_due = next_due(&read_monitors(project, world)?);
    Ok(polled)
}

/// Whether an agent reported this monitor (its check is that agent's code).
fn by_an_agent(todo: &Todo) -> bool {
    loopx_vocab::Actor::of(&todo.created_by).is_agent()
}

/// The current goal's monitors that may be polled (every dependency finished).
fn read_monitors(project: &Project, world: &World) -> Result<Vec<Todo>, SupervisorError> {
    let read = world.stores.with(project, |store| {
        store.read(|s| match s.current_goal()? {
            Some(goal) if goal.status == loopx_kernel::model::GoalStatus::Active => {
                s.monitors(goal.id)
            }
            _ => Ok(Vec::new()),
        })
    });
    Ok(read?)
}

/// The earliest next poll among `monitors` that are not waiting on a person.
pub fn next_due(monitors: &[Todo]) -> Option<Timestamp> {
    monitors
        .iter()
        .filter_map(|t| t.monitor.as_ref())
        .filter(|m| m.asked.is_none())
        .map(|m| match &m.poll {
            // Being polled elsewhere: look again when that claim ends.
            Some(lease) => lease.expires_at.max(m.next_due()),
            None => m.next_due(),
        })
        .min()
}

/// Claims, runs and records one poll; `None` when a peer got there first.
fn poll_one(
    project: &Project,
    world: &World,
    run: &mut CheckRunner<'_>,
    todo: &Todo,
) -> Result<Option<PollSummary>, SupervisorError> {
    let Some(monitor) = &todo.monitor else {
        return Ok(None);
    };
    let mut limit = Duration::from_millis(check_limit_ms(monitor.every_ms));
    if by_an_agent(todo) {
        limit = limit.min(AGENT_CHECK_LIMIT);
    }
    let by: AgentName = ACTOR.parse().expect("`loopx` is a valid name");
    let claim = ClaimPoll {
        todo: todo.id,
        by,
        ttl: limit + CLAIM_MARGIN,
    };
    let claimed = world
        .stores
        .with(project, |store| store.run(claim, ACTOR, world.clock.now()));
    let claimed = match claimed {
        Ok(todo) => todo,
        // A peer polls it, finished it, or a person answered meanwhile: nothing to do here.
        Err(KernelError::Invalid(_) | KernelError::Conflict(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some(m) = &claimed.monitor else {
        return Ok(None);
    };
    if let Some(gate) = m.asked {
        return Ok(Some(summary(&claimed, "asked", None, Some(gate))));
    }
    let epoch = claimed.epoch;
    // A person's check runs only the files the person saw (`pin.rs`): changed before the
    // poll, it is not run; changed while it ran, what it said is not taken.
    let root = project.root();
    let mut changed = loopx_domain::pin::changed(root, &m.pins);
    let check = if changed.is_empty() {
        let before = loopx_domain::pin::stamps(root, &m.pins);
        let check = run(&claimed, m, limit);
        changed = loopx_domain::pin::changed(root, &m.pins);
        if changed.is_empty() && loopx_domain::pin::stamps(root, &m.pins) != before {
            changed = loopx_domain::pin::touched(root, &m.pins);
        }
        check
    } else {
        CheckRun {
            exit: None,
            failed: None,
            output: Vec::new(),
        }
    };
    let record = if changed.is_empty() {
        RecordPoll {
            todo: claimed.id,
            epoch,
            exit: check.exit,
            failed: check.failed.clone(),
            hash: output_hash(&check.output),
            tail: String::from_utf8_lossy(&check.output).into_owned(),
            changed,
        }
    } else {
        RecordPoll {
            todo: claimed.id,
            epoch,
            exit: None,
            failed: None,
            hash: String::new(),
            tail: loopx_domain::pin::describe(root, &changed),
            changed,
        }
    };
    let recorded = world
        .stores
        .with(project, |store| store.run(record, ACTOR, world.clock.now()));
    let after = match recorded {
        Ok(todo) => todo,
        // The claim lapsed (a long stall of this process) or a person finished it meanwhile.
        Err(KernelError::Invalid(_) | KernelError::Conflict(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let after_monitor = after.monitor.as_deref();
    let result = after_monitor
        .and_then(Monitor::last)
        .map_or("failed", |o| o.verdict.as_str());
    let gate = after_monitor.and_then(|m| m.asked);
    Ok(Some(summary(&after, result, check.exit, gate)))
}

fn summary(todo: &Todo, result: &str, exit: Option<i32>, gate: Option<GateId>) -> PollSummary {
    PollSummary {
        todo: todo.id,
        title: todo.title.clone(),
        result: if gate.is_some() && result != "met" {
            "asked".to_owned()
        } else {
            result.to_owned()
        },
        exit,
        next_at: todo
            .monitor
            .as_ref()
            .filter(|m| m.asked.is_none() && !todo.state.is_final())
            .map(|m| m.next_at),
        gate,
    }
}

/// The profile a person gave the check, if any.
fn check_profile(project: &Project, monitor: &Monitor) -> Option<loopx_adapters::LoadedProfile> {
    let name = monitor.profile.as_deref()?;
    let state = project.state_dir();
    let catalog = AdapterCatalog::with_dir(state.join("adapters"));
    loopx_adapters::find_profile(&state.join("profiles"), name, &catalog)
        .inspect_err(
            |e| tracing::warn!(profile = name, error = %e, "cannot load a monitor's profile"),
        )
        .ok()
}

/// The plan a check runs under: `sh -c CHECK` in the project's tree, read-only and sandboxed
/// unless a person gave it a profile.
fn check_plan(
    project: &Project,
    monitor: &Monitor,
    limit: Duration,
    resources: Option<loopx_adapters::ResourceLimits>,
) -> Result<LaunchPlan, String> {
    let mut allow: Vec<String> = DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect();
    let mut secrets = Vec::new();
    let permission = PermissionLevel::ReadOnly;
    let mut sandbox = SandboxPolicy {
        mode: SandboxMode::Auto,
        writable: Vec::new(),
    };
    if let Some(name) = &monitor.profile {
        let loaded = check_profile(project, monitor).ok_or_else(|| {
            format!("the monitor's profile `{name}` cannot be loaded (`loopx profile show {name}` says why)")
        })?;
        let profile = loaded.profile;
        allow.extend(profile.env.allow);
        secrets = profile.env.secrets;
        // Still read-only: a check looks, and a check that could write the project could
        // rewrite a script a later poll runs with the profile's secrets. The profile's own
        // writable paths (its CLI's state) stay writable.
        sandbox = profile.sandbox;
    }
    Ok(LaunchPlan {
        program: "/bin/sh".to_owned(),
        args: vec!["-c".to_owned(), monitor.check.clone()],
        workdir: project.root().to_owned(),
        env_allowlist: allow,
        secret_env_names: secrets,
        env_set: Default::default(),
        prompt_delivery: PromptDelivery::Argument,
        stdin: StdinMode::Null,
        output: OutputFormat::Text,
        permission,
        requires_approval: false,
        content_hash: loopx_adapters::ContentHash([0; 32]),
        sandbox,
        limits: loopx_adapters::SliceLimits {
            max_time: limit,
            idle_timeout: limit,
            grace: Duration::from_secs(2),
            max_output_bytes: CHECK_OUTPUT_CAP,
            kill_on_output: true,
            max_turns: None,
            max_tokens: None,
            resources: resources.unwrap_or_default(),
        },
    })
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
    let failed = |why: String| CheckRun {
        exit: None,
        failed: Some(why),
        output: Vec::new(),
    };
    let plan = match writer_resources(project, world, todo)
        .and_then(|resources| check_plan(project, monitor, limit, resources))
    {
        Ok(plan) => plan,
        Err(why) => return failed(why),
    };
    // Unique on the machine: the todo, its claim, and the project (rooms are per user).
    let project_marker =
        loopx_kernel::marker::slice_marker(project.root(), loopx_kernel::SliceId(0));
    let digest = project_marker.split_once('.').map_or("", |(_, d)| d);
    let marker = format!("poll-{}-e{}.{digest}", todo.id, todo.epoch);
    let room = match Room::create(&marker) {
        Ok(room) => room,
        Err(e) => return failed(format!("cannot make the check's private directory: {e}")),
    };
    let Ok(slice_id) = loopx_pty::SliceId::new(marker.clone()) else {
        return failed(format!("`{marker}` is not a valid marker"));
    };
    let mut spec = LaunchSpec::new(
        slice_id,
        &plan.program,
        &plan.workdir,
        room.dir().join("log"),
    );
    spec.args = plan.args.iter().map(OsString::from).collect();
    spec.env = check_env(todo, monitor, &plan);
    spec.limits = loopx_pty::SliceLimits {
        wall: Some(limit),
        idle: None,
        output_bytes: Some(CHECK_OUTPUT_CAP),
        grace: plan.limits.grace,
        ..loopx_pty::SliceLimits::default()
    };
    spec.log = LogSpec {
        head_bytes: 0,
        tail_bytes: usize::try_from(CHECK_OUTPUT_CAP).unwrap_or(usize::MAX),
        ..LogSpec::new(room.dir().join("log"))
    };
    if let Err(why) = contain(&mut spec, &plan, project.root(), None, &room, loopx_exe) {
        return failed(why);
    }
    let runtime = match world.runtime.handle() {
        Ok(runtime) => runtime,
        Err(e) => return failed(format!("cannot start the check's runtime: {e}")),
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

/// A check's environment: its plan's allowlist and secrets, and what it knows of its monitor.
fn check_env(todo: &Todo, monitor: &Monitor, plan: &LaunchPlan) -> EnvSpec {
    let mut set = vec![("LOOPX_MONITOR", todo.id.to_string())];
    if let Some(last) = monitor.last() {
        let exit = last.exit.map_or_else(String::new, |c| c.to_string());
        set.push(("LOOPX_PREVIOUS_EXIT", exit));
        set.push(("LOOPX_PREVIOUS_RESULT", last.verdict.as_str().to_owned()));
        set.push(("LOOPX_PREVIOUS_OUTPUT", last.tail.clone()));
    }
    let mut inherit = plan.env_allowlist.clone();
    inherit.extend(plan.secret_env_names.iter().cloned());
    let set = set
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    EnvSpec { inherit, set }
}

/// Spawns `spec` in its PTY and collects its output until it ends.
/// How often a running check looks whether loopx is stopping.
const STOP_CHECK: Duration = Duration::from_millis(200);

fn run_spec(runtime: &tokio::runtime::Handle, spec: LaunchSpec, stopped: &Stopped<'_>) -> CheckRun {
    runtime.block_on(async move {
        let (mut slice, mut events) = match loopx_pty::spawn_slice(spec) {
            Ok(spawned) => spawned,
            Err(e) => {
                return CheckRun {
                    exit: None,
                    failed: Some(format!(
                        "the check could not start: {}",
                        crate::errors::chain(&e)
                    )),
                    output: Vec::new(),
                };
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
        let exit = slice.wait().await.map(|r| r.exit);
        let (exit, failed) = match exit {
            Ok(SliceExit::Exited(code)) => (Some(code), None),
            Ok(SliceExit::TimedOut) => (None, Some("the check ran past its time limit".to_owned())),
            Ok(SliceExit::OutputCapped) => (
                None,
                Some(format!(
                    "the check printed more than {CHECK_OUTPUT_CAP} bytes"
                )),
            ),
            Ok(other) => (
                None,
                Some(format!("the check ended without an exit code: {other:?}")),
            ),
            Err(e) => (
                None,
                Some(format!(
                    "the check's end was not seen: {}",
                    crate::errors::chain(&e)
                )),
            ),
        };
        CheckRun {
            exit,
            failed,
            output,
        }
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
