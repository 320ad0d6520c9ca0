//! `loopx projects [forget PATH]`: every project the person ran `loopx init` in, at a glance
//! (`docs/projects.md`).

use std::io::Write;

use loopx_app::projects::{Glance, Registry, RegistryError, Seen, glance};
use loopx_kernel::Timestamp;
use loopx_kernel::time::short_duration;

use crate::args::{ProjectsArgs, ProjectsCommand};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::document;

pub fn run(ctx: &mut Ctx, args: ProjectsArgs) -> Result<(), ExpectedError> {
    let registry = registry(ctx)?;
    match args.command {
        None => list(ctx, &registry),
        Some(ProjectsCommand::Forget { path }) => {
            let forgot = registry.forget(&path).map_err(reported)?;
            if ctx.json {
                return ctx.json_out(&document(
                    "projects_forget",
                    &serde_json::json!({ "path": path, "forgotten": forgot }),
                ));
            }
            match forgot {
                true => ctx.line(format!(
                    "forgot {} (its files stay as they are)",
                    path.display()
                )),
                false => Err(ExpectedError::Usage(format!(
                    "{} is not in the list of projects\n(hint: `loopx projects` lists them by path)",
                    path.display()
                ))),
            }
        }
    }
}

pub(crate) fn registry(ctx: &Ctx) -> Result<Registry, ExpectedError> {
    ctx.registry.clone().ok_or_else(|| {
        ExpectedError::Usage(
            "neither XDG_STATE_HOME nor HOME is set (to an absolute path), so there is no list of projects\n(hint: set HOME, or XDG_STATE_HOME for the directory loopx keeps it in)".to_owned(),
        )
    })
}

pub(crate) fn reported(e: RegistryError) -> ExpectedError {
    ExpectedError::Reported {
        summary: e.to_string(),
        code: crate::exit_code::CONFIG,
    }
}

/// Each project in turn, printed as soon as it is read: one slow project never hides the
/// ones before it.
fn list(ctx: &mut Ctx, registry: &Registry) -> Result<(), ExpectedError> {
    let listed = registry.list().map_err(reported)?;
    let none = listed.is_empty();
    let now = Timestamp::now();
    let mut glances = Vec::new();
    for project in listed {
        let seen = Glance {
            seen: glance(&project.root),
            root: project.root,
        };
        match ctx.json {
            true => glances.push(seen),
            false => {
                show(ctx, &seen, now)?;
                ctx.out.flush()?;
            }
        }
    }
    if ctx.json {
        return ctx.json_out(&document("projects", &glances));
    }
    if none {
        return ctx.line(NO_PROJECTS);
    }
    Ok(())
}

const NO_PROJECTS: &str = "no projects yet\n(hint: `loopx init` in a project adds it here)";

/// What a glance says of a project whose store is a database (a URL on one line: its parts
/// are percent-decoded, so a planted one could hold a line break).
fn on_database(url: &str) -> String {
    format!(
        "its store is the database {}, which loopx opens only from the project (`loopx status` there)",
        crate::output::views::one_line(url)
    )
}

/// A registered path as a line shows it: a line break in it cannot start a line of its own.
fn shown_path(root: &std::path::Path) -> String {
    crate::output::views::one_line(&root.display().to_string())
}

/// `path` as one word for a shell: quoted unless it is plainly safe to paste.
fn shell_word(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c);
    match !text.is_empty() && text.chars().all(plain) {
        true => text,
        false => format!("'{}'", text.replace('\'', "'\\''")),
    }
}

fn show(ctx: &mut Ctx, glance: &Glance, now: Timestamp) -> Result<(), ExpectedError> {
    let root = shown_path(&glance.root);
    let summary = match &glance.seen {
        Seen::Gone => {
            return ctx.line(format!(
                "{root}: gone (moved or deleted; `loopx projects forget {}` removes it)",
                shown_path(std::path::Path::new(&shell_word(&glance.root)))
            ));
        }
        Seen::Unreadable { why } => return ctx.line(format!("{root}: cannot be read now: {why}")),
        Seen::Database { url } => return ctx.line(format!("{root}: {}", on_database(url))),
        Seen::Read(summary) => summary,
    };
    let last = summary
        .last_activity
        .map_or("nothing yet".to_owned(), |at| {
            format!("{} ago", short_duration(now.since(at)))
        });
    ctx.line(format!(
        "{root}: {} active goal{}, {} question{} open, {} running, {} monitor{} waiting; last activity {last}",
        summary.goals.len(),
        plural(summary.goals.len()),
        summary.questions,
        plural(summary.questions),
        summary.running,
        summary.monitors,
        plural(summary.monitors),
    ))?;
    for goal in &summary.goals {
        let objective = crate::output::views::one_line(&goal.objective);
        ctx.line(format!("  {}  {objective}", goal.id))?;
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `loopx status --all`: each registered project's status screen in turn, headed by its path;
/// a project gone or unreadable says so and the others are still shown.
pub fn status_all(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let registry = registry(ctx)?;
    let open = opener(ctx);
    let listed = registry.list().map_err(reported)?;
    let mut documents = Vec::new();
    for (n, project) in listed.iter().enumerate() {
        let status = match glance(&project.root) {
            Seen::Gone => Err("gone (moved or deleted)".to_owned()),
            Seen::Unreadable { why } => Err(why),
            Seen::Database { url } => Err(on_database(&url)),
            Seen::Read(_) => open(&project.root)
                .and_then(|app| app.status())
                .map_err(|e| crate::errors::one_line(&e)),
        };
        if ctx.json {
            documents.push(match status {
                Ok(status) => serde_json::json!({ "root": project.root, "status": status }),
                Err(why) => serde_json::json!({ "root": project.root, "error": why }),
            });
            continue;
        }
        if n > 0 {
            ctx.line("")?;
        }
        ctx.line(ctx.style.bold(&format!("== {}", shown_path(&project.root))))?;
        match status {
            Ok(status) => crate::commands::status::render_screen(ctx, &status)?,
            Err(why) => ctx.line(format!("cannot be shown: {why}"))?,
        }
    }
    if ctx.json {
        return ctx.json_out(&document("status_all", &documents));
    }
    if listed.is_empty() {
        return ctx.line(NO_PROJECTS);
    }
    Ok(())
}

/// How `status --all` and `board --all` open a registered project: this disk's redb file only,
/// whatever `LOOPX_STORE_URL` or the project's `loopx.toml` says by now, with the person who
/// ran the command as actor.
pub(crate) fn opener(ctx: &Ctx) -> loopx_board::all::Opener {
    let mut store = ctx.store.clone();
    store.url = None;
    store.local_only = true;
    let git_timeout = ctx.git_timeout;
    let caller = loopx_app::Caller {
        actor: ctx.actor(),
        slice: crate::context::slice_id(),
        slice_todo: None,
    };
    let exe = std::env::current_exe().ok();
    Box::new(move |root| {
        let project = loopx_kernel::Project::at(root)
            .map_err(loopx_kernel::KernelError::from)?
            .with_store(store.clone())
            .with_git_timeout(git_timeout);
        Ok(loopx_app::App::new(project, caller.clone(), exe.clone()))
    })
}
