//! Registering agents, changing them, and removing them: a person's operations.

use super::op::Applied;
use crate::errors::{Conflict, Invalid, KernelError};
use crate::ids::AgentName;
use crate::model::{Agent, EventKind, Todo};
use crate::store::tables;
use crate::store::writer::Writer;

/// What `agent set` changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentChange {
    pub profile: Option<String>,
    pub capabilities: Option<Vec<String>>,
    pub role: Option<String>,
    /// The goals it works on; `Some(vec![])` lets it work on every goal again.
    pub goals: Option<Vec<crate::ids::GoalId>>,
}

fn check(profile: &str, capabilities: &[String], role: Option<&String>) -> Result<(), Invalid> {
    crate::ids::check_id("profile name", profile)?;
    for cap in capabilities.iter().chain(role) {
        crate::ids::check_id("capability or role", cap)?;
    }
    Ok(())
}

pub(super) fn add(
    w: &Writer<'_>,
    name: AgentName,
    profile: String,
    capabilities: Vec<String>,
    role: Option<String>,
) -> Result<Applied, KernelError> {
    check(&profile, &capabilities, role.as_ref())?;
    if w.agent(name.as_str())?.is_some() {
        return Err(Conflict::AgentExists { agent: name }.into());
    }
    let agent = Agent {
        name: name.clone(),
        profile: profile.clone(),
        capabilities,
        role,
        added_at: w.now,
        goals: Vec::new(),
    };
    w.put_agent(&agent)?;
    w.event(EventKind::AgentAdded {
        agent: name,
        profile,
    })?;
    Ok(Applied::Agent(agent))
}

/// Changes an agent's profile, capabilities or role. Its running slice (if any) goes on as it
/// began; the next one uses the change.
pub(super) fn set(
    w: &Writer<'_>,
    name: AgentName,
    change: AgentChange,
) -> Result<Applied, KernelError> {
    let mut agent = registered(w, &name)?;
    if let Some(profile) = change.profile {
        agent.profile = profile;
    }
    if let Some(capabilities) = change.capabilities {
        agent.capabilities = capabilities;
    }
    if let Some(role) = change.role {
        agent.role = Some(role);
    }
    if let Some(mut goals) = change.goals {
        for goal in &goals {
            w.require::<crate::model::Goal>(tables::GOALS, goal.0, "goal", *goal)?;
        }
        goals.sort();
        goals.dedup();
        agent.goals = goals;
    }
    check(&agent.profile, &agent.capabilities, agent.role.as_ref())?;
    w.put_agent(&agent)?;
    w.event(EventKind::AgentChanged {
        agent: name,
        profile: agent.profile.clone(),
    })?;
    Ok(Applied::Agent(agent))
}

/// Removes an agent that runs no slice now; the todos it holds go back to open (their epoch
/// moves on, so a late write under its claim is refused). Its past slices, evidence and
/// events stay: they are the record of what it did.
pub(super) fn remove(w: &Writer<'_>, name: AgentName) -> Result<Applied, KernelError> {
    let agent = registered(w, &name)?;
    for id in w.running_ids()? {
        let slice: Option<crate::model::SliceRecord> = w.get(tables::SLICES, id)?;
        if let Some(slice) = slice.filter(|s| s.agent == name) {
            return Err(Conflict::AgentBusy {
                agent: name,
                slice: slice.id,
            }
            .into());
        }
    }
    for id in super::super::reads::index_keys(w.kv, tables::CLAIMED_TODOS)? {
        let todo: Option<Todo> = w.get(tables::TODOS, id)?;
        if let Some(lease) = todo
            .as_ref()
            .and_then(|t| t.lease.as_ref())
            .filter(|l| l.agent == name)
        {
            // The holder's own release, live lease or lapsed: the same event, epoch moved on.
            super::todo::release(w, crate::ids::TodoId(id), &name, lease.epoch)?;
        }
    }
    w.remove_agent(name.as_str())?;
    super::message::forget(w, &name)?;
    w.event(EventKind::AgentRemoved { agent: name })?;
    Ok(Applied::Agent(agent))
}

pub(super) fn registered(w: &Writer<'_>, name: &AgentName) -> Result<Agent, KernelError> {
    w.agent(name.as_str())?.ok_or_else(|| {
        Invalid::NotFound {
            what: "agent",
            id: name.to_string(),
        }
        .into()
    })
}

/// Records what an agent under `loopx run` waits on from now: one event, written only when it
/// changes (the supervisor keeps the last), so an idle day writes next to nothing.
pub(super) fn waits(w: &Writer<'_>, waits: super::op::AgentWaits) -> Result<Applied, KernelError> {
    crate::ids::check_id("state", &waits.on)?;
    w.event(EventKind::AgentWaits {
        agent: waits.agent,
        on: waits.on,
        goal: waits.goal,
        reason: crate::limits::clip(&waits.reason, crate::limits::QUESTION),
    })?;
    Ok(Applied::Recorded)
}
