//! What can go wrong in an operation, and the class of each failure: the CLI turns a class into
//! its documented exit code, the board into an HTTP status, so both say the same thing.
//!
//! Each refusal is a typed variant carrying the values it names; its message (with the hint a
//! person acts on) is written once, beside it, so sites that mean the same thing say it alike.
//! A wrapped git, I/O or load error is shown in the message, not as a cause: the text is what
//! `loopx` has always printed.

use std::path::PathBuf;

use loopx_adapters::{EditError, LoadError};
use loopx_git::GitError;
use loopx_git::worktree::short;
use loopx_kernel::errors::InvalidId;
use loopx_kernel::{GoalId, Invalid, KernelError, TodoId};
use loopx_vocab::ErrorClass;

/// Every failure an operation can meet.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// Invalid input the kernel never sees (a time in the past, an isolation git cannot give).
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// A profile, an adapter or `loopx.toml` is invalid; the message says which and why.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The state does not allow it now: a todo whose work does not land, a rollback git could
    /// not make.
    #[error(transparent)]
    Conflict(#[from] ConflictError),
    /// An agent could not be read (none registered, an unknown name, a profile that does
    /// not load).
    #[error(transparent)]
    Agent(#[from] loopx_domain::agent::AgentError),
}

/// Input the kernel never sees, refused.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// A measurement that does not read (`loopx report evidence metric`, `evidence add --kind
    /// metric`).
    #[error("{0}")]
    Metric(#[from] loopx_vocab::BadMetric),
    #[error(
        "`--unit` is for metric evidence\n(hint: `--kind metric NAME=VALUE --unit U`, or leave out `--unit`)"
    )]
    UnitWithoutMetric,
    #[error("there is no current goal\n(hint: `loopx goal start \"OBJECTIVE\"`)")]
    NoCurrentGoal,
    #[error(
        "`--from {0}` starts the goal's branch from {0}'s, and `--isolation shared` gives the goal no branch: its agents work in your tree\n(hint: leave out one of them)"
    )]
    FromWithShared(GoalId),
    /// `--from` or `--isolation worktree` outside a git repository.
    #[error("`{}` needs a git repository: {why}\n(hint: `git init` and commit, or leave out `{}`)",
        .from.map_or("--isolation worktree".to_owned(), |g| format!("--from {g}")),
        if .from.is_some() { "--from" } else { "--isolation" })]
    NeedsGit { from: Option<GoalId>, why: GitError },
    #[error("{0}\n(hint: upgrade git, or `--isolation shared`)")]
    OldGit(GitError),
    /// Git could not answer what the operation asked of it.
    #[error("{0}")]
    Git(GitError),
    #[error(
        "branches {} exist already (left by an earlier loopx project?), and this goal's todos would take them for their own\n(hint: delete them with `git branch -D {}`, or rename them, then start the goal again)",
        .0.join(", "), .0.join(" ")
    )]
    LeftBranches(Vec<String>),
    #[error("`--from {0}`: there is no goal {0}\n(hint: `loopx goal list` lists the goals)")]
    FromNoGoal(GoalId),
    #[error(
        "`--from {0}`: goal {0}'s agents worked in the project's own tree (isolation shared), so it has no branch to start from\n(hint: its work is in your checkout already: leave out `--from`)"
    )]
    FromSharedGoal(GoalId),
    #[error(
        "`--from {from}`: the branch {branch} does not exist (deleted with `git branch -D` or `loopx clean --all`?)\n(hint: leave out `--from` to start from your checkout, or make the branch again: `git branch {branch} COMMIT`)"
    )]
    FromBranchGone { from: GoalId, branch: String },
    #[error(
        "the repository has no commit yet, and a worktree goal starts from one\n(hint: commit what is there, or `--isolation shared`)"
    )]
    NoCommit,
    /// The work tree has changes a goal starting from `base` would leave out.
    #[error(
        "the work tree has uncommitted changes ({}), and the goal's agents start from the last commit, {}, without them\n(hint: commit them to include them; `--from-head` to start without them; `--isolation shared` to let agents work in this tree)",
        first_five(.files), short(.base)
    )]
    Uncommitted { files: Vec<String>, base: String },
    #[error("only a todo marked done has a successor\n(hint: leave out --next)")]
    SuccessorNotDone,
    #[error(
        "no agent worked on {todo} in the last {recent} slices: there is no same agent to hold its successor for\n(hint: leave out --same-agent)"
    )]
    NoSameAgent { todo: TodoId, recent: usize },
    #[error(
        "{0} belongs to a goal whose agents share the project's tree, so it has no branch of its own\n(hint: `git diff` shows the tree's changes; `loopx evidence list --todo {0}` what each slice changed)"
    )]
    SharedTreeTodo(TodoId),
    #[error("invalid cost `{0}`: a non-negative amount in US dollars")]
    InvalidCost(f64),
    #[error("nothing to change: give --profile, --capability, --role or --goals")]
    NothingToChange,
    #[error("cannot find the loopx executable")]
    NoExecutable,
    #[error("cannot read `{}`: {why}", .path.display())]
    Unreadable { path: PathBuf, why: std::io::Error },
    #[error(
        "the notification command is empty\n(hint: loopx notify set 'notify-send loopx \"$(jq -r .message)\"', or loopx notify off)"
    )]
    EmptyNotify,
    #[error("name one agent or one account")]
    NoHoldTarget,
}

/// A file of the project's configuration that does not load or cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "profile `{name}` cannot be loaded: {why}\n(hint: `loopx profile list` shows the profiles; `loopx profile check` explains)"
    )]
    Profile { name: String, why: LoadError },
    /// `.loopx/loopx.toml`, every problem in one plain text.
    #[error("{}", match .0 { LoadError::Invalid(invalid) => invalid.render_plain(), other => other.to_string() })]
    Project(LoadError),
    /// `.loopx/loopx.toml` as `loopx notify` reads it: each problem on a line of its own.
    #[error("{}", load_text(.0))]
    NotifyLoad(LoadError),
    #[error("{}", match .0 {
        EditError::Load(e @ LoadError::Invalid(_)) => format!(
            "{}\n(hint: fix .loopx/loopx.toml first; loopx changes only a file that loads)",
            load_text(e)
        ),
        other => crate::render_error(other),
    })]
    NotifyEdit(EditError),
    #[error("{0}")]
    ProjectionEncode(serde_json::Error),
    #[error("{}: {why}", .dir.display())]
    ProjectionWrite { dir: PathBuf, why: std::io::Error },
}

/// What the state does not allow now.
#[derive(Debug, thiserror::Error)]
pub enum ConflictError {
    #[error("finishing {todo} yielded {yielded:?}, not the todo")]
    FinishYielded {
        todo: TodoId,
        yielded: Option<Box<loopx_kernel::store::Applied>>,
    },
    #[error(
        "{0} stays open: a gate asks whether to roll its last slice back; answer it first (`loopx gate list`)"
    )]
    RollbackAsked(TodoId),
    #[error(
        "{0} stays open: its worktree holds work no slice has committed (a slice is running, or one was stopped); let its next slice end first"
    )]
    UncommittedWork(TodoId),
    #[error(
        "{todo} stays open: {why}\n(hint: `loopx diff {todo}` shows its work; `loopx todo drop {todo}` drops it, its branch kept)"
    )]
    NotLanded { todo: TodoId, why: NotLanded },
    #[error("cannot roll back: {0}; the gate stays open")]
    RollBack(GitError),
    #[error(
        "a `loopx run` works on this project ({0}), and a slice it began before its goal was done may still use what `loopx clean` removes\n(hint: stop it (Ctrl-C) and run `loopx clean` again; `loopx clean --dry-run` lists what would go)"
    )]
    RunActive(loopx_domain::presence::Peer),
    #[error("cannot survey {goal}'s leftovers: {why}")]
    Survey { goal: GoalId, why: GitError },
}

/// Why a todo's branch did not land on its goal's branch `into`.
#[derive(Debug, thiserror::Error)]
pub enum NotLanded {
    #[error("its branch {branch} conflicts with {into} in {}", .files.join(", "))]
    Conflict {
        branch: String,
        into: String,
        files: Vec<String>,
    },
    /// The `[land] check` failed; `tail`: the end of its output.
    #[error("the land check {how} on its branch merged with {into}:\n{tail}")]
    CheckFailed {
        how: String,
        into: String,
        tail: String,
    },
    #[error("{0}")]
    Failed(String),
}

/// At most five names, and how many more there are.
fn first_five(files: &[String]) -> String {
    let named = files.iter().take(5).map(String::as_str);
    let more = match files.len() {
        0..=5 => String::new(),
        n => format!(" and {} more", n - 5),
    };
    format!("{}{more}", named.collect::<Vec<_>>().join(", "))
}

/// A load failure in words: every problem of an invalid file, with its line.
fn load_text(e: &LoadError) -> String {
    match e {
        LoadError::Invalid(invalid) => invalid.one_line_each(),
        other => crate::render_error(other),
    }
}

impl From<Invalid> for AppError {
    fn from(e: Invalid) -> Self {
        AppError::Kernel(e.into())
    }
}

impl From<InvalidId> for AppError {
    fn from(e: InvalidId) -> Self {
        AppError::Kernel(e.into())
    }
}

impl AppError {
    pub fn class(&self) -> ErrorClass {
        match self {
            AppError::Kernel(e) => e.class(),
            AppError::Usage(_) => ErrorClass::Usage,
            AppError::Config(_) => ErrorClass::Config,
            AppError::Conflict(_) => ErrorClass::Conflict,
            AppError::Agent(e) => e.class(),
        }
    }
}

/// An error's message with its causes, one per line (the vocabulary's one rendering).
pub use loopx_vocab::render_error;

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(n: u64) -> GoalId {
        format!("g{n}").parse().expect("goal id")
    }

    #[test]
    fn composed_messages_read_as_before() {
        let why = GitError::NotARepository;
        let needs = UsageError::NeedsGit {
            from: None,
            why: why.clone(),
        };
        assert!(
            needs
                .to_string()
                .starts_with("`--isolation worktree` needs a git repository: ")
        );
        assert!(needs.to_string().ends_with("leave out `--isolation`)"));
        let needs = UsageError::NeedsGit {
            from: Some(goal(2)),
            why,
        };
        assert!(
            needs
                .to_string()
                .starts_with("`--from g2` needs a git repository: ")
        );
        assert!(needs.to_string().ends_with("leave out `--from`)"));
        let files: Vec<String> = (1..=7).map(|n| format!("f{n}")).collect();
        let dirty = UsageError::Uncommitted {
            files,
            base: "0123456789abcdef".into(),
        };
        assert!(
            dirty.to_string().starts_with(
                "the work tree has uncommitted changes (f1, f2, f3, f4, f5 and 2 more), and the goal's agents start from the last commit, 0123456789ab,"
            ),
            "{dirty}"
        );
        let left = UsageError::LeftBranches(vec!["a".into(), "b".into()]);
        assert!(left.to_string().starts_with("branches a, b exist already"));
        assert!(left.to_string().contains("`git branch -D a b`"));
    }
}
