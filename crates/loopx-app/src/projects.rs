//! The projects of one person: a registry each `loopx init` adds its project to, and what each
//! holds at a glance (`loopx projects`, `docs/projects.md`).
//!
//! The registry is one JSON file in the person's state directory (the surface says where:
//! `$XDG_STATE_HOME/loopx/`, else `~/.local/state/loopx/`). It is read whole and written whole —
//! a temporary file renamed over it — under an exclusive lock on `projects.lock` beside it, so
//! two `loopx init`s at once both land. A file that does not parse is an error naming it, never
//! an empty list written back over it. A project's glance reads its store for inspection only
//! (never repaired, never upgraded, a short wait for a busy one): a busy, moved or broken
//! project is shown as such, and never stops the others from being shown.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use loopx_kernel::model::GoalStatus;
use loopx_kernel::store::Store;
use loopx_kernel::{GoalId, Project, StoreSettings, Timestamp};
use serde::{Deserialize, Serialize};

/// The registry file's format; a newer one is refused, not rewritten.
pub const REGISTRY_VERSION: u32 = 1;
/// The registry is a list of paths: a file larger than this is not one loopx wrote.
const MAX_BYTES: u64 = 4 << 20;
/// How long a glance waits for a busy store before it says so.
const GLANCE_WAIT: Duration = Duration::from_millis(300);

/// A project in the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registered {
    /// The project's root, absolute and without symbolic links.
    pub root: PathBuf,
    /// When it was registered.
    pub added: Timestamp,
}

#[derive(Debug, Serialize, Deserialize)]
struct RegistryFile {
    version: u32,
    projects: Vec<Registered>,
}

/// Why the registry could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the registry of projects {}: {why}\n(hint: {hint})", .path.display())]
pub struct RegistryError {
    pub path: PathBuf,
    pub why: String,
    pub hint: &'static str,
}

/// The registry of one person's projects, in `dir`.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
}

impl Registry {
    /// The registry kept in `dir` (made when the first project is registered).
    pub fn in_dir(dir: PathBuf) -> Registry {
        Registry { dir }
    }

    /// The registry's file.
    pub fn path(&self) -> PathBuf {
        self.dir.join("projects.json")
    }

    /// The registered projects, oldest first (none before the first `loopx init`). An entry
    /// is listed once, by its path as written: a path written twice (a hand edit) once.
    pub fn list(&self) -> Result<Vec<Registered>, RegistryError> {
        let mut seen = std::collections::BTreeSet::new();
        let mut projects = self.read()?;
        projects.retain(|p| seen.insert(p.root.components().collect::<PathBuf>()));
        Ok(projects)
    }

    /// Adds the project at `root`; `false` when it was registered already.
    pub fn register(&self, root: &Path, now: Timestamp) -> Result<bool, RegistryError> {
        let root = fs::canonicalize(root).map_err(|e| self.error(e, "check the project's path"))?;
        self.update(|projects| {
            if projects.iter().any(|p| p.root == root) {
                return false;
            }
            projects.push(Registered { root, added: now });
            true
        })
    }

    /// Removes the project registered at `root` as written; only when none is, the one it
    /// resolves to now (a symbolic link made since must not make it remove two). `false` when
    /// none was.
    pub fn forget(&self, root: &Path) -> Result<bool, RegistryError> {
        let resolved = fs::canonicalize(root).ok();
        self.update(|projects| {
            let before = projects.len();
            projects.retain(|p| p.root != root);
            if projects.len() == before {
                projects.retain(|p| Some(&p.root) != resolved.as_ref());
            }
            projects.len() != before
        })
    }

    fn error(&self, e: impl std::fmt::Display, hint: &'static str) -> RegistryError {
        RegistryError {
            path: self.path(),
            why: e.to_string(),
            hint,
        }
    }

    fn read(&self) -> Result<Vec<Registered>, RegistryError> {
        let path = self.path();
        let text = match loopx_adapters::read_regular_text(&path, MAX_BYTES) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(self.error(
                    e,
                    "move the file away; `loopx init` in each project registers it again",
                ));
            }
        };
        let file: RegistryFile = serde_json::from_str(&text).map_err(|e| {
            self.error(
                format!(
                    "it does not parse at line {}, column {} ({e})",
                    e.line(),
                    e.column()
                ),
                "fix or move the file away; `loopx init` in each project registers it again",
            )
        })?;
        if file.version > REGISTRY_VERSION {
            return Err(self.error(
                format!(
                    "it is of format {}, and this loopx knows format {REGISTRY_VERSION}",
                    file.version
                ),
                "use the newer loopx that wrote it",
            ));
        }
        Ok(file.projects)
    }

    /// Reads, changes and writes the registry under its lock; writes only when `change` says
    /// it changed something.
    fn update(
        &self,
        change: impl FnOnce(&mut Vec<Registered>) -> bool,
    ) -> Result<bool, RegistryError> {
        const HINT: &str = "check that the state directory is writable, or set XDG_STATE_HOME";
        create_private_dir(&self.dir).map_err(|e| self.error(e, HINT))?;
        let _lock = self.lock().map_err(|e| self.error(e, HINT))?;
        let mut projects = self.read()?;
        if !change(&mut projects) {
            return Ok(false);
        }
        let file = RegistryFile {
            version: REGISTRY_VERSION,
            projects,
        };
        let text = serde_json::to_string_pretty(&file).map_err(|e| self.error(e, HINT))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = self
            .dir
            .join(format!("projects.json.{}.{nanos}.tmp", std::process::id()));
        // A new file of ours, never one a planted link points at.
        self.remove_leftovers();
        let written = private_file(&tmp, true)
            .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
            .and_then(|()| fs::rename(&tmp, self.path()))
            // The rename itself is durable once the directory is.
            .and_then(|()| fs::File::open(&self.dir).and_then(|d| d.sync_all()));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(self.error(e, HINT));
        }
        Ok(true)
    }
}

impl Registry {
    /// Removes the temporary files a writer killed mid-write left; under the lock, nobody else
    /// is writing one.
    fn remove_leftovers(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("projects.json.") && name.ends_with(".tmp") {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// The registry's lock: a regular file of ours (never through a link, never a FIFO, which
    /// would block the open), held exclusively; a holder that keeps it past `LOCK_WAIT` is an
    /// error, not a hang.
    fn lock(&self) -> std::io::Result<fs::File> {
        let file = private_file(&self.dir.join("projects.lock"), false)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("projects.lock is not a regular file"));
        }
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(std::io::Error::other(format!(
                        "another loopx held projects.lock for over {}s",
                        LOCK_WAIT.as_secs()
                    )));
                }
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }
}

/// How long a registration waits for another to finish with the list.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Opens (`new`: creates) a file of the registry's for writing, readable by its owner only; a
/// symbolic link in its place is refused, and a FIFO does not block the open.
fn private_file(path: &Path, new: bool) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = fs::OpenOptions::new();
    options
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    match new {
        true => options.create_new(true),
        false => options.create(true).truncate(false),
    };
    options.open(path)
}

/// The state directory holds paths of a person's projects: theirs alone to read.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    loopx_kernel::project::ensure_private_dir(dir)
}

/// One project at a glance.
#[derive(Debug, Clone, Serialize)]
pub struct Glance {
    pub root: PathBuf,
    #[serde(flatten)]
    pub seen: Seen,
}

/// What a glance found at a registered project.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Seen {
    /// Its store, read.
    Read(Summary),
    /// Nothing of loopx is there any more: the project moved or was deleted.
    Gone,
    /// Its store could not be read now (busy, damaged), or the entry names no project.
    Unreadable { why: String },
    /// Its store is a PostgreSQL database, which a glance does not open: the person's
    /// `PGPASSWORD` goes only to a database they open themselves (`loopx status` in the
    /// project), never to a host a planted `loopx.toml` names.
    Database { url: String },
}

/// What a project holds, for a person deciding where to look.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Its active goals, oldest first.
    pub goals: Vec<ActiveGoal>,
    /// Questions waiting for a person.
    pub questions: usize,
    /// Slices running now.
    pub running: usize,
    /// Monitors waiting for their condition, across its active goals.
    pub monitors: usize,
    /// When anything last happened in it.
    pub last_activity: Option<Timestamp>,
}

/// An active goal, as a glance shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ActiveGoal {
    pub id: GoalId,
    pub objective: String,
}

/// The project at `root` at a glance.
pub fn glance(root: &Path) -> Seen {
    if !root.is_absolute() {
        return Seen::Unreadable {
            why: "not an absolute path (was the list edited by hand?)".to_owned(),
        };
    }
    if !root.join(".loopx").is_dir() {
        return Seen::Gone;
    }
    let read = Project::at(root).map_err(|e| why(&e)).and_then(|project| {
        // Only this disk's redb file is ever opened (`local_only`): a `loopx.toml` changed to
        // name a database between the look and the open is refused by the open itself.
        let project = project.with_store(StoreSettings {
            wait: GLANCE_WAIT,
            local_only: true,
            ..Default::default()
        });
        match loopx_kernel::store::configured_url(&project).map_err(|e| why(&e))? {
            Some(url) => Ok(Err(loopx_kernel::store::pg::redact_url(&url))),
            None => {
                let store = Store::open_inspect(&project).map_err(|e| why(&e))?;
                store.read(summary).map(Ok).map_err(|e| why(&e))
            }
        }
    });
    match read {
        Ok(Ok(summary)) => Seen::Read(summary),
        Ok(Err(url)) => Seen::Database { url },
        Err(why) => Seen::Unreadable { why },
    }
}

/// An error and its causes on one line, without hints (they are about the project's own
/// commands) or escape sequences.
fn why(e: &dyn std::error::Error) -> String {
    let text = loopx_vocab::render_error(e);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("(hint"))
        .collect();
    loopx_vocab::strip_ansi(&lines.join(": "))
}

fn summary(snap: &loopx_kernel::store::Snapshot<'_>) -> Result<Summary, loopx_kernel::KernelError> {
    let active: Vec<_> = snap
        .goals()?
        .into_iter()
        .filter(|g| g.status == GoalStatus::Active)
        .collect();
    let mut monitors = 0;
    for goal in &active {
        monitors += snap.monitors(goal.id)?.len();
    }
    Ok(Summary {
        goals: active
            .into_iter()
            .map(|g| ActiveGoal {
                id: g.id,
                objective: g.objective,
            })
            .collect(),
        questions: snap.open_gates()?.len(),
        running: snap.running_slices()?.len(),
        monitors,
        last_activity: snap.events_tail(1)?.first().map(|e| e.at),
    })
}
