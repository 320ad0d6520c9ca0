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
//! - [`agent`]: an agent as the decision sees it — its record, its loaded profile and the
//!   quota model's view of both (the one builder of that view).
//! - [`decision`]: the decision's input, read from a snapshot of the store (the one builder of
//!   it: the supervisor before a slice, `status`, `quota status` and the simulation all decide
//!   through it); the decision itself is `loopx-quota`'s, pure.
//! - [`approval`]: what runs only once a person approved its exact content — a `full` profile,
//!   a project adapter, the notification command (`docs/permissions.md`).
//! - [`freshness`]: whether evidence, a handoff or an answer still holds (`docs/goals.md`,
//!   "Evidence that ages").
//! - [`pin`]: the files a person's monitor check names, pinned by content, and whether they
//!   changed since (`docs/monitors.md`).
//! - [`presence`]: the `loopx run`s working on a project from this host.
//! - [`process`]: which process is which across restarts, and whether a slice's supervisor
//!   is gone.
//! - [`land`]: landing a todo's branch on its goal's, checked by `[land] check` run contained
//!   like a slice (`docs/goals.md`, "Worktrees").

pub mod agent;
pub mod approval;
pub mod decision;
pub mod freshness;
pub mod land;
pub mod pin;
pub mod presence;
pub mod process;
