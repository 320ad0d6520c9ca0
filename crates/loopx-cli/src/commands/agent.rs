//! `loopx agent add|list|set|remove`.

use loopx_kernel::Op;
use loopx_kernel::store::Applied;
use loopx_kernel::store::{ChangeAgent, NewAgent, RemoveAgent};

use super::id;
use crate::args::AgentCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: AgentCommand) -> Result<(), ExpectedError> {
    match cmd {
        AgentCommand::Add {
            name,
            profile,
            capabilities,
            role,
        } => {
            let name = id(&name)?;
            // The profile must load: an agent whose profile is missing or invalid could never
            // run. Its role and capabilities are the defaults, stored on the agent so that the
            // decision and the claim judge by the same record.
            let loaded = super::quota::load_profile(ctx, &profile)?;
            let capabilities = if capabilities.is_empty() {
                loaded.profile.capabilities.clone()
            } else {
                capabilities
            };
            let role = role.or_else(|| loaded.profile.role.clone());
            let agent = apply(
                ctx,
                Op::AgentAdd(NewAgent {
                    name,
                    profile,
                    capabilities,
                    role,
                }),
            )?;
            if ctx.json {
                return ctx.json_out(&document("agent", &agent));
            }
            ctx.line(format!("Added agent {}", views::agent_line(&agent)))?;
            warn_missing_program(ctx, &agent.name, &loaded)
        }
        AgentCommand::Set {
            name,
            profile,
            capabilities,
            role,
        } => {
            let name = id(&name)?;
            let loaded = match &profile {
                Some(profile) => Some(super::quota::load_profile(ctx, profile)?),
                None => None,
            };
            if profile.is_none() && capabilities.is_empty() && role.is_none() {
                return Err(ExpectedError::Usage(
                    "nothing to change: give --profile, --capability or --role".to_owned(),
                ));
            }
            let change = loopx_kernel::store::AgentChange {
                profile,
                capabilities: (!capabilities.is_empty()).then_some(capabilities),
                role,
            };
            let agent = apply(ctx, Op::AgentSet(ChangeAgent { name, change }))?;
            if ctx.json {
                return ctx.json_out(&document("agent", &agent));
            }
            ctx.line(format!("Changed agent {}", views::agent_line(&agent)))?;
            match loaded {
                Some(loaded) => warn_missing_program(ctx, &agent.name, &loaded),
                None => Ok(()),
            }
        }
        AgentCommand::Remove { name } => {
            let name = id(&name)?;
            let agent = apply(ctx, Op::AgentRemove(RemoveAgent { name }))?;
            if ctx.json {
                return ctx.json_out(&document("agent", &agent));
            }
            ctx.line(format!("Removed agent {}", agent.name))
        }
        AgentCommand::List => {
            let agents = ctx.store_read()?.read(|s| s.agents())?;
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

/// Applies an agent operation: each yields the agent (as it is now, or as it was removed).
fn apply(ctx: &Ctx, op: Op) -> Result<loopx_kernel::model::Agent, ExpectedError> {
    match ctx.store()?.apply(op, &ctx.actor(), ctx.now())? {
        Applied::Agent(agent) => Ok(agent),
        other => unreachable!("agent operations yield an agent, not {other:?}"),
    }
}

/// A profile whose program is not installed is accepted (the person may install it next), with
/// a warning that names the install command: before, `loopx run` only showed `spawn_failed`.
fn warn_missing_program(
    ctx: &mut Ctx,
    agent: &loopx_kernel::AgentName,
    loaded: &loopx_adapters::LoadedProfile,
) -> Result<(), ExpectedError> {
    let path = std::env::var_os("PATH");
    match loaded.program_missing(path.as_deref()) {
        Some(why) => ctx.line(format!(
            "warning: {agent} cannot run yet: {why} (`loopx doctor` checks again)"
        )),
        None => Ok(()),
    }
}
