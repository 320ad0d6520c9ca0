//! Why the supervisor could not run a slice at all, and what that means: the exit class a
//! surface gives it, whether it stops the agent's loop or passes (`is_lasting`), whether the
//! store itself failed. What goes wrong *inside* a slice (a failed spawn, a crash, a refused
//! writeback) is an outcome recorded in the kernel, not an error.

use loopx_kernel::{KernelError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// No agent is registered, the one named is not, or its profile does not load.
    #[error(transparent)]
    Agent(#[from] crate::agent::AgentError),
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
    #[error(
        "slice {slice} ended but neither its writeback nor its end could be recorded\n(hint: fix the cause below; the next `loopx run` records it interrupted and releases its todo)"
    )]
    Unrecorded {
        slice: String,
        #[source]
        source: KernelError,
    },
    #[error(
        "slice {slice} ran, but what it did could not be written back; it is recorded interrupted and its todo released\n(hint: fix the cause below before running agents again: each slice would be lost the same way)"
    )]
    WritebackLost {
        slice: String,
        #[source]
        source: KernelError,
    },
    #[error("slice {slice} failed: {why}")]
    DiskFull { slice: String, why: String },
}

impl SupervisorError {
    /// What kind of failure it is (the CLI's exit code).
    pub fn class(&self) -> loopx_kernel::model::ErrorClass {
        use loopx_kernel::model::ErrorClass;
        match self {
            SupervisorError::Kernel(k) => k.class(),
            SupervisorError::Agent(e) => e.class(),
            SupervisorError::Launch { .. } | SupervisorError::ProjectConfig { .. } => {
                ErrorClass::Config
            }
            SupervisorError::Runtime(_) | SupervisorError::Panicked(_) => ErrorClass::Internal,
            SupervisorError::Unrecorded { .. }
            | SupervisorError::WritebackLost { .. }
            | SupervisorError::DiskFull { .. } => ErrorClass::Store,
        }
    }

    /// An error a person must fix (a broken profile or project setting): only such an error
    /// holds the agent up for `--on-gate exit`.
    pub fn needs_a_person(&self) -> bool {
        matches!(
            self,
            SupervisorError::Agent(crate::agent::AgentError::Profile { .. })
                | SupervisorError::Launch { .. }
                | SupervisorError::ProjectConfig { .. }
        )
    }

    /// The store failed (not merely busy): a long-lived handle on it is reopened.
    pub fn is_store_failure(&self) -> bool {
        match self {
            SupervisorError::Kernel(KernelError::Store(e))
            | SupervisorError::Unrecorded {
                source: KernelError::Store(e),
                ..
            } => !matches!(e, StoreError::Busy { .. }),
            _ => false,
        }
    }

    /// An error that stops the agent's loop: trying again would meet it again (a bug, an agent
    /// that is gone, a damaged store), or the store could not record a slice that ran. A
    /// busy or full store, or a profile a person may fix, is retried instead.
    pub fn is_lasting(&self) -> bool {
        match self {
            // A commit whose outcome is unknown (its database went away mid-commit) is not
            // retried as such, but the agent goes on: recovery reconciles the slice once the
            // store answers again.
            SupervisorError::Kernel(KernelError::Store(e)) => {
                !e.is_transient() && !matches!(e, StoreError::CommitUnknown { .. })
            }
            SupervisorError::Kernel(KernelError::Project(_))
            | SupervisorError::Agent(
                crate::agent::AgentError::NoAgent | crate::agent::AgentError::UnknownAgent { .. },
            )
            | SupervisorError::Panicked(_)
            | SupervisorError::Runtime(_)
            | SupervisorError::WritebackLost { .. }
            | SupervisorError::DiskFull { .. } => true,
            // A store that only stayed busy: recovery in this very process closes the slice
            // within a minute, and the agent goes on.
            SupervisorError::Unrecorded { source, .. } => !matches!(
                source,
                KernelError::Store(
                    StoreError::Busy { .. }
                        | StoreError::Unavailable { .. }
                        | StoreError::CommitUnknown { .. }
                )
            ),
            SupervisorError::Kernel(_)
            | SupervisorError::Agent(crate::agent::AgentError::Profile { .. })
            | SupervisorError::Launch { .. }
            | SupervisorError::ProjectConfig { .. } => false,
        }
    }
}

/// An error and its causes on one line, for evidence and progress lines.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
