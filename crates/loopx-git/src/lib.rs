//! loopx's git layer.
//!
//! # Theory of operation
//!
//! - **One runner.** Every git command loopx runs goes through [`Git::run`]: git found on
//!   `PATH` once and spawned by its absolute path, with a cleared environment (no credential
//!   of loopx's reaches a program git might start), the repository's own config unable to run a
//!   program (`core.hooksPath`, `core.fsmonitor` and submodule recursion off), no prompt, no
//!   optional lock, and a deadline ([`Git::timeout`], a minute unless the surface says
//!   otherwise). A git that hangs costs one check, never the supervisor its loop. The deadline
//!   is a value, not a process-wide setting: the CLI puts `LOOPX_GIT_TIMEOUT` on every
//!   [`loopx_kernel::Project`] it opens and [`Git::of`] reads it there. What works on the
//!   project's repository takes the project; what reads another tree (a todo's worktree, the
//!   scope check's) takes the [`Git`]; a [`worktree::Repo`] and a [`scope::Before`] keep the
//!   one they were made with.
//! - **Worktrees and landing** ([`worktree`]): each todo of a worktree goal is worked on its
//!   own branch in its own worktree, each slice is a checkpoint and a commit, and a done todo
//!   lands on the goal's integration branch with a compare-and-swap
//!   (`docs/design/worktrees.md`).
//! - **Finished goals' leftovers** ([`clean`]): a finished goal's worktrees and branches,
//!   removed on a person's word, never work found nowhere else unless told `all`; and whether
//!   a finished goal's branch is in the commit a new goal starts from.
//! - **What a slice's commit takes** ([`checkpoint`]): files it would copy into `.git` anew
//!   are measured from their metadata first; past 10,000 files, 10 MiB for one or 100 MiB in
//!   all, the rest is left out (and stays in the worktree), and the slice says what.
//! - **What a slice changed** ([`scope`]): the project's files through git (`HEAD` and
//!   `git status` with a fingerprint per listed file) and `.loopx/` by a walk of its own,
//!   compared before and after a slice.
//! - **What evidence saw** ([`work`]): a mark of the tree (its commit and the content of every
//!   uncommitted file) recorded with evidence, and the files whose content differs since, by
//!   which evidence goes stale; many marks compared in one look at the present share what git
//!   said (`work::Comparer`).
//! - This crate knows goals and todos only by their ids and a goal's isolation; it writes
//!   nothing to the kernel. The supervisor and the application layer turn what it did into
//!   evidence and kernel operations.

pub mod checkpoint;
pub mod clean;
pub mod scope;
pub mod walk;
pub mod work;
pub mod worktree;

/// Why a git operation did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// git could not be started (not installed, no process to spare).
    #[error("cannot run git: {0}")]
    Spawn(String),
    /// git did not finish within [`Git::timeout`] and was stopped.
    #[error("`git {command}` did not finish in {after} and was stopped")]
    TimedOut { command: String, after: String },
    /// git ran and failed, in its own words.
    #[error("`git {command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    /// The project is not in a git work tree.
    #[error("the project is not in a git work tree")]
    NotARepository,
    /// What loopx found and will not work with (a git too old, a branch or a worktree that is
    /// not what loopx left, a file it cannot write), in words.
    #[error("{0}")]
    Unusable(String),
}

impl From<String> for GitError {
    fn from(why: String) -> Self {
        GitError::Unusable(why)
    }
}

use std::time::Duration;

/// How loopx runs git here: every command goes through [`Git::run`], stopped after `timeout`.
/// Handed to whatever runs git, from the project it works in ([`Git::of`]), never set for
/// the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Git {
    pub timeout: Duration,
}

impl Default for Git {
    fn default() -> Self {
        Git {
            timeout: Duration::from_secs(60),
        }
    }
}

impl Git {
    /// Git as `project`'s surface was told to run it (`LOOPX_GIT_TIMEOUT`), else a minute.
    pub fn of(project: &loopx_kernel::Project) -> Git {
        project
            .git_timeout()
            .map_or_else(Git::default, |timeout| Git { timeout })
    }
}
