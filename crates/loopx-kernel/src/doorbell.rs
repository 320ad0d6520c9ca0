//! The doorbell: a mutating command wakes sleeping supervisors within a second.
//!
//! Each sleeper binds a Unix datagram socket in `.loopx/bells/`; every committed change sends one
//! byte to each of them. Ringing costs a directory read and a datagram per sleeper, is
//! best-effort, and never fails the command that rang: a sleeper also wakes on its own timeout.
//! Sockets of sleepers that died are removed by the next ring.
//!
//! A project whose store is on PostgreSQL has peers on other hosts: every commit there also
//! sends `NOTIFY` on the project's channel (`store/pg.rs`), and each listener keeps a thread
//! that `LISTEN`s on its own connection and passes each notification on to its socket. A lost
//! connection is retried every second; meanwhile sleepers wake on their timeouts as before.

use std::io::ErrorKind;
use std::os::unix::net::UnixDatagram;

use postgres::fallible_iterator::FallibleIterator;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::project::Project;

/// Wakes every listener of `project`.
pub fn ring(project: &Project) {
    let Ok(entries) = std::fs::read_dir(project.bells_dir()) else {
        return;
    };
    let Ok(sender) = UnixDatagram::unbound() else {
        return;
    };
    // Never wait: a sleeper that stopped reading (a suspended `log --follow`) has a full queue,
    // and a full queue already means it will wake. Blocking here would hang every writer.
    if sender.set_nonblocking(true).is_err() {
        return;
    }
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "sock") {
            continue;
        }
        if let Err(e) = sender.send_to(b"!", &path) {
            // Nobody listens there any more: the sleeper died without cleaning up.
            if e.kind() == ErrorKind::ConnectionRefused {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// A sleeper's end of the doorbell. Dropping it removes its socket.
#[derive(Debug)]
pub struct Listener {
    socket: Option<(UnixDatagram, PathBuf)>,
    /// Set on drop: the database listener thread (if any) ends.
    stop: Arc<AtomicBool>,
}

impl Listener {
    /// Starts listening. When the socket cannot be bound (a path too long for a Unix socket, a
    /// read-only directory), waiting degrades to sleeping for the timeout.
    pub fn bind(project: &Project) -> Listener {
        let path =
            project
                .bells_dir()
                .join(format!("{}-{}.sock", std::process::id(), fastrand::u32(..)));
        let socket = UnixDatagram::bind(&path).ok().map(|s| (s, path));
        let stop = Arc::new(AtomicBool::new(false));
        if let Some((_, path)) = &socket
            && let Ok(Some(url)) = crate::store::store_url(project)
        {
            listen_to_database(
                url,
                project.store_settings().clone(),
                path.clone(),
                stop.clone(),
            );
        }
        Listener { socket, stop }
    }

    /// Waits until a ring or `timeout`; returns whether it was a ring.
    pub fn wait(&self, timeout: Duration) -> bool {
        let Some((socket, _)) = &self.socket else {
            std::thread::sleep(timeout);
            return false;
        };
        let timeout = timeout.max(Duration::from_millis(1));
        if socket.set_read_timeout(Some(timeout)).is_err() {
            std::thread::sleep(timeout);
            return false;
        }
        let mut buf = [0u8; 64];
        let rang = socket.recv(&mut buf).is_ok();
        // Several rings may have queued up; one wake-up covers them all.
        let _ = socket.set_nonblocking(true);
        while socket.recv(&mut buf).is_ok() {}
        let _ = socket.set_nonblocking(false);
        rang
    }
}

/// Passes the project's database notifications on to the socket at `bell` until `stop`.
fn listen_to_database(
    url: String,
    settings: crate::StoreSettings,
    bell: PathBuf,
    stop: Arc<AtomicBool>,
) {
    let spawned = std::thread::Builder::new()
        .name("doorbell-listen".to_owned())
        .spawn(move || {
            let Ok(sender) = UnixDatagram::unbound() else {
                return;
            };
            let _ = sender.set_nonblocking(true);
            while !stop.load(Ordering::Relaxed) {
                let connected = crate::store::pg::listen(&url, &settings);
                let Ok((mut client, channel)) = connected else {
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                };
                let quoted = format!("\"{}\"", channel.replace('"', "\"\""));
                if client.batch_execute(&format!("LISTEN {quoted}")).is_err() {
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
                // Commits between the bind (or a lost connection) and this LISTEN rang nobody:
                // one ring now makes the sleeper look again.
                let _ = sender.send_to(b"!", &bell);
                while !stop.load(Ordering::Relaxed) {
                    let next = client
                        .notifications()
                        .timeout_iter(Duration::from_millis(500))
                        .next()
                        .map(|n| n.is_some());
                    match next {
                        Ok(true) => {
                            let _ = sender.send_to(b"!", &bell);
                        }
                        Ok(false) if client.is_closed() => break,
                        Ok(false) => {}
                        Err(_) => break,
                    }
                }
            }
        });
    drop(spawned);
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some((_, path)) = &self.socket {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_ring_wakes_a_listener_and_silence_times_out() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let project = Project::create(tmp.path()).expect("project");
        let listener = Listener::bind(&project);
        assert!(!listener.wait(Duration::from_millis(20)), "nothing rang");
        ring(&project);
        let started = Instant::now();
        assert!(listener.wait(Duration::from_secs(5)), "the ring arrives");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_listener_that_stopped_reading_never_blocks_a_ring() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let project = Project::create(tmp.path()).expect("project");
        let _asleep = Listener::bind(&project);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let ringer = project.clone();
        std::thread::spawn(move || {
            for _ in 0..100 {
                ring(&ringer);
            }
            let _ = done_tx.send(());
        });
        assert!(
            done_rx.recv_timeout(Duration::from_secs(5)).is_ok(),
            "100 rings into a full queue returned"
        );
    }

    #[test]
    fn ringing_removes_dead_sockets() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let project = Project::create(tmp.path()).expect("project");
        let stale = project.bells_dir().join("1-1.sock");
        drop(UnixDatagram::bind(&stale).expect("bind"));
        ring(&project);
        assert!(!stale.exists());
    }
}
