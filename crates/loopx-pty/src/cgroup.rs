//! A control group per slice: one limit on the number of processes and on the memory of the
//! whole slice, whatever it starts, and a way to stop all of it at once.
//!
//! `setrlimit` limits are per process (memory) or per user (processes; and root is exempt), so
//! a fork bomb in a slice run as root was bounded only by the machine. Where loopx may create
//! cgroups, each slice gets one:
//!
//! - **cgroup v2** (`/sys/fs/cgroup` is the unified hierarchy with the `pids` and `memory`
//!   controllers): beneath loopx's own cgroup. v2 forbids processes in a cgroup whose
//!   controllers are handed to children, so loopx first moves itself into a leaf `supervisor`
//!   beside the slices (as container runtimes do in a delegated cgroup). Limits are `pids.max`
//!   and `memory.max`; the stop is `cgroup.kill`.
//! - **cgroup v1** (separate `pids` and `memory` hierarchies): a child of loopx's own cgroup in
//!   each, with `pids.max` and `memory.limit_in_bytes`; the stop kills every process listed.
//!
//! Where neither can be created (no permission: an unprivileged user without a delegated
//! cgroup), [`SliceCgroup::create`] says why and the slice runs with the per-process limits;
//! the slice record and `loopx doctor` say which. The exec helper joins the cgroup before it
//! forks anything (`--cgroup DIR`), so nothing of the slice is ever outside it.

use std::path::{Path, PathBuf};

/// The controllers a slice's cgroup uses.
const CONTROLLERS: [&str; 2] = ["pids", "memory"];

/// A slice's cgroup: one directory per hierarchy (one in v2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceCgroup {
    dirs: Vec<PathBuf>,
    v2: bool,
    /// The memory limit set on it (`None`: memory is not limited there).
    memory_limit: Option<u64>,
}

/// The slice's memory limit was hit hard enough that the kernel killed processes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimitHit {
    /// The limit, in bytes.
    pub limit_bytes: u64,
    /// How many of the slice's processes the kernel's OOM killer ended for it.
    pub kills: u64,
}

/// What a slice's cgroup limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupLimits {
    /// Processes (and threads) of the whole slice at once.
    pub processes: Option<u64>,
    /// Bytes of memory of the whole slice.
    pub memory_bytes: Option<u64>,
}

impl SliceCgroup {
    /// Creates the cgroup `loopx-<name>` with `limits`, or says why it cannot.
    pub fn create(name: &str, limits: CgroupLimits) -> Result<SliceCgroup, String> {
        if !cfg!(target_os = "linux") {
            return Err("cgroups are Linux's: this platform limits each process".to_owned());
        }
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        if v2_base(&own).is_some() {
            create_v2(&own, name, limits)
        } else {
            create_v1(&own, name, limits)
        }
    }

    /// The cgroup `loopx-<name>` a slice of a supervisor that died left behind, if any (found
    /// beneath this process's own cgroup, as the dead one made it), for recovery to remove.
    pub fn left_by(name: &str) -> Option<SliceCgroup> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let leaf = format!("loopx-{name}");
        if let Some(base) = v2_base(&own) {
            let dir = base.join(&leaf);
            return dir.exists().then(|| SliceCgroup {
                dirs: vec![dir],
                v2: true,
                memory_limit: None,
            });
        }
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let dirs: Vec<PathBuf> = CONTROLLERS
            .iter()
            .filter_map(|c| v1_base(&mounts, &own, c))
            .map(|base| base.join(&leaf))
            .filter(|dir| dir.exists())
            .collect();
        (!dirs.is_empty()).then_some(SliceCgroup {
            dirs,
            v2: false,
            memory_limit: None,
        })
    }

    /// Where its cgroups are, in words: `cgroup v1 beneath /sys/fs/cgroup/pids/ci`.
    pub fn describe(&self) -> String {
        let version = if self.v2 { "v2" } else { "v1" };
        let bases: Vec<String> = self
            .dirs
            .iter()
            .map(|d| d.parent().unwrap_or(d).display().to_string())
            .collect();
        format!("cgroup {version} beneath {}", bases.join(" and "))
    }

    /// The one way to give this user's loopx a cgroup it may divide, on this machine's
    /// hierarchy.
    pub fn hint() -> String {
        if Path::new(V2_ROOT).join("cgroup.controllers").exists() {
            return "run loopx in a delegated cgroup: systemd-run --user --scope -p Delegate=yes loopx run".to_owned();
        }
        let user = std::env::var("USER")
            .ok()
            .filter(|u| {
                !u.is_empty()
                    && u.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            })
            .unwrap_or_else(|| nix::unistd::getuid().to_string());
        format!(
            "cgroup v1: as root, give {user} a subtree: for c in pids memory; do mkdir -p /sys/fs/cgroup/$c/loopx-{user} && chown -R {user} /sys/fs/cgroup/$c/loopx-{user}; done; then, in the shell that starts loopx: for c in pids memory; do echo $$ > /sys/fs/cgroup/$c/loopx-{user}/cgroup.procs; done"
        )
    }

    /// The directories the helper joins (`--cgroup DIR` each).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Adds a directory to join (the helper, reading its arguments).
    pub(crate) fn push(&mut self, dir: PathBuf) {
        self.dirs.push(dir);
    }

    /// The helper arguments that join it.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        self.dirs
            .iter()
            .flat_map(|d| ["--cgroup".into(), d.clone().into_os_string()])
            .collect()
    }

    /// Whether the kernel killed processes of the slice for its memory limit, read from the
    /// cgroup's own count of OOM kills (v2 `memory.events`, v1 `memory.oom_control`: 4.13 or
    /// later) before it is removed. A SIGKILL alone says nothing: loopx sends them too.
    pub fn memory_limit_hit(&self) -> Option<MemoryLimitHit> {
        let limit_bytes = self.memory_limit?;
        let file = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        let kills = self
            .dirs
            .iter()
            .filter_map(|dir| std::fs::read_to_string(dir.join(file)).ok())
            .filter_map(|text| oom_kills(&text))
            .sum();
        (kills > 0).then_some(MemoryLimitHit { limit_bytes, kills })
    }

    /// Kills every process in it: `cgroup.kill` in v2, each listed process in v1.
    pub fn kill(&self) {
        if self.v2 {
            for dir in &self.dirs {
                let _ = std::fs::write(dir.join("cgroup.kill"), "1");
            }
            return;
        }
        for _ in 0..10 {
            let mut found = false;
            for dir in &self.dirs {
                for pid in procs(dir) {
                    found = true;
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            if !found {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The helper, once it stopped its slice because its supervisor was gone: moves itself out
    /// (into the parent cgroup) and removes the slice's cgroup, so that none is left behind
    /// for recovery. Best effort: where the parent takes no processes (v2 below the root),
    /// recovery removes it.
    // The sandbox's Linux half uses it; macOS has no cgroups (`create` fails there).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn leave_and_remove(&self) {
        for dir in &self.dirs {
            if let Some(parent) = dir.parent() {
                let _ = std::fs::write(parent.join("cgroup.procs"), "0");
            }
        }
        self.remove();
    }

    /// Kills what is left and removes the directories (a cgroup is removed once empty).
    pub fn remove(&self) {
        self.kill();
        for dir in &self.dirs {
            for _ in 0..50 {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        }
    }
}

/// Moves the calling process into each of `dirs` (the helper, before it forks anything).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn join(dirs: &[PathBuf]) -> Result<(), crate::errors::ExecError> {
    for dir in dirs {
        std::fs::write(dir.join("cgroup.procs"), "0").map_err(|e| {
            crate::errors::ExecError::Sandbox {
                action: format!("join the slice's cgroup {}", dir.display()),
                reason: e.to_string(),
            }
        })?;
    }
    Ok(())
}

/// The `oom_kill N` line of `memory.events` (v2) or `memory.oom_control` (v1).
fn oom_kills(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
}

fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    std::fs::write(dir.join(file), value)
        .map_err(|e| format!("cannot write {}: {e}", dir.join(file).display()))
}

fn create_dir(dir: &Path) -> Result<(), String> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("cannot create the cgroup {}: {e}", dir.display())),
    }
}

/// v2: `<own>/loopx-<name>`, with loopx itself moved into `<own>/supervisor` first (unless its
/// own cgroup is the root, which may hold processes and hand out controllers at once).
fn create_v2(own: &str, name: &str, limits: CgroupLimits) -> Result<SliceCgroup, String> {
    let base = v2_base(own).ok_or("no cgroup v2 hierarchy with `pids` and `memory`")?;
    let root = Path::new(V2_ROOT);
    let mine = own_v2_dir(own).ok_or("no cgroup v2 line in /proc/self/cgroup")?;
    // Not yet moved out of the cgroup whose controllers the slices get.
    if mine == base && base != root {
        let leaf = base.join(SUPERVISOR_LEAF);
        create_dir(&leaf)?;
        write(&leaf, "cgroup.procs", "0")?;
    }
    // A delegated cgroup (a systemd scope with `Delegate=yes`) may be given `pids` without
    // `memory`: then only the process limit holds.
    let available = std::fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
    let has = |c: &str| available.split_whitespace().any(|w| w == c);
    if !has("pids") {
        return Err(format!(
            "the cgroup {} is not given the `pids` controller",
            base.display()
        ));
    }
    let wanted: Vec<String> = CONTROLLERS
        .iter()
        .filter(|c| has(c))
        .map(|c| format!("+{c}"))
        .collect();
    write(&base, "cgroup.subtree_control", &wanted.join(" "))?;
    let dir = base.join(format!("loopx-{name}"));
    create_dir(&dir)?;
    let memory_limit = limits.memory_bytes.filter(|_| has("memory"));
    let set = || -> Result<(), String> {
        if let Some(n) = limits.processes {
            write(&dir, "pids.max", &n.to_string())?;
        }
        if let Some(bytes) = memory_limit {
            write(&dir, "memory.max", &bytes.to_string())?;
            // No swap beyond the limit, so the limit is the slice's whole memory.
            let _ = write(&dir, "memory.swap.max", "0");
        }
        Ok(())
    };
    let cgroup = SliceCgroup {
        dirs: vec![dir.clone()],
        v2: true,
        memory_limit,
    };
    set().inspect_err(|_| cgroup.remove())?;
    Ok(cgroup)
}

/// Where cgroup v2 is mounted when it is the unified hierarchy.
const V2_ROOT: &str = "/sys/fs/cgroup";
/// The leaf loopx moves itself into in v2, beside its slices' cgroups.
const SUPERVISOR_LEAF: &str = "supervisor";

/// This process's cgroup directory in v2.
fn own_v2_dir(own: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(Path::new(V2_ROOT).join(path.trim().trim_start_matches('/')))
}

/// Where the slices' cgroups go in v2 (loopx's own cgroup, or its parent once loopx moved into
/// its `supervisor` leaf); `None` when `/sys/fs/cgroup` is not the unified hierarchy.
fn v2_base(own: &str) -> Option<PathBuf> {
    if !Path::new(V2_ROOT).join("cgroup.controllers").exists() {
        return None;
    }
    let mut base = own_v2_dir(own)?;
    if base.file_name().is_some_and(|n| n == SUPERVISOR_LEAF) {
        base.pop();
    }
    Some(base)
}

/// Where the slices' cgroups go in the v1 hierarchy of `controller`: loopx's own cgroup there.
fn v1_base(mounts: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let mount = mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut right = right.split_whitespace();
        let (fstype, _, options) = (right.next()?, right.next()?, right.next()?);
        (fstype == "cgroup" && options.split(',').any(|o| o == controller))
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })?;
    let own_path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        names.split(',').any(|n| n == controller).then_some(path)
    })?;
    Some(mount.join(own_path.trim().trim_start_matches('/')))
}

/// v1: `loopx-<name>` beneath loopx's own cgroup in the `pids` and `memory` hierarchies (the
/// `pids` one is required; `memory` is used when there).
fn create_v1(own: &str, name: &str, limits: CgroupLimits) -> Result<SliceCgroup, String> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mut dirs = Vec::new();
    for controller in CONTROLLERS {
        let Some(base) = v1_base(&mounts, own, controller) else {
            if controller == "pids" {
                return Err("neither cgroup v2 nor the v1 `pids` controller is mounted".to_owned());
            }
            continue;
        };
        let dir = base.join(format!("loopx-{name}"));
        match create_dir(&dir) {
            Ok(()) => dirs.push(dir),
            Err(e) if controller == "pids" => return Err(e),
            Err(_) => continue,
        }
    }
    // Memory is limited only where the `memory` hierarchy is there.
    let memory_limit = limits
        .memory_bytes
        .filter(|_| dirs.iter().any(|d| !d.join("pids.max").exists()));
    let cgroup = SliceCgroup {
        dirs,
        v2: false,
        memory_limit,
    };
    let set = || -> Result<(), String> {
        for dir in &cgroup.dirs {
            if dir.join("pids.max").exists() {
                if let Some(n) = limits.processes {
                    write(dir, "pids.max", &n.to_string())?;
                }
            } else if let Some(bytes) = limits.memory_bytes {
                write(dir, "memory.limit_in_bytes", &bytes.to_string())?;
            }
        }
        Ok(())
    };
    set().inspect_err(|_| cgroup.remove())?;
    Ok(cgroup)
}
