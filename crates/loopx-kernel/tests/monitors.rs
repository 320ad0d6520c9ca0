//! Monitor polls in the kernel: claimed like a slice, recorded under the claim, compacted, and
//! asking a person when they fail or expire.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{Fixture, HUMAN, T0, fixture};
use loopx_kernel::model::Todo;
use loopx_kernel::model::{GateKind, GateState, MonitorSpec, PollVerdict, TodoState, output_hash};
use loopx_kernel::store::{AnswerChoice, AnswerGate, ClaimPoll, NewTodo, RecordPoll};
use loopx_kernel::{AgentName, GateId, KernelError, Timestamp, TodoId, check_consistency};
use loopx_testkit::todo;

fn monitor(f: &Fixture, spec: MonitorSpec) -> TodoId {
    let new = NewTodo {
        monitor: Some(spec),
        ..todo("Wait for run 42")
    };
    f.store.run(new, HUMAN, T0).expect("a monitor").id
}

fn every_minute() -> MonitorSpec {
    MonitorSpec {
        check: "scripts/run-done.sh 42".into(),
        every_ms: 60_000,
        ..MonitorSpec::default()
    }
}

fn at(secs: u64) -> Timestamp {
    T0.plus(Duration::from_secs(secs))
}

fn poller(name: &str) -> AgentName {
    name.parse().expect("a name")
}

fn claim(f: &Fixture, todo: TodoId, by: &str, now: Timestamp) -> Result<u64, KernelError> {
    claim_todo(f, todo, by, now).map(|t| t.epoch)
}

fn claim_todo(f: &Fixture, todo: TodoId, by: &str, now: Timestamp) -> Result<Todo, KernelError> {
    let claim = ClaimPoll {
        todo,
        by: poller(by),
        ttl: Duration::from_secs(40),
    };
    f.store.run(claim, "loopx", now)
}

/// The gate a claim opened instead of polling (an expired monitor asks).
fn claim_asks(f: &Fixture, todo: TodoId, now: Timestamp) -> GateId {
    let todo = claim_todo(f, todo, "host-a", now).expect("asks");
    todo.monitor.and_then(|m| m.asked).expect("a gate")
}

/// A person answers `gate` with its option `n` (1 poll, 2 met, 3 drop).
fn answer(f: &Fixture, gate: GateId, n: u32, now: Timestamp) {
    let answer = AnswerGate {
        gate,
        choice: AnswerChoice::Option(n),
        note: None,
        slice: None,
    };
    f.store.run(answer, HUMAN, now).expect("answered");
}

fn record(
    f: &Fixture,
    todo: TodoId,
    epoch: u64,
    exit: Option<i32>,
    output: &str,
    now: Timestamp,
) -> Result<loopx_kernel::model::Todo, KernelError> {
    let poll = RecordPoll {
        todo,
        epoch,
        exit,
        failed: exit
            .is_none()
            .then(|| "the check ran past its time limit".to_owned()),
        hash: output_hash(output.as_bytes()),
        tail: output.to_owned(),
        changed: vec![],
    };
    f.store.run(poll, "loopx", now)
}

fn consistent(f: &Fixture) {
    let problems = f.store.read(check_consistency).expect("read");
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn two_supervisors_never_poll_one_monitor_at_once_and_a_lapsed_poll_is_not_recorded() {
    let f = fixture();
    f.goal();
    let t = monitor(&f, every_minute());
    let first = claim(&f, t, "host-a", at(0)).expect("the first claim");
    let second = claim(&f, t, "host-b", at(1)).expect_err("polled already");
    assert!(second.to_string().contains("host-a polls it"), "{second}");
    // host-a stalls past its claim; host-b polls it, and host-a's late result is refused.
    let taken = claim(&f, t, "host-b", at(41)).expect("the lapsed poll is taken over");
    assert!(taken > first);
    let late = record(&f, t, first, Some(0), "done", at(42)).expect_err("stale");
    assert!(matches!(late, KernelError::Conflict(_)), "{late}");
    let todo = record(&f, t, taken, Some(1), "running", at(43)).expect("recorded");
    assert_eq!(todo.state, TodoState::Open);
    let m = todo.monitor.expect("a monitor");
    assert_eq!(m.polls, 1);
    assert_eq!(m.next_at, at(43 + 60));
    assert!(m.poll.is_none());
    // Not due again before its cadence.
    let early = claim(&f, t, "host-a", at(60)).expect_err("not due");
    assert!(early.to_string().contains("next poll"), "{early}");
    consistent(&f);
}

#[test]
fn a_met_monitor_is_done_with_its_output_as_evidence_and_releases_its_dependents() {
    let f = fixture();
    f.goal();
    let t = monitor(&f, every_minute());
    let after = NewTodo {
        after: vec![t],
        ..todo("Evaluate run 42")
    };
    let dependent = f.store.run(after, HUMAN, T0).expect("a dependent").id;
    let epoch = claim(&f, t, "host-a", at(0)).expect("claimed");
    record(&f, t, epoch, Some(1), "running", at(1)).expect("not yet");
    let epoch = claim(&f, t, "host-a", at(61)).expect("claimed again");
    let done = record(&f, t, epoch, Some(0), "run 42 finished: loss 0.12", at(62)).expect("met");
    assert_eq!(done.state, TodoState::Done);
    f.store
        .read(|s| {
            let evidence = s.evidence_newest(10, |e| e.todo == Some(t))?;
            assert_eq!(evidence.len(), 1);
            assert_eq!(evidence[0].kind, loopx_kernel::model::EvidenceKind::Monitor);
            assert!(evidence[0].detail.contains("loss 0.12"));
            let goal = s.current_goal()?.expect("a goal");
            let ready = s.ready_todos(goal.id, None, false, 10)?;
            assert_eq!(ready.iter().map(|t| t.id).collect::<Vec<_>>(), [dependent]);
            assert!(s.monitors(goal.id)?.is_empty());
            Ok(())
        })
        .expect("read");
    consistent(&f);
}

#[test]
fn three_failed_polls_back_off_then_ask_and_poll_again_resumes() {
    let f = fixture();
    f.goal();
    let t = monitor(&f, every_minute());
    let mut now = at(0);
    let mut waits = Vec::new();
    for _ in 0..3 {
        let epoch = claim(&f, t, "host-a", now).expect("due");
        let todo = record(&f, t, epoch, None, "", now).expect("recorded");
        let m = todo.monitor.expect("a monitor");
        waits.push(m.next_at.since(now).as_secs());
        now = m.next_at;
    }
    // The cadence doubled per failure in a row.
    assert_eq!(waits, [120, 240, 480]);
    let (gate, todo) = f
        .store
        .read(|s| Ok((s.gates()?, s.todo(t)?.expect("the monitor"))))
        .expect("read");
    let gate = gate
        .into_iter()
        .find(|g| g.state == GateState::Open)
        .expect("asked");
    assert_eq!(gate.kind, GateKind::Monitor { todo: t });
    assert_eq!(gate.options, ["poll", "met", "drop"]);
    assert!(
        gate.question.contains("failed 3 times"),
        "{}",
        gate.question
    );
    assert!(gate.context.contains("time limit"), "{}", gate.context);
    assert_eq!(todo.monitor.as_ref().and_then(|m| m.asked), Some(gate.id));
    // While asked, nobody polls it, however late.
    claim(&f, t, "host-a", at(100_000)).expect_err("a person is asked");
    answer(&f, gate.id, 1, at(100_000));
    let epoch = claim(&f, t, "host-a", at(100_001)).expect("due again at once");
    let todo = record(&f, t, epoch, Some(1), "", at(100_002)).expect("recorded");
    let m = todo.monitor.expect("a monitor");
    assert_eq!(m.failures, 0);
    assert_eq!(
        m.recent.last().map(|o| o.verdict),
        Some(PollVerdict::NotYet)
    );
    consistent(&f);
}

#[test]
fn an_expired_monitor_asks_instead_of_polling_and_met_releases_it() {
    let f = fixture();
    f.goal();
    let t = monitor(
        &f,
        MonitorSpec {
            expires_after_ms: Some(3_600_000),
            ..every_minute()
        },
    );
    let gate = claim_asks(&f, t, at(3_600));
    answer(&f, gate, 2, at(3_700));
    let todo = f
        .store
        .read(|s| s.todo(t))
        .expect("read")
        .expect("the monitor");
    assert_eq!(todo.state, TodoState::Done);
    consistent(&f);
}

#[test]
fn a_monitor_polled_for_200_hours_stays_a_small_record() {
    let f = fixture();
    f.goal();
    let t = monitor(&f, every_minute());
    // Its JSON, which is larger than the stored record (postcard).
    let size = |f: &Fixture| {
        let todo = f.store.read(|s| s.todo(t)).expect("read").expect("todo");
        serde_json::to_vec(&todo).expect("json").len()
    };
    let mut now = at(0);
    // 2,000 polls, every one "not yet" with the same output, then 20 with changing output.
    for i in 0..2_020u64 {
        let epoch = claim(&f, t, "host-a", now).expect("due");
        let output = if i < 2_000 {
            "running".to_owned()
        } else {
            format!("step {i}")
        };
        let todo = record(&f, t, epoch, Some(1), &output, now).expect("recorded");
        now = todo.monitor.expect("a monitor").next_at;
    }
    let todo = f.store.read(|s| s.todo(t)).expect("read").expect("todo");
    let m = todo.monitor.expect("a monitor");
    assert_eq!(m.polls, 2_020);
    // One verdict all along: one observation, with the latest output.
    assert_eq!(m.recent.len(), 1);
    assert_eq!(m.recent[0].tail, "step 2019");
    assert!(size(&f) < 8 * 1024, "{} bytes", size(&f));
    // The output changed, its meaning never did: the first poll is the only event.
    assert_eq!(polled_events(&f), ["not yet, exit 1"]);
    consistent(&f);
}

/// What the `monitor_polled` events say, oldest first (`not yet, exit 1`).
fn polled_events(f: &Fixture) -> Vec<String> {
    let events = f
        .store
        .read(|s| s.events_from(1, usize::MAX))
        .expect("events");
    events
        .iter()
        .filter(|e| e.kind.name() == "monitor_polled")
        .map(|e| {
            let line = e.kind.describe();
            line[line.find(": ").expect("a verdict") + 2..].to_owned()
        })
        .collect()
}

/// Issue 47, item 4: a check that prints a timestamp logged every poll, 360 events an hour at
/// 10 s. An event marks a poll whose verdict changed, the first, and the one that met it.
#[test]
fn an_hour_of_polls_whose_output_always_differs_logs_only_the_changes_of_verdict() {
    let f = fixture();
    f.goal();
    let every_10s = MonitorSpec {
        every_ms: 10_000,
        ..every_minute()
    };
    let t = monitor(&f, every_10s);
    let mut now = at(0);
    let poll = |exit: Option<i32>, now: Timestamp| {
        let epoch = claim(&f, t, "host-a", now).expect("due");
        let output = format!("{}\n", now.0);
        let todo = record(&f, t, epoch, exit, &output, now).expect("recorded");
        todo.monitor.map(|m| m.next_at)
    };
    // An hour not yet, one time-out, not yet again, then met.
    for _ in 0..360 {
        now = poll(Some(1), now).expect("open");
    }
    now = poll(None, now).expect("open");
    for _ in 0..10 {
        now = poll(Some(1), now).expect("open");
    }
    poll(Some(0), now);
    assert_eq!(
        polled_events(&f),
        [
            "not yet, exit 1",
            "failed, no exit",
            "not yet, exit 1",
            "met, exit 0"
        ]
    );
    let todo = f.store.read(|s| s.todo(t)).expect("read").expect("todo");
    let m = todo.monitor.expect("a monitor");
    assert_eq!(m.polls, 372);
    let counts: Vec<u64> = m.recent.iter().map(|o| o.count).collect();
    assert_eq!(counts, [360, 1, 10, 1]);
    consistent(&f);
}

#[test]
fn a_monitor_and_the_work_after_it_are_added_together() {
    let f = fixture();
    f.goal();
    let new = NewTodo {
        monitor: Some(every_minute()),
        then: vec![todo("Evaluate run 42")],
        ..todo("Wait for run 42")
    };
    let first = f.store.run(new, "agent:exec", T0).expect("added");
    let after = f
        .store
        .read(|s| s.todo(TodoId(first.id.0 + 1)))
        .expect("read")
        .expect("the follow-up");
    assert_eq!(after.title, "Evaluate run 42");
    assert_eq!(after.after, [first.id]);
    assert!(after.monitor.is_none());
    // One level only: the follow-up of a follow-up is reported once the first exists.
    let nested = NewTodo {
        then: vec![NewTodo {
            then: vec![todo("c")],
            ..todo("b")
        }],
        ..todo("a")
    };
    f.store.run(nested, "agent:exec", T0).expect_err("nested");
    consistent(&f);
}

#[test]
fn only_a_person_gives_a_check_a_profile() {
    let f = fixture();
    f.goal();
    let new = NewTodo {
        monitor: Some(MonitorSpec {
            profile: Some("ci-reader".into()),
            ..every_minute()
        }),
        ..todo("Wait for CI")
    };
    let refused = f
        .store
        .run(new.clone(), "agent:exec", T0)
        .expect_err("an agent");
    assert!(refused.to_string().contains("only a person"), "{refused}");
    f.store.run(new, HUMAN, T0).expect("a person may");
}

#[test]
fn an_expired_monitor_is_asked_about_at_its_expiry_and_poll_gives_it_as_long_again() {
    let f = fixture();
    f.goal();
    let t = monitor(
        &f,
        MonitorSpec {
            every_ms: 3_600_000,
            expires_after_ms: Some(90 * 60_000),
            ..every_minute()
        },
    );
    let epoch = claim(&f, t, "host-a", at(0)).expect("due at once");
    let todo = record(&f, t, epoch, Some(1), "", at(1)).expect("not yet");
    let m = todo.monitor.expect("a monitor");
    // Next poll in an hour; the expiry (90 min) comes first at the one after: due then.
    assert_eq!(m.next_due(), at(1 + 3_600));
    let epoch = claim(&f, t, "host-a", at(3_601)).expect("polled at its cadence");
    let todo = record(&f, t, epoch, Some(1), "", at(3_602)).expect("not yet");
    let m = todo.monitor.expect("a monitor");
    assert_eq!(m.next_due(), at(5_400), "its expiry, before the next poll");
    assert!(!m.due(at(5_399)) && m.due(at(5_400)));
    // At its expiry, not at the next poll an hour later, the claim asks instead.
    let gate = claim_asks(&f, t, at(5_400));
    // Answered `poll` ten hours later: 90 minutes again from the answer, not from the start.
    answer(&f, gate, 1, at(41_400));
    let todo = f
        .store
        .read(|s| s.todo(t))
        .expect("read")
        .expect("the monitor");
    let m = todo.monitor.expect("a monitor");
    assert_eq!(m.expires_at, Some(at(41_400 + 5_400)));
    assert!(m.due(at(41_400)) && m.asked.is_none());
    consistent(&f);
}

#[test]
fn a_withdrawn_question_about_a_monitor_lets_it_be_polled_again() {
    let f = fixture();
    f.goal();
    let t = monitor(
        &f,
        MonitorSpec {
            expires_after_ms: Some(60_000),
            ..every_minute()
        },
    );
    let asked = claim(&f, t, "host-a", at(120));
    assert!(asked.is_ok(), "{asked:?}");
    let gate = f
        .store
        .read(|s| s.todo(t))
        .expect("read")
        .and_then(|t| t.monitor.and_then(|m| m.asked))
        .expect("asked");
    f.store
        .run(loopx_kernel::store::WithdrawGate { gate }, HUMAN, at(180))
        .expect("withdrawn");
    claim(&f, t, "host-a", at(181)).expect("polled again, not stuck");
    consistent(&f);
}

/// Issue 46, an attack on pins: an agent deleted a person's pinned script; the person answered
/// `poll` to "is gone"; the pin was dropped, so the script the agent wrote there next ran
/// unasked. A file answered as gone stays pinned as gone: whatever appears there asks again.
#[test]
fn a_pinned_file_answered_as_gone_stays_pinned_as_gone() {
    let f = fixture();
    f.goal();
    let pinned = loopx_kernel::model::Pin {
        path: "scripts/ci-status.sh".into(),
        sha256: "ab".repeat(32),
        changed_to: None,
    };
    let spec = MonitorSpec {
        pins: vec![pinned.clone()],
        ..every_minute()
    };
    let todo = monitor(&f, spec);
    let epoch = claim(&f, todo, "host-a", T0).expect("claimed");
    let gone = RecordPoll {
        todo,
        epoch,
        exit: None,
        failed: None,
        hash: String::new(),
        tail: "scripts/ci-status.sh is gone".into(),
        changed: vec![loopx_kernel::model::Pin {
            changed_to: Some(String::new()),
            ..pinned
        }],
    };
    let asked = f.store.run(gone, "loopx", at(1)).expect("recorded");
    let gate = asked
        .monitor
        .and_then(|m| m.asked)
        .expect("a person is asked");
    answer(&f, gate, 1, at(2));
    let after = f.store.read(|s| s.todo(todo)).expect("read").expect("todo");
    let pins = after.monitor.expect("a monitor").pins;
    assert_eq!(pins.len(), 1, "still pinned");
    assert_eq!(pins[0].sha256, "", "as gone");
}
