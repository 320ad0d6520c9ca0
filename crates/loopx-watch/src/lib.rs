//! `loopx watch`: every running agent's own screen in one terminal, with the open questions,
//! the monitors and the accounts, and keys for what a person does while watching.
//!
//! # Theory of operation
//!
//! - **A model, a view, a thin loop.** Everything on the screen is plain data in
//!   [`model::Model`]; [`view::draw`] draws it and reads nothing else (tested on ratatui's
//!   `TestBackend`); [`keys::press`] changes it for a key and names the operation to run, if
//!   any. The loop here only moves data between the terminal, the store and the model.
//! - **Panes re-emulate the slice's output.** The supervisor writes each slice's raw output to
//!   its log (`.loopx/slices/<slice>.log`) as it arrives, within 250 ms. A pane follows that
//!   file from its start into a `vt100` terminal of the slice's own size
//!   ([`loopx_pty::TerminalSize`]), the emulator the supervisor uses, so a full-screen agent
//!   looks as it does in its own terminal. What is shown is redacted again (the log is
//!   redacted in full only when the slice ends) and never obeyed: cells become styled text.
//!   The agent's adapter's parser reads the same bytes for the tokens it reports so far; an
//!   adapter whose output is a structured stream (JSON events, no screen) is shown as its
//!   live transcript instead, as `loopx log --follow` shows it. Each agent has a pane for its
//!   newest slice (of the slices' newest 512): a running one, or the last it ran, whose last
//!   screen stays until the agent's next slice, so a slice shorter than a look at the store
//!   is seen too. A log over 4 MiB is followed from its last MiB.
//! - **The store through the application layer.** Questions, monitors, holds and windows are
//!   the `status` and `quota status` snapshots (`--goal` narrows them as it narrows
//!   `status`), read when the kernel's doorbell rings (every commit rings it) and every 2 s
//!   regardless, so a `loopx run` that restarts, or a store that could not be read for a
//!   moment (said on screen), is picked up again without a restart of `watch`.
//! - **Keys are the CLI's operations, as the person running `watch`.** An answer is
//!   `App::answer_gate` (`loopx gate answer`), a pause or resume `App::pause`/`App::resume`
//!   on the agent (`loopx quota pause|resume --agent`). Every key of the mode is listed at
//!   the foot of the screen from the same table the key is matched against.
//! - **Cheap to leave open.** Logs are read every 250 ms, the screen is redrawn at most four
//!   times a second for output (at once for a key or a resize), and a pane's text is redacted
//!   only when its screen changed.

pub mod answer;
pub mod follow;
pub mod keys;
pub mod model;
pub mod screen;
pub mod view;

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use loopx_app::quota::HoldTarget;
use loopx_app::{App, render_error};
use loopx_kernel::GoalId;
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use follow::Follower;
use keys::Command;
use model::{Mode, Model, Transcript};

/// How often the slices' logs are read, and the shortest time between two redraws for output.
const TICK: Duration = Duration::from_millis(250);
/// The store is read at least this often, doorbell or not.
const STORE_EVERY: Duration = Duration::from_secs(2);
/// The most of an ended slice's log the transcript reads.
const TRANSCRIPT_BYTES: u64 = 32 << 20;

/// What `loopx watch` was asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only this goal's slices, questions and monitors.
    pub goal: Option<GoalId>,
}

/// What wakes the loop.
enum Input {
    Key(event::KeyEvent),
    Resize,
    Bell,
}

/// Runs the view in the terminal until the person quits. The caller checked that stdin and
/// stdout are a terminal and that the store opens.
pub fn run(app: App, options: Options) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel();
    read_terminal(tx.clone());
    ring_on_commits(&app, tx);
    let mut model = Model {
        goal: options.goal.map(|g| g.to_string()),
        ..Model::default()
    };
    let follower = Follower::new(app, options.goal);
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, follower, &mut model, &rx);
    ratatui::restore();
    result
}

fn event_loop(
    terminal: &mut DefaultTerminal,
    mut follower: Follower,
    model: &mut Model,
    rx: &Receiver<Input>,
) -> std::io::Result<()> {
    let mut last_store: Option<Instant> = None;
    let mut last_tick = Instant::now();
    let mut last_draw: Option<Instant> = None;
    let mut dirty = true;
    let mut store_due = true;
    let mut store_failed = false;
    loop {
        // A ring (or a key's change) is read at most once a tick: several commits in a row
        // are one read, and none is lost.
        let since = last_store.map(|t| t.elapsed());
        if since.is_none_or(|s| (store_due && s >= TICK) || s >= STORE_EVERY) {
            read_store(&mut follower, model, &mut store_failed);
            last_store = Some(Instant::now());
            store_due = false;
            dirty = true;
        }
        if last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            model.now = follower.app().now();
            dirty |= follower.read_screens(model);
            // Elapsed times move every second.
            dirty |= model.panes.iter().any(|p| p.ended.is_none());
        }
        if dirty && last_draw.is_none_or(|t| t.elapsed() >= TICK) {
            terminal.draw(|f| view::draw(f, model))?;
            last_draw = Some(Instant::now());
            dirty = false;
        }
        let wait = TICK.saturating_sub(last_tick.elapsed());
        match rx.recv_timeout(wait) {
            Ok(Input::Key(key)) => {
                let page = usize::from(terminal.size()?.height.saturating_sub(4)).max(1);
                if let Some(command) = keys::press(model, key, page) {
                    if command == Command::Quit {
                        return Ok(());
                    }
                    store_due |= execute(&follower, model, command);
                }
                terminal.draw(|f| view::draw(f, model))?;
                last_draw = Some(Instant::now());
            }
            Ok(Input::Resize) => {
                terminal.autoresize()?;
                terminal.draw(|f| view::draw(f, model))?;
                last_draw = Some(Instant::now());
            }
            Ok(Input::Bell) => store_due = true,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

/// Reads the store into the model; a failure is said on screen (and the read again, once it
/// works), never the end of `watch`: a `loopx run` restarting, a store being moved.
fn read_store(follower: &mut Follower, model: &mut Model, failed: &mut bool) {
    match follower.read_store(model) {
        Ok(()) if *failed => {
            *failed = false;
            model.say("the store is read again");
        }
        Ok(()) => {}
        Err(e) => {
            *failed = true;
            model.warn(format!(
                "the store could not be read ({}); trying again",
                render_error(&e)
            ));
        }
    }
}

/// Runs a key's operation as the person running `watch`; whether the store changed.
fn execute(follower: &Follower, model: &mut Model, command: Command) -> bool {
    let app = follower.app();
    let done = match command {
        Command::Answer { gate, choice, note } => app
            .answer_gate(gate, choice, note)
            .map(|a| format!("Answered {} as {}", a.gate.id, app.caller().actor)),
        Command::Pause(agent) => hold_target(&agent).and_then(|t| app.pause(&t)).map(|h| {
            format!(
                "Paused {agent} (hold {}): its next slice waits; r resumes",
                h.key
            )
        }),
        Command::Resume(agent) => hold_target(&agent)
            .and_then(|t| app.resume(Some(&t)))
            .map(|keys| format!("Resumed {}", keys.join(", "))),
        Command::Say { agent, text } => agent
            .parse()
            .map_err(loopx_app::AppError::from)
            .and_then(|agent| app.say(agent, text))
            .map(|said| said.sentence()),
        Command::Transcript(slice) => {
            match transcript(app, &slice) {
                Ok(t) => model.mode = Mode::Transcript(t),
                Err(why) => model.warn(why),
            }
            return false;
        }
        Command::Quit => return false,
    };
    match done {
        Ok(text) => model.say(text),
        Err(e) => model.warn(render_error(&e)),
    }
    true
}

fn hold_target(agent: &str) -> Result<HoldTarget, loopx_app::AppError> {
    Ok(HoldTarget::Agent(agent.parse()?))
}

/// An ended slice's transcript, as `loopx log --slice` shows it: a structured stream as its
/// transcript, anything else as the text it printed; redacted, control characters visible.
fn transcript(app: &App, slice: &str) -> Result<Transcript, String> {
    use std::io::Read;
    let path = screen::log_path(app.project(), slice);
    let mut bytes = Vec::new();
    loopx_adapters::open_regular(&path)
        .and_then(|f| f.take(TRANSCRIPT_BYTES).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = loopx_adapters::transcript::render(&bytes)
        .unwrap_or_else(|| loopx_vocab::strip_escapes(&bytes));
    let redactor = loopx_kernel::redact::Redactor::for_process_env(&[]);
    let shown = loopx_vocab::clean_text(redactor.redact(&text).as_bytes());
    Ok(Transcript {
        title: format!("transcript of {slice} (loopx log --slice {slice})"),
        lines: shown.lines().map(str::to_owned).collect(),
        top: 0,
    })
}

/// Keys and resizes, read on a thread of their own.
fn read_terminal(tx: Sender<Input>) {
    std::thread::spawn(move || {
        loop {
            let input = match event::read() {
                Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => Input::Key(key),
                Ok(Event::Resize(..)) => Input::Resize,
                Ok(_) => continue,
                Err(_) => return,
            };
            if tx.send(input).is_err() {
                return;
            }
        }
    });
}

/// The doorbell, on a thread of its own: every commit to the store wakes the loop.
fn ring_on_commits(app: &App, tx: Sender<Input>) {
    let project = app.project().clone();
    std::thread::spawn(move || {
        let listener = loopx_kernel::doorbell::Listener::bind(&project);
        loop {
            if listener.wait(STORE_EVERY) && tx.send(Input::Bell).is_err() {
                return;
            }
        }
    });
}
