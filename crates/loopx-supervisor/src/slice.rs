//! One slice, as a value that moves through typed stages, each a function from one state to
//! the next (see `docs/design/run-loop.md`, "A slice's life"):
//!
//! ```text
//! decide ──▶ Decided ──begin──▶ Begun ──launch──▶ Launched ──observe──▶ Begun + AgentEnd + Judged ──write_back──▶ SliceSummary
//!                                 └──────────────── SliceGuard owns the slice ─────────────────────────┘
//! ```
//!
//! - `decide` (`slice/decide.rs`): the decision; only `deliver` and `repair` go on.
//! - `Decided::begin` (`slice/begin.rs`): the prompt, then claim + admission + slice record in
//!   one kernel transaction. From its commit a `SliceGuard` (`slice/guard.rs`) owns the slice:
//!   whatever happens next, the slice ends, `interrupted` with the cause when not by its
//!   writeback. `Begun` is that slice; it carries on to the writeback.
//! - `Begun::launch` (`slice/run.rs`): the claim's renewal started, the agent spawned in its
//!   PTY (not when a stop was requested).
//! - `Launched::observe` (`slice/run.rs`): its output read to the end, as an `AgentEnd`
//!   (`loopx-domain`, the same for a simulated agent: `Begun::observe_simulated`); the outcome
//!   judged (`Judged`); the scope checked, its changes added to the `AgentEnd`.
//! - `Begun::write_back` (`commit.rs`): what the slice did written back, through the domain's
//!   `Finished` and `Writeback`; the guard disarmed.

mod begin;
mod channel;
mod contain;
mod decide;
mod disk;
mod guard;
mod launch;
mod live;
mod redact_log;
mod run;
mod stream;

pub use begin::LEASE_MAX;
pub(crate) use begin::{Began, Begun, actor, lease_ttl, slice_path as slice_log_path};
pub use channel::ChannelReports;
pub(crate) use contain::{contain, slice_redactor};
pub(crate) use decide::{Next, decide};
pub(crate) use guard::{ACTOR, LiveSlices, patience, retrying};
#[cfg(test)]
pub(crate) use guard::{Beginning, SliceGuard};
pub(crate) use launch::marker;
pub(crate) use loopx_domain::process::is_alive;
pub(crate) use loopx_pty::{Room, remove_room, room_has};
