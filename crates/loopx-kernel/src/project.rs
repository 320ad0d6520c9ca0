//! Finding a project and keeping its `.loopx/` directory private.
//!
//! A project is the directory that holds `.loopx/`, found like git finds `.git`: from the working
//! directory upwards, unless a directory is given. `.loopx/` is created 0700 with files 0600, and
//! every command refuses one that is a symbolic link, writable by others, or owned by someone
//! else: it holds the store that decides what agents may do.
//!
//! A new project is built whole in a staging directory beside it (`.loopx.init-<pid>-<n>`, see
//! [`Project::stage`]) and renamed into place in one step that never replaces anything, so a
//! `loopx init` killed at any moment leaves either no project or a complete one. A staging
//! directory left by a killed `init` is removed by the next one.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::errors::ProjectError;

/// The directory name that marks a project root.
pub const STATE_DIR: &str = ".loopx";
/// The store inside it.
pub const STORE_FILE: &str = "state.redb";

/// A project root and its state directory, how this process reaches its store, and how long
/// a git command it runs there may take.
#[derive(Debug, Clone)]
pub struct Project {
    root: PathBuf,
    /// `root/.loopx`; a staging directory while a new project is being built.
    state_dir: PathBuf,
    store: StoreSettings,
    /// `LOOPX_GIT_TIMEOUT`, read once by the CLI; `None`: the git layer's own default.
    git_timeout: Option<std::time::Duration>,
}

/// How this process reaches a project's store, as its surface was told (`LOOPX_STORE_URL`,
/// `LOOPX_STORE_WAIT_MS`, `LOOPX_CLOCK_SKEW_MS`, read once by the CLI): carried with the project
/// to everything that opens the store, rather than set process-wide. Clones share the
/// PostgreSQL connections and the clock.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    /// The store's database, whatever `[store] url` says.
    pub url: Option<String>,
    /// How long to wait for a busy store before giving up on a write (or an open).
    pub wait: std::time::Duration,
    /// This host's clock, moved onto a database server's when the store is on one.
    pub clock: crate::time::WallClock,
    /// The PostgreSQL connections of this process, per URL: a command opens the store often.
    pub pools: crate::store::pg::Pools,
    /// Only the redb file on this disk: a project whose store is a database is refused, never
    /// connected to (`loopx projects` and `status --all` read projects anything could have put
    /// in the person's list; their `PGPASSWORD` goes only where they open a project themselves).
    pub local_only: bool,
    /// The person's account book (`$XDG_STATE_HOME/loopx/accounts.redb`, chosen by the
    /// surface): each account's quota ledger, shared by every project of this user unless its
    /// `loopx.toml` keeps its own (`[quota] ledger = "project"`). `None`: each project keeps its
    /// own, as library code and simulations do.
    pub account_book: Option<PathBuf>,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            url: None,
            wait: crate::store::DEFAULT_WAIT,
            clock: crate::time::WallClock::default(),
            pools: crate::store::pg::Pools::default(),
            local_only: false,
            account_book: None,
        }
    }
}

/// Where staging directories of new projects start their names.
const STAGING_PREFIX: &str = ".loopx.init-";

/// A new project being built in a staging directory; dropped without [`Staged::commit`], it
/// is removed.
#[derive(Debug)]
pub struct Staged {
    project: Project,
    committed: bool,
}

impl Staged {
    /// The project as it is being built: its state directory is the staging one.
    pub fn project(&self) -> &Project {
        &self.project
    }

    /// The same staged project, its store reached as `store` says.
    pub fn with_store(mut self, store: StoreSettings) -> Staged {
        self.project.store = store;
        self
    }

    /// Renames the staging directory to `.loopx/`, unless something appeared there meanwhile
    /// (then [`ProjectError::AlreadyInitialised`], and the staging directory is removed).
    pub fn commit(mut self) -> Result<Project, ProjectError> {
        let root = self.project.root.clone();
        let target = root.join(STATE_DIR);
        // A file system without an exclusive rename (NFS, some FUSE mounts) gets the name
        // claimed with an exclusive mkdir, then renamed over in one step (`rename_exclusive`).
        let renamed = loopx_os::rename_exclusive(&self.project.state_dir, &target);
        match renamed {
            Ok(()) => {
                self.committed = true;
                sync_dir(&root);
                Ok(Project::with_root(root).with_store(self.project.store.clone()))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty
                ) =>
            {
                Err(ProjectError::AlreadyInitialised { path: target })
            }
            Err(source) => Err(ProjectError::Io {
                path: target,
                source,
            }),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.project.state_dir);
        }
    }
}

impl Project {
    /// Walks up from `start` to the first directory that has `.loopx/`.
    pub fn discover(start: &Path) -> Result<Project, ProjectError> {
        let start = absolute(start)?;
        for dir in start.ancestors() {
            let candidate = dir.join(STATE_DIR);
            match fs::symlink_metadata(&candidate) {
                Ok(_) => {
                    let project = Project::with_root(dir.to_path_buf());
                    project.check_private()?;
                    return Ok(project);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(ProjectError::Io {
                        path: candidate,
                        source,
                    });
                }
            }
        }
        Err(ProjectError::NotFound { start })
    }

    /// The project at exactly `root` (for `--project DIR`).
    pub fn at(root: &Path) -> Result<Project, ProjectError> {
        let root = absolute(root)?;
        let project = Project::with_root(root.clone());
        match fs::symlink_metadata(project.state_dir()) {
            Ok(_) => {
                project.check_private()?;
                Ok(project)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(ProjectError::NotFound { start: root })
            }
            Err(source) => Err(ProjectError::Io {
                path: project.state_dir(),
                source,
            }),
        }
    }

    /// Creates `.loopx/` (0700) and its subdirectories under `root`, atomically: see
    /// [`Project::stage`] to put more into it before it appears.
    pub fn create(root: &Path) -> Result<Project, ProjectError> {
        Project::stage(root)?.commit()
    }

    /// Starts building a new project under `root` in a private staging directory beside
    /// `.loopx/`, with its subdirectories. Refuses when `.loopx/` exists already. Removes
    /// staging directories that a killed `init` left behind.
    pub fn stage(root: &Path) -> Result<Staged, ProjectError> {
        let root = absolute(root)?;
        let dir = root.join(STATE_DIR);
        match fs::symlink_metadata(&dir) {
            Ok(_) => return Err(ProjectError::AlreadyInitialised { path: dir }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(ProjectError::Io { path: dir, source }),
        }
        remove_abandoned_staging(&root);
        let staging = (0..100)
            .map(|_| {
                root.join(format!(
                    "{STAGING_PREFIX}{}-{}",
                    std::process::id(),
                    fastrand::u32(..)
                ))
            })
            .find(|p| !p.exists())
            .ok_or_else(|| ProjectError::Io {
                path: root.clone(),
                source: io::Error::other("no free name for a staging directory"),
            })?;
        let staged = Staged {
            project: Project {
                root,
                state_dir: staging,
                store: StoreSettings::default(),
                git_timeout: None,
            },
            committed: false,
        };
        let state = staged.project.state_dir.clone();
        for sub in [
            state.clone(),
            state.join("profiles"),
            state.join("slices"),
            state.join("artifacts"),
            state.join("bells"),
        ] {
            make_private_dir(&sub)?;
        }
        Ok(staged)
    }

    fn with_root(root: PathBuf) -> Project {
        let state_dir = root.join(STATE_DIR);
        Project {
            root,
            state_dir,
            store: StoreSettings::default(),
            git_timeout: None,
        }
    }

    /// The same project, its store reached as `store` says.
    pub fn with_store(mut self, store: StoreSettings) -> Project {
        self.store = store;
        self
    }

    /// How this process reaches the project's store.
    pub fn store_settings(&self) -> &StoreSettings {
        &self.store
    }

    /// The same project, each git command run in it stopped after `timeout` (`None`: a
    /// minute, the git layer's default).
    pub fn with_git_timeout(mut self, timeout: Option<std::time::Duration>) -> Project {
        self.git_timeout = timeout;
        self
    }

    /// How long a git command run in this project may take, as the surface was told.
    pub fn git_timeout(&self) -> Option<std::time::Duration> {
        self.git_timeout
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn state_dir(&self) -> PathBuf {
        self.state_dir.clone()
    }

    pub fn store_path(&self) -> PathBuf {
        self.state_dir().join(STORE_FILE)
    }

    pub fn bells_dir(&self) -> PathBuf {
        self.state_dir().join("bells")
    }

    /// Where the projections off the machine (the Lark board) keep their own state: their
    /// health and what they posted. loopx's own files, like `bells/`: not an agent's change.
    pub fn projections_dir(&self) -> PathBuf {
        self.state_dir().join("projections")
    }

    /// Refuses a `.loopx/` that someone else could have put there or could change.
    pub fn check_private(&self) -> Result<(), ProjectError> {
        let dir = self.state_dir();
        let meta = fs::symlink_metadata(&dir).map_err(|source| ProjectError::Io {
            path: dir.clone(),
            source,
        })?;
        if meta.file_type().is_symlink() {
            return Err(ProjectError::Symlink { path: dir });
        }
        if !meta.is_dir() {
            return Err(ProjectError::NotADirectory { path: dir });
        }
        check_owner_and_mode(&dir, &meta)?;
        let store = self.store_path();
        match fs::symlink_metadata(&store) {
            Ok(meta) if meta.file_type().is_symlink() => Err(ProjectError::Symlink { path: store }),
            Ok(meta) => check_owner_and_mode(&store, &meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(ProjectError::Io {
                path: store,
                source,
            }),
        }
    }
}

fn check_owner_and_mode(path: &Path, meta: &fs::Metadata) -> Result<(), ProjectError> {
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(ProjectError::ForeignOwner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(ProjectError::WritableByOthers {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Makes sure `dir` (and its parents) exists and is readable by its owner only: a person's
/// state directory (their list of projects, their account book); one left wider than that is
/// narrowed.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if fs::metadata(dir)?.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Creates a directory readable only by its owner, whatever the umask.
pub(crate) fn make_private_dir(path: &Path) -> Result<(), ProjectError> {
    fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .and_then(|()| fs::set_permissions(path, fs::Permissions::from_mode(0o700)))
        .map_err(|source| ProjectError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Removes the staging directories of `init`s that died before renaming theirs into place.
fn remove_abandoned_staging(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(STAGING_PREFIX)) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<i32>().ok());
        // A process we may not signal (EPERM) is alive too: another user's `init`.
        let alive = pid.is_some_and(|pid| {
            !matches!(
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
                Err(nix::errno::Errno::ESRCH)
            )
        });
        if !alive {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Makes a rename in `dir` durable (best effort: a failure costs durability, not correctness).
fn sync_dir(dir: &Path) {
    if let Ok(dir) = fs::File::open(dir) {
        let _ = dir.sync_all();
    }
}

fn absolute(path: &Path) -> Result<PathBuf, ProjectError> {
    std::path::absolute(path).map_err(|source| ProjectError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Adds `line` (`/logs/`) to `.loopx/.gitignore` unless it is there: for what a newer loopx
/// writes in a project an older one made. Never during a slice, where it would be a change in
/// `.loopx/` (the scope check). A file that cannot be written is logged: git then shows the
/// directory as untracked, which costs nothing else.
///
/// The file is read without following a symlink and replaced by a rename, which replaces a
/// link rather than writing through it: a link an agent planted there (to a file of the
/// person's) is left alone, never appended to.
pub fn ignore_in_git(root: &Path, line: &str) {
    use std::io::Read;
    let path = root.join(STATE_DIR).join(".gitignore");
    let warn = |e: &dyn std::fmt::Display| {
        tracing::warn!(path = %path.display(), error = %e, "cannot write .loopx/.gitignore");
    };
    let mut text = String::new();
    match fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path)
    {
        Ok(mut file) => {
            if let Err(e) = file.read_to_string(&mut text) {
                return warn(&e);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A symlink (ELOOP) or anything else that is not loopx's file: left as it is.
        Err(e) => return warn(&e),
    }
    if text.lines().any(|l| l.trim() == line) {
        return;
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    let staged = path.with_extension(format!("tmp.{}", std::process::id()));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .mode(0o644)
        .open(&staged)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .and_then(|()| fs::rename(&staged, &path));
    if let Err(e) = written {
        let _ = fs::remove_file(&staged);
        warn(&e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().expect("temp dir")
    }

    #[test]
    fn a_line_is_added_to_the_gitignore_once_and_a_planted_link_is_never_written_through() {
        let tmp = temp();
        let project = Project::create(tmp.path()).expect("create");
        let ignore = project.state_dir().join(".gitignore");
        fs::write(&ignore, "/state.redb").expect("write");
        ignore_in_git(tmp.path(), "/logs/");
        ignore_in_git(tmp.path(), "/logs/");
        assert_eq!(
            fs::read_to_string(&ignore).expect("read"),
            "/state.redb\n/logs/\n"
        );
        // An agent replaced it with a link to a file of the person's.
        let theirs = tmp.path().join("bashrc");
        fs::write(&theirs, "alias ll='ls -l'\n").expect("write");
        fs::remove_file(&ignore).expect("rm");
        std::os::unix::fs::symlink(&theirs, &ignore).expect("link");
        ignore_in_git(tmp.path(), "/worktrees/");
        assert_eq!(
            fs::read_to_string(&theirs).expect("read"),
            "alias ll='ls -l'\n",
            "the person's file is untouched"
        );
        assert!(fs::symlink_metadata(&ignore).expect("stat").is_symlink());
    }

    #[test]
    fn create_makes_private_dirs_and_discover_walks_up() {
        let tmp = temp();
        let project = Project::create(tmp.path()).expect("create");
        let mode = fs::metadata(project.state_dir()).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o700);
        let deep = tmp.path().join("a/b/c");
        fs::create_dir_all(&deep).expect("mkdir");
        let found = Project::discover(&deep).expect("found");
        assert_eq!(found.root(), tmp.path());
    }

    #[test]
    fn discover_without_project_names_the_start() {
        let tmp = temp();
        let err = Project::discover(tmp.path()).expect_err("no project");
        assert!(matches!(err, ProjectError::NotFound { .. }), "{err}");
    }

    #[test]
    fn unsafe_state_dirs_are_refused() {
        let tmp = temp();
        let project = Project::create(tmp.path()).expect("create");
        fs::set_permissions(project.state_dir(), fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = Project::discover(tmp.path()).expect_err("world-writable");
        assert!(
            matches!(err, ProjectError::WritableByOthers { mode: 0o777, .. }),
            "{err}"
        );

        let other = temp();
        let real = other.path().join("real");
        make_private_dir(&real).expect("mkdir");
        std::os::unix::fs::symlink(&real, other.path().join(STATE_DIR)).expect("symlink");
        let err = Project::discover(other.path()).expect_err("symlink");
        assert!(matches!(err, ProjectError::Symlink { .. }), "{err}");
    }

    #[test]
    fn a_staged_project_appears_whole_or_not_at_all() {
        let tmp = temp();
        let staged = Project::stage(tmp.path()).expect("stage");
        std::fs::write(staged.project().store_path(), b"x").expect("a file in it");
        assert!(!tmp.path().join(STATE_DIR).exists(), "nothing yet");
        drop(staged);
        let left: Vec<_> = fs::read_dir(tmp.path()).expect("list").collect();
        assert!(left.is_empty(), "an uncommitted stage leaves nothing");

        // A stage abandoned by a killed `init` (a pid that cannot be running) is cleaned up.
        let stale = tmp.path().join(format!("{STAGING_PREFIX}{}-1", i32::MAX));
        make_private_dir(&stale).expect("stale");
        let staged = Project::stage(tmp.path()).expect("stage");
        assert!(!stale.exists());
        std::fs::write(staged.project().store_path(), b"x").expect("a file in it");
        let project = staged.commit().expect("commit");
        assert!(project.store_path().exists());
        assert_eq!(project.state_dir(), tmp.path().join(STATE_DIR));
    }

    #[test]
    fn create_refuses_an_existing_project() {
        let tmp = temp();
        Project::create(tmp.path()).expect("create");
        assert!(matches!(
            Project::create(tmp.path()),
            Err(ProjectError::AlreadyInitialised { .. })
        ));
    }
}
