//! Worktree isolation: each todo of a worktree goal is worked on its own branch in its own git
//! worktree, every slice is a checkpoint and a commit, and a todo done by its agent lands on
//! the goal's integration branch (`docs/design/worktrees.md`).
//!
//! - **Branches.** The goal's integration branch `loopx/<goal>` starts at the commit the goal
//!   started from; each todo's branch `loopx/<goal>-<todo>` starts at the integration branch
//!   when the todo is first claimed. (Git cannot hold both `loopx/g1` and `loopx/g1/t3`: one
//!   ref would be a file and a directory at once.)
//! - **Worktrees** live in `.loopx/worktrees/<goal>/<todo>`, which the agent's sandbox mounts
//!   back inside the hidden `.loopx/`. Their `HEAD` is detached, so nothing the agent does in
//!   its worktree moves a branch: loopx moves the todo's branch to what each slice left. Where
//!   git keeps the worktree's own files (`.git/worktrees/<name>`) is recorded beside it, in
//!   `<todo>.gitdir`, when loopx creates it; the `.git` file inside the worktree is the
//!   agent's to rewrite and is never trusted.
//! - **A slice** starts from a checkpoint (what the worktree held, committed: a killed slice's
//!   leftovers are committed as they are, so its repair slice finds them) and ends with one
//!   commit of whatever the agent left, authored by the agent. Its diff against the
//!   checkpoint is exactly what it changed: a peer's write is in a peer's worktree.
//! - **Landing** merges the todo's branch into the integration branch without touching any
//!   checkout (`git merge-tree --write-tree`, then one merge commit `loopx: land t3 (…)`), runs
//!   the project's `[land] check` in a checkout of that commit, and moves the integration
//!   branch with a compare-and-swap, so concurrent landings never overwrite each other.
//!
//! loopx never pushes, never checks out or moves the person's branch, and never writes in the
//! person's own work tree.

use std::path::{Path, PathBuf};

use loopx_kernel::model::{Goal, Isolation};
use loopx_kernel::project::STATE_DIR;
use loopx_kernel::{GoalId, Project, TodoId};

use crate::checkpoint::{self, Bounds, LeftOut};
use crate::scope::GitOutput;
use crate::{Git, GitError};

mod branches;
mod commit;
mod land;

pub use branches::{BranchState, branch_states, has_uncommitted, todo_diff};
pub use commit::{SliceCommit, finish, roll_back};
pub use land::{CheckRun, Landing, land, short};

/// Where loopx keeps the todos' worktrees, under `.loopx/`.
pub const WORKTREES_DIR: &str = "worktrees";
/// Who commits what loopx commits (the agent is the author of its slices' commits).
const COMMITTER: [&str; 4] = ["-c", "user.name=loopx", "-c", "user.email=loopx@localhost"];
/// The first-parent subject of every landing: `loopx: land t3 (title)`.
const LAND_SUBJECT: &str = "loopx: land ";
/// `update-ref`'s old value for "only if it does not exist" (any hash algorithm).
const ZERO: &str = "";
/// How many times a landing is tried again when another one moved the branch meanwhile.
const LAND_TRIES: usize = 8;

/// The goal's integration branch.
pub fn integration_branch(goal: GoalId) -> String {
    format!("loopx/{goal}")
}

/// A todo's branch.
pub fn todo_branch(goal: GoalId, todo: TodoId) -> String {
    format!("loopx/{goal}-{todo}")
}

/// A todo's branch, from its goal's integration branch.
pub fn todo_branch_of(integration: &str, todo: TodoId) -> String {
    format!("{integration}-{todo}")
}

/// Where a todo's worktree lives.
pub fn worktree_dir(root: &Path, goal: GoalId, todo: TodoId) -> PathBuf {
    seat_dir(root, goal, Some(todo))
}

/// A todo's worktree, or (`None`) the goal's planning worktree: planning slices read what
/// has landed, and what they write is not kept.
pub(crate) fn seat_dir(root: &Path, goal: GoalId, todo: Option<TodoId>) -> PathBuf {
    goal_dir(root, goal).join(seat(todo))
}

fn seat(todo: Option<TodoId>) -> String {
    todo.map_or_else(|| PLAN_SEAT.to_owned(), |t| t.to_string())
}

/// The name of the goal's planning worktree.
pub(crate) const PLAN_SEAT: &str = "plan";

pub(crate) fn goal_dir(root: &Path, goal: GoalId) -> PathBuf {
    root.join(STATE_DIR)
        .join(WORKTREES_DIR)
        .join(goal.to_string())
}

/// Where loopx recorded the git directory of a todo's worktree.
fn gitdir_record(root: &Path, goal: GoalId, todo: Option<TodoId>) -> PathBuf {
    goal_dir(root, goal).join(format!("{}.gitdir", seat(todo)))
}

/// The repository the project is in.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The main work tree's top directory (the person's checkout).
    pub top: PathBuf,
    /// The project root relative to `top` (`sub/dir/`, or empty).
    pub prefix: String,
    /// The repository's own directory (`.git`, shared by every worktree).
    pub common: PathBuf,
    /// Its object directory.
    pub objects: PathBuf,
    /// How git runs on it.
    pub git: Git,
}

impl Repo {
    /// The repository `project` is in, and git as its surface runs it; why not when it is in
    /// none.
    pub fn of(project: &Project) -> Result<Repo, GitError> {
        let git = Git::of(project);
        let out = git_ok(
            git,
            project.root(),
            &[
                "rev-parse",
                "--show-toplevel",
                "--show-prefix",
                "--path-format=absolute",
                "--git-common-dir",
            ],
        )?;
        let mut lines = out.lines();
        let top = lines.next().unwrap_or_default().to_owned();
        let prefix = lines.next().unwrap_or_default().to_owned();
        let common = lines.next().unwrap_or_default().to_owned();
        if top.is_empty() || common.is_empty() {
            return Err(GitError::NotARepository);
        }
        Ok(Repo {
            top: PathBuf::from(top),
            prefix,
            objects: PathBuf::from(&common).join("objects"),
            common: PathBuf::from(common),
            git,
        })
    }

    pub(crate) fn git(&self, args: &[&str]) -> Result<String, GitError> {
        git_ok(self.git, &self.top, args)
    }

    /// The commit `name` names, if it names one.
    pub fn commit(&self, name: &str) -> Option<String> {
        let spec = format!("{name}^{{commit}}");
        self.git(&["rev-parse", "--verify", "--quiet", &spec])
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    }

    pub(crate) fn branch_head(&self, branch: &str) -> Option<String> {
        self.commit(&format!("refs/heads/{branch}"))
    }

    /// Whether `ancestor` is `of` or an ancestor of it.
    fn contains(&self, of: &str, ancestor: &str) -> bool {
        self.git
            .run(
                &self.top.to_string_lossy(),
                &["merge-base", "--is-ancestor", ancestor, of],
                &[],
            )
            .is_ok_and(|out| out.code == Some(0))
    }

    /// Creates `branch` at `at` unless it exists (a peer may create it at the same moment);
    /// its head.
    fn ensure_branch(&self, branch: &str, at: &str) -> Result<String, GitError> {
        if let Some(head) = self.branch_head(branch) {
            return Ok(head);
        }
        self.create_branch(branch, at)
    }

    /// Creates `branch` at `at`, which the caller found missing; its head (a peer's, if the
    /// peer created it first).
    fn create_branch(&self, branch: &str, at: &str) -> Result<String, GitError> {
        let reference = format!("refs/heads/{branch}");
        let created = self.git(&["update-ref", "-m", "loopx: start", &reference, at, ZERO]);
        match (created, self.branch_head(branch)) {
            (Ok(_), _) => Ok(at.to_owned()),
            (Err(_), Some(head)) => Ok(head),
            (Err(e), None) => Err(format!("cannot create the branch {branch}: {e}").into()),
        }
    }

    /// The heads of the branches that exist among `branches`, in one git.
    fn branch_heads(&self, branches: &[&str]) -> Result<Vec<(String, String)>, GitError> {
        let refs: Vec<String> = branches.iter().map(|b| format!("refs/heads/{b}")).collect();
        let args: Vec<&str> = ["for-each-ref", "--format=%(refname) %(objectname)"]
            .into_iter()
            .chain(refs.iter().map(String::as_str))
            .collect();
        Ok(self
            .git(&args)?
            .lines()
            .filter_map(|line| {
                let (name, head) = line.split_once(' ')?;
                // for-each-ref matches prefixes too (`loopx/g1` also finds `loopx/g1/x`).
                let name = name.strip_prefix("refs/heads/")?;
                branches
                    .contains(&name)
                    .then(|| (name.to_owned(), head.to_owned()))
            })
            .collect())
    }

    /// Files with uncommitted changes (untracked ones included, ignored ones and `.loopx/`
    /// not), relative to the project root.
    pub fn uncommitted(&self) -> Result<Vec<String>, GitError> {
        let out = self.git(&[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=normal",
            "--no-renames",
        ])?;
        let state = format!("{STATE_DIR}/");
        Ok(out
            .split('\0')
            .filter(|e| e.len() > 3)
            .map(|e| relative(&e[3..], &self.prefix))
            .filter(|p| !p.starts_with(&state) && p != STATE_DIR)
            .collect())
    }

    /// Whether this git can land branches without a checkout (`merge-tree --write-tree`,
    /// git 2.38).
    pub fn check_git_version(&self) -> Result<(), GitError> {
        let out = self.git(&["version"])?;
        let version: Vec<u32> = out
            .split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .split('.')
            .map_while(|n| n.parse().ok())
            .collect();
        match version.as_slice() {
            [major, minor, ..] if (*major, *minor) >= (2, 38) => Ok(()),
            _ => Err(format!(
                "worktree goals need git 2.38 or newer (this is `{}`)",
                out.trim()
            )
            .into()),
        }
    }

    /// Creates the goal's integration branch at `base`; refuses a branch of that name that
    /// exists at another commit (left by an earlier project in this repository).
    pub fn start_integration(&self, goal: GoalId, base: &str) -> Result<(), GitError> {
        let branch = integration_branch(goal);
        match self.branch_head(&branch) {
            Some(head) if head == base => Ok(()),
            Some(head) => Err(format!(
                "the branch {branch} exists already, at {} (left by an earlier loopx project?): delete it (`git branch -D {branch}`) or rename it, then start the goal again",
                short(&head)
            ).into()),
            None => self.ensure_branch(&branch, base).map(|_| ()),
        }
    }

    /// The merge of two commits, without a checkout: its tree (with conflict markers in the
    /// files that conflict), and those files, project-relative (none: a clean merge).
    fn merge_tree(&self, ours: &str, theirs: &str) -> Result<(String, Vec<String>), GitError> {
        let merged = self.git.run(
            &self.top.to_string_lossy(),
            &[
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                "-z",
                ours,
                theirs,
            ],
            &[],
        )?;
        let out = String::from_utf8_lossy(&merged.stdout).into_owned();
        let mut parts = out.split('\0').filter(|p| !p.is_empty());
        let tree = parts.next().unwrap_or_default().to_owned();
        match merged.code {
            Some(0) => Ok((tree, Vec::new())),
            Some(1) => Ok((tree, parts.map(|p| relative(p, &self.prefix)).collect())),
            _ => Err(format!("`git merge-tree` failed: {}", merged.stderr.trim()).into()),
        }
    }

    /// A merge commit of `tree` with parents `first` and `second`, committed by loopx.
    fn merge_commit(
        &self,
        tree: &str,
        first: &str,
        second: &str,
        message: &str,
    ) -> Result<String, GitError> {
        let args: Vec<&str> = COMMITTER
            .iter()
            .copied()
            .chain([
                "commit-tree",
                tree,
                "-p",
                first,
                "-p",
                second,
                "-m",
                message,
            ])
            .collect();
        Ok(self.git(&args)?.trim().to_owned())
    }

    /// The branches whose names start with `prefix`.
    pub fn branches_like(&self, prefix: &str) -> Vec<String> {
        let pattern = format!("refs/heads/{prefix}*");
        self.git(&["for-each-ref", "--format=%(refname:short)", &pattern])
            .map(|out| out.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Whether a branch exists.
    pub fn has_branch(&self, branch: &str) -> bool {
        self.branch_head(branch).is_some()
    }
}

/// Runs git in `dir`; its stdout as text, or why it failed.
fn git_ok(git: Git, dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = git.run(&dir.to_string_lossy(), args, &[])?;
    ok(args, out)
}

fn ok(args: &[&str], out: GitOutput) -> Result<String, GitError> {
    let out = out.succeeded(args)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Build outputs and caches no repository wants committed, for one without a `.gitignore`.
const DEFAULT_IGNORE: &str = "# loopx's defaults for a repository without a .gitignore (docs/design/worktrees.md)\n\
__pycache__/\n*.py[cod]\n.pytest_cache/\n.mypy_cache/\n.ruff_cache/\n.venv/\nvenv/\n.tox/\n\
node_modules/\n.npm/\n.next/\n\
target/\n*.o\n*.class\n.gradle/\n\
.DS_Store\n.idea/\n.vscode/\n*.swp\n";

/// A todo's worktree, found or made.
///
/// loopx's own git commands here never read or write git's files for the worktree
/// (`.git/worktrees/<name>`: the agent's to write, so they could name another branch as
/// `HEAD`, another repository as the common directory, or a symlink as the index). They run
/// with the repository's own directory (`GIT_DIR`), the worktree as the work tree, and an
/// index of loopx's own under the hidden `.loopx/`, and they commit with plumbing whose
/// parent loopx names: what the agent did to its own history never reaches a branch.
#[derive(Debug, Clone)]
pub struct Tree {
    pub repo: Repo,
    pub goal: GoalId,
    /// `None`: the goal's planning worktree.
    pub todo: Option<TodoId>,
    /// The worktree's top directory.
    pub dir: PathBuf,
    /// Git's files for this worktree (`.git/worktrees/<name>`), as loopx recorded them: the
    /// agent's own git uses them; loopx only rebuilds them.
    pub gitdir: PathBuf,
    /// loopx's own index for this worktree (under `.loopx/`, out of the agent's sight).
    index: PathBuf,
    /// The todo's branch (`None` for the planning worktree, which moves no branch).
    pub branch: Option<String>,
}

impl Tree {
    /// Where the agent works: the project root's place in the worktree.
    pub fn workdir(&self) -> PathBuf {
        self.dir.join(&self.repo.prefix)
    }

    /// The todo's existing worktree, without creating anything.
    pub fn find(p: &Project, goal: GoalId, todo: Option<TodoId>) -> Result<Option<Tree>, GitError> {
        if !gitdir_record(p.root(), goal, todo).exists() {
            return Ok(None);
        }
        Tree::find_in(&Repo::of(p)?, p.root(), goal, todo)
    }

    /// [`Tree::find`] in a repository already found.
    fn find_in(
        repo: &Repo,
        root: &Path,
        goal: GoalId,
        todo: Option<TodoId>,
    ) -> Result<Option<Tree>, GitError> {
        let dir = seat_dir(root, goal, todo);
        let Ok(recorded) = std::fs::read_to_string(gitdir_record(root, goal, todo)) else {
            return Ok(None);
        };
        let gitdir = PathBuf::from(recorded.trim());
        if !dir.is_dir() {
            return Ok(None);
        }
        Ok(Some(Tree {
            repo: repo.clone(),
            goal,
            todo,
            dir,
            gitdir,
            index: goal_dir(root, goal).join(format!("{}.index", seat(todo))),
            branch: todo.map(|t| todo_branch(goal, t)),
        }))
    }

    /// Git on the worktree's files through the repository's own directory and loopx's index.
    fn git_with(&self, index: &Path, args: &[&str]) -> Result<String, GitError> {
        let (common, dir, index) = (
            self.repo.common.to_string_lossy(),
            self.dir.to_string_lossy(),
            index.to_string_lossy(),
        );
        let env = [
            ("GIT_DIR", common.as_ref()),
            ("GIT_WORK_TREE", dir.as_ref()),
            ("GIT_INDEX_FILE", index.as_ref()),
        ];
        ok(args, self.repo.git.run(&dir, args, &env)?)
    }

    fn git(&self, args: &[&str]) -> Result<String, GitError> {
        self.git_with(&self.index, args)
    }

    /// Reads `base` into `index`, its nested repositories (gitlinks) marked skip-worktree:
    /// `add` and `diff` would otherwise run `git status` inside each one, with that
    /// repository's config — the agent's, whose clean filter is a program. Their pointers stay
    /// as `base` has them.
    fn stage_base(&self, index: &Path, base: &str) -> Result<(), GitError> {
        self.git_with(index, &["read-tree", base])?;
        let staged = self.git_with(index, &["ls-files", "--stage", "-z"])?;
        let gitlinks: Vec<&str> = staged
            .split('\0')
            .filter(|e| e.starts_with("160000 "))
            .filter_map(|e| e.split_once('\t').map(|(_, path)| path))
            .collect();
        if !gitlinks.is_empty() {
            let args: Vec<&str> = ["update-index", "--skip-worktree", "--"]
                .into_iter()
                .chain(gitlinks)
                .collect();
            self.git_with(index, &args)?;
        }
        Ok(())
    }

    /// The tree of everything in the worktree now (ignored files aside), staged onto `base`
    /// in loopx's index within the checkpoint's bounds, and what those left out.
    fn tree_now(&self, base: &str) -> Result<(String, LeftOut), GitError> {
        self.stage_base(&self.index, base)?;
        let left = self.stage_bounded(&self.index, base)?;
        Ok((self.git(&["write-tree"])?.trim().to_owned(), left))
    }

    /// What the worktree holds, staged onto `base` (already in `index`) as `add --all` would,
    /// with loopx's default ignore rules where the repository has none, but never more than
    /// [`Bounds::DEFAULT`] takes anew (`checkpoint.rs`).
    fn stage_bounded(&self, index: &Path, base: &str) -> Result<LeftOut, GitError> {
        let excludes = self
            .default_ignore(base)
            .map(|file| format!("core.excludesFile={}", file.display()));
        let git = |args: &[&str]| match &excludes {
            Some(e) => self.git_with(index, &[&["-c", e.as_str()][..], args].concat()),
            None => self.git_with(index, args),
        };
        let pathspecs = index.with_extension("pathspecs");
        checkpoint::stage(&git, &self.dir, base, &pathspecs, Bounds::DEFAULT)
    }

    /// loopx's default ignore rules, for a repository whose `base` has no `.gitignore` at its
    /// top: build outputs a slice leaves (`__pycache__/`, `node_modules/`, `target/`, …) were
    /// committed and landed. The file lives beside loopx's index, out of the agent's sight;
    /// `None` when the repository has its own rules (they are the person's to set) or the file
    /// cannot be written.
    fn default_ignore(&self, base: &str) -> Option<PathBuf> {
        let own = format!("{base}:.gitignore");
        if self.git(&["cat-file", "-e", &own]).is_ok() {
            return None;
        }
        let file = self.index.parent()?.join("default-ignore");
        if std::fs::read_to_string(&file).ok().as_deref() != Some(DEFAULT_IGNORE) {
            std::fs::write(&file, DEFAULT_IGNORE).ok()?;
        }
        Some(file)
    }

    /// A commit of everything in the worktree (within the checkpoint's bounds: what they left
    /// out is the second value) with `parent` as its only parent, unless nothing differs from
    /// `parent` (then `parent`).
    fn snapshot(
        &self,
        parent: &str,
        author: (&str, &str),
        message: &str,
    ) -> Result<(String, LeftOut), GitError> {
        let (tree, left) = self.tree_now(parent)?;
        let parent_tree = self
            .repo
            .git(&["rev-parse", &format!("{parent}^{{tree}}")])?;
        if parent_tree.trim() == tree {
            return Ok((parent.to_owned(), left));
        }
        let (name, email) = author;
        let common = self.repo.common.to_string_lossy();
        let args: Vec<&str> = COMMITTER
            .iter()
            .copied()
            .chain(["commit-tree", &tree, "-p", parent, "-m", message])
            .collect();
        let env = [
            ("GIT_DIR", common.as_ref()),
            ("GIT_AUTHOR_NAME", name),
            ("GIT_AUTHOR_EMAIL", email),
        ];
        let commit = ok(&["commit-tree"], self.repo.git.run(&common, &args, &env)?)?;
        Ok((commit.trim().to_owned(), left))
    }

    /// Makes the worktree's files `to`'s, from `from`'s: changed files rewritten, files of
    /// `from` that `to` lacks removed; files neither knows (ignored, or written since `from`
    /// without being committed) left alone.
    fn switch(&self, from: &str, to: &str) -> Result<(), GitError> {
        self.git(&["read-tree", from])?;
        self.git(&["read-tree", "-u", "--reset", to])?;
        Ok(())
    }

    /// Gives the agent's own git a clean start at `head`: git's files for the worktree made
    /// afresh (whatever the agent left there, symlinks included, is removed, never followed),
    /// its index loopx's view of `head`, and the worktree's `.git` file pointing at them.
    fn reset_agent_git(&self, head: &str) -> Result<(), GitError> {
        let fail =
            |what: &str, e: std::io::Error| GitError::Unusable(format!("cannot {what}: {e}"));
        match std::fs::symlink_metadata(&self.gitdir) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&self.gitdir),
            Ok(_) => std::fs::remove_file(&self.gitdir),
            Err(_) => Ok(()),
        }
        .map_err(|e| fail("clear git's files for the worktree", e))?;
        std::fs::create_dir(&self.gitdir).map_err(|e| fail("recreate them", e))?;
        self.git(&["read-tree", head])?;
        let fresh = |path: &Path, text: &[u8]| {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .and_then(|mut f| f.write_all(text))
                .map_err(|e| fail(&format!("write {}", path.display()), e))
        };
        fresh(&self.gitdir.join("HEAD"), format!("{head}\n").as_bytes())?;
        let common = self.repo.common.to_string_lossy();
        fresh(
            &self.gitdir.join("commondir"),
            format!("{common}\n").as_bytes(),
        )?;
        let link = self.dir.join(".git");
        let gitdir_file = format!("{}\n", link.display());
        fresh(&self.gitdir.join("gitdir"), gitdir_file.as_bytes())?;
        let index = std::fs::read(&self.index).map_err(|e| fail("read loopx's index", e))?;
        fresh(&self.gitdir.join("index"), &index)?;
        match std::fs::symlink_metadata(&link) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&link),
            Ok(_) => std::fs::remove_file(&link),
            Err(_) => Ok(()),
        }
        .map_err(|e| fail("replace the worktree's .git file", e))?;
        fresh(
            &link,
            format!("gitdir: {}\n", self.gitdir.display()).as_bytes(),
        )
    }

    /// Moves the todo's branch from `old` to `new` (refused if it moved meanwhile).
    fn move_branch(&self, new: &str, old: &str, why: &str) -> Result<(), GitError> {
        let Some(branch) = &self.branch else {
            return Ok(());
        };
        let reference = format!("refs/heads/{branch}");
        self.repo
            .git(&["update-ref", "-m", why, &reference, new, old])
            .map(|_| ())
    }
}

/// A worktree made ready for a slice.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub tree: Tree,
    /// The commit the slice starts from.
    pub checkpoint: String,
    /// The goal's branch was merged into the todo's before the slice (`Some`: the merge
    /// commit), with conflict markers left for the agent in `conflicts`.
    pub merged: Option<String>,
    pub conflicts: Vec<String>,
}

/// The todo's worktree, ready for `slice`: made at the first claim, then reused, its files as
/// the last slice left them (a killed slice's uncommitted work included: the next slice's
/// commit takes it, and its scope check sees it). A branch with no work of its own starts
/// again from the newest integration head; a branch behind the goal's gets the goal's merged
/// in when that merges cleanly, or when `rebase` was asked for (then with conflict markers for
/// the agent to resolve).
///
/// A planning slice (`todo` `None`) gets the goal's planning worktree at the newest
/// integration head, whatever an earlier planning slice left there discarded.
pub fn prepare(
    project: &Project,
    goal: &Goal,
    todo: Option<TodoId>,
    slice: &str,
    rebase: bool,
) -> Result<Prepared, GitError> {
    let Isolation::Worktree { base } = &goal.isolation else {
        return Err(format!("goal {} works in the project's own tree", goal.id).into());
    };
    let (root, repo) = (project.root(), Repo::of(project)?);
    let integration = repo.ensure_branch(&integration_branch(goal.id), base)?;
    let Some(todo) = todo else {
        let tree = match Tree::find_in(&repo, root, goal.id, None)? {
            Some(tree) => tree,
            None => create(root, &repo, goal.id, None)?,
        };
        // Everything there, staged onto the goal's branch, then switched to it: what a planning
        // slice wrote is gone, ignored files and files past the checkpoint's bounds aside
        // (staging them would copy them into the repository).
        tree.stage_base(&tree.index, &integration)?;
        tree.stage_bounded(&tree.index, &integration)?;
        tree.git(&["read-tree", "-u", "--reset", &integration])?;
        tree.reset_agent_git(&integration)?;
        return Ok(Prepared {
            tree,
            checkpoint: integration,
            merged: None,
            conflicts: Vec::new(),
        });
    };
    let branch = todo_branch(goal.id, todo);
    let mut head = match repo.branch_head(&branch) {
        Some(head) => head,
        None => repo.create_branch(&branch, &integration)?,
    };
    let tree = match Tree::find_in(&repo, root, goal.id, Some(todo))? {
        Some(tree) => tree,
        None => create(root, &repo, goal.id, Some(todo))?,
    };
    let (mut merged, mut conflicts) = (None, Vec::new());
    if head != integration && !repo.contains(&head, &integration) {
        let head_tree = repo.git(&["rev-parse", &format!("{head}^{{tree}}")])?;
        let clean = tree.tree_now(&head)?.0 == head_tree.trim();
        if clean && repo.contains(&integration, &head) {
            // Nothing of its own yet: start from what has landed since.
            tree.switch(&head, &integration)?;
            tree.move_branch(
                &integration,
                &head,
                "loopx: start again from the goal's branch",
            )?;
            head = integration.clone();
        } else if clean {
            let into = integration_branch(goal.id);
            if let Some((commit, files)) =
                merge_into(&repo, &head, &integration, &into, todo, slice, rebase)?
            {
                tree.switch(&head, &commit)?;
                tree.move_branch(&commit, &head, "loopx: merge the goal's branch")?;
                head = commit.clone();
                merged = Some(commit);
                conflicts = files;
            }
        }
    }
    tree.reset_agent_git(&head)?;
    Ok(Prepared {
        tree,
        checkpoint: head,
        merged,
        conflicts,
    })
}

/// A merge commit of the goal's branch (`integration`, named `into`) into the todo's
/// (`head`), made without a checkout: when it merges cleanly, or when a rebase was asked for
/// (its files then hold conflict markers, named in the second value). `None`: it conflicts
/// and nobody asked.
fn merge_into(
    repo: &Repo,
    head: &str,
    integration: &str,
    into: &str,
    todo: TodoId,
    slice: &str,
    rebase: bool,
) -> Result<Option<(String, Vec<String>)>, GitError> {
    let (tree, conflicts) = repo.merge_tree(head, integration)?;
    if !conflicts.is_empty() && !rebase {
        return Ok(None);
    }
    let message = match conflicts.as_slice() {
        [] => format!("loopx: merge {into} into {todo} before slice {slice}"),
        files => format!(
            "loopx: merge {into} into {todo} before slice {slice}\n\nConflict markers left to resolve in: {}",
            files.join(", ")
        ),
    };
    let commit = repo.merge_commit(&tree, head, integration, &message)?;
    Ok(Some((commit, conflicts)))
}

/// Makes the todo's worktree, detached at its branch.
fn create(root: &Path, repo: &Repo, goal: GoalId, todo: Option<TodoId>) -> Result<Tree, GitError> {
    let dir = seat_dir(root, goal, todo);
    let parent = goal_dir(root, goal);
    std::fs::create_dir_all(&parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let dir_text = dir.to_string_lossy().into_owned();
    if dir.exists() {
        // Left by a loopx that died while making it (the record is written last): nobody has
        // worked in it yet.
        let _ = repo.git(&["worktree", "remove", "--force", &dir_text]);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("cannot remove the unfinished {dir_text}: {e}"))?;
        }
    }
    let reference = format!(
        "refs/heads/{}",
        todo.map_or_else(|| integration_branch(goal), |t| todo_branch(goal, t))
    );
    // `--force` takes over a registration whose directory is gone (a worktree removed by
    // hand); a global `worktree prune` would also drop the person's own on unmounted drives.
    repo.git(&[
        "worktree", "add", "--quiet", "--force", "--detach", &dir_text, &reference,
    ])?;
    // Read once, now, while only loopx has touched it.
    let link = std::fs::read_to_string(dir.join(".git"))
        .map_err(|e| format!("cannot read {}/.git: {e}", dir.display()))?;
    let gitdir = link
        .trim()
        .strip_prefix("gitdir:")
        .map(|p| PathBuf::from(p.trim()))
        .ok_or_else(|| format!("{}/.git does not name a git directory", dir.display()))?;
    let gitdir = if gitdir.is_relative() {
        dir.join(gitdir)
    } else {
        gitdir
    };
    std::fs::write(
        gitdir_record(root, goal, todo),
        gitdir.to_string_lossy().as_bytes(),
    )
    .map_err(|e| format!("cannot record the worktree's git directory: {e}"))?;
    Tree::find_in(repo, root, goal, todo)?
        .ok_or_else(|| GitError::Unusable(format!("the worktree {dir_text} vanished")))
}

/// Keeps the worktrees out of the person's `git status` (`.loopx/.gitignore`). Written when a
/// worktree goal starts, never during a slice (where it would be a change in `.loopx/`).
pub fn ignore_worktrees(root: &Path) {
    loopx_kernel::project::ignore_in_git(root, &format!("/{WORKTREES_DIR}/"));
}

/// A repository path relative to the project root (`../x` when outside it).
fn relative(repo_path: &str, prefix: &str) -> String {
    match repo_path.strip_prefix(prefix) {
        Some(inside) => inside.to_owned(),
        None => {
            let up = prefix.split('/').filter(|s| !s.is_empty()).count();
            format!("{}{repo_path}", "../".repeat(up))
        }
    }
}

/// Removes a todo's worktree (done or dropped); its branch stays.
pub fn remove(project: &Project, goal: GoalId, todo: TodoId) -> Result<(), GitError> {
    remove_seat(project, goal, Some(todo))
}

/// Removes a todo's worktree or (`None`) the goal's planning worktree, and loopx's records of
/// it; no branch is touched.
pub(crate) fn remove_seat(p: &Project, goal: GoalId, todo: Option<TodoId>) -> Result<(), GitError> {
    let root = p.root();
    let dir = seat_dir(root, goal, todo);
    if let Some(link) = linked(root, goal, todo) {
        return Err(format!(
            "{} is a symbolic link: loopx removes no directory through it (remove the link yourself)",
            link.display()
        )
        .into());
    }
    let record = gitdir_record(root, goal, todo);
    if dir.exists() {
        let repo = Repo::of(p)?;
        let dir_text = dir.to_string_lossy().into_owned();
        if repo
            .git(&["worktree", "remove", "--force", &dir_text])
            .is_err()
        {
            // The agent may have rewritten git's record of where its worktree is: remove the
            // directory and that record by the paths loopx knows.
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
            // Only a direct child of git's `worktrees/`, named plainly (no `..`).
            if let Some(gitdir) = std::fs::read_to_string(&record)
                .ok()
                .map(|p| PathBuf::from(p.trim()))
                .filter(|p| p.parent() == Some(repo.common.join("worktrees").as_path()))
                .filter(|p| {
                    p.components().all(|c| {
                        matches!(
                            c,
                            std::path::Component::Normal(_) | std::path::Component::RootDir
                        )
                    })
                })
            {
                let _ = std::fs::remove_dir_all(gitdir);
            }
            // Whatever record git still has of a directory that is gone (loopx's own record
            // was missing, or named another place): git's own cleanup, which touches only
            // worktrees whose directory no longer exists.
            let _ = repo.git(&["worktree", "prune"]);
        }
    }
    let _ = std::fs::remove_file(goal_dir(root, goal).join(format!("{}.index", seat(todo))));
    let _ = std::fs::remove_file(record);
    Ok(())
}

/// The goal's directory, or the seat's, when it is a symbolic link: loopx made both as
/// directories, so a link is someone else's, and what it leads to (a directory of the person's
/// with a `t1/` in it) is not loopx's to remove.
pub(crate) fn linked(root: &Path, goal: GoalId, todo: Option<TodoId>) -> Option<PathBuf> {
    [goal_dir(root, goal), seat_dir(root, goal, todo)]
        .into_iter()
        .find(|p| is_link(p))
}

pub(crate) fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Whether `root` is inside a git work tree, by its directories alone (no git is run).
pub fn in_git(root: &Path) -> bool {
    root.ancestors().any(|dir| dir.join(".git").exists())
}

/// The todo worktrees found under `.loopx/worktrees/` (goal, todo, directory).
pub fn list(root: &Path) -> Vec<(GoalId, TodoId, PathBuf)> {
    let mut found = Vec::new();
    let Ok(goals) = std::fs::read_dir(root.join(STATE_DIR).join(WORKTREES_DIR)) else {
        return found;
    };
    for goal in goals.flatten() {
        let Ok(goal_id) = goal.file_name().to_string_lossy().parse::<GoalId>() else {
            continue;
        };
        let Ok(todos) = std::fs::read_dir(goal.path()) else {
            continue;
        };
        for entry in todos.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Ok(todo) = name.parse::<TodoId>()
                && entry.path().is_dir()
            {
                found.push((goal_id, todo, entry.path()));
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use std::time::Duration;

    fn git(dir: &Path, args: &[&str]) -> String {
        crate::scope::tests::git_as_tester(dir, args)
    }

    /// A repository with a first commit, the goal's branch `loopx/g1` at it, and a branch per
    /// `(todo, file)` adding that file.
    fn repo_with(todos: &[(TodoId, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("README"), "start\n").expect("readme");
        git(root, &["add", "README"]);
        git(root, &["commit", "-q", "-m", "start"]);
        git(root, &["branch", "loopx/g1"]);
        for (todo, file) in todos {
            git(
                root,
                &["checkout", "-q", "-b", &format!("loopx/g1-{todo}"), "main"],
            );
            std::fs::write(root.join(file), format!("{todo}\n")).expect("file");
            git(root, &["add", file]);
            git(root, &["commit", "-q", "-m", &format!("{todo} work")]);
        }
        git(root, &["checkout", "-q", "main"]);
        dir
    }

    #[test]
    fn a_landing_that_loses_the_race_merges_again_onto_the_new_head() {
        let (t1, t2) = (TodoId(1), TodoId(2));
        let dir = repo_with(&[(t1, "one.txt"), (t2, "two.txt")]);
        let root = dir.path();
        let project = Project::create(root).expect("a project in the repository");
        let checks = Cell::new(0);
        // t2 lands while t1's check runs: t1's compare-and-swap then fails, and t1 merges
        // again onto t2's landing instead of overwriting it.
        let run = |_: &Path, _: &str, _: &str, _: Duration| {
            checks.set(checks.get() + 1);
            if checks.get() == 1 {
                let landed = land(&project, GoalId(1), t2, "Two", None, &|| true);
                assert!(matches!(landed, Landing::Landed { .. }), "{landed:?}");
            }
            Ok((Some(0), String::new()))
        };
        let check = CheckRun {
            command: "true",
            timeout: Duration::from_secs(60),
            run: &run,
        };
        let landed = land(&project, GoalId(1), t1, "One", Some(&check), &|| true);
        let Landing::Landed { commits, files, .. } = landed else {
            panic!("t1 lands: {landed:?}")
        };
        assert_eq!((commits, files), (1, vec!["one.txt".to_owned()]));
        assert_eq!(checks.get(), 2, "checked again on the new head");
        let landings = git(
            root,
            &["log", "--first-parent", "--format=%s", "main..loopx/g1"],
        );
        assert_eq!(landings, "loopx: land t1 (One)\nloopx: land t2 (Two)");
        let files = git(root, &["ls-tree", "--name-only", "loopx/g1"]);
        assert_eq!(files, "README\none.txt\ntwo.txt");
        // Landing again finds nothing new; the person's branch never moved.
        assert_eq!(
            land(&project, GoalId(1), t1, "One", None, &|| true),
            Landing::Empty
        );
        assert_eq!(git(root, &["rev-list", "--count", "main"]), "1");
    }

    #[test]
    fn a_todo_whose_claim_was_lost_meanwhile_lands_nothing() {
        let t1 = TodoId(1);
        let dir = repo_with(&[(t1, "one.txt")]);
        let root = dir.path();
        let project = Project::create(root).expect("a project in the repository");
        let before = git(root, &["rev-parse", "loopx/g1"]);
        let landed = land(&project, GoalId(1), t1, "One", None, &|| false);
        assert!(
            matches!(&landed, Landing::Failed(why) if why.contains("claim was lost")),
            "{landed:?}"
        );
        assert_eq!(git(root, &["rev-parse", "loopx/g1"]), before);
    }

    #[test]
    fn a_failing_check_leaves_the_goal_s_branch_where_it_was() {
        let t1 = TodoId(1);
        let dir = repo_with(&[(t1, "one.txt")]);
        let root = dir.path();
        let project = Project::create(root).expect("a project in the repository");
        let before = git(root, &["rev-parse", "loopx/g1"]);
        let run = |dir: &Path, _: &str, _: &str, _: Duration| {
            // The check sees the merge: the todo's file and the goal's.
            assert!(dir.join("one.txt").exists() && dir.join("README").exists());
            Ok((Some(3), "2 tests failed".to_owned()))
        };
        let check = CheckRun {
            command: "make test",
            timeout: Duration::from_secs(60),
            run: &run,
        };
        let landed = land(&project, GoalId(1), t1, "One", Some(&check), &|| true);
        assert_eq!(
            landed,
            Landing::CheckFailed {
                how: "exited 3".to_owned(),
                output: "2 tests failed".to_owned()
            }
        );
        assert_eq!(git(root, &["rev-parse", "loopx/g1"]), before);
        assert!(
            !goal_dir(root, GoalId(1)).join("land-t1").exists(),
            "the check's checkout is removed"
        );
    }
}
