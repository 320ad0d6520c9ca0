//! `loopx say AGENT TEXT`: a person's message to an agent (`loopx_app::say`).

use crate::args::SayArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, args: SayArgs) -> Result<(), ExpectedError> {
    let agent = super::id(&args.agent)?;
    let app = ctx.app()?;
    let said = app.say(agent, args.text.join(" "))?;
    if ctx.json {
        return ctx.json_out(&serde_json::json!({
            "format_version": 1,
            "message": said.message,
            "route": said.route,
        }));
    }
    ctx.line(said.sentence())
}
