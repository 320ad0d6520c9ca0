//! `loopx clean [--dry-run] [--all]`: what finished goals left, removed (or listed), one line
//! each; what stays, and why.

use loopx_app::clean::{Clean, Cleaned};

use crate::args::CleanArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::document;

pub fn run(ctx: &mut Ctx, args: CleanArgs) -> Result<(), ExpectedError> {
    let cleaned = ctx.app()?.clean(Clean {
        dry_run: args.dry_run,
        all: args.all,
    })?;
    if ctx.json {
        ctx.json_out(&document("clean", &cleaned))?;
    } else {
        show(ctx, &cleaned)?;
    }
    match cleaned.failed.as_slice() {
        [] => Ok(()),
        failed => Err(ExpectedError::Reported {
            summary: format!(
                "{} of what finished goals left could not be removed: {}\n(hint: `loopx clean --dry-run` lists what is left; `loopx doctor` checks the worktrees)",
                failed.len(),
                failed.join("; ")
            ),
            code: crate::exit_code::CONFLICT,
        }),
    }
}

fn show(ctx: &mut Ctx, cleaned: &Cleaned) -> Result<(), ExpectedError> {
    let verb = if cleaned.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for leftover in &cleaned.removed {
        ctx.line(format!("{verb} {leftover}"))?;
    }
    for kept in &cleaned.kept {
        ctx.line(format!("kept {}: {}", kept.what, kept.why))?;
    }
    if cleaned.removed.is_empty() && cleaned.kept.is_empty() {
        ctx.line("Nothing to clean: no finished goal left a worktree or a branch.")?;
    }
    Ok(())
}
