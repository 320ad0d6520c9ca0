//! What one agent may keep open at once (`store/apply/caps.rs`): counted across its slices,
//! freed as a person answers, and never a person's limit.

#[path = "support/common.rs"]
mod common;

use common::{HUMAN, T0, fixture};
use loopx_kernel::model::{Blocks, GateKind};
use loopx_kernel::store::OPEN_QUESTIONS;
use loopx_kernel::store::{AnswerChoice, AnswerGate, NewGate};
use loopx_kernel::{GateId, Op};

fn ask(f: &common::Fixture, actor: &str, n: usize) -> Result<GateId, String> {
    let op = Op::GateAsk(NewGate {
        question: format!("Should the parser accept option {n}?"),
        options: vec!["yes".into(), "no".into()],
        context: String::new(),
        blocks: Blocks::Nothing,
        kind: GateKind::Question,
    });
    match f.store.apply(op, actor, T0) {
        Ok(loopx_kernel::store::Applied::Gate(g)) => Ok(g.id),
        Ok(other) => panic!("a gate, not {other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn an_agent_s_open_questions_are_capped_until_a_person_answers_one() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let mut first = None;
    for n in 0..OPEN_QUESTIONS {
        let id = ask(&f, "agent:a", n).expect("under the cap");
        first.get_or_insert(id);
    }
    let why = ask(&f, "agent:a", 99).expect_err("over the cap");
    assert!(
        why.contains("`agent:a` keeps 20 questions open, the most one agent may"),
        "{why}"
    );
    // Another agent, and a person, are not held by agent a's questions.
    f.agent("b");
    ask(&f, "agent:b", 0).expect("b's own");
    ask(&f, HUMAN, 0).expect("a person's");
    // An answer frees a place.
    f.store
        .apply(
            Op::GateAnswer(AnswerGate {
                gate: first.expect("asked"),
                choice: AnswerChoice::Option(1),
                slice: None,
                note: None,
            }),
            HUMAN,
            T0,
        )
        .expect("answered");
    ask(&f, "agent:a", 100).expect("a place again");
}

#[test]
fn an_agent_keeps_three_goal_proposals_open_at_most() {
    let f = fixture();
    f.goal();
    f.agent("a");
    let propose = |n: usize| {
        f.store.apply(
            Op::GateAsk(loopx_kernel::report::goal_proposal(
                Some(format!("Objective {n}")),
                vec![],
                "it is better".into(),
                "",
            )),
            "agent:a",
            T0,
        )
    };
    for n in 0..loopx_kernel::store::OPEN_PROPOSALS {
        propose(n).expect("under the cap");
    }
    let why = propose(9).expect_err("over the cap").to_string();
    assert!(why.contains("keeps 3 goal proposals open"), "{why}");
}
