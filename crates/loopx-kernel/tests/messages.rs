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

/// loopx records that the slice's CLI took `message`.
fn used(
    f: &common::Fixture,
    slice: SliceId,
    message: MessageId,
    how: Delivery,
) -> Result<Vec<Message>, String> {
    live(
        f,
        LiveMessages::Used {
            slice,
            message,
            how,
        },
        "loopx",
    )
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
    used(&f, slice, m1, Delivery::Live).expect("used");
    // The CLI's echo seen twice says nothing new.
    used(&f, slice, m1, Delivery::Live).expect("used again");
    assert_eq!(deliveries(&f), [(m1, Delivery::Live)]);
    // m2 was written but never taken by the CLI: it waits again when the slice ends.
    end(&f, slice);
    assert_eq!(returned(&f), [m2]);
    let waiting = f.store.read(|s| s.waiting_messages(&a)).expect("read");
    assert_eq!(waiting.iter().map(|m| m.id).collect::<Vec<_>>(), [m2]);
    // After the end, an echo delivers nothing.
    used(&f, slice, m2, Delivery::Live).expect("late echo");
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
    for actor in ["agent:a", HUMAN] {
        let why = live(&f, LiveMessages::Take { slice }, actor).expect_err("not loopx");
        assert!(why.contains(actor), "{why}");
    }
    live(&f, LiveMessages::Take { slice }, "loopx").expect("take");
    for actor in ["agent:a", HUMAN] {
        let why = live(
            &f,
            LiveMessages::Used {
                slice,
                message: m1,
                how: Delivery::Live,
            },
            actor,
        )
        .expect_err("not loopx");
        assert!(why.contains(actor), "{why}");
    }
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

/// A slice begun with `messages` in its prompt.
fn begin_with(f: &common::Fixture, agent: &AgentName, messages: Vec<MessageId>) -> SliceId {
    let begin = loopx_kernel::store::BeginSlice {
        messages,
        ..loopx_testkit::begin(agent, None)
    };
    match f.store.apply(Op::SliceBegin(begin), "agent:a", T0) {
        Ok(Applied::SliceBegun { slice, .. }) => slice.id,
        other => panic!("a slice, not {other:?}"),
    }
}

/// The slice's agent spawned (`prompt_read`: whether starting gave it the prompt).
fn spawned(f: &common::Fixture, slice: SliceId, prompt_read: bool) {
    let process = loopx_kernel::model::ProcessIdentity {
        pid: 4242,
        start_ticks: 99,
        boot_id: "boot".into(),
    };
    let op = Op::SliceSpawned {
        slice,
        process,
        containment: String::new(),
        prompt_read,
    };
    f.store.apply(op, "agent:a", T0).expect("spawned");
}

fn begun_with(
    f: &common::Fixture,
    agent: &AgentName,
    messages: Vec<MessageId>,
    prompt_read: bool,
) -> SliceId {
    let slice = begin_with(f, agent, messages);
    spawned(f, slice, prompt_read);
    slice
}

/// A prompt read from a pipe is read when the CLI echoes it: its messages are delivered then,
/// and wait again when it never did; a prompt given at the start delivers them at once.
#[test]
fn a_prompt_s_messages_are_delivered_when_the_agent_read_the_prompt() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let m1 = say(&f, &a, "Start with the README.");
    let slice = begun_with(&f, &a, vec![m1], false);
    assert!(deliveries(&f).is_empty(), "not before the echo");
    used(&f, slice, m1, Delivery::Prompt).expect("echoed");
    assert_eq!(deliveries(&f), [(m1, Delivery::Prompt)]);
    end(&f, slice);
    assert!(returned(&f).is_empty());

    let m2 = say(&f, &a, "Then the changelog.");
    let never = begun_with(&f, &a, vec![m2], false);
    end(&f, never);
    assert_eq!(returned(&f), [m2], "never read: it waits again");
    let waiting = f.store.read(|s| s.waiting_messages(&a)).expect("read");
    assert_eq!(waiting.iter().map(|m| m.id).collect::<Vec<_>>(), [m2]);

    let at_start = begun_with(&f, &a, vec![m2], true);
    assert_eq!(
        deliveries(&f),
        [(m1, Delivery::Prompt), (m2, Delivery::Prompt)]
    );
    end(&f, at_start);
}

/// Messages written into a running session and not read yet count toward the most one agent
/// may have unread: an agent that never reads cannot gather more.
#[test]
fn messages_in_a_running_session_count_toward_the_limit() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let slice = start(&f, &a);
    for n in 0..loopx_kernel::store::WAITING_MESSAGES {
        say(&f, &a, &format!("note {n}"));
    }
    let taken = live(&f, LiveMessages::Take { slice }, "loopx").expect("take");
    assert_eq!(taken.len(), loopx_kernel::store::WAITING_MESSAGES);
    let op = Op::Say(NewMessage {
        agent: a.clone(),
        text: "one more".into(),
    });
    let why = f
        .store
        .apply(op, HUMAN, T0)
        .expect_err("over the limit")
        .to_string();
    assert!(why.contains("20 messages to a are not read yet"), "{why}");
    end(&f, slice);
    assert_eq!(
        f.store
            .read(|s| s.waiting_messages(&a))
            .expect("read")
            .len(),
        loopx_kernel::store::WAITING_MESSAGES
    );
}

/// The prompt's echo may come before the spawn is recorded (the spawn is recorded on a thread
/// of its own): its messages are delivered then all the same, once.
#[test]
fn a_prompt_echoed_before_its_spawn_was_recorded_delivers_its_messages_once() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let m1 = say(&f, &a, "Start with the README.");
    let slice = begin_with(&f, &a, vec![m1]);
    used(&f, slice, m1, Delivery::Prompt).expect("echoed");
    spawned(&f, slice, false);
    end(&f, slice);
    assert_eq!(deliveries(&f), [(m1, Delivery::Prompt)]);
    assert!(returned(&f).is_empty());
}

/// Between a slice's begin and its agent's start, the messages its prompt carries are not read
/// yet: they count too.
#[test]
fn messages_a_prompt_carries_count_until_the_agent_started() {
    let f = fixture();
    f.goal();
    let a = f.agent("a");
    let all: Vec<MessageId> = (0..loopx_kernel::store::WAITING_MESSAGES)
        .map(|n| say(&f, &a, &format!("note {n}")))
        .collect();
    let slice = begin_with(&f, &a, all);
    let op = || {
        Op::Say(NewMessage {
            agent: a.clone(),
            text: "one more".into(),
        })
    };
    let why = f.store.apply(op(), HUMAN, T0).expect_err("over the limit");
    assert!(why.to_string().contains("are not read yet"), "{why}");
    // Started with its prompt, the agent has them: there is room again.
    spawned(&f, slice, true);
    f.store.apply(op(), HUMAN, T0).expect("room again");
}
