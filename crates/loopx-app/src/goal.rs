//! Goals: started (with the isolation a person chose or git allows), amended, paused,
//! resumed, done.
//! A worktree goal's id comes from the kernel before any branch is made. It starts from the
//! person's checkout, or (`--from g1`) from a goal's branch; either way a finished goal's
//! branch with work the start lacks is named, with the merge that brings it in.

use loopx_git::clean::{Unmerged, unmerged_into};
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
            None => self.read(|s| s.current_goal())?.ok_or_else(|| {
                AppError::Usage(
                    "there is no current goal\n(hint: `loopx goal start \"OBJECTIVE\"`)".to_owned(),
                )
            }),
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
        let usage = |e: loopx_git::GitError| AppError::Usage(e.to_string());
        if asked == Some(IsolationMode::Shared) {
            if let Some(from) = from {
                return Err(AppError::Usage(format!(
                    "`--from {from}` starts the goal's branch from {from}'s, and `--isolation shared` gives the goal no branch: its agents work in your tree\n(hint: leave out one of them)"
                )));
            }
            return Ok((Isolation::Shared, None));
        }
        let repo = match Repo::of(self.root()) {
            Ok(repo) => repo,
            Err(_) if asked.is_none() && from.is_none() => return Ok((Isolation::Shared, None)),
            Err(why) => {
                let (what, flag) = match from {
                    Some(from) => (format!("--from {from}"), "--from"),
                    None => ("--isolation worktree".to_owned(), "--isolation"),
                };
                return Err(AppError::Usage(format!(
                    "`{what}` needs a git repository: {why}\n(hint: `git init` and commit, or leave out `{flag}`)"
                )));
            }
        };
        repo.check_git_version().map_err(|why| {
            AppError::Usage(format!(
                "{why}\n(hint: upgrade git, or `--isolation shared`)"
            ))
        })?;
        let base = match from {
            Some(from) => self.branch_tip(&repo, from)?,
            None => head_base(&repo, from_head)?,
        };
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

    /// The tip of goal `from`'s branch, for `--from`: refused, saying why, when `from` is no
    /// goal or has no branch.
    fn branch_tip(&self, repo: &Repo, from: GoalId) -> Result<String, AppError> {
        let Some(goal) = self.read(|s| s.goal(from))? else {
            return Err(AppError::Usage(format!(
                "`--from {from}`: there is no goal {from}\n(hint: `loopx goal list` lists the goals)"
            )));
        };
        if !goal.isolation.is_worktree() {
            return Err(AppError::Usage(format!(
                "`--from {from}`: goal {from}'s agents worked in the project's own tree (isolation shared), so it has no branch to start from\n(hint: its work is in your checkout already: leave out `--from`)"
            )));
        }
        let branch = integration_branch(from);
        repo.commit(&format!("refs/heads/{branch}")).ok_or_else(|| {
            AppError::Usage(format!(
                "`--from {from}`: the branch {branch} does not exist (deleted with `git branch -D` or `loopx clean --all`?)\n(hint: leave out `--from` to start from your checkout, or make the branch again: `git branch {branch} COMMIT`)"
            ))
        })
    }
}

/// The person's last commit, for a goal that starts from their checkout: refused while the
/// work tree has changes it lacks, unless `from_head` says to start without them.
fn head_base(repo: &Repo, from_head: bool) -> Result<String, AppError> {
    let Some(base) = repo.commit("HEAD") else {
        return Err(AppError::Usage(
            "the repository has no commit yet, and a worktree goal starts from one\n(hint: commit what is there, or `--isolation shared`)".to_owned(),
        ));
    };
    let dirty = repo
        .uncommitted()
        .map_err(|e| AppError::Usage(e.to_string()))?;
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
