//! Linux: user, mount and PID namespaces, Landlock, and the slice's cgroup.
//!
//! The helper maps its own uid and gid into a new user namespace, covers every `hide` path
//! (the project's `.loopx/`: store, config, slice logs) with an empty read-only tmpfs, and
//! forks a tiny init as PID 1 of a new PID namespace with its own `/proc`. The agent then
//! cannot open the store, cannot see loopx's processes (nor their `/proc/PID/environ`), and
//! cannot leave: when the init exits (the agent ended, or the slice was stopped), the kernel
//! kills every process left in the namespace, `setsid` and `env -i` escapees included.
//! Landlock also forbids `mount`/`umount`, so the agent cannot uncover what was hidden, and
//! refuses every write (create, remove, write, truncate, rename, device ioctl) outside
//! `writable`; with ABI 6 the agent also cannot signal processes outside its domain or
//! connect to abstract sockets outside it.

// `fork` in the helper, signal dispositions, `prctl` and the Landlock version query have no
// safe wrappers; each block says why it is sound. Nothing here runs inside loopx's own
// multi-threaded process except the probe, whose child only calls `unshare` and `_exit`.
#![allow(unsafe_code)]

use std::convert::Infallible;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, kill, sigaction};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, getgid, getuid};

use super::{
    NamespaceFailure, NamespaceStep, SUPERVISOR_LOST_FILE, SUPERVISOR_LOST_STATUS, Sandbox,
    SandboxSupport, exec, sandbox_err,
};
use crate::errors::ExecError;

pub(super) fn probe(helper: &crate::ExecHelper) -> SandboxSupport {
    let failure = probe_with_helper(helper);
    SandboxSupport {
        namespaces: failure.is_none_or(|f| f.step == NamespaceStep::Proc),
        namespace_failure: failure,
        landlock_abi: landlock_abi(),
        seatbelt: false,
    }
}

/// Runs `HELPER ARGS --probe` with nothing of loopx's environment and reads its answer.
fn probe_with_helper(helper: &crate::ExecHelper) -> Option<NamespaceFailure> {
    let output = std::process::Command::new(&helper.program)
        .args(&helper.args)
        .arg("--probe")
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) => NamespaceFailure::from_output(&String::from_utf8_lossy(&out.stdout)),
        Err(e) => Some(NamespaceFailure {
            step: NamespaceStep::Helper,
            errno: e.raw_os_error().unwrap_or(0),
        }),
    }
}

/// The helper's `--probe`, in a fresh single-threaded process: every step a slice's set-up
/// takes that can be refused, in the same order ([`run_sandboxed`], [`init`]), each failure
/// named by its step and errno. The mounts are made in the probe's own mount namespace and
/// vanish with it.
pub(super) fn probe_here() -> ! {
    use std::io::Write;
    let line = match probe_steps() {
        Ok(()) => "ok".to_owned(),
        Err(failure) => failure.to_line(),
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    std::process::exit(0)
}

fn probe_steps() -> Result<(), NamespaceFailure> {
    let failed = |step: NamespaceStep| {
        move |errno: nix::errno::Errno| NamespaceFailure {
            step,
            errno: errno as i32,
        }
    };
    enter_namespaces()?;
    make_mounts_private().map_err(failed(NamespaceStep::Mounts))?;
    let covered = std::env::temp_dir();
    mount(
        Some("tmpfs"),
        &covered,
        Some("tmpfs"),
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("size=4k,mode=0500"),
    )
    .map_err(failed(NamespaceStep::Mounts))?;
    mount_devpts().map_err(failed(NamespaceStep::Devpts))?;
    // The first child is PID 1 of the new namespace, where its `/proc` is mounted.
    let (read_end, write_end) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(failed(NamespaceStep::Unshare))?;
    // SAFETY: the probe is single-threaded; the child makes one system call and exits.
    match unsafe { fork() }.map_err(failed(NamespaceStep::Unshare))? {
        ForkResult::Child => {
            drop(read_end);
            let errno = mount_proc().err().map_or(0, |e| e as i32);
            let _ = nix::unistd::write(&write_end, &errno.to_le_bytes());
            // SAFETY: ends the forked child without running destructors.
            unsafe { libc::_exit(0) }
        }
        ForkResult::Parent { child } => {
            drop(write_end);
            let mut word = [0u8; 4];
            let got = nix::unistd::read(&read_end, &mut word).unwrap_or(0);
            let _ = waitpid(child, None);
            let errno = if got == word.len() {
                i32::from_le_bytes(word)
            } else {
                nix::errno::Errno::ECHILD as i32
            };
            if errno != 0 {
                return Err(NamespaceFailure {
                    step: NamespaceStep::Proc,
                    errno,
                });
            }
        }
    }
    Ok(())
}

/// The kernel's switches for user namespaces (`user.max_user_namespaces`, Debian's
/// `unprivileged_userns_clone`, Ubuntu's AppArmor restriction), without forking: a seccomp
/// filter can still refuse `unshare`, which only [`probe`] finds out.
pub(super) fn quick() -> SandboxSupport {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let root = getuid().is_root();
    let namespaces = read("/proc/sys/user/max_user_namespaces").is_some_and(|n| n > 0)
        && (root
            || (read("/proc/sys/kernel/unprivileged_userns_clone") != Some(0)
                && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != Some(1)));
    SandboxSupport {
        namespaces,
        namespace_failure: None,
        landlock_abi: landlock_abi(),
        seatbelt: false,
    }
}

/// New user, mount and PID namespaces for the calling process, with its own uid and gid mapped
/// (the PID namespace is its next child's).
fn enter_namespaces() -> Result<(), NamespaceFailure> {
    let (uid, gid) = (getuid(), getgid());
    let flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    unshare(flags).map_err(|errno| NamespaceFailure {
        step: NamespaceStep::Unshare,
        errno: errno as i32,
    })?;
    for (path, text) in [
        ("/proc/self/setgroups", "deny".to_owned()),
        ("/proc/self/uid_map", format!("{uid} {uid} 1")),
        ("/proc/self/gid_map", format!("{gid} {gid} 1")),
    ] {
        std::fs::write(path, text).map_err(|e| NamespaceFailure {
            step: NamespaceStep::IdMaps,
            errno: e.raw_os_error().unwrap_or(0),
        })?;
    }
    Ok(())
}

/// Mounts made from here on do not propagate back to the person's namespace.
fn make_mounts_private() -> nix::Result<()> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
}

fn landlock_abi() -> Option<u32> {
    // LANDLOCK_CREATE_RULESET_VERSION: returns the highest ABI, or fails when disabled.
    // SAFETY: a null attribute with size 0 and this flag only queries the version.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    u32::try_from(abi).ok().filter(|&v| v > 0)
}
/// Applies `sandbox` and runs `argv`: with namespaces, as the child of an init in a new PID
/// namespace, this process waiting and exiting as the agent did; otherwise by `execv`.
pub(super) fn run_sandboxed(sandbox: &Sandbox, argv: &[CString]) -> Result<Infallible, ExecError> {
    // First, before anything forks: everything of the slice is in its cgroup.
    if let Some(cgroup) = &sandbox.cgroup {
        crate::cgroup::join(cgroup.dirs())?;
    }
    if !sandbox.namespaces {
        if sandbox.landlock {
            restrict_writes(&sandbox.writable)?;
        }
        return exec(argv);
    }
    // The directory the agent starts in, as a path: entered again once the mounts below are
    // in place, so that `..` from it walks the covered tree (a worktree's peers stay hidden),
    // not the one the helper was started in.
    let cwd = std::env::current_dir().map_err(|e| ExecError::Sandbox {
        action: "read the working directory".to_owned(),
        reason: e.to_string(),
    })?;
    // Who started the helper: when it is gone, the slice has no limits left but its own.
    let supervisor = Supervisor::watch();
    enter_namespaces().map_err(|f| ExecError::Sandbox {
        action: format!("set up the slice's namespaces (step `{}`)", f.step.name()),
        reason: f.error(),
    })?;
    // The slice's own user namespace bounds the namespaces made beneath it (the kernel counts
    // each at every level up): an agent that made every user namespace the machine allows made
    // the next `loopx run`'s probe fail, and its slices ran without theirs. Written while this
    // process still holds its capabilities in the new namespace (none survive the agent's
    // exec).
    std::fs::write(
        "/proc/sys/user/max_user_namespaces",
        NESTED_USER_NAMESPACES.to_string(),
    )
    .map_err(|e| ExecError::Sandbox {
        action: "bound the slice's nested user namespaces".to_owned(),
        reason: e.to_string(),
    })?;
    // Set inside the new user namespace, where the kernel counts this user's processes of
    // the slice only (set before, it would count all of the person's).
    if let Some(n) = sandbox.processes {
        nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NPROC, n, n)
            .map_err(|e| sandbox_err("limit the slice's processes", e))?;
    }
    make_mounts_private().map_err(|e| sandbox_err("make mounts private", e))?;
    for path in &sandbox.hide {
        hide(path, &sandbox.keep)?;
    }
    for path in &sandbox.read_only {
        read_only(path)?;
    }
    if let Some(room) = &sandbox.private_room {
        keep_only(room)?;
    }
    private_terminals()?;
    nix::unistd::chdir(&cwd)
        .map_err(|e| sandbox_err(&format!("enter {} in the sandbox", cwd.display()), e))?;
    // Close-on-exec: the agent must not inherit the pipe's write end (it could report any
    // exit status it liked).
    let (status_read, status_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| sandbox_err("create a status pipe", e))?;
    // SAFETY: this helper is single-threaded (it runs before anything else in `loopx __exec`).
    match unsafe { fork() }.map_err(|e| sandbox_err("fork the slice's init", e))? {
        ForkResult::Child => {
            drop(status_read);
            let code = match init(sandbox, argv, &status_write) {
                Ok(code) => code,
                Err(err) => {
                    eprintln!("loopx __exec: {err}");
                    127
                }
            };
            // SAFETY: ends the init; the kernel then kills what is left in its namespace.
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => {
            drop(status_write);
            // The slice's stop signals reach the init and the agent through the process group;
            // this process only waits, so that it ends last and reports how the agent ended.
            for signal in FORWARDED {
                // SAFETY: ignoring a signal installs no handler code.
                let _ = unsafe { nix::sys::signal::signal(signal, SigHandler::SigIgn) };
            }
            let init_status = match supervisor {
                Some(supervisor) => supervisor.wait_for(child, sandbox),
                None => waitpid(child, None),
            };
            let mut word = [0u8; 8];
            let got = nix::unistd::read(&status_read, &mut word).unwrap_or(0);
            let agent = (got == word.len()).then(|| {
                let kind = i32::from_le_bytes(word[..4].try_into().expect("4 bytes"));
                let value = i32::from_le_bytes(word[4..].try_into().expect("4 bytes"));
                (kind, value)
            });
            match (agent, init_status) {
                (Some((1, signal)), _) => die_by(signal),
                (Some((_, code)), _) => std::process::exit(code),
                (None, Ok(WaitStatus::Signaled(_, signal, _))) => die_by(signal as i32),
                (None, Ok(WaitStatus::Exited(_, code))) => std::process::exit(code),
                (None, _) => std::process::exit(127),
            }
        }
    }
}

/// How many user namespaces a slice may make beneath its own (a CLI's own sandbox, bubblewrap
/// say, makes one per command).
const NESTED_USER_NAMESPACES: u32 = 256;

/// Signals the init passes on to everything in its namespace.
const FORWARDED: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_signal(signal: libc::c_int) {
    PENDING_SIGNAL.store(signal, Ordering::SeqCst);
}

/// PID 1 of the slice: mounts its `/proc`, applies Landlock, starts the agent, reaps every
/// orphan, passes stop signals on, and returns when the agent ends. Its return ends the
/// namespace.
fn init(sandbox: &Sandbox, argv: &[CString], status: &OwnedFd) -> Result<i32, ExecError> {
    // If the waiting helper dies (SIGKILL at the end of a stop), so does the whole slice.
    // SAFETY: plain prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    // Not traceable by the agent: the init reports how the agent ended, and holds the status
    // pipe. A process that is not dumpable can be traced, or its `/proc/1/fd` opened, only
    // with CAP_SYS_PTRACE in the user namespace its memory belongs to, the person's, where the
    // agent has no capability. The agent's own exec makes it dumpable again.
    // SAFETY: plain prctl with an integer argument.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0) } != 0 {
        return Err(sandbox_err(
            "make the slice's init untraceable",
            nix::errno::Errno::last(),
        ));
    }
    // A `/proc` of this namespace: the agent sees its own processes only. Some container
    // runtimes forbid it (masked paths); loopx's own processes stay unreadable there because
    // loopx is not dumpable.
    let _ = mount_proc();
    if sandbox.landlock {
        restrict_writes(&sandbox.writable)?;
    }
    let handler = SigAction::new(
        SigHandler::Handler(note_signal),
        SaFlags::empty(), // no SA_RESTART: waitpid must return to pass the signal on
        SigSet::empty(),
    );
    for signal in FORWARDED {
        // SAFETY: the handler only stores into an atomic.
        unsafe { sigaction(signal, &handler) }.map_err(|e| sandbox_err("install a handler", e))?;
    }
    // SAFETY: the init is single-threaded; the child only resets signals and execs.
    let agent = match unsafe { fork() }.map_err(|e| sandbox_err("fork the agent", e))? {
        ForkResult::Child => {
            let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
            for signal in FORWARDED {
                // SAFETY: restores the default disposition.
                let _ = unsafe { sigaction(signal, &default) };
            }
            drop_capabilities();
            let Err(err) = exec(argv);
            eprintln!("loopx __exec: {err}");
            // SAFETY: the exec failed; end the child without unwinding into the init's code.
            unsafe { libc::_exit(127) }
        }
        ForkResult::Parent { child } => child,
    };
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == agent => {
                report(status, 0, code);
                return Ok(code);
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == agent => {
                report(status, 1, signal as i32);
                return Ok(128 + signal as i32);
            }
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => {
                let signal = PENDING_SIGNAL.swap(0, Ordering::SeqCst);
                if let Ok(signal) = Signal::try_from(signal) {
                    // -1 from PID 1: every process of the namespace but the init itself.
                    let _ = kill(Pid::from_raw(-1), signal);
                }
            }
            Err(_) => return Ok(127),
        }
    }
}

/// Empties the capability bounding set, so that the agent's exec gives it no capability in the
/// slice's user namespace, also when it runs as root (uid 0 there): with them, root's agent
/// opened the hidden `.loopx/` by file handle (`open_by_handle_at`) beneath its covering
/// mount, which was made in that namespace. A normal user's exec gets none anyway.
fn drop_capabilities() {
    for cap in 0..64 {
        // SAFETY: plain prctl with integer arguments; an unknown capability is EINVAL.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
}

fn report(status: &OwnedFd, kind: i32, value: i32) {
    let mut word = [0u8; 8];
    word[..4].copy_from_slice(&kind.to_le_bytes());
    word[4..].copy_from_slice(&value.to_le_bytes());
    let _ = nix::unistd::write(status, &word);
}

/// Ends this process the way the agent ended: by the same signal.
fn die_by(signal: i32) -> ! {
    if let Ok(sig) = Signal::try_from(signal) {
        // SAFETY: restoring the default disposition installs no handler code.
        let _ = unsafe { nix::sys::signal::signal(sig, SigHandler::SigDfl) };
        let _ = kill(Pid::this(), sig);
    }
    std::process::exit(128 + signal)
}

/// Gives the slice a terminal namespace of its own: a new `devpts` instance on `/dev/pts`, so
/// that no other terminal of the person's (the one `loopx run` prints to, their shells) can be
/// opened, written or read from the slice. The agent keeps its own terminal through its
/// standard streams and `/dev/tty` (its controlling terminal); `/dev/ptmx` opens terminals in
/// the new instance (the kernel looks for `pts` beside it), so tools that make their own
/// terminals still work.
fn private_terminals() -> Result<(), ExecError> {
    mount_devpts().map_err(|e| sandbox_err("give the slice its own /dev/pts", e))
}

fn mount_devpts() -> nix::Result<()> {
    mount(
        Some("devpts"),
        "/dev/pts",
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
}

/// A `/proc` of the calling process's PID namespace, over the machine's.
fn mount_proc() -> nix::Result<()> {
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
}

/// The process that started the helper (the supervisor, or the land check's caller), watched
/// through a pidfd, so that the slice ends when it is gone: a `loopx run` killed with
/// SIGKILL cannot stop its slices, and without this they would run on with no time limit
/// until a later run recovered them.
struct Supervisor {
    pidfd: OwnedFd,
}

/// How long the agent gets to end after its supervisor is gone, before it is killed.
const ORPHAN_GRACE_MS: i32 = 3000;

impl Supervisor {
    /// A pidfd on the parent, or `None` when the parent is already gone (then the helper was
    /// adopted and there is nobody to watch) or the kernel has no pidfds (before 5.3).
    fn watch() -> Option<Supervisor> {
        use std::os::fd::FromRawFd;
        let parent = nix::unistd::getppid();
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, parent.as_raw(), 0) };
        let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
        // SAFETY: the descriptor was just returned to us and is owned by nothing else.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd) };
        // Close-on-exec, so that the agent never holds it (pidfds are made with it set, but
        // the init forks the agent from this process's descriptors).
        let _ = nix::fcntl::fcntl(
            &pidfd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
        // The parent could have died, and its pid been reused, before the pidfd was opened:
        // then this process was adopted by then.
        (nix::unistd::getppid() == parent).then_some(Supervisor { pidfd })
    }

    /// Waits for the init `child` like `waitpid`; when the supervisor goes first, stops the
    /// slice (SIGTERM to the init, which passes it on; SIGKILL after a grace, which ends the
    /// namespace), removes the slice's cgroup, leaves [`SUPERVISOR_LOST_FILE`] in its room,
    /// and exits with
    /// [`SUPERVISOR_LOST_STATUS`].
    fn wait_for(self, child: Pid, sandbox: &Sandbox) -> nix::Result<WaitStatus> {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: pidfd_open on our own child, which stays a zombie until we wait for it.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.as_raw(), 0) };
        let Some(fd) = i32::try_from(fd).ok().filter(|fd| *fd >= 0) else {
            return waitpid(child, None);
        };
        // SAFETY: just returned to us, owned by nothing else.
        let init = unsafe { OwnedFd::from_raw_fd(fd) };
        let poll = |timeout: i32| -> (bool, bool) {
            let mut fds = [
                libc::pollfd {
                    fd: init.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.pidfd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfd structures for the call's duration.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
            if n <= 0 {
                return (false, false);
            }
            (fds[0].revents != 0, fds[1].revents != 0)
        };
        loop {
            match poll(-1) {
                (true, _) => return waitpid(child, None),
                (false, true) => break,
                (false, false) => {}
            }
        }
        // The supervisor is gone: nobody will enforce the slice's limits or stop it.
        let _ = kill(child, Signal::SIGTERM);
        let deadline =
            std::time::Instant::now() + std::time::Duration::from_millis(ORPHAN_GRACE_MS as u64);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            let ms = i32::try_from(left.as_millis())
                .unwrap_or(ORPHAN_GRACE_MS)
                .max(1);
            if poll(ms).0 {
                break;
            }
        }
        let _ = kill(child, Signal::SIGKILL);
        let _ = waitpid(child, None);
        if let Some(cgroup) = &sandbox.cgroup {
            cgroup.leave_and_remove();
        }
        if let Some(room) = &sandbox.private_room {
            let _ = std::fs::write(
                room.join(SUPERVISOR_LOST_FILE),
                b"the supervisor was gone\n",
            );
        }
        std::process::exit(SUPERVISOR_LOST_STATUS)
    }
}

/// Covers `path` with an empty read-only tmpfs (a directory) or `/dev/null` (a file, a
/// socket), with the `keep` directories beneath it mounted back. A missing path has nothing
/// to hide.
fn hide(path: &Path, keep: &[PathBuf]) -> Result<(), ExecError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let kept: Vec<&PathBuf> = keep
        .iter()
        .filter(|k| {
            k.strip_prefix(path)
                .is_ok_and(|r| !r.as_os_str().is_empty())
        })
        .collect();
    if meta.is_dir() && !kept.is_empty() {
        return hide_keeping(path, &kept);
    }
    if !meta.is_dir() {
        return mount(
            Some("/dev/null"),
            path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(|e| sandbox_err(&format!("hide {}", path.display()), e));
    }
    mount(
        Some("tmpfs"),
        path,
        Some("tmpfs"),
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("size=4k,mode=0500"),
    )
    .map_err(|e| sandbox_err(&format!("hide {}", path.display()), e))
}

/// Covers the directory `path` with an empty tmpfs, mounts each of `kept` back at its place
/// in it, then makes the tmpfs read-only (the kept directories keep their own mounts).
fn hide_keeping(path: &Path, kept: &[&PathBuf]) -> Result<(), ExecError> {
    use std::os::fd::AsRawFd;
    let err = |what: &str, target: &Path| {
        let what = format!("{what} {}", target.display());
        move |e| sandbox_err(&what, e)
    };
    // Opened before the covering mount hides their paths.
    let mut opened = Vec::new();
    for dir in kept {
        let fd = nix::fcntl::open(
            dir.as_path(),
            nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(err("open the kept directory", dir))?;
        opened.push((dir, fd));
    }
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(
        Some("tmpfs"),
        path,
        Some("tmpfs"),
        flags,
        Some("size=16k,mode=0700"),
    )
    .map_err(err("hide", path))?;
    for (dir, fd) in &opened {
        std::fs::create_dir_all(dir).map_err(|e| ExecError::Sandbox {
            action: format!("make the mount point {}", dir.display()),
            reason: e.to_string(),
        })?;
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        mount(
            Some(source.as_str()),
            dir.as_path(),
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(err("mount back", dir))?;
    }
    mount(
        None::<&str>,
        path,
        None::<&str>,
        flags | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
        Some("size=16k,mode=0700"),
    )
    .map_err(err("make read-only", path))
}

/// Mounts `path` over itself read-only. The remount keeps the flags the underlying mount has
/// (a user namespace may not drop `nosuid`, `nodev` or `noexec`).
fn read_only(path: &Path) -> Result<(), ExecError> {
    use nix::sys::statvfs::{FsFlags, statvfs};
    if !path.exists() {
        return Ok(());
    }
    let err = |what: &str| {
        let what = format!("{what} {}", path.display());
        move |e| sandbox_err(&what, e)
    };
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(err("bind"))?;
    let kept = statvfs(path)
        .map_err(err("read the mount flags of"))?
        .flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (has, flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(has) {
            flags |= flag;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>).map_err(err("make read-only"))
}

/// Covers `room`'s parent with an empty filesystem and mounts `room` back in it: the slice's
/// own room stays where its paths say, its siblings (other slices' rooms) are gone.
fn keep_only(room: &Path) -> Result<(), ExecError> {
    use std::os::fd::AsRawFd;
    let (Some(parent), Some(name)) = (room.parent(), room.file_name()) else {
        return Err(ExecError::Sandbox {
            action: format!("keep only {}", room.display()),
            reason: "it has no parent directory".to_owned(),
        });
    };
    let err = |what: &str| {
        let what = format!("{what} ({})", room.display());
        move |e| sandbox_err(&what, e)
    };
    // Held open across the covering mount: its path is hidden by then.
    let kept = nix::fcntl::open(
        room,
        nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(err("open the slice's room"))?;
    mount(
        Some("tmpfs"),
        parent,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("size=16k,mode=0700"),
    )
    .map_err(err("cover the other slices' rooms"))?;
    let target = parent.join(name);
    nix::unistd::mkdir(&target, nix::sys::stat::Mode::S_IRWXU)
        .map_err(err("make the room's mount point"))?;
    let source = format!("/proc/self/fd/{}", kept.as_raw_fd());
    mount(
        Some(source.as_str()),
        &target,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(err("mount the slice's room back"))?;
    Ok(())
}

/// Landlock: writes only beneath `writable`; no signals or abstract sockets outside the domain.
fn restrict_writes(writable: &[PathBuf]) -> Result<(), ExecError> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, Scope, path_beneath_rules,
    };
    let abi = ABI::V6;
    let err = |e: &dyn std::fmt::Display| ExecError::Sandbox {
        action: "restrict writes with Landlock".to_owned(),
        reason: e.to_string(),
    };
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_write(abi))
        .map_err(|e| err(&e))?
        .scope(Scope::from_all(abi))
        .map_err(|e| err(&e))?
        .create()
        .map_err(|e| err(&e))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_write(abi)))
        .map_err(|e| err(&e))?
        .restrict_self()
        .map_err(|e| err(&e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(err(&"this kernel does not enforce Landlock"));
    }
    Ok(())
}
