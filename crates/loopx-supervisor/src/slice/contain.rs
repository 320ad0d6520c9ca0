//! What contains a slice: its room (a private directory for its temp files and its report
//! channel), its sandbox, and its resource limits (`docs/permissions.md`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use loopx_adapters::{LaunchPlan, SandboxMode, expand_path};
use loopx_pty::{
    DEVICES, ExecHelper, LaunchSpec, ResourceLimits, Room, Sandbox, SandboxSupport, exec_helper,
    git_dir, hidden,
};

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
        loopx_pty::write_private(&prompt.path, &prompt.contents).map_err(|e| {
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
    // Used for limits, a sandbox, or a stdin other than the terminal (`loopx_pty`'s choice).
    spec.exec_helper = Some(helper);
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
        .dir()
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
        private_room: Some(room.dir().to_path_buf()),
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

/// The redactor for everything a slice leaves (its log, its writeback, its reports): the
/// kernel's patterns, loopx's secret-looking variables, the profile's secrets, and the value of
/// every variable of loopx's environment the agent was *not* given, 8 bytes or longer and not
/// a path or a URL: an agent that prints one found it somewhere it should not have.
pub(crate) fn slice_redactor(
    plan: &LaunchPlan,
    project: &loopx_kernel::Project,
) -> loopx_kernel::Redactor {
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
            store_password_hidden(
                loopx_kernel::Redactor::for_process_env(&plan.secret_env_names),
                project,
            ),
            |redactor, (_, value)| redactor.with_value(value),
        )
}

/// Also hides the password of the store's database URL given to this process
/// (`LOOPX_STORE_URL` is loopx's own, so the rule above passes it over, and a URL is skipped as
/// a value).
fn store_password_hidden(
    redactor: loopx_kernel::Redactor,
    project: &loopx_kernel::Project,
) -> loopx_kernel::Redactor {
    let url = project.store_settings().url.as_deref();
    match url.and_then(loopx_vocab::url_password) {
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
