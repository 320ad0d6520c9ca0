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
    #[error("cannot start the supervisor's runtime")]
    Runtime(#[source] std::io::Error),
}
