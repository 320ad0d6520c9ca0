//! # Theory of operation
//!
//! `loopx-cli` is the `loopx` binary: it parses the command line (clap, with the vocabulary's
//! typed words), installs the process's log (`logging.rs`) and panic hook, finds the project,
//! runs the command and prints the result for people or, with `--json`, for scripts. A person's
//! command opens the store for one operation; `loopx run` hands over to `loopx-supervisor` for
//! as long as it runs. It also holds `loopx sim`'s front end; the board (`loopx-board`) and the demo
//! agent (`loopx-demo-agent`) are crates of their own that it starts.
//!
//! The kernel holds the rules of state (every check and transition); the application layer
//! (`loopx-app`) holds each operation a person or an agent makes, with the git work around it.
//! The CLI builds the `App` (the project and the caller) and its settings from the environment
//! (`settings.rs`) at the edge, calls the operation and renders its result. Errors become one `error:` message on stderr and a documented exit code (`exit_code.rs`,
//! `docs/cli.md`); a broken pipe on stdout exits 0 quietly.

mod args;
mod commands;
mod context;
pub mod errors;
pub mod exit_code;
mod logging;
mod output;
mod settings;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

pub use args::Cli;

/// Runs `loopx` with the process's arguments.
pub fn main() -> ExitCode {
    if let Some(code) = internal_command() {
        return code;
    }
    // Other processes of this user (an agent outside a PID namespace) cannot read loopx's
    // memory or its environment, which holds variables no agent was given (not dumpable on
    // Linux, PT_DENY_ATTACH on macOS). Reset by `execve`, so agents and git are unaffected.
    let _ = loopx_os::forbid_inspection();
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit_code::USAGE
            } else {
                exit_code::OK
            });
        }
    };
    let json = cli.json;
    let mut ctx = context::Ctx::new(&cli);
    let quiet = matches!(cli.command, args::Command::Sim(_));
    ctx.logging = Some(logging::Logging::install(cli.verbose, quiet));
    // After the log (a bad value is warned about), before anything uses them.
    settings::Settings::from_env().install(&mut ctx);
    tracing::debug!(
        command = cli.command.name(),
        version = env!("CARGO_PKG_VERSION"),
        "loopx"
    );
    let result = commands::dispatch(&mut ctx, cli.command).and_then(|()| ctx.flush());
    match result {
        Ok(()) => ExitCode::from(exit_code::OK),
        Err(errors::ExpectedError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(exit_code::OK)
        }
        Err(e) => {
            let _ = ctx.flush();
            // Into a run's log file (stderr gets the message itself, just below).
            tracing::info!(target: logging::RUN_TARGET, code = e.exit_code(), "ended: {e}");
            e.report(json);
            ExitCode::from(e.exit_code())
        }
    }
}

/// The internal commands loopx runs itself as, handled before anything else; `None` for the
/// others.
fn internal_command() -> Option<ExitCode> {
    // `loopx __exec [--limit NAME=VALUE]... -- PROGRAM [ARG]...`: the tiny helper a slice runs
    // as to set resource limits before the agent starts (portable-pty has no pre_exec hook).
    // Handled before clap so that nothing else runs in between.
    if std::env::args_os().nth(1).is_some_and(|a| a == "__exec") {
        let Err(err) = loopx_pty::exec_with_limits(std::env::args_os().skip(2));
        let _ = writeln!(std::io::stderr(), "loopx __exec: {err}");
        return Some(ExitCode::from(127));
    }
    // `loopx __demo-agent …`: the simulated agent behind `loopx demo`, launched by the supervisor
    // through `adapters/demo.toml`. It is an agent, not a loopx command: no project, no store.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "__demo-agent")
    {
        return Some(loopx_demo_agent::main(std::env::args_os().skip(2)));
    }
    None
}

/// The panic hook: quiet about redb's panics, which the kernel reports, and telling the kernel
/// where any other one happened.
fn install_panic_hook() {
    // redb panics on some kinds of damage; the kernel turns those panics into an error naming
    // the store and `loopx doctor`, so its own panic message would only be noise. A panic
    // anywhere else is a bug: the kernel is told where (`panic_site`), so that it says so.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        loopx_kernel::panic_site::record(info);
        if !info.location().is_some_and(|l| l.file().contains("/redb-")) {
            default_hook(info);
        }
    }));
}
