//! Property tests: any sequence of operations, applied to a real store, leaves the kernel
//! consistent and agrees with a small model of leases and epochs.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{HUMAN, T0, fixture};
use loopx_kernel::model::TodoState;
use loopx_kernel::store::FinishTodo;
use loopx_kernel::store::{ClaimTodo, ReleaseClaim, RenewClaim};
use loopx_kernel::{AgentName, KernelError, Op, Timestamp, TodoId, check_consistency};
use loopx_testkit::todo;
use proptest::prelude::*;

const TTL: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
enum Step {
    Add,
    Claim {
        todo: u8,
        agent: u8,
    },
    Renew {
        todo: u8,
        agent: u8,
        skew: i8,
    },
    Release {
        todo: u8,
        agent: u8,
        skew: i8,
    },
    Finish {
        todo: u8,
        agent: Option<u8>,
        skew: Option<i8>,
        drop: bool,
    },
    Advance {
        secs: u16,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Add),
        4 => (0..6u8, 0..3u8).prop_map(|(todo, agent)| Step::Claim { todo, agent }),
        2 => (0..6u8, 0..3u8, -1..=1i8).prop_map(|(todo, agent, skew)| Step::Renew { todo, agent, skew }),
        1 => (0..6u8, 0..3u8, -1..=1i8).prop_map(|(todo, agent, skew)| Step::Release { todo, agent, skew }),
        2 => (0..6u8, proptest::option::of(0..3u8), proptest::option::of(-1..=1i8), any::<bool>())
            .prop_map(|(todo, agent, skew, drop)| Step::Finish { todo, agent, skew, drop }),
        2 => (0..120u16).prop_map(|secs| Step::Advance { secs }),
    ]
}

/// What the kernel should do, tracked independently of it.
#[derive(Debug, Clone, PartialEq)]
struct ModelTodo {
    state: TodoState,
    epoch: u64,
    lease: Option<(u8, Timestamp)>,
    /// Who finished it under their own claim, and that claim's epoch: their slice may still
    /// renew under it, a no-op the kernel accepts (`ClaimStanding::Finished`).
    finished_under: Option<(u8, u64)>,
}

impl ModelTodo {
    fn live(&self, now: Timestamp) -> bool {
        self.lease.is_some_and(|(_, until)| now < until)
    }
}

fn epoch_with(current: u64, skew: i8) -> u64 {
    current.saturating_add_signed(i64::from(skew))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_sequence_keeps_the_kernel_consistent(steps in proptest::collection::vec(step(), 1..40)) {
        let f = fixture();
        f.goal();
        let agents: Vec<AgentName> = ["a", "b", "c"].iter().map(|n| f.agent(n)).collect();
        let mut now = T0;
        let mut model: Vec<ModelTodo> = Vec::new();
        let mut events = f.store.read(|s| s.event_count()).expect("count");
        for step in steps {
            let (op, expect_ok) = match step.clone() {
                Step::Add => {
                    let new = todo(format!("todo {}", model.len() + 1));
                    (Op::TodoAdd(new), true)
                }
                Step::Advance { secs } => {
                    now = now.plus(Duration::from_secs(u64::from(secs)));
                    continue;
                }
                Step::Claim { todo, agent } => {
                    let Some(m) = model.get(usize::from(todo)) else { continue };
                    let ok = m.state == TodoState::Open || (m.state == TodoState::Claimed && !m.live(now));
                    (Op::TodoClaim(ClaimTodo { todo: TodoId(u64::from(todo) + 1), agent: agents[usize::from(agent)].clone(), ttl: TTL }), ok)
                }
                Step::Renew { todo, agent, skew } | Step::Release { todo, agent, skew } => {
                    let Some(m) = model.get(usize::from(todo)) else { continue };
                    let epoch = epoch_with(m.epoch, skew);
                    let held = epoch == m.epoch && m.state == TodoState::Claimed && m.lease.is_some_and(|(a, _)| a == agent);
                    let finished = matches!(step, Step::Renew { .. }) && m.state.is_final() && m.finished_under == Some((agent, epoch));
                    let ok = held || finished;
                    let (id, name) = (TodoId(u64::from(todo) + 1), agents[usize::from(agent)].clone());
                    let op = if matches!(step, Step::Renew { .. }) {
                        Op::TodoRenew(RenewClaim { todo: id, agent: name, epoch, ttl: TTL })
                    } else {
                        Op::TodoRelease(ReleaseClaim { todo: id, agent: name, epoch })
                    };
                    (op, ok)
                }
                Step::Finish { todo, agent, skew, drop } => {
                    let Some(m) = model.get(usize::from(todo)) else { continue };
                    let epoch = skew.map(|s| epoch_with(m.epoch, s));
                    let ok = !m.state.is_final() && match (epoch, agent) {
                        // The holder finishes under its own claim only.
                        (Some(e), Some(a)) => e == m.epoch && m.state == TodoState::Claimed && m.lease.is_some_and(|(holder, _)| holder == a),
                        // An epoch alone may not finish a live claim.
                        (Some(e), None) => e == m.epoch && !m.live(now),
                        (None, _) => !m.live(now),
                    };
                    let to = if drop { TodoState::Dropped } else { TodoState::Done };
                    (Op::TodoFinish(FinishTodo { todo: TodoId(u64::from(todo) + 1), to, agent: agent.map(|a| agents[usize::from(a)].clone()), epoch }), ok)
                }
            };
            let no_op = matches!(step, Step::Renew { todo, .. } if model.get(usize::from(todo)).is_some_and(|m| m.state.is_final()));
            let result = f.store.apply(op, HUMAN, now);
            prop_assert_eq!(result.is_ok(), expect_ok, "step {:?} gave {:?}", step, result.as_ref().err().map(ToString::to_string));
            if let Err(e) = &result {
                prop_assert!(matches!(e, KernelError::Conflict(_) | KernelError::Invalid(_)), "only conflicts or invalid input, never {e}");
            }
            // Apply the same step to the model.
            if result.is_ok() {
                match step {
                    Step::Add => model.push(ModelTodo { state: TodoState::Open, epoch: 0, lease: None, finished_under: None }),
                    Step::Claim { todo, agent } => {
                        let m = &mut model[usize::from(todo)];
                        m.epoch += 1;
                        m.state = TodoState::Claimed;
                        m.lease = Some((agent, now.plus(TTL)));
                    }
                    Step::Renew { todo, agent, .. } => {
                        // Renewing the claim a todo was finished under changes nothing.
                        let m = &mut model[usize::from(todo)];
                        if m.state == TodoState::Claimed {
                            m.lease = Some((agent, now.plus(TTL)));
                        }
                    }
                    // Every change of holder moves the epoch on.
                    Step::Release { todo, .. } => {
                        let m = &mut model[usize::from(todo)];
                        m.state = TodoState::Open;
                        m.lease = None;
                        m.epoch += 1;
                    }
                    Step::Finish { todo, drop, agent, skew } => {
                        let m = &mut model[usize::from(todo)];
                        m.finished_under = agent.zip(skew.map(|s| epoch_with(m.epoch, s)));
                        m.state = if drop { TodoState::Dropped } else { TodoState::Done };
                        m.lease = None;
                        m.epoch += 1;
                    }
                    Step::Advance { .. } => {}
                }
            }
            // Invariants, read back from the store.
            let (problems, todos, count) = f.store.read(|s| Ok((check_consistency(s)?, s.todos()?, s.event_count()?))).expect("read");
            prop_assert!(problems.is_empty(), "inconsistent after {:?}: {:?}", step, problems);
            prop_assert_eq!(todos.len(), model.len());
            for (todo, m) in todos.iter().zip(&model) {
                prop_assert_eq!(todo.state, m.state, "{}", todo.id);
                prop_assert_eq!(todo.epoch, m.epoch, "{}: epochs only grow, once per change of holder", todo.id);
            }
            // One event per change; a refusal, or a renewal of the claim a todo was finished
            // under (a no-op), adds at most one.
            let grew = count - events;
            prop_assert!(if result.is_ok() && !no_op { grew == 1 } else { grew <= 1 }, "events grew by {grew} after {:?}", step);
            events = count;
        }
    }
}
