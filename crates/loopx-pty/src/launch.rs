//! Starting the agent in a pseudo-terminal as a session leader, after checking everything
//! portable-pty would otherwise get silently wrong.

mod env;
mod validate;

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use portable_pty::{CommandBuilder, MasterPty, PtyPair, PtySize, native_pty_system};

pub use env::{PROMPT_FILE_VAR, SLICE_MARKER_VAR};

use crate::errors::SpawnError;
use crate::spec::{LaunchSpec, PromptFile, Stdin};

/// The argument replaced by the prompt file's path.
pub const PROMPT_FILE_ARG: &str = "{prompt_file}";

/// A started agent and its side of the terminal.
pub(crate) struct Launched {
    /// Kept open until the slice ends: closing it hangs up the agent's terminal.
    pub(crate) master: Box<dyn MasterPty + Send>,
    pub(crate) reader: Box<dyn Read + Send>,
    /// Kept alive until the slice ends: dropping it sends a newline and EOF to the agent.
    pub(crate) writer: Box<dyn Write + Send>,
    /// The agent's stdin when it is a pipe ([`Stdin::Pipe`]); dropping it is end-of-file.
    pub(crate) stdin: Option<std::process::ChildStdin>,
    /// The session leader: pid = process group id = session id.
    pub(crate) pid: u32,
    /// The agent program after `PATH` resolution.
    pub(crate) program: PathBuf,
}

/// Checks the spec, writes the prompt file, and spawns the agent (through the limit helper when
/// limits are set). On error nothing has been started.
pub(crate) fn launch(spec: &LaunchSpec) -> Result<Launched, SpawnError> {
    validate::check_cwd(&spec.cwd)?;
    let env = env::build_env(spec, |name| std::env::var_os(name))?;
    let program = validate::resolve_program(
        &spec.program,
        &spec.cwd,
        env.get(OsStr::new("PATH")).map(OsString::as_os_str),
    )?;
    let argv = build_argv(spec, &program)?;
    if let Some(prompt) = &spec.prompt {
        write_prompt(prompt)?;
    }
    let (pair, reader, writer) = open_pty(spec, &program)?;
    let helped = uses_helper(spec);
    // Registered as an owned child at once: the reaper of adopted orphans must not take its
    // status from the waiter.
    let (stdin, pid) = if helped {
        let tty = pair.master.tty_name();
        crate::children::spawn_owned(|| spawn_helper(&argv, &env, spec, tty.as_deref(), &program))?
    } else {
        let mut command = CommandBuilder::from_argv(argv);
        command.env_clear();
        for (name, value) in &env {
            command.env(name, value);
        }
        command.cwd(&spec.cwd);
        let (child, pid) = crate::children::spawn_owned(|| {
            let child = pair
                .slave
                .spawn_command(command)
                .map_err(pty_err("spawn", &program))?;
            let pid = child
                .process_id()
                .expect("a child spawned by portable-pty on unix has a pid");
            Ok((child, pid))
        })?;
        // The child is reaped by pid (`waitpid`), not through portable-pty, whose `kill()`
        // only sends SIGHUP to the leader; dropping its handle neither kills nor waits.
        drop(child);
        (None, pid)
    };
    // Our copy of the slave must close, or the reader never sees EOF.
    drop(pair.slave);
    Ok(Launched {
        master: pair.master,
        reader,
        writer,
        stdin,
        pid,
        program,
    })
}
/// A pseudo-terminal of the spec's size, quiet unless the spec echoes, with its reader and
/// writer taken.
fn open_pty(spec: &LaunchSpec, program: &Path) -> Result<Terminal, SpawnError> {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: spec.size.rows,
            cols: spec.size.cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(pty_err("open a pseudo-terminal", program))?;
    if !spec.echo {
        quiet_terminal(pair.master.tty_name().as_deref(), program)?;
    }
    // Reader and writer are taken before spawning so that no failure can leave a child behind.
    let reader = pair
        .master
        .try_clone_reader()
        .map_err(pty_err("clone the terminal reader", program))?;
    let writer = pair
        .master
        .take_writer()
        .map_err(pty_err("take the terminal writer", program))?;
    Ok((pair, reader, writer))
}

/// A pseudo-terminal, its reader and its writer.
type Terminal = (PtyPair, Box<dyn Read + Send>, Box<dyn Write + Send>);

/// Whether the agent starts through the helper (`loopx __exec`): limits, a sandbox, or a stdin
/// other than the terminal (portable-pty's spawn gives the agent the terminal as all three
/// standard streams).
fn uses_helper(spec: &LaunchSpec) -> bool {
    !spec.resources.is_empty() || !spec.sandbox.is_empty() || spec.stdin != Stdin::Terminal
}

/// Spawns the helper with the terminal as its output (and its input, unless the spec says
/// otherwise) and nothing else of ours: no
/// `pre_exec` hook, so that the standard library uses `posix_spawn` rather than `fork` (see
/// `sandbox::become_session_leader`, which the helper runs first, for why). The helper makes
/// itself the session leader, with the terminal as its controlling terminal, before anything
/// else: its pid is the slice's process group and session, as with portable-pty's spawn.
/// Returns the write end of the agent's stdin when it is a pipe.
fn spawn_helper(
    argv: &[OsString],
    env: &std::collections::BTreeMap<OsString, OsString>,
    spec: &LaunchSpec,
    tty: Option<&std::path::Path>,
    program: &std::path::Path,
) -> Result<(Option<std::process::ChildStdin>, u32), SpawnError> {
    let failed = |reason: String| SpawnError::Pty {
        action: "spawn",
        program: program.to_path_buf(),
        reason,
    };
    let tty = tty.ok_or_else(|| failed("the terminal has no device name".to_owned()))?;
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::libc::O_NOCTTY)
            .open(tty)
            .map_err(|e| failed(format!("{}: {e}", tty.display())))
    };
    let stdin = match spec.stdin {
        Stdin::Terminal => std::process::Stdio::from(open()?),
        Stdin::Null => std::process::Stdio::null(),
        // Both ends are close-on-exec in loopx: no other child inherits the write end, so the
        // agent sees end-of-file when the caller closes it.
        Stdin::Pipe => std::process::Stdio::piped(),
    };
    let (stdout, stderr) = (open()?, open()?);
    let mut child = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .envs(env)
        .current_dir(&spec.cwd)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    // Reaped by pid (`waitpid`) like any slice; std's handle neither kills nor waits when
    // dropped.
    Ok((child.stdin.take(), child.id()))
}

/// Turns the terminal's echo off before the agent starts, through the terminal device itself
/// (opened without becoming its controller, and closed again at once: a slave left open here
/// would keep the agent's output from ever reaching end-of-file).
fn quiet_terminal(
    tty: Option<&std::path::Path>,
    program: &std::path::Path,
) -> Result<(), SpawnError> {
    use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
    let failed = |reason: String| SpawnError::Pty {
        action: "turn the terminal's echo off",
        program: program.to_path_buf(),
        reason,
    };
    let tty = tty.ok_or_else(|| failed("the terminal has no device name".to_owned()))?;
    let device = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NOCTTY)
        .open(tty)
        .map_err(|e| failed(format!("{}: {e}", tty.display())))?;
    let mut termios = tcgetattr(&device).map_err(|e| failed(e.to_string()))?;
    termios
        .local_flags
        .remove(LocalFlags::ECHO | LocalFlags::ECHONL);
    tcsetattr(&device, SetArg::TCSANOW, &termios).map_err(|e| failed(e.to_string()))
}

/// Maps portable-pty's `anyhow::Error` (not a `std::error::Error`) to a message.
fn pty_err<E: std::fmt::Display>(
    action: &'static str,
    program: &std::path::Path,
) -> impl FnOnce(E) -> SpawnError {
    let program = program.to_owned();
    move |err| SpawnError::Pty {
        action,
        program,
        reason: format!("{err:#}"),
    }
}

/// `[helper args --limit.. --] program args`, with `{prompt_file}` replaced.
fn build_argv(spec: &LaunchSpec, program: &std::path::Path) -> Result<Vec<OsString>, SpawnError> {
    let mut argv = Vec::new();
    if uses_helper(spec) {
        let helper = spec.exec_helper.as_ref().ok_or(SpawnError::NeedsHelper)?;
        validate::check_executable(&helper.program, &spec.cwd)?;
        argv.push(helper.program.clone().into_os_string());
        argv.extend(helper.args.iter().cloned());
        // The helper makes itself the session leader (`spawn_helper`).
        argv.push("--session".into());
        argv.extend(spec.resources.to_args());
        argv.extend(spec.sandbox.to_args());
        argv.push("--".into());
    }
    argv.push(program.as_os_str().to_owned());
    for arg in &spec.args {
        match &spec.prompt {
            Some(prompt) if arg == PROMPT_FILE_ARG => argv.push(prompt.path.clone().into()),
            _ => argv.push(arg.clone()),
        }
    }
    if let Some(bad) = argv.iter().find(|arg| arg.as_bytes().contains(&0)) {
        return Err(SpawnError::BadArg {
            arg: bad.to_string_lossy().into_owned(),
        });
    }
    Ok(argv)
}

/// Writes the prompt readable by the owner only: prompts can carry private context.
fn write_prompt(prompt: &PromptFile) -> Result<(), SpawnError> {
    let err = |source| SpawnError::PromptFile {
        path: prompt.path.clone(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&prompt.path)
        .map_err(err)?;
    // `mode` applies only when the file is created; an existing file is tightened explicitly.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(err)?;
    file.write_all(&prompt.contents).map_err(err)?;
    file.sync_all().map_err(err)
}
