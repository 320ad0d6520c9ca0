//! What can stop a simulation before it runs (a run that finds a broken invariant is not an
//! error: its report says so).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot read scenario `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("scenario `{origin}`: {why}")]
    Scenario { origin: String, why: String },
    #[error("cannot set up the simulated project: {0}")]
    Setup(String),
}
