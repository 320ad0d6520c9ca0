//! `loopx init`.

use loopx_kernel::{Project, Store};

use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let dir = ctx.init_dir()?;
    let project = Project::create(&dir).map_err(loopx_kernel::KernelError::from)?;
    Store::create(&project, ctx.now(), &ctx.actor())?;
    if ctx.json {
        let path = project.state_dir().display().to_string();
        ctx.json_out(&serde_json::json!({ "format_version": 1, "project": { "root": project.root().display().to_string(), "state_dir": path } }))
    } else {
        ctx.line(format!("Created {}", project.state_dir().display()))?;
        ctx.line("Next: loopx goal start \"OBJECTIVE\"   then   loopx todo add \"TITLE\"")
    }
}
