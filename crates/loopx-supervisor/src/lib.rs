//! # Theory of operation
//!
//! `loopx-supervisor` runs agents: it decides, runs one bounded slice, and writes back what the
//! slice did (DESIGN §1, §6). It owns the slice lifecycle and keeps no state of its own: every
//! step is a kernel operation, so a crash between two steps loses nothing the kernel did not
//! record. It never parses TOML (`loopx-adapters` does), never touches redb (`loopx-kernel`
//! does) and never handles a terminal (`loopx-pty` does).
//!
//! One slice ([`run_once`]):
//!
//! 1. **Decide**: [`DecisionState`](loopx_kernel::decision::DecisionState) for the agent. Only
//!    `deliver` and `repair` run anything; every other decision is returned as [`Once::Decided`].
//!    A slice that would run at `full` first needs a person's approval bound to the profile's
//!    content hash (`approval.rs`): until then the decision is `ask` (or `stop` after a
//!    denial), before anything is claimed.
//! 2. **Claim** the todo (a lease for the profile's `max_time` plus a margin) unless the agent
//!    already holds it; a planning slice has no todo.
//! 3. **Admit** the slice against the agent's quota; a refusal is a wait ([`Once::Refused`]).
//! 4. **Record** the slice as started, with its argv and log path, *before* spawning it, so a
//!    crash can never lose track of a process. The store allocates the slice id; the files
//!    named after it use [`SLICE_PLACEHOLDER`](loopx_kernel::store::SLICE_PLACEHOLDER).
//! 5. **Prompt and spawn** ([`prompt`], `slice/launch.rs`): the profile's template filled from
//!    the kernel, launched through the adapter's plan in a PTY with the plan's environment
//!    allowlist and limits; the process identity (pid, start time, boot id) is recorded.
//! 6. **Stream and classify**: output chunks go to the adapter's parser as they arrive; the
//!    outcome comes from the stream first and the exit code last, except that limits loopx
//!    enforced itself (wall time, idle, output cap, a stop) win over a stream that never
//!    finished.
//! 7. **Write back** ([`writeback`]) in one epoch-checked batch: the slice's end, evidence, a
//!    handoff, proposed todos, a gate for a question, the quota charge and a vendor hold, and
//!    the todo done or released (or left done, when the agent marked it done itself with
//!    `loopx report done`). A batch refused for a stale epoch records only the end. The
//!    scope check ([`scope`], captured just before the spawn) adds a `diff` evidence and, for
//!    files outside the goal's scope or in `.loopx/`, `violation` evidence and a gate
//!    (`findings.rs`). See `docs/permissions.md`.
//!
//! The store is opened per step and never held while the agent runs: other peers (`loopx
//! status`, the agent's own `loopx` calls) use it meanwhile.

mod agent;
mod approval;
mod commit;
mod errors;
mod findings;
mod notify;
mod once;
pub mod prompt;
mod recover;
mod renew;
mod run_loop;
pub mod scope;
pub mod shutdown;
mod signals;
mod slice;
pub mod writeback;

pub use agent::{AgentSetup, agent_view, load_agent};
pub use commit::SliceSummary;
pub use errors::SupervisorError;
pub use notify::{Notification, Notifier};
pub use once::{Once, RunOnce, Step, run_once};
pub use recover::{Recovered, recover};
pub use run_loop::{EndReason, OnGate, RunEnd, RunEvent, RunLoop, run_loop};
pub use shutdown::{Shutdown, Stopping};
pub use signals::handle_signals;
