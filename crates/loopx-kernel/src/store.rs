//! The store: one transaction per change, on redb (one file, many processes) or PostgreSQL
//! (many hosts; `pg.rs`, `docs/design/multi-host.md`), behind one storage interface (`kv.rs`).
//!
//! See `docs/design/store-format.md`. In short, for redb:
//! - the file is opened in redb's multi-writer mode, per operation, by every process that needs
//!   it: readers never wait, and writers queue on redb's writer lock with jittered backoff up to a
//!   deadline, after which the error names the processes that have the file open;
//! - every change is an [`Op`] applied by [`Store::apply`]: validated, written, and recorded as
//!   one event, in one write transaction with immediate durability (and two-phase commit, which
//!   multi-writer mode always uses);
//! - values are our own versioned bytes (`store/codec.rs`), and `meta.schema_version` is checked
//!   on every open;
//! - a missing, empty, truncated or foreign file is an error that leaves the file untouched.

pub mod account_book;
pub(crate) mod apply;
mod codec;
mod copy;
mod goal_reads;
pub(crate) mod kv;
pub(crate) mod open;
pub mod pg;
mod reads;
mod redb_file;
mod redb_kv;
mod settings;
mod snapshot;
pub(crate) mod tables;
mod todo_index;
mod writer;

pub use account_book::{AccountBook, BOOK_VERSION, BookAccount, Ledger as LedgerPlace, Spender};
pub use apply::quota::{AccountRules, Ledger, QuotaRequest, busy_intervals, hold_keys};
pub use apply::{
    AgentChange, AgentWaits, AnswerChoice, AnswerGate, Applied, BatchError, BeginSlice,
    ChangeAgent, ClaimPoll, ClaimTodo, FinishTodo, Interrupt, NewAgent, NewEvidence, NewGate,
    NewGoal, NewHandoff, NewHold, NewSlice, NewTodo, Op, RecordPoll, ReleaseClaim, RemoveAgent,
    RenewClaim, Resume, SLICE_PLACEHOLDER, SetGoalStatus, SliceEnd, WithdrawGate,
};
pub use apply::{
    AmendGoal, Amended, Begun, CONTINUATION_HOLD, EditTodo, Interrupted, LiveMessages, NewMessage,
    NewSpend, OPEN_MONITORS, OPEN_PROPOSALS, OPEN_QUESTIONS, OPEN_TODOS, ReplanTodo, Replanning,
    TypedOp, WAITING_MESSAGES,
};
pub use copy::CopyReport;
pub use open::{DEFAULT_WAIT, OpenOptions, SCHEMA_VERSION, Store, WriteLock};
pub use settings::{configured_ledger, configured_url, store_url};
pub use snapshot::{Snapshot, TodoCounts};

pub(crate) use snapshot::TodoIndexRows;
pub(crate) use todo_index::ready_key;
