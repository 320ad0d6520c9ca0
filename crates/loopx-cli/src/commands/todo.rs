//! `loopx todo add|list|show|claim|renew|release|done|drop` and `loopx diff`: the application
//! layer's todo operations, shown.

use loopx_app::todo::{Page, TodoQuery};
use loopx_kernel::model::{MonitorSpec, Todo, TodoState};
use loopx_kernel::store::{EditTodo, FinishTodo, NewTodo};
use loopx_kernel::time::Timestamp;
use loopx_kernel::{AgentName, TodoId};

use super::{duration, id, ids};
use crate::args::{AddArgs, FinishArgs, TodoCommand, WaitArgs};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

/// The monitor and the resting time `--check`, `--every`, `--expires`, `--until`,
/// `--profile` and `--not-before` ask for (shared with `loopx report todo`).
pub(crate) fn waits(
    wait: &WaitArgs,
    now: Timestamp,
) -> Result<(Option<MonitorSpec>, Option<Timestamp>), ExpectedError> {
    let monitor = wait
        .words()
        .map(|words| MonitorSpec::from_words(&words, wait.profile.clone()))
        .transpose()?;
    let not_before = match wait.not_before.as_deref() {
        None => None,
        Some(text) => Some(match Timestamp::parse_rfc3339(text) {
            Some(at) => at,
            None => now.plus(duration("--not-before", text).map_err(|_| {
                ExpectedError::Usage(format!(
                    "`{text}` for --not-before is neither a time nor a duration\n(hint: `2026-12-05T09:00:00Z`, or `3h` from now)"
                ))
            })?),
        }),
    };
    Ok((monitor, not_before))
}

pub fn run(ctx: &mut Ctx, cmd: TodoCommand) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    // Each change shows the todo as it now stands: its JSON, or one sentence.
    let (todo, said) = match cmd {
        TodoCommand::Add(args) => added(app.add_todo(new_todo(ctx, args)?)?),
        TodoCommand::List {
            state,
            all,
            limit,
            after,
            goal,
        } => {
            let page = match (limit, after) {
                (None, None) => None,
                (limit, after) => Some(Page {
                    after: after.as_deref().map(id).transpose()?,
                    limit,
                }),
            };
            let goal = goal.as_deref().map(id).transpose()?;
            if goal.is_some() {
                // An unknown goal is an error, not an empty list.
                app.goal(goal)?;
            }
            let query = TodoQuery {
                state,
                all,
                page,
                goal,
            };
            let (todos, more) = app.todos(query)?;
            return list(ctx, query, todos, more);
        }
        TodoCommand::Show { id: text } => return detail(ctx, &app, &text),
        TodoCommand::Done(args) => {
            let next = args.next.map(|title| loopx_app::todo::Successor {
                title,
                same_agent: args.same_agent,
            });
            return finish(ctx, &app, args.finish, TodoState::Done, next);
        }
        TodoCommand::Drop(args) => return finish(ctx, &app, args, TodoState::Dropped, None),
        TodoCommand::Claim { id, agent, ttl } => claim(&app, &id, &agent, &ttl)?,
        TodoCommand::Renew { id, holder, ttl } => renew(&app, &id, &holder, &ttl)?,
        TodoCommand::Release { id: text, holder } => {
            let todo = app.release_claim(id(&text)?, id(&holder.agent)?, holder.epoch)?;
            let said = format!("Released {}; it is open again", todo.id);
            (todo, said)
        }
        TodoCommand::Set {
            id: text,
            title,
            detail,
            priority,
        } => {
            let edit = EditTodo {
                todo: id(&text)?,
                title,
                detail,
                priority,
            };
            let todo = app.edit_todo(edit)?;
            let said = format!("Changed {}", todo.id);
            (todo, said)
        }
    };
    show(ctx, &todo, said)
}

/// `todo claim`: the todo as it now stands, and the claim in words.
fn claim(
    app: &loopx_app::App,
    text: &str,
    agent: &str,
    ttl: &str,
) -> Result<(Todo, String), ExpectedError> {
    let todo = app.claim_todo(id(text)?, id(agent)?, duration("--ttl", ttl)?)?;
    let said = match &todo.lease {
        Some(lease) => format!(
            "Claimed {} for {}: epoch {}, lease until {}\nRenew, release or finish it with --epoch {}.",
            todo.id, lease.agent, lease.epoch, lease.expires_at, lease.epoch
        ),
        // The kernel gives a claimed todo its lease in the same transaction; a todo shown
        // without one says so rather than stopping the command.
        None => format!("Claimed {}", todo.id),
    };
    Ok((todo, said))
}

/// `todo renew`: the todo as it now stands, and until when it is held.
fn renew(
    app: &loopx_app::App,
    text: &str,
    holder: &crate::args::HolderArgs,
    ttl: &str,
) -> Result<(Todo, String), ExpectedError> {
    let (todo, agent) = (id(text)?, id(&holder.agent)?);
    let todo = app.renew_claim(todo, agent, holder.epoch, duration("--ttl", ttl)?)?;
    let until = todo.lease.as_ref().map(|l| l.expires_at.to_string());
    let said = format!("Renewed {} until {}", todo.id, until.unwrap_or_default());
    Ok((todo, said))
}

/// The todo `loopx todo add` asks for.
fn new_todo(ctx: &Ctx, args: AddArgs) -> Result<NewTodo, ExpectedError> {
    let (monitor, not_before) = waits(&args.wait, ctx.now())?;
    Ok(NewTodo {
        goal: args.goal.as_deref().map(id).transpose()?,
        title: args.title,
        detail: args.detail,
        priority: args.priority,
        needs: args.needs,
        after: ids(&args.after)?,
        role: args.role,
        monitor,
        not_before,
        then: vec![],
        held_for: None,
    })
}

/// A new todo, in words: where it went, and the files its monitor pins.
fn added(todo: Todo) -> (Todo, String) {
    let mut said = format!("Added {} to goal {}: {}", todo.id, todo.goal, todo.title);
    let pinned: Vec<&str> = todo
        .monitor
        .iter()
        .flat_map(|m| &m.pins)
        .map(|p| p.path.as_str())
        .collect();
    if !pinned.is_empty() {
        said.push_str(&format!(
            "\nPinned {}: a poll asks you before it runs them changed.",
            pinned.join(", ")
        ));
    }
    (todo, said)
}

/// `loopx todo show`: the todo, its latest handoff and its branch.
fn detail(ctx: &mut Ctx, app: &loopx_app::App, text: &str) -> Result<(), ExpectedError> {
    let detail = app.todo(id(text)?)?;
    let (todo, handoff, branch) = (detail.todo, detail.latest_handoff, detail.branch);
    if ctx.json {
        let doc = serde_json::json!({ "format_version": 1, "todo": todo, "latest_handoff": handoff, "branch": branch });
        return ctx.json_out(&doc);
    }
    for line in views::todo_detail(ctx.style, &todo, handoff.as_ref(), ctx.now()) {
        ctx.line(line)?;
    }
    if let Some(b) = branch {
        ctx.line(format!("branch    {} ({})", b.name, b.describe()))?;
    }
    Ok(())
}

fn finish(
    ctx: &mut Ctx,
    app: &loopx_app::App,
    args: FinishArgs,
    to: TodoState,
    next: Option<loopx_app::todo::Successor>,
) -> Result<(), ExpectedError> {
    let agent: Option<AgentName> = args.agent.as_deref().map(id).transpose()?;
    let finished = app.finish_todo_then(
        FinishTodo {
            todo: id::<TodoId>(&args.id)?,
            to,
            agent,
            epoch: args.epoch,
        },
        next,
    )?;
    let todo = finished.todo;
    if ctx.json && finished.next.is_some() {
        let doc = serde_json::json!({ "format_version": 1, "todo": todo, "next": finished.next });
        return ctx.json_out(&doc);
    }
    let verb = if to == TodoState::Done {
        "Done"
    } else {
        "Dropped"
    };
    if let Some(summary) = finished.landed {
        ctx.line(summary)?;
    }
    show(ctx, &todo, format!("{verb}: {} {}", todo.id, todo.title))?;
    match &finished.next {
        Some(next) if !ctx.json => {
            let held = match &next.lease {
                Some(lease) => format!(" (held for {} until {})", lease.agent, lease.expires_at),
                None => String::new(),
            };
            ctx.line(format!("Next: {} {}{held}", next.id, next.title))
        }
        _ => Ok(()),
    }
}

/// `loopx diff TODO`: what the todo's branch changed since it forked from the goal's branch,
/// and what its worktree holds uncommitted.
pub fn diff(ctx: &mut Ctx, args: crate::args::DiffArgs) -> Result<(), ExpectedError> {
    let diff = ctx.app()?.todo_diff(id(&args.todo)?, args.stat)?;
    if ctx.json {
        let doc = serde_json::json!({ "format_version": 1, "todo": diff.todo.id, "branch": diff.branch, "diff": diff.text });
        return ctx.json_out(&doc);
    }
    // The agent's text, shown as text: no escape sequence of it reaches the terminal.
    for line in diff.text.lines() {
        ctx.line(line)?;
    }
    Ok(())
}

pub(super) fn show(ctx: &mut Ctx, todo: &Todo, message: String) -> Result<(), ExpectedError> {
    if ctx.json {
        ctx.json_out(&document("todo", todo))
    } else {
        ctx.line(message)
    }
}

fn list(
    ctx: &mut Ctx,
    query: TodoQuery,
    todos: Vec<Todo>,
    more: bool,
) -> Result<(), ExpectedError> {
    let TodoQuery {
        state, all, page, ..
    } = query;
    if ctx.json {
        if page.is_some() {
            /// A page: the todos, and whether more follow the last of them.
            #[derive(serde::Serialize)]
            struct Paged<'a> {
                format_version: u32,
                todos: &'a [Todo],
                more: bool,
            }
            return ctx.json_out(&Paged {
                format_version: 1,
                todos: &todos,
                more,
            });
        }
        return ctx.json_out(&document("todos", &todos));
    }
    if todos.is_empty() {
        return ctx.line(match state {
            Some(state) => format!("No {state} todos."),
            None => "No open todos. Add one: loopx todo add \"TITLE\"".to_owned(),
        });
    }
    let now = ctx.now();
    let mut sorted = todos;
    if page.is_none() {
        // Highest priority first, then oldest: the order agents take them in. A page stays
        // in the order todos were added, so that `--after` continues it.
        sorted.sort_by_key(|t| (std::cmp::Reverse(t.priority), t.id));
    }
    for todo in &sorted {
        ctx.line(views::todo_line(ctx.style, todo, now))?;
    }
    if let (true, Some(last), Some(page)) = (more, sorted.last(), page) {
        let mut next = format!("More: loopx todo list --after {}", last.id);
        if let Some(limit) = page.limit {
            next.push_str(&format!(" --limit {limit}"));
        }
        if let Some(state) = state {
            next.push_str(&format!(" --state {state}"));
        } else if all {
            next.push_str(" --all");
        }
        ctx.line(ctx.style.dim(&next))?;
    }
    Ok(())
}
