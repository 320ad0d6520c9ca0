//! `loopx projects [forget PATH]`: every project the person ran `loopx init` in, at a glance
//! (`docs/projects.md`).

use loopx_app::projects::{Glance, Registry, RegistryError, Seen, glance_all};
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

fn registry(ctx: &Ctx) -> Result<Registry, ExpectedError> {
    ctx.registry.clone().ok_or_else(|| {
        ExpectedError::Usage(
            "neither XDG_STATE_HOME nor HOME is set (to an absolute path), so there is no list of projects\n(hint: set HOME, or XDG_STATE_HOME for the directory loopx keeps it in)".to_owned(),
        )
    })
}

fn reported(e: RegistryError) -> ExpectedError {
    ExpectedError::Reported {
        summary: e.to_string(),
        code: crate::exit_code::CONFIG,
    }
}

fn list(ctx: &mut Ctx, registry: &Registry) -> Result<(), ExpectedError> {
    let glances = glance_all(registry).map_err(reported)?;
    if ctx.json {
        return ctx.json_out(&document("projects", &glances));
    }
    if glances.is_empty() {
        return ctx.line("no projects yet\n(hint: `loopx init` in a project adds it here)");
    }
    let now = Timestamp::now();
    for glance in &glances {
        show(ctx, glance, now)?;
    }
    Ok(())
}

fn show(ctx: &mut Ctx, glance: &Glance, now: Timestamp) -> Result<(), ExpectedError> {
    let root = glance.root.display();
    let summary = match &glance.seen {
        Seen::Gone => {
            return ctx.line(format!(
                "{root}: gone (moved or deleted; `loopx projects forget {root}` removes it)"
            ));
        }
        Seen::Unreadable { why } => return ctx.line(format!("{root}: cannot be read now: {why}")),
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
    let listed = registry.list().map_err(reported)?;
    let mut documents = Vec::new();
    for (n, project) in listed.iter().enumerate() {
        let root = project.root.display().to_string();
        let status = match loopx_app::projects::glance(&project.root) {
            Seen::Gone => Err("gone (moved or deleted)".to_owned()),
            _ => {
                ctx.set_project_dir(project.root.clone());
                ctx.app()
                    .and_then(|app| Ok(app.status()?))
                    .map_err(|e| crate::errors::one_line(&e))
            }
        };
        if ctx.json {
            documents.push(match status {
                Ok(status) => serde_json::json!({ "root": root, "status": status }),
                Err(why) => serde_json::json!({ "root": root, "error": why }),
            });
            continue;
        }
        if n > 0 {
            ctx.line("")?;
        }
        ctx.line(ctx.style.bold(&format!("== {root}")))?;
        match status {
            Ok(status) => crate::commands::status::render_screen(ctx, &status)?,
            Err(why) => ctx.line(format!("cannot be shown: {why}"))?,
        }
    }
    if ctx.json {
        return ctx.json_out(&document("projects", &documents));
    }
    if listed.is_empty() {
        return ctx.line("no projects yet\n(hint: `loopx init` in a project adds it here)");
    }
    Ok(())
}
