//! Recovery's rules (`docs/design/run-loop.md`, "Recovery"): which slice recorded as running is
//! an orphan, why, and what its record says once closed. Stopping what is left of it and
//! writing that record is the supervisor's.
//!
//! A slice whose supervisor no longer runs — killed, crashed, or the machine rebooted — is an
//! orphan; so is a slice of the asking supervisor itself once no live worker of it owns the
//! slice (its guard could not record the end). A slice owned by a live supervisor is left
//! alone. On a shared store a slice of another host is judged by its claim, never by the
//! process table here (see [`orphan`]).

use std::time::Duration;

use loopx_kernel::Timestamp;
use loopx_kernel::model::{Lease, ProcessIdentity, SliceRecord};
use loopx_kernel::store::Interrupt;
use serde::Serialize;

/// A slice recorded before supervisors were recorded counts as orphaned once it is this far
/// past its own wall-time limit (no live supervisor lets a slice run that long).
pub const UNOWNED_SLACK: Duration = Duration::from_secs(10 * 60);

/// One orphaned slice, and what recovery did about it.
#[derive(Debug, Clone, Serialize)]
pub struct Recovered {
    pub slice: String,
    pub agent: String,
    pub todo: Option<String>,
    /// The pid of the supervisor that ran it, when recorded.
    pub supervisor_pid: Option<u32>,
    /// Processes of the slice that were still running and were stopped.
    pub stopped: Vec<u32>,
    /// Processes that survived SIGKILL (normally none).
    pub survivors: Vec<u32>,
    /// Whether the todo's claim was released.
    pub released: bool,
}

impl Recovered {
    pub fn of(
        slice: &SliceRecord,
        owner: Option<&ProcessIdentity>,
        swept: loopx_pty::OrphanSweep,
        released: bool,
    ) -> Recovered {
        Recovered {
            slice: slice.id.to_string(),
            agent: slice.agent.to_string(),
            todo: slice.todo.map(|t| t.to_string()),
            supervisor_pid: owner.map(|o| o.pid),
            stopped: swept.found,
            survivors: swept.survivors,
            released,
        }
    }
}

/// How the supervisor recovering sees the world.
pub struct Seer<'a> {
    /// The recovering supervisor.
    pub me: &'a ProcessIdentity,
    /// The store is shared with other hosts (PostgreSQL).
    pub shared: bool,
    pub now: Timestamp,
    /// Whether a process of this host still runs.
    pub alive: &'a dyn Fn(&ProcessIdentity) -> bool,
    /// Whether no live worker of this very process owns the slice any more.
    pub abandoned: &'a dyn Fn(&SliceRecord) -> bool,
}

impl std::fmt::Debug for Seer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seer")
            .field("me", self.me)
            .field("shared", &self.shared)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

/// An orphan, and why it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub why: String,
    /// Its supervisor ran on another host: it is closed by its lapsed claim, and nothing of it
    /// runs here to stop.
    pub another_host: bool,
}

/// Whether `slice`, owned by `owner` (when recorded) and working under `claim` (while it holds
/// it), is an orphan.
pub fn orphan(
    seer: &Seer<'_>,
    owner: Option<&ProcessIdentity>,
    slice: &SliceRecord,
    claim: Option<&Lease>,
) -> Option<Orphan> {
    let another_host = owner.is_some_and(|o| seer.shared && o.boot_id != seer.me.boot_id);
    let why = match owner {
        Some(owner) if another_host => another_hosts(owner, slice, claim, seer.now),
        Some(owner) if owner == seer.me => (seer.abandoned)(slice).then(|| {
            "its worker in this supervisor ended without recording it (the store could not be written)".to_owned()
        }),
        Some(owner) => (!(seer.alive)(owner))
            .then(|| format!("its supervisor (pid {}) is gone", owner.pid)),
        None => past_its_limit(slice, seer.now)
            .then(|| "its supervisor was not recorded and it is long past its limit".to_owned()),
    }?;
    Some(Orphan { why, another_host })
}

/// Whether `slice` is well past its own wall-time limit, which no live supervisor lets it
/// exceed.
fn past_its_limit(slice: &SliceRecord, now: Timestamp) -> bool {
    let limit = Duration::from_secs(slice.limit_secs) + UNOWNED_SLACK;
    now >= slice.started_at.plus(limit)
}

/// Whether a slice of another host (or of this host before it rebooted: its boot differs too)
/// is an orphan. Its processes cannot be seen from here, so this never guesses from them: a
/// live supervisor renews its slice's claim every third of the lease, so the slice is gone
/// once the claim's lease has run out on the store's clock (the database's, which every host
/// keeps). A slice without a claim (a planning slice, or one whose todo was finished) is gone
/// once it is well past its own wall-time limit.
fn another_hosts(
    owner: &ProcessIdentity,
    slice: &SliceRecord,
    claim: Option<&Lease>,
    now: Timestamp,
) -> Option<String> {
    let host: String = owner.boot_id.chars().take(8).collect();
    match claim {
        Some(lease) => (!lease.is_live(now)).then(|| {
            format!(
                "its host ({host}…) stopped renewing its claim: the lease ended at {}",
                lease.expires_at
            )
        }),
        None => past_its_limit(slice, now)
            .then(|| format!("its host ({host}…) did not record its end, long past its limit")),
    }
}

/// The record that closes an orphan of this host: why, what was left of it, what it printed.
/// `stopped_itself`: its own helper stopped it when its supervisor was lost.
pub fn interrupt(
    slice: &SliceRecord,
    why: &str,
    stopped_itself: bool,
    swept: &loopx_pty::OrphanSweep,
    output_bytes: u64,
) -> Interrupt {
    let mut reason = why.to_owned();
    if stopped_itself {
        reason.push_str("; the slice stopped itself when its supervisor was lost");
    }
    if !swept.found.is_empty() {
        reason.push_str(&format!(
            "; {} leftover process(es) were stopped",
            swept.found.len()
        ));
    }
    if !swept.survivors.is_empty() {
        reason.push_str(&format!(
            "; {} survived SIGKILL: {:?}",
            swept.survivors.len(),
            swept.survivors
        ));
    }
    Interrupt {
        slice: slice.id,
        reason,
        exit: Some("supervisor gone".into()),
        output_bytes,
        // What the agent spent died with its supervisor.
        usage: None,
    }
}

/// The record that closes an orphan of another host, whose output is not here to measure.
pub fn interrupt_lapsed(slice: &SliceRecord, why: &str) -> Interrupt {
    Interrupt {
        slice: slice.id,
        reason: why.to_owned(),
        exit: Some("host gone".into()),
        output_bytes: 0,
        usage: None,
    }
}

#[cfg(test)]
mod tests {
    use loopx_kernel::model::SliceKind;

    use super::*;

    fn record(limit_secs: u64, started_at: Timestamp) -> SliceRecord {
        SliceRecord {
            goal: None,
            id: loopx_kernel::SliceId(7),
            agent: "a".parse().expect("name"),
            todo: Some(loopx_kernel::TodoId(1)),
            epoch: Some(3),
            kind: SliceKind::Work,
            profile_hash: String::new(),
            argv: vec![],
            process: None,
            started_at,
            limit_secs,
            ended_at: None,
            outcome: None,
            exit: None,
            tokens: 0,
            cost_usd: 0.0,
            output_bytes: 0,
            log: None,
            leftovers: 0,
            containment: String::new(),
            log_sha256: String::new(),
            seen: None,
        }
    }

    #[test]
    fn another_host_s_slice_is_closed_by_its_lapsed_lease_never_before() {
        let owner = ProcessIdentity {
            pid: 1,
            start_ticks: 1,
            boot_id: "host:elsewhere".into(),
        };
        let t0 = Timestamp(1_790_000_000_000);
        let slice = record(600, t0);
        let lease = loopx_kernel::model::Lease {
            agent: "a".parse().expect("name"),
            epoch: 3,
            granted_at: t0,
            expires_at: t0.plus(Duration::from_secs(240)),
        };
        // Renewed and live: left alone, whatever `/proc` here says about pid 1.
        let live = t0.plus(Duration::from_secs(239));
        assert_eq!(another_hosts(&owner, &slice, Some(&lease), live), None);
        // Not renewed within the lease: closed, and the reason says so.
        let lapsed = t0.plus(Duration::from_secs(240));
        let why = another_hosts(&owner, &slice, Some(&lease), lapsed).expect("closed");
        assert!(why.contains("stopped renewing its claim"), "{why}");
        // Without a claim (a planning slice): only once well past its own limit.
        let within = t0.plus(Duration::from_secs(600) + UNOWNED_SLACK - Duration::from_secs(1));
        assert_eq!(another_hosts(&owner, &slice, None, within), None);
        let past = t0.plus(Duration::from_secs(600) + UNOWNED_SLACK);
        assert!(another_hosts(&owner, &slice, None, past).is_some());
    }
}
