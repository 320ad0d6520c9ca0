//! Notifications: `[notify] command` in `.loopx/loopx.toml` runs when a person should hear
//! about something — a gate opened, an agent paused or resumed, a slice failed, the goal is
//! done — with the event as one JSON object on its stdin (`docs/cli.md`, "Notifications").
//! Which event calls for one, what it says, and that the command runs only once a person
//! approved its exact text are `loopx_domain::notify`'s rules; this runs the command.
//!
//! The command is the user's own (`sh -c`, in the project root, with loopx's environment), so
//! it may be slow or broken: each runs on a thread of its own, is killed after its timeout, and
//! a failure is logged, never fatal. The loop waits for running notifications before it exits,
//! so the last one ("goal done") is not lost.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use loopx_adapters::NotifyConfig;
use loopx_kernel::model::Gate;
use loopx_kernel::{Project, Timestamp};

use crate::errors::SupervisorError;
use crate::run_loop::RunEvent;

pub use loopx_domain::notify::Notification;

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
        let gate = loopx_domain::notify::seek_approval(&self.project, &self.config, now)?;
        self.approved |= gate.is_none();
        Ok(gate)
    }

    /// Whether the command may run: approved before, or approved since (read again).
    fn may_run(&mut self) -> bool {
        if !self.approved {
            self.approved = loopx_domain::notify::approved(&self.project, &self.config);
        }
        self.approved
    }

    /// Notifies about `event` if a person should hear about it and approved the command.
    pub fn notify(&mut self, event: &RunEvent) {
        let Some(note) = loopx_domain::notify::notification(event, &self.root) else {
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
