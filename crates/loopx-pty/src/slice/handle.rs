//! The caller's side of a running slice: spawn it, steer it, observe it, wait for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::sync::{mpsc, oneshot};

use super::control::{Command, Control, KillGuard};
use super::report::{ChildStatus, SliceEvent, SliceReport, StopReason};
use crate::capture::CappedLog;
use crate::capture::pump::{
    CaptureSummary, Chunk, InputMsg, Inputs, Pipe, Pump, SCREEN_QUEUE, ScreenFeed, run_writer,
};
use crate::capture::screen::Screen;
use crate::errors::{InputError, SpawnError, WaitError};
use crate::launch::launch;
use crate::spec::{LaunchSpec, SliceId};
use crate::sweep::SliceProcesses;

/// Output chunks in flight between the screen thread and the control loop.
const CHUNK_QUEUE: usize = 16;
/// Events in flight to the caller.
const EVENT_QUEUE: usize = 64;
/// Input writes (and terminal query answers) in flight to the writer thread.
const INPUT_QUEUE: usize = 256;

/// Starts a slice: checks the spec, spawns the agent in a new pseudo-terminal as a session
/// leader, and supervises it on a task of the current tokio runtime.
///
/// Returns the handle and the event stream. Read the events or drop them: while a
/// [`SliceEvents`] is held but not read, output is not consumed (the agent blocks on its
/// terminal, and the idle limit may fire). Dropping the [`RunningSlice`] kills the slice.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use loopx_pty::{LaunchSpec, SliceEvent, SliceId, spawn_slice};
///
/// let mut spec = LaunchSpec::new(SliceId::new("s1")?, "claude", "/work/repo", "/tmp/s1.log");
/// spec.env.inherit = vec!["PATH".into(), "HOME".into()];
/// spec.limits.wall = Some(Duration::from_secs(30 * 60));
/// spec.limits.idle = Some(Duration::from_secs(5 * 60));
/// let (mut slice, mut events) = spawn_slice(spec)?;
/// let control = slice.control();
/// while let Some(event) = events.next().await {
///     match event {
///         SliceEvent::Output(bytes) => { /* feed the adapter's parser */ }
///         SliceEvent::WaitingForInput { screen } => { /* open a gate; never answer */ }
///         _ => {}
///     }
///     # control.stop();
/// }
/// let report = slice.wait().await?;
/// println!("{:?}, {} leftovers", report.exit, report.leftover_count);
/// # Ok(()) }
/// ```
pub fn spawn_slice(spec: LaunchSpec) -> Result<(RunningSlice, SliceEvents), SpawnError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| SpawnError::NoRuntime)?;
    // The log is created first: a failure after spawning would have to undo the spawn.
    let log = CappedLog::create(&spec.log.path, spec.log.head_bytes, spec.log.tail_bytes).map_err(
        |source| SpawnError::Log {
            path: spec.log.path.clone(),
            source,
        },
    )?;
    let launched = launch(&spec)?;
    let started = tokio::time::Instant::now();
    let leader = i32::try_from(launched.pid).expect("pids fit in i32");
    let ended = Arc::new(AtomicBool::new(false));
    tracing::info!(slice = %spec.slice_id, pid = leader, program = %launched.program.display(), "agent spawned");

    let writers = Writers {
        terminal: launched.writer,
        stdin: launched.stdin,
    };
    let threads = start_threads(&spec, leader, launched.reader, writers, log)?;
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::channel(EVENT_QUEUE);
    let (report_tx, report_rx) = oneshot::channel();
    let slice_id = spec.slice_id.clone();
    let control = Control {
        guard: KillGuard {
            procs: SliceProcesses::of_slice(leader, &slice_id),
            leader,
            armed: true,
        },
        program: launched.program,
        spec,
        started,
        chunks: threads.chunks,
        summary: threads.summary,
        exit: threads.exit,
        commands: command_rx,
        events: Some(event_tx),
        want_bytes: threads.want_bytes,
        screen: threads.screen,
        input: threads.input.clone(),
        ended: Arc::clone(&ended),
        master: launched.master,
        report: report_tx,
    };
    runtime.spawn(control.run());
    let control = SliceControl {
        slice_id: slice_id.clone(),
        commands: command_tx,
        input: threads.input,
        ended,
    };
    Ok((
        RunningSlice {
            slice_id,
            pid: launched.pid,
            control,
            report: Some(report_rx),
        },
        SliceEvents { rx: event_rx },
    ))
}

/// What input is written with: the terminal's writer, and the stdin pipe when there is one.
struct Writers {
    terminal: Box<dyn std::io::Write + Send>,
    stdin: Option<std::process::ChildStdin>,
}

/// The channels to the per-slice threads.
struct Threads {
    exit: oneshot::Receiver<Option<ChildStatus>>,
    input: Inputs,
    chunks: mpsc::Receiver<Chunk>,
    summary: oneshot::Receiver<CaptureSummary>,
    screen: Arc<Mutex<Screen>>,
    want_bytes: Arc<AtomicBool>,
}

/// Starts the waiter (reaps the leader by pid), the writers (one owns the terminal's writer,
/// one the stdin pipe when there is one), the screen thread and the reader (capture). If one
/// cannot start, the agent is killed before returning.
fn start_threads(
    spec: &LaunchSpec,
    leader: i32,
    reader: Box<dyn std::io::Read + Send>,
    writers: Writers,
    log: CappedLog,
) -> Result<Threads, SpawnError> {
    let (exit_tx, exit) = oneshot::channel();
    spawn_thread("wait", &spec.slice_id, move || {
        let _ = exit_tx.send(reap(leader));
    })
    .inspect_err(|_| abort_launch(leader, true))?;

    let (input, input_rx) = std::sync::mpsc::sync_channel(INPUT_QUEUE);
    let terminal = writers.terminal;
    spawn_thread("write", &spec.slice_id, move || {
        run_writer(terminal, input_rx)
    })
    .inspect_err(|_| abort_launch(leader, false))?;
    let pipe = match writers.stdin {
        Some(stdin) => Some(
            start_pipe_writer(stdin, &spec.slice_id)
                .inspect_err(|_| abort_launch(leader, false))?,
        ),
        None => None,
    };

    let screen = Arc::new(Mutex::new(Screen::new(spec.size)));
    let want_bytes = Arc::new(AtomicBool::new(true));
    let (chunk_tx, chunks) = mpsc::channel(CHUNK_QUEUE);
    let (reads_tx, reads) = std::sync::mpsc::sync_channel(SCREEN_QUEUE);
    let feed = ScreenFeed {
        reads,
        screen: Arc::clone(&screen),
        chunks: chunk_tx,
        input: input.clone(),
        want_bytes: Arc::clone(&want_bytes),
    };
    spawn_thread("screen", &spec.slice_id, move || feed.run())
        .inspect_err(|_| abort_launch(leader, false))?;

    let (summary_tx, summary) = oneshot::channel();
    let pump = Pump {
        reader,
        log,
        mask: crate::capture::mask::Mask::new(&spec.log.mask),
        screen: reads_tx,
    };
    spawn_thread("read", &spec.slice_id, move || {
        let _ = summary_tx.send(pump.run());
    })
    .inspect_err(|_| abort_launch(leader, false))?;
    Ok(Threads {
        exit,
        input: Inputs {
            terminal: input,
            pipe,
        },
        chunks,
        summary,
        screen,
        want_bytes,
    })
}

/// The thread that owns the agent's stdin pipe: what is written to it is queued there.
fn start_pipe_writer(stdin: std::process::ChildStdin, slice: &SliceId) -> Result<Pipe, SpawnError> {
    let (input, pipe_rx) = std::sync::mpsc::sync_channel(INPUT_QUEUE);
    spawn_thread("stdin", slice, move || run_writer(Box::new(stdin), pipe_rx))?;
    Ok(Pipe {
        input,
        closed: Arc::new(AtomicBool::new(false)),
    })
}

fn spawn_thread(
    name: &'static str,
    slice: &SliceId,
    body: impl FnOnce() + Send + 'static,
) -> Result<(), SpawnError> {
    std::thread::Builder::new()
        .name(format!("loopx-pty-{name}-{slice}"))
        .spawn(body)
        .map(drop)
        .map_err(|source| SpawnError::Thread { name, source })
}

/// Undoes a spawn whose supervision could not be set up.
fn abort_launch(leader: i32, reap_here: bool) {
    let _ = killpg(Pid::from_raw(leader), Signal::SIGKILL);
    if reap_here {
        let _ = reap(leader);
    }
}

/// Waits for the leader by pid. `None` if another waiter in this process took its status.
fn reap(leader: i32) -> Option<ChildStatus> {
    let status = reap_leader(leader);
    crate::children::waited(leader);
    status
}

fn reap_leader(leader: i32) -> Option<ChildStatus> {
    loop {
        match waitpid(Pid::from_raw(leader), None) {
            Ok(WaitStatus::Exited(_, code)) => return Some(ChildStatus::Exited(code)),
            Ok(WaitStatus::Signaled(_, signal, _)) => return Some(ChildStatus::Signaled(signal)),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(err) => {
                tracing::warn!(pid = leader, error = %err, "could not reap the agent");
                return None;
            }
        }
    }
}

/// A cloneable remote control for a running slice; usable from any thread or task.
#[derive(Debug, Clone)]
pub struct SliceControl {
    slice_id: SliceId,
    commands: mpsc::UnboundedSender<Command>,
    input: Inputs,
    /// Set before the report is sent: the writer thread may outlive the slice by a moment, so
    /// its open channel alone would accept input after the end.
    ended: Arc<AtomicBool>,
}

impl SliceControl {
    /// Stops the slice: SIGTERM to all of it, the grace period, then SIGKILL. Calling it
    /// again while it is stopping kills at once. Does nothing once the slice has ended.
    pub fn stop(&self) {
        let _ = self.commands.send(Command::Stop(StopReason::Requested));
    }

    /// Kills the slice at once (SIGKILL, no grace period).
    pub fn kill_now(&self) {
        let _ = self.commands.send(Command::KillNow(StopReason::Requested));
    }

    /// Types `bytes` into the agent's terminal (e.g. `b"y\r"`). Never blocks: fails with
    /// [`InputError::Full`] when the agent has not read earlier input.
    pub fn send_input(&self, bytes: impl Into<Vec<u8>>) -> Result<(), InputError> {
        self.send(&self.input.terminal, InputMsg::Bytes(bytes.into()))
    }

    /// Writes `bytes` to the agent's stdin pipe ([`Stdin::Pipe`](crate::Stdin::Pipe)), in the
    /// order of the calls. Never blocks: fails with [`InputError::Full`] when the agent has not
    /// read earlier input, and with [`InputError::NoPipe`] when its stdin is no pipe or was
    /// closed.
    pub fn write_stdin(&self, bytes: impl Into<Vec<u8>>) -> Result<(), InputError> {
        let pipe = self.open_pipe()?;
        self.send(&pipe.input, InputMsg::Bytes(bytes.into()))
    }

    /// Closes the agent's stdin pipe after what was written before: it reads end-of-file once
    /// it has read that. Nothing can be written after it. Never blocks: while the agent has
    /// not read earlier input, a thread of its own waits to queue the close.
    pub fn close_stdin(&self) -> Result<(), InputError> {
        let pipe = self.open_pipe()?;
        pipe.closed.store(true, Ordering::SeqCst);
        match self.send(&pipe.input, InputMsg::Close) {
            Err(InputError::Full { .. }) => {
                let input = pipe.input.clone();
                std::thread::Builder::new()
                    .name(format!("loopx-pty-close-{}", self.slice_id))
                    .spawn(move || input.send(InputMsg::Close))
                    .map(drop)
                    .map_err(|_| InputError::Full {
                        slice: self.slice_id.to_string(),
                    })
            }
            sent => sent,
        }
    }

    fn open_pipe(&self) -> Result<&Pipe, InputError> {
        match &self.input.pipe {
            Some(pipe) if !pipe.closed.load(Ordering::SeqCst) => Ok(pipe),
            _ => Err(self.no_pipe()),
        }
    }

    fn no_pipe(&self) -> InputError {
        InputError::NoPipe {
            slice: self.slice_id.to_string(),
        }
    }

    fn send(&self, to: &SyncSender<InputMsg>, msg: InputMsg) -> Result<(), InputError> {
        let slice = self.slice_id.to_string();
        if self.ended.load(Ordering::SeqCst) {
            return Err(InputError::Ended { slice });
        }
        to.try_send(msg).map_err(|err| match err {
            TrySendError::Full(_) => InputError::Full { slice },
            TrySendError::Disconnected(_) => InputError::Ended { slice },
        })
    }
}

/// A running slice. Dropping it before the slice ends kills the slice (SIGKILL and sweep).
#[derive(Debug)]
pub struct RunningSlice {
    slice_id: SliceId,
    pid: u32,
    control: SliceControl,
    report: Option<oneshot::Receiver<SliceReport>>,
}

impl RunningSlice {
    /// The slice id.
    pub fn slice_id(&self) -> &SliceId {
        &self.slice_id
    }

    /// The agent's pid, which is also its process group and session id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// A cloneable control (stop, kill, input) that does not borrow the handle.
    pub fn control(&self) -> SliceControl {
        self.control.clone()
    }

    /// See [`SliceControl::stop`].
    pub fn stop(&self) {
        self.control.stop();
    }

    /// See [`SliceControl::kill_now`].
    pub fn kill_now(&self) {
        self.control.kill_now();
    }

    /// See [`SliceControl::send_input`].
    pub fn send_input(&self, bytes: impl Into<Vec<u8>>) -> Result<(), InputError> {
        self.control.send_input(bytes)
    }

    /// Waits until the slice has ended and been swept. Cancel-safe: polling it again after
    /// a cancelled call resumes the wait. After it returned once, it fails.
    pub async fn wait(&mut self) -> Result<SliceReport, WaitError> {
        let lost = || WaitError {
            slice: self.slice_id.to_string(),
        };
        let rx = self.report.as_mut().ok_or_else(lost)?;
        let report = rx.await.map_err(|_| lost());
        self.report = None;
        report
    }
}

impl Drop for RunningSlice {
    fn drop(&mut self) {
        if self.report.is_some() {
            let _ = self
                .control
                .commands
                .send(Command::KillNow(StopReason::HandleDropped));
        }
    }
}

/// The events of one slice, in order; ends after [`SliceEvent::Exited`].
#[derive(Debug)]
pub struct SliceEvents {
    rx: mpsc::Receiver<SliceEvent>,
}

impl SliceEvents {
    /// The next event, or `None` once the slice has ended.
    pub async fn next(&mut self) -> Option<SliceEvent> {
        self.rx.recv().await
    }
}
