//! `loopx board [--port N]`: serves the board until interrupted.

use std::io::Write;
use std::sync::Arc;

use crate::args::BoardArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use loopx_board::Board;

pub fn run(ctx: &mut Ctx, args: BoardArgs) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    let project = app.project().clone();
    // The store must open now: a board on a broken project says so here, not in the page.
    app.read(|_| Ok(()))?;
    let (board, listener) = Board::bind(app, args.port).map_err(|e| {
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
    let board = Arc::new(board);
    let json = ctx.json;
    let say = move |ctx_out: &mut dyn Write, url: &str| {
        let line = if json {
            serde_json::json!({"format_version": 1, "url": url}).to_string()
        } else {
            format!("open: {url}")
        };
        let _ = writeln!(ctx_out, "{line}").and_then(|()| ctx_out.flush());
    };
    let first = board.new_url()?;
    if !json {
        ctx.line(format!("loopx board for {}", project.root().display()))?;
    }
    ctx.flush()?;
    say(&mut std::io::stdout(), &first);
    if !json {
        // Started without a terminal (nohup, a service) nobody can press Enter: say what
        // the one address allows, since a second opening of it is refused.
        let more = match std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            true => "press Enter here for another. Ctrl-C stops the board.",
            false => {
                "this board has no terminal to print another, so open it in the tab you keep (reloading that tab keeps its session), or restart `loopx board` for a new one."
            }
        };
        ctx.line(format!("Each address works once, in one tab; {more}"))?;
        ctx.flush()?;
    }
    // Enter prints a fresh address (another tab, another browser); end of input stops asking.
    let asker = Arc::clone(&board);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            if line.is_err() {
                return;
            }
            if let Ok(url) = asker.new_url() {
                say(&mut std::io::stdout(), &url);
            }
        }
    });
    board.serve(listener)?;
    Ok(())
}
