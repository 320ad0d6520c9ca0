//! `loopx agent add|list|set|remove`: the application layer's agent operations, shown.

use loopx_app::quota::{AgentAdded, AgentSpec};
use loopx_kernel::store::AgentChange;

use super::id;
use crate::args::AgentCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: AgentCommand) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    // A profile whose program is not installed is accepted (the person may install it next),
    // with a warning that names the install command.
    let path = std::env::var_os("PATH");
    match cmd {
        AgentCommand::Add {
            name,
            profile,
            capabilities,
            role,
        } => {
            let spec = AgentSpec {
                name: id(&name)?,
                profile,
                capabilities,
                role,
            };
            let added = app.add_agent(spec, path.as_deref())?;
            shown(ctx, added, "Added")
        }
        AgentCommand::Set {
            name,
            profile,
            capabilities,
            role,
            goals,
        } => {
            let change = AgentChange {
                profile,
                capabilities: (!capabilities.is_empty()).then_some(capabilities),
                role,
                goals: goals.as_deref().map(goal_list).transpose()?,
            };
            let changed = app.set_agent(id(&name)?, change, path.as_deref())?;
            shown(ctx, changed, "Changed")
        }
        AgentCommand::Remove { name } => {
            let agent = app.remove_agent(id(&name)?)?;
            if ctx.json {
                return ctx.json_out(&document("agent", &agent));
            }
            ctx.line(format!("Removed agent {}", agent.name))
        }
        AgentCommand::List => {
            let agents = app.agents()?;
            if ctx.json {
                return ctx.json_out(&document("agents", &agents));
            }
            if agents.is_empty() {
                return ctx
                    .line("No agents yet. Register one: loopx agent add NAME --profile PROFILE");
            }
            for agent in &agents {
                ctx.line(views::agent_line(agent))?;
            }
            Ok(())
        }
    }
}

/// An agent added or changed, with a warning when it cannot run yet (`loopx run` would only
/// show `spawn_failed`).
fn shown(ctx: &mut Ctx, added: AgentAdded, verb: &str) -> Result<(), ExpectedError> {
    let AgentAdded { agent, cannot_run } = added;
    if ctx.json {
        return ctx.json_out(&document("agent", &agent));
    }
    ctx.line(format!("{verb} agent {}", views::agent_line(&agent)))?;
    match cannot_run {
        Some(why) => ctx.line(format!(
            "warning: {} cannot run yet: {why} (`loopx doctor` checks again)",
            agent.name
        )),
        None => Ok(()),
    }
}

/// `--goals g1,g3` as goal ids; `all` for every goal.
fn goal_list(text: &str) -> Result<Vec<loopx_kernel::GoalId>, ExpectedError> {
    if text.trim() == "all" {
        return Ok(Vec::new());
    }
    let goals: Vec<loopx_kernel::GoalId> = text
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(id::<loopx_kernel::GoalId>)
        .collect::<Result<_, _>>()?;
    if goals.is_empty() {
        return Err(ExpectedError::Usage(format!(
            "--goals `{text}` names no goal\n(hint: `--goals g1,g3` keeps the agent to those goals; `--goals all` lets it work on every goal)"
        )));
    }
    Ok(goals)
}
