//! `loopx goal start --guided`: a goal started by answering questions in the terminal — the
//! objective, the scope (from the repository's top-level folders), the permission, agents to
//! add for the agent CLIs `loopx connect` found, and first todos or a planning slice. Every
//! question has a flag; without a terminal a question no flag answered takes its default, and
//! the objective, which has none, is an error naming `--goal-text` (`docs/goals.md`).

use std::io::IsTerminal;

use dialoguer::{Confirm, Input, MultiSelect, Select};
use loopx_app::App;
use loopx_app::goal::StartGoal;
use loopx_app::quota::AgentSpec;
use loopx_kernel::model::{Goal, PermissionLevel, Todo};
use loopx_kernel::store::NewTodo;
use serde::Serialize;

use super::id;
use crate::args::GuidedArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::document;

/// What the guided start will do once the goal exists.
#[derive(Debug)]
pub struct Asked {
    agents: Vec<(String, String)>,
    todos: Vec<String>,
}

/// Where the answers come from: a person at a terminal, or the flags alone.
fn at_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Fills in `start` from the flags and, at a terminal, from the person; says what to do
/// after the goal starts.
pub fn ask(
    ctx: &Ctx,
    app: &App,
    start: &mut StartGoal,
    permission_given: bool,
    flags: GuidedArgs,
) -> Result<Asked, ExpectedError> {
    let person = at_terminal();
    if start.objective.trim().is_empty() {
        if !person {
            return Err(ExpectedError::Usage(
                "`--guided` without a terminal cannot ask for the objective\n(hint: give it: `loopx goal start --guided --goal-text \"…\"`)".to_owned(),
            ));
        }
        start.objective = Input::<String>::new()
            .with_prompt("What should the agents achieve?")
            .interact_text()
            .map_err(prompt_failed)?;
    }
    if start.scope.is_empty() && person {
        start.scope = ask_scope(ctx)?;
    }
    if !permission_given && person {
        start.permission = ask_permission()?;
    }
    let mut agents = flags
        .add_agents
        .iter()
        .map(|spec| split_agent(spec))
        .collect::<Result<Vec<_>, _>>()?;
    if flags.add_agents.is_empty() && person {
        agents = ask_agents(app)?;
    }
    can_add(app, &agents)?;
    let todos = match (flags.todos.is_empty(), flags.plan, person) {
        (false, _, _) | (true, true, _) | (true, false, false) => flags.todos,
        (true, false, true) => ask_todos()?,
    };
    Ok(Asked { agents, todos })
}

fn prompt_failed(e: dialoguer::Error) -> ExpectedError {
    ExpectedError::Usage(format!(
        "the question could not be asked or answered ({e})\n(hint: answer it with a flag instead: `loopx goal start --help` lists them)"
    ))
}

/// Each agent can be added — a valid name no agent has, a profile that loads — checked
/// before the goal starts, so that a guided start never stops half done.
fn can_add(app: &App, agents: &[(String, String)]) -> Result<(), ExpectedError> {
    let registered = app.agents()?;
    for (name, profile) in agents {
        let name: loopx_kernel::AgentName = id(name)?;
        if registered.iter().any(|a| a.name == name) {
            return Err(ExpectedError::Usage(format!(
                "an agent named `{name}` exists already\n(hint: pick another name in `--add-agent NAME={profile}`)"
            )));
        }
        app.profile(profile)?;
    }
    Ok(())
}

/// `NAME=PROFILE`.
fn split_agent(spec: &str) -> Result<(String, String), ExpectedError> {
    match spec.split_once('=') {
        Some((name, profile)) if !name.is_empty() && !profile.is_empty() => {
            Ok((name.to_owned(), profile.to_owned()))
        }
        _ => Err(ExpectedError::Usage(format!(
            "`--add-agent {spec}` is not NAME=PROFILE\n(hint: `--add-agent exec=claude-code`; `loopx profile list` lists the profiles)"
        ))),
    }
}

/// The project's top-level folders a person may pick for the scope, sorted: not hidden ones,
/// not one whose name a terminal must not see as it is (dialoguer prints names raw: an escape
/// sequence or a bidi override an agent put in a name would reach it), and not one whose name
/// a glob would read as a pattern. `--scope` still names any of them.
fn offered_folders(root: &std::path::Path) -> Vec<String> {
    let mut folders: Vec<String> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| !name.starts_with('.'))
                .filter(|name| {
                    !name.chars().any(|c| {
                        c == '\n' || crate::output::needs_escape(c) || "*?[]{}".contains(c)
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    folders.sort();
    folders
}

/// The scope, from the project's top-level folders: none chosen is the whole project.
fn ask_scope(ctx: &Ctx) -> Result<Vec<String>, ExpectedError> {
    let folders = offered_folders(ctx.project()?.root());
    if folders.is_empty() {
        return Ok(Vec::new());
    }
    let chosen = MultiSelect::new()
        .with_prompt("Which folders may the agents change? (space picks, enter accepts; none: the whole project)")
        .items(&folders)
        .interact()
        .map_err(prompt_failed)?;
    Ok(chosen
        .into_iter()
        .map(|i| format!("{}/**", folders[i]))
        .collect())
}

fn ask_permission() -> Result<PermissionLevel, ExpectedError> {
    let levels = [
        (
            PermissionLevel::WorkspaceWrite,
            "workspace-write: change the project's files and run commands, contained",
        ),
        (
            PermissionLevel::ReadOnly,
            "read-only: read and report, change nothing",
        ),
        (
            PermissionLevel::Full,
            "full: anything the CLI can do (each such profile needs your approval first)",
        ),
    ];
    let words: Vec<&str> = levels.iter().map(|(_, w)| *w).collect();
    let chosen = Select::new()
        .with_prompt("How much may an agent do?")
        .items(&words)
        .default(0)
        .interact()
        .map_err(prompt_failed)?;
    Ok(levels[chosen].0)
}

/// Agents to add: one for each profile `loopx connect` (or `init`) wrote for an agent CLI on
/// `PATH` that no registered agent uses yet, each offered by name.
fn ask_agents(app: &App) -> Result<Vec<(String, String)>, ExpectedError> {
    let registered = app.agents()?;
    if !registered.is_empty() {
        let names: Vec<String> = registered.iter().map(|a| a.name.to_string()).collect();
        eprintln!("Agents already here: {}", names.join(", "));
    }
    let mut agents = Vec::new();
    for adapter in super::init::installed_clis() {
        let profile = adapter.name;
        let used = registered
            .iter()
            .any(|a| a.profile == profile || a.name.as_str() == profile)
            || !app
                .project()
                .state_dir()
                .join(format!("profiles/{profile}.toml"))
                .is_file();
        if used {
            continue;
        }
        let add = Confirm::new()
            .with_prompt(format!(
                "Add an agent `{profile}` on the profile {profile}?"
            ))
            .default(true)
            .interact()
            .map_err(prompt_failed)?;
        if add {
            agents.push((profile.clone(), profile));
        }
    }
    Ok(agents)
}

/// First todos, one a line until an empty one; or none, and the first slice plans them.
fn ask_todos() -> Result<Vec<String>, ExpectedError> {
    let how = Select::new()
        .with_prompt("How should the work begin?")
        .items([
            "I write the first todos now",
            "A planning slice proposes them",
        ])
        .default(0)
        .interact()
        .map_err(prompt_failed)?;
    let mut todos = Vec::new();
    if how == 1 {
        return Ok(todos);
    }
    loop {
        let todo: String = Input::new()
            .with_prompt("A todo (empty: done)")
            .allow_empty(true)
            .interact_text()
            .map_err(prompt_failed)?;
        if todo.trim().is_empty() {
            return Ok(todos);
        }
        todos.push(todo);
    }
}

#[derive(Debug, Serialize)]
struct Guided<'a> {
    goal: &'a Goal,
    agents_added: Vec<String>,
    todos_added: Vec<Todo>,
}

/// Adds the agents and todos the person asked for, to the goal just started.
pub fn carry_out(ctx: &mut Ctx, app: &App, goal: Goal, asked: Asked) -> Result<(), ExpectedError> {
    let path = std::env::var_os("PATH");
    let mut agents_added = Vec::new();
    for (name, profile) in asked.agents {
        let spec = AgentSpec {
            name: id(&name)?,
            profile: profile.clone(),
            capabilities: vec![],
            role: None,
        };
        let added = app.add_agent(spec, path.as_deref())?;
        if !ctx.json {
            ctx.line(format!("Added agent {name} (profile {profile})"))?;
            if let Some(why) = added.cannot_run {
                ctx.warn(format!("warning: {why}"))?;
            }
        }
        agents_added.push(name);
    }
    let mut todos_added = Vec::new();
    for title in asked.todos {
        let todo = app.add_todo(NewTodo {
            goal: Some(goal.id),
            title,
            ..NewTodo::default()
        })?;
        if !ctx.json {
            ctx.line(format!("Added {}: {}", todo.id, todo.title))?;
        }
        todos_added.push(todo);
    }
    if ctx.json {
        return ctx.json_out(&document(
            "guided",
            Guided {
                goal: &goal,
                agents_added,
                todos_added,
            },
        ));
    }
    if todos_added.is_empty() {
        ctx.line("No todos yet: the first slice of `loopx run` plans them.")?;
    }
    ctx.line("Next: loopx run                  (watch it: loopx board)")
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_plain_visible_folders_are_offered() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in [
            "tests",
            "src",
            ".git",
            "\x1b[2Jevil",
            "docs\rfake",
            "a\u{202e}b",
            "x[1]",
        ] {
            std::fs::create_dir(dir.path().join(name)).expect("dir");
        }
        std::fs::write(dir.path().join("README.md"), "").expect("file");
        assert_eq!(super::offered_folders(dir.path()), ["src", "tests"]);
    }
}
