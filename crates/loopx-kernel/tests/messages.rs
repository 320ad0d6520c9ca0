//! A person's messages written into a running slice's session (`store/apply/message.rs`,
//! `LiveMessages`): taken while the slice runs, delivered `live` when its CLI took each, and
//! waiting again, first, when it never did.

#[path = "support/common.rs"]
mod common;

use common::{HUMAN, T0, fixture};
use loopx_kernel::ids::MessageId;
use loopx_kernel::model::{Delivery, EventKind, Message, Outcome, SliceKind};
use loopx_kernel::store::{Applied, LiveMessages, NewMessage, NewSlice, SliceEnd};
use loopx_kernel::{AgentName, Op, SliceId};

fn say(f: &common::Fixture, agent: &AgentName, text: &str) -> MessageId {
    let op = Op::Say(NewMessage {
        agent: agent.clone(),
        text: text.into(),
    });
    match f.store.apply(op, HUMAN, T0).expect("said") {
        Applied::Message(m) => m.id,
        other => panic!("a message, not {other:?}"),
    }
}

fn start(f: &common::Fixture, agent: &AgentName) -> SliceId {
    let op = Op::SliceStart(NewSlice {
        goal: None,
        agent: agent.clone(),
        todo: None,
        epoch: None,
        kind: SliceKind::Work,
        profile_hash: String::new(),
        argv: vec![],
        limit_secs: 60,
        log: None,
        owner: None,
    });
    match f.store.apply(op, "loopx", T0).expect("started") {
        Applied::Slice(s) => s.id,
        other => panic!("a slice, not {other:?}"),
    }
}

fn live(f: &common::Fixture, op: LiveMessages, actor: &str) -> Result<Vec<Message>, String> {
    match f.store.apply(Op::LiveMessages(op), actor, T0) {
        Ok(Applied::Messages(taken)) => Ok(taken),
        Ok(Applied::Recorded) => Ok(vec![]),
        Ok(other) => panic!("messages, not {other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

fn end(f: &common::Fixture, slice: SliceId) {
    let end = SliceEnd {
        outcome: Outcome::Progress,
        exit: Some("exit 0".into()),
        tokens: 0,
        cost_usd: 0.0,
        output_bytes: 0,
        leftovers: 0,
        log_sha256: String::new(),
    };
    f.store
        .apply(Op::SliceEnd { slice, end }, "loopx", T0)
        .expect("ended");
}

fn deliveries(f: &common::Fixture) -> Vec<(MessageId, Delivery)> {
    let events = f.store.read(|s| s.events_tail(100)).expect("events");
    events
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::MessageDelivered { message, how, .. } => Some((message, how)),
            _ => None,
        })
        .collect()
}

fn returned(f: &common::Fixture) -> Vec<MessageId> {
    let events = f.store.read(|s| s.events_tail(100)).expect("events");
    events
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::MessageReturned { message, .. } => Some(message),
            _ => None,
        })
        .collect()
}

#[test]
fn a_message_taken_while_a_slice_runs_is_delivered_live_once_its_cli_took_it() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let slice = start(&f, &a);
    assert!(
        live(&f, LiveMessages::Take { slice }, "loopx")
            .expect("take")
            .is_empty()
    );
    let m1 = say(&f, &a, "Use tabs.");
    let m2 = say(&f, &a, "And keep it short.");
    let taken = live(&f, LiveMessages::Take { slice }, "loopx").expect("take");
    assert_eq!(taken.iter().map(|m| m.id).collect::<Vec<_>>(), [m1, m2]);
    // They wait no longer: the next take, and the agent's next prompt, do not carry them.
    assert!(
        live(&f, LiveMessages::Take { slice }, "loopx")
            .expect("take")
            .is_empty()
    );
    assert!(
        f.store
            .read(|s| s.waiting_messages(&a))
            .expect("read")
            .is_empty()
    );
    live(&f, LiveMessages::Used { slice, message: m1 }, "loopx").expect("used");
    // The CLI's echo seen twice says nothing new.
    live(&f, LiveMessages::Used { slice, message: m1 }, "loopx").expect("used again");
    assert_eq!(deliveries(&f), [(m1, Delivery::Live)]);
    // m2 was written but never taken by the CLI: it waits again when the slice ends.
    end(&f, slice);
    assert_eq!(returned(&f), [m2]);
    let waiting = f.store.read(|s| s.waiting_messages(&a)).expect("read");
    assert_eq!(waiting.iter().map(|m| m.id).collect::<Vec<_>>(), [m2]);
    // After the end, an echo delivers nothing.
    live(&f, LiveMessages::Used { slice, message: m2 }, "loopx").expect("late echo");
    assert_eq!(deliveries(&f), [(m1, Delivery::Live)]);
}

#[test]
fn a_message_that_waited_again_comes_before_one_sent_since() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let slice = start(&f, &a);
    let m1 = say(&f, &a, "first");
    live(&f, LiveMessages::Take { slice }, "loopx").expect("take");
    let m2 = say(&f, &a, "second");
    end(&f, slice);
    let waiting = f.store.read(|s| s.waiting_messages(&a)).expect("read");
    assert_eq!(waiting.iter().map(|m| m.id).collect::<Vec<_>>(), [m1, m2]);
}

#[test]
fn only_loopx_takes_or_delivers_live_and_only_for_a_running_slice() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let slice = start(&f, &a);
    let m1 = say(&f, &a, "Use tabs.");
    let why = live(&f, LiveMessages::Take { slice }, "agent:a").expect_err("an agent");
    assert!(why.contains("agent:a"), "{why}");
    live(&f, LiveMessages::Take { slice }, "loopx").expect("take");
    let why = live(&f, LiveMessages::Used { slice, message: m1 }, "agent:a").expect_err("an agent");
    assert!(why.contains("agent:a"), "{why}");
    assert!(deliveries(&f).is_empty());
    end(&f, slice);
    let why = live(&f, LiveMessages::Take { slice }, "loopx").expect_err("ended");
    assert!(why.contains("ended"), "{why}");
    // What the ended slice could have taken still waits.
    assert_eq!(
        f.store
            .read(|s| s.waiting_messages(&a))
            .expect("read")
            .len(),
        1
    );
}
