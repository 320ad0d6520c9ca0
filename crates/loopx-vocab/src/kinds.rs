//! The small closed sets loopx names things by: kinds of slices and evidence, who set a hold, a
//! goal's status and where its agents work. Each has one spelling (`as_str`), used on the
//! command line, in files, in JSON and in messages, and parsed back by `FromStr`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A word that names none of a set's members.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`: expected one of {expected}")]
pub struct UnknownWord {
    /// What the word was meant to name (`permission level`, `evidence kind`).
    pub what: &'static str,
    /// The text that was given.
    pub value: String,
    /// The members' spellings, joined for a message.
    pub expected: String,
}

/// A closed set whose members each have one spelling: what a command-line parser offers and
/// checks against, so that no surface keeps its own list of the words.
pub trait Spelled: Copy + Sized + Send + Sync + 'static {
    /// Every member, in declaration order.
    const MEMBERS: &'static [Self];
    /// The member's spelling.
    fn spelling(self) -> &'static str;
}

/// `as_str`, `ALL`, `Display`, `FromStr` and [`Spelled`] for a field-less enum, from one table
/// of spellings.
macro_rules! spelled {
    ($ty:ident, $what:literal, [$($variant:ident => $word:literal),+ $(,)?]) => {
        impl $ty {
            /// Every member, in declaration (and storage) order.
            pub const ALL: [$ty; [$($word),+].len()] = [$($ty::$variant),+];
            /// Every member's spelling, in the same order.
            pub const NAMES: [&'static str; [$($word),+].len()] = [$($word),+];

            /// The spelling used on the command line, in files and in JSON.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $word),+
                }
            }
        }

        impl Spelled for $ty {
            const MEMBERS: &'static [$ty] = &$ty::ALL;
            fn spelling(self) -> &'static str {
                self.as_str()
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownWord;
            fn from_str(text: &str) -> Result<Self, UnknownWord> {
                Self::ALL
                    .into_iter()
                    .find(|member| member.as_str() == text)
                    .ok_or_else(|| UnknownWord {
                        what: $what,
                        value: text.to_owned(),
                        expected: Self::ALL.map(|m| format!("`{m}`")).join(", "),
                    })
            }
        }
    };
}

/// What a slice is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SliceKind {
    /// Work on a todo.
    Work,
    /// Turn the goal into todos.
    Plan,
    /// Repair what the last slice on a todo left broken.
    Repair,
}
spelled!(SliceKind, "slice kind", [Work => "work", Plan => "plan", Repair => "repair"]);

/// Who set a quota hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldSource {
    /// Parsed from an agent's output (a vendor's `resets_at`).
    Vendor,
    /// Set by a person (`quota hold`, `quota pause`).
    Manual,
}
spelled!(HoldSource, "hold source", [Vendor => "vendor", Manual => "manual"]);

/// When a hold set at `set_at` until `until` ends, as seen at `now` (`None`: until a person
/// resumes). A hold set "later" than `now` means the wall clock stepped back since: it then
/// lasts at most as long as it was set for, counted from `now`, instead of that long plus the
/// step. (Unix milliseconds.)
pub fn hold_ends(until: Option<u64>, set_at: u64, now: u64) -> Option<u64> {
    let until = until?;
    if now < set_at {
        Some(until.min(now.saturating_add(until.saturating_sub(set_at))))
    } else {
        Some(until)
    }
}

/// Where a goal is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Active,
    Paused,
    Done,
    Archived,
}
spelled!(GoalStatus, "goal status", [
    Active => "active", Paused => "paused", Done => "done", Archived => "archived",
]);

/// Where a todo is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoState {
    Open,
    Claimed,
    Done,
    Dropped,
}
spelled!(TodoState, "todo state", [
    Open => "open", Claimed => "claimed", Done => "done", Dropped => "dropped",
]);

impl TodoState {
    /// Done and dropped todos never change again.
    pub fn is_final(self) -> bool {
        matches!(self, TodoState::Done | TodoState::Dropped)
    }
}

/// What a piece of evidence shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    Slice,
    Test,
    Diff,
    Note,
    Artifact,
    Quota,
    Violation,
    /// A todo's branch landed on the goal's branch, or could not (record version 6).
    Land,
    /// A monitor's check was met: its output (record version 9).
    Monitor,
    /// A measurement, `accuracy = 0.913` ([`crate::Metric`]; record version 17).
    Metric,
}
spelled!(EvidenceKind, "evidence kind", [
    Slice => "slice", Test => "test", Diff => "diff", Note => "note", Artifact => "artifact",
    Quota => "quota", Violation => "violation", Land => "land", Monitor => "monitor",
    Metric => "metric",
]);

impl EvidenceKind {
    /// Whether it judges the work (a test result, an artifact): it goes stale when that work
    /// changes, or when an amendment changed the objective it was judged against. A `diff` or
    /// a `land` says what happened, which stays true (`docs/goals.md`, "Evidence that ages").
    pub fn judges_work(self) -> bool {
        matches!(self, EvidenceKind::Test | EvidenceKind::Artifact)
    }

    /// Whether it speaks about the state of the work (a test result, a diff, an artifact, a
    /// land check's run): it is recorded with a mark of the tree it speaks about. Only the
    /// kinds that judge the work ([`Self::judges_work`]) age with it.
    pub fn speaks_about_work(self) -> bool {
        matches!(
            self,
            EvidenceKind::Test | EvidenceKind::Diff | EvidenceKind::Artifact | EvidenceKind::Land
        )
    }

    /// The kinds an agent may report; `slice`, `quota`, `violation` and `land` are loopx's own
    /// record of what it saw.
    pub const AGENT: [EvidenceKind; 5] = [
        EvidenceKind::Test,
        EvidenceKind::Diff,
        EvidenceKind::Note,
        EvidenceKind::Artifact,
        EvidenceKind::Metric,
    ];

    /// The kinds a person may add by hand: all but `land`, which only loopx's own landing of a
    /// todo's branch writes (a land check's output is carried into the next prompt).
    pub const PERSON: [EvidenceKind; 8] = [
        EvidenceKind::Slice,
        EvidenceKind::Test,
        EvidenceKind::Diff,
        EvidenceKind::Note,
        EvidenceKind::Artifact,
        EvidenceKind::Quota,
        EvidenceKind::Violation,
        EvidenceKind::Metric,
    ];

    /// Whether an agent may report evidence of this kind.
    pub fn agent_may_report(self) -> bool {
        Self::AGENT.contains(&self)
    }
}

/// Where a goal's agents work (`docs/design/worktrees.md`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Every agent works in the project's own tree (a project outside git, or asked for).
    Shared,
    /// Each todo is worked on its own branch `loopx/<goal>-<todo>` in its own git worktree,
    /// and lands on the goal's integration branch `loopx/<goal>`, which starts at `base`.
    Worktree {
        /// The commit the goal started from (a full object name).
        base: String,
    },
}

impl Isolation {
    /// `shared` or `worktree`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Isolation::Shared => "shared",
            Isolation::Worktree { .. } => "worktree",
        }
    }

    /// Whether each todo gets its own branch and worktree.
    pub fn is_worktree(&self) -> bool {
        matches!(self, Isolation::Worktree { .. })
    }

    /// The commit a worktree goal started from.
    pub fn base(&self) -> Option<&str> {
        match self {
            Isolation::Shared => None,
            Isolation::Worktree { base } => Some(base),
        }
    }
}

/// Where a new goal's agents work: the choice a person makes. The goal records the outcome
/// ([`Isolation`]), which for a worktree goal includes the commit it starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationMode {
    /// A branch and worktree per todo.
    Worktree,
    /// The project's own tree.
    Shared,
}
spelled!(IsolationMode, "isolation", [Worktree => "worktree", Shared => "shared"]);

/// What kind of failure something is, whatever shows it: the CLI's exit code, the board's HTTP
/// status, an agent's refused report all come from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Bad input: fix the request.
    Usage,
    /// The project or its configuration: fix a file.
    Config,
    /// The store is missing, damaged, too new or stayed busy.
    Store,
    /// Someone else holds it, or the state moved on.
    Conflict,
    /// A safety rule refused it.
    Refused,
    /// A bug in loopx.
    Internal,
}
spelled!(ErrorClass, "error class", [
    Usage => "usage", Config => "config", Store => "store", Conflict => "conflict",
    Refused => "refused", Internal => "internal",
]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_parses_back_from_its_spelling() {
        for kind in EvidenceKind::ALL {
            assert_eq!(kind.as_str().parse::<EvidenceKind>(), Ok(kind));
        }
        for kind in SliceKind::ALL {
            assert_eq!(kind.as_str().parse::<SliceKind>(), Ok(kind));
        }
        let wrong = "finished".parse::<GoalStatus>().expect_err("not a status");
        assert_eq!(
            wrong.to_string(),
            "unknown goal status `finished`: expected one of `active`, `paused`, `done`, `archived`"
        );
    }

    #[test]
    fn json_uses_the_same_spelling_as_the_command_line() {
        for kind in EvidenceKind::ALL {
            let json = serde_json::to_string(&kind).expect("json");
            assert_eq!(json, format!("\"{kind}\""));
        }
        assert_eq!(
            serde_json::to_string(&HoldSource::Vendor).expect("json"),
            "\"vendor\""
        );
    }
}

/// A monitor as a person or an agent writes it (`--check`, `--every`, `--expires`, `--until`,
/// or the same fields of a report block's `next_todos` item): words, read into a spec by the
/// kernel (`MonitorSpec::from_words`), so every surface accepts and refuses the same things.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct MonitorWords {
    /// The check, a shell command: exit 0 met, 1 not yet.
    pub check: String,
    /// The cadence: `10m`.
    pub every: Option<String>,
    /// How long until a person is asked: `48h`.
    pub expires: Option<String>,
    /// `changed`: met when the check's output differs from its first poll's.
    pub until: Option<String>,
}
