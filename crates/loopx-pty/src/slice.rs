//! One running slice: the handle the caller holds, the control loop that enforces limits, and
//! the report it ends with.

mod control;
mod handle;
mod report;

pub use handle::{RunningSlice, SliceControl, SliceEvents, spawn_slice};
pub use report::{ChildStatus, SliceEvent, SliceExit, SliceReport, StopReason};
