//! The decision table: every decision, and their order (`docs/quota.md`, "The order").

use super::*;

const T0: Millis = 1_790_000_000_000;
const MIN: Millis = 60_000;

#[derive(Clone)]
struct World {
    agent: AgentView,
    goal: Option<GoalView>,
    todos: Vec<TodoView>,
    gates: Vec<GateView>,
    slices: Vec<SliceView>,
    holds: Vec<Hold>,
    tat: Option<Millis>,
    windows: Vec<WindowState>,
    in_flight: Vec<AgentName>,
    busy: Vec<(Millis, Millis)>,
    policy: Policy,
}

fn todo(id: &str, priority: i32) -> TodoView {
    TodoView {
        id: id.parse().expect("a todo id"),
        title: format!("title of {id}"),
        priority,
        order: id[1..].parse().expect("number"),
        needs: vec![],
        role: None,
        waits_on: None,
        lease: None,
        running: None,
        attempts_since: None,
        monitor: None,
        rests_until: None,
    }
}

fn world() -> World {
    World {
        agent: AgentView {
            profile_file: None,
            writes: true,
            name: "exec".parse().expect("an agent name"),
            capabilities: vec!["rust".parse().expect("an id")],
            role: Some("executor".parse().expect("an id")),
            account: "anthropic-main".parse().expect("an id"),
            pacing: None,
            windows: vec![],
        },
        goal: Some(GoalView {
            id: GoalId(1),
            status: GoalStatus::Active,
            share: 1.0,
            spent: Spending::default(),
            plans_after: None,
            revision: 1,
            replan_after: None,
        }),
        todos: vec![todo("t1", 1), todo("t2", 5)],
        gates: vec![],
        slices: vec![],
        holds: vec![],
        tat: None,
        windows: vec![],
        in_flight: vec![],
        busy: vec![],
        policy: Policy::default(),
    }
}

fn run(w: &World) -> Decision {
    // Slices are numbered in the order they are listed, as the store numbers them.
    let slices: Vec<SliceView> = w
        .slices
        .iter()
        .zip(1..)
        .map(|(s, id)| SliceView { id, ..s.clone() })
        .collect();
    decide(&DecideInput {
        now: T0,
        agent: &w.agent,
        goal: w.goal.as_ref(),
        todos: &w.todos,
        gates: &w.gates,
        slices: &slices,
        holds: &w.holds,
        pacing_tat: w.tat,
        windows: &w.windows,
        in_flight: &w.in_flight,
        busy: &w.busy,
        policy: &w.policy,
    })
}

fn gate(id: &str, blocks: GateBlocks) -> GateView {
    GateView {
        id: id.parse().expect("a gate id"),
        question: "Should the retry use backoff or fail fast?".into(),
        blocks,
    }
}

fn hold(until: Option<Millis>, source: HoldSource) -> Hold {
    Hold {
        key: "anthropic-main".parse().expect("an id"),
        until,
        reason: "five_hour limit".into(),
        source,
        set_at: T0 - 3 * 60 * MIN,
    }
}

/// A slice of `exec` that ended an hour before `T0`.
fn slice(todo: Option<&str>, kind: SliceKind, outcome: Outcome) -> SliceView {
    SliceView {
        id: 0,
        agent: "exec".parse().expect("an agent name"),
        todo: todo.map(|t| t.parse().expect("a todo id")),
        kind,
        outcome: Some(outcome),
        ended_at: Some(T0 - 60 * MIN),
        tokens: 0,
        cost_usd: 0.0,
    }
}

#[test]
fn deliver_takes_the_highest_priority_todo() {
    let d = run(&world());
    assert_eq!(
        (d.kind(), d.slice()),
        (DecisionKind::Deliver, Some(SliceKind::Work))
    );
    assert_eq!(d.todo().expect("todo").0.to_string(), "t2");
    assert_eq!(
        d.reason(),
        "t2 is the highest-priority open todo exec can take"
    );
}

/// Issue 31: in the README's quick start a read-only reviewer took the work todo and
/// "finished" it with no change.
#[test]
fn a_read_only_agent_takes_only_todos_for_its_role() {
    let mut w = world();
    w.agent.writes = false;
    w.agent.role = Some("reviewer".parse().expect("an id"));
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Quiet, "{d:?}");
    assert!(
        d.reason().contains("changes files, and exec is read-only")
            && d.reason().contains("--role reviewer"),
        "{}",
        d.reason()
    );
    // Nor a work todo it claimed before its profile became read-only.
    w.todos[0].lease = Some(("exec".parse().expect("an id"), T0 + 10 * MIN));
    assert_eq!(run(&w).kind(), DecisionKind::Quiet);
    w.todos.push(TodoView {
        role: Some("reviewer".parse().expect("an id")),
        ..todo("t3", 0)
    });
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Deliver, "{d:?}");
    assert_eq!(
        d.todo().expect("todo").0.to_string(),
        "t3",
        "its review work"
    );
}

#[test]
fn its_own_claim_comes_first() {
    let mut w = world();
    w.todos[0].lease = Some(("exec".parse().expect("an id"), T0 + 10 * MIN));
    let d = run(&w);
    assert_eq!(
        d.todo().expect("todo").0.to_string(),
        "t1",
        "continue the claimed todo before a higher-priority one"
    );
}

#[test]
fn stop_when_the_goal_is_paused_done_or_missing() {
    for status in [GoalStatus::Paused, GoalStatus::Done, GoalStatus::Archived] {
        let mut w = world();
        w.goal.as_mut().expect("goal").status = status;
        assert_eq!(run(&w).kind(), DecisionKind::Stop, "{status}");
    }
    let mut w = world();
    w.goal = None;
    assert_eq!(run(&w).kind(), DecisionKind::Stop);
}

#[test]
fn stop_beats_everything() {
    let mut w = world();
    w.goal.as_mut().expect("goal").status = GoalStatus::Paused;
    w.gates.push(gate("q1", GateBlocks::Global));
    w.holds.push(hold(Some(T0 + MIN), HoldSource::Vendor));
    assert_eq!(run(&w).kind(), DecisionKind::Stop);
}

#[test]
fn a_gate_beats_quota() {
    let mut w = world();
    w.gates.push(gate("q1", GateBlocks::Global));
    w.holds.push(hold(Some(T0 + MIN), HoldSource::Vendor));
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Ask);
    assert_eq!(d.gate().expect("gate").0.to_string(), "q1");
}

#[test]
fn gates_on_the_agent_or_on_every_candidate_ask_and_others_do_not() {
    let mut w = world();
    w.gates
        .push(gate("q1", GateBlocks::Agent("rev".parse().expect("an id"))));
    assert_eq!(
        run(&w).kind(),
        DecisionKind::Deliver,
        "a gate for another agent"
    );
    w.gates.push(gate(
        "q2",
        GateBlocks::Agent("exec".parse().expect("an id")),
    ));
    assert_eq!(run(&w).kind(), DecisionKind::Ask);

    let mut w = world();
    w.gates.push(gate("q3", GateBlocks::Todos(vec![TodoId(2)])));
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.todo().expect("todo").0),
        (DecisionKind::Deliver, TodoId(1)),
        "take the unblocked one"
    );
    w.gates.push(gate("q4", GateBlocks::Todos(vec![TodoId(1)])));
    assert_eq!(
        run(&w).kind(),
        DecisionKind::Ask,
        "every todo it could take is blocked"
    );
}

#[test]
fn a_hold_beats_pacing_and_wake_at_is_when_everything_allows() {
    let mut w = world();
    w.agent.pacing = Some(Pacing {
        slices_per_hour: 6.0,
        burst: 1,
    });
    w.tat = Some(T0 + 5 * MIN); // paced until T0 + 5 min
    w.holds.push(hold(Some(T0 + 30 * MIN), HoldSource::Vendor));
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Wait);
    assert_eq!(
        d.wake_at(),
        Some(T0 + 30 * MIN),
        "never before the hold ends"
    );
    assert!(d.reason().contains("on hold"), "{}", d.reason());
}

/// A 5-hour window of 100,000 tokens opened a minute before `T0` with `spent` in it, and
/// `exec`'s recent slices, each of which spent `each` tokens.
fn window_with(spent: u64, each: &[u64]) -> World {
    let mut w = world();
    w.agent.windows = vec![WindowLimit {
        period_ms: 300 * MIN,
        tokens: Some(100_000),
        cost_usd: None,
    }];
    w.windows = vec![WindowState {
        start: if spent > 0 { T0 - MIN } else { 0 },
        tokens: spent,
        cost_micros: 0,
    }];
    for (id, &tokens) in (1..).zip(each) {
        w.slices.push(SliceView {
            id,
            tokens,
            ..slice(Some("t9"), SliceKind::Work, Outcome::Progress)
        });
    }
    w
}

/// exec's recent slices: 20–40 k tokens; the 75th percentile of ten (the eighth smallest) is
/// 30 k.
const EACH: [u64; 10] = [
    20_000, 25_000, 22_000, 40_000, 21_000, 30_000, 24_000, 40_000, 26_000, 20_000,
];

#[test]
fn a_slice_is_admitted_only_where_its_window_has_room_for_what_it_usually_spends() {
    // 25 k are left.
    let d = run(&window_with(75_000, &EACH));
    assert_eq!(
        (d.kind(), d.wake_at()),
        (DecisionKind::Wait, Some(T0 + 299 * MIN)),
        "it waits for the window to reset: {}",
        d.reason()
    );
    for words in [
        "25000 tokens left",
        "up to 30000",
        "75th percentile of its last 10",
    ] {
        assert!(d.reason().contains(words), "{words}: {}", d.reason());
    }
    // With room for it (30 k left), it runs: even its largest (40 k) stays within 125 %.
    assert_eq!(
        run(&window_with(70_000, &EACH)).kind(),
        DecisionKind::Deliver
    );
    // Usually 20 k, once 60 k: with 25 k left the usual fits, but the largest would take the
    // window to 135 %, past the 25 % an overrun may take.
    let mut spiky = [20_000; 10];
    spiky[4] = 60_000;
    let d = run(&window_with(75_000, &spiky));
    assert_eq!(d.kind(), DecisionKind::Wait, "{}", d.reason());
    assert!(
        d.reason().contains(
            "25000 tokens left; a slice of exec spends up to 60000 (the largest of its last 10; \
             at most 25 % past the budget)"
        ),
        "{}",
        d.reason()
    );
    assert_eq!(
        run(&window_with(65_000, &spiky)).kind(),
        DecisionKind::Deliver,
        "125 % exactly is within the bound"
    );
    // While loopx learns (fewer than three slices), a slice is expected to spend twice the
    // largest: the first slices of a goal overran windows most.
    let learning = run(&window_with(50_000, &[20_000, 30_000]));
    assert_eq!(learning.kind(), DecisionKind::Wait, "{}", learning.reason());
    assert!(
        learning
            .reason()
            .contains("spends up to 60000 (twice the largest of its first 2, while loopx learns)"),
        "{}",
        learning.reason()
    );
    assert_eq!(
        run(&window_with(40_000, &[20_000, 30_000])).kind(),
        DecisionKind::Deliver
    );
    // An agent with none yet is admitted while there is room.
    assert_eq!(run(&window_with(99_000, &[])).kind(), DecisionKind::Deliver);
    // Slices that spent nothing (a failed spawn) teach nothing; nor do slices a usage limit
    // cut short, whatever they spent.
    assert_eq!(
        run(&window_with(70_000, &[0, 0, 0, 0])).kind(),
        DecisionKind::Deliver
    );
    let mut cut_short = window_with(70_000, &[50_000, 50_000, 50_000]);
    for s in &mut cut_short.slices {
        s.outcome = Some(Outcome::UsageLimited);
    }
    assert_eq!(run(&cut_short).kind(), DecisionKind::Deliver);
}

/// exec's peer `helper` on the same account, running a slice now, whose slices spend like
/// exec's ([`EACH`]).
fn running_peer(w: &mut World) -> AgentName {
    let helper: AgentName = "helper".parse().expect("a name");
    for (id, &tokens) in (100..).zip(&EACH) {
        w.slices.push(SliceView {
            id,
            agent: helper.clone(),
            tokens,
            ..slice(Some("t8"), SliceKind::Work, Outcome::Progress)
        });
    }
    w.in_flight = vec![helper.clone()];
    helper
}

#[test]
fn what_running_slices_on_the_account_are_expected_to_spend_is_reserved() {
    // 50 k are left: room for one of exec's slices (30 k), not for two.
    let mut w = window_with(50_000, &EACH);
    assert_eq!(run(&w).kind(), DecisionKind::Deliver);
    // exec's peer on the same account is running a slice; it spends like exec does.
    let helper = running_peer(&mut w);
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Wait, "{}", d.reason());
    assert!(
        d.reason().contains("the running slice on it 60000 with it"),
        "{}",
        d.reason()
    );
    // An agent with no estimate of its own still leaves the running slice its share.
    let mut new_agent = w.clone();
    new_agent.slices.retain(|s| s.agent == helper);
    new_agent.windows[0].tokens = 75_000;
    let d = run(&new_agent);
    assert_eq!(d.kind(), DecisionKind::Wait, "{}", d.reason());
    assert!(
        d.reason()
            .contains("25000 tokens left; the running slice on it is expected to spend 30000"),
        "{}",
        d.reason()
    );
    // A window with nothing spent admits a slice of any size only while nothing runs on the
    // account: each agent's begin would pass that test at once.
    let mut fresh = w.clone();
    fresh.windows[0] = WindowState::default();
    for s in fresh.slices.iter_mut().filter(|s| s.agent == helper) {
        s.tokens = 80_000;
    }
    let d = run(&fresh);
    assert_eq!(d.kind(), DecisionKind::Wait, "{}", d.reason());
    fresh.in_flight.clear();
    assert_eq!(run(&fresh).kind(), DecisionKind::Deliver);
    // A running agent too new to have an estimate reserves nothing.
    w.slices.retain(|s| s.agent != helper);
    assert_eq!(run(&w).kind(), DecisionKind::Deliver);
}

#[test]
fn an_admitted_slice_may_spend_what_keeps_its_window_within_a_quarter_past_its_budget() {
    // 50 k spent of 100 k: the slice may spend up to 125 k in all, 75 k.
    let mut w = window_with(50_000, &EACH);
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Deliver, "{}", d.reason());
    assert_eq!(d.max_tokens(), Some(75_000));
    // A peer's running slice keeps what it usually spends (30 k): 45 k are left for this one.
    running_peer(&mut w);
    w.windows[0].tokens = 20_000;
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Deliver, "{}", d.reason());
    assert_eq!(d.max_tokens(), Some(125_000 - 20_000 - 30_000));
    // The one slice an empty window admits whatever it costs has no ceiling: cut, a slice
    // larger than the budget would never finish.
    let d = run(&window_with(0, &[150_000, 150_000, 150_000]));
    assert_eq!(d.kind(), DecisionKind::Deliver, "{}", d.reason());
    assert_eq!(d.max_tokens(), None);
    // Nor has a slice on an account whose windows count no tokens.
    let mut dollars = window_with(50_000, &EACH);
    dollars.agent.windows[0].tokens = None;
    dollars.agent.windows[0].cost_usd = Some(10.0);
    assert_eq!(run(&dollars).max_tokens(), None);
    // A decision to wait runs nothing, so it has none.
    assert_eq!(run(&window_with(99_000, &EACH)).max_tokens(), None);
}

#[test]
fn a_window_with_nothing_spent_admits_a_slice_larger_than_its_budget() {
    // Else an agent whose slices cost more than the whole window would never run at all.
    let d = run(&window_with(0, &[150_000, 150_000, 150_000]));
    assert_eq!(d.kind(), DecisionKind::Deliver, "{}", d.reason());
}

#[test]
fn pacing_windows_share_and_pauses_wait() {
    let mut w = world();
    w.agent.pacing = Some(Pacing {
        slices_per_hour: 6.0,
        burst: 1,
    });
    w.tat = Some(T0 + 5 * MIN);
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.wake_at()),
        (DecisionKind::Wait, Some(T0 + 5 * MIN))
    );

    let mut w = world();
    w.agent.windows = vec![WindowLimit {
        period_ms: 300 * MIN,
        tokens: Some(1000),
        cost_usd: None,
    }];
    w.windows = vec![WindowState {
        start: T0 - MIN,
        tokens: 1000,
        cost_micros: 0,
    }];
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.wake_at()),
        (DecisionKind::Wait, Some(T0 + 299 * MIN))
    );

    let mut w = world();
    w.goal.as_mut().expect("goal").share = 0.5;
    w.busy = vec![(T0 - 30 * MIN, T0)];
    assert_eq!(run(&w).kind(), DecisionKind::Wait);

    let mut w = world();
    w.holds.push(hold(None, HoldSource::Manual));
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.wake_at()),
        (DecisionKind::Wait, None),
        "paused until a person resumes"
    );
}

#[test]
fn repair_beats_new_work() {
    let mut w = world();
    w.todos[0].lease = Some(("exec".parse().expect("an id"), T0 + 10 * MIN));
    w.slices
        .push(slice(Some("t1"), SliceKind::Work, Outcome::TimedOut));
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.slice()),
        (DecisionKind::Repair, Some(SliceKind::Repair))
    );
    assert_eq!(d.todo().expect("todo").0.to_string(), "t1");
}

#[test]
fn an_interrupted_slice_gets_a_repair_even_after_its_lease_was_freed() {
    let mut w = world();
    w.slices
        .push(slice(Some("t2"), SliceKind::Work, Outcome::Interrupted));
    assert_eq!(run(&w).kind(), DecisionKind::Repair);
}

#[test]
fn stall_guard_asks_after_k_slices_without_progress() {
    let mut w = world();
    w.todos[0].lease = Some(("exec".parse().expect("an id"), T0 + 10 * MIN));
    for outcome in [
        Outcome::Failed,
        Outcome::UsageLimited,
        Outcome::Interrupted,
        Outcome::TimedOut,
        Outcome::Failed,
    ] {
        w.slices.push(slice(Some("t1"), SliceKind::Work, outcome));
    }
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Ask);
    assert_eq!(d.stalled().map(|t| t.to_string()).as_deref(), Some("t1"));
    // Progress resets the streak.
    w.slices
        .push(slice(Some("t1"), SliceKind::Repair, Outcome::Progress));
    assert_eq!(run(&w).kind(), DecisionKind::Deliver);
}

#[test]
fn interruptions_are_not_the_todo_s_stall() {
    let mut w = world();
    w.todos = vec![todo("t1", 1)];
    for _ in 0..5 {
        w.slices
            .push(slice(Some("t1"), SliceKind::Work, Outcome::Interrupted));
    }
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Repair, "{}", d.reason());
}

#[test]
fn a_fresh_budget_of_attempts_counts_only_later_slices() {
    let mut w = world();
    w.todos = vec![todo("t1", 1)];
    for _ in 0..3 {
        w.slices
            .push(slice(Some("t1"), SliceKind::Work, Outcome::Failed));
    }
    assert_eq!(run(&w).kind(), DecisionKind::Ask, "stalled");
    // A person answered `retry` after the third slice (s3).
    w.todos[0].attempts_since = Some(3);
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.slice()),
        (DecisionKind::Repair, Some(SliceKind::Repair)),
        "{}",
        d.reason()
    );
    for _ in 0..2 {
        w.slices
            .push(slice(Some("t1"), SliceKind::Repair, Outcome::Failed));
    }
    assert_eq!(run(&w).kind(), DecisionKind::Repair, "two of three");
    w.slices
        .push(slice(Some("t1"), SliceKind::Repair, Outcome::Failed));
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Ask, "stalled again");
    assert_eq!(d.stalled().map(|t| t.to_string()).as_deref(), Some("t1"));
}

#[test]
fn a_hold_set_before_the_clock_stepped_back_lasts_as_long_as_it_was_set_for() {
    let mut w = world();
    // Set "tomorrow" (the clock has since stepped back a day) for five hours.
    let tomorrow = T0 + 24 * 60 * MIN;
    w.holds.push(Hold {
        until: Some(tomorrow + 5 * 60 * MIN),
        set_at: tomorrow,
        ..hold(None, HoldSource::Vendor)
    });
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Wait);
    assert_eq!(d.wake_at(), Some(T0 + 5 * 60 * MIN), "{}", d.reason());
}

#[test]
fn planning_when_nothing_is_open_and_bounded() {
    let mut w = world();
    w.todos.clear();
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.slice()),
        (DecisionKind::Deliver, Some(SliceKind::Plan))
    );
    // A planning slice that could not work (a usage limit) proposed nothing for that reason:
    // it does not count.
    for (id, outcome) in [
        (1, Outcome::Completed),
        (2, Outcome::UsageLimited),
        (3, Outcome::Progress),
    ] {
        w.slices.push(SliceView {
            id,
            ..slice(None, SliceKind::Plan, outcome)
        });
    }
    assert_eq!(
        run(&w).slice(),
        Some(SliceKind::Plan),
        "two finished plans so far"
    );
    w.slices.push(SliceView {
        id: 4,
        ..slice(None, SliceKind::Plan, Outcome::Completed)
    });
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.goal_met()),
        (DecisionKind::Ask, true),
        "three plans in a row proposed nothing: a person is asked whether the goal is met ({})",
        d.reason()
    );
    // The person said to plan again: the planning slices so far no longer count.
    w.goal.as_mut().expect("a goal").plans_after = Some(4);
    assert_eq!(run(&w).slice(), Some(SliceKind::Plan));
}

#[test]
fn quiet_names_why_nothing_can_be_taken() {
    let mut w = world();
    w.todos = vec![
        TodoView {
            needs: vec!["gpu".parse().expect("an id")],
            ..todo("t7", 0)
        },
        TodoView {
            waits_on: Some(TodoId(7)),
            ..todo("t8", 0)
        },
    ];
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Quiet);
    assert_eq!(d.reason(), "nothing exec can take now: t7 needs gpu");
    let mut w = world();
    w.todos = vec![TodoView {
        role: Some("reviewer".parse().expect("an id")),
        ..todo("t9", 0)
    }];
    assert!(run(&w).reason().contains("t9 is for role reviewer"));
    let mut w = world();
    w.todos = vec![TodoView {
        lease: Some(("rev".parse().expect("an id"), T0 + MIN)),
        ..todo("t4", 0)
    }];
    assert!(run(&w).reason().contains("t4 is claimed by rev"));
}

#[test]
fn an_expired_lease_of_a_peer_is_claimable() {
    let mut w = world();
    w.todos = vec![TodoView {
        lease: Some(("rev".parse().expect("an id"), T0 - MIN)),
        ..todo("t4", 0)
    }];
    assert_eq!(run(&w).kind(), DecisionKind::Deliver);
}

#[test]
fn the_first_slice_after_a_vendor_hold_is_a_probe() {
    let mut w = world();
    w.holds.push(hold(Some(T0 - MIN), HoldSource::Vendor));
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Deliver);
    assert!(d.probe(), "{d:?}");
}

#[test]
fn a_todo_with_a_running_slice_is_nobody_elses_to_start_even_under_its_own_lease() {
    let mut w = world();
    w.todos = vec![TodoView {
        lease: Some(("exec".parse().expect("an id"), T0 + MIN)),
        running: Some("s4".parse().expect("an id")),
        ..todo("t4", 0)
    }];
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Quiet, "{}", d.reason());
    assert!(
        d.reason().contains("t4 is being worked on in slice s4"),
        "{}",
        d.reason()
    );
}

#[test]
fn one_agent_plans_at_a_time() {
    let mut w = world();
    w.todos.clear();
    w.slices = vec![SliceView {
        id: 0,
        agent: "rev".parse().expect("an agent name"),
        todo: None,
        kind: SliceKind::Plan,
        outcome: None,
        ended_at: None,
        tokens: 0,
        cost_usd: 0.0,
    }];
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Quiet, "{}", d.reason());
    assert!(d.reason().contains("`rev` is planning"), "{}", d.reason());
    w.slices[0].outcome = Some(Outcome::Progress);
    assert_eq!(
        run(&w).slice(),
        Some(SliceKind::Plan),
        "once it ended, plan again"
    );
}

#[test]
fn a_todo_that_keeps_completing_without_progress_rests_longer_each_time() {
    let mut w = world();
    w.todos = vec![todo("t1", 1)];
    let ended = |at| SliceView {
        ended_at: Some(at),
        ..slice(Some("t1"), SliceKind::Work, Outcome::Completed)
    };
    // One slice that finished without saying done, 30 s ago: the first pause is a minute.
    w.slices.push(ended(T0 - 30_000));
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.wake_at()),
        (DecisionKind::Wait, Some(T0 + 30_000)),
        "{}",
        d.reason()
    );
    assert!(d.reason().contains("without progress"), "{}", d.reason());
    // A second one doubles it.
    w.slices.push(ended(T0 - 30_000));
    assert_eq!(run(&w).wake_at(), Some(T0 + 90_000));
    // Once the pause is over it is tried again.
    w.slices = vec![ended(T0 - 61_000)];
    assert_eq!(run(&w).kind(), DecisionKind::Deliver);
    // A slice that seems to end tomorrow (the clock stepped back since) rests from now.
    w.slices = vec![ended(T0 + 24 * 60 * MIN)];
    assert_eq!(run(&w).wake_at(), Some(T0 + 60_000));
    // The third asks a person, resting or not.
    w.slices = vec![ended(T0), ended(T0), ended(T0)];
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.stalled().map(|t| t.to_string()).as_deref()),
        (DecisionKind::Ask, Some("t1"))
    );
}

#[test]
fn a_resting_todo_lets_the_next_one_go_first() {
    let mut w = world();
    w.slices.push(SliceView {
        ended_at: Some(T0),
        ..slice(Some("t2"), SliceKind::Work, Outcome::Completed)
    });
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Deliver, "{}", d.reason());
    assert_eq!(d.todo().expect("a todo").0.to_string(), "t1");
}

#[test]
fn temporary_failures_back_off_exponentially_with_jitter() {
    let mut w = world();
    let failed = |todo, at| SliceView {
        ended_at: Some(at),
        ..slice(Some(todo), SliceKind::Work, Outcome::Transient)
    };
    w.slices.push(failed("t2", T0));
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Wait, "{}", d.reason());
    assert!(d.reason().contains("temporary failure"), "{}", d.reason());
    let first = d.wake_at().expect("a wake time") - T0;
    assert!((24_000..=36_000).contains(&first), "30 s ± 20 %: {first}");
    // Four in a row (two per todo, so neither stalled): 30 s × 2³.
    for todo in ["t1", "t2", "t1"] {
        w.slices.push(failed(todo, T0));
    }
    let fourth = run(&w).wake_at().expect("a wake time") - T0;
    assert!(
        (192_000..=288_000).contains(&fourth),
        "240 s ± 20 %: {fourth}"
    );
    w.policy.stall_after = 1_000;
    for _ in 0..20 {
        w.slices.push(failed("t1", T0));
    }
    let capped = run(&w).wake_at().expect("a wake time") - T0;
    assert!(capped <= 12 * MIN, "at most the ceiling + 20 %: {capped}");
    // After the backoff the work goes on (nothing the agent did needs repair); the third on
    // one todo asks a person.
    w.policy.stall_after = 3;
    w.slices = vec![failed("t2", T0 - 60 * MIN)];
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.todo().map(|t| t.0.to_string())),
        (DecisionKind::Deliver, Some("t2".to_owned()))
    );
    w.slices.push(failed("t2", T0 - 60 * MIN));
    w.slices.push(failed("t2", T0 - 60 * MIN));
    let d = run(&w);
    assert_eq!(
        (d.kind(), d.stalled().map(|t| t.to_string()).as_deref()),
        (DecisionKind::Ask, Some("t2"))
    );
}

#[test]
fn a_goal_past_its_budget_asks_with_the_figures() {
    let mut w = world();
    w.policy.budget = Budget {
        slices: Some(20),
        tokens: None,
        cost_usd: Some(5.0),
    };
    let goal = w.goal.as_mut().expect("a goal");
    goal.spent = Spending {
        slices: 19,
        tokens: 1_000_000,
        cost_usd: 4.0,
    };
    assert_eq!(run(&w).kind(), DecisionKind::Deliver);
    w.goal.as_mut().expect("a goal").spent.slices = 20;
    let d = run(&w);
    assert_eq!((d.kind(), d.over_budget()), (DecisionKind::Ask, true));
    assert_eq!(
        d.reason(),
        "goal g1 spent 20 slices (budget 20) without a todo done; continue?"
    );
    // An open gate (the budget gate, once opened) is what blocks from then on.
    w.gates.push(gate("q7", GateBlocks::Global));
    let d = run(&w);
    assert_eq!((d.kind(), d.over_budget()), (DecisionKind::Ask, false));
}

/// Issue 28: while every open todo is a monitor or waits on one, agents neither plan nor work,
/// and the decision names the monitor and its next poll.
#[test]
fn work_that_waits_on_a_monitor_keeps_agents_quiet_and_says_which() {
    let mut w = world();
    let mut monitor = todo("t1", 1);
    monitor.monitor = Some(T0 + 4 * MIN);
    let mut after = todo("t2", 5);
    after.waits_on = Some("t1".parse().expect("an id"));
    w.todos = vec![monitor, after];
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Quiet, "{d:?}");
    let waiting = d.waiting_for().expect("a monitor waited for");
    assert_eq!(waiting.todo.0.to_string(), "t1");
    assert_eq!(waiting.next_poll, T0 + 4 * MIN);
    assert!(d.reason().contains("next poll in 4m 0s"), "{}", d.reason());
    // A question about the monitor (it expired, or its check keeps failing) is an ask.
    w.gates = vec![gate(
        "q1",
        GateBlocks::Todos(vec!["t1".parse().expect("an id")]),
    )];
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Ask, "{d:?}");
    assert_eq!(d.gate().map(|(id, _)| id.to_string()), Some("q1".into()));
    // Other work to take goes on meanwhile.
    w.gates.clear();
    w.todos.push(todo("t3", 0));
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Deliver, "{d:?}");
    assert_eq!(d.todo().expect("todo").0.to_string(), "t3");
}

#[test]
fn a_todo_resting_until_a_time_is_waited_for_not_planned_around() {
    let mut w = world();
    let mut resting = todo("t1", 1);
    resting.rests_until = Some(T0 + 90 * MIN);
    w.todos = vec![resting.clone()];
    let d = run(&w);
    assert_eq!(d.kind(), DecisionKind::Wait, "{d:?}");
    assert_eq!(d.wake_at(), Some(T0 + 90 * MIN));
    assert_eq!(d.todo().expect("todo").0.to_string(), "t1");
    // Its time come, it is taken.
    w.todos[0].rests_until = Some(T0);
    assert_eq!(run(&w).kind(), DecisionKind::Deliver);
    // Another todo is taken before it meanwhile.
    w.todos = vec![resting, todo("t2", 0)];
    let d = run(&w);
    assert_eq!(d.todo().expect("todo").0.to_string(), "t2");
}
