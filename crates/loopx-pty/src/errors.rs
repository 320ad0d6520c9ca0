//! Errors of this crate: one enum per operation a caller can fail at.

use std::path::PathBuf;

/// A value in a [`LaunchSpec`](crate::LaunchSpec) that can never be launched.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The slice id is empty, too long, or has characters unsafe in an environment variable.
    #[error("invalid slice id `{id}`: use 1 to 128 characters from `A-Z a-z 0-9 . _ -`")]
    SliceId {
        /// The rejected id.
        id: String,
    },
}

/// Why a slice could not be started. No agent process is running when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// A bare program name and an environment without `PATH`.
    #[error(
        "program `{program}` is a bare name but the slice environment has no `PATH`\n(hint: allow `PATH` in the environment or give an absolute path)"
    )]
    NoPath {
        /// The program as given.
        program: String,
    },
    /// A bare program name not found in any `PATH` entry of the slice environment.
    #[error("program `{program}` not found in the slice's `PATH` `{path}`")]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// The `PATH` value that was searched.
        path: String,
    },
    /// The program path does not exist.
    #[error("program `{}` does not exist", path.display())]
    ProgramMissing {
        /// The resolved path.
        path: PathBuf,
    },
    /// The program exists but is not a regular executable file.
    #[error("program `{}` is not an executable file", path.display())]
    NotExecutable {
        /// The resolved path.
        path: PathBuf,
    },
    /// The interpreter on the program's `#!` line is missing or not executable.
    #[error("interpreter `{}` on the `#!` line of `{}` is missing or not executable", interpreter.display(), program.display())]
    BadInterpreter {
        /// The script.
        program: PathBuf,
        /// The interpreter it names.
        interpreter: PathBuf,
    },
    /// Reading the program (to check its `#!` line) failed.
    #[error("failed to read program `{}`", path.display())]
    ReadProgram {
        /// The resolved path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The working directory does not exist (portable-pty would silently use `$HOME`).
    #[error("working directory `{}` does not exist", path.display())]
    CwdMissing {
        /// The directory as given.
        path: PathBuf,
    },
    /// The working directory exists but is not a directory.
    #[error("working directory `{}` is not a directory", path.display())]
    CwdNotDirectory {
        /// The path as given.
        path: PathBuf,
    },
    /// Resource limits were requested without a helper to apply them.
    #[error(
        "resource limits, a sandbox or a stdin other than the terminal were requested but the launch spec has no exec helper\n(hint: set `exec_helper` to the `loopx __exec` helper)"
    )]
    NeedsHelper,
    /// An environment variable name or value that cannot be passed to `execve`.
    #[error("environment variable `{name}` has an empty name, `=` or a NUL byte")]
    BadEnv {
        /// The variable name (lossy).
        name: String,
    },
    /// An argument with a NUL byte.
    #[error("argument `{arg}` contains a NUL byte")]
    BadArg {
        /// The argument (lossy).
        arg: String,
    },
    /// Writing the prompt file failed.
    #[error("failed to write prompt file `{}`", path.display())]
    PromptFile {
        /// The prompt file path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Creating the output log failed.
    #[error("failed to create output log `{}`", path.display())]
    Log {
        /// The log path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// portable-pty failed to open a terminal or start the process.
    // portable-pty reports `anyhow::Error`, which is not a `std::error::Error`, so the
    // reason is carried as text.
    #[error("failed to {action} for `{}`: {reason}", program.display())]
    Pty {
        /// What was being done.
        action: &'static str,
        /// The program.
        program: PathBuf,
        /// portable-pty's message.
        reason: String,
    },
    /// A capture or wait thread could not be started.
    #[error("failed to start the slice's {name} thread")]
    Thread {
        /// Which thread.
        name: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `spawn_slice` was called outside a tokio runtime.
    #[error("`spawn_slice` must be called inside a tokio runtime")]
    NoRuntime,
}

/// Why input could not be sent to a slice.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The slice has ended and its terminal is closed.
    #[error("slice `{slice}` has ended; its terminal no longer takes input")]
    Ended {
        /// The slice id.
        slice: String,
    },
    /// The agent is not reading its input and the queue is full.
    #[error("input queue of slice `{slice}` is full: the agent is not reading its input")]
    Full {
        /// The slice id.
        slice: String,
    },
    /// The slice's stdin is not a pipe ([`Stdin::Pipe`](crate::Stdin::Pipe)), or it was closed.
    #[error("slice `{slice}` has no open stdin pipe")]
    NoPipe {
        /// The slice id.
        slice: String,
    },
}

/// The slice's supervising task ended without a report (it panicked or its runtime shut down).
#[derive(Debug, thiserror::Error)]
#[error("slice `{slice}` ended without a report (its supervising task was cancelled or panicked)")]
pub struct WaitError {
    /// The slice id.
    pub slice: String,
}

/// Why `exec_with_limits` could not exec the agent. On success it never returns.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The argument list is not `[--limit NAME=VALUE]... -- PROGRAM [ARGS]...`.
    #[error(
        "invalid exec helper arguments: {reason}\n(usage: `__exec [--limit NAME=VALUE]... -- PROGRAM [ARG]...`)"
    )]
    Usage {
        /// What was wrong.
        reason: String,
    },
    /// An unknown limit name or an unparsable value.
    #[error("invalid limit `{given}`: expected `cpu|data|nofile|fsize=<non-negative integer>`")]
    BadLimit {
        /// The rejected `NAME=VALUE`.
        given: String,
    },
    /// `setrlimit` failed.
    #[error("failed to set resource limit `{name}` to {value}")]
    SetLimit {
        /// The limit name.
        name: &'static str,
        /// The requested value.
        value: u64,
        /// The OS error.
        #[source]
        source: nix::Error,
    },
    /// An argument contains a NUL byte.
    #[error("argument `{arg}` contains a NUL byte")]
    Nul {
        /// The argument (lossy).
        arg: String,
    },
    /// A part of the sandbox could not be applied; the agent does not start unconfined.
    #[error("cannot {action}: {reason}")]
    Sandbox {
        /// What was being set up.
        action: String,
        /// Why it failed.
        reason: String,
    },
    /// `execv` failed.
    #[error("failed to execute `{program}`")]
    Exec {
        /// The program (lossy).
        program: String,
        /// The OS error.
        #[source]
        source: nix::Error,
    },
}
