//! The history made from one goal's records: pure, so every surface shows the same figures.

use std::collections::BTreeMap;

use loopx_kernel::model::{EventKind, EvidenceKind, GateKind, GateState, Outcome, SliceRecord};
use loopx_kernel::{Timestamp, TodoId};

use super::{
    Amendment, CHANGED_NOTHING_RULE, Cost, FORMAT_VERSION, GoalHistory, Landing, Lane, LaneSlice,
    MonitorSpan, Progress, QuestionSpan, Records, Spent, ToDone, Wait, day, lineage, median,
};

/// The history of `r.goal` from its records.
pub fn build(r: &Records) -> GoalHistory {
    let counts = |at: Timestamp| r.since.is_none_or(|since| at >= since);
    let lanes = lanes(r, &counts);
    let done = done_times(r);
    let questions = questions(r, &counts);
    GoalHistory {
        format_version: FORMAT_VERSION,
        goal: r.goal.id,
        objective: r.goal.objective.clone(),
        status: r.goal.status,
        started_at: r.goal.created_at,
        since: r.since,
        now: r.now,
        cost: cost(&lanes),
        progress: progress(r, &done, &questions, &counts),
        monitors: monitors(r, &done),
        amendments: r
            .revisions
            .iter()
            .filter(|v| v.number > 1 && counts(v.at))
            .map(|v| Amendment {
                revision: v.number,
                at: v.at,
                by: v.by.clone(),
                changed: v.changed.clone(),
                why: v.why.clone(),
            })
            .collect(),
        landings: r
            .evidence
            .iter()
            .filter(|e| e.kind == EvidenceKind::Land && counts(e.at))
            .map(|e| Landing {
                evidence: e.id,
                todo: e.todo,
                slice: e.slice,
                at: e.at,
                summary: e.summary.clone(),
            })
            .collect(),
        lineage: lineage::lineage(r, &done),
        metrics: super::metrics::series(r, &counts),
        lanes,
        questions,
    }
}

/// When each todo of the goal was last done.
pub(super) fn done_times(r: &Records) -> BTreeMap<TodoId, Timestamp> {
    r.events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::TodoDone { todo, .. } => Some((todo, e.at)),
            _ => None,
        })
        .collect()
}

/// One slice as a lane shows it.
fn lane_slice(slice: &SliceRecord, now: Timestamp) -> LaneSlice {
    LaneSlice {
        id: slice.id,
        kind: slice.kind,
        todo: slice.todo,
        started_at: slice.started_at,
        ended_at: slice.ended_at,
        duration_ms: slice
            .ended_at
            .unwrap_or(now)
            .0
            .saturating_sub(slice.started_at.0),
        outcome: slice.outcome,
        tokens: slice.tokens,
        cost_usd: slice.cost_usd,
        changed_nothing: slice.outcome == Some(Outcome::Unchanged),
    }
}

/// A lane per agent, by name, of the slices that count.
fn lanes(r: &Records, counts: &impl Fn(Timestamp) -> bool) -> Vec<Lane> {
    let mut by_agent: BTreeMap<String, Vec<LaneSlice>> = BTreeMap::new();
    for slice in &r.slices {
        if counts(slice.started_at) {
            by_agent
                .entry(slice.agent.to_string())
                .or_default()
                .push(lane_slice(slice, r.now));
        }
    }
    let mut waits = waits(r, counts);
    for agent in waits.keys() {
        by_agent.entry(agent.clone()).or_default();
    }
    by_agent
        .into_iter()
        .map(|(agent, slices)| {
            let waits = waits.remove(&agent).unwrap_or_default();
            let mut waiting_ms = BTreeMap::new();
            for wait in &waits {
                *waiting_ms.entry(wait.on.clone()).or_default() += wait.to.0 - wait.from.0;
            }
            Lane {
                working_ms: slices.iter().map(|s| s.duration_ms).sum(),
                agent,
                slices,
                waits,
                waiting_ms,
            }
        })
        .collect()
}

/// A moment an agent's state changed, and the wait for this goal it began, if one did
/// (`on`, `reason`).
type Mark = (Timestamp, Option<(String, String)>);

/// Each agent's waits for the goal: from each state it recorded for this goal (not working,
/// not stopped) to its next state or slice start, whichever goal that is for (or now).
fn waits(r: &Records, counts: &impl Fn(Timestamp) -> bool) -> BTreeMap<String, Vec<Wait>> {
    // Per agent, in the log's order: (at, this goal's wait if it is one).
    let mut marks: BTreeMap<String, Vec<Mark>> = BTreeMap::new();
    for event in &r.events {
        match &event.kind {
            EventKind::AgentWaits {
                agent,
                on,
                goal,
                reason,
            } => {
                let ours = *goal == Some(r.goal.id) && on != "stopped" && on != "working";
                let wait = ours.then(|| (on.clone(), reason.clone()));
                marks
                    .entry(agent.to_string())
                    .or_default()
                    .push((event.at, wait));
            }
            EventKind::SliceStarted { agent, .. } => {
                marks
                    .entry(agent.to_string())
                    .or_default()
                    .push((event.at, None));
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for (agent, marks) in marks {
        let mut waits = Vec::new();
        for (i, (from, wait)) in marks.iter().enumerate() {
            let Some((on, reason)) = wait else { continue };
            let to = marks.get(i + 1).map_or(r.now, |(at, _)| *at);
            if counts(*from) {
                waits.push(Wait {
                    from: *from,
                    to: to.max(*from),
                    on: on.clone(),
                    reason: reason.clone(),
                });
            }
        }
        if !waits.is_empty() {
            out.insert(agent, waits);
        }
    }
    out
}

/// What the lanes' slices spent, cut every way.
fn cost(lanes: &[Lane]) -> Cost {
    let mut cost = Cost {
        total: Spent::default(),
        by_agent: BTreeMap::new(),
        by_todo: Vec::new(),
        by_kind: BTreeMap::new(),
        by_day: BTreeMap::new(),
        changed_nothing: Spent::default(),
        changed_nothing_slices: Vec::new(),
        changed_nothing_rule: CHANGED_NOTHING_RULE,
    };
    let mut by_todo: BTreeMap<Option<TodoId>, Spent> = BTreeMap::new();
    for lane in lanes {
        for s in &lane.slices {
            cost.total.add(s);
            cost.by_agent.entry(lane.agent.clone()).or_default().add(s);
            by_todo.entry(s.todo).or_default().add(s);
            cost.by_kind
                .entry(s.kind.as_str().to_owned())
                .or_default()
                .add(s);
            cost.by_day.entry(day(s.started_at)).or_default().add(s);
            if s.changed_nothing {
                cost.changed_nothing.add(s);
                cost.changed_nothing_slices.push(s.id);
            }
        }
    }
    cost.changed_nothing_slices.sort();
    // Todos in the order they were made; the slices of no todo (planning) last.
    let none = by_todo.remove(&None);
    cost.by_todo = by_todo
        .into_iter()
        .map(|(todo, spent)| (todo.map(|t| t.to_string()).unwrap_or_default(), spent))
        .collect();
    if let Some(spent) = none {
        cost.by_todo.push(("none".to_owned(), spent));
    }
    cost
}

/// `question`, `stall`, `budget`, …: a gate's kind in a word.
fn gate_kind(kind: &GateKind) -> &'static str {
    match kind {
        GateKind::Question => "question",
        GateKind::Stall { .. } => "stall",
        GateKind::Login { .. } => "login",
        GateKind::Budget { .. } => "budget",
        GateKind::GoalMet { .. } => "goal_met",
        GateKind::Rollback { .. } => "rollback",
        GateKind::Land { .. } => "land",
        GateKind::Scope { .. } => "scope",
        GateKind::Spawn { .. } => "spawn",
        GateKind::Monitor { .. } => "monitor",
        GateKind::GoalProposal { .. } => "goal_proposal",
        GateKind::ScopeNarrowed { .. } => "scope_narrowed",
        GateKind::Best { .. } => "best",
    }
}

/// Every gate about the goal asked in the window, from asked to answered.
fn questions(r: &Records, counts: &impl Fn(Timestamp) -> bool) -> Vec<QuestionSpan> {
    r.gates
        .iter()
        .filter(|g| counts(g.created_at))
        .map(|g| {
            let answer = g.answer.as_ref().filter(|_| g.state == GateState::Answered);
            QuestionSpan {
                gate: g.id,
                kind: gate_kind(&g.kind).to_owned(),
                question: g.question.clone(),
                asked_by: g.asked_by.clone(),
                asked_at: g.created_at,
                state: g.state.as_str().to_owned(),
                answered_by: answer.map(|a| a.by.clone()),
                answered_at: answer.map(|a| a.at),
                answer: answer.map(|a| a.text.clone()),
                wait_ms: answer.map(|a| a.at.0.saturating_sub(g.created_at.0)),
            }
        })
        .collect()
}

/// Todos done per day, each todo's time to done, and the questions' times to an answer.
fn progress(
    r: &Records,
    done: &BTreeMap<TodoId, Timestamp>,
    questions: &[QuestionSpan],
    counts: &impl Fn(Timestamp) -> bool,
) -> Progress {
    let mut done_by_day: BTreeMap<String, u64> = BTreeMap::new();
    let mut to_done = Vec::new();
    for todo in &r.todos {
        let Some(&at) = done.get(&todo.id).filter(|at| counts(**at)) else {
            continue;
        };
        if todo.state != loopx_kernel::model::TodoState::Done {
            continue;
        }
        *done_by_day.entry(day(at)).or_default() += 1;
        to_done.push(ToDone {
            todo: todo.id,
            created_at: todo.created_at,
            done_at: at,
            duration_ms: at.0.saturating_sub(todo.created_at.0),
        });
    }
    let answered: Vec<u64> = questions.iter().filter_map(|q| q.wait_ms).collect();
    Progress {
        done_by_day,
        median_to_done_ms: median(to_done.iter().map(|t| t.duration_ms).collect()),
        to_done,
        questions_asked: questions.len() as u64,
        questions_answered: answered.len() as u64,
        median_to_answer_ms: median(answered),
    }
}

/// The goal's monitors, from their first poll to met.
fn monitors(r: &Records, done: &BTreeMap<TodoId, Timestamp>) -> Vec<MonitorSpan> {
    let mut first_poll: BTreeMap<TodoId, Timestamp> = BTreeMap::new();
    for e in &r.events {
        if let EventKind::MonitorPolled { todo, .. } = e.kind {
            first_poll.entry(todo).or_insert(e.at);
        }
    }
    r.todos
        .iter()
        .filter_map(|t| t.monitor.as_ref().map(|m| (t, m)))
        .map(|(t, m)| MonitorSpan {
            todo: t.id,
            title: t.title.clone(),
            state: t.state,
            polls: m.polls,
            first_poll: first_poll.get(&t.id).copied(),
            met_at: done.get(&t.id).copied(),
        })
        .collect()
}
