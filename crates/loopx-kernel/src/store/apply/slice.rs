//! Slice transitions: begin (claim, admit, record at once), spawned, end, interrupted, and the
//! check that guards an agent's own writes from inside its slice.

use super::op::{Applied, BeginSlice, NewEvidence, NewSlice, SliceEnd};
use crate::errors::{Conflict, Invalid, KernelError};
use crate::ids::{AgentName, GoalId, SliceId, TodoId};
use crate::limits;
use crate::model::{
    ClaimStanding, EventKind, EvidenceKind, Goal, GoalStatus, Outcome, ProcessIdentity, SliceKind,
    SliceRecord, Todo, TodoState,
};
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;

/// Claims the todo unless the agent holds a live lease on it, admits the slice against the
/// agent's quota and records it, all in the caller's one transaction: a refusal of any part
/// (a peer's claim, quota, a running slice, a goal no longer active) leaves nothing.
pub(super) fn begin(w: &Writer<'_>, begin: BeginSlice) -> Result<Applied, KernelError> {
    let BeginSlice {
        mut slice,
        claim_ttl,
        admit,
        messages,
    } = begin;
    if admit.agent != slice.agent {
        return Err(Invalid::Other(format!(
            "slice of `{}` admitted against the quota of `{}`",
            slice.agent, admit.agent
        ))
        .into());
    }
    let mut took_claim = false;
    slice.epoch = match slice.todo {
        Some(id) => {
            let todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
            let held = todo.state == TodoState::Claimed
                && todo
                    .lease
                    .as_ref()
                    .is_some_and(|l| l.agent == slice.agent && l.is_live(w.now));
            if held {
                // Continuing a held claim skips the claim's checks: a gate opened since the
                // decision must still hold the slice back, and a continuation held for the
                // agent (`NewTodo::held_for`) waits for what it comes after.
                super::todo::refuse_gated(w, id, &slice.agent)?;
                super::todo::refuse_waiting(w, &todo)?;
                Some(todo.epoch)
            } else {
                let claimed = super::todo::claim(w, id, &slice.agent, claim_ttl)?;
                took_claim = true;
                Some(claimed.epoch)
            }
        }
        None => None,
    };
    super::quota::spend(w, admit, true)?;
    let agent = slice.agent.clone();
    let record = start(w, slice)?;
    super::message::take(w, &agent, record.id, &messages)?;
    Ok(Applied::SliceBegun {
        slice: record,
        took_claim,
    })
}

pub(super) fn start(w: &Writer<'_>, new: NewSlice) -> Result<SliceRecord, KernelError> {
    if w.agent(new.agent.as_str())?.is_none() {
        return Err(Invalid::NotFound {
            what: "agent",
            id: new.agent.to_string(),
        }
        .into());
    }
    let (todo_goal, seen) = held_todo(w, &new)?;
    refuse_overlap(w, &new)?;
    let goal = match todo_goal.or(new.goal) {
        Some(goal) => Some(goal),
        None => super::which_goal::active_goal(w)?,
    };
    refuse_inactive_goal(w, goal)?;
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
        leftovers: 0,
        containment: String::new(),
        log_sha256: String::new(),
        seen,
        goal,
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
    Ok(record)
}

/// The todo a new slice works on, if any, held by the slice's agent at the slice's epoch: its
/// goal, and the todo as the slice sees it.
fn held_todo(
    w: &Writer<'_>,
    new: &NewSlice,
) -> Result<(Option<GoalId>, Option<crate::model::TodoSeen>), KernelError> {
    let Some(todo_id) = new.todo else {
        return Ok((None, None));
    };
    let todo: Todo = w.require(tables::TODOS, todo_id.0, "todo", todo_id)?;
    let epoch = new.epoch.ok_or_else(|| {
        Invalid::Other(format!(
            "a slice on {todo_id} must carry the epoch of its claim"
        ))
    })?;
    if super::todo::fence(&todo, &new.agent, epoch, "worked on")? != ClaimStanding::Held {
        return Err(Conflict::TodoState {
            todo: todo_id,
            state: todo.state.as_str(),
            action: "worked on",
        }
        .into());
    }
    Ok((Some(todo.goal), Some(crate::model::TodoSeen::of(&todo))))
}

/// A slice works on an active goal: its todo's, or the one a planning slice plans (else the
/// newest, to say it is over). A decision taken just before a peer marked the goal done must
/// not start another slice.
fn refuse_inactive_goal(w: &Writer<'_>, goal: Option<GoalId>) -> Result<(), KernelError> {
    let goal: Option<Goal> = match goal {
        Some(id) => Some(w.require(tables::GOALS, id.0, "goal", id)?),
        None => w.all::<Goal>(tables::GOALS)?.pop(),
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
        // One slice per agent, whichever supervisor runs it: a second `loopx run` on the same
        // project once ran the same agent twice at once.
        if other.agent == new.agent {
            return Err(Conflict::AgentBusy {
                agent: other.agent,
                slice: other.id,
            }
            .into());
        }
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

pub(super) fn running_slice(w: &Writer<'_>, id: SliceId) -> Result<SliceRecord, KernelError> {
    let record: SliceRecord = w.require(tables::SLICES, id.0, "slice", id)?;
    if record.ended_at.is_some() {
        return Err(Conflict::SliceEnded {
            slice: id.to_string(),
        }
        .into());
    }
    Ok(record)
}

pub(super) fn spawned(
    w: &Writer<'_>,
    id: SliceId,
    process: ProcessIdentity,
    containment: String,
    prompt_read: bool,
) -> Result<Applied, KernelError> {
    let mut record = running_slice(w, id)?;
    let pid = process.pid;
    record.process = Some(process);
    record.containment = containment;
    w.put(tables::SLICES, id.0, &record)?;
    w.event(EventKind::SliceSpawned { slice: id, pid })?;
    match prompt_read {
        true => super::message::delivered(w, id)?,
        false => super::message::await_echo(w, id)?,
    }
    Ok(Applied::Slice(record))
}

pub(super) fn end(w: &Writer<'_>, id: SliceId, end: SliceEnd) -> Result<SliceRecord, KernelError> {
    let mut record = running_slice(w, id)?;
    record.ended_at = Some(w.now);
    record.outcome = Some(end.outcome);
    record.leftovers = end.leftovers;
    let goal = super::which_goal::slice_goal(w, &record)?;
    if let Some(goal) = goal {
        super::budget::charge(w, goal, end.tokens, end.cost_usd)?;
        super::amend::replanned(w, goal, &record)?;
    }
    // What the rest of the batch writes back for the slice (its evidence, handoff, proposed
    // todos, question) is about the slice's goal, with several goals active.
    w.slice_goal.set(goal);
    record.exit = end.exit;
    record.tokens = end.tokens;
    record.cost_usd = end.cost_usd;
    record.output_bytes = end.output_bytes;
    record.log_sha256 = end.log_sha256;
    w.put(tables::SLICES, id.0, &record)?;
    w.set_running(id.0, false)?;
    w.remove(tables::SLICE_OWNERS, id.0)?;
    w.event(EventKind::SliceEnded {
        slice: id,
        outcome: end.outcome.to_string(),
    })?;
    super::message::settled(w, &record)?;
    Ok(record)
}

/// Ends a running slice as `interrupted` with evidence of why, and releases its claim when it
/// still holds it (a peer may have taken the todo since: then the claim is the peer's).
pub(super) fn interrupt(
    w: &Writer<'_>,
    id: SliceId,
    reason: String,
    exit: Option<String>,
    output_bytes: u64,
    usage: Option<super::quota::QuotaRequest>,
) -> Result<Applied, KernelError> {
    let ended = end(
        w,
        id,
        SliceEnd {
            outcome: Outcome::Interrupted,
            exit,
            leftovers: 0,
            tokens: usage.as_ref().map_or(0, |u| u.tokens),
            cost_usd: usage.as_ref().map_or(0.0, |u| u.cost_usd),
            output_bytes,
            log_sha256: String::new(),
        },
    )?;
    if let Some(usage) = usage {
        super::quota::spend(w, usage, false)?;
    }
    let summary = limits::clip(
        &format!("slice {id} was interrupted: {}", reason.trim()),
        limits::SUMMARY,
    );
    super::entities::evidence_add(
        w,
        NewEvidence {
            kind: EvidenceKind::Slice,
            summary,
            detail: limits::clip(&reason, limits::DETAIL),
            files: Vec::new(),
            todo: ended.todo,
            slice: Some(id),
            epoch: None,
            work: None,
            metric: None,
        },
    )?;
    let mut released = false;
    if let (Some(todo), Some(epoch)) = (ended.todo, ended.epoch) {
        let current: Todo = w.require(tables::TODOS, todo.0, "todo", todo)?;
        if current.claim_of(&ended.agent, epoch) == ClaimStanding::Held {
            super::todo::release(w, todo, &ended.agent, epoch)?;
            released = true;
        }
    }
    Ok(Applied::Interrupted {
        slice: ended,
        released,
    })
}

/// Checks that the claim slice `id` works under has lapsed (see
/// [`Op::ClaimLapsed`](super::op::Op)), by the store's clock: the database's on PostgreSQL.
pub(super) fn claim_lapsed(w: &Writer<'_>, id: SliceId) -> Result<Applied, KernelError> {
    let record: SliceRecord = w.require(tables::SLICES, id.0, "slice", id)?;
    if record.ended_at.is_some() {
        return Err(Conflict::SliceEnded {
            slice: id.to_string(),
        }
        .into());
    }
    if let (Some(todo), Some(epoch)) = (record.todo, record.epoch) {
        let current: Todo = w.require(tables::TODOS, todo.0, "todo", todo)?;
        if let Some(lease) = current.lease.as_ref().filter(|l| l.epoch == epoch)
            && lease.is_live(w.store_now())
        {
            return Err(Conflict::ClaimLive {
                slice: id.to_string(),
                until: lease.expires_at,
            }
            .into());
        }
    }
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
            outcome: record
                .outcome
                .map_or_else(|| "ended".to_owned(), |o| o.to_string()),
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
    if let (Some(todo), Some(epoch)) = (todo, epoch) {
        let current: Todo = w.require(tables::TODOS, todo.0, "todo", todo)?;
        super::todo::fence(&current, agent, epoch, "reported on")?;
    }
    // What the rest of the report names no goal for is about this slice's goal.
    w.slice_goal.set(super::which_goal::slice_goal(w, &record)?);
    Ok(Applied::Slice(record))
}
