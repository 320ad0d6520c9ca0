//! Todo transitions: add, claim (lease + epoch), renew, release, done, drop.
//!
//! The epoch is a fencing token: it grows by one at every change of holder — a claim, a
//! reclaim, a release, the todo finished — and every write on behalf of a claim must present
//! it, from the agent that holds it ([`fence`]). A lease that expired stays with its holder
//! until a peer claims the todo; that claim bumps the epoch, so the old holder's late writes
//! are refused.

use std::time::Duration;

use super::op::{Applied, NewTodo};
use crate::errors::{Conflict, Invalid, KernelError};
use crate::ids::{AgentName, GoalId, TodoId};
use crate::model::{ClaimStanding, EventKind, Gate, GateState, GoalStatus, Lease, Todo, TodoState};
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;

pub(super) fn add(w: &Writer<'_>, new: NewTodo) -> Result<Applied, KernelError> {
    new.check()?;
    super::caps::admit_todo(w, &new)?;
    let goal = goal_taking(w, new.goal)?;
    for dep in &new.after {
        let dep = w.require::<Todo>(tables::TODOS, dep.0, "todo", dep)?;
        // An agent's todo waits on its own goal's work, not on another goal's.
        super::which_goal::refuse_other_goal(w, dep.goal)?;
    }
    // `--after t3 --after t3` waits on t3 once.
    let mut after: Vec<TodoId> = Vec::with_capacity(new.after.len());
    for dep in new.after {
        if !after.contains(&dep) {
            after.push(dep);
        }
    }
    check_monitor_rights(w, new.monitor.as_ref())?;
    let id = TodoId(w.next_id(counter::TODO)?);
    let todo = Todo {
        id,
        goal: goal.id,
        title: new.title.trim().to_owned(),
        detail: new.detail,
        priority: new.priority,
        state: TodoState::Open,
        needs: new.needs,
        after,
        role: new.role,
        epoch: 0,
        lease: None,
        latest_handoff: None,
        created_by: w.actor.to_owned(),
        created_at: w.now,
        updated_at: w.now,
        finished_under: None,
        attempts_since: None,
        monitor: new
            .monitor
            .map(|spec| Box::new(crate::model::Monitor::new(spec, w.now))),
        not_before: new.not_before,
    };
    w.put_todo(&todo)?;
    w.event(EventKind::TodoAdded {
        todo: id,
        goal: goal.id,
        title: todo.title.clone(),
        priority: todo.priority,
    })?;
    let todo = match &new.held_for {
        Some(agent) => hold(w, todo, agent)?,
        None => todo,
    };
    for mut next in new.then {
        next.goal = Some(goal.id);
        next.after.push(id);
        add(w, next)?;
    }
    super::budget::goal_met_moot(w, goal.id)?;
    Ok(Applied::Todo(todo))
}

/// The goal a new todo goes to (the one named, else the current one), if it takes todos.
fn goal_taking(w: &Writer<'_>, goal: Option<GoalId>) -> Result<crate::model::Goal, KernelError> {
    let goal = match goal {
        Some(id) => w.require::<crate::model::Goal>(tables::GOALS, id.0, "goal", id)?,
        None => current_goal(w)?,
    };
    super::which_goal::refuse_other_goal(w, goal.id)?;
    if !matches!(goal.status, GoalStatus::Done | GoalStatus::Archived) {
        return Ok(goal);
    }
    Err(Conflict::GoalState {
        goal: goal.id,
        state: goal.status.as_str(),
        action: "given todos",
    }
    .into())
}

/// What a monitor's check may be given depends on who adds it.
fn check_monitor_rights(
    w: &Writer<'_>,
    monitor: Option<&crate::model::MonitorSpec>,
) -> Result<(), KernelError> {
    // A check an agent wrote runs with no more rights than the sandbox gives: a profile (its
    // environment, its secrets, its permission) is a person's to give.
    if monitor.is_some_and(|m| m.profile.is_some()) && loopx_vocab::Actor::of(w.actor).is_agent() {
        return Err(Invalid::Other(
            "only a person may give a monitor's check a profile; an agent's check runs in the read-only sandbox".to_owned(),
        )
        .into());
    }
    // Pins are loopx's record of what a person's check ran when the person added it.
    if monitor.is_some_and(|m| !m.pins.is_empty()) && !loopx_vocab::Actor::of(w.actor).is_person() {
        return Err(Invalid::Other(
            "only a person's monitor pins the files its check runs; loopx pins them where a person adds it".to_owned(),
        )
        .into());
    }
    Ok(())
}

/// How long a continuation is held for the agent that did the work before it: long enough for
/// that agent's next decision, which follows its slice's end; after that any agent may take it
/// (an agent in a quota wait does not keep its successor from the others).
pub const CONTINUATION_HOLD: Duration = Duration::from_secs(15 * 60);

/// Claims a new todo for `agent` ([`NewTodo::held_for`]): a claim like any other, which the
/// agent's next slice continues, except that a dependency may still be unfinished (the todo it
/// continues is finished in the same transaction) — the slice waits for it all the same.
fn hold(w: &Writer<'_>, mut todo: Todo, agent: &AgentName) -> Result<Todo, KernelError> {
    let Some(registered) = w.agent(agent.as_str())? else {
        return Err(Invalid::Other(format!(
            "{} cannot be held for `{agent}`: no such agent is registered",
            todo.id
        ))
        .into());
    };
    let fits = todo
        .needs
        .iter()
        .all(|n| registered.capabilities.contains(n))
        && (todo.role.is_none() || todo.role == registered.role);
    if !fits || todo.is_monitor() {
        return Err(Invalid::Other(format!(
            "{} cannot be held for `{agent}`: {}",
            todo.id,
            match todo.is_monitor() {
                true => "a monitor is polled by loopx, not taken by an agent",
                false => "the agent lacks its role or a capability it needs",
            }
        ))
        .into());
    }
    grant(w, &mut todo, agent, CONTINUATION_HOLD, None)?;
    Ok(todo)
}

/// Gives `agent` the claim on `todo` for `ttl` under the next epoch, and records it.
fn grant(
    w: &Writer<'_>,
    todo: &mut Todo,
    agent: &AgentName,
    ttl: Duration,
    reclaimed_from: Option<AgentName>,
) -> Result<(), KernelError> {
    todo.epoch += 1;
    let expires_at = w.now.plus(ttl);
    todo.lease = Some(Lease {
        agent: agent.clone(),
        epoch: todo.epoch,
        granted_at: w.now,
        expires_at,
    });
    todo.state = TodoState::Claimed;
    todo.updated_at = w.now;
    w.put_todo(todo)?;
    w.event(EventKind::TodoClaimed {
        todo: todo.id,
        agent: agent.clone(),
        epoch: todo.epoch,
        expires_at,
        reclaimed_from,
    })?;
    Ok(())
}

fn current_goal(w: &Writer<'_>) -> Result<crate::model::Goal, KernelError> {
    super::which_goal::open_goal(w)?.ok_or_else(|| {
        Invalid::Other(
            "there is no goal to add todos to\n(hint: `loopx goal start \"OBJECTIVE\"`)".to_owned(),
        )
        .into()
    })
}

/// A lease longer than a year is a typo, and its expiry would not print.
fn check_ttl(ttl: Duration) -> Result<(), KernelError> {
    if ttl > crate::time::MAX_DURATION || ttl.is_zero() {
        return Err(Invalid::Other(format!(
            "a lease of {ttl:?} is out of range: give between a second and a year"
        ))
        .into());
    }
    Ok(())
}

pub(super) fn claim(
    w: &Writer<'_>,
    id: TodoId,
    agent: &AgentName,
    ttl: Duration,
) -> Result<Todo, KernelError> {
    check_ttl(ttl)?;
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    let Some(registered) = w.agent(agent.as_str())? else {
        return Err(Invalid::Other(format!(
            "agent `{agent}` is not registered\n(hint: `loopx agent add {agent} --profile PROFILE`)"
        ))
        .into());
    };
    let goal: crate::model::Goal = w.require(tables::GOALS, todo.goal.0, "goal", todo.goal)?;
    if goal.status != GoalStatus::Active {
        return Err(Conflict::GoalState {
            goal: goal.id,
            state: goal.status.as_str(),
            action: "worked on",
        }
        .into());
    }
    let reclaimed_from = match (&todo.state, &todo.lease) {
        (TodoState::Open, _) => None,
        (TodoState::Claimed, Some(lease)) if !lease.is_live(w.now) => Some(lease.agent.clone()),
        (TodoState::Claimed, Some(lease)) => return Err(claimed(id, lease)),
        (state, _) => {
            return Err(Conflict::TodoState {
                todo: id,
                state: state.as_str(),
                action: "claimed",
            }
            .into());
        }
    };
    refuse_waiting(w, &todo)?;
    if todo.is_monitor() {
        return Err(Invalid::Other(format!(
            "{id} is a monitor: loopx polls its check itself, and no agent takes it\n(hint: take a todo `--after {id}`; `loopx todo show {id}` shows its polls)"
        ))
        .into());
    }
    if let Some(until) = todo.not_before.filter(|t| *t > w.now) {
        return Err(Invalid::Other(format!(
            "{id} rests until {until} (`--not-before`): no agent takes it before then"
        ))
        .into());
    }
    refuse_gated(w, id, agent)?;
    check_fits(&todo, agent, &registered)?;
    grant(w, &mut todo, agent, ttl, reclaimed_from)?;
    Ok(todo)
}

/// A todo an agent takes is of a goal it works on (`agent set --goals`), needs no capability
/// the agent lacks, and is for its role, if any.
fn check_fits(
    todo: &Todo,
    agent: &AgentName,
    registered: &crate::model::Agent,
) -> Result<(), KernelError> {
    if !registered.works_on(todo.goal) {
        return Err(Invalid::Other(format!(
            "agent `{agent}` works on goal {} only, and {} is goal {}'s\n(hint: `loopx agent set {agent} --goals all` lets it work on every goal)",
            registered
                .goals
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            todo.id,
            todo.goal
        ))
        .into());
    }
    let missing: Vec<String> = todo
        .needs
        .iter()
        .filter(|n| !registered.capabilities.contains(n))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(Conflict::MissingCapability {
            todo: todo.id,
            agent: agent.clone(),
            missing,
        }
        .into());
    }
    if let Some(role) = &todo.role
        && registered.role.as_ref() != Some(role)
    {
        return Err(Conflict::WrongRole {
            todo: todo.id,
            agent: agent.clone(),
            role: role.clone(),
        }
        .into());
    }
    Ok(())
}

/// Refuses work on `todo` while one of its dependencies is unfinished.
pub(super) fn refuse_waiting(w: &Writer<'_>, todo: &Todo) -> Result<(), KernelError> {
    for dep in &todo.after {
        let dep_todo: Todo = w.require(tables::TODOS, dep.0, "todo", dep)?;
        if !dep_todo.state.is_final() {
            return Err(Conflict::Waiting {
                todo: todo.id,
                after: *dep,
                state: dep_todo.state.as_str(),
            }
            .into());
        }
    }
    Ok(())
}

/// `todo` was written since `presented`: the writer's epoch is stale.
pub(super) fn stale(w: &Writer<'_>, todo: &Todo, presented: u64) -> KernelError {
    Conflict::StaleEpoch {
        todo: todo.id,
        by: w.actor.to_owned(),
        presented,
        current: todo.epoch,
    }
    .into()
}

/// `id` is held by another live claim.
pub(super) fn claimed(id: TodoId, lease: &Lease) -> KernelError {
    Conflict::Claimed {
        todo: id,
        agent: lease.agent.clone(),
        epoch: lease.epoch,
        until: lease.expires_at,
    }
    .into()
}

/// Refuses work on `id` by `agent` while an open gate blocks it.
pub(super) fn refuse_gated(
    w: &Writer<'_>,
    id: TodoId,
    agent: &AgentName,
) -> Result<(), KernelError> {
    let gates: Vec<Gate> = w.all(tables::GATES)?;
    let goal = w.get::<Todo>(tables::TODOS, id.0)?.map(|t| t.goal);
    if let Some(gate) = gates
        .iter()
        .find(|g| g.state == GateState::Open && g.blocks.blocks(Some(agent), Some(id), goal))
    {
        return Err(Conflict::Gated {
            todo: id,
            gate: gate.id,
            question: gate.question.clone(),
        }
        .into());
    }
    Ok(())
}

/// The one fencing rule: a write under `agent`'s claim `epoch` of `todo` needs that claim to be
/// the todo's current one, held by that agent (or, for what may follow a finish, the claim the
/// todo was finished under). The error says why not.
pub(crate) fn fence(
    todo: &Todo,
    agent: &AgentName,
    epoch: u64,
    action: &'static str,
) -> Result<ClaimStanding, KernelError> {
    match todo.claim_of(agent, epoch) {
        standing @ (ClaimStanding::Held | ClaimStanding::Finished) => Ok(standing),
        ClaimStanding::Stale => Err(Conflict::StaleEpoch {
            todo: todo.id,
            by: agent.to_string(),
            presented: epoch,
            current: todo.epoch,
        }
        .into()),
        ClaimStanding::NotHolder => Err(match (&todo.lease, todo.state) {
            (Some(_), _) => Conflict::NotHolder {
                todo: todo.id,
                agent: agent.clone(),
            },
            (None, state) => Conflict::TodoState {
                todo: todo.id,
                state: state.as_str(),
                action,
            },
        }
        .into()),
    }
}

/// Like [`fence`], for changes of the todo itself: only the live holder may make them.
fn held(
    todo: &Todo,
    agent: &AgentName,
    epoch: u64,
    action: &'static str,
) -> Result<Lease, KernelError> {
    match fence(todo, agent, epoch, action)? {
        ClaimStanding::Held => Ok(todo.lease.clone().expect("a held claim has a lease")),
        _ => Err(Conflict::TodoState {
            todo: todo.id,
            state: todo.state.as_str(),
            action,
        }
        .into()),
    }
}

/// Renews the lease. A renewal by the agent that finished the todo under this claim (`loopx
/// report done` while its slice goes on) succeeds and changes nothing: the caller sees the
/// finished todo and stops renewing.
pub(super) fn renew(
    w: &Writer<'_>,
    id: TodoId,
    agent: &AgentName,
    epoch: u64,
    ttl: Duration,
) -> Result<Applied, KernelError> {
    check_ttl(ttl)?;
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    if crate::fault::planted(crate::fault::PlantedBug::RenewIgnoresEpoch) {
        return planted_renew(w, todo, agent, epoch, ttl);
    }
    if fence(&todo, agent, epoch, "renewed")? == ClaimStanding::Finished {
        return Ok(Applied::Todo(todo));
    }
    let lease = todo.lease.as_mut().expect("a held claim has a lease");
    lease.expires_at = w.now.plus(ttl);
    let expires_at = lease.expires_at;
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    w.event(EventKind::TodoRenewed {
        todo: id,
        agent: agent.clone(),
        epoch,
        expires_at,
    })?;
    Ok(Applied::Todo(todo))
}

/// The bug `PlantedBug::RenewIgnoresEpoch`: the lease re-armed for whoever asks, under the
/// epoch they present. Only reachable with the `planted-bugs` feature, switched on by a
/// simulation proving that it finds it.
fn planted_renew(
    w: &Writer<'_>,
    mut todo: Todo,
    agent: &AgentName,
    epoch: u64,
    ttl: Duration,
) -> Result<Applied, KernelError> {
    if todo.state.is_final() {
        return Ok(Applied::Todo(todo));
    }
    let expires_at = w.now.plus(ttl);
    todo.lease = Some(Lease {
        agent: agent.clone(),
        epoch,
        granted_at: w.now,
        expires_at,
    });
    todo.state = TodoState::Claimed;
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    w.event(EventKind::TodoRenewed {
        todo: todo.id,
        agent: agent.clone(),
        epoch,
        expires_at,
    })?;
    Ok(Applied::Todo(todo))
}

/// Gives the todo back: it is open again, under a new epoch, so nothing more is written under
/// the released claim.
pub(super) fn release(
    w: &Writer<'_>,
    id: TodoId,
    agent: &AgentName,
    epoch: u64,
) -> Result<Applied, KernelError> {
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    held(&todo, agent, epoch, "released")?;
    todo.lease = None;
    todo.state = TodoState::Open;
    todo.epoch += 1;
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    w.event(EventKind::TodoReleased {
        todo: id,
        agent: agent.clone(),
        epoch,
    })?;
    Ok(Applied::Todo(todo))
}

/// [`finish`] as the writer asks it (`Op::TodoFinish`): an agent finishes only what it holds,
/// under its own name. A done on someone else's todo would skip the checks its own slice's
/// done gets (`[evidence] done_needs`, landing), and a drop would throw away work it was never
/// given. loopx's own finishes (a monitor met, a re-planning drop) call [`finish`].
pub(super) fn finish_as_writer(
    w: &Writer<'_>,
    id: TodoId,
    to: TodoState,
    agent: Option<&AgentName>,
    epoch: Option<u64>,
) -> Result<Applied, KernelError> {
    let actor = loopx_vocab::Actor::of(w.actor);
    if actor.is_agent() && (epoch.is_none() || actor.agent() != agent.map(AgentName::as_str)) {
        return Err(crate::errors::Refused::FinishByAgent {
            actor: w.actor.to_owned(),
            todo: id,
        }
        .into());
    }
    finish(w, id, to, agent, epoch)
}

/// Marks the todo done or dropped.
///
/// The holder finishes it under its claim (`agent` and `epoch`), which is recorded as the claim
/// it was finished under. A person may finish a todo nobody holds (or whose lease expired)
/// without an epoch; under a live lease the holder must do it. Either way the epoch moves on.
pub(super) fn finish(
    w: &Writer<'_>,
    id: TodoId,
    to: TodoState,
    agent: Option<&AgentName>,
    epoch: Option<u64>,
) -> Result<Applied, KernelError> {
    let action = if to == TodoState::Dropped {
        "dropped"
    } else {
        "marked done"
    };
    if !to.is_final() {
        return Err(Invalid::Other(format!(
            "a todo can only be finished as done or dropped, not {}",
            to.as_str()
        ))
        .into());
    }
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    if todo.state.is_final() {
        return Err(Conflict::TodoState {
            todo: id,
            state: todo.state.as_str(),
            action,
        }
        .into());
    }
    let finished_under = match (agent, epoch) {
        (Some(agent), Some(epoch)) => Some(held(&todo, agent, epoch, action)?),
        (None, Some(epoch)) if epoch != todo.epoch => {
            return Err(stale(w, &todo, epoch));
        }
        _ => match &todo.lease {
            // An epoch alone does not prove who is asking: under a live lease the holder must
            // name itself.
            Some(lease) if lease.is_live(w.now) => return Err(claimed(id, lease)),
            _ => None,
        },
    };
    todo.state = to;
    todo.lease = None;
    todo.finished_under = finished_under;
    todo.epoch += 1;
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    let kind = match to {
        TodoState::Dropped => EventKind::TodoDropped { todo: id, epoch },
        _ => {
            super::budget::restart(w, todo.goal)?;
            EventKind::TodoDone { todo: id, epoch }
        }
    };
    w.event(kind)?;
    Ok(Applied::Todo(todo))
}

/// A person answered a scope gate on `id`: `finish` (keep, and its slice reported it done)
/// marks it done as the agent reported; otherwise it gets a fresh budget of attempts. A todo
/// someone finished or claimed meanwhile is left as it is.
pub(super) fn scope_answered(
    w: &Writer<'_>,
    id: TodoId,
    gate: crate::ids::GateId,
    finish_it: bool,
) -> Result<(), KernelError> {
    let todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    let claimed = todo.lease.as_ref().is_some_and(|l| l.is_live(w.now));
    if todo.state.is_final() || claimed {
        return Ok(());
    }
    if finish_it {
        finish(w, id, TodoState::Done, None, None)?;
        return Ok(());
    }
    stall_answered(w, id, gate, false)
}

/// A person answered the stall gate of `id`: `drop` drops the todo (fencing whoever holds it);
/// any other answer gives it a fresh budget of attempts, so the stall guard counts only the
/// slices that follow. A todo finished meanwhile is left as it is.
pub(super) fn stall_answered(
    w: &Writer<'_>,
    id: TodoId,
    gate: crate::ids::GateId,
    drop: bool,
) -> Result<(), KernelError> {
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    if todo.state.is_final() {
        return Ok(());
    }
    if drop {
        todo.state = TodoState::Dropped;
        todo.lease = None;
        todo.epoch += 1;
        todo.updated_at = w.now;
        w.put_todo(&todo)?;
        w.event(EventKind::TodoDropped {
            todo: id,
            epoch: None,
        })?;
        return Ok(());
    }
    let since = crate::ids::SliceId(w.counter(counter::SLICE)?.saturating_sub(1));
    todo.attempts_since = Some(since);
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    w.event(EventKind::TodoRetried {
        todo: id,
        gate,
        since,
    })?;
    Ok(())
}
