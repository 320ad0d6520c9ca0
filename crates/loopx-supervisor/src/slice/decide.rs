//! The first stage: decide for the agent. Only `deliver` and `repair` go on to a slice; every
//! other decision (and an unapproved `full` profile) ends here, before anything is claimed.

use loopx_adapters::PermissionLevel;
use loopx_domain::decision::{DecisionState, SharedState};
use loopx_kernel::model::{
    BUDGET_OPTIONS, Blocks, GOAL_MET_OPTIONS, GateKind, Goal, GoalStatus, STALL_OPTIONS, SliceKind,
};
use loopx_kernel::store::NewGate;
use loopx_kernel::{GateId, Store, Timestamp, TodoId};
use loopx_quota::{Decision, DecisionKind};

use super::guard::ACTOR;
use crate::errors::SupervisorError;
use crate::once::{Once, RunOnce, Step};
use loopx_domain::agent::{AgentSetup, load_agent};
use loopx_domain::approval::{self, Permission};

/// What kind of slice runs, and how.
#[derive(Debug, Clone, Copy)]
pub(crate) struct How {
    pub kind: SliceKind,
    pub permission: PermissionLevel,
    /// The first slice after a vendor hold: a short one.
    pub probe: bool,
    /// The most tokens it may spend (the decision's ceiling).
    pub max_tokens: Option<u64>,
}

/// A decision to run a slice, with what the slice needs.
#[derive(Debug)]
pub(crate) struct Decided {
    pub setup: AgentSetup,
    pub decision: Decision,
    pub goal: Option<Goal>,
    /// The todo to work on; `None` for a planning slice.
    pub todo: Option<TodoId>,
    pub how: How,
    /// The supervisor's store handle: the begin writes through it, then it records the
    /// spawned process.
    pub store: std::sync::Arc<Store>,
}

/// Where the decision leads.
#[derive(Debug)]
pub(crate) enum Next {
    Run(Box<Decided>),
    Done(Box<Once>),
}

/// Decides for the agent at `now`.
pub(crate) fn decide(
    req: &RunOnce,
    on_step: &mut dyn FnMut(Step<'_>),
) -> Result<Next, SupervisorError> {
    let now = req.world.clock.now();
    // The supervisor's own handle once it has one (it is opened for the first write and kept
    // while it runs), else a read-only open: a decision that writes nothing (wait, quiet,
    // stop: what idle agents decide over and over, and `run --once` often) syncs nothing.
    let store = match req.world.stores.cached(&req.project) {
        Some(store) => store,
        None => std::sync::Arc::new(Store::open_read(&req.project)?),
    };
    let agents = store.read(|s| s.agents())?;
    let setup = match load_agent(&req.project, agents, req.agent.as_deref()) {
        Ok(setup) => setup,
        // A broken profile stops nothing once the goal is over; while it is not, the error is
        // the agent's to fix, and the loop tries again after it (a person may fix the file).
        Err(e @ loopx_domain::agent::AgentError::Profile { .. }) => {
            return match goal_over(&store, req.agent.as_deref())? {
                Some(done) => Ok(Next::Done(Box::new(done))),
                None => Err(e.into()),
            };
        }
        Err(e) => return Err(e.into()),
    };
    let name = setup.agent.name.to_string();
    // The budget is the project's (`loopx.toml`), read at each decision so an edit counts.
    let budget = crate::notify::project_config(&req.project)?.budget;
    let state = store.read(|s| {
        let shared = SharedState::read(s, now)?.with_budget(budget);
        DecisionState::for_agent(std::sync::Arc::new(shared), s, setup.view.clone())
    })?;
    let mut decision = state.decide();
    if decision.kind() == DecisionKind::Ask && decision.gate().is_none() {
        let store = req.world.stores.get(&req.project)?;
        let opened = if decision.over_budget() {
            open_budget_gate(&store, &decision, now)?
        } else if decision.goal_met() {
            open_goal_met_gate(&store, &decision, now)?
        } else {
            open_stall_gate(&store, &decision, now)?
        };
        if let Some(opened) = opened {
            decision.gate_opened(opened);
        }
    }
    on_step(Step::Decided {
        agent: &setup.agent.name,
        decision: &decision,
        now,
    });
    let kind = match (decision.kind(), decision.slice()) {
        (DecisionKind::Deliver | DecisionKind::Repair, Some(kind)) => kind,
        _ => {
            return Ok(Next::Done(Box::new(Once::Decided {
                agent: name,
                decision,
            })));
        }
    };
    let goal = store.read(|s| s.current_goal())?;
    // A slice may begin: from here on the store is written through the supervisor's handle.
    let store = req.world.stores.get(&req.project)?;
    let permission = match approval::permission(&store, &setup, goal.as_ref(), now)? {
        Permission::Run(level) => level,
        Permission::Held(decision) => {
            on_step(Step::Decided {
                agent: &setup.agent.name,
                decision: &decision,
                now,
            });
            return Ok(Next::Done(Box::new(Once::Decided {
                agent: name,
                decision,
            })));
        }
    };
    let todo: Option<TodoId> = decision.todo().as_ref().map(|(id, _)| *id);
    let how = How {
        kind,
        permission,
        probe: decision.probe(),
        max_tokens: decision.max_tokens(),
    };
    Ok(Next::Run(Box::new(Decided {
        setup,
        decision,
        goal,
        todo,
        how,
        store,
    })))
}

/// `stop` with the goal's state when it is over (done, paused, archived, or none at all).
fn goal_over(store: &Store, agent: Option<&str>) -> Result<Option<Once>, SupervisorError> {
    let goal = store.read(|s| s.current_goal())?;
    let reason = match &goal {
        Some(goal) if goal.status == GoalStatus::Active => return Ok(None),
        Some(goal) => format!("goal {} is {}", goal.id, goal.status.as_str()),
        None => "there is no active goal".to_owned(),
    };
    Ok(Some(Once::Decided {
        agent: agent.unwrap_or_default().to_owned(),
        decision: Decision::stop(reason),
    }))
}

/// Opens the gate a goal past its budget needs (the kernel gives back the open one when a peer
/// asked first). Returns the gate as the decision shows it.
fn open_budget_gate(
    store: &Store,
    decision: &Decision,
    now: Timestamp,
) -> Result<Option<(GateId, String)>, SupervisorError> {
    let Some(goal) = store.read(|s| s.current_goal())? else {
        return Ok(None);
    };
    let spent = store.read(|s| s.goal_spent(goal.id))?;
    let gate = NewGate {
        question: loopx_kernel::limits::bounded(decision.reason(), loopx_kernel::limits::QUESTION),
        options: BUDGET_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        context: format!(
            "Since {} goal {} spent {} slices, {} tokens and ${:.2} without a todo done.\n`continue` gives it a fresh budget; `pause` pauses the goal.",
            spent
                .since
                .map_or_else(|| "it began".to_owned(), |t| t.to_string()),
            goal.id,
            spent.slices,
            spent.tokens,
            spent.cost_usd
        ),
        blocks: Blocks::Global,
        kind: GateKind::Budget { goal: goal.id },
    };
    ask(store, gate, now)
}

/// Opens the gate that asks whether the goal is met (the kernel gives back the open one when a
/// peer asked first). Returns the gate as the decision shows it.
fn open_goal_met_gate(
    store: &Store,
    decision: &Decision,
    now: Timestamp,
) -> Result<Option<(GateId, String)>, SupervisorError> {
    let Some(goal) = store.read(|s| s.current_goal())? else {
        return Ok(None);
    };
    let gate = NewGate {
        question: loopx_kernel::limits::bounded(
            &format!(
                "Goal {} ({}) has no todo left, and its last planning slices proposed none: is it met?",
                goal.id, goal.objective
            ),
            loopx_kernel::limits::QUESTION,
        ),
        options: GOAL_MET_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        context: format!(
            "{}\n`done` marks the goal done; `plan` plans again (guidance for the planning slice goes in `--note`). Adding a todo and answering `plan` puts the agents on it.",
            decision.reason()
        ),
        blocks: Blocks::Global,
        kind: GateKind::GoalMet { goal: goal.id },
    };
    ask(store, gate, now)
}

/// Opens the gate a stalled todo needs: the decision says ask, and no gate asks yet. The kernel
/// gives back the open one instead when a peer asked first. Returns the gate as the decision
/// shows it.
fn open_stall_gate(
    store: &Store,
    decision: &Decision,
    now: Timestamp,
) -> Result<Option<(GateId, String)>, SupervisorError> {
    let Some(id) = decision.stalled() else {
        return Ok(None);
    };
    let title = store
        .read(|s| s.todo(id))?
        .map(|t| t.title)
        .unwrap_or_default();
    let gate = NewGate {
        question: loopx_kernel::limits::bounded(
            &format!(
                "Todo {id} ({title}) has gone several slices without progress: retry it with a fresh budget of attempts, or drop it?"
            ),
            loopx_kernel::limits::QUESTION,
        ),
        options: STALL_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        context: format!(
            "{}\n`retry` gives it a fresh budget; `drop` drops it. Guidance for its next slice goes in `--note` (`loopx gate answer ID 1 --note \"…\"`).",
            decision.reason()
        ),
        blocks: Blocks::Todos(vec![id]),
        kind: GateKind::Stall { todo: id },
    };
    ask(store, gate, now)
}

/// Opens `gate` (or finds the open one a peer asked first); the gate as the decision shows it.
fn ask(
    store: &Store,
    gate: NewGate,
    now: Timestamp,
) -> Result<Option<(GateId, String)>, SupervisorError> {
    let gate = store.run(gate, ACTOR, now)?;
    Ok(Some((gate.id, gate.question)))
}
