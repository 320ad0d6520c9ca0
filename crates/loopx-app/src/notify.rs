//! The notification command, set by a person (`loopx notify set`, `loopx notify off`).
//!
//! The command runs outside every slice with loopx's whole environment, so a command found in
//! `.loopx/loopx.toml` runs only once a person approved its exact text. A person who sets it
//! through loopx has said so already: the command is written into the file and approved in the
//! same act, on the record like any approval (`docs/cli.md`, "Notifications"). An agent cannot:
//! the operation is refused inside a slice, and an edit of the file by anyone else still waits
//! for its own approval.

use std::time::Duration;

use loopx_adapters::NotifyConfig;

use crate::{App, AppError, ConfigError, UsageError};

impl App {
    /// Sets the project's notification command to `command`, run with `timeout`, and approves
    /// it as this person; `None` removes it. Refused inside a slice. Returns the command as
    /// it now stands.
    pub fn set_notify(&self, command: Option<(String, Duration)>) -> Result<NotifyNow, AppError> {
        self.refuse_in_slice(|actor| loopx_kernel::Refused::NotifyByAgent { actor })?;
        let config = match command {
            Some((command, _)) if command.trim().is_empty() => {
                return Err(UsageError::EmptyNotify.into());
            }
            Some((command, timeout)) => Some(NotifyConfig { command, timeout }),
            None => None,
        };
        loopx_adapters::set_notify(&self.project().state_dir(), config.as_ref())
            .map_err(ConfigError::NotifyEdit)?;
        if let Some(config) = &config {
            loopx_domain::approval::approve_notify_command(
                self.project(),
                config,
                &self.caller().actor,
                self.now(),
            )?;
        }
        self.notify_now()
    }
}

/// The notification command as `loopx notify show` tells it.
#[derive(Debug, serde::Serialize)]
pub struct NotifyNow {
    pub command: Option<String>,
    pub timeout_secs: Option<u64>,
    /// Where its approval stands, in words.
    pub approval: Option<String>,
    /// `[notify] webhook_env`: the variable that holds the webhook's URL.
    pub webhook_env: Option<String>,
}

impl App {
    /// The notification command set in `loopx.toml`, and where its approval stands.
    pub fn notify_now(&self) -> Result<NotifyNow, AppError> {
        let config = loopx_adapters::load_project_config(&self.project().state_dir())
            .map_err(ConfigError::NotifyLoad)?;
        let webhook_env = config.webhook.map(|w| w.env);
        let Some(notify) = config.notify else {
            return Ok(NotifyNow {
                command: None,
                timeout_secs: None,
                approval: None,
                webhook_env,
            });
        };
        let gates = self.read(|s| s.gates())?;
        Ok(NotifyNow {
            approval: Some(loopx_domain::approval::notify_approval_state(
                &gates, &notify,
            )),
            command: Some(notify.command),
            timeout_secs: Some(notify.timeout.as_secs()),
            webhook_env,
        })
    }
}
