//! Goals: started (with the isolation a person chose or git allows), amended, paused,
//! resumed, done.
//! A worktree goal's id comes from the kernel before any branch is made. It starts from the
//! person's checkout, or (`--from g1`) from a goal's branch; either way a finished goal's
//! branch with work the start lacks is named, with the merge that brings it in.

use loopx_git::clean::{Unmerged, unmerged_into};
use loopx_git::worktree::{Repo, integration_branch};
use loopx_kernel::model::{Goal, GoalRevision, GoalStatus, Isolation};
use loopx_kernel::store::{AmendGoal, Amended, NewGoal, SetGoalStatus};
use loopx_kernel::{GoalId, Invalid};
use loopx_vocab::{IsolationMode, PermissionLevel};

use crate::{App, AppError, UsageError};

/// A goal to start.
#[derive(Debug, Clone)]
pub struct StartGoal {
    pub objective: String,
    pub scope: Vec<String>,
    pub permission: PermissionLevel,
    /// The goal's share of the quota (0–1).
    pub share: f64,
    /// Which active goal the agents serve first (higher first; 0 by default).
    pub priority: i32,
    /// `None`: worktrees in a git repository, else shared.
    pub isolation: Option<IsolationMode>,
    /// Start from the last commit although the work tree has uncommitted changes.
    pub from_head: bool,
    /// Start the goal's branch from this goal's branch instead of the person's checkout.
    pub from: Option<GoalId>,
}

/// A goal started, and a warning when its integration branch could not be made yet (its
/// first claim makes it, or fails saying why).
#[derive(Debug, Clone)]
pub struct Started {
    pub goal: Goal,
    pub warning: Option<String>,
    /// The goal whose branch it started from (`--from`).
    pub from: Option<GoalId>,
    /// Finished goals whose branches hold work the goal's start lacks.
    pub unmerged: Vec<Unmerged>,
}

impl App {
    pub fn start_goal(&self, start: StartGoal) -> Result<Started, AppError> {
        let store = self.store()?;
        // The id comes from the kernel's counter, and goes back in the op: the branches the
        // check below looks for are named after it, and the kernel refuses the start if
        // another goal took it meanwhile.
        let next = store.read(|s| s.next_goal_id())?;
        let (isolation, repo) =
            self.isolation_for(start.isolation, start.from_head, start.from, next)?;
        // Read before the new goal exists: the finished goals, whose work it may lack.
        let finished = match &repo {
            Some(_) => self.finished_worktree_goals()?,
            None => Vec::new(),
        };
        let goal = store.run(
            NewGoal {
                id: Some(next),
                objective: start.objective,
                scope: start.scope,
                permission: start.permission,
                share: start.share,
                isolation: isolation.clone(),
                priority: start.priority,
            },
            &self.caller().actor,
            self.now(),
        )?;
        let (warning, unmerged) = match (&repo, &isolation) {
            (Some(repo), Isolation::Worktree { base }) => {
                loopx_git::worktree::ignore_worktrees(self.root());
                let warning = repo
                    .start_integration(goal.id, base)
                    .err()
                    .map(|e| e.to_string());
                let finished: Vec<(GoalId, &str)> = finished
                    .iter()
                    .filter_map(|g| Some((g.id, g.isolation.base()?)))
                    .collect();
                (warning, unmerged_into(repo, &finished, base))
            }
            _ => (None, Vec::new()),
        };
        Ok(Started {
            goal,
            warning,
            from: start.from,
            unmerged,
        })
    }

    /// Pauses, resumes or finishes a goal (`None`: the current one).
    pub fn set_goal_status(&self, goal: Option<GoalId>, to: GoalStatus) -> Result<Goal, AppError> {
        self.run(SetGoalStatus {
            goal,
            to,
            agents_close: false,
        })
    }

    /// A person amends a goal (`None` in `amend.goal`: the current one): its next revision.
    /// Refused inside a slice: an agent proposes a change (`report propose-goal`), a person
    /// answers it.
    pub fn amend_goal(&self, amend: AmendGoal) -> Result<Amended, AppError> {
        self.refuse_in_slice(|actor| loopx_kernel::Refused::AmendByAgent { actor })?;
        self.run(amend)
    }

    /// Every recorded revision of `goal`, oldest first.
    pub fn goal_revisions(&self, goal: GoalId) -> Result<Vec<GoalRevision>, AppError> {
        self.read(|s| s.goal_revisions(goal))
    }

    pub fn goals(&self) -> Result<Vec<Goal>, AppError> {
        self.read(|s| s.goals())
    }

    /// The finished (done or archived) goals whose agents worked in worktrees: what they left
    /// on branches is the person's to merge or remove.
    pub(crate) fn finished_worktree_goals(&self) -> Result<Vec<Goal>, AppError> {
        let mut goals = self.goals()?;
        goals.retain(|g| {
            matches!(g.status, GoalStatus::Done | GoalStatus::Archived) && g.isolation.is_worktree()
        });
        Ok(goals)
    }

    /// A goal, or (`None`) the current one.
    pub fn goal(&self, id: Option<GoalId>) -> Result<Goal, AppError> {
        match id {
            Some(id) => self.read(|s| s.goal(id))?.ok_or_else(|| {
                Invalid::NotFound {
                    what: "goal",
                    id: id.to_string(),
                }
                .into()
            }),
            None => self
                .read(|s| s.goal_meant())?
                .ok_or_else(|| UsageError::NoCurrentGoal.into()),
        }
    }

    /// Where a new goal's agents work, and the repository when they work in worktrees: a git
    /// project isolates by default, and one with uncommitted changes is asked about, never
    /// silently included or left out. `from`: the goal whose branch's tip it starts at.
    fn isolation_for(
        &self,
        asked: Option<IsolationMode>,
        from_head: bool,
        from: Option<GoalId>,
        next: GoalId,
    ) -> Result<(Isolation, Option<Repo>), AppError> {
        if asked == Some(IsolationMode::Shared) {
            if let Some(from) = from {
                return Err(UsageError::FromWithShared(from).into());
            }
            return Ok((Isolation::Shared, None));
        }
        let repo = match Repo::of(self.project()) {
            Ok(repo) => repo,
            Err(_) if asked.is_none() && from.is_none() => return Ok((Isolation::Shared, None)),
            Err(why) => return Err(UsageError::NeedsGit { from, why }.into()),
        };
        repo.check_git_version().map_err(UsageError::OldGit)?;
        let base = match from {
            Some(from) => self.branch_tip(&repo, from)?,
            None => head_base(&repo, from_head)?,
        };
        let branch = integration_branch(next);
        if repo.has_branch(&branch) {
            repo.start_integration(next, &base)
                .map_err(UsageError::Git)?;
        }
        // Todo branches of this name left by an earlier project would be taken for this goal's.
        let left = repo.branches_like(&format!("{branch}-"));
        if !left.is_empty() {
            return Err(UsageError::LeftBranches(left).into());
        }
        Ok((Isolation::Worktree { base }, Some(repo)))
    }

    /// The tip of goal `from`'s branch, for `--from`: refused, saying why, when `from` is no
    /// goal or has no branch.
    fn branch_tip(&self, repo: &Repo, from: GoalId) -> Result<String, AppError> {
        let Some(goal) = self.read(|s| s.goal(from))? else {
            return Err(UsageError::FromNoGoal(from).into());
        };
        if !goal.isolation.is_worktree() {
            return Err(UsageError::FromSharedGoal(from).into());
        }
        let branch = integration_branch(from);
        repo.commit(&format!("refs/heads/{branch}"))
            .ok_or_else(|| UsageError::FromBranchGone { from, branch }.into())
    }
}

/// The person's last commit, for a goal that starts from their checkout: refused while the
/// work tree has changes it lacks, unless `from_head` says to start without them.
fn head_base(repo: &Repo, from_head: bool) -> Result<String, AppError> {
    let Some(base) = repo.commit("HEAD") else {
        return Err(UsageError::NoCommit.into());
    };
    let files = repo.uncommitted().map_err(UsageError::Git)?;
    if !files.is_empty() && !from_head {
        return Err(UsageError::Uncommitted { files, base }.into());
    }
    Ok(base)
}

/// The commands that bring a done worktree goal's work into the person's branch.
pub fn merge_commands(goal: &Goal) -> Vec<String> {
    let into = integration_branch(goal.id);
    vec![
        format!("The goal's work is on the branch {into}. To bring it into your branch:"),
        format!("  git log --first-parent --oneline HEAD..{into}   # what landed"),
        format!("  git merge --no-ff {into}                        # or: git rebase {into}"),
        format!(
            "Its worktrees and todo branches ({into}-t…) are kept: `loopx clean` removes them, and {into} once it is merged."
        ),
    ]
}
