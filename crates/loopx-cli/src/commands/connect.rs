//! `loopx connect`: loopx in an existing repository in one command — `.loopx/` when there is
//! none, an executor profile for each agent CLI on `PATH` (and whether each shows a login), the
//! project in the person's list, `loopx doctor`, and what to do next (`docs/cli.md`).

use std::path::Path;

use serde::Serialize;

use crate::commands::{doctor, init};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::document;

#[derive(Debug, Serialize)]
struct Connected {
    project: String,
    created: bool,
    registered: bool,
    /// The profiles this run wrote (one per CLI found that had none).
    profiles_written: Vec<String>,
    clis: Vec<Cli>,
    doctor: Doctor,
}

/// An agent CLI found on `PATH`.
#[derive(Debug, Serialize)]
struct Cli {
    adapter: String,
    program: String,
    login: Login,
}

/// The signs of a login this machine shows for a CLI — a sign, not a proof: only the vendor
/// can say whether it is still good.
#[derive(Debug, Serialize)]
#[serde(tag = "seen", rename_all = "snake_case")]
enum Login {
    /// One of the adapter's credential variables is set.
    Key { variable: String },
    /// One of the adapter's login files is there.
    File { path: String },
    /// Neither: how a person logs it in.
    None { hint: String },
}

#[derive(Debug, Serialize)]
struct Doctor {
    ok: bool,
    failed: Vec<String>,
    warnings: Vec<String>,
}

pub fn run(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let dir = ctx.init_dir()?;
    let (project, created, mut written) = init::create_or_existing(ctx, &dir, None)?;
    if !created {
        written = init::add_cli_profiles(&project)?;
    }
    let registered = init::register(ctx, &project)?;
    let clis = init::installed_clis()
        .iter()
        .map(|adapter| Cli {
            adapter: adapter.name.clone(),
            program: adapter.program.clone().unwrap_or_default(),
            login: login_seen(adapter, |name| std::env::var(name).ok()),
        })
        .collect();
    ctx.set_project_dir(project.root().to_path_buf());
    let checks = doctor::checks(ctx, false);
    let names = |keep: &dyn Fn(&doctor::Check) -> bool| -> Vec<String> {
        checks
            .iter()
            .filter(|c| keep(c))
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect()
    };
    let connected = Connected {
        project: project.root().display().to_string(),
        created,
        registered,
        profiles_written: written,
        clis,
        doctor: Doctor {
            ok: checks.iter().all(|c| c.ok),
            failed: names(&|c| !c.ok),
            warnings: names(&|c| c.ok && c.warning),
        },
    };
    if ctx.json {
        ctx.json_out(&document("connect", &connected))?;
    } else {
        show(ctx, &connected)?;
    }
    match checks.iter().find(|c| !c.ok) {
        None => Ok(()),
        Some(first) => Err(ExpectedError::Reported {
            summary: format!(
                "the project is connected, and `loopx doctor` found {} problem(s): {}\n(hint: `loopx doctor` says more)",
                connected.doctor.failed.len(),
                connected.doctor.failed.join("; ")
            ),
            code: first.code,
        }),
    }
}

/// What this machine shows of a login for `adapter`: a credential variable set, else a login
/// file there, else the adapter's words on how to log in.
fn login_seen(adapter: &loopx_adapters::Adapter, var: impl Fn(&str) -> Option<String>) -> Login {
    let set = |name: &String| var(name).is_some_and(|v| !v.trim().is_empty());
    if let Some(variable) = adapter.env_secrets.iter().find(|v| set(v)) {
        return Login::Key {
            variable: variable.clone(),
        };
    }
    let there = |file: &&String| {
        // Only `~/…` and `$VAR/…`: a relative entry would name a file of the project.
        (file.starts_with('~') || file.starts_with('$'))
            && loopx_adapters::expand_path(file, Path::new("/"), &var).is_some_and(|p| p.is_file())
    };
    if let Some(file) = adapter.login_files.iter().find(there) {
        return Login::File { path: file.clone() };
    }
    Login::None {
        hint: adapter
            .login
            .clone()
            .unwrap_or_else(|| format!("log `{}` in as its documentation says", adapter.name)),
    }
}

fn show(ctx: &mut Ctx, c: &Connected) -> Result<(), ExpectedError> {
    let made = if c.created {
        "created .loopx/"
    } else {
        ".loopx/ was there"
    };
    let listed = if c.registered {
        "; in `loopx projects`"
    } else {
        ""
    };
    ctx.line(format!("Connected {} ({made}{listed})", c.project))?;
    if c.clis.is_empty() {
        ctx.line("No agent CLI found on PATH: install one (npm install -g @anthropic-ai/claude-code, @openai/codex or @google/gemini-cli) and run `loopx connect` again; `loopx demo` runs without one")?;
    } else {
        ctx.line("Agent CLIs on PATH:")?;
    }
    for cli in &c.clis {
        let login = match &cli.login {
            Login::Key { variable } => format!("{variable} is set"),
            Login::File { path } => format!("a login in {path}"),
            Login::None { hint } => format!("no login seen: {hint}"),
        };
        let profile = match c.profiles_written.contains(&cli.adapter) {
            true => "written",
            false => "kept",
        };
        ctx.line(format!(
            "  {:<12} profile {} ({profile}); {login}",
            cli.program, cli.adapter
        ))?;
    }
    let doctor = match (c.doctor.failed.len(), c.doctor.warnings.len()) {
        (0, 0) => "every check passed".to_owned(),
        (0, w) => format!(
            "every check passed, {w} with a warning: {}",
            c.doctor.warnings.join("; ")
        ),
        (f, _) => format!("{f} problem(s): {}", c.doctor.failed.join("; ")),
    };
    ctx.line(format!("Doctor: {doctor}"))?;
    ctx.line("Next:")?;
    let profile = c
        .clis
        .first()
        .map_or("executor", |cli| cli.adapter.as_str());
    ctx.line(format!("  loopx agent add exec --profile {profile}"))?;
    ctx.line("  loopx goal start \"OBJECTIVE\"")?;
    ctx.line("  loopx todo add \"TITLE\"               (or let a planning slice propose todos)")?;
    ctx.line("  loopx run                             (watch it: loopx board)")
}
