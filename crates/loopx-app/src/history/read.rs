//! Gathering one goal's records: each table read once, in order, kept to the goal.

use std::collections::BTreeSet;

use loopx_adapters::EvidenceRules;
use loopx_domain::freshness::Freshness;
use loopx_kernel::model::{Blocks, Event, EventKind, Gate, GateKind, Goal};
use loopx_kernel::{KernelError, Project, SliceId, Snapshot, Timestamp, TodoId};

use super::Records;

/// Events are read a page at a time, kept to those the history needs.
const EVENT_PAGE: usize = 4096;

impl Records {
    /// Reads `goal`'s records in one snapshot, judging the evidence its done todos rest on.
    pub fn read(
        s: &Snapshot<'_>,
        project: &Project,
        rules: &EvidenceRules,
        goal: Goal,
        now: Timestamp,
        since: Option<Timestamp>,
    ) -> Result<Records, KernelError> {
        let revisions = s.goal_revisions(goal.id)?;
        let todos = s.todos_where(|t| t.goal == goal.id)?;
        let ours: BTreeSet<TodoId> = todos.iter().map(|t| t.id).collect();
        let only_goal = s.next_goal_id()?.0 == 2;
        let slices = s.slices()?.into_iter().filter(|slice| match slice.goal {
            Some(g) => g == goal.id,
            // A slice an older loopx began: its todo's goal; a planning one counts when the
            // store has only this goal.
            None => slice.todo.map_or(only_goal, |t| ours.contains(&t)),
        });
        let slices: Vec<_> = slices.collect();
        let slice_ids: BTreeSet<SliceId> = slices.iter().map(|s| s.id).collect();
        let mut evidence = s.evidence_newest(usize::MAX, |e| {
            e.todo.is_some_and(|t| ours.contains(&t))
                || e.slice.is_some_and(|id| slice_ids.contains(&id))
        })?;
        evidence.reverse();
        let gates = s
            .gates()?
            .into_iter()
            .filter(|g| gate_is_about(g, &goal, &ours))
            .collect();
        let events = goal_events(s, &ours)?;
        let mut judge = Freshness::new(project, rules, now);
        let stale = super::stale::stale_evidence(s, &mut judge, &todos, &evidence)?;
        Ok(Records {
            goal,
            revisions,
            todos,
            slices,
            evidence,
            gates,
            events,
            stale,
            metric_rules: std::collections::BTreeMap::new(),
            now,
            since,
        })
    }
}

/// Whether a gate is about the goal: it holds the goal or its todos back, or names them.
fn gate_is_about(gate: &Gate, goal: &Goal, ours: &BTreeSet<TodoId>) -> bool {
    let named_todo = match &gate.kind {
        GateKind::Stall { todo }
        | GateKind::Land { todo }
        | GateKind::Monitor { todo }
        | GateKind::Rollback { todo, .. } => Some(*todo),
        GateKind::Scope { todo, .. } => *todo,
        GateKind::Budget { goal: g }
        | GateKind::GoalMet { goal: g }
        | GateKind::GoalProposal { goal: g, .. }
        | GateKind::ScopeNarrowed { goal: g, .. }
        | GateKind::Best { goal: g, .. } => return *g == goal.id,
        _ => None,
    };
    if let Some(todo) = named_todo {
        return ours.contains(&todo);
    }
    match &gate.blocks {
        Blocks::Goal(g) => *g == goal.id,
        Blocks::Todos(todos) => todos.iter().any(|t| ours.contains(t)),
        _ => false,
    }
}

/// The events about the goal's todos that the history reads, and every agent's recorded
/// states and slice starts (a wait for this goal ends at the agent's next state or slice,
/// whichever goal that is for), in one pass over the log.
fn goal_events(s: &Snapshot<'_>, ours: &BTreeSet<TodoId>) -> Result<Vec<Event>, KernelError> {
    let mut out = Vec::new();
    let mut from = 1;
    loop {
        let page = s.events_from(from, EVENT_PAGE)?;
        let Some(last) = page.last().map(|e| e.seq) else {
            break;
        };
        let full = page.len() == EVENT_PAGE;
        out.extend(page.into_iter().filter(|e| match &e.kind {
            EventKind::TodoDone { todo, .. }
            | EventKind::TodoDropped { todo, .. }
            | EventKind::TodoReplanned { todo, .. }
            | EventKind::MonitorPolled { todo, .. } => ours.contains(todo),
            EventKind::AgentWaits { .. } | EventKind::SliceStarted { .. } => true,
            _ => false,
        }));
        if !full {
            break;
        }
        from = last + 1;
    }
    Ok(out)
}
