//! The product's rules, under the runtime.
//!
//! # Theory of operation
//!
//! A rule of loopx — when evidence still proves something, what a person's check is pinned to,
//! which `loopx run`s are present on this host — is the same rule wherever it is asked: in the
//! supervisor before a slice, in the application layer behind the CLI, the board and Lark, in
//! the simulation. Each is defined once, here, below both: the application layer and the
//! supervisor depend on this crate, and it depends on neither. It holds judgement over the
//! kernel's records and the project's files; it runs no agent, owns no process and keeps no
//! loop — that is the runtime's (`loopx-supervisor`).
//!
//! - [`account`]: an account's rules — the windows and pacing a spend is admitted against and
//!   charged to, which the kernel runs inside the spend's write transaction.
//! - [`agent`]: an agent as the decision sees it — its record, its loaded profile and the
//!   quota model's view of both (the one builder of that view).
//! - [`decision`]: the decision's input, read from a snapshot of the store (the one builder of
//!   it: the supervisor before a slice, `status`, `quota status` and the simulation all decide
//!   through it); the decision itself is `loopx-quota`'s, pure.
//! - [`ask`]: what loopx asks a person before a slice instead of running one — a goal past
//!   its budget, a goal that may be met, a stalled todo — and which decisions go on to a slice.
//! - [`approval`]: what runs only once a person approved its exact content — a `full` profile,
//!   a project adapter, the notification command (`docs/permissions.md`).
//! - [`freshness`]: whether evidence, a handoff or an answer still holds (`docs/goals.md`,
//!   "Evidence that ages").
//! - [`pin`]: the files a person's monitor check names, pinned by content, and whether they
//!   changed since (`docs/monitors.md`).
//! - [`monitor`]: polling a monitor — which are due and in what order, what a check may do (its
//!   time limit, output cap, launch plan and environment), its claim and record, and what a
//!   poll's result means (`docs/monitors.md`).
//! - [`run_event`]: what `loopx run` shows as it goes, one event a line (the slice's summary
//!   is [`writeback`]'s).
//! - [`notify`]: which run event a person hears about, what it says, and that the notification
//!   command runs only once a person approved its exact text.
//! - [`recovery`]: which slice recorded as running is an orphan, why, and the record that
//!   closes it (`docs/design/run-loop.md`, "Recovery").
//! - [`renewal`]: what a renewal of a slice's claim found, from the kernel's answer.
//! - [`run_end`]: what ends `loopx run`; [`run_error`]: why the supervisor could not run a
//!   slice, and whether that stops the agent's loop.
//! - [`presence`]: the `loopx run`s working on a project from this host.
//! - [`process`]: which process is which across restarts, and whether a slice's supervisor
//!   is gone.
//! - [`land`]: landing a todo's branch on its goal's, checked by `[land] check` run contained
//!   like a slice (`docs/goals.md`, "Worktrees").
//! - [`prompt`]: what a slice's prompt says — the goal, the todo, its evidence and handoffs,
//!   the questions answered for it.
//! - [`amendment`]: what an amended goal tells its agents, and a re-planning slice's changes.
//! - [`handbacks`]: work handed back and forth along a chain asks a person before one more
//!   round; [`metrics`]: a metric's best so far, and the question a new best asks.
//! - [`judge`]: a slice's outcome from its stream and exit, and the checks of the agent's word
//!   against facts: a `progress` that moved nothing, a `done` without the proof it needs.
//! - [`writeback`]: what a finished slice writes, as one batch of kernel operations — its
//!   record, evidence and handoff, the agent's report item by item, the scope findings, the
//!   quota charge and holds, the gates about the agent's CLI (`docs/design/run-loop.md`).

pub mod account;
pub mod agent;
pub mod amendment;
pub mod approval;
pub mod ask;
pub mod decision;
pub mod freshness;
pub mod handbacks;
pub mod judge;
pub mod land;
pub mod launch;
pub mod metrics;
pub mod monitor;
pub mod notify;
pub mod pin;
pub mod presence;
pub mod process;
pub mod prompt;
pub mod recovery;
pub mod renewal;
pub mod run_end;
pub mod run_error;
pub mod run_event;
pub mod writeback;

/// The quota model and the pure decision the rules are built on; re-exported so a caller
/// names the same types the decision returns.
pub use loopx_quota as quota;
