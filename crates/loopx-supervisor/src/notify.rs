//! Notifications: `[notify] command` in `.loopx/loopx.toml` runs when a person should hear
//! about something — a gate opened, an agent paused or resumed, a slice failed, the goal is
//! done — with the event as one JSON object on its stdin (`docs/cli.md`, "Notifications").
//!
//! The command is the user's own (`sh -c`, in the project root, with loopx's environment), so
//! it may be slow or broken: each runs on a thread of its own, is killed after its timeout, and
//! a failure is logged, never fatal. The loop waits for running notifications before it exits,
//! so the last one ("goal done") is not lost.
//!
//! It runs outside every slice with loopx's whole environment, so it runs only once a person
//! approved its exact text, like a `full` profile (`approval.rs`): a gate loopx opens, bound by
//! the line `approval: notify sha256=HASH` in its context. A command an agent planted (or any
//! edit) has another hash and waits for its own approval; until then nothing runs.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use loopx_adapters::NotifyConfig;
use loopx_kernel::model::Gate;
use loopx_kernel::{Project, Store, Timestamp};
use serde::Serialize;

use crate::errors::SupervisorError;
use crate::run_loop::RunEvent;

/// Slice outcomes a person is not told about: work went fine, or another notification covers
/// it (a usage limit pauses; a question opens a gate).
const UNREMARKABLE: [&str; 4] = ["completed", "progress", "asked", "usage_limited"];

/// What the command reads on stdin.
#[derive(Debug, Serialize)]
pub struct Notification<'a> {
    /// `gate_opened`, `paused`, `resumed`, `slice_failed` or `goal_done`.
    pub kind: &'static str,
    /// The agent concerned, when one is.
    pub agent: Option<&'a str>,
    /// One line for a person: who needs what.
    pub message: String,
    pub project: String,
    /// The loop's event, as `loopx run --json` prints it.
    pub event: &'a RunEvent,
}

/// The project's `loopx.toml`, or why it cannot be used.
pub(crate) fn project_config(
    project: &Project,
) -> Result<loopx_adapters::ProjectConfig, SupervisorError> {
    loopx_adapters::load_project_config(&project.state_dir()).map_err(|e| {
        let details = match &e {
            loopx_adapters::LoadError::Invalid(invalid) => invalid.one_line_each(),
            other => crate::errors::chain(other),
        };
        SupervisorError::ProjectConfig { details }
    })
}

/// Runs the project's notification command.
#[derive(Debug)]
pub struct Notifier {
    config: NotifyConfig,
    project: Project,
    root: PathBuf,
    running: Vec<JoinHandle<()>>,
    /// A person approved this exact command (checked again while not).
    approved: bool,
}

impl Notifier {
    /// The project's notifier, or `None` when `loopx.toml` sets no command.
    pub fn load(project: &Project) -> Result<Option<Notifier>, SupervisorError> {
        let config = project_config(project)?;
        Ok(config.notify.map(|config| Notifier {
            config,
            project: project.clone(),
            root: project.root().to_path_buf(),
            running: Vec::new(),
            approved: false,
        }))
    }

    /// The line that binds an approval to this command's exact text and timeout.
    pub fn approval_line(&self) -> String {
        loopx_domain::approval::notify_approval_line(&self.config)
    }

    /// Whether a person approved this command; opens the approval gate when none was asked
    /// (or the last was withdrawn). `Ok(Some(gate))`: not approved yet (or denied), and the
    /// gate that says so.
    pub fn seek_approval(&mut self, now: Timestamp) -> Result<Option<Gate>, SupervisorError> {
        use loopx_domain::approval::Verdict;
        let store = Store::open(&self.project)?;
        let gates = store.read(|s| s.gates())?;
        match loopx_domain::approval::verdict_of(&gates, &self.approval_line()) {
            Verdict::Approved => {
                self.approved = true;
                Ok(None)
            }
            Verdict::Open(gate) | Verdict::Denied(gate) => Ok(Some(gate)),
            Verdict::Unasked => {
                let ask = loopx_domain::approval::notify_approval_gate(&self.config);
                Ok(Some(store.run(ask, loopx_domain::approval::ACTOR, now)?))
            }
        }
    }

    /// Whether the command may run: approved before, or approved since (read again).
    fn may_run(&mut self) -> bool {
        if !self.approved {
            let gates = Store::open_read(&self.project).and_then(|s| s.read(|s| s.gates()));
            self.approved = gates.is_ok_and(|gates| {
                loopx_domain::approval::verdict_of(&gates, &self.approval_line())
                    == loopx_domain::approval::Verdict::Approved
            });
        }
        self.approved
    }

    /// Notifies about `event` if a person should hear about it and approved the command.
    pub fn notify(&mut self, event: &RunEvent) {
        let Some(note) = notification(event, &self.root) else {
            return;
        };
        if !self.may_run() {
            tracing::info!("the notification command is not approved yet; skipped");
            return;
        }
        let Ok(json) = serde_json::to_vec(&note) else {
            return;
        };
        let command = self.config.command.clone();
        let timeout = self.config.timeout;
        let root = self.root.clone();
        let kind = note.kind;
        self.running.retain(|t| !t.is_finished());
        let spawned = std::thread::Builder::new()
            .name("loopx-notify".into())
            .spawn(move || run(&command, &root, &json, kind, timeout));
        match spawned {
            Ok(thread) => self.running.push(thread),
            Err(e) => tracing::warn!(error = %e, "cannot start the notification command"),
        }
    }

    /// Waits for the notifications still running (each is bounded by its timeout).
    pub fn finish(self) {
        for thread in self.running {
            let _ = thread.join();
        }
    }
}

/// The notification for `event`, if it calls for one.
fn notification<'e>(event: &'e RunEvent, root: &std::path::Path) -> Option<Notification<'e>> {
    let (kind, agent, message) = match event {
        RunEvent::Question {
            agent,
            gate,
            question,
            answer_with,
            ..
        } => (
            "gate_opened",
            Some(agent.as_str()),
            format!("{agent} needs an answer to {gate}: {question} ({answer_with})"),
        ),
        RunEvent::Paused {
            agent,
            until,
            reason,
        } => {
            let until = until.map_or_else(|| "a person resumes it".to_owned(), |u| u.to_string());
            (
                "paused",
                Some(agent.as_str()),
                format!("{agent} is paused until {until}: {reason}"),
            )
        }
        RunEvent::Resumed { agent } => (
            "resumed",
            Some(agent.as_str()),
            format!("{agent} resumed work"),
        ),
        RunEvent::SliceEnded(s) if s.goal_done => (
            "goal_done",
            Some(s.agent.as_str()),
            format!(
                "the goal is done ({} declared it in slice {})",
                s.agent, s.id
            ),
        ),
        RunEvent::SliceEnded(s) if !UNREMARKABLE.contains(&s.outcome.as_str()) => {
            let on = s.todo.map(|t| format!(" on {t}")).unwrap_or_default();
            (
                "slice_failed",
                Some(s.agent.as_str()),
                format!(
                    "{}'s slice {}{on} ended {}: {} (log {})",
                    s.agent, s.id, s.outcome, s.reason, s.log
                ),
            )
        }
        _ => return None,
    };
    Some(Notification {
        kind,
        agent,
        message,
        project: root.display().to_string(),
        event,
    })
}

/// Runs the command with `json` on stdin, killing it (and what it started in its process
/// group) after `timeout`, counted from the spawn: a command that never reads its stdin cannot
/// hold the clock back.
fn run(command: &str, root: &std::path::Path, json: &[u8], kind: &str, timeout: Duration) {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(command)
        .current_dir(root)
        .env("LOOPX_NOTIFY", kind)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut input = json.to_vec();
    input.push(b'\n');
    match loopx_pty::run_bounded(sh, Some(input), timeout) {
        Ok(ran) => match ran.status {
            Some(status) if status.success() => {}
            Some(status) => tracing::warn!(command, %status, "the notification command failed"),
            None => tracing::warn!(
                command,
                ?timeout,
                "the notification command timed out; killed"
            ),
        },
        Err(e) => tracing::warn!(command, error = %e, "the notification command did not start"),
    }
}
