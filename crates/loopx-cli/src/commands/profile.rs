//! `loopx profile list|show|check` and `loopx adapter test`.
//!
//! Profiles live in `.loopx/profiles/NAME.toml`; adapters are built in, and a project may add or
//! override them in `.loopx/adapters/`. All validation is `loopx-adapters`'; this file renders.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loopx_adapters::inspect::{self, HealthProbe};
use loopx_adapters::{AdapterCatalog, LoadError};

use crate::args::{AdapterCommand, ProfileCommand};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::document;

fn dirs(ctx: &Ctx) -> Result<(PathBuf, AdapterCatalog), ExpectedError> {
    let project = ctx.project()?;
    let state = project.state_dir();
    Ok((
        state.join("profiles"),
        AdapterCatalog::with_dir(state.join("adapters")),
    ))
}

fn load_error(err: LoadError) -> ExpectedError {
    match err {
        LoadError::Invalid(invalid) => ExpectedError::Config(invalid.render_plain()),
        other => ExpectedError::Config(other.to_string()),
    }
}

pub fn run(ctx: &mut Ctx, cmd: ProfileCommand) -> Result<(), ExpectedError> {
    match cmd {
        ProfileCommand::List => list(ctx),
        ProfileCommand::Show { name } => show(ctx, &name),
        ProfileCommand::Check { profile } => check(ctx, profile.as_deref()),
    }
}

/// `loopx profile list`: each profile on a line, or what makes it invalid.
fn list(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let (dir, catalog) = dirs(ctx)?;
    let profiles = inspect::list_profiles(&dir, &catalog).map_err(load_error)?;
    if ctx.json {
        return ctx.json_out(&document("profiles", &profiles));
    }
    if profiles.is_empty() {
        return ctx.line(format!(
            "No profiles in {}. `loopx init` writes examples there.",
            dir.display()
        ));
    }
    for p in &profiles {
        let line = match &p.content_hash {
            Some(hash) => format!(
                "{:<12} adapter {:<12} {:<16} role {:<10} model {}  {}",
                p.name,
                p.adapter.as_deref().unwrap_or("-"),
                p.permission.map(|l| l.as_str()).unwrap_or("-"),
                p.role.as_deref().unwrap_or("-"),
                p.model.as_deref().unwrap_or("(default)"),
                ctx.style
                    .dim(&format!("sha256 {}", &hash[..hash.len().min(12)]))
            ),
            None => format!(
                "{:<12} {}",
                p.name,
                ctx.style
                    .red(&format!("invalid: {}", p.problems.join("; ")))
            ),
        };
        ctx.line(line)?;
    }
    Ok(())
}

/// `loopx profile show NAME`: the profile's adapter, level and hash, and its file.
fn show(ctx: &mut Ctx, name: &str) -> Result<(), ExpectedError> {
    let (dir, catalog) = dirs(ctx)?;
    let loaded = loopx_adapters::find_profile(&dir, name, &catalog).map_err(load_error)?;
    if ctx.json {
        return ctx.json_out(&document("profile", &loaded));
    }
    let file = dir.join(format!("{name}.toml"));
    ctx.line(ctx.style.bold(&format!(
        "{name} · adapter {} · {}",
        loaded.adapter.name,
        loaded.profile.permission.as_str()
    )))?;
    ctx.line(format!("content hash  sha256 {}", loaded.content_hash))?;
    ctx.line(format!("file          {}", file.display()))?;
    ctx.line("")?;
    let text = loopx_adapters::read_regular_text(&file, loopx_adapters::MAX_CONFIG_BYTES)
        .unwrap_or_default();
    ctx.line(text.trim_end())
}

/// `loopx profile check [PROFILE]`: one profile, or every one; invalid ones fail the command.
fn check(ctx: &mut Ctx, profile: Option<&std::path::Path>) -> Result<(), ExpectedError> {
    let (dir, catalog) = dirs_or_builtin(ctx, profile.is_some())?;
    let results = match profile {
        Some(arg) => vec![inspect::check_profile_file(
            &profile_to_check(arg, &dir)?,
            &catalog,
        )],
        None => inspect::check_profiles_dir(&dir, &catalog).map_err(load_error)?,
    };
    let failed = results.iter().filter(|r| !r.ok).count();
    if ctx.json {
        ctx.json_out(&document("checks", &results))?;
    } else {
        for result in &results {
            match &result.rendered {
                Some(rendered) if !result.ok => ctx.line(rendered.trim_end())?,
                _ => ctx.line(format!("ok  {}", result.file.display()))?,
            }
        }
    }
    if failed > 0 {
        return Err(ExpectedError::Reported {
            summary: format!("{failed} of {} profile file(s) are invalid", results.len()),
            code: crate::exit_code::CONFIG,
        });
    }
    Ok(())
}

/// The file `loopx profile check ARG` checks. A file at `arg` (relative to the current
/// directory) comes first, so any path works as before; a bare word is otherwise a profile's
/// name, looked up as `profile show` does (a `.toml` ending allowed: people type the file's
/// name). Neither found: an error that names both places tried.
fn profile_to_check(arg: &Path, profiles: &Path) -> Result<PathBuf, ExpectedError> {
    if arg.is_file() {
        return Ok(arg.to_owned());
    }
    let bare = arg.components().count() == 1 && !arg.is_dir();
    let name = arg
        .to_str()
        .filter(|_| bare)
        .map(|a| a.trim_end_matches(".toml"));
    let in_project = name.map(|n| profiles.join(format!("{n}.toml")));
    if let Some(found) = in_project.as_ref().filter(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let cwd = std::env::current_dir().unwrap_or_default().join(arg);
    let tried = match (&in_project, profiles.as_os_str().is_empty()) {
        (Some(file), false) => format!(
            "neither the file `{}` nor the project's profile `{}` exists",
            cwd.display(),
            file.display()
        ),
        _ => format!("the file `{}` does not exist", cwd.display()),
    };
    Err(ExpectedError::Config(format!(
        "no profile `{}` to check: {tried}\n(hint: `loopx profile list` names the project's profiles; a path is read relative to the current directory)",
        arg.display()
    )))
}

/// Checking one named file works outside a project too (with the built-in adapters).
fn dirs_or_builtin(ctx: &Ctx, have_file: bool) -> Result<(PathBuf, AdapterCatalog), ExpectedError> {
    match dirs(ctx) {
        Ok(found) => Ok(found),
        Err(_) if have_file => Ok((PathBuf::new(), AdapterCatalog::builtin())),
        Err(e) => Err(e),
    }
}

pub fn adapter(ctx: &mut Ctx, cmd: AdapterCommand) -> Result<(), ExpectedError> {
    let AdapterCommand::Test { profile } = cmd;
    let (dir, catalog) = dirs(ctx)?;
    let loaded = loopx_adapters::find_profile(&dir, &profile, &catalog).map_err(load_error)?;
    let exe = std::env::current_exe()
        .map_err(|e| ExpectedError::Usage(format!("cannot find the loopx binary: {e}")))?;
    let test = inspect::adapter_test(&loaded, &exe);
    let verdict = match run_probe(&test.health) {
        Ok((code, output)) => inspect::judge_health(&loaded.adapter, code, &output),
        Err(reason) => inspect::HealthVerdict {
            ok: false,
            version: None,
            reason: Some(reason),
        },
    };
    let replays_ok = test.replays.iter().all(|r| r.passed);
    if ctx.json {
        let doc = serde_json::json!({ "format_version": 1, "adapter_test": test, "health": verdict, "ok": replays_ok && verdict.ok });
        ctx.json_out(&doc)?;
    } else {
        print_adapter_test(ctx, &profile, &test, &verdict)?;
    }
    if !replays_ok || !verdict.ok {
        return Err(ExpectedError::Reported {
            summary: format!("adapter `{}` failed its test", test.adapter),
            code: crate::exit_code::CONFIG,
        });
    }
    Ok(())
}

/// `adapter test` in words: each replayed stream, then the health probe.
fn print_adapter_test(
    ctx: &mut Ctx,
    profile: &str,
    test: &inspect::AdapterTest,
    verdict: &inspect::HealthVerdict,
) -> Result<(), ExpectedError> {
    ctx.line(
        ctx.style
            .bold(&format!("adapter {} (profile {profile})", test.adapter)),
    )?;
    for replay in &test.replays {
        let mark = if replay.passed {
            ctx.style.green("ok  ")
        } else {
            ctx.style.red("FAIL")
        };
        let expected = replay.expected.unwrap_or("-");
        ctx.line(format!(
            "{mark} {:<44} expected {:<14} got {:<14} {}",
            replay.stream,
            expected,
            replay.got,
            replay.signals.join(", ")
        ))?;
    }
    let probe = format!("{} {}", test.health.program, test.health.args.join(" "));
    match (&verdict.ok, &verdict.version) {
        (true, version) => ctx.line(format!(
            "{} health: `{probe}` answered {}",
            ctx.style.green("ok  "),
            version.as_deref().unwrap_or("")
        ))?,
        (false, _) => ctx.line(format!(
            "{} health: `{probe}`: {}",
            ctx.style.red("FAIL"),
            verdict.reason.as_deref().unwrap_or("failed")
        ))?,
    }
    Ok(())
}

/// Runs the health check with stdin closed and a deadline; returns its exit code and output, or
/// why it could not run at all.
fn run_probe(probe: &HealthProbe) -> Result<(Option<i32>, String), String> {
    let child = Command::new(&probe.program)
        .args(&probe.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "`{}` is not installed (not found on PATH)",
                probe.program
            ));
        }
        Err(e) => return Err(format!("cannot run `{}`: {e}", probe.program)),
    };
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < probe.timeout => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let mut output = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut output);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut output);
    }
    match status {
        Some(status) => Ok((status.code(), output)),
        None => Err(format!("no answer within {:?}", probe.timeout)),
    }
}
