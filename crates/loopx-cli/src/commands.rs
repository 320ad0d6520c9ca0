//! One module per command group; each takes the context and its parsed arguments.

mod agent;
mod board;
mod demo;
mod doctor;
mod evidence;
mod gate;
mod goal;
mod init;
mod log;
mod profile;
mod quota;
mod report;
mod run;
mod sim;
mod status;
mod store;
mod todo;

use std::str::FromStr;
use std::time::Duration;

use loopx_kernel::errors::InvalidId;

use crate::args::Command;
use crate::context::Ctx;
use crate::errors::ExpectedError;

/// Runs the chosen command.
pub fn dispatch(ctx: &mut Ctx, command: Command) -> Result<(), ExpectedError> {
    match command {
        Command::Init(args) => init::run(ctx, args),
        Command::Store(cmd) => store::run(ctx, cmd),
        Command::Goal(cmd) => goal::run(ctx, cmd),
        Command::Todo(cmd) => todo::run(ctx, cmd),
        Command::Gate(cmd) => gate::run(ctx, cmd),
        Command::Evidence(cmd) => evidence::run(ctx, cmd),
        Command::Handoff(args) => evidence::handoff(ctx, args),
        Command::Agent(cmd) => agent::run(ctx, cmd),
        Command::Status => status::run(ctx),
        Command::Log(args) => log::run(ctx, args),
        Command::Diff(args) => todo::diff(ctx, args),
        Command::Doctor(args) => doctor::run(ctx, args.repair),
        Command::Board(args) => board::run(ctx, args),
        Command::Profile(cmd) => profile::run(ctx, cmd),
        Command::Adapter(cmd) => profile::adapter(ctx, cmd),
        Command::Quota(cmd) => quota::run(ctx, cmd),
        Command::Run(args) => run::run(ctx, args),
        Command::Demo(args) => demo::run(ctx, args),
        Command::Sim(args) => sim::run(ctx, args),
        Command::Report(cmd) => report::run(ctx, cmd),
    }
}

/// Parses an id (`t3`, `q1`, an agent name).
fn id<T: FromStr<Err = InvalidId>>(text: &str) -> Result<T, ExpectedError> {
    Ok(text.parse::<T>()?)
}

/// Parses ids given to a repeatable flag.
fn ids<T: FromStr<Err = InvalidId>>(texts: &[String]) -> Result<Vec<T>, ExpectedError> {
    texts.iter().map(|t| id(t)).collect()
}

/// Parses `30m`, `90s`, `2h`, up to a year.
fn duration(flag: &str, text: &str) -> Result<Duration, ExpectedError> {
    let parsed = parse_duration(flag, text)?;
    if parsed > loopx_kernel::time::MAX_DURATION {
        return Err(ExpectedError::Usage(format!(
            "duration `{text}` for {flag} is longer than a year\n(hint: loopx plans in hours and days; pause with `loopx quota pause` for an open-ended hold)"
        )));
    }
    Ok(parsed)
}

fn parse_duration(flag: &str, text: &str) -> Result<Duration, ExpectedError> {
    humantime::parse_duration(text).map_err(|e| {
        ExpectedError::Usage(format!(
            "invalid duration `{text}` for {flag}: {e}\n(hint: use a duration like 30m, 90s or 2h)"
        ))
    })
}
