//! A slice as `loopx run` prints it and `loopx run --once --json` shows it (`docs/cli.md`),
//! built from the slice's facts and what its writeback applied; and the rules over the slice's
//! facts the supervisor asks before its writeback.

use loopx_adapters::Outcome;
use loopx_git::worktree::Landing;
use loopx_kernel::model::SliceRecord;
use loopx_kernel::store::Applied;
use loopx_kernel::{AgentName, GateId, Op, SliceId, TodoId};
use serde::Serialize;

use super::{Finished, Item, Writeback};

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

/// Whether the slice's report block carries evidence about the work (a test result, a diff):
/// it is recorded with a mark of the tree the slice left.
pub fn reports_work_evidence(c: Option<&loopx_adapters::Classification>) -> bool {
    let report = c.and_then(|c| c.report.as_ref()?.as_ref().ok());
    report.is_some_and(|r| {
        r.evidence
            .iter()
            .any(|e| super::kind_of(e.kind.as_deref()).speaks_about_work())
    })
}

/// How many of its agent's slices before it the store reads to count the usage limits in a row.
pub const LOOK_BACK: usize = 64;

/// How many of `agent`'s slices before `slice` in `tail` (the newest last) ended
/// `usage_limited` in a row: a limit that keeps coming back without a reset time backs off
/// longer each time.
pub fn limits_in_a_row(tail: &[SliceRecord], agent: &AgentName, slice: SliceId) -> u32 {
    let in_a_row = tail
        .iter()
        .rev()
        .filter(|s| s.agent == *agent && s.id != slice && s.outcome.is_some())
        .take_while(|s| s.outcome == Some(Outcome::UsageLimited))
        .count();
    u32::try_from(in_a_row).unwrap_or(u32::MAX)
}

/// The slice as `run --once --json` shows it: every field from the slice's facts and what its
/// writeback applied. Its texts that carry the agent's words (the reason, why a landing failed,
/// what of its report was dropped) are redacted as the store's copies are: the summary is
/// printed, and `loopx run` writes it to its log.
pub(super) fn summary(
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
