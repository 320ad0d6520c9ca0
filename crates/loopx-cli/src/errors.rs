//! The one error type the CLI expects, and how it becomes a message and an exit code.

use std::io::Write;

use loopx_kernel::KernelError;

use crate::exit_code;

/// Every failure a user can meet.
#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// Invalid input caught by the CLI itself (a duration, a file to hash).
    #[error("{0}")]
    Usage(String),
    /// The command printed its own (failing) result, `--json` included: doctor's checks, profile
    /// check's diagnostics, adapter test's replays. Only this summary goes to stderr.
    #[error("{summary}")]
    Reported { summary: String, code: u8 },
    /// A profile or adapter is invalid, or an adapter failed its test; the details are printed.
    #[error("{0}")]
    Config(String),
    /// Writing the output failed.
    #[error("failed to write output")]
    Output(#[source] std::io::Error),
    /// `loopx run` could not run a slice at all.
    #[error(transparent)]
    Supervisor(#[from] loopx_supervisor::SupervisorError),
    /// An operation of the application layer failed.
    #[error(transparent)]
    App(#[from] loopx_app::AppError),
}

impl From<std::io::Error> for ExpectedError {
    fn from(e: std::io::Error) -> Self {
        ExpectedError::Output(e)
    }
}

impl From<loopx_kernel::Invalid> for ExpectedError {
    fn from(e: loopx_kernel::Invalid) -> Self {
        ExpectedError::Kernel(e.into())
    }
}

impl From<loopx_kernel::errors::InvalidId> for ExpectedError {
    fn from(e: loopx_kernel::errors::InvalidId) -> Self {
        ExpectedError::Kernel(e.into())
    }
}

impl ExpectedError {
    /// The documented exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            ExpectedError::Kernel(e) => exit_code::of(e.class()),
            ExpectedError::Usage(_) => exit_code::USAGE,
            ExpectedError::Config(_) => exit_code::CONFIG,
            ExpectedError::Reported { code, .. } => *code,
            ExpectedError::Output(_) => exit_code::INTERNAL,
            ExpectedError::Supervisor(e) => exit_code::of(e.class()),
            ExpectedError::App(e) => exit_code::of(e.class()),
        }
    }

    /// A short stable name for `--json` (`conflict`, `store`).
    pub fn code_name(&self) -> &'static str {
        exit_code::class_of(self.exit_code()).map_or("internal", |c| c.as_str())
    }

    /// The message with its causes, one per line.
    pub fn render(&self) -> String {
        loopx_app::render_error(self)
    }

    /// Prints `error: …` to stderr, and with `--json` an error object to stdout.
    pub fn report(&self, json: bool) {
        let message = self.render();
        let shown = crate::output::safe_line(&message, false);
        let _ = writeln!(std::io::stderr(), "error: {shown}");
        if json && !matches!(self, ExpectedError::Reported { .. }) {
            let object = serde_json::json!({
                "format_version": 1,
                "error": { "code": self.code_name(), "exit_code": self.exit_code(), "message": message },
            });
            let _ = writeln!(std::io::stdout(), "{object}");
        }
    }
}

/// An error and its causes on one line, without their hints: `what failed: the system's words`.
pub(crate) fn one_line(e: &dyn std::error::Error) -> String {
    let first =
        |e: &dyn std::error::Error| e.to_string().lines().next().unwrap_or_default().to_owned();
    let mut text = first(e);
    let mut source = e.source();
    while let Some(cause) = source {
        let line = first(cause);
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}
