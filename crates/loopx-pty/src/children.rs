//! loopx's own short-lived children (git, a notification command) and the orphans it adopts.
//!
//! A supervisor is a child subreaper ([`become_child_subreaper`](crate::become_child_subreaper)),
//! so every orphan below it — a daemon an agent, git or a notification command left behind —
//! becomes its child, and stays a zombie until it is reaped. [`reap_adopted`] reaps them. It
//! must never take the exit status of a child whose owner waits for it (a slice's agent, a
//! `git` run by [`run_bounded`]), so every such child is registered here under the same lock
//! the reaper holds, from the moment it is forked until its owner has waited for it.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, getpid};

/// Children whose owner waits for them.
static OWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn owned() -> MutexGuard<'static, BTreeSet<i32>> {
    OWNED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Forks a child through `spawn`, which returns its pid, and registers it before the reaper can
/// look: the registry's lock is held throughout.
pub(crate) fn spawn_owned<T, E>(
    spawn: impl FnOnce() -> Result<(T, u32), E>,
) -> Result<(T, u32), E> {
    let mut owned = owned();
    let (child, pid) = spawn()?;
    owned.insert(i32::try_from(pid).unwrap_or(i32::MAX));
    Ok((child, pid))
}

/// The owner of `pid` has waited for it.
pub(crate) fn waited(pid: i32) {
    owned().remove(&pid);
}

/// Whether an owner waits for `pid` (nobody else may reap it).
pub(crate) fn is_owned(pid: i32) -> bool {
    owned().contains(&pid)
}

/// Reaps every zombie child of this process that no owner waits for (orphans it adopted as a
/// subreaper); returns their pids.
pub fn reap_adopted() -> Vec<u32> {
    let owned = owned();
    let me = getpid().as_raw();
    let mut reaped = Vec::new();
    for stat in loopx_os::processes() {
        if stat.ppid == me && stat.dead && !owned.contains(&stat.pid) {
            // Non-blocking and by pid: a zombie is reaped at once.
            if waitpid(Pid::from_raw(stat.pid), Some(WaitPidFlag::WNOHANG)).is_ok() {
                reaped.extend(u32::try_from(stat.pid).ok());
            }
        }
    }
    reaped
}

/// What [`run_bounded`] saw.
#[derive(Debug)]
pub struct Bounded {
    /// The exit status; `None` when the command ran out of time and was killed.
    pub status: Option<ExitStatus>,
    /// What it printed on stdout and stderr, when those were piped.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs `command` in a process group of its own for at most `timeout`, counted from the spawn:
/// `stdin` is written on a thread of its own (a command that never reads it cannot hold the
/// clock back), piped stdout and stderr are read as they come, and at the deadline the whole
/// group is killed. Set stdout and stderr on `command` (piped to capture them).
pub fn run_bounded(
    mut command: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> std::io::Result<Bounded> {
    let deadline = Instant::now() + timeout;
    command.process_group(0).stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let (mut child, pid) = spawn_owned(|| -> std::io::Result<_> {
        let child = command.spawn()?;
        let pid = child.id();
        Ok((child, pid))
    })?;
    let group = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A command that ignores its stdin closes the pipe early: not an error.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = child.stdout.take().map(read_all);
    let stderr = child.stderr.take().map(read_all);
    // Waited for on a thread of its own, so the command's end is seen the moment it comes
    // (polling would add its interval to every git of every slice).
    let (tx, exited) = mpsc::channel();
    std::thread::spawn(move || {
        let status = child.wait();
        waited(group.as_raw());
        let _ = tx.send(status);
    });
    let status = match exited.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(status) => Some(status?),
        Err(_) => {
            let _ = killpg(group, Signal::SIGKILL);
            // The waiter reaps it now; its status is the kill's.
            let _ = exited.recv();
            None
        }
    };
    Ok(Bounded {
        status,
        stdout: stdout.map(|p| p.take(deadline)).unwrap_or_default(),
        stderr: stderr.map(|p| p.take(deadline)).unwrap_or_default(),
    })
}

/// A pipe read to its end on a thread of its own.
struct Drained {
    bytes: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Drained {
    /// Everything read, once the pipe closed or the deadline passed: a leftover of the command
    /// may hold its pipe open, and what came before is the command's output all the same.
    fn take(self, deadline: Instant) -> Vec<u8> {
        let _ = self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        std::mem::take(&mut *self.bytes.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

fn read_all(mut pipe: impl Read + Send + 'static) -> Drained {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let (tx, done) = mpsc::channel();
    let sink = Arc::clone(&bytes);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => sink
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(&chunk[..n]),
            }
        }
        let _ = tx.send(());
    });
    Drained { bytes, done }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_time_is_killed_with_its_children() {
        let mut sh = Command::new("sh");
        sh.args(["-c", "sleep 30 & echo started; wait"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let started = Instant::now();
        let ran = run_bounded(sh, None, Duration::from_millis(300)).expect("runs");
        assert!(ran.status.is_none(), "timed out");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(ran.stdout, b"started\n");
    }

    #[test]
    fn output_before_a_leftover_holds_the_pipe_is_kept() {
        let mut sh = Command::new("sh");
        // Succeeds at once; its background child keeps stdout open past the deadline.
        sh.args(["-c", "echo status; (sleep 30 &) ; exit 0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let ran = run_bounded(sh, None, Duration::from_millis(500)).expect("runs");
        assert!(ran.status.is_some_and(|s| s.success()));
        assert_eq!(ran.stdout, b"status\n");
    }

    #[test]
    fn stdin_that_is_never_read_does_not_hold_back_the_deadline() {
        // More than a pipe holds, to a command that never reads it.
        let mut sleeper = Command::new("sleep");
        sleeper
            .arg("30")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let started = Instant::now();
        let ran = run_bounded(
            sleeper,
            Some(vec![b'x'; 1 << 20]),
            Duration::from_millis(300),
        )
        .expect("runs");
        assert!(ran.status.is_none());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn adopted_orphans_are_reaped_and_owned_children_are_not() {
        crate::become_child_subreaper().expect("subreaper");
        // The shell exits at once; its background child is adopted by this process and exits
        // a moment later, as a zombie nobody waits for.
        let status = Command::new("sh")
            .args(["-c", "sleep 0.1 & exit 0"])
            .status()
            .expect("sh");
        assert!(status.success());
        // An owned child that exits too: its owner (below) must still get its status.
        let mut owned_sleep = Command::new("sh");
        owned_sleep
            .args(["-c", "sleep 0.2; exit 3"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let owner = std::thread::spawn(move || {
            run_bounded(owned_sleep, None, Duration::from_secs(10)).expect("runs")
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut reaped = Vec::new();
        while reaped.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            reaped = reap_adopted();
        }
        assert!(!reaped.is_empty(), "the orphan was reaped");
        let ran = owner.join().expect("owner");
        assert_eq!(
            ran.status.and_then(|s| s.code()),
            Some(3),
            "the owner got its status"
        );
    }
}
