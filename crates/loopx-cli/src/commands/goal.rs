//! `loopx goal start|amend|list|show|pause|resume|done` (`history` in `history.rs`): the application layer's goal
//! operations, shown.

use loopx_app::App;
use loopx_app::goal::{StartGoal, Started, merge_commands};
use loopx_git::clean::Unmerged;
use loopx_git::worktree::short;
use loopx_kernel::GoalId;
use loopx_kernel::model::{Goal, GoalRevision, GoalStatus, Isolation, PermissionLevel};
use loopx_kernel::store::{AmendGoal, Amended};

use super::id;
use crate::args::{GoalCommand, StartArgs};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: GoalCommand) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    let (target, to) = match cmd {
        GoalCommand::Start(args) => return start(ctx, &app, args),
        GoalCommand::Amend {
            objective,
            scope,
            permission,
            why,
            goal,
        } => {
            let changed = app.amend_goal(AmendGoal {
                goal: goal.as_deref().map(id::<GoalId>).transpose()?,
                objective,
                scope: (!scope.is_empty()).then_some(scope),
                permission,
                why,
            })?;
            return amended(ctx, &changed);
        }
        GoalCommand::List => return list(ctx, &app),
        GoalCommand::Show { id: goal } => {
            let goal = app.goal(goal.as_deref().map(id::<GoalId>).transpose()?)?;
            return shown(ctx, &app, &goal);
        }
        GoalCommand::History {
            pick,
            since,
            graph,
            html,
        } => {
            let show = super::history::Show { graph, html };
            return super::history::run(ctx, &app, pick.named(), since, show);
        }
        GoalCommand::Pause(pick) => (pick.named(), GoalStatus::Paused),
        GoalCommand::Resume(pick) => (pick.named(), GoalStatus::Active),
        GoalCommand::Done(pick) => (pick.named(), GoalStatus::Done),
    };
    let goal = target.as_deref().map(id::<GoalId>).transpose()?;
    let goal = app.set_goal_status(goal, to)?;
    let verb = match to {
        GoalStatus::Paused => "Paused",
        GoalStatus::Active => "Resumed",
        _ => "Finished",
    };
    show_goal(ctx, &goal, verb)
}

/// `loopx goal list`: every goal, one line each.
fn list(ctx: &mut Ctx, app: &App) -> Result<(), ExpectedError> {
    let goals = app.goals()?;
    if ctx.json {
        return ctx.json_out(&document("goals", &goals));
    }
    if goals.is_empty() {
        return ctx.line("No goals yet. Start one: loopx goal start \"OBJECTIVE\"");
    }
    for goal in &goals {
        ctx.line(views::goal_line(ctx.style, goal))?;
    }
    Ok(())
}

/// An amended goal, shown: its new revision, and what happens to the slices under way.
fn amended(ctx: &mut Ctx, amended: &Amended) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&document("amended", &amended_json(amended)));
    }
    let r = &amended.revision;
    ctx.line(format!(
        "Amended goal {} to revision {}: {}",
        amended.goal.id,
        r.number,
        r.summary()
    ))?;
    ctx.line(
        "Slices already running finish under the revision they started with; every slice after this one is told the change, and the next one re-plans the open todos.",
    )
}

/// A new goal, shown: where it starts, and what the person should know before its agents do.
/// `loopx goal start`, guided or not.
fn start(ctx: &mut Ctx, app: &App, args: StartArgs) -> Result<(), ExpectedError> {
    let mut start = StartGoal {
        objective: args.objective.or(args.goal_text).unwrap_or_default(),
        scope: args.scope,
        permission: args.permission.unwrap_or(PermissionLevel::WorkspaceWrite),
        share: args.share,
        priority: args.priority,
        isolation: args.isolation,
        from_head: args.from_head,
        from: args.from.as_deref().map(from_goal).transpose()?,
    };
    if !args.guided.guided {
        return started(ctx, app.start_goal(start)?).map(drop);
    }
    let asked = super::guided::ask(ctx, app, &mut start, args.permission.is_some(), args.guided)?;
    // With `--json` the guided start prints one document, the goal in it.
    let goal = match (ctx.json, app.start_goal(start)?) {
        (true, s) => s.goal,
        (false, s) => started(ctx, s)?,
    };
    super::guided::carry_out(ctx, app, goal, asked)
}

fn started(ctx: &mut Ctx, started: Started) -> Result<Goal, ExpectedError> {
    show_goal(ctx, &started.goal, "Started")?;
    if let (Some(from), Some(base), false) = (started.from, started.goal.isolation.base(), ctx.json)
    {
        ctx.line(format!(
            "It starts from {from}'s branch: {} is the tip of {}.",
            short(base),
            loopx_git::worktree::integration_branch(from)
        ))?;
    }
    if let Some(why) = started.warning {
        // The goal exists; its first claim makes the branch, or fails saying why.
        ctx.warn(format!("warning: {why}"))?;
    }
    for unmerged in &started.unmerged {
        warn_unmerged(ctx, &started.goal, unmerged)?;
    }
    Ok(started.goal)
}

/// `loopx goal show`: the goal, its revisions, and how to merge a finished goal's work.
fn shown(ctx: &mut Ctx, app: &App, goal: &Goal) -> Result<(), ExpectedError> {
    let revisions = app.goal_revisions(goal.id)?;
    if ctx.json {
        return ctx.json_out(&document(
            "goal",
            &Shown {
                goal,
                revisions: &revisions,
            },
        ));
    }
    ctx.line(views::goal_line(ctx.style, goal))?;
    if goal.revision > 1 {
        ctx.line("Revisions:")?;
        for r in &revisions {
            ctx.line(format!(
                "  {}  {}  {}  {}",
                r.number,
                r.at,
                r.by,
                r.summary()
            ))?;
        }
    }
    // A finished worktree goal's work waits on its branch, whatever goal came next:
    // the merge command stays one command away.
    if goal.status == GoalStatus::Done && matches!(goal.isolation, Isolation::Worktree { .. }) {
        for line in merge_commands(goal) {
            ctx.line(line)?;
        }
    }
    Ok(())
}

/// `--from g1`: a goal's id, or a word on what `--from` takes.
fn from_goal(text: &str) -> Result<GoalId, ExpectedError> {
    text.parse::<GoalId>().map_err(|_| {
        ExpectedError::Usage(format!(
            "`--from {text}` names no goal: `--from` takes a goal such as `g1`, whose branch loopx/g1 the new goal starts from\n(hint: to start from a branch of your own, check it out and leave out `--from`)"
        ))
    })
}

/// A finished goal's work that the goal just started lacks: what to do about it.
fn warn_unmerged(ctx: &mut Ctx, goal: &Goal, unmerged: &Unmerged) -> Result<(), ExpectedError> {
    let Unmerged {
        goal: done,
        branch,
        commits,
    } = unmerged;
    let base = goal.isolation.base().map(short).unwrap_or_default();
    let commits = loopx_git::clean::commits(*commits);
    let new = goal.id;
    ctx.warn(format!(
        "warning: {done} is done, and its branch {branch} has {commits} that {new} starts without (it starts at {base}): {new}'s agents will not see {done}'s work."
    ))?;
    ctx.warn(format!(
        "  To build on it: `loopx goal done {new}`, then `git merge {branch}` into your branch and start the goal again, or start it from {done}'s branch with `loopx goal start --from {done} \"…\"`."
    ))?;
    ctx.warn(format!(
        "  If you do not want that work, delete the branch: `git branch -D {branch}` (`loopx clean --all` deletes every finished goal's branches)."
    ))
}

fn show_goal(ctx: &mut Ctx, goal: &Goal, verb: &str) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&document("goal", goal));
    }
    ctx.line(format!("{verb} goal {}: {}", goal.id, goal.objective))?;
    if let Isolation::Worktree { base } = &goal.isolation {
        let into = loopx_git::worktree::integration_branch(goal.id);
        match goal.status {
            GoalStatus::Active if verb == "Started" => ctx.line(format!(
                "Each todo is worked on its own branch ({into}-tN for todo tN) in its own worktree under .loopx/worktrees/{}/; done todos land on {into}, which starts at {}. Your branch and work tree are never touched.",
                goal.id,
                short(base)
            ))?,
            GoalStatus::Done => {
                for line in merge_commands(goal) {
                    ctx.line(line)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `goal show --json`: the goal's fields, and its revisions.
#[derive(serde::Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    goal: &'a Goal,
    revisions: &'a [GoalRevision],
}

/// `goal amend --json`: the goal as it now is, and the revision it became.
#[derive(serde::Serialize)]
struct AmendedJson<'a> {
    goal: &'a Goal,
    revision: &'a GoalRevision,
}

fn amended_json(a: &Amended) -> AmendedJson<'_> {
    AmendedJson {
        goal: &a.goal,
        revision: &a.revision,
    }
}
