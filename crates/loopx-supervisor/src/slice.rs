//! Running one slice's process: its launch spec and identity, its output stream, its outcome.

mod launch;
mod outcome;
mod redact_log;
mod stream;

pub(crate) use launch::{SliceEnv, is_alive, launch_spec, marker, process_identity};
pub(crate) use outcome::judge;
pub(crate) use redact_log::redact_log;
pub(crate) use stream::run_slice;
