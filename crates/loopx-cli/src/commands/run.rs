//! `loopx run`: every agent's loop until the goal is done (`docs/design/run-loop.md`), and
//! `loopx run --once`: one decision and at most one slice of one agent.
//!
//! The lifecycle lives in `loopx-supervisor`; this prints its progress, one line per event on
//! stderr (with `--json`, the loop's events as JSON lines on stdout, and `--once`'s one object
//! at the end; shapes in `docs/cli.md`), and maps how the loop ended to an exit code.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use loopx_kernel::Timestamp;
use loopx_quota::DecisionKind;
use loopx_supervisor::{
    EndReason, OnGate, Once, RunEvent, RunLoop, RunOnce, Shutdown, SliceSummary,
};
use serde::Serialize;

use crate::args::{OnGateArg, RunArgs};
use crate::context::{Ctx, slice_id};
use crate::errors::ExpectedError;
use crate::exit_code;

mod lines;

pub(crate) use lines::event_line;
use lines::{at_and_in, step_line};

/// `--json`: the decision, and the slice when one ran.
#[derive(Debug, Serialize)]
struct RunJson<'a> {
    format_version: u32,
    agent: &'a str,
    /// Which way it went: `decided`, `refused` (by quota), `contended` (a peer got there
    /// first), `stopped` or `ran`.
    outcome: &'static str,
    /// What the agent does now.
    decision: DecisionKind,
    reason: &'a str,
    wake_at: Option<Timestamp>,
    gate: Option<GateJson<'a>>,
    slice: Option<&'a SliceSummary>,
    /// Orphaned slices of dead supervisors closed before deciding.
    recovered: &'a [loopx_supervisor::Recovered],
}

#[derive(Debug, Serialize)]
struct GateJson<'a> {
    id: loopx_kernel::GateId,
    question: &'a str,
}

pub fn run(ctx: &mut Ctx, args: RunArgs) -> Result<(), ExpectedError> {
    // An agent that starts a supervisor would run agents of its own, outside every limit.
    if let Some(slice) = slice_id() {
        return Err(ExpectedError::Usage(format!(
            "`loopx run` cannot run inside a slice (LOOPX_SLICE={slice})"
        )));
    }
    let loopx_exe = std::env::current_exe()
        .map_err(|e| ExpectedError::Usage(format!("cannot find the loopx executable: {e}")))?;
    if args.once {
        if args.agent.len() > 1 {
            return Err(ExpectedError::Usage(
                "`loopx run --once` runs one agent: give `--agent` at most once".to_owned(),
            ));
        }
        return run_once(ctx, args.agent.into_iter().next(), loopx_exe);
    }
    let run_for = args
        .run_for
        .as_deref()
        .map(|text| super::duration("--for", text))
        .transpose()?;
    let shutdown = Arc::new(Shutdown::new());
    loopx_supervisor::handle_signals(Arc::clone(&shutdown))
        .map_err(|e| ExpectedError::Usage(format!("cannot handle signals: {e}")))?;
    let req = RunLoop {
        project: ctx.project()?,
        agents: args.agent,
        loopx_exe,
        max_slices: args.max_slices,
        run_for,
        on_gate: match args.on_gate {
            Some(OnGateArg::Exit) => OnGate::Exit,
            Some(OnGateArg::Wait) | None => OnGate::Wait,
        },
        shutdown,
        world: ctx.world(),
    };
    let log = ctx
        .logging
        .as_ref()
        .and_then(|logging| logging.start_run_log(&req.project, &secret_names(ctx)));
    let json = ctx.json;
    // Two supervisors may share a project (each agent still runs one slice at a time), but a
    // second one started by mistake should be said.
    let (_presence, peers) = loopx_domain::presence::register(&req.project);
    for peer in &peers {
        say(&format!(
            "note: another `loopx run` works on this project ({peer}); both will run, and no agent runs two slices at once"
        ));
    }
    let mut notifier = notifier(&req.project)?;
    let lark = start_lark(ctx, &req.loopx_exe)?;
    // A person watching the run in a terminal hears a question open (the line says which).
    let bell = !json && std::io::stderr().is_terminal();
    let end = loopx_supervisor::run_loop(&req, &mut |event| {
        if let Some(notifier) = notifier.as_mut() {
            notifier.notify(event);
        }
        if json {
            let mut out = std::io::stdout().lock();
            if serde_json::to_writer(&mut out, event).is_ok() {
                let _ = writeln!(out);
                let _ = out.flush();
            }
        } else {
            if bell && matches!(event, RunEvent::Question { .. }) {
                ring();
            }
            say(&event_line(event, req.world.clock.now()));
        }
    });
    if let Some(notifier) = notifier {
        notifier.finish();
    }
    if let Some(lark) = lark {
        lark.finish(LARK_LAST_PASS);
    }
    note_log(ctx, &req.project, log.as_deref());
    let end = end?;
    if end.reason == EndReason::Goal && !json {
        // A worktree goal's work is on its branch: say how to bring it in.
        let goal = ctx.app()?.read(|s| Ok(s.goals()?.pop()))?;
        if let Some(goal) = goal.filter(|g| g.isolation.is_worktree()) {
            for line in loopx_app::goal::merge_commands(&goal) {
                say(&line);
            }
        }
    }
    match end.reason {
        EndReason::Goal | EndReason::MaxSlices | EndReason::Time => Ok(()),
        EndReason::Gate => Err(ExpectedError::Reported {
            summary: "halted: a person must answer a gate (`loopx gate list`)".to_owned(),
            code: exit_code::HALTED_ON_GATE,
        }),
        // Ctrl-C on a run that was only waiting stops it, and that is all: no error.
        EndReason::Shutdown if !end.stopped_slices => Ok(()),
        EndReason::Shutdown => Err(ExpectedError::Reported {
            summary: "interrupted: running slices were stopped and recorded".to_owned(),
            code: exit_code::INTERRUPTED,
        }),
        EndReason::Error => Err(end.error.map_or_else(
            || ExpectedError::Usage("no agent could run".to_owned()),
            ExpectedError::Supervisor,
        )),
    }
}

/// `loopx run --once`.
///
/// Signals are handled like the full loop's: SIGINT or SIGTERM stops the running slice
/// gracefully (a second one at once), and nothing is claimed or spawned once a stop was
/// requested; the exit code is then `INTERRUPTED`.
fn run_once(
    ctx: &mut Ctx,
    agent: Option<String>,
    loopx_exe: std::path::PathBuf,
) -> Result<(), ExpectedError> {
    let shutdown = Arc::new(Shutdown::new());
    loopx_supervisor::handle_signals(Arc::clone(&shutdown))
        .map_err(|e| ExpectedError::Usage(format!("cannot handle signals: {e}")))?;
    let req = RunOnce {
        project: ctx.project()?,
        agent,
        loopx_exe,
        shutdown: Arc::clone(&shutdown),
        world: ctx.world(),
    };
    let log = ctx
        .logging
        .as_ref()
        .and_then(|logging| logging.start_run_log(&req.project, &secret_names(ctx)));
    let recovered = loopx_supervisor::recover_in(&req.project, &req.world)?;
    for r in &recovered {
        say(&event_line(
            &RunEvent::Recovered(r.clone()),
            req.world.clock.now(),
        ));
    }
    // A cron-driven `run --once` is the only supervisor some setups have: it polls the due
    // monitors first, so that the work after a met one can be decided on now.
    let polled =
        loopx_supervisor::poll::poll_due(&req.project, &req.world, &req.loopx_exe, &|| {
            shutdown.requested()
        })?;
    for poll in polled.polls {
        say(&event_line(&RunEvent::Polled(poll), req.world.clock.now()));
    }
    let notifier = notifier(&req.project)?;
    let once = loopx_supervisor::run_once(&req, &mut |step| {
        say(&step_line(&step, req.world.clock.now()))
    })?;
    if let (Some(mut notifier), Once::Ran { slice, .. }) = (notifier, &once) {
        notify_slice(&mut notifier, ctx.app().ok().as_ref(), slice);
        notifier.finish();
    }
    let report = once.report();
    match &once {
        Once::Decided { .. } => {
            if let Some((id, question)) = report.gate {
                say(&format!("question {id}: {question}"));
                let options = ctx
                    .app()
                    .ok()
                    .and_then(|app| app.gate(id).ok())
                    .map(|gate| gate.options)
                    .unwrap_or_default();
                say(&format!(
                    "answer with: {}",
                    loopx_kernel::model::answer_command(&id.to_string(), &options)
                ));
            }
        }
        Once::Refused { agent, until, .. } => {
            let until = until.map_or_else(
                || "resumed".to_owned(),
                |at| at_and_in(at, req.world.clock.now()),
            );
            say(&format!(
                "{agent}: wait until {until}: quota refused the slice: {}",
                report.reason
            ));
        }
        Once::Contended { agent, .. } => say(&format!("{agent}: {}", report.reason)),
        Once::Stopped { agent, .. } => say(&format!("{agent}: {}: no slice ran", report.reason)),
        Once::Ran { .. } => {}
    }
    note_log(ctx, &req.project, log.as_deref());
    if ctx.json {
        ctx.json_out(&RunJson {
            format_version: 1,
            agent: report.agent,
            outcome: report.outcome,
            decision: report.kind,
            reason: &report.reason,
            wake_at: report.wake_at,
            gate: report.gate.map(|(id, question)| GateJson { id, question }),
            slice: report.slice,
            recovered: &recovered,
        })?;
    }
    if let Some(why) = shutdown.reason() {
        return Err(ExpectedError::Reported {
            summary: format!("interrupted by {why}: the slice was stopped and recorded"),
            code: exit_code::INTERRUPTED,
        });
    }
    // A full disk fails every slice after this one: the person must hear of it.
    if let Some((id, why)) = report
        .slice
        .and_then(|s| Some((&s.id, s.disk_full.as_ref()?)))
    {
        return Err(ExpectedError::Reported {
            summary: format!("slice {id} failed: {why}"),
            code: exit_code::STORE,
        });
    }
    Ok(())
}

/// `--once` notifies about its own slice: a failure, the goal done, a question it raised.
/// Decisions are not notified: `--once` is often run from a timer, and would repeat them.
fn notify_slice(
    notifier: &mut loopx_supervisor::Notifier,
    app: Option<&loopx_app::App>,
    slice: &SliceSummary,
) {
    notifier.notify(&RunEvent::SliceEnded(Box::new(slice.clone())));
    let Some(gate) = slice.gate else {
        return;
    };
    if let Some(gate) = app.and_then(|app| app.gate(gate).ok()) {
        notifier.notify(&RunEvent::Question {
            agent: slice.agent.clone(),
            answer_with: gate.answer_command(),
            gate: gate.id,
            question: gate.question,
            options: gate.options,
        });
    }
}

/// A progress line on stderr: stdout carries results only.
/// The project's notifier; says so when its command waits for a person's approval.
fn notifier(
    project: &loopx_kernel::Project,
) -> Result<Option<loopx_supervisor::Notifier>, ExpectedError> {
    let Some(mut notifier) = loopx_supervisor::Notifier::load(project)? else {
        return Ok(None);
    };
    if let Some((_, webhook)) = notifier.webhook_state() {
        say(&webhook);
    }
    match notifier.seek_approval(project.store_settings().clock.now())? {
        None => {}
        Some(gate) if gate.state == loopx_kernel::model::GateState::Open => say(&format!(
            "notifications are off: the command in .loopx/loopx.toml waits for a person's approval in {} (answer with: loopx gate answer {} approve)",
            gate.id, gate.id
        )),
        Some(gate) => say(&format!(
            "notifications are off: the command in .loopx/loopx.toml was denied in {}; edit it to ask again",
            gate.id
        )),
    }
    Ok(Some(notifier))
}

/// A line of the run's progress, for the person watching, and for the run's log file (target
/// [`crate::logging::RUN_TARGET`], which stderr's own log leaves out so that `-v` does not print
/// it twice).
/// What the run's log hides besides credential-like names: the secrets its agents' profiles
/// declare. A store that cannot be read hides only those (the run reports the store itself).
/// With `[lark]` set, keeps the Lark board in step and hears its card callbacks while the run
/// runs (`docs/lark.md`). A missing secret leaves that part out, and says so; an address for
/// the callbacks that cannot be bound stops the run before it starts.
fn start_lark(
    ctx: &Ctx,
    loopx_exe: &std::path::Path,
) -> Result<Option<loopx_lark::service::Started>, ExpectedError> {
    let app = ctx.app()?;
    let Some(mut lark) = app.lark_config()? else {
        return Ok(None);
    };
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let Some(app_secret) = env("LOOPX_LARK_APP_SECRET") else {
        say(
            "note: [lark] is set but LOOPX_LARK_APP_SECRET is not: the Lark board is not kept in step",
        );
        return Ok(None);
    };
    let callback = env("LOOPX_LARK_VERIFICATION_TOKEN").zip(env("LOOPX_LARK_ENCRYPT_KEY"));
    if lark.questions.is_some() && callback.is_none() {
        say(
            "note: [lark.questions] is set but LOOPX_LARK_VERIFICATION_TOKEN and LOOPX_LARK_ENCRYPT_KEY are not both: questions are not posted to Lark (a press could not be checked)",
        );
        lark.questions = None;
    }
    // Before any slice: a line added to `.loopx/.gitignore` while one runs would be its change.
    loopx_kernel::project::ignore_in_git(app.project().root(), "/projections/");
    let secrets = loopx_lark::service::Secrets {
        app_secret,
        callback,
    };
    let started = loopx_lark::service::start(
        app.project().clone(),
        Some(loopx_exe.to_path_buf()),
        lark,
        secrets,
    )
    .map_err(ExpectedError::Usage)?;
    if let Some(addr) = started.listening {
        say(&format!(
            "Lark: questions are answered at http://{addr}{}",
            loopx_lark::listen::CALLBACK_PATH
        ));
    }
    Ok(Some(started))
}

/// How long a run that ends waits for the Lark board's last pass.
const LARK_LAST_PASS: std::time::Duration = std::time::Duration::from_secs(15);

fn secret_names(ctx: &Ctx) -> Vec<String> {
    let mut names = ctx
        .app()
        .and_then(|app| app.secret_env_names().map_err(Into::into))
        .unwrap_or_default();
    // The Lark board's secrets are masked in the run's log like a profile's.
    names.extend(
        [
            "LOOPX_LARK_APP_SECRET",
            "LOOPX_LARK_VERIFICATION_TOKEN",
            "LOOPX_LARK_ENCRYPT_KEY",
        ]
        .map(str::to_owned),
    );
    names
}

/// Says where the warnings went that the run's log took and stderr did not show.
fn note_log(ctx: &Ctx, project: &loopx_kernel::Project, log: Option<&std::path::Path>) {
    let note = ctx.logging.as_ref().zip(log);
    if let Some(note) = note.and_then(|(l, log)| l.held_back(project.root(), log)) {
        say(&note);
    }
}

/// The terminal's bell, on stderr (the line after it says why).
fn ring() {
    let mut err = std::io::stderr();
    let _ = err.write_all(b"\x07");
    let _ = err.flush();
}

fn say(line: &str) {
    tracing::info!(target: "loopx::run", "{line}");
    let _ = writeln!(
        std::io::stderr(),
        "{}",
        crate::output::safe_line(line, false)
    );
}
