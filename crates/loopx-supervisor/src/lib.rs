//! # Theory of operation
//!
//! `loopx-supervisor` runs agents: it decides, runs one bounded slice, and writes back what the
//! slice did (`docs/design/run-loop.md`). It owns the slice lifecycle and keeps no state of its
//! own: every step is a kernel operation, so a crash between two steps loses nothing the kernel
//! did not record. It never parses TOML (`loopx-adapters` does), never touches redb (`loopx-kernel`
//! does) and never handles a terminal (`loopx-pty` does).
//!
//! One slice ([`run_once`]) is a value through typed stages (`slice.rs`; the design is in
//! `docs/design/run-loop.md`, "A slice's life"):
//!
//! 1. **Decide** (`slice/decide.rs`): [`DecisionState`](loopx_domain::decision::DecisionState)
//!    for the agent. Only `deliver` and `repair` run anything; every other decision is returned
//!    as [`Once::Decided`]. A slice that would run at `full` first needs a person's approval
//!    bound to the profile's content hash (`approval.rs`): until then the decision is `ask` (or
//!    `stop` after a denial), before anything is claimed. A stop already requested ends here.
//! 2. **Begin** (`slice/begin.rs`): the prompt rendered, then one kernel transaction
//!    (`Op::SliceBegin`) claims the todo unless the agent holds a live lease, admits the slice
//!    against its quota, and records it with its argv, log path and supervisor — all or nothing,
//!    so a quota refusal ([`Once::Refused`]) or a lost race ([`Once::Contended`]) leaves nothing
//!    behind. From its commit a guard (`slice/guard.rs`) owns the slice: every exit path but the
//!    writeback records it `interrupted`, with the cause, and releases its claim.
//! 3. **Launch** (`slice/run.rs`): the agent spawned through the adapter's plan in a PTY with
//!    the plan's environment allowlist and limits (not when a stop was requested since); its
//!    process identity recorded on a thread of its own; the claim renewed while it runs.
//! 4. **Observe** (`slice/run.rs`): output chunks go to the adapter's parser as they arrive
//!    (for an agent that takes input while it runs, a mailbox thread writes a person's messages
//!    into its session and records each delivered when the CLI echoes it: `slice/live.rs`); the
//!    outcome comes from the stream first and the exit code last, except that limits loopx
//!    enforced itself (wall time, idle, output cap, a stop) win over a stream that never
//!    finished; the scope check compares the project with its state before the spawn.
//! 5. **Write back** (`commit.rs`, [`writeback`]): one batch checked against the claim — the
//!    slice's end, evidence, a handoff, proposed todos, a gate for a question, the quota charge
//!    and a vendor hold, and the todo done or released. An item of the agent's report the
//!    kernel refuses is dropped and noted; when the claim moved on only loopx's own record of
//!    the slice and its usage are written; a busy or full store is retried. Then the guard is
//!    disarmed. The batch, how it is applied and the slice's summary are the domain's; this
//!    crate gathers the slice's facts and retries.
//!
//! Around slices it polls monitors (`poll.rs`: each check in a slice's containment), runs the
//! notification command and posts to the webhook (`notify.rs`, `notify/webhook.rs`: on a thread
//! of its own, never waited for by the loop) and closes the slices of dead supervisors (`recover.rs`:
//! stops what is left of them and records them). What those do and mean — which monitors are
//! due and what a check may do, which event is notified and whether the command is approved,
//! which slice is an orphan, what ends a run, which error stops an agent's loop — are rules,
//! and live in `loopx-domain` (`monitor`, `notify`, `recovery`, `run_end`, `run_error`), as do
//! the events a run shows (`run_event`); this crate runs them.
//!
//! The supervisor keeps one read-write store handle for its run (`store_cache.rs`: opening and
//! closing redb costs four `fdatasync`s), and holds no transaction while an agent runs: other
//! peers (`loopx status`, the agent's report channel) use the store meanwhile.

mod commit;
mod errors;
mod event_order;
mod notify;
mod once;
pub mod poll;
mod recover;
mod renew;
mod run_loop;
mod runtime;
pub mod shutdown;
mod signals;
mod slice;
mod store_cache;

pub use commit::SliceSummary;
pub use errors::{SupervisorError, chain as error_chain};
pub use loopx_domain::agent::{AgentSetup, agent_view, load_agent};
pub use loopx_domain::approval::is_approval;
pub use notify::{Notification, Notifier};
pub use once::{
    Begin, BegunSlice, Once, OnceReport, RunOnce, SimulatedSlice, Step, World, begin_once, run_once,
};
pub use recover::{Recovered, recover, recover_in};
pub use renew::Renewed;
pub use run_loop::{
    EndReason, Host, Msg, OnGate, RunEnd, RunEvent, RunLoop, run_loop, run_loop_on,
};
pub use runtime::SharedRuntime;
pub use shutdown::{Shutdown, Stopping};
pub use signals::handle_signals;
pub use slice::{ChannelReports, LEASE_MAX};
pub use store_cache::StoreCache;
