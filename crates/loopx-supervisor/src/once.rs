//! `run_once`: one decision and, when it says so, one slice of one agent, end to end.

use std::path::PathBuf;
use std::sync::Arc;

use loopx_kernel::model::{ProcessIdentity, SliceKind};
use loopx_kernel::{
    AgentName, Project, SharedClock, SliceId, SystemClock, Timestamp, TodoId, WallClock,
};
use loopx_quota::Decision;

use crate::commit::SliceSummary;
use crate::errors::SupervisorError;
use crate::renew::Renewed;
use crate::shutdown::Shutdown;
use crate::slice::{self, Began, Next};
use loopx_adapters::LaunchPlan;
use loopx_kernel::model::SliceRecord;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOnce {
    pub project: Project,
    /// The agent; default: the first registered agent in name order.
    pub agent: Option<String>,
    /// The running loopx executable (the demo adapter launches it).
    pub loopx_exe: PathBuf,
    /// Stops the slice when the supervisor is asked to stop.
    pub shutdown: Arc<Shutdown>,
    /// The clock and the identity the supervisor runs with.
    pub world: World,
}

/// What a supervisor takes from the world around it: its clock, its own identity as slices
/// record it, and whether another supervisor still runs. [`World::real`] in production; the
/// simulation (`loopx sim`) gives a virtual clock and supervisors that die and restart.
#[derive(Clone)]
pub struct World {
    pub clock: SharedClock,
    /// This supervisor, as the slices it begins record their owner.
    pub me: ProcessIdentity,
    /// The host the processes it starts are recorded on.
    pub host: loopx_domain::process::Host,
    /// Whether the supervisor with this identity still runs (recovery leaves its slices be).
    pub alive: Arc<dyn Fn(&ProcessIdentity) -> bool + Send + Sync>,
    /// The supervisor's read-write store handles, opened once (`store_cache.rs`).
    pub stores: crate::store_cache::StoreCache,
    /// The longest claim before a renewal: shorter frees a dead supervisor's todo sooner, at
    /// the cost of more renewals (ten minutes unless the surface's
    /// `LOOPX_LEASE_MAX` says otherwise; at least a second).
    pub lease_max: std::time::Duration,
    /// The supervisor's one tokio runtime, shared by every agent's loop and every check
    /// (`runtime.rs`).
    pub runtime: crate::runtime::SharedRuntime,
}

impl World {
    /// This process on `host`, the machine's clock read as `wall` reads it, and `/proc` for
    /// other supervisors.
    pub fn real(host: loopx_domain::process::Host, wall: WallClock) -> World {
        World {
            clock: SystemClock::shared(wall),
            me: host.identity(std::process::id()),
            host,
            alive: Arc::new(crate::slice::is_alive),
            stores: crate::store_cache::StoreCache::default(),
            lease_max: crate::slice::LEASE_MAX,
            runtime: crate::runtime::SharedRuntime::default(),
        }
    }

    /// The same world with claims of at most `max` (at least a second) between renewals.
    pub fn with_lease_max(mut self, max: std::time::Duration) -> World {
        self.lease_max = max.max(std::time::Duration::from_secs(1));
        self
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("clock", &self.clock)
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

/// A step worth telling the user about, as it happens.
#[derive(Debug)]
pub enum Step<'a> {
    Decided {
        agent: &'a AgentName,
        decision: &'a Decision,
        /// The goal it was decided for (among the active ones).
        goal: Option<loopx_kernel::GoalId>,
        now: Timestamp,
    },
    Claimed {
        agent: &'a AgentName,
        todo: TodoId,
        epoch: u64,
        /// The agent already held the lease.
        held: bool,
    },
    Started {
        agent: &'a AgentName,
        slice: SliceId,
        kind: SliceKind,
        todo: Option<TodoId>,
        log: &'a str,
    },
    Spawned {
        slice: SliceId,
        pid: u32,
    },
    Ended(&'a SliceSummary),
}

/// How `run_once` ended.
#[derive(Debug, Clone)]
pub enum Once {
    /// The decision was not to run (stop, ask, wait, quiet).
    Decided { agent: String, decision: Decision },
    /// The decision was to run, and quota admission said wait.
    Refused {
        agent: String,
        decision: Decision,
        until: Option<Timestamp>,
        reason: String,
    },
    /// Someone else got there between the decision and the begin (a peer claimed the todo, or
    /// another supervisor started a slice on it): decide again. Nothing was left behind.
    Contended {
        agent: String,
        decision: Decision,
        why: String,
    },
    /// A stop was requested before the agent was spawned: nothing ran (a slice already begun
    /// is recorded `interrupted`).
    Stopped { agent: String, why: String },
    /// A slice ran.
    Ran {
        decision: Decision,
        /// Boxed: a summary is several times the size of the other variants.
        slice: Box<SliceSummary>,
    },
}

/// What `run_once` did, told the same way whatever it was: what the agent does now (the
/// decision's kind, or `wait`, `quiet` or `stop` when quota, a peer or a stop stood between the
/// decision and its slice), why, and when to try again. A view of [`Once`]; nothing is decided
/// here.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OnceReport<'a> {
    pub agent: &'a str,
    /// `decided`, `refused`, `contended`, `stopped` or `ran`: which of [`Once`] it was.
    pub outcome: &'static str,
    pub kind: loopx_quota::DecisionKind,
    pub reason: std::borrow::Cow<'a, str>,
    pub wake_at: Option<Timestamp>,
    /// The question the decision asks, when it asks one.
    pub gate: Option<(loopx_kernel::GateId, &'a str)>,
    pub slice: Option<&'a SliceSummary>,
}

impl Once {
    /// What happened, as [`OnceReport`].
    pub fn report(&self) -> OnceReport<'_> {
        use loopx_quota::DecisionKind as Kind;
        let (agent, outcome, kind, reason, wake_at) = match self {
            Once::Decided { agent, decision } => {
                return OnceReport::decided(agent, "decided", decision, None);
            }
            Once::Ran { decision, slice } => {
                return OnceReport::decided(slice.agent.as_str(), "ran", decision, Some(slice));
            }
            Once::Refused {
                agent,
                until,
                reason,
                ..
            } => (agent, "refused", Kind::Wait, reason.clone(), *until),
            Once::Contended { agent, why, .. } => (
                agent,
                "contended",
                Kind::Quiet,
                format!("a peer got there first: {why}"),
                None,
            ),
            Once::Stopped { agent, why } => (
                agent,
                "stopped",
                Kind::Stop,
                format!("loopx was stopped ({why})"),
                None,
            ),
        };
        OnceReport {
            agent,
            outcome,
            kind,
            reason: std::borrow::Cow::Owned(reason),
            wake_at,
            gate: None,
            slice: None,
        }
    }
}

impl<'a> OnceReport<'a> {
    fn decided(
        agent: &'a str,
        outcome: &'static str,
        decision: &'a Decision,
        slice: Option<&'a SliceSummary>,
    ) -> OnceReport<'a> {
        OnceReport {
            agent,
            outcome,
            kind: decision.kind(),
            reason: std::borrow::Cow::Borrowed(decision.reason()),
            wake_at: decision.wake_at().map(Timestamp),
            gate: decision.gate(),
            slice,
        }
    }
}

/// Decides for the agent and, on `deliver` or `repair`, runs one slice and writes it back.
///
/// Reads top to bottom as the slice's life (`slice.rs`): each stage consumes the previous
/// one's state. From the begin on, the slice's guard records it `interrupted` if a later stage
/// fails, panics, or is stopped.
pub fn run_once(req: &RunOnce, on_step: &mut dyn FnMut(Step<'_>)) -> Result<Once, SupervisorError> {
    let began = match begin_once(req, on_step)? {
        Begin::Running(began) => *began,
        Begin::Done(once) => return Ok(*once),
    };
    let BegunSlice { begun, decision } = began;
    let agent = begun.setup.agent.name.to_string();
    let Some(launched) = begun.launch(req, on_step)? else {
        let why = req.shutdown.reason().unwrap_or_default();
        return Ok(Once::Stopped { agent, why });
    };
    ended(req, decision, launched.observe(req), on_step)
}

/// The first half of [`run_once`]: the decision and, when it says run, the slice begun.
#[derive(Debug)]
pub enum Begin {
    /// Nothing runs (the decision, a refusal, a lost race, a stop).
    Done(Box<Once>),
    /// A slice was begun and its guard owns it; the host runs its agent.
    Running(Box<BegunSlice>),
}

/// A slice recorded as begun whose agent has not run yet.
#[derive(Debug)]
pub struct BegunSlice {
    begun: slice::Begun,
    decision: Decision,
}

/// Decides for the agent and, on `deliver` or `repair`, begins a slice (its agent not yet
/// spawned). [`run_once`] spawns it in a PTY; the simulation runs a simulated agent instead
/// ([`BegunSlice::simulate`]).
pub fn begin_once(
    req: &RunOnce,
    on_step: &mut dyn FnMut(Step<'_>),
) -> Result<Begin, SupervisorError> {
    let began = begin_once_on_handle(req, on_step);
    if let Err(e) = &began
        && e.is_store_failure()
    {
        // redb latches an I/O failure on the handle that met it (a full disk): the next
        // decision opens a fresh one, as a command would.
        req.world.stores.forget(&req.project);
    }
    began
}

fn begin_once_on_handle(
    req: &RunOnce,
    on_step: &mut dyn FnMut(Step<'_>),
) -> Result<Begin, SupervisorError> {
    let decided = match slice::decide(req, on_step)? {
        Next::Run(decided) => *decided,
        Next::Done(once) => return Ok(Begin::Done(once)),
    };
    let agent = decided.setup.agent.name.to_string();
    if let Some(why) = req.shutdown.reason() {
        return Ok(Begin::Done(Box::new(Once::Stopped { agent, why })));
    }
    let decision = decided.decision.clone();
    Ok(match decided.begin(req, on_step)? {
        Began::Begun(begun) => Begin::Running(Box::new(BegunSlice {
            begun: *begun,
            decision,
        })),
        Began::Not(once) => Begin::Done(once),
    })
}

impl BegunSlice {
    /// The slice as recorded.
    pub fn record(&self) -> &SliceRecord {
        &self.begun.record
    }

    /// How the agent would be launched: program, limits.
    pub fn plan(&self) -> &LaunchPlan {
        &self.begun.plan
    }

    /// The agent starts now, run by the host itself rather than in a PTY.
    pub fn simulate(mut self, req: &RunOnce) -> SimulatedSlice {
        let started = self.begun.start_simulated(req);
        SimulatedSlice {
            lease_ttl: slice::lease_ttl(&self.begun.setup, req.world.lease_max),
            begun: self.begun,
            decision: self.decision,
            started,
        }
    }
}

/// A slice whose agent the host runs itself (the simulation): everything else — the
/// renewals, the parsing of its output, the judging, the scope check and the writeback — is
/// loopx's own.
#[derive(Debug)]
pub struct SimulatedSlice {
    begun: slice::Begun,
    decision: Decision,
    started: (loopx_git::scope::Before, std::time::Duration),
    lease_ttl: std::time::Duration,
}

impl SimulatedSlice {
    /// The slice as recorded.
    pub fn record(&self) -> &SliceRecord {
        &self.begun.record
    }

    /// How the agent would be launched: program, limits.
    pub fn plan(&self) -> &LaunchPlan {
        &self.begun.plan
    }

    /// How long a claim lasts between renewals (renew every third of it).
    pub fn lease_ttl(&self) -> std::time::Duration {
        self.lease_ttl
    }

    /// Renews the slice's claim once, as the renewing thread of a real slice does.
    pub fn renew(&self, req: &RunOnce) -> Option<Renewed> {
        let (todo, epoch) = self.begun.record.todo.zip(self.begun.record.epoch)?;
        Some(crate::renew::renew_once(
            &req.world.stores,
            &req.project,
            &req.world.clock,
            &self.begun.setup.agent.name,
            todo,
            epoch,
            self.lease_ttl,
        ))
    }

    /// The agent ended, having printed `output`, with `exit` (`lost_claim`: loopx stopped it
    /// because a renewal found the claim gone), having written `reported` through its host's
    /// stand-in for the report channel. The rest is the real slice's end.
    pub fn finish(
        self,
        req: &RunOnce,
        output: &[u8],
        exit: loopx_pty::SliceExit,
        lost_claim: Option<String>,
        reported: slice::ChannelReports,
        on_step: &mut dyn FnMut(Step<'_>),
    ) -> Result<Once, SupervisorError> {
        let observed =
            self.begun
                .observe_simulated(req, self.started, output, exit, lost_claim, reported);
        ended(req, self.decision, observed, on_step)
    }

    /// The supervisor died while the agent ran: nothing is recorded; the slice stays running
    /// in the store until recovery closes it.
    pub fn vanish(self) {
        self.begun.guard.vanish();
    }
}

/// The last stage of every slice: the writeback, and the slice's summary.
fn ended(
    req: &RunOnce,
    decision: Decision,
    (begun, end, judged): (
        slice::Begun,
        loopx_domain::judge::AgentEnd,
        loopx_domain::judge::Judged,
    ),
    on_step: &mut dyn FnMut(Step<'_>),
) -> Result<Once, SupervisorError> {
    let summary = begun.write_back(req, end, judged)?;
    on_step(Step::Ended(&summary));
    Ok(Once::Ran {
        decision,
        slice: Box::new(summary),
    })
}
