//! The last stage: write back what the slice did, and the summary of the slice it yields.
//!
//! The batch is applied as a whole. When the kernel refuses one of the agent's items, that item
//! is dropped (and noted as evidence) and the rest tried again; when the claim moved on, only
//! what does not depend on it is written; when the store is busy or full, the whole batch is
//! tried again for a while (the guard's patience). Only after the end is recorded is the
//! slice's guard disarmed.

use loopx_adapters::Outcome;
use loopx_kernel::model::ClaimStanding;
use loopx_kernel::store::{Applied, BatchError};
use loopx_kernel::{
    AgentName, Clock, Conflict, GateId, KernelError, Op, Project, SliceId, Store, StoreError,
    Timestamp, TodoId,
};
use serde::Serialize;

use crate::errors::SupervisorError;
use crate::once::RunOnce;
use crate::slice::{ACTOR, Begun, actor, patience, retrying};
use loopx_domain::judge::{AgentEnd, Judged};
use loopx_domain::writeback::{Finished, Item, Writeback, lost_claim, writeback};
use loopx_git::worktree::{Landing, SliceCommit};

/// One slice, as `loopx run --once --json` shows it (documented in `docs/cli.md`).
#[derive(Debug, Clone, Serialize)]
pub struct SliceSummary {
    pub id: SliceId,
    pub agent: AgentName,
    pub kind: &'static str,
    pub todo: Option<TodoId>,
    pub epoch: Option<u64>,
    pub outcome: loopx_adapters::Outcome,
    pub reason: String,
    /// Processes the agent left behind that loopx stopped after it exited.
    pub leftovers: u32,
    pub exit: Option<String>,
    pub pid: Option<u32>,
    pub started_at: loopx_kernel::Timestamp,
    pub ended_at: loopx_kernel::Timestamp,
    /// How long it ran, on the monotonic clock.
    pub duration_ms: u64,
    /// The wall-time limit it ran under, in seconds (a probe's is shorter than its profile's).
    pub limit_secs: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    pub output_bytes: u64,
    pub log: String,
    /// `done`, `progress`, `blocked`, `malformed` or `none`.
    pub report: &'static str,
    /// `done` or `released` for a todo's slice (`unchanged` when the claim had moved on);
    /// `None` for a planning slice.
    pub todo_state: Option<&'static str>,
    pub new_todos: Vec<TodoId>,
    /// The gate the agent's question opened.
    pub gate: Option<GateId>,
    pub hold_until: Option<loopx_kernel::Timestamp>,
    /// A planning slice declared the goal met, and the goal is now done.
    pub goal_done: bool,
    /// Files the slice changed (project-relative); `None` when they could not be checked.
    pub changed_files: Option<Vec<String>>,
    /// Changed files outside the goal's scope, or in `.loopx/`.
    pub violations: Vec<String>,
    /// The gate asking a person about the violations.
    pub violation_gate: Option<GateId>,
    /// The commit the todo landed as on the goal's branch (a worktree goal).
    pub landed: Option<String>,
    /// The gate asking a person about a branch that does not land (a conflict).
    pub land_gate: Option<GateId>,
    /// Why a todo its agent reported done did not land (`the land check exited 1`): it stays
    /// open, and its next slice's prompt carries the check's output.
    pub land_failed: Option<String>,
    /// `applied`; `stale_epoch` when the claim moved on and only the end, loopx's evidence of
    /// the slice and the quota usage were recorded; `refused` when the kernel refused loopx's
    /// own part of the batch (a bug) and only the essentials were recorded; `superseded` when
    /// recovery had already closed the slice (its claim lapsed while the writeback waited for
    /// the store) and only loopx's evidence of it and its usage were recorded.
    pub writeback: &'static str,
    /// Items of the agent's report the kernel refused, each with why (each is also a `note`
    /// evidence).
    pub dropped: Vec<String>,
    /// The disk was full at the slice's end (no space or no inodes), naming it and what to do:
    /// the slice failed, and `loopx run` stops with this error.
    pub disk_full: Option<String>,
}

impl Begun {
    /// Writes the slice back, its agent having ended as `end` says and the slice judged
    /// `judged`; the guard is disarmed once its end is recorded.
    pub(crate) fn write_back(
        mut self,
        req: &RunOnce,
        mut end: AgentEnd,
        mut judged: Judged,
    ) -> Result<SliceSummary, SupervisorError> {
        let reported = end.reported;
        let mut reported_done = reported.done;
        loopx_domain::judge::progress::check(&mut judged, &end.changes, reported);
        loopx_domain::judge::progress::name_channel(&mut judged, reported);
        loopx_domain::judge::verified::check(
            &req.project,
            &|read| {
                req.world
                    .stores
                    .with(&req.project, |store| store.read(read))
            },
            req.world.clock.now(),
            self.record.todo,
            &mut judged,
            &mut reported_done,
        );
        let tree = self.tree.as_ref().and_then(|t| t.as_ref().ok());
        if reports_work_evidence(judged.classification.as_ref()) {
            let dir = tree.map_or_else(|| req.project.root().to_path_buf(), |p| p.tree.workdir());
            end.changes.work = loopx_git::work::mark_or_unknown(&dir);
        }
        let setup = &self.setup;
        let landing = landing(
            req,
            &self,
            &judged,
            (reported_done, end.commit.as_ref()),
            self.renewal.as_ref(),
        );
        // The landing is over: the writeback finishes or releases the claim.
        if let Some(renewal) = self.renewal.take() {
            renewal.finish();
        }
        let limited_before = match judged.outcome {
            Outcome::UsageLimited => limits_in_a_row(req, &setup.agent.name, self.record.id),
            _ => 0,
        };
        let adapter = &setup.loaded.adapter;
        let log = self.record.log.as_deref().unwrap_or_default();
        let finished = Finished {
            record: &self.record,
            end: &end,
            judged: &judged,
            cli: loopx_domain::writeback::CliFixes {
                adapter: &adapter.name,
                login: adapter.login.as_deref(),
                install: adapter.install.as_deref(),
            },
            limited_before,
            log_sha256: file_sha256(&crate::slice::slice_log_path(req, log)),
            redactor: Some(&self.redactor),
            quota: self.spent(&end),
            reported_done,
            agents_close_goals: crate::notify::project_config(&req.project)
                .is_ok_and(|c| c.agents_close_goals),
            tree,
            landing,
        };
        match write_back(
            &req.world.stores,
            &req.project,
            &*req.world.clock,
            &actor(setup),
            &finished,
        ) {
            Ok(mut summary) => {
                self.guard.disarm();
                summary.disk_full = judged.disk_full.clone();
                // Done: its branch landed and stays; its worktree is no longer needed.
                if let (Some(_), Some(goal), Some(todo)) = (tree, &self.goal, self.record.todo)
                    && summary.todo_state == Some("done")
                    && let Err(e) = loopx_git::worktree::remove(req.project.root(), goal.id, todo)
                {
                    tracing::warn!(%todo, error = %e, "cannot remove a done todo's worktree");
                }
                Ok(summary)
            }
            Err(e) => {
                let reason = format!(
                    "its writeback could not be recorded: {}",
                    crate::errors::chain(&e)
                );
                let slice = self.record.id.to_string();
                // Busy, or its database away for longer than the patience: passing, like busy.
                let busy = matches!(
                    &e,
                    KernelError::Store(
                        StoreError::Busy { .. }
                            | StoreError::Unavailable { .. }
                            | StoreError::CommitUnknown { .. }
                    )
                );
                match (self.guard.interrupt(&reason), busy) {
                    // The store only stayed busy: the next slice repairs the todo.
                    (Ok(()), true) => Err(e.into()),
                    // A full disk (or worse) would lose the next slice's work the same way.
                    (Ok(()), false) => Err(SupervisorError::WritebackLost { slice, source: e }),
                    (Err(_), _) => Err(SupervisorError::Unrecorded { slice, source: e }),
                }
            }
        }
    }
}

/// Whether the slice's report block carries evidence about the work (a test result, a diff):
/// it is recorded with a mark of the tree the slice left.
fn reports_work_evidence(c: Option<&loopx_adapters::Classification>) -> bool {
    let report = c.and_then(|c| c.report.as_ref()?.as_ref().ok());
    report.is_some_and(|r| {
        r.evidence
            .iter()
            .any(|e| loopx_domain::writeback::kind_of(e.kind.as_deref()).speaks_about_work())
    })
}

/// A worktree goal's todo slice's landing on the goal's branch, when the agent reported the
/// todo done, changed nothing it may not, and still holds it.
fn landing(
    req: &RunOnce,
    begun: &Begun,
    judged: &Judged,
    (reported_done, commit): (bool, Option<&SliceCommit>),
    renewal: Option<&crate::renew::Renewal>,
) -> Option<Landing> {
    let goal = begun.goal.as_ref()?;
    let claimed_done = reported_done
        || (judged.outcome == Outcome::Completed
            && judged.classification.as_ref().is_some_and(|c| c.done));
    match (commit, begun.record.todo, begun.record.epoch) {
        (Some(c), Some(todo), Some(epoch)) if claimed_done && c.changes.violations().is_empty() => {
            held_todo(req, todo, &begun.setup.agent.name, epoch).map(|title| {
                let held = || renewal.is_none_or(|r| r.lost().is_none());
                loopx_domain::land::land_todo(
                    req.project.root(),
                    &req.loopx_exe,
                    goal,
                    todo,
                    &title,
                    &held,
                )
            })
        }
        _ => None,
    }
}

/// The title of `todo` while `agent` still holds it under `epoch`: a slice that lost its
/// claim lands nothing.
fn held_todo(req: &RunOnce, todo: TodoId, agent: &AgentName, epoch: u64) -> Option<String> {
    let found = retrying(&*req.world.clock, patience(&req.project), || {
        req.world
            .stores
            .with(&req.project, |store| store.read(|s| s.todo(todo)))
    });
    match found {
        Ok(Some(t)) if t.claim_of(agent, epoch) == ClaimStanding::Held => Some(t.title),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(%todo, error = %e, "cannot read the todo before landing it");
            None
        }
    }
}

/// How many of `agent`'s slices before `slice` ended `usage_limited` in a row: a limit that
/// keeps coming back without a reset time backs off longer each time. A store that cannot be
/// read counts none (the shortest backoff).
fn limits_in_a_row(req: &RunOnce, agent: &AgentName, slice: SliceId) -> u32 {
    const LOOK_BACK: usize = 64;
    let tail = req.world.stores.with(&req.project, |store| {
        store.read(|s| s.slices_tail(LOOK_BACK))
    });
    let Ok(tail) = tail else { return 0 };
    let in_a_row = tail
        .iter()
        .rev()
        .filter(|s| s.agent == *agent && s.id != slice && s.outcome.is_some())
        .take_while(|s| s.outcome == Some(Outcome::UsageLimited))
        .count();
    u32::try_from(in_a_row).unwrap_or(u32::MAX)
}

/// Applies the writeback through the supervisor's handle, retrying while the store is busy or
/// full.
pub(crate) fn write_back(
    stores: &crate::store_cache::StoreCache,
    project: &Project,
    clock: &dyn Clock,
    actor: &str,
    f: &Finished<'_>,
) -> Result<SliceSummary, KernelError> {
    let (wb, applied, result) = retrying(clock, patience(project), || {
        stores.with(project, |store| attempt(store, actor, f, clock.now()))
    })?;
    Ok(summary(f, &wb, &applied, result))
}

/// The batch, redacted with the slice's redactor (which knows its profile's secret names).
fn apply_redacted(
    store: &Store,
    f: &Finished<'_>,
    ops: Vec<Op>,
    actor: &str,
    now: Timestamp,
) -> Result<Vec<Applied>, BatchError> {
    match f.redactor {
        Some(redactor) => store.apply_batch_redacted(ops, actor, now, redactor),
        None => store.apply_batch(ops, actor, now),
    }
}

/// One try: the whole batch, less what the kernel refuses of the agent's items.
fn attempt(
    store: &Store,
    actor: &str,
    f: &Finished<'_>,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    let standing = match (f.record.todo, f.record.epoch) {
        (Some(id), Some(epoch)) => store
            .read(|s| s.todo(id))?
            .map(|t| t.claim_of(&f.record.agent, epoch)),
        _ => None,
    };
    let mut wb = writeback(f, standing == Some(ClaimStanding::Finished));
    if matches!(
        standing,
        Some(ClaimStanding::Stale | ClaimStanding::NotHolder)
    ) {
        return lost(store, f, wb, now);
    }
    loop {
        // Stamped when it commits, not when the agent ended: the ledger stays in time order
        // (the slice's own times travel in its records).
        match apply_redacted(store, f, wb.ops(), actor, now) {
            Ok(applied) => return Ok((wb, applied, "applied")),
            Err(BatchError {
                op: Some(_),
                error: KernelError::Conflict(Conflict::SliceEnded { .. }),
            }) => return superseded(store, f, wb, now),
            Err(BatchError {
                op: Some(index),
                error,
            }) if wb.parts[index].item.is_some() => {
                tracing::warn!(slice = %f.record.id, error = %error, "the kernel refused an item of the agent's report");
                wb.drop_item(f, index, &error.to_string());
            }
            Err(BatchError {
                op: Some(_),
                error:
                    KernelError::Conflict(
                        Conflict::StaleEpoch { .. }
                        | Conflict::NotHolder { .. }
                        | Conflict::TodoState { .. },
                    ),
            }) => return lost(store, f, wb, now),
            // loopx's own part refused: a bug in loopx. Keep what matters most.
            Err(BatchError {
                op: Some(index),
                error,
            }) => {
                tracing::error!(slice = %f.record.id, error = %error, op = ?wb.parts[index].op, "the kernel refused loopx's own writeback");
                return essentials(store, actor, f, wb, now);
            }
            Err(BatchError { op: None, error }) => return Err(error),
        }
    }
}

/// The claim moved on: record what does not depend on it, as loopx's own record.
fn lost(
    store: &Store,
    f: &Finished<'_>,
    wb: Writeback,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    tracing::warn!(slice = %f.record.id, "the slice's claim moved on; recording only its end and usage");
    match apply_redacted(store, f, lost_claim(f), ACTOR, now).map_err(|e| e.error) {
        Ok(_) => Ok((wb, Vec::new(), "stale_epoch")),
        Err(KernelError::Conflict(Conflict::SliceEnded { .. })) => superseded(store, f, wb, now),
        Err(e) => Err(e),
    }
}

/// The slice's end is already recorded: recovery on a live host closed it once its claim
/// lapsed by the store's clock (this supervisor could not reach its store, or write to it,
/// for longer than the lease) and released its todo. That record stands; what the agent
/// reported is not written, since its todo may already be another agent's. What is still
/// true is: loopx's own evidence of the slice (its log's digest, its exit) and the usage it
/// spent, which counts against its windows whoever closed it.
fn superseded(
    store: &Store,
    f: &Finished<'_>,
    wb: Writeback,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    tracing::warn!(slice = %f.record.id, "the slice was closed by recovery while its writeback waited; recording only its evidence and usage");
    let ops = lost_claim(f)
        .into_iter()
        .filter(|op| !matches!(op, Op::SliceEnd { .. }))
        .collect();
    apply_redacted(store, f, ops, ACTOR, now).map_err(|e| e.error)?;
    Ok((wb, Vec::new(), "superseded"))
}

/// The batch was refused for no reason the agent caused: the slice's end and evidence, its
/// usage and any vendor hold, and the release or finish of its todo — else what `lost` writes.
fn essentials(
    store: &Store,
    actor: &str,
    f: &Finished<'_>,
    wb: Writeback,
    now: Timestamp,
) -> Result<(Writeback, Vec<Applied>, &'static str), KernelError> {
    let keep: Vec<Op> = wb
        .ops()
        .into_iter()
        .enumerate()
        .filter(|(i, op)| {
            *i < 2
                || matches!(
                    op,
                    Op::QuotaCharge(_) | Op::QuotaHold(_) | Op::TodoRelease(_) | Op::TodoFinish(_)
                )
        })
        .map(|(_, op)| op)
        .collect();
    match apply_redacted(store, f, keep, actor, now).map_err(|e| e.error) {
        Ok(_) => Ok((wb, Vec::new(), "refused")),
        Err(KernelError::Store(e)) => Err(e.into()),
        Err(_) => {
            let (wb, applied, _) = lost(store, f, wb, now)?;
            Ok((wb, applied, "refused"))
        }
    }
}

/// The slice as `run --once --json` shows it: every field from the slice's facts and what its
/// writeback applied. Its texts that carry the agent's words (the reason, why a landing failed,
/// what of its report was dropped) are redacted as the store's copies are: the summary is
/// printed, and `loopx run` writes it to its log.
fn summary(
    f: &Finished<'_>,
    wb: &Writeback,
    applied: &[Applied],
    result: &'static str,
) -> SliceSummary {
    let mut new_todos = Vec::new();
    let mut gate = None;
    let mut violation_gate = None;
    let mut land_gate = None;
    let mut goal_done = false;
    for (part, record) in wb.parts.iter().zip(applied) {
        match (&part.op, &part.item, record) {
            (Op::TodoAdd(_), _, Applied::Todo(t)) => new_todos.push(t.id),
            (Op::GateAsk(_), Some(Item::Question), Applied::Gate(g)) => {
                gate = Some(g.id);
            }
            (Op::GateAsk(_), None, Applied::Gate(g)) => match g.kind {
                loopx_kernel::model::GateKind::Land { .. } => land_gate = Some(g.id),
                _ => violation_gate = Some(g.id),
            },
            (Op::GoalSetStatus(_), _, Applied::Goal(g)) => {
                goal_done = g.status == loopx_kernel::model::GoalStatus::Done;
            }
            // Not the project's to let an agent end: the goal-met question.
            (Op::GoalSetStatus(_), _, Applied::Gate(g)) => gate = Some(g.id),
            _ => {}
        }
    }
    let applied_ok = result == "applied";
    let landing = f.landing.as_ref();
    let redacted = |text: &str| match f.redactor {
        Some(redactor) => redactor.redact(text).into_owned(),
        None => text.to_owned(),
    };
    let todo_state = match (f.record.todo, applied_ok, wb.todo_done) {
        (None, _, _) => None,
        (Some(_), true, true) => Some("done"),
        (Some(_), true, false) => Some("released"),
        (Some(_), false, _) => Some("unchanged"),
    };
    SliceSummary {
        id: f.record.id,
        agent: f.record.agent.clone(),
        kind: f.record.kind.as_str(),
        todo: f.record.todo,
        epoch: f.record.epoch,
        outcome: f.judged.outcome,
        reason: redacted(&f.judged.reason),
        leftovers: f.judged.leftovers,
        exit: f.judged.exit.clone(),
        pid: f.end.pid,
        started_at: f.record.started_at,
        ended_at: f.end.at,
        duration_ms: u64::try_from(f.end.elapsed.as_millis()).unwrap_or(u64::MAX),
        limit_secs: f.record.limit_secs,
        tokens: f.quota.tokens,
        cost_usd: f.quota.cost_usd,
        output_bytes: f.end.bytes,
        log: f.log().to_owned(),
        report: wb.report,
        todo_state,
        new_todos,
        gate,
        hold_until: wb.hold_until,
        goal_done,
        changed_files: f
            .end
            .changes
            .unchecked
            .is_none()
            .then(|| f.end.changes.files.clone()),
        violations: wb.violations.clone(),
        violation_gate,
        landed: match landing {
            Some(Landing::Landed { commit, .. }) => Some(commit.clone()),
            _ => None,
        },
        land_gate,
        land_failed: match landing {
            Some(Landing::CheckFailed { how, .. }) => Some(format!("the land check {how}")),
            Some(Landing::Failed(why)) => Some(redacted(&loopx_kernel::limits::clip(why, 200))),
            _ => None,
        },
        writeback: result,
        dropped: wb.dropped.iter().map(|d| redacted(d)).collect(),
        disk_full: None,
    }
}

/// SHA-256 of a file, hex; empty when it cannot be read (a slice whose log was never written).
fn file_sha256(path: &std::path::Path) -> String {
    use sha2::Digest;
    let Ok(mut file) = loopx_adapters::open_regular(path) else {
        return String::new();
    };
    let mut hasher = sha2::Sha256::new();
    if std::io::copy(&mut file, &mut hasher).is_err() {
        return String::new();
    }
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use loopx_kernel::store::{ClaimTodo, NewAgent, ReleaseClaim};
    use std::time::Duration;

    use loopx_kernel::model::SliceKind;
    use loopx_kernel::store::{Interrupt, NewGoal, NewSlice, QuotaRequest};

    use super::*;

    use loopx_domain::writeback::TestSlice;
    use loopx_kernel::model::PermissionLevel;
    use loopx_kernel::{AgentName, Project, Timestamp};
    use loopx_testkit::todo;

    const T0: Timestamp = Timestamp(1_790_000_000_000);

    fn apply(store: &Store, op: Op) -> Applied {
        store.apply(op, "human:tester", T0).expect("applies")
    }

    /// A project whose agent `exec` holds todo t1 (epoch 1) and runs slice s1 on it.
    fn running_slice() -> (
        tempfile::TempDir,
        Project,
        Store,
        AgentName,
        loopx_kernel::model::Todo,
        loopx_kernel::model::SliceRecord,
        Op,
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = Project::create(dir.path()).expect("project");
        let store = Store::create(&project, T0, "human:tester").expect("store");
        let agent: AgentName = "exec".parse().expect("a name");
        apply(
            &store,
            Op::GoalStart(NewGoal {
                id: None,
                objective: "Ship".into(),
                scope: vec![],
                permission: PermissionLevel::WorkspaceWrite,
                share: 1.0,
                isolation: loopx_kernel::model::Isolation::Shared,
            }),
        );
        apply(
            &store,
            Op::AgentAdd(NewAgent {
                name: agent.clone(),
                profile: "demo".into(),
                capabilities: vec![],
                role: None,
            }),
        );
        let new = todo("Write");
        let Applied::Todo(todo) = apply(&store, Op::TodoAdd(new)) else {
            panic!("a todo")
        };
        let claim = Op::TodoClaim(ClaimTodo {
            todo: todo.id,
            agent: agent.clone(),
            ttl: Duration::from_secs(600),
        });
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
        (dir, project, store, agent, todo, slice, claim)
    }

    /// What the supervisor observed of `slice`: over two seconds (42 tokens spent, as
    /// `write_back_as_exec` writes it back).
    fn finished_on(agent: &AgentName, slice: SliceId, todo: Option<TodoId>) -> TestSlice {
        let mut t = loopx_domain::writeback::test_slice(agent);
        (t.record.id, t.record.todo, t.record.epoch) = (slice, todo, todo.map(|_| 1));
        t.record.started_at = T0;
        t.end.at = T0.plus(Duration::from_secs(2));
        t
    }

    #[test]
    fn a_writeback_after_the_claim_moved_on_records_only_the_slice_and_its_usage() {
        let (_dir, project, store, agent, todo, slice, claim) = running_slice();
        // Someone takes the todo over while the slice runs: the epoch moves to 2.
        apply(
            &store,
            Op::TodoRelease(ReleaseClaim {
                todo: todo.id,
                agent: agent.clone(),
                epoch: 1,
            }),
        );
        apply(&store, claim);
        drop(store);
        let finished = finished_on(&agent, slice.id, Some(todo.id));
        let summary = write_back_as_exec(&project, &finished).expect("the end is written");
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
        assert_eq!(
            slice.and_then(|s| s.outcome),
            Some(loopx_kernel::model::Outcome::Completed)
        );
        let todo = todo.expect("the todo");
        assert_eq!(
            (todo.epoch, todo.state.as_str()),
            (3, "claimed"),
            "the new holder keeps it (released at 2, claimed at 3)"
        );
        let kinds: Vec<&str> = evidence.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["slice"],
            "loopx's own record of the slice, nothing of the agent's under the lost claim"
        );
        assert_eq!(
            todo.latest_handoff, None,
            "no handoff for the new holder to read"
        );
        assert_eq!(
            spends.iter().map(|s| s.tokens).sum::<u64>(),
            42,
            "the usage is charged"
        );
    }

    fn write_back_as_exec(project: &Project, t: &TestSlice) -> Result<SliceSummary, KernelError> {
        let finished = Finished {
            quota: QuotaRequest {
                tokens: 42,
                ..loopx_domain::writeback::unpaced_quota(&t.record.agent)
            },
            ..t.finished()
        };
        write_back(
            &crate::store_cache::StoreCache::default(),
            project,
            &*loopx_kernel::SystemClock::shared(Default::default()),
            "agent:exec",
            &finished,
        )
    }

    /// Recovery on a live host closes a slice whose writeback waits for a store that is away
    /// for longer than the claim's lease, as recovery does (`loopx:recovery`).
    fn recovered(store: &Store, slice: SliceId) {
        store
            .apply(
                Op::SliceInterrupt(Interrupt {
                    slice,
                    reason: "its claim lapsed: host h2 stopped renewing it".into(),
                    exit: Some("host gone".into()),
                    output_bytes: 0,
                    usage: None,
                }),
                "loopx:recovery",
                T0.plus(Duration::from_secs(700)),
            )
            .expect("recovery closes the slice");
    }

    /// The usage, evidence kinds and recorded outcome of `slice` after a writeback.
    fn afterwards(
        project: &Project,
        slice: SliceId,
    ) -> (Option<loopx_kernel::model::Outcome>, Vec<String>, u64) {
        let store = Store::open(project).expect("store");
        store
            .read(|s| {
                Ok((
                    s.slice(slice)?.and_then(|s| s.outcome),
                    s.evidence_newest(10, |_| true)?
                        .iter()
                        .map(|e| e.kind.as_str().to_owned())
                        .collect(),
                    s.spends_since(T0)?.iter().map(|s| s.tokens).sum(),
                ))
            })
            .expect("reads")
    }

    #[test]
    fn a_writeback_after_recovery_closed_the_slice_keeps_recoverys_record_and_goes_on() {
        let (_dir, project, store, agent, todo, slice, _) = running_slice();
        recovered(&store, slice.id);
        drop(store);
        let finished = finished_on(&agent, slice.id, Some(todo.id));
        let summary = write_back_as_exec(&project, &finished)
            .expect("a superseded writeback is not an error");
        assert_eq!(summary.writeback, "superseded");
        assert_eq!(summary.todo_state, Some("unchanged"));
        let (outcome, kinds, tokens) = afterwards(&project, slice.id);
        assert_eq!(
            outcome,
            Some(loopx_kernel::model::Outcome::Interrupted),
            "recovery's record stands"
        );
        assert_eq!(
            kinds,
            ["slice", "slice"],
            "the supervisor's record of what ran (exit, log digest) beside recovery's"
        );
        assert_eq!(tokens, 42, "the usage is charged");
    }

    #[test]
    fn a_planning_slice_closed_by_recovery_is_superseded_too() {
        let (_dir, project, store, agent, todo, slice, _) = running_slice();
        // The work slice ends; then a planning slice runs and is recovered.
        recovered(&store, slice.id);
        let new = NewSlice {
            agent: agent.clone(),
            todo: None,
            epoch: None,
            kind: SliceKind::Plan,
            profile_hash: "h".into(),
            argv: vec![],
            limit_secs: 60,
            log: None,
            owner: None,
        };
        let Applied::Slice(plan) = apply(&store, Op::SliceStart(new)) else {
            panic!("a slice")
        };
        recovered(&store, plan.id);
        drop(store);
        let _ = todo;
        let finished = finished_on(&agent, plan.id, None);
        let summary = write_back_as_exec(&project, &finished)
            .expect("a superseded writeback is not an error");
        assert_eq!(summary.writeback, "superseded");
        assert_eq!(summary.todo_state, None);
        let (outcome, _, tokens) = afterwards(&project, plan.id);
        assert_eq!(outcome, Some(loopx_kernel::model::Outcome::Interrupted));
        assert_eq!(tokens, 42);
    }

    mod any_report {
        use loopx_adapters::{
            Classification, Outcome, Report, ReportEvidence, ReportQuestion, ReportStatus,
            ReportTodo,
        };
        use loopx_kernel::model::TodoState;
        use loopx_kernel::store::BeginSlice;
        use proptest::prelude::*;

        use super::*;

        /// Any text an agent might write: empty, blank, unicode, control characters, far past
        /// every limit of the kernel, and credentials whose redaction marker is longer than
        /// they are, at every length around the limits.
        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => "(?s).{0,120}",
                1 => Just(String::new()),
                1 => Just("   \n\t".to_owned()),
                1 => "[a-z]{1,8}( [A-Z][a-z]{1,8}){0,3}",
                1 => (1usize..3).prop_map(|n| "ü".repeat(n * 9_000)),
                2 => (0usize..1_100).prop_map(|n| format!("{} postgres://app:pw@db/app?", "q".repeat(n))),
            ]
        }

        fn report() -> impl Strategy<Value = Report> {
            (
                prop_oneof![
                    Just(ReportStatus::Done),
                    Just(ReportStatus::Progress),
                    Just(ReportStatus::Blocked)
                ],
                text(),
                proptest::collection::vec((proptest::option::of(text()), text()), 0..40),
                proptest::option::of(text()),
                proptest::collection::vec(
                    (
                        text(),
                        proptest::option::of(text()),
                        proptest::option::of(text()),
                    ),
                    0..40,
                ),
                proptest::option::of((text(), proptest::collection::vec(text(), 0..80))),
            )
                .prop_map(|(status, summary, evidence, handoff, todos, question)| {
                    Report {
                        status,
                        summary,
                        evidence: evidence
                            .into_iter()
                            .map(|(kind, summary)| ReportEvidence { kind, summary })
                            .collect(),
                        handoff,
                        next_todos: todos
                            .into_iter()
                            .map(|(title, detail, role)| ReportTodo {
                                title,
                                detail,
                                role,
                                ..ReportTodo::default()
                            })
                            .collect(),
                        question: question.map(|(text, options)| ReportQuestion { text, options }),
                        propose_goal: None,
                        drop_todos: vec![],
                        rewrite_todos: vec![],
                    }
                })
        }

        /// A project with a goal, agent `exec` and a slice it began on t1.
        fn begun(
            dir: &std::path::Path,
        ) -> (Project, loopx_kernel::SliceId, loopx_kernel::TodoId, u64) {
            let project = Project::create(dir).expect("project");
            let store = Store::create(&project, T0, "human:tester").expect("store");
            let agent: AgentName = "exec".parse().expect("a name");
            apply(
                &store,
                Op::GoalStart(NewGoal {
                    id: None,
                    objective: "Ship".into(),
                    scope: vec![],
                    permission: PermissionLevel::WorkspaceWrite,
                    share: 1.0,
                    isolation: loopx_kernel::model::Isolation::Shared,
                }),
            );
            apply(
                &store,
                Op::AgentAdd(NewAgent {
                    name: agent.clone(),
                    profile: "demo".into(),
                    capabilities: vec![],
                    role: Some("executor".into()),
                }),
            );
            let Applied::Todo(todo) = apply(&store, Op::TodoAdd(todo("Write"))) else {
                panic!("a todo")
            };
            let begin = BeginSlice {
                slice: NewSlice {
                    agent: agent.clone(),
                    todo: Some(todo.id),
                    epoch: None,
                    kind: SliceKind::Work,
                    profile_hash: "h".into(),
                    argv: vec![],
                    limit_secs: 60,
                    log: None,
                    owner: None,
                },
                claim_ttl: Duration::from_secs(600),
                admit: loopx_domain::writeback::unpaced_quota(&agent),
            };
            let Applied::SliceBegun { slice, .. } = apply(&store, Op::SliceBegin(begin)) else {
                panic!("a slice")
            };
            (project, slice.id, todo.id, slice.epoch.expect("an epoch"))
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

            /// Whatever the agent reports, the writeback lands: the slice ends, its evidence
            /// and a handoff are written, its claim is released or the todo done, and the
            /// kernel stays consistent.
            #[test]
            fn any_report_is_written_back(report in report(), completed in any::<bool>()) {
                let dir = tempfile::tempdir().expect("temp dir");
                let (project, slice, todo, epoch) = begun(dir.path());
                let agent: AgentName = "exec".parse().expect("a name");
                let outcome = if completed { Outcome::Completed } else { Outcome::Progress };
                let done = completed && report.status == ReportStatus::Done;
                let classification = Classification {
                    outcome,
                    reason: "because".into(),
                    report: Some(Ok(report)),
                    question: None,
                    limit: None,
                    done,
                };
                let mut t = loopx_domain::writeback::test_slice(&agent);
                (t.record.id, t.record.todo, t.record.epoch) = (slice, Some(todo), Some(epoch));
                (t.judged.outcome, t.judged.classification) = (outcome, Some(classification));
                t.record.started_at = T0;
                t.end.at = T0.plus(Duration::from_secs(2));
                let summary = write_back(&crate::store_cache::StoreCache::default(), &project, &*loopx_kernel::SystemClock::shared(Default::default()), "agent:exec", &t.finished())
                    .expect("the writeback lands");
                prop_assert_eq!(summary.writeback, "applied");
                let store = Store::open_read(&project).expect("store");
                let (record, todo, handoff, problems) = store
                    .read(|s| {
                        let todo = s.todo(todo)?.expect("the todo");
                        Ok((
                            s.slice(slice)?,
                            todo.clone(),
                            s.latest_handoff(Some(todo.id))?,
                            loopx_kernel::check_consistency(s)?,
                        ))
                    })
                    .expect("reads");
                prop_assert!(record.and_then(|r| r.outcome).is_some(), "the slice ended");
                prop_assert!(todo.state != TodoState::Claimed, "the claim is not left behind");
                prop_assert!(handoff.is_some(), "a handoff");
                prop_assert!(problems.is_empty(), "{:?}", problems);
            }
        }
    }
}
