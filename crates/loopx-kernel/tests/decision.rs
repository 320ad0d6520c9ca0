//! A decision computed from the store equals the one computed after a restart: all quota
//! state (arrival times, windows, holds, the ledger) is durable.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{HUMAN, T0, fixture};
use loopx_kernel::decision::DecisionState;
use loopx_kernel::model::HoldSource;
use loopx_kernel::store::QuotaRequest;
use loopx_kernel::store::Resume;
use loopx_kernel::store::{NewGoal, NewHold};
use loopx_kernel::{Op, Store, Timestamp};
use loopx_quota::{AgentView, Pacing, WindowLimit};
use proptest::prelude::*;

fn agent() -> AgentView {
    AgentView {
        writes: true,
        name: "a".parse().expect("an agent name"),
        capabilities: vec![],
        role: None,
        account: "acct".into(),
        pacing: Some(Pacing {
            slices_per_hour: 6.0,
            burst: 2,
        }),
        windows: vec![WindowLimit {
            period_ms: 5 * 3_600_000,
            tokens: Some(1_000),
            cost_usd: Some(1.0),
        }],
    }
}

#[derive(Debug, Clone)]
enum Step {
    Admit { tokens: u64 },
    Charge { tokens: u64, minutes: u64 },
    Hold { minutes: u64 },
    Resume,
    Advance { minutes: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u64..400).prop_map(|tokens| Step::Admit { tokens }),
        (0u64..800, 1u64..60).prop_map(|(tokens, minutes)| Step::Charge { tokens, minutes }),
        (1u64..600).prop_map(|minutes| Step::Hold { minutes }),
        Just(Step::Resume),
        (1u64..120).prop_map(|minutes| Step::Advance { minutes }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn a_decision_after_restart_equals_the_one_before(steps in proptest::collection::vec(step(), 1..25)) {
        let f = fixture();
        f.goal();
        let name = f.agent("a");
        f.todo("Add retry to the HTTP client");
        let mut now = T0;
        for step in steps {
            let req = |tokens, busy| QuotaRequest {
                agent: name.clone(), account: "acct".into(), pacing: agent().pacing, windows: agent().windows,
                tokens, cost_usd: 0.0, busy,
            };
            let op = match step {
                Step::Admit { tokens } => Op::QuotaAdmit(req(tokens, None)),
                Step::Charge { tokens, minutes } => {
                    Op::QuotaCharge(req(tokens, Some((Timestamp(now.0 - minutes * 60_000), now))))
                }
                Step::Hold { minutes } => Op::QuotaHold(NewHold {
                    key: "acct".into(), until: Some(now.plus(Duration::from_secs(minutes * 60))),
                    reason: "five_hour limit".into(), source: HoldSource::Vendor,
                }),
                Step::Resume => Op::QuotaResume(Resume { key: None }),
                Step::Advance { minutes } => { now = now.plus(Duration::from_secs(minutes * 60)); continue; }
            };
            // Refusals (quota says wait, nothing to resume) are part of the sequence.
            let _ = f.store.apply(op, HUMAN, now);
            let before = f.store.read(|s| DecisionState::read(s, agent(), now)).expect("read").decide();
            let reopened = Store::open(&f.project).expect("reopen");
            let after = reopened.read(|s| DecisionState::read(s, agent(), now)).expect("read").decide();
            prop_assert_eq!(&before, &after);
            if let Some(wake) = before.wake_at() {
                prop_assert!(wake >= now.0, "wake_at {} is before now {}", wake, now.0);
            }
        }
    }
}

/// Processes read the clock before they queue for the write lock, so commits can arrive with
/// times out of order. The store never lets time run backwards: a burst of two admits two
/// slices however the two processes' clocks interleave.
#[test]
fn spends_committed_out_of_clock_order_still_get_the_burst() {
    let f = fixture();
    f.goal();
    let name = f.agent("a");
    let req = || QuotaRequest {
        agent: name.clone(),
        account: "acct".into(),
        pacing: Some(Pacing {
            slices_per_hour: 6.0,
            burst: 2,
        }),
        windows: vec![],
        tokens: 0,
        cost_usd: 0.0,
        busy: None,
    };
    f.store
        .apply(Op::QuotaAdmit(req()), HUMAN, Timestamp(T0.0 + 40))
        .expect("the later clock commits first");
    f.store
        .apply(Op::QuotaAdmit(req()), HUMAN, T0)
        .expect("the earlier clock commits second: still the burst");
    assert!(
        f.store.apply(Op::QuotaAdmit(req()), HUMAN, T0).is_err(),
        "a third is paced"
    );
}

/// A goal with a share below 1 waits once its slices took that share of the hour: the decision
/// reads the hour's spends for it (and only for such a goal).
#[test]
fn a_goal_past_its_share_of_the_hour_waits() {
    let f = fixture();
    f.store
        .apply(
            Op::GoalStart(NewGoal {
                id: None,
                objective: "Ship it".into(),
                scope: vec![],
                permission: loopx_kernel::model::PermissionLevel::WorkspaceWrite,
                share: 0.25,
                isolation: loopx_kernel::model::Isolation::Shared,
            }),
            HUMAN,
            T0,
        )
        .expect("goal");
    let name = f.agent("a");
    f.todo("Add retry to the HTTP client");
    let now = T0.plus(Duration::from_secs(3600));
    let before = f
        .store
        .read(|s| DecisionState::read(s, agent(), now))
        .expect("read")
        .decide();
    assert_eq!(
        before.kind(),
        loopx_quota::DecisionKind::Deliver,
        "{before:?}"
    );
    // Forty minutes of the last hour spent on the goal: over a quarter.
    let charge = QuotaRequest {
        agent: name,
        account: "acct".into(),
        pacing: None,
        windows: vec![],
        tokens: 10,
        cost_usd: 0.0,
        busy: Some((Timestamp(now.0 - 40 * 60_000), now)),
    };
    f.store
        .apply(Op::QuotaCharge(charge), HUMAN, now)
        .expect("charge");
    let after = f
        .store
        .read(|s| DecisionState::read(s, agent(), now))
        .expect("read")
        .decide();
    assert_eq!(after.kind(), loopx_quota::DecisionKind::Wait, "{after:?}");
    assert!(after.reason().contains("25% share"), "{}", after.reason());
}
