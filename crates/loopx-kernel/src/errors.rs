//! Everything the kernel can refuse or fail at.
//!
//! Messages are lowercase fragments with the offending value in backticks and at most one
//! `(hint: …)` line; a caller renders the `source()` chain after them.

use std::path::PathBuf;

use crate::ids::{AgentName, GateId, GoalId, SliceId, TodoId};
use crate::time::Timestamp;

pub use loopx_vocab::InvalidId;

/// The project directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error(
        "no loopx project in `{start}` or any parent directory\n(hint: run `loopx init` in the project root, or pass `--project DIR`)"
    )]
    NotFound { start: PathBuf },
    #[error("`{path}` already holds a loopx project")]
    AlreadyInitialised { path: PathBuf },
    #[error(
        "refusing `{path}`: it is a symbolic link\n(hint: loopx keeps its state only in a real directory; replace the link with the directory it points to)"
    )]
    Symlink { path: PathBuf },
    #[error(
        "refusing `{path}`: mode {mode:04o} lets other users write to it\n(hint: `chmod 700 {path}` if you trust its contents)"
    )]
    WritableByOthers { path: PathBuf, mode: u32 },
    #[error(
        "refusing `{path}`: it belongs to uid {owner}, not to you (uid {me})\n(hint: run loopx as the owner, or `chown` it)"
    )]
    ForeignOwner { path: PathBuf, owner: u32, me: u32 },
    #[error("`{path}` is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("failed to access `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The state store could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "state store `{path}` is missing\n(hint: `loopx doctor` explains; `loopx init` creates a project)"
    )]
    Missing { path: PathBuf },
    #[error(
        "state store `{path}` is empty (0 bytes): it was never written or was truncated\n(hint: run `loopx doctor`; the file was left untouched, restore it from a backup)"
    )]
    Empty { path: PathBuf },
    #[error(
        "state store `{path}` is not a loopx state store ({why})\n(hint: run `loopx doctor`; the file was left untouched)"
    )]
    Corrupt { path: PathBuf, why: String },
    /// The person's account book (`store/account_book.rs`) cannot be used as it is.
    #[error(
        "account book `{path}` cannot be used: {why}\n(hint: it is loopx's own per-user file, left as it is: remove it and each account's ledger starts again as your projects spend, or set `[quota] ledger = \"project\"` in the project's .loopx/loopx.toml)"
    )]
    Book { path: PathBuf, why: String },
    #[error(
        "state store `{path}` is damaged: {why}\n(hint: `loopx doctor` shows what; the file was left as it is)"
    )]
    Damaged { path: PathBuf, why: String },
    /// loopx's own code panicked during a store operation: the change was not written, and the
    /// file is not to blame.
    #[error(
        "loopx hit a bug at {location} ({message}) while using state store `{path}`; the change was not written\n(hint: this is loopx's fault, not the store's: please report it with this message)"
    )]
    Bug {
        path: PathBuf,
        location: String,
        message: String,
    },
    #[error(
        "state store `{path}` needs a repair after an interrupted write\n(hint: `loopx doctor --repair` lets the database engine repair it; any other loopx command repairs it too on its next write)"
    )]
    NeedsRepair { path: PathBuf },
    #[error(
        "state store `{path}` has format {found}, newer than this loopx supports ({supported})\n(hint: upgrade loopx)"
    )]
    TooNew {
        path: PathBuf,
        found: u64,
        supported: u64,
    },
    #[error(
        "state store `{path}` stayed busy for {waited_ms} ms{holders}\n(hint: retry; `loopx doctor` shows who has it open)"
    )]
    Busy {
        path: PathBuf,
        waited_ms: u64,
        holders: String,
    },
    #[error(
        "no space left on the device that holds state store `{path}`: the change was not written\n(hint: free some disk space; everything recorded before is intact)"
    )]
    NoSpace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// redb latched an earlier I/O failure (a full disk) on this handle: it refuses everything
    /// until the file is opened again. Only a long-lived handle (a supervisor's) meets it.
    #[error(
        "an earlier write to state store `{path}` failed (a full disk?), so this handle on it must be reopened\n(hint: loopx reopens it at the next try)"
    )]
    Reopen { path: PathBuf },
    #[error("failed to open state store `{path}`")]
    Open {
        path: PathBuf,
        // Boxed, as below: redb's errors are large, and every result of the kernel carries one.
        #[source]
        source: Box<redb::DatabaseError>,
    },
    #[error("state store `{path}` failed")]
    Redb {
        path: PathBuf,
        #[source]
        source: Box<redb::Error>,
    },
    /// The PostgreSQL store cannot be reached (refused, lost, shutting down): the same
    /// operation may succeed once it is back.
    #[error(
        "the state store's database `{path}` is unavailable: {why}\n(hint: loopx retries; check that the database server runs and that this host reaches it)"
    )]
    Unavailable { path: PathBuf, why: String },
    /// The connection went away while a commit was in flight: the change may or may not have
    /// been recorded. Not transient: trying the same change again could apply it twice.
    #[error(
        "the connection to the state store's database `{path}` was lost during a commit, so the change may or may not have been recorded ({why})\n(hint: `loopx log` shows whether it was; do not simply repeat it)"
    )]
    CommitUnknown { path: PathBuf, why: String },
    #[error("the state store's database `{path}` refused the operation: {why}")]
    Database { path: PathBuf, why: String },
    #[error("the state store setting {path} is not usable: {why}")]
    Config { path: PathBuf, why: String },
    #[error("a record in table `{table}` could not be decoded ({why})\n(hint: run `loopx doctor`)")]
    Decode { table: String, why: String },
    #[error("failed to access `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The error for a failed read or write of the store file: a full disk by name, other I/O
    /// errors with the system's own words.
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> StoreError {
        let path = path.to_path_buf();
        if source.kind() == std::io::ErrorKind::StorageFull
            || source.raw_os_error() == Some(nix::libc::ENOSPC)
        {
            StoreError::NoSpace { path, source }
        } else {
            StoreError::Io { path, source }
        }
    }

    /// A passing condition (another process holds the store, the disk is full) rather than a
    /// broken store: the same operation may succeed later.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Busy { .. }
                | StoreError::NoSpace { .. }
                | StoreError::Reopen { .. }
                | StoreError::Unavailable { .. }
        )
    }
}

/// Another actor holds what was asked for, or the state moved on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Conflict {
    #[error(
        "{todo} is claimed by `{agent}` (epoch {epoch}) until {until}\n(hint: the holder renews, releases or finishes it with `--epoch {epoch}`; otherwise it frees itself when the lease expires)"
    )]
    Claimed {
        todo: TodoId,
        agent: AgentName,
        epoch: u64,
        until: Timestamp,
    },
    #[error(
        "stale epoch for {todo}: {by} presented epoch {presented}, the current one is {current}\n(hint: the claim was lost or moved on; `loopx todo show {todo}` shows who holds it)"
    )]
    StaleEpoch {
        todo: TodoId,
        by: String,
        presented: u64,
        current: u64,
    },
    #[error("{todo} is not claimed by `{agent}`")]
    NotHolder { todo: TodoId, agent: AgentName },
    #[error("{todo} is {state}, so it cannot be {action}")]
    TodoState {
        todo: TodoId,
        state: &'static str,
        action: &'static str,
    },
    #[error("{todo} waits on {after}, which is {state}")]
    Waiting {
        todo: TodoId,
        after: TodoId,
        state: &'static str,
    },
    #[error(
        "{todo} is blocked by gate {gate}: {question}\n(hint: answer it with `loopx gate answer {gate} \"…\"`)"
    )]
    Gated {
        todo: TodoId,
        gate: GateId,
        question: String,
    },
    #[error("goal {goal} is {state}, so it cannot be {action}")]
    GoalState {
        goal: GoalId,
        state: &'static str,
        action: &'static str,
    },
    #[error(
        "another goal took id {expected} while this one was being prepared (it would be {next})\n(hint: run the command again)"
    )]
    GoalIdTaken { expected: GoalId, next: GoalId },
    #[error(
        "agent `{agent}` works on goal {own} in its slice, so it cannot change goal {goal}\n(hint: what an agent reports is about its own goal; a person changes another one)"
    )]
    OtherGoal {
        agent: String,
        own: GoalId,
        goal: GoalId,
    },
    #[error("gate {gate} is already {state}")]
    GateState { gate: GateId, state: &'static str },
    #[error(
        "agent `{agent}` is already registered\n(hint: `loopx agent set {agent} --profile PROFILE` changes its profile; `loopx agent remove {agent}` removes it)"
    )]
    AgentExists { agent: AgentName },
    #[error(
        "agent `{agent}` is running slice {slice}\n(hint: remove it once the slice ended: stop its `loopx run`, or wait)"
    )]
    AgentBusy { agent: AgentName, slice: SliceId },
    #[error(
        "message {message} was taken by another slice since this prompt was made\n(hint: the prompt is made again without it)"
    )]
    MessageTaken { message: crate::ids::MessageId },
    #[error("{todo} needs {missing:?}, which `{agent}` does not have")]
    MissingCapability {
        todo: TodoId,
        agent: AgentName,
        missing: Vec<String>,
    },
    #[error("{todo} is for role `{role}`, and `{agent}` is not")]
    WrongRole {
        todo: TodoId,
        agent: AgentName,
        role: String,
    },
    #[error("quota says wait{}: {reason}", until.map(|u| format!(" until {u}")).unwrap_or_default())]
    QuotaBlocked {
        until: Option<Timestamp>,
        reason: String,
    },
    #[error("slice {slice} has already ended")]
    SliceEnded { slice: String },
    #[error("slice {slice}'s claim is live until {until}: its supervisor renewed it")]
    ClaimLive { slice: String, until: Timestamp },
    #[error("{todo} already has a running slice, {slice}: one slice at a time per todo")]
    SliceRunning { todo: TodoId, slice: String },
    #[error("`{agent}` is already planning in slice {slice}: one planning slice at a time")]
    PlanRunning { agent: String, slice: String },
    #[error(
        "slice {slice} has ended ({outcome}), so nothing more is written on its behalf\n(hint: `loopx report` is for the agent while its slice runs; the next slice gets its own LOOPX_SLICE)"
    )]
    ReportAfterEnd { slice: SliceId, outcome: String },
    #[error("slice {slice} runs agent `{owner}`, not `{agent}`")]
    SliceOwner {
        slice: SliceId,
        agent: AgentName,
        owner: AgentName,
    },
}

/// Input that the kernel refuses on its merits.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Invalid {
    #[error(transparent)]
    Id(#[from] InvalidId),
    #[error("{what} `{id}` does not exist")]
    NotFound { what: &'static str, id: String },
    #[error("{field} is empty")]
    Empty { field: &'static str },
    #[error("{field} is {len} characters long; the limit is {max}{hint}")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
        hint: &'static str,
    },
    #[error("{0}")]
    Question(String),
    #[error("option {given} does not exist: gate {gate} has {count} option(s)")]
    NoSuchOption {
        gate: GateId,
        given: u32,
        count: usize,
    },
    #[error("`{given}` is not an option of gate {gate}: answer with one of {options}")]
    NotAnOption {
        gate: GateId,
        given: String,
        /// `1 (keep) | 2 (rollback)`.
        options: String,
    },
    #[error(
        "several goals are active ({goals}): name one with --goal\n(hint: `loopx goal list` shows them)"
    )]
    WhichGoal {
        /// `g1, g2`.
        goals: String,
    },
    #[error("{0}")]
    Other(String),
}

/// A safety rule refused the action, whoever asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    #[error(
        "gates are answered by people, and this runs inside slice `{slice}`\n(hint: a human answers with `loopx gate answer` in their own terminal)"
    )]
    AnswerFromSlice { slice: String },
    #[error(
        "a goal is amended by a person, and `{actor}` is not one\n(hint: an agent proposes a change with `loopx report propose-goal`; a person answers it)"
    )]
    AmendByAgent { actor: String },
    #[error(
        "a todo is changed by a person, and `{actor}` is not one\n(hint: an agent says what should change in its handoff, or proposes a new todo)"
    )]
    EditByAgent { actor: String },
    #[error(
        "the notification command is set by a person, and `{actor}` is not one\n(hint: it runs outside every slice with loopx's environment; a person sets it with `loopx notify set` in their own terminal)"
    )]
    NotifyByAgent { actor: String },
    #[error(
        "a message to an agent is a person's, and `{actor}` is not one\n(hint: an agent hands work on with `loopx report handoff` or `loopx report todo`)"
    )]
    SayByAgent { actor: String },
    #[error(
        "a person's messages are written into a running session by loopx's supervisor, and `{actor}` is not it\n(hint: a person sends one with `loopx say`)"
    )]
    LiveByOther { actor: String },
    #[error(
        "finished goals' branches and worktrees are removed by a person, and `{actor}` is not one\n(hint: a person runs `loopx clean` in their own terminal)"
    )]
    CleanByAgent { actor: String },
    #[error(
        "only the planning slice that re-plans an amended goal drops or rewrites its todos, and {why}\n(hint: say in the handoff which todos no longer fit and why; a person drops them)"
    )]
    NotReplanning { why: String },
    #[error(
        "{todo} is a {what} `{person}` made, and re-planning changes only agents' todos\n(hint: say in the handoff why it no longer fits; a person drops it with `loopx todo drop {todo}`)"
    )]
    PersonsTodo {
        todo: crate::ids::TodoId,
        person: String,
        what: &'static str,
    },
    #[error("`{actor}` keeps {open} {what} open, the most one agent may\n(hint: {hint})")]
    OverCap {
        actor: String,
        open: usize,
        what: &'static str,
        hint: &'static str,
    },
    #[error(
        "{todo} is finished by the agent that holds it or by a person, and `{actor}` does not hold it\n(hint: an agent reports its own todo done with `loopx report done`; work on another todo is proposed, not finished)"
    )]
    FinishByAgent {
        actor: String,
        todo: crate::ids::TodoId,
    },
}

/// Any failure of a kernel operation.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Conflict(#[from] Conflict),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Refused(#[from] Refused),
}

impl KernelError {
    /// What kind of failure it is (the CLI's exit code, the board's HTTP status, an agent's
    /// refused report).
    pub fn class(&self) -> loopx_vocab::ErrorClass {
        use loopx_vocab::ErrorClass;
        match self {
            KernelError::Project(_) => ErrorClass::Config,
            // A bug is loopx's own failure, not the store's: nothing a retry or `doctor` fixes.
            KernelError::Store(StoreError::Bug { .. }) => ErrorClass::Internal,
            KernelError::Store(_) => ErrorClass::Store,
            KernelError::Conflict(_) => ErrorClass::Conflict,
            KernelError::Invalid(_) => ErrorClass::Usage,
            KernelError::Refused(_) => ErrorClass::Refused,
        }
    }
}

impl From<InvalidId> for KernelError {
    fn from(e: InvalidId) -> Self {
        KernelError::Invalid(Invalid::Id(e))
    }
}
