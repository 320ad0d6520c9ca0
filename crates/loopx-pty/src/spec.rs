//! What to launch: [`LaunchSpec`] and its parts. Plain data; checked by [`spawn_slice`](crate::spawn_slice).

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::errors::SpecError;
use crate::rlimits::ResourceLimits;

/// The id of one slice. It becomes `LOOPX_SLICE=<id>` in the agent's environment, the marker by
/// which escaped processes are found, so it is restricted to characters safe there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SliceId(String);

impl SliceId {
    /// Checks and wraps an id: 1 to 128 characters from `A-Z a-z 0-9 . _ -`.
    ///
    /// ```
    /// assert!(loopx_pty::SliceId::new("01J9-slice.7").is_ok());
    /// assert!(loopx_pty::SliceId::new("a b").is_err());
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self, SpecError> {
        let id = id.into();
        let ok = (1..=128).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(Self(id))
        } else {
            Err(SpecError::SliceId { id })
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SliceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The environment of the agent: nothing is inherited unless named.
#[derive(Debug, Clone, Default)]
pub struct EnvSpec {
    /// Names copied from loopx's own environment when present (e.g. `PATH`, `HOME`, `LANG`).
    pub inherit: Vec<String>,
    /// Variables set explicitly; they win over inherited ones. `LOOPX_SLICE` is always
    /// overwritten with the slice id, and `TERM` defaults to `xterm-256color`.
    pub set: Vec<(String, OsString)>,
}

/// Time and output bounds of one slice, enforced by loopx whatever the agent does.
#[derive(Debug, Clone)]
pub struct SliceLimits {
    /// Wall-clock budget from spawn; `None` for no limit.
    pub wall: Option<Duration>,
    /// Longest time without any output; `None` for no limit.
    pub idle: Option<Duration>,
    /// Most output bytes before the slice is stopped as `OutputCapped`; `None` for no limit.
    pub output_bytes: Option<u64>,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Screen unchanged this long = waiting for input (reported, never answered).
    pub waiting_after: Duration,
}

impl Default for SliceLimits {
    fn default() -> Self {
        Self {
            wall: None,
            idle: None,
            output_bytes: None,
            grace: Duration::from_secs(5),
            waiting_after: Duration::from_secs(2),
        }
    }
}

/// Where raw output goes and how much of it is kept.
#[derive(Debug, Clone)]
pub struct LogSpec {
    /// The log file; created or truncated at spawn.
    pub path: PathBuf,
    /// The first bytes kept verbatim (written as they arrive).
    pub head_bytes: usize,
    /// The last bytes kept verbatim (held in memory, written when the slice ends).
    pub tail_bytes: usize,
    /// Values (credentials) overwritten with `*` before the output reaches the file.
    pub mask: Vec<Vec<u8>>,
}

impl LogSpec {
    /// A log at `path` keeping the first and last MiB.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            head_bytes: 1 << 20,
            tail_bytes: 1 << 20,
            mask: Vec::new(),
        }
    }
}

/// How to re-exec a helper that applies resource limits before the agent starts
/// (`loopx __exec`): `program args... --limit NAME=VALUE... -- agent agent-args...`.
#[derive(Debug, Clone)]
pub struct ExecHelper {
    /// The helper executable, e.g. the `loopx` binary itself.
    pub program: PathBuf,
    /// Arguments before the limits, e.g. `["__exec"]`.
    pub args: Vec<OsString>,
}

/// A long prompt passed by file rather than typed into the terminal.
///
/// The file is written with mode 0600 before spawn. Its path replaces every argument that is
/// exactly `{prompt_file}` and is exported as `LOOPX_PROMPT_FILE`. The caller owns the file
/// afterwards (it is evidence of what the agent was asked).
#[derive(Debug, Clone)]
pub struct PromptFile {
    /// Where to write it.
    pub path: PathBuf,
    /// The prompt.
    pub contents: Vec<u8>,
}

/// What the agent's standard input is. Its output is always the terminal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stdin {
    /// The terminal, like its output (the default: agents see a terminal).
    #[default]
    Terminal,
    /// `/dev/null`: for programs that would block reading an open stdin.
    Null,
    /// A pipe the caller writes to ([`SliceControl::write_stdin`](crate::SliceControl::write_stdin))
    /// and closes ([`SliceControl::close_stdin`](crate::SliceControl::close_stdin)): for CLIs
    /// that read structured input while they run. A terminal would not do: in canonical mode it
    /// cuts a line at 4,095 bytes, and Claude Code refuses one as its stream-json input.
    Pipe,
}

/// The terminal size the agent sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalSize {
    /// Rows.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

impl Default for TerminalSize {
    fn default() -> Self {
        Self {
            rows: 40,
            cols: 120,
        }
    }
}

/// Everything needed to run one slice.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// The slice id, exported as `LOOPX_SLICE`.
    pub slice_id: SliceId,
    /// An absolute path, a path relative to `cwd`, or a bare name looked up in the slice
    /// environment's `PATH` (not loopx's own).
    pub program: PathBuf,
    /// Arguments after the program.
    pub args: Vec<OsString>,
    /// Working directory; must exist.
    pub cwd: PathBuf,
    /// Environment allowlist and explicit variables.
    pub env: EnvSpec,
    /// Terminal size.
    pub size: TerminalSize,
    /// Wall, idle, output and grace bounds.
    pub limits: SliceLimits,
    /// Kernel resource limits (needs `exec_helper` when any is set).
    pub resources: ResourceLimits,
    /// Namespaces and Landlock around the agent (needs `exec_helper` when any is set).
    pub sandbox: crate::Sandbox,
    /// The helper that applies `resources` and `sandbox`; without it, requesting either is a
    /// spawn error (limits are never silently skipped).
    pub exec_helper: Option<ExecHelper>,
    /// Raw output log.
    pub log: LogSpec,
    /// Optional prompt file.
    pub prompt: Option<PromptFile>,
    /// Whether the terminal echoes what is typed into it. Off when the caller types the
    /// prompt: the echo would come back as if the agent had said it.
    pub echo: bool,
    /// What the agent's standard input is (not the terminal needs `exec_helper`).
    pub stdin: Stdin,
}

impl LaunchSpec {
    /// A spec with default limits (no wall/idle/output limit, 5 s grace, 2 s waiting threshold),
    /// an empty environment (plus `TERM` and `LOOPX_SLICE`) and no resource limits.
    pub fn new(
        slice_id: SliceId,
        program: impl Into<PathBuf>,
        cwd: impl Into<PathBuf>,
        log: impl Into<PathBuf>,
    ) -> Self {
        Self {
            slice_id,
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: EnvSpec::default(),
            size: TerminalSize::default(),
            limits: SliceLimits::default(),
            resources: ResourceLimits::default(),
            sandbox: crate::Sandbox::default(),
            exec_helper: None,
            log: LogSpec::new(log),
            prompt: None,
            echo: true,
            stdin: Stdin::Terminal,
        }
    }
}
