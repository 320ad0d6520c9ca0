//! Transitions of goals, gates, evidence, handoffs, agents and slices.

use super::op::{Applied, NewEvidence, NewGate, NewHandoff};
use crate::errors::{Conflict, Invalid, KernelError};
use crate::ids::{AgentName, EvidenceId, GateId, GoalId, HandoffId};
use crate::limits;
use crate::model::{
    Blocks, EventKind, Evidence, Gate, GateKind, GateState, Goal, GoalStatus, Handoff, Isolation,
    PermissionLevel, SliceRecord, Todo, TodoState,
};
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;

pub(super) fn goal_start(
    w: &Writer<'_>,
    expected: Option<GoalId>,
    (objective, scope): (String, Vec<String>),
    permission: PermissionLevel,
    (share, priority): (f64, i32),
    isolation: Isolation,
) -> Result<Applied, KernelError> {
    if let Isolation::Worktree { base } = &isolation
        && (base.len() < 40 || !base.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(Invalid::Other(format!(
            "`{base}` is not a full commit name\n(hint: a worktree goal starts from `git rev-parse HEAD`)"
        ))
        .into());
    }
    check_objective_and_scope(&objective, &scope)?;
    if !(0.0..=1.0).contains(&share) || share.is_nan() {
        return Err(Invalid::Other(format!("share `{share}` is outside 0..1\n(hint: 0.5 gives the goal half of the time; 0 pauses it)")).into());
    }
    // Several goals may be active at once: the decision chooses among them (`docs/goals.md`).
    let id = GoalId(w.next_id(counter::GOAL)?);
    if let Some(expected) = expected.filter(|e| *e != id) {
        return Err(Conflict::GoalIdTaken { expected, next: id }.into());
    }
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
        isolation,
        revision: 1,
        priority,
    };
    w.put(tables::GOALS, id.0, &goal)?;
    super::amend::put_revision(w, &goal, "", Vec::new())?;
    w.event(EventKind::GoalStarted {
        goal: id,
        objective: goal.objective.clone(),
        scope: goal.scope.clone(),
        permission,
        share,
    })?;
    Ok(Applied::Goal(goal))
}

/// A goal's objective and scope, as `goal start` and `goal amend` take them: within the
/// limits, and the scope's globs valid and inside the project.
pub(super) fn check_objective_and_scope(
    objective: &str,
    scope: &[String],
) -> Result<(), KernelError> {
    limits::check_text("objective", objective, limits::OBJECTIVE, "")?;
    limits::check_list("scope", scope, 500)?;
    if let Some(bad) = scope
        .iter()
        .find(|g| g.starts_with('/') || g.split('/').any(|part| part == ".."))
    {
        return Err(Invalid::Other(format!(
            "scope `{bad}` leaves the project\n(hint: scopes are globs relative to the project root, like `src/**`)"
        ))
        .into());
    }
    if let Err(invalid) = crate::scope::Scope::new(scope) {
        return Err(Invalid::Other(format!(
            "{invalid}\n(hint: `*` and `?` stay within a directory, `**` spans any number, `{{a,b}}` is either, `[ab]` a class; `docs/` covers everything under docs)"
        ))
        .into());
    }
    Ok(())
}

/// [`goal_set_status`] as an op asks it: an agent's `done` asks a person unless
/// `agents_close`.
pub(super) fn goal_set_status_by(
    w: &Writer<'_>,
    goal: Option<GoalId>,
    to: GoalStatus,
    agents_close: bool,
) -> Result<Applied, KernelError> {
    let by_an_agent = loopx_vocab::Actor::of(w.actor).is_agent();
    if to != GoalStatus::Done || !by_an_agent || agents_close {
        return goal_set_status(w, goal, to);
    }
    let target = match goal {
        Some(id) => w.require::<Goal>(tables::GOALS, id.0, "goal", id)?,
        None => super::which_goal::active_goal(w)?
            .map(|id| w.require::<Goal>(tables::GOALS, id.0, "goal", id))
            .transpose()?
            .ok_or_else(|| Invalid::Other("there is no active goal".to_owned()))?,
    };
    super::which_goal::refuse_other_goal(w, target.id)?;
    refuse_over_open_work(w, &target)?;
    super::goal_met::agent_says_met(w, &target)
}

/// An agent does not say a goal is met over open work: a re-planning slice runs beside it
/// (`amend.rs`). The open todos are counted as they were before this batch's re-planning
/// drops: a re-planner that dropped every open todo and said `done` in one report ended the
/// goal.
fn refuse_over_open_work(w: &Writer<'_>, target: &Goal) -> Result<(), KernelError> {
    let open = open_todos_of(w, target.id)? + w.replan_dropped.get();
    if open > 0 {
        return Err(Conflict::GoalState {
            goal: target.id,
            state: "still open",
            action: "marked done by an agent while it has open todos",
        }
        .into());
    }
    Ok(())
}

pub(super) fn goal_set_status(
    w: &Writer<'_>,
    goal: Option<GoalId>,
    to: GoalStatus,
) -> Result<Applied, KernelError> {
    let target = &status_target(w, goal, to)?;
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
    // An agent ends a goal only where the project lets it (`goal_set_status_by`), and never
    // over open work.
    if to == GoalStatus::Done && loopx_vocab::Actor::of(w.actor).is_agent() {
        refuse_over_open_work(w, target)?;
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
    if to != GoalStatus::Active {
        super::budget::goal_met_moot(w, goal.id)?;
    }
    Ok(Applied::Goal(goal))
}

/// The goal a status change is about: the one named, else the current one
/// ([`super::which_goal::open_goal`]).
fn status_target(
    w: &Writer<'_>,
    goal: Option<GoalId>,
    to: GoalStatus,
) -> Result<Goal, KernelError> {
    match goal {
        Some(id) => w.require(tables::GOALS, id.0, "goal", id),
        // `goal resume` means a paused goal, whichever others are active.
        None if to == GoalStatus::Active => {
            let paused = w
                .all::<Goal>(tables::GOALS)?
                .into_iter()
                .rev()
                .find(|g| g.status == GoalStatus::Paused);
            paused.ok_or_else(|| {
                Invalid::Other(
                    "there is no paused goal to resume\n(hint: `loopx goal list`)".to_owned(),
                )
                .into()
            })
        }
        None => super::which_goal::open_goal(w)?.ok_or_else(|| {
            Invalid::Other(
                "there is no active or paused goal\n(hint: `loopx goal list`)".to_owned(),
            )
            .into()
        }),
    }
}

/// What a gate asked as blocking every agent holds back when it is one goal's: a budget or
/// goal-met gate's goal, or the goal of the slice an agent asks from (an agent's questions come
/// blocking their todo or the agent itself; this covers any other way in). With several goals
/// active, a question about g1 leaves g2's work running; a person's own question stays global.
fn goal_scoped(w: &Writer<'_>, blocks: Blocks, kind: &GateKind) -> Result<Blocks, KernelError> {
    if let Blocks::Goal(goal) = blocks {
        // An agent holds back its own goal only.
        super::which_goal::refuse_other_goal(w, goal)?;
        return Ok(blocks);
    }
    if let Blocks::Todos(todos) = &blocks {
        for todo in todos {
            if let Some(todo) = w.get::<Todo>(tables::TODOS, todo.0)? {
                super::which_goal::refuse_other_goal(w, todo.goal)?;
            }
        }
    }
    if blocks != Blocks::Global {
        return Ok(blocks);
    }
    Ok(match kind {
        GateKind::Budget { goal } | GateKind::GoalMet { goal } | GateKind::Best { goal, .. } => {
            Blocks::Goal(*goal)
        }
        _ => match super::which_goal::agent_goal(w)? {
            Some(goal) => Blocks::Goal(goal),
            None => blocks,
        },
    })
}

pub(super) fn gate_ask(w: &Writer<'_>, new: NewGate) -> Result<Applied, KernelError> {
    let mut new = super::amend::proposal_asked(w, new)?;
    new.blocks = goal_scoped(w, new.blocks, &new.kind)?;
    new.check()?;
    super::caps::admit_gate(w, &new.kind)?;
    if let Blocks::Todos(todos) = &new.blocks {
        for todo in todos {
            w.require::<Todo>(tables::TODOS, todo.0, "todo", todo)?;
        }
    }
    if !matches!(new.kind, GateKind::Question) {
        // The same stall, login or budget is asked about once: peers deciding at the same
        // moment all find the gate the first one opened.
        let open: Vec<Gate> = w.all(tables::GATES)?;
        // A best is asked about once, whatever the answer was.
        let once = matches!(new.kind, GateKind::Best { .. });
        if let Some(gate) = open
            .into_iter()
            .find(|g| (once || g.state == GateState::Open) && g.kind == new.kind)
        {
            return Ok(Applied::Gate(gate));
        }
    }
    let mut context = new.context;
    if let GateKind::GoalMet { goal } = &new.kind {
        let goal: Goal = w.require(tables::GOALS, goal.0, "goal", *goal)?;
        let facts = super::goal_met::facts(w, &goal)?;
        context = crate::limits::clip(
            &format!("{facts}\n\n{}", context.trim()),
            crate::limits::DETAIL,
        );
    }
    let id = GateId(w.next_id(counter::GATE)?);
    let gate = Gate {
        id,
        question: new.question.trim().to_owned(),
        options: new.options,
        context,
        blocks: new.blocks,
        // A gate of loopx's own kind is loopx's, even when it is written in the batch of an
        // agent's slice (a scope violation, a login): only a question has an author.
        asked_by: if matches!(new.kind, GateKind::Question | GateKind::GoalProposal { .. }) {
            w.actor.to_owned()
        } else {
            crate::model::LOOPX_ACTOR.to_owned()
        },
        state: GateState::Open,
        answer: None,
        created_at: w.now,
        kind: new.kind,
        answered_under: 0,
    };
    w.put(tables::GATES, id.0, &gate)?;
    if let GateKind::GoalMet { goal } = gate.kind {
        super::budget::goal_met_asked(w, goal, id)?;
    }
    w.event(EventKind::GateOpened {
        gate: id,
        question: gate.question.clone(),
        blocks: gate.blocks.clone(),
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
    // A monitor waits for its question's answer: withdrawn, nobody would answer it, and the
    // monitor would never be polled again. It is polled again, as for `poll`.
    if let GateKind::Monitor { todo } = &gate.kind {
        super::monitor::answered(w, *todo, Some(crate::model::MONITOR_OPTIONS[0]))?;
    }
    Ok(Applied::Gate(gate))
}

/// The revision of `goal` a record is written under (0: no goal): the one `slice` began under
/// when a slice writes it (its agent worked from that revision's prompt, whatever a person
/// amended meanwhile), else the revision the goal is at now.
pub(super) fn revision_of(
    w: &Writer<'_>,
    goal: Option<crate::ids::GoalId>,
    slice: Option<crate::ids::SliceId>,
) -> Result<u32, KernelError> {
    let Some(goal) = goal else {
        return Ok(0);
    };
    let Some(goal) = w.get::<Goal>(tables::GOALS, goal.0)? else {
        return Ok(0);
    };
    let Some(slice) = slice else {
        return Ok(goal.revision);
    };
    // Revision N was made after slice `after_slice` began: a slice after it began under N.
    let mut number = goal.revision;
    while number > 1 {
        let key = tables::revision_key(goal.id.0, number);
        match w.get::<crate::model::GoalRevision>(tables::GOAL_REVISIONS, key)? {
            Some(rev) if rev.after_slice >= slice.0 => number -= 1,
            _ => break,
        }
    }
    Ok(number)
}

pub(crate) fn evidence_add(w: &Writer<'_>, new: NewEvidence) -> Result<Applied, KernelError> {
    new.check()?;
    let goal = match new.todo {
        Some(todo) => {
            let record = w.require::<Todo>(tables::TODOS, todo.0, "todo", todo)?;
            check_claim(w, &record, new.epoch)?;
            Some(record.goal)
        }
        None => super::which_goal::record_goal(w, new.slice)?,
    };
    if let Some(slice) = new.slice {
        w.require::<SliceRecord>(tables::SLICES, slice.0, "slice", slice)?;
    }
    // The revision it was recorded under: evidence from before an amendment that touched it
    // is stale (`docs/goals.md`).
    let revision = revision_of(w, goal, new.slice)?;
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
        revision,
        work: new.work,
        metric: new.metric,
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
    new.check()?;
    let mut todo = match new.todo {
        Some(id) => Some(w.require::<Todo>(tables::TODOS, id.0, "todo", id)?),
        None => None,
    };
    if let Some(record) = &todo {
        check_claim(w, record, new.epoch)?;
    }
    let goal = match &todo {
        Some(record) => Some(record.goal),
        None => super::which_goal::record_goal(w, new.slice)?,
    };
    let revision = revision_of(w, goal, new.slice)?;
    let seen = match (&todo, new.slice) {
        (Some(record), Some(slice)) => {
            // What the slice began with: a person may have rewritten the todo since, and the
            // handoff speaks of the task the agent was given.
            let began = w
                .get::<SliceRecord>(tables::SLICES, slice.0)?
                .filter(|s| s.todo == Some(record.id))
                .and_then(|s| s.seen);
            Some(began.unwrap_or_else(|| crate::model::TodoSeen::of(record)))
        }
        (record, _) => record.as_ref().map(crate::model::TodoSeen::of),
    };
    let id = HandoffId(w.next_id(counter::HANDOFF)?);
    let handoff = Handoff {
        revision,
        seen,
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

/// A write made under a claim carries its epoch, and the fencing rule applies: an agent must
/// hold that claim (or have finished the todo under it). A person who presents an epoch must
/// present the current claim's, or the one the todo was finished under.
fn check_claim(w: &Writer<'_>, todo: &Todo, epoch: Option<u64>) -> Result<(), KernelError> {
    let agent = loopx_vocab::Actor::of(w.actor)
        .agent()
        .and_then(|name| name.parse::<AgentName>().ok());
    let Some(epoch) = epoch else {
        // An agent writing about a todo without presenting a claim may not write into a
        // claim another agent holds (its handoff would be that agent's next prompt).
        return match (&agent, &todo.lease) {
            (Some(agent), Some(lease))
                if todo.state == TodoState::Claimed && &lease.agent != agent =>
            {
                Err(Conflict::NotHolder {
                    todo: todo.id,
                    agent: agent.clone(),
                }
                .into())
            }
            _ => Ok(()),
        };
    };
    if let Some(agent) = agent {
        return super::todo::fence(todo, &agent, epoch, "written to").map(drop);
    }
    let current = epoch == todo.epoch && todo.state == TodoState::Claimed;
    let finished = todo
        .finished_under
        .as_ref()
        .is_some_and(|claim| claim.epoch == epoch);
    if current || finished {
        Ok(())
    } else if epoch != todo.epoch {
        Err(super::todo::stale(w, todo, epoch))
    } else {
        Err(Conflict::TodoState {
            todo: todo.id,
            state: todo.state.as_str(),
            action: "written to",
        }
        .into())
    }
}

/// How many todos of `goal` are open or claimed.
fn open_todos_of(w: &Writer<'_>, goal: GoalId) -> Result<usize, KernelError> {
    let mut open = 0;
    for id in crate::store::reads::index_keys(w.kv, tables::ACTIVE_TODOS)? {
        let todo: Option<Todo> = w.get(tables::TODOS, id)?;
        if todo.is_some_and(|t| t.goal == goal && !t.state.is_final()) {
            open += 1;
        }
    }
    Ok(open)
}
