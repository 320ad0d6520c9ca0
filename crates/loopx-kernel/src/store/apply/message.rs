//! A person's messages to an agent (`loopx say`, `docs/watch.md`). A message waits for the
//! agent's next slice, whose prompt it heads. That slice's begin takes it in the same
//! transaction (a begin refused takes nothing); its spawn records it delivered; its end gives
//! it back to wait again when the agent never started or could not work. So a message heads
//! one slice's prompt at a time, and is not lost to a slice that could not read it. Messages
//! that wait live under one key per agent (`messages/NAME`), never more than [`WAITING`], and
//! a slice's under `messages-taken/SLICE` until it ends; the events say what happened.
//!
//! A slice whose agent takes input while it runs (Claude Code's stream-json) also takes what
//! waits while it runs ([`LiveMessages::Take`]), for loopx to write into the session; each is
//! delivered `live` when the CLI says it took it ([`LiveMessages::Used`]), and what it never
//! took when the slice ends waits again, first (under `messages-live/SLICE` until then).

use crate::errors::{Conflict, Invalid, KernelError, Refused};
use crate::ids::{AgentName, MessageId, SliceId};
use crate::model::{Delivery, EventKind, Message, Outcome};
use crate::store::tables;
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

/// What loopx does with a person's messages while a slice whose agent takes input runs. Only
/// loopx's supervisor does it: an agent could mark a message delivered that it never read, and
/// a person has `loopx say`.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveMessages {
    /// Takes every message waiting for the running slice's agent, to write into its session
    /// now (applied as [`Applied::Messages`]).
    Take { slice: SliceId },
    /// The slice's CLI took `message`: it is delivered, `how` (`live`; `prompt` for one its
    /// prompt carried, when the CLI echoed the prompt).
    Used {
        slice: SliceId,
        message: MessageId,
        how: Delivery,
    },
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
    // Those written into a running session and not yet read count too: an agent that never
    // reads its input must not gather more than the next prompt should carry.
    if waiting.len() + in_sessions(w, &new.agent)? >= WAITING {
        return Err(Invalid::Other(format!(
            "{WAITING} messages to {} are not read yet\n(hint: wait until it reads them, `loopx log --kind message_delivered` shows when; if the `loopx run` running it was killed, the next `loopx run` gives them back first)",
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

/// How many of `agent`'s messages its running slices hold, not yet read.
/// Those written into its session and not read yet, and those its prompt carries until its
/// agent started (then they are delivered, or wait for the prompt's echo with the first).
fn in_sessions(w: &Writer<'_>, agent: &AgentName) -> Result<usize, KernelError> {
    let mut held = 0;
    for id in w.running_ids()? {
        let slice = SliceId(id);
        let mut lists = vec![live_key(slice)];
        let record: Option<crate::model::SliceRecord> = w.get(tables::SLICES, id)?;
        if record.is_some_and(|r| r.process.is_none()) {
            lists.push(taken_key(slice));
        }
        for list in lists {
            let held_here: Vec<Message> = w.quota_get(&list)?.unwrap_or_default();
            held += held_here.iter().filter(|m| &m.agent == agent).count();
        }
    }
    Ok(held)
}

/// The slice's begin takes `messages` (its prompt carries them): they wait no longer, and are
/// the slice's until it ends. One that no longer waits (a peer's begin took it since this
/// prompt was made) refuses the begin, which is then made again with a fresh prompt: a
/// message heads one slice's prompt, never two.
pub(super) fn take(
    w: &Writer<'_>,
    agent: &AgentName,
    slice: SliceId,
    messages: &[MessageId],
) -> Result<(), KernelError> {
    if messages.is_empty() {
        return Ok(());
    }
    let waiting: Vec<Message> = w.quota_get(&key(agent))?.unwrap_or_default();
    if let Some(gone) = messages
        .iter()
        .find(|id| !waiting.iter().any(|m| m.id == **id))
    {
        return Err(Conflict::MessageTaken { message: *gone }.into());
    }
    let (taken, kept): (Vec<Message>, Vec<Message>) =
        waiting.into_iter().partition(|m| messages.contains(&m.id));
    put_waiting(w, agent, &kept)?;
    w.quota_put(&taken_key(slice), &taken)
}

/// The slice's agent started: the messages its prompt carries reached it.
pub(super) fn delivered(w: &Writer<'_>, slice: SliceId) -> Result<(), KernelError> {
    let taken: Vec<Message> = w.quota_get(&taken_key(slice))?.unwrap_or_default();
    for message in taken {
        w.event(EventKind::MessageDelivered {
            message: message.id,
            agent: message.agent,
            slice,
            how: Delivery::Prompt,
        })?;
    }
    Ok(())
}

/// Live messages: a running slice takes what waits now, or its CLI took one of them.
pub(super) fn live(w: &Writer<'_>, op: LiveMessages) -> Result<Applied, KernelError> {
    if loopx_vocab::Actor::of(w.actor) != loopx_vocab::Actor::Loopx {
        return Err(Refused::LiveByOther {
            actor: w.actor.to_owned(),
        }
        .into());
    }
    match op {
        LiveMessages::Take { slice } => {
            let record = super::slice::running_slice(w, slice)?;
            let waiting: Vec<Message> = w.quota_get(&key(&record.agent))?.unwrap_or_default();
            if !waiting.is_empty() {
                let mut live: Vec<Message> = w.quota_get(&live_key(slice))?.unwrap_or_default();
                live.extend(waiting.iter().cloned());
                w.quota_put(&live_key(slice), &live)?;
                w.quota_remove(&key(&record.agent))?;
            }
            Ok(Applied::Messages(waiting))
        }
        LiveMessages::Used {
            slice,
            message,
            how,
        } => {
            // Among those written into the session; or, when the prompt's echo came before its
            // spawn was recorded, among those its prompt carries. Taken once: a second echo of
            // the line, or one after the slice ended, says nothing new.
            let used = match remove(w, &live_key(slice), message)? {
                Some(used) => Some(used),
                None => remove(w, &taken_key(slice), message)?,
            };
            let Some(used) = used else {
                return Ok(Applied::Recorded);
            };
            w.event(EventKind::MessageDelivered {
                message: used.id,
                agent: used.agent,
                slice,
                how,
            })?;
            Ok(Applied::Recorded)
        }
    }
}

/// Removes `message` from the list under `key`, if it is there.
fn remove(w: &Writer<'_>, key: &str, message: MessageId) -> Result<Option<Message>, KernelError> {
    let mut list: Vec<Message> = w.quota_get(key)?.unwrap_or_default();
    let Some(at) = list.iter().position(|m| m.id == message) else {
        return Ok(None);
    };
    let removed = list.remove(at);
    match list.is_empty() {
        true => w.quota_remove(key).map(drop)?,
        false => w.quota_put(key, &list)?,
    }
    Ok(Some(removed))
}

/// The slice's agent started, and reads its prompt from a pipe: the messages the prompt
/// carries are delivered when its CLI echoes the prompt, and until then wait with the ones
/// written into its session.
pub(super) fn await_echo(w: &Writer<'_>, slice: SliceId) -> Result<(), KernelError> {
    let Some(taken) = w.quota_get::<Vec<Message>>(&taken_key(slice))? else {
        return Ok(());
    };
    w.quota_remove(&taken_key(slice))?;
    let mut live: Vec<Message> = w.quota_get(&live_key(slice))?.unwrap_or_default();
    live.splice(0..0, taken);
    w.quota_put(&live_key(slice), &live)
}

/// The slice ended: its messages are settled. When its agent never started, or could not work
/// (`spawn_failed`, `auth_failed`, `usage_limited`), the ones its prompt carried wait again,
/// first, for the agent's next slice; so do the ones written into its session that its CLI
/// never took.
pub(super) fn settled(
    w: &Writer<'_>,
    slice: &crate::model::SliceRecord,
) -> Result<(), KernelError> {
    let taken = w.quota_get::<Vec<Message>>(&taken_key(slice.id))?;
    let live = w.quota_get::<Vec<Message>>(&live_key(slice.id))?;
    if taken.is_none() && live.is_none() {
        return Ok(());
    }
    w.quota_remove(&taken_key(slice.id))?;
    w.quota_remove(&live_key(slice.id))?;
    let unused = slice.process.is_none()
        || matches!(
            slice.outcome,
            Some(Outcome::SpawnFailed | Outcome::AuthFailed | Outcome::UsageLimited)
        );
    let mut taken = if unused {
        taken.unwrap_or_default()
    } else {
        Vec::new()
    };
    taken.extend(live.unwrap_or_default());
    if taken.is_empty() {
        return Ok(());
    }
    let mut waiting: Vec<Message> = w.quota_get(&key(&slice.agent))?.unwrap_or_default();
    for message in &taken {
        w.event(EventKind::MessageReturned {
            message: message.id,
            agent: slice.agent.clone(),
            slice: slice.id,
        })?;
    }
    waiting.splice(0..0, taken);
    put_waiting(w, &slice.agent, &waiting)
}

/// The agent was removed: what waited for it is dropped with it (a new agent of that name is
/// another agent).
pub(super) fn forget(w: &Writer<'_>, agent: &AgentName) -> Result<(), KernelError> {
    w.quota_remove(&key(agent)).map(drop)
}

fn put_waiting(w: &Writer<'_>, agent: &AgentName, waiting: &[Message]) -> Result<(), KernelError> {
    match waiting.is_empty() {
        true => w.quota_remove(&key(agent)).map(drop),
        false => w.quota_put(&key(agent), &waiting),
    }
}

fn taken_key(slice: SliceId) -> String {
    format!("messages-taken/{slice}")
}

fn live_key(slice: SliceId) -> String {
    format!("messages-live/{slice}")
}

impl crate::store::Snapshot<'_> {
    /// The messages waiting for `agent`'s next slice, oldest first.
    pub fn waiting_messages(&self, agent: &AgentName) -> Result<Vec<Message>, KernelError> {
        Ok(self.quota_value(&key(agent))?.unwrap_or_default())
    }
}
