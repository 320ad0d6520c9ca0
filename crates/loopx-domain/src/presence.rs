//! Which `loopx run`s work on this project from this host.
//!
//! Each supervisor holds an exclusive lock on a file of its own in `.loopx/supervisors/` for as
//! long as it runs; the file says who it is. A second `loopx run` finds the first by a lock it
//! cannot take, and says so: two supervisors on one project are allowed (each agent still runs
//! one slice at a time: the kernel refuses a second), but a person who started one by mistake
//! should know. A lock dies with its process, so a killed supervisor's file is stale, and the
//! next `loopx run` removes it. Supervisors on other hosts (a PostgreSQL store) are not seen
//! here: their slices are, through the store.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use loopx_kernel::Project;

/// This supervisor's registration: its file stays locked until dropped, then is removed.
#[derive(Debug)]
pub struct Presence {
    _file: File,
    path: PathBuf,
}

impl Drop for Presence {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Another `loopx run` on this project, on this host, as its file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub pid: u32,
    pub host: String,
    /// When it started (RFC 3339).
    pub since: String,
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} on {}, since {}", self.pid, self.host, self.since)
    }
}

/// Registers this process as a supervisor of `project`, and returns the live peers it found.
/// Best effort: a directory that cannot be written costs the warning, never the run.
pub fn register(project: &Project) -> (Option<Presence>, Vec<Peer>) {
    let dir = project.state_dir().join("supervisors");
    if std::fs::create_dir_all(&dir).is_err() {
        return (None, Vec::new());
    }
    let peers = live_peers(&dir);
    let me = std::process::id();
    let path = dir.join(format!("{me}.lock"));
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path);
    let Ok(mut file) = file else {
        return (None, peers);
    };
    if file.try_lock().is_err() {
        return (None, peers);
    }
    let since = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_default();
    let _ = writeln!(file, "{me} {} {since}", host());
    (Some(Presence { _file: file, path }), peers)
}

/// The `loopx run`s working on `project` from this host now, for a person's command that
/// must not change what they use (`loopx clean`).
pub fn live(project: &Project) -> Vec<Peer> {
    live_peers(&project.state_dir().join("supervisors"))
}

/// The supervisors whose files are still locked; stale files (their process gone) removed.
fn live_peers(dir: &std::path::Path) -> Vec<Peer> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut peers = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "lock") {
            continue;
        }
        let Ok(mut file) = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&path)
        else {
            continue;
        };
        match file.try_lock() {
            Ok(()) => {
                let _ = std::fs::remove_file(&path);
            }
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = Read::by_ref(&mut file).take(512).read_to_string(&mut text);
                let mut words = text.split_whitespace();
                if let (Some(pid), Some(host), Some(since)) =
                    (words.next(), words.next(), words.next())
                    && let Ok(pid) = pid.parse()
                {
                    peers.push(Peer {
                        pid,
                        host: host.to_owned(),
                        since: since.to_owned(),
                    });
                }
            }
            Err(TryLockError::Error(_)) => {}
        }
    }
    peers.sort_by_key(|p| p.pid);
    peers
}

/// This host's name, as the kernel knows it.
fn host() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty() && !h.contains(char::is_whitespace))
        .unwrap_or_else(|| "this-host".to_owned())
}
