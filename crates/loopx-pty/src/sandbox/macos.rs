//! macOS: the slice's rules as a Seatbelt profile, applied by `/usr/bin/sandbox-exec`.
//!
//! There are no namespaces and no cgroups: the slice's processes are its session (the sweep
//! finds escapees by their marker), its limits are per-process `setrlimit`s, and a supervisor
//! that dies leaves the slice to the next run's recovery. Type-checked on every CI run for
//! both Apple targets; not run on a Mac by this project (`docs/platforms.md`).

use std::convert::Infallible;
use std::ffi::CString;
use std::path::{Path, PathBuf};

use super::{Sandbox, SandboxSupport, exec};
use crate::errors::ExecError;

/// Where macOS keeps `sandbox-exec`. An absolute path: the slice's `PATH` is the agent's.
const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

pub(super) fn probe(_helper: &crate::ExecHelper) -> SandboxSupport {
    quick()
}

/// No namespaces to set up on macOS: the probe says so (`ENOSYS`).
pub(super) fn probe_here() -> ! {
    println!(
        "{}",
        super::NamespaceFailure {
            step: super::NamespaceStep::Unshare,
            errno: nix::errno::Errno::ENOSYS as i32,
        }
        .to_line()
    );
    std::process::exit(0)
}

pub(super) fn quick() -> SandboxSupport {
    SandboxSupport {
        namespaces: false,
        namespace_failure: None,
        landlock_abi: None,
        seatbelt: Path::new(SANDBOX_EXEC).is_file(),
    }
}

pub(super) fn run_sandboxed(sandbox: &Sandbox, argv: &[CString]) -> Result<Infallible, ExecError> {
    if sandbox.namespaces || sandbox.landlock || sandbox.cgroup.is_some() {
        return Err(ExecError::Sandbox {
            action: "contain the slice".to_owned(),
            reason: "namespaces, Landlock and cgroups are Linux's; macOS uses `--seatbelt`"
                .to_owned(),
        });
    }
    if !sandbox.seatbelt {
        return exec(argv);
    }
    // The slice's terminal is its output; its input may be a pipe or `/dev/null`.
    let terminal = nix::unistd::ttyname(std::io::stdout())
        .ok()
        .map(|t| resolve(&t));
    let profile = resolved(sandbox)
        .seatbelt_profile(terminal.as_deref())
        .map_err(|reason| ExecError::Sandbox {
            action: "write the slice's Seatbelt profile".to_owned(),
            reason,
        })?;
    let mut wrapped = vec![
        c(SANDBOX_EXEC)?,
        c("-p")?,
        CString::new(profile).map_err(|_| ExecError::Nul {
            arg: "the Seatbelt profile".to_owned(),
        })?,
        c("--")?,
    ];
    wrapped.extend(argv.iter().cloned());
    exec(&wrapped)
}

fn c(text: &str) -> Result<CString, ExecError> {
    CString::new(text).map_err(|_| ExecError::Nul {
        arg: text.to_owned(),
    })
}

/// The sandbox with every path resolved as Seatbelt sees it (`/tmp` is `/private/tmp`).
fn resolved(sandbox: &Sandbox) -> Sandbox {
    let all = |paths: &[PathBuf]| -> Vec<PathBuf> { paths.iter().map(|p| resolve(p)).collect() };
    Sandbox {
        hide: all(&sandbox.hide),
        keep: all(&sandbox.keep),
        read_only: all(&sandbox.read_only),
        private_room: sandbox.private_room.as_deref().map(resolve),
        writable: all(&sandbox.writable),
        ..sandbox.clone()
    }
}

/// `path` with its longest existing ancestor resolved and the rest appended: a path that does
/// not exist yet (a tmux socket made later) is still named as Seatbelt will see it.
fn resolve(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(real) = std::fs::canonicalize(ancestor) {
            let rest = path.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return if rest.as_os_str().is_empty() {
                real
            } else {
                real.join(rest)
            };
        }
    }
    path.to_owned()
}
