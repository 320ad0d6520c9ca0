//! `loopx todo add|list|show|claim|renew|release|done|drop`.

use loopx_kernel::model::{Todo, TodoState};
use loopx_kernel::store::FinishTodo;
use loopx_kernel::store::{Applied, NewTodo};
use loopx_kernel::store::{ClaimTodo, ReleaseClaim, RenewClaim};
use loopx_kernel::{AgentName, Invalid, Op, TodoId};

use super::{duration, id, ids};
use crate::args::{FinishArgs, TodoCommand};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: TodoCommand) -> Result<(), ExpectedError> {
    match cmd {
        TodoCommand::Add {
            title,
            detail,
            priority,
            needs,
            after,
            role,
            goal,
        } => {
            let new = NewTodo {
                goal: goal.as_deref().map(id).transpose()?,
                title,
                detail,
                priority,
                needs,
                after: ids(&after)?,
                role,
            };
            let todo = apply(ctx, Op::TodoAdd(new))?;
            show(
                ctx,
                &todo,
                format!("Added {} to goal {}: {}", todo.id, todo.goal, todo.title),
            )
        }
        TodoCommand::List {
            state,
            all,
            limit,
            after,
        } => {
            if limit == Some(0) {
                return Err(
                    loopx_kernel::KernelError::from(loopx_kernel::Invalid::Other(
                        "`--limit 0` lists nothing: give 1 or more".to_owned(),
                    ))
                    .into(),
                );
            }
            let page = match (limit, after) {
                (None, None) => None,
                (limit, after) => Some(Page {
                    after: after
                        .map(|a| a.parse::<TodoId>())
                        .transpose()
                        .map_err(loopx_kernel::KernelError::from)?
                        .map_or(0, |t| t.0),
                    limit: limit.unwrap_or(usize::MAX),
                }),
            };
            list(ctx, state, all, page)
        }
        TodoCommand::Show { id: text } => {
            let tid: TodoId = id(&text)?;
            let (todo, handoff, goal) = ctx.store_read()?.read(|s| {
                let todo = s.todo(tid)?.ok_or_else(|| Invalid::NotFound {
                    what: "todo",
                    id: text.clone(),
                })?;
                let handoff = match todo.latest_handoff {
                    Some(h) => s.handoff(h)?,
                    None => None,
                };
                let goal = s.goal(todo.goal)?;
                Ok((todo, handoff, goal))
            })?;
            let branch = goal
                .filter(|g| g.isolation.is_worktree())
                .map(|g| branch_of(ctx, &todo, g.id))
                .transpose()?;
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
        TodoCommand::Claim {
            id: text,
            agent,
            ttl,
        } => {
            let op = Op::TodoClaim(ClaimTodo {
                todo: id(&text)?,
                agent: id(&agent)?,
                ttl: duration("--ttl", &ttl)?,
            });
            let todo = apply(ctx, op)?;
            let lease = todo.lease.clone().expect("a claimed todo has a lease");
            show(
                ctx,
                &todo,
                format!(
                    "Claimed {} for {}: epoch {}, lease until {}\nRenew, release or finish it with --epoch {}.",
                    todo.id, lease.agent, lease.epoch, lease.expires_at, lease.epoch
                ),
            )
        }
        TodoCommand::Renew {
            id: text,
            holder,
            ttl,
        } => {
            let op = Op::TodoRenew(RenewClaim {
                todo: id(&text)?,
                agent: id(&holder.agent)?,
                epoch: holder.epoch,
                ttl: duration("--ttl", &ttl)?,
            });
            let todo = apply(ctx, op)?;
            let until = todo
                .lease
                .as_ref()
                .map(|l| l.expires_at.to_string())
                .unwrap_or_default();
            show(ctx, &todo, format!("Renewed {} until {until}", todo.id))
        }
        TodoCommand::Release { id: text, holder } => {
            let todo = apply(
                ctx,
                Op::TodoRelease(ReleaseClaim {
                    todo: id(&text)?,
                    agent: id(&holder.agent)?,
                    epoch: holder.epoch,
                }),
            )?;
            show(
                ctx,
                &todo,
                format!("Released {}; it is open again", todo.id),
            )
        }
        TodoCommand::Done(args) => finish(ctx, args, TodoState::Done),
        TodoCommand::Drop(args) => finish(ctx, args, TodoState::Dropped),
    }
}

fn finish(ctx: &mut Ctx, args: FinishArgs, to: TodoState) -> Result<(), ExpectedError> {
    let agent: Option<AgentName> = args.agent.as_deref().map(id).transpose()?;
    let tid: TodoId = id(&args.id)?;
    let worktree_goal = worktree_goal_of(ctx, tid)?;
    // A person's `done` in a worktree goal means "on the goal's branch": the todo's work lands
    // first, by the same rules as an agent's, or the todo stays as it is.
    let landed = match (&worktree_goal, to, &agent) {
        (Some((goal, title)), TodoState::Done, None) => land_for_person(ctx, goal, tid, title)?,
        _ => None,
    };
    let mut ops = Vec::new();
    if let Some(summary) = &landed {
        ops.push(Op::EvidenceAdd(loopx_kernel::store::NewEvidence {
            kind: loopx_kernel::model::EvidenceKind::Land,
            summary: summary.clone(),
            detail: String::new(),
            files: vec![],
            todo: Some(tid),
            slice: None,
            epoch: None,
        }));
    }
    let finish = FinishTodo {
        todo: tid,
        to,
        agent,
        epoch: args.epoch,
    };
    let todo = ctx
        .store()?
        .run_after(ops, finish, &ctx.actor(), ctx.now())?;
    if let Some((goal, _)) = &worktree_goal {
        // Done or dropped: its worktree goes, its branch stays.
        let root = ctx.project()?.root().to_path_buf();
        if let Err(e) = loopx_supervisor::worktree::remove(&root, goal.id, todo.id) {
            tracing::warn!(todo = %todo.id, error = %e, "cannot remove the todo's worktree");
        }
    }
    let verb = if to == TodoState::Done {
        "Done"
    } else {
        "Dropped"
    };
    if let Some(summary) = landed {
        ctx.line(summary)?;
    }
    show(ctx, &todo, format!("{verb}: {} {}", todo.id, todo.title))
}

/// The todo's goal and title, when the goal works in worktrees.
fn worktree_goal_of(
    ctx: &Ctx,
    todo: TodoId,
) -> Result<Option<(loopx_kernel::model::Goal, String)>, ExpectedError> {
    Ok(ctx.store_read()?.read(|s| {
        let Some(t) = s.todo(todo)? else {
            return Ok(None);
        };
        Ok(s.goal(t.goal)?
            .filter(|g| g.isolation.is_worktree())
            .map(|g| (g, t.title)))
    })?)
}

/// Lands a todo a person marks done; what landed, in words (`None`: it has no branch, or
/// nothing on it to land), or why the todo stays open.
fn land_for_person(
    ctx: &Ctx,
    goal: &loopx_kernel::model::Goal,
    todo: TodoId,
    title: &str,
) -> Result<Option<String>, ExpectedError> {
    use loopx_supervisor::worktree::{Landing, Repo, integration_branch, short, todo_branch};
    let root = ctx.project()?.root().to_path_buf();
    let branch = todo_branch(goal.id, todo);
    if !Repo::of(&root).is_ok_and(|repo| repo.has_branch(&branch)) {
        return Ok(None);
    }
    let rollback_open = ctx.store_read()?.read(|s| {
        Ok(s.gates()?.into_iter().any(|g| {
            g.state == loopx_kernel::model::GateState::Open
                && matches!(g.kind, loopx_kernel::model::GateKind::Rollback { todo: t, .. } if t == todo)
        }))
    })?;
    let not_yet = |why: &str| ExpectedError::Reported {
        summary: format!("{todo} stays open: {why}"),
        code: crate::exit_code::CONFLICT,
    };
    if rollback_open {
        return Err(not_yet(
            "a gate asks whether to roll its last slice back; answer it first (`loopx gate list`)",
        ));
    }
    if loopx_supervisor::worktree::has_uncommitted(&root, goal.id, todo).unwrap_or(false) {
        return Err(not_yet(
            "its worktree holds work no slice has committed (a slice is running, or one was stopped); let its next slice end first",
        ));
    }
    let exe = std::env::current_exe()
        .map_err(|e| ExpectedError::Usage(format!("cannot find the loopx executable: {e}")))?;
    let into = integration_branch(goal.id);
    let refused = |why: String| ExpectedError::Reported {
        summary: format!(
            "{todo} stays open: {why}\n(hint: `loopx diff {todo}` shows its work; `loopx todo drop {todo}` drops it, its branch kept)"
        ),
        code: crate::exit_code::CONFLICT,
    };
    // No claim to lose: the kernel refuses the person's `done` if someone took the todo.
    match loopx_supervisor::land_todo(&root, &exe, goal, todo, title, &|| true) {
        Landing::Landed {
            commit, commits, ..
        } => Ok(Some(format!(
            "{todo} landed on {into} as {}: {commits} commit(s)",
            short(&commit)
        ))),
        Landing::Empty => Ok(None),
        Landing::Conflict { files, .. } => Err(refused(format!(
            "its branch {branch} conflicts with {into} in {}",
            files.join(", ")
        ))),
        Landing::CheckFailed { how, output } => Err(refused(format!(
            "the land check {how} on its branch merged with {into}:\n{}",
            output
                .lines()
                .rev()
                .take(10)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        ))),
        Landing::Failed(why) => Err(refused(why)),
    }
}

fn apply(ctx: &Ctx, op: Op) -> Result<Todo, ExpectedError> {
    let store = ctx.store()?;
    match store.apply(op, &ctx.actor(), ctx.now())? {
        Applied::Todo(todo) => Ok(todo),
        other => unreachable!("todo operations yield a todo, not {other:?}"),
    }
}

/// `loopx diff TODO`: what the todo's branch changed since it forked from the goal's branch,
/// and what its worktree holds uncommitted.
pub fn diff(ctx: &mut Ctx, args: crate::args::DiffArgs) -> Result<(), ExpectedError> {
    let tid: TodoId = id(&args.todo)?;
    let (todo, goal) = ctx.store_read()?.read(|s| {
        let todo = s.todo(tid)?.ok_or_else(|| Invalid::NotFound {
            what: "todo",
            id: args.todo.clone(),
        })?;
        let goal = s.goal(todo.goal)?;
        Ok((todo, goal))
    })?;
    let Some(goal) = goal.filter(|g| g.isolation.is_worktree()) else {
        return Err(ExpectedError::Usage(format!(
            "{} belongs to a goal whose agents share the project's tree, so it has no branch of its own\n(hint: `git diff` shows the tree's changes; `loopx evidence list --todo {}` what each slice changed)",
            todo.id, todo.id
        )));
    };
    let root = ctx.project()?.root().to_path_buf();
    let text = loopx_supervisor::worktree::todo_diff(&root, goal.id, todo.id, args.stat)
        .map_err(ExpectedError::Usage)?;
    if ctx.json {
        let doc = serde_json::json!({ "format_version": 1, "todo": todo.id, "branch": loopx_supervisor::worktree::todo_branch(goal.id, todo.id), "diff": text });
        return ctx.json_out(&doc);
    }
    // The agent's text, shown as text: no escape sequence of it reaches the terminal.
    for line in text.lines() {
        ctx.line(line)?;
    }
    Ok(())
}

/// Where a worktree goal's todo branch stands (`todo show`, `status`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Branch {
    pub name: String,
    /// `None`: no branch yet (made at the first claim).
    pub ahead: Option<u64>,
    pub behind: Option<u64>,
    /// Done, with nothing on its branch that is not on the goal's.
    pub landed: bool,
}

impl Branch {
    /// `+2 commits, not landed`, `landed`, `no branch yet`.
    pub fn describe(&self) -> String {
        match self.ahead {
            None => "no branch yet: made at its first claim".to_owned(),
            Some(0) if self.landed => "landed".to_owned(),
            Some(0) => "nothing committed yet".to_owned(),
            Some(n) => format!("+{n} commit{}, not landed", if n == 1 { "" } else { "s" }),
        }
    }
}

pub fn branch_of(
    ctx: &Ctx,
    todo: &Todo,
    goal: loopx_kernel::GoalId,
) -> Result<Branch, ExpectedError> {
    let root = ctx.project()?.root().to_path_buf();
    let states = loopx_supervisor::worktree::branch_states(&root, goal).unwrap_or_default();
    let state = states.iter().find(|s| s.todo == todo.id);
    Ok(Branch {
        name: loopx_supervisor::worktree::todo_branch(goal, todo.id),
        ahead: state.map(|s| s.ahead),
        behind: state.map(|s| s.behind),
        landed: todo.state == loopx_kernel::model::TodoState::Done
            && state.is_some_and(|s| s.ahead == 0),
    })
}

pub(super) fn show(ctx: &mut Ctx, todo: &Todo, message: String) -> Result<(), ExpectedError> {
    if ctx.json {
        ctx.json_out(&document("todo", todo))
    } else {
        ctx.line(message)
    }
}

/// A page of `todo list`: todos added after `after` (a todo's number), at most `limit`.
#[derive(Debug, Clone, Copy)]
struct Page {
    after: u64,
    limit: usize,
}

fn list(
    ctx: &mut Ctx,
    state: Option<TodoState>,
    all: bool,
    page: Option<Page>,
) -> Result<(), ExpectedError> {
    let wanted = |todo: &Todo| match state {
        Some(state) => todo.state == state,
        None => all || !todo.state.is_final(),
    };
    // Open and claimed todos come from the active index; finished ones need every todo.
    let finished_wanted = all || state.is_some_and(TodoState::is_final);
    let (todos, more) = ctx.store_read()?.read(|s| match page {
        Some(page) => s.todos_page(page.after, page.limit, !finished_wanted, wanted),
        None => {
            let todos = if finished_wanted {
                s.todos_where(wanted)?
            } else {
                s.active_todos()?
            };
            Ok((todos.into_iter().filter(|t| wanted(t)).collect(), false))
        }
    })?;
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
        if page.limit != usize::MAX {
            next.push_str(&format!(" --limit {}", page.limit));
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
