//! `loopx say AGENT TEXT`: a person's message to an agent (`loopx_app::say`).

use crate::args::SayArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx, args: SayArgs) -> Result<(), ExpectedError> {
    let agent = super::id(&args.agent)?;
    let app = ctx.app()?;
    let message = app.say(agent, args.text.join(" "))?;
    let waiting = app.waiting_messages(&message.agent)?.len();
    if ctx.json {
        return ctx.json_out(&crate::output::document("message", &message));
    }
    let more = match waiting {
        1 => String::new(),
        n => format!(" ({n} wait for it now)"),
    };
    ctx.line(format!(
        "Message {} to {}: it heads {}'s next slice's prompt{more}",
        message.id, message.agent, message.agent
    ))
}
