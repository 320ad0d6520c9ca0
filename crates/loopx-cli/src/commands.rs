//! One module per command group; each takes the context and its parsed arguments.

mod agent;
mod board;
mod clean;
mod connect;
mod demo;
mod doctor;
mod evidence;
mod gate;
mod generate;
mod goal;
mod guided;
mod history;
mod init;
mod lark;
mod log;
mod notify;
mod profile;
mod projects;
mod quota;
mod report;
mod run;
mod say;
mod sim;
mod status;
mod store;
mod todo;
mod watch;

use std::str::FromStr;
use std::time::Duration;

use loopx_kernel::errors::InvalidId;

use crate::args::Command;
use crate::context::Ctx;
use crate::errors::ExpectedError;

/// Runs the chosen command.
pub fn dispatch(ctx: &mut Ctx, command: Command) -> Result<(), ExpectedError> {
    if let Some(slice) = crate::context::slice_id() {
        refuse_inside_a_slice(ctx, &slice, &command)?;
    }
    match command {
        Command::Init(args) => init::run(ctx, args),
        Command::Store(cmd) => store::run(ctx, cmd),
        Command::Goal(cmd) => goal::run(ctx, cmd),
        Command::Todo(cmd) => todo::run(ctx, cmd),
        Command::Gate(cmd) => gate::run(ctx, cmd),
        Command::Evidence(cmd) => evidence::run(ctx, cmd),
        Command::Handoff(args) => evidence::handoff(ctx, args),
        Command::Agent(cmd) => agent::run(ctx, cmd),
        Command::Status(args) => match args.all {
            true => projects::status_all(ctx),
            false => status::run(ctx, args.goal.as_deref()),
        },
        Command::Log(args) => log::run(ctx, args),
        Command::Diff(args) => todo::diff(ctx, args),
        Command::Doctor(args) => doctor::run(ctx, args.repair),
        Command::Clean(args) => clean::run(ctx, args),
        Command::Connect => connect::run(ctx),
        Command::Projects(args) => projects::run(ctx, args),
        Command::Board(args) => board::run(ctx, args),
        Command::Watch(args) => watch::run(ctx, args),
        Command::Profile(cmd) => profile::run(ctx, cmd),
        Command::Adapter(cmd) => profile::adapter(ctx, cmd),
        Command::Quota(cmd) => quota::run(ctx, cmd),
        Command::Run(args) => run::run(ctx, args),
        Command::Demo(args) => demo::run(ctx, args),
        Command::Sim(args) => sim::run(ctx, args),
        Command::Report(cmd) => report::run(ctx, cmd),
        Command::Lark(cmd) => lark::run(ctx, cmd),
        Command::Notify(cmd) => notify::run(ctx, cmd),
        Command::Say(args) => say::run(ctx, args),
        Command::Completions(args) => generate::completions(ctx, args),
        Command::Man => generate::man(ctx),
    }
}

/// Inside a slice (`LOOPX_SLICE` set) only `loopx report` and the commands that read nothing
/// of the project's state (`profile`, `adapter`, `completions`, `man`) run: every other command is a person's, and
/// is refused with exit 6 and a hint to `loopx report`. Before, the sandbox's hidden store
/// made them say "no loopx project here" with the hint that `loopx init` creates one — which
/// an agent may follow. A gate answer still reaches the kernel when the store is in reach (a
/// slice run without the sandbox), which refuses it and records the attempt.
fn refuse_inside_a_slice(ctx: &Ctx, slice: &str, command: &Command) -> Result<(), ExpectedError> {
    use crate::args::GateCommand;
    match command {
        Command::Report(_)
        | Command::Profile(_)
        | Command::Adapter(_)
        | Command::Completions(_)
        | Command::Man => return Ok(()),
        Command::Gate(GateCommand::Answer { .. })
            if ctx.app().is_ok_and(|app| app.read(|_| Ok(())).is_ok()) =>
        {
            return Ok(());
        }
        _ => {}
    }
    let name = command.name();
    Err(ExpectedError::Reported {
        summary: format!(
            "`loopx {name}` is a person's command, and this process runs inside slice {slice} (LOOPX_SLICE): refused\n(hint: an agent writes through `loopx report`: `loopx report evidence test \"…\"`, `loopx report todo \"…\"`, `loopx report ask \"…?\"`, `loopx report done`; `loopx report --help` lists them)"
        ),
        code: crate::exit_code::REFUSED,
    })
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
