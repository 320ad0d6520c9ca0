//! Leases, epochs and fencing, through the real store.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{Fixture, HUMAN, T0, fixture};
use loopx_kernel::model::{EventKind, TodoState};
use loopx_kernel::store::Applied;
use loopx_kernel::store::FinishTodo;
use loopx_kernel::store::SetGoalStatus;
use loopx_kernel::store::{ReleaseClaim, RenewClaim};
use loopx_kernel::{Conflict, KernelError, Op, Timestamp};
use loopx_testkit::{NewTodo, todo};

#[test]
fn a_claim_grants_a_lease_and_a_second_claim_conflicts() {
    let f = fixture();
    f.goal();
    let (a, b) = (f.agent("a"), f.agent("b"));
    let t = f.todo("Add retry to the HTTP client");
    let todo = f.claim(t, &a, T0).expect("first claim");
    assert_eq!((todo.state, todo.epoch), (TodoState::Claimed, 1));
    let err = f.claim(t, &b, T0).expect_err("second claim");
    assert!(
        matches!(
            err,
            KernelError::Conflict(Conflict::Claimed { epoch: 1, .. })
        ),
        "{err}"
    );
}

#[test]
fn an_expired_lease_is_reclaimed_once_and_fences_the_old_holder() {
    let f = fixture();
    f.goal();
    let (a, b, c) = (f.agent("a"), f.agent("b"), f.agent("c"));
    let t = f.todo("Migrate the schema");
    f.claim(t, &a, T0).expect("a claims");
    let later = T0.plus(Duration::from_secs(61));
    let todo = f.claim(t, &b, later).expect("b reclaims the expired lease");
    assert_eq!(todo.epoch, 2);
    assert!(
        f.claim(t, &c, later).is_err(),
        "the new lease is live: exactly one reclaim"
    );

    // a's late writes carry epoch 1 and are refused, and the refusal is on record.
    let err = f
        .store
        .apply(
            Op::TodoFinish(FinishTodo {
                todo: t,
                to: TodoState::Done,
                agent: Some(a.clone()),
                epoch: Some(1),
            }),
            "agent:a",
            later,
        )
        .expect_err("stale");
    assert!(
        matches!(
            err,
            KernelError::Conflict(Conflict::StaleEpoch {
                presented: 1,
                current: 2,
                ..
            })
        ),
        "{err}"
    );
    let refused = f
        .store
        .read(|s| s.events_tail(1))
        .expect("events")
        .pop()
        .expect("an event");
    assert!(
        matches!(
            refused.kind,
            EventKind::StaleEpochRefused {
                presented: 1,
                current: 2,
                ..
            }
        ),
        "{refused:?}"
    );
    let todo = f.store.read(|s| s.todo(t)).expect("read").expect("todo");
    assert_eq!(
        todo.state,
        TodoState::Claimed,
        "the refused done changed nothing"
    );
}

#[test]
fn renew_release_and_done_need_the_current_epoch() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Write the changelog");
    f.claim(t, &a, T0).expect("claim");
    let at = Timestamp(T0.0 + 1_000);
    let renewed = f
        .store
        .apply(
            Op::TodoRenew(RenewClaim {
                todo: t,
                agent: a.clone(),
                epoch: 1,
                ttl: Duration::from_secs(600),
            }),
            HUMAN,
            at,
        )
        .expect("renew");
    let Applied::Todo(todo) = renewed else {
        panic!("todo")
    };
    assert_eq!(
        todo.lease.expect("lease").expires_at,
        at.plus(Duration::from_secs(600))
    );
    assert!(
        f.store
            .apply(
                Op::TodoRelease(ReleaseClaim {
                    todo: t,
                    agent: a.clone(),
                    epoch: 7
                }),
                HUMAN,
                at
            )
            .is_err()
    );
    f.store
        .apply(
            Op::TodoRelease(ReleaseClaim {
                todo: t,
                agent: a.clone(),
                epoch: 1,
            }),
            HUMAN,
            at,
        )
        .expect("release");
    let todo = f.claim(t, &a, at).expect("claim again");
    assert_eq!(
        todo.epoch, 3,
        "every change of holder bumps the epoch: the release, then the claim"
    );
    f.store
        .apply(
            Op::TodoFinish(FinishTodo {
                todo: t,
                to: TodoState::Done,
                agent: Some(a.clone()),
                epoch: Some(3),
            }),
            HUMAN,
            at,
        )
        .expect("done");
    let err = f.claim(t, &a, at).expect_err("done stays done");
    assert!(
        matches!(
            err,
            KernelError::Conflict(Conflict::TodoState { state: "done", .. })
        ),
        "{err}"
    );
}

#[test]
fn a_human_cannot_finish_a_todo_under_a_live_lease_without_its_epoch() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Tidy the README");
    f.claim(t, &a, T0).expect("claim");
    let err = f
        .store
        .apply(
            Op::TodoFinish(FinishTodo {
                todo: t,
                to: TodoState::Dropped,
                agent: None,
                epoch: None,
            }),
            HUMAN,
            T0,
        )
        .expect_err("live lease");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::Claimed { .. })),
        "{err}"
    );
    let later = T0.plus(Duration::from_secs(120));
    f.store
        .apply(
            Op::TodoFinish(FinishTodo {
                todo: t,
                to: TodoState::Dropped,
                agent: None,
                epoch: None,
            }),
            HUMAN,
            later,
        )
        .expect("expired: allowed");
}

#[test]
fn dependencies_gates_capabilities_and_roles_guard_a_claim() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let first = f.todo("Design the API");
    let new = NewTodo {
        priority: 5,
        after: vec![first],
        ..todo("Implement the API")
    };
    let Applied::Todo(second) = f.store.apply(Op::TodoAdd(new), HUMAN, T0).expect("add") else {
        panic!("todo")
    };
    let err = f.claim(second.id, &a, T0).expect_err("waits on first");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::Waiting { .. })),
        "{err}"
    );

    let gate = loopx_kernel::store::NewGate {
        question: "Should the API use REST or gRPC for the public endpoints?".into(),
        options: vec!["REST".into(), "gRPC".into()],
        context: String::new(),
        blocks: loopx_kernel::model::Blocks::Todos(vec![first]),
        kind: loopx_kernel::model::GateKind::Question,
    };
    f.store.apply(Op::GateAsk(gate), HUMAN, T0).expect("gate");
    let err = f.claim(first, &a, T0).expect_err("gated");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::Gated { .. })),
        "{err}"
    );
}

#[test]
fn apply_all_is_all_or_nothing() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Write the release notes");
    let before = f.store.read(|s| s.event_count()).expect("count");
    let add = todo("Follow-up");
    // The second operation fails (a stale epoch), so the first must not land either.
    let ops = vec![
        Op::TodoAdd(add),
        Op::TodoRelease(ReleaseClaim {
            todo: t,
            agent: a.clone(),
            epoch: 9,
        }),
    ];
    assert!(f.store.apply_all(ops, HUMAN, T0).is_err());
    let (todos, after) = f
        .store
        .read(|s| Ok((s.todos()?, s.event_count()?)))
        .expect("read");
    assert_eq!(todos.len(), 1, "the follow-up todo was rolled back");
    assert_eq!(
        after,
        before + 1,
        "only the refusal is recorded, not the rolled-back add"
    );
    let last = f
        .store
        .read(|s| s.events_tail(1))
        .expect("events")
        .pop()
        .expect("event");
    assert!(
        matches!(last.kind, EventKind::StaleEpochRefused { presented: 9, .. }),
        "{last:?}"
    );
}

#[test]
fn a_stale_holder_cannot_write_the_handoff_or_evidence() {
    let f = fixture();
    f.goal();
    let (a, b) = (f.agent("a"), f.agent("b"));
    let t = f.todo("Migrate the schema");
    f.claim(t, &a, T0).expect("a claims");
    let later = T0.plus(Duration::from_secs(61));
    f.claim(t, &b, later).expect("b reclaims");
    let handoff = loopx_kernel::store::NewHandoff {
        todo: Some(t),
        epoch: Some(1),
        done: "a's stale view".into(),
        next: String::new(),
        files: vec![],
        questions: vec![],
        slice: None,
    };
    let err = f
        .store
        .apply(Op::HandoffAdd(handoff), "agent:a", later)
        .expect_err("stale handoff");
    assert!(
        matches!(
            err,
            KernelError::Conflict(Conflict::StaleEpoch {
                presented: 1,
                current: 2,
                ..
            })
        ),
        "{err}"
    );
    let evidence = loopx_kernel::store::NewEvidence {
        kind: loopx_kernel::model::EvidenceKind::Note,
        summary: "late".into(),
        detail: String::new(),
        files: vec![],
        todo: Some(t),
        slice: None,
        epoch: Some(1),
        work: None,
        metric: None,
    };
    assert!(
        f.store
            .apply(Op::EvidenceAdd(evidence), "agent:a", later)
            .is_err()
    );
    let todo = f.store.read(|s| s.todo(t)).expect("read").expect("todo");
    assert_eq!(todo.latest_handoff, None, "the stale handoff did not land");
}

#[test]
fn a_slice_names_its_files_after_the_id_it_is_given() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let new = loopx_kernel::store::NewSlice {
        goal: None,
        agent: a,
        todo: None,
        epoch: None,
        kind: loopx_kernel::model::SliceKind::Plan,
        profile_hash: "h".into(),
        argv: vec![
            "--prompt-file".into(),
            ".loopx/slices/{slice}.prompt".into(),
        ],
        limit_secs: 60,
        log: Some(".loopx/slices/{slice}.log".into()),
        owner: None,
    };
    let Applied::Slice(slice) = f
        .store
        .apply(Op::SliceStart(new), HUMAN, T0)
        .expect("slice starts")
    else {
        panic!("a slice start yields the slice");
    };
    assert_eq!(slice.log.as_deref(), Some(".loopx/slices/s1.log"));
    assert_eq!(slice.argv[1], ".loopx/slices/s1.prompt");
}

#[test]
fn a_running_slice_names_its_supervisor_until_it_ends() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let owner = loopx_kernel::model::ProcessIdentity {
        pid: 4242,
        start_ticks: 99,
        boot_id: "boot".into(),
    };
    let new = loopx_kernel::store::NewSlice {
        owner: Some(owner.clone()),
        ..slice(a, None, None, loopx_kernel::model::SliceKind::Plan)
    };
    let Applied::Slice(slice) = f
        .store
        .apply(Op::SliceStart(new), HUMAN, T0)
        .expect("slice starts")
    else {
        panic!("a slice start yields the slice");
    };
    let read = |f: &Fixture| f.store.read(|s| s.slice_owner(slice.id)).expect("reads");
    assert_eq!(read(&f), Some(owner));
    let end = loopx_kernel::store::SliceEnd {
        outcome: loopx_kernel::model::Outcome::Completed,
        leftovers: 0,
        exit: None,
        tokens: 0,
        cost_usd: 0.0,
        output_bytes: 0,
        log_sha256: String::new(),
    };
    f.store
        .apply(
            Op::SliceEnd {
                slice: slice.id,
                end,
            },
            HUMAN,
            T0,
        )
        .expect("slice ends");
    assert_eq!(read(&f), None, "an ended slice has no owner to check");
}

#[test]
fn a_todo_never_has_two_running_slices_even_for_its_holder() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Write");
    let claimed = f.claim(t, &a, T0).expect("claims");
    let new = slice(
        a,
        Some(t),
        Some(claimed.epoch),
        loopx_kernel::model::SliceKind::Work,
    );
    f.store
        .apply(Op::SliceStart(new.clone()), HUMAN, T0)
        .expect("the first slice starts");
    let second = f.store.apply(Op::SliceStart(new), HUMAN, T0);
    // Its agent runs one slice at a time, whichever supervisor asks (issue 31).
    assert!(
        matches!(
            second,
            Err(KernelError::Conflict(Conflict::AgentBusy { .. }))
        ),
        "{second:?}"
    );
}

#[test]
fn no_slice_starts_once_the_goal_is_done() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    f.store
        .apply(
            Op::GoalSetStatus(SetGoalStatus {
                goal: None,
                to: loopx_kernel::model::GoalStatus::Done,
                agents_close: false,
            }),
            HUMAN,
            T0,
        )
        .expect("the goal is done");
    let plan = slice(a, None, None, loopx_kernel::model::SliceKind::Plan);
    let started = f.store.apply(Op::SliceStart(plan), HUMAN, T0);
    assert!(
        matches!(
            started,
            Err(KernelError::Conflict(Conflict::GoalState { .. }))
        ),
        "{started:?}"
    );
}

/// A slice of `agent` to start: on `todo` under `epoch`, or a planning slice.
fn slice(
    agent: loopx_kernel::AgentName,
    todo: Option<loopx_kernel::TodoId>,
    epoch: Option<u64>,
    kind: loopx_kernel::model::SliceKind,
) -> loopx_kernel::store::NewSlice {
    loopx_kernel::store::NewSlice {
        goal: None,
        agent,
        todo,
        epoch,
        kind,
        profile_hash: "h".into(),
        argv: vec![],
        limit_secs: 60,
        log: None,
        owner: None,
    }
}
