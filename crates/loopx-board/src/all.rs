//! `loopx board --all`: every registered project on one page (`docs/board.md`).
//!
//! The registry is read again for each state and each change, so a project registered or
//! forgotten while the board serves shows on the next push. A project is named in a request by
//! its id — a digest of its registered root, never the root itself — looked up in the registry
//! as it is now: an id no entry has (a forgotten project, a made-up one, an index, a path) is
//! refused, and so is one two entries share. Each project is looked at as `loopx projects`
//! looks (its glance: this disk's store only, for inspection); only a project whose glance read
//! its store is opened, each time and never kept open, by the opener the CLI gave (the same
//! person, this disk's store only), and the change is the single-project board's.

use std::path::Path;

use loopx_app::projects::{Glance, Registry, Seen, glance};
use loopx_app::{App, AppError};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Opens the application layer on a registered project's root.
pub type Opener = Box<dyn Fn(&Path) -> Result<App, AppError> + Send + Sync>;

/// The registered projects a board serves, and how one is opened.
pub struct Projects {
    pub registry: Registry,
    pub open: Opener,
}

impl std::fmt::Debug for Projects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Projects")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

/// The id of the project registered at `root`: 128 bits of its digest, so no entry written
/// into the registry can take another's id (and one that shares it is refused anyway).
pub fn id_of(root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    hex::encode(&digest[..16])
}

/// The whole view: each registered project's glance and, when its store was read, its board.
pub(crate) fn state(projects: &Projects) -> Result<Value, Value> {
    let listed = projects
        .registry
        .list()
        .map_err(|e| json!({"error": loopx_vocab::render_error(&e), "code": "config"}))?;
    let shown: Vec<Value> = listed
        .into_iter()
        .map(|project| {
            let seen = glance(&project.root);
            let board = match seen {
                Seen::Read(_) => (projects.open)(&project.root)
                    .and_then(|app| crate::state::board(&app))
                    .map_err(|e| crate::actions::error_body(&e)),
                _ => Ok(Value::Null),
            };
            let (board, problem) = match board {
                Ok(board) => (board, Value::Null),
                Err(problem) => (Value::Null, problem),
            };
            json!({
                "id": id_of(&project.root),
                "glance": Glance { root: project.root, seen },
                "board": board,
                "problem": problem,
            })
        })
        .collect();
    Ok(json!({
        "format_version": 1,
        "now": loopx_kernel::Timestamp::now(),
        "projects": shown,
    }))
}

/// Runs the change at `/api/projects/<id>/<action>` on that project alone; the status and the
/// JSON to send back.
pub(crate) fn act(projects: &Projects, path: &str, body: &[u8]) -> (u16, Value) {
    let Some((id, action)) = path
        .strip_prefix("/api/projects/")
        .and_then(|rest| rest.split_once('/'))
    else {
        return refused(
            404,
            format!(
                "no action {path}: with --all a change names its project, /api/projects/<id>/<action>"
            ),
        );
    };
    match app_for(projects, id) {
        Ok(app) => crate::actions::act(&app, &format!("/api/{action}"), body),
        Err(refusal) => refusal,
    }
}

/// The History page at `/api/projects/<id>/history/<goal>`, of that project alone.
pub(crate) fn history(projects: &Projects, path: &str) -> loopx_http::Response {
    let Some((id, goal)) = path
        .strip_prefix("/api/projects/")
        .and_then(|rest| rest.split_once("/history/"))
    else {
        return crate::http::text(404, "not found\n");
    };
    // The goal is checked before the project is opened.
    if let Err((status, body)) = crate::history::goal_id(goal) {
        return crate::http::json(status, &body);
    }
    match app_for(projects, id) {
        Ok(app) => crate::history::page(&app, goal),
        Err((status, body)) => crate::http::json(status, &body),
    }
}

/// The project with `id` in the registry as it is now, opened.
fn app_for(projects: &Projects, id: &str) -> Result<App, (u16, Value)> {
    let listed = projects.registry.list().map_err(|e| {
        (
            503,
            json!({"error": loopx_vocab::render_error(&e), "code": "config"}),
        )
    })?;
    let mut named = listed.iter().filter(|p| id_of(&p.root) == id);
    let (Some(project), None) = (named.next(), named.next()) else {
        return Err(refused(
            404,
            format!(
                "no registered project has the id {:?} (forgotten since the page was drawn? it shows the list as it is now)",
                loopx_vocab::strip_ansi(&id.chars().take(64).collect::<String>())
            ),
        ));
    };
    let root = project.root.display();
    match glance(&project.root) {
        Seen::Read(_) => (projects.open)(&project.root).map_err(|e| {
            (
                crate::actions::status_of(&e),
                crate::actions::error_body(&e),
            )
        }),
        Seen::Gone => Err(refused(409, format!("{root} is gone (moved or deleted)"))),
        Seen::Unreadable { why } => Err(refused(409, format!("{root} cannot be read now: {why}"))),
        Seen::Database { .. } => Err(refused(
            403,
            format!(
                "{root} keeps its store in a database, which `loopx board --all` does not open: run `loopx board` in the project"
            ),
        )),
    }
}

fn refused(status: u16, why: String) -> (u16, Value) {
    let code = if status == 403 { "refused" } else { "usage" };
    (status, json!({"error": why, "code": code}))
}
