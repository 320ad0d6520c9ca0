//! What finished goals leave in the repository, and removing it (`loopx clean`), and whether a
//! finished goal's work is in the commit a new goal starts from.
//!
//! A finished worktree goal leaves its worktrees (an open todo's, and the planning one,
//! detached at the goal's branch), its todos' branches `loopx/<goal>-<todo>`, and its branch
//! `loopx/<goal>`, whose work is the person's to merge. Nothing that holds work found nowhere
//! else goes unless the person says `all`: a worktree with work its branch does not have (a
//! slice stopped before its commit), a todo's branch with commits that never landed on the
//! goal's branch, the goal's branch until a branch of the person's (or the checkout) has it.
//! A branch is deleted only where it was surveyed (`update-ref -d` with its old value): one
//! that moved meanwhile stays. A goal's directory under `.loopx/worktrees/`, or a worktree in
//! it, that is a symbolic link is not what loopx made: nothing is removed through it (a link
//! to a directory of the person's holding a `t1/` had it deleted).
//!
//! Which goals are finished, and that no slice works in them, is the caller's to say: this
//! crate knows goals by their ids.

use std::path::{Path, PathBuf};

use loopx_kernel::{GoalId, Project, TodoId};

use crate::GitError;
use crate::worktree::{
    PLAN_SEAT, Repo, goal_dir, has_uncommitted, integration_branch, is_link, remove_seat, short,
    todo_branch,
};

/// Something a finished goal left that can go.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Leftover {
    /// A worktree: a todo's, or (`todo` `None`) the goal's planning worktree.
    Worktree {
        goal: GoalId,
        todo: Option<TodoId>,
        path: PathBuf,
    },
    /// A branch, at the commit it was found at.
    Branch {
        goal: GoalId,
        name: String,
        head: String,
    },
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Leftover::Worktree {
                todo: None, path, ..
            } => {
                write!(f, "planning worktree {}", path.display())
            }
            Leftover::Worktree { path, .. } => write!(f, "worktree {}", path.display()),
            Leftover::Branch { name, head, .. } => {
                write!(f, "branch {name} (was {})", short(head))
            }
        }
    }
}

/// Something a finished goal left that stays, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Kept {
    pub goal: GoalId,
    /// `branch loopx/g1`, `worktree …`.
    pub what: String,
    pub why: String,
}

/// What one finished goal left: what can go, and what stays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// In the order they are removed: worktrees, todos' branches, the goal's branch.
    pub remove: Vec<Leftover>,
    pub keep: Vec<Kept>,
}

impl Leftovers {
    /// A branch found at `head`: to remove when `goes`, else kept for `why`.
    fn branch(&mut self, goal: GoalId, name: String, head: String, goes: bool, why: String) {
        if goes {
            self.remove.push(Leftover::Branch { goal, name, head });
        } else {
            self.keep.push(Kept {
                goal,
                what: format!("branch {name}"),
                why: format!("{why}; `loopx clean --all` deletes it anyway"),
            });
        }
    }
}

/// What finished goal `goal` left in the repository of `root`; with `all`, everything, work
/// that is nowhere else included.
pub fn survey(project: &Project, goal: GoalId, all: bool) -> Result<Leftovers, GitError> {
    let (root, repo) = (project.root(), Repo::of(project)?);
    let mut found = Leftovers::default();
    // A todo whose worktree stays keeps its branch: the work there is measured against it.
    let mut held = Vec::new();
    if is_link(&goal_dir(root, goal)) {
        found.keep.push(Kept {
            goal,
            what: format!("the worktrees under {}", goal_dir(root, goal).display()),
            why: "it is a symbolic link, not the directory loopx made: loopx removes nothing through it; remove the link yourself".to_owned(),
        });
    }
    for (todo, path) in seats(root, goal) {
        let uncommitted = match todo {
            Some(todo) if !all => has_uncommitted(project, goal, todo).map_err(|e| e.to_string()),
            _ => Ok(false),
        };
        if uncommitted != Ok(false) {
            held.extend(todo);
        }
        match uncommitted {
            Ok(false) => found.remove.push(Leftover::Worktree { goal, todo, path }),
            Ok(true) => found.keep.push(Kept {
                goal,
                what: format!("worktree {}", path.display()),
                why: format!(
                    "it holds work its branch does not have (a slice stopped before its commit): `loopx diff {}` shows it; `loopx clean --all` removes it anyway",
                    todo.map(|t| t.to_string()).unwrap_or_default()
                ),
            }),
            Err(why) => found.keep.push(Kept {
                goal,
                what: format!("worktree {}", path.display()),
                why: format!(
                    "cannot tell whether it holds uncommitted work ({why}); `loopx clean --all` removes it anyway"
                ),
            }),
        }
    }
    let into = integration_branch(goal);
    let into_head = repo.branch_head(&into);
    for name in todo_branches(&repo, goal) {
        let Some(head) = repo.branch_head(&name) else {
            continue;
        };
        if held.iter().any(|t| todo_branch(goal, *t) == name) {
            found.keep.push(Kept {
                goal,
                what: format!("branch {name}"),
                why: "its worktree stays (above)".to_owned(),
            });
            continue;
        }
        let elsewhere: Vec<&str> = into_head.iter().map(String::as_str).collect();
        let left = unmerged(&repo, &head, &elsewhere)?;
        let why = format!(
            "{} that never landed on {into} (`git log {into}..{name}`)",
            commits(left)
        );
        found.branch(goal, name, head, left == 0 || all, why);
    }
    if let Some(head) = into_head {
        let left = unmerged(&repo, &head, &[])?;
        let why = format!(
            "{} not merged into your branch: `git merge {into}` brings them in",
            commits(left)
        );
        found.branch(goal, into, head, left == 0 || all, why);
    }
    Ok(found)
}

/// Removes one leftover a [`survey`] found: a worktree and loopx's records of it, or a branch
/// if it is still where it was found.
pub fn remove(project: &Project, leftover: &Leftover) -> Result<(), GitError> {
    match leftover {
        Leftover::Worktree { goal, todo, .. } => remove_seat(project, *goal, *todo),
        Leftover::Branch { name, head, .. } => {
            let reference = format!("refs/heads/{name}");
            Repo::of(project)?
                .git(&["update-ref", "-m", "loopx: clean", "-d", &reference, head])
                .map(|_| ())
                .map_err(|e| format!("cannot delete the branch {name}: {e}").into())
        }
    }
}

/// Removes the goal's directory under `.loopx/worktrees/` (loopx's indexes and records) once
/// it holds no worktree.
pub fn tidy(root: &Path, goal: GoalId) {
    let dir = goal_dir(root, goal);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let holds_a_tree = entries
        .flatten()
        .any(|e| e.file_type().is_ok_and(|t| t.is_dir()));
    if !holds_a_tree {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A finished goal's branch with work that is not in the commit a new goal starts from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unmerged {
    pub goal: GoalId,
    pub branch: String,
    /// Its commits that the new goal's start lacks.
    pub commits: u64,
}

/// Which of `goals`' branches (each goal with the commit it started from) have work of the
/// goal's own that `base` lacks; a branch whose work another of them holds too (a goal started
/// from another's) is left out, its merge being that one's.
pub fn unmerged_into(repo: &Repo, goals: &[(GoalId, &str)], base: &str) -> Vec<Unmerged> {
    let mut found: Vec<(Unmerged, String)> = goals
        .iter()
        .filter_map(|&(goal, started)| {
            let branch = integration_branch(goal);
            let head = repo.branch_head(&branch)?;
            let commits = count(repo, &head, &["--not", base, started]).ok()?;
            (commits > 0).then_some((
                Unmerged {
                    goal,
                    branch,
                    commits,
                },
                head,
            ))
        })
        .collect();
    let heads: Vec<String> = found.iter().map(|(_, head)| head.clone()).collect();
    found.retain(|(_, head)| {
        !heads.iter().any(|other| {
            other != head && count(repo, head, &["--not", other]).is_ok_and(|n| n == 0)
        })
    });
    found.into_iter().map(|(u, _)| u).collect()
}

/// The goal's worktrees on disk: its planning one (`None`) and each todo's; none through a
/// goal directory that is a link.
fn seats(root: &Path, goal: GoalId) -> Vec<(Option<TodoId>, PathBuf)> {
    let dir = goal_dir(root, goal);
    if is_link(&dir) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut seats: Vec<(Option<TodoId>, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let todo = match name.as_str() {
                PLAN_SEAT => None,
                other => Some(other.parse::<TodoId>().ok()?),
            };
            Some((todo, e.path()))
        })
        .collect();
    seats.sort();
    seats
}

/// The goal's todos' branches (`loopx/g1-t3`), by name.
fn todo_branches(repo: &Repo, goal: GoalId) -> Vec<String> {
    let prefix = format!("{}-", integration_branch(goal));
    repo.branches_like(&prefix)
        .into_iter()
        .filter(|b| {
            b.strip_prefix(&prefix)
                .is_some_and(|t| t.parse::<TodoId>().is_ok())
        })
        .collect()
}

/// How many commits of `head` are in none of `also` and in no branch of the person's: the
/// checkout (`HEAD`) and every branch outside `loopx/`.
fn unmerged(repo: &Repo, head: &str, also: &[&str]) -> Result<u64, GitError> {
    let mut not = vec!["--not", "HEAD", "--exclude=loopx/*", "--branches"];
    not.extend_from_slice(also);
    count(repo, head, &not)
}

/// `git rev-list --count HEAD_ARGS…`.
fn count(repo: &Repo, head: &str, rest: &[&str]) -> Result<u64, GitError> {
    let mut args = vec!["rev-list", "--count", head];
    args.extend_from_slice(rest);
    let out = repo.git(&args)?;
    out.trim()
        .parse()
        .map_err(|_| format!("`git rev-list --count` printed `{}`", out.trim()).into())
}

/// `1 commit`, `3 commits`.
pub fn commits(n: u64) -> String {
    match n {
        1 => "1 commit".to_owned(),
        n => format!("{n} commits"),
    }
}
