//! Several active goals: which one an agent's decision follows, and that a goal that waits
//! never holds back another (`docs/goals.md`, "Several goals at once").

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{HUMAN, T0, fixture};
use loopx_domain::account::request;
use loopx_domain::decision::DecisionState;
use loopx_domain::quota::{AgentView, Decision, DecisionKind};
use loopx_kernel::model::{Blocks, GateKind};
use loopx_kernel::store::{AgentChange, ChangeAgent, NewGate, NewGoal, NewTodo};
use loopx_kernel::{GoalId, Op, Timestamp, TodoId};

fn view(name: &str) -> AgentView {
    AgentView {
        profile_file: None,
        writes: true,
        name: name.parse().expect("an agent name"),
        capabilities: vec![],
        role: None,
        account: "acct".into(),
        pacing: None,
        windows: vec![],
    }
}

/// Starts a goal with `priority` and `share` and gives it a todo.
fn goal(f: &common::Fixture, objective: &str, priority: i32, share: f64) -> (GoalId, TodoId) {
    let goal = f
        .store
        .run(
            NewGoal {
                priority,
                share,
                ..loopx_testkit::goal(objective)
            },
            HUMAN,
            T0,
        )
        .expect("goal");
    let todo = f
        .store
        .run(
            NewTodo {
                goal: Some(goal.id),
                ..loopx_testkit::todo(format!("Work on {objective}"))
            },
            HUMAN,
            T0,
        )
        .expect("todo");
    (goal.id, todo.id)
}

/// A person keeps `agent` to `goal` (`agent set NAME --goals gN`).
fn keep_to(f: &common::Fixture, agent: &loopx_kernel::AgentName, goal: GoalId) {
    f.store
        .apply(
            Op::AgentSet(ChangeAgent {
                name: agent.clone(),
                change: AgentChange {
                    goals: Some(vec![goal]),
                    ..AgentChange::default()
                },
            }),
            HUMAN,
            T0,
        )
        .expect("keep");
}

/// What `agent` does now, and for which goal.
fn decide(f: &common::Fixture, agent: &str, now: Timestamp) -> (Decision, Option<GoalId>) {
    let state = f
        .store
        .read(|s| DecisionState::read(s, view(agent), now))
        .expect("read");
    (state.decide(), state.goal)
}

fn works_on(decision: &Decision) -> Option<TodoId> {
    match decision.kind() {
        DecisionKind::Deliver | DecisionKind::Repair => decision.todo().map(|(id, _)| *id),
        _ => None,
    }
}

#[test]
fn the_goal_of_higher_priority_is_served_first_whatever_its_todos_age() {
    let f = fixture();
    let (_, older) = goal(&f, "the docs", 0, 1.0);
    let (g2, newer) = goal(&f, "the release", 2, 1.0);
    f.agent("a");
    let (decision, goal) = decide(&f, "a", T0);
    assert_eq!(
        (works_on(&decision), goal),
        (Some(newer), Some(g2)),
        "{decision:?}"
    );
    assert_ne!(Some(older), works_on(&decision));
}

#[test]
fn among_goals_of_equal_priority_the_one_that_used_least_of_its_share_goes_first() {
    let f = fixture();
    let (g1, t1) = goal(&f, "the docs", 0, 1.0);
    let (g2, t2) = goal(&f, "the release", 0, 1.0);
    let name = f.agent("a");
    // Both unused: the older todo first.
    assert_eq!(works_on(&decide(&f, "a", T0).0), Some(t1));
    // Twenty minutes of the last hour went to g1: g2 is behind on its share.
    let now = T0.plus(Duration::from_secs(3600));
    let spent = request(
        &view(name.as_str()),
        10,
        0.0,
        Some((Timestamp(now.0 - 20 * 60_000), now)),
        Some(g1),
    );
    f.store
        .apply(Op::QuotaCharge(spent), HUMAN, now)
        .expect("charge");
    let (decision, goal) = decide(&f, "a", now);
    assert_eq!(
        (works_on(&decision), goal),
        (Some(t2), Some(g2)),
        "{decision:?}"
    );
}

#[test]
fn a_question_on_one_goal_leaves_the_other_goal_s_work_running() {
    let f = fixture();
    let (g1, _) = goal(&f, "the docs", 5, 1.0);
    let (g2, t2) = goal(&f, "the release", 0, 1.0);
    f.agent("a");
    let kept = f.agent("kept");
    f.store
        .apply(
            Op::GateAsk(NewGate {
                question: "Should the docs use the new style guide?".into(),
                options: vec![],
                context: String::new(),
                blocks: Blocks::Goal(g1),
                kind: GateKind::Question,
            }),
            HUMAN,
            T0,
        )
        .expect("ask");
    // The shared agent goes on with g2, although g1 has the higher priority.
    let (decision, goal) = decide(&f, "a", T0);
    assert_eq!(
        (works_on(&decision), goal),
        (Some(t2), Some(g2)),
        "{decision:?}"
    );
    // An agent kept to g1 waits on the question.
    keep_to(&f, &kept, g1);
    let (decision, goal) = decide(&f, "kept", T0);
    assert_eq!(
        (decision.kind(), goal),
        (DecisionKind::Ask, Some(g1)),
        "{decision:?}"
    );
}

#[test]
fn a_goal_past_its_share_waits_while_the_other_goal_works() {
    let f = fixture();
    let (g1, _) = goal(&f, "the docs", 1, 0.25);
    let (g2, t2) = goal(&f, "the release", 0, 1.0);
    let name = f.agent("a");
    let now = T0.plus(Duration::from_secs(3600));
    // g1 had forty minutes of the hour: past its quarter.
    let spent = request(
        &view(name.as_str()),
        10,
        0.0,
        Some((Timestamp(now.0 - 40 * 60_000), now)),
        Some(g1),
    );
    f.store
        .apply(Op::QuotaCharge(spent), HUMAN, now)
        .expect("charge");
    let (decision, goal) = decide(&f, "a", now);
    assert_eq!(
        (works_on(&decision), goal),
        (Some(t2), Some(g2)),
        "{decision:?}"
    );
}

/// Where no sandbox hides the store from an agent, the kernel itself keeps an agent's writes
/// to the goal of the slice it runs: no todo for another goal's agents, no question holding
/// that goal back, no "it is met".
#[test]
fn an_agent_with_a_running_slice_cannot_change_another_goal() {
    use loopx_kernel::store::{NewSlice, SetGoalStatus};
    let f = fixture();
    let (g1, t1) = goal(&f, "the review", 0, 1.0);
    let (g2, _) = goal(&f, "the release", 0, 1.0);
    let rev = f.agent("rev");
    let epoch = f.claim(t1, &rev, T0).expect("claim").epoch;
    f.store
        .apply(
            Op::SliceStart(NewSlice {
                agent: rev.clone(),
                todo: Some(t1),
                epoch: Some(epoch),
                kind: loopx_kernel::model::SliceKind::Work,
                profile_hash: String::new(),
                argv: vec![],
                limit_secs: 60,
                log: None,
                owner: None,
                goal: None,
            }),
            HUMAN,
            T0,
        )
        .expect("slice");
    let agent = "agent:rev";
    let refused = |op: Op| {
        let err = f.store.apply(op, agent, T0).expect_err("refused");
        assert!(
            err.to_string().contains(&format!(
                "works on goal {g1} in its slice, so it cannot change goal {g2}"
            )),
            "{err}"
        );
    };
    refused(Op::TodoAdd(NewTodo {
        goal: Some(g2),
        ..loopx_testkit::todo("Run the deploy")
    }));
    // Nor tie its own goal's todo to another goal's work.
    let g2_todo = f
        .store
        .run(
            NewTodo {
                goal: Some(g2),
                ..loopx_testkit::todo("Tag the release")
            },
            HUMAN,
            T0,
        )
        .expect("a person's todo");
    refused(Op::TodoAdd(NewTodo {
        after: vec![g2_todo.id],
        ..loopx_testkit::todo("Review after the tag")
    }));
    refused(Op::GateAsk(NewGate {
        question: "Should the release wait for the review?".into(),
        options: vec![],
        context: String::new(),
        blocks: Blocks::Goal(g2),
        kind: GateKind::Question,
    }));
    refused(Op::GoalSetStatus(SetGoalStatus {
        goal: Some(g2),
        to: loopx_kernel::model::GoalStatus::Done,
        agents_close: false,
    }));
    // Its own goal is its to add to, named or not.
    let added = f
        .store
        .run(loopx_testkit::todo("Review the tests too"), agent, T0)
        .expect("its own goal");
    assert_eq!(added.goal, g1);
}

/// An agent kept to goals none of which is active any more stops, saying so (not "there is no
/// active goal" while another goal is active).
#[test]
fn an_agent_kept_to_a_finished_goal_stops_saying_so() {
    use loopx_kernel::store::SetGoalStatus;
    let f = fixture();
    let (g1, _) = goal(&f, "the docs", 0, 1.0);
    let (_, t2) = goal(&f, "the release", 0, 1.0);
    let kept = f.agent("kept");
    f.agent("free");
    keep_to(&f, &kept, g1);
    f.store
        .apply(
            Op::GoalSetStatus(SetGoalStatus {
                goal: Some(g1),
                to: loopx_kernel::model::GoalStatus::Done,
                agents_close: false,
            }),
            HUMAN,
            T0,
        )
        .expect("done");
    let (decision, _) = decide(&f, "kept", T0);
    assert_eq!(decision.kind(), DecisionKind::Stop, "{decision:?}");
    assert!(
        decision.reason().contains("works on goal g1 only"),
        "{}",
        decision.reason()
    );
    // The others go on with the goal left.
    assert_eq!(works_on(&decide(&f, "free", T0).0), Some(t2));
}

/// A goal at its share while a slice of it runs: the other agents look again when it ends (a
/// change wakes them) or a minute later, not a few milliseconds later over and over (the
/// simulation spun on it, 20 decisions a second).
#[test]
fn a_goal_at_its_share_with_a_slice_running_is_not_decided_over_and_over() {
    use loopx_kernel::store::NewSlice;
    let f = fixture();
    let (_, t1) = goal(&f, "the docs", 0, 0.25);
    f.store
        .run(loopx_testkit::todo("Another page"), HUMAN, T0)
        .expect("todo");
    let a = f.agent("a");
    let b = f.agent("b");
    // An earlier slice, its last ten minutes still in the hour and leaving it now.
    let now = T0.plus(Duration::from_secs(3 * 3600));
    let minutes = |m: u64| Timestamp(now.0 - m * 60_000);
    let earlier = request(
        &view(b.as_str()),
        10,
        0.0,
        Some((minutes(65), minutes(50))),
        None,
    );
    f.store
        .apply(Op::QuotaCharge(earlier), HUMAN, minutes(50))
        .expect("charge");
    // And a slice running for five minutes and a second: fifteen minutes and a second in the
    // hour, so the share (a quarter hour) lets another slice start in a second, as if the
    // running one stopped now; but it goes on.
    let start = Timestamp(now.0 - 5 * 60_000 - 1_000);
    let epoch = f.claim(t1, &a, start).expect("claim").epoch;
    f.store
        .apply(
            Op::SliceStart(NewSlice {
                agent: a,
                todo: Some(t1),
                epoch: Some(epoch),
                kind: loopx_kernel::model::SliceKind::Work,
                profile_hash: String::new(),
                argv: vec![],
                limit_secs: 3600,
                log: None,
                owner: None,
                goal: None,
            }),
            HUMAN,
            start,
        )
        .expect("slice");
    let (decision, _) = decide(&f, "b", now);
    assert_eq!(decision.kind(), DecisionKind::Wait, "{decision:?}");
    let until = decision.wake_at().expect("a time");
    assert!(
        until >= now.0 + loopx_domain::decision::SHARE_RECHECK_MS,
        "looks again in {} ms: {decision:?}",
        until - now.0
    );
}

/// An agent kept to some goals cannot claim another goal's todo, whoever asks the kernel (the
/// decision never offers it one; a claim by hand is refused too).
#[test]
fn an_agent_kept_to_a_goal_cannot_claim_another_goal_s_todo() {
    let f = fixture();
    let (g1, t1) = goal(&f, "the docs", 0, 1.0);
    let (_, t2) = goal(&f, "the release", 0, 1.0);
    let kept = f.agent("kept");
    keep_to(&f, &kept, g1);
    let refused = f.claim(t2, &kept, T0).expect_err("another goal's");
    assert!(
        refused.to_string().contains("works on goal g1 only"),
        "{refused}"
    );
    f.claim(t1, &kept, T0).expect("its own goal's");
}
