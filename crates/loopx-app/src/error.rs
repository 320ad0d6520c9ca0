//! What can go wrong in an operation, and the class of each failure: the CLI turns a class into
//! its documented exit code, the board into an HTTP status, so both say the same thing.

use loopx_kernel::{KernelError, StoreError};
use loopx_supervisor::SupervisorError;

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
    /// The run loop could not do its part.
    #[error(transparent)]
    Supervisor(#[from] SupervisorError),
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

/// What kind of failure it is, whatever surface shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Bad input: fix the request.
    Usage,
    /// The project or its configuration: fix a file.
    Config,
    /// The store is missing, damaged, too new or stayed busy.
    Store,
    /// Someone else holds it, or the state moved on.
    Conflict,
    /// A safety rule refused it.
    Refused,
    /// A bug in loopx.
    Internal,
}

impl Class {
    /// A short stable name, for JSON (`conflict`, `store`).
    pub fn name(self) -> &'static str {
        match self {
            Class::Usage => "usage",
            Class::Config => "config",
            Class::Store => "store",
            Class::Conflict => "conflict",
            Class::Refused => "refused",
            Class::Internal => "internal",
        }
    }
}

impl AppError {
    pub fn class(&self) -> Class {
        match self {
            AppError::Kernel(e) => kernel_class(e),
            AppError::Usage(_) => Class::Usage,
            AppError::Config(_) => Class::Config,
            AppError::Conflict(_) => Class::Conflict,
            AppError::Supervisor(e) => supervisor_class(e),
        }
    }
}

/// The class of a kernel error.
pub fn kernel_class(e: &KernelError) -> Class {
    match e {
        KernelError::Project(_) => Class::Config,
        // A bug is loopx's own failure, not the store's: nothing a retry or `doctor` fixes.
        KernelError::Store(StoreError::Bug { .. }) => Class::Internal,
        KernelError::Store(_) => Class::Store,
        KernelError::Conflict(_) => Class::Conflict,
        KernelError::Invalid(_) => Class::Usage,
        KernelError::Refused(_) => Class::Refused,
    }
}

/// The class of a run loop's error.
pub fn supervisor_class(e: &SupervisorError) -> Class {
    use SupervisorError as S;
    match e {
        S::Kernel(k) => kernel_class(k),
        S::NoAgent | S::UnknownAgent { .. } => Class::Usage,
        S::Profile { .. } | S::Launch { .. } | S::ProjectConfig { .. } => Class::Config,
        S::Runtime(_) | S::Panicked(_) => Class::Internal,
        S::Unrecorded { .. } | S::WritebackLost { .. } => Class::Store,
    }
}
