//! The words every loopx crate shares.
//!
//! # Theory of operation
//!
//! loopx's layers (the quota model, the kernel, the adapters, the supervisor, the CLI and the
//! board) talk about the same things: a slice's [`Outcome`], an agent's [`PermissionLevel`], the
//! [`SliceKind`] of a run, who set a [`HoldSource`], a goal's [`GoalStatus`] and [`Isolation`],
//! an [`EvidenceKind`], the ids of every entity. Each of these is defined once, here, at the
//! bottom of the crate graph, and every other crate uses (or re-exports) this definition: no
//! string stands for one of them between layers, and no layer converts its own copy into
//! another's by hand.
//!
//! The crate holds types and their spellings only: no I/O, no clock, no policy beyond the
//! outcome table (what comes after each outcome), which is part of what an outcome means. Two
//! readings of outside text are words too, kept here so that every layer reads them alike: an
//! agent's terminal output without its escape sequences ([`terminal`]: the PTY's capture, the
//! output parser, the redactor, `loopx log` and the board), and where a secret hides: which
//! names look like credentials ([`secrets`]) and the password a PostgreSQL URL carries
//! ([`url`]).
//!
//! Stored types are encoded by position (postcard): variants are appended, never inserted or
//! reordered (`docs/design/store-format.md`).

pub mod actor;
pub mod ids;
pub mod kinds;
pub mod metric;
pub mod outcome;
pub mod permission;
pub mod secrets;
pub mod terminal;
pub mod url;

pub use actor::Actor;
pub use ids::{
    AgentName, EvidenceId, GateId, GoalId, HandoffId, InvalidId, MessageId, SliceId, TodoId,
    check_id,
};
pub use kinds::{
    ErrorClass, EvidenceKind, GoalStatus, HoldSource, Isolation, IsolationMode, MonitorWords,
    SliceKind, Spelled, TodoState, UnknownWord,
};
pub use metric::{BadMetric, Better, Metric, show_value};
pub use outcome::{Next, Outcome, OutcomePolicy, Streak};
pub use permission::PermissionLevel;
pub use secrets::{CREDENTIAL_WORDS, credential_word, looks_like_credential};
pub use terminal::{AnsiStripper, clean_text, strip_ansi, strip_escapes};
pub use url::{StoreUrlProblem, is_postgres_url, percent_decoded, store_url_problem, url_password};

/// An error's message with its causes, one per line (`caused by: …`), each cause shown once:
/// `transparent` variants forward `source()` to the inner error's source, so the chain starts
/// below the message already shown. How every loopx program writes an error for a person.
pub fn render_error(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(&format!("\n  caused by: {line}"));
        }
        source = cause.source();
    }
    text
}
