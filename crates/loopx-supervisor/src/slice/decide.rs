//! The first stage: decide for the agent. Only `deliver` and `repair` go on to a slice; every
//! other decision (and an unapproved `full` profile) ends here, before anything is claimed. The
//! rules — which decision goes on, the gates asked instead — are `loopx_domain::ask`'s.

use loopx_adapters::PermissionLevel;
use loopx_domain::ask;
use loopx_domain::decision::{DecisionState, SharedState};
use loopx_kernel::model::{Goal, SliceKind};
use loopx_kernel::{Store, TodoId};
use loopx_quota::Decision;

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
            return match ask::goal_over(store.read(|s| s.current_goal())?.as_ref()) {
                Some(decision) => Ok(Next::Done(Box::new(Once::Decided {
                    agent: req.agent.clone().unwrap_or_default(),
                    decision,
                }))),
                None => Err(e.into()),
            };
        }
        Err(e) => return Err(e.into()),
    };
    let name = setup.agent.name.to_string();
    // The budget is the project's (`loopx.toml`), read at each decision so an edit counts.
    let config = crate::notify::project_config(&req.project)?;
    let state = store.read(|s| {
        let shared = SharedState::read(s, now)?.under(&config);
        DecisionState::for_agent(std::sync::Arc::new(shared), s, setup.view.clone())
    })?;
    let mut decision = state.decide();
    if ask::needs_gate(&decision) {
        let store = req.world.stores.get(&req.project)?;
        ask::open_gate(&store, &mut decision, state.goal, now)?;
    }
    on_step(Step::Decided {
        agent: &setup.agent.name,
        decision: &decision,
        goal: state.goal,
        now,
    });
    let Some(kind) = ask::slice(&decision) else {
        return Ok(Next::Done(Box::new(Once::Decided {
            agent: name,
            decision,
        })));
    };
    // The goal the decision chose among the active ones (the one a planning slice plans).
    let goal = match state.goal {
        Some(id) => store.read(|s| s.goal(id))?,
        None => None,
    };
    // A slice may begin: from here on the store is written through the supervisor's handle.
    let store = req.world.stores.get(&req.project)?;
    let permission = match approval::permission(&store, &setup, goal.as_ref(), now)? {
        Permission::Run(level) => level,
        Permission::Held(decision) => {
            on_step(Step::Decided {
                agent: &setup.agent.name,
                decision: &decision,
                goal: state.goal,
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
