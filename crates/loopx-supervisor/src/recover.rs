//! Recovery (`docs/design/run-loop.md`, "Recovery"): slices recorded as running whose
//! supervisor is gone. Which are orphans, and why, is `loopx_domain::recovery`'s rule.
//!
//! An orphan's agent may still run, re-parented to init, writing to a terminal nobody reads.
//! Recovery stops what is left of it (the agent when pid *and* start time *and* boot id still
//! match, plus every process carrying the slice's marker), records the slice `interrupted`,
//! releases the claim so the todo can be taken again, and leaves evidence of what it did. The
//! decision then sees an interrupted last slice on the todo and makes the next one a repair
//! slice. Two supervisors recovering the same orphan at once are harmless: the second one's
//! interrupt is refused and it moves on.

use std::time::Duration;

pub use loopx_domain::recovery::Recovered;
use loopx_domain::recovery::{Orphan, Seer};
use loopx_kernel::model::{ProcessIdentity, SliceRecord};
use loopx_kernel::store::Interrupted;
use loopx_kernel::{Conflict, KernelError, Op, Project, Store};

use crate::errors::SupervisorError;
use crate::once::World;
use crate::slice::{LiveSlices, is_alive, marker};

/// How long an orphan's processes get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// Finds and closes every orphaned slice of `project`, as this process.
pub fn recover(project: &Project) -> Result<Vec<Recovered>, SupervisorError> {
    let wall = project.store_settings().clock.clone();
    recover_in(project, &World::real(Default::default(), wall))
}

/// Finds and closes every orphaned slice of `project`, as the supervisor `world.me`; which
/// are orphans is `loopx_domain::recovery`'s rule.
pub fn recover_in(project: &Project, world: &World) -> Result<Vec<Recovered>, SupervisorError> {
    let store = Store::open_read(project)?;
    // On a shared (PostgreSQL) store, peers on other hosts run slices too.
    let shared = store.is_postgres();
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
    let seer = Seer {
        me: &world.me,
        shared,
        now: world.clock.now(),
        alive: &*world.alive,
        abandoned: &|slice: &SliceRecord| LiveSlices::is_abandoned(project, slice.id),
    };
    let mut out = Vec::new();
    for (owner, slice, claim) in running {
        let Some(orphan) =
            loopx_domain::recovery::orphan(&seer, owner.as_ref(), &slice, claim.as_ref())
        else {
            continue;
        };
        let closed = if orphan.another_host {
            close_lapsed(project, world, owner.as_ref(), &slice, &orphan)?
        } else {
            close(project, world, owner.as_ref(), &slice, &orphan)?
        };
        if let Some(recovered) = closed {
            out.push(recovered);
        }
    }
    Ok(out)
}

/// Stops the orphan's processes and records it; `None` when a peer recovered it first.
fn close(
    project: &Project,
    world: &World,
    owner: Option<&ProcessIdentity>,
    slice: &SliceRecord,
    orphan: &Orphan,
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
    let interrupt =
        loopx_domain::recovery::interrupt(slice, &orphan.why, stopped_itself, &swept, output_bytes);
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
    orphan: &Orphan,
) -> Result<Option<Recovered>, SupervisorError> {
    let interrupt = loopx_domain::recovery::interrupt_lapsed(slice, &orphan.why);
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

    use loopx_kernel::Timestamp;

    use super::*;

    fn begun(project: &Project) -> loopx_kernel::SliceId {
        let store = Store::create(project, Timestamp::now(), "human:t").expect("store");
        let agent: loopx_kernel::AgentName = "a".parse().expect("name");
        store
            .apply(
                Op::GoalStart(NewGoal {
                    priority: 0,
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
                goal: None,
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
                account: "acct".into(),
                ..loopx_domain::writeback::unpaced_quota(&agent)
            },
            messages: vec![],
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
}
