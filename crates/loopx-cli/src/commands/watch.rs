//! `loopx watch [--goal G]`: the terminal view of every running agent, until `q`.

use std::io::IsTerminal;

use super::id;
use crate::args::WatchArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, args: WatchArgs) -> Result<(), ExpectedError> {
    // A full-screen view in a pipe or a log file is a screenful of escape sequences.
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(ExpectedError::Usage(
            "`loopx watch` draws a full-screen view and needs a terminal on stdin and stdout; this one has none\n(hint: `loopx status` prints the same state once, `loopx log --follow` follows the events as lines)".to_owned(),
        ));
    }
    let app = ctx.app()?;
    let goal = args.goal.as_deref().map(id).transpose()?;
    // The store must open now, and an unknown goal is an error, not an empty screen.
    app.read(|_| Ok(()))?;
    if let Some(goal) = goal {
        app.goal(Some(goal))?;
    }
    loopx_watch::run(app, loopx_watch::Options { goal })?;
    Ok(())
}
