//! `loopx board [--all] [--port N]`: serves the board until interrupted.

use std::io::Write;
use std::sync::Arc;

use crate::args::BoardArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use loopx_board::Board;

pub fn run(ctx: &mut Ctx, args: BoardArgs) -> Result<(), ExpectedError> {
    let (bound, serving) = match args.all {
        true => {
            let projects = all_projects(ctx)?;
            let count = projects
                .registry
                .list()
                .map_err(super::projects::reported)?
                .len();
            (
                Board::bind_all(projects, args.port),
                format!("every registered project ({count} now; `loopx projects` lists them)"),
            )
        }
        false => {
            let app = ctx.app()?;
            let root = app.project().root().display().to_string();
            // The store must open now: a board on a broken project says so here, not in the page.
            app.read(|_| Ok(()))?;
            (Board::bind(app, args.port), root)
        }
    };
    let (board, listener) = bound.map_err(|e| {
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
        ctx.line(format!("loopx board for {serving}"))?;
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

/// The registry, and how `--all` opens one of its projects (as `status --all` does).
fn all_projects(ctx: &Ctx) -> Result<loopx_board::all::Projects, ExpectedError> {
    Ok(loopx_board::all::Projects {
        registry: super::projects::registry(ctx)?,
        open: super::projects::opener(ctx),
    })
}
