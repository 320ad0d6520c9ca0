//! `loopx init`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use loopx_kernel::{KernelError, Project, ProjectError, Store};

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

/// `.loopx/.gitignore`: the store, the slice logs (what agents printed) and the rest of loopx's
/// own state stay out of git; the profiles, adapters and `loopx.toml` may be shared.
const GITIGNORE: &str = "# Written by `loopx init`. loopx's state and the agents' output logs stay out of git;\n\
# profiles/, adapters/ and loopx.toml may be committed and shared.\n\
/state.redb\n\
/state.redb.*\n\
/slices/\n\
/artifacts/\n\
/bells/\n\
/supervisors/\n\
/worktrees/\n\
/logs/\n\
/projections/\n";

/// The budget a new project starts with (`.loopx/loopx.toml`): whatever its agents report, a
/// goal that goes this many slices without a todo done asks a person whether to go on. Without
/// one, an agent whose every slice failed quietly ran 1,341 slices in two minutes.
const DEFAULT_BUDGET: &str = "# The most a goal spends without a todo done; past it, loopx asks a person whether to go\n\
# on (docs/quota.md). Raise it for long goals, add `tokens` or `cost_usd`, but keep a bound.\n\
[budget]\n\
slices = 30\n";

/// `loopx init`: a new project, or — like `git init` — nothing at all for a healthy one. A
/// half-made or damaged one is an error that names the way out.
pub fn run(ctx: &mut Ctx, args: crate::args::InitArgs) -> Result<(), ExpectedError> {
    let dir = ctx.init_dir()?;
    let config = match &args.store {
        Some(url) => Some(store_config(url)?),
        None => None,
    };
    let (project, created, found) = create_or_existing(ctx, &dir, config.as_deref())?;
    let registered = register(ctx, &project)?;
    if ctx.json {
        let path = project.state_dir().display().to_string();
        return ctx.json_out(&serde_json::json!({ "format_version": 1, "project": { "root": project.root().display().to_string(), "state_dir": path }, "created": created, "registered": registered }));
    }
    if !created {
        return ctx.line(format!(
            "{} is a loopx project already; nothing changed",
            project.state_dir().display()
        ));
    }
    let for_clis = match found.is_empty() {
        true => String::new(),
        false => format!("; one for each agent CLI found: {}", found.join(", ")),
    };
    ctx.line(format!(
        "Created {} (example profiles in profiles/{for_clis})",
        project.state_dir().display()
    ))?;
    ctx.line("Next: loopx goal start \"OBJECTIVE\"")?;
    ctx.line("      loopx agent add NAME --profile executor   (profiles: loopx profile list)")?;
    ctx.line("      loopx todo add \"TITLE\"")?;
    ctx.line("      loopx run                                 (watch it: loopx board)")
}

/// A new project in `dir` (and the adapters it wrote a profile for), or the whole one that is
/// there already (`false`: nothing was written).
pub(crate) fn create_or_existing(
    ctx: &Ctx,
    dir: &std::path::Path,
    config: Option<&str>,
) -> Result<(Project, bool, Vec<String>), ExpectedError> {
    match create_with(ctx, dir, config) {
        Ok((project, found)) => Ok((project, true, found)),
        Err(ExpectedError::Kernel(KernelError::Project(ProjectError::AlreadyInitialised {
            path,
        }))) => Ok((existing(ctx, dir, &path)?, false, Vec::new())),
        Err(e) => Err(e),
    }
}

/// Writes an executor profile for each agent CLI on `PATH` that has none in the project yet
/// (a profile of that name is kept as it is); the adapters it wrote one for. Each is written
/// whole beside its place and linked in, which fails if a file appeared there meanwhile: a
/// kill leaves no half-written profile that a later `connect` would keep.
pub(crate) fn add_cli_profiles(project: &Project) -> Result<Vec<String>, ExpectedError> {
    let profiles = project.state_dir().join("profiles");
    let mut written = Vec::new();
    for adapter in installed_clis() {
        let path = profiles.join(format!("{}.toml", adapter.name));
        if path.symlink_metadata().is_ok() {
            continue;
        }
        let tmp = profiles.join(format!(".{}.toml.{}.tmp", adapter.name, std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        write_private(&tmp, &installed_profile(&adapter))?;
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => written.push(adapter.name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(ExpectedError::Usage(format!(
                    "cannot write `{}`: {e}",
                    path.display()
                )));
            }
        }
    }
    Ok(written)
}

/// Adds the project to the person's list (`loopx projects`). A list that cannot be written
/// is a warning and the project stands: the list is a convenience, the project is not.
pub(crate) fn register(ctx: &mut Ctx, project: &Project) -> Result<bool, ExpectedError> {
    let Some(registry) = ctx.registry.clone() else {
        return Ok(false);
    };
    match registry.register(project.root(), loopx_kernel::Timestamp::now()) {
        Ok(_) => Ok(true),
        Err(e) => {
            ctx.warn(format!(
                "warning: the project is not in `loopx projects`: {e}"
            ))?;
            Ok(false)
        }
    }
}

/// The project that is already in `dir`, if it is whole; else what is wrong and what to do.
fn existing(
    ctx: &Ctx,
    dir: &std::path::Path,
    state_dir: &std::path::Path,
) -> Result<Project, ExpectedError> {
    let project = Project::at(dir)
        .map_err(KernelError::from)?
        .with_store(ctx.store.clone())
        .with_git_timeout(ctx.git_timeout);
    match Store::open_read(&project) {
        Ok(_) => Ok(project),
        Err(KernelError::Store(e)) => Err(ExpectedError::Reported {
            summary: format!(
                "`{}` holds a project whose state store cannot be used: {}\n(hint: if it holds nothing you need — a `loopx init` that was interrupted — remove it with `rm -r {}` and run `loopx init` again; `loopx doctor` shows more)",
                state_dir.display(),
                crate::errors::one_line(&e),
                state_dir.display()
            ),
            code: crate::exit_code::STORE,
        }),
        Err(e) => Err(e.into()),
    }
}

/// Creates the project in `dir` — `.loopx/`, the store, and the example profiles — in a
/// staging directory that is renamed into place once complete: a kill at any moment leaves no
/// half-made project.
pub(crate) fn create(ctx: &Ctx, dir: &std::path::Path) -> Result<Project, ExpectedError> {
    create_with(ctx, dir, None).map(|(project, _)| project)
}

/// `loopx.toml` for a project whose store is the PostgreSQL database at `url`. A password in
/// the URL is refused: the file may be shared and committed, and loopx never stores a secret.
fn store_config(url: &str) -> Result<String, ExpectedError> {
    if let Some(problem) = loopx_vocab::store_url_problem(url) {
        let more = match problem {
            loopx_vocab::StoreUrlProblem::NotPostgres => " (postgres://USER@HOST:PORT/DB)",
            loopx_vocab::StoreUrlProblem::Password => {
                ", which loopx would have to write into .loopx/loopx.toml\n(hint: give it in the environment instead: PGPASSWORD=… loopx init --store URL-WITHOUT-PASSWORD, or set the whole URL in LOOPX_STORE_URL on each host)"
            }
        };
        return Err(ExpectedError::Usage(format!(
            "`--store {}` {}{more}",
            loopx_kernel::store::pg::redact_url(url),
            problem.words().0
        )));
    }
    let quoted = serde_json::to_string(url).unwrap_or_default();
    Ok(format!(
        "# Written by `loopx init --store`: the state of this project lives in PostgreSQL and is\n# shared by every host whose loopx.toml names it (docs/design/multi-host.md).\n[store]\nurl = {quoted}\n"
    ))
}

/// The new project, and the adapters it wrote a profile for (their CLI is on `PATH`).
fn create_with(
    ctx: &Ctx,
    dir: &std::path::Path,
    config: Option<&str>,
) -> Result<(Project, Vec<String>), ExpectedError> {
    let staged = Project::stage(dir)
        .map_err(KernelError::from)?
        .with_store(ctx.store.clone());
    let config = match config {
        // `[store]` last: it is the section a person copies to other hosts.
        Some(store) => format!("{DEFAULT_BUDGET}\n{store}"),
        None => format!("# Written by `loopx init`.\n{DEFAULT_BUDGET}"),
    };
    write_private(&staged.project().state_dir().join("loopx.toml"), &config)?;
    let store = Store::create(staged.project(), ctx.now(), &ctx.actor())?;
    drop(store);
    write_private(&staged.project().state_dir().join(".gitignore"), GITIGNORE)?;
    let profiles = staged.project().state_dir().join("profiles");
    for (name, text) in EXAMPLE_PROFILES {
        write_private(&profiles.join(format!("{name}.toml")), text)?;
    }
    let mut found = Vec::new();
    for adapter in installed_clis() {
        write_private(
            &profiles.join(format!("{}.toml", adapter.name)),
            &installed_profile(&adapter),
        )?;
        found.push(adapter.name);
    }
    let project = staged.commit().map_err(KernelError::from)?;
    Ok((project.with_git_timeout(ctx.git_timeout), found))
}

/// The built-in vendor adapters whose program is on `PATH`: a new project gets a profile for
/// each agent CLI this machine already has.
pub(crate) fn installed_clis() -> Vec<loopx_adapters::Adapter> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let catalog = loopx_adapters::AdapterCatalog::builtin();
    loopx_adapters::BUILTIN_ADAPTERS
        .iter()
        // A shipped example of the same name keeps its place.
        .filter(|(name, _)| !EXAMPLE_PROFILES.iter().any(|(example, _)| example == name))
        .filter_map(|(name, _)| catalog.load(name).ok().flatten())
        .filter_map(|adapter| {
            let program = adapter.program.clone()?;
            // An empty entry would mean the current directory: not an installed CLI.
            std::env::split_paths(&path)
                .filter(|dir| dir.is_absolute())
                .any(|dir| is_executable(&dir.join(&program)))
                .then_some(adapter)
        })
        .collect()
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// An executor profile on `adapter`, for a CLI found on `PATH`: the adapter's own defaults,
/// workspace-write, and limits and a quota account to adjust. It names the program, not where
/// it was found: the file may be committed, and a home directory's path is nobody's business.
fn installed_profile(adapter: &loopx_adapters::Adapter) -> String {
    let name = &adapter.name;
    let description =
        serde_json::to_string(&format!("{}: an executor", adapter.description)).unwrap_or_default();
    format!(
        r#"# Written by `loopx init`, which found `{program}` on PATH. An example to adjust;
# every key is described in docs/profiles.md. Use it: loopx agent add NAME --profile {name}
description = {description}
adapter = "{name}"
role = "executor"
permission = "workspace-write"

[limits]
max_time = "30m"
idle_timeout = "5m"
grace = "10s"

[quota]
# Every profile on the same account shares holds: a limit hit by one pauses all.
account = "{name}-main"
slices_per_hour = 6
burst = 2
"#,
        program = adapter.program.as_deref().unwrap_or_default(),
    )
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
