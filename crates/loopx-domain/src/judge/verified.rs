//! Whether an agent's `done` holds the proof the project asks for (`[evidence] done_needs` in
//! `loopx.toml`, `docs/goals.md`).
//!
//! An agent that reports its todo done is taken at its word unless the project names kinds of
//! evidence a done needs. Then each kind must have fresh evidence on the todo: in the slice's
//! own report block, or recorded on the todo before (through `loopx report evidence` during
//! the slice, or by an earlier slice) and not stale now. A test result from before the code
//! changed proves nothing about the code as it is: the done is not taken, the slice is recorded
//! `unverified`, and the next slice on the todo is a repair slice that runs the checks again.
//! Checked before a worktree goal's todo lands, so a branch does not land on stale proof.

use loopx_adapters::{Classification, EvidenceRules, Outcome};
use loopx_kernel::model::EvidenceKind;
use loopx_kernel::{KernelError, Project, Snapshot, Timestamp, TodoId};

use super::Judged;
use crate::freshness::Freshness;

/// What a `done` still lacks: each needed kind without fresh evidence, with the newest stale
/// one's reason when there is one.
type Missing = Vec<(String, Option<String>)>;

/// Runs a read of the store's snapshot (the caller's store handle, with its own retries).
pub type ReadStore<'r> = &'r dyn Fn(
    &mut dyn FnMut(&Snapshot<'_>) -> Result<Missing, KernelError>,
) -> Result<Missing, KernelError>;

/// How much of a todo's evidence is looked at, newest first.
const LOOK_BACK: usize = 500;

/// Turns a `done` without the fresh evidence it needs into `unverified`; `reported_done` (a
/// `loopx report done`) is withdrawn with it. Nothing changes when the project asks for no
/// evidence, the slice did not say done, or the evidence is there.
pub fn check(
    project: &Project,
    read: ReadStore<'_>,
    now: Timestamp,
    todo: Option<TodoId>,
    judged: &mut Judged,
    reported_done: &mut bool,
) {
    let said_done = (judged.outcome == Outcome::Completed
        && judged.classification.as_ref().is_some_and(|c| c.done))
        || *reported_done;
    let Some(todo) = todo.filter(|_| said_done) else {
        return;
    };
    // The file loaded when the slice began; a person broke it since. What it asks for cannot
    // be known, so the done is not taken on trust: the next slice tries again once it loads.
    let missing = match loopx_adapters::load_project_config(&project.state_dir()) {
        Ok(config) if config.evidence.done_needs.is_empty() => return,
        Ok(config) => missing(
            project,
            read,
            now,
            todo,
            &config.evidence,
            judged.classification.as_ref(),
        )
        .unwrap_or_else(|e| {
            tracing::warn!(%todo, error = %e, "cannot read the todo's evidence to check a done");
            vec![("its evidence could not be read".to_owned(), None)]
        }),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read loopx.toml to check a done");
            vec![("loopx.toml could not be read to check it".to_owned(), None)]
        }
    };
    if missing.is_empty() {
        return;
    }
    let why = missing
        .iter()
        .map(|(what, stale)| match stale {
            Some(stale) => format!("{what} ({stale})"),
            None => what.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    judged.outcome = Outcome::Unverified;
    judged.reason = format!(
        "{}; but its done was not taken: {why}. The next slice runs the checks again",
        judged.reason
    );
    *reported_done = false;
}

/// Each needed kind without fresh evidence: `no fresh test evidence`, with the newest stale
/// one's reason when there is one.
fn missing(
    project: &Project,
    read: ReadStore<'_>,
    now: Timestamp,
    todo: TodoId,
    rules: &EvidenceRules,
    classification: Option<&Classification>,
) -> Result<Missing, KernelError> {
    let reported: Vec<EvidenceKind> = classification
        .and_then(|c| c.report.as_ref()?.as_ref().ok())
        .map(|r| {
            // Only what the writeback records counts.
            r.evidence
                .iter()
                .take(crate::writeback::REPORT_ITEMS)
                .map(|e| crate::writeback::kind_of(e.kind.as_deref()))
                .collect()
        })
        .unwrap_or_default();
    read(&mut |s| {
        let mut judge = Freshness::new(project, rules, now);
        let recorded = s.evidence_newest(LOOK_BACK, |e| e.todo == Some(todo))?;
        let mut missing = Vec::new();
        for kind in &rules.done_needs {
            if reported.contains(kind) {
                continue;
            }
            let mut stale_one = None;
            let mut fresh = false;
            for e in recorded.iter().filter(|e| e.kind == *kind) {
                match judge.stale(s, e)? {
                    None => {
                        fresh = true;
                        break;
                    }
                    Some(why) if stale_one.is_none() => {
                        stale_one = Some(format!("{} is stale: {why}", e.id));
                    }
                    Some(_) => {}
                }
            }
            if !fresh {
                missing.push((format!("no fresh `{kind}` evidence on {todo}"), stale_one));
            }
        }
        Ok(missing)
    })
}
