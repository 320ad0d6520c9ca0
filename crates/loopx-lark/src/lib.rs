//! The Lark (Feishu) board: loopx's todos as records of a Lark Base table (`docs/lark.md`).
//!
//! # Theory of operation
//!
//! - **The kernel is the truth; the table is a projection.** [`projection::rows`] turns the
//!   application layer's view of the current goal into one row per todo (Task, Status, Agent,
//!   Priority, …), the same classification the local board uses
//!   ([`loopx_app::board::Column`]). What people change in the table comes back only as the
//!   CLI's own operations by an allowed person ([`flowback`]: a drop, a priority, a new todo),
//!   or is refused and written over.
//! - **One reconciliation, whole.** [`Board::sync`] makes sure the table and its fields exist,
//!   reads every record, and [`reconcile::plan`] (pure) says what to create, update and delete
//!   so that the table shows the rows and nothing else of loopx's: a row is matched to its todo
//!   by the `Todo ID` field; a record without one (a person's own row) is left alone. Writes go
//!   in Lark's batch endpoints, 500 records a request, so a burst of 100 changes is one
//!   request, and a table already in step costs only its reads.
//! - **The wire is the documented one.** [`api::Client`] speaks the Open API's JSON over
//!   HTTPS (plain HTTP only to this machine: `lark.base_url` is checked when loaded): a tenant
//!   token fetched with the app secret from `LOOPX_LARK_APP_SECRET` and renewed before it
//!   expires or when Lark refuses it; a non-zero `code` is an error even under HTTP 200;
//!   throttling (HTTP 429, code 99991400) is waited out with backoff. Answers, callbacks and
//!   events are read into serde types of the documented shapes (`answers.rs`): a field
//!   missing or of another type is an error naming it and what Lark sent, not an empty value.
//!   Tests run against the scripted server in `crates/loopx-lark-server`.
//! - **Questions from a phone.** [`cards`] posts every open gate to the chat as a card with a
//!   button per option; [`listen`] hears the press, [`callback`] checks it (signature, time,
//!   nonce, decryption, token, answerer) before anything in it is believed, and the answer is
//!   the application layer's, by `human:lark:<open_id>`, under the kernel's rule for an answer.
//!   [`slots`] keeps room for signed requests while slow ones hold the rest.
//! - **Who changed the table is Lark's event's word.** The same listener hears Lark's
//!   record-change events and [`changes`] keeps who set which cell; [`flowback`] takes a change
//!   only when that names an allowed person for the value the cell holds, never on a record's
//!   `last_modified_by` (the last to touch any column of it).
//! - **Written for people, not programmers.** Everything loopx writes to Lark goes through
//!   [`words`]: todos and goals by their titles (`"Add stdev()" (t6)`), no command line and no
//!   markdown; a question says how to answer it (its card's buttons) in words. [`goals`] says
//!   each goal's state (active, waiting for a person, paused, done) in the Goal cell and on one
//!   card per goal, changed as the goal moves. [`putback`] says in the chat what a pass put back
//!   and why, what a person typed quoted and bounded, at a bounded rate.
//! - **Kept in step by `loopx run`.** [`service`] runs a pass after each change the doorbell
//!   announces, backs off on failure, and records its health for `loopx status`; it never
//!   touches the run loop.

mod answers;
pub mod api;
pub mod callback;
pub mod cards;
pub mod changes;
pub mod doctor;
pub mod flowback;
pub mod goals;
pub mod listen;
pub mod projection;
pub mod putback;
pub mod reconcile;
pub mod service;
pub mod slots;
pub mod sync;
pub mod words;

pub use api::{Client, LarkError};
pub use sync::{Board, SyncError, SyncReport};
