//! The resource-limit helper: set limits on this process, then replace it with the agent.

use std::convert::Infallible;
use std::ffi::OsString;

use nix::sys::resource::{getrlimit, setrlimit};

use crate::errors::ExecError;
use crate::rlimits::{LimitKind, parse_limit};
use crate::sandbox::{Sandbox, SandboxArgs, c_string, run_sandboxed};

/// Applies `--limit NAME=VALUE` resource limits and the sandbox to the current process and runs
/// `PROGRAM ARGS...`. Never returns on success.
///
/// `args` are the arguments after the helper's own name (and subcommand, e.g. `__exec`):
/// `[--limit NAME=VALUE]... [--namespaces [--hide PATH]...] [--landlock [--write PATH]...] [--seatbelt …] --
/// PROGRAM [ARG]...`, with `NAME` one of `cpu` (seconds), `data`, `fsize` (bytes) or `nofile`
/// (see [`Sandbox`](crate::Sandbox) for the rest). `PROGRAM` is executed as given (no `PATH` search): the slice
/// passes an absolute path it has already checked. A limit above the current hard limit is
/// lowered to it (only root may raise a hard limit).
///
/// The caller should print the error and exit with status 127, which the slice reports as a
/// spawn failure:
///
/// ```no_run
/// // In `loopx __exec ...`:
/// let args = std::env::args_os().skip(2); // skip `loopx` and `__exec`
/// let Err(err) = loopx_pty::exec_with_limits(args);
/// eprintln!("loopx __exec: {err}");
/// std::process::exit(127);
/// ```
pub fn exec_with_limits<I>(args: I) -> Result<Infallible, ExecError>
where
    I: IntoIterator<Item = OsString>,
{
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|a| a == "--probe") {
        crate::sandbox::probe_here();
    }
    let (session, limits, sandbox, command) = parse_args(args)?;
    if session {
        crate::sandbox::become_session_leader()?;
    }
    for (kind, value) in limits {
        apply_limit(kind, value)?;
    }
    let argv = command
        .iter()
        .map(c_string)
        .collect::<Result<Vec<_>, _>>()?;
    run_sandboxed(&sandbox, &argv)
}

/// `--session`, the limits, the sandbox, and the command.
type ParsedArgs = (bool, Vec<(LimitKind, u64)>, Sandbox, Vec<OsString>);

fn parse_args<I>(args: I) -> Result<ParsedArgs, ExecError>
where
    I: IntoIterator<Item = OsString>,
{
    let usage = |reason: &str| ExecError::Usage {
        reason: reason.to_owned(),
    };
    let mut args = args.into_iter();
    let mut limits = Vec::new();
    let mut sandbox = SandboxArgs::default();
    let mut session = false;
    loop {
        let Some(arg) = args.next() else {
            return Err(usage("missing `--` before the program"));
        };
        match arg.to_str() {
            Some("--") => break,
            Some("--session") => session = true,
            Some("--limit") => {
                let value = args
                    .next()
                    .ok_or_else(|| usage("`--limit` needs a value"))?;
                let value = value.to_str().ok_or_else(|| ExecError::BadLimit {
                    given: value.to_string_lossy().into_owned(),
                })?;
                limits.push(parse_limit(value)?);
            }
            Some(other) if other.starts_with("--limit=") => {
                limits.push(parse_limit(&other["--limit=".len()..])?);
            }
            Some(other) if sandbox.take(other, &mut args)? => {}
            _ => {
                return Err(usage(&format!(
                    "unexpected argument `{}`",
                    arg.to_string_lossy()
                )));
            }
        }
    }
    let command: Vec<OsString> = args.collect();
    if command.is_empty() {
        return Err(usage("no program after `--`"));
    }
    // Hiding needs a mount namespace or a Seatbelt profile; a path that would silently stay
    // visible is refused.
    let hides = !sandbox.sandbox.hide.is_empty()
        || !sandbox.sandbox.read_only.is_empty()
        || sandbox.sandbox.private_room.is_some();
    if hides && !(sandbox.sandbox.namespaces || sandbox.sandbox.seatbelt) {
        return Err(usage(
            "`--hide`, `--read-only` and `--private-room` need `--namespaces` or `--seatbelt`",
        ));
    }
    Ok((session, limits, sandbox.sandbox, command))
}

fn apply_limit(kind: LimitKind, value: u64) -> Result<(), ExecError> {
    let set_err = |source| ExecError::SetLimit {
        name: kind.name,
        value,
        source,
    };
    let (_, hard) = getrlimit(kind.resource).map_err(set_err)?;
    // Unprivileged processes cannot raise a hard limit; lowering to it keeps the intent
    // ("at most this much") instead of failing the slice.
    let value = value.min(hard);
    setrlimit(kind.resource, value, value).map_err(set_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_limits_and_command() {
        let (_, limits, _, command) = parse_args(os(&[
            "--limit",
            "cpu=3",
            "--limit=nofile=40",
            "--",
            "/bin/echo",
            "--limit",
            "x",
        ]))
        .expect("valid");
        let names: Vec<_> = limits.iter().map(|(k, v)| (k.name, *v)).collect();
        assert_eq!(names, [("cpu", 3), ("nofile", 40)]);
        assert_eq!(command, os(&["/bin/echo", "--limit", "x"]));
    }

    #[test]
    fn rejects_malformed_argument_lists() {
        for (args, needle) in [
            (&["/bin/echo"][..], "unexpected argument `/bin/echo`"),
            (&["--limit"][..], "`--limit` needs a value"),
            (&["--limit", "cpu=1"][..], "missing `--`"),
            (&["--"][..], "no program"),
            (
                &["--limit", "stack=1", "--", "x"][..],
                "invalid limit `stack=1`",
            ),
        ] {
            let err = parse_args(os(args)).expect_err("invalid");
            assert!(err.to_string().contains(needle), "{err} lacks {needle}");
        }
    }
}
