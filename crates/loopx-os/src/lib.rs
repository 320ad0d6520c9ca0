//! # Theory of operation
//!
//! loopx asks the operating system for a handful of things `std` does not offer, and this
//! crate is the one place that asks. Every other crate calls these functions and never names
//! a platform:
//!
//! - **The process table** ([`processes`], [`process`]): pid, parent, process group, session,
//!   whether it still runs code, and when it started. The slice's sweep finds what a slice
//!   left by session; the report channel walks parents to tell a slice's process from an
//!   intruder.
//! - **A slice's marker in a process's environment** ([`environ_has`]): how the sweep catches
//!   a process that left the slice's session with `setsid`.
//! - **A process's identity across a restart** ([`Process::started`] with [`boot_id`]): a pid
//!   alone may have been reused by the time a new supervisor looks.
//! - **Who is on the other end of a Unix socket** ([`unix_peer_pid`]): the kernel's answer,
//!   not the client's claim; and **whether a loopback TCP client is a process of a slice**
//!   ([`tcp_peer_in_slice`]), asked by the board and the Lark listener at accept. The latter
//!   reads `/proc` (`peer.rs`): on macOS, which has none, the answer is always `false`.
//! - **Keeping orphans** ([`adopt_orphans`]) and **keeping same-user processes out of loopx's
//!   memory** ([`forbid_inspection`]).
//! - **Files**: a rename that never replaces ([`rename_exclusive`]) and disk reserved ahead of
//!   a log that may meet a full disk ([`reserve`]).
//!
//! Each has one implementation per platform: `linux.rs` (procfs, `prctl`, `SO_PEERCRED`,
//! `renameat2`, `fallocate`) and `macos.rs` (libproc, `sysctl` `KERN_PROCARGS2` and
//! `kern.bootsessionuuid`, `LOCAL_PEERPID`, `PT_DENY_ATTACH`, `renamex_np`, `F_PREALLOCATE`).
//! The text formats both read are parsed by pure functions compiled on every platform
//! (`procfs.rs`, `procargs.rs`), so their tests run on every CI machine. Containment is larger
//! and has its own seam in `loopx-pty`'s sandbox module.
//!
//! The Linux implementation runs in every test of this repository; the macOS one is
//! type-checked for both Apple targets on every CI run but has not been run on a Mac by this
//! project (`docs/platforms.md`).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

// Each is read on one platform and tested on all.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod procargs;
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod procfs;

mod peer;
pub use peer::tcp_peer_in_slice;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
compile_error!("loopx runs on Linux and macOS; see docs/platforms.md");

/// The platform this build runs on, as `doctor` and the docs name it.
pub const PLATFORM: &str = imp::NAME;

/// One process as the process table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// Runs no code any more: a zombie waiting to be reaped.
    pub dead: bool,
    /// When it started, in the platform's unit (clock ticks since boot on Linux, microseconds
    /// since the epoch on macOS): with the pid and [`boot_id`], it names one process for good.
    /// 0 when it cannot be told.
    pub started: u64,
}

/// One process, or `None` when it is gone (or cannot be read).
pub fn process(pid: i32) -> Option<Process> {
    if pid <= 0 {
        return None;
    }
    imp::process(pid)
}

/// Every process this one may see, in pid order.
pub fn processes() -> Vec<Process> {
    imp::processes()
}

/// Whether process `pid`'s environment holds exactly the entry `entry` (`NAME=VALUE`).
/// Environments that cannot be read (another user's, a zombie's, a process gone) never match.
pub fn environ_has(pid: i32, entry: &[u8]) -> bool {
    pid > 0 && imp::environ_has(pid, entry)
}

/// This boot of this machine: changes at every reboot, so that a pid and start time recorded
/// before it match nothing after. Empty when the platform will not say.
pub fn boot_id() -> &'static str {
    static BOOT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BOOT.get_or_init(imp::boot_id)
}

/// The pid of the process on the other end of a connected Unix stream socket, as the kernel
/// recorded it when the connection was made.
pub fn unix_peer_pid(socket: impl AsFd) -> Option<i32> {
    imp::unix_peer_pid(socket.as_fd()).filter(|&pid| pid > 0)
}

/// Makes this process adopt its orphaned descendants, so that it can reap them. An error of
/// kind [`io::ErrorKind::Unsupported`] where the platform has no such thing (macOS: orphans go
/// to launchd, which reaps them).
pub fn adopt_orphans() -> io::Result<()> {
    imp::adopt_orphans()
}

/// Keeps other processes of the same user from reading this process's memory or tracing it.
/// Lasts until `execve`, so the programs loopx starts are unaffected.
pub fn forbid_inspection() -> io::Result<()> {
    imp::forbid_inspection()
}

/// Renames `from` to `to` unless `to` exists; then an error of kind
/// [`io::ErrorKind::AlreadyExists`] (or `DirectoryNotEmpty`), and nothing moved. A file system
/// without an exclusive rename gets the name claimed by an exclusive `mkdir` first and renamed
/// over (`from` must be a directory then).
pub fn rename_exclusive(from: &Path, to: &Path) -> io::Result<()> {
    match imp::rename_exclusive(from, to) {
        // EINVAL on Linux; ENOTSUP on macOS (SMB, exFAT; EOPNOTSUPP is the same number on
        // Linux, another on macOS); ENOSYS on old kernels.
        Err(e)
            if [libc::EINVAL, libc::ENOTSUP, libc::EOPNOTSUPP]
                .iter()
                .any(|&code| e.raw_os_error() == Some(code))
                || e.kind() == io::ErrorKind::Unsupported =>
        {
            std::fs::create_dir(to)?;
            std::fs::rename(from, to)
        }
        other => other,
    }
}

/// Reserves `len` bytes of disk for `file` without changing its size. Best effort: an error
/// when the disk is full already or the file system cannot reserve.
pub fn reserve(file: &File, len: u64) -> io::Result<()> {
    imp::reserve(file, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_is_in_the_table_with_a_start_time() {
        let me = i32::try_from(std::process::id()).expect("pid fits");
        let own = process(me).expect("own process");
        assert_eq!(own.pid, me);
        assert!(!own.dead);
        assert!(own.started > 0);
        assert_eq!(own.session, nix_free_getsid());
        assert!(processes().iter().any(|p| p.pid == me));
        assert_eq!(process(0), None);
        assert_eq!(process(-5), None);
    }

    fn nix_free_getsid() -> i32 {
        #[allow(unsafe_code)]
        // SAFETY: getsid(0) only reads this process's session id.
        unsafe {
            libc::getsid(0)
        }
    }

    #[test]
    fn a_child_has_us_as_parent_and_a_later_start() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let pid = i32::try_from(child.id()).expect("pid fits");
        let me = process(i32::try_from(std::process::id()).expect("pid")).expect("me");
        let seen = process(pid).expect("child");
        child.kill().expect("kill");
        child.wait().expect("reap");
        assert_eq!(seen.ppid, me.pid);
        assert!(seen.started >= me.started);
        assert_eq!(process(pid), None, "a reaped child is gone");
    }

    #[test]
    fn finds_a_marker_only_as_a_whole_entry() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("LOOPX_SLICE", "abc")
            .spawn()
            .expect("spawn sleep");
        let pid = i32::try_from(child.id()).expect("pid fits i32");
        // Until the child has exec'd, its environment is still the parent's copy.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut found = false;
        while !found && std::time::Instant::now() < deadline {
            found = environ_has(pid, b"LOOPX_SLICE=abc");
            std::thread::yield_now();
        }
        let prefix = environ_has(pid, b"LOOPX_SLICE=ab");
        child.kill().expect("kill sleep");
        child.wait().expect("reap sleep");
        assert!(found);
        assert!(!prefix);
    }

    #[test]
    fn the_boot_is_named_and_stable() {
        assert!(!boot_id().is_empty());
        assert_eq!(boot_id(), boot_id());
    }

    #[test]
    fn the_peer_of_a_socket_pair_is_this_process() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("pair");
        assert_eq!(
            unix_peer_pid(&a),
            Some(i32::try_from(std::process::id()).expect("pid"))
        );
    }

    #[test]
    fn an_exclusive_rename_never_replaces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (from, to) = (dir.path().join("staging"), dir.path().join("target"));
        std::fs::create_dir(&from).expect("staging");
        std::fs::create_dir(&to).expect("target");
        std::fs::write(to.join("kept"), "x").expect("file");
        let err = rename_exclusive(&from, &to).expect_err("target exists");
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty
            ),
            "{err:?}"
        );
        assert!(from.exists() && to.join("kept").exists());
        std::fs::remove_dir_all(&to).expect("clear");
        rename_exclusive(&from, &to).expect("renamed");
        assert!(!from.exists() && to.is_dir());
    }

    #[test]
    fn reserving_keeps_the_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = File::create(dir.path().join("log")).expect("file");
        // tmpfs and ext4 both reserve; the size a reader sees stays 0.
        reserve(&file, 1 << 20).expect("reserved");
        assert_eq!(file.metadata().expect("meta").len(), 0);
    }
}
