//! # Theory of operation
//!
//! `loopx-kernel` owns the durable state of a loopx project: goals, todos with their leases and
//! epochs, gates (questions for humans), evidence, handoffs, agents, slice records, and the
//! append-only event log (`docs/design/store-format.md`). Everything else in loopx reads and
//! changes state through it; it never runs a process.
//!
//! - [`Project`] finds the project root (like git finds `.git`) and keeps `.loopx/` private.
//! - [`Store`] is a project's state: the redb file `.loopx/state.redb` (shared by every process
//!   in redb's multi-writer mode), or a PostgreSQL schema (`[store] url`, several hosts; see
//!   `docs/design/multi-host.md`). A command opens it for one operation; a supervisor keeps one
//!   read-write handle for its run. Reads take a [`Snapshot`]; the only mutation is
//!   [`Store::apply`], which validates one [`Op`], writes the changed records and its [`Event`]s in
//!   a single durable transaction, and rings the [`doorbell`] so sleeping supervisors wake.
//!   [`Store::run`] is the same for an operation with one kind of result ([`store::TypedOp`]),
//!   returned typed.
//! - A panic under a store operation is damage when it comes from the database engine and a bug
//!   (with its location) when it comes from loopx's own code ([`panic_site`]).
//! - One fencing rule: a todo's epoch grows at every change of holder (claim, reclaim, release,
//!   finish), and every write under a claim needs it current and held by that agent
//!   ([`model::Todo::claim_of`]); a stale one is refused with [`Conflict::StaleEpoch`], and the
//!   refusal is itself recorded as an event.
//! - A slice begins in one transaction (`Op::SliceBegin`: claim, quota admission, record) and
//!   ends in one (its writeback, or `Op::SliceInterrupt`), so a refusal leaves nothing half done.
//!   The kernel decides nothing about quota: a spend carries its account's rules
//!   ([`store::AccountRules`], `loopx-domain`'s), run on the quota state of the spend's own
//!   transaction ([`store::Ledger`]). An account's own state and its holds live in the
//!   person's account book when the surface names one ([`store::AccountBook`], shared by their
//!   projects; `[quota] ledger = "project"` keeps them in the project), written inside the
//!   project's transaction, project locked first.
//! - Every free text passes the [`Redactor`] before it is written, so the store file never holds
//!   a credential.
//! - [`toml_file`] is the one reader of configuration files (a regular file of at most 1 MiB,
//!   parsed, errors with file and line): the store's lookup of `[store] url` (which reads no
//!   other section) and `loopx-adapters`' loaders of profiles, adapters and `loopx.toml`.
//! - [`marker`] names a slice in its agent's environment (`LOOPX_SLICE`), bound to the project.
//! - [`check_consistency`] states the kernel's invariants; `loopx doctor` and the property tests
//!   both use it.
//!
//! Stored values are versioned postcard records (see `docs/design/store-format.md`); ids are short
//! and typeable (`t12`, `q3`) and follow `^[a-z][a-z0-9-]{0,63}$` (see [`ids`]).

pub mod check;
pub mod doorbell;
pub mod errors;
pub mod fault;
pub use loopx_vocab::ids;
pub mod limits;
pub mod marker;
pub mod model;
pub mod panic_site;
pub mod project;
pub mod question;
pub mod redact;
pub mod report;
pub mod scope;
pub mod store;
pub mod time;
pub mod toml_file;

pub use check::check_consistency;
pub use errors::{Conflict, Invalid, KernelError, ProjectError, Refused, StoreError};
pub use ids::{AgentName, EvidenceId, GateId, GoalId, HandoffId, SliceId, TodoId};
pub use model::{Event, EventKind};
pub use project::{Project, StoreSettings};
pub use redact::Redactor;
pub use store::{Op, Snapshot, Store};
pub use time::{Clock, SharedClock, SystemClock, Timestamp, WallClock};
