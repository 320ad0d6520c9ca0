//! A snapshot's reads of one goal: what it spent, when it was last re-planned, its revisions,
//! and the evidence recorded while it ran.

use std::ops::Bound;

use super::codec::decode;
use super::kv::{ALL_KEYS, Key};
use super::snapshot::Snapshot;
use super::tables;
use crate::errors::KernelError;
use crate::ids::GoalId;
use crate::model::{Evidence, Goal};

/// Most evidence records [`Snapshot::goal_evidence_newest`] reads, newest first, looking for a
/// goal's: what `status` shows stays a bounded read whatever the store holds.
const GOAL_EVIDENCE_SCAN: usize = 500;

impl Snapshot<'_> {
    /// What `goal` spent since a todo was last done (or a person gave it a fresh budget).
    pub fn goal_spent(
        &self,
        goal: GoalId,
    ) -> Result<crate::store::apply::budget::Spent, KernelError> {
        Ok(self
            .quota_value(&crate::store::apply::budget::spent_key(goal))?
            .unwrap_or_default())
    }

    /// The last slice before a person last said to plan `goal` afresh (a goal-met gate answered
    /// with anything but `done`): planning slices up to it no longer count.
    pub fn goal_plans_after(&self, goal: GoalId) -> Result<Option<u64>, KernelError> {
        self.quota_value(&crate::store::apply::budget::plans_key(goal))
    }

    /// The last slice begun before `goal` was last amended, until a planning slice after it
    /// did its work: the goal is re-planned first. `None`: never amended.
    pub fn goal_replan_after(&self, goal: GoalId) -> Result<Option<u64>, KernelError> {
        self.quota_value(&crate::store::apply::amend::replan_key(goal))
    }

    /// Every recorded revision of `goal`, oldest first (a goal started by a loopx before
    /// revisions has none for revision 1).
    pub fn goal_revisions(
        &self,
        goal: GoalId,
    ) -> Result<Vec<crate::model::GoalRevision>, KernelError> {
        let range = (
            Bound::Included(Key::Num(tables::revision_key(goal.0, 0))),
            Bound::Included(Key::Num(tables::revision_key(goal.0, u32::MAX))),
        );
        let mut out = Vec::new();
        let mut failed = None;
        self.kv
            .scan(tables::GOAL_REVISIONS, range, false, &mut |_, bytes| {
                match decode("goal_revisions", bytes) {
                    Ok(revision) => out.push(revision),
                    Err(e) => failed = Some(e),
                }
                Ok(failed.is_none())
            })?;
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(out),
        }
    }

    /// Revision `number` of `goal`, if it was recorded.
    pub fn goal_revision(
        &self,
        goal: GoalId,
        number: u32,
    ) -> Result<Option<crate::model::GoalRevision>, KernelError> {
        self.kv
            .get(
                tables::GOAL_REVISIONS,
                &Key::Num(tables::revision_key(goal.0, number)),
            )?
            .map(|bytes| decode("goal_revisions", &bytes))
            .transpose()
            .map_err(KernelError::from)
    }

    /// The newest `limit` evidence records of `goal`: those about one of its todos, and those
    /// about no todo recorded since it started. The scan reads newest first and stops at the
    /// first record older than the goal (evidence ids grow with time, and one goal is active
    /// at a time) or after [`GOAL_EVIDENCE_SCAN`] records.
    pub fn goal_evidence_newest(
        &self,
        goal: &Goal,
        limit: usize,
    ) -> Result<Vec<Evidence>, KernelError> {
        let mut recent: Vec<Evidence> = Vec::new();
        if limit == 0 {
            return Ok(recent);
        }
        let mut seen = 0;
        self.kv
            .scan(tables::EVIDENCE, ALL_KEYS, true, &mut |_, bytes| {
                let evidence: Evidence = decode(tables::EVIDENCE.name(), bytes)?;
                if evidence.at < goal.created_at {
                    return Ok(false);
                }
                recent.push(evidence);
                seen += 1;
                Ok(seen < GOAL_EVIDENCE_SCAN)
            })?;
        let mut out = Vec::new();
        for evidence in recent {
            let ours = match evidence.todo {
                Some(todo) => self.todo(todo)?.is_some_and(|t| t.goal == goal.id),
                None => true,
            };
            if ours {
                out.push(evidence);
                if out.len() == limit {
                    break;
                }
            }
        }
        Ok(out)
    }
}
