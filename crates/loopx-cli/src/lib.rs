//! # Theory of operation
//!
//! `loopx-cli` is the `loopx` binary: it parses the command line (clap), finds the project,
//! opens the kernel's store for exactly one operation, and prints the result for people or, with
//! `--json`, for scripts. It holds no business rules: every check and transition lives in
//! `loopx-kernel`. Errors become one `error:` message on stderr and a documented exit code
//! (`exit_code.rs`, `docs/cli.md`); a broken pipe on stdout exits 0 quietly.

mod args;
mod commands;
mod context;
pub mod errors;
pub mod exit_code;
mod output;

use std::process::ExitCode;

use clap::Parser;

pub use args::Cli;

/// Runs `loopx` with the process's arguments.
pub fn main() -> ExitCode {
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
    let result = commands::dispatch(&mut ctx, cli.command).and_then(|()| ctx.flush());
    match result {
        Ok(()) => ExitCode::from(exit_code::OK),
        Err(errors::ExpectedError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(exit_code::OK)
        }
        Err(e) => {
            let _ = ctx.flush();
            if !matches!(e, errors::ExpectedError::Doctor { .. }) || json {
                e.report(json);
            }
            ExitCode::from(e.exit_code())
        }
    }
}
