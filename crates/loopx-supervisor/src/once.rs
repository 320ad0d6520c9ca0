//! `run_once`: one decision and, when it says so, one slice of one agent, end to end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use loopx_adapters::{LaunchContext, LaunchPlan, Parser, render_launch, render_prompt};
use loopx_kernel::decision::DecisionState;
use loopx_kernel::model::{Goal, SliceKind, Todo};
use loopx_kernel::store::{Applied, NewSlice, SLICE_PLACEHOLDER};
use loopx_kernel::{Conflict, KernelError, Op, Project, SliceId, Store, Timestamp, TodoId};
use loopx_quota::{Decision, DecisionKind};

use crate::agent::{AgentSetup, load_agent};
use crate::approval::{self, Permission};
use crate::commit::{SliceSummary, write_back};
use crate::errors::SupervisorError;
use crate::prompt::{PromptFor, prompt_values};
use crate::renew::Renewal;
use crate::scope;
use crate::shutdown::Shutdown;
use crate::slice::{SliceEnv, judge, launch_spec, process_identity, redact_log, run_slice};
use crate::writeback::Finished;

/// A lease outlives the slice's wall-time limit by this much, so it cannot expire while the
/// slice is still being stopped and written back.
const LEASE_MARGIN: Duration = Duration::from_secs(60);
/// The longest claim taken at once, unless `LOOPX_LEASE_MAX` says otherwise; see [`lease_ttl`].
const LEASE_MAX: Duration = Duration::from_secs(10 * 60);

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
}

/// A step worth telling the user about, as it happens.
#[derive(Debug)]
pub enum Step<'a> {
    Decided {
        agent: &'a str,
        decision: &'a Decision,
        now: Timestamp,
    },
    Claimed {
        agent: &'a str,
        todo: TodoId,
        epoch: u64,
        /// The agent already held the lease.
        held: bool,
    },
    Started {
        agent: &'a str,
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
    /// Someone else got there between the decision and the claim (a peer claimed the todo, or
    /// another supervisor started a slice on it): decide again.
    Contended {
        agent: String,
        decision: Decision,
        why: String,
    },
    /// A slice ran.
    Ran {
        decision: Decision,
        /// Boxed: a summary is several times the size of the other variants.
        slice: Box<SliceSummary>,
    },
}

/// The wall-time limit of a probe: the first slice after a vendor hold ended.
const PROBE_MAX_TIME: Duration = Duration::from_secs(5 * 60);

/// What kind of slice runs, and how.
#[derive(Debug, Clone, Copy)]
struct How {
    kind: SliceKind,
    permission: loopx_adapters::PermissionLevel,
    /// The first slice after a vendor hold: a short one.
    probe: bool,
}

/// The claim a slice runs under.
#[derive(Debug, Clone, Copy)]
struct Claim {
    todo: Option<TodoId>,
    epoch: Option<u64>,
    /// This run took the lease (so it releases it if it cannot start the slice).
    taken: bool,
}

/// Decides for the agent and, on `deliver` or `repair`, runs one slice and writes it back.
pub fn run_once(req: &RunOnce, on_step: &mut dyn FnMut(Step<'_>)) -> Result<Once, SupervisorError> {
    let now = Timestamp::now();
    let store = Store::open(&req.project)?;
    let agents = store.read(|s| s.agents())?;
    let setup = load_agent(&req.project, agents, req.agent.as_deref())?;
    let name = setup.agent.name.to_string();
    let state = store.read(|s| DecisionState::read(s, setup.view.clone(), now))?;
    let mut decision = state.decide();
    if decision.decision == DecisionKind::Ask && decision.gate.is_none() {
        decision.gate = open_stall_gate(&store, &setup, &decision, now)?;
    }
    on_step(Step::Decided {
        agent: &name,
        decision: &decision,
        now,
    });
    let kind = match (decision.decision, decision.slice) {
        (DecisionKind::Deliver | DecisionKind::Repair, Some(kind)) => match kind {
            loopx_quota::SliceKind::Work => SliceKind::Work,
            loopx_quota::SliceKind::Plan => SliceKind::Plan,
            loopx_quota::SliceKind::Repair => SliceKind::Repair,
        },
        _ => {
            return Ok(Once::Decided {
                agent: name,
                decision,
            });
        }
    };
    let goal = store.read(|s| s.current_goal())?;
    let permission = match approval::permission(&store, &setup, goal.as_ref(), now)? {
        Permission::Run(level) => level,
        Permission::Held(decision) => {
            on_step(Step::Decided {
                agent: &name,
                decision: &decision,
                now,
            });
            return Ok(Once::Decided {
                agent: name,
                decision,
            });
        }
    };
    let todo: Option<TodoId> = decision
        .todo
        .as_ref()
        .map(|(id, _)| id.parse())
        .transpose()
        .map_err(KernelError::from)?;
    let claim = match claim(&store, &setup, todo, now) {
        Ok(claim) => claim,
        Err(SupervisorError::Kernel(KernelError::Conflict(c))) if lost_race(&c) => {
            return Ok(Once::Contended {
                agent: name,
                decision,
                why: c.to_string(),
            });
        }
        Err(e) => return Err(e),
    };
    if let Some(todo) = claim.todo {
        on_step(Step::Claimed {
            agent: &name,
            todo,
            epoch: claim.epoch.unwrap_or_default(),
            held: !claim.taken,
        });
    }
    let admit = setup.quota_request(0, 0.0, None);
    match store.apply(Op::QuotaAdmit(admit), &actor(&setup), now) {
        Ok(_) => {}
        Err(KernelError::Conflict(Conflict::QuotaBlocked { until, reason })) => {
            return Ok(Once::Refused {
                agent: name,
                decision,
                until,
                reason,
            });
        }
        Err(e) => return Err(e.into()),
    }
    let slice = SliceFor {
        setup: &setup,
        goal: goal.as_ref(),
        claim,
        how: How {
            kind,
            permission,
            probe: decision.probe,
        },
    };
    match run_slice_once(req, store, &slice, on_step) {
        Ok(slice) => Ok(Once::Ran {
            decision,
            slice: Box::new(slice),
        }),
        Err(SupervisorError::Kernel(KernelError::Conflict(c))) if lost_race(&c) => {
            Ok(Once::Contended {
                agent: name,
                decision,
                why: c.to_string(),
            })
        }
        Err(e) => Err(e),
    }
}

/// Conflicts that mean a peer got there first, not that anything is wrong.
fn lost_race(c: &Conflict) -> bool {
    matches!(
        c,
        Conflict::Claimed { .. }
            | Conflict::SliceRunning { .. }
            | Conflict::PlanRunning { .. }
            | Conflict::GoalState { .. }
            | Conflict::StaleEpoch { .. }
            | Conflict::NotHolder { .. }
    )
}

/// Opens the gate a stalled todo needs: the decision says ask, and no gate asks yet. Returns
/// the gate as the decision shows it.
fn open_stall_gate(
    store: &Store,
    setup: &AgentSetup,
    decision: &Decision,
    now: Timestamp,
) -> Result<Option<(String, String)>, SupervisorError> {
    let Some(todo) = decision.stalled.as_deref() else {
        return Ok(None);
    };
    let id: TodoId = todo.parse().map_err(KernelError::from)?;
    let title = store
        .read(|s| s.todo(id))?
        .map(|t| t.title)
        .unwrap_or_default();
    let gate = loopx_kernel::store::NewGate {
        question: format!(
            "Todo {id} ({title}) has gone several slices without progress: should agents retry it, or should it be dropped or reworded?"
        ),
        options: vec!["retry".into(), "drop it".into(), "reword it".into()],
        context: decision.reason.clone(),
        blocks: loopx_kernel::model::Blocks::Todos(vec![id]),
    };
    let Applied::Gate(gate) = store.apply(Op::GateAsk(gate), &actor(setup), now)? else {
        unreachable!("a gate ask yields the gate")
    };
    Ok(Some((gate.id.to_string(), gate.question)))
}

/// Claims the todo unless the agent already holds a live lease on it.
fn claim(
    store: &Store,
    setup: &AgentSetup,
    todo: Option<TodoId>,
    now: Timestamp,
) -> Result<Claim, SupervisorError> {
    let Some(id) = todo else {
        return Ok(Claim {
            todo: None,
            epoch: None,
            taken: false,
        });
    };
    let me = &setup.agent.name;
    let record = store.read(|s| s.todo(id))?;
    let held = record.as_ref().and_then(|t| {
        t.lease
            .as_ref()
            .filter(|l| &l.agent == me && l.is_live(now))
            .map(|_| t.epoch)
    });
    if let Some(epoch) = held {
        return Ok(Claim {
            todo: Some(id),
            epoch: Some(epoch),
            taken: false,
        });
    }
    let op = Op::TodoClaim {
        todo: id,
        agent: me.clone(),
        ttl: lease_ttl(setup),
    };
    let Applied::Todo(claimed) = store.apply(op, &actor(setup), now)? else {
        unreachable!("a claim yields the todo")
    };
    Ok(Claim {
        todo: Some(id),
        epoch: Some(claimed.epoch),
        taken: true,
    })
}

/// How long a claim lasts before it must be renewed: the slice's whole run (wall time, grace,
/// a margin) up to [`LEASE_MAX`]. A longer slice renews it while it runs, so a supervisor that
/// dies frees its todo within minutes, not after the slice's whole limit.
fn lease_ttl(setup: &AgentSetup) -> Duration {
    let limits = &setup.loaded.profile.limits;
    (limits.max_time + limits.grace + LEASE_MARGIN).min(lease_max())
}

/// [`LEASE_MAX`], or `LOOPX_LEASE_MAX` (a duration such as `2m`; at least a second): shorter
/// frees a dead supervisor's todo sooner, at the cost of more renewals.
fn lease_max() -> Duration {
    let Some(text) = std::env::var("LOOPX_LEASE_MAX")
        .ok()
        .filter(|t| !t.is_empty())
    else {
        return LEASE_MAX;
    };
    match humantime::parse_duration(&text) {
        Ok(d) if d >= Duration::from_secs(1) => d,
        _ => {
            tracing::warn!(%text, "LOOPX_LEASE_MAX is not a duration of a second or more; using 10m");
            LEASE_MAX
        }
    }
}

/// Who writes on the slice's behalf.
fn actor(setup: &AgentSetup) -> String {
    format!("agent:{}", setup.agent.name)
}

/// Where a slice's files go: `.loopx/slices/<id>.<ext>`, relative to the project root.
fn slice_file(slice: &str, ext: &str) -> String {
    format!("{}/slices/{slice}.{ext}", loopx_kernel::project::STATE_DIR)
}

/// The launch for `slice` (the placeholder before the id is known, the id after).
fn plan_for(
    req: &RunOnce,
    setup: &AgentSetup,
    how: How,
    prompt: &str,
    slice: &str,
) -> Result<LaunchPlan, SupervisorError> {
    let ctx = LaunchContext {
        loopx_exe: req.loopx_exe.clone(),
        project_root: req.project.root().to_path_buf(),
        prompt_file: req.project.root().join(slice_file(slice, "prompt")),
    };
    let mut plan =
        render_launch(&setup.loaded, how.permission, prompt, &ctx).map_err(|source| {
            SupervisorError::Launch {
                agent: setup.agent.name.to_string(),
                source,
            }
        })?;
    if how.probe {
        // The vendor's limit may not be gone: find out in minutes, not in a whole slice.
        plan.limits.max_time = plan.limits.max_time.min(PROBE_MAX_TIME);
    }
    Ok(plan)
}

/// What a slice runs for, once the decision, the claim and the admission are made.
struct SliceFor<'a> {
    setup: &'a AgentSetup,
    goal: Option<&'a Goal>,
    claim: Claim,
    how: How,
}

/// Renders the prompt, records the slice, runs it and writes it back.
///
/// `store` is the one the decision and the claim used: it records the slice's start and its
/// spawned process, and is closed before the agent runs. Each open and close of the store costs
/// several fsyncs (redb records its allocator state and a clean-shutdown header on close), the
/// bulk of loopx's own cost per slice, so the writes before the agent runs share one.
fn run_slice_once(
    req: &RunOnce,
    store: Store,
    slice: &SliceFor<'_>,
    on_step: &mut dyn FnMut(Step<'_>),
) -> Result<SliceSummary, SupervisorError> {
    let SliceFor {
        setup,
        goal,
        claim,
        how,
    } = *slice;
    let kind = how.kind;
    let (started, prompt) = match start(req, setup, &store, goal, claim, how) {
        Ok(started) => started,
        Err(e) => {
            release_taken(&store, setup, claim);
            return Err(e);
        }
    };
    let log = started.log.clone().unwrap_or_default();
    on_step(Step::Started {
        agent: setup.agent.name.as_str(),
        slice: started.id,
        kind,
        todo: claim.todo,
        log: &log,
    });
    let plan = plan_for(req, setup, how, &prompt, &started.id.to_string())?;
    let env = SliceEnv {
        project_root: req.project.root(),
        slice: started.id,
        agent: &setup.agent.name,
        todo: claim.todo,
        epoch: claim.epoch,
    };
    let (spec, stdin) = launch_spec(&plan, &env, req.project.root().join(&log));
    create_private(&spec.log.path);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SupervisorError::Runtime)?;
    // Orphans of the agent are re-parented to loopx, so the sweep can reap them.
    if let Err(e) = loopx_pty::become_child_subreaper() {
        tracing::warn!(error = %e, "cannot become a child subreaper; orphans go to init");
    }
    let mut pid = None;
    let parser = Parser::for_adapter(&setup.loaded.adapter);
    let before = scope::capture(req.project.root());
    let renewal = claim.epoch.zip(claim.todo).map(|(epoch, todo)| {
        Renewal::start(
            req.project.clone(),
            setup.agent.name.clone(),
            todo,
            epoch,
            lease_ttl(setup),
        )
    });
    // Held until the spawn is recorded (or the spawn failed): never while the agent runs.
    let mut store = Some(store);
    let ran = runtime.block_on(run_slice(spec, stdin, parser, |spawned, control| {
        pid = Some(spawned);
        if let Some(renewal) = &renewal {
            renewal.stop_slice_if_lost(control.clone());
        }
        req.shutdown.register(started.id.0, control);
        record_spawned(store.take(), &req.project, setup, started.id, spawned);
        on_step(Step::Spawned {
            slice: started.id,
            pid: spawned,
        });
    }));
    drop(store);
    req.shutdown.unregister(started.id.0);
    if let Err(e) = redact_log(&req.project.root().join(&log), &plan.secret_env_names) {
        tracing::warn!(slice = %started.id, error = %e, "cannot redact the slice log");
    }
    let lost_claim = renewal.and_then(Renewal::finish);
    let ended_at = Timestamp::now();
    let changes = scope::compare(req.project.root(), &before, goal.map_or(&[], |g| &g.scope));
    let mut judged = judge(&ran);
    if judged.outcome == "interrupted" {
        if let Some(why) = lost_claim {
            judged.reason = format!("the slice was stopped: it lost its claim ({why})");
        } else if let Some(why) = req.shutdown.reason() {
            judged.reason = format!("shutdown: loopx was stopped ({why}) during the slice");
        }
    }
    let usage = ran.summary.usage();
    let bytes = ran.report.as_ref().map_or(0, |r| r.bytes_total);
    let finished = Finished {
        slice: started.id,
        agent: &setup.agent.name,
        todo: claim.todo,
        epoch: claim.epoch,
        kind,
        outcome: &judged.outcome,
        reason: &judged.reason,
        exit: judged.exit.clone(),
        classification: judged.classification.as_ref(),
        tokens: usage.input.saturating_add(usage.output),
        cost_usd: ran.summary.cost_usd.unwrap_or(0.0),
        session: ran.summary.session_id.as_deref(),
        output_bytes: bytes,
        started_at: started.started_at,
        ended_at,
        log: &log,
        quota: setup.quota_request(0, 0.0, None),
        changes: &changes,
    };
    let mut summary = write_back(&req.project, &actor(setup), &finished, pid)?;
    summary.limit_secs = started.limit_secs;
    on_step(Step::Ended(&summary));
    Ok(summary)
}

/// Renders the prompt and records the slice as started (before anything is spawned).
fn start(
    req: &RunOnce,
    setup: &AgentSetup,
    store: &Store,
    goal: Option<&Goal>,
    claim: Claim,
    how: How,
) -> Result<(loopx_kernel::model::SliceRecord, String), SupervisorError> {
    let kind = how.kind;
    let values = store.read(|s| {
        let todo: Option<Todo> = match claim.todo {
            Some(id) => s.todo(id)?,
            None => None,
        };
        prompt_values(
            s,
            PromptFor {
                agent: &setup.agent.name,
                role: setup.view.role.as_deref(),
                goal,
                todo: todo.as_ref(),
                kind,
            },
        )
    })?;
    let prompt = render_prompt(&setup.loaded.profile.prompt_template, &values);
    let plan = plan_for(req, setup, how, &prompt, SLICE_PLACEHOLDER)?;
    let new = NewSlice {
        agent: setup.agent.name.clone(),
        todo: claim.todo,
        epoch: claim.epoch,
        kind,
        profile_hash: setup.loaded.content_hash.to_string(),
        argv: std::iter::once(plan.program.clone())
            .chain(plan.args.iter().cloned())
            .collect(),
        limit_secs: plan.limits.max_time.as_secs(),
        log: Some(slice_file(SLICE_PLACEHOLDER, "log")),
        owner: Some(process_identity(std::process::id())),
    };
    let Applied::Slice(record) =
        store.apply(Op::SliceStart(new), &actor(setup), Timestamp::now())?
    else {
        unreachable!("a slice start yields the slice")
    };
    Ok((record, prompt))
}

/// Gives back a lease this run took for a slice that never started.
fn release_taken(store: &Store, setup: &AgentSetup, claim: Claim) {
    if let (true, Some(todo), Some(epoch)) = (claim.taken, claim.todo, claim.epoch) {
        let op = Op::TodoRelease {
            todo,
            agent: setup.agent.name.clone(),
            epoch,
        };
        if let Err(e) = store.apply(op, &actor(setup), Timestamp::now()) {
            tracing::warn!(%todo, error = %e, "could not release the claim of an unstarted slice");
        }
    }
}

/// Creates the slice's log as 0600 before the PTY crate opens it: agent output may hold
/// secrets, and truncating an existing file keeps its mode. A failure here is left to the
/// PTY crate, which reports it as a spawn failure.
fn create_private(path: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path);
    if let Err(e) = created {
        tracing::warn!(path = %path.display(), error = %e, "cannot create the slice log");
    }
}

/// Records the process identity, through `store` if it is still open, and closes it. A failure
/// is logged, not fatal: the process runs either way, and its slice is already recorded as
/// started.
fn record_spawned(
    store: Option<Store>,
    project: &Project,
    setup: &AgentSetup,
    slice: SliceId,
    pid: u32,
) {
    let op = Op::SliceSpawned {
        slice,
        process: process_identity(pid),
    };
    let result = store
        .map_or_else(|| Store::open(project), Ok)
        .and_then(|s| s.apply(op, &actor(setup), Timestamp::now()));
    if let Err(e) = result {
        tracing::warn!(%slice, pid, error = %e, "could not record the spawned process");
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn slice_files_live_in_the_state_directory() {
        assert_eq!(slice_file("s3", "log"), ".loopx/slices/s3.log");
        assert!(Path::new(&slice_file(SLICE_PLACEHOLDER, "prompt")).starts_with(".loopx"));
    }
}
