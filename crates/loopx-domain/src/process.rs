//! Which process is which, across restarts: a process's identity (pid, start time, this host
//! and boot), whether one still runs, and whether a slice's supervisor is gone. The kernel
//! records the identity of each slice's process and of its supervisor; recovery, `status` and
//! the supervisor all judge them here.

use loopx_kernel::model::ProcessIdentity;

/// Enough to recognise the process after a restart: pid, start time and the boot id
/// (`loopx-os`). A process that already exited gets start time 0, which matches no live process.
pub fn process_identity(pid: u32) -> ProcessIdentity {
    let start_ticks = i32::try_from(pid)
        .ok()
        .and_then(loopx_os::process)
        .map_or(0, |p| p.started);
    ProcessIdentity {
        pid,
        start_ticks,
        boot_id: host_boot().to_owned(),
    }
}

static HOST_NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names this process's pretend host (the surface's `LOOPX_HOST_ID`), once, before any slice:
/// for drills of several hosts on one machine.
pub fn set_host_name(name: String) {
    let _ = HOST_NAME.set(name);
}

/// This host and boot: the kernel's boot id, followed by `/NAME` when [`set_host_name`] named a
/// pretend host: on a shared store the slices of another such "host" are judged as on a real
/// one (by their claims, not by the process table). The machine's boot id stays first, so two machines
/// given one name still differ.
fn host_boot() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let boot = loopx_os::boot_id();
        match HOST_NAME.get() {
            Some(name) => format!("{boot}/{name}"),
            None => boot.to_owned(),
        }
    })
}

/// Whether the process `id` names still runs: same pid, start time and boot, and not a zombie.
/// A reused pid has another start time; a reboot has another boot id.
pub fn is_alive(id: &ProcessIdentity) -> bool {
    let Some(now) = i32::try_from(id.pid).ok().and_then(loopx_os::process) else {
        return false;
    };
    // The machine's boot, without a pretend host's name (`LOOPX_HOST_ID`): a process of this
    // machine is in the process table whichever name its supervisor gave itself.
    let boot = |b: &str| b.split('/').next().unwrap_or("").to_owned();
    !now.dead
        && id.start_ticks != 0
        && now.started == id.start_ticks
        && boot(host_boot()) == boot(&id.boot_id)
}

/// Whether the supervisor recorded as running a slice is gone: a process of this machine that
/// no longer runs (a `loopx run` killed with `kill -9`). A supervisor of another host cannot be
/// seen from here: `false`. Read-only: the next `loopx run` recovers the slice.
pub fn owner_gone(owner: &ProcessIdentity) -> bool {
    let me = process_identity(std::process::id());
    let boot = |b: &str| b.split('/').next().unwrap_or("").to_owned();
    boot(&owner.boot_id) == boot(&me.boot_id) && !is_alive(owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_has_an_identity() {
        let me = process_identity(std::process::id());
        assert!(me.start_ticks > 0);
        assert!(!me.boot_id.is_empty());
    }

    #[test]
    fn a_process_is_alive_only_with_its_own_start_time() {
        let me = process_identity(std::process::id());
        assert!(is_alive(&me));
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
