//! `loopx doctor`: is this project's state safe and sound?

use serde::Serialize;

use loopx_kernel::{KernelError, Store};

use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::exit_code;

#[derive(Debug, Serialize)]
pub(crate) struct Check {
    pub(crate) name: &'static str,
    pub(crate) ok: bool,
    /// Works, but less well than it could (e.g. slices without a full sandbox).
    pub(crate) warning: bool,
    pub(crate) detail: String,
    #[serde(skip)]
    pub(crate) code: u8,
}

impl Check {
    fn pass(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            ok: true,
            warning: false,
            detail: detail.into(),
            code: exit_code::OK,
        }
    }

    fn warn(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            warning: true,
            ..Check::pass(name, detail)
        }
    }

    fn fail(name: &'static str, error: impl Into<ExpectedError>) -> Check {
        let error = error.into();
        Check {
            name,
            ok: false,
            warning: false,
            detail: error.render(),
            code: error.exit_code(),
        }
    }
}

pub fn run(ctx: &mut Ctx, repair: bool) -> Result<(), ExpectedError> {
    let checks = checks(ctx, repair);
    let failed: Vec<&Check> = checks.iter().filter(|c| !c.ok).collect();
    if ctx.json {
        ctx.json_out(
            &serde_json::json!({ "format_version": 1, "ok": failed.is_empty(), "checks": checks }),
        )?;
    } else {
        for check in &checks {
            let mark = match (check.ok, check.warning) {
                (true, false) => ctx.style.green("ok  "),
                (true, true) => ctx.style.yellow("warn"),
                (false, _) => ctx.style.red("FAIL"),
            };
            ctx.line(format!("{mark} {:<12} {}", check.name, check.detail))?;
        }
    }
    match failed.first() {
        None => Ok(()),
        Some(first) => Err(ExpectedError::Reported {
            summary: format!("doctor found {} problem(s)", failed.len()),
            code: first.code,
        }),
    }
}

/// The checks; only with `repair` is the store opened for writing (and so possibly repaired).
pub(crate) fn checks(ctx: &Ctx, repair: bool) -> Vec<Check> {
    let mut checks = vec![sandbox(), slice_cgroups()];
    let project = match ctx.project() {
        Ok(project) => project,
        Err(e) => {
            checks.push(Check::fail("project", e));
            return checks;
        }
    };
    checks.push(Check::pass(
        "project",
        format!(
            "{} (private: 0700, owned by you, not a link)",
            project.state_dir().display()
        ),
    ));
    let opened = match repair {
        true => Store::open(&project),
        false => Store::open_inspect(&project),
    };
    let mut store = match opened {
        Ok(store) => store,
        Err(e) => {
            checks.push(Check::fail("store", e));
            return checks;
        }
    };
    let schema = store
        .read(|s| s.meta("schema_version"))
        .ok()
        .flatten()
        .unwrap_or(loopx_kernel::store::SCHEMA_VERSION);
    checks.push(Check::pass(
        "store",
        format!("{} opens, schema {schema}", store.path().display()),
    ));
    checks.extend(database(&store));
    checks.extend(integrity(&mut store, repair));
    checks.extend(consistency(&mut store, repair));
    if let Some(check) = worktrees(&project, &store, repair) {
        checks.push(check);
    }
    if let Some(check) = agents(&project, &store) {
        checks.push(check);
    }
    checks.push(match loopx_supervisor::Notifier::load(&project) {
        Ok(Some(notifier)) => match notifier.webhook_state() {
            Some((false, webhook)) => Check::warn("settings", format!("loopx.toml: {webhook}")),
            Some((true, webhook)) => Check::pass("settings", format!("loopx.toml: {webhook}")),
            None => Check::pass("settings", "loopx.toml: notifications on"),
        },
        Ok(None) => Check::pass("settings", "no notification command (loopx.toml)"),
        Err(e) => Check::fail("settings", ExpectedError::Supervisor(e)),
    });
    checks.extend(lark(ctx));
    checks
}

/// PostgreSQL's layout version and clock, for a store kept there.
fn database(store: &Store) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(layout) = store.database_layout().transpose() {
        // PostgreSQL: its own pages are its business; its layout version and clock are ours.
        match layout {
            Ok((found, known)) if found == known => checks.push(Check::pass(
                "database",
                format!("PostgreSQL layout version {found} (this loopx writes {known})"),
            )),
            Ok((found, known)) => checks.push(Check::warn(
                "database",
                format!("PostgreSQL layout version {found}, this loopx writes {known}: upgrade loopx on this host"),
            )),
            Err(e) => checks.push(Check::fail("database", e)),
        }
        match store.database_now() {
            Ok(Some(db)) => {
                let local = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                let skew = db.0.abs_diff(local);
                let text = format!(
                    "this host's clock is {skew} ms from the database's; loopx keeps time by the database's"
                );
                checks.push(if skew > 60_000 {
                    Check::warn("clock", text)
                } else {
                    Check::pass("clock", text)
                });
            }
            Ok(None) => {}
            Err(e) => checks.push(Check::fail("clock", e)),
        }
    }
    checks
}

/// Whether redb's file is sound (PostgreSQL keeps its own pages).
fn integrity(store: &mut Store, repair: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let found = match (store.is_postgres(), repair) {
        (true, _) => Ok(true),
        (false, true) => store.check_integrity(),
        // On a private copy: the store itself is only read.
        (false, false) => store.check_integrity_of_copy(),
    };
    match (found, repair) {
        (Ok(true), _) if store.is_postgres() => {}
        (Ok(true), _) => checks.push(Check::pass(
            "integrity",
            "redb checksums and allocator state are sound",
        )),
        (Ok(false), true) => checks.push(Check::pass(
            "integrity",
            "redb repaired its allocator state after an interrupted write",
        )),
        (Ok(false), false) => checks.push(Check::warn(
            "integrity",
            "redb would repair its allocator state after an interrupted write (the next write does it; `loopx doctor --repair` now)",
        )),
        (Err(e), _) => checks.push(Check::fail("integrity", e)),
    }
    checks
}

/// Whether the records agree with each other; with `repair`, derived indexes rebuilt.
fn consistency(store: &mut Store, repair: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut consistency = store.read(loopx_kernel::check_consistency);
    if repair
        && let Ok(problems) = &consistency
        && problems.iter().any(|p| p.starts_with("the todo indexes"))
    {
        // The indexes are derived from the todos: rebuilt, and checked again.
        match store.rebuild_todo_index() {
            Ok(()) => {
                checks.push(Check::pass("todo indexes", "rebuilt from the todos"));
                consistency = store.read(loopx_kernel::check_consistency);
            }
            Err(e) => checks.push(Check::fail("todo indexes", e)),
        }
    }
    match consistency {
        Ok(problems) if problems.is_empty() => {
            let events = store.read(|s| s.event_count()).unwrap_or(0);
            checks.push(Check::pass(
                "consistency",
                format!("leases, epochs and {events} events are consistent"),
            ));
        }
        Ok(problems) => {
            let error: KernelError = loopx_kernel::StoreError::Damaged {
                path: store.path().to_path_buf(),
                why: problems.join("; "),
            }
            .into();
            checks.push(Check::fail("consistency", error));
        }
        Err(e) => checks.push(Check::fail("consistency", e)),
    }
    checks
}

/// `[lark]`, when set: the token, the table and its fields, the chat (`docs/lark.md`).
fn lark(ctx: &Ctx) -> Vec<Check> {
    let Ok(Some(config)) = ctx
        .app()
        .and_then(|app| app.lark_config().map_err(Into::into))
    else {
        return Vec::new();
    };
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let secret = env("LOOPX_LARK_APP_SECRET");
    let callback =
        env("LOOPX_LARK_VERIFICATION_TOKEN").is_some() && env("LOOPX_LARK_ENCRYPT_KEY").is_some();
    loopx_lark::doctor::check(&config, secret.as_deref().map(str::trim), callback)
        .into_iter()
        .map(|finding| match finding {
            loopx_lark::doctor::Finding::Ok(text) => Check::pass("lark", text),
            loopx_lark::doctor::Finding::Warn(text) => Check::warn("lark", text),
            loopx_lark::doctor::Finding::Fail(text) => {
                Check::fail("lark", ExpectedError::Config(text))
            }
        })
        .collect()
}

/// Whether every registered agent can run: its profile loads and its program is installed.
/// A warning, not a failure: the project's state is sound, and the person may install the CLI
/// next. `None` when no agent is registered.
fn agents(project: &loopx_kernel::Project, store: &Store) -> Option<Check> {
    let agents = store.read(|s| s.agents()).ok()?;
    if agents.is_empty() {
        return None;
    }
    let state = project.state_dir();
    let catalog = loopx_adapters::AdapterCatalog::with_dir(state.join("adapters"));
    let path = std::env::var_os("PATH");
    let problems: Vec<String> = agents
        .iter()
        .filter_map(|agent| {
            let why = match loopx_adapters::find_profile(
                &state.join("profiles"),
                &agent.profile,
                &catalog,
            ) {
                Ok(loaded) => loaded.program_missing(path.as_deref())?,
                Err(e) => format!(
                    "profile `{}` cannot be loaded ({}); `loopx profile check` explains",
                    agent.profile,
                    crate::errors::one_line(&e)
                ),
            };
            Some(format!("{}: {why}", agent.name))
        })
        .collect();
    Some(match problems.is_empty() {
        true => Check::pass(
            "agents",
            format!(
                "{} agent(s), each with its profile and program",
                agents.len()
            ),
        ),
        false => Check::warn("agents", problems.join("; ")),
    })
}

/// Which of the `found` worktrees are stale, each with why: its todo is of another goal,
/// finished, or unknown.
fn stale_worktrees(
    store: &Store,
    found: &[(
        loopx_kernel::GoalId,
        loopx_kernel::TodoId,
        std::path::PathBuf,
    )],
) -> Vec<(loopx_kernel::GoalId, loopx_kernel::TodoId, String)> {
    let mut stale = Vec::new();
    for (goal, todo, _) in found {
        let why = match store.read(|s| s.todo(*todo)) {
            Ok(Some(t)) if t.goal != *goal => "of another goal".to_owned(),
            Ok(Some(t)) if t.state.is_final() => t.state.as_str().to_owned(),
            Ok(Some(_)) => continue,
            Ok(None) => "unknown".to_owned(),
            Err(_) => continue,
        };
        stale.push((*goal, *todo, why));
    }
    stale
}

/// Worktrees of todos that are done, dropped or unknown: found, and removed with `--repair`
/// (their branches stay). `None` when the project has no worktrees.
fn worktrees(project: &loopx_kernel::Project, store: &Store, repair: bool) -> Option<Check> {
    use loopx_git::worktree;
    let found = worktree::list(project.root());
    if found.is_empty() {
        return None;
    }
    let stale = stale_worktrees(store, &found);
    let named = |list: &[(loopx_kernel::GoalId, loopx_kernel::TodoId, String)]| {
        list.iter()
            .map(|(g, t, why)| format!("{g}/{t} ({why})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if stale.is_empty() {
        return Some(Check::pass(
            "worktrees",
            format!(
                "{} worktree(s), each of an open or claimed todo",
                found.len()
            ),
        ));
    }
    if !repair {
        return Some(Check::warn(
            "worktrees",
            format!(
                "{} stale worktree(s) in .loopx/worktrees: {}; `loopx doctor --repair` removes them (their branches stay)",
                stale.len(),
                named(&stale)
            ),
        ));
    }
    let failed: Vec<String> = stale
        .iter()
        .filter_map(|(g, t, _)| {
            worktree::remove(project, *g, *t)
                .err()
                .map(|e| e.to_string())
        })
        .collect();
    Some(match failed.as_slice() {
        [] => Check::pass(
            "worktrees",
            format!(
                "removed {} stale worktree(s): {}",
                stale.len(),
                named(&stale)
            ),
        ),
        errors => Check::warn("worktrees", errors.join("; ")),
    })
}

/// Whether each slice gets a cgroup limiting its processes and memory as a whole
/// (`docs/permissions.md`): tried by making one and removing it again; which one it is.
fn slice_cgroups() -> Check {
    let limits = loopx_pty::CgroupLimits {
        processes: Some(loopx_adapters::DEFAULT_PROCESSES),
        memory_bytes: None,
    };
    match loopx_pty::SliceCgroup::create(&format!("doctor-{}", std::process::id()), limits) {
        Ok(cgroup) => {
            let place = cgroup.describe();
            cgroup.remove();
            Check::pass(
                "slice limits",
                format!(
                    "a cgroup per slice ({place}): `[limits] processes` and `memory_total` hold for the whole slice"
                ),
            )
        }
        Err(why) => Check::warn(
            "slice limits",
            format!(
                "no cgroup per slice ({why}): processes are limited in each slice's user namespace (RLIMIT_NPROC; not for root), memory per process (`[limits] memory`), and `memory_total` is not enforced\n(hint: {})",
                loopx_pty::SliceCgroup::hint()
            ),
        ),
    }
}

/// The sandbox on macOS: Seatbelt, when `sandbox-exec` is there.
fn seatbelt(present: bool) -> Check {
    if present {
        Check::pass(
            "sandbox",
            "seatbelt: every slice runs under a generated Seatbelt profile (sandbox-exec); no PID namespace, so escapees are swept by marker (docs/platforms.md)",
        )
    } else {
        Check::warn(
            "sandbox",
            "session: /usr/bin/sandbox-exec is missing, so slices are not contained; profiles with `[sandbox] mode = \"required\"` will not start",
        )
    }
}

/// What the Linux sandbox lacks on this machine, and a hint for each.
fn lacking(
    namespaces: bool,
    has_landlock: bool,
    failure: Option<loopx_pty::NamespaceFailure>,
) -> (Vec<String>, Vec<String>) {
    let mut missing = Vec::new();
    let mut hints = Vec::new();
    if let Some(f) = failure {
        let what = if namespaces {
            "a /proc of the slice's own (it sees every process)"
        } else {
            "the slice's namespaces (the store stays reachable, escapees are swept by marker)"
        };
        missing.push(format!(
            "{what}: step `{}` failed with {}",
            f.step.name(),
            f.error()
        ));
        hints.push(f.hint().to_owned());
    }
    if !has_landlock {
        missing.push("Landlock (writes outside the work tree are not refused)".to_owned());
        hints.push("boot with lsm=…,landlock (Linux 5.13 or later)".to_owned());
    }
    (missing, hints)
}

/// What this machine offers the slices' sandbox (`docs/permissions.md`, `docs/platforms.md`).
fn sandbox() -> Check {
    let helper = std::env::current_exe().map(|program| loopx_pty::ExecHelper {
        program,
        args: vec!["__exec".into()],
    });
    let helper = match helper {
        Ok(helper) => helper,
        Err(e) => {
            return Check::warn(
                "sandbox",
                format!("cannot find loopx's own binary to probe the sandbox with: {e}"),
            );
        }
    };
    let support = loopx_pty::SandboxSupport::probe(&helper);
    if cfg!(target_os = "macos") {
        return seatbelt(support.seatbelt);
    }
    let landlock = support
        .landlock_abi
        .map_or_else(String::new, |abi| format!("Landlock ABI {abi}"));
    let who = if nix::unistd::getuid().is_root() {
        "root".to_owned()
    } else {
        format!("uid {}", nix::unistd::getuid())
    };
    let failure = support.namespace_failure;
    match (support.namespaces, support.landlock_abi.is_some(), failure) {
        (true, true, None) => Check::pass(
            "sandbox",
            format!(
                "user, mount and PID namespaces, a private /dev/pts and {landlock}, as {who}: every slice is contained"
            ),
        ),
        (namespaces, has_landlock, failure) => {
            let (missing, hints) = lacking(namespaces, has_landlock, failure);
            Check::warn(
                "sandbox",
                format!(
                    "as {who}, slices lack {}; profiles with `[sandbox] mode = \"required\"` will not start\n(hint: {})",
                    missing.join(" and "),
                    hints.join("; ")
                ),
            )
        }
    }
}
