//! `loopx clean`: what finished goals left in the repository — their worktrees, their todos'
//! branches, their branches once merged (all of it with `all`) — removed, or (`dry_run`) only
//! listed. Active and paused goals are never touched.
//!
//! Refused (unless `dry_run`) while a `loopx run` works on the project from this host: a slice
//! that began before its goal was marked done still works in that goal's worktree, and the
//! supervisor moves branches under git's ref locks, which a deletion takes too.

use crate::{App, AppError, ConflictError};
use loopx_git::clean::{Kept, Leftover, remove, survey, tidy};

/// What to clean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clean {
    /// List what would go, change nothing.
    pub dry_run: bool,
    /// Remove work that is nowhere else too: unmerged goal branches, unlanded todo branches,
    /// worktrees with uncommitted work.
    pub all: bool,
}

/// What was (or, in a dry run, would be) removed, what stays and why, and what could not go.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Cleaned {
    pub dry_run: bool,
    pub removed: Vec<Leftover>,
    pub kept: Vec<Kept>,
    /// A removal that failed, and why.
    pub failed: Vec<String>,
}

impl App {
    /// Removes what finished worktree goals left (a person's command: the CLI refuses it in a
    /// slice).
    pub fn clean(&self, clean: Clean) -> Result<Cleaned, AppError> {
        self.refuse_in_slice(|actor| loopx_kernel::Refused::CleanByAgent { actor })?;
        let mut cleaned = Cleaned {
            dry_run: clean.dry_run,
            ..Cleaned::default()
        };
        let finished: Vec<_> = self
            .finished_worktree_goals()?
            .into_iter()
            .map(|g| g.id)
            .collect();
        if finished.is_empty() || !loopx_git::worktree::in_git(self.root()) {
            return Ok(cleaned);
        }
        if !clean.dry_run {
            let runs = loopx_domain::presence::live(self.project());
            if let Some(run) = runs.first() {
                return Err(ConflictError::RunActive(run.clone()).into());
            }
        }
        for goal in finished {
            let found = survey(self.project(), goal, clean.all)
                .map_err(|why| ConflictError::Survey { goal, why })?;
            cleaned.kept.extend(found.keep);
            for leftover in found.remove {
                if clean.dry_run {
                    cleaned.removed.push(leftover);
                    continue;
                }
                match remove(self.project(), &leftover) {
                    Ok(()) => cleaned.removed.push(leftover),
                    Err(e) => cleaned.failed.push(format!("{leftover}: {e}")),
                }
            }
            if !clean.dry_run {
                tidy(self.root(), goal);
            }
        }
        Ok(cleaned)
    }
}
