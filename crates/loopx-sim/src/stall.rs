//! `goal_not_stalled` (issue 49): with several active goals, a goal that waits — a person's
//! question holds it back (`Blocks::Goal`), or it used its share of the last hour — never
//! stalls another. Judged after every step from the store's records and the simulation's own
//! books, not from the decision: while goal X waits, and another goal Y
//!
//! - is neither held back by a gate nor over its own share (by its slices' time in the last
//!   hour, with a margin),
//! - has a todo an agent could take: open, no live claim, its dependencies finished, no open
//!   gate on it, no `--not-before` still ahead,
//! - and some agent could take it: it runs no slice, no gate holds it back, and neither loopx
//!   (a quota hold) nor the vendor (a usage limit, a logout) nor the simulation's ledger of its
//!   account's window says it must wait,
//!
//! then Y is stalled from that step on; a slice that begins in Y, or a step where any of this
//! no longer holds, ends the stall. A stall longer than [`STALL_LIMIT`] halts the run. The
//! limit is long enough for everything else that makes an idle agent wait a little (a backoff
//! of at most ten minutes, pacing, a supervisor restarting, a todo resting after slices without
//! progress) and short enough that a decision following one goal only is caught within a
//! hold.

use std::collections::BTreeMap;
use std::time::Duration;

use loopx_kernel::model::{Blocks, Gate, Goal, SliceRecord, Todo};
use loopx_kernel::store::Snapshot;
use loopx_kernel::{Clock, GoalId, KernelError, Store, Timestamp};

use crate::host::SimHost;
use crate::invariants::{Halt, halt};

/// How long a goal may stall while another waits.
const STALL_LIMIT: Duration = Duration::from_secs(3600);

/// The share window (`loopx_quota::Policy::share_window_ms`, an hour), as the simulation
/// measures it itself.
const SHARE_WINDOW: Duration = Duration::from_secs(3600);

/// A goal counts as over its share from this much of it on, and is judged only below it: the
/// decision weighs charged spends, the simulation its slices' start and end.
const SHARE_MARGIN: f64 = 0.8;

/// Per goal: since when (true time) it has stalled, and why.
#[derive(Debug, Default)]
pub(crate) struct Stalls {
    since: BTreeMap<GoalId, (Timestamp, String)>,
}

impl Stalls {
    /// A slice began in `goal`: its stall, if any, is over.
    pub(crate) fn began(&mut self, goal: Option<GoalId>) {
        if let Some(goal) = goal {
            self.since.remove(&goal);
        }
    }
}

/// After every step, with several goals.
pub(crate) fn after_step(host: &mut SimHost) -> Result<(), Halt> {
    if host.goals.len() < 2 {
        return Ok(());
    }
    let read = Store::open_read(&host.project).and_then(|s| s.read(|s| stalled(s, host)));
    let stalled = match read {
        Ok(stalled) => stalled,
        Err(e) => return halt(host, "kernel_consistent", e.to_string()),
    };
    let true_now = host.clock.true_now();
    let since = &mut host.stalls.since;
    since.retain(|goal, _| stalled.iter().any(|(g, _)| g == goal));
    for (goal, why) in stalled {
        since.entry(goal).or_insert((true_now, why));
    }
    let late = since
        .iter()
        .find(|(_, (at, _))| true_now.since(*at) >= STALL_LIMIT)
        .map(|(goal, (at, why))| (*goal, *at, why.clone()));
    match late {
        Some((goal, at, why)) => halt(
            host,
            "goal_not_stalled",
            format!(
                "goal {goal} got no slice for {} min since {at} while {why}",
                true_now.since(at).as_secs() / 60
            ),
        ),
        None => Ok(()),
    }
}

/// The goals stalled now, each with why: which goal waits, the todo it could run, the agent
/// that could run it.
fn stalled(snap: &Snapshot<'_>, host: &SimHost) -> Result<Vec<(GoalId, String)>, KernelError> {
    let now = host.clock.now();
    let goals = snap.active_goals()?;
    let gates = snap.open_gates()?;
    let slices = snap.slices_tail(200)?;
    let held = |g: &Goal| gates.iter().any(|gate| gate.blocks.holds_whole_goal(g.id));
    let used = |g: &Goal| share_used(&slices, g, now);
    let waiting: Vec<(GoalId, &'static str)> = goals
        .iter()
        .filter_map(|g| match (held(g), used(g) >= SHARE_MARGIN) {
            (true, _) => Some((g.id, "a question holds it back")),
            (false, true) => Some((g.id, "it used its share")),
            (false, false) => None,
        })
        .collect();
    if waiting.is_empty() {
        return Ok(Vec::new());
    }
    let Some(agent) = free_agent(snap, host, &gates, now)? else {
        return Ok(Vec::new());
    };
    let todos = snap.active_todos()?;
    let mut stalled = Vec::new();
    for goal in goals.iter().filter(|g| !held(g) && used(g) < SHARE_MARGIN) {
        let Some((other, because)) = waiting.iter().find(|(w, _)| *w != goal.id) else {
            continue;
        };
        if let Some(todo) = todos
            .iter()
            .find(|t| t.goal == goal.id && takeable(t, &todos, &gates, now))
        {
            stalled.push((
                goal.id,
                format!(
                    "goal {other} waited ({because}), {} of goal {} could be taken and {agent} was idle and not held",
                    todo.id, goal.id
                ),
            ));
        }
    }
    Ok(stalled)
}

/// How much of its share `goal` used in the last hour (1.0: all of it): its slices' time.
fn share_used(slices: &[SliceRecord], goal: &Goal, now: Timestamp) -> f64 {
    if goal.share >= 1.0 {
        return 0.0;
    }
    let from = now.0.saturating_sub(SHARE_WINDOW.as_millis() as u64);
    let busy: u64 = slices
        .iter()
        .filter(|s| s.goal == Some(goal.id))
        .map(|s| {
            let end = s.ended_at.map_or(now.0, |e| e.0).min(now.0);
            end.saturating_sub(s.started_at.0.max(from))
        })
        .sum();
    let allowed = goal.share * SHARE_WINDOW.as_millis() as f64;
    match allowed > 0.0 {
        true => busy as f64 / allowed,
        false => f64::INFINITY,
    }
}

/// Whether an agent could take `todo` now: open, not a monitor, no live claim, its
/// dependencies finished, no open gate on it, not resting until later.
fn takeable(todo: &Todo, todos: &[Todo], gates: &[Gate], now: Timestamp) -> bool {
    let claimed = todo.lease.as_ref().is_some_and(|l| l.expires_at > now);
    let waits = todo
        .after
        .iter()
        .any(|dep| todos.iter().any(|t| t.id == *dep));
    let gated = gates
        .iter()
        .any(|g| matches!(&g.blocks, Blocks::Todos(ts) if ts.contains(&todo.id)));
    let rests = todo.not_before.is_some_and(|at| at > now);
    !todo.state.is_final() && !todo.is_monitor() && !claimed && !waits && !gated && !rests
}

/// An agent that runs no slice and that nothing holds back: no gate, no quota hold in the
/// store, no vendor limit or logout, a window with room by the simulation's own ledger.
fn free_agent(
    snap: &Snapshot<'_>,
    host: &SimHost,
    gates: &[Gate],
    now: Timestamp,
) -> Result<Option<String>, KernelError> {
    let running = snap.running_slices()?;
    let holds = snap.quota_holds()?;
    for spec in &host.plan.scenario.agents {
        let (name, account) = (spec.name.as_str(), spec.account.as_str());
        let busy = running.iter().any(|s| s.agent.as_str() == name);
        let gated = gates
            .iter()
            .any(|g| matches!(&g.blocks, Blocks::Agent(a) if a.as_str() == name));
        let agent_key = format!("agent:{name}");
        let on_hold = holds.iter().any(|h| {
            (h.key == account || h.key == agent_key) && h.until.is_none_or(|until| until > now)
        });
        if busy || gated || on_hold || host.books.stopped.contains(name) {
            continue;
        }
        if host.vendor_holds(account) || window_spent(host, account, now) {
            continue;
        }
        return Ok(Some(name.to_owned()));
    }
    Ok(None)
}

/// Whether `account`'s window is spent by the simulation's ledger of what every slice reported.
fn window_spent(host: &SimHost, account: &str, now: Timestamp) -> bool {
    host.books
        .window(account)
        .is_some_and(|(limit, state)| state.exhausted_until(&limit, now.0).is_some())
}
