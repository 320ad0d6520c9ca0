//! Why the simulated agent could not run at all, and its exit codes.

/// The exit codes it shares with `loopx` (`docs/cli.md`).
pub(crate) mod exit_code {
    /// Success.
    pub const OK: u8 = 0;
    /// Bad usage: no prompt, an unknown flag.
    pub const USAGE: u8 = 2;
}

/// Why the simulated agent (`loopx __demo-agent`) could not run at all. Anything that goes
/// wrong *inside* its work (a refused path, a file it could not write) is reported in its
/// stream instead, the way a real agent would.
#[derive(Debug, thiserror::Error)]
pub enum DemoAgentError {
    #[error("cannot read the prompt file `{path}`")]
    Prompt {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no prompt\n(hint: pass `--prompt-file PATH` or pipe the prompt on stdin)")]
    NoPrompt,
    #[error("cannot read the prompt from stdin")]
    Stdin(#[source] std::io::Error),
    #[error("cannot find the working directory")]
    Cwd(#[source] std::io::Error),
    #[error("cannot record the simulated usage limit: {reason}")]
    Marker { reason: String },
    #[error("failed to write the stream")]
    Output(#[source] std::io::Error),
}

impl DemoAgentError {
    /// The message with its causes, one per line.
    pub fn render(&self) -> String {
        loopx_vocab::render_error(self)
    }
}
