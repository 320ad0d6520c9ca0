//! # Theory of operation
//!
//! `loopx-sim` runs loopx's real run loop — the coordinator, the decision, the begin, the
//! writeback, recovery, the kernel on a real redb file — for a goal (or several, each with its
//! priority and share) of hundreds of hours in minutes, on a virtual clock, with simulated agents, people and faults, and checks its
//! invariants after every step (`docs/design/simulation.md`).
//!
//! - **Time.** A [`VirtualClock`] is the supervisor's clock ([`loopx_supervisor::World`]): its
//!   monotonic time moves only when the simulation moves it, so a sleep of hours costs
//!   nothing; its wall clock can be stepped either way.
//! - **One thread.** The coordinator runs on a [`SimHost`](host) instead of threads: every
//!   worker's decision and begin run at once, and the agent's run is a schedule of events in
//!   virtual time (its reports, the renewals, its end). Nothing runs concurrently, so the
//!   same seed replays the same run exactly.
//! - **Chance.** Everything random is drawn from the seed: what each agent does
//!   (`agent.rs`), when people answer, and the faults (`faults.rs`) that the store handles' fault
//!   wrapper (`loopx_kernel::fault::Faults`) injects into writes (a busy store, a full disk, the supervisor crashing just before or
//!   after a commit), plus kills between steps and clock steps.
//! - **Crashes.** A crash unwinds out of the run loop ([`loopx_kernel::fault::Crashed`]),
//!   writing nothing on the way; the running agents are orphaned (their reports still come),
//!   and after a delay the next supervisor — a new identity — starts, recovers, and goes on.
//! - **Executor/reviewer pairs** (`handbacks.rs`): agents of two roles hand work back and
//!   forth, a new todo each round, and the simulation counts the rounds on its own.
//! - **Invariants** (`invariants.rs`) are checked after every step against the store and the
//!   simulation's own books (`books.rs`); the first broken one halts the run, and the report
//!   names it with its step, to replay with the same seed.

mod agent;
mod books;
mod clock;
mod errors;
mod experiments;
mod faults;
mod handbacks;
mod host;
mod invariants;
mod report;
mod scenario;
mod setup;
mod stall;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loopx_kernel::fault::Crashed;
use loopx_kernel::model::{ProcessIdentity, TodoState};
use loopx_kernel::{AgentName, Clock, Store};
use loopx_supervisor::{EndReason, OnGate, RunLoop, Shutdown, World, run_loop_on};

pub use agent::Act;
pub use clock::VirtualClock;
pub use errors::SimError;
pub use experiments::ExperimentsReport;
pub use faults::FaultCounts;
pub use invariants::Halt;
pub use report::{AccountUse, HandbacksReport, SimReport};
pub use scenario::{Checked, Scenario};

use crate::host::SimHost;

/// How to run a scenario.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub seed: u64,
    /// Overrides the scenario's `sim.hours`.
    pub hours: Option<f64>,
    /// Keep the simulated project here (it must not exist) instead of in a temporary directory.
    pub keep: Option<PathBuf>,
    /// The scenario's name in the report.
    pub name: String,
    /// Run the timer baseline instead of loopx's monitors: every agent wakes this often to
    /// look (`--baseline timer:15m`).
    pub baseline: Option<Duration>,
    /// `LOOPX_GIT_TIMEOUT`: how long one git command of the simulated project may take.
    pub git_timeout: Option<Duration>,
}

/// Runs `plan` with `options`: the report says whether every invariant held.
pub fn run(plan: &Checked, options: &Options) -> Result<SimReport, SimError> {
    quiet_unwinds();
    let wall = Instant::now();
    let plan = Rc::new(with_options(plan, options)?);
    let (_temp, dir) = match &options.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| SimError::Setup(format!("{}: {e}", dir.display())))?;
            (None, dir.clone())
        }
        None => {
            let temp = temp_dir().map_err(|e| SimError::Setup(e.to_string()))?;
            let path = temp.path().to_path_buf();
            (Some(temp), path)
        }
    };
    let clock = Arc::new(VirtualClock::new(plan.start));
    let (project, goals) = setup::create(&dir, &plan, clock.now())?;
    let project = project.with_git_timeout(options.git_timeout);
    let faults = Arc::new(std::sync::Mutex::new(faults::FaultState::new(
        &plan,
        options.seed,
    )));
    let mut host = SimHost::new(
        Rc::clone(&plan),
        project.clone(),
        Arc::clone(&clock),
        Arc::clone(&faults),
        options.seed,
        goals,
    );
    let mut restarts = fastrand::Rng::with_seed(options.seed ^ 0x5E57_A127);
    let names: Vec<AgentName> = plan
        .scenario
        .agents
        .iter()
        .map(|a| a.name.parse())
        .collect::<Result<_, _>>()
        .map_err(|e: loopx_kernel::ids::InvalidId| SimError::Setup(e.to_string()))?;
    let horizon = host.horizon_ms();
    let mut incarnation: u32 = 0;
    let mut violation = None;
    let ended = loop {
        incarnation += 1;
        let req = supervisor(
            incarnation,
            &project,
            &names,
            Duration::from_millis(horizon.saturating_sub(clock.mono_ms())),
            &clock,
            host.next_supervisor(),
        );
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // A simulated crash drops the supervisor's store handle while unwinding, so that
            // redb closes it without its orderly close, as `kill -9` would.
            let _crash = DropOnUnwind(&req.world.stores);
            run_loop_on(&req, names.clone(), &mut host, &mut |_| {})
        }));
        match result {
            Ok(Ok(end)) if end.reason == EndReason::Error => {
                let why = end
                    .error
                    .map_or_else(String::new, |e| loopx_supervisor::error_chain(&e));
                violation = Some(loop_halt(
                    &host,
                    format!("the run loop stopped on an error: {why}"),
                ));
                break "error".to_owned();
            }
            Ok(Ok(end)) => break end_name(end.reason).to_owned(),
            Ok(Err(e)) => {
                violation = Some(loop_halt(
                    &host,
                    format!("the run loop failed: {}", loopx_supervisor::error_chain(&e)),
                ));
                break "error".to_owned();
            }
            Err(payload) if payload.is::<Crashed>() => {
                host.crashed();
                host.books.disturb();
                let down = Duration::from_millis(restarts.u64(
                    plan.restart_after[0].as_millis() as u64
                        ..=plan.restart_after[1].as_millis() as u64,
                ));
                let until = clock.mono_ms() + down.as_millis() as u64;
                if let Err(halt) = host.idle_until(until.min(horizon)) {
                    violation = Some(halt);
                    break "halted".to_owned();
                }
                // Past the horizon the next supervisor still starts: it recovers what the dead
                // one left running, then finds its time up.
            }
            Err(payload) => match payload.downcast::<Halt>() {
                Ok(halt) => {
                    // The run stops where it broke: the running slices stay as they are.
                    host.crashed();
                    violation = Some(*halt);
                    break "halted".to_owned();
                }
                Err(payload) => {
                    host.crashed();
                    let text = panic_text(&payload);
                    violation = Some(loop_halt(&host, format!("loopx panicked: {text}")));
                    break "panicked".to_owned();
                }
            },
        }
    };
    // Cut short (`--hours` below the scenario's), a goal is not expected to be done.
    let expect_done = plan.scenario.sim.expect_done && plan.hours >= plan.scenario.sim.hours;
    if violation.is_none()
        && let Err(halt) = invariants::at_end(&host, expect_done)
    {
        violation = Some(halt);
    }
    host.books.faults = FaultCounts {
        kills: host.books.faults.kills,
        clock_steps: host.books.faults.clock_steps,
        ..faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .counts
            .clone()
    };
    Ok(report(
        &host,
        &plan,
        options,
        ended,
        violation,
        wall.elapsed(),
    ))
}

/// The scenario's plan as the options change it (`--hours`, `--baseline`).
fn with_options(plan: &Checked, options: &Options) -> Result<Checked, SimError> {
    let mut plan = plan.clone();
    if let Some(hours) = options.hours {
        if !(hours > 0.0 && hours <= 10_000.0) {
            return Err(SimError::Scenario {
                origin: "--hours".to_owned(),
                why: format!("{hours} must be more than 0 and at most 10000"),
            });
        }
        plan.hours = hours;
    }
    plan.baseline = options.baseline;
    Ok(plan)
}

/// The `incarnation`th supervisor of the run: the real run loop's request, with a process
/// identity of its own (alive while it is the one running), the virtual clock, and store
/// handles that meet the run's faults.
fn supervisor(
    incarnation: u32,
    project: &loopx_kernel::Project,
    names: &[AgentName],
    run_for: Duration,
    clock: &Arc<VirtualClock>,
    faults: loopx_kernel::fault::Faults,
) -> RunLoop {
    let me = ProcessIdentity {
        pid: 4_000_000 + incarnation,
        start_ticks: u64::from(incarnation),
        boot_id: "loopx-sim".to_owned(),
    };
    let alive = me.clone();
    RunLoop {
        project: project.clone(),
        agents: names.iter().map(ToString::to_string).collect(),
        loopx_exe: PathBuf::from("/nonexistent/loopx"),
        max_slices: None,
        run_for: Some(run_for),
        on_gate: OnGate::Wait,
        shutdown: Arc::new(Shutdown::new()),
        world: World {
            clock: clock.clone(),
            me,
            host: Default::default(),
            alive: Arc::new(move |id| *id == alive),
            stores: loopx_supervisor::StoreCache::with_faults(faults),
            lease_max: loopx_supervisor::LEASE_MAX,
            runtime: loopx_supervisor::SharedRuntime::default(),
        },
    }
}

fn loop_halt(host: &SimHost, detail: String) -> Halt {
    Halt::new(
        &host.books,
        host.clock.true_now(),
        "loop_ends_cleanly",
        detail,
    )
}

fn report(
    host: &SimHost,
    plan: &Checked,
    options: &Options,
    ended: String,
    violation: Option<Halt>,
    wall: Duration,
) -> SimReport {
    let books = &host.books;
    let store = Store::open_read(&host.project).ok();
    let todos = store
        .as_ref()
        .and_then(|s| s.read(|s| s.todos()).ok())
        .unwrap_or_default();
    let active: Vec<loopx_kernel::GoalId> = store
        .as_ref()
        .and_then(|s| s.read(|s| s.active_goals()).ok())
        .unwrap_or_default()
        .iter()
        .map(|g| g.id)
        .collect();
    let gates = store
        .as_ref()
        .and_then(|s| s.read(|s| s.gates()).ok())
        .unwrap_or_default();
    // Every active goal's todos are finished and a person is asked whether it is met.
    let met_asked = |goal: &loopx_kernel::GoalId| {
        gates.iter().any(|g| {
            g.state == loopx_kernel::model::GateState::Open
                && matches!(g.kind, loopx_kernel::model::GateKind::GoalMet { goal: id } if id == *goal)
        })
    };
    let (events, digest) = store.as_ref().map_or((0, 0), event_digest);
    let quota = books
        .ledger
        .iter()
        .map(|(account, (limit, spends))| account_use(account, limit, spends))
        .collect();
    let waiting_hours = books
        .waiting
        .iter()
        .map(|(k, d)| (k.clone(), d.as_secs_f64() / 3600.0))
        .collect();
    let todos_done = todos.iter().filter(|t| t.state == TodoState::Done).count() as u64;
    SimReport {
        seed: options.seed,
        scenario: options.name.clone(),
        hours: host.clock.monotonic().as_secs_f64() / 3600.0,
        hours_asked: plan.hours,
        ended,
        goal_done: active.is_empty() && todos.iter().all(|t| t.state.is_final()),
        goal_met_asked: !active.is_empty()
            && todos.iter().all(|t| t.state.is_final())
            && active.iter().all(met_asked),
        todos_done,
        todos: todos.len() as u64,
        slices: books.slices,
        slices_by_outcome: books.by_outcome.clone(),
        acts: books
            .acts
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect::<BTreeMap<_, _>>(),
        wasted_slices: books.wasted,
        quota,
        waiting_hours,
        questions: books.questions,
        answered: books.answered,
        faults: books.faults.clone(),
        recovered_slices: books.recovered,
        orphaned_slices: books.orphans,
        forgeries_refused: books.forgeries_refused,
        reports_refused: books.reports_refused,
        todos_taken_back: books.taken_back,
        goal_amendments: books.amendments,
        goal_holds: books.holds_asked,
        todos_replanned: store
            .as_ref()
            .map_or(0, |s| crate::invariants::replanned(s).len() as u64),
        files_changed: books.edits,
        reports_acknowledged: books.acks.len() as u64,
        steps: books.step,
        events,
        events_digest: format!("{digest:016x}"),
        wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
        experiments: plan.scenario.experiments.as_ref().map(|_| {
            let mode = plan.baseline.map_or_else(
                || "loopx".to_owned(),
                |p| format!("timer:{}m", p.as_secs() / 60),
            );
            let tokens = books
                .ledger
                .values()
                .flat_map(|(_, s)| s)
                .map(|s| s.1)
                .sum();
            host.experiments
                .report(mode, books.slices, tokens, host.clock.true_now())
        }),
        handbacks: plan.scenario.handbacks.as_ref().map(|_| HandbacksReport {
            asked_at_limit: books.handbacks.asked,
            longest_chain: books.handbacks.longest,
        }),
        violation,
    }
}

/// How many tokens an account used, in how many windows, and its fullest window.
fn account_use(
    account: &str,
    limit: &loopx_quota::WindowLimit,
    spends: &[(loopx_kernel::Timestamp, u64, u64)],
) -> AccountUse {
    let mut state = loopx_quota::WindowState::default();
    let (mut windows, mut fullest, mut current_start) = (0u64, 0u64, 0u64);
    for (at, tokens, _) in spends {
        state = state.charged(limit, at.0, *tokens, 0.0);
        if state.start != current_start {
            windows += 1;
            current_start = state.start;
        }
        fullest = fullest.max(state.tokens);
    }
    let allowance = limit.tokens.unwrap_or(1).max(1);
    AccountUse {
        account: account.to_owned(),
        tokens: spends.iter().map(|(_, t, _)| t).sum(),
        windows,
        fullest_percent: fullest as f64 * 100.0 / allowance as f64,
    }
}

/// The number of events in the store and an FNV-1a digest of them (kind, actor, time, ids).
fn event_digest(store: &Store) -> (u64, u64) {
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    let mut count = 0;
    let mut from = 1;
    loop {
        let Ok(batch) = store.read(|s| s.events_from(from, 1000)) else {
            break;
        };
        if batch.is_empty() {
            break;
        }
        for event in &batch {
            count += 1;
            from = event.seq + 1;
            for byte in format!("{event:?}").bytes() {
                digest ^= u64::from(byte);
                digest = digest.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    (count, digest)
}

fn end_name(reason: EndReason) -> &'static str {
    match reason {
        EndReason::Goal => "goal",
        EndReason::MaxSlices => "max_slices",
        EndReason::Time => "time",
        EndReason::Gate => "gate",
        EndReason::Shutdown => "shutdown",
        EndReason::Error => "error",
    }
}

fn panic_text(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned())
}

/// A temporary directory for the store: in memory (`/dev/shm`) where there is one, since the
/// simulation commits thousands of transactions and their fsyncs are not what it measures.
fn temp_dir() -> std::io::Result<tempfile::TempDir> {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("loopx-sim-")
            .tempdir_in(shm)
    {
        return Ok(dir);
    }
    tempfile::Builder::new().prefix("loopx-sim-").tempdir()
}

/// Simulated crashes and halts unwind on purpose: the panic hook stays quiet about them.
fn quiet_unwinds() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            if payload.is::<Crashed>() || payload.is::<Halt>() {
                return;
            }
            previous(info);
        }));
    });
}

/// Clears a supervisor's store handles when dropped by a panic's unwinding (a simulated crash).
struct DropOnUnwind<'a>(&'a loopx_supervisor::StoreCache);

impl Drop for DropOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.clear();
        }
    }
}
