//! `goal amend`: a person changes a goal's objective, scope or permission. The goal gets the
//! next revision (its record in `goal_revisions` says what it said from then on, who changed
//! it and why), and its planning counts afresh from the amendment: the next decision re-plans
//! (`loopx_quota::decide`, through `loopx_domain::decision`).

use super::op::{AmendGoal, Applied, NewGate};
use crate::errors::{Invalid, KernelError, Refused};
use std::collections::{BTreeMap, BTreeSet};

use crate::ids::TodoId;
use crate::limits;
use crate::model::{
    Blocks, EventKind, Evidence, Gate, GateKind, GateState, Goal, GoalRevision, GoalStatus,
    NARROWED_OPTIONS, PROPOSAL_OPTIONS, Todo, goal_digest,
};
use crate::scope::Scope;
use crate::store::tables::{self, counter};
use crate::store::writer::Writer;

/// Most revisions of one goal: a goal amended more often than this is a new goal.
pub const MAX_REVISIONS: u32 = 1_000;

pub(super) fn goal_amend(w: &Writer<'_>, amend: AmendGoal) -> Result<Applied, KernelError> {
    // A goal's words are a person's: an agent that could rewrite them could widen its own
    // scope. (Inside a slice the store is out of the agent's reach; this holds for whatever
    // writes through the kernel in an agent's name.)
    if !loopx_vocab::Actor::of(w.actor).is_person() {
        return Err(Refused::AmendByAgent {
            actor: w.actor.to_owned(),
        }
        .into());
    }
    let mut goal = target(w, amend.goal)?;
    let objective = amend
        .objective
        .map(|o| o.trim().to_owned())
        .unwrap_or_else(|| goal.objective.clone());
    let scope = match amend.scope {
        Some(scope) if scope.is_empty() => vec!["**".to_owned()],
        Some(scope) => scope,
        None => goal.scope.clone(),
    };
    super::entities::check_objective_and_scope(&objective, &scope)?;
    if !amend.why.trim().is_empty() {
        crate::limits::check_text("why", &amend.why, crate::limits::DETAIL, "")?;
    }
    let permission = amend.permission.unwrap_or(goal.permission);
    let mut changed = Vec::new();
    if objective != goal.objective {
        changed.push("objective".to_owned());
    }
    if scope != goal.scope {
        changed.push("scope".to_owned());
    }
    if permission != goal.permission {
        changed.push("permission".to_owned());
    }
    if changed.is_empty() {
        return Err(Invalid::Other(format!(
            "goal {} already says that: nothing to amend\n(hint: `loopx goal show` prints its objective, scope and permission)",
            goal.id
        ))
        .into());
    }
    if goal.revision >= MAX_REVISIONS {
        return Err(Invalid::Other(format!(
            "goal {} has {MAX_REVISIONS} revisions already\n(hint: finish it with `loopx goal done` and start the new one)",
            goal.id
        ))
        .into());
    }
    goal.objective = objective;
    let before = std::mem::replace(&mut goal.scope, scope);
    goal.permission = permission;
    goal.revision += 1;
    goal.updated_at = w.now;
    w.put(tables::GOALS, goal.id.0, &goal)?;
    let revision = put_revision(w, &goal, amend.why.trim(), changed)?;
    // Planning slices before the amendment planned another goal: they no longer count, and
    // the next decision re-plans.
    w.quota_put(&super::budget::plans_key(goal.id), &revision.after_slice)?;
    w.quota_put(&replan_key(goal.id), &revision.after_slice)?;
    w.event(EventKind::GoalAmended {
        goal: goal.id,
        revision: revision.number,
        changed: revision.changed.clone(),
        why: revision.why.clone(),
    })?;
    if revision.changed.iter().any(|c| c == "scope") {
        hold_misfits(w, &goal, &before)?;
    }
    if revision.changed.iter().any(|c| c == "objective") {
        ask_again(w, &goal)?;
    }
    Ok(Applied::Amended { goal, revision })
}

/// Most todos a narrowed scope's question names in its text (all of them are held).
const NAMED_MISFITS: usize = 20;

/// The amendment just recorded narrowed `goal`'s scope from `before`: its open todos with
/// recorded work (the files their slices changed, the files their evidence pinned) that fit
/// the old scope and not the new one are held behind one question, keep or drop. Until a
/// person answers, no agent claims them; a slice running on one finishes as it began. A todo
/// with no recorded work fits any scope: the re-planning slice sees the change and says.
fn hold_misfits(w: &Writer<'_>, goal: &Goal, before: &[String]) -> Result<(), KernelError> {
    let old = Scope::recorded(before);
    let new = Scope::recorded(&goal.scope);
    let open: BTreeMap<TodoId, Todo> = w
        .all::<Todo>(tables::TODOS)?
        .into_iter()
        .filter(|t| t.goal == goal.id && !t.state.is_final() && !t.is_monitor())
        .map(|t| (t.id, t))
        .collect();
    if open.is_empty() {
        return Ok(());
    }
    // Every evidence item is read: an amendment is rare, and its question must be whole.
    let mut outside: BTreeMap<TodoId, BTreeSet<String>> = BTreeMap::new();
    for e in w.all::<Evidence>(tables::EVIDENCE)? {
        let Some(todo) = e.todo.filter(|t| open.contains_key(t)) else {
            continue;
        };
        let files = e
            .files
            .iter()
            .map(|f| f.path.as_str())
            .chain(e.diff_files());
        for path in files.filter(|p| old.contains(p) && !new.contains(p)) {
            outside.entry(todo).or_default().insert(path.to_owned());
        }
    }
    if outside.is_empty() {
        return Ok(());
    }
    let ids: Vec<TodoId> = outside.keys().copied().collect();
    let named = ids
        .iter()
        .take(NAMED_MISFITS)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let more = match ids.len().saturating_sub(NAMED_MISFITS) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let question = format!(
        "Revision {} narrowed the scope of goal {}: {} open todo{} with work outside it ({named}{more}). Keep or drop {}?",
        goal.revision,
        goal.id,
        ids.len(),
        if ids.len() == 1 { "" } else { "s" },
        if ids.len() == 1 { "it" } else { "them" },
    );
    let mut context = format!("The scope is now: {}\n\n", goal.scope.join(", "));
    for (id, files) in &outside {
        let title = open.get(id).map(|t| t.title.as_str()).unwrap_or_default();
        let mut shown: Vec<&str> = files.iter().take(5).map(String::as_str).collect();
        if files.len() > 5 {
            shown.push("…");
        }
        context.push_str(&format!(
            "{id} {}: {}\n",
            limits::clip(title, 80),
            shown.join(", ")
        ));
    }
    context.push_str(
        "\nkeep: agents take them again, in the new scope. drop: every one still open is dropped.\nTo keep some and drop others, drop those with `loopx todo drop tN` first, then answer keep.",
    );
    super::entities::gate_ask(
        w,
        NewGate {
            question: limits::clip(&question, limits::QUESTION),
            options: NARROWED_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            context: limits::clip(&context, limits::DETAIL),
            blocks: Blocks::Todos(ids),
            kind: GateKind::ScopeNarrowed {
                goal: goal.id,
                revision: goal.revision,
            },
        },
    )?;
    Ok(())
}

/// The objective changed: a question answered before, that still blocks open todos of the
/// goal, was decided for another objective. It is asked again, with the old answer in its
/// context, and holds its todos until a person answers it under this revision. The newest
/// answer to the same question is the one asked again.
fn ask_again(w: &Writer<'_>, goal: &Goal) -> Result<(), KernelError> {
    let open: BTreeSet<TodoId> = w
        .all::<Todo>(tables::TODOS)?
        .into_iter()
        .filter(|t| t.goal == goal.id && !t.state.is_final())
        .map(|t| t.id)
        .collect();
    let mut asked: BTreeSet<(String, Vec<TodoId>)> = BTreeSet::new();
    let gates: Vec<Gate> = w.all(tables::GATES)?;
    for gate in gates.iter().rev() {
        let (GateKind::Question, Blocks::Todos(todos)) = (&gate.kind, &gate.blocks) else {
            continue;
        };
        let still: Vec<TodoId> = todos.iter().copied().filter(|t| open.contains(t)).collect();
        let key = (gate.question.clone(), still.clone());
        if still.is_empty() || !asked.insert(key) {
            continue;
        }
        let Some(answer) = gate
            .answer
            .as_ref()
            .filter(|_| gate.state == GateState::Answered)
        else {
            continue;
        };
        let context = format!(
            "Asked again: revision {} changed the objective of goal {} after {} was answered `{}` by {}.\n\n{}",
            goal.revision,
            goal.id,
            gate.id,
            limits::clip(&answer.text, 200),
            answer.by,
            gate.context
        );
        super::entities::gate_ask(
            w,
            NewGate {
                question: gate.question.clone(),
                options: gate.options.clone(),
                context: limits::clip(context.trim(), limits::DETAIL),
                blocks: Blocks::Todos(still),
                kind: GateKind::Question,
            },
        )?;
    }
    Ok(())
}

/// A person answered a narrowed scope's question: `drop` drops every todo it held that is
/// still open (fencing whoever holds one); `keep` leaves them to be taken again.
pub(super) fn narrowed_answered(
    w: &Writer<'_>,
    gate: &Gate,
    drop: bool,
) -> Result<(), KernelError> {
    let Blocks::Todos(todos) = &gate.blocks else {
        return Ok(());
    };
    if drop {
        for todo in todos {
            super::todo::stall_answered(w, *todo, gate.id, true)?;
        }
    }
    Ok(())
}

/// The goal `goal` names, or the current one (active, else paused); a finished goal is not
/// amended.
fn target(w: &Writer<'_>, goal: Option<crate::ids::GoalId>) -> Result<Goal, KernelError> {
    let goals: Vec<Goal> = w.all(tables::GOALS)?;
    let open = |g: &&Goal| matches!(g.status, GoalStatus::Active | GoalStatus::Paused);
    let current = match goal {
        Some(_) => None,
        None => super::which_goal::open_goal(w)?,
    };
    let found = match (goal, &current) {
        (Some(id), _) => goals.iter().find(|g| g.id == id).ok_or(Invalid::NotFound {
            what: "goal",
            id: id.to_string(),
        })?,
        (None, Some(current)) => current,
        (None, None) => {
            return Err(Invalid::Other(
                "there is no active or paused goal\n(hint: `loopx goal list`)".to_owned(),
            )
            .into());
        }
    };
    if !open(&found) {
        return Err(Invalid::Other(format!(
            "goal {} is {}: only an active or paused goal is amended\n(hint: start a new goal with `loopx goal start`)",
            found.id,
            found.status.as_str()
        ))
        .into());
    }
    Ok(found.clone())
}

/// Records `goal` as it now is as its revision `goal.revision`.
pub(super) fn put_revision(
    w: &Writer<'_>,
    goal: &Goal,
    why: &str,
    changed: Vec<String>,
) -> Result<GoalRevision, KernelError> {
    let revision = GoalRevision {
        goal: goal.id,
        number: goal.revision,
        at: w.now,
        by: w.actor.to_owned(),
        why: why.to_owned(),
        objective: goal.objective.clone(),
        scope: goal.scope.clone(),
        permission: goal.permission,
        digest: goal_digest(&goal.objective, &goal.scope),
        changed,
        after_slice: w.peek_id(counter::SLICE)?.saturating_sub(1),
    };
    w.put(
        tables::GOAL_REVISIONS,
        tables::revision_key(goal.id.0, goal.revision),
        &revision,
    )?;
    Ok(revision)
}

/// The quota-table key of the last slice begun before `goal` was last amended: until a
/// planning slice after it has done its work, the goal is re-planned first.
pub fn replan_key(goal: crate::ids::GoalId) -> String {
    format!("replan/{}", goal.0)
}

/// A planning slice begun after `goal`'s last amendment did its work (it ended completed,
/// progress or unchanged): the goal is re-planned, and work goes on as usual. A planning
/// slice that could not work (a limit, a failure) leaves the re-planning due.
pub(super) fn replanned(
    w: &Writer<'_>,
    goal: crate::ids::GoalId,
    slice: &crate::model::SliceRecord,
) -> Result<(), KernelError> {
    use crate::model::{Outcome, SliceKind};
    if slice.kind != SliceKind::Plan || slice.todo.is_some() {
        return Ok(());
    }
    let worked = matches!(
        slice.outcome,
        Some(Outcome::Completed | Outcome::Progress | Outcome::Unchanged)
    );
    let key = replan_key(goal);
    match w.quota_get::<u64>(&key)? {
        Some(after) if worked && slice.id.0 > after => {
            w.quota_remove(&key)?;
            // Its writeback, applied after its end, may still drop and rewrite todos.
            w.quota_put(&super::replan::replanned_key(goal), &slice.id.0)?;
        }
        _ => {}
    }
    Ok(())
}

/// An agent's proposal to amend the goal, as the kernel asks it: about the goal active now
/// (whatever id the batch carried), with its words checked as an amendment's would be, and
/// the question, options and context loopx's own (the current and the proposed text side by
/// side). It blocks nothing: the agents go on with the goal as it is until a person accepts.
pub(super) fn proposal_asked(w: &Writer<'_>, mut new: NewGate) -> Result<NewGate, KernelError> {
    let GateKind::GoalProposal {
        objective,
        scope,
        why,
        ..
    } = new.kind
    else {
        return Ok(new);
    };
    let active = super::which_goal::active_goal(w)?;
    let Some(goal) = active
        .map(|id| w.require::<Goal>(tables::GOALS, id.0, "goal", id))
        .transpose()?
    else {
        return Err(
            Invalid::Other("there is no active goal to propose a change to".to_owned()).into(),
        );
    };
    let objective = objective
        .map(|o| o.trim().to_owned())
        .filter(|o| *o != goal.objective);
    let scope = scope.filter(|s| !s.is_empty() && *s != goal.scope);
    if objective.is_none() && scope.is_none() {
        return Err(Invalid::Other(format!(
            "the proposal changes nothing: goal {} already says that\n(hint: give `--objective` or `--scope` with what the goal should say)",
            goal.id
        ))
        .into());
    }
    super::entities::check_objective_and_scope(
        objective.as_deref().unwrap_or(&goal.objective),
        scope.as_deref().unwrap_or(&goal.scope),
    )?;
    // Room for what accepting it adds to the revision's `why` (who proposed it, where).
    crate::limits::check_text("why", &why, crate::limits::DETAIL - 200, "")?;
    let mut what = Vec::new();
    let mut context = Vec::new();
    if let Some(o) = &objective {
        what.push("objective".to_owned());
        context.push(format!("objective now: {}\nproposed: {o}", goal.objective));
    }
    if let Some(s) = &scope {
        what.push("scope".to_owned());
        context.push(format!(
            "scope now: {}\nproposed: {}",
            goal.scope.join(", "),
            s.join(", ")
        ));
    }
    context.push(format!("why: {}", why.trim()));
    new.question = format!(
        "`{}` proposes to change the {} of goal {}: accept?",
        loopx_vocab::Actor::of(w.actor).name(),
        what.join(" and "),
        goal.id
    );
    new.options = PROPOSAL_OPTIONS.iter().map(|o| (*o).to_owned()).collect();
    new.context = format!("{}\n\n{}", context.join("\n\n"), new.context.trim())
        .trim()
        .to_owned();
    new.blocks = Blocks::Nothing;
    new.kind = GateKind::GoalProposal {
        goal: goal.id,
        revision: goal.revision,
        objective,
        scope,
        why: why.trim().to_owned(),
    };
    Ok(new)
}

/// A person accepted `gate`'s proposal: the goal is amended as they, with the agent's reason.
pub(super) fn proposal_accepted(w: &Writer<'_>, gate: &Gate) -> Result<(), KernelError> {
    let GateKind::GoalProposal {
        goal,
        revision,
        objective,
        scope,
        why,
    } = &gate.kind
    else {
        return Ok(());
    };
    let current: Goal = w.require(tables::GOALS, goal.0, "goal", goal)?;
    if current.revision != *revision {
        return Err(Invalid::Other(format!(
            "{} proposed a change to revision {revision} of goal {goal}, and the goal is at revision {} now: accepting it would undo what changed since\n(hint: answer `reject`, and amend the goal with `loopx goal amend` if it should still change)",
            gate.id, current.revision
        ))
        .into());
    }
    goal_amend(
        w,
        AmendGoal {
            goal: Some(*goal),
            objective: objective.clone(),
            scope: scope.clone(),
            permission: None,
            why: format!(
                "{why} (proposed by `{}`, accepted in {})",
                loopx_vocab::Actor::of(&gate.asked_by).name(),
                gate.id
            ),
        },
    )?;
    Ok(())
}
