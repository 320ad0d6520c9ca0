//! A slice's end in its worktree: one commit of whatever the agent left, authored by the agent,
//! whose diff against the slice's checkpoint is exactly what it changed; and putting a todo's
//! branch and worktree back at a checkpoint when a person answers `rollback`
//! (`docs/design/worktrees.md`).

use loopx_kernel::project::STATE_DIR;
use loopx_kernel::scope::Scope;
use loopx_kernel::{GoalId, Project, TodoId};

use super::{Prepared, Repo, Tree, relative, short, todo_branch};
use crate::GitError;
use crate::checkpoint::LeftOut;
use crate::scope::SliceChanges;

/// What a slice left in its worktree, committed.
#[derive(Debug, Clone)]
pub struct SliceCommit {
    /// The todo's branch after the slice (the checkpoint when nothing changed).
    pub head: String,
    pub checkpoint: String,
    /// What changed, against the checkpoint, checked against the goal's scope.
    pub changes: SliceChanges,
    /// What the commit left out, past the checkpoint's bounds (it stays in the worktree).
    pub left_out: LeftOut,
}

/// Commits what the slice left (author: the agent) and moves the todo's branch to it; what
/// changed since the checkpoint is the slice's, and only the slice's.
pub fn finish(
    prepared: &Prepared,
    slice: &str,
    agent: &str,
    summary: Option<&str>,
    scope: &[String],
) -> Result<SliceCommit, GitError> {
    let tree = &prepared.tree;
    let on = tree
        .todo
        .map_or_else(|| "a planning slice".to_owned(), |t| format!("on {t}"));
    let title = summary
        .map(|s| s.lines().next().unwrap_or_default().trim())
        .filter(|s| !s.is_empty())
        .map(|s| loopx_kernel::limits::clip(s, 72))
        .unwrap_or_else(|| format!("what slice {slice} left"));
    let message = format!("{slice}: {title}\n\nSlice {slice} of agent `{agent}` {on} (loopx).");
    let name = format!("{agent} (loopx agent)");
    let email = format!("{agent}@loopx.invalid");
    let checkpoint = prepared.checkpoint.clone();
    // One commit on the checkpoint, whatever the agent did to its own history meanwhile.
    let (head, left_out) = match tree.snapshot(&checkpoint, (&name, &email), &message) {
        Ok(done) => done,
        Err(why) => {
            // Nothing is committed or checked; still, no git file of the agent's stays for a
            // person's git to follow.
            if let Err(e) = tree.reset_agent_git(&checkpoint) {
                tracing::warn!(error = %e, "cannot reset the agent's git state after a failed snapshot");
            }
            return Err(why);
        }
    };
    if head != checkpoint {
        tree.move_branch(&head, &checkpoint, "loopx: slice")?;
    }
    // Whatever the agent did to its own git, the worktree is left sane: for a person looking
    // at it, and for the next slice.
    tree.reset_agent_git(&head)?;
    let changes = changes_between(&tree.repo, &checkpoint, &head, scope)?;
    Ok(SliceCommit {
        head,
        checkpoint,
        changes,
        left_out,
    })
}

/// The files that differ between two commits, as the scope check sees them: project-relative,
/// those outside the scope and those in `.loopx/` named as violations.
fn changes_between(
    repo: &Repo,
    from: &str,
    to: &str,
    scope: &[String],
) -> Result<SliceChanges, GitError> {
    let mut changes = SliceChanges::default();
    if from == to {
        return Ok(changes);
    }
    // One git for the names and the counts: `added<TAB>deleted<TAB>path<NUL>` per file.
    let numstat = repo.git(&[
        "diff",
        "--numstat",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        from,
        to,
    ])?;
    let state = format!("{STATE_DIR}/");
    let mut stat = String::new();
    let scope = Scope::recorded(scope);
    for entry in numstat.split('\0').filter(|e| !e.is_empty()) {
        let mut fields = entry.splitn(3, '\t');
        let (Some(added), Some(deleted), Some(repo_path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = relative(repo_path, &repo.prefix);
        stat.push_str(&match (added, deleted) {
            ("-", "-") => format!(" {path} | binary\n"),
            _ => format!(" {path} | +{added} -{deleted}\n"),
        });
        if path.starts_with(&state) {
            changes.state_files.push(path.clone());
        } else if !scope.contains(&path) {
            changes.outside.push(path.clone());
        }
        changes.files.push(path);
    }
    changes.files.sort();
    changes.stat = stat;
    Ok(changes)
}

/// Puts a todo's branch and worktree back at `checkpoint`, undoing `commit` (the answer
/// `rollback` to a violation gate); what was done, or why it could not be.
pub fn roll_back(
    project: &Project,
    goal: GoalId,
    todo: TodoId,
    checkpoint: &str,
    commit: &str,
) -> Result<String, GitError> {
    let repo = Repo::of(project)?;
    let branch = todo_branch(goal, todo);
    let head = repo.branch_head(&branch);
    if head.as_deref() != Some(commit) {
        return Err(format!(
            "{todo}'s branch {branch} moved on since that slice (it is at {}, not {}): roll back by hand with `git revert`, or answer `keep`",
            short(head.as_deref().unwrap_or("nothing")),
            short(commit)
        ).into());
    }
    if let Some(tree) = Tree::find(project, goal, Some(todo))? {
        tree.switch(commit, checkpoint)?;
        tree.reset_agent_git(checkpoint)?;
    }
    let reference = format!("refs/heads/{branch}");
    repo.git(&[
        "update-ref",
        "-m",
        "loopx: rollback",
        &reference,
        checkpoint,
        commit,
    ])?;
    Ok(format!(
        "{branch} and its worktree are back at {} (the slice's commit {} is undone)",
        short(checkpoint),
        short(commit)
    ))
}
