//! `loopx completions SHELL` and `loopx man`: text generated from the clap definitions, so the
//! completions and the man page always list exactly the commands and flags this binary takes.
//! Both print to stdout and read nothing of a project; the install lines are in README.md.

use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs, Shell};
use crate::context::Ctx;
use crate::errors::ExpectedError;

/// The shell completion script for `args.shell`, for the binary's name `loopx`.
pub fn completions(ctx: &mut Ctx, args: CompletionsArgs) -> Result<(), ExpectedError> {
    use clap_complete::Shell as Target;
    let target = match args.shell {
        Shell::Bash => Target::Bash,
        Shell::Zsh => Target::Zsh,
        Shell::Fish => Target::Fish,
    };
    let mut command = Cli::command();
    clap_complete::generate(target, &mut command, "loopx", &mut ctx.out);
    Ok(())
}

/// loopx(1) in roff: the top-level page, whose COMMANDS section lists every subcommand (each
/// one's own flags are in `loopx COMMAND --help` and docs/cli.md).
pub fn man(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    clap_mangen::Man::new(Cli::command()).render(&mut ctx.out)?;
    Ok(())
}
