//! Capturing what the agent prints without ever running out of memory: a capped raw log with
//! exact counts, an ANSI-stripped text view, and an emulated screen.

mod log;
pub(crate) mod mask;
pub(crate) mod pump;
pub(crate) mod screen;

pub(crate) use log::CappedLog;
pub use log::LogCounts;
