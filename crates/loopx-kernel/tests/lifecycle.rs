//! A slice's life in the kernel: one transaction begins it, one interrupts it, and the one
//! fencing rule decides every write made under its claim. Through the real store.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{Fixture, HUMAN, T0, fixture};
use loopx_domain::quota::Pacing;
use loopx_kernel::model::{Blocks, EventKind, EvidenceKind, GateKind, GateState, Todo, TodoState};
use loopx_kernel::store::FinishTodo;
use loopx_kernel::store::Interrupt;
use loopx_kernel::store::{
    AnswerChoice, Applied, BeginSlice, NewEvidence, NewGate, NewHandoff, QuotaRequest,
};
use loopx_kernel::store::{AnswerGate, ClaimTodo, NewAgent, ReleaseClaim, RenewClaim};
use loopx_kernel::store::{NewGoal, NewHold, SetGoalStatus};
use loopx_kernel::{AgentName, Conflict, KernelError, Op, SliceId, Timestamp, TodoId};

const TTL: Duration = Duration::from_secs(600);

fn begin(todo: Option<TodoId>, agent: &AgentName, pacing: Option<Pacing>) -> Op {
    let mut begin = BeginSlice {
        claim_ttl: TTL,
        ..loopx_testkit::begin(agent, todo)
    };
    begin.admit.rules = std::sync::Arc::new(loopx_domain::account::AccountLimits {
        pacing,
        windows: vec![],
    });
    Op::SliceBegin(begin)
}

fn todo(f: &Fixture, id: TodoId) -> Todo {
    f.store
        .read(|s| s.todo(id))
        .expect("read")
        .expect("the todo")
}

fn spends(f: &Fixture) -> usize {
    f.store
        .read(|s| s.spends_since(Timestamp(0)))
        .expect("read")
        .len()
}

fn begun(f: &Fixture, op: Op, at: Timestamp) -> (SliceId, u64, bool) {
    match f.store.apply(op, "agent:a", at).expect("the slice begins") {
        Applied::SliceBegun { slice, took_claim } => {
            (slice.id, slice.epoch.unwrap_or_default(), took_claim)
        }
        other => panic!("expected a begun slice, got {other:?}"),
    }
}

#[test]
fn one_transaction_claims_admits_and_records_a_slice() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Add retry");
    let (slice, epoch, took) = begun(&f, begin(Some(t), &a, None), T0);
    assert_eq!((epoch, took), (1, true));
    let record = f
        .store
        .read(|s| s.slice(slice))
        .expect("read")
        .expect("slice");
    assert_eq!((record.todo, record.epoch), (Some(t), Some(1)));
    assert_eq!(todo(&f, t).state, TodoState::Claimed);
    assert_eq!(spends(&f), 1, "admitted");
    let kinds: Vec<&str> = f
        .store
        .read(|s| s.events_tail(3))
        .expect("events")
        .iter()
        .map(|e| e.kind.name())
        .collect();
    assert_eq!(kinds, ["todo_claimed", "quota_spent", "slice_started"]);
}

#[test]
fn a_refused_admission_leaves_no_claim_and_a_lost_race_spends_nothing() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Add retry");
    let paced = Some(Pacing {
        slices_per_hour: 1.0,
        burst: 1,
    });
    // The first slice uses the hour's allowance (and ends).
    let (first, _, _) = begun(&f, begin(Some(t), &a, paced), T0);
    let end = loopx_kernel::store::SliceEnd {
        outcome: loopx_kernel::model::Outcome::Progress,
        leftovers: 0,
        exit: None,
        tokens: 0,
        cost_usd: 0.0,
        output_bytes: 0,
        log_sha256: String::new(),
    };
    f.store
        .apply_all(
            vec![
                Op::SliceEnd { slice: first, end },
                Op::TodoRelease(ReleaseClaim {
                    todo: t,
                    agent: a.clone(),
                    epoch: 1,
                }),
            ],
            "agent:a",
            T0,
        )
        .expect("ends");
    let before = (todo(&f, t), spends(&f));
    let err = f
        .store
        .apply(begin(Some(t), &a, paced), "agent:a", T0)
        .expect_err("paced");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::QuotaBlocked { .. })),
        "{err}"
    );
    assert_eq!((todo(&f, t), spends(&f)), before, "no claim, no spend");

    // Another agent's slice runs on t2: a begin on it is refused before anything is spent.
    let b = f.agent("b");
    let t2 = f.todo("Document it");
    begun(&f, begin(Some(t2), &b, None), T0);
    let expire = T0.plus(TTL + Duration::from_secs(1));
    let spent = spends(&f);
    let err = f
        .store
        .apply(begin(Some(t2), &a, None), "agent:a", expire)
        .expect_err("a slice runs on t2");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::SliceRunning { .. })),
        "{err}"
    );
    assert_eq!(spends(&f), spent, "a lost race spends nothing");
    assert_eq!(
        todo(&f, t2).lease.map(|l| l.agent.to_string()),
        Some("b".into()),
        "and takes no claim"
    );
}

#[test]
fn a_live_lease_is_continued_not_claimed_again() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Add retry");
    f.store
        .apply(
            Op::TodoClaim(ClaimTodo {
                todo: t,
                agent: a.clone(),
                ttl: TTL,
            }),
            HUMAN,
            T0,
        )
        .expect("claim");
    let (_, epoch, took) = begun(&f, begin(Some(t), &a, None), T0);
    assert_eq!((epoch, took), (1, false));
}

fn release(f: &Fixture, t: TodoId, agent: &AgentName, epoch: u64) -> Result<Applied, KernelError> {
    f.store.apply(
        Op::TodoRelease(ReleaseClaim {
            todo: t,
            agent: agent.clone(),
            epoch,
        }),
        HUMAN,
        T0,
    )
}

fn done(f: &Fixture, t: TodoId, agent: &AgentName, epoch: u64) -> Result<Applied, KernelError> {
    f.store.apply(
        Op::TodoFinish(FinishTodo {
            todo: t,
            to: TodoState::Done,
            agent: Some(agent.clone()),
            epoch: Some(epoch),
        }),
        &format!("agent:{agent}"),
        T0,
    )
}

#[test]
fn a_released_claim_fences_its_old_holder() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Add retry");
    f.claim(t, &a, T0).expect("claim");
    let released = release(&f, t, &a, 1).expect("a person releases it");
    let Applied::Todo(released) = released else {
        panic!("a todo")
    };
    assert_eq!(
        (released.state, released.epoch),
        (TodoState::Open, 2),
        "a release changes the holder, so the epoch"
    );
    let err = done(&f, t, &a, 1).expect_err("the old holder's done");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::StaleEpoch { .. })),
        "{err}"
    );
    assert_eq!(todo(&f, t).state, TodoState::Open);
}

#[test]
fn only_the_holder_finishes_under_an_epoch() {
    let f = fixture();
    f.goal();
    let (victim, other) = (f.agent("victim"), f.agent("other"));
    // Never claimed: its epoch is 0, and nobody holds it.
    let t = f.todo("Add retry");
    let err = done(&f, t, &victim, 0).expect_err("never held");
    assert!(
        matches!(
            err,
            KernelError::Conflict(Conflict::TodoState { state: "open", .. })
        ),
        "{err}"
    );
    f.claim(t, &victim, T0).expect("claim");
    let err = done(&f, t, &other, 1).expect_err("not the holder");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::NotHolder { .. })),
        "{err}"
    );
    assert_eq!(todo(&f, t).state, TodoState::Claimed);
}

#[test]
fn the_slice_that_finished_its_todo_may_renew_and_write_but_nothing_else() {
    let f = fixture();
    f.goal();
    let (a, b) = (f.agent("a"), f.agent("b"));
    let t = f.todo("Add retry");
    f.claim(t, &a, T0).expect("claim");
    let Applied::Todo(finished) = done(&f, t, &a, 1).expect("report done") else {
        panic!("a todo")
    };
    assert_eq!(finished.epoch, 2, "finishing changes the holder too");
    assert_eq!(
        finished
            .finished_under
            .as_ref()
            .map(|l| (l.agent.as_str(), l.epoch)),
        Some(("a", 1))
    );
    // The renewal thread of the still-running slice: success, nothing changes.
    let renewed = f
        .store
        .apply(
            Op::TodoRenew(RenewClaim {
                todo: t,
                agent: a.clone(),
                epoch: 1,
                ttl: TTL,
            }),
            "agent:a",
            T0,
        )
        .expect("a renewal under the finishing claim succeeds");
    let Applied::Todo(renewed) = renewed else {
        panic!("a todo")
    };
    assert_eq!((renewed.state, renewed.epoch), (TodoState::Done, 2));
    // Its writeback: evidence and a handoff under epoch 1.
    let evidence = NewEvidence {
        kind: EvidenceKind::Test,
        summary: "cargo test: 41 passed".into(),
        detail: String::new(),
        files: vec![],
        todo: Some(t),
        slice: None,
        epoch: Some(1),
        work: None,
        metric: None,
    };
    f.store
        .apply(Op::EvidenceAdd(evidence.clone()), "agent:a", T0)
        .expect("evidence");
    let handoff = NewHandoff {
        todo: Some(t),
        done: "Added retry".into(),
        next: String::new(),
        files: vec![],
        questions: vec![],
        slice: None,
        epoch: Some(1),
    };
    f.store
        .apply(Op::HandoffAdd(handoff), "agent:a", T0)
        .expect("handoff");
    // Another agent presenting the same epoch is not the finisher.
    let err = f
        .store
        .apply(Op::EvidenceAdd(evidence), "agent:b", T0)
        .expect_err("b never held it");
    assert!(matches!(err, KernelError::Conflict(_)), "{err}");
    let err = release(&f, t, &a, 1).expect_err("nothing to release");
    assert!(matches!(err, KernelError::Conflict(_)), "{err}");
    let err = done(&f, t, &b, 2).expect_err("done is done");
    assert!(matches!(err, KernelError::Conflict(_)), "{err}");
}

fn interrupt(f: &Fixture, slice: SliceId) -> Result<Applied, KernelError> {
    f.store.apply(
        Op::SliceInterrupt(Interrupt {
            slice,
            reason: "the store stayed busy through the writeback".into(),
            exit: Some("exit 0".into()),
            output_bytes: 12,
            usage: None,
        }),
        "loopx",
        T0,
    )
}

#[test]
fn an_interrupted_slice_still_charges_what_it_spent() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Add retry");
    let (slice, _, _) = begun(&f, begin(Some(t), &a, None), T0);
    let spent = QuotaRequest {
        tokens: 1_234,
        cost_usd: 0.5,
        busy: Some((T0, T0.plus(Duration::from_secs(3)))),
        ..loopx_testkit::begin(&a, None).admit
    };
    f.store
        .apply(
            Op::SliceInterrupt(Interrupt {
                slice,
                reason: "the store stayed busy through the writeback".into(),
                exit: Some("exit 0".into()),
                output_bytes: 12,
                usage: Some(spent),
            }),
            "loopx",
            T0,
        )
        .expect("interrupts");
    let (record, spends) = f
        .store
        .read(|s| Ok((s.slice(slice)?, s.spends_since(Timestamp(0))?)))
        .expect("read");
    assert_eq!(record.map(|r| r.tokens), Some(1_234));
    let charged: u64 = spends
        .iter()
        .filter(|s| !s.admitted)
        .map(|s| s.tokens)
        .sum();
    assert_eq!(charged, 1_234, "{spends:?}");
}

#[test]
fn an_interrupted_slice_ends_with_evidence_and_gives_back_only_its_own_claim() {
    let f = fixture();
    f.goal();
    let (a, b) = (f.agent("a"), f.agent("b"));
    let t = f.todo("Add retry");
    let (s1, _, _) = begun(&f, begin(Some(t), &a, None), T0);
    let Applied::Interrupted { slice, released } = interrupt(&f, s1).expect("interrupts") else {
        panic!("interrupted")
    };
    assert_eq!(
        slice.outcome,
        Some(loopx_kernel::model::Outcome::Interrupted)
    );
    assert!(released);
    assert_eq!(todo(&f, t).state, TodoState::Open);
    let evidence = f
        .store
        .read(|s| s.evidence_newest(1, |_| true))
        .expect("read");
    assert_eq!(evidence[0].kind, EvidenceKind::Slice);
    assert!(
        evidence[0].summary.contains("stayed busy"),
        "{}",
        evidence[0].summary
    );
    let err = interrupt(&f, s1).expect_err("once");
    assert!(
        matches!(err, KernelError::Conflict(Conflict::SliceEnded { .. })),
        "{err}"
    );

    // The claim moved on to b while a's second slice ran: a's interruption leaves it alone.
    let (s2, epoch, _) = begun(&f, begin(Some(t), &a, None), T0);
    release(&f, t, &a, epoch).expect("a person releases it");
    f.claim(t, &b, T0).expect("b claims");
    let Applied::Interrupted { released, .. } = interrupt(&f, s2).expect("interrupts") else {
        panic!("interrupted")
    };
    assert!(!released, "b's claim stays");
    assert_eq!(
        todo(&f, t).lease.map(|l| l.agent.to_string()),
        Some("b".into())
    );
}

fn stall_gate(t: TodoId) -> NewGate {
    NewGate {
        question: format!("Todo {t} went three slices without progress: retry it or drop it?"),
        options: vec!["retry".into(), "drop".into()],
        context: String::new(),
        blocks: Blocks::Todos(vec![t]),
        kind: GateKind::Stall { todo: t },
    }
}

fn ask(f: &Fixture, gate: NewGate) -> loopx_kernel::model::Gate {
    match f.store.apply(Op::GateAsk(gate), "loopx", T0).expect("asks") {
        Applied::Gate(gate) => gate,
        other => panic!("a gate, got {other:?}"),
    }
}

#[test]
fn a_stall_is_asked_about_once_and_its_answer_acts_on_the_todo() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let t = f.todo("Add retry");
    let t2 = f.todo("Add backoff");
    let first = ask(&f, stall_gate(t));
    let again = ask(&f, stall_gate(t));
    assert_eq!(first.id, again.id, "the same stall opens no second gate");
    let s = begun(&f, begin(Some(t2), &a, None), T0).0;
    f.store
        .apply(
            Op::GateAnswer(AnswerGate {
                gate: first.id,
                choice: AnswerChoice::Option(1),
                slice: None,
                note: None,
            }),
            HUMAN,
            T0,
        )
        .expect("retry");
    assert_eq!(
        todo(&f, t).attempts_since,
        Some(s),
        "only slices after s count"
    );
    let retried = f.store.read(|s| s.events_tail(1)).expect("events");
    assert!(
        matches!(retried[0].kind, EventKind::TodoRetried { todo, .. } if todo == t),
        "{retried:?}"
    );
    // A second stall later: `drop` drops the todo.
    let second = ask(&f, stall_gate(t));
    assert_ne!(second.id, first.id);
    f.store
        .apply(
            Op::GateAnswer(AnswerGate {
                gate: second.id,
                choice: AnswerChoice::Text("drop".into()),
                slice: None,
                note: None,
            }),
            HUMAN,
            T0,
        )
        .expect("drop");
    let dropped = todo(&f, t);
    assert_eq!(dropped.state, TodoState::Dropped);
    let gate = f
        .store
        .read(|s| s.gate(second.id))
        .expect("read")
        .expect("gate");
    assert_eq!(gate.state, GateState::Answered);
    // Only a stall gate that blocks exactly its todo.
    let mut forged = stall_gate(t2);
    forged.blocks = Blocks::Global;
    assert!(f.store.apply(Op::GateAsk(forged), "loopx", T0).is_err());
}

#[test]
fn a_forward_clock_excursion_does_not_stamp_later_changes_in_the_future() {
    let f = fixture();
    f.goal();
    let day = Duration::from_secs(86_400);
    f.store
        .apply(
            Op::AgentAdd(NewAgent {
                name: "early".parse().expect("name"),
                profile: "p".into(),
                capabilities: vec![],
                role: None,
            }),
            HUMAN,
            T0.plus(day),
        )
        .expect("at the excursion");
    let t = f.todo("After the clock came back");
    let added = todo(&f, t);
    assert_eq!(added.created_at, T0, "the clock as it is, not a day ahead");
    // Queueing for the lock by a few hundred milliseconds still keeps commits in order.
    let a = f.agent("a");
    f.claim(t, &a, T0.plus(Duration::from_secs(10)))
        .expect("claim");
    f.store
        .apply(
            Op::TodoRenew(RenewClaim {
                todo: t,
                agent: a,
                epoch: 1,
                ttl: TTL,
            }),
            HUMAN,
            T0.plus(Duration::from_millis(9_700)),
        )
        .expect("renew");
    let events = f.store.read(|s| s.events_tail(2)).expect("events");
    assert!(events[1].at >= events[0].at, "{events:?}");
}

#[test]
fn a_refused_batch_names_the_operation() {
    let f = fixture();
    f.goal();
    let good = loopx_testkit::todo("Good");
    let bad = loopx_kernel::store::NewTodo {
        role: Some("Reviewer Team".into()),
        ..good.clone()
    };
    let err = f
        .store
        .apply_batch(
            vec![Op::TodoAdd(good.clone()), Op::TodoAdd(bad.clone())],
            HUMAN,
            T0,
        )
        .expect_err("the role is no id");
    assert_eq!(err.op, Some(1), "{}", err.error);
    assert!(bad.check().is_err() && good.check().is_ok());
    let todos = f.store.read(|s| s.todos()).expect("read");
    assert!(todos.is_empty(), "nothing of a refused batch is written");
}

fn end(slice: SliceId, tokens: u64, cost_usd: f64) -> Op {
    Op::SliceEnd {
        slice,
        end: loopx_kernel::store::SliceEnd {
            outcome: loopx_kernel::model::Outcome::Completed,
            leftovers: 2,
            exit: Some("exit 0".into()),
            tokens,
            cost_usd,
            output_bytes: 0,
            log_sha256: String::new(),
        },
    }
}

#[test]
fn a_goal_s_spending_counts_every_slice_until_a_todo_is_done_or_a_person_restarts_it() {
    let f = fixture();
    f.goal();
    let goal = loopx_kernel::GoalId(1);
    let a = f.agent("a");
    let t1 = f.todo("Add retry");
    let t2 = f.todo("Document it");
    let spent = || f.store.read(|s| s.goal_spent(goal)).expect("read");
    let (s1, epoch, _) = begun(&f, begin(Some(t1), &a, None), T0);
    f.store
        .apply(end(s1, 100, 0.5), "agent:a", T0)
        .expect("ends");
    let record = f.store.read(|s| s.slice(s1)).expect("read").expect("slice");
    assert_eq!(
        record.leftovers, 2,
        "the sweep is a number a script can read"
    );
    // A planning slice counts for the active goal too.
    let (s2, _, _) = begun(&f, begin(None, &a, None), T0);
    f.store
        .apply(end(s2, 50, 0.25), "agent:a", T0)
        .expect("ends");
    let now = spent();
    assert_eq!((now.slices, now.tokens, now.cost_usd), (2, 150, 0.75));
    // A todo done starts the count again.
    f.store
        .apply(
            Op::TodoFinish(FinishTodo {
                todo: t1,
                to: TodoState::Done,
                agent: Some(a.clone()),
                epoch: Some(epoch),
            }),
            "agent:a",
            T0,
        )
        .expect("done");
    assert_eq!((spent().slices, spent().tokens), (0, 0));
    // So does a person's `continue` on the budget gate; `pause` pauses the goal.
    let (s3, _, _) = begun(&f, begin(Some(t2), &a, None), T0);
    f.store
        .apply(end(s3, 10, 0.0), "agent:a", T0)
        .expect("ends");
    assert_eq!(spent().slices, 1);
    let ask = |at| {
        let gate = NewGate {
            question: "Goal g1 spent its budget without a todo done; continue?".into(),
            options: vec!["continue".into(), "pause".into()],
            context: String::new(),
            blocks: Blocks::Global,
            kind: GateKind::Budget { goal },
        };
        match f.store.apply(Op::GateAsk(gate), "loopx", at).expect("asks") {
            Applied::Gate(g) => g.id,
            other => panic!("{other:?}"),
        }
    };
    let gate = ask(T0);
    assert_eq!(ask(T0), gate, "asked once, whoever asks");
    f.store
        .apply(
            Op::GateAnswer(AnswerGate {
                gate,
                choice: AnswerChoice::Option(1),
                slice: None,
                note: None,
            }),
            HUMAN,
            T0,
        )
        .expect("answered");
    assert_eq!(spent().slices, 0);
    let gate = ask(T0);
    f.store
        .apply(
            Op::GateAnswer(AnswerGate {
                gate,
                choice: AnswerChoice::Text("pause".into()),
                slice: None,
                note: None,
            }),
            HUMAN,
            T0,
        )
        .expect("answered");
    let status = f
        .store
        .read(|s| s.current_goal())
        .expect("read")
        .map(|g| g.status);
    assert_eq!(status, Some(loopx_kernel::model::GoalStatus::Paused));
}

#[test]
fn a_goal_met_gate_marks_the_goal_done_or_starts_its_planning_afresh() {
    let f = fixture();
    f.goal();
    let goal = loopx_kernel::GoalId(1);
    let a = f.agent("a");
    let ask = || {
        let gate = NewGate {
            question: "Goal g1 has no todo left: is it met?".into(),
            options: vec!["done".into(), "plan".into()],
            context: String::new(),
            blocks: Blocks::Global,
            kind: GateKind::GoalMet { goal },
        };
        match f.store.apply(Op::GateAsk(gate), "loopx", T0).expect("asks") {
            Applied::Gate(g) => g.id,
            other => panic!("{other:?}"),
        }
    };
    let answer = |gate, text: &str| {
        let (text, note) = text
            .split_once(": ")
            .map_or((text, None), |(t, n)| (t, Some(n)));
        f.store
            .apply(
                Op::GateAnswer(AnswerGate {
                    gate,
                    choice: AnswerChoice::Text(text.into()),
                    slice: None,
                    note: note.map(str::to_owned),
                }),
                HUMAN,
                T0,
            )
            .expect("answered")
    };
    // Three planning slices proposed nothing.
    for _ in 0..3 {
        let (slice, _, _) = begun(&f, begin(None, &a, None), T0);
        f.store
            .apply(end(slice, 10, 0.0), "agent:a", T0)
            .expect("ends");
    }
    let after = || f.store.read(|s| s.goal_plans_after(goal)).expect("read");
    assert_eq!(after(), None);
    let gate = ask();
    assert_eq!(ask(), gate, "asked once, whoever asks");
    // Words that name no option are refused; guidance goes beside `plan`, as a note.
    let refused = f.store.apply(
        Op::GateAnswer(AnswerGate {
            gate,
            choice: AnswerChoice::Text("keep going".into()),
            slice: None,
            note: None,
        }),
        HUMAN,
        T0,
    );
    assert!(refused.is_err_and(|e| e.to_string().contains("1 (done) | 2 (plan)")));
    answer(gate, "plan: try the docs");
    assert_eq!(after(), Some(3), "planning slices up to s3 no longer count");
    let status = || {
        f.store
            .read(|s| s.goal(goal))
            .expect("read")
            .map(|g| g.status)
    };
    assert_eq!(status(), Some(loopx_kernel::model::GoalStatus::Active));
    // A todo added meanwhile answers the question: the gate is withdrawn and blocks nobody.
    let open = ask();
    f.todo("One more thing");
    let state = |gate| {
        f.store
            .read(|s| s.gate(gate))
            .expect("read")
            .map(|g| g.state)
    };
    assert_eq!(state(open), Some(loopx_kernel::model::GateState::Withdrawn));
    answer(ask(), "done");
    assert_eq!(status(), Some(loopx_kernel::model::GoalStatus::Done));
}

#[test]
fn answering_a_login_gate_lifts_the_account_s_hold() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let hold = Op::QuotaHold(NewHold {
        key: "acct".into(),
        until: None,
        reason: "`a` is not logged in".into(),
        source: loopx_kernel::model::HoldSource::Vendor,
    });
    let gate = NewGate {
        question: "`a` is not logged in (account `acct`): run `codex login`, then answer `retry`?"
            .into(),
        options: vec!["retry".into()],
        context: String::new(),
        blocks: Blocks::Agent(a.clone()),
        kind: GateKind::Login {
            account: "acct".into(),
        },
    };
    let applied = f
        .store
        .apply_all(vec![hold, Op::GateAsk(gate)], "agent:a", T0)
        .expect("held and asked");
    let Some(Applied::Gate(gate)) = applied.last() else {
        panic!("{applied:?}")
    };
    assert_eq!(f.store.read(|s| s.quota_holds()).expect("read").len(), 1);
    // An agent cannot answer it for itself.
    let from_slice = f.store.apply(
        Op::GateAnswer(AnswerGate {
            gate: gate.id,
            choice: AnswerChoice::Option(1),
            slice: Some("s1".into()),
            note: None,
        }),
        "agent:a",
        T0,
    );
    assert!(from_slice.is_err(), "{from_slice:?}");
    f.store
        .apply(
            Op::GateAnswer(AnswerGate {
                gate: gate.id,
                choice: AnswerChoice::Option(1),
                slice: None,
                note: None,
            }),
            HUMAN,
            T0,
        )
        .expect("answered");
    assert!(f.store.read(|s| s.quota_holds()).expect("read").is_empty());
}

/// `goal start` names a worktree goal's branches after the id it expects before the goal exists;
/// the kernel gives that id or refuses, so a branch never carries another goal's number.
#[test]
fn a_goal_start_that_expects_an_id_gets_it_or_is_refused() {
    use loopx_kernel::GoalId;
    use loopx_kernel::model::{GoalStatus, Isolation, PermissionLevel};
    let f = fixture();
    let start = |id: Option<GoalId>| {
        Op::GoalStart(NewGoal {
            priority: 0,
            id,
            objective: "Ship it".into(),
            scope: vec![],
            permission: PermissionLevel::WorkspaceWrite,
            share: 1.0,
            isolation: Isolation::Shared,
        })
    };
    let next = f.store.read(|s| s.next_goal_id()).expect("read");
    assert_eq!(next, GoalId(1));
    let Applied::Goal(first) = f.store.apply(start(Some(next)), HUMAN, T0).expect("starts") else {
        panic!("a goal start yields its goal")
    };
    assert_eq!(first.id, next);
    f.store
        .apply(
            Op::GoalSetStatus(SetGoalStatus {
                goal: None,
                to: GoalStatus::Done,
                agents_close: false,
            }),
            HUMAN,
            T0,
        )
        .expect("done");
    // A start prepared before the first one took g1.
    let err = f
        .store
        .apply(start(Some(GoalId(1))), HUMAN, T0)
        .expect_err("g1 is taken");
    assert!(
        matches!(
            err,
            KernelError::Conflict(Conflict::GoalIdTaken {
                expected: GoalId(1),
                next: GoalId(2)
            })
        ),
        "{err}"
    );
    assert_eq!(
        f.store.read(|s| s.goals()).expect("goals").len(),
        1,
        "nothing was started"
    );
    assert_eq!(f.store.read(|s| s.next_goal_id()).expect("read"), GoalId(2));
}

/// What a view shows: the current goal while there is one, else the newest finished one (not
/// the first); and only the gates still waiting for a person.
#[test]
fn a_view_shows_the_current_goal_else_the_newest_and_only_open_gates() {
    use loopx_kernel::model::GoalStatus;
    let f = fixture();
    let finish = || {
        let done = SetGoalStatus {
            goal: None,
            to: GoalStatus::Done,
            agents_close: false,
        };
        f.store
            .apply(Op::GoalSetStatus(done), HUMAN, T0)
            .expect("done");
    };
    let shown = || {
        f.store
            .read(|s| s.goal_shown())
            .expect("read")
            .map(|g| (g.id.0, g.status))
    };
    assert_eq!(shown(), None);
    f.goal();
    finish();
    f.goal();
    assert_eq!(shown(), Some((2, GoalStatus::Active)));

    let first = ask(&f, stall_gate(f.todo("Stalls")));
    let second = ask(&f, stall_gate(f.todo("Stalls too")));
    let answer = AnswerGate {
        gate: first.id,
        choice: AnswerChoice::Text("retry".into()),
        slice: None,
        note: None,
    };
    f.store
        .apply(Op::GateAnswer(answer), HUMAN, T0)
        .expect("answered");
    let open: Vec<_> = f
        .store
        .read(|s| s.open_gates())
        .expect("read")
        .into_iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(open, [second.id]);

    finish();
    assert_eq!(shown(), Some((2, GoalStatus::Done)), "the newest, not g1");
}

/// With several goals active, loopx's own writeback of a planning slice (evidence and a
/// handoff that name the slice and no todo, with no `InSlice` guard) is about the slice's goal:
/// the kernel does not refuse it for want of `--goal`, which left the slice running for ever
/// (found by the simulation's two-goal scenario).
#[test]
fn a_planning_slices_writeback_is_about_its_goal_when_several_are_active() {
    let f = fixture();
    let agent = f.agent("a");
    let mut goals = Vec::new();
    for (objective, priority) in [("First", 1), ("Second", 0)] {
        let new = NewGoal {
            priority,
            ..loopx_testkit::goal(objective)
        };
        match f.store.apply(Op::GoalStart(new), HUMAN, T0).expect("goal") {
            Applied::Goal(g) => goals.push(g.id),
            other => panic!("a goal, not {other:?}"),
        }
    }
    let mut plan = loopx_testkit::begin(&agent, None);
    plan.slice.goal = Some(goals[1]);
    let (slice, _, _) = begun(&f, Op::SliceBegin(plan), T0);
    let evidence = Op::EvidenceAdd(NewEvidence {
        kind: EvidenceKind::Slice,
        summary: "plan slice: completed".to_owned(),
        detail: String::new(),
        files: vec![],
        todo: None,
        slice: Some(slice),
        epoch: None,
        work: None,
        metric: None,
    });
    let handoff = Op::HandoffAdd(NewHandoff {
        todo: None,
        done: "planned".to_owned(),
        next: "work".to_owned(),
        files: vec![],
        questions: vec![],
        slice: Some(slice),
        epoch: None,
    });
    let applied = f
        .store
        .apply_all(vec![evidence, handoff], "loopx", T0)
        .expect("the writeback is taken");
    assert!(
        matches!(applied[..], [Applied::Evidence(_), Applied::Handoff(_)]),
        "{applied:?}"
    );
}
