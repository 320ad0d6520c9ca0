//! The History page: for one goal, the page `loopx goal history --html` writes, made by the
//! same function (`loopx_app::history::render_html`), so the board and the CLI show one
//! picture. It is data like `/api/state`, so it needs the session: the board's page fetches
//! `/api/history/<goal>` (with `--all`, `/api/projects/<id>/history/<goal>`) with its header
//! and shows the answer in a sandboxed frame without scripts (`sandbox="allow-same-origin"`,
//! so that the page's own stylesheet applies and the tests can read the frame: adding
//! `allow-scripts` to it would hand the frame the board's session). The goal is read as a goal
//! id and nothing else: any other text is refused before the store is opened.

use loopx_app::App;
use loopx_http::Response;
use loopx_kernel::GoalId;
use serde_json::{Value, json};

use crate::actions::{error_body, status_of};
use crate::http::{json as json_response, respond};

/// How many goals the page offers a history of: the newest.
const GOALS_OFFERED: usize = 12;

/// The History page of `goal` (the text after `/history/`), or a refusal.
pub(crate) fn page(app: &App, goal: &str) -> Response {
    let id = match goal_id(goal) {
        Ok(id) => id,
        Err((status, body)) => return json_response(status, &body),
    };
    match app.goal_history(Some(id), None) {
        Ok(history) => respond(
            200,
            "text/html; charset=utf-8",
            loopx_app::history::render_html(&history),
        ),
        Err(e) => json_response(status_of(&e), &error_body(&e)),
    }
}

/// `g3`, or a 400 naming what was given (clipped: a path can be long).
pub(crate) fn goal_id(text: &str) -> Result<GoalId, (u16, Value)> {
    text.parse().map_err(|_| {
        let given = loopx_vocab::strip_ansi(&text.chars().take(64).collect::<String>());
        (
            400,
            json!({
                "error": format!("{given:?} is not a goal id: the History page is /api/history/<goal>, e.g. /api/history/g1"),
                "code": "usage",
            }),
        )
    })
}

/// The goals the page offers a history of, newest first: id, objective and status.
pub(crate) fn goals(app: &App) -> Result<Value, loopx_app::AppError> {
    let goals = app.read(|s| s.goals())?;
    Ok(goals
        .iter()
        .rev()
        .take(GOALS_OFFERED)
        .map(|g| json!({"id": g.id, "objective": g.objective, "status": g.status}))
        .collect())
}
