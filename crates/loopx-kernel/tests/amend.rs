//! `goal amend`: revisions, who may amend, and the re-planning that follows.

#[path = "support/common.rs"]
mod common;

use common::{HUMAN, T0, fixture};
use loopx_domain::decision::DecisionState;
use loopx_domain::quota::{AgentView, DecisionKind};
use loopx_kernel::model::{Outcome, PermissionLevel, SliceKind};
use loopx_kernel::store::{AmendGoal, Amended, NewSlice, SliceEnd};
use loopx_kernel::{KernelError, Op, SliceId, Timestamp};

fn at(minutes: u64) -> Timestamp {
    T0.plus(std::time::Duration::from_secs(60 * minutes))
}

fn amend(f: &common::Fixture, change: AmendGoal, actor: &str) -> Result<Amended, KernelError> {
    f.store.run(change, actor, at(10))
}

fn planner() -> AgentView {
    AgentView {
        profile_file: None,
        writes: true,
        name: "a".parse().expect("a name"),
        capabilities: vec![],
        role: None,
        account: "acct".into(),
        pacing: None,
        windows: vec![],
    }
}

fn decide(f: &common::Fixture, minute: u64) -> loopx_domain::quota::Decision {
    f.store
        .read(|s| DecisionState::read(s, planner(), at(minute)))
        .expect("read")
        .decide()
}

/// Starts and ends a planning slice of `a` with `outcome`.
fn plan_slice(f: &common::Fixture, outcome: Outcome, minute: u64) -> SliceId {
    let slice = start_slice(f, None, minute);
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
            "agent:a",
            at(minute + 1),
        )
        .expect("end");
    slice
}

#[test]
fn an_amendment_is_the_goal_s_next_revision_with_who_why_and_what_changed() {
    let f = fixture();
    f.goal();
    let amended = amend(
        &f,
        AmendGoal {
            objective: Some("Ship it over gRPC".into()),
            scope: Some(vec!["src/**".into(), "proto/**".into()]),
            why: "the client moved to gRPC".into(),
            ..AmendGoal::default()
        },
        HUMAN,
    )
    .expect("amended");
    assert_eq!(amended.goal.revision, 2);
    assert_eq!(amended.goal.objective, "Ship it over gRPC");
    assert_eq!(amended.revision.changed, ["objective", "scope"]);
    assert_eq!(
        amended.revision.summary(),
        "objective and scope changed (why: the client moved to gRPC)"
    );
    let revisions = f
        .store
        .read(|s| s.goal_revisions(amended.goal.id))
        .expect("read");
    assert_eq!(revisions.len(), 2, "{revisions:#?}");
    assert_eq!(revisions[0].objective, "Ship it");
    assert_eq!(revisions[0].by, HUMAN);
    assert_ne!(revisions[0].digest, revisions[1].digest);
    // Only what changes makes a revision; a permission alone does.
    let same = amend(
        &f,
        AmendGoal {
            objective: Some("Ship it over gRPC".into()),
            ..AmendGoal::default()
        },
        HUMAN,
    )
    .expect_err("nothing changes");
    assert!(same.to_string().contains("nothing to amend"), "{same}");
    let widened = amend(
        &f,
        AmendGoal {
            permission: Some(PermissionLevel::ReadOnly),
            ..AmendGoal::default()
        },
        HUMAN,
    )
    .expect("a new permission");
    assert_eq!(widened.revision.number, 3);
    assert_eq!(widened.revision.digest, revisions[1].digest);
    // The log says it.
    let log = f.store.read(|s| s.events_tail(5)).expect("events");
    assert!(
        log.iter()
            .any(|e| e.kind.describe() == "goal g1 amended to revision 3: permission changed"),
        "{log:#?}"
    );
}

#[test]
fn only_a_person_amends_a_goal() {
    let f = fixture();
    f.goal();
    let refused = amend(
        &f,
        AmendGoal {
            scope: Some(vec!["**".into(), "/etc/**".into()]),
            ..AmendGoal::default()
        },
        "agent:exec",
    )
    .expect_err("an agent may not");
    assert_eq!(
        refused.class(),
        loopx_kernel::model::ErrorClass::Refused,
        "{refused}"
    );
    assert!(refused.to_string().contains("propose-goal"), "{refused}");
    // Bad words are refused as at `goal start`, and nothing changes.
    let outside = amend(
        &f,
        AmendGoal {
            scope: Some(vec!["../elsewhere/**".into()]),
            ..AmendGoal::default()
        },
        HUMAN,
    )
    .expect_err("outside the project");
    assert!(
        outside.to_string().contains("leaves the project"),
        "{outside}"
    );
    let goal = f
        .store
        .read(|s| s.current_goal())
        .expect("read")
        .expect("a goal");
    assert_eq!(
        (goal.revision, goal.scope.as_slice()),
        (1, &["**".to_owned()][..])
    );
}

#[test]
fn the_first_decision_after_an_amendment_re_plans_until_a_planning_slice_did_its_work() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let todo = f.todo("Add retries");
    assert_eq!(decide(&f, 5).todo().map(|(id, _)| id), Some(&todo));
    amend(
        &f,
        AmendGoal {
            objective: Some("Ship it over gRPC".into()),
            ..AmendGoal::default()
        },
        HUMAN,
    )
    .expect("amended");
    let d = decide(&f, 11);
    assert_eq!(
        (d.kind(), d.slice(), d.todo()),
        (DecisionKind::Deliver, Some(SliceKind::Plan), None),
        "{}",
        d.reason()
    );
    assert!(
        d.reason().contains("amended (revision 2)"),
        "{}",
        d.reason()
    );
    // A planning slice a limit cut short planned nothing: re-planning is still due.
    plan_slice(&f, Outcome::UsageLimited, 12);
    assert_eq!(decide(&f, 14).slice(), Some(SliceKind::Plan));
    // One that did its work ends it: the todo is worked on again.
    plan_slice(&f, Outcome::Progress, 15);
    let d = decide(&f, 17);
    assert_eq!(d.todo().map(|(id, _)| id), Some(&todo), "{}", d.reason());
}

#[test]
fn a_proposal_made_before_a_later_amendment_cannot_undo_it() {
    let f = fixture();
    f.goal();
    let proposal = loopx_kernel::report::goal_proposal(
        None,
        vec!["src/**".into()],
        "only the sources".into(),
        "proposed by `exec` in slice s1",
    );
    let gate = match f
        .store
        .apply(Op::GateAsk(proposal), "agent:exec", at(5))
        .expect("asked")
    {
        loopx_kernel::store::Applied::Gate(g) => g,
        other => panic!("a gate, not {other:?}"),
    };
    amend(
        &f,
        AmendGoal {
            scope: Some(vec!["lib/**".into()]),
            ..AmendGoal::default()
        },
        HUMAN,
    )
    .expect("a person amends first");
    let accept = f.store.apply(
        Op::GateAnswer(loopx_kernel::store::AnswerGate {
            gate: gate.id,
            choice: loopx_kernel::store::AnswerChoice::Option(1),
            slice: None,
            note: None,
        }),
        HUMAN,
        at(20),
    );
    let err = accept.expect_err("stale proposal");
    assert!(
        err.to_string().contains("would undo what changed since"),
        "{err}"
    );
    let goal = f
        .store
        .read(|s| s.current_goal())
        .expect("read")
        .expect("goal");
    assert_eq!(
        (goal.revision, goal.scope.as_slice()),
        (2, &["lib/**".to_owned()][..])
    );
}

/// Starts a slice of `a`: on `claim` (a todo and the epoch of its claim), or a planning one.
fn start_slice(
    f: &common::Fixture,
    claim: Option<(loopx_kernel::TodoId, u64)>,
    minute: u64,
) -> SliceId {
    let new = NewSlice {
        goal: None,
        agent: "a".parse().expect("a name"),
        todo: claim.map(|c| c.0),
        epoch: claim.map(|c| c.1),
        kind: match claim {
            Some(_) => SliceKind::Work,
            None => SliceKind::Plan,
        },
        profile_hash: String::new(),
        argv: vec![],
        limit_secs: 3600,
        log: None,
        owner: None,
    };
    match f
        .store
        .apply(Op::SliceStart(new), "agent:a", at(minute))
        .expect("start")
    {
        loopx_kernel::store::Applied::Slice(s) => s.id,
        other => panic!("a slice, not {other:?}"),
    }
}

#[test]
fn a_handoff_speaks_of_the_todo_its_slice_began_with() {
    use loopx_kernel::store::{Applied, EditTodo, NewHandoff};
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let todo = f.todo("Add retries");
    let epoch = f.claim(todo, &a, at(1)).expect("claimed").epoch;
    let slice = start_slice(&f, Some((todo, epoch)), 1);
    // A person rewrites the task while the agent works on the old one.
    f.store
        .apply(
            Op::TodoEdit(EditTodo {
                todo,
                title: Some("Add retries with jitter".into()),
                detail: None,
                priority: None,
            }),
            HUMAN,
            at(2),
        )
        .expect("edited");
    let handoff = |slice: Option<SliceId>, actor: &str| {
        let new = NewHandoff {
            todo: Some(todo),
            done: "Retries without jitter".into(),
            next: "Wire them in".into(),
            files: vec![],
            questions: vec![],
            slice,
            epoch: Some(epoch),
        };
        match f
            .store
            .apply(Op::HandoffAdd(new), actor, at(3))
            .expect("handoff")
        {
            Applied::Handoff(h) => h,
            other => panic!("a handoff, not {other:?}"),
        }
    };
    let now = f.store.read(|s| s.todo(todo)).expect("read").expect("todo");
    let written = handoff(Some(slice), "agent:a");
    assert_eq!(
        written.changed_since(Some(&now), 1).as_deref(),
        Some("written before the todo's title (was \"Add retries\") changed")
    );
    // Written outside a slice, it speaks of the todo as it is now.
    let by_hand = handoff(None, HUMAN);
    assert_eq!(by_hand.changed_since(Some(&now), 1), None);
}

#[test]
fn an_answer_records_the_revision_it_was_given_under_whatever_the_clock_says() {
    use loopx_kernel::model::Blocks;
    use loopx_kernel::store::{AnswerChoice, AnswerGate, Applied, NewGate};
    let f = fixture();
    f.goal();
    let todo = f.todo("Add retries");
    let ask = |minute: u64| {
        let new = NewGate {
            question: "Should t1 retry with exponential backoff or a fixed delay?".into(),
            options: vec![],
            context: String::new(),
            blocks: Blocks::Todos(vec![todo]),
            kind: loopx_kernel::model::GateKind::Question,
        };
        match f
            .store
            .apply(Op::GateAsk(new), HUMAN, at(minute))
            .expect("asked")
        {
            Applied::Gate(g) => g.id,
            other => panic!("a gate, not {other:?}"),
        }
    };
    let answer = |gate, minute: u64| {
        let op = Op::GateAnswer(AnswerGate {
            gate,
            choice: AnswerChoice::Text("exponential".into()),
            slice: None,
            note: None,
        });
        match f.store.apply(op, HUMAN, at(minute)).expect("answered") {
            Applied::Gate(g) => (g.answered_under, g.answer.expect("an answer").at),
            other => panic!("a gate, not {other:?}"),
        }
    };
    let before = ask(1);
    let after = ask(2);
    assert_eq!(answer(before, 5).0, 1);
    amend(
        &f,
        AmendGoal {
            objective: Some("Ship it over gRPC".into()),
            ..AmendGoal::default()
        },
        HUMAN,
    )
    .expect("amended at minute 10");
    // The wall clock stepped back across the amendment: the answer's time is before it, its
    // revision is not.
    let (under, answered_at) = answer(after, 8);
    assert_eq!((under, answered_at), (2, at(8)));
}
