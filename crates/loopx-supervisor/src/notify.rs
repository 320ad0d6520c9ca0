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
//!
//! The same notifications go to the webhook (`[notify] webhook_env`, `webhook.rs`), with the
//! URL from the person's environment: it runs nothing, so it needs no approval.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use loopx_adapters::NotifyConfig;
use loopx_kernel::model::Gate;
use loopx_kernel::{Project, Timestamp};

use crate::errors::SupervisorError;
use crate::run_loop::RunEvent;

mod webhook;

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

/// Runs the project's notification command, and posts to its webhook.
#[derive(Debug)]
pub struct Notifier {
    /// `[notify] command`, if set.
    config: Option<NotifyConfig>,
    project: Project,
    root: PathBuf,
    running: Vec<JoinHandle<()>>,
    /// A person approved this exact command (checked again while not).
    approved: bool,
    /// `[notify] webhook_env`: the variable's name, and the URL it holds (`None`: unset).
    webhook_url: Option<(String, Option<String>)>,
    /// The webhook's poster, started at the first notification.
    webhook: Option<webhook::Webhook>,
}

impl Notifier {
    /// The project's notifier, or `None` when `loopx.toml` sets neither a command nor a
    /// webhook. A webhook variable that holds no http(s) URL is a configuration error.
    pub fn load(project: &Project) -> Result<Option<Notifier>, SupervisorError> {
        let config = project_config(project)?;
        let webhook_url = match &config.webhook {
            Some(webhook) => {
                let url = webhook
                    .url(|name| std::env::var(name).ok())
                    .map_err(|details| SupervisorError::ProjectConfig { details })?;
                Some((webhook.env.clone(), url))
            }
            None => None,
        };
        if config.notify.is_none() && webhook_url.is_none() {
            return Ok(None);
        }
        Ok(Some(Notifier {
            config: config.notify,
            project: project.clone(),
            root: project.root().to_path_buf(),
            running: Vec::new(),
            approved: false,
            webhook_url,
            webhook: None,
        }))
    }

    /// Whether the notifications have a command (`[notify] command`).
    pub fn has_command(&self) -> bool {
        self.config.is_some()
    }

    /// Where the webhook stands: whether its URL is set, and that in words (never the URL);
    /// `None` without one.
    pub fn webhook_state(&self) -> Option<(bool, String)> {
        self.webhook_url.as_ref().map(|(env, url)| match url {
            Some(_) => (true, format!("notifications are posted to the webhook in {env}")),
            None => (false, format!(
                "no webhook: `[notify] webhook_env` names {env}, which is not set in loopx's environment"
            )),
        })
    }

    /// Whether a person approved the command; opens the approval gate when none was asked
    /// (or the last was withdrawn). `Ok(Some(gate))`: not approved yet (or denied), and the
    /// gate that says so. `Ok(None)` without a command too.
    pub fn seek_approval(&mut self, now: Timestamp) -> Result<Option<Gate>, SupervisorError> {
        let Some(config) = &self.config else {
            return Ok(None);
        };
        let gate = loopx_domain::notify::seek_approval(&self.project, config, now)?;
        self.approved |= gate.is_none();
        Ok(gate)
    }

    /// Whether the command may run: approved before, or approved since (read again).
    fn may_run(&mut self, config: &NotifyConfig) -> bool {
        if !self.approved {
            self.approved = loopx_domain::notify::approved(&self.project, config);
        }
        self.approved
    }

    /// Notifies about `event` if a person should hear about it: posts it to the webhook, and
    /// runs the command if a person approved it.
    pub fn notify(&mut self, event: &RunEvent) {
        let Some(note) = loopx_domain::notify::notification(event, &self.root) else {
            return;
        };
        if let Some((_, Some(url))) = &self.webhook_url {
            if self.webhook.is_none() {
                self.webhook = webhook::Webhook::start(url.clone());
            }
            if let Some(webhook) = &self.webhook {
                webhook.post(&note);
            }
        }
        let Some(config) = self.config.clone() else {
            return;
        };
        if !self.may_run(&config) {
            tracing::info!("the notification command is not approved yet; skipped");
            return;
        }
        let Ok(json) = serde_json::to_vec(&note) else {
            return;
        };
        let command = config.command;
        let timeout = config.timeout;
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

    /// Waits for the notifications still running (each command is bounded by its timeout,
    /// the webhook by a short grace).
    pub fn finish(self) {
        if let Some(webhook) = self.webhook {
            webhook.finish();
        }
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
