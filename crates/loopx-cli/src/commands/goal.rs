//! `loopx goal start|list|show|pause|resume|done`.

use loopx_kernel::model::{GoalStatus, PermissionLevel};
use loopx_kernel::store::Applied;
use loopx_kernel::{GoalId, Op};

use super::id;
use crate::args::GoalCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: GoalCommand) -> Result<(), ExpectedError> {
    let (target, to) = match cmd {
        GoalCommand::Start {
            objective,
            scope,
            permission,
            share,
        } => {
            let permission = match permission.as_str() {
                "read-only" => PermissionLevel::ReadOnly,
                "full" => PermissionLevel::Full,
                _ => PermissionLevel::WorkspaceWrite,
            };
            let store = ctx.store()?;
            let applied = store.apply(
                Op::GoalStart {
                    objective,
                    scope,
                    permission,
                    share,
                },
                &ctx.actor(),
                ctx.now(),
            )?;
            return show_applied(ctx, applied, "Started");
        }
        GoalCommand::List => {
            let goals = ctx.store_read()?.read(|s| s.goals())?;
            if ctx.json {
                return ctx.json_out(&document("goals", &goals));
            }
            if goals.is_empty() {
                return ctx.line("No goals yet. Start one: loopx goal start \"OBJECTIVE\"");
            }
            for goal in &goals {
                ctx.line(views::goal_line(ctx.style, goal))?;
            }
            return Ok(());
        }
        GoalCommand::Show { id: goal } => {
            let goal = match goal {
                Some(text) => {
                    let gid: GoalId = id(&text)?;
                    ctx.store_read()?
                        .read(|s| s.goal(gid))?
                        .ok_or_else(|| not_found(&text))?
                }
                None => ctx
                    .store_read()?
                    .read(|s| s.current_goal())?
                    .ok_or_else(|| {
                        ExpectedError::Usage(
                            "there is no current goal\n(hint: `loopx goal start \"OBJECTIVE\"`)"
                                .to_owned(),
                        )
                    })?,
            };
            return if ctx.json {
                ctx.json_out(&document("goal", &goal))
            } else {
                ctx.line(views::goal_line(ctx.style, &goal))
            };
        }
        GoalCommand::Pause { id } => (id, GoalStatus::Paused),
        GoalCommand::Resume { id } => (id, GoalStatus::Active),
        GoalCommand::Done { id } => (id, GoalStatus::Done),
    };
    let goal = target.as_deref().map(id::<GoalId>).transpose()?;
    let store = ctx.store()?;
    let applied = store.apply(Op::GoalSetStatus { goal, to }, &ctx.actor(), ctx.now())?;
    let verb = match to {
        GoalStatus::Paused => "Paused",
        GoalStatus::Active => "Resumed",
        _ => "Finished",
    };
    show_applied(ctx, applied, verb)
}

fn show_applied(ctx: &mut Ctx, applied: Applied, verb: &str) -> Result<(), ExpectedError> {
    let Applied::Goal(goal) = applied else {
        unreachable!("goal operations yield a goal")
    };
    if ctx.json {
        ctx.json_out(&document("goal", &goal))
    } else {
        ctx.line(format!("{verb} goal {}: {}", goal.id, goal.objective))
    }
}

fn not_found(text: &str) -> ExpectedError {
    ExpectedError::Kernel(
        loopx_kernel::Invalid::NotFound {
            what: "goal",
            id: text.to_owned(),
        }
        .into(),
    )
}
