//! What can go wrong in an operation, and the class of each failure: the CLI turns a class into
//! its documented exit code, the board into an HTTP status, so both say the same thing.

use loopx_kernel::KernelError;
use loopx_vocab::ErrorClass;

/// Every failure an operation can meet.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// Invalid input the kernel never sees (a time in the past, an isolation git cannot give).
    #[error("{0}")]
    Usage(String),
    /// A profile, an adapter or `loopx.toml` is invalid; the message says which and why.
    #[error("{0}")]
    Config(String),
    /// The state does not allow it now, said in full: a todo whose work does not land, a
    /// rollback git could not make.
    #[error("{0}")]
    Conflict(String),
    /// An agent could not be read (none registered, an unknown name, a profile that does
    /// not load).
    #[error(transparent)]
    Agent(#[from] loopx_domain::agent::AgentError),
}

impl From<loopx_kernel::Invalid> for AppError {
    fn from(e: loopx_kernel::Invalid) -> Self {
        AppError::Kernel(e.into())
    }
}

impl From<loopx_kernel::errors::InvalidId> for AppError {
    fn from(e: loopx_kernel::errors::InvalidId) -> Self {
        AppError::Kernel(e.into())
    }
}

impl AppError {
    pub fn class(&self) -> ErrorClass {
        match self {
            AppError::Kernel(e) => e.class(),
            AppError::Usage(_) => ErrorClass::Usage,
            AppError::Config(_) => ErrorClass::Config,
            AppError::Conflict(_) => ErrorClass::Conflict,
            AppError::Agent(e) => e.class(),
        }
    }
}

/// An error's message with its causes, one per line (the vocabulary's one rendering).
pub use loopx_vocab::render_error;
