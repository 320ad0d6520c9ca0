//! `loopx goal start|list|show|pause|resume|done`.

use loopx_kernel::GoalId;
use loopx_kernel::model::{Goal, GoalStatus, Isolation};
use loopx_kernel::store::{NewGoal, SetGoalStatus};
use loopx_supervisor::worktree::{Repo, short};

use super::id;
use crate::args::{GoalCommand, IsolationMode};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: GoalCommand) -> Result<(), ExpectedError> {
    let (target, to) = match cmd {
        GoalCommand::Start {
            objective,
            scope,
            permission,
            share,
            isolation,
            from_head,
        } => {
            let root = ctx.project()?.root().to_path_buf();
            let store = ctx.store()?;
            // The id comes from the kernel's counter, and goes back in the op: the branches the
            // check below looks for are named after it, and the kernel refuses the start if
            // another goal took it meanwhile.
            let next = store.read(|s| s.next_goal_id())?;
            let (isolation, repo) = isolation_for(&root, isolation, from_head, next)?;
            let goal = store.run(
                NewGoal {
                    id: Some(next),
                    objective,
                    scope,
                    permission,
                    share,
                    isolation: isolation.clone(),
                },
                &ctx.actor(),
                ctx.now(),
            )?;
            let branch = match (&repo, &isolation) {
                (Some(repo), Isolation::Worktree { base }) => {
                    loopx_supervisor::worktree::ignore_worktrees(&root);
                    repo.start_integration(goal.id, base).err()
                }
                _ => None,
            };
            show_goal(ctx, &goal, "Started")?;
            if let Some(why) = branch {
                // The goal exists; its first claim makes the branch, or fails saying why.
                ctx.line(format!("warning: {why}"))?;
            }
            return Ok(());
        }
        GoalCommand::List => {
            let goals = ctx.store_read()?.read(|s| s.goals())?;
            if ctx.json {
                return ctx.json_out(&document("goals", &goals));
            }
            if goals.is_empty() {
                return ctx.line("No goals yet. Start one: loopx goal start \"OBJECTIVE\"");
            }
            for goal in &goals {
                ctx.line(views::goal_line(ctx.style, goal))?;
            }
            return Ok(());
        }
        GoalCommand::Show { id: goal } => {
            let goal = match goal {
                Some(text) => {
                    let gid: GoalId = id(&text)?;
                    ctx.store_read()?
                        .read(|s| s.goal(gid))?
                        .ok_or_else(|| not_found(&text))?
                }
                None => ctx
                    .store_read()?
                    .read(|s| s.current_goal())?
                    .ok_or_else(|| {
                        ExpectedError::Usage(
                            "there is no current goal\n(hint: `loopx goal start \"OBJECTIVE\"`)"
                                .to_owned(),
                        )
                    })?,
            };
            if ctx.json {
                return ctx.json_out(&document("goal", &goal));
            }
            ctx.line(views::goal_line(ctx.style, &goal))?;
            // A finished worktree goal's work waits on its branch, whatever goal came next:
            // the merge command stays one command away.
            if goal.status == GoalStatus::Done
                && matches!(goal.isolation, Isolation::Worktree { .. })
            {
                for line in merge_hint(&goal) {
                    ctx.line(line)?;
                }
            }
            return Ok(());
        }
        GoalCommand::Pause { id } => (id, GoalStatus::Paused),
        GoalCommand::Resume { id } => (id, GoalStatus::Active),
        GoalCommand::Done { id } => (id, GoalStatus::Done),
    };
    let goal = target.as_deref().map(id::<GoalId>).transpose()?;
    let store = ctx.store()?;
    let goal = store.run(SetGoalStatus { goal, to }, &ctx.actor(), ctx.now())?;
    let verb = match to {
        GoalStatus::Paused => "Paused",
        GoalStatus::Active => "Resumed",
        _ => "Finished",
    };
    show_goal(ctx, &goal, verb)
}

/// Where a new goal's agents work, and the repository when they work in worktrees: a git
/// project isolates by default, and one with uncommitted changes is asked about, never
/// silently included or left out.
fn isolation_for(
    root: &std::path::Path,
    asked: Option<IsolationMode>,
    from_head: bool,
    next: GoalId,
) -> Result<(Isolation, Option<Repo>), ExpectedError> {
    let usage = |why: String| ExpectedError::Usage(why);
    if asked == Some(IsolationMode::Shared) {
        return Ok((Isolation::Shared, None));
    }
    let repo = match Repo::of(root) {
        Ok(repo) => repo,
        Err(_) if asked.is_none() => return Ok((Isolation::Shared, None)),
        Err(why) => {
            return Err(usage(format!(
                "`--isolation worktree` needs a git repository: {why}\n(hint: `git init` and commit, or leave out `--isolation`)"
            )));
        }
    };
    repo.check_git_version().map_err(|why| {
        usage(format!(
            "{why}\n(hint: upgrade git, or `--isolation shared`)"
        ))
    })?;
    let Some(base) = repo.commit("HEAD") else {
        return Err(usage(
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
        return Err(usage(format!(
            "the work tree has uncommitted changes ({}{more}), and the goal's agents start from the last commit, {}, without them\n(hint: commit them to include them; `--from-head` to start without them; `--isolation shared` to let agents work in this tree)",
            named.join(", "),
            short(&base)
        )));
    }
    let branch = loopx_supervisor::worktree::integration_branch(next);
    if repo.has_branch(&branch) {
        repo.start_integration(next, &base).map_err(usage)?;
    }
    // Todo branches of this name left by an earlier project would be taken for this goal's.
    let left = repo.branches_like(&format!("{branch}-"));
    if !left.is_empty() {
        return Err(usage(format!(
            "branches {} exist already (left by an earlier loopx project?), and this goal's todos would take them for their own\n(hint: delete them with `git branch -D {}`, or rename them, then start the goal again)",
            left.join(", "),
            left.join(" ")
        )));
    }
    Ok((Isolation::Worktree { base }, Some(repo)))
}

fn show_goal(ctx: &mut Ctx, goal: &Goal, verb: &str) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&document("goal", goal));
    }
    ctx.line(format!("{verb} goal {}: {}", goal.id, goal.objective))?;
    if let Isolation::Worktree { base } = &goal.isolation {
        let into = loopx_supervisor::worktree::integration_branch(goal.id);
        match goal.status {
            GoalStatus::Active if verb == "Started" => ctx.line(format!(
                "Each todo is worked on its own branch ({into}-tN for todo tN) in its own worktree under .loopx/worktrees/{}/; done todos land on {into}, which starts at {}. Your branch and work tree are never touched.",
                goal.id,
                short(base)
            ))?,
            GoalStatus::Done => {
                for line in merge_hint(goal) {
                    ctx.line(line)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The commands that bring a done worktree goal's work into the person's branch.
pub fn merge_hint(goal: &loopx_kernel::model::Goal) -> Vec<String> {
    let into = loopx_supervisor::worktree::integration_branch(goal.id);
    vec![
        format!("The goal's work is on the branch {into}. To bring it into your branch:"),
        format!("  git log --first-parent --oneline HEAD..{into}   # what landed"),
        format!("  git merge --no-ff {into}                        # or: git rebase {into}"),
        format!(
            "Todo branches ({into}-t…) are kept; delete them when you no longer need them: git branch --list '{into}-*'"
        ),
    ]
}

fn not_found(text: &str) -> ExpectedError {
    ExpectedError::Kernel(
        loopx_kernel::Invalid::NotFound {
            what: "goal",
            id: text.to_owned(),
        }
        .into(),
    )
}
