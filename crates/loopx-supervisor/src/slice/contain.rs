//! What contains a slice: its room (a private directory for its temp files and its report
//! channel), its sandbox, and its resource limits (`docs/permissions.md`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use loopx_adapters::{LaunchPlan, SandboxMode, expand_path};
use loopx_pty::{ExecHelper, LaunchSpec, ResourceLimits, Sandbox, SandboxSupport};

/// A slice's private directory outside the project (`$TMPDIR/loopx-<uid>/<marker>/`): the
/// agent's `TMPDIR` (`tmp/`), writable in its sandbox, and the report socket. Removed when
/// the slice ends.
#[derive(Debug)]
pub(crate) struct Room {
    dir: PathBuf,
}

impl Room {
    /// Creates the room, mode 0700 all the way from `loopx-<uid>`. An error names the path.
    pub(crate) fn create(marker: &str) -> std::io::Result<Room> {
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
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The agent's temporary directory.
    pub(crate) fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// Where the agent reads its prompt file (the copy kept as evidence is under `.loopx/`,
    /// which the agent cannot see).
    pub(crate) fn prompt(&self) -> PathBuf {
        self.dir.join("prompt")
    }

    /// Where the slice's report channel listens.
    pub(crate) fn socket(&self) -> PathBuf {
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

pub(crate) fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
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
pub(crate) fn remove_room(marker: &str) {
    if let Some(cgroup) = loopx_pty::SliceCgroup::left_by(marker) {
        cgroup.remove();
    }
    let _ = std::fs::remove_dir_all(rooms_dir().join(marker));
}

/// Whether the room of slice `marker` holds `name` (a note its helper left).
pub(crate) fn room_has(marker: &str, name: &str) -> bool {
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
pub(crate) const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/ptmx",
    "/dev/random",
    "/dev/urandom",
];

/// Adds the sandbox, the resource limits and the helper applying them to `spec`. Refuses
/// when the profile requires a sandbox this kernel cannot give.
pub(crate) fn contain(
    spec: &mut LaunchSpec,
    plan: &LaunchPlan,
    project_root: &Path,
    tree: Option<&loopx_git::worktree::Tree>,
    room: &Room,
    loopx_exe: &Path,
) -> Result<(), String> {
    spec.env
        .set
        .push(("TMPDIR".to_owned(), room.tmp().into_os_string()));
    if let Some(prompt) = &mut spec.prompt {
        // The evidence copy, where `loopx log` finds it; the agent reads the room's.
        write_private(&prompt.path, &prompt.contents).map_err(|e| {
            format!(
                "cannot write the prompt file {}: {e}",
                prompt.path.display()
            )
        })?;
        let old = prompt.path.clone().into_os_string();
        prompt.path = room.prompt();
        // The adapter rendered `{prompt_file}` into the arguments already.
        for arg in spec.args.iter_mut().filter(|a| **a == old) {
            *arg = room.prompt().into_os_string();
        }
    }
    let r = &plan.limits.resources;
    spec.resources = ResourceLimits {
        cpu_seconds: r.cpu_seconds,
        data_bytes: r.memory_bytes,
        open_files: r.open_files,
        file_size_bytes: r.file_size_bytes,
    };
    let helper = exec_helper(loopx_exe);
    spec.sandbox = sandbox(plan, project_root, tree, room, &spec.env, &helper)?;
    agent_git(spec, project_root, tree, room)?;
    if !spec.resources.is_empty() || !spec.sandbox.is_empty() {
        spec.exec_helper = Some(helper);
    }
    Ok(())
}

/// Where the agent's own git writes, set in `spec`'s environment: a worktree goal's agent, or a
/// shared goal's whose `.git` the slice sees read-only (`read_only_git`), commits into a
/// quarantine in its room and stages into a copy of the index.
fn agent_git(
    spec: &mut LaunchSpec,
    project_root: &Path,
    tree: Option<&loopx_git::worktree::Tree>,
    room: &Room,
) -> Result<(), String> {
    // A shared goal's only where its `.git` is read-only: where it is not (no namespaces), the
    // agent's commits would name objects that leave with the room.
    let git_read_only = spec.sandbox.namespaces || spec.sandbox.seatbelt;
    let objects = match tree {
        Some(tree) => Some(tree.repo.objects.clone()),
        None if git_read_only => git_dir(project_root).map(|git| git.join("objects")),
        None => None,
    };
    if let Some(objects) = objects {
        // The agent's own `git add` and `git commit` write objects into a quarantine in its
        // room, reading the repository's as an alternate: nothing it writes lands among the
        // repository's objects, where a forged loose object or pack index would change what
        // loopx's git (and the person's) reads.
        let quarantine = room.tmp().join("git-objects");
        std::fs::create_dir(&quarantine)
            .map_err(|e| format!("cannot create the slice's git object quarantine: {e}"))?;
        spec.env.set.extend([
            (
                "GIT_OBJECT_DIRECTORY".to_owned(),
                quarantine.into_os_string(),
            ),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".to_owned(),
                objects.into_os_string(),
            ),
        ]);
        if tree.is_none()
            && let Some(git) = git_dir(project_root)
        {
            // A shared goal's index is the person's: the agent stages into a copy of it.
            let index = room.tmp().join("git-index");
            match std::fs::copy(git.join("index"), &index) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot copy the repository's index: {e}")),
            }
            spec.env
                .set
                .push(("GIT_INDEX_FILE".to_owned(), index.into_os_string()));
        }
        // git's automatic housekeeping after a commit would repack the repository's objects
        // and refs, which are read-only in the slice, and fail noisily. None of it is needed
        // in a slice.
        spec.env.set.extend(
            [
                ("GIT_CONFIG_COUNT", "2"),
                ("GIT_CONFIG_KEY_0", "gc.auto"),
                ("GIT_CONFIG_VALUE_0", "0"),
                ("GIT_CONFIG_KEY_1", "maintenance.auto"),
                ("GIT_CONFIG_VALUE_1", "false"),
            ]
            .map(|(k, v)| (k.to_owned(), OsString::from(v))),
        );
    }
    Ok(())
}

/// The exec helper: `loopx __exec`.
pub(crate) fn exec_helper(loopx_exe: &Path) -> ExecHelper {
    ExecHelper {
        program: loopx_exe.to_owned(),
        args: vec![OsString::from("__exec")],
    }
}

fn sandbox(
    plan: &LaunchPlan,
    project_root: &Path,
    tree: Option<&loopx_git::worktree::Tree>,
    room: &Room,
    env: &loopx_pty::EnvSpec,
    helper: &ExecHelper,
) -> Result<Sandbox, String> {
    let mode = plan.sandbox.mode;
    if mode == SandboxMode::Off {
        return Ok(Sandbox::default());
    }
    let support = SandboxSupport::probe(helper);
    if mode == SandboxMode::Required && !support.complete() {
        return Err(format!(
            "the profile requires a sandbox (`[sandbox] mode = \"required\"`), and this kernel lacks {}\n(hint: `loopx doctor` shows what the kernel offers; set `mode = \"auto\"` to run with what there is)",
            missing(support).join(" and ")
        ));
    }
    // The agent's view of its environment: what loopx sets, else what it passes through.
    let lookup = |name: &str| {
        env.set
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .or_else(|| {
                env.inherit
                    .iter()
                    .any(|k| k == name)
                    .then(|| std::env::var(name).ok())
                    .flatten()
            })
    };
    // A worktree goal's agent writes in its todo's worktree and git's files for it, never in
    // the person's own tree; its own commits go to a quarantine in its room (`contain` sets
    // where), the repository's objects being only read.
    let (work, mut writable, keep) = match tree {
        Some(tree) => (
            tree.workdir(),
            vec![tree.dir.clone(), tree.gitdir.clone()],
            vec![tree.dir.clone()],
        ),
        None => (
            project_root.to_owned(),
            vec![project_root.to_owned()],
            vec![],
        ),
    };
    // A read-only slice writes nothing of its tree, whatever its CLI's flags say: Landlock
    // holds it (where the kernel has it; `loopx doctor` says). Its temp dir, devices and the
    // CLI's own state stay writable.
    if plan.permission == loopx_adapters::PermissionLevel::ReadOnly {
        writable.clear();
    }
    writable.push(room.tmp());
    writable.extend(DEVICES.iter().map(PathBuf::from));
    for path in &plan.sandbox.writable {
        if let Some(path) = expand_path(path, &work, lookup) {
            // A state directory the CLI would create on first use must exist for the rule.
            if path.extension().is_none() && !path.exists() {
                let _ = std::fs::create_dir_all(&path);
            }
            writable.push(path);
        }
    }
    // One limit on the whole slice's processes and memory, where loopx may make a cgroup;
    // otherwise the per-process limits (and `RLIMIT_NPROC` in the user namespace) stand.
    let resources = &plan.limits.resources;
    let marker = room
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let cgroup = marker.and_then(|marker| {
        let limits = loopx_pty::CgroupLimits {
            processes: Some(resources.processes),
            memory_bytes: resources.memory_total_bytes,
        };
        loopx_pty::SliceCgroup::create(&marker, limits)
            .inspect_err(|why| tracing::debug!(%why, "the slice runs without a cgroup"))
            .ok()
    });
    Ok(Sandbox {
        namespaces: support.namespaces,
        cgroup,
        processes: Some(resources.processes),
        hide: hidden(project_root),
        keep,
        read_only: read_only_git(project_root, tree.is_none()),
        private_room: Some(room.dir.clone()),
        landlock: support.landlock_abi.is_some(),
        seatbelt: support.seatbelt,
        writable,
    })
}

/// What of the repository is read-only in a slice (`docs/permissions.md`, "What steers git"):
/// in a shared goal the whole repository — `.git` itself (a mount point, so it cannot be
/// renamed and replaced by a directory of the agent's, nor, when it is a file, pointed at
/// one), and where `.git` is a file (a linked worktree, a submodule) the git directory it names
/// and that directory's common one — since everything in them steers what git reports or runs
/// (config and its filters, replace refs, grafts, alternates, the commit-graph and pack
/// indexes, `info/attributes`, `shallow`, the index's stat data, loose objects rewritten in
/// place). The agent's git writes its objects and index elsewhere (`agent_git`). In a worktree
/// goal Landlock already keeps the agent to its worktree's own git directory; the
/// repository's `config` and `hooks` (what would run a program in loopx's git or the
/// person's) are read-only as well.
pub(crate) fn read_only_git(root: &Path, shared: bool) -> Vec<PathBuf> {
    let Some(repo) = Repository::of(root) else {
        return vec![];
    };
    if shared {
        let mut paths = vec![repo.dot_git, repo.git_dir, repo.common_dir];
        paths.dedup();
        return paths;
    }
    vec![
        repo.common_dir.join("config"),
        repo.common_dir.join("hooks"),
    ]
}

/// Where the repository of a work tree keeps itself.
struct Repository {
    /// `.git` in the work tree or an ancestor: a directory, or a file naming one.
    dot_git: PathBuf,
    /// The work tree's git directory (`.git`, or what the file names).
    git_dir: PathBuf,
    /// Its common directory (objects, refs, config): the git directory unless it names
    /// another in `commondir`.
    common_dir: PathBuf,
}

impl Repository {
    fn of(root: &Path) -> Option<Repository> {
        let dot_git = root
            .ancestors()
            .map(|dir| dir.join(".git"))
            .find(|git| git.symlink_metadata().is_ok())?;
        if dot_git.is_dir() {
            return Some(Repository {
                git_dir: dot_git.clone(),
                common_dir: dot_git.clone(),
                dot_git,
            });
        }
        // A planted FIFO or device in their place is not read.
        let first_line = |file: &Path| -> Option<String> {
            use std::io::Read;
            let mut text = String::new();
            loopx_adapters::open_regular(file)
                .ok()?
                .take(4096)
                .read_to_string(&mut text)
                .ok()?;
            Some(text.lines().next()?.trim().to_owned())
        };
        let base = dot_git.parent()?.to_owned();
        let named = first_line(&dot_git)?;
        let git_dir = base.join(named.strip_prefix("gitdir:")?.trim());
        let common_dir = first_line(&git_dir.join("commondir"))
            .map_or_else(|| git_dir.clone(), |common| git_dir.join(common));
        Some(Repository {
            dot_git,
            git_dir,
            common_dir,
        })
    }
}

/// The repository directory of the work tree `root` is in (`.git` of it or of an ancestor);
/// `None` outside git, or when `.git` is a file (a linked worktree, a submodule).
pub(crate) fn git_dir(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .map(|dir| dir.join(".git"))
        .find(|git| git.exists())
        .filter(|git| git.is_dir())
}

/// What the agent must not see: the project's `.loopx/`, and the sockets of the user's own
/// daemons (systemd's user manager and D-Bus in `$XDG_RUNTIME_DIR`, tmux, Docker), through
/// which it could run commands outside every sandbox.
pub(crate) fn hidden(root: &Path) -> Vec<PathBuf> {
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

/// The redactor for everything a slice leaves (its log, its writeback, its reports): the
/// kernel's patterns, loopx's secret-looking variables, the profile's secrets, and the value of
/// every variable of loopx's environment the agent was *not* given, 8 bytes or longer and not
/// a path or a URL: an agent that prints one found it somewhere it should not have.
pub(crate) fn slice_redactor(plan: &LaunchPlan) -> loopx_kernel::Redactor {
    let passed = |name: &str| {
        plan.env_allowlist.iter().any(|n| n == name)
            || plan.env_set.contains_key(name)
            || name == "TERM"
            || name.starts_with("LOOPX_")
    };
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(name, value)| {
            !passed(name)
                && !value.starts_with('/')
                && !value.starts_with('~')
                && !value.contains(":/")
        })
        .fold(
            store_password_hidden(loopx_kernel::Redactor::for_process_env(
                &plan.secret_env_names,
            )),
            |redactor, (_, value)| redactor.with_value(value),
        )
}

/// Also hides the password of the store's database URL given to this process
/// (`LOOPX_STORE_URL` is loopx's own, so the rule above passes it over, and a URL is skipped as
/// a value).
fn store_password_hidden(redactor: loopx_kernel::Redactor) -> loopx_kernel::Redactor {
    match loopx_kernel::store::url_override().and_then(loopx_vocab::url_password) {
        Some(password) => redactor.with_value(password),
        None => redactor,
    }
}

/// What this machine does not offer, in words.
pub(crate) fn missing(support: SandboxSupport) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if cfg!(target_os = "macos") {
        if !support.seatbelt {
            missing.push("Seatbelt (/usr/bin/sandbox-exec)");
        }
        return missing;
    }
    if !support.namespaces {
        missing.push("unprivileged user namespaces");
    }
    if support.landlock_abi.is_none() {
        missing.push("Landlock");
    }
    missing
}
