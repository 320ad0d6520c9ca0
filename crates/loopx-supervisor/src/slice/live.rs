//! A slice whose agent takes input while it runs (`prompt.delivery = "stream-json"`: Claude
//! Code; `docs/watch.md`, "Messages", and `docs/design/live-messages.md`).
//!
//! The prompt is the first line on the agent's stdin, a pipe that stays open. While the slice
//! runs, a mailbox thread looks for messages waiting for the agent (a read, every
//! [`POLL`]); what waits it takes in one kernel transaction (`LiveMessages::Take`) and hands
//! to the observer, which writes each as a line. The CLI echoes a line when it uses it; the
//! echo of a message's line delivers it (`LiveMessages::Used`), so the log says a message
//! reached the agent only when it did. A line written during a turn is taken into that turn
//! (after the running tool) or starts the next one; a line after a turn's result starts the
//! next turn.
//!
//! **When the session ends** (`live/turns.rs`). At a turn's result, loopx closes stdin (the
//! CLI then ends) unless a message written during that turn has not been echoed yet: that one
//! starts the next turn (Claude echoes it about a quarter of a second after the result), whose
//! own result decides again. A line of an earlier turn never holds it open, and when no echo
//! came within [`ECHO_WAIT`] of the result stdin closes anyway: a CLI that never echoes cannot
//! keep a slice open until its idle limit. A message taken in the moment stdin closes, or
//! written but never echoed, waits again for the agent's next slice when this one ends (the
//! kernel's `settled`).

mod turns;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self as std_mpsc, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loopx_adapters::AgentEvent;
use loopx_adapters::live::{random_uuid, user_line};
use loopx_kernel::ids::MessageId;
use loopx_kernel::model::{Delivery, Message};
use loopx_kernel::store::{Applied, LiveMessages};
use loopx_kernel::{AgentName, Op, Project, SharedClock, SliceId};
use loopx_pty::{SliceControl, SliceEvent, SliceEvents};
use tokio::sync::mpsc;

use crate::store_cache::StoreCache;
use turns::{AtResult, Turns};

/// How often the mailbox looks for waiting messages: a person sees a message go in within
/// about a second, at the cost of one keyed read a second per such slice.
pub(crate) const POLL: Duration = Duration::from_secs(1);

/// How long after a turn's result loopx waits for the echo of a message written during that
/// turn before it closes stdin anyway.
pub(crate) const ECHO_WAIT: Duration = Duration::from_secs(5);

/// Where a slice's mailbox takes its agent's messages from.
#[derive(Debug)]
pub(crate) struct Mailroom {
    pub slice: SliceId,
    /// The messages the slice's prompt carries: delivered when the CLI echoes the prompt.
    pub prompt_messages: Vec<MessageId>,
    pub agent: AgentName,
    pub stores: StoreCache,
    pub project: Project,
    pub clock: SharedClock,
}

/// The observer's side of a live session.
#[derive(Debug)]
pub(crate) struct LiveInput {
    control: SliceControl,
    /// The prompt line's uuid and the messages it carries, until its echo.
    prompt: Option<(String, Vec<MessageId>)>,
    turns: Turns,
    /// When stdin is closed unless an echo comes first (set at a result that left a message
    /// unread).
    close_at: Option<tokio::time::Instant>,
    mailbox: Mailbox,
}

impl LiveInput {
    /// Writes the prompt as the first line and starts the mailbox.
    pub(crate) fn start(prompt: &str, mut room: Mailroom, control: SliceControl) -> LiveInput {
        let uuid = random_uuid();
        if let Err(e) = control.write_stdin(user_line(prompt, &uuid)) {
            tracing::warn!(error = %e, "could not write the prompt to the agent's stdin");
        }
        let carried = std::mem::take(&mut room.prompt_messages);
        LiveInput {
            control,
            prompt: Some((uuid, carried)),
            turns: Turns::default(),
            close_at: None,
            mailbox: Mailbox::start(room),
        }
    }

    /// The slice's next event; meanwhile, the messages the mailbox takes are written, and
    /// stdin is closed when an echo it waited for did not come.
    pub(crate) async fn next(&mut self, events: &mut SliceEvents) -> Option<SliceEvent> {
        loop {
            let close_at = self.close_at;
            tokio::select! {
                event = events.next() => return event,
                Some(taken) = self.mailbox.taken.recv() => self.write(taken),
                () = sleep_until(close_at), if close_at.is_some() => self.close(),
            }
        }
    }

    /// Writes each message as a line (once stdin is closed they wait for the next slice).
    fn write(&mut self, messages: Vec<Message>) {
        for message in messages {
            let uuid = random_uuid();
            let line = user_line(&loopx_domain::prompt::live_message_note(&message), &uuid);
            match self.control.write_stdin(line) {
                Ok(()) => {
                    tracing::info!(message = %message.id, "message written into the session");
                    self.turns.written(uuid, message.id);
                }
                Err(e) => {
                    tracing::info!(message = %message.id, error = %e, "message not written; it waits for the next slice")
                }
            }
        }
    }

    /// An event of the agent's stream: an echo delivers its message; a turn's result may end
    /// the session.
    pub(crate) fn saw(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::InputUsed { uuid } => {
                let mut ours = false;
                if let Some(message) = self.turns.echoed(uuid) {
                    self.mailbox.used(message, Delivery::Live);
                    ours = true;
                }
                if self.prompt.as_ref().is_some_and(|(first, _)| first == uuid) {
                    let (_, carried) = self.prompt.take().unwrap_or_default();
                    for message in carried {
                        self.mailbox.used(message, Delivery::Prompt);
                    }
                    ours = true;
                }
                // A turn of ours began: its own result decides. An echo of a line loopx never
                // wrote (an agent can print one) changes nothing.
                if ours {
                    self.close_at = None;
                }
            }
            AgentEvent::Finished(_) if self.prompt.is_some() => {
                // Answered without echoing its prompt: the CLI does not echo its input (a
                // profile without `--replay-user-messages`?), so no message will count as read.
                tracing::warn!(
                    "the agent answered without echoing its prompt: messages to it cannot be confirmed (is `--replay-user-messages` among its arguments?)"
                );
                self.prompt = None;
                self.finished();
            }
            AgentEvent::Finished(_) => self.finished(),
            _ => {}
        }
    }

    /// A turn's result: what the mailbox took meanwhile goes in first (it starts the next
    /// turn), then the turn rule says whether stdin closes.
    fn finished(&mut self) {
        while let Ok(taken) = self.mailbox.taken.try_recv() {
            self.write(taken);
        }
        match self.turns.result() {
            AtResult::WaitForEcho => {
                self.close_at = Some(tokio::time::Instant::now() + ECHO_WAIT);
            }
            AtResult::Close => self.close(),
        }
    }

    /// Closes stdin: nothing more is taken or written, and the CLI ends after its pending work.
    fn close(&mut self) {
        self.close_at = None;
        self.mailbox.open.store(false, Ordering::SeqCst);
        if let Err(e) = self.control.close_stdin() {
            tracing::info!(error = %e, "could not close the agent's stdin");
        }
    }

    /// Stops the mailbox once the acknowledgements it was given are applied: the slice's end
    /// must see them.
    pub(crate) async fn finish(self) {
        let mailbox = self.mailbox;
        let _ = tokio::task::spawn_blocking(move || mailbox.finish()).await;
    }
}

/// Sleeps until `at` (forever when `None`: the branch is disabled then).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The thread that takes waiting messages and delivers the echoed ones.
#[derive(Debug)]
struct Mailbox {
    /// Cleared when stdin is closed: nothing more is taken.
    open: Arc<AtomicBool>,
    used: Option<std_mpsc::Sender<(MessageId, Delivery)>>,
    taken: mpsc::UnboundedReceiver<Vec<Message>>,
    thread: Option<JoinHandle<()>>,
}

impl Mailbox {
    fn start(room: Mailroom) -> Mailbox {
        let open = Arc::new(AtomicBool::new(true));
        let (used, used_rx) = std_mpsc::channel();
        let (taken_tx, taken) = mpsc::unbounded_channel();
        let still_open = Arc::clone(&open);
        let thread = std::thread::Builder::new()
            .name("loopx-live".into())
            .spawn(move || run(&room, &still_open, &used_rx, &taken_tx))
            .inspect_err(|e| {
                tracing::error!(error = %e, "cannot start the live messages' thread; messages wait for the next slice")
            })
            .ok();
        Mailbox {
            open,
            used: Some(used),
            taken,
            thread,
        }
    }

    fn used(&self, message: MessageId, how: Delivery) {
        if let Some(used) = &self.used {
            let _ = used.send((message, how));
        }
    }

    fn finish(mut self) {
        self.open.store(false, Ordering::SeqCst);
        drop(self.used.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The mailbox's loop: acknowledgements as they come, a look for waiting messages every
/// [`POLL`] while stdin is open; until the observer finishes.
fn run(
    room: &Mailroom,
    open: &AtomicBool,
    used: &std_mpsc::Receiver<(MessageId, Delivery)>,
    taken: &mpsc::UnboundedSender<Vec<Message>>,
) {
    let mut next_look = Instant::now() + POLL;
    loop {
        match used.recv_timeout(next_look.saturating_duration_since(Instant::now())) {
            Ok((message, how)) => apply(
                room,
                LiveMessages::Used {
                    slice: room.slice,
                    message,
                    how,
                },
            ),
            Err(RecvTimeoutError::Timeout) => {
                next_look = Instant::now() + POLL;
                if open.load(Ordering::SeqCst)
                    && let Some(messages) = take(room)
                    && taken.send(messages).is_err()
                {
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// What waits for the agent now, taken for this slice; nothing when nothing waits (a read,
/// not a write, in the common case).
fn take(room: &Mailroom) -> Option<Vec<Message>> {
    let waiting = room.stores.with(&room.project, |s| {
        s.read(|s| s.waiting_messages(&room.agent))
    });
    if !waiting.is_ok_and(|w| !w.is_empty()) {
        return None;
    }
    let op = Op::LiveMessages(LiveMessages::Take { slice: room.slice });
    match room.stores.with(&room.project, |s| {
        s.apply(op, super::ACTOR, room.clock.now())
    }) {
        Ok(Applied::Messages(taken)) if !taken.is_empty() => Some(taken),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "could not take the agent's messages; trying again");
            None
        }
    }
}

/// Records a message delivered, trying a few times: one not recorded waits again when the
/// slice ends, and reaches the agent twice.
fn apply(room: &Mailroom, op: LiveMessages) {
    const TRIES: u32 = 3;
    for attempt in 1..=TRIES {
        let op = Op::LiveMessages(op.clone());
        match room.stores.with(&room.project, |s| {
            s.apply(op, super::ACTOR, room.clock.now())
        }) {
            Ok(_) => return,
            Err(e) if attempt == TRIES => {
                tracing::warn!(error = %e, "could not record a message delivered; it waits again when the slice ends");
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200) * attempt),
        }
    }
}
