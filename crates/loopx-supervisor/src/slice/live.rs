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
//! **When the session ends.** At a turn's result, loopx closes stdin (the CLI then ends) unless
//! a message written during that turn has not been echoed yet: that one starts the next turn
//! (Claude echoes it about a quarter of a second after the result). It closes at the result
//! after that in any case, since by then the CLI has read every line written before, and when
//! no echo came within [`ECHO_WAIT`] of the result: a CLI that never echoes cannot keep a
//! slice open until its idle limit. A message taken in the moment stdin closes, or written but
//! never echoed, waits again for the agent's next slice when this one ends (the kernel's
//! `settled`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self as std_mpsc, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loopx_adapters::AgentEvent;
use loopx_adapters::live::{input_uuid, user_line};
use loopx_kernel::ids::MessageId;
use loopx_kernel::model::Message;
use loopx_kernel::store::{Applied, LiveMessages};
use loopx_kernel::{AgentName, Op, Project, SharedClock, SliceId};
use loopx_pty::SliceControl;
use tokio::sync::mpsc;

use crate::store_cache::StoreCache;

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
    pub agent: AgentName,
    pub stores: StoreCache,
    pub project: Project,
    pub clock: SharedClock,
}

/// The observer's side of a live session.
#[derive(Debug)]
pub(crate) struct LiveInput {
    control: SliceControl,
    slice: SliceId,
    /// Keeps this slice's uuids apart from another project's slice of the same number, and
    /// from a resumed session's earlier lines.
    nonce: u32,
    /// Lines of messages written whose echo has not come, by uuid.
    pending: HashMap<String, MessageId>,
    /// A line was written since the last result.
    written_this_turn: bool,
    /// When stdin is closed unless an echo comes first (set at a result that left a message
    /// unread).
    close_at: Option<tokio::time::Instant>,
    mailbox: Mailbox,
}

impl LiveInput {
    /// Writes the prompt as the first line and starts the mailbox.
    pub(crate) fn start(prompt: &str, room: Mailroom, control: SliceControl) -> LiveInput {
        let nonce = nonce(room.slice);
        let first = user_line(prompt, &input_uuid(room.slice.0, nonce, 0));
        if let Err(e) = control.write_stdin(first) {
            tracing::warn!(error = %e, "could not write the prompt to the agent's stdin");
        }
        LiveInput {
            control,
            slice: room.slice,
            nonce,
            pending: HashMap::new(),
            written_this_turn: false,
            close_at: None,
            mailbox: Mailbox::start(room),
        }
    }

    /// Messages the mailbox took, as they come; `None` once it stopped.
    pub(crate) async fn taken(&mut self) -> Option<Vec<Message>> {
        self.mailbox.taken.recv().await
    }

    /// Writes each message as a line (once stdin is closed they wait for the next slice).
    pub(crate) fn write(&mut self, messages: Vec<Message>) {
        for message in messages {
            let uuid = input_uuid(self.slice.0, self.nonce, message.id.0);
            let line = user_line(&loopx_domain::prompt::live_message_note(&message), &uuid);
            match self.control.write_stdin(line) {
                Ok(()) => {
                    tracing::info!(message = %message.id, "message written into the session");
                    self.pending.insert(uuid, message.id);
                    self.written_this_turn = true;
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
                if let Some(message) = self.pending.remove(uuid) {
                    self.mailbox.used(message);
                }
                // A turn began: its own result decides.
                self.close_at = None;
            }
            AgentEvent::Finished(_) => {
                // What the mailbox took meanwhile goes in first: it starts the next turn.
                while let Ok(taken) = self.mailbox.taken.try_recv() {
                    self.write(taken);
                }
                let unread = self.written_this_turn && !self.pending.is_empty();
                self.written_this_turn = false;
                match unread {
                    true => self.close_at = Some(tokio::time::Instant::now() + ECHO_WAIT),
                    false => self.close(),
                }
            }
            _ => {}
        }
    }

    /// When stdin is to be closed unless an echo comes first.
    pub(crate) fn close_at(&self) -> Option<tokio::time::Instant> {
        self.close_at
    }

    /// Closes stdin: nothing more is taken or written, and the CLI ends after its pending work.
    pub(crate) fn close(&mut self) {
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

fn nonce(slice: SliceId) -> u32 {
    use std::hash::BuildHasher;
    let hashed = std::collections::hash_map::RandomState::new().hash_one(slice.0);
    (hashed & 0xff_ffff) as u32
}

/// The thread that takes waiting messages and delivers the echoed ones.
#[derive(Debug)]
struct Mailbox {
    /// Cleared when stdin is closed: nothing more is taken.
    open: Arc<AtomicBool>,
    used: Option<std_mpsc::Sender<MessageId>>,
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

    fn used(&self, message: MessageId) {
        if let Some(used) = &self.used {
            let _ = used.send(message);
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
    used: &std_mpsc::Receiver<MessageId>,
    taken: &mpsc::UnboundedSender<Vec<Message>>,
) {
    let mut next_look = Instant::now() + POLL;
    loop {
        match used.recv_timeout(next_look.saturating_duration_since(Instant::now())) {
            Ok(message) => apply(
                room,
                LiveMessages::Used {
                    slice: room.slice,
                    message,
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

fn apply(room: &Mailroom, op: LiveMessages) {
    let op = Op::LiveMessages(op);
    if let Err(e) = room.stores.with(&room.project, |s| {
        s.apply(op, super::ACTOR, room.clock.now())
    }) {
        tracing::warn!(error = %e, "could not record a message delivered");
    }
}
