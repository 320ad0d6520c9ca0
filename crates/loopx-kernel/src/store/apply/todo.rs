//! Todo transitions: add, claim (lease + epoch), renew, release, done, drop.
//!
//! The epoch is a fencing token: it grows by one on every grant, and renew, release and finish
//! must present the current one. A lease that expired stays with its holder until a peer
//! claims the todo; that claim bumps the epoch, so the old holder's late writes are refused.

use std::time::Duration;

use super::op::{Applied, NewTodo};
use crate::errors::{Conflict, Invalid, KernelError};
use crate::ids::{AgentName, TodoId};
use crate::limits;
use crate::model::{EventKind, Gate, GateState, GoalStatus, Lease, Todo, TodoState};
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;

pub(super) fn add(w: &Writer<'_>, new: NewTodo) -> Result<Applied, KernelError> {
    limits::check_text(
        "title",
        &new.title,
        limits::TITLE,
        "; put the rest in --detail",
    )?;
    limits::check_len("detail", &new.detail, limits::DETAIL)?;
    for name in new.needs.iter().chain(&new.role) {
        crate::ids::check_id("capability or role", name)?;
    }
    let goal = match new.goal {
        Some(id) => w.require::<crate::model::Goal>(tables::GOALS, id.0, "goal", id)?,
        None => current_goal(w)?,
    };
    if matches!(goal.status, GoalStatus::Done | GoalStatus::Archived) {
        return Err(Conflict::GoalState {
            goal: goal.id,
            state: goal.status.as_str(),
            action: "given todos",
        }
        .into());
    }
    for dep in &new.after {
        w.require::<Todo>(tables::TODOS, dep.0, "todo", dep)?;
    }
    let id = TodoId(w.next_id(counter::TODO)?);
    let todo = Todo {
        id,
        goal: goal.id,
        title: new.title.trim().to_owned(),
        detail: new.detail,
        priority: new.priority,
        state: TodoState::Open,
        needs: new.needs,
        after: new.after,
        role: new.role,
        epoch: 0,
        lease: None,
        latest_handoff: None,
        created_by: w.actor.to_owned(),
        created_at: w.now,
        updated_at: w.now,
    };
    w.put_todo(&todo)?;
    w.event(EventKind::TodoAdded {
        todo: id,
        goal: goal.id,
        title: todo.title.clone(),
        priority: todo.priority,
    })?;
    Ok(Applied::Todo(todo))
}

fn current_goal(w: &Writer<'_>) -> Result<crate::model::Goal, KernelError> {
    let goals: Vec<crate::model::Goal> = w.all(tables::GOALS)?;
    let open = |s| goals.iter().rev().find(|g| g.status == s).cloned();
    open(GoalStatus::Active)
        .or_else(|| open(GoalStatus::Paused))
        .ok_or_else(|| {
            Invalid::Other(
                "there is no goal to add todos to\n(hint: `loopx goal start \"OBJECTIVE\"`)"
                    .to_owned(),
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
) -> Result<Applied, KernelError> {
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
        (TodoState::Claimed, Some(lease)) => {
            return Err(Conflict::Claimed {
                todo: id,
                agent: lease.agent.clone(),
                epoch: lease.epoch,
                until: lease.expires_at,
            }
            .into());
        }
        (state, _) => {
            return Err(Conflict::TodoState {
                todo: id,
                state: state.as_str(),
                action: "claimed",
            }
            .into());
        }
    };
    for dep in &todo.after {
        let dep_todo: Todo = w.require(tables::TODOS, dep.0, "todo", dep)?;
        if !dep_todo.state.is_final() {
            return Err(Conflict::Waiting {
                todo: id,
                after: *dep,
                state: dep_todo.state.as_str(),
            }
            .into());
        }
    }
    let gates: Vec<Gate> = w.all(tables::GATES)?;
    if let Some(gate) = gates
        .iter()
        .find(|g| g.state == GateState::Open && g.blocks.blocks(Some(agent), Some(id)))
    {
        return Err(Conflict::Gated {
            todo: id,
            gate: gate.id,
            question: gate.question.clone(),
        }
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
            todo: id,
            agent: agent.clone(),
            missing,
        }
        .into());
    }
    if let Some(role) = &todo.role
        && registered.role.as_ref() != Some(role)
    {
        return Err(Conflict::WrongRole {
            todo: id,
            agent: agent.clone(),
            role: role.clone(),
        }
        .into());
    }
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
    w.put_todo(&todo)?;
    w.event(EventKind::TodoClaimed {
        todo: id,
        agent: agent.clone(),
        epoch: todo.epoch,
        expires_at,
        reclaimed_from,
    })?;
    Ok(Applied::Todo(todo))
}

/// The lease `agent` holds with `epoch`, or why it does not.
fn held_lease<'t>(
    todo: &'t mut Todo,
    agent: &AgentName,
    epoch: u64,
    action: &'static str,
) -> Result<&'t mut Lease, KernelError> {
    if epoch != todo.epoch {
        return Err(Conflict::StaleEpoch {
            todo: todo.id,
            by: agent.to_string(),
            presented: epoch,
            current: todo.epoch,
        }
        .into());
    }
    let (id, state) = (todo.id, todo.state);
    match &mut todo.lease {
        Some(lease) if &lease.agent == agent => Ok(lease),
        Some(_) => Err(Conflict::NotHolder {
            todo: id,
            agent: agent.clone(),
        }
        .into()),
        None => Err(Conflict::TodoState {
            todo: id,
            state: state.as_str(),
            action,
        }
        .into()),
    }
}

pub(super) fn renew(
    w: &Writer<'_>,
    id: TodoId,
    agent: &AgentName,
    epoch: u64,
    ttl: Duration,
) -> Result<Applied, KernelError> {
    check_ttl(ttl)?;
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    let lease = held_lease(&mut todo, agent, epoch, "renewed")?;
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

pub(super) fn release(
    w: &Writer<'_>,
    id: TodoId,
    agent: &AgentName,
    epoch: u64,
) -> Result<Applied, KernelError> {
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    held_lease(&mut todo, agent, epoch, "released")?;
    todo.lease = None;
    todo.state = TodoState::Open;
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    w.event(EventKind::TodoReleased {
        todo: id,
        agent: agent.clone(),
        epoch,
    })?;
    Ok(Applied::Todo(todo))
}

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
    match (epoch, &todo.lease) {
        (Some(epoch), _) => {
            let by = agent.map_or_else(|| w.actor.to_owned(), ToString::to_string);
            if epoch != todo.epoch {
                return Err(Conflict::StaleEpoch {
                    todo: id,
                    by,
                    presented: epoch,
                    current: todo.epoch,
                }
                .into());
            }
            match (agent, &todo.lease) {
                (Some(agent), Some(lease)) if &lease.agent != agent => {
                    return Err(Conflict::NotHolder {
                        todo: id,
                        agent: agent.clone(),
                    }
                    .into());
                }
                // An epoch alone does not prove who is asking: under a live lease the holder
                // must name itself.
                (None, Some(lease)) if lease.is_live(w.now) => {
                    return Err(Conflict::Claimed {
                        todo: id,
                        agent: lease.agent.clone(),
                        epoch: lease.epoch,
                        until: lease.expires_at,
                    }
                    .into());
                }
                _ => {}
            }
        }
        (None, Some(lease)) if lease.is_live(w.now) => {
            return Err(Conflict::Claimed {
                todo: id,
                agent: lease.agent.clone(),
                epoch: lease.epoch,
                until: lease.expires_at,
            }
            .into());
        }
        (None, _) => {}
    }
    todo.state = to;
    todo.lease = None;
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    let kind = match to {
        TodoState::Dropped => EventKind::TodoDropped { todo: id, epoch },
        _ => EventKind::TodoDone { todo: id, epoch },
    };
    w.event(kind)?;
    Ok(Applied::Todo(todo))
}
