//! Why a slice could not be run at all. What goes wrong *inside* a slice (a failed spawn, a
//! crash, a refused writeback) is an outcome recorded in the kernel, not an error.

use loopx_kernel::KernelError;

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("no agent is registered\n(hint: `loopx agent add NAME --profile PROFILE`)")]
    NoAgent,
    #[error("agent `{name}` is not registered\n(hint: `loopx agent add {name} --profile PROFILE`)")]
    UnknownAgent { name: String },
    #[error(
        "agent `{agent}` uses profile `{profile}`, which cannot be loaded\n(hint: `loopx profile check`)"
    )]
    Profile {
        agent: String,
        profile: String,
        #[source]
        source: loopx_adapters::LoadError,
    },
    #[error("cannot render the launch of agent `{agent}`")]
    Launch {
        agent: String,
        #[source]
        source: loopx_adapters::LaunchError,
    },
    #[error(
        "the project's settings cannot be used:\n{details}\n(hint: fix `.loopx/loopx.toml` as above, or remove it to run without notifications)"
    )]
    ProjectConfig { details: String },
    #[error(
        "a bug in loopx stopped this agent's loop: {0}\n(hint: please report it, with `loopx log`)"
    )]
    Panicked(String),
    #[error("cannot start the supervisor's runtime")]
    Runtime(#[source] std::io::Error),
}

/// An error and its causes on one line, for evidence and progress lines.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
