//! What an agent may do to todos it was not given: the re-planning slice drops and rewrites
//! after an amendment, continuations held for the agent that proposed them, and an agent's
//! finish of a todo it does not hold.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{HUMAN, T0, fixture};
use loopx_kernel::model::{EventKind, Outcome, SliceKind, TodoState};
use loopx_kernel::store::{
    AmendGoal, Applied, CONTINUATION_HOLD, ClaimTodo, FinishTodo, NewSlice, NewTodo, ReplanTodo,
    Replanning, SliceEnd,
};
use loopx_kernel::{KernelError, Op, SliceId, Timestamp, TodoId};
use loopx_testkit::todo;

fn at(minutes: u64) -> Timestamp {
    T0.plus(Duration::from_secs(60 * minutes))
}

fn start(f: &common::Fixture, agent: &str, kind: SliceKind, minute: u64) -> SliceId {
    match f
        .store
        .apply(
            Op::SliceStart(NewSlice {
                goal: None,
                agent: agent.parse().expect("a name"),
                todo: None,
                epoch: None,
                kind,
                profile_hash: String::new(),
                argv: vec![],
                limit_secs: 60,
                log: None,
                owner: None,
            }),
            &format!("agent:{agent}"),
            at(minute),
        )
        .expect("start")
    {
        Applied::Slice(s) => s.id,
        other => panic!("a slice, not {other:?}"),
    }
}

fn end(f: &common::Fixture, agent: &str, slice: SliceId, outcome: Outcome, minute: u64) {
    f.store
        .apply(
            Op::SliceEnd {
                slice,
                end: SliceEnd {
                    outcome,
                    exit: Some("exit 0".into()),
                    tokens: 0,
                    cost_usd: 0.0,
                    output_bytes: 0,
                    leftovers: 0,
                    log_sha256: String::new(),
                },
            },
            &format!("agent:{agent}"),
            at(minute),
        )
        .expect("end");
}

fn amend(f: &common::Fixture, minute: u64) {
    f.store
        .run(
            AmendGoal {
                objective: Some("Ship it over gRPC".into()),
                why: "the service dropped HTTP".into(),
                ..AmendGoal::default()
            },
            HUMAN,
            at(minute),
        )
        .expect("amended");
}

fn drop_op(slice: SliceId, todo: TodoId) -> Op {
    Op::TodoReplan(ReplanTodo {
        slice,
        todo,
        change: Replanning::Drop,
        why: "HTTP is gone".into(),
    })
}

fn rewrite_op(slice: SliceId, todo: TodoId, title: &str) -> Op {
    Op::TodoReplan(ReplanTodo {
        slice,
        todo,
        change: Replanning::Rewrite {
            title: Some(title.into()),
            detail: None,
            priority: Some(3),
        },
        why: "retries now wrap the gRPC stub".into(),
    })
}

fn state(f: &common::Fixture, todo: TodoId) -> loopx_kernel::model::Todo {
    f.store
        .read(|s| s.todo(todo))
        .expect("read")
        .expect("the todo")
}

fn refused(result: Result<Vec<Applied>, KernelError>) -> String {
    match result {
        Err(e) => e.to_string(),
        Ok(applied) => panic!("applied: {applied:?}"),
    }
}

#[test]
fn the_re_planning_slice_drops_and_rewrites_open_todos_and_says_why() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let http = f.todo_by("Retry on HTTP 503", "agent:a");
    let retries = f.todo_by("Add retries", "agent:a");
    amend(&f, 10);
    let slice = start(&f, "a", SliceKind::Plan, 11);
    // Its writeback comes after its end, in the same batch as everything it reports.
    end(&f, "a", slice, Outcome::Progress, 12);
    f.store
        .apply_all(
            vec![
                drop_op(slice, http),
                rewrite_op(slice, retries, "Add retries around the gRPC stub"),
            ],
            "agent:a",
            at(12),
        )
        .expect("the re-planning slice may");
    assert_eq!(state(&f, http).state, TodoState::Dropped);
    let rewritten = state(&f, retries);
    assert_eq!(
        (rewritten.title.as_str(), rewritten.priority),
        ("Add retries around the gRPC stub", 3)
    );
    let events = f.store.read(|s| s.events_tail(4)).expect("events");
    let said: Vec<String> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::TodoReplanned { .. }))
        .map(|e| e.kind.describe())
        .collect();
    assert_eq!(
        said,
        [
            format!("{http} dropped in re-planning by slice {slice}: HTTP is gone"),
            format!(
                "{retries} rewritten (title, priority) in re-planning by slice {slice}: retries now wrap the gRPC stub"
            ),
        ]
    );
}

#[test]
fn no_other_slice_drops_or_rewrites_a_todo() {
    let f = fixture();
    f.goal();
    f.agent("a");
    f.agent("b");
    let todo = f.todo_by("Retry on HTTP 503", "agent:a");
    // Before any amendment there is nothing to re-plan.
    let early = start(&f, "a", SliceKind::Plan, 1);
    let why = refused(
        f.store
            .apply_all(vec![drop_op(early, todo)], "agent:a", at(2)),
    );
    assert!(why.contains("was never amended"), "{why}");
    amend(&f, 10);
    // A planning slice begun before the amendment planned the goal as it was.
    let why = refused(
        f.store
            .apply_all(vec![drop_op(early, todo)], "agent:a", at(11)),
    );
    assert!(why.contains("began before goal"), "{why}");
    end(&f, "a", early, Outcome::Progress, 11);
    // A work slice is not a planning one.
    let work = start(&f, "b", SliceKind::Work, 12);
    let why = refused(
        f.store
            .apply_all(vec![drop_op(work, todo)], "agent:b", at(12)),
    );
    assert!(why.contains("not a planning one"), "{why}");
    end(&f, "b", work, Outcome::Progress, 13);
    // Another agent cannot write for the planning slice.
    let planner = start(&f, "a", SliceKind::Plan, 14);
    let why = refused(
        f.store
            .apply_all(vec![drop_op(planner, todo)], "agent:b", at(14)),
    );
    assert!(why.contains("does not write for slice"), "{why}");
    // Nor can a person's words pass as the re-planning slice's.
    let why = refused(
        f.store
            .apply_all(vec![drop_op(planner, todo)], HUMAN, at(14)),
    );
    assert!(why.contains("does not write for slice"), "{why}");
    end(&f, "a", planner, Outcome::Progress, 15);
    // Once a planning slice re-planned, a later one no longer may.
    let later = start(&f, "a", SliceKind::Plan, 16);
    let why = refused(
        f.store
            .apply_all(vec![drop_op(later, todo)], "agent:a", at(16)),
    );
    assert!(why.contains("re-planned for revision 2 already"), "{why}");
    assert_eq!(state(&f, todo).state, TodoState::Open);
}

#[test]
fn a_todo_another_agent_is_working_on_is_left_as_it_is() {
    let f = fixture();
    f.goal();
    f.agent("a");
    f.agent("b");
    let todo = f.todo_by("Retry on HTTP 503", "agent:a");
    f.store
        .apply(
            Op::TodoClaim(ClaimTodo {
                todo,
                agent: "b".parse().expect("a name"),
                ttl: Duration::from_secs(600),
            }),
            "agent:b",
            at(5),
        )
        .expect("b claims it");
    amend(&f, 6);
    let slice = start(&f, "a", SliceKind::Plan, 7);
    let why = refused(
        f.store
            .apply_all(vec![drop_op(slice, todo)], "agent:a", at(7)),
    );
    assert!(why.contains("claimed by `b`"), "{why}");
    // Its claim lapsed: the re-planning slice may drop it, and the lapsed claim goes with it.
    f.store
        .apply_all(vec![drop_op(slice, todo)], "agent:a", at(30))
        .expect("a lapsed claim does not keep it");
    let dropped = state(&f, todo);
    assert_eq!((dropped.state, dropped.lease), (TodoState::Dropped, None));
}

#[test]
fn a_continuation_is_held_for_its_agent_until_the_hold_lapses() {
    let f = fixture();
    f.goal();
    f.agent("a");
    f.agent("b");
    let first = f.todo("Parse the config");
    let applied = f
        .store
        .apply_all(
            vec![Op::TodoAdd(NewTodo {
                after: vec![first],
                held_for: Some("a".parse().expect("a name")),
                ..todo("Validate the config")
            })],
            "agent:a",
            at(1),
        )
        .expect("added");
    let Some(Applied::Todo(next)) = applied.into_iter().next() else {
        panic!("a todo");
    };
    let lease = next.lease.clone().expect("held");
    assert_eq!(next.state, TodoState::Claimed);
    assert_eq!(
        (lease.agent.as_str(), lease.expires_at),
        ("a", at(1).plus(CONTINUATION_HOLD))
    );
    let claim = |agent: &str, minute: u64| {
        f.store.apply_all(
            vec![Op::TodoClaim(ClaimTodo {
                todo: next.id,
                agent: agent.parse().expect("a name"),
                ttl: Duration::from_secs(600),
            })],
            "agent:b",
            at(minute),
        )
    };
    let why = refused(claim("b", 5));
    assert!(why.contains("claimed by `a`"), "{why}");
    // Its agent's slice waits for what it continues, like any claim's.
    let begun = f.store.apply_all(
        vec![Op::SliceBegin(loopx_kernel::store::BeginSlice {
            slice: NewSlice {
                goal: None,
                agent: "a".parse().expect("a name"),
                todo: Some(next.id),
                epoch: None,
                kind: SliceKind::Work,
                profile_hash: String::new(),
                argv: vec![],
                limit_secs: 60,
                log: None,
                owner: None,
            },
            claim_ttl: Duration::from_secs(600),
            admit: loopx_testkit::begin(&"a".parse().expect("a name"), None).admit,
            messages: vec![],
        })],
        "agent:a",
        at(6),
    );
    let why = refused(begun);
    assert!(why.contains(&format!("waits on {first}")), "{why}");
    // Past the hold (and what it continues done), a peer takes it.
    f.store
        .apply_all(
            vec![Op::TodoFinish(FinishTodo {
                todo: first,
                to: TodoState::Done,
                agent: None,
                epoch: None,
            })],
            HUMAN,
            at(10),
        )
        .expect("done");
    claim("b", 1 + 16).expect("the hold lapsed");
    assert_eq!(state(&f, next.id).lease.expect("b's").agent.as_str(), "b");
}

#[test]
fn an_agent_finishes_only_the_todo_it_holds() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let todo = f.todo("Parse the config");
    let finish = |to: TodoState, actor: &str| {
        f.store.apply_all(
            vec![Op::TodoFinish(FinishTodo {
                todo,
                to,
                agent: None,
                epoch: None,
            })],
            actor,
            at(2),
        )
    };
    for to in [TodoState::Done, TodoState::Dropped] {
        let why = refused(finish(to, "agent:a"));
        assert!(why.contains("does not hold it"), "{why}");
    }
    // Not by presenting the epoch under another agent's name either.
    let a = "a".parse().expect("a name");
    let epoch = f.claim(todo, &a, at(1)).expect("claimed").epoch;
    let forged = f.store.apply_all(
        vec![Op::TodoFinish(FinishTodo {
            todo,
            to: TodoState::Done,
            agent: Some("a".parse().expect("a name")),
            epoch: Some(epoch),
        })],
        "agent:b",
        at(2),
    );
    assert!(refused(forged).contains("does not hold it"));
    // Its holder does, and a person may finish a todo nobody holds.
    f.store
        .apply_all(
            vec![Op::TodoFinish(FinishTodo {
                todo,
                to: TodoState::Done,
                agent: Some("a".parse().expect("a name")),
                epoch: Some(epoch),
            })],
            "agent:a",
            at(3),
        )
        .expect("the holder finishes it");
    let other = f.todo("Document it");
    f.store
        .apply_all(
            vec![Op::TodoFinish(FinishTodo {
                todo: other,
                to: TodoState::Dropped,
                agent: None,
                epoch: None,
            })],
            HUMAN,
            at(4),
        )
        .expect("a person drops it");
}

/// Issue 46, hole 3: the re-planning slice's report dropped every open todo and said `done`;
/// the drops were written before the goal's status in the same batch, so the kernel's "an agent
/// does not end a goal over open work" counted nothing open and the goal ended. The goal's end
/// is judged against the todos as they were before the batch's own drops: the batch is refused
/// as a whole, and without the `done` the drops stand.
#[test]
fn a_re_planner_that_drops_every_todo_does_not_end_the_goal() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let first = f.todo_by("Retry on HTTP 503", "agent:a");
    let second = f.todo_by("Add retries", "agent:a");
    amend(&f, 10);
    let slice = start(&f, "a", SliceKind::Plan, 11);
    end(&f, "a", slice, Outcome::Progress, 12);
    let done = Op::GoalSetStatus(loopx_kernel::store::SetGoalStatus {
        goal: None,
        to: loopx_kernel::model::GoalStatus::Done,
        agents_close: false,
    });
    let why = refused(f.store.apply_all(
        vec![drop_op(slice, first), drop_op(slice, second), done],
        "agent:a",
        at(12),
    ));
    assert!(
        why.contains("marked done by an agent while it has open todos"),
        "{why}"
    );
    assert_eq!(state(&f, first).state, TodoState::Open);
    let goal = f.store.read(|s| s.current_goal()).expect("read");
    assert_eq!(
        goal.map(|g| g.status),
        Some(loopx_kernel::model::GoalStatus::Active),
        "the goal is still active"
    );
    // The same drops alone are the re-planner's to make.
    f.store
        .apply_all(
            vec![drop_op(slice, first), drop_op(slice, second)],
            "agent:a",
            at(12),
        )
        .expect("the re-planning slice may drop");
    assert_eq!(state(&f, second).state, TodoState::Dropped);
}

/// Issue 46, hole 3: after an amendment the re-planning slice dropped a person's priority-9
/// todo and a person's monitor. Re-planning changes only agents' todos: a person's work is
/// the person's to drop, and the refusal says so and how.
#[test]
fn a_re_planner_leaves_a_persons_todos_and_monitors_as_they_are() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let deploy = f.todo("Deploy after the review");
    let watch = f
        .store
        .run(
            NewTodo {
                monitor: Some(loopx_kernel::model::MonitorSpec {
                    check: "scripts/ci-status.sh".into(),
                    every_ms: 60_000,
                    ..Default::default()
                }),
                ..todo("Wait for CI")
            },
            HUMAN,
            T0,
        )
        .expect("a monitor")
        .id;
    let agents = f.todo_by("Retry on HTTP 503", "agent:a");
    amend(&f, 10);
    let slice = start(&f, "a", SliceKind::Plan, 11);
    for op in [
        drop_op(slice, deploy),
        rewrite_op(slice, deploy, "Nothing to deploy"),
        drop_op(slice, watch),
    ] {
        let why = refused(f.store.apply_all(vec![op], "agent:a", at(11)));
        assert!(
            why.contains("`human:tester` made, and re-planning changes only agents' todos"),
            "{why}"
        );
        assert!(why.contains("loopx todo drop"), "{why}");
    }
    assert_eq!(state(&f, deploy).title, "Deploy after the review");
    assert_eq!(state(&f, deploy).state, TodoState::Open);
    assert_eq!(state(&f, watch).state, TodoState::Open);
    // The agents' own work is the re-planner's to change.
    f.store
        .apply_all(vec![drop_op(slice, agents)], "agent:a", at(11))
        .expect("an agent's todo is re-planned");
    assert_eq!(state(&f, agents).state, TodoState::Dropped);
}
