//! An amended goal's revision as `status` shows it: what changed, how, and whether the re-plan
//! it calls for is still to come.

use loopx_kernel::Timestamp;
use loopx_kernel::model::GoalRevision;
use serde::Serialize;

/// An amended goal's revision as `status` shows it.
#[derive(Debug, Serialize)]
pub struct RevisionNow {
    pub number: u32,
    pub at: Timestamp,
    pub by: String,
    /// `scope changed (why: …)`.
    pub summary: String,
    /// What differs from the revision before: `objective`, `scope`, `permission`.
    pub changed: Vec<String>,
    /// How each changed field moved, in words: `scope narrowed: src/** (was src/**, proto/**)`.
    pub moves: Vec<String>,
    /// The goal is re-planned before any todo is worked on.
    pub replan_pending: bool,
}

impl RevisionNow {
    /// The revision of `goal` once a person amended it; `None` for a goal as started.
    pub(super) fn read(
        s: &loopx_kernel::Snapshot<'_>,
        goal: Option<&loopx_kernel::model::Goal>,
    ) -> Result<Option<RevisionNow>, loopx_kernel::KernelError> {
        let Some(goal) = goal.filter(|g| g.revision > 1) else {
            return Ok(None);
        };
        let now = s.goal_revision(goal.id, goal.revision)?;
        let before = s.goal_revision(goal.id, goal.revision - 1)?;
        let pending = s.goal_replan_after(goal.id)?.is_some();
        Ok(now.map(|now| RevisionNow::of(&now, before.as_ref(), pending)))
    }

    /// `revision` of a goal, against the one before it (`None` when that was not recorded).
    fn of(
        revision: &GoalRevision,
        before: Option<&GoalRevision>,
        replan_pending: bool,
    ) -> RevisionNow {
        let mut moves = Vec::new();
        if let Some(before) = before {
            let has = |scope: &[String], glob: &String| scope.contains(glob);
            for field in &revision.changed {
                moves.push(match field.as_str() {
                    "scope" => {
                        let (now, was) = (&revision.scope, &before.scope);
                        let how = if now.iter().all(|g| has(was, g)) {
                            "narrowed"
                        } else if was.iter().all(|g| has(now, g)) {
                            "widened"
                        } else {
                            "changed"
                        };
                        format!("scope {how}: {} (was {})", globs(now), globs(was))
                    }
                    "objective" => format!("objective before: {}", before.objective),
                    "permission" => format!(
                        "permission: {} (was {})",
                        revision.permission.as_str(),
                        before.permission.as_str()
                    ),
                    other => format!("{other} changed"),
                });
            }
        }
        RevisionNow {
            number: revision.number,
            at: revision.at,
            by: revision.by.clone(),
            summary: revision.summary(),
            changed: revision.changed.clone(),
            moves,
            replan_pending,
        }
    }
}

/// A scope in words: its globs, or "the whole project" for none.
fn globs(scope: &[String]) -> String {
    match scope {
        [] => "the whole project".to_owned(),
        globs => globs.join(", "),
    }
}
