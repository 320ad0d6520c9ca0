//! The pure parts of a goal's history: sums, medians, parents, voiding, graphs.

use std::collections::BTreeMap;

use loopx_kernel::model::{
    Event, EventKind, Evidence, EvidenceKind, Goal, GoalStatus, Isolation, Outcome,
    PermissionLevel, SliceKind, SliceRecord, Todo, TodoState,
};
use loopx_kernel::{EvidenceId, GoalId, SliceId, Timestamp, TodoId};

use super::{EdgeKind, GraphFormat, Records, build, median, render_graph};

const MIN: u64 = 60_000;

pub(super) fn at(minutes: u64) -> Timestamp {
    // 2026-12-07T00:00:00Z, then minutes on.
    Timestamp(1_796_601_600_000 + minutes * MIN)
}

pub(super) fn todo(id: u64, created: u64, by: &str, state: TodoState, after: &[u64]) -> Todo {
    Todo {
        id: TodoId(id),
        goal: GoalId(1),
        title: format!("Todo \"{id}\""),
        detail: String::new(),
        priority: 0,
        state,
        needs: vec![],
        after: after.iter().map(|a| TodoId(*a)).collect(),
        role: None,
        epoch: 0,
        lease: None,
        latest_handoff: None,
        created_by: by.to_owned(),
        created_at: at(created),
        updated_at: at(created),
        finished_under: None,
        attempts_since: None,
        monitor: None,
        not_before: None,
    }
}

pub(super) fn slice(
    id: u64,
    agent: &str,
    todo: Option<u64>,
    from: u64,
    to: u64,
    tokens: u64,
) -> SliceRecord {
    SliceRecord {
        id: SliceId(id),
        agent: agent.parse().expect("agent"),
        todo: todo.map(TodoId),
        epoch: None,
        kind: if todo.is_some() {
            SliceKind::Work
        } else {
            SliceKind::Plan
        },
        profile_hash: String::new(),
        argv: vec![],
        process: None,
        started_at: at(from),
        limit_secs: 0,
        ended_at: Some(at(to)),
        outcome: Some(if tokens == 7 {
            Outcome::Unchanged
        } else {
            Outcome::Completed
        }),
        exit: None,
        tokens,
        cost_usd: tokens as f64 / 1000.0,
        output_bytes: 0,
        log: None,
        leftovers: 0,
        containment: String::new(),
        log_sha256: String::new(),
        seen: None,
        goal: Some(GoalId(1)),
    }
}

fn event(seq: u64, minutes: u64, kind: EventKind) -> Event {
    Event {
        seq,
        at: at(minutes),
        actor: "loopx".into(),
        kind,
    }
}

fn evidence(id: u64, todo: u64, minutes: u64) -> Evidence {
    Evidence {
        id: EvidenceId(id),
        kind: EvidenceKind::Test,
        summary: "tests pass".into(),
        detail: String::new(),
        files: vec![],
        todo: Some(TodoId(todo)),
        slice: None,
        actor: "human:ann".into(),
        at: at(minutes),
        revision: 1,
        work: None,
        metric: None,
    }
}

/// A goal: t1 (a person's) done by ann's s1, which proposed t2; t2 done, its `--next`
/// successor t3; t4 after t2 and dropped; a planning slice s2 by bob that changed nothing.
/// t2's test result e1 is stale.
pub(super) fn records() -> Records {
    let done = |todo: u64| EventKind::TodoDone {
        todo: TodoId(todo),
        epoch: None,
    };
    Records {
        goal: Goal {
            id: GoalId(1),
            objective: "Ship it".into(),
            scope: vec![],
            permission: PermissionLevel::WorkspaceWrite,
            share: 1.0,
            status: GoalStatus::Active,
            created_at: at(0),
            updated_at: at(0),
            isolation: Isolation::Shared,
            revision: 1,
            priority: 0,
        },
        revisions: vec![],
        todos: vec![
            todo(1, 1, "human:ann", TodoState::Done, &[]),
            todo(2, 5, "agent:ann", TodoState::Done, &[]),
            todo(3, 30, "human:ann", TodoState::Open, &[2]),
            todo(4, 6, "human:ann", TodoState::Dropped, &[2]),
        ],
        slices: vec![
            slice(1, "ann", Some(1), 2, 10, 1000),
            slice(2, "bob", None, 3, 4, 7),
            slice(3, "ann", Some(2), 11, 20, 500),
        ],
        evidence: vec![evidence(1, 2, 19)],
        gates: vec![],
        events: vec![
            event(1, 10, done(1)),
            event(2, 30, done(2)),
            event(
                3,
                31,
                EventKind::TodoDropped {
                    todo: TodoId(4),
                    epoch: None,
                },
            ),
        ],
        stale: BTreeMap::from([(EvidenceId(1), "src/a.rs changed".to_owned())]),
        now: at(60),
        since: None,
        metric_rules: Default::default(),
    }
}

#[test]
fn cost_adds_up_over_every_cut_and_names_the_slices_that_changed_nothing() {
    let h = build(&records());
    assert_eq!(h.cost.total.tokens, 1507);
    assert_eq!(h.cost.total.slices, 3);
    assert_eq!(h.cost.by_agent["ann"].tokens, 1500);
    assert_eq!(h.cost.by_agent["bob"].duration_ms, MIN);
    assert_eq!(h.cost.by_kind["plan"].tokens, 7);
    let todos: Vec<&str> = h.cost.by_todo.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(todos, ["t1", "t2", "none"]);
    assert_eq!(h.cost.by_day["2026-12-07"].slices, 3);
    assert_eq!(h.cost.changed_nothing.tokens, 7);
    assert_eq!(h.cost.changed_nothing_slices, [SliceId(2)]);
    assert_eq!(h.lanes[0].working_ms, 17 * MIN);
    assert!(h.lanes.iter().all(|l| l.waits.is_empty()));
}

#[test]
fn progress_counts_todos_done_and_the_median_time_to_done() {
    let h = build(&records());
    assert_eq!(h.progress.done_by_day["2026-12-07"], 2);
    // t1 took 9 minutes, t2 25: the lower middle of two is 9.
    assert_eq!(h.progress.median_to_done_ms, Some(9 * MIN));
    assert_eq!(median(vec![5, 1, 3]), Some(3));
    assert_eq!(median(vec![]), None);
}

#[test]
fn since_keeps_only_what_happened_from_then_on() {
    let mut r = records();
    r.since = Some(at(11));
    let h = build(&r);
    assert_eq!(h.cost.total.slices, 1);
    assert_eq!(h.progress.to_done.len(), 1);
    // The lineage stays whole.
    assert_eq!(h.lineage.todos.len(), 4);
}

#[test]
fn each_todo_has_its_parent_and_voiding_spreads_along_after_and_next() {
    let h = build(&records());
    let line = |id: u64| {
        h.lineage
            .todos
            .iter()
            .find(|t| t.todo == TodoId(id))
            .expect("todo")
    };
    assert_eq!(
        (line(1).parent.as_str(), line(1).made),
        ("r1", EdgeKind::Made)
    );
    assert_eq!(
        (line(2).parent.as_str(), line(2).made),
        ("s1", EdgeKind::Proposed)
    );
    assert_eq!(
        (line(3).parent.as_str(), line(3).made),
        ("t2", EdgeKind::Next)
    );
    assert_eq!(
        (line(4).parent.as_str(), line(4).made),
        ("r1", EdgeKind::Made)
    );
    assert!(line(4).dead_end && !line(1).dead_end);
    assert!(line(2).rests_on_stale);
    assert_eq!(
        line(2).stale_because.as_deref(),
        Some("e1 is stale (src/a.rs changed)")
    );
    assert!(line(3).rests_on_stale);
    assert_eq!(line(3).stale_because.as_deref(), Some("after t2"));
    assert!(!line(4).rests_on_stale && !line(1).rests_on_stale);
    // t4 waits on t2 without being its successor: an `after` edge besides its parent.
    let after = h
        .lineage
        .edges
        .iter()
        .any(|e| e.from == "t2" && e.to == "t4" && e.kind == EdgeKind::After);
    assert!(after);
    let planned = h
        .lineage
        .edges
        .iter()
        .any(|e| e.to == "s2" && e.kind == EdgeKind::Planned);
    assert!(planned);
}

#[test]
fn graphs_escape_titles_and_mark_dead_ends_and_stale_work() {
    let h = build(&records());
    let mermaid = render_graph(&h.lineage, GraphFormat::Mermaid);
    assert!(mermaid.starts_with("flowchart LR\n"));
    assert!(
        mermaid.contains("t4[\"t4: Todo #quot;4#quot; (dropped)\"]:::dead"),
        "{mermaid}"
    );
    assert!(mermaid.contains("t2 -->|next| t3"), "{mermaid}");
    let dot = render_graph(&h.lineage, GraphFormat::Dot);
    assert!(
        dot.contains("\"t4\" [label=\"t4: Todo \\\"4\\\" (dropped)\""),
        "{dot}"
    );
    assert!(dot.contains("color=red"), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
    assert!("svg".parse::<GraphFormat>().is_err());
}

#[test]
fn a_monitor_spans_first_poll_to_met_and_its_then_todo_and_a_replanned_drop_are_drawn() {
    let mut r = records();
    let mut monitor = todo(5, 40, "human:ann", TodoState::Done, &[]);
    let spec = loopx_kernel::model::MonitorSpec {
        check: "true".into(),
        every_ms: MIN,
        ..Default::default()
    };
    monitor.monitor = Some(Box::new(loopx_kernel::model::Monitor::new(spec, at(40))));
    r.todos.push(monitor);
    r.todos
        .push(todo(6, 41, "human:ann", TodoState::Open, &[5]));
    let polled = |seq, minutes| {
        event(
            seq,
            minutes,
            EventKind::MonitorPolled {
                todo: TodoId(5),
                verdict: loopx_kernel::model::PollVerdict::NotYet,
                exit: Some(1),
                polls: 1,
            },
        )
    };
    r.events.push(polled(4, 42));
    r.events.push(polled(5, 45));
    r.events.push(event(
        6,
        50,
        EventKind::TodoDone {
            todo: TodoId(5),
            epoch: None,
        },
    ));
    r.events.push(event(
        7,
        51,
        EventKind::TodoReplanned {
            todo: TodoId(4),
            slice: SliceId(2),
            dropped: true,
            changed: vec![],
            why: "no longer needed".into(),
        },
    ));
    let h = build(&r);
    let m = &h.monitors[0];
    assert_eq!(
        (m.todo, m.first_poll, m.met_at),
        (TodoId(5), Some(at(42)), Some(at(50)))
    );
    let edge = |from: &str, to: &str| {
        h.lineage
            .edges
            .iter()
            .find(|e| e.from == from && e.to == to)
            .map(|e| e.kind)
    };
    assert_eq!(edge("t5", "t6"), Some(EdgeKind::Then));
    assert_eq!(edge("s2", "t4"), Some(EdgeKind::Dropped));
}

#[test]
fn a_landing_hangs_off_the_slice_that_recorded_it() {
    let mut r = records();
    let mut land = evidence(2, 1, 10);
    land.kind = EvidenceKind::Land;
    land.slice = Some(SliceId(1));
    land.summary = "t1 landed on loopx/g1 as 3d50e41".into();
    r.evidence.push(land);
    let h = build(&r);
    assert_eq!(h.landings.len(), 1);
    assert_eq!(h.landings[0].todo, Some(TodoId(1)));
    let node = h.lineage.nodes.iter().find(|n| n.id == "e2").expect("e2");
    assert_eq!(node.kind, super::NodeKind::Landing);
    let landed = h
        .lineage
        .edges
        .iter()
        .any(|e| e.from == "s1" && e.to == "e2" && e.kind == EdgeKind::Landed);
    assert!(landed);
}
