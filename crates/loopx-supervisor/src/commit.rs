//! Applying a finished slice's writeback, and the summary of the slice it yields.

use loopx_kernel::model::TodoState;
use loopx_kernel::store::Applied;
use loopx_kernel::{Conflict, KernelError, Op, Project, Store, Timestamp};
use serde::Serialize;

use crate::errors::SupervisorError;
use crate::prompt::kind_name;
use crate::writeback::{Finished, slice_end, writeback};

/// One slice, as `loopx run --once --json` shows it (documented in `docs/cli.md`).
#[derive(Debug, Clone, Serialize)]
pub struct SliceSummary {
    pub id: String,
    pub agent: String,
    pub kind: &'static str,
    pub todo: Option<String>,
    pub epoch: Option<u64>,
    pub outcome: String,
    pub reason: String,
    pub exit: Option<String>,
    pub pid: Option<u32>,
    pub started_at: Timestamp,
    pub ended_at: Timestamp,
    pub duration_ms: u64,
    /// The wall-time limit it ran under, in seconds (a probe's is shorter than its profile's).
    pub limit_secs: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    pub output_bytes: u64,
    pub log: String,
    /// `done`, `progress`, `blocked`, `malformed` or `none`.
    pub report: &'static str,
    /// `done` or `released` for a todo's slice; `None` for a planning slice.
    pub todo_state: Option<&'static str>,
    pub new_todos: Vec<String>,
    /// The gate the agent's question opened.
    pub gate: Option<String>,
    pub hold_until: Option<Timestamp>,
    /// A planning slice declared the goal met, and the goal is now done.
    pub goal_done: bool,
    /// Files the slice changed (project-relative); `None` when they could not be checked.
    pub changed_files: Option<Vec<String>>,
    /// Changed files outside the goal's scope, or in `.loopx/`.
    pub violations: Vec<String>,
    /// The gate asking a person about the violations.
    pub violation_gate: Option<String>,
    /// `applied`; `stale_epoch` when the claim moved on and only the end (and the quota
    /// usage) was recorded; `refused` when the kernel refused the batch for another reason.
    pub writeback: &'static str,
}

/// Applies the writeback batch; on a stale epoch, only what does not depend on the lease.
pub(crate) fn write_back(
    project: &Project,
    actor: &str,
    f: &Finished<'_>,
    pid: Option<u32>,
) -> Result<SliceSummary, SupervisorError> {
    let store = Store::open(project)?;
    let wb = writeback(f, done_by_agent(&store, f)?);
    let ops = wb.ops.clone();
    let (applied, result) = match store.apply_all(ops.clone(), actor, f.ended_at) {
        Ok(applied) => (applied, "applied"),
        Err(e) => {
            let stale = matches!(
                e,
                KernelError::Conflict(Conflict::StaleEpoch { .. } | Conflict::NotHolder { .. })
            );
            tracing::warn!(slice = %f.slice, error = %e, "the slice's writeback was refused");
            // The usage was real whoever holds the lease now: charge it, and keep a vendor hold.
            let fallback: Vec<Op> = std::iter::once(slice_end(f))
                .chain(
                    ops.iter()
                        .filter(|op| matches!(op, Op::QuotaCharge(_) | Op::QuotaHold { .. }))
                        .cloned(),
                )
                .collect();
            store.apply_all(fallback, actor, f.ended_at)?;
            (Vec::new(), if stale { "stale_epoch" } else { "refused" })
        }
    };
    let applied_ok = result == "applied";
    let mut new_todos = Vec::new();
    let mut gate = None;
    let mut violation_gate = None;
    for (op, record) in ops.iter().zip(&applied) {
        match (op, record) {
            (Op::TodoAdd(_), Applied::Todo(t)) => new_todos.push(t.id.to_string()),
            (Op::GateAsk(asked), Applied::Gate(g)) if wb.gate.as_ref() == Some(&asked.question) => {
                gate = Some(g.id.to_string());
            }
            (Op::GateAsk(_), Applied::Gate(g)) => violation_gate = Some(g.id.to_string()),
            _ => {}
        }
    }
    let todo_state = match (f.todo, applied_ok, wb.todo_done) {
        (None, _, _) => None,
        (Some(_), true, true) => Some("done"),
        (Some(_), true, false) => Some("released"),
        (Some(_), false, _) => Some("unchanged"),
    };
    Ok(SliceSummary {
        id: f.slice.to_string(),
        agent: f.agent.to_string(),
        kind: kind_name(f.kind),
        todo: f.todo.map(|t| t.to_string()),
        epoch: f.epoch,
        outcome: f.outcome.to_owned(),
        reason: f.reason.to_owned(),
        exit: f.exit.clone(),
        pid,
        started_at: f.started_at,
        ended_at: f.ended_at,
        duration_ms: f.ended_at.0.saturating_sub(f.started_at.0),
        limit_secs: 0,
        tokens: f.tokens,
        cost_usd: f.cost_usd,
        output_bytes: f.output_bytes,
        log: f.log.to_owned(),
        report: wb.report,
        todo_state,
        new_todos,
        gate,
        hold_until: wb.hold_until,
        goal_done: wb.goal_done && applied_ok,
        changed_files: f
            .changes
            .unchecked
            .is_none()
            .then(|| f.changes.files.clone()),
        violations: wb.violations,
        violation_gate,
        writeback: result,
    })
}

/// True when the agent marked the slice's todo done itself (`loopx report done`), under the
/// slice's epoch: a peer that reclaimed the todo would have moved the epoch on.
fn done_by_agent(store: &Store, f: &Finished<'_>) -> Result<bool, SupervisorError> {
    let (Some(id), Some(epoch)) = (f.todo, f.epoch) else {
        return Ok(false);
    };
    let todo = store.read(|s| s.todo(id))?;
    Ok(todo.is_some_and(|t| t.state == TodoState::Done && t.epoch == epoch))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loopx_kernel::model::SliceKind;
    use loopx_kernel::store::NewSlice;

    use super::*;

    use loopx_kernel::model::PermissionLevel;
    use loopx_kernel::{AgentName, Project};

    const T0: Timestamp = Timestamp(1_790_000_000_000);

    fn apply(store: &Store, op: Op) -> Applied {
        store.apply(op, "human:tester", T0).expect("applies")
    }

    #[test]
    fn a_writeback_after_the_claim_moved_on_records_only_the_end_and_the_usage() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = Project::create(dir.path()).expect("project");
        let store = Store::create(&project, T0, "human:tester").expect("store");
        let agent: AgentName = "exec".parse().expect("a name");
        apply(
            &store,
            Op::GoalStart {
                objective: "Ship".into(),
                scope: vec![],
                permission: PermissionLevel::WorkspaceWrite,
                share: 1.0,
            },
        );
        apply(
            &store,
            Op::AgentAdd {
                name: agent.clone(),
                profile: "demo".into(),
                capabilities: vec![],
                role: None,
            },
        );
        let new = loopx_kernel::store::NewTodo {
            goal: None,
            title: "Write".into(),
            detail: String::new(),
            priority: 0,
            needs: vec![],
            after: vec![],
            role: None,
        };
        let Applied::Todo(todo) = apply(&store, Op::TodoAdd(new)) else {
            panic!("a todo")
        };
        let claim = Op::TodoClaim {
            todo: todo.id,
            agent: agent.clone(),
            ttl: Duration::from_secs(600),
        };
        apply(&store, claim.clone());
        let new = NewSlice {
            agent: agent.clone(),
            todo: Some(todo.id),
            epoch: Some(1),
            kind: SliceKind::Work,
            profile_hash: "h".into(),
            argv: vec![],
            limit_secs: 60,
            log: None,
            owner: None,
        };
        let Applied::Slice(slice) = apply(&store, Op::SliceStart(new)) else {
            panic!("a slice")
        };
        // Someone takes the todo over while the slice runs: the epoch moves to 2.
        apply(
            &store,
            Op::TodoRelease {
                todo: todo.id,
                agent: agent.clone(),
                epoch: 1,
            },
        );
        apply(&store, claim);
        drop(store);
        let finished = Finished {
            slice: slice.id,
            todo: Some(todo.id),
            epoch: Some(1),
            tokens: 42,
            started_at: T0,
            ended_at: T0.plus(Duration::from_secs(2)),
            ..crate::writeback::test_finished(&agent)
        };
        let summary =
            write_back(&project, "agent:exec", &finished, None).expect("the end is written");
        assert_eq!(summary.writeback, "stale_epoch");
        assert_eq!(summary.todo_state, Some("unchanged"));
        let store = Store::open(&project).expect("store");
        let (slice, todo, evidence, spends) = store
            .read(|s| {
                Ok((
                    s.slice(slice.id)?,
                    s.todo(todo.id)?,
                    s.evidence_newest(10, |_| true)?,
                    s.spends_since(T0)?,
                ))
            })
            .expect("reads");
        assert_eq!(slice.and_then(|s| s.outcome).as_deref(), Some("completed"));
        let todo = todo.expect("the todo");
        assert_eq!(
            (todo.epoch, todo.state.as_str()),
            (2, "claimed"),
            "the new holder keeps it"
        );
        assert!(
            evidence.is_empty(),
            "nothing written on the lost claim's behalf"
        );
        assert_eq!(
            spends.iter().map(|s| s.tokens).sum::<u64>(),
            42,
            "the usage is charged"
        );
    }
}
