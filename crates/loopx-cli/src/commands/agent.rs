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
            let store = ctx.store()?;
            let op = Op::AgentAdd {
                name: id(&name)?,
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
