//! `loopx board [--port N]`: serves the board until interrupted.

use crate::args::BoardArgs;
use crate::board::Board;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, args: BoardArgs) -> Result<(), ExpectedError> {
    let project = ctx.project()?;
    // The store must open now: a board on a broken project says so here, not in the page.
    drop(loopx_kernel::Store::open_read(&project)?);
    let (board, listener) = Board::bind(project.root().to_path_buf(), args.port).map_err(|e| {
        ExpectedError::Usage(format!(
            "cannot listen on 127.0.0.1:{}: {e}{}",
            args.port,
            if args.port == 0 {
                ""
            } else {
                " (try another --port, or none for a free one)"
            }
        ))
    })?;
    let url = board.url();
    if ctx.json {
        ctx.json_out(&serde_json::json!({"format_version": 1, "url": url}))?;
    } else {
        ctx.line(format!("loopx board for {}", project.root().display()))?;
        ctx.line(format!("open: {url}"))?;
        ctx.line(
            "The address works once, in one browser (restart the board for another). Ctrl-C stops the board.",
        )?;
    }
    ctx.flush()?;
    board.serve(listener)?;
    Ok(())
}
