//! `loopx init`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use loopx_kernel::{Project, Store};

/// The built-in simulated agent's profile (`loopx demo` derives its reviewer from it).
pub(crate) const DEMO_PROFILE: &str = include_str!("../../../../profiles/demo.toml");

/// The example profiles shipped in `profiles/`, written into a new project so that
/// `loopx profile list` shows something real to copy from.
const EXAMPLE_PROFILES: [(&str, &str); 4] = [
    (
        "executor",
        include_str!("../../../../profiles/executor.toml"),
    ),
    (
        "reviewer",
        include_str!("../../../../profiles/reviewer.toml"),
    ),
    ("planner", include_str!("../../../../profiles/planner.toml")),
    ("demo", DEMO_PROFILE),
];

use crate::context::Ctx;
use crate::errors::ExpectedError;

pub fn run(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let project = create(ctx, &ctx.init_dir()?)?;
    if ctx.json {
        let path = project.state_dir().display().to_string();
        ctx.json_out(&serde_json::json!({ "format_version": 1, "project": { "root": project.root().display().to_string(), "state_dir": path } }))
    } else {
        ctx.line(format!(
            "Created {} (example profiles in profiles/)",
            project.state_dir().display()
        ))?;
        ctx.line("Next: loopx goal start \"OBJECTIVE\"   then   loopx todo add \"TITLE\"")
    }
}

/// Creates the project in `dir`: `.loopx/`, the store, and the example profiles.
pub(crate) fn create(ctx: &Ctx, dir: &std::path::Path) -> Result<Project, ExpectedError> {
    let project = Project::create(dir).map_err(loopx_kernel::KernelError::from)?;
    Store::create(&project, ctx.now(), &ctx.actor())?;
    for (name, text) in EXAMPLE_PROFILES {
        let path = project
            .state_dir()
            .join("profiles")
            .join(format!("{name}.toml"));
        write_private(&path, text)?;
    }
    Ok(project)
}

/// Writes a new file readable by its owner only; an existing file is an error, never
/// overwritten.
pub(crate) fn write_private(path: &std::path::Path, text: &str) -> Result<(), ExpectedError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| ExpectedError::Usage(format!("cannot write `{}`: {e}", path.display())))
}
