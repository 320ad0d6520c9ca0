//! How long `decide()` takes on its own: 1,000 open todos, 20 gates, 200 recent slices, pacing,
//! two windows and a share. Prints the median of 21 batches of 1,000 calls.

use std::hint::black_box;
use std::time::Instant;

use loopx_quota::*;

fn main() {
    const T0: Millis = 1_790_000_000_000;
    let agent = AgentView {
        profile_file: None,
        writes: true,
        name: "exec".parse().expect("an agent name"),
        capabilities: vec!["rust".into()],
        role: Some("executor".into()),
        account: "anthropic-main".into(),
        pacing: Some(Pacing {
            slices_per_hour: 6.0,
            burst: 2,
        }),
        windows: vec![
            WindowLimit {
                period_ms: 5 * 3_600_000,
                tokens: Some(2_000_000),
                cost_usd: None,
            },
            WindowLimit {
                period_ms: 7 * 86_400_000,
                tokens: None,
                cost_usd: Some(50.0),
            },
        ],
    };
    let goal = GoalView {
        id: GoalId(1),
        status: loopx_quota::decide::GoalStatus::Active,
        share: 0.5,
        spent: Default::default(),
        plans_after: None,
        revision: 1,
        replan_after: None,
    };
    let todos: Vec<TodoView> = (1..=1_000)
        .map(|i| TodoView {
            id: TodoId(i),
            title: format!("todo {i}"),
            priority: (i % 7) as i32,
            order: i,
            needs: if i % 3 == 0 {
                vec!["gpu".into()]
            } else {
                vec![]
            },
            role: None,
            waits_on: None,
            lease: None,
            running: None,
            attempts_since: None,
            monitor: None,
            rests_until: None,
        })
        .collect();
    let gates: Vec<GateView> = (1..=20)
        .map(|i| GateView {
            id: GateId(i as u64),
            question: "Which?".into(),
            blocks: GateBlocks::Todos(vec![TodoId((i * 7) as u64)]),
        })
        .collect();
    let slices: Vec<SliceView> = (0..200)
        .map(|i| SliceView {
            id: i + 1,
            agent: "exec".parse().expect("an agent name"),
            todo: Some(TodoId(i % 50 + 1)),
            kind: SliceKind::Work,
            outcome: Some(loopx_quota::Outcome::Progress),
            ended_at: Some(1),
            tokens: 10_000,
            cost_usd: 0.05,
        })
        .collect();
    let windows = vec![
        WindowState {
            start: T0 - 60_000,
            tokens: 50_000,
            cost_micros: 1_000_000
        };
        2
    ];
    let busy: Vec<(Millis, Millis)> = (0..10)
        .map(|i| (T0 - (i + 1) * 300_000, T0 - i * 300_000 - 200_000))
        .collect();
    let policy = Policy::default();
    let input = DecideInput {
        now: T0,
        agent: &agent,
        goal: Some(&goal),
        todos: &todos,
        gates: &gates,
        slices: &slices,
        holds: &[],
        pacing_tat: Some(T0 - 1),
        windows: &windows,
        in_flight: &[],
        busy: &busy,
        policy: &policy,
    };
    let mut batches = Vec::new();
    for _ in 0..21 {
        let started = Instant::now();
        for _ in 0..1_000 {
            black_box(decide(black_box(&input)));
        }
        batches.push(started.elapsed() / 1_000);
    }
    batches.sort();
    println!(
        "decide(): median {:?} per call (1,000 todos, 20 gates, 200 slices), decision {:?}",
        batches[10],
        decide(&input).kind()
    );
}
