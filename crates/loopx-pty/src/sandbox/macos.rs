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

pub(super) fn probe() -> SandboxSupport {
    quick()
}

pub(super) fn quick() -> SandboxSupport {
    SandboxSupport {
        namespaces: false,
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
    let profile = resolved(sandbox)
        .seatbelt_profile()
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

/// The sandbox with every path resolved as Seatbelt sees it (`/tmp` is `/private/tmp`), and
/// the slice's own terminal added to what it may write.
fn resolved(sandbox: &Sandbox) -> Sandbox {
    let real = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect()
    };
    let mut writable = real(&sandbox.writable);
    if let Ok(tty) = nix::unistd::ttyname(std::io::stdin()) {
        writable.push(tty);
    }
    Sandbox {
        hide: real(&sandbox.hide),
        keep: real(&sandbox.keep),
        read_only: real(&sandbox.read_only),
        private_room: sandbox
            .private_room
            .as_ref()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone())),
        writable,
        ..sandbox.clone()
    }
}
