//! Property tests on the quota model with a fake clock.

use loopx_quota::*;
use proptest::prelude::*;

const T0: Millis = 1_790_000_000_000;
const HOUR: Millis = 3_600_000;

proptest! {
    /// Over any sequence of checks, no interval of length W admits more than the GCRA bound:
    /// `burst` at once plus one per period.
    #[test]
    fn pacing_never_admits_more_than_it_allows(
        per_hour in 1u32..30,
        burst in 1u32..5,
        gaps in proptest::collection::vec(0u64..20 * 60_000, 1..120),
    ) {
        let pacing = Pacing { slices_per_hour: f64::from(per_hour), burst };
        let period = HOUR / u64::from(per_hour);
        let mut now = T0;
        let mut tat = None;
        let mut admitted = Vec::new();
        for gap in gaps {
            now += gap;
            if let Ok(next) = pacing_check(pacing, tat, now) {
                tat = Some(next);
                admitted.push(now);
            }
        }
        for (i, start) in admitted.iter().enumerate() {
            let in_window = admitted[i..].iter().take_while(|t| **t < start + HOUR).count() as u64;
            prop_assert!(in_window <= u64::from(burst) + HOUR.div_ceil(period), "{in_window} slices in one hour");
        }
    }

    /// A refused check names a time at which the same check passes, never in the past.
    #[test]
    fn a_pacing_wake_time_is_honest(per_hour in 1u32..30, burst in 1u32..5, offsets in proptest::collection::vec(0u64..600_000, 1..20)) {
        let pacing = Pacing { slices_per_hour: f64::from(per_hour), burst };
        let mut tat = None;
        let mut now = T0;
        for offset in offsets {
            now += offset;
            match pacing_check(pacing, tat, now) {
                Ok(next) => tat = Some(next),
                Err(at) => {
                    prop_assert!(at >= now);
                    prop_assert!(pacing_check(pacing, tat, at).is_ok(), "admitted at the promised time");
                }
            }
        }
    }

    /// Whatever else holds the agent, a wait never wakes before a hold ends or before now.
    #[test]
    fn wake_at_is_never_before_a_hold_or_now(
        hold_in in 1u64..10 * HOUR,
        tat_in in proptest::option::of(0u64..2 * HOUR),
        used in 0u64..3_000,
        busy_min in 0u64..90,
        share in 0.1f64..1.0,
    ) {
        let agent = AgentView {
            profile_file: None,
            writes: true,
            name: "exec".parse().expect("an agent name"),
            capabilities: vec![],
            role: None,
            account: "acct".into(),
            pacing: Some(Pacing { slices_per_hour: 6.0, burst: 1 }),
            windows: vec![WindowLimit { period_ms: 5 * HOUR, tokens: Some(1_000), cost_usd: None }],
        };
        let goal = GoalView {
            id: GoalId(1),
            status: loopx_quota::decide::GoalStatus::Active,
            share,
            spent: Default::default(),
            plans_after: None,
            revision: 1,
            replan_after: None,
        };
        let todos = vec![TodoView { id: TodoId(1), title: "x".into(), priority: 0, order: 1, needs: vec![], role: None, waits_on: None, lease: None, running: None, attempts_since: None, monitor: None, rests_until: None }];
        let holds = vec![Hold { key: "acct".into(), until: Some(T0 + hold_in), reason: "limit".into(), source: HoldSource::Vendor, set_at: T0 }];
        let windows = vec![WindowState { start: T0 - 1, tokens: used, cost_micros: 0 }];
        let busy = vec![(T0 - busy_min * 60_000, T0)];
        let policy = Policy::default();
        let d = decide(&DecideInput {
            now: T0, agent: &agent, goal: Some(&goal), todos: &todos, gates: &[], slices: &[], holds: &holds,
            pacing_tat: tat_in.map(|t| T0 + t), windows: &windows, in_flight: &[], busy: &busy, policy: &policy,
        });
        prop_assert_eq!(d.kind(), DecisionKind::Wait);
        let wake = d.wake_at().expect("a timed wait");
        prop_assert!(wake >= T0 + hold_in, "woke at {} before the hold's end {}", wake, T0 + hold_in);
    }

    /// Charging never loses usage: after a charge the window holds what it held (rolled to
    /// now) plus the charge, and what it holds never exceeds everything charged so far.
    #[test]
    fn window_charges_add_up(charges in proptest::collection::vec((0u64..3_000, 0u64..6 * HOUR), 1..50)) {
        let limit = WindowLimit { period_ms: 5 * HOUR, tokens: Some(2_000), cost_usd: None };
        let mut state = WindowState::default();
        let mut now = T0;
        let mut total = 0u64;
        for (tokens, gap) in charges {
            now += gap;
            let before = state.rolled(&limit, now);
            state = state.charged(&limit, now, tokens, 0.0);
            total += tokens;
            prop_assert_eq!(state.tokens, before.tokens + tokens);
            prop_assert!(state.tokens <= total);
            if let Some(at) = state.exhausted_until(&limit, now) {
                prop_assert!(at > now, "a spent window resets in the future");
            }
        }
    }
}
