//! A decision computed from the store equals the one computed after a restart: all quota
//! state (arrival times, windows, holds, the ledger) is durable.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{HUMAN, T0, fixture};
use loopx_domain::account::request;
use loopx_domain::decision::DecisionState;
use loopx_domain::quota::{AgentView, Pacing, WindowLimit};
use loopx_kernel::model::HoldSource;
use loopx_kernel::store::Resume;
use loopx_kernel::store::{NewGoal, NewHold};
use loopx_kernel::{AgentName, Op, Store, Timestamp};
use proptest::prelude::*;

fn agent() -> AgentView {
    AgentView {
        profile_file: None,
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
            let req = |tokens, busy| request(&AgentView { name: name.clone(), ..agent() }, tokens, 0.0, busy, None);
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
    let paced = AgentView {
        name,
        pacing: Some(Pacing {
            slices_per_hour: 6.0,
            burst: 2,
        }),
        windows: vec![],
        ..agent()
    };
    let req = || request(&paced, 0, 0.0, None, None);
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
                share: 0.25,
                ..loopx_testkit::goal("Ship it")
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
        loopx_domain::quota::DecisionKind::Deliver,
        "{before:?}"
    );
    // Forty minutes of the last hour spent on the goal: over a quarter.
    let unlimited = AgentView {
        name,
        pacing: None,
        windows: vec![],
        ..agent()
    };
    let charge = request(
        &unlimited,
        10,
        0.0,
        Some((Timestamp(now.0 - 40 * 60_000), now)),
        None,
    );
    f.store
        .apply(Op::QuotaCharge(charge), HUMAN, now)
        .expect("charge");
    let after = f
        .store
        .read(|s| DecisionState::read(s, agent(), now))
        .expect("read")
        .decide();
    assert_eq!(
        after.kind(),
        loopx_domain::quota::DecisionKind::Wait,
        "{after:?}"
    );
    assert!(after.reason().contains("25% share"), "{}", after.reason());
}

/// Two agents on one account: while one's slice runs, what it is expected to spend is kept
/// for it, so the other is not admitted on the same room; when it ends, the room is what is
/// left.
#[test]
fn a_running_slice_s_expected_spend_is_kept_for_it_on_its_account() {
    use loopx_kernel::store::{BeginSlice, NewSlice, SliceEnd};
    let f = fixture();
    f.goal();
    let (a, b) = (f.agent("a"), f.agent("b"));
    let window = WindowLimit {
        period_ms: 5 * 3_600_000,
        tokens: Some(200_000),
        cost_usd: None,
    };
    let view = |name: &AgentName| AgentView {
        name: name.clone(),
        pacing: None,
        windows: vec![window],
        ..agent()
    };
    let usage = |agent: &AgentName, tokens| request(&view(agent), tokens, 0.0, None, None);
    let begin = |agent: &AgentName, minute: u64| {
        let todo = f.todo(&format!("{agent}'s work at minute {minute}"));
        let op = Op::SliceBegin(BeginSlice {
            slice: NewSlice {
                goal: None,
                agent: agent.clone(),
                todo: Some(todo),
                epoch: None,
                kind: loopx_kernel::model::SliceKind::Work,
                profile_hash: "h".into(),
                argv: vec!["agent".into()],
                limit_secs: 60,
                log: None,
                owner: None,
            },
            claim_ttl: Duration::from_secs(600),
            admit: usage(agent, 0),
            messages: vec![],
        });
        match f.store.apply(op, HUMAN, minutes(minute)).expect("begins") {
            loopx_kernel::store::Applied::SliceBegun { slice, .. } => slice.id,
            other => panic!("expected a begun slice, got {other:?}"),
        }
    };
    let end = |agent: &AgentName, slice, tokens, minute: u64| {
        let end = Op::SliceEnd {
            slice,
            end: SliceEnd {
                outcome: loopx_kernel::model::Outcome::Progress,
                leftovers: 0,
                exit: None,
                tokens,
                cost_usd: 0.0,
                output_bytes: 0,
                log_sha256: String::new(),
            },
        };
        let charge = Op::QuotaCharge(usage(agent, tokens));
        f.store
            .apply_all(vec![end, charge], HUMAN, minutes(minute))
            .expect("ends");
    };
    let decide = |name: &AgentName, minute: u64| {
        f.store
            .read(|s| DecisionState::read(s, view(name), minutes(minute)))
            .expect("read")
            .decide()
    };
    // Three slices each: a's spent 25 k apiece, b's 30 k; 35 k of the window are left.
    for (minute, (agent, tokens)) in (0..).step_by(2).zip([(&a, 25_000), (&b, 30_000)].repeat(3)) {
        let slice = begin(agent, minute + 1);
        end(agent, slice, tokens, minute + 2);
    }
    assert_eq!(
        decide(&a, 7).kind(),
        loopx_domain::quota::DecisionKind::Deliver
    );
    // b runs again: its 30 k are kept, and a's 25 k do not fit in the 5 k beside them.
    let running = begin(&b, 8);
    let waits = decide(&a, 9);
    assert_eq!(
        waits.kind(),
        loopx_domain::quota::DecisionKind::Wait,
        "{waits:?}"
    );
    assert!(
        waits
            .reason()
            .contains("the running slice on it 55000 with it"),
        "{}",
        waits.reason()
    );
    // b's slice spent 5 k: 30 k are left, room for a.
    end(&b, running, 5_000, 10);
    assert_eq!(
        decide(&a, 11).kind(),
        loopx_domain::quota::DecisionKind::Deliver
    );
}

fn minutes(n: u64) -> Timestamp {
    T0.plus(Duration::from_secs(n * 60))
}

/// Rules that try to write a hold of their own, which only a person or a vendor's limit sets.
#[derive(Debug)]
struct Meddles;

impl loopx_kernel::store::AccountRules for Meddles {
    fn charge(
        &self,
        ledger: &loopx_kernel::store::Ledger<'_>,
        _: &loopx_kernel::store::QuotaRequest,
        _: bool,
    ) -> Result<(), loopx_kernel::KernelError> {
        ledger.put("hold/acct", &"until I say")
    }
}

/// An account's rules keep their own state; the kernel's entries (the holds, the account an
/// agent spent on) are not theirs to write, and a spend whose rules try is refused whole.
#[test]
fn account_rules_cannot_write_the_kernel_s_own_entries() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let spend = loopx_kernel::store::QuotaRequest {
        rules: std::sync::Arc::new(Meddles),
        ..request(&agent(), 0, 0.0, None, None)
    };
    let refused = f
        .store
        .apply(Op::QuotaAdmit(spend), HUMAN, T0)
        .expect_err("refused");
    assert!(
        refused.to_string().contains("the kernel's own quota entry"),
        "{refused}"
    );
    let holds = f.store.read(|s| s.quota_holds()).expect("read");
    assert!(holds.is_empty(), "{holds:?}");
}
