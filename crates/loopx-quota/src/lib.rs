//! # Theory of operation
//!
//! `loopx-quota` is the quota model and the decision loopx makes before every slice
//! (`docs/quota.md`). It does no I/O and never reads a clock: every function takes `now` (Unix
//! milliseconds) and the state it needs, and returns new state for the caller to persist. The
//! kernel stores that state; `loopx-domain`'s account rules apply it to a spend inside the
//! kernel's write transaction (so concurrent spends are serialised) and build the
//! [`DecideInput`] the supervisor, the CLI and the simulation decide on.
//!
//! - [`pacing`]: per-agent slices per hour with a burst, on governor's GCRA, with the arrival
//!   time persisted instead of held in memory (a restart does not reset it).
//! - [`window`]: fixed token and cost windows like the vendors' (the window starts with the
//!   first spend and resets in full at its end); overspend carries into the next window as debt.
//! - [`share`]: a goal's duty share of a rolling window of slice time.
//! - [`decide`]: stop → ask → wait → repair → deliver → plan → quiet, with one human reason.
//! - [`admission`]: the quota part of the decision (holds, share, pacing, windows), which the
//!   account rules also run as the kernel records a spend.
//! - [`expected`]: admission by expected cost: room in a window for what an agent's slices
//!   usually and at most spend, beside the account's running slices.
//! - [`budget`]: the most a goal may spend without a todo done.
//! - `replan`: after a person amended the goal, a planning slice first.
//! - [`outcome`]: the one vocabulary of slice outcomes, and the one table of what follows each.
//!
//! See `docs/quota.md` for the model and a worked example.

pub mod admission;
mod backoff;
pub mod budget;
pub mod decide;
mod decision;
pub mod expected;
pub use loopx_vocab::outcome;
pub mod pacing;
mod replan;
pub mod share;
pub mod window;

pub use admission::{Blocked, admission};
pub use budget::{Budget, Spending};
pub use decide::{
    AgentView, AskAbout, DecideInput, Decision, DecisionKind, GateBlocks, GateView, GoalView, Hold,
    HoldSource, Policy, Run, SliceKind, SliceView, TodoRef, TodoView, WaitOn, Waiting, decide,
    decide_prefix,
};
pub use loopx_vocab::{AgentName, EvidenceId, GateId, GoalId, GoalStatus, SliceId, TodoId};
pub use outcome::{Next, Outcome, OutcomePolicy, Streak};
pub use pacing::{Pacing, pacing_check};
pub use share::share_wait;
pub use window::{WindowLimit, WindowState};

/// Milliseconds since the Unix epoch, UTC.
pub type Millis = u64;
