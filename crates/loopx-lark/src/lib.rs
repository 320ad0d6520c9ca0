//! The Lark (Feishu) board: loopx's todos as records of a Lark Base table (`docs/lark.md`).
//!
//! # Theory of operation
//!
//! - **The kernel is the truth; the table is a projection.** [`projection::rows`] turns the
//!   application layer's view of the current goal into one row per todo (Task, Status, Agent,
//!   Priority, …), the same classification the local board uses
//!   ([`loopx_app::board::Column`]). Nothing here writes to the kernel yet: changes made in
//!   Lark flowing back are a later step (`docs/lark.md`, "Not built yet").
//! - **One reconciliation, whole.** [`sync::sync`] makes sure the table and its fields exist,
//!   reads every record, and [`reconcile::plan`] (pure) says what to create, update and delete
//!   so that the table shows the rows and nothing else of loopx's: a row is matched to its todo
//!   by the `Todo ID` field; a record without one (a person's own row) is left alone. Writes go
//!   in Lark's batch endpoints, 500 records a request, so a burst of 100 changes is one
//!   request, and a table already in step costs only its reads.
//! - **The wire is the documented one.** [`api::Client`] speaks the Open API's JSON over
//!   HTTPS (plain HTTP only to this machine: `lark.base_url` is checked when loaded): a tenant
//!   token fetched with the app secret from `LOOPX_LARK_APP_SECRET` and renewed before it
//!   expires or when Lark refuses it; a non-zero `code` is an error even under HTTP 200;
//!   throttling (HTTP 429, code 99991400) is waited out with backoff. Tests run against the
//!   scripted server in `crates/loopx-lark-server`.

pub mod api;
pub mod projection;
pub mod reconcile;
pub mod sync;

pub use api::{Client, LarkError};
pub use sync::{SyncError, SyncReport, sync};
