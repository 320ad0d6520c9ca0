//! What a worktree goal's branches hold, read-only: each open todo's commits ahead of the goal's
//! branch, whether a worktree has uncommitted work, a todo's diff (`loopx status`, `loopx diff`,
//! `loopx clean`).

use loopx_kernel::{GoalId, Project, TodoId};

use super::{Repo, Tree, git_ok, integration_branch, todo_branch};
use crate::{Git, GitError};

/// Where a todo's branch stands against the goal's integration branch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BranchState {
    pub todo: TodoId,
    pub branch: String,
    /// Commits on the todo's branch not on the integration branch.
    pub ahead: u64,
    /// Commits on the integration branch not on the todo's branch (landed since it forked).
    pub behind: u64,
}

/// Every todo branch of `goal`, in one git command.
pub fn branch_states(project: &Project, goal: GoalId) -> Result<Vec<BranchState>, GitError> {
    let into = integration_branch(goal);
    let format = format!("--format=%(refname:short) %(ahead-behind:refs/heads/{into})");
    let pattern = format!("refs/heads/{into}-*");
    let out = git_ok(
        Git::of(project),
        project.root(),
        &["for-each-ref", &format, &pattern],
    )?;
    let prefix = format!("{into}-");
    let mut states: Vec<BranchState> = out
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let branch = words.next()?.to_owned();
            let todo = branch.strip_prefix(&prefix)?.parse().ok()?;
            let ahead = words.next()?.parse().ok()?;
            let behind = words.next()?.parse().ok()?;
            Some(BranchState {
                todo,
                branch,
                ahead,
                behind,
            })
        })
        .collect();
    states.sort_by_key(|s| s.todo);
    Ok(states)
}

/// Whether a todo's worktree holds work not on its branch (a slice running, or one that was
/// killed before its commit), read through an index of its own.
pub fn has_uncommitted(project: &Project, goal: GoalId, todo: TodoId) -> Result<bool, GitError> {
    let Some(tree) = Tree::find(project, goal, Some(todo))? else {
        return Ok(false);
    };
    let Some(head) = tree.repo.branch_head(&todo_branch(goal, todo)) else {
        return Ok(false);
    };
    let index = tree
        .index
        .with_extension(format!("check-{}", std::process::id()));
    // Bounded as a slice's commit is: files past the bounds are uncommitted work too.
    let now = tree
        .stage_base(&index, &head)
        .and_then(|_| tree.stage_bounded(&index, &head))
        .and_then(|left| Ok((tree.git_with(&index, &["write-tree"])?, left)));
    let _ = std::fs::remove_file(&index);
    let head_tree = tree.repo.git(&["rev-parse", &format!("{head}^{{tree}}")])?;
    let (now, left) = now?;
    Ok(now.trim() != head_tree.trim() || !left.is_empty())
}

/// The diff of a todo's work: its branch against where it forked from the integration
/// branch, then what its worktree holds uncommitted (a slice running now).
pub fn todo_diff(p: &Project, goal: GoalId, todo: TodoId, stat: bool) -> Result<String, GitError> {
    let repo = Repo::of(p)?;
    let branch = todo_branch(goal, todo);
    if !repo.has_branch(&branch) {
        return Err(
            format!("{todo} has no branch yet ({branch} is made at its first claim)").into(),
        );
    }
    let range = format!(
        "refs/heads/{}...refs/heads/{branch}",
        integration_branch(goal)
    );
    let mut args = vec!["diff", "--no-color", "--no-ext-diff", "--no-textconv"];
    if stat {
        args.push("--stat");
    }
    args.push(&range);
    let mut text = repo.git(&args)?;
    if let (Some(tree), Some(head)) = (Tree::find(p, goal, Some(todo))?, repo.branch_head(&branch))
    {
        // An index of its own: a slice ending meanwhile uses loopx's.
        let index = tree
            .index
            .with_extension(format!("diff-{}", std::process::id()));
        // Never into a nested repository of the agent's: git would run its config's filters.
        let mut args = vec![
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=all",
        ];
        if stat {
            args.push("--stat");
        }
        args.push(&head);
        let uncommitted = tree
            .stage_base(&index, &head)
            .and_then(|_| tree.git_with(&index, &["add", "--all", "--intent-to-add"]))
            .and_then(|_| tree.git_with(&index, &args));
        let _ = std::fs::remove_file(&index);
        let uncommitted = uncommitted?;
        if !uncommitted.is_empty() {
            text.push_str(&format!(
                "\n# uncommitted in {} (a slice may be running):\n",
                tree.dir.display()
            ));
            text.push_str(&uncommitted);
        }
    }
    Ok(text)
}
