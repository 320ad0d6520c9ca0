//! Transitions of goals, gates, evidence, handoffs, agents and slices.

use super::op::{AnswerChoice, Applied, NewEvidence, NewGate, NewHandoff, NewSlice, SliceEnd};
use crate::errors::{Conflict, Invalid, KernelError, Refused};
use crate::ids::{AgentName, EvidenceId, GateId, GoalId, HandoffId, SliceId, TodoId};
use crate::limits;
use crate::model::{
    Agent, Answer, Blocks, EventKind, Evidence, Gate, GateState, Goal, GoalStatus, Handoff,
    PermissionLevel, ProcessIdentity, SliceKind, SliceRecord, Todo,
};
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;

pub(super) fn goal_start(
    w: &Writer<'_>,
    objective: String,
    scope: Vec<String>,
    permission: PermissionLevel,
    share: f64,
) -> Result<Applied, KernelError> {
    limits::check_text("objective", &objective, limits::OBJECTIVE, "")?;
    limits::check_list("scope", &scope, 500)?;
    if let Some(bad) = scope
        .iter()
        .find(|g| g.starts_with('/') || g.split('/').any(|part| part == ".."))
    {
        return Err(Invalid::Other(format!(
            "scope `{bad}` leaves the project\n(hint: scopes are globs relative to the project root, like `src/**`)"
        ))
        .into());
    }
    if !(0.0..=1.0).contains(&share) || share.is_nan() {
        return Err(Invalid::Other(format!("share `{share}` is outside 0..1\n(hint: 0.5 gives the goal half of the time; 0 pauses it)")).into());
    }
    let goals: Vec<Goal> = w.all(tables::GOALS)?;
    if let Some(active) = goals.iter().find(|g| g.status == GoalStatus::Active) {
        return Err(Conflict::ActiveGoal { goal: active.id }.into());
    }
    let id = GoalId(w.next_id(counter::GOAL)?);
    let scope = if scope.is_empty() {
        vec!["**".to_owned()]
    } else {
        scope
    };
    let goal = Goal {
        id,
        objective: objective.trim().to_owned(),
        scope,
        permission,
        share,
        status: GoalStatus::Active,
        created_at: w.now,
        updated_at: w.now,
    };
    w.put(tables::GOALS, id.0, &goal)?;
    w.event(EventKind::GoalStarted {
        goal: id,
        objective: goal.objective.clone(),
        scope: goal.scope.clone(),
        permission,
        share,
    })?;
    Ok(Applied::Goal(goal))
}

pub(super) fn goal_set_status(
    w: &Writer<'_>,
    goal: Option<GoalId>,
    to: GoalStatus,
) -> Result<Applied, KernelError> {
    let goals: Vec<Goal> = w.all(tables::GOALS)?;
    let target = match goal {
        Some(id) => goals.iter().find(|g| g.id == id).ok_or(Invalid::NotFound {
            what: "goal",
            id: id.to_string(),
        })?,
        None => goals
            .iter()
            .rev()
            .find(|g| g.status == GoalStatus::Active)
            .or_else(|| goals.iter().rev().find(|g| g.status == GoalStatus::Paused))
            .ok_or_else(|| {
                Invalid::Other(
                    "there is no active or paused goal\n(hint: `loopx goal list`)".to_owned(),
                )
            })?,
    };
    let action = match to {
        GoalStatus::Active => "resumed",
        GoalStatus::Paused => "paused",
        GoalStatus::Done => "marked done",
        GoalStatus::Archived => "archived",
    };
    let allowed = match (target.status, to) {
        (GoalStatus::Active, GoalStatus::Paused) | (GoalStatus::Paused, GoalStatus::Active) => true,
        (GoalStatus::Active | GoalStatus::Paused, GoalStatus::Done) => true,
        (from, GoalStatus::Archived) => from != GoalStatus::Archived,
        _ => false,
    };
    if !allowed {
        return Err(Conflict::GoalState {
            goal: target.id,
            state: target.status.as_str(),
            action,
        }
        .into());
    }
    if to == GoalStatus::Active
        && let Some(other) = goals
            .iter()
            .find(|g| g.status == GoalStatus::Active && g.id != target.id)
    {
        return Err(Conflict::ActiveGoal { goal: other.id }.into());
    }
    let mut goal = target.clone();
    let from = goal.status;
    goal.status = to;
    goal.updated_at = w.now;
    w.put(tables::GOALS, goal.id.0, &goal)?;
    w.event(EventKind::GoalStatusChanged {
        goal: goal.id,
        from,
        to,
    })?;
    Ok(Applied::Goal(goal))
}

pub(super) fn gate_ask(w: &Writer<'_>, new: NewGate) -> Result<Applied, KernelError> {
    crate::question::check_question(&new.question)?;
    limits::check_text(
        "question",
        &new.question,
        limits::QUESTION,
        "; put the background in --context",
    )?;
    limits::check_list("option", &new.options, limits::OPTION)?;
    limits::check_len("context", &new.context, limits::DETAIL)?;
    if let Blocks::Todos(todos) = &new.blocks {
        if todos.is_empty() {
            return Err(Invalid::Other(
                "a gate that blocks todos must name at least one".to_owned(),
            )
            .into());
        }
        for todo in todos {
            w.require::<Todo>(tables::TODOS, todo.0, "todo", todo)?;
        }
    }
    let id = GateId(w.next_id(counter::GATE)?);
    let gate = Gate {
        id,
        question: new.question.trim().to_owned(),
        options: new.options,
        context: new.context,
        blocks: new.blocks,
        asked_by: w.actor.to_owned(),
        state: GateState::Open,
        answer: None,
        created_at: w.now,
    };
    w.put(tables::GATES, id.0, &gate)?;
    w.event(EventKind::GateOpened {
        gate: id,
        question: gate.question.clone(),
        blocks: gate.blocks.clone(),
    })?;
    Ok(Applied::Gate(gate))
}

pub(super) fn gate_answer(
    w: &Writer<'_>,
    id: GateId,
    choice: AnswerChoice,
    slice: Option<String>,
) -> Result<Applied, KernelError> {
    let mut gate: Gate = w.require(tables::GATES, id.0, "gate", id)?;
    if let Some(slice) = slice {
        return Err(Refused::AnswerFromSlice { slice }.into());
    }
    if gate.state != GateState::Open {
        return Err(Conflict::GateState {
            gate: id,
            state: gate.state.as_str(),
        }
        .into());
    }
    let (text, option) = match choice {
        AnswerChoice::Option(n) => {
            let index = usize::try_from(n)
                .ok()
                .filter(|i| (1..=gate.options.len()).contains(i));
            let Some(index) = index else {
                return Err(Invalid::NoSuchOption {
                    gate: id,
                    given: n,
                    count: gate.options.len(),
                }
                .into());
            };
            (gate.options[index - 1].clone(), Some(n))
        }
        AnswerChoice::Text(text) => {
            limits::check_text("answer", &text, limits::DETAIL, "")?;
            let text = text.trim().to_owned();
            let option = gate
                .options
                .iter()
                .position(|o| o.eq_ignore_ascii_case(&text));
            (text, option.and_then(|i| u32::try_from(i + 1).ok()))
        }
    };
    gate.answer = Some(Answer {
        text: text.clone(),
        option,
        by: w.actor.to_owned(),
        at: w.now,
    });
    gate.state = GateState::Answered;
    w.put(tables::GATES, id.0, &gate)?;
    w.event(EventKind::GateAnswered {
        gate: id,
        answer: text,
    })?;
    Ok(Applied::Gate(gate))
}

pub(super) fn gate_withdraw(w: &Writer<'_>, id: GateId) -> Result<Applied, KernelError> {
    let mut gate: Gate = w.require(tables::GATES, id.0, "gate", id)?;
    if gate.state != GateState::Open {
        return Err(Conflict::GateState {
            gate: id,
            state: gate.state.as_str(),
        }
        .into());
    }
    gate.state = GateState::Withdrawn;
    w.put(tables::GATES, id.0, &gate)?;
    w.event(EventKind::GateWithdrawn { gate: id })?;
    Ok(Applied::Gate(gate))
}

pub(super) fn evidence_add(w: &Writer<'_>, new: NewEvidence) -> Result<Applied, KernelError> {
    limits::check_text(
        "summary",
        &new.summary,
        limits::SUMMARY,
        "; put the rest in --detail",
    )?;
    limits::check_len("detail", &new.detail, limits::DETAIL)?;
    if new.files.len() > limits::LIST_ITEMS {
        return Err(Invalid::TooLong {
            field: "files",
            len: new.files.len(),
            max: limits::LIST_ITEMS,
            hint: "",
        }
        .into());
    }
    if let Some(todo) = new.todo {
        let record = w.require::<Todo>(tables::TODOS, todo.0, "todo", todo)?;
        check_epoch(w, &record, new.epoch)?;
    }
    if let Some(slice) = new.slice {
        w.require::<SliceRecord>(tables::SLICES, slice.0, "slice", slice)?;
    }
    let id = EvidenceId(w.next_id(counter::EVIDENCE)?);
    let evidence = Evidence {
        id,
        kind: new.kind,
        summary: new.summary.trim().to_owned(),
        detail: new.detail,
        files: new.files,
        todo: new.todo,
        slice: new.slice,
        actor: w.actor.to_owned(),
        at: w.now,
    };
    w.put(tables::EVIDENCE, id.0, &evidence)?;
    w.event(EventKind::EvidenceAdded {
        evidence: id,
        kind: evidence.kind,
        summary: evidence.summary.clone(),
        todo: evidence.todo,
    })?;
    Ok(Applied::Evidence(evidence))
}

pub(super) fn handoff_add(w: &Writer<'_>, new: NewHandoff) -> Result<Applied, KernelError> {
    if new.done.trim().is_empty() && new.next.trim().is_empty() {
        return Err(Invalid::Other("a handoff needs what was done or what comes next\n(hint: `--done \"…\"` and `--next \"…\"`)".to_owned()).into());
    }
    limits::check_len("done", &new.done, limits::DETAIL)?;
    limits::check_len("next", &new.next, limits::DETAIL)?;
    limits::check_list("file", &new.files, 1_000)?;
    limits::check_list("question", &new.questions, limits::QUESTION)?;
    let mut todo = match new.todo {
        Some(id) => Some(w.require::<Todo>(tables::TODOS, id.0, "todo", id)?),
        None => None,
    };
    if let Some(record) = &todo {
        check_epoch(w, record, new.epoch)?;
    }
    let id = HandoffId(w.next_id(counter::HANDOFF)?);
    let handoff = Handoff {
        id,
        todo: new.todo,
        done: new.done,
        next: new.next,
        files: new.files,
        questions: new.questions,
        slice: new.slice,
        actor: w.actor.to_owned(),
        at: w.now,
    };
    w.put(tables::HANDOFFS, id.0, &handoff)?;
    if let Some(todo) = &mut todo {
        todo.latest_handoff = Some(id);
        w.put_todo(todo)?;
    }
    w.event(EventKind::HandoffWritten {
        handoff: id,
        todo: new.todo,
    })?;
    Ok(Applied::Handoff(handoff))
}

pub(super) fn agent_add(
    w: &Writer<'_>,
    name: AgentName,
    profile: String,
    capabilities: Vec<String>,
    role: Option<String>,
) -> Result<Applied, KernelError> {
    crate::ids::check_id("profile name", &profile)?;
    for cap in capabilities.iter().chain(&role) {
        crate::ids::check_id("capability or role", cap)?;
    }
    if w.agent(name.as_str())?.is_some() {
        return Err(Conflict::AgentExists { agent: name }.into());
    }
    let agent = Agent {
        name: name.clone(),
        profile: profile.clone(),
        capabilities,
        role,
        added_at: w.now,
    };
    w.put_agent(&agent)?;
    w.event(EventKind::AgentAdded {
        agent: name,
        profile,
    })?;
    Ok(Applied::Agent(agent))
}

pub(super) fn slice_start(w: &Writer<'_>, new: NewSlice) -> Result<Applied, KernelError> {
    if w.agent(new.agent.as_str())?.is_none() {
        return Err(Invalid::NotFound {
            what: "agent",
            id: new.agent.to_string(),
        }
        .into());
    }
    let mut todo_goal = None;
    if let Some(todo_id) = new.todo {
        let todo: Todo = w.require(tables::TODOS, todo_id.0, "todo", todo_id)?;
        todo_goal = Some(todo.goal);
        let epoch = new.epoch.ok_or_else(|| {
            Invalid::Other(format!(
                "a slice on {todo_id} must carry the epoch of its claim"
            ))
        })?;
        if epoch != todo.epoch {
            return Err(Conflict::StaleEpoch {
                todo: todo_id,
                by: new.agent.to_string(),
                presented: epoch,
                current: todo.epoch,
            }
            .into());
        }
        if todo.lease.as_ref().is_none_or(|l| l.agent != new.agent) {
            return Err(Conflict::NotHolder {
                todo: todo_id,
                agent: new.agent.clone(),
            }
            .into());
        }
    }
    refuse_overlap(w, &new)?;
    refuse_inactive_goal(w, todo_goal)?;
    let id = SliceId(w.next_id(counter::SLICE)?);
    let named = |text: String| text.replace(super::op::SLICE_PLACEHOLDER, &id.to_string());
    let record = SliceRecord {
        id,
        agent: new.agent,
        todo: new.todo,
        epoch: new.epoch,
        kind: new.kind,
        profile_hash: new.profile_hash,
        argv: new.argv.into_iter().map(named).collect(),
        process: None,
        started_at: w.now,
        limit_secs: new.limit_secs,
        ended_at: None,
        outcome: None,
        exit: None,
        tokens: 0,
        cost_usd: 0.0,
        output_bytes: 0,
        log: new.log.map(named),
    };
    w.put(tables::SLICES, id.0, &record)?;
    w.set_running(id.0, true)?;
    if let Some(owner) = &new.owner {
        w.put(tables::SLICE_OWNERS, id.0, owner)?;
    }
    w.event(EventKind::SliceStarted {
        slice: id,
        agent: record.agent.clone(),
        todo: record.todo,
        epoch: record.epoch,
        kind: record.kind,
    })?;
    Ok(Applied::Slice(record))
}

/// A slice works on an active goal: its todo's (`todo_goal`), or for a planning slice the
/// current one. A decision taken just before a peer marked the goal done must not start
/// another slice.
fn refuse_inactive_goal(w: &Writer<'_>, todo_goal: Option<GoalId>) -> Result<(), KernelError> {
    let goal: Option<Goal> = match todo_goal {
        Some(id) => Some(w.require(tables::GOALS, id.0, "goal", id)?),
        None => {
            let goals: Vec<Goal> = w.all(tables::GOALS)?;
            let active = goals.iter().rev().find(|g| g.status == GoalStatus::Active);
            active.or(goals.last()).cloned()
        }
    };
    match goal {
        Some(goal) if goal.status == GoalStatus::Active => Ok(()),
        Some(goal) => Err(Conflict::GoalState {
            goal: goal.id,
            state: goal.status.as_str(),
            action: "worked on",
        }
        .into()),
        None => Err(Invalid::Other("there is no goal to work on".to_owned()).into()),
    }
}

/// One slice at a time per todo, and one planning slice at a time. Two supervisors may run the
/// same agent: its live lease alone must not let both work on the todo at once, and two
/// planners would propose the same todos twice.
fn refuse_overlap(w: &Writer<'_>, new: &NewSlice) -> Result<(), KernelError> {
    for running in w.running_ids()? {
        let other: SliceRecord = w.require(tables::SLICES, running, "slice", SliceId(running))?;
        if let Some(todo) = new.todo.filter(|t| other.todo == Some(*t)) {
            return Err(Conflict::SliceRunning {
                todo,
                slice: other.id.to_string(),
            }
            .into());
        }
        if new.kind == SliceKind::Plan && other.kind == SliceKind::Plan {
            return Err(Conflict::PlanRunning {
                agent: other.agent.to_string(),
                slice: other.id.to_string(),
            }
            .into());
        }
    }
    Ok(())
}

fn running_slice(w: &Writer<'_>, id: SliceId) -> Result<SliceRecord, KernelError> {
    let record: SliceRecord = w.require(tables::SLICES, id.0, "slice", id)?;
    if record.ended_at.is_some() {
        return Err(Conflict::SliceEnded {
            slice: id.to_string(),
        }
        .into());
    }
    Ok(record)
}

pub(super) fn slice_spawned(
    w: &Writer<'_>,
    id: SliceId,
    process: ProcessIdentity,
) -> Result<Applied, KernelError> {
    let mut record = running_slice(w, id)?;
    let pid = process.pid;
    record.process = Some(process);
    w.put(tables::SLICES, id.0, &record)?;
    w.event(EventKind::SliceSpawned { slice: id, pid })?;
    Ok(Applied::Slice(record))
}

pub(super) fn slice_end(
    w: &Writer<'_>,
    id: SliceId,
    end: SliceEnd,
) -> Result<Applied, KernelError> {
    let mut record = running_slice(w, id)?;
    limits::check_text("outcome", &end.outcome, limits::TITLE, "")?;
    record.ended_at = Some(w.now);
    record.outcome = Some(end.outcome.clone());
    record.exit = end.exit;
    record.tokens = end.tokens;
    record.cost_usd = end.cost_usd;
    record.output_bytes = end.output_bytes;
    w.put(tables::SLICES, id.0, &record)?;
    w.set_running(id.0, false)?;
    w.remove(tables::SLICE_OWNERS, id.0)?;
    w.event(EventKind::SliceEnded {
        slice: id,
        outcome: end.outcome,
    })?;
    Ok(Applied::Slice(record))
}

/// Checks that a write from inside `id` may go ahead (see [`Op::InSlice`](super::op::Op)).
pub(super) fn in_slice(
    w: &Writer<'_>,
    id: SliceId,
    agent: &AgentName,
    todo: Option<TodoId>,
    epoch: Option<u64>,
) -> Result<Applied, KernelError> {
    let record: SliceRecord = w.require(tables::SLICES, id.0, "slice", id)?;
    if record.ended_at.is_some() {
        return Err(Conflict::ReportAfterEnd {
            slice: id,
            outcome: record.outcome.unwrap_or_else(|| "ended".to_owned()),
        }
        .into());
    }
    if &record.agent != agent {
        return Err(Conflict::SliceOwner {
            slice: id,
            agent: agent.clone(),
            owner: record.agent,
        }
        .into());
    }
    if (todo, epoch) != (record.todo, record.epoch) {
        let claim = |todo: Option<TodoId>, epoch: Option<u64>| match (todo, epoch) {
            (Some(t), Some(e)) => format!("{t} under epoch {e}"),
            (Some(t), None) => format!("{t} without an epoch"),
            (None, _) => "no todo".to_owned(),
        };
        return Err(Invalid::Other(format!(
            "slice {id} works on {}, not on {}\n(hint: LOOPX_TODO and LOOPX_EPOCH are set by loopx for the slice; keep them as given)",
            claim(record.todo, record.epoch),
            claim(todo, epoch)
        ))
        .into());
    }
    if let Some(todo) = todo {
        let current: Todo = w.require(tables::TODOS, todo.0, "todo", todo)?;
        check_epoch(w, &current, epoch)?;
    }
    Ok(Applied::Slice(record))
}

/// A write made under a claim carries its epoch; after a peer reclaimed the todo the old
/// holder's evidence and handoffs are refused like its other late writes.
fn check_epoch(w: &Writer<'_>, todo: &Todo, epoch: Option<u64>) -> Result<(), KernelError> {
    match epoch {
        Some(epoch) if epoch != todo.epoch => Err(Conflict::StaleEpoch {
            todo: todo.id,
            by: w.actor.strip_prefix("agent:").unwrap_or(w.actor).to_owned(),
            presented: epoch,
            current: todo.epoch,
        }
        .into()),
        _ => Ok(()),
    }
}
