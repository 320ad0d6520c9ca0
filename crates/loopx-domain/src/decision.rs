//! Building the input of `loopx_quota::decide` from a snapshot of the store.
//!
//! The decision itself is pure and lives in `loopx-quota`; this module reads what it needs —
//! the goal, open todos, open gates, recent slices, holds, pacing and window state, the goal's
//! busy time — and converts kernel records into the quota crate's views. The agent's own
//! settings (pacing, windows, account) come from its profile, which the caller loads.

use loopx_quota::{
    AgentView, DecideInput, Decision, GateBlocks, GateView, GoalView, Policy, SliceView, Spending,
    TodoView, WaitOn, WindowState,
};

use crate::account::{hold_views, pacing_tat, window_state};
use loopx_kernel::model::{Blocks, GoalStatus, TodoState};
use loopx_kernel::store::{Snapshot, busy_intervals, hold_keys};
use loopx_kernel::{AgentName, KernelError, Timestamp};

/// How many recent slices the decision looks at (stall streaks, planning runs, repairs).
const RECENT_SLICES: usize = 200;

/// How many of an agent's best open todos the decision reads first; it reads eight times as
/// many each time the answer depends on the ones left out (none of these could be taken).
const FIRST_READ: usize = 32;
/// How many of the goal's waiting todos the decision sees (to say what the agent waits on).
const WAITING_SEEN: usize = 8;

/// What every agent's decision reads alike: each active goal's part ([`GoalPart`]), open
/// gates, recent slices and holds. Read once per snapshot and shared, so deciding for several
/// agents (as `loopx status` does) reads them once. The open todos an agent could take are
/// read per agent, from the ready index, as few as the answer needs
/// ([`DecisionState::for_agent`]).
#[derive(Debug, Clone)]
pub struct SharedState {
    pub now: Timestamp,
    /// The active goals in the order agents serve them (priority, then the oldest); when none
    /// is active, the goal shown (a finished one, so its agents stop with "goal g1 is done"),
    /// or no part at all.
    pub goals: Vec<GoalPart>,
    pub gates: Vec<GateView>,
    pub slices: Vec<SliceView>,
    pub holds: Vec<loopx_kernel::model::QuotaHold>,
    pub policy: Policy,
    /// `[metrics]`: a new best of a metric that asks on one asks a person.
    pub metrics: std::collections::BTreeMap<String, loopx_adapters::MetricRule>,
    /// Running slices' todos: `(todo, slice)`.
    running: Vec<(loopx_kernel::ids::TodoId, loopx_kernel::ids::SliceId)>,
    /// Running slices' agents, one entry per slice.
    running_agents: Vec<AgentName>,
}

/// One goal as every agent's decision sees it: the goal, its claimed and some waiting todos,
/// and its busy time.
#[derive(Debug, Clone)]
pub struct GoalPart {
    pub goal: GoalView,
    pub priority: i32,
    /// The goal's claimed todos, the first few of its open todos that wait on another, and the
    /// first ready todo of each role.
    pub todos: Vec<TodoView>,
    /// Its slice time in the share window (read when its share limits, or when several goals
    /// are weighed by it).
    pub busy: Vec<(u64, u64)>,
    /// A slice of it runs now.
    running: bool,
    /// The goal lets its agents write: in a read-only goal nobody writes, so no agent is set
    /// apart from work for being read-only (`AgentView::writes`).
    writes: bool,
}

impl GoalPart {
    /// How much of its share the goal used in the share window: its busy time over its share
    /// (a goal with share 0 never runs, so it ranks last).
    fn share_used(&self, now: Timestamp, window_ms: u64) -> f64 {
        let since = now.0.saturating_sub(window_ms);
        let busy: u64 = self
            .busy
            .iter()
            .map(|(a, b)| b.min(&now.0).saturating_sub(*a.max(&since)))
            .sum();
        match self.goal.share {
            share if share > 0.0 => busy as f64 / share,
            _ => f64::INFINITY,
        }
    }
}

impl SharedState {
    /// The agents whose slices run on the same account as `agent` (its own running slice is
    /// not beside it: the decision says it is running).
    fn in_flight(
        &self,
        snap: &Snapshot<'_>,
        agent: &AgentView,
    ) -> Result<Vec<AgentName>, KernelError> {
        let mut in_flight = Vec::new();
        for running in self.running_agents.iter().filter(|a| **a != agent.name) {
            let account = snap.agent_account(running)?;
            if account.as_deref() == Some(agent.account.as_str()) {
                in_flight.push(running.clone());
            }
        }
        Ok(in_flight)
    }

    /// The todos `agent` sees with its first `limit` ready todos read, and whether more ready
    /// todos are left unread.
    fn todos_for(
        &self,
        snap: &Snapshot<'_>,
        part: &GoalPart,
        agent: &AgentView,
        limit: usize,
    ) -> Result<(Vec<TodoView>, bool), KernelError> {
        let mut todos = part.todos.clone();
        let (ready, horizon) = ready_for(snap, part.goal.id, agent, limit)?;
        if let Some(horizon) = horizon {
            // A peer's expired claim it could take ranks among the ready todos: one past the
            // last read could come after todos not read yet. Its own claims come first
            // whatever their rank.
            todos.retain(|t| {
                t.lease.as_ref().is_some_and(|(a, _)| *a == agent.name)
                    || (std::cmp::Reverse(t.priority), t.order) <= horizon
            });
        }
        for todo in &ready {
            if !todos.iter().any(|t| t.id == todo.id) {
                todos.push(todo_view(snap, todo, true, &self.running)?);
            }
        }
        Ok((todos, horizon.is_some()))
    }

    /// The same state, deciding under the project's rules (`[budget]` and `[limits]` in
    /// `loopx.toml`, which the kernel does not read).
    pub fn under(mut self, config: &loopx_adapters::ProjectConfig) -> SharedState {
        self.policy.budget = config.budget.clone();
        if let Some(handbacks) = config.handbacks {
            self.policy.handbacks = handbacks;
        }
        self.metrics = config.metrics.clone();
        self
    }

    /// Reads the shared part of the decision at `now`.
    pub fn read(snap: &Snapshot<'_>, now: Timestamp) -> Result<SharedState, KernelError> {
        let policy = Policy::default();
        let mut goals = snap.active_goals()?;
        if goals.is_empty() {
            goals.extend(snap.goal_shown()?);
        }
        let running = snap.running_slices()?;
        let running_todos: Vec<_> = running
            .iter()
            .filter_map(|s| Some((s.todo?, s.id)))
            .collect();
        // Only a share below 1 limits by busy time (`loopx_quota::share_wait`), and only
        // several goals are weighed by it: otherwise the last hour's spends, one or two per
        // slice, are not read at all.
        let weighed = goals.len() > 1 || goals.iter().any(|g| g.share < 1.0);
        let since = Timestamp(now.0.saturating_sub(policy.share_window_ms));
        let spends = match weighed {
            true => snap.spends_since(since)?,
            false => Vec::new(),
        };
        let parts = goals
            .iter()
            .map(|goal| {
                Ok(GoalPart {
                    goal: goal_view(snap, goal)?,
                    priority: goal.priority,
                    todos: goal_todos(snap, goal, &running_todos)?,
                    busy: match weighed {
                        true => busy_intervals(&spends, &running, Some(goal.id), now),
                        false => Vec::new(),
                    },
                    running: running.iter().any(|s| s.goal == Some(goal.id)),
                    writes: goal.permission != loopx_kernel::model::PermissionLevel::ReadOnly,
                })
            })
            .collect::<Result<Vec<_>, KernelError>>()?;
        Ok(SharedState {
            now,
            running: running_todos,
            running_agents: running.into_iter().map(|s| s.agent).collect(),
            goals: parts,
            gates: open_gates(snap)?,
            slices: recent_slices(snap)?,
            holds: snap.quota_holds()?,
            policy,
            metrics: Default::default(),
        })
    }
}

/// The goal's todos every agent's decision sees: its claimed todos, the first few that wait on
/// another, its monitors, and the first ready todo of each role.
fn goal_todos(
    snap: &Snapshot<'_>,
    goal: &loopx_kernel::model::Goal,
    running_todos: &[(loopx_kernel::ids::TodoId, loopx_kernel::ids::SliceId)],
) -> Result<Vec<TodoView>, KernelError> {
    let mut mine: Vec<loopx_kernel::model::Todo> = snap
        .claimed_todos()?
        .into_iter()
        .filter(|t| t.goal == goal.id)
        .collect();
    mine.extend(snap.waiting_todos(goal.id, WAITING_SEEN)?);
    // Its monitors: while all the work waits on one, agents are quiet, and say which.
    mine.extend(snap.monitors(goal.id)?);
    // The first ready todo of each role: an agent that can take none of them still
    // sees that the goal has work left (it stays quiet rather than plans), and why.
    for role in snap.ready_roles(goal.id)? {
        for needs in [false, true] {
            mine.extend(snap.ready_todos(goal.id, role.as_deref(), needs, 1)?);
        }
    }
    mine.iter()
        .map(|todo| todo_view(snap, todo, false, running_todos))
        .collect()
}

/// The open gates, as the decision sees them.
fn open_gates(snap: &Snapshot<'_>) -> Result<Vec<GateView>, KernelError> {
    Ok(snap
        .open_gates()?
        .into_iter()
        .map(|g| GateView {
            id: g.id,
            question: g.question,
            blocks: match g.blocks {
                Blocks::Global => GateBlocks::Global,
                Blocks::Agent(a) => GateBlocks::Agent(a),
                Blocks::Todos(ts) => GateBlocks::Todos(ts),
                Blocks::Goal(goal) => GateBlocks::Goal(goal),
                Blocks::Nothing => GateBlocks::Todos(Vec::new()),
            },
        })
        .collect())
}

/// The newest slices, as the decision sees them.
fn recent_slices(snap: &Snapshot<'_>) -> Result<Vec<SliceView>, KernelError> {
    Ok(snap
        .slices_tail(RECENT_SLICES)?
        .into_iter()
        .map(|s| SliceView {
            id: s.id.0,
            agent: s.agent,
            todo: s.todo,
            kind: s.kind,
            outcome: s.outcome,
            ended_at: s.ended_at.map(|t| t.0),
            tokens: s.tokens,
            cost_usd: s.cost_usd,
        })
        .collect())
}

/// The goal as the decision sees it: its state, what it spent, and when it plans or re-plans.
fn goal_view(snap: &Snapshot<'_>, g: &loopx_kernel::model::Goal) -> Result<GoalView, KernelError> {
    let spent = snap.goal_spent(g.id)?;
    Ok(GoalView {
        id: g.id,
        status: g.status,
        share: g.share,
        spent: Spending {
            slices: spent.slices,
            tokens: spent.tokens,
            cost_usd: spent.cost_usd,
        },
        plans_after: snap.goal_plans_after(g.id)?,
        revision: g.revision,
        replan_after: snap.goal_replan_after(g.id)?,
    })
}

/// A todo as the decision sees it: whether it waits, who holds it, what runs on it. A todo
/// read from the ready index waits on nothing by construction (`ready`): its dependencies are
/// not looked up again.
fn todo_view(
    snap: &Snapshot<'_>,
    t: &loopx_kernel::model::Todo,
    ready: bool,
    running: &[(loopx_kernel::ids::TodoId, loopx_kernel::ids::SliceId)],
) -> Result<TodoView, KernelError> {
    let mut waits_on = None;
    for dep in t.after.iter().filter(|_| !ready) {
        if snap.todo(*dep)?.is_some_and(|d| !d.state.is_final()) {
            waits_on = Some(*dep);
            break;
        }
    }
    Ok(TodoView {
        id: t.id,
        title: t.title.clone(),
        priority: t.priority,
        order: t.id.0,
        needs: t.needs.clone(),
        role: t.role.clone(),
        waits_on,
        lease: t
            .lease
            .as_ref()
            .filter(|_| t.state == TodoState::Claimed)
            .map(|l| (l.agent.clone(), l.expires_at.0)),
        running: running.iter().find(|(id, _)| *id == t.id).map(|(_, s)| *s),
        attempts_since: t.attempts_since.map(|s| s.0),
        monitor: t.monitor.as_ref().map(|m| m.next_due().0),
        rests_until: t.not_before.map(|at| at.0),
    })
}

/// The first ready todos of `goal` that `agent` could take, at most `limit` from each range,
/// in the order it takes them, and the rank of the last when more rank after it. An agent
/// takes todos for its role and todos for any role, and todos that need a capability only when
/// it has some: up to four ranges of the index, merged; when one of them was cut short, the
/// merge is cut at its last row, so that what is returned is a true prefix.
fn ready_for(
    snap: &Snapshot<'_>,
    goal: loopx_kernel::ids::GoalId,
    agent: &AgentView,
    limit: usize,
) -> Result<(Vec<loopx_kernel::model::Todo>, Option<Rank>), KernelError> {
    let rank = |t: &loopx_kernel::model::Todo| (std::cmp::Reverse(t.priority), t.id.0);
    let mut merged = Vec::new();
    let mut horizon: Option<Rank> = None;
    // A read-only agent takes only todos for its role (`AgentView::writes`).
    let any_role = agent.writes.then_some(None);
    let roles = any_role.into_iter().chain(agent.role.as_deref().map(Some));
    let needs: &[bool] = match agent.capabilities.is_empty() {
        true => &[false],
        false => &[false, true],
    };
    let ranges = roles.flat_map(|role| needs.iter().map(move |needs| (role, *needs)));
    for (role, needs) in ranges {
        let mut todos = snap.ready_todos(goal, role, needs, limit.saturating_add(1))?;
        if todos.len() > limit {
            todos.truncate(limit);
            if let Some(last) = todos.last().map(rank) {
                horizon = Some(horizon.map_or(last, |h| h.min(last)));
            }
        }
        merged.extend(todos);
    }
    merged.sort_by_key(rank);
    if let Some(horizon) = horizon {
        merged.retain(|t| rank(t) <= horizon);
    }
    Ok((merged, horizon))
}

/// Where a todo ranks among those an agent could take: higher priority first, then older.
type Rank = (std::cmp::Reverse<i32>, u64);

/// Everything `decide` reads for one agent: the shared state plus the agent's own quota state
/// and the open todos it could take, of the goal it was decided for.
#[derive(Debug, Clone)]
pub struct DecisionState {
    pub shared: std::sync::Arc<SharedState>,
    pub agent: AgentView,
    pub holds: Vec<loopx_quota::Hold>,
    pub pacing_tat: Option<u64>,
    pub windows: Vec<WindowState>,
    /// The agents with a slice running on this agent's account (`DecideInput::in_flight`).
    pub in_flight: Vec<AgentName>,
    /// The goal the decision is for (the goal a planning slice plans), if any.
    pub goal: Option<loopx_kernel::ids::GoalId>,
    /// The goal's shared todos and the agent's best ready ones: as many as the decision needed.
    pub todos: Vec<TodoView>,
    /// The decision, made while reading (it says how many todos to read).
    decision: Decision,
}

/// The agent's own quota state, the same whichever goal it is decided for.
struct AgentQuota {
    holds: Vec<loopx_quota::Hold>,
    pacing_tat: Option<u64>,
    windows: Vec<WindowState>,
    in_flight: Vec<AgentName>,
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

    /// The state of one agent, on shared state read from the same snapshot: decided for each
    /// active goal it works on, and the goal chosen as [`choose`] says.
    pub fn for_agent(
        shared: std::sync::Arc<SharedState>,
        snap: &Snapshot<'_>,
        agent: AgentView,
    ) -> Result<DecisionState, KernelError> {
        let name: AgentName = agent.name.clone();
        let keys = hold_keys(&name, &agent.account);
        let holds: Vec<_> = shared
            .holds
            .iter()
            .filter(|h| keys.contains(&h.key))
            .cloned()
            .collect();
        let quota = AgentQuota {
            pacing_tat: pacing_tat(snap, &name)?,
            windows: agent
                .windows
                .iter()
                .map(|l| window_state(snap, &agent.account, l))
                .collect::<Result<Vec<_>, KernelError>>()?,
            holds: hold_views(&holds),
            in_flight: shared.in_flight(snap, &agent)?,
        };
        let kept_to = snap
            .agent(name.as_str())?
            .map(|a| a.goals)
            .unwrap_or_default();
        let parts: Vec<&GoalPart> = shared
            .goals
            .iter()
            .filter(|p| kept_to.is_empty() || kept_to.contains(&p.goal.id))
            .collect();
        let mut each = Vec::with_capacity(parts.len().max(1));
        for part in &parts {
            each.push(decide_on(&shared, snap, &agent, &quota, Some(part))?);
        }
        if parts.is_empty() {
            let mut decision = decide_on(&shared, snap, &agent, &quota, None)?;
            // Kept to goals none of which is active: say so, not "there is no active goal".
            if !kept_to.is_empty()
                && shared
                    .goals
                    .iter()
                    .any(|p| p.goal.status == GoalStatus::Active)
            {
                let goals: Vec<String> = kept_to.iter().map(ToString::to_string).collect();
                decision.0 = Decision::stop(format!(
                    "{name} works on goal {} only, and none of them is active\n(hint: `loopx agent set {name} --goals all` lets it work on every goal)",
                    goals.join(", ")
                ));
            }
            each.push(decision);
        }
        let chosen = choose(&shared, &parts, &each);
        let (decision, todos) = each.swap_remove(chosen);
        let goal = parts.get(chosen).map(|p| p.goal.id);
        let agent = writer_view(agent, parts.get(chosen).copied());
        Ok(DecisionState {
            shared,
            agent,
            holds: quota.holds,
            pacing_tat: quota.pacing_tat,
            windows: quota.windows,
            in_flight: quota.in_flight,
            goal,
            todos,
            decision,
        })
    }

    /// The decision.
    pub fn decide(&self) -> Decision {
        self.decision.clone()
    }
}

/// The agent as a goal sees it: in a read-only goal nobody writes, so nobody is set apart
/// from work for being read-only.
fn writer_view(mut agent: AgentView, part: Option<&GoalPart>) -> AgentView {
    agent.writes |= part.is_some_and(|p| !p.writes);
    agent
}

/// The decision for `agent` on one goal's part (`None`: no goal at all), reading as many of
/// its ready todos as the answer needs.
fn decide_on(
    shared: &SharedState,
    snap: &Snapshot<'_>,
    agent: &AgentView,
    quota: &AgentQuota,
    part: Option<&GoalPart>,
) -> Result<(Decision, Vec<TodoView>), KernelError> {
    let agent = writer_view(agent.clone(), part);
    let mut limit = FIRST_READ;
    loop {
        let (todos, more) = match part {
            Some(part) => shared.todos_for(snap, part, &agent, limit)?,
            None => (Vec::new(), false),
        };
        let input = DecideInput {
            now: shared.now.0,
            agent: &agent,
            goal: part.map(|p| &p.goal),
            todos: &todos,
            gates: &shared.gates,
            slices: &shared.slices,
            holds: &quota.holds,
            pacing_tat: quota.pacing_tat,
            windows: &quota.windows,
            in_flight: &quota.in_flight,
            busy: part.map_or(&[][..], |p| &p.busy),
            policy: &shared.policy,
        };
        if let Some(decision) = loopx_quota::decide_prefix(&input, more) {
            // Work handed back and forth along a chain asks a person before one more round.
            let decision = crate::handbacks::guard(snap, decision, shared.policy.handbacks)?;
            // A new best asks a person before the goal goes on.
            let goal = part.map(|p| p.goal.id);
            let decision = crate::metrics::guard(snap, decision, &shared.metrics, goal)?;
            let decision = share_recheck(decision, part, shared.now);
            return Ok((decision, todos));
        }
        limit = limit.saturating_mul(8);
    }
}

/// How long an agent whose goal is at its share waits for that goal's running slice before it
/// looks again, if the slice's end (a change, which wakes it at once) has not come first.
pub const SHARE_RECHECK_MS: u64 = 60_000;

/// A goal at its share with a slice of it running: that slice adds as much busy time as the
/// sliding window takes away, so the moment the share allows a slice, found as if it stopped
/// now, is found again a little later at every decision (the simulation spun on it, 20
/// decisions a second). Look again when it ends, or a minute later.
fn share_recheck(decision: Decision, part: Option<&GoalPart>, now: Timestamp) -> Decision {
    match decision {
        Decision::Wait {
            until: Some(until),
            todo,
            on: WaitOn::Share,
            reason,
        } if part.is_some_and(|p| p.running) => Decision::Wait {
            until: Some(until.max(now.0.saturating_add(SHARE_RECHECK_MS))),
            todo,
            on: WaitOn::Share,
            reason,
        },
        other => other,
    }
}

/// Which goal's decision the agent follows (an index into `each`, one per part): a question
/// to open first (it costs no slice, and the person can answer while work goes on), then the
/// slice of the goal with the highest priority, then the one that used least of its share,
/// then the oldest todo (planning last); else the earliest wake; else the first goal's. A
/// goal that waits (a question, a monitor, its budget) never holds back the others.
fn choose(shared: &SharedState, parts: &[&GoalPart], each: &[(Decision, Vec<TodoView>)]) -> usize {
    if each.len() < 2 {
        return 0;
    }
    if let Some(ask) = each.iter().position(|(d, _)| crate::ask::needs_gate(d)) {
        return ask;
    }
    let window = shared.policy.share_window_ms;
    let runs = (0..each.len()).filter(|i| {
        matches!(
            each[*i].0,
            Decision::Deliver { .. } | Decision::Repair { .. }
        )
    });
    let rank = |i: &usize| {
        let part = parts[*i];
        let todo = each[*i].0.todo().map_or(u64::MAX, |(id, _)| id.0);
        (
            std::cmp::Reverse(part.priority),
            OrderedShare(part.share_used(shared.now, window)),
            todo,
        )
    };
    if let Some(best) = runs.min_by(|a, b| {
        rank(a)
            .partial_cmp(&rank(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    }) {
        return best;
    }
    let wakes = (0..each.len()).filter_map(|i| match &each[i].0 {
        Decision::Wait {
            until: Some(at), ..
        } => Some((*at, i)),
        _ => None,
    });
    if let Some((_, first)) = wakes.min() {
        return first;
    }
    each.iter()
        .position(|(d, _)| !matches!(d, Decision::Stop { .. }))
        .unwrap_or(0)
}

/// A share used, ordered as a number (never NaN: busy time over a positive share, or infinity).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct OrderedShare(f64);
