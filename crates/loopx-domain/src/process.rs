//! Which process is which, across restarts: a process's identity (pid, start time, this host
//! and boot), whether one still runs, and whether a slice's supervisor is gone. The kernel
//! records the identity of each slice's process and of its supervisor; recovery, `status` and
//! the supervisor all judge them here.

use loopx_kernel::model::ProcessIdentity;

/// This host as the slices it runs record it: the kernel's boot id, followed by `/NAME` when
/// the surface named a pretend host (`LOOPX_HOST_ID`, for drills of several hosts on one
/// machine): on a shared store the slices of another such "host" are judged as on a real one
/// (by their claims, not by the process table). The machine's boot id stays first, so two
/// machines given one name still differ.
#[derive(Debug, Clone)]
pub struct Host {
    boot: String,
}

impl Host {
    /// This machine, named `name` when it pretends to be a host of its own.
    pub fn named(name: Option<&str>) -> Host {
        let boot = loopx_os::boot_id();
        Host {
            boot: match name {
                Some(name) => format!("{boot}/{name}"),
                None => boot.to_owned(),
            },
        }
    }

    /// Enough to recognise the process `pid` after a restart: pid, start time and this host's
    /// boot. A process that already exited gets start time 0, which matches no live process.
    pub fn identity(&self, pid: u32) -> ProcessIdentity {
        let start_ticks = i32::try_from(pid)
            .ok()
            .and_then(loopx_os::process)
            .map_or(0, |p| p.started);
        ProcessIdentity {
            pid,
            start_ticks,
            boot_id: self.boot.clone(),
        }
    }
}

impl Default for Host {
    /// This machine under its own name.
    fn default() -> Self {
        Host::named(None)
    }
}

/// The machine's part of a recorded boot id, without a pretend host's name.
fn machine(boot: &str) -> &str {
    boot.split('/').next().unwrap_or("")
}

/// Whether the process `id` names still runs: same pid, start time and boot, and not a zombie.
/// A reused pid has another start time; a reboot has another boot id.
pub fn is_alive(id: &ProcessIdentity) -> bool {
    let Some(now) = i32::try_from(id.pid).ok().and_then(loopx_os::process) else {
        return false;
    };
    // The machine's boot, without a pretend host's name (`LOOPX_HOST_ID`): a process of this
    // machine is in the process table whichever name its supervisor gave itself.
    !now.dead
        && id.start_ticks != 0
        && now.started == id.start_ticks
        && loopx_os::boot_id() == machine(&id.boot_id)
}

/// Whether the supervisor recorded as running a slice is gone: a process of this machine that
/// no longer runs (a `loopx run` killed with `kill -9`). A supervisor of another host cannot be
/// seen from here: `false`. Read-only: the next `loopx run` recovers the slice.
pub fn owner_gone(owner: &ProcessIdentity) -> bool {
    machine(&owner.boot_id) == loopx_os::boot_id() && !is_alive(owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_has_an_identity() {
        let me = Host::default().identity(std::process::id());
        assert!(me.start_ticks > 0);
        assert!(!me.boot_id.is_empty());
    }

    #[test]
    fn a_process_is_alive_only_with_its_own_start_time() {
        let me = Host::named(Some("drill")).identity(std::process::id());
        assert!(me.boot_id.ends_with("/drill"));
        assert!(is_alive(&me), "whatever name the host gave itself");
        let reused = ProcessIdentity {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert!(!is_alive(&reused), "same pid, another start time");
        let rebooted = ProcessIdentity {
            boot_id: "another boot".into(),
            ..me
        };
        assert!(!is_alive(&rebooted));
    }
}
