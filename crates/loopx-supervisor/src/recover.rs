//! Recovery (DESIGN §6): slices recorded as running whose supervisor is gone.
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
//! alone. Two supervisors recovering the same orphan at once are harmless: the second one's
//! slice end is refused and it moves on.

use std::time::Duration;

use loopx_kernel::model::{EvidenceKind, ProcessIdentity, SliceRecord, TodoState};
use loopx_kernel::store::{NewEvidence, SliceEnd};
use loopx_kernel::{Conflict, KernelError, Op, Project, Store, Timestamp};
use serde::Serialize;

use crate::errors::SupervisorError;
use crate::slice::{is_alive, marker, process_identity};

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

/// Finds and closes every orphaned slice of `project`.
pub fn recover(project: &Project) -> Result<Vec<Recovered>, SupervisorError> {
    let me = process_identity(std::process::id());
    let now = Timestamp::now();
    let running = Store::open_read(project)?.read(|s| {
        s.running_slices()?
            .into_iter()
            .map(|slice| Ok((s.slice_owner(slice.id)?, slice)))
            .collect::<Result<Vec<_>, KernelError>>()
    })?;
    let mut out = Vec::new();
    for (owner, slice) in running {
        if !is_orphan(owner.as_ref(), &slice, &me, now) {
            continue;
        }
        if let Some(recovered) = close(project, owner.as_ref(), &slice)? {
            out.push(recovered);
        }
    }
    Ok(out)
}

fn is_orphan(
    owner: Option<&ProcessIdentity>,
    slice: &SliceRecord,
    me: &ProcessIdentity,
    now: Timestamp,
) -> bool {
    match owner {
        Some(owner) => owner != me && !is_alive(owner),
        None => {
            let limit = Duration::from_secs(slice.limit_secs) + UNOWNED_SLACK;
            now >= slice.started_at.plus(limit)
        }
    }
}

/// Stops the orphan's processes and records it; `None` when a peer recovered it first.
fn close(
    project: &Project,
    owner: Option<&ProcessIdentity>,
    slice: &SliceRecord,
) -> Result<Option<Recovered>, SupervisorError> {
    let session = slice
        .process
        .as_ref()
        .filter(|agent| is_alive(agent))
        .map(|agent| agent.pid);
    let swept = loopx_pty::stop_orphaned_slice(session, &marker(project.root(), slice.id), GRACE);
    let store = Store::open(project)?;
    let holds_claim = match (slice.todo, slice.epoch) {
        (Some(todo), Some(epoch)) => store.read(|s| s.todo(todo))?.is_some_and(|t| {
            t.state == TodoState::Claimed
                && t.epoch == epoch
                && t.lease.as_ref().is_some_and(|l| l.agent == slice.agent)
        }),
        _ => false,
    };
    let output_bytes = slice
        .log
        .as_ref()
        .and_then(|log| std::fs::metadata(project.root().join(log)).ok())
        .map_or(0, |m| m.len());
    let who = owner.map_or_else(
        || "its supervisor was not recorded and it is long past its limit".to_owned(),
        |o| format!("its supervisor (pid {}) is gone", o.pid),
    );
    let mut summary = format!("slice {} was interrupted: {who}", slice.id);
    if !swept.found.is_empty() {
        summary.push_str(&format!(
            "; {} leftover process(es) were stopped",
            swept.found.len()
        ));
    }
    if !swept.survivors.is_empty() {
        summary.push_str(&format!(
            "; {} survived SIGKILL: {:?}",
            swept.survivors.len(),
            swept.survivors
        ));
    }
    let mut ops = vec![
        Op::SliceEnd {
            slice: slice.id,
            end: SliceEnd {
                outcome: "interrupted".into(),
                exit: Some("supervisor gone".into()),
                tokens: 0,
                cost_usd: 0.0,
                output_bytes,
            },
        },
        Op::EvidenceAdd(NewEvidence {
            kind: EvidenceKind::Slice,
            summary,
            detail: String::new(),
            files: Vec::new(),
            todo: slice.todo,
            slice: Some(slice.id),
            epoch: None,
        }),
    ];
    if holds_claim && let (Some(todo), Some(epoch)) = (slice.todo, slice.epoch) {
        ops.push(Op::TodoRelease {
            todo,
            agent: slice.agent.clone(),
            epoch,
        });
    }
    match store.apply_all(ops, "loopx:recovery", Timestamp::now()) {
        Ok(_) => Ok(Some(Recovered {
            slice: slice.id.to_string(),
            agent: slice.agent.to_string(),
            todo: slice.todo.map(|t| t.to_string()),
            supervisor_pid: owner.map(|o| o.pid),
            stopped: swept.found,
            survivors: swept.survivors,
            released: holds_claim,
        })),
        // A peer recovered it (or its claim moved) between our read and our write.
        Err(KernelError::Conflict(
            Conflict::SliceEnded { .. } | Conflict::StaleEpoch { .. } | Conflict::NotHolder { .. },
        )) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
