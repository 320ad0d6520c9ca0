//! What a slice amounted to, and what happens after each outcome: one vocabulary for the
//! parser's classification, the kernel's slice records and the decision, and one table that
//! gives every outcome a policy, so that none can be silently ignored
//! (`docs/design/classification.md`).

use serde::{Deserialize, Serialize};

/// What a slice amounted to.
///
/// The store encodes it by position: new outcomes are appended, never inserted or reordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The agent finished and said (or did not deny) it is done.
    Completed,
    /// Work was done and more remains (a turn or budget limit included).
    Progress,
    /// The agent needs a person's decision.
    Asked,
    /// A vendor usage limit.
    UsageLimited,
    /// Credentials missing or refused: a person must log in.
    AuthFailed,
    /// Temporary trouble (server errors, retries that ran out).
    Transient,
    /// The conversation outgrew the context window.
    ContextOverflow,
    /// The agent blocked on something nobody will answer, or printed nothing for its idle limit.
    Stalled,
    /// The slice reached its wall-time limit.
    TimedOut,
    /// It failed.
    Failed,
    /// loopx stopped it, died under it, or took its claim away.
    Interrupted,
    /// The agent could not be started.
    SpawnFailed,
    /// The agent reported progress, but nothing a person could see moved: no change in its
    /// tree, no evidence, todo or question of its own (decided by the supervisor, which sees
    /// the tree). A shell agent whose every write the sandbox refused reported `progress` 1,341
    /// times in two minutes while `progress` ended the stall guard's streak.
    Unchanged,
    /// The agent reported its todo done, but the evidence the project's `done` needs
    /// (`[evidence] done_needs`) is missing or stale (decided by the supervisor, which sees the
    /// tree): the todo stays open, and the next slice on it re-verifies (record version 11).
    Unverified,
}

/// How an outcome bears on the stall guard (K slices on a todo without progress ask a person).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Streak {
    /// Progress: the streak starts again.
    Ends,
    /// A slice without progress: it counts.
    Counts,
    /// Nothing about the todo's work (vendor trouble, loopx itself): neither.
    Neutral,
}

/// What comes after a slice with this outcome, before anything else is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// The next todo (a todo left open after it is a slice without progress, paused).
    Continue,
    /// A repair slice on the same todo: check what the last one left. Each slice is a fresh
    /// run of the agent, so after a context overflow the repair starts a fresh session with
    /// the handoff.
    Repair,
    /// The account is held until the vendor's reset (a growing backoff when none is given).
    HoldAccount,
    /// The account is held and a gate names the fix (log in, then answer `retry`).
    AskLogin,
    /// The agent backs off exponentially, with jitter, before its next slice.
    Backoff,
    /// The gate the agent's question opened blocks its todo.
    Answer,
}

/// The policy of one outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OutcomePolicy {
    pub streak: Streak,
    pub next: Next,
}

impl Outcome {
    /// Every outcome, in the order of the policy table.
    pub const ALL: [Outcome; 14] = [
        Outcome::Completed,
        Outcome::Progress,
        Outcome::Asked,
        Outcome::UsageLimited,
        Outcome::AuthFailed,
        Outcome::Transient,
        Outcome::ContextOverflow,
        Outcome::Stalled,
        Outcome::TimedOut,
        Outcome::Failed,
        Outcome::Interrupted,
        Outcome::SpawnFailed,
        Outcome::Unchanged,
        Outcome::Unverified,
    ];

    /// The snake_case name, as stored and shown (`usage_limited`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Progress => "progress",
            Outcome::Asked => "asked",
            Outcome::UsageLimited => "usage_limited",
            Outcome::AuthFailed => "auth_failed",
            Outcome::Transient => "transient",
            Outcome::ContextOverflow => "context_overflow",
            Outcome::Stalled => "stalled",
            Outcome::TimedOut => "timed_out",
            Outcome::Failed => "failed",
            Outcome::Interrupted => "interrupted",
            Outcome::SpawnFailed => "spawn_failed",
            Outcome::Unchanged => "unchanged",
            Outcome::Unverified => "unverified",
        }
    }

    /// The outcome a name stands for.
    pub fn parse(name: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// The one policy table.
    pub fn policy(self) -> OutcomePolicy {
        use Next::*;
        use Streak::*;
        let (streak, next) = match self {
            // The stall guard only looks at todos still open: a completed slice that left its
            // todo open made no progress loopx can see (no report said done, nothing
            // `done_when` recognised). It counts, and the todo rests before it is tried again.
            Outcome::Completed => (Counts, Continue),
            Outcome::Progress => (Ends, Continue),
            Outcome::Asked => (Ends, Answer),
            Outcome::UsageLimited => (Neutral, HoldAccount),
            Outcome::AuthFailed => (Neutral, AskLogin),
            Outcome::Transient => (Counts, Backoff),
            Outcome::ContextOverflow => (Counts, Repair),
            Outcome::Stalled => (Counts, Repair),
            Outcome::TimedOut => (Counts, Repair),
            Outcome::Failed => (Counts, Repair),
            Outcome::SpawnFailed => (Counts, Repair),
            Outcome::Interrupted => (Neutral, Repair),
            // A report's word is not progress: like a completed slice that left its todo open,
            // it counts, and the todo rests.
            Outcome::Unchanged => (Counts, Continue),
            // Done without the proof it needs: a repair slice on the same todo runs the checks
            // again. It counts, so an agent that never proves it asks a person in the end.
            Outcome::Unverified => (Counts, Repair),
        };
        OutcomePolicy { streak, next }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_a_name_that_reads_back_and_a_policy() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
            let json = serde_json::to_string(&outcome).expect("serializes");
            assert_eq!(json, format!("\"{}\"", outcome.as_str()));
            let _ = outcome.policy();
        }
        assert_eq!(Outcome::parse("crashed"), None);
    }
}
