//! The application layer: one typed function per thing a person or an agent can do.
//!
//! # Theory of operation
//!
//! - **One function per operation.** Starting or changing a goal, adding, claiming, finishing
//!   or dropping a todo, asking or answering a gate, adding an agent, holding or resuming
//!   quota, the status snapshot, the course of a goal (`history`), the decision for an agent: each is a method on [`App`] that
//!   takes typed input, validates it once, does the whole operation (the kernel's write and
//!   the git work around it: landing a todo a person marks done, rolling a worktree back,
//!   removing a finished todo's worktree) and returns a typed result. The CLI, the board and
//!   the Lark board call these; none calls another's entry point or parses another's output.
//!   Rendering stays with each surface.
//! - **Built at the edge.** An [`App`] is a project and a [`Caller`] (who acts, from which
//!   slice), plus the path of the loopx executable for land checks. The surface reads them
//!   from its own world (the CLI from its flags and the environment, the board from the
//!   person who started it); nothing here reads an environment variable.
//! - **Errors keep their class.** [`AppError::class`] says what kind of failure it is ([`ErrorClass`]); the CLI
//!   turns that into its exit code and the board into an HTTP status. The layer's own refusals
//!   are typed ([`UsageError`], [`ConfigError`], [`ConflictError`]), each carrying its values
//!   and its message written once.
//! - **Reads are snapshots.** Each operation opens the store for itself (read-only for reads,
//!   which never wait on a writer), as a short-lived command does; the kernel's transaction is
//!   the unit of consistency.

pub mod accounts;
pub mod board;
pub mod clean;
mod config;
mod error;
pub mod event_filter;
pub mod evidence;
pub mod gate;
pub mod goal;
pub mod history;
pub mod notify;
pub mod projection;
pub mod projects;
pub mod quota;
pub mod say;
pub mod status;
pub mod todo;

use std::path::PathBuf;

use loopx_kernel::store::TypedOp;
use loopx_kernel::{Project, Snapshot, Store, Timestamp, TodoId};

pub use error::{AppError, ConfigError, ConflictError, NotLanded, UsageError, render_error};
pub use loopx_vocab::ErrorClass;

/// Who is acting, and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `human:<user>` or `agent:<name>`, as the kernel records it.
    pub actor: String,
    /// The slice this caller runs in (`LOOPX_SLICE`): the kernel refuses a gate answer from
    /// one, and nothing around the answer (a rollback, a landing) is done.
    pub slice: Option<String>,
    /// The todo of that slice (`LOOPX_TODO`): a question asked from a slice holds it back.
    pub slice_todo: Option<TodoId>,
}

impl Caller {
    /// A person acting outside any slice.
    pub fn person(user: &str) -> Caller {
        Caller {
            actor: loopx_vocab::actor::person(user),
            slice: None,
            slice_todo: None,
        }
    }
}

/// The operations on one project, for one caller.
#[derive(Debug, Clone)]
pub struct App {
    project: Project,
    caller: Caller,
    /// The loopx executable: a land check runs under it. `None` when it could not be found;
    /// only a landing needs it.
    exe: Option<PathBuf>,
}

impl App {
    pub fn new(project: Project, caller: Caller, exe: Option<PathBuf>) -> App {
        App {
            project,
            caller,
            exe,
        }
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The current wall-clock time, as the project's store settings read it.
    pub fn now(&self) -> Timestamp {
        self.project.store_settings().clock.now()
    }

    /// Reads the store in one snapshot, opened read-only: for a surface's own projections
    /// (lists, the log); operations that write go through the methods.
    pub fn read<T>(
        &self,
        f: impl FnOnce(&Snapshot<'_>) -> Result<T, loopx_kernel::KernelError>,
    ) -> Result<T, AppError> {
        Ok(self.store_read()?.read(f)?)
    }

    /// The store, opened read-write for one change.
    pub(crate) fn store(&self) -> Result<Store, AppError> {
        let started = std::time::Instant::now();
        let store = Store::open(&self.project);
        tracing::debug!(ok = store.is_ok(), took = ?started.elapsed(), "store opened read-write");
        Ok(store?)
    }

    /// The store, opened read-only: never waits for writers, never modifies the file.
    pub(crate) fn store_read(&self) -> Result<Store, AppError> {
        let started = std::time::Instant::now();
        let store = Store::open_read(&self.project);
        tracing::debug!(ok = store.is_ok(), took = ?started.elapsed(), "store opened read-only");
        Ok(store?)
    }

    /// Records a change made outside loopx (`source`: `lark`) that was refused and put back, as
    /// this caller: the person who made it, as that place names them (`change_refused` in the
    /// event log).
    pub fn record_refused_change(
        &self,
        source: &str,
        todo: Option<TodoId>,
        change: &str,
        why: &str,
    ) -> Result<(), AppError> {
        let store = self.store()?;
        store.record_refused_change(source, todo, change, why, &self.caller.actor, self.now())?;
        Ok(())
    }

    /// Applies one operation as this caller, now.
    pub(crate) fn run<O: TypedOp>(&self, op: O) -> Result<O::Output, AppError> {
        Ok(self.store()?.run(op, &self.caller.actor, self.now())?)
    }

    /// The loopx executable this app was built with, to build another for someone else (a
    /// person answering from Lark).
    pub fn loopx_exe(&self) -> Option<PathBuf> {
        self.exe.clone()
    }

    /// The loopx executable, for a land check.
    pub(crate) fn exe(&self) -> Result<&std::path::Path, AppError> {
        self.exe
            .as_deref()
            .ok_or(AppError::Usage(UsageError::NoExecutable))
    }

    pub(crate) fn root(&self) -> &std::path::Path {
        self.project.root()
    }

    pub(crate) fn in_slice(&self) -> bool {
        self.caller.slice.is_some()
    }

    /// A person's operation, refused from inside a slice with `refused` naming the slice's
    /// process: the store would refuse the agent anyway, and this says why before it runs.
    pub(crate) fn refuse_in_slice(
        &self,
        refused: impl FnOnce(String) -> loopx_kernel::Refused,
    ) -> Result<(), AppError> {
        match &self.caller.slice {
            Some(slice) => {
                let refused = refused(format!("a process of slice `{slice}`"));
                Err(loopx_kernel::KernelError::from(refused).into())
            }
            None => Ok(()),
        }
    }
}
