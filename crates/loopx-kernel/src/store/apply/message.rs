//! A person's messages to an agent (`loopx say`, `docs/watch.md`). A message waits for the
//! agent's next slice, whose prompt it heads; that slice's begin takes it, in the same
//! transaction, so a message reaches exactly one slice, or none if the begin is refused.
//! Messages that wait live under one key per agent (`messages/NAME`), never more than
//! [`WAITING`]; what was sent and when it arrived is in the events.

use crate::errors::{Invalid, KernelError, Refused};
use crate::ids::{AgentName, MessageId, SliceId};
use crate::model::{EventKind, Message};
use crate::store::writer::Writer;

use super::op::Applied;

/// At most this many messages wait for one agent: a person who sends more is told to wait.
pub const WAITING: usize = 20;
/// The meta counter of message numbers.
const NEXT: &str = "next_message";

/// A person's message to an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub agent: AgentName,
    pub text: String,
}

pub(crate) fn key(agent: &AgentName) -> String {
    format!("messages/{agent}")
}

pub(super) fn send(w: &Writer<'_>, new: NewMessage) -> Result<Applied, KernelError> {
    if loopx_vocab::Actor::of(w.actor).is_agent() {
        return Err(Refused::SayByAgent {
            actor: w.actor.to_owned(),
        }
        .into());
    }
    super::agent::registered(w, &new.agent)?;
    let text = new.text.trim().to_owned();
    crate::limits::check_text(
        "message",
        &text,
        crate::limits::MESSAGE,
        "; say it in parts, or amend the goal",
    )?;
    let mut waiting: Vec<Message> = w.quota_get(&key(&new.agent))?.unwrap_or_default();
    if waiting.len() >= WAITING {
        return Err(Invalid::Other(format!(
            "{WAITING} messages already wait for {}'s next slice\n(hint: wait until it takes them; `loopx log --kind message_delivered` shows when)",
            new.agent
        ))
        .into());
    }
    let number = w.meta(NEXT)?.unwrap_or(1);
    w.set_meta(NEXT, number + 1)?;
    let message = Message {
        id: MessageId(number),
        agent: new.agent,
        text,
        by: w.actor.to_owned(),
        at: w.now,
    };
    waiting.push(message.clone());
    w.quota_put(&key(&message.agent), &waiting)?;
    w.event(EventKind::MessageSent {
        message: message.id,
        agent: message.agent.clone(),
        text: message.text.clone(),
    })?;
    Ok(Applied::Message(message))
}

/// `messages` reached `agent` in `slice`'s prompt: they wait no longer. One that no longer
/// waits (a peer's begin took it) is left alone.
pub(super) fn delivered(
    w: &Writer<'_>,
    agent: &AgentName,
    slice: SliceId,
    messages: &[MessageId],
) -> Result<(), KernelError> {
    if messages.is_empty() {
        return Ok(());
    }
    let waiting: Vec<Message> = w.quota_get(&key(agent))?.unwrap_or_default();
    let (taken, kept): (Vec<Message>, Vec<Message>) =
        waiting.into_iter().partition(|m| messages.contains(&m.id));
    match kept.is_empty() {
        true => w.quota_remove(&key(agent)).map(drop)?,
        false => w.quota_put(&key(agent), &kept)?,
    }
    for message in taken {
        w.event(EventKind::MessageDelivered {
            message: message.id,
            agent: agent.clone(),
            slice,
            how: "prompt".to_owned(),
        })?;
    }
    Ok(())
}

impl crate::store::Snapshot<'_> {
    /// The messages waiting for `agent`'s next slice, oldest first.
    pub fn waiting_messages(&self, agent: &AgentName) -> Result<Vec<Message>, KernelError> {
        Ok(self.quota_value(&key(agent))?.unwrap_or_default())
    }
}
