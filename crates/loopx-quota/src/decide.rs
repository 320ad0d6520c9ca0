//! The decision before every slice (`docs/quota.md`, "The order"): a pure function of durable
//! state and `now`.
//!
//! Order, first match wins:
//! 1. the goal is missing or not active → `stop`;
//! 2. an open gate blocks the agent (global, the agent, or every todo it could take), or its
//!    todo has gone `stall_after` slices without progress → `ask`;
//! 3. a hold, pacing, a token/cost window or the goal's share says not yet → `wait` until the
//!    moment every one of them allows a slice (never before a hold ends);
//! 4. the last slice on the todo the agent would take ended abnormally → `repair`;
//! 5. its own claimed todo, or the best claimable one → `deliver` (`work`);
//! 6. no open todo anywhere → `deliver` a planning slice; after `max_plans_in_a_row` finished
//!    planning slices in a row proposed nothing → `ask` whether the goal is met (`goal_met`);
//! 7. otherwise → `quiet`.

pub use crate::decision::{AskAbout, Decision, DecisionKind, Run, TodoRef, WaitOn, Waiting};
use serde::Serialize;

use crate::Millis;
use crate::admission::admission;
use crate::backoff::{no_progress_pause, transient_backoff};
use crate::budget::{Budget, Spending};
use crate::expected::{reserved_spend, spend_ceiling};
use crate::outcome::{Next, Outcome, Streak};
use crate::pacing::Pacing;
use crate::window::{WindowLimit, WindowState};
pub use loopx_vocab::{
    AgentName, GateId, GoalId, GoalStatus, HoldSource, SliceId, SliceKind, TodoId,
};

/// Limits on retrying, stalling and planning.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Policy {
    /// Slices in a row on one todo without progress before a person is asked.
    pub stall_after: u32,
    /// Planning slices in a row (with no todo created) before loopx stays quiet.
    pub max_plans_in_a_row: u32,
    /// The rolling window a goal's share is measured over.
    pub share_window_ms: Millis,
    /// The first pause before a todo is tried again after a slice that completed without
    /// progress; it doubles with each such slice in a row, up to `max_pause_ms`.
    pub no_progress_pause_ms: Millis,
    pub max_pause_ms: Millis,
    /// The first backoff after a temporary failure; it doubles with each one in a row, up to
    /// `max_backoff_ms`.
    pub transient_backoff_ms: Millis,
    pub max_backoff_ms: Millis,
    /// The most a goal may spend without a todo done (`[budget]` in `loopx.toml`).
    pub budget: Budget,
    /// How many times agents of two roles may hand the same work back and forth (a chain of
    /// successors alternating between them) before a person is asked (`[limits] handbacks`).
    pub handbacks: u32,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            stall_after: 3,
            max_plans_in_a_row: 3,
            share_window_ms: 3_600_000,
            no_progress_pause_ms: 60_000,
            max_pause_ms: 30 * 60_000,
            transient_backoff_ms: 30_000,
            max_backoff_ms: 10 * 60_000,
            budget: Budget::default(),
            handbacks: 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoalView {
    pub id: GoalId,
    pub status: GoalStatus,
    pub share: f64,
    /// What it spent since a todo was last done.
    pub spent: Spending,
    /// Planning slices up to this one no longer count (a person said to plan afresh).
    pub plans_after: Option<u64>,
    /// Its revision (1 as started; one more at each `goal amend`).
    pub revision: u32,
    /// Amended after this slice, and not re-planned since: the next slice plans.
    pub replan_after: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentView {
    pub name: AgentName,
    pub capabilities: Vec<String>,
    pub role: Option<String>,
    /// Its permission lets it change files (`workspace-write` or `full`). A read-only agent
    /// takes only todos for its role (review work, or todos that say they need no writes) and
    /// planning: in the README's own quick start a read-only reviewer took the work todo and
    /// "finished" it with no change.
    pub writes: bool,
    /// Holds are keyed by account: every profile on one subscription pauses together.
    pub account: String,
    pub pacing: Option<Pacing>,
    pub windows: Vec<WindowLimit>,
    /// The profile file its quota settings are written in (`.loopx/profiles/executor.toml`): a
    /// wait its pacing causes names the file and key to change. `None` for a view built from
    /// no profile (the kernel's admission, which is given the settings alone).
    pub profile_file: Option<String>,
}

/// An open or claimed todo.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TodoView {
    pub id: TodoId,
    pub title: String,
    pub priority: i32,
    /// Creation order (the todo's number): older first among equals.
    pub order: u64,
    pub needs: Vec<String>,
    pub role: Option<String>,
    /// A dependency that is not finished yet.
    pub waits_on: Option<TodoId>,
    /// The lease: holder and expiry.
    pub lease: Option<(AgentName, Millis)>,
    /// The slice running on it now, whoever's: nobody else may start one, not even another
    /// supervisor running the same agent under its live lease.
    pub running: Option<SliceId>,
    /// Only slices with a higher [`SliceView::id`] count toward the stall guard: a person gave
    /// the todo a fresh budget of attempts.
    pub attempts_since: Option<u64>,
    /// A monitor: loopx polls it, no agent takes it; its next poll is due then.
    pub monitor: Option<Millis>,
    /// No agent takes it before then (`--not-before`).
    pub rests_until: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateBlocks {
    Global,
    Agent(AgentName),
    Todos(Vec<TodoId>),
    /// One goal's work: the decision for another goal goes on.
    Goal(GoalId),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateView {
    pub id: GateId,
    pub question: String,
    pub blocks: GateBlocks,
}

/// A past (or running) slice, oldest first in [`DecideInput::slices`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceView {
    /// The slice's number (`s12` is 12): slices are numbered in the order they began.
    pub id: u64,
    pub agent: AgentName,
    pub todo: Option<TodoId>,
    pub kind: SliceKind,
    /// `None` while running.
    pub outcome: Option<Outcome>,
    /// When it ended; `None` while running.
    pub ended_at: Option<Millis>,
    /// What it spent (0 while running, or when it spent nothing: a usage limit, a failed spawn).
    pub tokens: u64,
    pub cost_usd: f64,
}

/// A hold on an account (or on one agent, keyed `agent:<name>`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hold {
    pub key: String,
    /// `None`: until a person resumes.
    pub until: Option<Millis>,
    pub reason: String,
    pub source: HoldSource,
    /// When the hold was set.
    pub set_at: Millis,
}

impl Hold {
    /// When the hold ends, as seen at `now` (`None`: until a person resumes; see
    /// [`loopx_vocab::kinds::hold_ends`] for a clock that stepped back).
    pub fn ends(&self, now: Millis) -> Option<Millis> {
        loopx_vocab::kinds::hold_ends(self.until, self.set_at, now)
    }
}

/// Everything [`decide`] reads.
#[derive(Debug, Clone)]
pub struct DecideInput<'a> {
    pub now: Millis,
    pub agent: &'a AgentView,
    pub goal: Option<&'a GoalView>,
    /// Open and claimed todos of the goal.
    pub todos: &'a [TodoView],
    /// Open gates.
    pub gates: &'a [GateView],
    /// Recent slices, oldest first.
    pub slices: &'a [SliceView],
    /// Holds on the agent's account and on the agent.
    pub holds: &'a [Hold],
    pub pacing_tat: Option<Millis>,
    /// The state of each of `agent.windows`, in the same order.
    pub windows: &'a [WindowState],
    /// The agents whose slices are running on `agent`'s account now (one entry per slice):
    /// what they are expected to spend is not charged yet, so it is reserved.
    pub in_flight: &'a [AgentName],
    /// The goal's slice time in the share window, as `(start, end)`.
    pub busy: &'a [(Millis, Millis)],
    pub policy: &'a Policy,
}

/// Decides what `input.agent` should do at `input.now`.
///
/// Between the quota and the choice of a todo, the outcome policy (`outcome.rs`) adds two
/// waits: after temporary failures in a row the agent backs off, and a todo that keeps
/// completing without progress rests, longer each time, while other todos go first.
pub fn decide(input: &DecideInput<'_>) -> Decision {
    decide_prefix(input, false).unwrap_or_else(|| {
        // Unreachable: only a partial list of todos leaves the decision open.
        Decision::quiet("nothing to do".to_owned())
    })
}

/// [`decide`] on a partial list of todos, so that the caller need not read every open todo.
///
/// With `more_todos`, `input.todos` holds every claimed todo but only the best-ranked open
/// ones this agent could take (by priority, then age, as [`decide`] ranks them): others exist
/// and rank after all of these. The answer is then the one [`decide`] gives on the whole list
/// whenever it is `Some`; `None` means it depends on the todos left out (no todo here could be
/// taken), and the caller reads more and asks again.
pub fn decide_prefix(input: &DecideInput<'_>, more_todos: bool) -> Option<Decision> {
    if let Some(decision) = not_ready(input) {
        return Some(decision);
    }
    let candidates = candidates(input);
    if let Some(decision) = gate_blocks(input, &candidates, more_todos) {
        return Some(decision);
    }
    if let Some(decision) = over_budget(input) {
        return Some(decision);
    }
    let (chosen, resting) = match first_takeable(input, &candidates) {
        Ok(found) => found,
        Err(ask) => return Some(ask),
    };
    if chosen.is_none() && more_todos {
        // A todo left out might be the one to take, or to ask about.
        return None;
    }
    if let Some(decision) = quota_wait(input) {
        return Some(decision);
    }
    if let Some(decision) = backoff_wait(input) {
        return Some(decision);
    }
    // After an amendment the goal is re-planned first, resting todos or not.
    let replan = crate::replan::replan(input);
    if let (None, None, Some((until, todo, idle))) = (&replan, chosen, resting) {
        return Some(Decision::Wait {
            until: Some(until),
            todo: Some((todo.id, todo.title.clone())),
            on: WaitOn::Rest,
            reason: format!(
                "{} ended {idle} slice(s) in a row without progress (its todo not done, and no `progress` report that moved something): trying it again later",
                todo.id
            ),
        });
    }
    if chosen.is_none()
        && replan.is_none()
        && let Some(todo) = resting_until(input)
    {
        return Some(Decision::Wait {
            until: todo.rests_until,
            todo: Some((todo.id, todo.title.clone())),
            on: WaitOn::Rest,
            reason: format!(
                "{} rests until its --not-before time ({}), and nothing else can be taken now",
                todo.id,
                from_now(input.now, todo.rests_until.unwrap_or(input.now))
            ),
        });
    }
    let decision = match (replan, chosen) {
        (Some(replan), _) => replan,
        (None, Some(todo)) => work_on(input, todo),
        (None, None) => plan_or_quiet(input),
    };
    Some(bounded(input, decision))
}

/// A run's bounds: a short probe right after a vendor hold ended, and the most it may spend.
fn bounded(input: &DecideInput<'_>, mut decision: Decision) -> Decision {
    let probe = input.holds.iter().any(|h| {
        h.source == HoldSource::Vendor && h.ends(input.now).is_some_and(|u| u <= input.now)
    });
    if probe
        && let Decision::Deliver { run, reason } | Decision::Repair { run, reason } = &mut decision
    {
        run.probe = true;
        reason.push_str("; a vendor hold just ended, so this is a short probe first");
    }
    if let Decision::Deliver { run, .. } | Decision::Repair { run, .. } = &mut decision {
        run.max_tokens = spend_ceiling(input, reserved_spend(input).0);
    }
    decision
}

/// A decision before any todo is looked at: no active goal, or the agent runs a slice already.
fn not_ready(input: &DecideInput<'_>) -> Option<Decision> {
    let Some(goal) = input.goal else {
        return Some(Decision::stop("there is no active goal".to_owned()));
    };
    if goal.status != GoalStatus::Active {
        let reason = format!("goal {} is {}", goal.id, goal.status);
        return Some(Decision::stop(reason));
    }
    // One slice per agent at a time, whichever supervisor runs it (the kernel refuses a second).
    let running = input
        .slices
        .iter()
        .rev()
        .find(|s| s.outcome.is_none() && s.agent == input.agent.name)?;
    Some(Decision::quiet(format!(
        "{} is running slice s{} now",
        input.agent.name, running.id
    )))
}

/// The todo to work on, if any, and the one resting the shortest: until when, and after how
/// many slices without progress.
type Resting<'t> = (Option<&'t TodoView>, Option<(Millis, &'t TodoView, u32)>);

/// The first todo not held back by a gate or resting after slices without progress, and the
/// one resting the shortest; a stalled one asks a person first (`Err`), resting or not.
fn first_takeable<'t>(
    input: &'t DecideInput<'_>,
    candidates: &[&'t TodoView],
) -> Result<Resting<'t>, Decision> {
    let mut resting: Option<(Millis, &TodoView, u32)> = None;
    let mut chosen = None;
    for todo in candidates.iter().filter(|t| !blocked_by_gate(input, t)) {
        if stall_streak(input.slices, todo) >= input.policy.stall_after {
            return Err(Decision::Ask {
                about: AskAbout::Stalled((todo.id, todo.title.clone())),
                gate: None,
                reason: format!(
                    "{} went {} slices without progress; a person should look at it",
                    todo.id, input.policy.stall_after
                ),
            });
        }
        match no_progress_pause(input.slices, todo, input.policy, input.now) {
            Some((until, idle)) if until > input.now => {
                if resting.is_none_or(|(at, _, _)| until < at) {
                    resting = Some((until, *todo, idle));
                }
            }
            _ => {
                chosen = Some(*todo);
                break;
            }
        }
    }
    Ok((chosen, resting))
}

/// A wait after slices in a row that failed for a passing reason.
fn backoff_wait(input: &DecideInput<'_>) -> Option<Decision> {
    let (until, failed) =
        transient_backoff(input.slices, &input.agent.name, input.policy, input.now)?;
    (until > input.now).then(|| {
        Decision::wait(
            Some(until),
            WaitOn::Backoff,
            format!(
                "{} ended {failed} slice(s) in a row with a temporary failure: backing off",
                input.agent.name
            ),
        )
    })
}

/// Todos the agent could take, best first: its own claim, then claimable ones by priority and age.
fn candidates<'t>(input: &'t DecideInput<'_>) -> Vec<&'t TodoView> {
    let agent = input.agent;
    let mut own: Vec<&TodoView> = input
        .todos
        .iter()
        .filter(|t| t.lease.as_ref().is_some_and(|(a, _)| *a == agent.name))
        .filter(|t| t.running.is_none())
        // A continuation held for it may come after a todo not finished yet.
        .filter(|t| t.waits_on.is_none())
        // Claimed before its profile became read-only: its claim lapses to a writer.
        .filter(|t| agent.writes || t.role.is_some())
        .collect();
    let mut claimable: Vec<&TodoView> = input
        .todos
        .iter()
        .filter(|t| {
            t.lease
                .as_ref()
                .is_none_or(|(_, until)| *until <= input.now)
        })
        .filter(|t| t.lease.as_ref().is_none_or(|(a, _)| *a != agent.name))
        .filter(|t| t.waits_on.is_none())
        .filter(|t| t.monitor.is_none())
        .filter(|t| t.rests_until.is_none_or(|until| until <= input.now))
        .filter(|t| t.running.is_none())
        .filter(|t| t.needs.iter().all(|n| agent.capabilities.contains(n)))
        .filter(|t| t.role.is_none() || t.role == agent.role)
        // Work without a role is work that changes files: a writer's.
        .filter(|t| agent.writes || t.role.is_some())
        .collect();
    let best =
        |a: &&TodoView, b: &&TodoView| b.priority.cmp(&a.priority).then(a.order.cmp(&b.order));
    own.sort_by(best);
    claimable.sort_by(best);
    own.extend(claimable);
    own
}

/// The first todo this agent could take once its `--not-before` time comes.
fn resting_until<'t>(input: &'t DecideInput<'_>) -> Option<&'t TodoView> {
    let agent = input.agent;
    input
        .todos
        .iter()
        .filter(|t| t.rests_until.is_some_and(|until| until > input.now))
        .filter(|t| t.waits_on.is_none() && t.monitor.is_none() && t.lease.is_none())
        .filter(|t| t.needs.iter().all(|n| agent.capabilities.contains(n)))
        .filter(|t| t.role.is_none() || t.role == agent.role)
        .filter(|t| agent.writes || t.role.is_some())
        .filter(|t| !blocked_by_gate(input, t))
        .min_by_key(|t| t.rests_until)
}

/// `in 4m 10s`, `now`: how far `at` is from `now`, for a reason.
fn from_now(now: Millis, at: Millis) -> String {
    let secs = at.saturating_sub(now).div_ceil(1000);
    match secs {
        0 => "now".to_owned(),
        1..60 => format!("in {secs}s"),
        60..3600 => format!("in {}m {}s", secs / 60, secs % 60),
        _ => format!("in {}h {}m", secs / 3600, secs % 3600 / 60),
    }
}

/// When every open todo in view is a monitor or waits on another todo, the monitor the work
/// waits for: a question about one first, else the one polled next.
fn waiting_on_monitor(input: &DecideInput<'_>) -> Option<Decision> {
    let all_wait = input
        .todos
        .iter()
        .all(|t| t.monitor.is_some() || (t.waits_on.is_some() && t.running.is_none()));
    if !all_wait {
        return None;
    }
    let monitors = || input.todos.iter().filter(|t| t.monitor.is_some());
    for todo in monitors() {
        if let Some(gate) = input
            .gates
            .iter()
            .find(|g| matches!(&g.blocks, GateBlocks::Todos(ids) if ids.contains(&todo.id)))
        {
            return Some(ask(
                gate,
                format!(
                    "the open work waits on monitor {}, and a person is asked about it",
                    todo.id
                ),
            ));
        }
    }
    // A monitor that waits on a todo itself is not polled yet: the one the work waits for
    // is one that is.
    let next = monitors()
        .filter(|t| t.waits_on.is_none())
        .min_by_key(|t| t.monitor)
        .or_else(|| monitors().min_by_key(|t| t.monitor))?;
    let due = next.monitor.unwrap_or(input.now);
    Some(Decision::Quiet {
        reason: format!(
            "the open work waits on monitor {} ({}), which loopx polls itself: next poll {}",
            next.id,
            next.title,
            from_now(input.now, due)
        ),
        waiting_for: Some(crate::Waiting {
            todo: (next.id, next.title.clone()),
            next_poll: due,
        }),
    })
}

fn blocked_by_gate(input: &DecideInput<'_>, todo: &TodoView) -> bool {
    input
        .gates
        .iter()
        .any(|g| matches!(&g.blocks, GateBlocks::Todos(ids) if ids.contains(&todo.id)))
}

fn ask(gate: &GateView, reason: String) -> Decision {
    Decision::Ask {
        about: AskAbout::OpenGate,
        gate: Some((gate.id, gate.question.clone())),
        reason,
    }
}

fn gate_blocks(
    input: &DecideInput<'_>,
    candidates: &[&TodoView],
    more_todos: bool,
) -> Option<Decision> {
    let name = &input.agent.name;
    for gate in input.gates {
        match &gate.blocks {
            GateBlocks::Global => {
                return Some(ask(gate, format!("gate {} blocks every agent", gate.id)));
            }
            GateBlocks::Agent(agent) if agent == name => {
                return Some(ask(gate, format!("gate {} blocks {name}", gate.id)));
            }
            GateBlocks::Goal(goal) if input.goal.is_some_and(|g| g.id == *goal) => {
                return Some(ask(gate, format!("gate {} blocks goal {goal}", gate.id)));
            }
            _ => {}
        }
    }
    let first = candidates.first()?;
    // Every todo it could take is blocked only if none was left out.
    if !more_todos && candidates.iter().all(|t| blocked_by_gate(input, t)) {
        let gate = input
            .gates
            .iter()
            .find(|g| matches!(&g.blocks, GateBlocks::Todos(ids) if ids.contains(&first.id)))?;
        return Some(ask(
            gate,
            format!("gate {} blocks every todo {name} could take", gate.id),
        ));
    }
    None
}

/// Ask a person when the goal spent its budget without a todo done.
fn over_budget(input: &DecideInput<'_>) -> Option<Decision> {
    let goal = input.goal?;
    let over = input.policy.budget.exceeded(&goal.spent);
    if over.is_empty() {
        return None;
    }
    Some(Decision::Ask {
        about: AskAbout::OverBudget,
        gate: None,
        reason: format!(
            "goal {} spent {} without a todo done; continue?",
            goal.id,
            over.join(" and ")
        ),
    })
}

/// Slices in a row on `todo` without progress, newest first, since its last fresh budget,
/// as the outcome policy counts them (`outcome.rs`): vendor trouble and interruptions neither
/// count nor break the streak.
fn stall_streak(slices: &[SliceView], todo: &TodoView) -> u32 {
    let since = todo.attempts_since.unwrap_or(0);
    let mut streak = 0;
    for slice in slices
        .iter()
        .rev()
        .take_while(|s| s.id > since)
        .filter(|s| s.todo == Some(todo.id))
    {
        match slice.outcome.map(|o| o.policy().streak) {
            Some(Streak::Counts) => streak += 1,
            Some(Streak::Ends) => break,
            Some(Streak::Neutral) | None => {}
        }
    }
    streak
}

fn quota_wait(input: &DecideInput<'_>) -> Option<Decision> {
    let blocked = admission(input).err()?;
    Some(Decision::wait(blocked.until, blocked.on, blocked.reason))
}

pub(crate) fn window_name(period_ms: Millis) -> String {
    let hours = period_ms / 3_600_000;
    if hours >= 24 && hours.is_multiple_of(24) {
        format!("{}d", hours / 24)
    } else {
        format!("{hours}h")
    }
}

fn work_on(input: &DecideInput<'_>, todo: &TodoView) -> Decision {
    let last = input.slices.iter().rev().find(|s| s.todo == Some(todo.id));
    let own = todo
        .lease
        .as_ref()
        .is_some_and(|(a, _)| *a == input.agent.name);
    let on = |slice| Run {
        slice,
        todo: Some((todo.id, todo.title.clone())),
        probe: false,
        max_tokens: None,
    };
    match last.and_then(|s| s.outcome) {
        Some(outcome) if outcome.policy().next == Next::Repair => Decision::Repair {
            run: on(SliceKind::Repair),
            reason: format!(
                "the last slice on {} ended {outcome}: inspect, then finish or roll back",
                todo.id
            ),
        },
        _ => {
            let why = if own {
                format!(
                    "{} is claimed by {}: continue it",
                    todo.id, input.agent.name
                )
            } else {
                format!(
                    "{} is the highest-priority open todo {} can take",
                    todo.id, input.agent.name
                )
            };
            Decision::Deliver {
                run: on(SliceKind::Work),
                reason: why,
            }
        }
    }
}

fn plan_or_quiet(input: &DecideInput<'_>) -> Decision {
    if input.todos.is_empty() {
        return plan_next(input);
    }
    if let Some(decision) = waiting_on_monitor(input) {
        return decision;
    }
    let why = input
        .todos
        .iter()
        .find_map(|t| why_not_taken(input, t))
        .unwrap_or_else(|| "nothing to do".to_owned());
    Decision::quiet(format!("nothing {} can take now: {why}", input.agent.name))
}

/// No open todo: a planning slice, unless one runs now, or planners in a row proposed nothing.
fn plan_next(input: &DecideInput<'_>) -> Decision {
    // One planner at a time: two would propose the same todos twice.
    if let Some(planner) = input
        .slices
        .iter()
        .find(|s| s.kind == SliceKind::Plan && s.outcome.is_none())
    {
        return Decision::quiet(format!(
            "no open todo, and `{}` is planning the next steps now",
            planner.agent
        ));
    }
    let after = input.goal.and_then(|g| g.plans_after);
    let plans = input
        .slices
        .iter()
        .rev()
        .take_while(|s| {
            s.kind == SliceKind::Plan && s.todo.is_none() && after.is_none_or(|a| s.id > a)
        })
        // A planning slice that could not do its work (a limit, a failure) proposed nothing
        // because it could not, not because nothing is left: it does not count.
        .filter(|s| {
            matches!(
                s.outcome,
                Some(Outcome::Completed | Outcome::Progress | Outcome::Unchanged)
            )
        })
        .count() as u32;
    if plans >= input.policy.max_plans_in_a_row {
        // Only a person can say now: left quiet, a goal whose planners never declare it met
        // would wait forever with nobody asked (found by `loopx sim`).
        return Decision::Ask {
            about: AskAbout::GoalMet,
            gate: None,
            reason: format!(
                "no todo is left and {plans} planning slices in a row proposed none: is the goal met?"
            ),
        };
    }
    Decision::Deliver {
        run: Run {
            slice: SliceKind::Plan,
            todo: None,
            probe: false,
            max_tokens: None,
        },
        reason: "no open todo: plan the next steps or declare the goal done".to_owned(),
    }
}

/// Why this agent cannot take `t` now, if it cannot.
fn why_not_taken(input: &DecideInput<'_>, t: &TodoView) -> Option<String> {
    if let Some(due) = t.monitor {
        return Some(format!(
            "{} is a monitor loopx polls (next poll {})",
            t.id,
            from_now(input.now, due)
        ));
    }
    if let Some(until) = t.rests_until.filter(|u| *u > input.now) {
        return Some(format!(
            "{} rests until its --not-before time ({})",
            t.id,
            from_now(input.now, until)
        ));
    }
    if let Some(slice) = &t.running {
        Some(format!("{} is being worked on in slice {slice}", t.id))
    } else if let Some(dep) = &t.waits_on {
        Some(format!("{} waits on {dep}", t.id))
    } else if !t.needs.iter().all(|n| input.agent.capabilities.contains(n)) {
        Some(format!("{} needs {}", t.id, t.needs.join(", ")))
    } else if t.role.is_some() && t.role != input.agent.role {
        Some(format!(
            "{} is for role {}",
            t.id,
            t.role.as_deref().unwrap_or("")
        ))
    } else if !input.agent.writes && t.role.is_none() {
        Some(format!(
            "{} changes files, and {} is read-only (it takes todos for its role{})",
            t.id,
            input.agent.name,
            input
                .agent
                .role
                .as_deref()
                .map(|r| format!(", `--role {r}`"))
                .unwrap_or_default()
        ))
    } else {
        t.lease
            .as_ref()
            .map(|(a, _)| format!("{} is claimed by {a}", t.id))
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
