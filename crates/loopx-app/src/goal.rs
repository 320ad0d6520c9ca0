//! Goals: started (with the isolation a person chose or git allows), amended, paused,
//! resumed, done.
//! A worktree goal's id comes from the kernel before any branch is made.

use loopx_git::worktree::{Repo, integration_branch, short};
use loopx_kernel::model::{Goal, GoalRevision, GoalStatus, Isolation};
use loopx_kernel::store::{AmendGoal, Amended, NewGoal, SetGoalStatus};
use loopx_kernel::{GoalId, Invalid};
use loopx_vocab::{IsolationMode, PermissionLevel};

use crate::{App, AppError};

/// A goal to start.
#[derive(Debug, Clone)]
pub struct StartGoal {
    pub objective: String,
    pub scope: Vec<String>,
    pub permission: PermissionLevel,
    /// The goal's share of the quota (0–1).
    pub share: f64,
    /// `None`: worktrees in a git repository, else shared.
    pub isolation: Option<IsolationMode>,
    /// Start from the last commit although the work tree has uncommitted changes.
    pub from_head: bool,
}

/// A goal started, and a warning when its integration branch could not be made yet (its
/// first claim makes it, or fails saying why).
#[derive(Debug, Clone)]
pub struct Started {
    pub goal: Goal,
    pub warning: Option<String>,
}

impl App {
    pub fn start_goal(&self, start: StartGoal) -> Result<Started, AppError> {
        let store = self.store()?;
        // The id comes from the kernel's counter, and goes back in the op: the branches the
        // check below looks for are named after it, and the kernel refuses the start if
        // another goal took it meanwhile.
        let next = store.read(|s| s.next_goal_id())?;
        let (isolation, repo) = self.isolation_for(start.isolation, start.from_head, next)?;
        let goal = store.run(
            NewGoal {
                id: Some(next),
                objective: start.objective,
                scope: start.scope,
                permission: start.permission,
                share: start.share,
                isolation: isolation.clone(),
            },
            &self.caller().actor,
            self.now(),
        )?;
        let warning = match (&repo, &isolation) {
            (Some(repo), Isolation::Worktree { base }) => {
                loopx_git::worktree::ignore_worktrees(self.root());
                repo.start_integration(goal.id, base)
                    .err()
                    .map(|e| e.to_string())
            }
            _ => None,
        };
        Ok(Started { goal, warning })
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
            None => self.read(|s| s.current_goal())?.ok_or_else(|| {
                AppError::Usage(
                    "there is no current goal\n(hint: `loopx goal start \"OBJECTIVE\"`)".to_owned(),
                )
            }),
        }
    }

    /// Where a new goal's agents work, and the repository when they work in worktrees: a git
    /// project isolates by default, and one with uncommitted changes is asked about, never
    /// silently included or left out.
    fn isolation_for(
        &self,
        asked: Option<IsolationMode>,
        from_head: bool,
        next: GoalId,
    ) -> Result<(Isolation, Option<Repo>), AppError> {
        let usage = |e: loopx_git::GitError| AppError::Usage(e.to_string());
        if asked == Some(IsolationMode::Shared) {
            return Ok((Isolation::Shared, None));
        }
        let repo = match Repo::of(self.root()) {
            Ok(repo) => repo,
            Err(_) if asked.is_none() => return Ok((Isolation::Shared, None)),
            Err(why) => {
                return Err(AppError::Usage(format!(
                    "`--isolation worktree` needs a git repository: {why}\n(hint: `git init` and commit, or leave out `--isolation`)"
                )));
            }
        };
        repo.check_git_version().map_err(|why| {
            AppError::Usage(format!(
                "{why}\n(hint: upgrade git, or `--isolation shared`)"
            ))
        })?;
        let Some(base) = repo.commit("HEAD") else {
            return Err(AppError::Usage(
                "the repository has no commit yet, and a worktree goal starts from one\n(hint: commit what is there, or `--isolation shared`)".to_owned(),
            ));
        };
        let dirty = repo.uncommitted().map_err(usage)?;
        if !dirty.is_empty() && !from_head {
            let named: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
            let more = match dirty.len() {
                0..=5 => String::new(),
                n => format!(" and {} more", n - 5),
            };
            return Err(AppError::Usage(format!(
                "the work tree has uncommitted changes ({}{more}), and the goal's agents start from the last commit, {}, without them\n(hint: commit them to include them; `--from-head` to start without them; `--isolation shared` to let agents work in this tree)",
                named.join(", "),
                short(&base)
            )));
        }
        let branch = integration_branch(next);
        if repo.has_branch(&branch) {
            repo.start_integration(next, &base).map_err(usage)?;
        }
        // Todo branches of this name left by an earlier project would be taken for this goal's.
        let left = repo.branches_like(&format!("{branch}-"));
        if !left.is_empty() {
            return Err(AppError::Usage(format!(
                "branches {} exist already (left by an earlier loopx project?), and this goal's todos would take them for their own\n(hint: delete them with `git branch -D {}`, or rename them, then start the goal again)",
                left.join(", "),
                left.join(" ")
            )));
        }
        Ok((Isolation::Worktree { base }, Some(repo)))
    }
}

/// The commands that bring a done worktree goal's work into the person's branch.
pub fn merge_commands(goal: &Goal) -> Vec<String> {
    let into = integration_branch(goal.id);
    vec![
        format!("The goal's work is on the branch {into}. To bring it into your branch:"),
        format!("  git log --first-parent --oneline HEAD..{into}   # what landed"),
        format!("  git merge --no-ff {into}                        # or: git rebase {into}"),
        format!(
            "Todo branches ({into}-t…) are kept; delete them when you no longer need them: git branch --list '{into}-*'"
        ),
    ]
}
