//! macOS: libproc, `sysctl` (`KERN_PROCARGS2`, `kern.bootsessionuuid`), `LOCAL_PEERPID`,
//! `PT_DENY_ATTACH`, `renamex_np`, `F_PREALLOCATE`.
//!
//! Type-checked on every CI run for both Apple targets; not run on a Mac by this project.

// libproc and sysctl have no safe wrappers; each call says why it is sound.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::Process;

pub(crate) const NAME: &str = "macos";

/// `SZOMB` in `<sys/proc.h>`: a zombie's `pbi_status`.
const ZOMBIE: u32 = libc::SZOMB;

pub(crate) fn process(pid: i32) -> Option<Process> {
    // SAFETY: proc_bsdinfo is plain data; zeroed is a valid value of it.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = i32::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: the buffer is a live proc_bsdinfo of exactly `size` bytes.
    let got =
        unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&raw mut info).cast(), size) };
    if got != size {
        return None;
    }
    // SAFETY: getsid only reads the process table.
    let session = unsafe { libc::getsid(pid) };
    Some(Process {
        pid,
        ppid: i32::try_from(info.pbi_ppid).unwrap_or(-1),
        pgrp: i32::try_from(info.pbi_pgid).unwrap_or(-1),
        session,
        dead: info.pbi_status == ZOMBIE,
        started: info
            .pbi_start_tvsec
            .saturating_mul(1_000_000)
            .saturating_add(info.pbi_start_tvusec),
    })
}

pub(crate) fn processes() -> Vec<Process> {
    // SAFETY: a null buffer of size 0 asks only for the number of processes.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    let Ok(count) = usize::try_from(count) else {
        return Vec::new();
    };
    // Room for processes started between the two calls.
    let mut pids = vec![0i32; count + 64];
    let Ok(bytes) = i32::try_from(pids.len() * std::mem::size_of::<i32>()) else {
        return Vec::new();
    };
    // SAFETY: the buffer is live and `bytes` long.
    let got = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    pids.truncate(usize::try_from(got).unwrap_or(0));
    pids.retain(|&p| p > 0);
    pids.sort_unstable();
    pids.dedup();
    pids.into_iter().filter_map(process).collect()
}

pub(crate) fn environ_has(pid: i32, entry: &[u8]) -> bool {
    let Some(buffer) = procargs(pid) else {
        return false;
    };
    crate::procargs::environment_of(&buffer).contains(&entry)
}

/// The `KERN_PROCARGS2` buffer of `pid`: readable for the user's own processes.
fn procargs(pid: i32) -> Option<Vec<u8>> {
    let mut argmax: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>();
    let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
    // SAFETY: reads one c_int into a live c_int of the given length.
    let ok = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            2,
            (&raw mut argmax).cast(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    // ARG_MAX is 1 MiB on current macOS; refuse anything larger than 4 MiB, as on Linux.
    let size = usize::try_from(argmax)
        .ok()
        .filter(|&n| ok == 0 && n > 0 && n <= 4 << 20)?;
    let mut buffer = vec![0u8; size];
    let mut len = buffer.len();
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    // SAFETY: the kernel writes at most `len` bytes into the live buffer and sets `len`.
    let ok = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buffer.as_mut_ptr().cast(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    (ok == 0).then(|| {
        buffer.truncate(len);
        buffer
    })
}

pub(crate) fn boot_id() -> String {
    let mut buffer = [0u8; 64];
    let mut len = buffer.len();
    // SAFETY: a NUL-terminated name, a live buffer and its length.
    let ok = unsafe {
        libc::sysctlbyname(
            c"kern.bootsessionuuid".as_ptr(),
            buffer.as_mut_ptr().cast(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if ok != 0 {
        return String::new();
    }
    let text = &buffer[..len.min(buffer.len())];
    String::from_utf8_lossy(text.split(|&b| b == 0).next().unwrap_or_default()).into_owned()
}

pub(crate) fn unix_peer_pid(socket: BorrowedFd<'_>) -> Option<i32> {
    let mut pid: libc::pid_t = 0;
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::pid_t>()).ok()?;
    // SAFETY: reads one pid_t into a live pid_t of the given length.
    let ok = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_LOCAL,
            libc::LOCAL_PEERPID,
            (&raw mut pid).cast(),
            &raw mut len,
        )
    };
    (ok == 0).then_some(pid)
}

pub(crate) fn adopt_orphans() -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "macOS has no child subreaper; launchd reaps orphans",
    ))
}

pub(crate) fn forbid_inspection() -> io::Result<()> {
    // SAFETY: PT_DENY_ATTACH takes no address or data.
    let ok = unsafe { libc::ptrace(libc::PT_DENY_ATTACH, 0, std::ptr::null_mut(), 0) };
    if ok == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub(crate) fn rename_exclusive(from: &Path, to: &Path) -> io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: two NUL-terminated paths.
    let ok = unsafe { libc::renamex_np(from.as_ptr(), to.as_ptr(), libc::RENAME_EXCL) };
    if ok == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub(crate) fn reserve(file: &File, len: u64) -> io::Result<()> {
    let mut store = libc::fstore_t {
        fst_flags: libc::F_ALLOCATEALL,
        fst_posmode: libc::F_PEOFPOSMODE,
        fst_offset: 0,
        fst_length: libc::off_t::try_from(len)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?,
        fst_bytesalloc: 0,
    };
    // SAFETY: F_PREALLOCATE reads and updates a live fstore_t; the size stays as it was.
    let ok = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_PREALLOCATE, &raw mut store) };
    if ok == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
