//! What a slice changed in the project, and what of it the agent was not allowed to change
//! (`docs/permissions.md`, "The scope check after each slice").
//!
//! [`capture`] runs just before the agent is spawned and [`compare`] just after it ends. Two
//! sources, because they answer different questions:
//!
//! - **The project's files, through git.** When the project root is in a git work tree, the
//!   state is `HEAD` plus `git status --porcelain=v1 -z --untracked-files=all --no-renames`, with
//!   a metadata fingerprint (size, mtime, ctime, inode, mode) of every file the status lists. A
//!   file changed in the slice when its status line or fingerprint differs, or when a commit made
//!   during the slice touched it (`git diff --name-only OLD NEW`). Git's ignore rules apply:
//!   ignored files are not checked. Without git the scope check is not made, and the slice's
//!   evidence says so; only the goal's scope is walked (`walk.rs`), bounded, to tell a
//!   `progress` slice that changed nothing from one that did.
//! - **`.loopx/`, by a walk of its own.** It is small, and it must be checked whether or not git
//!   ignores it. loopx's own writes are left out: `state.redb`, `slices/` (prompts and logs),
//!   `bells/` (doorbell sockets) and `logs/` (the supervisor's own log). Anything else the agent adds, changes or removes there (a
//!   profile, an adapter) is a violation, whatever the scope.
//!
//! Changes are attributed to the slice they happen during: a person editing files meanwhile is
//! counted too. Paths are relative to the project root; files of the same repository outside the
//! project are written `../…` and are always out of scope.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use loopx_kernel::project::STATE_DIR;
use loopx_kernel::scope::Scope;

use crate::{Git, GitError};

/// What loopx writes in `.loopx/` itself during a slice (relative to `.loopx/`).
/// `worktrees/` holds the todos' worktrees, each checked on its own (`worktree.rs`); `logs/`
/// holds the supervisor's own log, which it appends to while the slice runs; `projections/`
/// what the Lark board's thread of the same supervisor records (`docs/lark.md`).
const OWN_FILES: [&str; 6] = [
    "state.redb",
    "slices/",
    "bells/",
    "worktrees/",
    "logs/",
    "projections/",
];
/// At most this many files are named in a `git diff --stat` command line.
const STAT_FILES: usize = 200;

/// The project as it was before the slice.
#[derive(Debug, Clone)]
pub struct Before {
    git: Result<GitState, GitError>,
    state: BTreeMap<String, Fingerprint>,
    /// Outside git: the goal's scope as a walk saw it (`walk.rs`); `None` in git.
    walked: Option<(Vec<String>, Result<crate::walk::Walked, String>)>,
}

#[derive(Debug, Clone)]
struct GitState {
    /// How it was read, and how the state after is read.
    git: Git,
    /// The work tree's top directory.
    top: String,
    /// The project root relative to `top` (`sub/dir/`, or empty).
    prefix: String,
    head: Option<String>,
    /// Project-relative path → status code and fingerprint.
    status: BTreeMap<String, (String, Option<Fingerprint>)>,
    /// Tracked files `git status` does not look at (skip-worktree, assume-unchanged):
    /// project-relative path → `git ls-files -v` tag and fingerprint.
    hidden: BTreeMap<String, (char, Option<Fingerprint>)>,
    /// Git's own ignore rules beyond `.gitignore` files (`info/exclude`, `core.excludesFile`):
    /// path → fingerprint.
    ignore_rules: BTreeMap<String, Option<Fingerprint>>,
    /// The config files that say where `core.excludesFile` is (the repository's, the user's):
    /// while they are unchanged, so is that path, and git need not be asked again.
    configs: Vec<(String, Option<Fingerprint>)>,
}

/// Enough of a file's metadata to notice any write to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    mode: u32,
}

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(Fingerprint {
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
        ino: m.ino(),
        mode: m.mode(),
    })
}

/// What a slice changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceChanges {
    /// Why the project's files could not be checked (`None`: they were).
    pub unchecked: Option<String>,
    /// Files the slice changed, relative to the project root, sorted.
    pub files: Vec<String>,
    /// `git diff --stat` of the changed files against `HEAD` before the slice, and the new
    /// untracked ones.
    pub stat: String,
    /// Changed files outside the goal's scope.
    pub outside: Vec<String>,
    /// Files in `.loopx/` the agent added, changed or removed.
    pub state_files: Vec<String>,
    /// What the slice's commit left out, past the checkpoint's bounds, in words (a worktree
    /// goal: `checkpoint.rs`).
    pub left_out: Option<String>,
    /// The tree as the slice left it, taken when its report carries evidence about the work:
    /// recorded with that evidence (`work.rs`).
    pub work: Option<loopx_kernel::model::WorkMark>,
    /// Outside git (`unchecked` says so): the files of the goal's scope the slice changed, by
    /// a walk (`walk.rs`), or why they could not be compared. `None`: not walked.
    pub walked: Option<Result<Vec<String>, String>>,
}

impl SliceChanges {
    /// Every file the agent was not allowed to change.
    pub fn violations(&self) -> Vec<&str> {
        self.outside
            .iter()
            .chain(&self.state_files)
            .map(String::as_str)
            .collect()
    }
}

/// The project's state before the slice; outside git, a walk of the goal's `scope` too.
pub fn capture(git: Git, root: &Path, scope: &[String]) -> Before {
    let git = git_state(git, root, None);
    let walked = git
        .is_err()
        .then(|| (scope.to_vec(), crate::walk::walk(root, scope)));
    Before {
        git,
        state: state_files(&root.join(STATE_DIR)),
        walked,
    }
}

impl Before {
    /// Whether the project's files were captured through git (not `.loopx/` alone).
    pub fn checks_git(&self) -> bool {
        self.git.is_ok()
    }
}

/// `.loopx/` alone before the slice: in a worktree goal the agent's files are checked in its
/// own worktree (`worktree.rs`), and only the state directory here.
pub fn capture_state(root: &Path) -> Before {
    Before {
        git: Err(GitError::Unusable(
            "checked in the todo's worktree".to_owned(),
        )),
        state: state_files(&root.join(STATE_DIR)),
        walked: None,
    }
}

/// Outside git: the scope's files that changed since the walk `before` took.
fn walked_since(root: &Path, before: &Before) -> Option<Result<Vec<String>, String>> {
    let (scope, then) = before.walked.as_ref()?;
    Some(match then {
        Ok(then) => crate::walk::walk(root, scope).map(|now| then.changed(&now)),
        Err(why) => Err(why.clone()),
    })
}

/// Files in `.loopx/` added, changed or removed since `before`.
pub fn compare_state(root: &Path, before: &Before) -> Vec<String> {
    let state_after = state_files(&root.join(STATE_DIR));
    let keys: BTreeSet<&String> = before.state.keys().chain(state_after.keys()).collect();
    keys.into_iter()
        .filter(|k| before.state.get(*k) != state_after.get(*k))
        .map(|k| format!("{STATE_DIR}/{k}"))
        .collect()
}

/// What changed since `before`, checked against the goal's `scope`.
pub fn compare(root: &Path, before: &Before, scope: &[String]) -> SliceChanges {
    let mut changes = SliceChanges {
        state_files: compare_state(root, before),
        ..SliceChanges::default()
    };
    let old = match &before.git {
        Ok(old) => old,
        Err(why) => {
            changes.unchecked = Some(why.to_string());
            changes.walked = walked_since(root, before);
            return changes;
        }
    };
    match git_changes(root, old) {
        Ok((files, stat, rules)) => {
            let scope = Scope::recorded(scope);
            changes.outside = files
                .iter()
                .filter(|f| !scope.contains(f))
                .cloned()
                // Git's ignore rules are never in scope: changing them hides files.
                .chain(rules)
                .collect();
            changes.files = files;
            changes.stat = stat;
        }
        Err(why) => changes.unchecked = Some(why.to_string()),
    }
    changes
}

/// `git` as found on `PATH`, once. Spawned by an absolute path, git starts through
/// `posix_spawn`; by name, with the environment replaced, the standard library must `fork` the
/// whole supervisor to search `PATH` in the child (measured: most of a slice's CPU at 32
/// agents went to forks and the copy-on-write faults after them).
fn git_program() -> &'static std::path::Path {
    static GIT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    GIT.get_or_init(|| {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("git"))
            .find(|path| {
                std::fs::metadata(path).is_ok_and(|m| {
                    m.is_file()
                        && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
                })
            })
            .unwrap_or_else(|| "git".into())
    })
}

/// What one git command printed, and how it exited.
#[derive(Debug)]
pub struct GitOutput {
    /// `None`: it was killed (by a signal).
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl GitOutput {
    /// Itself when git exited 0, else [`GitError::Failed`] with git's words.
    pub fn succeeded(self, args: &[&str]) -> Result<GitOutput, GitError> {
        match self.code {
            Some(0) => Ok(self),
            _ => Err(GitError::Failed {
                command: args.first().copied().unwrap_or("").to_owned(),
                stderr: self.stderr.trim().to_owned(),
            }),
        }
    }
}

/// What every git command runs with, whatever the repository's config says. That config is the
/// agent's to write when it runs unsandboxed (in the sandbox `.git/config` is read-only):
/// nothing in it may run a program here.
const SAFE_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.hooksPath=/dev/null",
    // A nested repository is the agent's too: git would run `status` inside it, with its
    // config (a clean filter is a program).
    "diff.ignoreSubmodules=all",
    "submodule.recurse=false",
    // What an agent can write in `.git` when it is not read-only (a slice without namespaces,
    // or `mode = "off"`) and that changes what git reports without changing a file: the
    // commit-graph and the multi-pack index name commits' trees and objects' places (replace
    // refs and grafts: the environment below).
    "core.commitGraph=false",
    "core.multiPackIndex=false",
];

/// The longest pause before the last try of a git that met a half-made worktree (20, 40, 80
/// and 160 ms: 300 ms in all).
const HALF_MADE_PATIENCE: Duration = Duration::from_millis(160);

/// Whether git died on another worktree's administrative files as `git worktree add` leaves
/// them for a moment.
fn half_made_worktree(stderr: &str) -> bool {
    stderr.contains("failed to read")
        && stderr.contains("/worktrees/")
        && stderr.contains("commondir")
}

impl Git {
    /// Runs git in `dir` for at most [`Git::timeout`]; its stdout, or why it failed. A git
    /// that hangs (a lock another process holds, a prompt for credentials) costs the slice its
    /// scope check, never the supervisor its loop.
    pub fn stdout(self, dir: &str, args: &[&str]) -> Result<Vec<u8>, GitError> {
        let out = self.run(dir, args, &[])?;
        out.succeeded(args).map(|out| out.stdout)
    }

    /// Runs git in `dir` with `env` added, for at most [`Git::timeout`]; how it ended, or why
    /// it could not run (or was stopped at the deadline).
    ///
    /// A git that died because another worktree was half made is run again, a few times over
    /// a third of a second: `git worktree add` writes the new worktree's `commondir` after
    /// creating it empty, and any git that lists the worktrees meanwhile (another `worktree
    /// add`, a `branch -f`, a `worktree list`) dies on it ("failed to read
    /// .git/worktrees/t2/commondir"). Two agents' worktrees made at once hit that. Such a git
    /// dies while reading, before it changes anything, so running it again is safe.
    pub fn run(
        self,
        dir: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<GitOutput, GitError> {
        let mut pause = Duration::from_millis(20);
        loop {
            let out = once(self, dir, args, env)?;
            if out.code == Some(0) || !half_made_worktree(&out.stderr) || pause > HALF_MADE_PATIENCE
            {
                return Ok(out);
            }
            std::thread::sleep(pause);
            pause *= 2;
        }
    }

    /// The id of the empty tree (a repository without a commit yet compares against it).
    pub(crate) fn empty_tree(self, top: &str) -> Result<String, GitError> {
        let id = self.stdout(top, &["hash-object", "-t", "tree", "/dev/null"])?;
        Ok(String::from_utf8_lossy(&id).trim().to_owned())
    }

    /// `git status` of the repository at `top`: (two-letter code, repository path) of every
    /// changed, added, removed and untracked file; ignored files and submodules are left out.
    pub(crate) fn status(self, top: &str) -> Result<Vec<(String, String)>, GitError> {
        let raw = self.stdout(
            top,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=all",
            ],
        )?;
        Ok(parse_status(&raw))
    }
}

/// One try of [`Git::run`].
fn once(git: Git, dir: &str, args: &[&str], env: &[(&str, &str)]) -> Result<GitOutput, GitError> {
    let what = args.first().copied().unwrap_or("");
    let mut command = Command::new(git_program());
    command
        .arg("-C")
        .arg(dir)
        .args(SAFE_CONFIG.iter().flat_map(|setting| ["-c", setting]))
        .args(args)
        // Only what git needs: no credential of loopx's reaches a program git might start.
        .env_clear()
        .envs(
            ["PATH", "HOME", "LANG", "LC_ALL", "XDG_CONFIG_HOME"]
                .iter()
                .filter_map(|k| std::env::var_os(k).map(|v| (*k, v))),
        )
        .envs(env.iter().copied())
        // `git status` would otherwise refresh the index, racing an agent's own git commands.
        .env("GIT_OPTIONAL_LOCKS", "0")
        // A replace ref (`refs/replace/<HEAD>`, loose or packed) or a graft shows one commit
        // as another: an agent hid an out-of-scope change from `git status` that way.
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_GRAFT_FILE", "/dev/null")
        // Never wait for a person at a prompt nobody sees.
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let timeout = git.timeout;
    let out = loopx_pty::run_bounded(command, None, timeout)
        .map_err(|e| GitError::Spawn(e.to_string()))?;
    match out.status {
        None => Err(GitError::TimedOut {
            command: what.to_owned(),
            after: loopx_kernel::time::short_duration(timeout),
        }),
        Some(status) => Ok(GitOutput {
            code: status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }),
    }
}

/// The work tree's state. Where `core.excludesFile` points is asked again when a config file
/// changed since `before`: an agent could point it at a file of its own.
fn git_state(git: Git, root: &Path, before: Option<&GitState>) -> Result<GitState, GitError> {
    let root = root.to_string_lossy();
    let where_args = [
        "rev-parse",
        "--show-toplevel",
        "--show-prefix",
        "--path-format=absolute",
        "--git-path",
        "info/exclude",
        "--git-dir",
    ];
    // One git for where the tree is and its HEAD; a repository without a commit yet fails
    // on `HEAD` and is asked again without it.
    let with_head: Vec<&str> = where_args.iter().copied().chain(["HEAD"]).collect();
    let (where_, has_head) = match git.stdout(&root, &with_head) {
        Ok(out) => (out, true),
        Err(GitError::Failed { stderr, .. }) if stderr.contains("not a git repository") => {
            return Err(GitError::NotARepository);
        }
        // A git that hung (or is missing) says so itself.
        Err(e @ (GitError::Spawn(_) | GitError::TimedOut { .. })) => return Err(e),
        Err(_) => (
            git.stdout(&root, &where_args).map_err(|e| match e {
                GitError::Failed { .. } => GitError::NotARepository,
                other => other,
            })?,
            false,
        ),
    };
    let where_ = String::from_utf8_lossy(&where_);
    let mut lines = where_.lines();
    let top = lines.next().unwrap_or_default().to_owned();
    let prefix = lines.next().unwrap_or_default().to_owned();
    let exclude = lines.next().unwrap_or_default().to_owned();
    let git_dir = lines.next().unwrap_or_default().to_owned();
    let head = lines
        .next()
        .filter(|_| has_head)
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty());
    let status = git
        .status(&top)?
        .into_iter()
        .filter_map(|(code, path)| {
            let project = project_path(&path, &prefix)?;
            let print = fingerprint(&Path::new(&top).join(&path));
            Some((project, (code, print)))
        })
        .collect();
    // An agent can hide a change from `git status`: flag the file skip-worktree or
    // assume-unchanged, or list a new file in `info/exclude`. Such files are fingerprinted
    // like the ones status lists, and the rules themselves are watched.
    let listed = git.stdout(&top, &["ls-files", "-v", "-z"])?;
    let hidden = listed
        .split(|b| *b == 0)
        .filter(|e| e.len() > 2 && (e[0] == b'S' || e[0].is_ascii_lowercase()))
        .filter_map(|e| {
            let e = String::from_utf8_lossy(e);
            let path = &e[2..];
            let project = project_path(path, &prefix)?;
            let tag = e.chars().next()?;
            Some((project, (tag, fingerprint(&Path::new(&top).join(path)))))
        })
        .collect();
    let configs = config_files(&top, &git_dir);
    let rule_files = match before {
        Some(before) if before.configs == configs => before.ignore_rules.keys().cloned().collect(),
        _ => ignore_rule_files(git, &top, exclude),
    };
    let ignore_rules = rule_files
        .into_iter()
        .map(|path| {
            let print = fingerprint(Path::new(&path));
            (path, print)
        })
        .collect();
    Ok(GitState {
        git,
        top,
        prefix,
        head,
        status,
        hidden,
        ignore_rules,
        configs,
    })
}

/// The repository's and the user's git config files, fingerprinted.
fn config_files(top: &str, git_dir: &str) -> Vec<(String, Option<Fingerprint>)> {
    let git_dir = Path::new(top).join(git_dir);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    [
        Some(git_dir.join("config")),
        home.map(|h| h.join(".gitconfig")),
        xdg.map(|x| x.join("git/config")),
    ]
    .into_iter()
    .flatten()
    .map(|path| {
        let print = fingerprint(&path);
        (path.display().to_string(), print)
    })
    .collect()
}

/// `info/exclude` of the repository (`exclude`, found with the work tree) and the user's
/// `core.excludesFile`.
fn ignore_rule_files(git: Git, top: &str, exclude: String) -> Vec<String> {
    let mut files = vec![exclude];
    if let Ok(out) = git.stdout(top, &["config", "--path", "core.excludesFile"]) {
        files.push(String::from_utf8_lossy(&out).trim().to_owned());
    }
    files.retain(|f| !f.is_empty());
    files
}

/// The changed files (project-relative), their diff stat, and the ignore-rule files changed.
fn git_changes(
    root: &Path,
    old: &GitState,
) -> Result<(Vec<String>, String, Vec<String>), GitError> {
    let new = git_state(old.git, root, Some(old))?;
    let rules = new
        .ignore_rules
        .iter()
        .filter(|(path, print)| old.ignore_rules.get(*path) != Some(*print))
        .map(|(path, _)| format!("{path} (git's ignore rules)"))
        .collect();
    let keys: BTreeSet<&String> = old.status.keys().chain(new.status.keys()).collect();
    let mut files: BTreeSet<String> = keys
        .into_iter()
        .filter(|k| old.status.get(*k) != new.status.get(*k))
        .cloned()
        .collect();
    let hidden: BTreeSet<&String> = old.hidden.keys().chain(new.hidden.keys()).collect();
    files.extend(
        hidden
            .into_iter()
            .filter(|k| old.hidden.get(*k) != new.hidden.get(*k))
            .cloned(),
    );
    let base = match &old.head {
        Some(head) => head.clone(),
        None => old.git.empty_tree(&old.top)?,
    };
    if let Some(head) = new.head.as_ref().filter(|h| Some(*h) != old.head.as_ref()) {
        let names = old.git.stdout(
            &old.top,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--name-only",
                "-z",
                &base,
                head,
            ],
        )?;
        files.extend(
            names
                .split(|b| *b == 0)
                .filter(|n| !n.is_empty())
                .filter_map(|n| project_path(&String::from_utf8_lossy(n), &old.prefix)),
        );
    }
    let files: Vec<String> = files.into_iter().collect();
    let stat = diff_stat(old, &new, &base, &files)?;
    Ok((files, stat, rules))
}

/// `git diff --stat BASE -- FILES`, then the changed files git does not track.
fn diff_stat(
    old: &GitState,
    new: &GitState,
    base: &str,
    files: &[String],
) -> Result<String, GitError> {
    if files.is_empty() {
        return Ok(String::new());
    }
    let specs: Vec<String> = files
        .iter()
        .take(STAT_FILES)
        .map(|f| format!(":(top,literal){}", repo_path(f, &old.prefix)))
        .collect();
    let mut args = vec![
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--ignore-submodules=all",
        "--stat=120",
        base,
        "--",
    ];
    args.extend(specs.iter().map(String::as_str));
    let mut stat = String::from_utf8_lossy(&old.git.stdout(&old.top, &args)?).into_owned();
    for f in files {
        if new.status.get(f).is_some_and(|(code, _)| code == "??") {
            stat.push_str(&format!(" {f} (new, untracked)\n"));
        }
    }
    if files.len() > STAT_FILES {
        stat.push_str(&format!(
            " ({} more files not in the stat)\n",
            files.len() - STAT_FILES
        ));
    }
    Ok(stat)
}

/// `XY path` entries of `git status --porcelain=v1 -z --no-renames`.
fn parse_status(raw: &[u8]) -> Vec<(String, String)> {
    raw.split(|b| *b == 0)
        .filter(|e| e.len() > 3)
        .map(|e| {
            let e = String::from_utf8_lossy(e);
            (e[..2].to_owned(), e[3..].to_owned())
        })
        .collect()
}

/// A repository path as seen from the project root; `None` for loopx's state directory, which
/// is checked by its own walk.
pub fn project_path(repo: &str, prefix: &str) -> Option<String> {
    let path = match repo.strip_prefix(prefix) {
        Some(inside) => inside.to_owned(),
        None => {
            let up = prefix.split('/').filter(|s| !s.is_empty()).count();
            format!("{}{repo}", "../".repeat(up))
        }
    };
    let state = format!("{STATE_DIR}/");
    (!path.starts_with(&state)).then_some(path)
}

/// The inverse of [`project_path`].
pub fn repo_path(project: &str, prefix: &str) -> String {
    let mut dir: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty()).collect();
    let mut rest = project;
    while let Some(up) = rest.strip_prefix("../") {
        dir.pop();
        rest = up;
    }
    dir.push(rest);
    dir.join("/")
}

/// Every file under `.loopx/` except loopx's own, relative to it.
fn state_files(dir: &Path) -> BTreeMap<String, Fingerprint> {
    let mut found = BTreeMap::new();
    walk(dir, "", &mut found);
    found
}

fn walk(dir: &Path, rel: &str, found: &mut BTreeMap<String, Fingerprint>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{rel}{name}");
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let sub = format!("{path}/");
            if !OWN_FILES.contains(&sub.as_str()) {
                walk(&entry.path(), &sub, found);
            }
        } else if !OWN_FILES.iter().any(|own| path.starts_with(own))
            && let Some(print) = fingerprint(&entry.path())
        {
            found.insert(path, print);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn scope(patterns: &[&str]) -> Vec<String> {
        patterns.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn repository_paths_map_to_the_project_and_back() {
        assert_eq!(project_path("sub/a.md", "sub/").as_deref(), Some("a.md"));
        assert_eq!(project_path("x", "sub/dir/").as_deref(), Some("../../x"));
        assert_eq!(project_path("sub/.loopx/state.redb", "sub/"), None);
        assert_eq!(repo_path("../../x", "sub/dir/"), "x");
        assert_eq!(repo_path("a.md", "sub/"), "sub/a.md");
        assert_eq!(repo_path("a.md", ""), "a.md");
    }

    #[test]
    fn status_entries_are_split_on_nul() {
        let raw = b" M a b.txt\0?? new\0D  gone\0";
        assert_eq!(
            parse_status(raw),
            [
                (" M".to_owned(), "a b.txt".to_owned()),
                ("??".to_owned(), "new".to_owned()),
                ("D ".to_owned(), "gone".to_owned())
            ]
        );
    }

    fn sh(dir: &Path, args: &[&str]) {
        git_as_tester(dir, args);
    }

    /// Runs git in `dir` as a test user and insists on success; its stdout, trimmed.
    pub fn git_as_tester(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn write(dir: &Path, path: &str, text: &str) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// A repository with a project in `proj/`, one commit, and a file already dirty.
    fn repo() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().join("proj");
        sh(tmp.path(), &["init", "-q"]);
        write(&root, "docs/a.md", "a\n");
        write(&root, "src/dirty.rs", "1\n");
        write(&root, ".loopx/profiles/p.toml", "x\n");
        write(&root, ".loopx/state.redb", "db");
        sh(tmp.path(), &["add", "proj/docs", "proj/src"]);
        sh(tmp.path(), &["commit", "-q", "-m", "one"]);
        write(&root, "src/dirty.rs", "2\n");
        (tmp, root)
    }

    #[test]
    fn a_slice_sees_its_own_changes_commits_and_state_writes_only() {
        let (tmp, root) = repo();
        let before = capture(Git::default(), &root, &[]);
        // The slice: edits a tracked file, writes an untracked one, edits an already dirty file,
        // commits one, writes outside the project, and writes a profile in `.loopx/`.
        write(&root, "docs/a.md", "a\nb\n");
        write(&root, "secrets.txt", "s\n");
        std::thread::sleep(std::time::Duration::from_millis(10));
        write(&root, "src/dirty.rs", "3\n");
        write(&root, "docs/c.md", "c\n");
        sh(tmp.path(), &["add", "proj/docs/c.md"]);
        sh(tmp.path(), &["commit", "-q", "-m", "two"]);
        write(tmp.path(), "x", "outside\n");
        write(&root, ".loopx/profiles/p.toml", "y\n");
        // loopx's own writes.
        write(&root, ".loopx/state.redb", "db2");
        write(&root, ".loopx/slices/s1.log", "log");

        let changes = compare(&root, &before, &scope(&["docs/"]));
        assert_eq!(changes.unchecked, None);
        assert_eq!(
            changes.files,
            [
                "../x",
                "docs/a.md",
                "docs/c.md",
                "secrets.txt",
                "src/dirty.rs"
            ]
        );
        assert_eq!(changes.outside, ["../x", "secrets.txt", "src/dirty.rs"]);
        assert_eq!(changes.state_files, [".loopx/profiles/p.toml"]);
        assert!(changes.stat.contains("docs/a.md"), "{}", changes.stat);
        assert!(
            changes.stat.contains("secrets.txt (new, untracked)"),
            "{}",
            changes.stat
        );
    }

    #[test]
    fn nothing_changed_is_nothing_and_no_git_is_unchecked() {
        let (_tmp, root) = repo();
        let before = capture(Git::default(), &root, &[]);
        let changes = compare(&root, &before, &[]);
        assert_eq!(changes, SliceChanges::default());

        let plain = tempfile::tempdir().expect("temp dir");
        let before = capture(Git::default(), plain.path(), &[]);
        write(plain.path(), "a.txt", "a");
        write(plain.path(), ".loopx/adapters/x.toml", "a");
        let changes = compare(plain.path(), &before, &[]);
        assert!(
            changes
                .unchecked
                .as_deref()
                .is_some_and(|u| u.contains("git")),
            "{changes:?}"
        );
        assert!(changes.files.is_empty());
        assert_eq!(changes.violations(), [".loopx/adapters/x.toml"]);
    }
}
