//! Linux: procfs, `prctl`, `SO_PEERCRED`, `renameat2`, `fallocate`.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::BorrowedFd;
use std::path::Path;

use crate::Process;

pub(crate) const NAME: &str = "linux";

pub(crate) fn process(pid: i32) -> Option<Process> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    crate::procfs::parse_stat(&text)
}

pub(crate) fn processes() -> Vec<Process> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let pids: BTreeSet<i32> = dir
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.into_iter().filter_map(process).collect()
}

pub(crate) fn environ_has(pid: i32, entry: &[u8]) -> bool {
    let Ok(mut file) = File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    // Environments are bounded by ARG_MAX-like limits in practice; cap the read anyway so a
    // hostile process cannot make loopx allocate without bound.
    let mut environ = Vec::new();
    if file
        .by_ref()
        .take(4 << 20)
        .read_to_end(&mut environ)
        .is_err()
    {
        return false;
    }
    environ.split(|&b| b == 0).any(|e| e == entry)
}

pub(crate) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

pub(crate) fn unix_peer_pid(socket: BorrowedFd<'_>) -> Option<i32> {
    nix::sys::socket::getsockopt(&socket, nix::sys::socket::sockopt::PeerCredentials)
        .ok()
        .map(|c| c.pid())
}

pub(crate) fn adopt_orphans() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)
}

pub(crate) fn forbid_inspection() -> io::Result<()> {
    // Not dumpable: other processes of this user cannot ptrace this one or read its memory and
    // `/proc/<pid>/environ`. Reset by `execve`.
    nix::sys::prctl::set_dumpable(false).map_err(io::Error::from)
}

pub(crate) fn rename_exclusive(from: &Path, to: &Path) -> io::Result<()> {
    nix::fcntl::renameat2(
        nix::fcntl::AT_FDCWD,
        from,
        nix::fcntl::AT_FDCWD,
        to,
        nix::fcntl::RenameFlags::RENAME_NOREPLACE,
    )
    .map_err(io::Error::from)
}

pub(crate) fn reserve(file: &File, len: u64) -> io::Result<()> {
    let len =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    nix::fcntl::fallocate(
        file,
        nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE,
        0,
        len,
    )
    .map_err(io::Error::from)
}
