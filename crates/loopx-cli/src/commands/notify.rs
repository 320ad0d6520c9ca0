//! `loopx notify set|off|show`: the notification command, set and approved by a person in one
//! act (`loopx_app::notify`).

use crate::args::NotifyCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, cmd: NotifyCommand) -> Result<(), ExpectedError> {
    match cmd {
        NotifyCommand::Set { command, timeout } => {
            let timeout = match timeout {
                Some(text) => super::duration("--timeout", &text)?,
                None => loopx_adapters::DEFAULT_NOTIFY_TIMEOUT,
            };
            let set = ctx.app()?.set_notify(Some((command, timeout)))?;
            show(ctx, &set)
        }
        NotifyCommand::Off => {
            let set = ctx.app()?.set_notify(None)?;
            if ctx.json {
                return ctx.json_out(&set);
            }
            ctx.line("Notifications are off: [notify] removed from .loopx/loopx.toml")
        }
        NotifyCommand::Show => {
            let now = ctx.app()?.notify_now()?;
            show(ctx, &now)
        }
    }
}

/// `Notifications run `CMD` (killed after 10s): approved in q3`.
fn show(ctx: &mut Ctx, now: &loopx_app::notify::NotifyNow) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(now);
    }
    match &now.command {
        Some(command) => ctx.line(format!(
            "Notifications run `{command}` (killed after {}s): {}",
            now.timeout_secs.unwrap_or_default(),
            now.approval.as_deref().unwrap_or_default()
        ))?,
        None => ctx.line(
            "No notification command (set one: loopx notify set 'notify-send loopx \"$(jq -r .message)\"')",
        )?,
    }
    match &now.webhook_env {
        // Whether it is set where `notify show` runs; `loopx run` reads its own environment.
        Some(env) => ctx.line(format!(
            "Notifications are posted to the webhook whose URL is in {env} ({} in this shell)",
            match std::env::var_os(env).is_some_and(|v| !v.is_empty()) {
                true => "set",
                false => "not set",
            }
        )),
        None => Ok(()),
    }
}
