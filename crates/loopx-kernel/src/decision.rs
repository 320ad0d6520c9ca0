//! Building the input of `loopx_quota::decide` from a snapshot of the store.
//!
//! The decision itself is pure and lives in `loopx-quota`; this module reads what it needs —
//! the goal, open todos, open gates, recent slices, holds, pacing and window state, the goal's
//! busy time — and converts kernel records into the quota crate's views. The agent's own
//! settings (pacing, windows, account) come from its profile, which the caller loads.

use loopx_quota::{
    AgentView, DecideInput, Decision, GateBlocks, GateView, GoalView, Policy, SliceKind, SliceView,
    Spending, TodoView, WindowState,
};

use crate::AgentName;
use crate::errors::KernelError;
use crate::model::{Blocks, GateState, GoalStatus, TodoState};
use crate::store::Snapshot;
use crate::store::apply::quota::{busy_intervals, hold_keys, hold_views, pacing_key, window_key};
use crate::time::Timestamp;

/// How many recent slices the decision looks at (stall streaks, planning runs, repairs).
const RECENT_SLICES: usize = 200;

/// What every agent's decision reads alike: the goal, open todos, open gates, recent slices,
/// holds and the goal's busy time. Read once per snapshot and shared, so deciding for several
/// agents (as `loopx status` does) decodes the todos once.
#[derive(Debug, Clone)]
pub struct SharedState {
    pub now: Timestamp,
    pub goal: Option<GoalView>,
    pub todos: Vec<TodoView>,
    pub gates: Vec<GateView>,
    pub slices: Vec<SliceView>,
    pub holds: Vec<crate::model::QuotaHold>,
    pub busy: Vec<(u64, u64)>,
    pub policy: Policy,
}

impl SharedState {
    /// The same state, deciding under the project's budget (`[budget]` in `loopx.toml`, which
    /// the kernel does not read).
    pub fn with_budget(mut self, budget: loopx_quota::Budget) -> SharedState {
        self.policy.budget = budget;
        self
    }

    /// Reads the shared part of the decision at `now`.
    pub fn read(snap: &Snapshot<'_>, now: Timestamp) -> Result<SharedState, KernelError> {
        SharedState::read_with(snap, now, &snap.active_todos()?)
    }

    /// Like [`SharedState::read`], with the open and claimed todos already read from `snap`.
    pub fn read_with(
        snap: &Snapshot<'_>,
        now: Timestamp,
        active: &[crate::model::Todo],
    ) -> Result<SharedState, KernelError> {
        let policy = Policy::default();
        // The active or paused goal; else the latest, so that a finished goal's agents stop
        // with "goal g1 is done" rather than "there is no active goal".
        let goal = match snap.current_goal()? {
            Some(goal) => Some(goal),
            None => snap.goals()?.pop(),
        };
        let finished = |id: &crate::ids::TodoId| !active.iter().any(|t| t.id == *id);
        let running = snap.running_slices()?;
        let running_on = |id: crate::ids::TodoId| {
            running
                .iter()
                .find(|s| s.todo == Some(id))
                .map(|s| s.id.to_string())
        };
        let todos = active
            .iter()
            .filter(|t| goal.as_ref().is_some_and(|g| g.id == t.goal))
            .map(|t| TodoView {
                id: t.id.to_string(),
                title: t.title.clone(),
                priority: t.priority,
                order: t.id.0,
                needs: t.needs.clone(),
                role: t.role.clone(),
                waits_on: t
                    .after
                    .iter()
                    .find(|d| !finished(d))
                    .map(ToString::to_string),
                lease: t
                    .lease
                    .as_ref()
                    .filter(|_| t.state == TodoState::Claimed)
                    .map(|l| (l.agent.to_string(), l.expires_at.0)),
                running: running_on(t.id),
                attempts_since: t.attempts_since.map(|s| s.0),
            })
            .collect();
        let gates = snap
            .gates()?
            .into_iter()
            .filter(|g| g.state == GateState::Open)
            .map(|g| GateView {
                id: g.id.to_string(),
                question: g.question,
                blocks: match g.blocks {
                    Blocks::Global => GateBlocks::Global,
                    Blocks::Agent(a) => GateBlocks::Agent(a.to_string()),
                    Blocks::Todos(ts) => {
                        GateBlocks::Todos(ts.iter().map(ToString::to_string).collect())
                    }
                    Blocks::Nothing => GateBlocks::Todos(Vec::new()),
                },
            })
            .collect();
        let slices = snap
            .slices_tail(RECENT_SLICES)?
            .into_iter()
            .map(|s| SliceView {
                id: s.id.0,
                agent: s.agent.to_string(),
                todo: s.todo.map(|t| t.to_string()),
                kind: match s.kind {
                    crate::model::SliceKind::Work => SliceKind::Work,
                    crate::model::SliceKind::Plan => SliceKind::Plan,
                    crate::model::SliceKind::Repair => SliceKind::Repair,
                },
                outcome: s.outcome,
                ended_at: s.ended_at.map(|t| t.0),
            })
            .collect();
        let since = Timestamp(now.0.saturating_sub(policy.share_window_ms));
        let busy = busy_intervals(
            &snap.spends_since(since)?,
            &running,
            goal.as_ref().map(|g| g.id),
            now,
        );
        let spent = match &goal {
            Some(goal) => {
                let spent = snap.goal_spent(goal.id)?;
                Spending {
                    slices: spent.slices,
                    tokens: spent.tokens,
                    cost_usd: spent.cost_usd,
                }
            }
            None => Spending::default(),
        };
        let plans_after = match &goal {
            Some(goal) => snap.goal_plans_after(goal.id)?,
            None => None,
        };
        Ok(SharedState {
            now,
            goal: goal.map(|g| GoalView {
                id: g.id.to_string(),
                status: match g.status {
                    GoalStatus::Active => "active",
                    GoalStatus::Paused => "paused",
                    GoalStatus::Done => "done",
                    GoalStatus::Archived => "archived",
                }
                .to_owned(),
                share: g.share,
                spent,
                plans_after,
            }),
            todos,
            gates,
            slices,
            holds: snap.quota_holds()?,
            busy,
            policy,
        })
    }
}

/// Everything `decide` reads for one agent: the shared state plus the agent's own quota state.
#[derive(Debug, Clone)]
pub struct DecisionState {
    pub shared: std::sync::Arc<SharedState>,
    pub agent: AgentView,
    pub holds: Vec<loopx_quota::Hold>,
    pub pacing_tat: Option<u64>,
    pub windows: Vec<WindowState>,
}

impl DecisionState {
    /// Reads the state `agent` is decided on at `now`.
    pub fn read(
        snap: &Snapshot<'_>,
        agent: AgentView,
        now: Timestamp,
    ) -> Result<DecisionState, KernelError> {
        DecisionState::for_agent(
            std::sync::Arc::new(SharedState::read(snap, now)?),
            snap,
            agent,
        )
    }

    /// The state of one agent, on shared state read from the same snapshot.
    pub fn for_agent(
        shared: std::sync::Arc<SharedState>,
        snap: &Snapshot<'_>,
        agent: AgentView,
    ) -> Result<DecisionState, KernelError> {
        let name: AgentName = agent.name.parse()?;
        let keys = hold_keys(&name, &agent.account);
        let holds: Vec<_> = shared
            .holds
            .iter()
            .filter(|h| keys.contains(&h.key))
            .cloned()
            .collect();
        let pacing_tat = snap.quota_value::<u64>(&pacing_key(&name))?;
        let windows = agent
            .windows
            .iter()
            .map(|l| {
                snap.quota_value::<WindowState>(&window_key(&agent.account, l))
                    .map(Option::unwrap_or_default)
            })
            .collect::<Result<_, _>>()?;
        Ok(DecisionState {
            shared,
            agent,
            holds: hold_views(&holds),
            pacing_tat,
            windows,
        })
    }

    /// The decision.
    pub fn decide(&self) -> Decision {
        let shared = &self.shared;
        loopx_quota::decide(&DecideInput {
            now: shared.now.0,
            agent: &self.agent,
            goal: shared.goal.as_ref(),
            todos: &shared.todos,
            gates: &shared.gates,
            slices: &shared.slices,
            holds: &self.holds,
            pacing_tat: self.pacing_tat,
            windows: &self.windows,
            busy: &shared.busy,
            policy: &shared.policy,
        })
    }
}
