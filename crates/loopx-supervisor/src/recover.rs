//! Recovery (`docs/design/run-loop.md`, "Recovery"): slices recorded as running whose
//! supervisor is gone.
//!
//! Every slice records its supervisor's identity (pid, start time, boot id) in the same
//! transaction that records it as started. A slice whose supervisor no longer runs — killed,
//! crashed, or the machine rebooted — is an orphan: its agent may still run, re-parented to
//! init, writing to a terminal nobody reads. Recovery stops what is left of it (the agent
//! when pid *and* start time *and* boot id still match, plus every process carrying the
//! slice's marker), records the slice `interrupted`, releases the claim so the todo can be
//! taken again, and leaves evidence of what it did. The decision then sees an interrupted
//! last slice on the todo and makes the next one a repair slice.
//!
//! A slice owned by a live supervisor — another `loopx run` on the same project — is left
//! alone. A slice of this very process is an orphan too once no live worker owns it (its
//! guard could not record its end: see `slice/guard.rs`). Two supervisors recovering the same
//! orphan at once are harmless: the second one's interrupt is refused and it moves on.

use std::time::Duration;

use loopx_kernel::model::{ProcessIdentity, SliceRecord};
use loopx_kernel::store::{Interrupt, Interrupted};
use loopx_kernel::{Conflict, KernelError, Op, Project, Store, Timestamp};
use serde::Serialize;

use crate::errors::SupervisorError;
use crate::once::World;
use crate::slice::{LiveSlices, is_alive, marker};

/// How long an orphan's processes get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);
/// A slice recorded before supervisors were recorded counts as orphaned once it is this far
/// past its own wall-time limit (no live supervisor lets a slice run that long).
const UNOWNED_SLACK: Duration = Duration::from_secs(10 * 60);

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
    fn of(
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

/// Finds and closes every orphaned slice of `project`, as this process.
pub fn recover(project: &Project) -> Result<Vec<Recovered>, SupervisorError> {
    let wall = project.store_settings().clock.clone();
    recover_in(project, &World::real(Default::default(), wall))
}

/// Finds and closes every orphaned slice of `project`, as the supervisor `world.me`.
pub fn recover_in(project: &Project, world: &World) -> Result<Vec<Recovered>, SupervisorError> {
    let store = Store::open_read(project)?;
    // On a shared (PostgreSQL) store, peers on other hosts run slices too.
    let shared = store.is_postgres();
    let now = world.clock.now();
    let running = store.read(|s| {
        s.running_slices()?
            .into_iter()
            .map(|slice| {
                // The claim the slice works under, while it still holds it.
                let claim = match slice.todo {
                    Some(todo) => s
                        .todo(todo)?
                        .and_then(|t| t.lease)
                        .filter(|lease| Some(lease.epoch) == slice.epoch),
                    None => None,
                };
                Ok((s.slice_owner(slice.id)?, slice, claim))
            })
            .collect::<Result<Vec<_>, KernelError>>()
    })?;
    drop(store);
    let mut out = Vec::new();
    for (owner, slice, claim) in running {
        let why = match owner.as_ref() {
            Some(owner) if shared && owner.boot_id != world.me.boot_id => {
                another_hosts(owner, &slice, claim.as_ref(), now)
            }
            _ => orphaned(project, world, owner.as_ref(), &slice, now),
        };
        let Some(why) = why else {
            continue;
        };
        let another_host = owner
            .as_ref()
            .is_some_and(|o| shared && o.boot_id != world.me.boot_id);
        let closed = if another_host {
            close_lapsed(project, world, owner.as_ref(), &slice, &why)?
        } else {
            close(project, world, owner.as_ref(), &slice, &why)?
        };
        if let Some(recovered) = closed {
            out.push(recovered);
        }
    }
    Ok(out)
}

/// Why `slice` is an orphan, if it is: its supervisor is gone, or it is this very process and
/// no live worker owns the slice any more (its guard could not record the end).
fn orphaned(
    project: &Project,
    world: &World,
    owner: Option<&ProcessIdentity>,
    slice: &SliceRecord,
    now: Timestamp,
) -> Option<String> {
    match owner {
        Some(owner) if *owner == world.me => LiveSlices::is_abandoned(project, slice.id).then(|| {
            "its worker in this supervisor ended without recording it (the store could not be written)".to_owned()
        }),
        Some(owner) => (!(world.alive)(owner))
            .then(|| format!("its supervisor (pid {}) is gone", owner.pid)),
        None => {
            let limit = Duration::from_secs(slice.limit_secs) + UNOWNED_SLACK;
            (now >= slice.started_at.plus(limit)).then(|| {
                "its supervisor was not recorded and it is long past its limit".to_owned()
            })
        }
    }
}

/// Whether a slice of another host (or of this host before it rebooted: its boot differs too)
/// is an orphan. Its processes cannot be seen from here, so this never guesses from them: a
/// live supervisor renews its slice's claim every third of the lease, so the slice is gone
/// once the claim's lease has run out on the store's clock (the database's, which every host
/// keeps). A slice without a claim (a planning slice, or one whose todo was finished) is gone
/// once it is well past its own wall-time limit, which no live supervisor lets it exceed.
fn another_hosts(
    owner: &ProcessIdentity,
    slice: &SliceRecord,
    claim: Option<&loopx_kernel::model::Lease>,
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
        None => {
            let limit = Duration::from_secs(slice.limit_secs) + UNOWNED_SLACK;
            (now >= slice.started_at.plus(limit))
                .then(|| format!("its host ({host}…) did not record its end, long past its limit"))
        }
    }
}

/// Stops the orphan's processes and records it; `None` when a peer recovered it first.
fn close(
    project: &Project,
    world: &World,
    owner: Option<&ProcessIdentity>,
    slice: &SliceRecord,
    why: &str,
) -> Result<Option<Recovered>, SupervisorError> {
    let session = slice
        .process
        .as_ref()
        .filter(|agent| is_alive(agent))
        .map(|agent| agent.pid);
    let marker = marker(project.root(), slice.id);
    let swept = loopx_pty::stop_orphaned_slice(session, &marker, GRACE);
    // The slice's own helper stops it soon after its supervisor is gone, and says so in the
    // room it leaves.
    let stopped_itself = crate::slice::room_has(marker.as_str(), loopx_pty::SUPERVISOR_LOST_FILE);
    // Its private room (temp dir, report socket) and cgroup died with its supervisor's care.
    crate::slice::remove_room(marker.as_str());
    let output_bytes = slice
        .log
        .as_ref()
        .and_then(|log| std::fs::metadata(project.root().join(log)).ok())
        .map_or(0, |m| m.len());
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
    let interrupt = Interrupt {
        slice: slice.id,
        reason,
        exit: Some("supervisor gone".into()),
        output_bytes,
        // What the agent spent died with its supervisor.
        usage: None,
    };
    let closed = world.stores.with(project, |store| {
        store.run(interrupt, "loopx:recovery", world.clock.now())
    });
    match closed {
        Ok(Interrupted { released, .. }) => Ok(Some(Recovered::of(slice, owner, swept, released))),
        // A peer recovered it between our read and our write.
        Err(KernelError::Conflict(Conflict::SliceEnded { .. })) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Closes another host's slice, in one transaction with the check that its claim has lapsed
/// by the store's clock (a renewal that committed after recovery read the lease wins), and only
/// then stops whatever of it runs here (nothing, on a real other host).
fn close_lapsed(
    project: &Project,
    world: &World,
    owner: Option<&ProcessIdentity>,
    slice: &SliceRecord,
    why: &str,
) -> Result<Option<Recovered>, SupervisorError> {
    let interrupt = Interrupt {
        slice: slice.id,
        reason: why.to_owned(),
        exit: Some("host gone".into()),
        output_bytes: 0,
        usage: None,
    };
    let lapsed = vec![Op::ClaimLapsed { slice: slice.id }];
    let closed = world.stores.with(project, |store| {
        store.run_after(lapsed, interrupt, "loopx:recovery", world.clock.now())
    });
    let released = match closed {
        Ok(Interrupted { released, .. }) => released,
        // Renewed meanwhile, or a peer recovered it first.
        Err(KernelError::Conflict(Conflict::ClaimLive { .. } | Conflict::SliceEnded { .. })) => {
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let marker = marker(project.root(), slice.id);
    let swept = loopx_pty::stop_orphaned_slice(None, &marker, GRACE);
    crate::slice::remove_room(marker.as_str());
    Ok(Some(Recovered::of(slice, owner, swept, released)))
}

#[cfg(test)]
mod tests {
    use loopx_kernel::model::{PermissionLevel, SliceKind};
    use loopx_kernel::store::NewAgent;
    use loopx_kernel::store::{Applied, BeginSlice, NewGoal, NewSlice, QuotaRequest};

    use super::*;

    fn begun(project: &Project) -> loopx_kernel::SliceId {
        let store = Store::create(project, Timestamp::now(), "human:t").expect("store");
        let agent: loopx_kernel::AgentName = "a".parse().expect("name");
        store
            .apply(
                Op::GoalStart(NewGoal {
                    id: None,
                    objective: "Ship".into(),
                    scope: vec![],
                    permission: PermissionLevel::WorkspaceWrite,
                    share: 1.0,
                    isolation: loopx_kernel::model::Isolation::Shared,
                }),
                "human:t",
                Timestamp::now(),
            )
            .expect("goal");
        store
            .apply(
                Op::AgentAdd(NewAgent {
                    name: agent.clone(),
                    profile: "p".into(),
                    capabilities: vec![],
                    role: None,
                }),
                "human:t",
                Timestamp::now(),
            )
            .expect("agent");
        let begin = BeginSlice {
            slice: NewSlice {
                agent: agent.clone(),
                todo: None,
                epoch: None,
                kind: SliceKind::Plan,
                profile_hash: "h".into(),
                argv: vec![],
                limit_secs: 60,
                log: None,
                // This very process, as a supervisor whose worker is gone.
                owner: Some(loopx_domain::process::Host::default().identity(std::process::id())),
            },
            claim_ttl: Duration::from_secs(60),
            admit: QuotaRequest {
                agent,
                account: "acct".into(),
                pacing: None,
                windows: vec![],
                tokens: 0,
                cost_usd: 0.0,
                busy: None,
            },
        };
        match store
            .apply(Op::SliceBegin(begin), "agent:a", Timestamp::now())
            .expect("begins")
        {
            Applied::SliceBegun { slice, .. } => slice.id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_slice_of_this_process_that_no_worker_owns_is_closed() {
        let dir = tempfile::tempdir().expect("dir");
        let project = Project::create(dir.path()).expect("project");
        let slice = begun(&project);
        let recovered = recover(&project).expect("recovers");
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert_eq!(recovered[0].slice, slice.to_string());
        let record = Store::open_read(&project)
            .and_then(|s| s.read(|s| s.slice(slice)))
            .expect("read")
            .expect("the slice");
        assert_eq!(
            record.outcome,
            Some(loopx_kernel::model::Outcome::Interrupted)
        );
        assert!(recover(&project).expect("again").is_empty(), "once");
    }

    #[test]
    fn a_slice_a_live_worker_of_this_process_owns_is_left_alone() {
        let dir = tempfile::tempdir().expect("dir");
        let project = Project::create(dir.path()).expect("project");
        let slice = begun(&project);
        let guard = crate::slice::SliceGuard::new(
            &project,
            &crate::store_cache::StoreCache::default(),
            &loopx_kernel::SystemClock::shared(Default::default()),
            slice,
            crate::slice::Beginning::start(),
        );
        assert!(recover(&project).expect("recovers").is_empty());
        guard.disarm();
        assert_eq!(
            recover(&project).expect("recovers").len(),
            1,
            "now abandoned"
        );
    }

    fn record(limit_secs: u64, started_at: Timestamp) -> SliceRecord {
        SliceRecord {
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
