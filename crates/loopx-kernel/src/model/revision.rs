//! A goal's revisions: what it said from each amendment on, who changed it and why.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ids::GoalId;
use crate::model::PermissionLevel;
use crate::time::Timestamp;

/// One revision of a goal (record version 10). Revision 1 is the goal as started; each
/// `loopx goal amend` adds the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalRevision {
    pub goal: GoalId,
    pub number: u32,
    pub at: Timestamp,
    /// Who made it: `human:<user>` (only a person amends a goal).
    pub by: String,
    /// Why, in the person's words (empty when they gave none).
    pub why: String,
    pub objective: String,
    pub scope: Vec<String>,
    pub permission: PermissionLevel,
    /// [`goal_digest`] of the objective and scope.
    pub digest: String,
    /// What differs from the revision before: `objective`, `scope`, `permission`.
    pub changed: Vec<String>,
    /// The last slice begun before it: slices after this one began under it.
    pub after_slice: u64,
}

impl GoalRevision {
    /// `objective and scope changed (why: …)`, for the log and the prompt.
    pub fn summary(&self) -> String {
        let what = match self.changed.as_slice() {
            [] => "started".to_owned(),
            [one] => format!("{one} changed"),
            [init @ .., last] => format!("{} and {last} changed", init.join(", ")),
        };
        match self.why.trim() {
            "" => what,
            why => format!("{what} (why: {why})"),
        }
    }
}

/// The SHA-256 of a text, in hex.
pub(crate) fn text_digest(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The SHA-256 of a goal's objective and scope, in hex: two revisions with the same digest say
/// the same thing.
pub fn goal_digest(objective: &str, scope: &[String]) -> String {
    let mut hash = Sha256::new();
    hash.update(objective.as_bytes());
    for glob in scope {
        hash.update(b"\n");
        hash.update(glob.as_bytes());
    }
    hex::encode(hash.finalize())
}
