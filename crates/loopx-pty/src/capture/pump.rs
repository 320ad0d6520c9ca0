//! The capture pipeline, two threads in series joined by a bounded channel:
//!
//! - the reader ([`Pump`]) reads the terminal until EOF, writes the log and the text view, and
//!   hands each read to the screen thread;
//! - the screen thread ([`ScreenFeed`]) runs the terminal emulator, sends query answers to the
//!   writer, then passes the chunk on to the slice's control loop.
//!
//! While the reader waits in `read`, a flusher thread (every [`FLUSH_EVERY`]) writes out what
//! the log's buffer holds, and, when nothing was read for 100 ms, releases the bytes the mask
//! holds back, masked, except a tail that could still begin a secret value: a running slice's
//! log is live to within a quarter of a second, and a value printed in pieces with pauses
//! between them is still masked.
//!
//! The emulator costs about as much per byte as reading the terminal, so running it on its own
//! thread lets the two overlap. The reader is the only reader, so nothing else can block on the
//! terminal; everything it sends onwards is bounded. When the emulator falls behind, the full
//! channel makes the reader wait, and so the agent: no byte is skipped (see `lib.rs`).

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};

use super::log::{CappedLog, FLUSH_EVERY, LogCounts};
use super::screen::Screen;
use loopx_vocab::{AnsiStripper, clean_text};

/// Read size; a pseudo-terminal rarely returns more than a few KiB at once.
const READ_SIZE: usize = 64 << 10;
/// Batches in flight from the reader to the screen thread.
pub(crate) const SCREEN_QUEUE: usize = 16;
/// While the screen thread is busy, the reader appends reads to one batch up to this size
/// before it waits. Handing over 4 KiB reads one by one costs a thread wake-up each; batches
/// cost one per 64 KiB. Queue and batch hold at most about 1 MiB, which the emulator works
/// through in about 10 ms: the longest a query answer waits behind a flood.
const SCREEN_BATCH: usize = 64 << 10;

/// One read's worth of output, as seen by the control loop.
#[derive(Debug)]
pub(crate) struct Chunk {
    pub(crate) len: usize,
    /// The bytes, only when someone listens for output events.
    pub(crate) bytes: Option<Vec<u8>>,
}

/// What the reader knows when the terminal reaches EOF.
#[derive(Debug)]
pub(crate) struct CaptureSummary {
    pub(crate) counts: LogCounts,
    /// ANSI-stripped head and tail of the output.
    pub(crate) text: String,
    pub(crate) log_error: Option<std::io::Error>,
    pub(crate) read_error: Option<std::io::Error>,
}

impl CaptureSummary {
    /// The first capture problem, for the report.
    pub(crate) fn error(&self) -> Option<String> {
        match (&self.read_error, &self.log_error) {
            (Some(err), _) => Some(format!("reading the terminal failed: {err}")),
            (None, Some(err)) => Some(format!("writing the log failed: {err}")),
            (None, None) => None,
        }
    }
}

/// Messages to the writer thread.
#[derive(Debug)]
pub(crate) enum InputMsg {
    Bytes(Vec<u8>),
    /// The slice is over: drop the writer.
    Close,
}

/// Where input goes: the terminal's writer thread, and the stdin pipe's when the agent's stdin
/// is a pipe. Each writer thread owns its writer, so a write the agent does not read blocks
/// that thread only.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    pub(crate) terminal: SyncSender<InputMsg>,
    pub(crate) pipe: Option<Pipe>,
}

/// The stdin pipe's writer thread, and whether the caller closed it (what is written after
/// that is refused, not queued behind the close).
#[derive(Debug, Clone)]
pub(crate) struct Pipe {
    pub(crate) input: SyncSender<InputMsg>,
    pub(crate) closed: Arc<AtomicBool>,
}

impl Inputs {
    /// The slice is over: each writer thread drops its writer (a pipe's reader sees
    /// end-of-file), also when its queue is full.
    pub(crate) fn close(&self) {
        let pipe = self.pipe.as_ref().map(|p| &p.input);
        for input in std::iter::once(&self.terminal).chain(pipe) {
            if input.try_send(InputMsg::Close).is_err() {
                let input = input.clone();
                tokio::task::spawn_blocking(move || input.send(InputMsg::Close));
            }
        }
    }
}

pub(crate) struct Pump {
    pub(crate) reader: Box<dyn Read + Send>,
    pub(crate) log: CappedLog,
    /// Masks credentials before they reach the log (and the text view).
    pub(crate) mask: super::mask::Mask,
    /// To the screen thread; dropping it (at EOF) ends that thread.
    pub(crate) screen: SyncSender<Vec<u8>>,
}

impl Pump {
    /// Reads until EOF (Linux reports a hung-up terminal as EIO, which portable-pty maps to
    /// EOF) and returns the summary.
    pub(crate) fn run(self) -> CaptureSummary {
        let Pump {
            mut reader,
            log,
            mask,
            screen,
        } = self;
        let sink = Mutex::new(Sink {
            mask,
            log,
            stripper: AnsiStripper::default(),
            head_text: Vec::new(),
            last_read: std::time::Instant::now(),
        });
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let mut read_error = None;
        std::thread::scope(|scope| {
            let flusher = std::thread::Builder::new()
                .name("loopx-log-flush".into())
                .spawn_scoped(scope, {
                    let sink = &sink;
                    move || {
                        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(FLUSH_EVERY)
                        {
                            sink.lock().unwrap_or_else(PoisonError::into_inner).tick();
                        }
                    }
                });
            // Without a flusher (no thread could be started) the log is whole at the end; it
            // is only not live.
            if let Err(err) = &flusher {
                tracing::warn!(error = %err, "no log flusher: the slice log is written at the end");
            }
            let mut buf = vec![0u8; READ_SIZE];
            let mut batch = Vec::new();
            loop {
                let len = match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(len) => len,
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(err) => {
                        read_error = Some(err);
                        break;
                    }
                };
                let data = &buf[..len];
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(data);
                batch.extend_from_slice(data);
                batch = hand_over(&screen, batch);
            }
            drop(stop);
            if !batch.is_empty() {
                // The screen thread is gone only if it panicked; see `hand_over`.
                let _ = screen.send(batch);
            }
        });
        drop(screen);
        let mut sink = sink.into_inner().unwrap_or_else(PoisonError::into_inner);
        sink.release();
        let Sink {
            log,
            mut stripper,
            mut head_text,
            ..
        } = sink;
        let (counts, tail, log_error) = log.finish();
        let text = if counts.bytes_dropped == 0 {
            stripper.feed(&tail, &mut head_text);
            clean_text(&head_text)
        } else {
            format!(
                "{}\n[loopx: {} bytes dropped]\n{}",
                clean_text(&head_text),
                counts.bytes_dropped,
                strip_tail(&tail)
            )
        };
        CaptureSummary {
            counts,
            text,
            log_error,
            read_error,
        }
    }
}

/// Where the reader's bytes go: masked, into the log and the text view. Shared with the
/// flusher.
struct Sink {
    mask: super::mask::Mask,
    log: CappedLog,
    stripper: AnsiStripper,
    /// The ANSI-stripped head of the output, for the text view.
    head_text: Vec<u8>,
    /// When the reader last took something.
    last_read: std::time::Instant,
}

impl Sink {
    fn take(&mut self, data: &[u8]) {
        let masked = self.mask.feed(data);
        self.write(&masked);
        self.last_read = std::time::Instant::now();
    }

    /// Releases what the mask holds back, masked.
    fn release(&mut self) {
        let rest = self.mask.finish();
        self.write(&rest);
    }

    fn write(&mut self, bytes: &[u8]) {
        let to_head = self.log.write(bytes);
        self.stripper.feed(&bytes[..to_head], &mut self.head_text);
    }

    /// The flusher's turn: after a quiet spell ([`QUIET`]) nothing more will join the
    /// held-back bytes soon, so they are released; then the buffer is written out.
    fn tick(&mut self) {
        if self.last_read.elapsed() >= QUIET {
            let settled = self.mask.release_quiet();
            self.write(&settled);
        }
        self.log.flush();
    }
}

/// How long the terminal must stay silent before the mask's held-back bytes are released.
const QUIET: std::time::Duration = std::time::Duration::from_millis(100);

/// Hands `batch` to the screen thread if it has room, or if the batch is full (then waiting
/// for room); otherwise returns it to be extended by the next read. Nothing is skipped: only
/// the granularity of chunks changes when the screen thread lags.
fn hand_over(screen: &SyncSender<Vec<u8>>, batch: Vec<u8>) -> Vec<u8> {
    // A disconnected channel means the screen thread panicked; keep reading and logging
    // anyway, so the agent never blocks on a full terminal.
    if batch.len() >= SCREEN_BATCH {
        let _ = screen.send(batch);
    } else if let Err(TrySendError::Full(batch)) = screen.try_send(batch) {
        return batch;
    }
    Vec::new()
}

/// The screen thread: emulates the screen from each chunk the reader hands over, answers
/// terminal queries, and passes the chunk on to the control loop. The control loop receives a
/// chunk only after the screen has taken it in, so a screen check after a chunk always sees
/// that chunk's effect.
pub(crate) struct ScreenFeed {
    pub(crate) reads: Receiver<Vec<u8>>,
    pub(crate) screen: Arc<Mutex<Screen>>,
    pub(crate) chunks: tokio::sync::mpsc::Sender<Chunk>,
    pub(crate) input: SyncSender<InputMsg>,
    pub(crate) want_bytes: Arc<AtomicBool>,
}

impl ScreenFeed {
    /// Runs until the reader hangs up.
    pub(crate) fn run(self) {
        for data in self.reads {
            let answers = self
                .screen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .process(&data);
            for answer in answers {
                // A full queue means the agent is not reading its input; an answer it will
                // never read can be dropped.
                let _ = self.input.try_send(InputMsg::Bytes(answer));
            }
            let len = data.len();
            let bytes = self.want_bytes.load(Ordering::Relaxed).then_some(data);
            // The control loop may be gone (slice dropped); keep draining so the agent never
            // blocks on a full terminal while it is being killed.
            let _ = self.chunks.blocking_send(Chunk { len, bytes });
        }
    }
}

/// The tail starts at an arbitrary byte, possibly inside an escape sequence; starting after
/// its first newline resynchronises the stripper.
fn strip_tail(tail: &[u8]) -> String {
    let start = tail
        .iter()
        .position(|&b| b == b'\n')
        .map_or(0, |newline| newline + 1);
    let mut out = Vec::new();
    AnsiStripper::default().feed(&tail[start..], &mut out);
    clean_text(&out)
}

/// The writer thread: owns the terminal's writer for the whole slice, because dropping it
/// sends a newline and EOF to the agent.
pub(crate) fn run_writer(mut writer: Box<dyn std::io::Write + Send>, input: Receiver<InputMsg>) {
    for msg in input {
        match msg {
            InputMsg::Bytes(bytes) => {
                // A write error means the agent is gone; later messages fail the same way.
                let _ = writer.write_all(&bytes).and_then(|()| writer.flush());
            }
            InputMsg::Close => break,
        }
    }
}
