//! Errors of this crate: loading a script and starting the server. Problems with a single
//! request never become errors here; they are answered with a 400 and recorded.

use std::path::PathBuf;

/// A script file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("failed to read script `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid script `{path}`")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "script has no turns\n(hint: add at least one `{{\"reply\": …}}` or `{{\"error\": …}}`)"
    )]
    Empty,
    #[error("turn {index}: status {status} is not an HTTP error status (400..=599)")]
    NotAnErrorStatus { index: usize, status: u16 },
    #[error("turn {index}: custom tool call `{name}` needs a string `input`")]
    CustomInputNotString { index: usize, name: String },
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("failed to listen on 127.0.0.1:{port}")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to open request log `{path}`")]
    RequestLog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to start the server's thread")]
    Thread(#[source] std::io::Error),
    #[error(transparent)]
    Script(#[from] ScriptError),
}
