//! `loopx say AGENT TEXT`: a person's message to an agent (`loopx_app::say`).

use crate::args::SayArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, args: SayArgs) -> Result<(), ExpectedError> {
    let agent = super::id(&args.agent)?;
    let app = ctx.app()?;
    let said = app.say(agent, args.text.join(" "))?;
    if ctx.json {
        return ctx.json_out(&crate::output::document("message", &said.message));
    }
    ctx.line(said.sentence())
}
