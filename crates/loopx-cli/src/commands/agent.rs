//! `loopx agent add|list`.

use loopx_kernel::Op;
use loopx_kernel::store::Applied;

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
            let store = ctx.store()?;
            let op = Op::AgentAdd {
                name,
                profile,
                capabilities,
                role,
            };
            let Applied::Agent(agent) = store.apply(op, &ctx.actor(), ctx.now())? else {
                unreachable!("agent add yields an agent")
            };
            if ctx.json {
                ctx.json_out(&document("agent", &agent))
            } else {
                ctx.line(format!("Added agent {}", views::agent_line(&agent)))
            }
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
