//! A contained process's places: its room (a private directory outside the project for its
//! temp files and its report channel), the devices any program may write, and what it must
//! not see (the project's `.loopx/`, the user's daemons' sockets). A slice and a land check
//! are contained alike (`docs/permissions.md`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::ExecHelper;

/// A slice's private directory outside the project (`$TMPDIR/loopx-<uid>/<marker>/`): the
/// agent's `TMPDIR` (`tmp/`), writable in its sandbox, and the report socket. Removed when
/// the slice ends.
#[derive(Debug)]
pub struct Room {
    dir: PathBuf,
}

impl Room {
    /// Creates the room, mode 0700 all the way from `loopx-<uid>`. An error names the path.
    pub fn create(marker: &str) -> std::io::Result<Room> {
        let base = rooms_dir();
        let at = |path: &Path| {
            let path = path.to_owned();
            move |e: std::io::Error| {
                std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
            }
        };
        Room::create_in(&base, marker).map_err(at(&base))
    }

    fn create_in(base: &Path, marker: &str) -> std::io::Result<Room> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = base.join(marker);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(base)?;
        // Another user could have made `loopx-<uid>` first: it must be ours and private.
        let meta = std::fs::symlink_metadata(base)?;
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if meta.uid() != nix::unistd::getuid().as_raw() || !meta.is_dir() {
            return Err(std::io::Error::other(format!(
                "not a directory owned by this user (uid {}); remove it, or set TMPDIR to a directory of yours",
                nix::unistd::getuid()
            )));
        }
        // A leftover of this name (a dead run, or something planted to be followed) goes; the
        // room itself is made fresh, never reused (`create_dir` fails on anything there).
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&dir)?,
            Ok(_) => std::fs::remove_file(&dir)?,
            Err(_) => {}
        }
        let mut builder = std::fs::DirBuilder::new();
        builder.mode(0o700);
        builder.create(&dir)?;
        builder.create(dir.join("tmp"))?;
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(Room { dir })
    }

    /// The room itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The agent's temporary directory.
    pub fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// Where the agent reads its prompt file (the copy kept as evidence is under `.loopx/`,
    /// which the agent cannot see).
    pub fn prompt(&self) -> PathBuf {
        self.dir.join("prompt")
    }

    /// Where the slice's report channel listens.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("report.sock")
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        if let Some(marker) = self.dir.file_name().and_then(|n| n.to_str()) {
            remove_room(marker);
        }
    }
}

pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        // A symlink planted in its place is not followed.
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?
        .write_all(contents)
}

/// Removes the room of a slice whose supervisor died before it could (recovery).
/// Removes slice `marker`'s room and its cgroup (named after it), whoever made them: the
/// slice's own end (also when it never spawned), or recovery after its supervisor died.
pub fn remove_room(marker: &str) {
    if let Some(cgroup) = crate::SliceCgroup::left_by(marker) {
        cgroup.remove();
    }
    let _ = std::fs::remove_dir_all(rooms_dir().join(marker));
}

/// Whether the room of slice `marker` holds `name` (a note its helper left).
pub fn room_has(marker: &str, name: &str) -> bool {
    rooms_dir().join(marker).join(name).exists()
}

/// Where this user's slice rooms live: `loopx-<uid>` in the temp dir, or the first of
/// `loopx-<uid>.1` … `.7` when a directory of that name belongs to someone else (another user
/// made it first, or the real root's, seen from a user namespace where this user is uid 0).
/// The same answer every time while the directories stay, so recovery finds a dead run's
/// rooms; [`Room::create`] refuses when all eight are taken.
fn rooms_dir() -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let temp = short_temp_dir();
    let uid = nix::unistd::getuid();
    let first = temp.join(format!("loopx-{uid}"));
    (0..8)
        .map(|n| match n {
            0 => first.clone(),
            n => temp.join(format!("loopx-{uid}.{n}")),
        })
        .find(|dir| match std::fs::symlink_metadata(dir) {
            Ok(meta) => meta.is_dir() && meta.uid() == uid.as_raw(),
            Err(_) => true,
        })
        .unwrap_or(first)
}

/// A socket path must fit in 108 bytes; a long `TMPDIR` falls back to `/tmp`.
fn short_temp_dir() -> PathBuf {
    let temp = std::env::temp_dir();
    if temp.as_os_str().len() <= 40 {
        temp
    } else {
        PathBuf::from("/tmp")
    }
}

/// Devices any program may open for writing: the terminal, the null sinks.
pub const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/ptmx",
    "/dev/random",
    "/dev/urandom",
];

/// The exec helper: `loopx __exec`.
pub fn exec_helper(loopx_exe: &Path) -> ExecHelper {
    ExecHelper {
        program: loopx_exe.to_owned(),
        args: vec![OsString::from("__exec")],
    }
}

/// The repository directory of the work tree `root` is in (`.git` of it or of an ancestor);
/// `None` outside git, or when `.git` is a file (a linked worktree, a submodule).
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .map(|dir| dir.join(".git"))
        .find(|git| git.exists())
        .filter(|git| git.is_dir())
}

/// What the agent must not see: the project's `.loopx/`, and the sockets of the user's own
/// daemons (systemd's user manager and D-Bus in `$XDG_RUNTIME_DIR`, tmux, Docker), through
/// which it could run commands outside every sandbox.
pub fn hidden(root: &Path) -> Vec<PathBuf> {
    let uid = nix::unistd::getuid();
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{uid}")));
    vec![
        root.join(".loopx"),
        runtime,
        PathBuf::from(format!("/tmp/tmux-{uid}")),
        PathBuf::from("/run/docker.sock"),
        PathBuf::from("/var/run/docker.sock"),
    ]
}
