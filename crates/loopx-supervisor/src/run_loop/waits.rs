//! What each agent of a `loopx run` waits on, recorded when it changes (`AgentWaits` events):
//! a goal's history accounts for every second of an agent's time from these and its slices'
//! own start and end (`docs/history.md`).
//!
//! A decision that repeats what was recorded writes nothing: idle agents decide over and
//! over, and a store write (a sync) per decision would cost more than the waiting it records.
//! The record is best-effort: a busy or full store leaves the last state as it was, and the
//! next decision tries again; it never stops the run.

use std::collections::HashMap;

use loopx_kernel::store::{AgentWaits, Op};
use loopx_kernel::{AgentName, GoalId, Project, Timestamp};
use loopx_quota::{Decision, WaitOn};

use crate::store_cache::StoreCache as Stores;

/// The last state recorded per agent in this run.
#[derive(Debug, Default)]
pub(crate) struct Waits {
    last: HashMap<AgentName, (WaitOn, Option<GoalId>)>,
}

impl Waits {
    /// Records what `agent` waits on under `decision` for `goal`, if it changed. A slice's own
    /// start is its working state: nothing is written for it.
    pub(crate) fn decided(
        &mut self,
        (stores, project): (&Stores, &Project),
        agent: &AgentName,
        (decision, goal): (&Decision, Option<GoalId>),
        now: Timestamp,
    ) {
        let on = decision.waiting_on();
        if on == WaitOn::Working {
            self.last.insert(agent.clone(), (on, goal));
            return;
        }
        self.record(stores, project, agent, (on, goal), decision.reason(), now);
    }

    /// Records that every agent of the run stopped (the run ended).
    pub(crate) fn stopped<'a>(
        &mut self,
        (stores, project): (&Stores, &Project),
        agents: impl Iterator<Item = &'a AgentName>,
        reason: &str,
        now: Timestamp,
    ) {
        for agent in agents {
            let goal = self.last.get(agent).and_then(|(_, goal)| *goal);
            self.record(stores, project, agent, (WaitOn::Stopped, goal), reason, now);
        }
    }

    fn record(
        &mut self,
        stores: &Stores,
        project: &Project,
        agent: &AgentName,
        state: (WaitOn, Option<GoalId>),
        reason: &str,
        now: Timestamp,
    ) {
        if self.last.get(agent) == Some(&state) {
            return;
        }
        let op = Op::AgentWaits(AgentWaits {
            agent: agent.clone(),
            on: state.0.as_str().to_owned(),
            goal: state.1,
            reason: reason.to_owned(),
        });
        let written = stores
            .get(project)
            .map_err(|e| e.to_string())
            .and_then(|store| {
                store
                    .apply(op, loopx_vocab::actor::LOOPX, now)
                    .map_err(|e| e.to_string())
            });
        match written {
            Ok(_) => {
                self.last.insert(agent.clone(), state);
            }
            Err(error) => {
                tracing::debug!(%agent, %error, "could not record what the agent waits on; the next decision tries again");
            }
        }
    }
}
