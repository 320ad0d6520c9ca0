//! Landing a todo's branch on its goal's integration branch: merged without touching any
//! checkout (`git merge-tree --write-tree`, then one merge commit), checked by the project's
//! `[land] check` in a checkout of that commit, and the integration branch moved with a
//! compare-and-swap, so concurrent landings never overwrite each other
//! (`docs/design/worktrees.md`).

use std::path::Path;
use std::time::Duration;

use loopx_kernel::{GoalId, Project, TodoId};

use super::{LAND_SUBJECT, LAND_TRIES, Repo, goal_dir, integration_branch, relative, todo_branch};
use crate::GitError;

/// The first 12 characters of an object name.
pub fn short(name: &str) -> &str {
    name.get(..12).unwrap_or(name)
}

/// A todo's branch merged into the integration branch, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// The integration branch is now `commit`, merging `commits` commits that change `files`.
    Landed {
        commit: String,
        commits: u64,
        files: Vec<String>,
    },
    /// Everything on the todo's branch is on the integration branch already.
    Empty,
    /// Merging conflicts in `files` with what the todos `with` landed.
    Conflict {
        files: Vec<String>,
        with: Vec<TodoId>,
    },
    /// The `[land] check` failed on the merged tree: how it ended and the end of its output.
    CheckFailed { how: String, output: String },
    /// Git could not do what landing needs.
    Failed(String),
}

/// Runs `sh -c COMMAND` in a checkout (the directory, and the project root's place in it)
/// for at most a duration: its exit code (`None`: stopped at the deadline) and the end of its
/// output, or why it could not run.
pub type RunCheck<'a> =
    dyn Fn(&Path, &str, &str, Duration) -> Result<(Option<i32>, String), String> + 'a;

/// How the land check runs: contained like a slice (the code it runs is the agent's).
pub struct CheckRun<'a> {
    pub command: &'a str,
    pub timeout: Duration,
    pub run: &'a RunCheck<'a>,
}

impl std::fmt::Debug for CheckRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckRun")
            .field("command", &self.command)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Lands the todo's branch on the goal's integration branch (`docs/design/worktrees.md`,
/// "Landing").
///
/// `held` is asked right before the goal's branch moves (after the check, which may take
/// minutes): a todo whose claim was lost meanwhile lands nothing.
pub fn land(
    project: &Project,
    goal: GoalId,
    todo: TodoId,
    title: &str,
    check: Option<&CheckRun<'_>>,
    held: &dyn Fn() -> bool,
) -> Landing {
    try_land(project, goal, todo, title, check, held)
        .unwrap_or_else(|e| Landing::Failed(e.to_string()))
}

fn try_land(
    project: &Project,
    goal: GoalId,
    todo: TodoId,
    title: &str,
    check: Option<&CheckRun<'_>>,
    held: &dyn Fn() -> bool,
) -> Result<Landing, GitError> {
    let repo = Repo::of(project)?;
    let integration = integration_branch(goal);
    let branch = todo_branch(goal, todo);
    let mut heads = repo.branch_heads(&[&integration, &branch])?;
    let head_of = |heads: &[(String, String)], name: &str| {
        heads
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h.clone())
    };
    let theirs =
        head_of(&heads, &branch).ok_or_else(|| format!("{todo} has no branch {branch}"))?;
    for _ in 0..LAND_TRIES {
        let into = head_of(&heads, &integration)
            .ok_or_else(|| format!("the goal's branch {integration} is missing"))?;
        let commits: u64 = repo
            .git(&["rev-list", "--count", &format!("{into}..{theirs}")])?
            .trim()
            .parse()
            .unwrap_or(0);
        if commits == 0 {
            return Ok(Landing::Empty);
        }
        let (tree, files) = repo.merge_tree(&into, &theirs)?;
        if !files.is_empty() {
            let with = landed_by(&repo, &into, &theirs, &files);
            return Ok(Landing::Conflict { files, with });
        }
        let message = format!(
            "{LAND_SUBJECT}{todo} ({})",
            loopx_kernel::limits::clip(title, 60)
        );
        let commit = repo.merge_commit(&tree, &into, &theirs, &message)?;
        if let Some(check) = check
            && let Some(failed) = run_check(project.root(), &repo, goal, todo, &commit, check)?
        {
            return Ok(failed);
        }
        if !held() {
            return Err(format!(
                "{todo}'s claim was lost while it was being landed: nothing landed"
            )
            .into());
        }
        let reference = format!("refs/heads/{integration}");
        if repo
            .git(&["update-ref", "-m", &message, &reference, &commit, &into])
            .is_ok()
        {
            let files = repo
                .git(&[
                    "diff",
                    "--name-only",
                    "-z",
                    "--no-renames",
                    "--no-ext-diff",
                    &into,
                    &commit,
                ])?
                .split('\0')
                .filter(|p| !p.is_empty())
                .map(|p| relative(p, &repo.prefix))
                .collect();
            return Ok(Landing::Landed {
                commit,
                commits,
                files,
            });
        }
        // Another landing moved the branch meanwhile: merge again onto the new head.
        heads = repo.branch_heads(&[&integration, &branch])?;
    }
    Err(format!("{integration} kept moving while {todo} tried to land ({LAND_TRIES} tries)").into())
}

/// The todos whose landings last changed `files` on the integration branch since the todo's
/// branch forked from it.
fn landed_by(repo: &Repo, into: &str, theirs: &str, files: &[String]) -> Vec<TodoId> {
    let Ok(fork) = repo.git(&["merge-base", into, theirs]) else {
        return Vec::new();
    };
    let range = format!("{}..{into}", fork.trim());
    let mut args = vec!["log", "--first-parent", "--format=%s", &range, "--"];
    let paths: Vec<String> = files
        .iter()
        .map(|f| crate::scope::repo_path(f, &repo.prefix))
        .collect();
    args.extend(paths.iter().map(String::as_str));
    let Ok(subjects) = repo.git(&args) else {
        return Vec::new();
    };
    let mut todos: Vec<TodoId> = subjects
        .lines()
        .filter_map(|s| {
            s.strip_prefix(LAND_SUBJECT)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    todos.sort();
    todos.dedup();
    todos
}

/// Runs the land check in a detached checkout of `commit`; the failure, if it failed.
fn run_check(
    root: &Path,
    repo: &Repo,
    goal: GoalId,
    todo: TodoId,
    commit: &str,
    check: &CheckRun<'_>,
) -> Result<Option<Landing>, GitError> {
    let dir = goal_dir(root, goal).join(format!("land-{todo}"));
    let dir_text = dir.to_string_lossy().into_owned();
    if dir.exists() {
        let _ = repo.git(&["worktree", "remove", "--force", &dir_text]);
        let _ = std::fs::remove_dir_all(&dir);
    }
    repo.git(&[
        "worktree", "add", "--quiet", "--force", "--detach", &dir_text, commit,
    ])?;
    let ran = (check.run)(&dir, &repo.prefix, check.command, check.timeout);
    let _ = repo.git(&["worktree", "remove", "--force", &dir_text]);
    let _ = std::fs::remove_dir_all(&dir);
    let (code, output) = ran?;
    let how = match code {
        Some(0) => return Ok(None),
        Some(code) => format!("exited {code}"),
        None => format!(
            "did not finish in {} and was stopped",
            loopx_kernel::time::short_duration(check.timeout)
        ),
    };
    Ok(Some(Landing::CheckFailed { how, output }))
}
