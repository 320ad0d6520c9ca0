//! The slice's sandbox: what the operating system, not the agent's goodwill, keeps it from
//! touching.
//!
//! [`Sandbox`] says what to apply, in terms of paths and the slice's processes; the exec
//! helper (`loopx __exec`) applies it after the terminal is set up and before the agent's
//! program starts, with what the platform has:
//!
//! - **Linux** (`linux.rs`): *namespaces* (user, mount, PID) cover every `hide` path with an
//!   empty read-only filesystem and make the slice's processes one unit that ends with its
//!   init; *Landlock* refuses every write outside `writable` and, from ABI 6, signals and
//!   abstract sockets outside the slice; a *cgroup* bounds the whole tree's processes and
//!   memory where loopx may make one.
//! - **macOS** (`macos.rs`): a *Seatbelt* profile ([`Sandbox::seatbelt_profile`], generated
//!   by `seatbelt.rs` from the same fields and tested on every platform), applied with
//!   `/usr/bin/sandbox-exec`: writes only beneath `writable`, nothing of `hide` readable but
//!   `keep`, `read_only` paths unwritable, no other slice's room, no signals to or inspection
//!   of processes outside the slice. There are no PID namespaces: the slice's tree is its
//!   session, and the sweep finds escapees by their marker.
//!
//! Reading is not restricted on either: agents read compilers, libraries and the user's tools.
//! What a machine offers is probed once per process ([`SandboxSupport::probe`]); the caller
//! decides what to ask for and records it (`docs/permissions.md`, `docs/platforms.md`).

// Signal dispositions and the terminal ioctl have no safe wrappers; each block says why it is
// sound. The platform modules say the same of theirs.
#![allow(unsafe_code)]

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;
mod seatbelt;

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

use crate::errors::ExecError;

/// What the helper applies around the agent. The default applies nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Run the agent in new user, mount and PID namespaces (hides `hide`, own `/proc`, and the
    /// whole tree stops as one unit).
    pub namespaces: bool,
    /// Paths covered by an empty read-only filesystem; needs `namespaces`.
    pub hide: Vec<PathBuf>,
    /// Directories beneath a `hide` path mounted back in place (a todo's worktree under the
    /// hidden `.loopx/`); everything else there stays hidden. Needs `namespaces`.
    pub keep: Vec<PathBuf>,
    /// Paths mounted read-only in place (a repository's `.git/config` and `.git/hooks`: what
    /// would run code outside the slice later, in loopx's own git or the person's). Missing
    /// paths are skipped. Needs `namespaces`.
    pub read_only: Vec<PathBuf>,
    /// The slice's own directory among its siblings (`…/loopx-<uid>/<marker>`): the parent is
    /// covered by an empty filesystem in which only this directory is mounted back, so the
    /// agent sees no other slice's room (prompt, temp files, socket). Needs `namespaces`.
    pub private_room: Option<PathBuf>,
    /// Restrict writes with Landlock to `writable`.
    pub landlock: bool,
    /// Apply every rule here (`hide`, `keep`, `read_only`, `private_room`, `writable`, signals)
    /// with a Seatbelt profile instead of namespaces and Landlock (macOS).
    pub seatbelt: bool,
    /// Where the agent may write when `landlock` is on. Missing paths are skipped.
    pub writable: Vec<PathBuf>,
    /// The slice's cgroup, joined before anything else; the slice's stop kills it and its end
    /// removes it.
    pub cgroup: Option<crate::SliceCgroup>,
    /// `RLIMIT_NPROC`, set inside the slice's user namespace, where it counts the slice's own
    /// processes (an unprivileged user's; root is exempt, and has the cgroup instead).
    pub processes: Option<u64>,
}

impl Sandbox {
    /// Whether nothing is applied.
    pub fn is_empty(&self) -> bool {
        !self.namespaces && !self.landlock && !self.seatbelt && self.cgroup.is_none()
    }

    /// The Seatbelt profile that holds this sandbox's rules (what `sandbox-exec -p` is given
    /// on macOS), `terminal` being the slice's own terminal device. Refused for a path that
    /// cannot be written into a rule (not UTF-8, a line break).
    pub fn seatbelt_profile(&self, terminal: Option<&std::path::Path>) -> Result<String, String> {
        seatbelt::profile(self, terminal)
    }

    /// The exec helper's arguments for this sandbox (`loopx __exec ARGS -- PROGRAM …`).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        if self.namespaces {
            args.push("--namespaces".into());
            for path in &self.hide {
                args.push("--hide".into());
                args.push(path.clone().into_os_string());
            }
            for path in &self.keep {
                args.push("--keep".into());
                args.push(path.clone().into_os_string());
            }
            for path in &self.read_only {
                args.push("--read-only".into());
                args.push(path.clone().into_os_string());
            }
            if let Some(room) = &self.private_room {
                args.push("--private-room".into());
                args.push(room.clone().into_os_string());
            }
            if let Some(n) = self.processes {
                args.push("--processes".into());
                args.push(n.to_string().into());
            }
        }
        if self.seatbelt {
            args.push("--seatbelt".into());
            for (flag, paths) in [
                ("--hide", &self.hide),
                ("--keep", &self.keep),
                ("--read-only", &self.read_only),
                ("--write", &self.writable),
            ] {
                for path in paths {
                    args.push(flag.into());
                    args.push(path.clone().into_os_string());
                }
            }
            if let Some(room) = &self.private_room {
                args.push("--private-room".into());
                args.push(room.clone().into_os_string());
            }
        }
        if let Some(cgroup) = &self.cgroup {
            args.extend(cgroup.to_args());
        }
        if self.landlock {
            args.push("--landlock".into());
            for path in &self.writable {
                args.push("--write".into());
                args.push(path.clone().into_os_string());
            }
        }
        args
    }

    /// A short name of what is in effect, as slice records and `doctor` show it.
    pub fn describe(&self) -> &'static str {
        if self.seatbelt {
            return "seatbelt";
        }
        match (self.namespaces, self.landlock, self.cgroup.is_some()) {
            (true, true, false) => "namespaces+landlock",
            (true, true, true) => "namespaces+landlock+cgroup",
            (true, false, false) => "namespaces",
            (true, false, true) => "namespaces+cgroup",
            (false, true, false) => "landlock",
            (false, true, true) => "landlock+cgroup",
            (false, false, false) => "session",
            (false, false, true) => "session+cgroup",
        }
    }
}

/// What this machine lets an unprivileged process do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSupport {
    /// A new user namespace (with mount and PID namespaces, the hiding mounts and a private
    /// `/dev/pts`) can be set up by the helper (Linux).
    pub namespaces: bool,
    /// The step of the namespaces' set-up that failed, and why: the reason `namespaces` is
    /// false, or (step [`NamespaceStep::Proc`]) the one part a slice runs without, its own
    /// `/proc`.
    pub namespace_failure: Option<NamespaceFailure>,
    /// The Landlock ABI version, when Landlock is enabled (Linux).
    pub landlock_abi: Option<u32>,
    /// `/usr/bin/sandbox-exec` is there to apply a Seatbelt profile (macOS).
    pub seatbelt: bool,
}

impl SandboxSupport {
    /// Probes once per process. On Linux the exec `helper` is run as `HELPER ARGS --probe`
    /// with an empty environment: a fresh process, which holds none of loopx's memory (and so
    /// none of its secrets) and is dumpable, as the slice's own helper is, sets up the
    /// namespaces as a slice would, step by step, and says which step failed. (A fork of
    /// loopx itself would inherit its non-dumpable state, whose `/proc/self` files belong to
    /// root: as a normal user it could not write its id maps.) Landlock reports its ABI; on
    /// macOS `sandbox-exec` is looked for.
    pub fn probe(helper: &crate::ExecHelper) -> Self {
        static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
        *SUPPORT.get_or_init(|| imp::probe(helper))
    }

    /// A quick reading for a status line, without forking (Linux: the kernel's switches for
    /// user namespaces). [`SandboxSupport::probe`] is the definitive answer; the supervisor
    /// and `loopx doctor` use it.
    pub fn quick() -> Self {
        imp::quick()
    }

    /// Whether every rule of a [`Sandbox`] can be enforced here: namespaces and Landlock on
    /// Linux, Seatbelt on macOS.
    pub fn complete(&self) -> bool {
        (self.namespaces && self.landlock_abi.is_some()) || self.seatbelt
    }
}

/// A step of setting up a slice's namespaces, as the probe tries them in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceStep {
    /// Running the exec helper to probe at all.
    Helper,
    /// `unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID)`.
    Unshare,
    /// Writing `/proc/self/setgroups`, `uid_map` and `gid_map` in the new user namespace.
    IdMaps,
    /// Making the mounts private and covering a directory with a read-only tmpfs.
    Mounts,
    /// A `devpts` instance of the slice's own on `/dev/pts`.
    Devpts,
    /// A `/proc` of the new PID namespace (a slice runs without it, seeing the machine's).
    Proc,
}

impl NamespaceStep {
    /// The step's name, as the probe writes it and `doctor` shows it.
    pub fn name(self) -> &'static str {
        match self {
            NamespaceStep::Helper => "helper",
            NamespaceStep::Unshare => "unshare",
            NamespaceStep::IdMaps => "id-maps",
            NamespaceStep::Mounts => "mounts",
            NamespaceStep::Devpts => "devpts",
            NamespaceStep::Proc => "proc",
        }
    }

    fn from_name(name: &str) -> Option<NamespaceStep> {
        [
            NamespaceStep::Helper,
            NamespaceStep::Unshare,
            NamespaceStep::IdMaps,
            NamespaceStep::Mounts,
            NamespaceStep::Devpts,
            NamespaceStep::Proc,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// Which step of the namespaces' set-up failed, with its errno (0 when there is none: the
/// helper could not be run or said nothing readable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceFailure {
    /// The step.
    pub step: NamespaceStep,
    /// The errno it failed with.
    pub errno: i32,
}

impl NamespaceFailure {
    /// The probe's line for it: `failed STEP ERRNO`.
    pub(crate) fn to_line(self) -> String {
        format!("failed {} {}", self.step.name(), self.errno)
    }

    /// Reads the probe's output: `None` for `ok`, the failure otherwise (an unreadable answer
    /// is a failure of the helper step).
    pub(crate) fn from_output(output: &str) -> Option<NamespaceFailure> {
        let line = output.lines().last().unwrap_or("").trim();
        if line == "ok" {
            return None;
        }
        let mut words = line.split_whitespace();
        let parsed = (words.next() == Some("failed"))
            .then(|| {
                let step = NamespaceStep::from_name(words.next()?)?;
                let errno = words.next()?.parse().ok()?;
                Some(NamespaceFailure { step, errno })
            })
            .flatten();
        Some(parsed.unwrap_or(NamespaceFailure {
            step: NamespaceStep::Helper,
            errno: 0,
        }))
    }

    /// The error in words: `EACCES (Permission denied)`.
    pub fn error(self) -> String {
        if self.errno == 0 {
            return "no answer".to_owned();
        }
        let errno = nix::errno::Errno::from_raw(self.errno);
        format!("{errno:?} ({})", errno.desc())
    }

    /// What fixes this step on a machine where it failed, in one line.
    pub fn hint(self) -> &'static str {
        use nix::errno::Errno;
        let errno = nix::errno::Errno::from_raw(self.errno);
        match (self.step, errno) {
            (NamespaceStep::Helper, _) => {
                "the exec helper (`loopx __exec --probe`) did not run: check that the loopx binary is executable and not on a `noexec` mount"
            }
            (NamespaceStep::Unshare, Errno::ENOSPC) => {
                "the kernel's user namespace limit is reached or zero: sysctl -w user.max_user_namespaces=15000"
            }
            (NamespaceStep::Unshare, Errno::EPERM) => {
                "this kernel or a seccomp filter refuses unprivileged user namespaces: on Debian `sysctl -w kernel.unprivileged_userns_clone=1`; in a container, allow `unshare` in its seccomp profile"
            }
            (NamespaceStep::Unshare, _) => {
                "the kernel lacks user, mount or PID namespaces (CONFIG_USER_NS, CONFIG_PID_NS)"
            }
            (NamespaceStep::IdMaps, _) => {
                "the new user namespace may not map this user: on Ubuntu 23.10 and later AppArmor restricts unprivileged user namespaces; give loopx an AppArmor profile with `userns,` or `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
            }
            (NamespaceStep::Mounts, _) => {
                "mounts in the slice's namespace are refused: an AppArmor or SELinux policy denies them to unprivileged user namespaces (on Ubuntu, the same `userns,` profile)"
            }
            (NamespaceStep::Devpts, _) => {
                "a private `devpts` cannot be mounted: the kernel is older than 4.7 or a container denies it"
            }
            (NamespaceStep::Proc, _) => {
                "a `/proc` of the slice's own cannot be mounted (a container masks parts of the machine's): slices see every process; run loopx outside the container, or give it an unmasked `/proc`"
            }
        }
    }
}

/// The helper's exit status when its supervisor was gone and it stopped the slice.
pub const SUPERVISOR_LOST_STATUS: i32 = 125;

/// The file the helper leaves in the slice's room when it stopped the slice because its
/// supervisor was gone; recovery reads it.
pub const SUPERVISOR_LOST_FILE: &str = "supervisor-lost";

/// Parsed sandbox arguments of the helper.
#[derive(Debug, Default)]
pub(crate) struct SandboxArgs {
    pub(crate) sandbox: Sandbox,
}

impl SandboxArgs {
    /// Takes one sandbox flag (and its value from `rest`); `false` when `arg` is not one.
    pub(crate) fn take(
        &mut self,
        arg: &str,
        rest: &mut impl Iterator<Item = OsString>,
    ) -> Result<bool, ExecError> {
        let mut value = |flag: &str| {
            rest.next()
                .map(PathBuf::from)
                .ok_or_else(|| ExecError::Usage {
                    reason: format!("`{flag}` needs a path"),
                })
        };
        match arg {
            "--namespaces" => self.sandbox.namespaces = true,
            "--landlock" => self.sandbox.landlock = true,
            "--seatbelt" => self.sandbox.seatbelt = true,
            "--hide" => self.sandbox.hide.push(value("--hide")?),
            "--keep" => self.sandbox.keep.push(value("--keep")?),
            "--private-room" => self.sandbox.private_room = Some(value("--private-room")?),
            "--read-only" => self.sandbox.read_only.push(value("--read-only")?),
            "--write" => self.sandbox.writable.push(value("--write")?),
            "--cgroup" => {
                let dir = value("--cgroup")?;
                self.sandbox
                    .cgroup
                    .get_or_insert_with(crate::SliceCgroup::default)
                    .push(dir);
            }
            "--processes" => {
                let given = value("--processes")?;
                let n = given.to_str().and_then(|t| t.parse().ok()).ok_or_else(|| {
                    ExecError::Usage {
                        reason: format!("`--processes` needs a number, not {}", given.display()),
                    }
                })?;
                self.sandbox.processes = Some(n);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Applies `sandbox` and runs `argv`; returns only with an error.
pub(crate) fn run_sandboxed(sandbox: &Sandbox, argv: &[CString]) -> Result<Infallible, ExecError> {
    imp::run_sandboxed(sandbox, argv)
}

/// The helper's `--probe`: sets up the slice's namespaces here, step by step, prints `ok` or
/// `failed STEP ERRNO`, and exits.
pub(crate) fn probe_here() -> ! {
    imp::probe_here()
}

pub(crate) fn exec(argv: &[CString]) -> Result<Infallible, ExecError> {
    let program = argv
        .first()
        .expect("the helper checks that a program is given");
    let err = nix::unistd::execv(program, argv).expect_err("execv returns only on failure");
    Err(ExecError::Exec {
        program: program.to_string_lossy().into_owned(),
        source: err,
    })
}

pub(crate) fn sandbox_err(action: &str, errno: nix::errno::Errno) -> ExecError {
    ExecError::Sandbox {
        action: action.to_owned(),
        reason: errno.desc().to_owned(),
    }
}

/// `OsStr` bytes as a C string, for `execv`.
pub(crate) fn c_string(arg: &OsString) -> Result<CString, ExecError> {
    CString::new(arg.as_bytes()).map_err(|_| ExecError::Nul {
        arg: arg.to_string_lossy().into_owned(),
    })
}

/// Makes the helper what portable-pty's `pre_exec` made a child between fork and exec: signals
/// at their defaults and unblocked, the leader of a new session whose controlling terminal is
/// its standard input (the slice's terminal), and no descriptor open but 0, 1 and 2. The slice
/// spawns the helper without a `pre_exec` hook, so that the standard library spawns it with
/// `posix_spawn` (`vfork` semantics): a supervisor of 40 threads and 60 MiB that forks copies
/// its page tables and then takes a copy-on-write fault, with a TLB shootdown across every
/// CPU, for each page it writes while the child lives, and at 32 agents that was most of
/// loopx's CPU time per slice.
pub(crate) fn become_session_leader() -> Result<(), ExecError> {
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTERM,
        Signal::SIGALRM,
        Signal::SIGPIPE,
    ] {
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        // SAFETY: installing the default disposition runs no code of ours in a handler.
        unsafe { sigaction(signal, &default) }
            .map_err(|e| sandbox_err("reset the signal dispositions", e))?;
    }
    nix::sys::signal::sigprocmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&SigSet::empty()),
        None,
    )
    .map_err(|e| sandbox_err("unblock signals", e))?;
    nix::unistd::setsid().map_err(|e| sandbox_err("start a session", e))?;
    // SAFETY: TIOCSCTTY takes an integer argument (0: do not steal a terminal another session
    // controls), and fd 1 is the slice's terminal, set up by the spawn (fd 0 is too, unless
    // the agent's stdin is `/dev/null` or a pipe).
    if unsafe { nix::libc::ioctl(1, nix::libc::TIOCSCTTY as _, 0) } == -1 {
        return Err(sandbox_err(
            "take the slice's terminal as controlling terminal",
            nix::errno::Errno::last(),
        ));
    }
    // Nothing of the supervisor's reaches the agent: only the terminal.
    #[cfg(target_os = "linux")]
    // SAFETY: close_range(2) only closes descriptors; none of them is in use by this
    // single-threaded helper past this point.
    let closed = unsafe { nix::libc::syscall(nix::libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    #[cfg(not(target_os = "linux"))]
    let closed = -1;
    if closed != 0 {
        close_descriptors_above_two();
    }
    Ok(())
}

/// Closes every descriptor above 2 (a kernel without `close_range`, and macOS). `/dev/fd`
/// lists this process's descriptors on both platforms.
fn close_descriptors_above_two() {
    let open: Vec<i32> = std::fs::read_dir("/dev/fd")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in open.into_iter().filter(|fd| *fd > 2) {
        let _ = nix::unistd::close(fd);
    }
}
